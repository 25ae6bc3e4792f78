"""A failed reset of Llama-v0 leaves no game read from another seat."""

from __future__ import annotations

import numpy as np
import pytest

from llama_env import LlamaEnv
from llama_env.table import AgentError


class _FailsOnSecondReset:
    """An opponent whose ``reset`` raises on its second call, and only then."""

    name = "flaky"

    def __init__(self) -> None:
        self.resets = 0

    def reset(self, seed: int | None = None) -> None:
        self.resets += 1
        if self.resets == 2:
            raise RuntimeError("no second game")

    def act(self, observation: np.ndarray, action_mask: np.ndarray) -> int:
        return int(np.flatnonzero(action_mask)[0])


def test_a_reset_that_an_opponent_fails_leaves_no_game_read_from_the_new_seat():
    """reset() drew the new seat before the table was dealt: when the opponent's reset
    raised, the old game stayed, read from the new seat, and render() showed the
    opponent's hand face up as the learner's."""
    probe = LlamaEnv(num_players=2, seat="random")
    seat_of = {s: probe.reset(seed=s)[1]["seat"] for s in range(20)}
    first = next(s for s in seat_of if seat_of[s] == 1)
    second = next(s for s in seat_of if seat_of[s] == 0)  # a failed reset that draws the other seat
    env = LlamaEnv(num_players=2, opponents=_FailsOnSecondReset(), seat="random", render_mode="ansi")
    env.reset(seed=first)
    assert "(you)" in env.render()
    with pytest.raises(AgentError, match="flaky.*no second game"):
        env.reset(seed=second)
    assert "(you)" not in env.render() and env.game is None
    assert not env.action_masks().any()
    with pytest.raises(RuntimeError, match="call reset"):
        env.step(7)
    _, info = env.reset(seed=second)  # the opponent resets again: a third call
    assert info["action_mask"].any() and env.seat == 0 and env.game.current_player == 0
