"""Gymnasium ``Llama-v0``: registration, checkers, masks, options, and a short MaskablePPO run."""

from __future__ import annotations

import re
import warnings

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env as gym_check_env
from stable_baselines3.common.env_checker import check_env as sb3_check_env

import agents
import llama_env
from agents.random_agent import RandomAgent
from llama_env import LlamaEnv
from llama_env.engine import MAX_PENALTY, IllegalActionError, LlamaGame
from llama_env.observation import OBS_SIZE, encode
from llama_env.rewards import game_rewards, illegal_action_return


def run_episode(env: gym.Env, seed: int, action_seed: int = 0) -> tuple[list, float, dict]:
    """Play one episode with random legal actions; check the mask bookkeeping on the way."""
    rng = np.random.default_rng(action_seed)
    obs, info = env.reset(seed=seed)
    trace = [obs]
    total = 0.0
    for _ in range(100_000):
        mask = info["action_mask"]
        np.testing.assert_array_equal(env.unwrapped.action_masks(), mask)
        legal = np.flatnonzero(mask)
        obs, reward, terminated, truncated, info = env.step(int(legal[rng.integers(legal.size)]))
        trace.append((obs, reward))
        total += reward
        assert truncated is False
        if terminated:
            return trace, total, info
    raise AssertionError("episode did not end")


def test_registered_on_import():
    assert "Llama-v0" in gym.registry
    env = gym.make("Llama-v0", num_players=3, opponents="random")
    assert isinstance(env.unwrapped, LlamaEnv)
    obs, info = env.reset(seed=0)
    assert obs.shape == (OBS_SIZE,) and obs.dtype == np.float32
    assert env.observation_space.contains(obs)
    assert env.action_space == gym.spaces.Discrete(9)
    assert info["action_mask"].dtype == bool and info["action_mask"].shape == (9,)
    env.close()


# The checkers step with unmasked samples of the action space, so they run the env in
# its documented ``illegal_action="terminate"`` mode (the default raises instead).


@pytest.mark.parametrize("n", [2, 4, 6])
@pytest.mark.parametrize("render_mode", [None, "ansi", "rgb_array"])
def test_gymnasium_check_env(n, render_mode):
    # made through gym.make so that the env has a spec and every render mode is checked
    env = gym.make("Llama-v0", num_players=n, illegal_action="terminate", render_mode=render_mode)
    gym_check_env(env.unwrapped)


@pytest.mark.parametrize("n", [2, 4, 6])
def test_sb3_check_env(n):
    sb3_check_env(LlamaEnv(num_players=n, illegal_action="terminate"), warn=True)


def test_illegal_action_terminate_mode_ends_the_episode_with_a_penalty():
    env = LlamaEnv(num_players=3, illegal_action="terminate", reward="round")
    env.reset(seed=1)
    before = env.game.to_dict()
    illegal = int(np.flatnonzero(~env.action_masks())[0])
    obs, reward, terminated, truncated, info = env.step(illegal)
    assert (reward, terminated, truncated) == (-71.0, True, False)  # -(end_score + 31): nothing paid before
    assert info["illegal_action"] == illegal
    assert info["action_mask"].tolist() == [False] * 9
    assert env.game.to_dict() == before  # the engine never applied it
    with pytest.raises(RuntimeError, match="game is over"):
        env.step(8)
    env.reset(seed=2)
    assert env.action_masks().any()  # a new episode starts normally


@pytest.mark.parametrize(
    "wrap",
    [int, np.int64, np.int32, lambda a: np.array([a]), lambda a: np.array(a)],
    ids=["int", "int64", "int32", "array([a])", "array(a)"],
)
def test_the_illegal_action_in_info_is_a_plain_int_however_it_was_passed(wrap):
    """info["illegal_action"] held the object passed: np.array([3]) stayed an array."""
    env = LlamaEnv(num_players=3, illegal_action="terminate")
    env.reset(seed=1)
    illegal = int(np.flatnonzero(~env.action_masks())[0])
    *_, terminated, _, info = env.step(wrap(illegal))
    assert terminated and type(info["illegal_action"]) is int and info["illegal_action"] == illegal


@pytest.mark.parametrize("reward", ["game", "round", "shaped"])
def test_an_episode_an_illegal_move_ends_totals_less_than_any_finished_game(reward):
    """An illegal move paid -1 in every mode: in "round", where a whole game pays minus the
    final score (about -35), PPO learned to break a rule on its first move, and in "shaped"
    a learner far ahead kept its lead's rewards and took -1 on top (1.08 at end score 1000,
    more than a win). Now the episode adds up to illegal_action_return whatever was paid."""
    end_score = 1000 if reward == "shaped" else 60
    env = LlamaEnv(num_players=2, opponents="random", reward=reward, end_score=end_score, illegal_action="terminate")
    learner = agents.make("heuristic", seed=0)
    obs, info = env.reset(seed=0)
    total = 0.0
    # play on until the learner was paid what the old -1 went wrong with: points lost, a lead
    while {"game": env.game.round < 3, "round": total > -20, "shaped": total < 1.5}[reward]:
        obs, r, terminated, _, info = env.step(learner.act(obs, info["action_mask"]))
        total += r
        assert not terminated
    _, r, terminated, _, info = env.step(int(np.flatnonzero(~info["action_mask"])[0]))
    total += r
    assert terminated and "illegal_action" in info
    assert total == pytest.approx(illegal_action_return(reward, end_score), abs=1e-9)
    worst_finished = -(end_score - 1 + MAX_PENALTY) if reward == "round" else 0.0  # the lowest return of a whole game
    assert total < worst_finished


@pytest.mark.parametrize("bad", [np.float32(7.0), 9, -1, None, np.array([1, 2]), "7"])
def test_terminate_mode_still_raises_for_what_is_no_action_of_the_space(bad):
    """A float or None ended the episode with -1, so a bug in a policy's plumbing trained
    quietly on the penalty; the masked moves alone end it."""
    env = LlamaEnv(num_players=3, illegal_action="terminate")
    env.reset(seed=1)
    before = env.game.to_dict()
    with pytest.raises(IllegalActionError, match="ends the episode only for an action of Discrete"):
        env.step(bad)
    assert env.game.to_dict() == before
    legal = int(np.flatnonzero(env.action_masks())[0])
    env.step(np.int64(legal))  # the episode goes on
    masked = np.flatnonzero(~env.action_masks())
    if masked.size and not env.game.game_over:
        assert env.step(np.int64(masked[0]))[1:3] == (-1.0, True)


def test_reset_options_are_refused_not_ignored():
    env = LlamaEnv(num_players=4)
    with pytest.raises(ValueError, match=r"takes no reset options, got \['seat'\]"):
        env.reset(options={"seat": 2})
    assert env.reset(seed=0, options={})[1]["seat"] == env.reset(seed=0)[1]["seat"]


def test_llama_v1_refuses_another_observation_version():
    """gym.make("Llama-v1", obs_version=0) gave the 52-entry observation without a word."""
    with pytest.raises(ValueError, match='Llama-v1 is observation version 1.*"Llama-v0"'):
        gym.make("Llama-v1", obs_version=0)
    assert gym.make("Llama-v1", obs_version=1).observation_space.shape == gym.make("Llama-v1").observation_space.shape


@pytest.mark.parametrize("n", [2, 3, 4, 5, 6])
def test_action_masks_match_info_and_legality(n):
    env = LlamaEnv(num_players=n, seat=n - 1)
    _, _, info = run_episode(env, seed=n)
    assert env.game.game_over
    assert env.action_masks().tolist() == [False] * 9
    np.testing.assert_array_equal(info["action_mask"], env.action_masks())


def test_mask_equals_engine_legal_actions_each_step():
    env = LlamaEnv(num_players=4, seat=2)
    obs, info = env.reset(seed=7)
    rng = np.random.default_rng(7)
    while True:
        game = env.game
        assert game.current_player == 2  # the learner acts only on its turn
        assert info["action_mask"].tolist() == game.legal_mask()
        np.testing.assert_array_equal(obs, encode(game, 2))
        legal = game.legal_actions()
        obs, _, terminated, _, info = env.step(legal[int(rng.integers(len(legal)))])
        if terminated:
            break


@pytest.mark.parametrize("n", [2, 4])
def test_game_reward_is_the_win_share(n):
    for seed in range(4):
        env = LlamaEnv(num_players=n, seat=1)
        _, total, info = run_episode(env, seed=seed, action_seed=seed)
        assert info["scores"] == env.game.scores
        assert total == game_rewards(info["scores"])[1]


@pytest.mark.parametrize("reward", ["game", "round", "shaped"])
def test_every_reward_is_a_float(reward):
    """The game reward of a step where no round ended was the int 0 (a sum over no rounds)."""
    env = LlamaEnv(num_players=3, seat=0, reward=reward)
    env.reset(seed=1)
    rng = np.random.default_rng(1)
    kinds, terminated = set(), False
    while not terminated:
        legal = np.flatnonzero(env.action_masks())
        _, r, terminated, _, _ = env.step(int(rng.choice(legal)))
        kinds.add(type(r))
    assert kinds == {float}


@pytest.mark.parametrize("n", [2, 5])
def test_round_reward_sums_to_minus_final_score(n):
    for seed in range(4):
        env = LlamaEnv(num_players=n, seat=0, reward="round")
        _, total, info = run_episode(env, seed=seed, action_seed=seed)
        assert total == -float(info["scores"][0])


def test_same_seed_same_episode():
    a = run_episode(LlamaEnv(num_players=4, opponents="random"), seed=5)[0]
    b = run_episode(LlamaEnv(num_players=4, opponents="random"), seed=5)[0]
    assert len(a) == len(b)
    np.testing.assert_array_equal(a[0], b[0])
    for (oa, ra), (ob, rb) in zip(a[1:], b[1:], strict=True):
        np.testing.assert_array_equal(oa, ob)
        assert ra == rb


def test_seat_random_varies_the_seat():
    env = LlamaEnv(num_players=4, seat="random")
    seats = set()
    for seed in range(30):
        obs, info = env.reset(seed=seed)
        seats.add(info["seat"])
        assert env.seat == info["seat"]
        assert env.game.current_player == info["seat"]
        np.testing.assert_array_equal(obs, encode(env.game, info["seat"]))
    assert seats == {0, 1, 2, 3}


@pytest.mark.parametrize("seat", [0, 2, 3])
def test_fixed_seat(seat):
    env = LlamaEnv(num_players=4, seat=seat)
    for seed in range(3):
        _, info = env.reset(seed=seed)
        assert info["seat"] == seat and env.game.current_player == seat


class CountingAgent:
    """Plays the lowest legal action and counts its calls."""

    def __init__(self) -> None:
        self.calls = 0
        self.resets = 0

    def reset(self, seed=None) -> None:
        self.resets += 1

    def act(self, observation, action_mask) -> int:
        assert observation.shape == (OBS_SIZE,)
        assert action_mask.sum() >= 1
        self.calls += 1
        return int(np.flatnonzero(action_mask)[0])


def test_opponents_by_name_object_and_list():
    by_name = LlamaEnv(num_players=3, opponents="random")
    assert len(by_name.opponents) == 2 and all(isinstance(o, RandomAgent) for o in by_name.opponents)
    assert by_name.opponents[0] is not by_name.opponents[1]  # one agent per seat

    counting = CountingAgent()
    by_object = LlamaEnv(num_players=3, opponents=counting)
    assert by_object.opponents == [counting, counting]
    run_episode(by_object, seed=0)
    assert counting.calls > 0 and counting.resets >= 1

    left, right = CountingAgent(), RandomAgent(seed=1)
    mixed = LlamaEnv(num_players=3, opponents=[left, "random"], seat=0)
    assert mixed.opponents[0] is left and isinstance(mixed.opponents[1], RandomAgent)
    mixed.reset(seed=0)
    assert mixed.table.agents[1] is left  # opponents listed in turn order from the learner's left
    as_tuple = LlamaEnv(num_players=3, opponents=(right, left))
    assert as_tuple.opponents == [right, left]


def test_opponent_choosing_an_illegal_action_is_an_error():
    class Cheater:
        def act(self, observation, action_mask):
            return int(np.flatnonzero(action_mask == 0)[0]) if (action_mask == 0).any() else 99

    env = LlamaEnv(num_players=2, opponents=Cheater(), seat=1)
    with pytest.raises(IllegalActionError, match="agent 'Cheater' at seat 0: action .* is illegal"):
        env.reset(seed=0)


def test_an_opponent_that_raised_stops_the_episode_until_reset():
    """The error left the table at the opponent's turn: a caller who caught it and went on
    was shown the opponent's legal moves as the mask, and its next step was played at the
    opponent's seat, silently."""

    class OnceBad:
        calls = 0

        def act(self, observation, action_mask):
            OnceBad.calls += 1
            return 99 if OnceBad.calls == 2 else int(np.flatnonzero(action_mask)[0])

    env = LlamaEnv(num_players=2, opponents=OnceBad())
    obs, info = env.reset(seed=0)
    with pytest.raises(IllegalActionError, match="agent 'OnceBad' at seat 1"):
        for _ in range(3):
            obs, _, _, _, info = env.step(int(np.flatnonzero(info["action_mask"])[0]))
    game = env.game
    assert game.current_player == 1
    hand = game.hand_size_of(1)
    assert not env.action_masks().any()
    with pytest.raises(RuntimeError, match="stopped where an opponent raised.*call reset"):
        env.step(7)
    assert game.hand_size_of(1) == hand  # nothing was played at the opponent's seat
    obs, info = env.reset(seed=1)
    assert info["action_mask"].any() and env.game.current_player == env.seat
    env.step(int(np.flatnonzero(info["action_mask"])[0]))


def test_an_opponent_whose_reset_raised_stops_the_episode_until_reset():
    """reset() drew the new seat, then an opponent's reset raised while the table was
    dealt: the old table stayed with the new seat, and the next step played there."""

    class ResetsOnce:
        resets = 0

        def reset(self, seed=None):
            ResetsOnce.resets += 1
            if ResetsOnce.resets == 2:
                raise RuntimeError("no more")

        def act(self, observation, action_mask):
            return int(np.flatnonzero(action_mask)[0])

    env = LlamaEnv(num_players=4, opponents=[ResetsOnce(), "random", "random"], seat="random")
    env.reset(seed=0)
    with pytest.raises(RuntimeError, match="no more"):
        env.reset(seed=1)
    assert not env.action_masks().any()
    with pytest.raises(RuntimeError, match="call reset"):
        env.step(7)
    _, info = env.reset(seed=2)
    assert info["action_mask"].any() and env.game.current_player == env.seat


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"opponents": "no_such_agent"}, "opponents.*no_such_agent"),
        ({"opponents": ["random", "random"]}, "opponents: 4 players need 3 opponents, got 2"),
        ({"opponents": ["random"] * 4}, "opponents: 4 players need 3 opponents, got 4"),
        ({"opponents": 42}, "opponents"),
        ({"opponents": None}, "opponents"),
        ({"seat": 4}, "seat"),
        ({"seat": -1}, "seat"),
        ({"seat": "left"}, "seat"),
        ({"seat": True}, "seat"),
        ({"reward": "points"}, "reward.*'game'.*'round'"),
        ({"num_players": 1}, "num_players"),
        ({"num_players": 7}, "num_players"),
        ({"num_players": "4"}, "num_players"),
        ({"end_score": 0}, "end_score"),
        ({"hand_size": 14}, "hand_size"),
        ({"render_mode": "video"}, "render_mode"),
        ({"illegal_action": "ignore"}, "illegal_action"),
    ],
)
def test_bad_arguments_raise_value_error_naming_the_problem(kwargs, match):
    with pytest.raises(ValueError, match=match):
        LlamaEnv(**{"num_players": 4, **kwargs})
    with pytest.raises(ValueError, match=match), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # gym.make warns about an unknown render_mode first
        gym.make("Llama-v0", **{"num_players": 4, **kwargs})


def test_rule_options_reach_the_engine():
    env = gym.make("Llama-v0", num_players=5, end_score=12, hand_size=3)
    env.reset(seed=0)
    game = env.unwrapped.game
    assert isinstance(game, LlamaGame)
    assert (game.num_players, game.end_score, game.hand_size) == (5, 12, 3)
    assert [game.hand_size_of(p) for p in range(5)] == [3] * 5


def test_illegal_learner_action_raises_and_changes_nothing():
    env = LlamaEnv(num_players=3)
    env.reset(seed=1)
    before = env.game.to_dict()
    illegal = [a for a in range(9) if not env.action_masks()[a]]
    assert illegal  # a fresh deal always leaves some play action illegal
    for a in [*illegal, -1, 9]:
        with pytest.raises(IllegalActionError):
            env.step(a)
        assert env.game.to_dict() == before


@pytest.mark.parametrize("reward", ["round", "game", "shaped"])
def test_rounds_ended_before_the_learners_first_turn_are_paid(reward):
    # With one card each, an opponent may go out before the learner (last seat) acts;
    # with end_score 5 that may even end the game. No reward may be lost either way.
    early_round = early_game = 0
    for seed in range(120):
        env = LlamaEnv(num_players=4, seat=3, hand_size=1, end_score=5, reward=reward)
        _, info = env.reset(seed=seed)
        early_game += env.game.game_over
        early_round += env.game.round > 1
        if env.game.game_over:
            assert info["action_mask"].tolist() == [False] * 9
            assert info["scores"] == env.game.scores
        rng = np.random.default_rng(seed)
        total = 0.0
        while True:
            legal = np.flatnonzero(env.action_masks())
            action = int(legal[rng.integers(legal.size)]) if legal.size else 8
            _, r, terminated, _, info = env.step(action)
            total += r
            if terminated:
                break
        expected = -info["scores"][3] if reward == "round" else game_rewards(info["scores"])[3]
        assert total == pytest.approx(expected, abs=1e-12)  # shaped: the same total, up to rounding
    assert early_round > 0 and early_game > 0  # both situations were exercised


def test_step_before_reset_and_after_game_over_raise():
    env = LlamaEnv(num_players=2)
    with pytest.raises(RuntimeError, match="reset"):
        env.step(8)
    run_episode(env, seed=0)
    with pytest.raises(RuntimeError, match="game is over"):
        env.step(8)


def test_ansi_render_and_round_summaries():
    env = LlamaEnv(num_players=3, render_mode="ansi", seat=1)
    env.reset(seed=0)
    text = env.render()
    assert "top card" in text and "player_1 (you)" in text
    rng = np.random.default_rng(0)
    saw_summary = False
    for _ in range(1000):
        legal = np.flatnonzero(env.action_masks())
        _, _, terminated, _, _ = env.step(int(legal[rng.integers(legal.size)]))
        text = env.render()
        saw_summary |= "over:" in text
        if terminated:
            assert "Game over" in text
            break
    assert saw_summary


@pytest.mark.parametrize("seat", [1, "random"])
def test_the_rendered_round_summary_marks_the_learner_as_the_table_does(seat):
    """The table said "player_1 (you)" and the round summary under it marked no seat."""
    env = LlamaEnv(num_players=3, render_mode="ansi", seat=seat)
    summaries = 0
    for episode in range(3):  # a seat drawn per episode (seat="random") is followed
        env.reset(seed=episode)
        me = f"player_{env.seat} (you)"
        for _ in range(300):
            legal = np.flatnonzero(env.action_masks())
            _, _, terminated, _, _ = env.step(int(legal[-1]))  # quit when it may: rounds end soon
            text = env.render()
            for summary in re.findall(r"^Round \d+ over:.*(?:\n  .*)+", text, re.M):
                rows = [line for line in summary.splitlines()[1:] if "->" in line]
                assert [row.strip().startswith(me) for row in rows].count(True) == 1, summary
                assert sum("(you)" in row for row in rows) == 1, summary
                summaries += 1
            if terminated:
                break
    assert summaries >= 3


def test_a_refused_step_leaves_the_rendered_round_summary():
    """An illegal action leaves the game untouched, and render() too: the round summary it
    showed was cleared before the action was checked. (An env audit.)"""
    env = LlamaEnv(num_players=3, render_mode="ansi", seat=1)
    env.reset(seed=0)
    for _ in range(1000):
        legal = np.flatnonzero(env.action_masks())
        env.step(int(legal[-1]))  # quit when it may: rounds end soon
        if "over:" in env.render():
            break
    shown = env.render()
    assert "over:" in shown
    illegal = int(np.flatnonzero(~env.action_masks())[0])
    with pytest.raises(IllegalActionError):
        env.step(illegal)
    assert env.render() == shown


def test_maskable_ppo_learns_briefly(tmp_path, monkeypatch):
    import torch
    from sb3_contrib import MaskablePPO

    monkeypatch.setenv("SB3_LOGDIR", str(tmp_path))  # SB3's own logger folder, else a new one in /tmp a run
    torch.set_num_threads(1)
    env = gym.make("Llama-v0", num_players=3, reward="round")
    model = MaskablePPO(
        "MlpPolicy",
        env,
        n_steps=256,
        batch_size=128,
        n_epochs=2,
        policy_kwargs={"net_arch": [32, 32]},
        seed=0,
        device="cpu",
        verbose=0,
    )
    model.learn(total_timesteps=2048)
    assert model.num_timesteps >= 2048
    obs, info = env.reset(seed=0)
    action, _ = model.predict(obs, action_masks=info["action_mask"], deterministic=True)
    assert info["action_mask"][int(action)]
    assert llama_env.IllegalActionError is IllegalActionError


def test_a_seed_that_is_not_a_non_negative_integer_is_named():
    env = LlamaEnv(num_players=2)
    for seed in (True, -1, 1.5):  # gymnasium took True as the seed 1
        with pytest.raises(ValueError, match=f"seed must be a non-negative integer, got {seed}"):
            env.reset(seed=seed)
    assert env.reset(seed=np.int64(4))[1]["seat"] == env.reset(seed=4)[1]["seat"]


def test_the_action_space_samples_with_the_envs_own_boolean_mask():
    """Gymnasium's documented env.action_space.sample(mask=info["action_mask"]) failed:
    the env's mask is boolean (as MaskablePPO reads it) and Gymnasium wants int8."""
    env = gym.make("Llama-v0", num_players=3)
    _, info = env.reset(seed=2)
    for seed in range(20):
        env.action_space.seed(seed)
        chosen = env.action_space.sample(mask=info["action_mask"])
        env.action_space.seed(seed)
        assert chosen == env.action_space.sample(mask=info["action_mask"].astype(np.int8))  # the same numbers
        assert info["action_mask"][chosen]
    assert env.action_space == gym.spaces.Discrete(9) and env.action_space.contains(int(chosen))


def test_an_env_spec_written_as_json_makes_the_env_again():
    """Gymnasium's EnvSpec.to_json writes a Rules value and an AgentSpec as plain
    mappings; gym.make refused them, so a logged spec could not be replayed."""
    from gymnasium.envs.registration import EnvSpec

    from llama_env import Rules
    from llama_env.agent import AgentSpec

    opponents = [AgentSpec("cautious", {"threshold": 4}), "random"]
    env = gym.make("Llama-v0", rules=Rules(3, end_score=30), opponents=opponents)
    again = gym.make(EnvSpec.from_json(env.spec.to_json()))
    assert again.unwrapped.rules == Rules(3, end_score=30)
    assert [o.threshold for o in again.unwrapped.opponents[:1]] == [4]
    first, _ = env.reset(seed=3)
    second, _ = again.reset(seed=3)
    assert np.array_equal(first, second)
    with pytest.raises(TypeError, match="rules as a mapping .*: unknown field 'players'"):
        gym.make("Llama-v0", rules={"players": 3})
    with pytest.raises(TypeError, match="rules as a mapping .*: num_players is missing"):
        gym.make("Llama-v0", rules={"end_score": 30})
    for bad in ({"name": "cautious", "params": None}, {"name": ["cautious"]}, {"name": "random", "seed": 1}):
        with pytest.raises(ValueError, match=r"opponents: an opponent given as a mapping is an AgentSpec\'s JSON form"):
            gym.make("Llama-v0", opponents=bad)


def test_the_envs_no_longer_export_the_illegal_moves_total_as_its_reward():
    """``ILLEGAL_ACTION_REWARD`` was in both envs' ``__all__`` beside ``illegal_action=``,
    as what an illegal step pays; it is now the episode's total in ``"game"`` and
    ``"shaped"`` (the step pays that minus what was paid before), and no total in
    ``"round"``. Code that imports it from there still finds it."""
    import llama_env.aec_env
    import llama_env.gym_env

    for module in (llama_env.gym_env, llama_env.aec_env):
        assert "ILLEGAL_ACTION_REWARD" not in module.__all__
        assert module.ILLEGAL_ACTION_REWARD == illegal_action_return("game", 40) == -1.0
