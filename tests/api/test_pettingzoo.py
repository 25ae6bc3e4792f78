"""PettingZoo AEC conformance and the env's own promises (docs/env.md, the two environments)."""

from __future__ import annotations

import re
from functools import partial

import numpy as np
import pytest
from conftest import make_game
from pettingzoo.test import api_test, render_test, seed_test

import llama_env
from llama_env.engine import MAX_PENALTY, Action, IllegalActionError, LlamaGame
from llama_env.observation import OBS_SIZE, agent_mask, encode
from llama_env.rewards import game_rewards, illegal_action_return

PLAYER_COUNTS = [2, 3, 4, 5, 6]


def play_out(e, seed: int, reward_totals: dict[str, float] | None = None) -> None:
    """Run a whole game with random legal actions through the AEC loop."""
    rng = np.random.default_rng(seed)
    for agent in e.agent_iter(max_iter=100_000):
        obs, reward, terminated, truncated, _ = e.last()
        if reward_totals is not None:
            reward_totals[agent] += reward
        if terminated or truncated:
            action = None
        else:
            legal = np.flatnonzero(obs["action_mask"])
            action = int(legal[rng.integers(legal.size)])
        e.step(action)


@pytest.mark.parametrize("n", PLAYER_COUNTS)
def test_api_test(n):
    api_test(llama_env.env(num_players=n), num_cycles=300)


@pytest.mark.parametrize("n", [2, 4])
def test_api_test_raw_env(n):
    api_test(llama_env.raw_env(num_players=n), num_cycles=200)


@pytest.mark.parametrize("n", PLAYER_COUNTS)
def test_seed_test(n):
    seed_test(partial(llama_env.env, num_players=n), num_cycles=200)


@pytest.mark.parametrize("n", PLAYER_COUNTS)
def test_render_test(n, capsys):
    render_test(partial(llama_env.env, num_players=n))
    assert "top card" in capsys.readouterr().out  # the "human" mode printed the table


def test_render_modes_declared():
    assert llama_env.raw_env().metadata["render_modes"] == ["ansi", "human", "rgb_array"]
    with pytest.raises(ValueError, match="render_mode"):
        llama_env.raw_env(render_mode="video")


@pytest.mark.parametrize("n", [2, 6])
def test_rgb_array_is_the_picture_of_the_acting_seat(n):
    e = llama_env.env(num_players=n, render_mode="rgb_array")
    e.reset(seed=n)
    frame = e.render()
    assert isinstance(frame, np.ndarray) and frame.dtype == np.uint8 and frame.ndim == 3 and frame.shape[2] == 3
    assert frame.shape[:2] == (500, 760) and frame.std() > 10  # a picture, not a blank canvas
    e.step(int(np.flatnonzero(e.last()[0]["action_mask"])[-1]))
    assert not np.array_equal(e.render(), frame)  # the next seat's view


def test_rgb_array_warns_once_when_no_font_is_found(monkeypatch):
    """Without a system font the pictures had no text at all, and nothing said so."""
    import warnings

    import resvg_py

    from llama_env import render_svg

    real = resvg_py.svg_to_bytes
    monkeypatch.setattr(render_svg, "_FONTS_CHECKED", False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        render_svg._warn_without_fonts(real)  # this machine has one: no warning
    monkeypatch.setattr(resvg_py, "svg_to_bytes", lambda **kw: real(**kw, skip_system_fonts=True))
    e = llama_env.env(num_players=3, render_mode="rgb_array")
    e.reset(seed=0)
    with pytest.warns(RuntimeWarning, match="found no font.*fonts-dejavu-core"):
        e.render()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        e.render()  # once


@pytest.mark.parametrize("n", PLAYER_COUNTS)
def test_agents_and_spaces(n):
    e = llama_env.env(num_players=n)
    e.reset(seed=1)
    assert e.possible_agents == [f"player_{i}" for i in range(n)]
    assert e.agents == e.possible_agents
    game = e.unwrapped.game
    assert isinstance(game, LlamaGame)
    assert game.num_players == n
    assert e.agent_selection == f"player_{game.current_player}" == "player_0"
    for a in e.possible_agents:
        assert e.action_space(a).n == 9
        assert e.observation_space(a)["observation"].shape == (OBS_SIZE,)
        assert e.observation_space(a)["action_mask"].shape == (9,)


@pytest.mark.parametrize("n", [2, 4, 6])
def test_observe_masks_only_the_player_to_act(n):
    e = llama_env.env(num_players=n)
    e.reset(seed=3)
    rng = np.random.default_rng(0)
    for _ in range(30):
        game = e.unwrapped.game
        if game.game_over:
            break
        for seat, agent in enumerate(e.possible_agents):
            o = e.observe(agent)
            assert o["action_mask"].dtype == np.int8 and o["action_mask"].shape == (9,)
            np.testing.assert_array_equal(o["observation"], encode(game, seat))
            if agent == e.agent_selection:
                assert o["action_mask"].tolist() == [int(m) for m in game.legal_mask()]
                assert o["action_mask"].sum() >= 1
            else:
                assert o["action_mask"].tolist() == [0] * 9
        legal = game.legal_actions()
        e.step(legal[int(rng.integers(len(legal)))])


def test_mask_is_all_zero_once_the_game_is_over():
    e = llama_env.raw_env(num_players=3, end_score=1)
    e.reset(seed=0)
    play_out(e, 0)
    game = e.game
    assert game.game_over
    for agent in e.possible_agents:
        assert e.observe(agent)["action_mask"].tolist() == [0] * 9


def test_raw_env_raises_on_illegal_action_and_leaves_the_game_unchanged():
    e = llama_env.raw_env(num_players=3)
    e.reset(seed=0)
    e.game = make_game(num_players=3, hands=[[1, 2], [3], [4]], top=5, draw_pile=[])
    e.agent_selection = "player_0"
    before = e.game.to_dict()
    for action in (0, 1, 2, 3, 4, 5, 6, 7):  # nothing fits on a 5, and the draw pile is empty
        with pytest.raises(IllegalActionError) as info:
            e.step(action)
        assert info.value.legal == [8]
        assert e.game.to_dict() == before
        assert e.agent_selection == "player_0"
    e.step(Action.QUIT)
    assert e.agent_selection == "player_1"


def test_setting_a_game_gives_the_turn_to_its_current_player():
    """The fast wrapper chain applied player_0's move to the new game's current seat."""
    e = llama_env.env(num_players=3)
    e.reset(seed=0)
    assert e.agent_selection == "player_0"
    e.unwrapped.game = make_game(num_players=3, hands=[[1, 2], [3], [4]], top=5, current_player=2)
    assert e.agent_selection == "player_2"
    assert e.observe("player_2")["action_mask"].any() and not e.observe("player_0")["action_mask"].any()


@pytest.mark.parametrize("make", [llama_env.env, llama_env.raw_env])
def test_a_game_set_before_any_reset_is_played(make):
    """Through llama_env.env the setter took the game, and then every call refused it:
    agent_selection "cannot be accessed before reset", last() and agent_iter() "reset()
    needs to be called"; the raw env played it."""
    game = make_game(num_players=3, hands=[[1, 2], [3], [4]], top=5, current_player=2)
    twin = LlamaGame.from_dict(game.to_dict())
    e = make(num_players=3)
    e.unwrapped.game = game
    assert e.agent_selection == "player_2"
    for agent in e.agent_iter(8):
        obs, _, term, trunc, _ = e.last()
        if term or trunc:
            e.step(None)
            continue
        assert agent == f"player_{twin.current_player}"
        action = int(np.flatnonzero(obs["action_mask"])[0])
        twin.step(action)
        e.step(action)
    assert e.unwrapped.game.to_dict() == twin.to_dict() and twin.round_moves > 0


def test_a_game_set_must_fit_the_env_and_starts_the_api_state_afresh():
    """The setter took a game of other rules (observations left the space, env.rules
    misreported them), played nothing when set after a finished game, and left the agents
    live with empty masks when the game set was over. (An env audit.)"""
    e = llama_env.env(num_players=3)
    e.reset(seed=0)
    with pytest.raises(ValueError, match=r"the game's rules \(3 players, end score 2, .*\) are not this env's"):
        e.unwrapped.game = LlamaGame(3, end_score=2, rng=0)
    with pytest.raises(ValueError, match="are not this env's"):
        e.unwrapped.game = LlamaGame(4, rng=0)
    with pytest.raises(TypeError, match="must be a llama_env.LlamaGame"):
        e.unwrapped.game = "a game"
    for agent in e.agent_iter():  # to the end: every agent steps out
        _, _, term, trunc, _ = e.last()
        e.step(None if term or trunc else int(np.flatnonzero(e.observe(agent)["action_mask"])[-1]))
    assert e.agents == []
    e.unwrapped.game = LlamaGame(3, rng=5)
    assert e.agents == e.possible_agents and not any(e.terminations.values())
    for moves, agent in enumerate(e.agent_iter()):  # it plays again
        if moves == 5:
            break
        e.step(int(np.flatnonzero(e.observe(agent)["action_mask"])[-1]))
    assert moves == 5 and e.unwrapped.game.to_dict() != LlamaGame(3, rng=5).to_dict()
    over = LlamaGame(3, rng=5)
    while not over.game_over:
        over.step(over.legal_actions()[-1])
    e.unwrapped.game = over
    assert all(e.terminations.values()) and e.last()[2]
    assert not any(e.observe(a)["action_mask"].any() for a in e.possible_agents)


def test_an_agent_out_after_an_illegal_move_is_shown_no_legal_move():
    """PettingZoo's wrapper ends the game for an illegal move: the offender's mask still
    listed legal moves, and a loop acting on the mask failed ("the only valid action is
    None"). Every mask is zero once an agent is out."""
    e = llama_env.env(num_players=3)
    e.reset(seed=0)
    e.step(int(np.flatnonzero(e.observe(e.agent_selection)["action_mask"] == 0)[0]))  # PettingZoo prints a warning
    for agent in e.agent_iter():
        _, _, term, trunc, _ = e.last()
        assert term or trunc
        assert not e.observe(agent)["action_mask"].any()
        e.step(None)


def test_a_game_set_is_judged_by_its_own_masks_not_the_last_game_s():
    """PettingZoo's illegal-move wrapper judged a move by the observation it had last
    handed out: after a game was set, a move illegal there raised instead of ending the
    game with the penalty (and an illegal move of the old game kept the slow path). And
    once every agent stepped out, the offender's mask showed its legal moves again."""
    e = llama_env.env(num_players=3)
    e.reset(seed=0)
    offender = e.agent_selection
    e.step(int(np.flatnonzero(e.observe(offender)["action_mask"] == 0)[0]))
    for _ in e.agent_iter():
        e.step(None)
    assert not e.observe(offender)["action_mask"].any()
    e.reset(seed=0)
    assert e.observe(e.agent_selection)["action_mask"][7]  # the wrapper keeps this observation
    e.unwrapped.game = make_game(num_players=3, hands=[[1, 2], [3], [4]], top=5, draw_pile=[], current_player=0)
    e.step(Action.DRAW)  # illegal in the game set: the empty pile
    assert all(e.terminations.values()) and e.rewards["player_0"] == -1


def test_the_action_space_samples_an_agent_s_boolean_mask_too():
    e = llama_env.env(num_players=3)
    e.reset(seed=0)
    space = e.action_space(e.agent_selection)
    space.seed(1)
    mask = e.observe(e.agent_selection)["action_mask"]
    legal = set(np.flatnonzero(mask).tolist())
    assert {int(space.sample(mask.astype(bool))) for _ in range(50)} <= legal
    assert {int(space.sample(agent_mask(sorted(legal)))) for _ in range(50)} <= legal


def test_a_bool_seed_is_refused():
    e = llama_env.env(num_players=3)
    with pytest.raises(TypeError, match="seed must be an integer or None, got True"):
        e.reset(seed=True)


@pytest.mark.parametrize("offender_seat", [0, 1])
def test_wrapped_env_illegal_action_ends_the_game_with_minus_one(offender_seat, caplog):
    e = llama_env.env(num_players=3)
    e.reset(seed=5)
    if offender_seat == 1:
        e.step(Action.QUIT)
    offender = e.agent_selection
    assert offender == f"player_{offender_seat}"
    mask = e.observe(offender)["action_mask"]
    illegal = int(np.flatnonzero(mask == 0)[0])
    e.step(illegal)
    assert "Illegal move" in caplog.text
    assert all(e.terminations.values())
    assert e.rewards[offender] == -1.0
    assert all(r == 0 for a, r in e.rewards.items() if a != offender)
    totals = dict.fromkeys(e.possible_agents, 0.0)
    play_out(e, 0, totals)
    assert e.agents == []
    assert totals[offender] == -1.0
    assert sum(totals.values()) == -1.0


@pytest.mark.parametrize("reward", ["game", "round", "shaped"])
def test_an_illegal_move_ends_the_offender_s_game_below_any_finished_game(reward):
    """The wrapper paid -1 in every mode: with reward="round", where a whole game pays
    minus the final score, an illegal move was a shortcut, and with "shaped" an agent ahead
    kept its lead's rewards on top of the -1. Its game now adds up to illegal_action_return."""
    end_score = 100
    e = llama_env.env(num_players=3, reward=reward, end_score=end_score)
    e.reset(seed=3)
    rng = np.random.default_rng(3)
    totals = dict.fromkeys(e.possible_agents, 0.0)
    offender = None
    for agent in e.agent_iter(max_iter=100_000):
        obs, r, terminated, truncated, _ = e.last()
        totals[agent] += r
        if terminated or truncated:
            e.step(None)
            continue
        mask = obs["action_mask"]
        # the first agent that was paid what the old -1 went wrong with: points lost, a lead
        paid = {"game": e.unwrapped.game.round >= 3, "round": totals[agent] < -10, "shaped": totals[agent] > 0.05}
        if offender is None and paid[reward]:
            offender = agent
            e.step(int(np.flatnonzero(mask == 0)[0]))
        else:
            e.step(int(rng.choice(np.flatnonzero(mask))))
    assert offender is not None, "the game ended before the illegal move"
    assert totals[offender] == pytest.approx(illegal_action_return(reward, end_score), abs=1e-9)
    worst_finished = -(end_score - 1 + MAX_PENALTY) if reward == "round" else 0.0  # the lowest return of a whole game
    assert totals[offender] < worst_finished


@pytest.mark.parametrize("n", [2, 4])
def test_shaped_rewards_add_up_to_the_game_reward(n):
    e = llama_env.env(num_players=n, reward="shaped")
    e.reset(seed=n)
    totals = dict.fromkeys(e.possible_agents, 0.0)
    play_out(e, n, totals)
    shares = game_rewards(e.unwrapped.game.scores)
    assert [totals[a] for a in e.possible_agents] == pytest.approx(shares, abs=1e-12)


@pytest.mark.parametrize("n", [2, 3, 5])
@pytest.mark.parametrize("hand_size", [6, 1])
def test_round_rewards_sum_to_minus_final_scores(n, hand_size):
    """With one card a hand, two rounds can end before a seat moves again: its reward
    through ``last()`` must hold both (an engine that kept only the newer passed at 6)."""
    for seed in range(3 if hand_size == 6 else 12):
        e = llama_env.env(num_players=n, reward="round", hand_size=hand_size)
        e.reset(seed=seed)
        totals = dict.fromkeys(e.possible_agents, 0.0)
        play_out(e, seed, totals)
        game = e.unwrapped.game
        assert game.game_over and e.agents == []
        assert [totals[a] for a in e.possible_agents] == [-float(s) for s in game.scores]


@pytest.mark.parametrize("n", [2, 4, 6])
def test_game_rewards_pay_the_winners_once(n):
    e = llama_env.env(num_players=n)
    e.reset(seed=11)
    totals = dict.fromkeys(e.possible_agents, 0.0)
    play_out(e, 11, totals)
    scores = e.unwrapped.game.scores
    assert [totals[a] for a in e.possible_agents] == game_rewards(scores)
    assert sum(totals.values()) == pytest.approx(1.0)


def test_round_result_in_infos_when_a_round_ends():
    e = llama_env.raw_env(num_players=2)
    e.reset(seed=0)
    e.game = make_game(num_players=2, hands=[[3], [7, 7]], top=3)
    e.agent_selection = "player_0"
    e.step(Action.PLAY_3)
    result = e.infos["player_1"]["round_result"]
    assert result.went_out == 0 and result.penalties == (0, 10)
    assert e.agent_selection == "player_0"  # the player who went out starts round 2
    assert e.game.round == 2


def test_options_are_passed_to_the_engine():
    e = llama_env.raw_env(num_players=5, end_score=12, hand_size=3, random_first_player=True)
    starters = set()
    for seed in range(12):
        e.reset(seed=seed)
        assert e.game.end_score == 12 and e.game.hand_size == 3
        assert [e.game.hand_size_of(p) for p in range(5)] == [3] * 5
        starters.add(e.agent_selection)
    assert len(starters) > 1


# ----------------------------------------------------------------- rendering


def _render_env():
    e = llama_env.raw_env(num_players=3, render_mode="ansi")
    e.reset(seed=0)
    e.game = make_game(
        num_players=3,
        hands=[[3, 7, 7], [2, 5], [1, 6, 6, 6]],
        top=3,
        quit=[False, False, True],
        scores=[12, 0, 5],
        draw_pile=[4, 4, 6],
    )
    e.agent_selection = "player_0"
    return e


def test_ansi_render_shows_public_facts_and_own_hand_only():
    e = _render_env()
    text = e.render()
    assert text.splitlines() == [
        "Round 2 | top card: 3 | draw pile: 3",
        "* player_0 (you)     score  12  in    3 L L",
        "  player_1           score   0  in    2 cards",
        "  player_2           score   5  quit  4 cards",
    ]
    e.step(Action.PLAY_3)  # now player_1 is to act: their hand shows, player_0's is hidden
    lines = e.render().splitlines()
    assert lines[1] == "  player_0           score  12  in    2 cards"
    assert lines[2] == "* player_1 (you)     score   0  in    2 5"
    assert lines[3] == "  player_2           score   5  quit  4 cards"
    assert "6" not in e.render()  # player_2's sixes never show


def test_ansi_render_other_seats_show_sizes_only_in_random_games():
    e = llama_env.raw_env(num_players=4, render_mode="ansi")
    e.reset(seed=2)
    rng = np.random.default_rng(2)
    other = re.compile(r"^  player_\d +score +\d+  (in  |quit)  \d+ cards$")
    for _ in range(40):
        game = e.game
        if game.game_over:
            break
        lines = e.render().splitlines()
        table = lines[-5:]
        for seat, line in enumerate(table[1:]):
            if seat != game.current_player:
                assert other.match(line), line
        legal = game.legal_actions()
        e.step(legal[int(rng.integers(len(legal)))])


def test_ansi_render_shows_a_round_summary_at_round_end():
    e = _render_env()
    e.game = make_game(num_players=3, hands=[[3], [2, 5], [1, 6, 6, 6]], top=3, scores=[12, 0, 5])
    e.step(Action.PLAY_3)
    text = e.render()
    assert text.startswith(
        "Round 2 over: player_0 went out.\n"
        "  player_0            -10  -> 2    went out\n"
        "  player_1             +7  -> 7    held 2 5\n"
        "  player_2             +7  -> 12   held 1 6 6 6\n"
    )
    assert "Round 3 | top card:" in text
    e.step(Action.QUIT)
    assert "over" not in e.render()  # the summary is shown once


def test_ansi_render_announces_the_winner_at_game_end():
    e = _render_env()
    e.game = make_game(num_players=3, hands=[[3], [2, 5], [7]], top=3, scores=[12, 0, 35])
    e.step(Action.PLAY_3)
    text = e.render()
    assert "Game over: player_0 wins with 2." in text
    assert "top card" not in text


def test_human_render_prints(capsys):
    e = llama_env.raw_env(num_players=2, render_mode="human")
    e.reset(seed=0)
    assert e.render() is None
    assert "top card" in capsys.readouterr().out


def test_a_bad_seed_is_named():
    env = llama_env.env(num_players=4)
    with pytest.raises(ValueError, match="seed must be a non-negative integer, got -1"):
        env.reset(seed=-1)  # was numpy's message, naming no argument
    env.reset(seed=np.int64(3), options={})
    first = env.observe(env.agent_selection)["observation"]
    env.reset(seed=3)
    np.testing.assert_array_equal(first, env.observe(env.agent_selection)["observation"])
