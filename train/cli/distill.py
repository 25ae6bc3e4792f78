"""``llama-rl distill``: train a PPO specialist to play the moves the search agent finds.

Play --games games of the search agent (searching on --model, by default the shipped ppo
specialist of --players, with --networks, by default the shipped search networks of
--players, fitted on ppo_v3's games) at one seat against heuristic at the others, thousands at once,
on deals no evaluation uses, and record each of its decisions: what it saw and, where it
searched, the move the search chose. Then train the specialist on them: towards the
searched move where the search ran, towards its own probabilities elsewhere. The new
actor goes to --out, a .npz file that `ppo:path=FILE` plays and `search:path=FILE`
searches on (one step of expert iteration; repeat with --model FILE).

Only table sizes with search networks: 2, 4 and 6, or that of --networks (a file that
llama-rl fit-search wrote, best on --model's games); at 3 and 5 players the search takes
the settings of 2 and 4 players (its --worlds, --below and --horizon, unless given). Needs
the 'train' extra (PyTorch).

examples:
  llama-rl distill --players 4 --out ppo_4p_distilled.npz
  llama-rl distill --players 4 --games 500 --out quick.npz      # a quick look
  llama-rl eval --agents ppo:path=ppo_4p_distilled.npz,heuristic,heuristic,heuristic --games 4000
  llama-rl distill --players 3 --model runs/my_3p --networks search_3p.npz --out ppo_3p.npz
"""

from __future__ import annotations

import argparse
from pathlib import Path

from agents.search import BELOW_RANGE, MAX_WORLDS, MIRROR_RANGE, SETTINGS, settings_size
from llama_env.agent import and_list
from llama_env.engine import MAX_PLAYERS, MIN_PLAYERS
from train.cli.common import (
    SubParsers,
    add_command,
    add_count,
    add_games,
    add_progress_option,
    file_name,
    float_in,
    int_in,
    model_name,
    players_type,
    progress_wanted,
    seed_type,
    write_npz,
)
from train.fit.distill import DistillConfig, DistillResult, distill

__all__ = ["add_parser", "run_distill"]

_DEFAULTS = DistillConfig()


def run_distill(config: DistillConfig, out: str | Path, progress: bool = False) -> DistillResult:
    """Distil ``config`` into ``out`` (a ``.npz`` file in a folder that exists), reporting
    progress on stdout (and a bar of the games on stderr if ``progress``); bad input is a
    :class:`CommandError`."""
    return write_npz(config, out, distill, "llama-rl distill", progress)


def _run(args: argparse.Namespace) -> int:
    config = DistillConfig(
        players=args.players,
        games=args.games,
        seed=args.seed,
        model=args.model,
        networks=args.networks,
        worlds=args.worlds,
        horizon=args.horizon,
        below=args.below,
        epochs=args.epochs,
        temperature=args.temperature,
    )
    run_distill(config, args.out, progress_wanted(args))
    return 0


def _by_size(field: str) -> str:
    """The search agent's default ``field`` at each table size, for the help: at the
    sizes without settings of their own, those of the nearest (:func:`settings_size`)."""
    own = ", ".join(f"{getattr(s, field)} at {n} players" for n, s in sorted(SETTINGS.items()))
    others = [n for n in range(MIN_PLAYERS, MAX_PLAYERS + 1) if n not in SETTINGS]
    nearest = [settings_size(n) for n in others]
    return f"{own}; at {and_list(others)} players those of {and_list(nearest)}"


def add_parser(sub: SubParsers) -> argparse.ArgumentParser:
    d = _DEFAULTS
    p = add_command(sub, "distill", _run, __doc__)
    p.add_argument(
        "--out",
        type=file_name,
        required=True,
        metavar="FILE",
        help="the .npz file to write (not the specialist's own file, a networks file, nor a file in the package's "
        "agents/models/)",
    )
    p.add_argument(
        "--players", type=players_type, default=d.players, metavar="N",
        help=f"the table size: 2, 4 or 6, or that of --networks (default {d.players})",
    )  # fmt: skip
    add_games(p, "--games", d.games, "games of the search agent")
    p.add_argument(
        "--seed",
        type=seed_type,
        default=d.seed,
        help="seeds the deals, the search and the fitting, which runs on one thread: the same weights on any number "
        f"of cores (default {d.seed})",
    )
    p.add_argument(
        "--model",
        type=model_name,
        metavar="PATH",
        help="the specialist searched on and trained (a model file or run directory, observation version 1, "
        "trained at --players and the standard rules if it says where it was trained; default: the shipped ppo "
        "specialist of --players)",
    )
    p.add_argument(
        "--networks",
        type=file_name,
        metavar="FILE",
        help="the search's value and belief networks, a file llama-rl fit-search wrote for --players (best on "
        "--model's games; default: the shipped ones of --players, fitted on ppo_v3's games)",
    )
    p.add_argument(
        "--worlds", type=int_in(1, MAX_WORLDS, "the worlds"), default=d.worlds, metavar="N",
        help=f"worlds the search imagines per searched decision, 1 to {MAX_WORLDS} (default: the search agent's, "
        f"{_by_size('worlds')})",
    )  # fmt: skip
    p.add_argument(
        "--horizon", type=int_in(0, None, "the horizon"), default=d.horizon, metavar="N",
        help="the search's play-outs stop after N steps, 0: to the searcher's next decision, in the next round if "
        "the game goes on (default: the search agent's, "
        f"{_by_size('horizon')})",
    )  # fmt: skip
    p.add_argument(
        "--below", type=float_in(*BELOW_RANGE, "below", above=True), default=d.below, metavar="P",
        help="the search runs where the specialist's top probability is below P, above 0 and at most 1, 1: at "
        "every decision with a choice (default: the search "
        f"agent's, {_by_size('below')})",
    )  # fmt: skip
    p.add_argument(
        "--mirror", type=float_in(*MIRROR_RANGE, "mirror"), default=d.mirror, metavar="S",
        help="the share of the search's worlds in which the others play as the specialist, 0 to 1, in the rest as "
        f"heuristic (default {d.mirror:g}, as every shipped specialist was distilled)",
    )  # fmt: skip
    add_count(p, "--epochs", d.epochs, "the number of epochs", "passes of the fitting over the decisions")
    p.add_argument(
        "--temperature", type=float_in(0.0, None, "the temperature"), default=d.temperature, metavar="T",
        help="a searched decision's target: 0, the searched move alone; above 0, every legal move in "
        f"proportion to exp(value / T), its mean value over the worlds (default {d.temperature:g})",
    )  # fmt: skip
    add_progress_option(p)
    return p
