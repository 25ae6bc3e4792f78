"""The engine's and the observation's public helpers refuse what they cannot take with an
error that names the argument, instead of answering for another input or failing with
a bare IndexError, ZeroDivisionError or max() of nothing."""

from __future__ import annotations

import numpy as np
import pytest

from llama_env.engine import LlamaGame


@pytest.mark.parametrize(("rng", "error"), [("x", TypeError), (1.5, TypeError), (True, TypeError), (-1, ValueError)])
def test_from_dict_checks_rng_even_when_the_snapshot_holds_a_generator(rng, error):
    """The snapshot's rng_state was taken and a wrong rng passed beside it went unseen."""
    d = LlamaGame(3, rng=0).to_dict()
    with pytest.raises(error, match="rng"):
        LlamaGame.from_dict(d, rng=rng)
    assert LlamaGame.from_dict(d, rng=np.random.default_rng(5)).to_dict() == d  # rng_state still wins
