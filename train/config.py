"""The training configuration: one typed dataclass whose field docs become ``--help``.

CleanRL style: every knob of a run is a field of :class:`TrainConfig`, validated by
:meth:`TrainConfig.validate` (a ``ValueError`` naming the bad key and what is allowed),
saved to ``<run_dir>/config.json``. Named presets (:data:`PRESETS`) override defaults,
and command-line flags override presets.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from llama_env.engine import MAX_PLAYERS, MIN_PLAYERS
from llama_env.rewards import REWARD_MODES

__all__ = ["TrainConfig", "PRESETS", "parse_players", "parse_opponents", "parse_net_arch", "config_from_dict"]

OPPONENT_SPECIALS = ("self", "past")


def _f(default: Any, help: str, **kw: Any) -> Any:  # noqa: A002 - mirrors argparse
    return field(default=default, metadata={"help": help, **kw})


@dataclass
class TrainConfig:
    """A MaskablePPO self-play training run on the batched L.L.A.M.A. vec env."""

    # --- the table and the opponents
    players: str = _f(
        "2-6",
        "table sizes to train on: one int 2..6, a range '2-6' or a list '2,4,6', drawn uniformly per game "
        "(repeat a size to weight it: '2,2,3,4,4,5,6')",
    )
    opponents: str = _f(
        "heuristic:0.5,self:0.3,past:0.2",
        "opponent mix 'kind:weight,...'; kinds are registered agent names (heuristic, random, ...), "
        "'self' (the current policy) and 'past' (past checkpoints of this run); drawn per seat",
    )
    past_every: int = _f(200_000, "add a snapshot of the current policy to the 'past' pool every this many steps")
    past_pool: int = _f(8, "how many past snapshots the 'past' pool keeps (the newest)")
    reward: str = _f("game", f"reward mode: one of {', '.join(REWARD_MODES)} (see llama_env.rewards)")
    # --- the run
    total_timesteps: int = _f(2_000_000, "learner env steps to train for (resuming continues the count)")
    n_envs: int = _f(128, "games stepped side by side in the batched vec env")
    seed: int = _f(0, "seeds the games, the opponents' draws and torch")
    torch_threads: int = _f(1, "torch.set_num_threads for the run (1 is fastest for a small MLP on a busy machine)")
    # --- the network and PPO
    net_arch: str = _f("128,128", "hidden layer sizes of the policy and value MLPs, e.g. '128,128'")
    activation: str = _f("tanh", "hidden activation: tanh or relu")
    learning_rate: float = _f(1e-3, "Adam learning rate")
    anneal_lr: bool = _f(
        True, "decay the learning rate linearly with the step count: lr x max(1 - steps / total_timesteps, 0.05)"
    )
    n_steps: int = _f(64, "steps per env per rollout (rollout size = n_steps * n_envs)")
    batch_size: int = _f(2048, "minibatch size of the PPO update")
    n_epochs: int = _f(8, "passes over each rollout")
    gamma: float = _f(0.995, "discount factor")
    gae_lambda: float = _f(0.95, "GAE lambda")
    clip_range: float = _f(0.2, "PPO clip range")
    ent_coef: float = _f(0.01, "entropy bonus coefficient")
    vf_coef: float = _f(0.5, "value loss coefficient")
    max_grad_norm: float = _f(0.5, "gradient clipping norm")
    target_kl: float = _f(0.0, "stop an update's epochs early past this KL (0 = off)")
    # --- evaluation, checkpoints, output
    eval_every: int = _f(250_000, "evaluate against eval_opponent every this many steps (0 = never)")
    eval_games: int = _f(400, "games per evaluation and table size")
    eval_players: str = _f("2,4", "table sizes of the periodic evaluation")
    eval_opponent: str = _f("heuristic", "the registered baseline evaluated against during training")
    checkpoint_every: int = _f(250_000, "save a checkpoint every this many steps (0 = only at the end)")
    run_dir: str = _f("runs", "parent folder of the run directories")
    run_name: str = _f("", "run directory name (default llama__maskableppo__<seed>__<unix time>)")
    resume: str = _f("", "a checkpoint .zip (or a run directory) to continue from; its step count continues")
    progress_bar: bool = _f(True, "show a progress bar")
    tensorboard: bool = _f(True, "write TensorBoard logs into the run directory")
    verbose: int = _f(0, "SB3 verbosity (0 silent, 1 rollout tables)")

    # ------------------------------------------------------------------ derived

    @property
    def player_counts(self) -> list[int]:
        return parse_players(self.players, "players")

    @property
    def opponent_mix(self) -> dict[str, float]:
        return parse_opponents(self.opponents)

    @property
    def hidden_layers(self) -> list[int]:
        return parse_net_arch(self.net_arch)

    @property
    def eval_player_counts(self) -> list[int]:
        return parse_players(self.eval_players, "eval_players")

    def default_run_name(self) -> str:
        return f"llama__maskableppo__{self.seed}__{int(time.time())}"

    def validate(self) -> TrainConfig:
        """Raise ``ValueError`` naming the first bad field and its allowed values; return self."""
        for f in fields(self):
            v = getattr(self, f.name)
            if f.name in ("players", "eval_players") and isinstance(v, (int, list, tuple)) and not isinstance(v, bool):
                continue  # the Python API also takes 4 or [2, 4, 6]; parse_players checks them
            want = {"int": int, "float": (int, float), "bool": bool, "str": str}[str(f.type)]
            if (isinstance(v, bool) and str(f.type) != "bool") or not isinstance(v, want):
                raise ValueError(f"config key {f.name!r} must be of type {f.type}, got {v!r}")
        _ = self.player_counts, self.opponent_mix, self.hidden_layers, self.eval_player_counts
        if self.reward not in REWARD_MODES:
            raise ValueError(f"config key 'reward' must be one of {', '.join(REWARD_MODES)}, got {self.reward!r}")
        if self.activation not in ("tanh", "relu"):
            raise ValueError(f"config key 'activation' must be one of tanh, relu, got {self.activation!r}")
        positive = ("total_timesteps", "n_envs", "n_steps", "batch_size", "n_epochs", "torch_threads", "past_pool")
        for key in positive:
            if getattr(self, key) < 1:
                raise ValueError(f"config key {key!r} must be >= 1, got {getattr(self, key)}")
        for key in ("past_every", "eval_every", "eval_games", "checkpoint_every", "verbose"):
            if getattr(self, key) < 0:
                raise ValueError(f"config key {key!r} must be >= 0, got {getattr(self, key)}")
        for key in ("learning_rate", "clip_range", "max_grad_norm"):
            if not getattr(self, key) > 0:
                raise ValueError(f"config key {key!r} must be > 0, got {getattr(self, key)}")
        for key in ("gamma", "gae_lambda"):
            if not 0 < getattr(self, key) <= 1:
                raise ValueError(f"config key {key!r} must be in (0, 1], got {getattr(self, key)}")
        for key in ("ent_coef", "vf_coef", "target_kl"):
            if getattr(self, key) < 0:
                raise ValueError(f"config key {key!r} must be >= 0, got {getattr(self, key)}")
        if self.n_steps * self.n_envs < 2:
            raise ValueError("config keys 'n_steps' x 'n_envs' must give a rollout of at least 2 steps")
        if self.batch_size > self.n_steps * self.n_envs:
            raise ValueError(
                f"config key 'batch_size' ({self.batch_size}) must be <= n_steps x n_envs "
                f"({self.n_steps * self.n_envs})"
            )
        from agents import names

        known = names()
        for key in self.opponent_mix:
            if key not in known and key not in OPPONENT_SPECIALS:
                raise ValueError(
                    f"config key 'opponents' names unknown opponent {key!r}; allowed: "
                    f"{', '.join(list(OPPONENT_SPECIALS) + known)}"
                )
        if self.eval_every and self.eval_opponent not in known:
            raise ValueError(
                f"config key 'eval_opponent' must be a registered agent ({', '.join(known)}), "
                f"got {self.eval_opponent!r}"
            )
        return self

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def run_path(self) -> Path:
        return Path(self.run_dir) / (self.run_name or self.default_run_name())


def config_from_dict(d: dict[str, Any]) -> TrainConfig:
    """A config from a dict (e.g. a run's ``config.json``); unknown keys are an error."""
    allowed = {f.name for f in fields(TrainConfig)}
    bad = [k for k in d if k not in allowed]
    if bad:
        raise ValueError(f"unknown config key {bad[0]!r}; allowed keys: {', '.join(sorted(allowed))}")
    return TrainConfig(**d)


def parse_players(spec: str | int | list[int], key: str = "players") -> list[int]:
    """'4' -> [4], '2-6' -> [2, 3, 4, 5, 6], '2,4,6' -> [2, 4, 6]."""
    allowed = f"ints {MIN_PLAYERS}..{MAX_PLAYERS} as 'N', 'A-B' or 'A,B,...'"
    if isinstance(spec, int) and not isinstance(spec, bool):
        out = [spec]
    elif isinstance(spec, (list, tuple)):
        out = [int(x) for x in spec]
    else:
        try:
            s = str(spec).replace(" ", "")
            if "-" in s:
                a, b = s.split("-")
                out = list(range(int(a), int(b) + 1))
            else:
                out = [int(x) for x in s.split(",") if x]
        except ValueError:
            raise ValueError(f"config key {key!r} must be {allowed}, got {spec!r}") from None
    if not out or any(not MIN_PLAYERS <= p <= MAX_PLAYERS for p in out):
        raise ValueError(f"config key {key!r} must be {allowed}, got {spec!r}")
    return sorted(out)


def parse_opponents(spec: str) -> dict[str, float]:
    """'heuristic:0.5,self:0.3,past:0.2' -> {'heuristic': 0.5, ...}; a bare name has weight 1."""
    out: dict[str, float] = {}
    for part in str(spec).replace(" ", "").split(","):
        if not part:
            continue
        name, _, w = part.partition(":")
        try:
            weight = float(w) if w else 1.0
        except ValueError:
            raise ValueError(f"config key 'opponents': weight of {name!r} must be a number, got {w!r}") from None
        if weight < 0:
            raise ValueError(f"config key 'opponents': weight of {name!r} must be >= 0, got {weight}")
        out[name] = out.get(name, 0.0) + weight
    if not out or sum(out.values()) <= 0:
        raise ValueError(f"config key 'opponents' must be 'kind:weight,...' with a positive total, got {spec!r}")
    return out


def parse_net_arch(spec: str) -> list[int]:
    try:
        out = [int(x) for x in str(spec).replace(" ", "").split(",") if x]
    except ValueError:
        raise ValueError(
            f"config key 'net_arch' must be comma-separated layer sizes like '128,128', got {spec!r}"
        ) from None
    if not out or any(x < 1 for x in out):
        raise ValueError(f"config key 'net_arch' must be comma-separated positive layer sizes, got {spec!r}")
    return out


PRESETS: dict[str, dict[str, Any]] = {
    "ship": {
        # the shipped agent (agents/models/ppo_llama.zip); see docs/training.md
        "players": "2,2,3,4,4,5,6",
        "opponents": "heuristic:0.6,greedy:0.05,cautious:0.05,random:0.05,self:0.15,past:0.1",
        "total_timesteps": 20_000_000,
        "n_envs": 256,
        "n_steps": 32,
        "batch_size": 2048,
        "n_epochs": 8,
        "learning_rate": 1e-3,
        "net_arch": "128,128",
        "eval_every": 2_000_000,
        "eval_games": 300,
        "checkpoint_every": 1_000_000,
        "past_every": 1_000_000,
        "run_name": "ship",
    },
    "smoke": {
        # a few thousand steps end to end, for tests
        "total_timesteps": 2048,
        "n_envs": 16,
        "n_steps": 32,
        "batch_size": 256,
        "n_epochs": 1,
        "net_arch": "32,32",
        "eval_every": 1024,
        "eval_games": 16,
        "checkpoint_every": 1024,
        "past_every": 1024,
        "progress_bar": False,
        "torch_threads": 1,
    },
    "bench": {
        # the ship preset's table, network and PPO settings, for benchmarks/train_speed.py
        "players": "2,2,3,4,4,5,6",
        "opponents": "heuristic:0.6,greedy:0.05,cautious:0.05,random:0.05,self:0.15,past:0.1",
        "total_timesteps": 200_000,
        "n_envs": 256,
        "n_steps": 32,
        "batch_size": 2048,
        "n_epochs": 8,
        "eval_every": 0,
        "checkpoint_every": 0,
        "progress_bar": False,
        "tensorboard": False,
    },
}

# Phase 2 of the shipped agent: continue runs/ship with the same network and PPO settings,
# the heuristic (the target) at most seats and more 4-player tables; the learning rate
# continues its decay (1e-3 x (1 - steps / 26M), i.e. from 2.3e-4).
PRESETS["ship-finetune"] = {
    **{k: v for k, v in PRESETS["ship"].items() if k != "run_name"},
    "resume": "runs/ship",
    "players": "2,2,3,4,4,4,5,6",
    "opponents": "heuristic:0.85,greedy:0.025,cautious:0.025,random:0.02,self:0.04,past:0.04",
    "total_timesteps": 26_000_000,
}
