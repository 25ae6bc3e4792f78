"""The batched training vec env applies the same rules, observations and rewards as
the Gymnasium env, and gives MaskablePPO correct masks."""

from __future__ import annotations

import copy

import numpy as np
import pytest
from sb3_contrib.common.maskable.utils import get_action_masks, is_masking_supported

from llama_env.engine import NUM_ACTIONS, IllegalActionError
from llama_env.gym_env import LlamaEnv
from llama_env.observation import OBS_SIZE, encode
from llama_env.rewards import game_rewards
from train.training.sb3.vec_env import BatchedLlamaVecEnv


class FirstLegal:
    """A deterministic opponent: the lowest legal action."""

    def act(self, observation: np.ndarray, action_mask: np.ndarray) -> int:
        return int(np.flatnonzero(action_mask)[0])


def random_policy(seed: int):
    rng = np.random.default_rng(seed)

    def fn(obs: np.ndarray, masks: np.ndarray) -> np.ndarray:
        assert obs.shape == (len(masks), OBS_SIZE) and obs.dtype == np.float32
        return np.array([rng.choice(np.flatnonzero(m)) for m in masks])

    return fn


def pick(rng: np.random.Generator, masks: np.ndarray) -> np.ndarray:
    return np.array([rng.choice(np.flatnonzero(m)) for m in masks])


def make_env(**kw) -> BatchedLlamaVecEnv:
    args = dict(num_envs=12, players=[2, 3, 4, 5, 6], opponents={"random": 1, "self": 1, "past": 1}, seed=3)
    args.update(kw)
    env = BatchedLlamaVecEnv(**args)
    env.set_policy("self", random_policy(1))
    env.set_past_policies([random_policy(2), random_policy(3)])
    return env


def test_masks_are_the_learners_legal_actions_and_obs_its_encoding():
    env = make_env()
    assert is_masking_supported(env)
    obs = env.reset()
    rng = np.random.default_rng(0)
    for _ in range(300):
        masks = get_action_masks(env)
        assert masks.shape == (env.num_envs, NUM_ACTIONS) and masks.dtype == bool
        for i, g in enumerate(env.games):
            seat = int(env.seats[i])
            assert not g.game_over and g.current_player == seat
            assert np.flatnonzero(masks[i]).tolist() == g.legal_actions()
            np.testing.assert_array_equal(obs[i], encode(g, seat))
        obs, rews, dones, infos = env.step(pick(rng, masks))
        assert obs.shape == (env.num_envs, OBS_SIZE) and rews.shape == dones.shape == (env.num_envs,)


def test_every_seat_kind_and_table_size_gets_played():
    env = make_env(num_envs=40)
    env.reset()
    sizes = {g.num_players for g in env.games}
    kinds = {k for ks in env.seat_kinds for k in ks if k is not None}
    assert sizes == {2, 3, 4, 5, 6}
    assert {"random", "self", "past#0", "past#1"} <= kinds
    for i in range(env.num_envs):
        assert env.seat_kinds[i][int(env.seats[i])] is None  # the learner's own seat


@pytest.mark.parametrize("reward", ["game", "round"])
def test_episodes_end_and_rewards_add_up(reward):
    env = make_env(reward=reward, num_envs=8)
    env.reset()
    rng = np.random.default_rng(1)
    totals = np.zeros(env.num_envs)
    finished = 0
    for _ in range(5000):
        _, rews, dones, infos = env.step(pick(rng, env.action_masks()))
        totals += rews
        for i in np.flatnonzero(dones):
            info = infos[i]
            seat = info["seat"]
            assert info["terminal_observation"].shape == (OBS_SIZE,)
            assert max(info["scores"]) >= 40
            assert info["episode"]["r"] == pytest.approx(totals[i], abs=1e-4)
            assert info["win_share"] == game_rewards(info["scores"])[seat]
            if reward == "game":
                assert totals[i] == pytest.approx(info["win_share"])
            else:  # minus the points taken plus the markers returned = minus the final score
                assert totals[i] == pytest.approx(-info["scores"][seat])
            totals[i] = 0.0
            finished += 1
        if finished >= 20:
            break
    assert finished >= 20


@pytest.mark.parametrize("reward", ["game", "round"])
def test_matches_the_gym_env_on_the_same_seed(reward):
    """One slot, a fixed seat and a deterministic opponent: the gym env dealt from an
    identically seeded generator gives the same observations, masks, rewards and ends."""
    vec = BatchedLlamaVecEnv(
        1, players=3, opponents={"first": 1.0}, reward=reward, seed=11, seat=1, agents={"first": FirstLegal()}
    )
    gym_env = LlamaEnv(num_players=3, opponents=FirstLegal(), seat=1, reward=reward)
    gym_env._np_random = copy.deepcopy(vec.game_rngs[0])  # same deals; reset(seed=None) keeps it
    obs_v = vec.reset()
    obs_g, info_g = gym_env.reset()
    rng = np.random.default_rng(5)
    episodes = 0
    for _ in range(3000):
        np.testing.assert_array_equal(obs_v[0], obs_g)
        np.testing.assert_array_equal(vec.action_masks()[0], gym_env.action_masks())
        a = int(pick(rng, vec.action_masks())[0])
        obs_v, r_v, d_v, infos = vec.step(np.array([a]))
        obs_g, r_g, term, trunc, info_g = gym_env.step(a)
        assert r_v[0] == pytest.approx(r_g)
        assert bool(d_v[0]) == term and not trunc
        if term:
            np.testing.assert_array_equal(infos[0]["terminal_observation"], obs_g)
            assert infos[0]["scores"] == info_g["scores"]
            episodes += 1
            if episodes == 3:
                break
            obs_g, info_g = gym_env.reset()
    assert episodes == 3


def test_same_seed_same_games():
    a, b = make_env(seed=9), make_env(seed=9)
    oa, ob = a.reset(), b.reset()
    np.testing.assert_array_equal(oa, ob)
    assert [g.to_dict() for g in a.games] == [g.to_dict() for g in b.games]
    c = make_env(seed=10)
    c.reset()
    assert [g.to_dict() for g in a.games] != [g.to_dict() for g in c.games]


def test_illegal_learner_action_raises():
    env = make_env(num_envs=2)
    env.reset()
    masks = env.action_masks()
    assert (~masks).any(axis=1).all()  # a fresh deal never makes all 9 actions legal
    bad = np.array([int(np.flatnonzero(~m)[0]) for m in masks])
    with pytest.raises(IllegalActionError):
        env.step(bad)


def test_illegal_opponent_action_is_an_error():
    class Cheat:
        def act(self, observation, action_mask):
            return int(np.flatnonzero(np.asarray(action_mask) == 0)[0])

    env = BatchedLlamaVecEnv(4, players=2, opponents="cheat", agents={"cheat": Cheat()}, seed=0, seat=1)
    with pytest.raises(IllegalActionError, match="agent 'cheat' at seat 0: action .* is illegal"):
        env.reset()


def test_policy_opponent_needs_a_policy():
    env = BatchedLlamaVecEnv(4, players=2, opponents="self", seed=0, seat=1)
    with pytest.raises(RuntimeError, match="set_policy"):
        env.reset()


@pytest.mark.parametrize(
    "kw, match",
    [
        ({"num_envs": 0}, "num_envs"),
        ({"players": [7]}, "num_players"),
        ({"opponents": {"random": -1}}, "opponents"),
        ({"reward": "points"}, "reward"),
        ({"seat": 3, "players": [2, 4]}, "seat"),
    ],
)
def test_bad_arguments_name_the_problem(kw, match):
    args = dict(num_envs=2, players=2, opponents="random")
    args.update(kw)
    with pytest.raises(ValueError, match=match):
        BatchedLlamaVecEnv(**args)
