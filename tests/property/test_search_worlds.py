"""The worlds the search experiments draw (benchmarks/search_experiment.py and
learned_search.py) look exactly like the real game from the searcher's seat: a world
that looked different would mislead the search, or leak what the seat cannot see."""

import importlib
import sys
from pathlib import Path

import numpy as np
import pytest

from agents.heuristic import HeuristicAgent
from llama_env.engine import NUM_CARD_VALUES, LlamaGame
from llama_env.observation import encode_v1
from llama_env.table import Table

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def scripts():
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        yield importlib.import_module("search_experiment"), importlib.import_module("learned_search")
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))


def _decisions(players: int, games: int):
    """Real games of ``heuristic``, at each move of seat 0 (before it is played)."""
    for g in range(games):
        game = LlamaGame(players, rng=g)
        table = Table(game, [HeuristicAgent()] * players)
        while not game.game_over:
            if game.current_player == 0:
                yield game
            table.play_turn()


@pytest.mark.parametrize("players", [2, 4, 6])
def test_worlds_look_like_the_game_from_the_seat(scripts, players):
    search_experiment, learned_search = scripts
    rng = np.random.default_rng(0)
    belief = [  # random weights: the sampler must keep the world consistent whatever the network says
        (rng.normal(size=(encode_v1(LlamaGame(players), 0).size, 8)), rng.normal(size=8)),
        (rng.normal(size=(8, (players - 1) * NUM_CARD_VALUES)), rng.normal(size=(players - 1) * NUM_CARD_VALUES)),
    ]
    differ = 0
    seen = 0
    for game in _decisions(players, 6):
        mine = encode_v1(game, 0)
        worlds = [
            search_experiment.sample_from_record(game, 0, rng, 0.25, True, keep_history=True),
            search_experiment.sample_from_record(game, 0, rng, 1.0, False, keep_history=True),
            learned_search.sample_from_belief(game, 0, belief, rng),
        ]
        for world in worlds:
            np.testing.assert_array_equal(encode_v1(world, 0), mine)
            assert world.legal_actions() == game.legal_actions()
            assert sorted(world.draw_pile + [c for p in range(1, players) for c in world.hand(p)]) == sorted(
                game.draw_pile + [c for p in range(1, players) for c in game.hand(p)]
            )
            differ += any(world.hand(p) != game.hand(p) for p in range(1, players))
            seen += 1
    assert differ > seen // 2  # the hidden cards are drawn again, not copied from the game


def test_without_keep_history_the_world_forgets_the_record(scripts):
    search_experiment, _ = scripts
    rng = np.random.default_rng(1)
    for game in _decisions(4, 2):
        if game.round_moves:
            world = search_experiment.sample_from_record(game, 0, rng, 0.25, True)
            assert game.to_dict()["history"] is not None
            assert world.to_dict()["history"] is None
            assert encode_v1(world, 0)[:52].tolist() == encode_v1(game, 0)[:52].tolist()
            return
    pytest.fail("no decision after the first move of a round")
