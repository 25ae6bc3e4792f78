"""How fast evaluate() plays: 10,000 four-player games of four ``heuristic`` agents.

    .venv/bin/python benchmarks/eval_speed.py [--games 10000] [--workers N] [--agent heuristic]

Prints the wall time, games/s, decisions (agent moves) per second in all, and the
per-core rate (decisions per second of one process), measured separately in this
process on a slice of the games so it does not depend on how busy the other cores are.
"""

from __future__ import annotations

import argparse
import os
import time

from train.evaluation import evaluate


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--games", type=int, default=10_000)
    p.add_argument("--workers", type=int, default=None, help="default: all cores")
    p.add_argument("--agent", default="heuristic")
    p.add_argument("--players", type=int, default=4)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)

    table = [args.agent] * args.players
    workers = args.workers or os.cpu_count() or 1

    t0 = time.perf_counter()
    result = evaluate(table, args.games, seed=args.seed, workers=workers)
    wall = time.perf_counter() - t0
    decisions = _decisions(result)

    one = max(200, args.games // 20)
    t1 = time.perf_counter()
    single = evaluate(table, one, seed=args.seed + 1, workers=1)
    single_wall = time.perf_counter() - t1
    single_decisions = _decisions(single)

    print(f"{args.games} games of {args.players} x {args.agent}, {workers} workers, load {os.getloadavg()[0]:.2f}")
    print(f"total: {wall:.2f} s, {args.games / wall:,.0f} games/s, {decisions / wall:,.0f} decisions/s")
    print(f"{result.rounds_per_game:.2f} rounds/game, {decisions / args.games:.1f} decisions/game")
    print(
        f"one core ({one} games in this process): {single_wall:.2f} s, {one / single_wall:,.0f} games/s, "
        f"{single_decisions / single_wall:,.0f} decisions/s, {1e6 * single_wall / single_decisions:.1f} us/decision"
    )


def _decisions(result) -> int:
    return int(result.decisions.sum())


if __name__ == "__main__":
    main()
