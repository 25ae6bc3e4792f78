"""The project's import graph, read from the source: which module imports which, the
layers, circles and upward arrows.

tests/test_layers.py holds the layers to it (no circle, no arrow pointing up, nothing
importing ``benchmarks/``); ``benchmarks/architecture.py`` prints the same graph's shape
(lines per part, imports between parts). It reads files as text and imports nothing of
the project, so both can use it: it is plain Python, not a pytest module.

A *part* is a top-level package (``llama_env``, ``agents``) or a sub-package or module of
``train`` (``train.evaluation``, ``train.cli``, ...). Every import statement counts, also
one inside a function and ``importlib.import_module("...")`` with a literal name (a lazy
import is still a dependency). The layers, bottom first, are ``llama_env`` < ``agents`` <
``train``.
"""

from __future__ import annotations

import ast
import json
import sys
from collections.abc import Iterator
from pathlib import Path

__all__ = [
    "PACKAGES",
    "LAYER",
    "BENCHMARKS",
    "module_name",
    "collect",
    "imports_of",
    "graph_of",
    "upward_arrows",
    "part_of",
    "find_cycles",
    "python_sources",
    "benchmark_uses",
]

PACKAGES = ("llama_env", "agents", "train")
LAYER = {"llama_env": 0, "agents": 1, "train": 2}
BENCHMARKS = "benchmarks"
"""The folder of scripts that print numbers: it imports the project, nothing imports it."""


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


def _imported_names(tree: ast.AST, name: str, is_pkg: bool) -> Iterator[str]:
    """Every dotted name an import in ``tree`` (of module ``name``) may refer to:
    ``from a.b import c`` gives ``a.b.c``; relative imports resolved against ``name``."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".")
                base = base if is_pkg else base[:-1]
                base = base[: len(base) - (node.level - 1)]
                prefix = ".".join(base + ([node.module] if node.module else []))
            else:
                prefix = node.module or ""
            for alias in node.names:
                yield f"{prefix}.{alias.name}"
        elif (
            isinstance(node, ast.Call)
            and getattr(node.func, "attr", getattr(node.func, "id", None)) == "import_module"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            yield node.args[0].value  # importlib.import_module("pkg.mod"): a dependency too


def imports_of(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The project modules ``name`` imports (absolute and relative imports, any depth)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found: set[str] = set()
    for target in _imported_names(tree, name, path.name == "__init__.py"):
        # the longest project module that the dotted name starts with
        while target and target not in modules:
            target = target.rpartition(".")[0]
        if target and target != name:
            found.add(target)
    return found


def graph_of(root: Path) -> dict[str, set[str]]:
    """Module -> the project modules it imports, for every module of :data:`PACKAGES`."""
    modules = collect(root)
    return {m: imports_of(m, path, modules) for m, path in modules.items()}


def upward_arrows(graph: dict[str, set[str]]) -> list[tuple[str, str]]:
    """The imports from a lower layer to a higher one."""
    return sorted(
        (m, t) for m, targets in graph.items() for t in targets if LAYER[m.split(".")[0]] < LAYER[t.split(".")[0]]
    )


def part_of(module: str) -> str:
    bits = module.split(".")
    if bits[0] == "train" and len(bits) > 1:
        return f"train.{bits[1]}"
    return bits[0]


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

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 10_000))
    try:
        for v in sorted(graph):
            if v not in index:
                visit(v)
    finally:
        sys.setrecursionlimit(limit)
    return out


# --------------------------------------------------------------------------- benchmarks/ only measures

_NOT_SOURCE = {".venv", ".git", "build", "node_modules", "runs", BENCHMARKS}


def python_sources(root: Path) -> Iterator[tuple[Path, str]]:
    """The Python of the repository outside ``benchmarks/``: every ``.py`` file and every
    notebook's code cells, as (path, source)."""
    for path in sorted(root.rglob("*")):
        if _NOT_SOURCE.intersection(path.relative_to(root).parts) or not path.is_file():
            continue
        if path.suffix == ".py":
            yield path, path.read_text(encoding="utf-8")
        elif path.suffix == ".ipynb":
            cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
            code = ["".join(c["source"]) for c in cells if c["cell_type"] == "code"]
            yield path, "\n\n".join(code)


_LOADERS = {
    "spec_from_file_location",
    "SourceFileLoader",
    "run_path",
    "run_module",
    "import_module",
    "exec",
    "compile",
    "open",
    "read_text",
    "read_bytes",
    "insert",
    "append",
    "extend",
}
"""Calls that load code from a path or put a folder on ``sys.path`` (``sys.path.insert``)."""


def _names_benchmarks(node: ast.AST, tainted: set[str]) -> bool:
    """Whether the expression ``node`` holds a path into ``benchmarks/`` (a string such
    as ``"benchmarks/<script>.py"`` or the part ``"benchmarks"`` of ``ROOT / "benchmarks"``), or
    a name bound to one."""
    for sub in ast.walk(node):
        if isinstance(sub, ast.Constant) and isinstance(sub.value, str):
            text = sub.value
            if text.split() == [text] and BENCHMARKS in Path(text).parts:
                return True
        if isinstance(sub, ast.Name) and sub.id in tainted:
            return True
    return False


def benchmark_uses(source: str, scripts: set[str], filename: str = "<source>") -> list[str]:
    """How ``source`` imports or loads a benchmark: an import of the ``benchmarks``
    package or of a script by its module name (``scripts``: the stems of
    ``benchmarks/*.py``, importable once the folder is on ``sys.path``), or a call that
    loads code from a path into ``benchmarks/`` or puts that folder on ``sys.path``
    (``spec_from_file_location``, ``runpy.run_path``, ``exec(open(...).read())``,
    ``sys.path.insert``...), the path written there or in a variable. Running a script as a
    program (a subprocess, as a user runs it) and prose citing one are not uses."""
    tree = ast.parse(source, filename=filename)
    found = []
    for name in _imported_names(tree, "", False):
        top = name.lstrip(".").split(".")[0]
        if top == BENCHMARKS or top in scripts:
            found.append(f"imports {name}")
    tainted: set[str] = set()
    for node in ast.walk(tree):  # names bound to a path into benchmarks/: BENCH = ROOT / "benchmarks"
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            targets, value = [node.target], node.value
        else:
            continue
        if _names_benchmarks(value, set()):
            tainted |= {t.id for t in targets if isinstance(t, ast.Name)}
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            called = getattr(node.func, "attr", getattr(node.func, "id", None))
            if called in _LOADERS and _names_benchmarks(node, tainted):
                found.append(f"line {node.lineno}: {called}(...) of a path into {BENCHMARKS}/")
    return found
