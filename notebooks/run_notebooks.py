"""Execute the notebooks top to bottom in a real kernel (nbclient).

    python notebooks/run_notebooks.py                 # execute in place, keep outputs (for committing)
    python notebooks/run_notebooks.py --quick --out DIR   # small budgets, write copies to DIR (the tests)

``--quick`` sets ``LLAMA_RL_QUICK=1`` in the kernel's environment; every notebook reads
that one parameter to shrink its games and training steps.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

HERE = Path(__file__).resolve().parent
NOTEBOOKS = sorted(HERE.glob("[0-9][0-9]_*.ipynb"))


def execute(path: Path, out: Path, *, quick: bool, timeout: int = 1800) -> float:
    """Run one notebook with its folder as working directory and write it to ``out``."""
    nb = nbformat.read(path, as_version=4)
    env_backup = os.environ.get("LLAMA_RL_QUICK")
    os.environ["LLAMA_RL_QUICK"] = "1" if quick else "0"
    t0 = time.perf_counter()
    try:
        NotebookClient(nb, timeout=timeout, kernel_name="python3", resources={"metadata": {"path": str(HERE)}}).execute()
    finally:
        if env_backup is None:
            os.environ.pop("LLAMA_RL_QUICK", None)
        else:
            os.environ["LLAMA_RL_QUICK"] = env_backup
    out.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, out)
    return time.perf_counter() - t0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("names", nargs="*", help="notebook file names (default: all)")
    p.add_argument("--quick", action="store_true", help="small budgets (LLAMA_RL_QUICK=1)")
    p.add_argument("--out", type=Path, default=None, help="write executed copies here instead of in place")
    args = p.parse_args(argv)
    paths = [HERE / n for n in args.names] if args.names else NOTEBOOKS
    for path in paths:
        target = (args.out / path.name) if args.out else path
        dt = execute(path, target, quick=args.quick)
        print(f"{path.name}: executed in {dt:.0f} s -> {target}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
