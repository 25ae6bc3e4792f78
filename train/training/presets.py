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
        # the shipped general model (agents/models/ppo_llama.zip, exported to ppo_llama.npz to
        # play without torch); see docs/training.md
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
# The quickest agent that beats the heuristic heads-up (docs/training.md, "Beat the
# heuristic in seconds"): one table size, thousands of games in the batched engine, a
# small network and a fast schedule, stopped by the periodic evaluation as soon as its
# interval lies above 0.5 (the cap is a bound, not the plan).
PRESETS["beat-heuristic"] = {
    "run_name": "beat-heuristic",
    "players": (2,),
    "opponents": {"heuristic": 1.0},
    "total_timesteps": 1_000_000,
    "n_envs": 1024,
    "n_steps": 16,
    "batch_size": 4096,
    "n_epochs": 4,
    "learning_rate": 3e-3,
    "gamma": 1.0,
    "gae_lambda": 0.8,
    "net_arch": (64, 64),
    "eval_every": 50_000,
    "eval_games": 1000,
    "eval_players": (2,),
    "stop_win_share": 0.5,
    "checkpoint_every": 0,
    "past_every": 0,
    "tensorboard": False,
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


def _specialist(name: str, players: int, opponents: dict[str, float], steps: int, **settings: Any) -> dict[str, Any]:
    """Phase 1 of a shipped specialist, trained in ``runs/<name>``: one table size on
    RLlib, observation version 1, the command of docs/training.md ("Reproduce every
    shipped agent") as values."""
    return {
        "run_name": name,
        "backend": "rllib",
        "players": (players,),
        "opponents": opponents,
        "obs_version": 1,
        "total_timesteps": steps,
        "batch_size": 2048,
        "n_epochs": 8,
        "learning_rate": 1e-3,
        "eval_games": 400,
        "eval_players": (players,),
        "past_every": 0,
        **settings,
    }


def _more(name: str, steps: int, **settings: Any) -> dict[str, Any]:
    """Phase 2 of a specialist: its run continued, in place, to ``steps`` steps."""
    return {"resume": f"runs/{name}", "total_timesteps": steps, **settings}


# The PPO specialists (docs/training.md, "Reproduce every shipped agent"): each is made by
# its preset, then the same run continued by its "-more" preset, with exactly the values
# of the two commands that made the shipped file (tests/train/test_reproduce.py holds them
# equal); only the run's folder is named after the preset.
_BIG = {"net_arch": (256, 256), "gamma": 1.0}  # a wider network, no discount
_TABLE = {"n_envs": 256, "n_steps": 32, "eval_every": 2_000_000, "checkpoint_every": 2_000_000}
_HEADS_UP = {"n_envs": 128, "n_steps": 64, "checkpoint_every": 1_000_000}
PRESETS.update(
    {
        # agents/models/ppo_llama_2p_v3.npz, played by ppo_v3 and ppo_v2 at 2 players (ppo's heads-up
        # specialist is this one after a round of llama-rl distill)
        "specialist-2p": _specialist(
            "specialist-2p", 2, {"heuristic": 0.8, "self": 0.2}, 12_000_000, **_BIG, **_HEADS_UP,
            eval_every=3_000_000,
        ),
        "specialist-2p-more": _more("specialist-2p", 18_000_000, eval_every=3_000_000),
        # agents/models/ppo_llama_4p_v3.npz, played by ppo_v3 at 4 players (ppo's 4-player specialist
        # is this one after two rounds of llama-rl distill)
        "specialist-4p": _specialist(
            "specialist-4p", 4, {"heuristic": 0.5, "perturbed": 0.2, "self": 0.3}, 12_000_000, **_BIG, **_TABLE
        ),
        "specialist-4p-more": _more("specialist-4p", 22_000_000),
        # agents/models/ppo_llama_6p_v3.npz, played by ppo_v3 at 6 players (ppo's 6-player specialist
        # is this one after llama-rl distill)
        "specialist-6p": _specialist(
            "specialist-6p", 6, {"heuristic": 0.6, "perturbed": 0.2, "self": 0.2}, 12_000_000, **_BIG, **_TABLE
        ),
        "specialist-6p-more": _more("specialist-6p", 20_000_000),
        # agents/models/ppo_llama_2p_v1.npz, the first heads-up specialist (ppo_v1): 128-128, discounted
        "specialist-2p-v1": _specialist(
            "specialist-2p-v1", 2, {"heuristic": 0.8, "self": 0.2}, 3_000_000, **_HEADS_UP, eval_every=1_000_000
        ),
        "specialist-2p-v1-more": _more("specialist-2p-v1", 12_000_000),
    }
)  # fmt: skip
