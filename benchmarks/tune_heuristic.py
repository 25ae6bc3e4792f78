"""Tune the ``heuristic`` agent's parameters by playing games, and print the evidence.

    .venv/bin/python benchmarks/tune_heuristic.py                # ~5 min on 2 busy cores
    .venv/bin/python benchmarks/tune_heuristic.py --games 400 --passes 1   # quick look

Method: coordinate descent. Starting from ``--start`` (default: the hand-set values the
search began from, :data:`START`), each parameter in turn is set to each value of its
grid with the others held, and the value with the best objective is kept; ``--passes``
sweeps. The objective is the candidate's mean win share over three fields, all with
duplicate deals and the SAME seed for every candidate (common random numbers, so
candidates are compared on identical deals and small differences are not noise):

* 4 players: candidate vs three copies of the starting heuristic;
* 4 players: candidate vs greedy, cautious and the starting heuristic;
* 2 players: candidate vs the starting heuristic.

A fair candidate scores 0.25, 0.25 (roughly) and 0.5. The result is then validated on a
FRESH seed against every baseline, and the printout ends with the tuned parameters,
which are the ones recorded in ``agents.heuristic.HEURISTIC_DEFAULTS``.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

from agents.heuristic import HEURISTIC_DEFAULTS, HeuristicAgent
from train.evaluation import evaluate

START: dict[str, float] = {
    "quit_base": 3.0,
    "quit_per_draw_cost": 1.0,
    "quit_danger": 6.0,
    "danger_hand": 1,
    "quit_marker": 2.0,
    "quit_per_card": 0.0,
    "quit_per_pile": 0.0,
    "quit_playable": 0.0,
    "quit_per_quitter": 0.0,
    "lead_margin": 99.0,
    "strand_cost": 2.0,
    "urgency_points": 1.0,
    "chain_bonus": 0.0,
}
"""Where the search starts: the first hand-set guesses."""

GRID: dict[str, list[float]] = {
    "strand_cost": [0, 1, 2, 4, 8, 16],
    "urgency_points": [0, 0.5, 1, 2],
    "chain_bonus": [0, 0.5, 1, 2, 4],
    "quit_base": [-4, -2, -1, 0, 1, 2, 3, 4, 6],
    "quit_per_draw_cost": [0, 0.5, 1, 1.5, 2, 3],
    "quit_danger": [0, 2, 4, 6, 8, 12],
    "danger_hand": [1, 2, 3],
    "quit_marker": [0, 2, 4, 6, 8, 12],
    "quit_per_card": [-1, 0, 0.5, 1, 1.5, 2, 3, 4],
    "quit_per_pile": [-1, -0.5, -0.25, 0, 0.25, 0.5, 1],
    "quit_playable": [0, 0.5, 1, 2],
    "quit_per_quitter": [-2, -1, 0, 1, 2],
    "lead_margin": [-5, 0, 3, 6, 10, 99],
}


def objective(params: dict[str, Any], base: dict[str, Any], games: int, seed: int) -> tuple[float, list[float]]:
    """The candidate's mean win share over the three tuning fields (and each one)."""
    cand = HeuristicAgent(**params)
    ref = [HeuristicAgent(**base) for _ in range(3)]
    fields: list[list[Any]] = [
        [cand, *ref],
        [cand, "greedy", "cautious", ref[0]],
        [cand, ref[0]],
    ]
    shares = [evaluate(f, games, seed=seed, duplicate=True).agents[0].win_share for f in fields]
    return sum(shares) / len(shares), shares


def tune(start: dict[str, Any], games: int, seed: int, passes: int) -> dict[str, Any]:
    best = dict(start)
    best_obj, shares = objective(best, start, games, seed)
    print(f"start: objective {best_obj:.4f} (fields {_fmt(shares)})")
    for p in range(passes):
        changed = False
        for name, values in GRID.items():
            results = []
            for value in values:
                trial = {**best, name: value}
                obj = best_obj if value == best[name] else objective(trial, start, games, seed)[0]
                results.append((obj, value))
            top_obj, top_value = max(results, key=lambda r: (r[0], -abs(r[1] - best[name])))
            row = "  ".join(f"{v:g}:{o:.4f}" for o, v in results)
            mark = ""
            if top_value != best[name] and top_obj > best_obj:
                mark = f"  -> {top_value:g}"
                best[name] = top_value
                best_obj = top_obj
                changed = True
            print(f"pass {p + 1} {name:<19} {row}{mark}", flush=True)
        if not changed:
            break
    return best


def validate(params: dict[str, Any], start: dict[str, Any], games: int, seed: int) -> None:
    """Tuned vs the starting point and vs each baseline, on a fresh seed."""
    tuned = HeuristicAgent(**params)
    rows: list[tuple[str, list[Any]]] = [
        ("4p: tuned vs 3 x start", [tuned, *(HeuristicAgent(**start) for _ in range(3))]),
        ("4p: tuned vs 3 x random", [tuned, "random", "random", "random"]),
        ("4p: tuned vs 3 x greedy", [tuned, "greedy", "greedy", "greedy"]),
        ("4p: tuned vs 3 x cautious", [tuned, "cautious", "cautious", "cautious"]),
        ("2p: tuned vs start", [tuned, HeuristicAgent(**start)]),
        ("2p: tuned vs greedy", [tuned, "greedy"]),
        ("2p: tuned vs cautious", [tuned, "cautious"]),
        ("6p: tuned vs 5 x start", [tuned, *(HeuristicAgent(**start) for _ in range(5))]),
    ]
    print(f"\nvalidation on a fresh seed ({seed}), duplicate deals, {games} games per row:")
    for label, table in rows:
        a = evaluate(table, games, seed=seed, duplicate=True).agents[0]
        fair = 1 / len(table)
        print(f"  {label:<28} win share {a.win_share:.3f} [{a.ci_low:.3f}, {a.ci_high:.3f}]  (fair {fair:.3f})")


def _fmt(xs: list[float]) -> str:
    return ", ".join(f"{x:.3f}" for x in xs)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--games", type=int, default=500, help="games per field per candidate (default 500)")
    ap.add_argument(
        "--passes",
        type=int,
        default=3,
        help="coordinate-descent sweeps (default 3; stops early when a sweep changes nothing)",
    )
    ap.add_argument("--seed", type=int, default=12345, help="seed shared by every candidate")
    ap.add_argument("--validate-games", type=int, default=2000)
    ap.add_argument("--validate-seed", type=int, default=777)
    ap.add_argument(
        "--start",
        choices=["start", "current"],
        default="start",
        help="start from START (default) or from the current HEURISTIC_DEFAULTS",
    )
    ap.add_argument("--no-tune", action="store_true", help="only validate the current defaults against START")
    args = ap.parse_args(argv)

    t0 = time.perf_counter()
    start = dict(START) if args.start == "start" else dict(HEURISTIC_DEFAULTS)
    if args.no_tune:
        best = dict(HEURISTIC_DEFAULTS)
    else:
        best = tune(start, args.games, args.seed, args.passes)
    validate(best, START, args.validate_games, args.validate_seed)
    print("\ntuned parameters:")
    for k, v in best.items():
        flag = "" if v == START[k] else f"   (start {START[k]:g})"
        print(f"  {k:<19} = {v:g}{flag}")
    same = all(HEURISTIC_DEFAULTS[k] == v for k, v in best.items())
    print(f"\nthese {'ARE' if same else 'are NOT'} the current HEURISTIC_DEFAULTS")
    print(f"took {time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
