"""Observation version 1 through every door: Llama-v1, the AEC env, the table driver
(each agent gets the version it reads), the PPO agent, the training vec env, the config."""

from __future__ import annotations

import re

import gymnasium as gym
import numpy as np
import pytest
from conftest import random_decisions

import agents
import llama_env
from agents.ppo import Actor, PPOAgent
from llama_env.agent import seat_member
from llama_env.batch import BatchGame
from llama_env.engine import LlamaGame
from llama_env.observation import OBS_SIZE, OBS_SIZE_V1, action_mask, encode, encode_v1
from llama_env.table import BatchTable, Table
from train.training.config import TrainConfig
from train.training.sb3.vec_env import BatchedLlamaVecEnv


def test_llama_v1_is_llama_v0_with_the_history_appended():
    v0 = gym.make("Llama-v0", num_players=4, opponents="heuristic")
    v1 = gym.make("Llama-v1", num_players=4, opponents="heuristic")
    assert v0.observation_space.shape == (OBS_SIZE,) and v1.observation_space.shape == (OBS_SIZE_V1,)
    (a, info_a), (b, info_b) = v0.reset(seed=3), v1.reset(seed=3)
    for _ in range(40):
        np.testing.assert_array_equal(a, b[:OBS_SIZE])
        assert v1.observation_space.contains(b)
        np.testing.assert_array_equal(b, encode_v1(v1.unwrapped.table.game, v1.unwrapped.seat))
        action = int(np.flatnonzero(info_a["action_mask"])[0])
        a, ra, done, _, info_a = v0.step(action)
        b, rb, done_b, _, info_b = v1.step(action)
        assert (ra, done) == (rb, done_b)
        if done:
            break


def test_aec_env_takes_obs_version():
    env = llama_env.env(num_players=3, obs_version=1)
    env.reset(seed=0)
    obs = env.last()[0]["observation"]
    assert obs.shape == (OBS_SIZE_V1,) and env.observation_space("player_0")["observation"].shape == (OBS_SIZE_V1,)
    for bad in (2, -1, True, "1", 1.0):
        with pytest.raises(ValueError, match="obs_version must be one of 0, 1"):
            llama_env.env(num_players=3, obs_version=bad)
        with pytest.raises(ValueError, match="obs_version must be one of 0, 1"):
            gym.make("Llama-v0", obs_version=bad)


class Recorder:
    def __init__(self, version: int) -> None:
        self.obs_version = version
        self.sizes: set[int] = set()

    def act(self, observation, action_mask):
        self.sizes.add(len(observation))
        return int(np.flatnonzero(action_mask)[0])


def test_the_table_driver_encodes_the_version_each_agent_reads():
    old, new, plain = Recorder(0), Recorder(1), agents.make("heuristic")
    table = Table(LlamaGame(3, rng=1), [old, new, plain])
    table.play()
    assert old.sizes == {OBS_SIZE} and new.sizes == {OBS_SIZE_V1}
    with pytest.raises(ValueError, match="seat 1: agent .*obs_version must be one of 0, 1, got 7"):
        Table(LlamaGame(3, rng=1), [old, Recorder(7), plain])


@pytest.mark.parametrize("version", [None, False, 7, "1"])
def test_a_bad_obs_version_is_refused_naming_the_seat_and_the_agents_label(version):
    """A falsy obs_version (None) was not checked and failed at the first move naming no
    agent ("obs_version must be one of 0, 1, got None"); the others named the agent by its
    default repr (agent <__main__.V object at 0x7f59...>)."""
    match = re.escape(f"seat 1: agent 'Recorder': obs_version must be one of 0, 1, got {version!r}")
    with pytest.raises(ValueError, match=match):
        Table(LlamaGame(3, rng=1), [Recorder(0), Recorder(version), None])
    with pytest.raises(ValueError, match=match.replace("seat", "player")):
        BatchTable(BatchGame(2, 3, seed=0), [Recorder(0), Recorder(version), None])


def test_a_seat_without_act_is_named_in_one_bounded_line():
    """An ensemble's weights given as an agent were printed whole, line after line."""
    with pytest.raises(TypeError) as refused:
        Table(LlamaGame(3, rng=1), [np.zeros((52, 9)), None, None])
    message = str(refused.value)
    assert message.startswith("seat 0: an agent must have act(observation, action_mask) -> int, got array(")
    assert "\n" not in message and len(message) < 200


def test_an_agent_seated_mid_game_is_checked_as_the_tables_seats_are():
    """Table.seat (a hand-over in the browser) refuses what Table() refuses, naming the
    seat, and leaves the seat as it was."""
    table = Table(LlamaGame(3, rng=1), [None, Recorder(0), None])
    with pytest.raises(ValueError, match=re.escape("seat 2: agent 'Recorder': obs_version must be one of 0, 1, got 7")):
        table.seat(2, Recorder(7))
    with pytest.raises(TypeError, match=re.escape("seat 0: an agent must have act(observation, action_mask) -> int")):
        table.seat(0, "heuristic")  # type: ignore[arg-type]
    assert table.agents[0] is None and table.agents[2] is None
    table.seat(0, Recorder(1))
    table.seat(1, None)
    assert [type(a).__name__ for a in table.agents] == ["Recorder", "NoneType", "NoneType"]


def v1_actor(seed: int = 0) -> Actor:
    rng = np.random.default_rng(seed)
    shapes = [(16, OBS_SIZE_V1), (9, 16)]
    return Actor([(rng.normal(size=s), rng.normal(size=s[0])) for s in shapes], "tanh")


def test_a_ppo_agent_reads_the_version_its_network_was_built_for(tmp_path):
    from agents.ppo import save_actor

    save_actor(v1_actor(), tmp_path / "model.npz")
    agent = agents.make("ppo", path=str(tmp_path))
    assert agent.obs_version == 1 and agents.make("ppo_v0").obs_version == 0
    g = LlamaGame(2, rng=0)
    mask = np.zeros(9, dtype=np.int8)
    mask[g.legal_actions()] = 1
    assert agent.act(encode_v1(g, g.current_player), mask) in g.legal_actions()
    with pytest.raises(ValueError, match="reads version-1 observations of 175 values, got 52"):
        agent.act(encode(g, g.current_player), mask)
    table = Table(LlamaGame(2, rng=0), [agent, agents.make("ppo_v0")])  # each gets its own version
    table.play()
    assert table.game.game_over


def test_vec_env_encodes_the_learners_version_for_it_and_its_copies():
    env = BatchedLlamaVecEnv(6, players=[2, 4], opponents={"heuristic": 1, "self": 1}, seed=2, obs_version=1)
    seen = []
    env.set_policy("self", lambda obs, masks: (seen.append(obs.shape[1]), masks.argmax(axis=1))[1])
    obs = env.reset()
    assert obs.shape == (6, OBS_SIZE_V1) and env.observation_space.shape == (OBS_SIZE_V1,)
    for _ in range(30):
        for i, g in enumerate(env.games):
            np.testing.assert_array_equal(obs[i], encode_v1(g, int(env.seats[i])))
        obs, *_ = env.step(np.array([np.flatnonzero(m)[0] for m in env.action_masks()]))
    assert seen and set(seen) == {OBS_SIZE_V1}


def test_a_population_seats_one_consistent_member_per_game():
    pop = agents.make("perturbed", seed=4, size=8)
    other = agents.make("perturbed", seed=5, size=8)
    assert len(pop.members) == 8 and pop.members[0].params() != other.members[0].params()
    assert len({tuple(m.params().values()) for m in pop.members}) == 8
    rng = np.random.default_rng(0)
    assert {id(seat_member(pop, rng)) for _ in range(200)} == {id(m) for m in pop.members}
    assert seat_member(agents.make("heuristic"), rng).__class__.__name__ == "HeuristicAgent"
    pop.reset(11)
    first = pop.current
    pop.reset(11)
    assert pop.current is first
    assert agents.make("perturbed", spread=0).members[0].params() == agents.make("heuristic").params()


def test_config_takes_obs_version():
    assert TrainConfig(obs_version=1).validate().obs_version == 1
    with pytest.raises(ValueError, match="config key 'obs_version' must be one of 0, 1, got 3"):
        TrainConfig(obs_version=3).validate()


def test_ppo_agent_from_an_in_memory_v1_actor():
    agent = PPOAgent.from_actor(v1_actor(1))
    assert agent.obs_version == 1


def decisions(players: int, count: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``count`` real decisions at tables of ``players``: their version-0 and version-1
    observations and their masks."""
    rows = [
        (encode(g, g.current_player), encode_v1(g, g.current_player), action_mask(legal).astype(bool))
        for g, legal in random_decisions(count, seed, players)
    ]
    obs0, obs1, masks = zip(*rows, strict=True)
    return np.stack(obs0), np.stack(obs1), np.stack(masks)


def test_the_shipped_ppo_plays_its_specialists_at_their_table_sizes_and_the_general_model_elsewhere():
    from agents.ppo import DEFAULT_MODEL, FOUR_PLAYER_MODEL, HEADS_UP_MODEL, SHIPPED, SIX_PLAYER_MODEL, load_actor

    assert SHIPPED["ppo"] == {2: HEADS_UP_MODEL, 4: FOUR_PLAYER_MODEL, 6: SIX_PLAYER_MODEL}
    ppo, v0 = agents.make("ppo"), agents.make("ppo_v0")
    specialists = {n: load_actor(f) for n, f in SHIPPED["ppo"].items()}
    general = load_actor(DEFAULT_MODEL)
    assert ppo.obs_version == 1 and general.obs_version == 0
    assert all(a.obs_version == 1 for a in specialists.values())
    for players in (2, 3, 4, 5, 6):
        obs0, obs1, masks = decisions(players, 60, seed=players)
        chosen = [ppo.act(o, m) for o, m in zip(obs1, masks, strict=True)]
        model = specialists.get(players, general)
        expected = model.act_batch(obs1[:, : model.obs_size], masks)
        assert chosen == expected.tolist()
        assert ppo.act_batch(obs1, masks).tolist() == chosen
        # a version-0 observation: the general model at every size, as ppo_v0 plays
        assert ppo.act_batch(obs0, masks).tolist() == v0.act_batch(obs0, masks).tolist()
        assert [ppo.act(o, m) for o, m in zip(obs0, masks, strict=True)] == v0.act_batch(obs0, masks).tolist()
        if players in specialists:  # the specialist and the general model disagree, so the routing is seen
            assert (general.act_batch(obs0, masks) != expected).any()
    parts = [decisions(n, 20, seed=10 + n) for n in (2, 5, 6)]
    obs1 = np.concatenate([p[1] for p in parts])
    masks = np.concatenate([p[2] for p in parts])
    assert ppo.act_batch(obs1, masks).tolist() == [ppo.act(o, m) for o, m in zip(obs1, masks, strict=True)]


def test_ppo_v3_plays_the_specialists_before_distillation_and_the_same_general_model():
    from agents.ppo import (
        FOUR_PLAYER_MODEL_V3,
        HEADS_UP_MODEL_V3,
        SHIPPED,
        SIX_PLAYER_MODEL_V3,
        load_actor,
    )

    ppo, v3 = agents.make("ppo"), agents.make("ppo_v3")
    assert SHIPPED["ppo_v3"] == {2: HEADS_UP_MODEL_V3, 4: FOUR_PLAYER_MODEL_V3, 6: SIX_PLAYER_MODEL_V3}
    assert repr(v3) == "PPOv3Agent(deterministic=True)"
    for players in (3, 5):  # no specialist: both play the general model
        _, obs1, masks = decisions(players, 40, seed=20 + players)
        assert v3.act_batch(obs1, masks).tolist() == ppo.act_batch(obs1, masks).tolist()
    for players, before in SHIPPED["ppo_v3"].items():
        _, obs1, masks = decisions(players, 200, seed=20 + players)
        assert v3.act_batch(obs1, masks).tolist() == load_actor(before).act_batch(obs1, masks).tolist()
        after = load_actor(SHIPPED["ppo"][players])
        assert ppo.act_batch(obs1, masks).tolist() == after.act_batch(obs1, masks).tolist()
        assert (ppo.act_batch(obs1, masks) != v3.act_batch(obs1, masks)).any()  # the distilled one moves otherwise


def test_ppo_v4_plays_ppos_files_but_the_4_player_specialist_before_its_third_round():
    from agents.ppo import FOUR_PLAYER_MODEL, FOUR_PLAYER_MODEL_V4, SHIPPED, load_actor

    ppo, v4 = agents.make("ppo"), agents.make("ppo_v4")
    assert SHIPPED["ppo_v4"] == {**SHIPPED["ppo"], 4: FOUR_PLAYER_MODEL_V4}
    assert FOUR_PLAYER_MODEL_V4 != FOUR_PLAYER_MODEL and repr(v4) == "PPOv4Agent(deterministic=True)"
    for players in (2, 3, 5, 6):
        _, obs1, masks = decisions(players, 60, seed=30 + players)
        assert v4.act_batch(obs1, masks).tolist() == ppo.act_batch(obs1, masks).tolist()
    _, obs1, masks = decisions(4, 400, seed=34)
    assert v4.act_batch(obs1, masks).tolist() == load_actor(FOUR_PLAYER_MODEL_V4).act_batch(obs1, masks).tolist()
    assert (ppo.act_batch(obs1, masks) != v4.act_batch(obs1, masks)).any()  # the third round moves otherwise


def test_ppo_v2_plays_ppo_v3s_heads_up_specialist_and_the_general_model_at_three_to_six_players():
    from agents.ppo import DEFAULT_MODEL, HEADS_UP_MODEL_V3, load_actor

    v3, v2 = agents.make("ppo_v3"), agents.make("ppo_v2")
    assert v2.obs_version == 1 and repr(v2) == "PPOv2Agent(deterministic=True)"
    _, obs1, masks = decisions(2, 100, seed=7)
    assert v2.act_batch(obs1, masks).tolist() == load_actor(HEADS_UP_MODEL_V3).act_batch(obs1, masks).tolist()
    assert v2.act_batch(obs1, masks).tolist() == v3.act_batch(obs1, masks).tolist()
    general = load_actor(DEFAULT_MODEL)
    for players in (4, 6):
        _, obs1, masks = decisions(players, 60, seed=8)
        assert v2.act_batch(obs1, masks).tolist() == general.act_batch(obs1[:, : general.obs_size], masks).tolist()
        assert (v3.act_batch(obs1, masks) != v2.act_batch(obs1, masks)).any()  # ppo_v3 plays its specialist here


def test_ppo_v1_plays_the_first_heads_up_specialist_with_the_same_general_model():
    from agents.ppo import DEFAULT_MODEL, HEADS_UP_MODEL, HEADS_UP_MODEL_V1, load_actor

    ppo, v1 = agents.make("ppo"), agents.make("ppo_v1")
    first, general = load_actor(HEADS_UP_MODEL_V1), load_actor(DEFAULT_MODEL)
    assert v1.obs_version == 1 and repr(v1) == "PPOv1Agent(deterministic=True)"
    _, obs1, masks = decisions(2, 200, seed=5)
    assert v1.act_batch(obs1, masks).tolist() == first.act_batch(obs1, masks).tolist()
    assert (load_actor(HEADS_UP_MODEL).act_batch(obs1, masks) != first.act_batch(obs1, masks)).any()
    assert (ppo.act_batch(obs1, masks) != v1.act_batch(obs1, masks)).any()  # two different heads-up players
    _, obs1, masks = decisions(4, 60, seed=6)
    assert v1.act_batch(obs1, masks).tolist() == general.act_batch(obs1[:, : general.obs_size], masks).tolist()
