"""The ``llama-rl`` program's name and exit codes, in a module of no imports: its entry
point (:mod:`train.launch`), which must not import the rest before it stands guard, and
the commands (:mod:`train.cli.common`) read them here."""

from __future__ import annotations

__all__ = ["EXIT_INTERRUPTED", "EXIT_USAGE", "PROG"]

PROG = "llama-rl"
"""The program's name, as its messages begin (``llama-rl: error: ...``)."""
EXIT_USAGE = 2
"""The exit code of a command refused as asked (argparse's own)."""
EXIT_INTERRUPTED = 130
"""The exit code of a command stopped by Ctrl-C or SIGTERM (128 + SIGINT, as shells say)."""
