"""Named training presets: each is a set of config values (``llama-rl train --preset
NAME``) that overrides :class:`train.training.config.TrainConfig`'s defaults; flags given
on the command line override the preset.

Every shipped model is made by a preset here (docs/training.md, "Reproduce every
shipped agent").
"""

from __future__ import annotations

from typing import Any

__all__ = ["PRESETS"]

PRESETS: dict[str, dict[str, Any]] = {
    "ship": {
        # the shipped agent (agents/models/ppo_llama.zip); see docs/training.md
        "players": (2, 2, 3, 4, 4, 5, 6),
        "opponents": {"heuristic": 0.6, "greedy": 0.05, "cautious": 0.05, "random": 0.05, "self": 0.15, "past": 0.1},
        "total_timesteps": 20_000_000,
        "n_envs": 256,
        "n_steps": 32,
        "batch_size": 2048,
        "n_epochs": 8,
        "learning_rate": 1e-3,
        "net_arch": (128, 128),
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
        "net_arch": (32, 32),
        "eval_every": 1024,
        "eval_games": 16,
        "checkpoint_every": 1024,
        "past_every": 1024,
        "progress_bar": False,
        "torch_threads": 1,
    },
}
# Phase 2 of the shipped agent: continue runs/ship with the same network and PPO settings,
# the heuristic (the target) at most seats and more 4-player tables; the learning rate
# continues its decay (1e-3 x (1 - steps / 26M), i.e. from 2.3e-4).
PRESETS["ship-finetune"] = {
    **{k: v for k, v in PRESETS["ship"].items() if k != "run_name"},
    "resume": "runs/ship",
    "players": (2, 2, 3, 4, 4, 4, 5, 6),
    "opponents": {"heuristic": 0.85, "greedy": 0.025, "cautious": 0.025, "random": 0.02, "self": 0.04, "past": 0.04},
    "total_timesteps": 26_000_000,
}
