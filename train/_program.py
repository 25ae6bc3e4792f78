"""The ``llama-rl`` program as a process: its name and exit codes, the signals that stop
it and the line that says so, writing to stderr (and to a stream that may refuse a
write), and asking whether a stream is a terminal, each written once. It imports only
the standard library: its entry point (:mod:`train.launch`) must not import the rest
before it stands guard; the commands (:mod:`train.cli`), the trainers
(:mod:`train.training.run_dir`, the progress bar), evaluation's progress bar and terminal
play read them here."""

from __future__ import annotations

import contextlib
import shutil
import signal
import sys
import threading
import warnings
from collections.abc import Callable, Iterator, Sequence
from types import FrameType
from typing import Any

__all__ = [
    "Dropping",
    "game_bar",
    "EXIT_INTERRUPTED",
    "EXIT_USAGE",
    "PROG",
    "STOP_SIGNALS",
    "interrupted",
    "is_terminal",
    "say_on_stderr",
    "signal_handler",
    "stop_as_ctrl_c",
    "terminal_columns",
]

PROG = "llama-rl"
"""The program's name, as its messages begin (``llama-rl: error: ...``)."""
EXIT_USAGE = 2
"""The exit code of a command refused as asked (argparse's own)."""
EXIT_INTERRUPTED = 130
"""The exit code of a command stopped by Ctrl-C or SIGTERM (128 + SIGINT, as shells say)."""

STOP_SIGNALS: tuple[signal.Signals, ...] = (signal.SIGTERM,) + (
    (signal.SIGBREAK,) if hasattr(signal, "SIGBREAK") else ()  # Windows: Ctrl-Break, the console closed
)
"""The signals that stop a command as Ctrl-C does (a trainer saves its checkpoint)."""


def stop_as_ctrl_c(stopped_by: list[str]) -> Callable[[int, FrameType | None], None]:
    """A handler for the :data:`STOP_SIGNALS` that stops the program as Ctrl-C does (it
    raises ``KeyboardInterrupt``), adding the signal's name to ``stopped_by`` for
    :func:`interrupted`'s line; it says nothing itself (a second line said the same)."""

    def stop(signum: int, frame: FrameType | None) -> None:
        stopped_by.append(signal.Signals(signum).name)
        raise KeyboardInterrupt

    return stop


@contextlib.contextmanager
def signal_handler(signum: int, handler: Callable[[int, FrameType | None], None]) -> Iterator[None]:
    """``handler`` for signal ``signum`` inside the block, the previous one after it.
    Python handles signals in the main thread only; elsewhere the block runs unchanged."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    old = signal.signal(signum, handler)
    try:
        yield
    finally:
        signal.signal(signum, old)


def interrupted(stopped_by: Sequence[str]) -> str:
    """The line that says the program was stopped, ``llama-rl: interrupted``, with the
    signal that stopped it where one did (``llama-rl: interrupted (SIGTERM)``), so that a
    job's log says why."""
    return f"{PROG}: interrupted ({stopped_by[0]})" if stopped_by else f"{PROG}: interrupted"


def say_on_stderr(line: str) -> None:
    """``line`` on stderr, where it can be written: nothing where stderr is closed
    (``2>&-``: ``print`` wrote it on stdout, among a command's results) or refuses the
    write (``2>/dev/full``: a second error, raised from the handler of the first)."""
    if sys.stderr is None:
        return
    with contextlib.suppress(OSError, ValueError):
        print(line, file=sys.stderr, flush=True)


def is_terminal(stream: Any) -> bool:
    """Whether ``stream`` is a terminal: ``False`` for a file, a pipe, a closed stream
    (``None``, or one whose file is closed) and an object without ``isatty``."""
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):
        return False


def terminal_columns(stream: Any) -> int | None:
    """The width to wrap to when ``stream`` is a terminal (``COLUMNS``, else the
    terminal's own, as :func:`shutil.get_terminal_size` reads them); ``None`` (lines
    whole) into a file or a pipe, for grep and logs."""
    return shutil.get_terminal_size().columns if is_terminal(stream) else None


class Dropping:
    """A text stream that drops what it cannot write (a full disk, a closed pipe) instead
    of raising; the rest of its attributes are the wrapped stream's."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream
        self._broken = False

    def write(self, text: str) -> int:
        if not self._broken:
            try:
                return int(self._stream.write(text))
            except (OSError, ValueError):
                self._broken = True
        return len(text)

    def flush(self) -> None:
        if not self._broken:
            try:
                self._stream.flush()
            except (OSError, ValueError):
                self._broken = True

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


class _NoBar:
    """What :func:`game_bar` yields where it shows no bar: its ``update`` does nothing."""

    def update(self, n: int = 1) -> None:
        pass


@contextlib.contextmanager
def game_bar(progress: bool | str, total: int) -> Iterator[Any]:
    """A progress bar of ``total`` games on stderr when ``progress`` asks for one (a
    string names what it counts), closed after the block; a bar whose ``update`` does
    nothing otherwise: evaluation's, fit-search's and distill's. No bar either where
    stderr is closed (``2>&-``), nor, with a warning, where tqdm is missing (a
    dependency, but an install without its dependencies lacks it). A stderr that refuses
    a write (``2>/dev/full``) stops the bar (:class:`Dropping`), not the games.

    In a Jupyter kernel the bar is a widget where ipywidgets is installed, else a line of
    text that redraws itself, without tqdm's advice to "update jupyter and ipywidgets",
    which the ``notebooks`` extra does not install (the text bar needs neither)."""
    if not progress or sys.stderr is None:
        yield _NoBar()
        return
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="IProgress not found")
            from tqdm.auto import tqdm
    except ImportError:
        warnings.warn("no progress bar: the package 'tqdm' is not installed (pip install tqdm)", stacklevel=3)
        yield _NoBar()
        return
    desc = progress if isinstance(progress, str) else "games"
    bar = tqdm(total=total, desc=desc, unit="game", file=Dropping(sys.stderr))
    try:
        yield bar
    finally:
        bar.close()
