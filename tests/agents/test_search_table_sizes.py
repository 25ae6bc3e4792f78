"""What the search agent plays where it does not search, at each table size, and the
table sizes it says it was made for."""

from __future__ import annotations

import subprocess
import sys
import warnings

import numpy as np
import pytest
from test_search_agent import _Recorder

import agents
from agents.heuristic import HeuristicAgent
from agents.ppo import SHIPPED, load_actor, save_actor
from agents.search import NETWORKS, SearchAgent
from llama_env.agent import UnseenTableSize, unmade_for
from llama_env.engine import LlamaGame, Rules
from llama_env.observation import action_mask, encode_v1
from llama_env.table import Table
from train.evaluation import evaluate


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


def test_networks_given_go_unused_at_another_table_size_and_it_says_so_truly(tmp_path):
    """search:networks_path=<heads-up networks> at a 4-player table searched with the shipped
    4-player networks, the file given unused, without a word; then it said it "was trained
    at 2 players only; it plays this 4-player table as a table size it never saw", where it
    plays exactly as plain search there. It says the networks go unused, and its table
    sizes are its model's alone."""
    two = SearchAgent(networks_path=NETWORKS[2], worlds=2, seed=0)
    assert two.table_sizes is None and unmade_for([two, *["heuristic"] * 3], 4) == []
    with pytest.warns(UnseenTableSize, match="fitted for 2 players, go unused there"):  # as it plays, too
        assert _moves(two, 4, 1) == _moves(SearchAgent(worlds=2, seed=0), 4, 1)
    with pytest.warns(UnseenTableSize) as caught:
        evaluate([SearchAgent(networks_path=NETWORKS[2]), *["heuristic"] * 3], 2, workers=1)
    assert [str(w.message) for w in caught] == [
        f"SearchAgent(networks_path={str(NETWORKS[2])!r}) searches a 4-player table with the shipped 4-player "
        f"networks, as plain search does: the networks of networks_path={str(NETWORKS[2])!r}, fitted for 2 "
        "players, go unused there (said once)"
    ]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # at their own size: not a word
        evaluate([SearchAgent(networks_path=NETWORKS[2]), "heuristic"], 2, workers=1)
    actor = load_actor(SHIPPED["ppo"][4])
    actor.table_sizes = (2, 4)
    save_actor(actor, tmp_path / "both.npz")
    assert SearchAgent(path=tmp_path / "both.npz", networks_path=NETWORKS[4]).table_sizes == (2, 4)
    actor.table_sizes = (4,)
    save_actor(actor, tmp_path / "four.npz")
    with pytest.raises(ValueError, match=r"networks are for 2 players, and the model path=.*four.npz.* at 4 players"):
        SearchAgent(path=tmp_path / "four.npz", networks_path=NETWORKS[2])
    assert SearchAgent().table_sizes is None and SearchAgent(worlds=4).table_sizes is None


@pytest.mark.parametrize(("workers", "batched"), [(2, False), (1, False), (1, True)])
def test_evaluation_says_once_in_its_own_process_that_the_settings_go_unused(workers, batched, enough_cores):
    """The agent said it as it played, so in each worker process: the command line printed
    it once a worker, and a Python caller catching warnings saw nothing with workers > 1."""
    table = ["search:worlds=4", "heuristic", "heuristic"]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        evaluate(table, 4, workers=workers, batched=batched)
    assert [(w.category, str(w.message)) for w in caught] == [
        (
            UnseenTableSize,
            "SearchAgent(worlds=4) does not search at a 3-player table (it has search networks at 2, 4 and 6 "
            "players only): what it was given (worlds=4) goes unused there, and it plays its policy's moves "
            "(said once)",
        )
    ]


def test_the_command_line_prints_it_once_however_many_workers():
    """Each worker process printed it, as its agent met the table."""
    args = ["eval", "--agents", "search:worlds=4,heuristic,heuristic", "--games", "16", "--workers", "2", "--no-batch"]
    done = subprocess.run(
        [sys.executable, "-m", "train.cli", *args], capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr.count("does not search at a 3-player table") == 1, done.stderr


def test_forewarn_says_from_the_rules_what_the_agent_would_say_at_the_table():
    """Evaluation asks before any game; the agent then says nothing as it plays."""
    assert SearchAgent(worlds=4).forewarn(Rules(4)) is None and SearchAgent().forewarn(Rules(3)) is None
    end = SearchAgent(below=0.5).forewarn(Rules(4, end_score=20))
    assert type(end) is UserWarning and "does not search at end_score 20" in str(end)
    hand = SearchAgent(worlds=4).forewarn(Rules(2, hand_size=5))
    assert hand is not None and "does not search in a round not dealt 6 cards a hand" in str(hand)
    told = SearchAgent(worlds=4, seed=0)
    assert isinstance(told.forewarn(Rules(3)), UnseenTableSize)
    assert told.forewarn(Rules(3)) is None and _play(told, 3, 1) == []  # said: not again


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


def test_an_observation_of_no_game_is_refused_not_taken_for_another_hand_size():
    """Any observation public_state could not read was warned about as "not dealt 6 cards a
    hand" and played unsearched: a valid heads-up observation with its hand zeroed by mistake
    passed so, without a word of what was wrong."""
    game = LlamaGame(2, rng=1)
    while len(game.legal_actions()) < 2:
        game.step(game.legal_actions()[0])
    obs, mask = encode_v1(game, game.current_player), action_mask(game.legal_actions())
    zeroed = np.where(np.arange(len(obs)) < 8, 0, obs).astype(np.float32)
    with pytest.raises(ValueError, match="the observation fits no round of the game at any hand size: the observation"):
        SearchAgent(below=1.0, worlds=8, seed=0).act(zeroed, mask)
    with pytest.raises(ValueError, match=r"observation 1 fits no round of the game at any hand size"):
        SearchAgent(below=1.0, worlds=8, seed=0).act_batch(np.stack([obs, zeroed]), np.stack([mask, mask]))
    searched = SearchAgent(below=1.0, worlds=8, seed=0)
    searched.act(obs, mask)
    assert searched.searched == 1
