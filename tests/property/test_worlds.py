"""A world rebuilt from an observation (llama_env.worlds) is a game the observer cannot
tell from the real one: it encodes back to the same observation and has the same legal
moves, whatever hidden cards it is dealt; and it deals exactly the cards the observer
cannot see. A search agent that looked ahead in a world that differed would be misled."""

import numpy as np
import pytest

from agents.heuristic import HeuristicAgent
from agents.random_agent import RandomAgent
from llama_env.engine import NUM_CARD_VALUES, Action, LlamaGame, can_play_on
from llama_env.observation import encode, encode_v1
from llama_env.table import Table
from llama_env.worlds import deal_world, dealt_hand_size, discard_order, public_state


def _decisions(players: int, games: int, agent, hand_size: int = 6):
    """Every decision of real games (before the move is made), with the seat to act."""
    for g in range(games):
        game = LlamaGame(players, rng=g, hand_size=hand_size)
        table = Table(game, [agent] * players)
        while not game.game_over:
            yield game, game.current_player
            table.play_turn()


def _shuffled_hands(unseen, sizes, rng):
    cards = [v + 1 for v in range(NUM_CARD_VALUES) for _ in range(unseen[v])]
    rng.shuffle(cards)
    hands, k = [], 0
    for size in sizes:
        hands.append(cards[k : k + size])
        k += size
    return hands


@pytest.mark.parametrize("players", [2, 3, 4, 5, 6])
@pytest.mark.parametrize("agent", [HeuristicAgent(), RandomAgent(seed=1)], ids=["heuristic", "random"])
def test_a_world_encodes_back_to_the_observation_it_was_rebuilt_from(players, agent):
    rng = np.random.default_rng(players)
    seen = 0
    for game, seat in _decisions(players, 8, agent):
        obs = encode_v1(game, seat)
        state = public_state(obs)
        truth = [game.hand((seat + 1 + i) % players) for i in range(players - 1)]
        hidden = sorted(game.draw_pile + [c for hand in truth for c in hand])
        world_of_truth = deal_world(state, truth, rng)
        assert sorted(c for v, k in enumerate(state.unseen, 1) for c in [v] * k) == hidden
        for hands in (truth, _shuffled_hands(state.unseen, state.hand_sizes, rng)):
            world = deal_world(state, hands, rng)
            np.testing.assert_array_equal(encode_v1(world, 0), obs)
            assert world.legal_actions() == game.legal_actions()
            assert [world.hand(p) for p in range(1, players)] == [sorted(h) for h in hands]
        for other in range(1, players):  # dealt the truth, the others see what they saw (version 0)
            np.testing.assert_array_equal(encode(world_of_truth, other), encode(game, (seat + other) % players))
        seen += 1
    assert seen > 100


def test_the_discard_pile_is_rebuilt_in_an_order_rule_4_allows():
    # 3 twos, 2 threes, 1 four, a llama at the bottom and a one: llama, 1, 2, 2, 2, 3, 3, 4
    pile = discard_order([1, 3, 2, 1, 0, 0, 1], top=4, bottoms=[7])
    assert pile == [7, 1, 2, 2, 2, 3, 3, 4]
    # round the cycle twice: every value twice, the top a 3 (bottom 4)
    pile = discard_order([2, 2, 2, 2, 2, 2, 2], top=3, bottoms=[4])
    assert len(pile) == 14 and pile[0] == 4 and pile[-1] == 3
    assert all(can_play_on(card, below) for below, card in zip(pile[:-1], pile[1:], strict=True))
    with pytest.raises(ValueError, match="no discard pile holds"):
        discard_order([1, 0, 1, 0, 0, 0, 0], top=3, bottoms=[1])  # a 1 then a 3: the 2 is missing


def test_a_version_0_observation_or_another_hand_size_is_refused():
    game = LlamaGame(4, rng=0)
    with pytest.raises(ValueError, match="version-1 observation"):
        public_state(encode(game, 0))
    refused = 0
    for game, seat in _decisions(4, 2, HeuristicAgent(), hand_size=4):
        with pytest.raises(ValueError, match="hand_size=6"):
            public_state(encode_v1(game, seat))
        refused += 1
        public_state(encode_v1(game, seat), hand_size=4)  # told the rule option, it fits
    assert refused > 10


@pytest.mark.parametrize(("players", "hand_size"), [(2, 6), (2, 27), (3, 9), (4, 4), (6, 2), (6, 9)])
def test_the_hand_size_a_round_was_dealt_is_read_from_its_counts(players, hand_size):
    decisions = _decisions(players, 2, HeuristicAgent(), hand_size)
    assert {dealt_hand_size(encode_v1(game, seat)) for game, seat in decisions} == {hand_size}


def test_a_vector_of_no_game_fits_no_hand_size():
    """The search read any observation public_state refused as a round dealt another hand
    size: a hand zeroed by mistake was warned about as "not dealt 6 cards a hand"."""
    game, seat = next(iter(_decisions(2, 1, HeuristicAgent())))
    obs = encode_v1(game, seat)
    zeroed = np.where(np.arange(len(obs)) < 8, 0, obs).astype(np.float32)
    assert dealt_hand_size(obs) == 6
    assert dealt_hand_size(zeroed) is dealt_hand_size(np.full_like(obs, np.nan)) is dealt_hand_size(obs[:52]) is None


def test_hands_that_do_not_fit_are_refused():
    game = LlamaGame(4, rng=0)
    state = public_state(encode_v1(game, game.current_player))
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="must hold"):
        deal_world(state, [[1] * 6, [2] * 6], rng)
    with pytest.raises(ValueError, match="more cards of a value than are unseen"):
        deal_world(state, [[7] * 6, [7] * 6, [7] * 6], rng)
    # at the edges, where a mutation audit found the checks loose: the right number of
    # cards in all but split otherwise, and one card of a value too many
    with pytest.raises(ValueError, match="must hold"):
        deal_world(state, [[1] * 5, [2] * 6, [3] * 7], rng)
    value = max(range(NUM_CARD_VALUES), key=lambda v: state.unseen[v])  # the value most unseen
    one_too_many = [value + 1] * (state.unseen[value] + 1)
    others = [v + 1 for v in range(NUM_CARD_VALUES) if v != value for _ in range(state.unseen[v])]
    cards = (one_too_many + others)[: sum(state.hand_sizes)]
    hands = [cards[:6], cards[6:12], cards[12:18]]
    with pytest.raises(ValueError, match="more cards of a value than are unseen"):
        deal_world(state, hands, rng)


@pytest.mark.parametrize("card", [8, 0, -1, 7.0, True, "3"], ids=repr)
def test_a_hand_card_that_is_no_card_code_is_refused(card):
    """A code 8 was an IndexError, and 0 or -1 took a llama (or a 6) off the unseen cards."""
    game = LlamaGame(4, rng=0)
    state = public_state(encode_v1(game, game.current_player))
    truth = [game.hand((game.current_player + k) % 4) for k in (1, 2, 3)]
    truth[1][0] = card
    with pytest.raises(ValueError, match=r"the other hands must hold card codes 1..7, got "):
        deal_world(state, truth, np.random.default_rng(0))


@pytest.mark.parametrize("players", [2, 3, 4, 5, 6])
def test_a_world_knows_who_started_the_round(players):
    """Rule 11 reads the round's starter when the round ends with no card played: the seat
    left of it starts the next one. Worlds wrote the observer as the starter, so a world
    whose round ended so (everyone quit) dealt the next round to the wrong seat. Rule 7
    passes the turn left after plays too, so the starter is known at every decision."""
    agent = RandomAgent(seed=players)
    told = after_a_play = 0
    for game, seat in _decisions(players, 12, agent):
        state = public_state(encode_v1(game, seat))
        assert state.snapshot["starter"] == (game.starter - seat) % players
        told += 1
        after_a_play += game.last_player is not None and game.starter != seat
    assert told > 100 and after_a_play > 10


def test_a_world_whose_round_ends_with_no_card_played_deals_the_next_round_as_the_game_does():
    game = LlamaGame(3, rng=5)
    assert game.starter == 0
    game.step(int(Action.DRAW))  # seat 0 draws, seat 1 quits: seat 2 (the observer) to act
    game.step(int(Action.QUIT))
    assert game.current_player == 2 and game.last_player is None
    state = public_state(encode_v1(game, 2))
    truth = [game.hand(0), game.hand(1)]
    world = deal_world(state, truth, np.random.default_rng(0))
    for g in (game, world):  # the observer quits, then seat 0: nobody played a card
        g.step(int(Action.QUIT))
        g.step(int(Action.QUIT))
        assert g.round == 2
    # the next round is seat 1's (left of the starter, seat 0), which is world seat 2
    assert game.current_player == 1
    assert world.current_player == (1 - 2) % 3
