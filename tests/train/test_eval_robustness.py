"""Evaluation at its edges: the interval of a share of exactly 0 or 1."""

from __future__ import annotations

import numpy as np

from train.evaluation import mean_ci


def test_a_share_of_exactly_0_or_1_has_that_bound_exactly() -> None:
    """Rounding put the lower bound of a share of 0 at 7e-18 and the upper bound of a
    share of 1 at 0.9999999999999999."""
    for n in (1, 7, 100, 2000, 123_457):
        mean, low, high = mean_ci(np.zeros(n))
        assert (mean, low) == (0.0, 0.0) and 0.0 < high < 1.0
        mean, low, high = mean_ci(np.ones(n))
        assert (mean, high) == (1.0, 1.0) and 0.0 < low < 1.0
