"""The worlds the search agent looks ahead in (``agents.search.belief_deals``: the other
hands drawn from its belief network, dealt by ``world_snapshots`` into the public game
that ``llama_env.worlds`` rebuilds from its observation) look exactly like the real game
from its seat, whatever the network says: a world that looked different would mislead the
search, and one that copied the hidden cards would leak what the seat cannot see. The
worlds are drawn from the same distribution as the card-by-card ``belief_hands`` of the
engine search. tests/property/test_worlds.py holds the dealing itself to the same, for
hands given."""

import numpy as np
import pytest

from agents.heuristic import HeuristicAgent
from agents.search import belief_deals, belief_hands, world_snapshots
from llama_env.engine import NUM_CARD_VALUES, LlamaGame
from llama_env.observation import encode_v1
from llama_env.table import Table
from llama_env.worlds import public_state


def _decisions(players: int, games: int):
    """Real games of ``heuristic``, at each move of seat 0 (before it is played)."""
    for g in range(games):
        game = LlamaGame(players, rng=g)
        table = Table(game, [HeuristicAgent()] * players)
        while not game.game_over:
            if game.current_player == 0:
                yield game
            table.play_turn()


def _hidden(game: LlamaGame) -> list[int]:
    """What seat 0 cannot see: the other hands and the draw pile, as sorted card codes."""
    return sorted(game.draw_pile + [c for p in range(1, game.num_players) for c in game.hand(p)])


@pytest.mark.parametrize("players", [2, 4, 6])
def test_belief_worlds_look_like_the_game_from_the_seat(players):
    rng = np.random.default_rng(0)
    width = encode_v1(LlamaGame(players), 0).size
    belief = [  # random weights: the worlds must stay consistent whatever the network says
        (rng.normal(size=(width, 8)), rng.normal(size=8)),
        (rng.normal(size=(8, (players - 1) * NUM_CARD_VALUES)), rng.normal(size=(players - 1) * NUM_CARD_VALUES)),
    ]
    differ = seen = 0
    for game in _decisions(players, 6):
        mine = encode_v1(game, 0)
        state = public_state(mine)
        for snapshot in world_snapshots(state, *belief_deals(mine, state, belief, rng, 3)):
            world = LlamaGame.from_dict(snapshot)
            np.testing.assert_array_equal(encode_v1(world, 0), mine)
            assert world.current_player == 0
            assert world.legal_actions() == game.legal_actions()
            assert _hidden(world) == _hidden(game)
            differ += any(world.hand(p) != game.hand(p) for p in range(1, players))
            seen += 1
    assert seen > 50
    assert differ > seen // 2  # the hidden cards are drawn again, not copied from the game


def test_a_confident_belief_deals_what_it_believes():
    """A network that puts every other hand's weight on one value deals that value
    wherever the unseen cards allow it: the draws follow the network."""
    players, llama = 2, NUM_CARD_VALUES
    game = next(_decisions(players, 1))
    mine = encode_v1(game, 0)
    state = public_state(mine)
    bias = np.full(NUM_CARD_VALUES, -50.0)
    bias[llama - 1] = 50.0
    belief = [(np.zeros((mine.size, NUM_CARD_VALUES)), bias)]
    hands, _ = belief_deals(mine, state, belief, np.random.default_rng(0), 20)
    llamas = min(state.unseen[llama - 1], state.hand_sizes[0])
    assert (hands[:, 0, llama - 1] == llamas).all()


@pytest.mark.parametrize("players", [2, 4, 6])
def test_the_worlds_are_drawn_as_the_engine_search_draws_them(players):
    """Drawn for many worlds at once, the hands follow the same distribution as one world
    at a time, card by card: each hand's mean count of each value, over 3,000 worlds of
    each, agrees within the noise."""
    rng = np.random.default_rng(players)
    width = encode_v1(LlamaGame(players), 0).size
    belief = [
        (rng.normal(size=(width, (players - 1) * NUM_CARD_VALUES)) * 0.3, np.zeros((players - 1) * NUM_CARD_VALUES))
    ]
    mine = next(encode_v1(game, 0) for k, game in enumerate(_decisions(players, 1)) if k == 3)
    state = public_state(mine)
    many, _ = belief_deals(mine, state, belief, rng, 3000)
    one = np.array(
        [
            [np.bincount(hand, minlength=NUM_CARD_VALUES + 1)[1:] for hand in belief_hands(mine, state, belief, rng)]
            for _ in range(3000)
        ]
    )
    noise = np.sqrt((many.var(axis=0) + one.var(axis=0)) / 3000) + 1e-9
    assert (np.abs(many.mean(axis=0) - one.mean(axis=0)) < 5 * noise).all()
    assert many.std(axis=0).max() > 0.3  # the hands do vary
