"""What the search agent plays where it does not search, at each table size, and the
table sizes it says it was made for."""

from __future__ import annotations

import warnings

import pytest
from test_search_agent import _Recorder

import agents
from agents.heuristic import HeuristicAgent
from agents.ppo import SHIPPED, load_actor, save_actor
from agents.search import NETWORKS, SearchAgent
from llama_env.agent import UnseenTableSize, unmade_for
from llama_env.engine import LlamaGame
from llama_env.table import Table


def _moves(agent, players: int, games: int, **rules) -> list[int]:
    """The moves of ``agent`` at seat 0 against ``heuristic``."""
    recorder = _Recorder(agent)
    for g in range(games):
        Table(LlamaGame(players, rng=200 + g, **rules), [recorder] + [HeuristicAgent()] * (players - 1)).play()
    return recorder.moves


def test_at_6_players_it_plays_ppo_v3s_specialist_where_it_does_not_search():
    """docs/agents.md said it played exactly as ppo wherever it did not search; at 6 players
    its specialist is ppo_v3's (the one its networks were fitted on), not ppo's."""
    never = SearchAgent(below=0.0)
    assert _moves(never, 6, 2) == _moves(agents.make("ppo_v3"), 6, 2) != _moves(agents.make("ppo"), 6, 2)
    other_rules = SearchAgent(below=1.0)
    with pytest.warns(UserWarning, match="does not search at end_score 20"):
        assert _moves(other_rules, 6, 1, end_score=20) == _moves(agents.make("ppo_v3"), 6, 1, end_score=20)
    assert other_rules.searched == never.searched == 0


def test_networks_given_say_their_table_size_and_evaluation_warns_at_another(tmp_path):
    """search:networks_path=<heads-up networks> at a 4-player table searched with the shipped
    4-player networks, the file given unused, without a word."""
    two = SearchAgent(networks_path=NETWORKS[2])
    assert two.table_sizes == (2,) and unmade_for([two, "heuristic"], 2) == []
    (line,) = unmade_for([two, *["heuristic"] * 3], 4)
    assert "was trained at 2 players only; it plays this 4-player table" in line
    actor = load_actor(SHIPPED["ppo"][4])
    actor.table_sizes = (2, 4)
    save_actor(actor, tmp_path / "both.npz")
    assert SearchAgent(path=tmp_path / "both.npz", networks_path=NETWORKS[4]).table_sizes == (4,)
    actor.table_sizes = (4,)
    save_actor(actor, tmp_path / "four.npz")
    with pytest.raises(ValueError, match=r"networks are for 2 players, and the model path=.*four.npz.* at 4 players"):
        SearchAgent(path=tmp_path / "four.npz", networks_path=NETWORKS[2])
    assert SearchAgent().table_sizes is None and SearchAgent(worlds=4).table_sizes is None


def _play(agent, players: int, games: int, **rules) -> list[warnings.WarningMessage]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        _moves(agent, players, games, **rules)
    return list(caught)


def test_settings_given_where_it_cannot_search_are_warned_about_once():
    """search:worlds=16 at 3 players, or below=0.5 at end_score 20, played as ppo without a
    word that the settings went unused."""
    (w,) = _play(SearchAgent(worlds=4, seed=0), 3, 2)
    assert w.category is UnseenTableSize
    assert str(w.message) == (
        "SearchAgent(worlds=4) does not search at a 3-player table (it has search networks at 2, 4 and 6 players "
        "only): what it was given (worlds=4) goes unused there, and it plays its policy's moves (said once)"
    )
    (w,) = _play(SearchAgent(below=0.5, seed=0), 4, 2, end_score=20)
    assert "does not search at end_score 20 (its networks were fitted on 40): what it was given (below=0.5)" in str(
        w.message
    )
    (w,) = _play(SearchAgent(worlds=4, below=1.0, seed=0), 2, 1, hand_size=5)
    assert "does not search in a round not dealt 6 cards a hand: what it was given (worlds=4, below=1)" in str(
        w.message
    )
    (w,) = _play(SearchAgent(networks_path=NETWORKS[4], seed=0), 4, 1, end_score=20)
    assert f"what it was given (the networks of networks_path={str(NETWORKS[4])!r})" in str(w.message)
    # nothing given, or where what was given holds: not a word (the default agent is as it was)
    assert _play(SearchAgent(seed=0), 3, 1) == _play(SearchAgent(seed=0), 4, 1, end_score=20) == []
    assert _play(SearchAgent(worlds=2, seed=0), 4, 1) == []
