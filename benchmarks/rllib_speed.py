"""Training throughput on Ray RLlib with 0, 1 and 2 env runners, next to the SB3 trainer.

    python benchmarks/rllib_speed.py [--steps 60000] [--runners 0 1 2]

Every trainer runs the ``ship`` preset's table sizes, opponents, games side by side,
rollout length, minibatch size and epochs (table sizes 2,2,3,4,4,5,6; heuristic 0.6,
greedy, cautious, random 0.05 each, self 0.15, past 0.1), the other settings at their
defaults. Two rates are printed:

* learner decisions/s: the moves of the learning seats, the steps PPO trains on (the
  SB3 trainer's "env steps");
* all seats' decisions/s: every move at the table, the opponents' included.

Times cover training only (sampling and updates); starting Ray and building the
algorithm are reported apart. The goal on 2 cores: RLlib at least 0.8x the SB3
trainer's learner decisions/s.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
import warnings
from typing import Any

os.environ.setdefault("RAY_AUTH_MODE", "disabled")

from machine import print_machine

from train.cli.common import extra_or_exit, int_in
from train.training.config import TrainConfig, config_from_dict  # noqa: E402
from train.training.presets import PRESETS  # noqa: E402


def bench_config(steps: int, run_dir: str, name: str, **changes: Any) -> TrainConfig:
    values = {
        **{k: PRESETS["ship"][k] for k in ("players", "opponents", "n_envs", "n_steps", "batch_size", "n_epochs")},
        "total_timesteps": steps,
        "past_every": max(steps // 4, 1),
        "eval_every": 0,
        "checkpoint_every": 0,
        "progress_bar": False,
        "run_dir": run_dir,
        "run_name": name,
        **changes,
    }
    return config_from_dict(values)


def sb3(steps: int, run_dir: str) -> tuple[int, float, float, float]:
    """(learner decisions, learner decisions/s, all seats' decisions/s, setup s) of the SB3 trainer."""
    from llama_env.table import Table, TableListener
    from train.training import train
    from train.training.sb3.vec_env import ScalarLlamaVecEnv

    moves = [0]

    class Count(TableListener):
        def on_move(self, table: Table, seat: int, action: int, drawn: int | None) -> None:
            moves[0] += 1

    counter = Count()
    real = ScalarLlamaVecEnv._new_table

    def counted(self: ScalarLlamaVecEnv, i: int) -> Table:
        table = real(self, i)
        table.listener = counter
        return table

    ScalarLlamaVecEnv._new_table = counted  # type: ignore[method-assign]
    try:
        t0 = time.perf_counter()
        # the engine that "auto" picks at these settings (256 games over five table sizes)
        result = train(bench_config(steps, run_dir, "sb3", tensorboard=False, engine="scalar"))
        total = time.perf_counter() - t0
    finally:
        ScalarLlamaVecEnv._new_table = real  # type: ignore[method-assign]
    return result.steps_this_session, result.steps_per_s, moves[0] / result.wall_s, total - result.wall_s


def rllib(steps: int, run_dir: str, runners: int) -> tuple[int, float, float, float]:
    """(learner decisions, learner decisions/s, all seats' decisions/s, setup s) of the RLlib trainer."""
    from train.training.rllib.trainer import train_rllib

    t0 = time.perf_counter()
    cfg = bench_config(steps, run_dir, f"rllib{runners}", backend="rllib", num_env_runners=runners)
    result = train_rllib(cfg)
    total = time.perf_counter() - t0
    import json

    summary = json.loads((result.run_dir / "summary.json").read_text(encoding="utf-8"))
    everyone = summary["all_seats_decisions_sampled"] / result.wall_s
    return result.steps_this_session, result.steps_per_s, everyone, total - result.wall_s


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument(
        "--steps",
        type=int_in(1, None, "--steps"),
        default=60_000,
        help="learner decisions per trainer (at least: whole rollouts)",
    )
    ap.add_argument(
        "--runners", type=int_in(0, None, "--runners"), nargs="+", default=[0, 1, 2], help="RLlib env runner counts"
    )
    args = ap.parse_args()
    try:  # every trainer's config checked before the first one trains
        bench_config(args.steps, "runs", "sb3", tensorboard=False, engine="scalar")
        for n in args.runners:
            bench_config(args.steps, "runs", f"rllib{n}", backend="rllib", num_env_runners=n)
    except ValueError as exc:
        ap.error(str(exc))
    extra_or_exit(ap.prog, "rllib", "this benchmark")  # ray, and the train extra's packages for its SB3 baseline
    from train.training.rllib.trainer import check_local_cores

    most = bench_config(args.steps, "runs", "rllib", backend="rllib", num_env_runners=max(args.runners))
    try:  # the trainer's own check, made before any trainer runs (no remedy: the script has no --address)
        check_local_cores(most.options, flag="--runners", remedy="")
    except ValueError as exc:
        ap.error(str(exc))
    warnings.filterwarnings("ignore")
    print_machine(__file__)
    print(
        f"--steps {args.steps:,} (each trainer plays whole rollouts: 'learner dec' is what it played), "
        f"the ship preset's settings"
    )
    print(
        f"{'trainer':<34} {'learner dec':>11} {'learner dec/s':>14} {'all seats dec/s':>16} {'x SB3':>6} "
        f"{'setup s':>8}",
        flush=True,
    )
    with tempfile.TemporaryDirectory() as tmp:
        rows: list[tuple[str, int | None]] = [("SB3 MaskablePPO, scalar vec env", None)]
        rows += [(f"RLlib PPO, {n} env runner{'s' if n != 1 else ''}", n) for n in args.runners]
        base = 0.0
        for name, runners in rows:  # each row printed when done: a trainer failing later loses none
            steps, learner, everyone, setup = (
                sb3(args.steps, tmp) if runners is None else rllib(args.steps, tmp, runners)
            )
            base = base or learner
            print(
                f"{name:<34} {steps:>11,} {learner:>14,.0f} {everyone:>16,.0f} {learner / base:>6.2f} {setup:>8.1f}",
                flush=True,
            )


if __name__ == "__main__":
    main()
