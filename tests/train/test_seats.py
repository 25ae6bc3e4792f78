"""Who sits where in training (train.training.seats): the one seating routine every
backend draws from. A mutation audit found that drawing the opponents uniformly,
ignoring the mix's weights, passed every other test."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from train.training.seats import OpponentMix


def _draws(mix: OpponentMix, count: int, past_pool: int = 0, seed: int = 0):
    rng = np.random.default_rng(seed)
    return [mix.draw(rng, past_pool) for _ in range(count)]


def test_opponents_follow_the_mix_weights():
    seatings = _draws(OpponentMix({"heuristic": 3.0, "random": 1.0, "greedy": 0.0}, [4]), 4000)
    kinds = Counter(k for s in seatings for k in s.kinds if k is not None)
    assert set(kinds) == {"heuristic", "random"}  # a zero weight is never drawn
    share = kinds["heuristic"] / sum(kinds.values())  # 12,000 picks: sd about 0.004
    assert share == pytest.approx(0.75, abs=0.015), share


def test_the_learner_holds_a_uniform_seat_and_the_table_size_is_drawn_from_players():
    seatings = _draws(OpponentMix({"heuristic": 1.0}, [2, 4, 6]), 3000)
    sizes = Counter(s.num_players for s in seatings)
    assert set(sizes) == {2, 4, 6} and min(sizes.values()) > 900
    for s in seatings:
        assert s.kinds[s.learner] is None and all(k == "heuristic" for p, k in enumerate(s.kinds) if p != s.learner)
    at_four = Counter(s.learner for s in seatings if s.num_players == 4)
    assert set(at_four) == {0, 1, 2, 3} and min(at_four.values()) > 180
    assert {s.learner for s in _draws(OpponentMix({"heuristic": 1.0}, [4], fixed_seat=2), 50)} == {2}


def test_past_draws_a_snapshot_of_the_pool_and_plays_self_while_it_is_empty():
    mix = OpponentMix({"past": 1.0}, [3])
    assert {k for s in _draws(mix, 20) for k in s.kinds if k is not None} == {"self"}
    drawn = Counter(k for s in _draws(mix, 2000, past_pool=4) for k in s.kinds if k is not None)
    assert set(drawn) == {"past#0", "past#1", "past#2", "past#3"} and min(drawn.values()) > 850
