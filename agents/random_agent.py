"""The uniform random baseline."""

from __future__ import annotations

import numpy as np

from agents.base import BaseAgent, check_observation, legal_actions
from llama_env.agent import register


@register("random", group="baseline")
class RandomAgent(BaseAgent):
    """Uniform over the legal actions."""

    name = "random"

    def act(self, observation: np.ndarray, action_mask: np.ndarray) -> int:
        check_observation(observation)
        legal = legal_actions(action_mask)
        return legal[int(self.rng.integers(len(legal)))]
