"""MaskablePPO self-play training on the batched vec env: ``train(config) -> TrainResult``.

The learner holds one seat of every game in :class:`train.vec_env.BatchedLlamaVecEnv`;
the other seats are drawn from the configured opponent mix: baselines by name, the
current policy (``"self"``) and a league of past snapshots of this run (``"past"``).
Policy opponents act through :class:`agents.ppo.Actor` (numpy) in one forward pass per
batch; the ``"self"`` copy is refreshed at the start of every rollout, which is exactly
the policy being collected with, since PPO only updates between rollouts.

A run directory ``runs/llama__maskableppo__<seed>__<time>/`` holds ``config.json``,
TensorBoard logs (scalars namespaced ``rollout/``, ``train/``, ``eval/``, ``speed/``),
``checkpoints/ppo_<steps>.zip``, ``eval.jsonl`` and the final ``model.zip``.
Ctrl-C saves a checkpoint and the model before returning; ``resume=`` continues a run
with its step count.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from agents.ppo import Actor, actor_from_policy, load_actor
from train.config import TrainConfig, config_from_dict
from train.vec_env import BatchedLlamaVecEnv

__all__ = ["train", "TrainResult", "evaluate_policy_batched", "evaluate_vs", "find_checkpoint"]


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
        ckpts = sorted((p / "checkpoints").glob("ppo_*.zip"), key=lambda q: int(q.stem.split("_")[1]))
        if ckpts:
            return ckpts[-1]
        if (p / "model.zip").exists():
            return p / "model.zip"
    raise ValueError(f"config key 'resume': no checkpoint at {str(path)!r} (a .zip or a run directory)")


def evaluate_policy_batched(
    actor: Actor, opponent: str, players: int, games: int, seed: int = 12345
) -> tuple[float, float]:
    """Win share (and its 95% half-width) of ``actor`` (argmax) against ``players - 1``
    copies of ``opponent``, over ``games`` games in parallel, seats random. Each slot of
    the batch counts its first game only, so short games are not over-represented."""
    env = BatchedLlamaVecEnv(games, players=players, opponents=opponent, reward="game", seed=seed)
    obs = env.reset()
    result = np.full(games, np.nan)
    while np.isnan(result).any():
        acts = actor.act_batch(obs, env.action_masks(), deterministic=True)
        obs, _, dones, infos = env.step(acts)
        for i in np.flatnonzero(dones):
            if np.isnan(result[i]):
                result[i] = infos[i]["win_share"]
    mean = float(result.mean())
    half = 1.96 * float(result.std(ddof=1)) / np.sqrt(games) if games > 1 else float("nan")
    return mean, half


def evaluate_vs(actor: Actor, opponent: str, players: int, games: int, seed: int = 0) -> tuple[float, float]:
    """Win share (and 95% half-width) of ``actor`` (argmax) against ``players - 1`` copies of
    ``opponent``, measured by the evaluation harness :func:`train.evaluate.evaluate` (seats
    rotated, in this process), or by :func:`evaluate_policy_batched` where it is missing."""
    try:
        from train.evaluate import evaluate
    except ImportError:  # pragma: no cover - the harness ships with the package
        return evaluate_policy_batched(actor, opponent, players, games, seed=seed)
    from agents.ppo import PPOAgent

    agent = PPOAgent.from_actor(actor)
    result = evaluate([agent] + [opponent] * (players - 1), games, seed=seed + 777, workers=1)
    stats = result.agents[0]
    return stats.win_share, (stats.ci_high - stats.ci_low) / 2


def _actor_fn(actor: Actor, rng: np.random.Generator):
    return lambda obs, masks: actor.act_batch(obs, masks, deterministic=False, rng=rng)


def train(config: TrainConfig) -> TrainResult:
    """Run (or resume) a training run as configured; see the module docstring."""
    import torch
    from sb3_contrib import MaskablePPO
    from stable_baselines3.common.callbacks import BaseCallback

    config.validate()
    torch.set_num_threads(config.torch_threads)
    torch.manual_seed(config.seed)

    resume_from: Path | None = None
    if config.resume:
        resume_from = find_checkpoint(config.resume)
        run_dir = resume_from.parent.parent if resume_from.parent.name == "checkpoints" else resume_from.parent
    else:
        run_dir = config.run_path()
        if run_dir.exists() and any(run_dir.iterdir()):
            raise ValueError(f"config key 'run_name': run directory {run_dir} already exists and is not empty")
    ckpt_dir = run_dir / "checkpoints"
    ckpt_dir.mkdir(parents=True, exist_ok=True)
    cfg_path = run_dir / "config.json"
    if resume_from is not None and cfg_path.exists():
        # keep the original config on file, record the resumed one beside it
        (run_dir / f"config.resume_{int(time.time())}.json").write_text(json.dumps(config.to_dict(), indent=2))
    else:
        cfg_path.write_text(json.dumps(config.to_dict(), indent=2))

    env_seed = config.seed
    if resume_from is not None:
        # fresh games for the resumed part, still determined by (seed, step count)
        start = _saved_timesteps(resume_from)
        env_seed = int(np.random.SeedSequence([config.seed, start]).generate_state(1)[0])
    env = BatchedLlamaVecEnv(
        config.n_envs,
        players=config.player_counts,
        opponents=config.opponent_mix,
        reward=config.reward,
        seed=env_seed,
    )
    opp_rng = np.random.default_rng([env_seed, 7])

    lr: Any = config.learning_rate
    if config.anneal_lr:
        base = config.learning_rate
        lr = lambda frac: base * max(frac, 0.05)  # noqa: E731 - SB3 takes a schedule callable
    act_fn = torch.nn.ReLU if config.activation == "relu" else torch.nn.Tanh
    arch = config.hidden_layers
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
        tensorboard_log=str(run_dir / "tb") if config.tensorboard else None,
        verbose=config.verbose,
        seed=config.seed,
        device="cpu",
    )
    if resume_from is not None:
        model = MaskablePPO.load(resume_from, env=env, device="cpu", custom_objects={"learning_rate": lr})
        for k in ("n_epochs", "batch_size", "ent_coef", "target_kl"):
            setattr(model, k, ppo_kwargs[k])
        model.tensorboard_log = ppo_kwargs["tensorboard_log"]
    else:
        model = MaskablePPO(
            "MlpPolicy",
            env,
            policy_kwargs=dict(net_arch=dict(pi=arch, vf=arch), activation_fn=act_fn),
            **ppo_kwargs,
        )
    # "self" plays a numpy copy of the current actor, refreshed at every rollout start
    # (the policy only changes between rollouts)
    env.set_policy("self", _actor_fn(actor_from_policy(model.policy), opp_rng))

    # the past league: snapshots of earlier checkpoints of this run
    past: list[Actor] = []
    if resume_from is not None:
        ckpts = sorted(ckpt_dir.glob("ppo_*.zip"), key=lambda q: int(q.stem.split("_")[1]))
        past = [load_actor(p) for p in ckpts[-config.past_pool :]]
        env.set_past_policies([_actor_fn(a, opp_rng) for a in past])

    evals: list[dict[str, Any]] = []
    timing = {"rollout": 0.0, "t0": 0.0}

    def save_checkpoint() -> Path:
        path = ckpt_dir / f"ppo_{model.num_timesteps}.zip"
        model.save(path)
        return path

    def run_eval() -> None:
        actor = actor_from_policy(model.policy)
        row: dict[str, Any] = {"timesteps": model.num_timesteps, "opponent": config.eval_opponent}
        for n in config.eval_player_counts:
            share, half = evaluate_vs(actor, config.eval_opponent, n, config.eval_games, seed=config.seed)
            row[f"win_share_{n}p"] = share
            row[f"ci95_{n}p"] = half
            model.logger.record(f"eval/win_share_vs_{config.eval_opponent}_{n}p", share)
            model.logger.record(f"eval/fair_share_{n}p", 1.0 / n)
        evals.append(row)
        with open(run_dir / "eval.jsonl", "a") as fh:
            fh.write(json.dumps(row) + "\n")
        if config.progress_bar:
            txt = ", ".join(f"{n}p {row[f'win_share_{n}p']:.3f}" for n in config.eval_player_counts)
            print(f"[eval @ {model.num_timesteps}] win share vs {config.eval_opponent}: {txt}", flush=True)

    class Hooks(BaseCallback):
        def __init__(self) -> None:
            super().__init__()
            start = model.num_timesteps
            self.next_ckpt = _next_multiple(start, config.checkpoint_every)
            self.next_eval = _next_multiple(start, config.eval_every)
            self.next_past = _next_multiple(start, config.past_every)
            self.t_roll = 0.0
            self.wins: list[float] = []

        def _on_rollout_start(self) -> None:
            self.t_roll = time.perf_counter()
            env.set_policy("self", _actor_fn(actor_from_policy(self.model.policy), opp_rng))

        def _on_rollout_end(self) -> None:
            timing["rollout"] += time.perf_counter() - self.t_roll
            wall = time.perf_counter() - timing["t0"]
            done = self.model.num_timesteps - timing["start_steps"]
            self.logger.record("speed/env_steps_per_s", done / max(wall, 1e-9))
            self.logger.record("speed/env_s", env.env_time)
            self.logger.record("speed/rollout_s", timing["rollout"])
            if self.wins:
                self.logger.record("rollout/win_share", float(np.mean(self.wins)))
                self.wins = []

        def _on_step(self) -> bool:
            n = self.model.num_timesteps
            for info, d in zip(self.locals["infos"], self.locals["dones"], strict=True):
                if d:
                    self.wins.append(info["win_share"])
            if config.past_every and n >= self.next_past:
                past.append(actor_from_policy(self.model.policy))
                del past[: -config.past_pool]
                env.set_past_policies([_actor_fn(a, opp_rng) for a in past])
                self.next_past = _next_multiple(n, config.past_every)
            if config.checkpoint_every and n >= self.next_ckpt:
                save_checkpoint()
                self.next_ckpt = _next_multiple(n, config.checkpoint_every)
            if config.eval_every and n >= self.next_eval:
                run_eval()
                self.next_eval = _next_multiple(n, config.eval_every)
            return True

    start_steps = model.num_timesteps
    timing["start_steps"] = start_steps
    remaining = max(config.total_timesteps - start_steps, 0)
    interrupted = False
    timing["t0"] = time.perf_counter()
    env_t0 = env.env_time
    try:
        if remaining > 0:
            model.learn(
                total_timesteps=remaining,
                callback=Hooks(),
                reset_num_timesteps=resume_from is None,
                tb_log_name="ppo",
                progress_bar=config.progress_bar,
            )
    except KeyboardInterrupt:
        interrupted = True
        print(f"\ninterrupted at {model.num_timesteps} steps: saving a checkpoint", flush=True)
    wall = time.perf_counter() - timing["t0"]
    save_checkpoint()
    model_path = run_dir / "model.zip"
    model.save(model_path)
    env_s = env.env_time - env_t0
    summary = {
        "num_timesteps": model.num_timesteps,
        "steps_this_session": model.num_timesteps - start_steps,
        "wall_s": wall,
        "env_s": env_s,
        "learn_s": wall - env_s,
        "interrupted": interrupted,
    }
    with open(run_dir / "summary.json", "w") as fh:
        json.dump(summary, fh, indent=2)
    return TrainResult(
        run_dir=run_dir,
        model_path=model_path,
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
    import zipfile

    with zipfile.ZipFile(path) as zf:
        return int(json.loads(zf.read("data").decode()).get("num_timesteps", 0))


def _next_multiple(n: int, every: int) -> int:
    return (n // every + 1) * every if every else 0


def load_config(run_dir: str | Path) -> TrainConfig:
    """The config a run was started with."""
    return config_from_dict(json.loads((Path(run_dir) / "config.json").read_text()))
