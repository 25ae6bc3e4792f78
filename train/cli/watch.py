"""``llama-rl watch``: agents in every seat, one game shown move by move in the terminal."""

from __future__ import annotations

import argparse

from train.cli.common import (
    AGENT_SYNTAX,
    HelpFormatter,
    SubParsers,
    add_rule_options,
    agent_specs,
    float_in,
    game_errors,
    players_type,
    rules_from_args,
    seat_agents,
    seed_type,
    standard_output,
)
from train.play.terminal import WATCH_DELAY, WatchConfig, watch

__all__ = ["add_parser"]


DEFAULT_PLAYERS = 4
"""The table a single agent fills when --players is not given."""


def _run(args: argparse.Namespace) -> int:
    specs = agent_specs(args.agents, "--agents")
    players = args.players if args.players is not None or len(specs) > 1 else DEFAULT_PLAYERS
    seats = seat_agents(specs, players, "--agents")
    rules = rules_from_args(args, len(seats))
    out = standard_output("watch shows the game on it")
    config = WatchConfig(seats, rules=rules, seed=args.seed, delay=args.delay)  # None: watch decides
    with game_errors():
        config.validate()
        return watch(config, out)


def add_parser(sub: SubParsers) -> argparse.ArgumentParser:
    p: argparse.ArgumentParser = sub.add_parser(
        "watch",
        help="watch agents play a game in the terminal",
        description="Agents sit in every seat; the game is shown move by move, every hand at the top of each round.\n\n"
        + AGENT_SYNTAX,
        epilog=(
            "examples:\n"
            "  llama-rl watch --players 4 --agents heuristic\n"
            "  llama-rl watch --agents ppo,heuristic,cautious --seed 3 --delay 0"
        ),
        formatter_class=HelpFormatter,
    )
    p.add_argument(
        "--agents",
        default="heuristic",
        metavar="A,B,...",
        help="one agent per seat, or one for all (default heuristic)",
    )
    p.add_argument(
        "--players",
        type=players_type,
        default=None,
        metavar="N",
        help=f"players, 2..6 (default: as agents, or {DEFAULT_PLAYERS} for a single agent)",
    )
    p.add_argument("--seed", type=seed_type, default=None, help="seed for a reproducible game")
    p.add_argument(
        "--delay",
        type=float_in(0, 60, "the delay in seconds"),
        default=None,
        help=f"seconds before each move is shown (default {WATCH_DELAY:g} at a terminal, 0 into a file or a pipe)",
    )
    add_rule_options(p)
    p.set_defaults(func=_run, command_parser=p)
    return p
