"""The engine's and the observation's public helpers refuse what they cannot take with an
error that names the argument, instead of answering for another input or failing with
a bare IndexError, ZeroDivisionError or max() of nothing."""

from __future__ import annotations

import numpy as np
import pytest

from llama_env.engine import (
    LlamaGame,
    Rules,
    card_points,
    hand_penalty,
    is_game_over,
    max_hand_size,
    next_round_starter,
    playable_on,
    winners,
)
from llama_env.observation import (
    OBS_V1,
    action_mask,
    agent_mask,
    encode,
    encode_many,
    encode_many_v1,
    encode_v1,
    hidden_state,
    is_shared_mask,
    observation_bounds,
    unchecked_action_mask,
    unchecked_agent_mask,
)


@pytest.mark.parametrize(("rng", "error"), [("x", TypeError), (1.5, TypeError), (True, TypeError), (-1, ValueError)])
def test_from_dict_checks_rng_even_when_the_snapshot_holds_a_generator(rng, error):
    """The snapshot's rng_state was taken and a wrong rng passed beside it went unseen."""
    d = LlamaGame(3, rng=0).to_dict()
    with pytest.raises(error, match="rng"):
        LlamaGame.from_dict(d, rng=rng)
    assert LlamaGame.from_dict(d, rng=np.random.default_rng(5)).to_dict() == d  # rng_state still wins


@pytest.mark.parametrize("top", [0, 8, 9, -1, 3.0, True, None])
def test_playable_on_takes_only_card_codes(top):
    """playable_on(0) answered (0, 1) and playable_on(9) (9, 3)."""
    with pytest.raises(ValueError, match=r"top must be a card code 1..7 \(7 a llama\), got "):
        playable_on(top)


def test_playable_on_each_card_code():
    assert [playable_on(c) for c in range(1, 8)] == [(1, 2), (2, 3), (3, 4), (4, 5), (5, 6), (6, 7), (7, 1)]
    assert playable_on(np.int64(7)) == (7, 1)


@pytest.mark.parametrize("card", [0, 8, -1, 3.0, True, None])
def test_card_points_takes_only_card_codes(card):
    """card_points(0) answered 0, card_points(-1) a llama's 10 and card_points(8) an IndexError."""
    with pytest.raises(ValueError, match=r"card must be a card code 1..7 \(7 a llama\), got "):
        card_points(card)


def test_card_points_each_card_code():
    assert [card_points(c) for c in range(1, 8)] == [1, 2, 3, 4, 5, 6, 10]
    assert card_points(np.int64(7)) == 10


@pytest.mark.parametrize(
    ("counts", "why"),
    [
        ([0, 1, 0, 0, 0, 0, 0], r"counts must hold 8 entries \(index 0 unused, then codes 1..7\), got 7: "),
        ([0, 1, 0, 0, 0, 0, 0, 0, 1], r"counts must hold 8 entries .* got 9: "),
        ([0, 0, 0, -1, 0, 0, 0, 0], r"counts\[3\] must be a count of cards 0..8, got -1"),
        ([0, 0, 0, 0, 0, 0, 0, 9], r"counts\[7\] must be a count of cards 0..8, got 9"),
        ([0, 1.0, 0, 0, 0, 0, 0, 0], r"counts\[1\] must be a count of cards 0..8, got 1.0"),
        ([0, 0, True, 0, 0, 0, 0, 0], r"counts\[2\] must be a count of cards 0..8, got True"),
        (None, r"counts must hold 8 entries .* got None"),
    ],
)
def test_hand_penalty_takes_only_counts_per_card_code(counts, why):
    """A negative count was a card held (counts[3] = -1 cost 3 points), 9 llamas cost 10,
    and a list of 7 counts (codes 1..7, no index 0) read each code as the one below it."""
    with pytest.raises(ValueError, match=why):
        hand_penalty(counts)


def test_hand_penalty_takes_lists_tuples_and_arrays():
    hand = [0, 2, 0, 0, 1, 0, 0, 8]
    assert hand_penalty(hand) == hand_penalty(tuple(hand)) == hand_penalty(np.array(hand)) == 1 + 4 + 10


@pytest.mark.parametrize(
    ("args", "why"),
    [
        ((None, 0, 7), r"num_players must be between 2 and 6, got 7"),
        ((None, 0, 1.0), r"num_players must be an integer, got 1.0"),
        ((None, 4, 4), r"previous_starter must be 0..3 at a 4-player table, got 4"),
        ((None, -1, 4), r"previous_starter must be 0..3 at a 4-player table, got -1"),
        ((4, 0, 4), r"last_player must be 0..3 at a 4-player table \(or None: nobody played\), got 4"),
        ((-1, 0, 4), r"last_player must be 0..3 .* got -1"),
        ((True, 0, 4), r"last_player must be 0..3 .* got True"),
    ],
)
def test_next_round_starter_takes_only_seats_of_the_table(args, why):
    """A seat outside the table was answered with a seat outside it (last_player 4 at a
    4-player table started the next round with seat 4), or wrapped round (-1 -> 0)."""
    with pytest.raises(ValueError, match=why):
        next_round_starter(*args)


def test_next_round_starter_rule_11():
    assert next_round_starter(2, 0, 4) == 2
    assert next_round_starter(None, 3, 4) == 0
    assert next_round_starter(np.int64(1), np.int64(1), np.int64(3)) == 1


@pytest.mark.parametrize(
    ("n", "why"),
    [(0, "between 2 and 6"), (1, "between 2 and 6"), (7, "between 2 and 6"), (-3, "between 2 and 6")]
    + [(4.0, "an integer"), (True, "an integer")],
)
def test_max_hand_size_takes_only_table_sizes(n, why):
    """max_hand_size(7) answered 7 for a table the rules do not have, and 0 divided by zero."""
    with pytest.raises(ValueError, match=f"^num_players must be {why}, got {n}"):
        max_hand_size(n)


def test_max_hand_size_of_each_table():
    assert [max_hand_size(n) for n in range(2, 7)] == [27, 18, 13, 11, 9]


@pytest.mark.parametrize("rule", [lambda s: is_game_over(s, 40), winners], ids=["is_game_over", "winners"])
def test_rule_12_of_no_scores_names_them(rule):
    """Both failed with the bare 'max() arg is an empty sequence' (min() for winners)."""
    with pytest.raises(ValueError, match="scores must hold a score for each seat, got none"):
        rule([])


_SEAT_READERS = {
    "hand_view": lambda g, s: g.hand_view(s),
    "encode": encode,
    "encode_v1": encode_v1,
    "encode_many": lambda g, s: encode_many([g], [s]),
    "encode_many_v1": lambda g, s: encode_many_v1([g], [s]),
    "hidden_state": hidden_state,
    "encode_reference": OBS_V1.encode_reference,
}


@pytest.mark.parametrize("seat", [3, 5, -1, 1.0, True, "1", None], ids=repr)
@pytest.mark.parametrize("reader", list(_SEAT_READERS))
def test_a_seat_off_the_table_is_refused_where_a_seat_is_read(reader, seat):
    """hidden_state(g, 5) and (g, -1) at three seats gave seat 2's hidden cards (the
    privileged critic's input), hand_view(-1) the last seat's hand; encode(g, 3) was an
    IndexError and encode(g, 1.0) a TypeError."""
    game = LlamaGame(3, rng=0)
    with pytest.raises(ValueError, match=r"seat must be 0..2 at a 3-player table, got "):
        _SEAT_READERS[reader](game, seat)


@pytest.mark.parametrize("reader", list(_SEAT_READERS))
def test_each_seat_of_the_table_is_read_as_before(reader):
    game = LlamaGame(3, rng=0)
    for seat in (0, 2, np.int64(1)):
        np.testing.assert_array_equal(
            np.asarray(_SEAT_READERS[reader](game, seat)), np.asarray(_SEAT_READERS[reader](game, int(seat)))
        )
    assert list(game.hand_view(np.int64(2))) == game.hand_counts(2)


@pytest.mark.parametrize("legal", [[-1], [9], [0, 7, 99], [7.5], ["8"]], ids=repr)
@pytest.mark.parametrize("mask", [action_mask, agent_mask])
def test_a_mask_of_actions_that_do_not_exist_is_refused(mask, legal):
    """action_mask([-1]) marked QUIT (numpy's last entry) and action_mask([9]) was an IndexError."""
    with pytest.raises(ValueError, match=r"legal actions must be integers 0..8, got "):
        mask(legal)


@pytest.mark.parametrize(
    ("seen", "legal"), [([1], [True]), ([1], [1.0]), ([0, 8], [0.0, 8]), ([0, 8], [False, 8])], ids=repr
)
@pytest.mark.parametrize("mask", [action_mask, agent_mask])
def test_a_mask_is_refused_even_when_an_equal_set_of_integers_was_seen(mask, seen, legal):
    """The check ran only for a set not yet cached, and the cache compares by equality:
    [True] and [1.0] were refused in a fresh process but given a mask once [1] was seen."""
    mask(seen)
    with pytest.raises(ValueError, match=r"legal actions must be integers 0..8, got "):
        mask(legal)


def test_masks_of_legal_actions_still_come_from_the_cache():
    assert action_mask(np.array([0, 7, 8])) is action_mask([0, 7, 8]) is action_mask((np.int8(0), 7, 8))
    assert agent_mask([np.int64(8)]) is agent_mask([8]) and is_shared_mask(agent_mask([np.int64(8)]))
    assert action_mask(np.array([0, 7, 8])).tolist() == [1, 0, 0, 0, 0, 0, 0, 1, 1]
    assert action_mask((0, 7, 8)) is action_mask([0, 7, 8])
    assert agent_mask(()).tolist() == [False] * 9
    # the engine's own callers (legal_actions: plain ints) look up the same shared masks unchecked
    assert unchecked_action_mask([0, 7, 8]) is action_mask([0, 7, 8])
    assert unchecked_agent_mask([2, 5]) is agent_mask([2, 5]) and is_shared_mask(unchecked_agent_mask([2, 5]))


@pytest.mark.parametrize("end_score", [0, -5, 1001, 40.0, True, None])
def test_observation_bounds_refuse_an_end_score_the_rules_do_not_allow(end_score):
    """observation_bounds(0) divided by zero and observation_bounds(-5) gave negative bounds."""
    with pytest.raises(ValueError, match=r"^end_score must be (an integer|between 1 and 1000), got "):
        observation_bounds(end_score)
    with pytest.raises(ValueError, match="end_score must be"):
        OBS_V1.bounds(end_score)


def test_observation_bounds_of_an_end_score_the_rules_allow():
    low, high = observation_bounds(np.int64(40), 1)
    assert low.min() == 0 and high.min() > 0 and high.shape == (OBS_V1.size,)


@pytest.mark.parametrize("sizes", [[], (), iter([])], ids=["list", "tuple", "iterator"])
def test_options_at_no_table_size_is_refused(sizes):
    """Rules.options_at([]) returned {}: no size was checked, so any option passed."""
    with pytest.raises(ValueError, match=r"sizes must name at least one table size \(2..6\), got none"):
        Rules.options_at(sizes, hand_size=30)


def test_options_at_each_size_once():
    assert list(Rules.options_at([4, 2, 4], end_score=30)) == [2, 4]
