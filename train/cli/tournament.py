"""``llama-rl tournament``: a pool of agents meeting at tables of N: ratings and a
pairwise matrix."""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from typing import TextIO

from llama_env.agent import AgentLike
from llama_env.engine import DEFAULT_RULES, Rules
from train.cli.common import (
    AGENT_SYNTAX,
    CommandError,
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
    standard_output,
)
from train.evaluation.runner import agent_list
from train.evaluation.tournament import TournamentResult, tournament

__all__ = ["TournamentCommand", "run_tournament", "add_parser"]


@dataclass(frozen=True)
class TournamentCommand:
    """``llama-rl tournament``: a pool of agents meeting at tables of ``rules.num_players``."""

    agents: tuple[AgentLike, ...]
    """The pool of agents (at least ``rules.num_players``): names, specs or agents, or one
    string of them separated by commas as ``--agents`` takes it, as
    :func:`~train.evaluation.tournament` takes them; kept as a tuple."""
    rules: Rules = DEFAULT_RULES
    """The rules of every game, the table size included."""
    games: int = 1000
    seed: int = 0
    workers: int | None = None
    progress: bool = False
    record: str | None = None
    """A folder to write every game to as a game record (replayed by ``llama-rl serve``)."""
    batched: bool | None = None
    """Play on the batched engine: ``None`` whenever it can, ``False`` game by game."""
    every_order: bool = False
    """Also change the order in which the agents of a table follow one another."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "agents", tuple(agent_list(self.agents)))  # as tournament reads them
        if not isinstance(self.rules, Rules):  # TournamentCommand(agents, 20) failed deep in the run
            raise ValueError(
                f"TournamentCommand's second field is rules, a llama_env.Rules (the table size is its "
                f"num_players), got {self.rules!r}; give the games by name: games={self.rules!r}"
            )

    @property
    def num_players(self) -> int:
        return self.rules.num_players


def run_tournament(cmd: TournamentCommand, out: TextIO | None = None) -> TournamentResult:
    """Play a tournament and print the ratings and the pairwise matrix to ``out``; return the result.
    Interrupted, it prints those of the games finished before raising on (:func:`games_kept`)."""
    if out is None:  # the printed table is the result; with --record the games are kept too
        out = sys.stdout if cmd.record else standard_output("tournament prints its ratings on it")
    with missing_dependency("llama-rl tournament"), games_kept(out):
        result = tournament(
            list(cmd.agents),
            cmd.num_players,
            cmd.games,
            seed=cmd.seed,
            workers=cmd.workers,
            rules=cmd.rules,
            progress=cmd.progress,
            record_dir=cmd.record,
            batched=cmd.batched,
            every_order=cmd.every_order,
        )
    print(result, file=out)  # as games_kept prints the games finished when interrupted
    return result


def _run(args: argparse.Namespace) -> int:
    pool = agent_specs(args.agents, "--agents")
    if len(pool) < 2:
        raise CommandError(f"--agents: a tournament needs a pool of at least 2 agents, got {len(pool)}")
    players = args.players if args.players is not None else min(4, len(pool))
    if len(pool) < players:
        raise CommandError(
            f"--agents: a tournament at {players}-player tables needs a pool of at least "
            f"{players} agents, got {len(pool)} (lower --players or name more agents)"
        )
    cmd = TournamentCommand(
        agents=tuple(pool),
        rules=rules_from_args(args, players),
        games=args.games,
        seed=args.seed,
        workers=args.workers,
        progress=progress_wanted(args),
        record=args.record,
        batched=args.batch,
        every_order=args.every_order,
    )
    with game_errors():  # an agent failing in a game; a --record folder that cannot be written
        run_tournament(cmd)
    return 0


def add_parser(sub: SubParsers) -> argparse.ArgumentParser:
    p: argparse.ArgumentParser = sub.add_parser(
        "tournament",
        help="rank a pool of agents (ratings and a pairwise matrix)",
        description=(
            "Seat agents from a pool at tables of --players, play --games games, and print "
            "Plackett-Luce ratings (openskill's scale, fitted to all the games) and the pairwise "
            "matrix: how often each agent finished ahead of each other one in the games they "
            "shared. Every combination of agents gets a table about equally often, and everyone "
            "sits everywhere.\n\n" + AGENT_SYNTAX
        ),
        epilog=(
            "examples:\n"
            "  llama-rl tournament --players 4 --agents random,greedy,heuristic,cautious:threshold=4 --games 500\n"
            "  llama-rl tournament --players 2 --agents random,heuristic --games 200 --seed 1 --no-progress"
        ),
        formatter_class=HelpFormatter,
    )
    p.add_argument("--agents", required=True, metavar="A,B,...", help="comma-separated pool of agents (at least 2)")
    p.add_argument(
        "--players",
        type=players_type,
        default=None,
        metavar="N",
        help="players at each table, 2..6, at most the pool size (default: 4, or the pool size if smaller)",
    )
    add_run_options(p, default_games=1000)
    p.add_argument(
        "--every-order",
        action="store_true",
        help="also change who plays after whom at each table (else a table keeps its agents in the pool's order "
        "round it; beyond 100,000 combinations every table is drawn at random either way)",
    )
    add_record_option(p)
    add_rule_options(p)
    p.set_defaults(func=_run, command_parser=p)
    return p
