"""Strength of a PPO model against every baseline at 2, 4 and 6 players.

    python benchmarks/ppo_strength.py [--model ppo] [--games 4000]
                                      [--players 2,4,6]
                                      [--opponents heuristic,greedy,cautious,random,perturbed:seed=12345]
                                      [--seed 0] [--workers 2] [--json out.json]

Each row is one :func:`train.evaluation.evaluate` call: the PPO agent (argmax over legal
actions) and ``players - 1`` copies of one baseline, ``--games`` games with the seating
rotated from game to game, played game by game (``batched=False``), so that every model
meets the same deals. Prints a markdown table of the PPO agent's win share with
its 95% interval beside the fair share ``1 / players``. ``--model`` is a model file, a
run directory or a registered agent spec: ``ppo`` (the default, the shipped agent),
``ppo_v2`` (the previous one: no 4- and 6-player specialists), ``ppo_v1`` (the first
heads-up specialist), ``ppo_v0`` (the first shipped agent) or ``search`` (``ppo`` with
the learned search at 4 players: ``--model search --players 4``, about 10 minutes a row
on two cores). The default opponents
include ``perturbed:seed=12345``: heuristics with perturbed parameters from a population
no training run here used (training uses the default seed).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from agents.ppo import PPOAgent
from llama_env.agent import Agent, resolve
from train.cli.common import games_type, seed_type, workers_type
from train.evaluation import evaluate


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default="ppo")
    ap.add_argument("--games", type=games_type, default=4000)
    ap.add_argument("--players", default="2,4,6")
    ap.add_argument("--opponents", default="heuristic,greedy,cautious,random,perturbed:seed=12345")
    ap.add_argument("--seed", type=seed_type, default=0)
    ap.add_argument("--workers", type=workers_type, default=2)
    ap.add_argument("--json", default=None, help="also write the rows to this JSON file")
    args = ap.parse_args()

    agent: Agent = PPOAgent(path=args.model) if Path(args.model).exists() else resolve(args.model, seed=args.seed)
    rows = []
    print(f"model {args.model}; {args.games} games per row, seats rotated, seed {args.seed}\n")
    print("| players | opponents | PPO win share | 95% CI | fair share | games | seconds |")
    print("|---|---|---|---|---|---|---|")
    for n in [int(x) for x in args.players.split(",")]:
        for opp in args.opponents.split(","):
            t0 = time.perf_counter()
            # game by game: every model meets the same deals of --seed (search has no act_batch)
            r = evaluate([agent] + [opp] * (n - 1), args.games, seed=args.seed, workers=args.workers, batched=False)
            s = r.agents[0]
            dt = time.perf_counter() - t0
            rows.append(
                {
                    "players": n,
                    "opponent": opp,
                    "win_share": s.win_share,
                    "ci_low": s.ci_low,
                    "ci_high": s.ci_high,
                    "fair": 1 / n,
                    "games": r.num_games,
                    "seconds": dt,
                }
            )
            print(
                f"| {n} | {n - 1} x {opp} | {s.win_share:.3f} | [{s.ci_low:.3f}, {s.ci_high:.3f}] | "
                f"{1 / n:.3f} | {r.num_games} | {dt:.0f} |",
                flush=True,
            )
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump({"model": args.model, "seed": args.seed, "rows": rows}, fh, indent=2)


if __name__ == "__main__":
    main()
