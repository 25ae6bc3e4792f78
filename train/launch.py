"""The ``llama-rl`` program's entry point, :func:`run`: Ctrl-C or SIGTERM at any moment,
even in its first half second, is one line and exit 130.

:func:`train.cli.main` says itself that a command was interrupted, but before it runs the
program imports numpy, the agents and every command's parser, and builds the parser:
Ctrl-C then was a traceback through importlib, and SIGTERM killed it with no word (exit
143). This module imports only the standard library, so it stands guard from the start;
``[project.scripts]`` in pyproject.toml points ``llama-rl`` at it.
"""

from __future__ import annotations

import signal
import sys
from types import FrameType

from train._program import EXIT_INTERRUPTED, PROG

__all__ = ["run"]


def run() -> None:
    """Run ``llama-rl`` with ``sys.argv`` and exit with its code. SIGTERM (and SIGBREAK on
    Windows) stops it as Ctrl-C does until :func:`train.cli.main` puts its own handler in
    place, and again after it; what is interrupted outside ``main``'s command is said as
    ``main`` says it: ``llama-rl: interrupted``, with the signal's name where one stopped it."""
    stopped_by: list[str] = []

    def stop(signum: int, frame: FrameType | None) -> None:
        stopped_by.append(signal.Signals(signum).name)
        raise KeyboardInterrupt

    for name in ("SIGTERM", "SIGBREAK"):
        if hasattr(signal, name):
            signal.signal(getattr(signal, name), stop)
    try:
        from train.cli import main

        code = main()
    except KeyboardInterrupt:
        _say(f"\n{PROG}: interrupted" + (f" ({stopped_by[0]})" if stopped_by else ""))
        code = EXIT_INTERRUPTED
    sys.exit(code)


def _say(line: str) -> None:
    """``line`` on stderr, if it can be written there (it may be closed, or a full disk)."""
    try:
        if sys.stderr is not None:
            print(line, file=sys.stderr, flush=True)
    except (OSError, ValueError):
        pass
