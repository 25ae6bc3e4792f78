"""The uniform random baseline."""

from __future__ import annotations

import numpy as np

from agents.base import BaseAgent, register


@register("random")
class RandomAgent(BaseAgent):
    """Uniform over the legal actions."""

    name = "random"

    def act(self, observation: np.ndarray, action_mask: np.ndarray) -> int:
        legal = np.flatnonzero(action_mask)
        if legal.size == 0:
            raise ValueError("RandomAgent.act: the action mask has no legal action")
        return int(legal[self.rng.integers(legal.size)])
