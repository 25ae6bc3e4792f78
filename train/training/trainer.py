"""MaskablePPO self-play training on the batched vec env: ``train(config) -> TrainResult``.

The learner holds one seat of every game in
:class:`train.training.vec_env.BatchedLlamaVecEnv`; the other seats are drawn from the
configured opponent mix: baselines by name, the current policy (``"self"``) and a
league of past snapshots of this run (``"past"``). Policy opponents act through
:class:`agents.ppo.Actor` (numpy) in one forward pass per batch; the ``"self"`` copy is
refreshed at the start of every rollout, which is exactly the policy being collected
with, since PPO only updates between rollouts.

A run directory ``runs/llama__maskableppo__<seed>__<time>/`` holds ``config.json``,
TensorBoard logs (scalars namespaced ``rollout/``, ``train/``, ``eval/``, ``speed/``),
``checkpoints/ppo_<steps>.zip``, ``eval.jsonl`` and the final ``model.zip``
(:mod:`train.training.run_dir`). Ctrl-C saves a checkpoint and the model before
returning; ``resume=`` continues a run with its step count.
"""

from __future__ import annotations

import json
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from agents.ppo import Actor, actor_from_policy, load_actor
from train.training.callbacks import TrainingHooks, actor_policy
from train.training.config import TrainConfig
from train.training.run_dir import RunDir, write_json_atomic
from train.training.vec_env import BatchedLlamaVecEnv

__all__ = ["train", "TrainResult", "find_checkpoint"]


@dataclass
class TrainResult:
    """What a run produced and how fast it went."""

    run_dir: Path
    model_path: Path
    num_timesteps: int
    steps_this_session: int
    wall_s: float
    env_s: float
    """Seconds in the vec env (rules, encoding, all opponents' moves)."""
    learn_s: float
    """Seconds in the rollout's policy inference and the PPO updates (wall - env)."""
    interrupted: bool
    evals: list[dict[str, Any]]

    @property
    def steps_per_s(self) -> float:
        return self.steps_this_session / self.wall_s if self.wall_s > 0 else 0.0


def find_checkpoint(path: str | Path) -> Path:
    """A checkpoint zip from a zip path or a run directory (its newest checkpoint, else model.zip)."""
    p = Path(path)
    if p.is_file():
        return p
    if p.is_dir():
        ckpts = RunDir(p).checkpoints()
        if ckpts:
            return ckpts[-1]
        if (p / "model.zip").exists():
            return p / "model.zip"
    raise ValueError(f"config key 'resume': no checkpoint at {str(path)!r} (a .zip or a run directory)")


def train(config: TrainConfig) -> TrainResult:
    """Run (or resume) a training run as configured; see the module docstring."""
    import torch
    from sb3_contrib import MaskablePPO

    config.validate()
    torch.set_num_threads(config.torch_threads)
    torch.manual_seed(config.seed)

    resume_from: Path | None = None
    if config.resume:
        resume_from = find_checkpoint(config.resume)
        run = RunDir(resume_from.parent.parent if resume_from.parent.name == "checkpoints" else resume_from.parent)
    else:
        run = RunDir(config.run_path())
        if run.path.exists() and any(run.path.iterdir()):
            raise ValueError(f"config key 'run_name': run directory {run.path} already exists and is not empty")
    run.checkpoints_dir.mkdir(parents=True, exist_ok=True)
    if resume_from is not None and run.config_path.exists():
        # keep the original config on file, record the resumed one beside it
        write_json_atomic(run.path / f"config.resume_{int(time.time())}.json", config.to_dict())
    else:
        write_json_atomic(run.config_path, config.to_dict())

    env_seed = config.seed
    if resume_from is not None:
        # fresh games for the resumed part, still determined by (seed, step count)
        start = _saved_timesteps(resume_from)
        env_seed = int(np.random.SeedSequence([config.seed, start]).generate_state(1)[0])
    env = BatchedLlamaVecEnv(
        config.n_envs,
        players=config.players,
        opponents=config.opponents,
        reward=config.reward,
        seed=env_seed,
    )
    opp_rng = np.random.default_rng([env_seed, 7])

    lr: Any = config.learning_rate
    if config.anneal_lr:
        base = config.learning_rate
        lr = lambda frac: base * max(frac, 0.05)  # noqa: E731 - SB3 takes a schedule callable
    act_fn = torch.nn.ReLU if config.activation == "relu" else torch.nn.Tanh
    arch = list(config.net_arch)
    tb_dir = str(run.tensorboard_dir) if config.tensorboard else None
    ppo_kwargs: dict[str, Any] = dict(
        learning_rate=lr,
        n_steps=config.n_steps,
        batch_size=config.batch_size,
        n_epochs=config.n_epochs,
        gamma=config.gamma,
        gae_lambda=config.gae_lambda,
        clip_range=config.clip_range,
        ent_coef=config.ent_coef,
        vf_coef=config.vf_coef,
        max_grad_norm=config.max_grad_norm,
        target_kl=config.target_kl or None,
        tensorboard_log=tb_dir,
        verbose=config.verbose,
        seed=config.seed,
        device="cpu",
    )
    if resume_from is not None:
        model = MaskablePPO.load(resume_from, env=env, device="cpu", custom_objects={"learning_rate": lr})
        for k in ("n_epochs", "batch_size", "ent_coef", "target_kl"):
            setattr(model, k, ppo_kwargs[k])
        model.tensorboard_log = tb_dir
    else:
        model = MaskablePPO(
            "MlpPolicy",
            env,
            policy_kwargs=dict(net_arch=dict(pi=arch, vf=arch), activation_fn=act_fn),
            **ppo_kwargs,
        )
    env.set_policy("self", actor_policy(actor_from_policy(model.policy), opp_rng))

    # the past league: snapshots of earlier checkpoints of this run
    past: list[Actor] = []
    if resume_from is not None:
        past = [load_actor(p) for p in run.checkpoints()[-config.past_pool :]]
        env.set_past_policies([actor_policy(a, opp_rng) for a in past])

    def save_checkpoint() -> Path:
        path = run.checkpoint_path(model.num_timesteps)
        model.save(path)
        return path

    evals: list[dict[str, Any]] = []
    start_steps = model.num_timesteps
    hooks = TrainingHooks(config, env, run, past, opp_rng, save_checkpoint, evals, start_steps)
    remaining = max(config.total_timesteps - start_steps, 0)
    interrupted = False
    t0 = time.perf_counter()
    env_t0 = env.env_time
    try:
        if remaining > 0:
            model.learn(
                total_timesteps=remaining,
                callback=hooks,
                reset_num_timesteps=resume_from is None,
                tb_log_name="ppo",
                progress_bar=config.progress_bar,
            )
    except KeyboardInterrupt:
        interrupted = True
        print(f"\ninterrupted at {model.num_timesteps} steps: saving a checkpoint", flush=True)
    wall = time.perf_counter() - t0
    save_checkpoint()
    model.save(run.model_path)
    env_s = env.env_time - env_t0
    summary = {
        "num_timesteps": model.num_timesteps,
        "steps_this_session": model.num_timesteps - start_steps,
        "wall_s": wall,
        "env_s": env_s,
        "learn_s": wall - env_s,
        "interrupted": interrupted,
    }
    write_json_atomic(run.summary_path, summary)
    return TrainResult(
        run_dir=run.path,
        model_path=run.model_path,
        num_timesteps=model.num_timesteps,
        steps_this_session=model.num_timesteps - start_steps,
        wall_s=wall,
        env_s=env_s,
        learn_s=wall - env_s,
        interrupted=interrupted,
        evals=evals,
    )


def _saved_timesteps(path: Path) -> int:
    """The step count stored in a saved model zip."""
    with zipfile.ZipFile(path) as zf:
        return int(json.loads(zf.read("data").decode()).get("num_timesteps", 0))
