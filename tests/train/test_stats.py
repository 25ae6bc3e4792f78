"""The per-agent statistics of an evaluation, on games whose numbers are known by hand
(train.evaluation.stats.aggregate). A mutation audit found that a go-out rate per game
instead of per round, a quit penalty over all decisions instead of the quits, and a
win counted whole for every tied winner passed every other test."""

from __future__ import annotations

import math

import pytest

from train.evaluation.runner import GameColumns, GameRecord
from train.evaluation.stats import aggregate


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
