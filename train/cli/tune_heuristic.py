"""``llama-rl tune-heuristic``: tune the heuristic agent's parameters by playing games and
print them as agents/heuristic.py holds them.

Coordinate descent over the heuristic agent's parameters: each in turn is tried at every
value of its grid with the others held, keeping the best, for up to --passes sweeps. A
candidate's objective is its mean win share over three fields (4 players against three
copies of the starting heuristic; 4 players against greedy, cautious and the starting
heuristic; 2 players against the starting heuristic), --games games each, duplicate
deals, the same --seed for every candidate. The result is then played on a fresh seed
against every baseline, and printed as agents/heuristic.py holds HEURISTIC_DEFAULTS.

The defaults made the shipped HEURISTIC_DEFAULTS (about 5 minutes on two cores). The
results depend on the seeds only, never on --workers.

examples:
  llama-rl tune-heuristic                                  # the shipped parameters again
  llama-rl tune-heuristic --start current --passes 1       # one more sweep from them
  llama-rl tune-heuristic --games 100 --validate-games 0   # a quick look
"""

from __future__ import annotations

import argparse
from typing import TextIO

from agents.heuristic import HEURISTIC_DEFAULTS
from llama_env.agent import and_list
from train.cli.common import (
    CommandError,
    SubParsers,
    add_command,
    add_count,
    add_games,
    missing_dependency,
    seed_type,
    standard_output,
)
from train.fit.heuristic import Row, TuneConfig, format_defaults, tune, validate

__all__ = ["add_parser", "run_tune_heuristic"]

_DEFAULTS = TuneConfig()


def run_tune_heuristic(config: TuneConfig, out: TextIO | None = None) -> dict[str, float]:
    """Tune, validate and print to ``out``: each sweep, the validation table, the tuned
    parameters in the form of ``HEURISTIC_DEFAULTS`` and whether they are the current
    ones. Returns the tuned parameters. A closed standard output (``out`` not given) is
    a :class:`~train.cli.common.CommandError`, before the minutes of games."""
    out = out if out is not None else standard_output("tune-heuristic prints the tuned parameters on it")

    def log(line: str) -> None:
        print(line, file=out, flush=True)

    try:
        config.validate()
    except ValueError as exc:
        raise CommandError(str(exc)) from None
    with missing_dependency("llama-rl tune-heuristic"):
        best = tune(config, log)
        if config.validate_games:
            rows = validate(best, config.validate_games, config.validate_seed, config.workers)
            log(f"\nvalidation on a fresh seed ({config.validate_seed}), duplicate deals, {games_per_row(rows)}:")
            for row in rows:
                log(f"  {row}")
    begin = config.starting_point()
    moved = ", ".join(f"{k} {begin[k]:g} -> {v:g}" for k, v in best.items() if v != begin[k])
    log(f"\ntuned parameters (moved from where the descent started: {moved or 'none'}):")
    log(format_defaults(best))
    same = best == HEURISTIC_DEFAULTS
    log(f"these {'ARE' if same else 'are NOT'} the current HEURISTIC_DEFAULTS of agents/heuristic.py")
    return best


def games_per_row(rows: list[Row]) -> str:
    """How many games each row played: duplicate deals round the games asked for up to a
    multiple of the table size, so the rows of one size can differ from the others'
    (``2000 games per row at 2 and 4 players, 2004 at 6``)."""
    sizes: dict[int, set[int]] = {}
    for row in rows:
        sizes.setdefault(row.games, set()).add(row.players)
    if len(sizes) == 1:
        return f"{next(iter(sizes))} games per row"
    first, *others = sorted(sizes, key=lambda games: min(sizes[games]))
    at = {games: and_list(sorted(sizes[games])) for games in sizes}
    return f"{first} games per row at {at[first]} players, " + ", ".join(f"{g} at {at[g]}" for g in others)


def _run(args: argparse.Namespace) -> int:
    config = TuneConfig(
        games=args.games,
        passes=args.passes,
        seed=args.seed,
        start=args.start,
        validate_games=args.validate_games,
        validate_seed=args.validate_seed,
        workers=args.workers,
    )
    run_tune_heuristic(config)
    return 0


def add_parser(sub: SubParsers) -> argparse.ArgumentParser:
    d = _DEFAULTS
    p = add_command(sub, "tune-heuristic", _run, __doc__)
    add_games(p, "--games", d.games, "games per field per candidate")
    add_count(
        p, "--passes", d.passes, "the number of passes", "sweeps at most; it stops after one that changes nothing"
    )
    p.add_argument("--seed", type=seed_type, default=d.seed, help=f"the seed every candidate plays (default {d.seed})")
    p.add_argument(
        "--start",
        choices=("start", "current"),
        default=d.start,
        help="start from the first hand-set guesses (start) or from the current HEURISTIC_DEFAULTS (current) "
        f"(default {d.start})",
    )
    add_games(
        p,
        "--validate-games",
        d.validate_games,
        "games per row of the validation on a fresh seed, rounded up to a multiple of the table size (duplicate "
        "deals), 0 = none",
        low=0,
        what="the number of validation games",
    )
    p.add_argument(
        "--validate-seed", type=seed_type, default=d.validate_seed, metavar="SEED",
        help=f"the validation's seed (default {d.validate_seed})",
    )  # fmt: skip
    add_count(
        p,
        "--workers",
        None,
        "the number of workers",
        "worker processes (default: every core this process may use; 1 = this process)",
    )
    return p
