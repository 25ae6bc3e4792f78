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
``ppo_v4`` (the previous one: ``ppo`` before the third round of ``llama-rl distill`` at 4
players), ``ppo_v3`` (its specialists as PPO left them, before ``llama-rl distill``),
``ppo_v2`` (no 4- and 6-player specialists), ``ppo_v1`` (the first heads-up specialist),
``ppo_v0`` (the first shipped agent) or ``search`` (``ppo`` with the learned search at 2,
4 and 6 players, many times slower game by game: ``--model search --players
4``); ``llama-rl agents`` lists them all. The default opponents include
``perturbed:seed=12345``: heuristics with perturbed parameters from a population no
training run here used (training uses the default seed). Every option is checked before
the first row is played.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

from machine import agents_or_exit, print_machine

import agents  # noqa: F401 - the built-in agents registered, so that their names are checked
from agents.ppo import PPOAgent
from llama_env.agent import Agent, parse_agent_list, parse_agent_spec
from train.cli.common import (
    CommandError,
    games_type,
    players_type,
    seed_type,
    workers_type,
    writable_folder,
)
from train.evaluation import evaluate


def table_sizes(text: str) -> list[int]:
    """``--players``: table sizes separated by commas, each 2 to 6."""
    try:
        return [players_type(x.strip()) for x in text.split(",")]
    except argparse.ArgumentTypeError as exc:
        raise argparse.ArgumentTypeError(f"{exc} (table sizes separated by commas, e.g. 2,4,6)") from None


def build_model(ap: argparse.ArgumentParser, model: str, seed: int) -> Agent:
    """``--model``: a model file or run directory, else an agent spec; any problem is
    found before a game is played (:func:`machine.agents_or_exit`). A value that
    reads as a path (a folder separator, a ``.zip`` or ``.npz``) and is not written as a
    spec with parameters (``name:key=value``, whose own error is kept) is a file that is
    not there."""

    def build() -> Agent:
        if Path(model).exists():
            return PPOAgent(path=model)
        try:
            spec = parse_agent_spec(model)
        except ValueError:
            path_like = any(sep in model for sep in ("/", os.sep)) or model.lower().endswith((".zip", ".npz"))
            if path_like and not _written_as_spec(model):
                ap.error(f"--model {model!r}: no such model file or run directory")
            raise
        return spec.build(seed)

    return agents_or_exit(ap, f"--model {model!r}", build)


def _written_as_spec(model: str) -> bool:
    """Whether ``model`` is written as an agent spec with parameters (``ppo:paht=m.zip``,
    ``search:worlds=0/1``), whatever its name and values: a Windows path's colon
    (``C:\\models\\m.zip``) starts no ``key=value``."""
    try:
        return bool(parse_agent_spec(model, check=False).params)
    except ValueError:
        return False


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default="ppo", help="a model file, a run directory or an agent spec (default ppo)")
    ap.add_argument("--games", type=games_type, default=4000)
    ap.add_argument("--players", type=table_sizes, default="2,4,6", help="table sizes, 2 to 6 (default 2,4,6)")
    ap.add_argument("--opponents", default="heuristic,greedy,cautious,random,perturbed:seed=12345")
    ap.add_argument("--seed", type=seed_type, default=0)
    ap.add_argument("--workers", type=workers_type, default=2)
    ap.add_argument("--json", default=None, help="also write the rows to this JSON file")
    args = ap.parse_args()
    opponents = args.opponents.split(",")
    agents_or_exit(ap, "--opponents", lambda: parse_agent_list(opponents))  # each agent built once
    if args.json:
        if Path(args.json).is_dir():
            ap.error(f"--json {args.json!r} is a folder, not a file")
        try:
            writable_folder(Path(args.json).parent, f"--json {args.json!r}")
        except CommandError as exc:
            ap.error(str(exc))
    agent = build_model(ap, args.model, args.seed)
    print_machine(__file__)

    rows = []
    print(f"model {args.model}; {args.games} games per row, seats rotated, seed {args.seed}\n")
    print(f"| players | opponents | {args.model} win share | 95% CI | fair share | games | seconds |")
    print("|---|---|---|---|---|---|---|")
    for n in args.players:
        for opp in opponents:
            t0 = time.perf_counter()
            # game by game: every model meets the same deals of --seed (a batch deals its own)
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
