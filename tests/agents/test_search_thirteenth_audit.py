"""What the thirteenth stop's audit of the search agent found: settings given that go
unused on a version-0 observation without a word."""

from __future__ import annotations

import warnings

import numpy as np

from agents.search import SearchAgent
from llama_env.gym_env import LlamaEnv


def _observation(version: int, players: int = 4, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    env = LlamaEnv(num_players=players, opponents="heuristic", obs_version=version)
    obs, info = env.reset(seed=seed)
    return obs, np.asarray(info["action_mask"], dtype=bool)


def test_settings_given_go_unused_on_a_version_0_observation_and_it_says_so_once():
    """search:below=1.0 on the gym default (obs_version 0) never searched and said nothing:
    it played as its policy."""
    agent = SearchAgent(below=1.0, seed=0)
    obs, mask = _observation(0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        agent.act(obs, mask)
        agent.act(obs, mask)  # said once
    assert [str(w.message) for w in caught] == [
        "SearchAgent(below=1) does not search on a version-0 observation (it searches on version 1's history: "
        "obs_version=1): what it was given (below=1) goes unused there, and it plays its policy's moves (said once)"
    ]
    assert agent.searched == 0


def test_nothing_is_said_on_a_version_0_observation_where_nothing_was_given():
    agent = SearchAgent(seed=0)
    obs, mask = _observation(0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        agent.act(obs, mask)
