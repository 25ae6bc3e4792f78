"""What every ``llama-rl`` command shares: the error type, argument types, option groups
and the help formatter."""

from __future__ import annotations

import argparse
import contextlib
import sys
import textwrap
from collections.abc import Callable, Iterator
from typing import Any

from llama_env.agent import AgentSpec, parse_agent_list
from llama_env.engine import (
    DEFAULT_END_SCORE,
    DEFAULT_HAND_SIZE,
    MAX_END_SCORE,
    MAX_PLAYERS,
    MIN_PLAYERS,
    validate_rule_options,
)

__all__ = [
    "PROG",
    "EXIT_USAGE",
    "EXIT_INTERRUPTED",
    "CommandError",
    "HelpFormatter",
    "AGENT_SYNTAX",
    "int_in",
    "players_type",
    "seed_type",
    "progress_wanted",
    "agent_specs",
    "check_rules",
    "seat_agents",
    "add_rule_options",
    "add_run_options",
    "missing_dependency",
    "SubParsers",
]

PROG = "llama-rl"
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130

SubParsers = Any
"""argparse's subparsers action (``ArgumentParser.add_subparsers()``), which has no public type."""


class CommandError(Exception):
    """A problem to report as ``llama-rl: error: <message>`` with exit ``code``."""

    def __init__(self, message: str, code: int = EXIT_USAGE) -> None:
        super().__init__(message)
        self.code = code


@contextlib.contextmanager
def missing_dependency(what: str, extra: str = "train") -> Iterator[None]:
    """Turn an optional package missing at run time (torch, openskill, tqdm...) into a
    message that says which extra to install."""
    try:
        yield
    except ModuleNotFoundError as exc:
        package = (exc.name or "?").split(".")[0]
        if package in ("llama_env", "agents", "train"):
            raise
        raise CommandError(
            f"{what} needs the package {package!r}, which is not installed; "
            f"install the {extra!r} extra: pip install 'llama-rl[{extra}]' (or pip install -e '.[{extra}]' "
            "in a checkout)",
            code=1,
        ) from None


def int_in(low: int, high: int | None, what: str) -> Callable[[str], int]:
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


players_type = int_in(MIN_PLAYERS, MAX_PLAYERS, "the number of players")
games_type = int_in(1, None, "the number of games")
workers_type = int_in(1, None, "the number of workers")
end_score_type = int_in(1, MAX_END_SCORE, "the end score")
hand_size_type = int_in(1, None, "the hand size")
seed_type = int_in(0, None, "the seed")


def progress_wanted(args: argparse.Namespace) -> bool:
    """Progress bars when asked, or by default when stderr is a terminal."""
    if args.progress is not None:
        return bool(args.progress)
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False


def agent_specs(text: str, option: str) -> list[AgentSpec]:
    try:
        return parse_agent_list(text)
    except ValueError as exc:
        raise CommandError(f"{option}: {exc}") from None


def check_rules(num_players: int, end_score: int, hand_size: int) -> None:
    try:
        validate_rule_options(num_players, end_score, hand_size)
    except ValueError as exc:
        raise CommandError(str(exc)) from None


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


def add_rule_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--end-score",
        type=end_score_type,
        default=DEFAULT_END_SCORE,
        metavar="N",
        help=f"the game ends after a round in which a score reaches N (default {DEFAULT_END_SCORE})",
    )
    p.add_argument(
        "--hand-size",
        type=hand_size_type,
        default=DEFAULT_HAND_SIZE,
        metavar="N",
        help=f"cards dealt to each player (default {DEFAULT_HAND_SIZE})",
    )


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
        help="worker processes (default: all cores; 1 = this process)",
    )
    p.add_argument(
        "--progress",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="show a progress bar on stderr (default: when stderr is a terminal)",
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
