"""Batched agents: ``act_batch`` decides as ``act`` does, row by row.

The observations come from real games (random play on the engine, 2..6 players, both
observation versions), thousands of them, so every branch of every rule-based agent is
met: one play or two, a llama on top, an empty draw pile, a player left alone, danger,
a lead to protect. The deterministic agents must answer every row exactly as ``act``;
``random`` must make the decisions of ``act`` called row by row with the same generator,
and leave the generator where those calls leave it; and its picks must be uniform.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest

import agents
from agents.heuristic import HEURISTIC_DEFAULTS, HeuristicAgent, PerturbedHeuristic
from agents.random_agent import RandomAgent
from llama_env.engine import Action, LlamaGame
from llama_env.observation import BatchView, action_mask, encode_many, encode_many_v1

DETERMINISTIC = [
    ("heuristic", {}),
    ("greedy", {}),
    ("greedy", {"prefer": "same"}),
    ("cautious", {}),
    ("cautious", {"threshold": 0}),
    ("cautious", {"threshold": 12}),
    (
        "heuristic",
        {"lead_margin": 3.0, "quit_per_quitter": 1.0, "danger_hand": 2, "quit_per_pile": -0.5, "chain_bonus": 2.0},
    ),
    ("heuristic", {"quit_base": 40.0, "quit_playable": 1.5}),
    ("heuristic", {"quit_base": -40.0, "strand_cost": 0.0, "urgency_points": 3.0, "chain_bonus": 0.5}),
]


def _observations(num_games: int = 250, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Observations of both versions (``(B, 52)``, ``(B, 175)``) and masks ``(B, 9)`` of
    the player to act, from random games of every size; draws weighted up so that hands
    grow and draw piles run out."""
    rng = np.random.default_rng(seed)
    games: list[LlamaGame] = []
    for g in range(num_games):
        n = 2 + g % 5
        game = LlamaGame(n, end_score=int(rng.choice([15, 40, 90])), rng=int(rng.integers(1 << 30)))
        while not game.game_over:
            if rng.random() < 0.5:
                games.append(LlamaGame.from_dict(game.to_dict()))
            legal = game.legal_actions()
            w = np.array([3.0 if a == Action.DRAW else (0.3 if a == Action.QUIT else 1.0) for a in legal])
            game.step(legal[int(rng.choice(len(legal), p=w / w.sum()))])
    masks = np.array([action_mask(g.legal_actions()) for g in games]).astype(bool)
    return encode_many(games), encode_many_v1(games), masks


@functools.cache
def _states() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The states, made when a test first asks: a broken engine then fails the tests that
    read them, not the module's collection."""
    return _observations()


def test_the_states_cover_the_corners():
    obs0, obs1, masks = _states()
    assert len(masks) > 3000
    plays = masks[:, : Action.DRAW].sum(axis=1)
    assert (plays == 2).sum() > 100 and (plays == 1).sum() > 100 and (plays == 0).sum() > 100
    assert (~masks[:, Action.DRAW] & (plays == 0)).sum() > 20  # only quitting is left
    seen = BatchView(obs0)
    assert (seen.top_card == 7).sum() > 100  # a llama on top
    assert (seen.draw_pile == 0).sum() > 50 and (seen.opp_in_round.sum(axis=1) == 0).sum() > 50  # empty pile, alone


@pytest.mark.parametrize(("name", "params"), DETERMINISTIC, ids=lambda x: str(x))
@pytest.mark.parametrize("version", [0, 1])
def test_act_batch_decides_every_row_as_act(name, params, version):
    obs0, obs1, masks = _states()
    agent = agents.make(name, **params)
    obs = obs1 if version else obs0
    batch = agent.act_batch(obs, masks)
    assert batch.shape == (len(obs),) and batch.dtype == np.int64
    one_by_one = [agent.act(o, m.astype(np.int8)) for o, m in zip(obs, masks, strict=True)]
    differ = np.flatnonzero(batch != np.array(one_by_one))
    assert differ.size == 0, f"rows {differ[:5].tolist()}: act_batch {batch[differ[:5]]} act {one_by_one[:5]}"


@pytest.mark.parametrize("name", ["ppo", "ppo_v0", "ppo_v1", "ppo_v3"])
@pytest.mark.parametrize("version", [0, 1])
def test_the_ppo_agents_act_plays_the_model_act_batch_plays(name, version):
    """act picks its model for one row as act_batch does for many (one choice,
    PPOAgent._model): the specialist of the table size where it reads the observation's
    version, else the general model."""
    obs0, obs1, masks = _states()
    agent = agents.make(name)
    obs = (obs1 if version else obs0)[::4]
    batch = agent.act_batch(obs, masks[::4])
    assert batch.tolist() == [agent.act(o, m) for o, m in zip(obs, masks[::4], strict=True)]


def test_the_perturbed_population_decides_as_its_members():
    """Every member (each with its own parameters, the chain bonus among them) decides a
    batch as it decides row by row, and the population decides as its seated member."""
    obs0, obs1, masks = _states()
    population = PerturbedHeuristic(seed=5, size=24)
    assert any(m.chain_bonus for m in population.members) and any(m.quit_per_quitter for m in population.members)
    rows = slice(0, 1500)
    for member in population.members:
        batch = member.act_batch(obs0[rows], masks[rows])
        assert batch.tolist() == [member.act(o, m) for o, m in zip(obs0[rows], masks[rows], strict=True)], member
    for seed in (0, 1, 2):
        population.reset(seed)
        assert population.act_batch(obs1, masks).tolist() == population.current.act_batch(obs1, masks).tolist()


def test_random_act_batch_is_act_row_by_row_with_the_same_generator():
    obs0, obs1, masks = _states()
    batched, single = RandomAgent(seed=7), RandomAgent(seed=7)
    got = batched.act_batch(obs0, masks)
    expected = [single.act(o, m) for o, m in zip(obs0, masks, strict=True)]
    assert got.tolist() == expected
    assert got.dtype == np.int64
    assert batched.rng.integers(1 << 62) == single.rng.integers(1 << 62)  # the generator is where act leaves it
    again = RandomAgent(seed=7)
    assert again.act_batch(obs1, masks).tolist() == expected  # seeded: reproducible, whatever the version


def test_random_act_batch_is_uniform_over_the_legal_actions():
    """Chi-square: each of the legal actions of one mask drawn equally often (a test that
    fails for a pick that favours the first or the last legal action)."""
    mask = np.zeros((30_000, 9), dtype=bool)
    mask[:, [1, 2, 7, 8]] = True
    picks = RandomAgent(seed=3).act_batch(np.zeros((30_000, 52), np.float32), mask)
    counts = np.bincount(picks, minlength=9)
    assert counts[[0, 3, 4, 5, 6]].sum() == 0
    expected = len(picks) / 4
    chi2 = float((((counts[[1, 2, 7, 8]] - expected) ** 2) / expected).sum())
    assert chi2 < 16.27, counts  # 3 degrees of freedom, p = 0.001


@pytest.mark.parametrize("name", ["random", "greedy", "cautious", "heuristic", "perturbed"])
def test_act_batch_names_bad_input(name):
    obs0, obs1, masks = _states()
    agent = agents.make(name, seed=0)
    with pytest.raises(ValueError, match=r"observations of shape \(B, 52\) or \(B, 175\)"):
        agent.act_batch(obs0[:3, :50], masks[:3])
    with pytest.raises(ValueError, match=r"observations of shape"):
        agent.act_batch(obs0[0], masks[0])
    with pytest.raises(ValueError, match=r"action masks of shape \(3, 9\)"):
        agent.act_batch(obs0[:3], masks[:2])
    empty = masks[:4].copy()
    empty[2] = False
    with pytest.raises(ValueError, match="the action mask of row 2 has no legal action"):
        agent.act_batch(obs0[:4], empty)


def test_integer_masks_read_as_the_boolean_ones():
    obs0, obs1, masks = _states()
    agent = HeuristicAgent()
    assert agent.act_batch(obs0, masks.astype(np.int8)).tolist() == agent.act_batch(obs0, masks).tolist()


def test_the_defaults_are_what_the_batch_reads():
    """The tuned parameters reach act_batch (a parameter read from the wrong place would
    pass the equality tests only at its default)."""
    obs0, obs1, masks = _states()
    assert HeuristicAgent().params() == HEURISTIC_DEFAULTS
    shy, bold = HeuristicAgent(quit_base=40.0), HeuristicAgent(quit_base=-40.0)
    assert (shy.act_batch(obs0, masks) != bold.act_batch(obs0, masks)).sum() > 100


@pytest.mark.parametrize("batched", [True, False])
def test_batch_from_changes_no_result(batched, monkeypatch):
    """The built-in agents' batch_from (few decisions asked through act) leaves every
    game as it is when act_batch answers every decision: an evaluation's numbers match."""
    from train.evaluation import evaluate

    lineup = ["heuristic", "random", "greedy", "cautious", "perturbed"]
    before = evaluate(lineup, 300, seed=4, workers=1, batched=batched).to_dict()
    for cls in {type(agents.make(name)) for name in lineup}:
        assert getattr(cls, "batch_from", 1) > 1
        monkeypatch.setattr(cls, "batch_from", 1)
    after = evaluate(lineup, 300, seed=4, workers=1, batched=batched).to_dict()
    assert before == after and before["num_games"] == 300
