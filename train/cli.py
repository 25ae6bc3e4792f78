"""The ``llama-rl`` command line.

A thin layer over importable functions: each subcommand parses its arguments into a
typed config and calls one function that tests (and notebooks) can call directly.

    llama-rl eval --agents heuristic,random,random,random --games 2000 --seed 0
    llama-rl tournament --players 4 --agents random,heuristic,... --games 500
    llama-rl play --players 3 --opponents heuristic --seed 7
    llama-rl agents
    llama-rl train ...            (when train.train_cli is installed)

Exit codes: 0 success; 1 a game of ``play`` left unfinished (``exit`` or end of input);
2 a usage error (bad option, unknown agent, wrong number of agents...), reported as one
``llama-rl: error: ...`` line on stderr, never a traceback; 130 interrupted (Ctrl-C).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import importlib.util
import os
import sys
import textwrap
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, TextIO

import agents as agent_registry
from llama_env.engine import (
    DEFAULT_END_SCORE,
    DEFAULT_HAND_SIZE,
    MAX_END_SCORE,
    MAX_PLAYERS,
    MIN_PLAYERS,
    validate_rule_options,
)
from train.agent_spec import AgentSpec, parse_agent_list
from train.play import PlayConfig, play

__all__ = [
    "CommandError",
    "EvalCommand",
    "TournamentCommand",
    "run_eval",
    "run_tournament",
    "run_play",
    "list_agents",
    "build_parser",
    "main",
]

PROG = "llama-rl"
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130


class CommandError(Exception):
    """A problem to report as ``llama-rl: error: <message>`` with exit ``code``."""

    def __init__(self, message: str, code: int = EXIT_USAGE) -> None:
        super().__init__(message)
        self.code = code


# --------------------------------------------------------------------------- configs


@dataclass(frozen=True)
class EvalCommand:
    """``llama-rl eval``: one agent per seat, many games, win shares and scores."""

    agents: tuple[AgentSpec, ...]
    """One agent per seat, in seat order."""
    games: int = 1000
    seed: int = 0
    workers: int | None = None
    """Worker processes; ``None`` = all cores, 1 = this process."""
    duplicate: bool = False
    """Replay each deal with the agents rotated through the seats (less luck)."""
    rotate: bool = True
    """Rotate the seating from game to game so no agent keeps the first seat."""
    end_score: int = DEFAULT_END_SCORE
    hand_size: int = DEFAULT_HAND_SIZE
    progress: bool = False

    @property
    def num_players(self) -> int:
        return len(self.agents)


@dataclass(frozen=True)
class TournamentCommand:
    """``llama-rl tournament``: a pool of agents meeting at tables of ``num_players``."""

    agents: tuple[AgentSpec, ...]
    """The pool of agents (at least two)."""
    num_players: int = 4
    games: int = 1000
    seed: int = 0
    workers: int | None = None
    end_score: int = DEFAULT_END_SCORE
    hand_size: int = DEFAULT_HAND_SIZE
    progress: bool = False


# --------------------------------------------------------------------------- commands


def _agent_likes(specs: Sequence[AgentSpec]) -> list[agent_registry.AgentLike]:
    return [spec.as_agent_like() for spec in specs]


@contextlib.contextmanager
def _dependencies(what: str) -> Iterator[None]:
    """Turn an optional package missing at run time (openskill, tqdm...) into a message."""
    try:
        yield
    except ModuleNotFoundError as exc:
        raise CommandError(
            f"{what} needs the package {(exc.name or '?').split('.')[0]!r}, which is not installed; "
            f"install the training extras: pip install -e '.[train]'",
            code=1,
        ) from None


def _load(module: str, what: str) -> Any:
    """Import ``module`` or fail with a message saying which command needs it."""
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name == module:
            raise CommandError(f"{what} needs {module}, which is not part of this installation", code=1) from None
        raise CommandError(
            f"{what} needs the package {(exc.name or '?').split('.')[0]!r}, which is not installed; "
            f"install the training extras: pip install -e '.[train]'",
            code=1,
        ) from None


def run_eval(cmd: EvalCommand, out: TextIO | None = None) -> Any:
    """Play ``cmd.games`` games and print the evaluation table to ``out``.

    Returns the evaluation result (``train.evaluate.EvalResult``).
    """
    out = out if out is not None else sys.stdout
    ev = _load("train.evaluate", "llama-rl eval")
    with _dependencies("llama-rl eval"):
        result = ev.evaluate(
            _agent_likes(cmd.agents),
            cmd.games,
            seed=cmd.seed,
            workers=cmd.workers,
            duplicate=cmd.duplicate,
            rotate=cmd.rotate,
            end_score=cmd.end_score,
            hand_size=cmd.hand_size,
            progress=cmd.progress,
        )
    print(result.to_table(), file=out)
    return result


def run_tournament(cmd: TournamentCommand, out: TextIO | None = None) -> Any:
    """Play a tournament and print the ratings and the pairwise matrix to ``out``.

    Returns the tournament result (``train.evaluate.TournamentResult``).
    """
    out = out if out is not None else sys.stdout
    ev = _load("train.evaluate", "llama-rl tournament")
    with _dependencies("llama-rl tournament"):
        result = ev.tournament(
            _agent_likes(cmd.agents),
            cmd.num_players,
            cmd.games,
            seed=cmd.seed,
            workers=cmd.workers,
            end_score=cmd.end_score,
            hand_size=cmd.hand_size,
            progress=cmd.progress,
        )
    print(result.to_table(), file=out)
    print(file=out)
    print(result.pairwise_table(), file=out)
    return result


def run_play(config: PlayConfig, stdin: TextIO | None = None, stdout: TextIO | None = None) -> int:
    """``llama-rl play``: one game against agents on the terminal (see :func:`train.play.play`)."""
    return play(config, stdin if stdin is not None else sys.stdin, stdout if stdout is not None else sys.stdout)


def list_agents(out: TextIO | None = None) -> dict[str, str]:
    """Print every registered agent with its one-line description; return them."""
    out = out if out is not None else sys.stdout
    described = agent_registry.describe()
    width = max((len(n) for n in described), default=0)
    for name, doc in described.items():
        print(f"{name:<{width}}  {doc}".rstrip(), file=out)
    return described


# --------------------------------------------------------------------------- argument types


def _int_in(low: int, high: int | None, what: str) -> Callable[[str], int]:
    """An argparse type: an integer in ``[low, high]`` with a message naming the range."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{what} must be an integer, got {text!r}") from None
        if value < low or (high is not None and value > high):
            bound = f"between {low} and {high}" if high is not None else f"at least {low}"
            raise argparse.ArgumentTypeError(f"{what} must be {bound}, got {value}")
        return value

    parse.__name__ = what  # argparse names the type in some messages
    return parse


_players = _int_in(MIN_PLAYERS, MAX_PLAYERS, "the number of players")
_games = _int_in(1, None, "the number of games")
_workers = _int_in(1, None, "the number of workers")
_end_score = _int_in(1, MAX_END_SCORE, "the end score")
_hand_size = _int_in(1, None, "the hand size")
_seed = _int_in(0, None, "the seed")


def _progress(args: argparse.Namespace) -> bool:
    """Progress bars when asked, or by default when stderr is a terminal."""
    if args.progress is not None:
        return bool(args.progress)
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False


def _specs(text: str, option: str) -> list[AgentSpec]:
    try:
        return parse_agent_list(text)
    except ValueError as exc:
        raise CommandError(f"{option}: {exc}") from None


def _check_rules(num_players: int, end_score: int, hand_size: int) -> None:
    try:
        validate_rule_options(num_players, end_score, hand_size)
    except ValueError as exc:
        raise CommandError(str(exc)) from None


def _seat_agents(specs: list[AgentSpec], players: int | None, option: str) -> tuple[AgentSpec, ...]:
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


# --------------------------------------------------------------------------- handlers


def _cmd_eval(args: argparse.Namespace) -> int:
    seats = _seat_agents(_specs(args.agents, "--agents"), args.players, "--agents")
    _check_rules(len(seats), args.end_score, args.hand_size)
    cmd = EvalCommand(
        agents=seats,
        games=args.games,
        seed=args.seed,
        workers=args.workers,
        duplicate=args.duplicate,
        rotate=args.rotate,
        end_score=args.end_score,
        hand_size=args.hand_size,
        progress=_progress(args),
    )
    run_eval(cmd)
    return 0


def _cmd_tournament(args: argparse.Namespace) -> int:
    pool = _specs(args.agents, "--agents")
    if len(pool) < 2:
        raise CommandError(f"--agents: a tournament needs a pool of at least 2 agents, got {len(pool)}")
    players = args.players if args.players is not None else min(4, len(pool))
    if len(pool) < players:
        raise CommandError(
            f"--agents: a tournament at {players}-player tables needs a pool of at least "
            f"{players} agents, got {len(pool)} (lower --players or name more agents)"
        )
    _check_rules(players, args.end_score, args.hand_size)
    cmd = TournamentCommand(
        agents=tuple(pool),
        num_players=players,
        games=args.games,
        seed=args.seed,
        workers=args.workers,
        end_score=args.end_score,
        hand_size=args.hand_size,
        progress=_progress(args),
    )
    run_tournament(cmd)
    return 0


def _cmd_play(args: argparse.Namespace) -> int:
    opponents = _specs(args.opponents, "--opponents")
    _check_rules(args.players, args.end_score, args.hand_size)
    others = args.players - 1
    if len(opponents) not in (1, others):
        raise CommandError(
            f"--opponents names {len(opponents)} agents for the {others} other seats of a "
            f"{args.players}-player game; give exactly {others} or a single agent to fill them all"
        )
    if not 0 <= args.seat < args.players:
        raise CommandError(f"--seat must be between 0 and {others} for {args.players} players, got {args.seat}")
    config = PlayConfig(
        num_players=args.players,
        opponents=tuple(opponents),
        seat=args.seat,
        seed=args.seed,
        end_score=args.end_score,
        hand_size=args.hand_size,
    )
    return run_play(config)


def _cmd_agents(args: argparse.Namespace) -> int:
    list_agents()
    return 0


# --------------------------------------------------------------------------- parser

_AGENT_SYNTAX = (
    "An agent is a registered name (see `llama-rl agents`), optionally with parameters: "
    "name:key=value[:key=value...], e.g. cautious:threshold=4."
)


def _add_rule_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--end-score",
        type=_end_score,
        default=DEFAULT_END_SCORE,
        metavar="N",
        help=f"the game ends after a round in which a score reaches N (default {DEFAULT_END_SCORE})",
    )
    p.add_argument(
        "--hand-size",
        type=_hand_size,
        default=DEFAULT_HAND_SIZE,
        metavar="N",
        help=f"cards dealt to each player (default {DEFAULT_HAND_SIZE})",
    )


def _add_run_options(p: argparse.ArgumentParser, default_games: int) -> None:
    p.add_argument(
        "--games", type=_games, default=default_games, metavar="N", help=f"games to play (default {default_games})"
    )
    p.add_argument("--seed", type=_seed, default=0, help="seed of the deals and the agents (default 0)")
    p.add_argument(
        "--workers",
        type=_workers,
        default=None,
        metavar="N",
        help="worker processes (default: all cores; 1 = this process)",
    )
    p.add_argument(
        "--progress",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="show a progress bar on stderr (default: when stderr is a terminal)",
    )


class _HelpFormatter(argparse.RawDescriptionHelpFormatter):
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


def build_parser() -> argparse.ArgumentParser:
    """The ``llama-rl`` parser with every subcommand (``train`` when it is installed)."""
    fmt = _HelpFormatter
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="LLAMA-RL: evaluate, rank, train and play against agents for Reiner Knizia's L.L.A.M.A.",
        epilog=(
            "examples:\n"
            "  llama-rl agents\n"
            "  llama-rl eval --agents heuristic,random,random,random --games 2000\n"
            "  llama-rl tournament --players 4 --agents random,heuristic,cautious:threshold=4 --games 500\n"
            "  llama-rl play --players 3 --opponents heuristic\n"
            "\nRun `llama-rl COMMAND --help` for the options of a command."
        ),
        formatter_class=fmt,
    )
    sub = parser.add_subparsers(title="commands", dest="command", metavar="COMMAND")

    p = sub.add_parser(
        "eval",
        help="play many games between fixed agents and print win shares and scores",
        description=(
            "Play many games with one agent per seat and print each agent's win share, mean score "
            "and more.\n\n"
            + _AGENT_SYNTAX
            + "\n\nGive one agent per seat, or a single agent with --players N to seat it N times "
            "(self-play). --players defaults to the number of agents."
        ),
        epilog=(
            "examples:\n"
            "  llama-rl eval --agents heuristic,random,random,random --games 2000 --seed 0\n"
            "  llama-rl eval --players 4 --agents heuristic,random,random,random --games 2000 --workers 2\n"
            "  llama-rl eval --players 3 --agents heuristic --games 500 --duplicate\n"
            "  llama-rl eval --agents cautious:threshold=4,random --end-score 20 --hand-size 4"
        ),
        formatter_class=fmt,
    )
    p.add_argument("--agents", required=True, metavar="A,B,...", help="comma-separated agents, in seat order")
    p.add_argument(
        "--players", type=_players, default=None, metavar="N", help="players at the table, 2..6 (default: as agents)"
    )
    _add_run_options(p, default_games=1000)
    p.add_argument("--duplicate", action="store_true", help="replay each deal with the agents rotated (less luck)")
    p.add_argument(
        "--no-rotate", dest="rotate", action="store_false", help="keep every agent in its seat (default: rotate seats)"
    )
    _add_rule_options(p)
    p.set_defaults(func=_cmd_eval)

    p = sub.add_parser(
        "tournament",
        help="rank a pool of agents (ratings and a pairwise matrix)",
        description=(
            "Seat agents from a pool at tables of --players, play --games games, and print "
            "openskill (Plackett-Luce) ratings and the pairwise matrix: how often each agent "
            "finished ahead of each other one in the games they shared. Every combination of "
            "agents gets a table about equally often, and everyone sits everywhere.\n\n"
            + _AGENT_SYNTAX
        ),
        epilog=(
            "examples:\n"
            "  llama-rl tournament --players 4 --agents random,heuristic,cautious:threshold=4 --games 500\n"
            "  llama-rl tournament --players 2 --agents random,heuristic --games 200 --seed 1 --no-progress"
        ),
        formatter_class=fmt,
    )
    p.add_argument("--agents", required=True, metavar="A,B,...", help="comma-separated pool of agents (at least 2)")
    p.add_argument(
        "--players",
        type=_players,
        default=None,
        metavar="N",
        help="players at each table, 2..6, at most the pool size (default: 4, or the pool size if smaller)",
    )
    _add_run_options(p, default_games=1000)
    _add_rule_options(p)
    p.set_defaults(func=_cmd_tournament)

    p = sub.add_parser(
        "play",
        help="play a game yourself against agents in the terminal",
        description=(
            "Play one game against agents. At each of your turns you see your hand, the top card, "
            "the draw pile, the other players' hand sizes, scores and who has quit, and your legal "
            "moves.\n\n"
            "Type a move by its key: the card value to play it (4 or 'play 4'), L or 'llama' to play "
            "a llama, d or 'draw', q or 'quit' (quits the round, not the program). 'a7' names an "
            "action by its index 0..8. 'help' lists the moves; 'exit' or end of input (Ctrl-D) "
            "leaves the game (exit code 1; 0 when the game is played to the end).\n\n"
            + _AGENT_SYNTAX
        ),
        epilog=(
            "examples:\n"
            "  llama-rl play\n"
            "  llama-rl play --players 4 --opponents heuristic --seed 7 --seat 2\n"
            "  llama-rl play --players 3 --opponents random,heuristic --end-score 20"
        ),
        formatter_class=fmt,
    )
    p.add_argument("--players", type=_players, default=3, metavar="N", help="players, you included, 2..6 (default 3)")
    p.add_argument(
        "--opponents",
        default="heuristic",
        metavar="A,B,...",
        help="one agent for every other seat, or one per other seat in seat order (default heuristic)",
    )
    p.add_argument("--seed", type=_seed, default=None, help="seed for a reproducible game (default: a new game)")
    p.add_argument(
        "--seat", type=_int_in(0, None, "the seat"), default=0, help="your seat; seat 0 starts round 1 (default 0)"
    )
    _add_rule_options(p)
    p.set_defaults(func=_cmd_play)

    p = sub.add_parser(
        "agents",
        help="list the registered agents",
        description="List every registered agent with its one-line description.",
        epilog="example:\n  llama-rl agents",
        formatter_class=fmt,
    )
    p.set_defaults(func=_cmd_agents)

    if importlib.util.find_spec("train.train_cli") is not None:
        importlib.import_module("train.train_cli").add_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run ``llama-rl`` with ``argv`` (default ``sys.argv[1:]``); return the exit code."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help (0) and argparse's usage errors (2)
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else EXIT_USAGE)
    func = getattr(args, "func", None)
    if func is None:
        parser.print_usage(sys.stderr)
        print(f"{PROG}: error: a command is required: {', '.join(_commands(parser))}", file=sys.stderr)
        return EXIT_USAGE
    try:
        code = func(args)
    except CommandError as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return exc.code
    except KeyboardInterrupt:
        print(f"\n{PROG}: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # `llama-rl ... | head`: the reader left; stop quietly
        _silence_stdout()
        return 1
    return int(code or 0)


def _silence_stdout() -> None:
    """Point stdout at /dev/null so the interpreter's final flush does not complain again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, AttributeError, ValueError):
        pass


def _commands(parser: argparse.ArgumentParser) -> list[str]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return list(action.choices)
    return []


if __name__ == "__main__":  # pragma: no cover - `python -m train.cli`
    # Run the imported module, not this __main__ copy, so that CommandError raised by
    # other modules (train.train_cli imports train.cli) is the class main() catches.
    from train.cli import main as _main

    sys.exit(_main())
