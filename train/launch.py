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

from train._program import EXIT_INTERRUPTED, STOP_SIGNALS, interrupted, say_on_stderr, stop_as_ctrl_c

__all__ = ["run"]


def run() -> None:
    """Run ``llama-rl`` with ``sys.argv`` and exit with its code. SIGTERM (and SIGBREAK on
    Windows) stops it as Ctrl-C does until :func:`train.cli.main` puts its own handler in
    place, and again after it; what is interrupted outside ``main``'s command is said as
    ``main`` says it: ``llama-rl: interrupted``, with the signal's name where one stopped it."""
    stopped_by: list[str] = []
    stop = stop_as_ctrl_c(stopped_by)
    for signum in STOP_SIGNALS:
        signal.signal(signum, stop)
    try:
        from train.cli import main

        code = main()
    except KeyboardInterrupt:
        say_on_stderr("\n" + interrupted(stopped_by))
        code = EXIT_INTERRUPTED
    sys.exit(code)
