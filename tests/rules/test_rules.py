"""Scripted tests, one group per numbered rule of docs/rules.md.

Each situation is written by hand with ``make_state`` / ``LlamaGame.from_dict`` and the
expected outcome is spelled out literally, so a test reads like the rulebook.
"""

from __future__ import annotations

import itertools
from collections import Counter

import numpy as np
import pytest
from conftest import card_counts, full_deck_counts, make_game, make_state, random_playout

from llama_env.engine import (
    CARD_POINTS,
    Action,
    IllegalActionError,
    LlamaGame,
    Rules,
    can_draw,
    can_play_on,
    card_points,
    hand_penalty,
    marker_to_return,
    playable_on,
    winners,
)
from llama_env.rewards import batch_rewards, game_rewards, illegal_action_return, rewards_for

PLAY = {c: c - 1 for c in range(1, 8)}  # card code -> action
DRAW, QUIT = int(Action.DRAW), int(Action.QUIT)


def counts(hand: list[int]) -> list[int]:
    c = [0] * 8
    for card in hand:
        c[card] += 1
    return c


# ----------------------------------------------------------------- rule 1: the deck


def test_rule1_card_codes_and_points():
    assert [card_points(c) for c in range(1, 8)] == [1, 2, 3, 4, 5, 6, 10]
    # the table the agents and the batch engine read, by card code (index 0 unused, 0)
    assert CARD_POINTS == (0, 1, 2, 3, 4, 5, 6, 10) and isinstance(CARD_POINTS, tuple)
    assert [int(a) for a in Action] == list(range(9))
    assert [Action.play(c) for c in range(1, 8)] == [0, 1, 2, 3, 4, 5, 6]


@pytest.mark.parametrize("n", [2, 3, 4, 5, 6])
def test_rule1_deck_is_56_cards_8_of_each_for_every_table_size(n):
    g = LlamaGame(n, rng=n)
    d = g.to_dict()
    assert card_counts(d) == Counter({1: 8, 2: 8, 3: 8, 4: 8, 5: 8, 6: 8, 7: 8})
    assert sum(card_counts(d).values()) == 56
    assert d["num_players"] == n and len(d["hands"]) == n


@pytest.mark.parametrize("n", [1, 7])
def test_rule1_two_to_six_players_only(n):
    with pytest.raises(ValueError, match="num_players"):
        LlamaGame(n)


# ----------------------------------------------------------------- rule 2: the deal


@pytest.mark.parametrize("n", [2, 3, 4, 5, 6])
def test_rule2_deal_six_each_and_one_card_face_up(n):
    g = LlamaGame(n, rng=0)
    d = g.to_dict()
    assert [len(h) for h in d["hands"]] == [6] * n
    assert len(d["discard_pile"]) == 1
    assert len(d["draw_pile"]) == 56 - 6 * n - 1
    assert d["quit"] == [False] * n
    assert d["scores"] == [0] * n
    assert d["round"] == 1 and d["game_over"] is False


@pytest.mark.parametrize(("n", "hand_size", "draw_left"), [(2, 1, 53), (4, 10, 15), (5, 11, 0), (6, 9, 1)])
def test_rule2_hand_size_option(n, hand_size, draw_left):
    g = LlamaGame(n, hand_size=hand_size, rng=1)
    assert [g.hand_size_of(p) for p in range(n)] == [hand_size] * n
    assert len(g.draw_pile) == draw_left
    assert len(g.discard_pile) == 1
    assert card_counts(g.to_dict()) == full_deck_counts()


def test_rule2_deal_is_a_shuffle_driven_by_the_rng():
    deals = {tuple(tuple(h) for h in LlamaGame(4, rng=s).to_dict()["hands"]) for s in range(10)}
    assert len(deals) == 10
    assert LlamaGame(4, rng=7).to_dict() == LlamaGame(4, rng=7).to_dict()


def test_rule2_every_round_reshuffles_all_56_cards():
    # seat 0 goes out at once; the next round is dealt from the whole deck again
    g = make_game(num_players=3, hands=[[3], [1, 1, 1], [2, 2]], top=3, hand_size=6, draw_pile=[])
    result = g.step(PLAY[3])
    assert result is not None and result.went_out == 0
    d = g.to_dict()
    assert d["round"] == 2
    assert [len(h) for h in d["hands"]] == [6, 6, 6]
    assert len(d["discard_pile"]) == 1 and len(d["draw_pile"]) == 56 - 18 - 1
    assert card_counts(d) == full_deck_counts()
    assert d["quit"] == [False, False, False]


# ----------------------------------------------------------------- rule 3: one action per turn


@pytest.mark.parametrize(
    ("action", "hand_after", "draw_after", "discard_top"),
    [
        (PLAY[3], [4, 7], 48, 3),  # play: one card from hand to discard pile
        (DRAW, [3, 4, 7, 7], 47, 3),  # draw: one card from draw pile to hand
        (QUIT, [3, 4, 7], 48, 3),  # quit: nothing moves
    ],
)
def test_rule3_exactly_one_action_then_the_turn_passes(action, hand_after, draw_after, discard_top):
    g = make_game(num_players=3, hands=[[3, 4, 7], [1, 1], [2, 2]], top=3)
    assert len(g.draw_pile) == 48 and g.draw_pile[-1] == 7
    assert g.step(action) is None
    assert g.hand(0) == hand_after
    assert len(g.draw_pile) == draw_after
    assert g.top_card == discard_top
    assert g.current_player == 1
    assert g.hand(1) == [1, 1] and g.hand(2) == [2, 2]


# ----------------------------------------------------------------- rule 4: what may be played


def test_rule4_playable_on_table():
    assert {top: playable_on(top) for top in range(1, 8)} == {
        1: (1, 2),
        2: (2, 3),
        3: (3, 4),
        4: (4, 5),
        5: (5, 6),
        6: (6, 7),  # on a 6: a 6 or a llama
        7: (7, 1),  # on a llama: a llama or a 1
    }


def test_rule4_can_play_on_everything_else_is_refused():
    allowed = {(1, 1), (2, 1), (2, 2), (3, 2), (3, 3), (4, 3), (4, 4), (5, 4), (5, 5), (6, 5), (6, 6), (7, 6)}
    allowed |= {(7, 7), (1, 7)}
    for card in range(1, 8):
        for top in range(1, 8):
            assert can_play_on(card, top) == ((card, top) in allowed), (card, top)


@pytest.mark.parametrize(
    ("top", "legal"),
    [
        (1, [0, 1, 7, 8]),
        (2, [1, 2, 7, 8]),
        (3, [2, 3, 7, 8]),
        (4, [3, 4, 7, 8]),
        (5, [4, 5, 7, 8]),
        (6, [5, 6, 7, 8]),  # a 6 or a llama on a 6
        (7, [0, 6, 7, 8]),  # a llama or a 1 on a llama
    ],
)
def test_rule4_legal_actions_with_a_full_hand(top, legal):
    g = make_game(num_players=2, hands=[[1, 2, 3, 4, 5, 6, 7], [1, 1]], top=top)
    assert g.legal_actions() == legal
    assert g.legal_mask() == [a in legal for a in range(9)]


def test_rule4_cards_that_do_not_fit_are_not_playable():
    # top 3: neither 1, 2 (lower), 5, 6 (too high) nor a llama fit
    g = make_game(num_players=2, hands=[[1, 2, 5, 6, 7], [4]], top=3)
    assert g.legal_actions() == [DRAW, QUIT]
    before = g.to_dict()
    for card in (1, 2, 5, 6, 7):
        with pytest.raises(IllegalActionError):
            g.step(PLAY[card])
    # a fitting value not in hand is not playable either
    for card in (3, 4):
        assert not g.is_legal(PLAY[card])
        with pytest.raises(IllegalActionError):
            g.step(PLAY[card])
    assert g.to_dict() == before


def test_rule4_a_llama_on_a_6_and_a_1_on_a_llama():
    g = make_game(num_players=2, hands=[[7, 5], [1, 2]], top=6)
    g.step(PLAY[7])
    assert g.top_card == 7 and g.hand(0) == [5]
    assert g.current_player == 1 and g.legal_actions() == [PLAY[1], DRAW, QUIT]
    g.step(PLAY[1])
    assert g.top_card == 1 and g.hand(1) == [2]


# ----------------------------------------------------------------- rule 5: draw


def test_rule5_draw_takes_the_last_element_of_the_draw_pile_and_ends_the_turn():
    g = make_game(num_players=2, hands=[[1], [1]], top=3, draw_pile=[2, 6, 4])
    g.step(DRAW)
    assert g.hand(0) == [1, 4]  # the 4 is drawn ...
    assert g.draw_pile == [2, 6]
    assert g.top_card == 3
    assert g.current_player == 1  # ... but not played: the turn has passed
    g.step(DRAW)
    assert g.hand(1) == [1, 6] and g.draw_pile == [2]
    assert g.current_player == 0
    assert PLAY[4] in g.legal_actions()  # now, on a later turn, the drawn 4 may be played


def test_rule5_no_draw_from_an_empty_pile_and_it_is_never_rebuilt():
    g = make_game(num_players=2, hands=[[1], [1]], top=3, draw_pile=[5])
    g.step(DRAW)
    assert g.draw_pile == [] and len(g.discard_pile) > 1
    assert g.current_player == 1
    assert not g.can_draw()
    assert g.legal_actions() == [QUIT]
    before = g.to_dict()
    with pytest.raises(IllegalActionError, match="DRAW"):
        g.step(DRAW)
    assert g.to_dict() == before


def test_rule5_a_lone_remaining_player_may_not_draw():
    g = make_game(num_players=3, hands=[[1, 2], [1], [2]], top=5, quit=[False, True, True])
    assert len(g.draw_pile) > 0
    assert not g.can_draw()
    assert g.legal_actions() == [QUIT]
    with pytest.raises(IllegalActionError):
        g.step(DRAW)
    assert can_draw(10, 1) is False
    assert can_draw(0, 3) is False
    assert can_draw(1, 2) is True


def test_rule5_a_seat_that_quit_may_not_draw_and_its_observation_says_so():
    """Only one property test guarded this: an engine whose may_draw forgot the seat's own
    quit showed can_draw = 1 to a seat out of the round."""
    from llama_env.observation import ObsView, encode

    g = make_game(num_players=3, hands=[[1, 2], [3], [2]], top=5, quit=[False, True, False])
    assert g.current_player == 0 and g.can_draw() and g.may_draw(0)
    assert not g.may_draw(1)  # seat 1 quit: out of the round
    assert g.may_draw(2)
    assert [ObsView(encode(g, seat)).can_draw for seat in range(3)] == [True, False, True]


# ----------------------------------------------------------------- rule 6: quit


def test_rule6_quit_is_allowed_even_when_play_and_draw_are_possible():
    g = make_game(num_players=2, hands=[[3, 7], [3]], top=3)
    assert g.legal_actions() == [PLAY[3], DRAW, QUIT]
    assert g.step(QUIT) is None
    assert g.quit == [True, False]
    assert g.hand(0) == [3, 7]  # the cards stay with the player
    assert g.current_player == 1
    result = g.step(PLAY[3])  # seat 1 goes out
    assert result is not None
    assert result.penalties == (13, 0)  # the kept cards count at scoring: 3 + llama


def test_rule6_a_lone_player_may_quit_and_the_round_ends():
    g = make_game(num_players=3, hands=[[4], [1], [2, 6]], top=4, quit=[True, True, False], current_player=2)
    assert g.legal_actions() == [QUIT]
    result = g.step(QUIT)
    assert result is not None and result.went_out is None
    assert result.penalties == (4, 1, 8)


# ----------------------------------------------------------------- rule 7: turn order


def test_rule7_play_passes_to_the_left_and_wraps():
    g = make_game(num_players=4, hands=[[5], [5], [5], [5]], top=1)
    order = [g.current_player]
    for _ in range(5):
        g.step(DRAW)
        order.append(g.current_player)
    assert order == [0, 1, 2, 3, 0, 1]


def test_rule7_players_who_quit_are_skipped():
    g = make_game(num_players=4, hands=[[5], [5], [5], [5]], top=1, quit=[False, True, False, True])
    order = [g.current_player]
    for _ in range(4):
        g.step(DRAW)
        order.append(g.current_player)
    assert order == [0, 2, 0, 2, 0]


def test_rule7_a_player_left_alone_keeps_playing():
    g = make_game(num_players=3, hands=[[1], [3, 4, 5], [2]], top=3, quit=[True, False, True], current_player=1)
    g.step(PLAY[3])
    assert g.current_player == 1
    assert g.legal_actions() == [PLAY[4], QUIT]  # no draw for a lone player
    g.step(PLAY[4])
    assert g.current_player == 1
    result = g.step(PLAY[5])
    assert result is not None and result.went_out == 1


# ----------------------------------------------------------------- rule 8: round end


def test_rule8_round_ends_at_once_when_a_player_plays_the_last_card():
    g = make_game(num_players=3, hands=[[2, 2], [3], [6, 6]], top=3, current_player=1, starter=0)
    result = g.step(PLAY[3])
    assert result is not None
    assert result.round == 1 and result.went_out == 1
    assert result.penalties == (2, 0, 6)
    assert result.scores == (2, 0, 6)
    assert result.game_over is False
    assert g.round == 2 and g.scores == [2, 0, 6]
    assert g.last_result == result


def test_rule8_round_ends_when_every_player_has_quit():
    g = make_game(num_players=3, hands=[[1, 1], [7], [2, 3]], top=4)
    assert g.step(QUIT) is None
    assert g.step(QUIT) is None
    result = g.step(QUIT)
    assert result is not None
    assert result.went_out is None
    assert result.penalties == (1, 10, 5)
    assert result.returned == (0, 0, 0)
    assert g.round == 2


def test_rule8_round_continues_while_cards_remain():
    g = make_game(num_players=2, hands=[[3, 3], [1]], top=3)
    assert g.step(PLAY[3]) is None
    assert g.round == 1 and g.hand(0) == [3]


# ----------------------------------------------------------------- rule 9: penalty


def test_rule9_hand_penalty_counts_distinct_values():
    assert hand_penalty(counts([])) == 0
    assert hand_penalty(counts([4, 4])) == 4  # two 4s count 4 once
    assert hand_penalty(counts([7])) == 10
    assert hand_penalty(counts([7, 7, 7])) == 10  # llamas count 10 once
    assert hand_penalty(counts([1, 2, 3, 4, 5, 6, 7])) == 31
    assert hand_penalty(counts([7, 7, 7, 4, 4, 1])) == 15
    assert hand_penalty(counts([6, 6, 6, 6, 6, 6, 6, 6])) == 6


def test_rule9_hand_penalty_of_every_set_of_values_held():
    """All 128 sets of the seven kinds a hand may hold, one or two of each: the sum of
    the kinds held, as the rulebook values them (the engine reads its table)."""
    worth = (1, 2, 3, 4, 5, 6, 10)
    for held in itertools.product((0, 1, 2), repeat=7):
        assert hand_penalty([0, *held]) == sum(w for w, k in zip(worth, held, strict=True) if k), held


def test_rule9_scored_at_round_end_for_everyone_who_did_not_go_out():
    g = make_game(
        num_players=4,
        hands=[[5], [7, 7, 7, 4, 4, 1], [2, 2, 6], [3, 3, 3, 3]],
        top=5,
    )
    result = g.step(PLAY[5])
    assert result.penalties == (0, 15, 8, 3)
    assert result.scores == (0, 15, 8, 3)


# ----------------------------------------------------------------- rule 10: marker return


def test_rule10_marker_to_return():
    assert [marker_to_return(s) for s in (0, 1, 2, 9, 10, 11, 39)] == [0, 1, 1, 1, 10, 10, 10]


@pytest.mark.parametrize(
    ("score_before", "returned", "score_after"),
    [(15, 10, 5), (10, 10, 0), (9, 1, 8), (1, 1, 0), (0, 0, 0)],
)
def test_rule10_the_player_who_went_out_gives_back_one_marker(score_before, returned, score_after):
    g = make_game(num_players=2, hands=[[3], [7, 2]], top=3, scores=[score_before, 4])
    result = g.step(PLAY[3])
    assert result.returned == (returned, 0)
    assert result.penalties == (0, 12)
    assert result.scores == (score_after, 16)
    assert result.score_changes == (-returned, 12)


def test_rule10_nobody_returns_a_marker_when_everybody_quit():
    g = make_game(num_players=2, hands=[[3], [2]], top=5, scores=[20, 20])
    g.step(QUIT)
    result = g.step(QUIT)
    assert result.returned == (0, 0)
    assert result.scores == (23, 22)


# ----------------------------------------------------------------- rule 11: next starter


def test_rule11_next_round_starts_with_the_last_player_who_played_a_card():
    g = make_game(num_players=3, hands=[[3, 7], [4, 7], [1, 2]], top=3, starter=0)
    g.step(PLAY[3])  # seat 0 plays
    g.step(PLAY[4])  # seat 1 plays: the last card played this round
    g.step(QUIT)  # seat 2
    g.step(QUIT)  # seat 0
    result = g.step(QUIT)  # seat 1
    assert result.went_out is None
    assert result.penalties == (10, 10, 3)
    assert g.round == 2
    assert g.current_player == 1
    assert g.to_dict()["starter"] == 1


def test_rule11_the_last_player_starts_even_when_that_is_not_the_seat_after_the_starter():
    """In the test above the last player, seat 1, is also the seat after the starter, so
    an engine that gave the round to the starter's left neighbour passed it."""
    g = make_game(num_players=4, hands=[[1, 7], [5, 7], [2, 6], [3, 7]], top=1, starter=1, current_player=1)
    g.step(QUIT)  # seat 1, the starter
    g.step(PLAY[2])  # seat 2
    g.step(PLAY[3])  # seat 3: the last card played this round
    for _ in range(3):  # seats 0, 2 and 3 hold nothing that fits on a 3
        result = g.step(QUIT)
    assert result.went_out is None
    assert g.current_player == 3 and g.to_dict()["starter"] == 3  # seat 3 played last, not starter + 1 = 2


def test_rule11_the_player_who_went_out_starts_the_next_round():
    g = make_game(num_players=4, hands=[[1, 1], [1, 1], [6], [2]], top=6, current_player=2, starter=0)
    g.step(PLAY[6])
    assert g.round == 2 and g.current_player == 2


@pytest.mark.parametrize(("starter", "next_starter"), [(0, 1), (1, 2), (2, 0)])
def test_rule11_nobody_played_the_player_left_of_the_previous_starter_begins(starter, next_starter):
    g = make_game(num_players=3, hands=[[1], [1], [1]], top=5, current_player=starter, starter=starter)
    for _ in range(3):
        g.step(QUIT)
    assert g.round == 2
    assert g.current_player == next_starter


def test_rule11_a_draw_does_not_count_as_playing_a_card():
    g = make_game(num_players=2, hands=[[1], [1]], top=5, current_player=1, starter=1)
    g.step(DRAW)
    g.step(QUIT)
    g.step(QUIT)
    assert g.round == 2 and g.current_player == 0


def test_rule11_first_round_starts_with_seat_0():
    for seed in range(10):
        for n in (2, 4, 6):
            g = LlamaGame(n, rng=seed)
            assert g.current_player == 0 and g.to_dict()["starter"] == 0


def test_rule11_random_first_player_option():
    starters = {LlamaGame(4, rng=seed, random_first_player=True).current_player for seed in range(40)}
    assert starters == {0, 1, 2, 3}


# ----------------------------------------------------------------- rule 12: game end, winners


@pytest.mark.parametrize(("score_before", "over"), [(29, False), (30, True), (35, True)])
def test_rule12_game_ends_when_a_score_reaches_40(score_before, over):
    # seat 1 goes out; seat 0 takes a llama (10)
    g = make_game(num_players=3, hands=[[7], [4], [1]], top=4, current_player=1, scores=[score_before, 5, 0])
    round_before = g.round
    result = g.step(PLAY[4])
    assert result.scores == (score_before + 10, 4, 1)
    assert result.game_over is over and g.game_over is over
    if over:
        assert g.round == round_before  # no new deal
        assert g.legal_actions() == []
        assert g.legal_mask() == [False] * 9
        with pytest.raises(IllegalActionError, match="game is over"):
            g.step(QUIT)
    else:
        assert g.round == round_before + 1 and g.legal_actions()


def test_rule12_exactly_40_ends_the_game_not_only_more_than_40():
    g = make_game(num_players=2, hands=[[7], [4]], top=4, current_player=1, scores=[30, 0])
    result = g.step(PLAY[4])
    assert result.scores == (40, 0)
    assert result.game_over is True


@pytest.mark.parametrize(("end_score", "over"), [(10, True), (11, False)])
def test_rule12_end_score_option(end_score, over):
    g = make_game(num_players=2, hands=[[7], [4]], top=4, current_player=1, end_score=end_score)
    result = g.step(PLAY[4])
    assert result.scores == (10, 0)
    assert result.game_over is over


def test_rule12_end_score_option_in_whole_games():
    for seed in range(20):
        g = LlamaGame(3, end_score=15, rng=seed)
        random_playout(g, seed)
        assert g.game_over and max(g.scores) >= 15
        # the previous round's scores were all below the threshold
        prev = [s - c for s, c in zip(g.last_result.scores, g.last_result.score_changes, strict=True)]
        assert max(prev) < 15


def test_rule12_lowest_score_wins_ties_share():
    assert winners([12, 40, 3]) == [2]
    assert winners([12, 40, 12]) == [0, 2]
    assert winners([5, 5, 5, 5]) == [0, 1, 2, 3]
    assert game_rewards([12, 40, 3]) == [0.0, 0.0, 1.0]
    assert game_rewards([12, 40, 12]) == [0.5, 0.0, 0.5]
    assert game_rewards([7, 7, 41]) == [0.5, 0.5, 0.0]
    assert game_rewards([40, 9, 9, 9]) == pytest.approx([0.0, 1 / 3, 1 / 3, 1 / 3])
    assert game_rewards([5, 5, 5, 5, 5, 5]) == pytest.approx([1 / 6] * 6)


# ----------------------------------------------------------------- reward modes


def test_round_reward_is_minus_penalty_plus_marker_returned():
    g = make_game(num_players=3, hands=[[2], [7], [1, 1]], top=2, scores=[15, 0, 3])
    result = g.step(PLAY[2])
    assert result.returned == (10, 0, 0) and result.penalties == (0, 10, 1)
    assert rewards_for(result, "round") == [10.0, -10.0, -1.0]
    assert rewards_for(result, "game") == [0.0, 0.0, 0.0]  # game not over


def test_game_reward_pays_the_winners_at_the_end():
    g = make_game(num_players=3, hands=[[2], [7], [1, 1]], top=2, scores=[15, 35, 4])
    result = g.step(PLAY[2])
    assert result.scores == (5, 45, 5) and result.game_over
    assert rewards_for(result, "game") == [0.5, 0.0, 0.5]
    assert rewards_for(result, "round") == [10.0, -10.0, -1.0]


def test_round_rewards_sum_to_minus_final_scores():
    for seed in range(10):
        g = LlamaGame(4, rng=seed)
        rng = np.random.default_rng(seed)
        total = [0.0] * 4
        while not g.game_over:
            legal = g.legal_actions()
            result = g.step(legal[int(rng.integers(len(legal)))])
            if result is not None:
                total = [t + r for t, r in zip(total, rewards_for(result, "round"), strict=True)]
        assert total == [-float(s) for s in g.scores]


def test_make_state_accounts_for_all_cards():
    d = make_state(num_players=4, hands=[[1], [2, 2], [7], [6]], top=6, draw_pile=[3])
    assert card_counts(d) == full_deck_counts()
    assert d["draw_pile"] == [3] and d["discard_pile"][-1] == 6


def test_make_state_keeps_the_deal_its_hands_fit_in_a_state_broken_on_purpose():
    """A snapshot refused for another reason (a starter of 1.5) was given the largest deal
    (5), which its hands of 10 and 1 cards cannot come from; 1, as before."""
    d = make_state(num_players=2, hands=[[1, 1, 2, 2, 3, 3, 4, 4, 5, 5], [6]], starter=1.5)
    assert d["hand_size"] == 1
    with pytest.raises(ValueError, match="starter must be an integer"):
        LlamaGame.from_dict(d)
    assert make_state(num_players=2, hands=[[1, 1, 2, 2, 3, 3, 4, 4, 5, 5], [6]])["hand_size"] == 1
    assert make_state(num_players=3, hands=[[1, 2], [3, 4], [5, 6]], starter=2)["hand_size"] == 2


# ----------------------------------------------------------------- playthrough regression


def test_playthrough_regression():
    """A whole seeded game with the "first legal action" policy (play if possible, else
    draw, else quit). A change here means the deal, the rules or the rng use changed."""
    g = LlamaGame(4, rng=2024)
    assert g.to_dict()["hands"] == [[1, 1, 2, 4, 4, 5], [1, 2, 2, 4, 5, 6], [1, 2, 3, 3, 4, 7], [1, 2, 3, 3, 7, 7]]
    assert g.top_card == 6
    assert g.legal_actions() == [DRAW, QUIT]  # seat 0 has neither a 6 nor a llama
    steps, results = 0, []
    while not g.game_over:
        result = g.step(g.legal_actions()[0])
        steps += 1
        if result is not None:
            results.append((result.round, result.went_out, result.penalties, result.scores))
    assert steps == 140
    assert results == [
        (1, 3, (18, 3, 11, 0), (18, 3, 11, 0)),
        (2, None, (22, 14, 18, 14), (40, 17, 29, 14)),
    ]
    assert winners(g.scores) == [3]


@pytest.mark.parametrize("random_first_player", [False, True])
def test_unchecked_constructor_starts_the_same_game(random_first_player):
    # the envs' reset skips re-validating options they checked once; the game must not differ
    for seed in range(5):
        a = LlamaGame(3, end_score=30, hand_size=5, rng=seed, random_first_player=random_first_player)
        b = LlamaGame.unchecked(Rules(3, end_score=30, hand_size=5), np.random.default_rng(seed), random_first_player)
        assert a.to_dict() == b.to_dict()


def test_seeded_generator_is_reproducible_and_distinct_per_seed():
    from llama_env.engine import seeded_generator

    draws = {seed: seeded_generator(seed).random(4).tolist() for seed in (0, 1, 2, 2**40, 2**70 + 3)}
    assert len({tuple(v) for v in draws.values()}) == len(draws)  # distinct seeds, distinct streams
    assert all(seeded_generator(seed).random(4).tolist() == v for seed, v in draws.items())
    assert seeded_generator(np.int64(2)).random(4).tolist() == draws[2]  # a numpy integer is the same seed
    assert seeded_generator(None).random() != seeded_generator(None).random()  # fresh entropy
    assert len(seeded_generator(3).spawn(2)) == 2
    with pytest.raises(ValueError, match="non-negative"):
        seeded_generator(-1)  # numpy's own check, as default_rng(-1)


def test_a_game_on_a_seeded_generator_snapshots_and_copies_like_any_other():
    from llama_env.engine import seeded_generator

    game = LlamaGame(3, rng=seeded_generator(7))
    random_playout(game.copy(), 0)  # the copy's generator is its own
    twin = LlamaGame.from_dict(game.to_dict())
    for g in (game, twin):
        random_playout(g, 1)
    assert game.to_dict() == twin.to_dict()  # the same later deals from the restored generator state


def test_shaped_reward_is_the_change_of_the_lead_over_the_table():
    g = make_game(num_players=3, hands=[[2], [7], [1, 1]], top=2, scores=[15, 0, 3])
    result = g.step(PLAY[2])  # score changes -10, +10, +1
    # seat 0: others' mean change 5.5 minus its -10; seat 1: -4.5 - 10; seat 2: 0 - 1
    assert rewards_for(result, "shaped") == pytest.approx([0.155, -0.145, -0.01])


def test_shaped_reward_pays_the_win_share_minus_the_last_lead_at_the_end():
    g = make_game(num_players=3, hands=[[2], [7], [1, 1]], top=2, scores=[15, 35, 4])
    result = g.step(PLAY[2])
    assert result.scores == (5, 45, 5) and result.game_over
    # the round's lead change, then + win share - final lead (others' mean minus own)
    expected = [0.155 + 0.5 - 0.01 * 20, -0.145 + 0.0 - 0.01 * -40, -0.01 + 0.5 - 0.01 * 20]
    assert rewards_for(result, "shaped") == pytest.approx(expected)


@pytest.mark.parametrize("players", [2, 4, 6])
def test_shaped_rewards_sum_to_the_game_reward_over_a_game(players):
    for seed in range(10):
        g = LlamaGame(players, rng=seed)
        rng = np.random.default_rng(seed)
        total = [0.0] * players
        rounds = 0
        while not g.game_over:
            legal = g.legal_actions()
            result = g.step(legal[int(rng.integers(len(legal)))])
            if result is not None:
                rounds += 1
                total = [t + r for t, r in zip(total, rewards_for(result, "shaped"), strict=True)]
        assert rounds > 1  # the shaping terms did not all vanish in one round
        assert total == pytest.approx(game_rewards(g.scores), abs=1e-12)


@pytest.mark.parametrize("end_score", [1, 40, 1000])
def test_an_illegal_move_s_episode_totals_less_than_any_finished_game(end_score):
    """-1 in every mode was a shortcut in "round", where a whole game pays minus the final
    score: at most end_score - 1 before the last round (rule 12) plus one round's 31 (rule 9)."""
    from llama_env.engine import MAX_PENALTY

    worst_round_game = -(end_score - 1 + MAX_PENALTY)
    assert illegal_action_return("round", end_score) == worst_round_game - 1 == -(end_score + 31)
    for mode in ("game", "shaped"):  # a finished game pays its win share, 0 to 1
        assert illegal_action_return(mode, end_score) == -1.0
    with pytest.raises(ValueError, match="reward must be one of"):
        illegal_action_return("Round", end_score)


def test_a_returned_marker_is_paid_in_the_round_reward():
    """Rule 10 lowers a score when its player goes out; the round reward pays it. Random
    play in the test below rarely returns a marker, so a reward that ignored them passed."""
    got = batch_rewards("round", np.array([[10, 3]]), np.array([[0, 8]]), np.array([False]))
    assert got.tolist() == [[10.0, -5.0]]


@pytest.mark.parametrize("mode", ["game", "round", "shaped"])
def test_batch_rewards_are_the_rewards_of_each_round(mode):
    """The batched form (from the scores around a step) gives rewards_for's floats."""
    for players in (2, 3, 6):
        g = LlamaGame(players, rng=players)
        rng = np.random.default_rng(players)
        while not g.game_over:
            before = list(g.scores)
            legal = g.legal_actions()
            result = g.step(legal[int(rng.integers(len(legal)))])
            got = batch_rewards(mode, np.array([before]), np.array([list(g.scores)]), np.array([g.game_over]))
            expected = [0.0] * players if result is None else rewards_for(result, mode)
            assert got.dtype == np.float64 and got.tolist() == [expected]
