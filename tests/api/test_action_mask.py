"""llama_env.observation.action_mask: the one mask builder behind the AEC env, the gym
env's opponents and the evaluation."""

import numpy as np
import pytest

from llama_env.observation import action_mask


def test_mask_marks_exactly_the_legal_actions_and_is_read_only():
    m = action_mask([0, 7, 8])
    assert m.dtype == np.int8 and m.tolist() == [1, 0, 0, 0, 0, 0, 0, 1, 1]
    assert action_mask((0, 7, 8)) is m  # cached per legal set
    with pytest.raises(ValueError):
        m[1] = 1
    assert action_mask([8]).tolist() == [0] * 8 + [1]
