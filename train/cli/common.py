"""What every ``llama-rl`` command shares: the error type, argument types, option groups
and the help formatter."""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import sys
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TextIO, TypeVar

from llama_env._atomic import check_writable_folder
from llama_env._install import EXTRAS, MissingExtra, extra_named, find_missing, install_hint, missing_from
from llama_env.agent import AgentSpec, parse_agent_list
from llama_env.engine import (
    MAX_PLAYERS,
    MIN_PLAYERS,
    IllegalActionError,
    Rules,
    read_int,
    read_number,
    rule_option_fields,
)
from llama_env.table import AgentError
from train._program import EXIT_INTERRUPTED, EXIT_USAGE, PROG, is_terminal, say_on_stderr
from train.evaluation.runner import GamesInterrupted

__all__ = [
    "PROG",
    "EXIT_USAGE",
    "EXIT_INTERRUPTED",
    "MAX_GAMES",
    "CommandError",
    "EXIT_GAME_FAILED",
    "game_errors",
    "games_kept",
    "standard_output",
    "HelpFormatter",
    "AGENT_SYNTAX",
    "int_in",
    "players_type",
    "seed_type",
    "progress_wanted",
    "add_progress_option",
    "is_terminal",
    "agent_specs",
    "seat_agents",
    "add_rule_options",
    "rule_flag",
    "rules_from_args",
    "add_run_options",
    "add_record_option",
    "folder_name",
    "file_name",
    "model_name",
    "path_named",
    "add_command",
    "add_count",
    "add_games",
    "write_npz",
    "silence_stdout",
    "say_on_stderr",
    "progress_log",
    "missing_dependency",
    "import_or_exit",
    "extra_or_exit",
    "npz_out",
    "replaced",
    "SubParsers",
]


SubParsers = Any
"""argparse's subparsers action (``ArgumentParser.add_subparsers()``), which has no public type."""


class CommandError(Exception):
    """A problem to report as ``llama-rl: error: <message>`` with exit ``code``."""

    def __init__(self, message: str, code: int = EXIT_USAGE) -> None:
        super().__init__(message)
        self.code = code


EXIT_GAME_FAILED = 1
"""The exit code when a game among agents could not be finished: an agent failed in it."""


@contextlib.contextmanager
def game_errors(prefix: str = "") -> Iterator[None]:
    """Games among agents (``eval``, ``tournament``, ``play``, ``watch``, ``train``,
    ``fit-search``, ``distill``) as the command line reports their failures: an agent that
    raises or answers an illegal move during a game is one line naming it and its seat
    (after ``prefix``), exit :data:`EXIT_GAME_FAILED`; any other ``ValueError`` is the
    configuration's (a bad parameter, a folder that cannot be written), a usage error,
    exit 2."""
    try:
        yield
    except (AgentError, IllegalActionError) as exc:
        raise CommandError(f"{prefix}{exc}", code=EXIT_GAME_FAILED) from None
    except ValueError as exc:
        raise CommandError(str(exc)) from None


@contextlib.contextmanager
def games_kept(out: TextIO) -> Iterator[None]:
    """``eval`` and ``tournament`` stopped by Ctrl-C (or SIGTERM): the table of the games
    finished is printed to ``out``, headed by what it is of (``interrupted: the first 1,234
    of 4,000 games, in order ...``), before ``llama-rl: interrupted`` and exit 130 (the
    games finished were lost); nothing where no game had finished. An ``out`` that
    refuses the write loses the table, not the exit code."""
    try:
        yield
    except GamesInterrupted as stop:
        if stop.partial is not None:
            lead = "\n" if is_terminal(out) else ""  # past the ^C the terminal shows
            with contextlib.suppress(OSError, ValueError):
                print(f"{lead}{stop}\n{stop.partial}", file=out, flush=True)
        raise


def standard_output(why: str) -> TextIO:
    """``sys.stdout``, for a command whose result is what it prints there; when it is
    closed (``llama-rl agents >&-``: Python sets it to ``None``) a :class:`CommandError`
    saying so, with ``why`` the command needs it, exit 1, found before any work: the
    command ran and printed into nothing, and its exit code said it succeeded."""
    if sys.stdout is None:
        raise CommandError(f"standard output is closed: {why}", code=1)
    return sys.stdout


@contextlib.contextmanager
def missing_dependency(what: str, extra: str = "train") -> Iterator[None]:
    """Turn a package of the extra ``extra`` missing at run time (torch, openskill...: the
    extra's in :data:`llama_env._install.EXTRAS`; :func:`~llama_env._install.extra_named`)
    into a message that says to install the extra. Any other module missing goes through
    as it is: an agent's own import, the project's own modules (a broken install), or
    another extra's package in a :class:`~llama_env._install.MissingExtra`, which ``main``
    prints as it says."""

    def needs(package: str) -> str:
        return f"{what} needs the package {package!r}, which is not installed"

    try:
        with extra_named(extra, needs):
            yield
    except MissingExtra as exc:  # the block's, or an agent's own, of this extra: said in the command's words
        package = missing_from(extra, exc)
        if package is None:
            raise
        raise CommandError(f"{needs(package)}; install the {extra!r} extra: {install_hint(extra)}", code=1) from None


def import_or_exit(prog: str, extra: str, *modules: str) -> None:
    """For a script outside ``llama-rl`` (a benchmark): import ``modules`` now, or exit 1
    with one line, ``<prog>: error: this benchmark needs ...``, naming the extra that
    brings what is missing (:func:`missing_dependency`)."""
    _or_exit(prog, extra, "this benchmark", lambda: [importlib.import_module(module) for module in modules])


def extra_or_exit(prog: str, extra: str, what: str) -> None:
    """For a script outside ``llama-rl`` that runs on the whole of the extra ``extra`` (the
    notebooks' runner, whose kernels import pandas, matplotlib, torch...): find each of its
    packages (:data:`llama_env._install.EXTRAS`) without importing any
    (:func:`~llama_env._install.find_missing`), or exit 1 with
    :func:`import_or_exit`'s line naming the first one missing and the extra."""

    def find() -> None:
        module = find_missing(EXTRAS[extra].values())
        if module is not None:
            raise ModuleNotFoundError(f"No module named {module!r}", name=module)

    _or_exit(prog, extra, what, find)


def _or_exit(prog: str, extra: str, what: str, check: Callable[[], object]) -> None:
    try:
        with missing_dependency(what, extra=extra):
            check()
    except CommandError as exc:
        sys.exit(f"{prog}: error: {exc}")


def int_in(low: int, high: int | None, what: str) -> Callable[[str], int]:
    """An argparse type: an integer in ``[low, high]`` (``high`` ``None``: no upper bound)
    as :func:`~llama_env.engine.read_int` reads it (the digits 0-9, a sign at most), its
    refusal a usage error that argparse names the flag of."""

    def parse(text: str) -> int:
        try:
            return read_int(text, what, low, high)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    parse.__name__ = what  # argparse names the type in some messages
    return parse


def float_in(low: float, high: float | None, what: str, *, above: bool = False) -> Callable[[str], float]:
    """An argparse type: a finite number in ``[low, high]``, or ``(low, high]`` with
    ``above`` (``high`` ``None``: no upper bound), as :func:`~llama_env.engine.read_number`
    reads it, so that argparse names the flag of a value the command would refuse later."""

    def parse(text: str) -> float:
        try:
            return read_number(text, what, low, high, above=above)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    parse.__name__ = what
    return parse


players_type = int_in(MIN_PLAYERS, MAX_PLAYERS, "the number of players")
MAX_GAMES = 10**9
"""The most games one command plays (a game's results take some hundred bytes)."""
games_type = int_in(1, MAX_GAMES, "the number of games")
workers_type = int_in(1, None, "the number of workers")
seed_type = int_in(0, 2**63 - 1, "the seed")
"""A seed every command can use (torch takes at most 2**63 - 1); the trainers refuse one
of 2**32 or more, which the numpy seeding of SB3 and RLlib cannot take."""


def progress_wanted(args: argparse.Namespace) -> bool:
    """Progress bars when asked, or by default when stderr is a terminal."""
    if args.progress is not None:
        return bool(args.progress)
    return is_terminal(sys.stderr)


def agent_specs(text: str, option: str) -> list[AgentSpec]:
    try:
        return parse_agent_list(text)
    except ValueError as exc:
        raise CommandError(f"{option}: {exc}") from None


def seat_agents(specs: list[AgentSpec], players: int | None, option: str) -> tuple[AgentSpec, ...]:
    """One agent per seat: as many as ``players``, or a single one that fills every seat."""
    if players is None:
        if len(specs) < MIN_PLAYERS:
            raise CommandError(
                f"{option} names {len(specs)} agent; give one per seat ({MIN_PLAYERS} to {MAX_PLAYERS}), "
                f"or one agent and --players N to seat it N times"
            )
        if len(specs) > MAX_PLAYERS:
            raise CommandError(f"{option} names {len(specs)} agents, but a table seats at most {MAX_PLAYERS}")
        return tuple(specs)
    if len(specs) == 1:
        return tuple(specs * players)
    if len(specs) != players:
        raise CommandError(
            f"{option} names {len(specs)} agents for {players} players; give exactly {players} "
            f"(one per seat, in seat order) or a single agent to fill every seat"
        )
    return tuple(specs)


AGENT_SYNTAX = (
    "An agent is a registered name (see `llama-rl agents`), optionally with parameters: "
    "name:key=value[:key=value...], e.g. cautious:threshold=4."
)


def rule_flag(name: str) -> str:
    """The command-line flag of the rule option ``name``: ``end_score`` -> ``--end-score``."""
    return "--" + name.replace("_", "-")


def add_rule_options(p: argparse.ArgumentParser) -> None:
    """A flag for every rule option of :class:`~llama_env.engine.Rules`
    (:func:`~llama_env.engine.rule_option_fields`), its range, default and help taken from
    the option's declaration; :func:`rules_from_args` reads them back."""
    for f in rule_option_fields():
        low, high = f.metadata["low"], f.metadata["high"]
        p.add_argument(
            rule_flag(f.name),
            dest=f.name,
            type=int_in(low, high, "the " + f.name.replace("_", " ")),
            default=f.default,
            metavar="N",
            help=f"{f.metadata['flag_help']} (default {f.default})",
        )


def rules_from_args(args: argparse.Namespace, num_players: int) -> Rules:
    """The rules a command's games are played by: its table size and the rule options
    that :func:`add_rule_options` added; a combination the rules refuse (a hand too large
    for the table) is a :class:`CommandError` naming the option by its flag (the rules
    name it by its field: ``hand_size must be ...``)."""
    try:
        return Rules(num_players, **{f.name: getattr(args, f.name) for f in rule_option_fields()})
    except ValueError as exc:
        message = str(exc)
        for f in rule_option_fields():
            if message.startswith(f"{f.name} "):
                message = rule_flag(f.name) + message[len(f.name) :]
        raise CommandError(message) from None


def add_run_options(p: argparse.ArgumentParser, default_games: int) -> None:
    p.add_argument(
        "--games", type=games_type, default=default_games, metavar="N", help=f"games to play (default {default_games})"
    )
    p.add_argument("--seed", type=seed_type, default=0, help="seed of the deals and the agents (default 0)")
    p.add_argument(
        "--workers",
        type=workers_type,
        default=None,
        metavar="N",
        help="worker processes (default: every core this process may use; 1 = this process)",
    )
    add_progress_option(p)
    p.add_argument(
        "--batch",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="play thousands of games at once on the batched engine, with its own deals (default: whenever "
        "every agent can act on a batch and no game is recorded or dealt twice); --no-batch plays game by "
        "game, each dealt from --seed and its number",
    )


def add_progress_option(p: argparse.ArgumentParser) -> None:
    """``--progress`` / ``--no-progress``, which :func:`progress_wanted` reads: a bar of the
    games on stderr (``eval``, ``tournament``, ``fit-search``, ``distill``)."""
    p.add_argument(
        "--progress",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="show a progress bar on stderr (default: when stderr is a terminal)",
    )


def path_named(what: str) -> Callable[[str], str]:
    """An argparse type: a path named on the command line, ``what`` saying what it takes
    (``"a file's name"``); an empty one (or blanks alone) is refused in one line, ``argument
    --x: needs {what}, got ''``: as a path it is the current folder, and an unset shell
    variable (``--resume "$RUN"``) was read as the option left out or as ``.``."""

    def parse(text: str) -> str:
        if not text.strip():
            raise argparse.ArgumentTypeError(f"needs {what}, got {text!r}")
        return text

    parse.__name__ = what  # argparse names the type in some messages
    return parse


folder_name = path_named('a folder\'s name ("." for the current one)')
"""A folder named on the command line (``--record "$DIR"`` with DIR unset put files in the
current folder unasked)."""
file_name = path_named("a file's name")
"""A file named on the command line (``--history "$FILE"`` with FILE unset was taken for
the option left out, and used the real history)."""
model_name = path_named("a model file or run directory")
"""A model named on the command line: a model file, or a run directory (its newest model)."""


def add_record_option(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--record",
        type=folder_name,
        default=None,
        metavar="DIR",
        help="write every game to DIR, a new or empty folder, as a game record (llama-rl serve replays it)",
    )


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Wraps prose paragraphs to the terminal width; keeps paragraphs with indented
    lines (the examples) exactly as written."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        paragraphs = []
        for para in text.split("\n\n"):
            if any(line.startswith("  ") for line in para.splitlines()):
                paragraphs.append("\n".join(indent + line for line in para.splitlines()))
            else:
                paragraphs.append(
                    textwrap.fill(" ".join(para.split()), width, initial_indent=indent, subsequent_indent=indent)
                )
        return "\n\n".join(paragraphs)


def add_command(
    sub: SubParsers, name: str, run: Callable[[argparse.Namespace], int], doc: str
) -> argparse.ArgumentParser:
    """Add the subcommand ``name``, which ``run(args)`` carries out, its help written once
    in ``doc`` (its module's docstring, three parts): a first paragraph naming the command
    in double backticks, a colon and what it does (its line in ``llama-rl --help``); the
    description; and a last paragraph of ``examples:``. Its own ``--help`` shows all three."""
    first, *middle, last = doc.strip().split("\n\n")
    if not last.startswith("examples:") or not middle or f"``{PROG} {name}``: " not in first:
        raise ValueError(f"the help of {name!r} needs a summary, a description and examples: {doc[:60]!r}")
    p: argparse.ArgumentParser = sub.add_parser(
        name,
        help=" ".join(first.split(": ", 1)[1].split()).rstrip("."),
        description="\n\n".join(middle),
        epilog=last,
        formatter_class=HelpFormatter,
    )
    p.set_defaults(func=run, command_parser=p)
    return p


def add_count(
    p: argparse.ArgumentParser,
    flag: str,
    default: int | None,
    what: str,
    doc: str,
    low: int = 1,
    high: int | None = None,
) -> None:
    """An integer option of at least ``low`` and at most ``high`` (``what`` names it in
    errors), its default shown after ``doc`` (``None``: ``doc`` says what leaving it out
    does)."""
    shown = "" if default is None else f" (default {default})"
    p.add_argument(flag, type=int_in(low, high, what), default=default, metavar="N", help=doc + shown)


def add_games(
    p: argparse.ArgumentParser,
    flag: str,
    default: int | None,
    doc: str,
    *,
    low: int = 1,
    what: str = "the number of games",
) -> None:
    """A count of games (:func:`add_count`), at most :data:`MAX_GAMES`: a huge one fails
    when its results are allocated, after minutes of work in some commands."""
    add_count(p, flag, default, what, doc, low=low, high=MAX_GAMES)


def writable_folder(folder: Path, what: str) -> None:
    """A :class:`CommandError` naming ``what`` unless ``folder`` is a folder this process
    can write a file in (:func:`llama_env._atomic.check_writable_folder`): found before
    the work, not when its result is saved."""
    try:
        check_writable_folder(folder)
    except ValueError as exc:
        raise CommandError(f"{what}: {exc}") from None


def npz_out(out: str | Path, model: str | None = None) -> Path:
    """``--out`` as a path, and ``--model`` (if given) an existing file or directory, each
    with a leading ``~`` read as the agents read their paths
    (:func:`agents.base.agent_path`); a missing model is a :class:`CommandError`. What the
    file may be (a ``.npz`` file, not a shipped one, nor one the command reads, nor a file
    of the other kind) is :func:`train.fit.out_file`'s to check, and its name in the agent
    spec the command prints (no comma...) :func:`train.fit.agent_spec`'s. Say
    :func:`replaced` once the new file is written."""
    from agents.base import agent_path  # not at import: main first checks that `agents` is llama-rl's

    try:
        path = agent_path(out, "--out")
        source = None if model is None else agent_path(model, "--model")
    except ValueError as exc:  # an empty name: as a path, the current folder
        raise CommandError(str(exc)) from None
    if source is not None and not source.exists():
        raise CommandError(f"--model {model!r}: no such file or directory")
    return path


def replaced(path: Path, existed: bool, log: Callable[[str], None] | None = None) -> None:
    """Say that the file just written to ``path`` (an :func:`npz_out`) replaced the one
    that ``existed`` there, on stdout or through ``log``: a file of the kind written (a
    file of the other kind, or a shipped one, was refused before any work), replaced on
    purpose as a new version, so this is a note, not a refusal. Said once written, so
    that a command refused or failed on the way announces no replacement it never made."""
    if existed:
        line = f"note: the new {path} replaced the file that was there"
        if log is None:
            print(line, flush=True)
        else:
            log(line)


def progress_log() -> Callable[[str], None]:
    """A progress log on stdout for a command whose result is a file (``fit-search``,
    ``distill``): when stdout fails (``llama-rl distill ... | head -1``: the reader left)
    it stops printing and points stdout at the null device, so that neither its next line
    nor the interpreter's last flush fails, and the file is still written. A command whose
    output is its result (``eval``) stops at a broken pipe instead."""
    quiet = False

    def log(line: str) -> None:
        nonlocal quiet
        if quiet:
            return
        try:
            print(line, flush=True)
        except OSError:  # BrokenPipeError, or a device that failed under a redirect
            quiet = True
            silence_stdout()

    return log


def silence_stdout() -> None:
    """Point stdout at the null device, so that nothing more written to it, nor the
    interpreter's final flush, fails again after a broken pipe."""
    with contextlib.suppress(OSError, AttributeError, ValueError):  # no file behind stdout: nothing to do
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)


T = TypeVar("T")


def write_npz(config: Any, out: str | Path, fit: Callable[..., T], command: str, progress: bool = False) -> T:
    """The run of a command that fits with torch and writes to ``--out`` (``fit-search``,
    ``distill``): ``config`` (with its ``model`` and ``validate()``) and ``out``'s name
    checked first (:func:`npz_out`), then ``fit(config, out, log=..., progress=...,
    label="--out ")`` reporting on stdout, with a bar of its games on stderr if
    ``progress``; ``fit`` checks ``out`` itself (:func:`train.fit.out_file`) and imports
    torch after it, so that both fail before minutes of games. Bad input, found before or
    while the model is read, is a :class:`CommandError`; torch missing names the extra."""
    try:
        config.validate()
    except ValueError as exc:
        raise CommandError(str(exc)) from None
    path = npz_out(out, config.model)
    existed = path.exists()
    log = progress_log()
    # game_errors: an agent failing in the games; an out file, or a model, refused by fit
    with missing_dependency(command), game_errors():
        result = fit(config, out, log=log, progress=progress, label="--out ")
    replaced(path, existed, log)
    return result
