"""The uniform random baseline."""

from __future__ import annotations

import numpy as np

from agents.base import BaseAgent, check_batch, check_observation, legal_actions
from llama_env.agent import register


@register("random", group="baseline")
class RandomAgent(BaseAgent):
    """Uniform over the legal actions.

    ``act_batch`` makes the decisions that ``act`` would make for its rows in order, and
    leaves ``self.rng`` where those calls would (numpy draws ``integers`` of an array of
    bounds element by element with the scalar algorithm; ``tests/agents`` holds it so).
    """

    name = "random"
    batch_from = 8
    """Decisions from which a driver asks ``act_batch``
    (:func:`llama_env.agent.batch_from`): its array code costs about 35 us a call, its act 5
    us a row."""

    def act(self, observation: np.ndarray, action_mask: np.ndarray) -> int:
        """One of the legal actions, each as likely, drawn from ``self.rng``."""
        check_observation(observation)
        legal = legal_actions(action_mask)
        return legal[int(self.rng.integers(len(legal)))]

    def act_batch(self, observations: np.ndarray, action_masks: np.ndarray) -> np.ndarray:
        """One uniform legal action per row, ``(B,)`` int64: row ``i`` takes the
        ``k``-th of its legal actions for ``k = rng.integers(count)``, as ``act`` does."""
        _, legal = check_batch(observations, action_masks)
        k = self.rng.integers(legal.sum(axis=1))
        return np.argmax(legal.cumsum(axis=1) > k[:, None], axis=1).astype(np.int64)
