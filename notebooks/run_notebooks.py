"""Execute the notebooks top to bottom in a real kernel (nbclient).

    python notebooks/run_notebooks.py                 # execute in place, keep outputs (for committing)
    python notebooks/run_notebooks.py --quick --out DIR   # small budgets, write copies to DIR (the tests)
    python notebooks/run_notebooks.py 01_environment_tour # one notebook (.ipynb optional, or a path)
    python notebooks/run_notebooks.py --timeout 3600      # stop a cell that runs past an hour

A cell runs as long as it needs (notebook 02's first cell takes up to an hour on two busy
cores); ``--timeout SECONDS`` stops one that runs longer, and a failed cell is reported as
below. ``--quick`` runs keep a limit of 600 s a cell unless ``--timeout`` says otherwise.

``--quick`` sets ``LLAMA_RL_QUICK=1`` in the kernel's environment; every notebook reads
that one parameter to shrink its games and training steps. It needs ``--out``: its outputs
would otherwise replace the committed ones.

Every name and ``--out`` are checked before any notebook runs (exit 2). A notebook whose
cell fails is one line, ``NAME: cell k failed: ValueError: ...`` (``k`` as the front end
shows the cell, ``[k]``), and is written as far as it ran: to ``--out``, or in place as
``<name>.failed.ipynb`` beside it (the committed copy is kept). The other notebooks still
run; the exit code is 1.
"""

from __future__ import annotations

import argparse
import enum
import os
import sys
import time
from pathlib import Path
from typing import Any, Literal, NoReturn

from train.cli.common import extra_or_exit, int_in

PROG = "run_notebooks.py"
# every package of the extra, found without importing any: the kernels import pandas, torch...,
# and a notebook run without one failed cell by cell, naming no extra; one line, not a traceback
extra_or_exit(PROG, "notebooks", what="running the notebooks")

import nbformat  # noqa: E402
from nbclient import NotebookClient  # noqa: E402
from nbclient.exceptions import CellExecutionError, CellTimeoutError, DeadKernelError  # noqa: E402

HERE = Path(__file__).resolve().parent
FAILED_SUFFIX = ".failed.ipynb"
QUICK_TIMEOUT = 600  # seconds a cell of a --quick run may take: its small budgets need far less
NOTEBOOKS = sorted(p for p in HERE.glob("[0-9][0-9]_*.ipynb") if not p.name.endswith(FAILED_SUFFIX))


class _Default(enum.Enum):
    """A timeout not given: a ``--quick`` run's :data:`QUICK_TIMEOUT`, else no limit."""

    TIMEOUT = enum.auto()


DEFAULT_TIMEOUT: Literal[_Default.TIMEOUT] = _Default.TIMEOUT


class NotebookFailed(Exception):
    """A notebook that stopped before its end; the message is one line (``cell k failed: ...``)."""


def execute(
    path: Path,
    out: Path,
    *,
    quick: bool,
    timeout: int | None | Literal[_Default.TIMEOUT] = DEFAULT_TIMEOUT,
    failed_out: Path | None = None,
) -> float:
    """Run one notebook with its folder as working directory and write it to ``out``;
    ``timeout`` is the seconds a cell may run (``None``: as long as it needs; left out,
    :data:`QUICK_TIMEOUT` for a ``quick`` run and no limit otherwise).

    A cell that fails (raises, times out, kills the kernel) raises :class:`NotebookFailed`
    after the notebook, as far as it ran, is written to ``failed_out`` (default ``out``);
    nbclient's error is its cause, so a test that calls this shows the cell's source and
    traceback, where the command line prints the one line."""
    if timeout is DEFAULT_TIMEOUT:
        timeout = QUICK_TIMEOUT if quick else None
    nb = nbformat.read(path, as_version=4)
    env_backup = os.environ.get("LLAMA_RL_QUICK")
    os.environ["LLAMA_RL_QUICK"] = "1" if quick else "0"
    running: dict[str, int] = {}

    def count(**_: Any) -> None:
        # a fresh kernel runs the code cells in order, so the k-th is the front end's [k]
        running["k"] = running.get("k", 0) + 1

    client = NotebookClient(
        nb,
        timeout=timeout,
        kernel_name="python3",
        resources={"metadata": {"path": str(path.parent)}},
        on_cell_execute=count,
        coalesce_streams=True,  # a progress bar's redraws are saved as its last line, not one output each
    )
    t0 = time.perf_counter()
    cause: Exception | None = None
    try:
        client.execute()
    except (CellExecutionError, CellTimeoutError, DeadKernelError) as exc:
        cause = exc
    finally:
        if env_backup is None:
            os.environ.pop("LLAMA_RL_QUICK", None)
        else:
            os.environ["LLAMA_RL_QUICK"] = env_backup
    target = out if cause is None or failed_out is None else failed_out
    target.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, target)
    if cause is not None:
        raise NotebookFailed(f"cell {running.get('k', '?')} failed: {_why(cause, timeout)}") from cause
    return time.perf_counter() - t0


def _why(exc: Exception, timeout: int | None) -> str:
    """Why a cell failed, in a few words: the error's name and first line, the timeout
    passed, or the kernel gone."""
    if isinstance(exc, CellTimeoutError):
        return f"it ran past the {timeout} s timeout"
    if isinstance(exc, DeadKernelError):
        return "the kernel died"
    evalue = (getattr(exc, "evalue", "") or "").strip().splitlines()
    return f"{getattr(exc, 'ename', type(exc).__name__)}" + (f": {evalue[0]}" if evalue else "")


def resolve(name: str) -> Path:
    """The notebook a command-line ``name`` means: a bare name from this folder
    (``01_environment_tour``, the ``.ipynb`` optional) or a path (``notebooks/01_...ipynb``
    from the repository's root)."""
    names = [name] if name.endswith(".ipynb") else [name, name + ".ipynb"]
    for candidate in (Path(n) for n in names):
        for path in (candidate, HERE / candidate):
            if path.suffix == ".ipynb" and path.is_file():
                try:
                    nbformat.read(path, as_version=4)
                except (OSError, ValueError) as exc:
                    why = (str(exc).strip().splitlines() or [repr(exc)])[0]
                    raise ValueError(f"{name} is not a notebook nbformat can read: {why}") from None
                return path.resolve()
    choices = ", ".join(p.stem for p in NOTEBOOKS)
    raise ValueError(f"no notebook {name!r}: give one of {choices} (.ipynb optional) or a path to a notebook")


def check_out(out: Path) -> None:
    """Refuse ``--out`` unless it is a folder or can be made one, before anything runs."""
    if out.exists() and not out.is_dir():
        raise ValueError(f"--out {out} is a file, not a folder")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ValueError(f"--out {out} cannot be made a folder: {exc.strerror or exc}") from None


class _Parser(argparse.ArgumentParser):
    """argparse whose refusals are one line, as the runner's own are, without the usage."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message}\n")


def main(argv: list[str] | None = None) -> int:
    p = _Parser(prog=PROG, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("names", nargs="*", help="a name from notebooks/ (.ipynb optional) or a path (default: all)")
    p.add_argument("--quick", action="store_true", help="small budgets (LLAMA_RL_QUICK=1); needs --out")
    p.add_argument("--out", type=Path, default=None, help="write executed copies here instead of in place")
    p.add_argument(
        "--timeout",
        type=int_in(1, None, "the seconds a cell may run"),
        default=DEFAULT_TIMEOUT,
        metavar="SECONDS",
        help=f"stop a cell that runs longer (default: no limit; {QUICK_TIMEOUT} with --quick)",
    )
    args = p.parse_args(argv)
    try:
        paths = list(dict.fromkeys(resolve(n) for n in args.names)) if args.names else NOTEBOOKS
        if args.quick and (args.out is None or any(args.out.resolve() == path.parent for path in paths)):
            raise ValueError(
                "--quick needs --out DIR, a folder other than the notebooks' own: "
                "its small budgets would replace the committed outputs"
            )
        if args.out is not None:
            check_out(args.out)
    except ValueError as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 2
    failed = 0
    for path in paths:
        target = (args.out / path.name) if args.out else path
        failed_out = target if args.out else path.with_name(path.stem + FAILED_SUFFIX)
        try:
            dt = execute(path, target, quick=args.quick, timeout=args.timeout, failed_out=failed_out)
        except NotebookFailed as exc:
            failed += 1
            print(f"{path.name}: {exc} (as far as it ran: {failed_out})", file=sys.stderr, flush=True)
            continue
        print(f"{path.name}: executed in {dt:.0f} s -> {target}", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
