"""The per-agent statistics of an evaluation, on games whose numbers are known by hand
(train.evaluation.stats.aggregate). A mutation audit found that a go-out rate per game
instead of per round, a quit penalty over all decisions instead of the quits, and a
win counted whole for every tied winner passed every other test."""

from __future__ import annotations

import math

import numpy as np
import pytest

from train.evaluation.runner import GameColumns, GameRecord
from train.evaluation.stats import Z95, aggregate, mean_ci


def _games() -> GameColumns:
    records = [
        # agent 0 at seat 0, agent 1 at seat 1: a tie at 12, 3 rounds
        GameRecord(
            0,
            (0, 1),
            (12, 12),
            went_out=(1, 1),
            rounds=3,
            decisions=20,
            actions=((5, 2, 1), (6, 1, 1)),
            quit_penalty=(4, 6),
        ),
        # seats swapped: agent 1 at seat 0 wins alone, 5 rounds
        GameRecord(
            1,
            (1, 0),
            (3, 41),
            went_out=(3, 0),
            rounds=5,
            decisions=30,
            actions=((9, 1, 0), (4, 6, 2)),
            quit_penalty=(0, 20),
        ),
    ]
    return GameColumns.of(records, 2)


def test_the_statistics_of_two_known_games():
    out = aggregate(_games(), ["a", "b"], duplicate=False, group_size=1)
    a, b = out["agents"]
    assert (a.win_share, b.win_share) == (0.25, 0.75)  # a tie is half a win each
    assert GameRecord(0, (0, 1, 2), (5, 5, 9), (0, 0, 0), 1, 1).win_shares == (0.5, 0.5, 0.0)
    assert (a.mean_score, b.mean_score) == (26.5, 7.5)
    assert out["rounds_per_game"] == 4.0
    assert a.points_per_round == pytest.approx(53 / 8) and b.points_per_round == pytest.approx(15 / 8)
    assert a.go_out_rate == pytest.approx(1 / 8) and b.go_out_rate == pytest.approx(4 / 8)  # per round played
    assert (a.play_rate, a.draw_rate, a.quit_rate) == pytest.approx((9 / 20, 8 / 20, 3 / 20))
    assert a.quit_penalty == pytest.approx((4 + 20) / 3)  # per quit
    assert b.quit_penalty == pytest.approx(6 / 1)
    none = aggregate(
        GameColumns.of([GameRecord(0, (0, 1), (1, 2), (1, 0), 1, 2, ((1, 0, 0), (1, 0, 0)), (0, 0))], 2),
        ["a", "b"],
        duplicate=False,
        group_size=1,
    )
    assert math.isnan(none["agents"][0].quit_penalty)  # an agent that never quit has no quit penalty


def _wilson(mean: float, n: float) -> tuple[float, float]:
    z2 = Z95 * Z95
    centre = (mean + z2 / (2 * n)) / (1 + z2 / n)
    half = Z95 * math.sqrt(mean * (1 - mean) / n + z2 / (4 * n * n)) / (1 + z2 / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def _width(values: np.ndarray) -> float:
    _, lo, hi = mean_ci(values)
    return hi - lo


def test_the_interval_of_shares_stays_sound_near_0_and_1():
    """The normal interval with the sample variance served every sample with a tie: one
    tie among 3,000 zeros gave an interval 2.6 times narrower than 3,000 zeros, and a
    share that never varied (every game a two-way tie) a point."""
    zeros = np.zeros(3000)
    assert mean_ci(zeros)[1:] == _wilson(0.0, 3000)
    one_tie = np.r_[np.zeros(2999), 0.5]
    assert _width(one_tie) >= _width(zeros)
    assert _width(np.r_[np.zeros(2999), 1 / 3]) >= _width(zeros)
    halves = np.full(3000, 0.5)
    assert _width(halves) == pytest.approx(_width(zeros), rel=0.05)
    assert mean_ci(halves)[1] < 0.5 < mean_ci(halves)[2]
    ones_and_a_tie = np.r_[np.ones(2999), 0.5]  # the same at the top
    assert _width(ones_and_a_tie) >= _width(np.ones(3000))


def test_the_interval_of_shares_is_wilsons_for_0_1_and_about_the_normal_one_between():
    """0/1 values get Wilson's interval exactly; shares with ties away from 0 and 1, and
    duplicate deals' per-group means, get about the normal interval with the sample
    standard deviation, which is sound there."""
    rng = np.random.default_rng(0)
    wins = (rng.random(2000) < 0.3).astype(float)
    assert mean_ci(wins)[1:] == _wilson(float(wins.mean()), 2000)
    for p in (0.25, 0.5, 0.9):
        shares = (rng.random(2000) < p).astype(float)
        shares[rng.random(2000) < 0.02] = 0.5
        groups = (rng.random((1000, 3)) < p).mean(axis=1)  # three games a deal group
        for x in (shares, groups):
            normal = 2 * Z95 * x.std(ddof=1) / math.sqrt(x.size)
            assert _width(x) == pytest.approx(normal, rel=0.03), (p, x.size)
            mean, lo, hi = mean_ci(x)
            assert lo < mean < hi
