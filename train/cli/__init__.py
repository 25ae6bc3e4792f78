"""The ``llama-rl`` command line.

A thin layer over importable functions: each subcommand is one module of this package
that parses its arguments into typed values and calls one function that tests (and
notebooks) can call directly.

    llama-rl eval --agents heuristic,random,random,random --games 2000 --seed 0
    llama-rl tournament --players 4 --agents random,heuristic,... --games 500
    llama-rl play --players 3 --opponents heuristic --seed 7
    llama-rl watch --players 4 --agents heuristic
    llama-rl serve
    llama-rl agents
    llama-rl train ...
    llama-rl export runs/my-run --out my_agent.npz
    llama-rl fit-search --out search_4p.npz
    llama-rl distill --out ppo_4p_distilled.npz
    llama-rl tune-heuristic

Exit codes: 0 success; 1 a game of ``play`` left unfinished (``exit`` or end of input),
a game of ``eval``, ``tournament``, ``play`` or ``watch`` an agent failed in, a worker
process that died, a missing optional package, a closed standard output where the
result is what a command prints, or a file or folder named ``agents`` (named in the
message) that hides llama-rl's built-in agents; 2 a
usage error (bad option, unknown agent, wrong number of agents...), reported as one
``llama-rl: error: ...`` line on stderr, never a traceback; 130 interrupted (Ctrl-C).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import io
import os
import sys
import warnings
from concurrent.futures.process import BrokenProcessPool
from functools import partial
from typing import Any

from llama_env._install import MissingExtra
from llama_env.agent import builtins_hidden, in_places, program_frame
from llama_env.table import AgentError
from train import _program
from train._program import interrupted, stop_as_ctrl_c
from train.cli.agents import list_agents
from train.cli.common import (
    EXIT_GAME_FAILED,
    EXIT_INTERRUPTED,
    EXIT_USAGE,
    PROG,
    CommandError,
    HelpFormatter,
    say_on_stderr,
    silence_stdout,
)
from train.cli.evaluate import EvalCommand, run_eval
from train.cli.play import run_play
from train.cli.tournament import TournamentCommand, run_tournament
from train.evaluation.runner import WORKER_DIED

__all__ = [
    "COMMAND_NAMES",
    "CommandError",
    "EvalCommand",
    "TournamentCommand",
    "build_parser",
    "list_agents",
    "main",
    "run_eval",
    "run_play",
    "run_tournament",
]

_COMMANDS = (
    "evaluate", "tournament", "play", "watch", "serve", "agents", "train", "export", "fit_search", "distill",
    "tune_heuristic",
)  # fmt: skip
"""The subcommands' modules, imported as the parser is built: several import the built-in
agents' modules (``agents.ppo``), which :func:`main` first makes sure are llama-rl's."""
COMMAND_NAMES = (
    "eval", "tournament", "play", "watch", "serve", "agents", "train", "export", "fit-search", "distill",
    "tune-heuristic",
)  # fmt: skip
"""The subcommands, in the order ``--help`` lists them."""


def build_parser() -> argparse.ArgumentParser:
    """The ``llama-rl`` parser with every subcommand."""
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="LLAMA-RL: evaluate, rank, train and play against agents for Reiner Knizia's L.L.A.M.A.",
        epilog=(
            "examples:\n"
            "  llama-rl agents\n"
            "  llama-rl eval --agents heuristic,random,random,random --games 2000\n"
            "  llama-rl tournament --players 4 --agents random,greedy,heuristic,cautious:threshold=4 --games 500\n"
            "  llama-rl play --players 3 --opponents heuristic\n"
            "  llama-rl serve                       # play and watch in the browser\n"
            "  llama-rl train\n"
            "  llama-rl fit-search --out search_4p.npz   # the search agent's networks\n"
            "\nRun `llama-rl COMMAND --help` for the options of a command."
        ),
        formatter_class=HelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    sub = parser.add_subparsers(title="commands", dest="command", metavar="COMMAND")
    for command in _COMMANDS:
        importlib.import_module(f"{__name__}.{command}").add_parser(sub)
    return parser


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("llama-rl")
    except PackageNotFoundError:  # running from a checkout that is not installed
        import llama_env

        return llama_env.__version__


def main(argv: list[str] | None = None) -> int:
    """Run ``llama-rl`` with ``argv`` (default ``sys.argv[1:]``); return the exit code."""
    # from the start: the agents' plugins load (and warn of one that fails) as the parser is built
    default_format = warnings.formatwarning
    entered_from, _ = program_frame()  # the line that called this, where llama-rl points its warnings
    program = (entered_from.f_code.co_filename, entered_from.f_lineno)
    del entered_from
    warnings.formatwarning = partial(_format_warning, default_format, program=program)
    try:
        if sys.stderr is not None:
            return _main(argv)
        # `2>&-`: what goes to stderr goes nowhere (print and argparse sent it to stdout, among the results)
        with open(os.devnull, "w", encoding="utf-8") as nowhere, contextlib.redirect_stderr(nowhere):
            return _main(argv)
    finally:
        warnings.formatwarning = default_format


def _main(argv: list[str] | None) -> int:
    _tolerant_streams()
    hidden = builtins_hidden()
    if hidden:  # a user's agents.py beside the script (python -m train.cli): Python's error named no file
        say_on_stderr(f"{PROG}: error: {hidden}")
        return 1
    parser = build_parser()
    try:
        args, extra = parser.parse_known_args(argv)
        if extra:  # report unknown flags with the usage of the command they were given to
            command = getattr(args, "command_parser", None) or parser
            command.error(f"unrecognized arguments: {' '.join(extra)}")
    except SystemExit as exc:  # --help (0) and argparse's usage errors (2)
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else EXIT_USAGE)
    func = getattr(args, "func", None)
    if func is None:
        parser.print_usage(sys.stderr)
        say_on_stderr(f"{PROG}: error: a command is required: {', '.join(COMMAND_NAMES)}")
        return EXIT_USAGE
    stopped_by: list[str] = []
    try:
        with _terminate_as_ctrl_c(stopped_by):
            code = func(args)
        if code == EXIT_INTERRUPTED and stopped_by:  # a trainer saved its checkpoint and said so on stdout
            say_on_stderr(interrupted(stopped_by))
    except CommandError as exc:
        say_on_stderr(f"{PROG}: error: {exc}")
        return exc.code
    except AgentError as exc:  # an agent failed in the games of a command without a rule of its own (fit-search)
        say_on_stderr(f"{PROG}: error: {exc}")
        return EXIT_GAME_FAILED
    except MissingExtra as exc:  # an optional package an agent needs (ppo:path=X.zip: torch); any other: a traceback
        say_on_stderr(f"{PROG}: error: {exc}")
        return 1
    except KeyboardInterrupt:
        say_on_stderr("\n" + interrupted(stopped_by))
        return EXIT_INTERRUPTED
    except MemoryError:  # numpy's names the bytes it wanted; the person needs the cause
        say_on_stderr(f"{PROG}: error: out of memory: ask for less (fewer --games, say)")
        return 1
    except BrokenProcessPool:  # a worker killed (the out-of-memory killer, kill -9): the pool's traceback said neither
        say_on_stderr(f"{PROG}: error: {WORKER_DIED}: try fewer --workers")
        return 1
    except BrokenPipeError:  # `llama-rl ... | head`: the reader left; stop quietly
        silence_stdout()
        return 1
    except OSError as exc:  # a disk full or read-only under a command's output, found while writing
        where = f" ({exc.filename})" if exc.filename else ""
        say_on_stderr(f"{PROG}: error: {exc.strerror or exc}{where}")
        return 1
    return int(code or 0)


def _tolerant_streams() -> None:
    """Standard streams that are not UTF-8 (Windows' when redirected: cp1252) write a
    character they lack as an escape, instead of failing the command after its work is
    done (a run named ``σ-run`` trained, then its summary raised UnicodeEncodeError).
    Standard input, whatever its encoding, reads undecodable bytes as a replacement
    character: on a UTF-8 console one stray byte in ``play``'s input was an error that
    ended the game (exit 2), the moves read with it lost; under the C and C.UTF-8 locales,
    where Python reads it with ``surrogateescape``, it was echoed as ``'\\udcff'``. Standard
    output and error, UTF-8 there, are left as they are."""
    for stream, errors in ((sys.stdout, "backslashreplace"), (sys.stderr, "backslashreplace"), (sys.stdin, "replace")):
        encoding = (getattr(stream, "encoding", None) or "").lower().replace("-", "").replace("_", "")
        # a stray byte read is an error (strict) or a lone surrogate (surrogateescape)
        unreplaced = getattr(stream, "errors", None) in ("strict", "surrogateescape")
        if (
            encoding
            and (encoding not in ("utf8", "utf8sig") or (stream is sys.stdin and unreplaced))
            and hasattr(stream, "reconfigure")
        ):
            with contextlib.suppress(ValueError, OSError, io.UnsupportedOperation):
                stream.reconfigure(errors=errors)


def _terminate_as_ctrl_c(stopped_by: list[str]) -> contextlib.AbstractContextManager[Any]:
    """While a command runs, SIGTERM (``kill``, ``timeout``, a job scheduler stopping the
    job) stops it as Ctrl-C does: a training run saves a checkpoint and can be resumed, an
    evaluation ends its worker processes (they were left running for no one), and the exit
    code is 130. On Windows, which sends no SIGTERM, so does SIGBREAK (Ctrl-Break, the
    console closed). The signal's name is added to ``stopped_by``, for :func:`main`'s one
    line (:func:`train._program.stop_as_ctrl_c`)."""
    stop = stop_as_ctrl_c(stopped_by)
    stack = contextlib.ExitStack()
    for signum in _program.STOP_SIGNALS:
        stack.enter_context(_program.signal_handler(signum, stop))
    return stack


def _format_warning(
    default: Any,
    message: Any,
    category: Any,
    filename: str,
    lineno: int,
    line: Any = None,
    *,
    program: tuple[str, int] | None = None,
) -> str:
    """The project's own warnings as one line, like its errors (``llama-rl: warning: ...``);
    other packages' in Python's form, with their source line. The project's own point at
    its files, or at ``program``, the file and line that called :func:`main`
    (:func:`~llama_env.agent.program_frame`): a warning that llama-rl points past its
    packages, at the program's line that led to it (a plugin that failed to load, from
    ``llama_env.agent``), points there under the command line. Another line of that file
    is the program's own (a script's agent that warns as it plays). The project's files are
    those of its own packages (:func:`~llama_env.agent.in_places`), not gymnasium's or
    pettingzoo's, whose warnings keep Python's form."""
    if (filename, lineno) == program or in_places(filename):
        return f"{PROG}: warning: {message}\n"
    return str(default(message, category, filename, lineno, line))
