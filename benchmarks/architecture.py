"""The shape of the code: lines per part, the import graph between parts, circles and
arrows that point up.

    python benchmarks/architecture.py [--modules] [--root PATH]

The graph, its parts and its layers are those tests/test_layers.py holds the code to
(``tests/import_graph.py``, read from there): a *part* is a top-level package
(``llama_env``, ``agents``) or a sub-package or module of ``train`` (``train.evaluation``,
``train.cli``, ...), every import statement counts (a lazy one too), and an arrow from a
lower layer (``llama_env`` < ``agents`` < ``train``) to a higher one is reported as an
upward arrow. ``--modules`` prints the module-level graph too. The exit status is 1 when
there is an upward arrow or a circle between modules.
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))  # the graph is the layers test's
from import_graph import LAYER, PACKAGES, collect, find_cycles, graph_of, part_of  # noqa: E402
from machine import print_machine  # noqa: E402


def code_lines(path: Path) -> int:
    """Lines that are neither blank nor comments (docstrings count: they are the docs)."""
    return sum(
        1 for line in path.read_text(encoding="utf-8").splitlines() if line.strip() and not line.strip().startswith("#")
    )


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--root", type=Path, default=Path(__file__).resolve().parents[1], help="the checkout to read")
    p.add_argument("--modules", action="store_true", help="also print every module's project imports")
    args = p.parse_args(argv)
    missing = [pkg for pkg in PACKAGES if not (args.root / pkg / "__init__.py").is_file()]
    if missing:  # nothing read would pass the check: an empty graph has no upward arrow
        p.error(f"--root {args.root}: not a checkout of the project (no {', '.join(missing)} package there)")
    print_machine(__file__, argv)

    modules = collect(args.root)
    graph = graph_of(args.root)

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
