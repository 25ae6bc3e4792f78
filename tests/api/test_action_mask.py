"""llama_env.observation.action_mask: the one mask builder behind the AEC env, the gym
env's opponents and the evaluation."""

import numpy as np
import pytest

from llama_env.observation import action_mask, agent_mask


def test_mask_marks_exactly_the_legal_actions_and_is_read_only():
    m = action_mask([0, 7, 8])
    assert m.dtype == np.int8 and m.tolist() == [1, 0, 0, 0, 0, 0, 0, 1, 1]
    assert action_mask((0, 7, 8)) is m  # cached per legal set
    with pytest.raises(ValueError):
        m[1] = 1
    assert action_mask([8]).tolist() == [0] * 8 + [1]


class _Records:
    """An agent that keeps the masks it is given and plays the first legal action the
    usual masking idiom (``~mask``) leaves."""

    def __init__(self) -> None:
        self.masks: list[np.ndarray] = []

    def act(self, observation: np.ndarray, mask: np.ndarray) -> int:
        self.masks.append(mask)
        logits = np.zeros(9)
        logits[~mask] = -np.inf
        return int(np.argmax(logits))


def test_an_opponent_reads_the_mask_a_learner_reads():
    """The Gym env gives the learner a boolean mask and gave its opponents the int8 one,
    on which ``~mask`` is -1 and -2: a policy reused as an opponent masked draw and quit
    instead of the illegal cards, and played illegal moves."""
    import gymnasium as gym

    import llama_env  # noqa: F401 - registers the env

    me = _Records()
    env = gym.make("Llama-v0", num_players=3, opponents=[me, me])
    _, info = env.reset(seed=0)
    learner = _Records()
    for _ in range(400):
        _, _, done, _, info = env.step(learner.act(None, info["action_mask"]))
        if done:
            break
    assert done and me.masks and learner.masks
    assert {m.dtype for m in me.masks} == {m.dtype for m in learner.masks} == {np.dtype(bool)}
    assert agent_mask([0, 7]).tolist() == [True] + [False] * 6 + [True, False]
    assert agent_mask([0, 7]) is agent_mask((0, 7)) and not agent_mask([8]).flags.writeable
