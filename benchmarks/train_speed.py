"""Training throughput: learner env steps per second of MaskablePPO on the batched vec env.

    python benchmarks/train_speed.py [--steps 300000] [--threads 1] [--preset NAME]
                                     [--opponents MIX] [--players SIZES] [--n-envs N]
                                     [--engine batch,scalar] [--env-workers 1,2]
                                     [--sb3-baseline]

Runs :func:`train.training.train` for ``--steps`` learner steps (rollouts AND PPO updates,
TensorBoard and checkpoints off) on each vec env of ``--engine`` (default both, side by
side: the batched engine and the previous, scalar one) and prints the steps per second,
with the split between the vec env (rules, observation encoding, every opponent's move,
batched policy opponents) and learning (rollout inference + gradient updates), and the
ratio of the first run's rate to the others'. By default it trains at the ``ship`` preset's
table sizes, opponents, games side by side, rollout, minibatch and epochs; ``--preset NAME``
times what ``llama-rl train --preset NAME`` trains (what the preset leaves unset at the
config's defaults). ``--env-workers`` times each vec env with each number of env worker
processes (the sb3 option ``env_workers``; default 1: the games in the trainer's process);
with more than one, "env" is the time the trainer waited for the workers.

``--sb3-baseline`` also times the textbook setup for comparison: MaskablePPO with its
defaults (n_steps 2048, batch 64, 10 epochs) on a DummyVecEnv of 8 ``Llama-v0`` envs
(4 players, heuristic opponents).
"""

from __future__ import annotations

import argparse
import tempfile
import time

from machine import print_machine

from train.cli.common import extra_or_exit, int_in
from train.cli.train import flag_type
from train.training import train
from train.training.config import config_from_dict
from train.training.presets import PRESETS, preset_values

BENCH = {k: PRESETS["ship"][k] for k in ("players", "opponents", "n_envs", "n_steps", "batch_size", "n_epochs")}
"""The shipped run's table, network and PPO settings: what this script times by default."""


def sb3_baseline(steps: int, threads: int) -> float:
    """Steps per second of MaskablePPO's defaults (whole rollouts: at least ``steps``)."""
    import torch
    from sb3_contrib import MaskablePPO
    from stable_baselines3.common.env_util import make_vec_env

    from llama_env.gym_env import LlamaEnv

    torch.set_num_threads(threads)
    opp = "heuristic"
    env = make_vec_env(LlamaEnv, n_envs=8, seed=0, env_kwargs={"num_players": 4, "opponents": opp, "seat": "random"})
    model = MaskablePPO("MlpPolicy", env, seed=0, device="cpu")
    t0 = time.perf_counter()
    model.learn(steps)
    return model.num_timesteps / (time.perf_counter() - t0)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", type=int_in(1, None, "--steps"), default=300_000)
    ap.add_argument("--threads", type=int_in(1, None, "--threads"), default=1)
    ap.add_argument(
        "--preset",
        default=None,
        # a preset that resumes another run holds only what it changes: its settings are that run's
        choices=sorted(k for k, v in PRESETS.items() if v.get("backend", "sb3") == "sb3" and "resume" not in v),
        help="time a preset of the sb3 trainer that starts a run (default: ship's settings)",
    )
    ap.add_argument("--opponents", type=flag_type("opponents"), default=None, help="override the preset's opponent mix")
    ap.add_argument("--players", type=flag_type("players"), default=None, help="override the preset's table sizes")
    ap.add_argument(
        "--n-envs",
        type=int_in(1, None, "--n-envs"),
        default=None,
        help="override the preset's games side by side (n_steps x n_envs must hold the preset's batch_size)",
    )
    ap.add_argument(
        "--engine", default="batch,scalar", help="the vec envs to time, in this order (default: batch,scalar)"
    )
    ap.add_argument(
        "--env-workers", default="1", help="the env worker processes to time each vec env with (default: 1)"
    )
    ap.add_argument("--sb3-baseline", action="store_true")
    ap.add_argument("--baseline-steps", type=int_in(1, None, "--baseline-steps"), default=20_000)
    args = ap.parse_args()

    engines = [e for e in args.engine.split(",") if e]
    unknown = [e for e in engines if e not in ("batch", "scalar", "auto")]
    if unknown or not engines:
        ap.error(f"--engine: vec envs are batch, scalar or auto, got {args.engine!r}")
    try:
        workers_list = [int(w) for w in args.env_workers.split(",") if w]
    except ValueError:
        ap.error(f"--env-workers: a list of worker counts, got {args.env_workers!r}")
    if not workers_list or min(workers_list) < 1:
        ap.error(f"--env-workers: worker counts of at least 1, got {args.env_workers!r}")
    runs = [(e, w) for e in engines for w in workers_list]
    # every package of the extra (sb3-contrib's lazy import too), before the configs build
    # their opponents: a ppo:path=m.zip among them reads its model with torch
    extra_or_exit(ap.prog, "train", "this benchmark")
    flags = {"opponents": args.opponents, "players": args.players, "n_envs": args.n_envs}
    configs = []
    for engine, workers in runs:  # every run's config checked before the first one trains
        given = {
            **{k: v for k, v in flags.items() if v is not None},
            "total_timesteps": args.steps,
            "torch_threads": args.threads,
            "past_every": max(args.steps // 4, 1),
            "eval_every": 0,
            "stop_win_share": 0.0,  # it reads the evaluations, which are off
            "checkpoint_every": 0,
            "progress_bar": False,
            "tensorboard": False,
            "engine": engine,
            "env_workers": workers,
            "run_name": "bench",
        }
        try:  # what the preset leaves unset is TrainConfig's default, as llama-rl train --preset has it
            values = preset_values(args.preset, given) if args.preset else {**BENCH, **given}
            configs.append(config_from_dict(values))  # a --n-envs too few for the batch: the fewest named
        except ValueError as exc:
            ap.error(str(exc))
    print_machine(__file__)
    rates = []
    for (engine, workers), cfg in zip(runs, configs, strict=True):
        with tempfile.TemporaryDirectory() as tmp:
            cfg.run_dir = tmp
            r = train(cfg)
        rates.append(r.steps_per_s)
        print(
            f"{engine} vec env, {workers} env worker(s), MaskablePPO: n_envs={cfg.n_envs} n_steps={cfg.n_steps} "
            f"batch={cfg.batch_size} epochs={cfg.n_epochs} net={cfg.net_arch} threads={cfg.torch_threads} "
            f"players={cfg.players} opponents={cfg.opponents}"
        )
        print(
            f"  {r.steps_this_session} steps in {r.wall_s:.1f} s = {r.steps_per_s:,.0f} env steps/s "
            f"(env {r.env_s:.1f} s = {100 * r.env_s / r.wall_s:.0f}%, learning {r.learn_s:.1f} s "
            f"= {100 * r.learn_s / r.wall_s:.0f}%)",
            flush=True,
        )
    name = [f"{e} x{w}" for e, w in runs]
    for other, rate in zip(name[1:], rates[1:], strict=True):
        print(f"{name[0]} / {other}: {rates[0] / rate:.2f}x the steps/s")
    if args.sb3_baseline:
        n = args.baseline_steps
        sps = sb3_baseline(n, args.threads)
        print(f"SB3 defaults (DummyVecEnv x 8 Llama-v0, 4 players, heuristic opponents): {sps:,.0f} env steps/s")


if __name__ == "__main__":
    main()
