"""``llama-rl eval``: one agent per seat, many games, win shares and scores."""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from typing import TextIO

from llama_env.agent import AgentLike
from llama_env.engine import Rules
from train.cli.common import (
    AGENT_SYNTAX,
    HelpFormatter,
    SubParsers,
    add_record_option,
    add_rule_options,
    add_run_options,
    agent_specs,
    game_errors,
    games_kept,
    missing_dependency,
    players_type,
    progress_wanted,
    rules_from_args,
    seat_agents,
    standard_output,
)
from train.evaluation.evaluate import EvalResult, evaluate
from train.evaluation.runner import agent_list

__all__ = ["EvalCommand", "run_eval", "add_parser"]


@dataclass(frozen=True)
class EvalCommand:
    """``llama-rl eval``: one agent per seat, many games, win shares and scores."""

    agents: tuple[AgentLike, ...]
    """One agent per seat, in seat order: names, specs or agents, or one string of them
    separated by commas as ``--agents`` takes it (``"heuristic,random"``), as
    :func:`~train.evaluation.evaluate` takes them; kept as a tuple."""
    games: int = 1000
    seed: int = 0
    workers: int | None = None
    """Worker processes; ``None`` = every core this process may use, 1 = this process."""
    duplicate: bool = False
    """Replay each deal with the agents rotated through the seats (less luck)."""
    rotate: bool = True
    """Rotate the seating from game to game so no agent keeps the first seat."""
    rules: Rules | None = None
    """The rules of every game, for ``len(agents)`` players; ``None``: the standard rules."""
    progress: bool = False
    record: str | None = None
    """A folder to write every game to as a game record (replayed by ``llama-rl serve``)."""
    batched: bool | None = None
    """Play on the batched engine: ``None`` whenever it can, ``False`` game by game."""
    every_order: bool = False
    """Also change the order in which the agents follow one another round the table."""

    def __post_init__(self) -> None:
        """The agents read as :func:`~train.evaluation.evaluate` reads them (a set, whose
        order follows string hashing, refused); the rest is checked as it runs."""
        object.__setattr__(self, "agents", tuple(agent_list(self.agents)))

    @property
    def num_players(self) -> int:
        return len(self.agents)


def run_eval(cmd: EvalCommand, out: TextIO | None = None) -> EvalResult:
    """Play ``cmd.games`` games and print the evaluation table to ``out``; return the result.
    Interrupted, it prints the table of the games finished before raising on (:func:`games_kept`)."""
    if out is None:  # the printed table is the result; with --record the games are kept too
        out = sys.stdout if cmd.record else standard_output("eval prints its results on it")
    with missing_dependency("llama-rl eval"), games_kept(out):
        result = evaluate(
            list(cmd.agents),
            cmd.games,
            seed=cmd.seed,
            workers=cmd.workers,
            duplicate=cmd.duplicate,
            rotate=cmd.rotate,
            rules=cmd.rules,
            progress=cmd.progress,
            record_dir=cmd.record,
            batched=cmd.batched,
            every_order=cmd.every_order,
        )
    print(result, file=out)  # as games_kept prints the games finished when interrupted
    return result


def _run(args: argparse.Namespace) -> int:
    seats = seat_agents(agent_specs(args.agents, "--agents"), args.players, "--agents")
    rules = rules_from_args(args, len(seats))
    with game_errors():  # flags evaluate refuses together; an agent failing in a game; a --record folder
        cmd = EvalCommand(
            agents=seats,
            games=args.games,
            seed=args.seed,
            workers=args.workers,
            duplicate=args.duplicate,
            rotate=args.rotate,
            rules=rules,
            progress=progress_wanted(args),
            record=args.record,
            batched=args.batch,
            every_order=args.every_order,
        )
        run_eval(cmd)
    return 0


def add_parser(sub: SubParsers) -> argparse.ArgumentParser:
    p: argparse.ArgumentParser = sub.add_parser(
        "eval",
        help="play many games between fixed agents and print win shares and scores",
        description=(
            "Play many games with one agent per seat and print each agent's win share, mean score "
            "and more.\n\n"
            + AGENT_SYNTAX
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
        formatter_class=HelpFormatter,
    )
    p.add_argument("--agents", required=True, metavar="A,B,...", help="comma-separated agents, in seat order")
    p.add_argument(
        "--players",
        type=players_type,
        default=None,
        metavar="N",
        help="players at the table, 2..6 (default: as agents)",
    )
    add_run_options(p, default_games=1000)
    p.add_argument(
        "--duplicate",
        action="store_true",
        help="replay each deal with the agents rotated through every seat (less luck; --games rounds up to "
        "whole deals)",
    )
    p.add_argument(
        "--no-rotate", dest="rotate", action="store_false", help="keep every agent in its seat (default: rotate seats)"
    )
    p.add_argument(
        "--every-order",
        action="store_true",
        help="also change who plays after whom (rotation alone keeps the list's order round the table): "
        "N! games play every seating once",
    )
    add_record_option(p)
    add_rule_options(p)
    p.set_defaults(func=_run, command_parser=p)
    return p
