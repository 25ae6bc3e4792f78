"""``llama-rl fit-search``: make the search agent's value and belief networks from games of
a PPO specialist.

Play --games games of a PPO specialist (observation version 1) at one seat against
heuristic at the others, on deals no evaluation uses, and record its decisions: what it
saw, the others' hands and whether it won. Then fit the search agent's two networks on
them (256-256, ReLU): a value network (the observation -> the chance to win) and a
belief network (the observation -> the share of each card value in each other hand), and
write both to --out: search:networks_path=FILE searches with them at their table size
(with search:path=MODEL too at 3 or 5 players, where no specialist is shipped).

The defaults made the shipped agents/models/search_4p.npz (about 3 minutes of games and
1.5 of fitting on one core), on the games of the PPO specialist before llama-rl distill
(ppo_v3's), and search_2p.npz and search_6p.npz with --players 2 and 6. Needs the 'train' extra (PyTorch).

examples:
  llama-rl fit-search --out search_4p.npz   # the shipped ones
  llama-rl fit-search --games 2000 --out small.npz   # a quick look
  llama-rl fit-search --players 6 --model runs/my_6p --out search_6p.npz
"""

from __future__ import annotations

import argparse
from pathlib import Path

from train.cli.common import (
    SubParsers,
    add_command,
    add_games,
    add_progress_option,
    file_name,
    model_name,
    players_type,
    progress_wanted,
    seed_type,
    write_npz,
)
from train.fit.search_nets import FitResult, SearchNetsConfig, fit_search_networks

__all__ = ["add_parser", "run_fit_search"]

_DEFAULTS = SearchNetsConfig()


def run_fit_search(config: SearchNetsConfig, out: str | Path, progress: bool = False) -> FitResult:
    """Fit the networks of ``config`` into ``out`` (a ``.npz`` file in a folder that
    exists), reporting progress on stdout (and a bar of the games on stderr if
    ``progress``); bad input is a :class:`CommandError`."""
    return write_npz(config, out, fit_search_networks, "llama-rl fit-search", progress)


def _run(args: argparse.Namespace) -> int:
    config = SearchNetsConfig(players=args.players, games=args.games, seed=args.seed, model=args.model)
    run_fit_search(config, args.out, progress_wanted(args))
    return 0


def add_parser(sub: SubParsers) -> argparse.ArgumentParser:
    d = _DEFAULTS
    p = add_command(sub, "fit-search", _run, __doc__)
    p.add_argument(
        "--out",
        type=file_name,
        required=True,
        metavar="FILE",
        help="the .npz file to write (not a policy's file, the specialist's included, nor a file in the package's "
        "agents/models/)",
    )
    p.add_argument(
        "--players", type=players_type, default=d.players, metavar="N",
        help=f"the table size the networks serve (default {d.players})",
    )  # fmt: skip
    add_games(
        p,
        "--games",
        d.games,
        f"games of data (one game in {d.held_out} is held out, game 0 and others at every seat in turn: at least 2)",
        low=2,
    )
    p.add_argument(
        "--seed",
        type=seed_type,
        default=d.seed,
        help="seeds the data's deals and the fitting, which runs on one thread: the same networks on any number of "
        f"cores (default {d.seed})",
    )
    p.add_argument(
        "--model",
        type=model_name,
        metavar="PATH",
        help="the specialist whose games are the data (a model file or run directory, observation version 1, "
        "trained at --players and the standard rules if it says where it was trained; default: ppo_v3's "
        "specialist at --players, the one the shipped networks were fitted on)",
    )
    add_progress_option(p)
    return p
