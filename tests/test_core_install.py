"""A core install (numpy, gymnasium, pettingzoo; no training extra) runs the envs, the
baselines and the evaluation, and asking for the PPO agent says what to install."""

from __future__ import annotations

import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent(
    """
    import sys
    for name in ("torch", "stable_baselines3", "sb3_contrib", "openskill", "tqdm", "pandas"):
        sys.modules[name] = None          # as if not installed
    import gymnasium as gym
    import llama_env, agents
    from train.evaluation import evaluate

    env = gym.make("Llama-v0", num_players=3, opponents="heuristic")
    obs, info = env.reset(seed=0)
    assert obs.shape == (llama_env.OBS_SIZE,)
    assert "heuristic" in agents.names() and "ppo" in agents.names()
    r = evaluate(["heuristic", "random"], 10, seed=0, workers=1)
    assert abs(sum(r.win_shares) - 1.0) < 1e-9
    try:
        agents.make("ppo")
    except ModuleNotFoundError as exc:
        print("PPO:", exc)
    """
)


def test_core_install_works_and_ppo_names_the_missing_extra():
    out = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "PPO: the ppo agent reads its model with torch" in out.stdout
    assert "pip install 'llama-rl[train]'" in out.stdout
