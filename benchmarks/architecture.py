"""The shape of the code: lines per part, the import graph between parts, circles and
arrows that point up.

    python benchmarks/architecture.py [--modules] [--root PATH]

A *part* is a top-level package (``llama_env``, ``agents``) or a sub-package or module of
``train`` (``train.evaluation``, ``train.cli``, ...). Every import statement counts,
also one inside a function and ``importlib.import_module("...")`` with a literal name
(a lazy import is still a dependency). The layers, bottom
first, are ``llama_env`` < ``agents`` < ``train``: an arrow from a lower layer to a
higher one is reported as an upward arrow. ``--modules`` prints the module-level graph
too. The exit status is 1 when there is an upward arrow or a circle between modules.
"""

from __future__ import annotations

import argparse
import ast
import sys
from collections import defaultdict
from pathlib import Path

PACKAGES = ("llama_env", "agents", "train")
LAYER = {"llama_env": 0, "agents": 1, "train": 2}


def module_name(root: Path, path: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def collect(root: Path) -> dict[str, Path]:
    """Every module of the three packages, by dotted name."""
    out = {}
    for pkg in PACKAGES:
        for path in sorted((root / pkg).rglob("*.py")):
            out[module_name(root, path)] = path
    return out


def imports_of(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The project modules ``name`` imports (absolute and relative imports, any depth)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    is_pkg = path.name == "__init__.py"
    found: set[str] = set()

    def add(target: str) -> None:
        # the longest project module that the dotted name starts with
        while target and target not in modules:
            target = target.rpartition(".")[0]
        if target and target != name:
            found.add(target)

    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                add(alias.name)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".")
                base = base if is_pkg else base[:-1]
                base = base[: len(base) - (node.level - 1)]
                prefix = ".".join(base + ([node.module] if node.module else []))
            else:
                prefix = node.module or ""
            for alias in node.names:
                add(f"{prefix}.{alias.name}")
        elif (
            isinstance(node, ast.Call)
            and getattr(node.func, "attr", getattr(node.func, "id", None)) == "import_module"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            add(node.args[0].value)  # importlib.import_module("pkg.mod"): a dependency too
    return found


def part_of(module: str) -> str:
    bits = module.split(".")
    if bits[0] == "train" and len(bits) > 1:
        return f"train.{bits[1]}"
    return bits[0]


def code_lines(path: Path) -> int:
    """Lines that are neither blank nor comments (docstrings count: they are the docs)."""
    return sum(
        1 for line in path.read_text(encoding="utf-8").splitlines() if line.strip() and not line.strip().startswith("#")
    )


def find_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10_000)
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--root", type=Path, default=Path(__file__).resolve().parents[1], help="the checkout to read")
    p.add_argument("--modules", action="store_true", help="also print every module's project imports")
    args = p.parse_args(argv)

    modules = collect(args.root)
    graph = {m: imports_of(m, path, modules) for m, path in modules.items()}

    lines: dict[str, int] = defaultdict(int)
    files: dict[str, int] = defaultdict(int)
    for m, path in modules.items():
        lines[part_of(m)] += code_lines(path)
        files[part_of(m)] += 1
    print(f"{'part':<22} {'files':>5} {'lines':>6}")
    for part in sorted(lines, key=lambda q: (LAYER[q.split(".")[0]], q)):
        print(f"{part:<22} {files[part]:>5} {lines[part]:>6}")
    print(f"{'total':<22} {sum(files.values()):>5} {sum(lines.values()):>6}")

    edges: dict[tuple[str, str], int] = defaultdict(int)
    for m, targets in graph.items():
        for t in targets:
            a, b = part_of(m), part_of(t)
            if a != b:
                edges[(a, b)] += 1
    print("\nimports between parts (count of module-to-module imports):")
    upward = []
    for (a, b), k in sorted(edges.items()):
        up = LAYER[a.split(".")[0]] < LAYER[b.split(".")[0]]
        if up:
            upward.append((a, b))
        print(f"  {a:<20} -> {b:<20} {k:>3}{'   UPWARD' if up else ''}")
    part_graph: dict[str, set[str]] = defaultdict(set)
    for a, b in edges:
        part_graph[a].add(b)
    module_cycles = find_cycles(graph)
    part_cycles = find_cycles(dict(part_graph))
    print(f"\nupward arrows: {len(upward)}")
    print(f"circles between modules: {len(module_cycles)}" + "".join(f"\n  {' <-> '.join(c)}" for c in module_cycles))
    print(f"circles between parts: {len(part_cycles)}" + "".join(f"\n  {' <-> '.join(c)}" for c in part_cycles))
    if args.modules:
        print("\nmodule imports:")
        for m in sorted(graph):
            print(f"  {m} -> {', '.join(sorted(graph[m])) or '-'}")
    return 1 if upward or module_cycles else 0


if __name__ == "__main__":
    sys.exit(main())
