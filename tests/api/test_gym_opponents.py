"""Llama-v0 seats its opponents as evaluation and the trainers do: a population plays a
member of its own at each seat, never its own ``act``."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import League

import agents
from llama_env import LlamaEnv


def _play_out(env: LlamaEnv, seed: int) -> None:
    _, info = env.reset(seed=seed)
    done = False
    while not done:
        _, _, done, _, info = env.step(int(np.flatnonzero(info["action_mask"])[0]))


@pytest.mark.parametrize("players", [2, 4])
def test_a_population_plays_through_its_members_never_its_own_act(players):
    """Llama-v0 seated the population itself: its first opponent move failed with
    "AgentError ... NotImplementedError: a population plays through its members"."""
    league = League(name="league")
    env = LlamaEnv(num_players=players, opponents=league)
    for seed in range(3):
        _play_out(env, seed)
        others = [s for s in range(players) if s != env.seat]
        assert all(any(env.table.agents[s] is m for m in league.members) for s in others)
        assert [env.table.names[s] for s in others] == ["league"] * (players - 1)  # named as given


def test_one_population_object_seats_a_member_of_its_own_at_each_seat():
    """With one ``perturbed`` object at 4 players every reset seated the same player at
    all three seats (each seat's reset of the shared object replaced the last one's),
    where evaluation and the trainers draw a member per seat."""
    population = agents.make("perturbed", seed=0, size=8)
    env = LlamaEnv(num_players=4, opponents=population)
    mixed = 0
    for seed in range(10):
        env.reset(seed=seed)
        seated = [env.table.agents[s] for s in range(4) if s != env.seat]
        assert all(any(a is m for m in population.members) for a in seated)
        mixed += len({id(a) for a in seated}) > 1
    assert mixed >= 5


def _seen(opponents: object, seed: int = 0, episodes: int = 2) -> list[list[float]]:
    """What the learner saw (so what the opponents chose) in a few seeded episodes, the
    learner playing its first legal action."""
    env = LlamaEnv(num_players=2, opponents=opponents, seat=0)
    seen = []
    for e in range(episodes):
        obs, info = env.reset(seed=seed + e)
        done = False
        while not done:
            seen.append(obs.tolist())
            obs, _, done, _, info = env.step(int(np.flatnonzero(info["action_mask"])[0]))
    return seen


def test_a_specs_own_seed_plays_differently_in_llama_v0_as_in_evaluation():
    """Each episode's reset seed replaced the spec's: ``random:seed=1``, ``random:seed=2``
    and ``random`` played the very same games, where evaluation mixes the spec's seed in
    and docs/agents.md promises that such seeds play differently."""
    plain, one, two = (_seen(o) for o in ("random", "random:seed=1", "random:seed=2"))
    assert one != plain and two != plain and one != two
    assert _seen("random:seed=1") == one  # each repeatably
    assert _seen({"name": "random", "params": {"seed": 1}}) == one  # the JSON form of its AgentSpec
    assert _seen(agents.make("random", seed=1)) == plain  # an object's own seed is replaced, as there
