"""The results table of ``docs/agents.md``: win shares with 95% intervals at 2, 4 and 6
players, each rule-based agent against random and the heuristics against each other,
plus a four-player tournament of the built-in agents.

    .venv/bin/python benchmarks/results_table.py            # ~1.5 min on 2 busy cores
    .venv/bin/python benchmarks/results_table.py --games 500 --tournament-games 400  # quicker

Every row is ``evaluate(..., duplicate=True)`` (the same deals replayed with the seats
rotated, intervals over deal groups) with seed ``--seed``; the first agent of the table
is the one reported, against ``n - 1`` copies of the opponent. A fair share is ``1/n``.
Prints Markdown.
"""

from __future__ import annotations

import argparse
import time

from machine import print_machine

from train.cli.common import games_type, seed_type, workers_type
from train.evaluation import evaluate, tournament

MATCHUPS: list[tuple[str, str]] = [
    ("greedy", "random"),
    ("cautious", "random"),
    ("heuristic", "random"),
    ("cautious", "greedy"),
    ("heuristic", "greedy"),
    ("heuristic", "cautious"),
    ("greedy", "heuristic"),
    ("cautious", "heuristic"),
]
PLAYERS = (2, 4, 6)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--games", type=games_type, default=3000, help="games per cell (default 3000)")
    ap.add_argument("--tournament-games", type=games_type, default=2000, help="games of the tournament (default 2000)")
    ap.add_argument("--seed", type=seed_type, default=2024)
    ap.add_argument("--workers", type=workers_type, default=None)
    args = ap.parse_args(argv)
    print_machine(__file__, argv)

    t0 = time.perf_counter()
    for row, (me, opp) in enumerate(MATCHUPS):
        cells, played = [], []
        for n in PLAYERS:
            r = evaluate([me] + [opp] * (n - 1), args.games, seed=args.seed, workers=args.workers, duplicate=True)
            a = r.agents[0]
            cells.append(f"{a.win_share:.3f} [{a.ci_low:.3f}, {a.ci_high:.3f}]")
            played.append(r.num_games)
        if row == 0:  # the games a cell played: duplicate deals round --games up to a multiple of the table size
            print(
                f"Win share of the first agent against n - 1 copies of the second; duplicate deals (--games "
                f"{args.games}, each column's games in its head), seed {args.seed}; 95% interval in brackets; "
                f"fair share 1/n.\n"
            )
            heads = [f"{n} players (fair {1 / n:.2f}, {g:,} games)" for n, g in zip(PLAYERS, played, strict=True)]
            print("| agent | vs | " + " | ".join(heads) + " |")
            print("|---|---|" + "---|" * len(PLAYERS))
        print(f"| {me} | {opp} | " + " | ".join(cells) + " |", flush=True)

    pool = ["heuristic", "cautious", "greedy", "random"]
    t = tournament(pool, 4, args.tournament_games, seed=args.seed, workers=args.workers)
    fitted = "Plackett-Luce fitted to all of them"
    print(f"\nFour-player tournament of {', '.join(pool)} ({t.num_games} games, {fitted}):\n")
    print("| rank | agent | mu | sigma | ordinal | win share |")
    print("|---|---|---|---|---|---|")
    for rank, i in enumerate(t.ranking(), 1):
        rating = t.ratings[i]
        print(
            f"| {rank} | {t.names[i]} | {rating.mu:.2f} | {rating.sigma:.2f} | {rating.ordinal:.2f} "
            f"| {t.win_share[i]:.3f} |"
        )
    print("\nPairwise: share of games the row agent finished ahead of the column agent (ties 0.5):\n")
    order = t.ranking()
    print("| | " + " | ".join(t.names[j] for j in order) + " |")
    print("|---|" + "---|" * len(order))
    for i in order:
        cells = ["-" if i == j else f"{t.pairwise[i, j]:.3f}" for j in order]
        print(f"| {t.names[i]} | " + " | ".join(cells) + " |")
    print(f"\n(took {time.perf_counter() - t0:.0f} s)")


if __name__ == "__main__":
    main()
