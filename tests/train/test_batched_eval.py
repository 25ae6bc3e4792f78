"""Evaluation on the batched engine (``train.evaluation.batched``).

The batch deals its own cards, so its games are not the game-by-game path's: the two must
agree in distribution. A few thousand games of each, at three tables, are compared
statistic by statistic (win shares, scores, rounds, how each agent plays and how often it
goes out) with a two-sample z-test that fails for a real difference and passes noise.
Then: exactly the asked games are played, seeded runs repeat exactly whatever the number
of workers, each game's counts add up, populations seat a member per seat, and what the
batch cannot play (duplicate deals, game records, an agent without act_batch) goes game
by game.
"""

from __future__ import annotations

import math
import re
from typing import Any

import numpy as np
import pytest
from conftest import LookedMembers

import agents
from llama_env.engine import Rules
from train.cli import main
from train.evaluation import batched as batched_module
from train.evaluation import evaluate, tournament
from train.evaluation.evaluate import EvalResult

TABLES = [
    (["heuristic", "random", "random", "random"], 3000, Rules(4)),
    (["cautious:threshold=2", "greedy"], 2000, Rules(2, end_score=20)),
    (["heuristic", "perturbed:seed=4:size=6", "greedy"], 1500, Rules(3, end_score=25, hand_size=5)),
]


def _z(a: np.ndarray, b: np.ndarray) -> float:
    """The two-sample z statistic of the means of per-game values ``a`` and ``b``."""
    se = math.sqrt(a.var(ddof=1) / len(a) + b.var(ddof=1) / len(b))
    return 0.0 if se == 0 else abs(float(a.mean() - b.mean())) / se


def _per_game(r: EvalResult, i: int) -> dict[str, np.ndarray]:
    acts = r.actions[:, i, :].astype(float)
    taken = acts.sum(axis=1)
    return {
        "win share": r.shares[:, i],
        "score": r.scores[:, i],
        "go-outs per round": r.outs[:, i] / r.rounds,
        "plays per decision": acts[:, 0] / taken,
        "draws per decision": acts[:, 1] / taken,
        "quits per decision": acts[:, 2] / taken,
        "rounds": r.rounds,
    }


@pytest.mark.parametrize(("table", "games", "rules"), TABLES, ids=lambda x: str(x))
def test_batched_and_game_by_game_evaluation_agree_in_distribution(table, games, rules):
    fast = evaluate(table, games, seed=1, workers=1, rules=rules)
    slow = evaluate(table, games, seed=2, workers=1, batched=False, rules=rules)
    assert fast.batched and not slow.batched
    assert fast.num_games == slow.num_games == games
    worst = []
    for i in range(len(table)):
        a, b = _per_game(fast, i), _per_game(slow, i)
        for stat in a:
            worst.append((_z(a[stat], b[stat]), fast.names[i], stat))
        # the hand penalty held at a quit, over all quits
        qa, qb = fast.quit_penalty[:, i].sum(), slow.quit_penalty[:, i].sum()
        na, nb = fast.actions[:, i, 2].sum(), slow.actions[:, i, 2].sum()
        assert abs(qa / na - qb / nb) < 0.15 * max(qb / nb, 1.0), (fast.names[i], qa / na, qb / nb)
    # about 50 statistics per table: a z of 4.5 is noise once in ~10,000 tables
    assert max(worst)[0] < 4.5, sorted(worst)[-3:]
    # and both intervals cover each other's win share for the first agent, or nearly
    assert abs(fast.agents[0].win_share - slow.agents[0].win_share) < 0.04


def test_a_batched_evaluation_repeats_exactly_with_any_number_of_workers(monkeypatch):
    """Several chunks, each refilling its slots as games end: the same seed gives the same
    games whatever the workers; another seed other games."""
    monkeypatch.setattr(batched_module, "CHUNK_GAMES", 200)
    monkeypatch.setattr(batched_module, "SLOTS", 64)
    assert batched_module.chunk_bounds(500) == [0, 125, 250, 375, 500]  # 3 chunks made 4
    table, rules = ["heuristic", "random", "perturbed:size=3"], Rules(3, end_score=20)
    one = evaluate(table, 500, seed=5, workers=1, rules=rules)
    two = evaluate(table, 500, seed=5, workers=2, rules=rules)
    other = evaluate(table, 500, seed=6, workers=1, rules=rules)
    assert one.batched and two.batched
    for field in ("shares", "scores", "outs", "rounds", "decisions", "actions", "quit_penalty"):
        np.testing.assert_array_equal(getattr(one, field), getattr(two, field), err_msg=field)
    assert not np.array_equal(one.scores, other.scores)
    # each chunk deals its own games: rule-based agents (no randomness) on chunk 3, whose
    # first game sits as chunk 0's does (375 = 0 mod 3), replayed chunk 0 when the deals'
    # generator did not depend on the chunk
    fixed = evaluate(["heuristic", "greedy", "cautious"], 500, seed=5, workers=1, rules=rules)
    assert not np.array_equal(fixed.decisions[:64], fixed.decisions[375:439])


class _SeedSpy:
    """Plays its first legal action and notes each seed it is reset with."""

    seeds: list[int] = []

    def reset(self, seed=None):
        _SeedSpy.seeds.append(seed)

    def act(self, observation, action_mask):
        return int(np.flatnonzero(action_mask)[0])

    def act_batch(self, observations, action_masks):
        return np.argmax(np.asarray(action_masks, dtype=bool), axis=1)


def test_each_chunk_resets_its_agents_with_seeds_of_its_own(monkeypatch):
    """A mutation audit: seeds that ignored the chunk, so every chunk's agents drew the
    same random numbers, passed."""
    monkeypatch.setattr(batched_module, "CHUNK_GAMES", 10)
    _SeedSpy.seeds = []
    r = evaluate([_SeedSpy(), "random", "random"], 40, seed=3, workers=1)
    assert r.batched and len(_SeedSpy.seeds) == 4  # one reset a chunk
    assert len(set(_SeedSpy.seeds)) == 4


def test_every_asked_game_is_played_once_and_its_counts_add_up(monkeypatch):
    monkeypatch.setattr(batched_module, "SLOTS", 50)
    r = evaluate(["heuristic", "random", "cautious"], 333, seed=0, workers=1)
    assert r.batched and r.num_games == 333 and r.scores.shape == (333, 3)
    assert (r.scores.max(axis=1) >= r.rules.end_score).all()  # every game was played to its end
    assert (r.actions.sum(axis=(1, 2)) == r.decisions).all()
    assert (r.rounds >= 1).all() and (r.outs.sum(axis=1) <= r.rounds).all()
    np.testing.assert_allclose(r.shares.sum(axis=1), 1.0)
    assert (r.quit_penalty <= 31 * r.actions[:, :, 2]).all()
    # seats rotate from game to game, as game by game
    t = tournament(["heuristic", "random", "greedy", "cautious"], 3, 200, seed=0, workers=1)
    assert t.batched and len(t.records) == 200 and [g.index for g in t.records] == list(range(200))
    assert all(sum(sum(a) for a in g.actions) == g.decisions for g in t.records)


def test_a_population_seats_a_member_per_game():
    """``perturbed`` at a batched table plays its members: the same table with only its
    first member seated plays differently."""
    population = agents.make("perturbed", seed=3, size=4)
    assert batched_module.can_act_on_batches(population)
    mixed = evaluate([population, "heuristic"], 300, seed=0, workers=1)
    first = evaluate([population.members[0], "heuristic"], 300, seed=0, workers=1)
    assert mixed.batched and first.batched
    assert not np.array_equal(mixed.scores, first.scores)


class _Seen:
    """A population's member that notes, in ``seen``, that it played."""

    def __init__(self, member: Any, seen: set[int]) -> None:
        self.member, self.seen = member, seen

    def act(self, observation: np.ndarray, action_mask: np.ndarray) -> int:
        self.seen.add(id(self))
        return int(self.member.act(observation, action_mask))

    def act_batch(self, observations: np.ndarray, action_masks: np.ndarray) -> np.ndarray:
        self.seen.add(id(self))
        return np.asarray(self.member.act_batch(observations, action_masks))


@pytest.mark.parametrize("batched", [True, False])
def test_one_population_object_at_two_seats_seats_a_member_at_each_on_both_paths(batched):
    """Game by game, each seat reset the one object, so both seats played the member drawn
    last (a mirror match); batched, each seat had its own. Now both seat one per seat."""
    population = agents.make("perturbed", seed=0)
    seen: set[int] = set()
    population.members = [_Seen(m, seen) for m in population.members]
    r = evaluate([population, population], 1, seed=0, workers=1, batched=batched)
    assert r.batched is batched and len(seen) == 2


class _Ensemble:
    """An agent of its own with a ``members`` attribute (weights, players it consults):
    not a population, since it does not say ``population = True``."""

    name = "ensemble"

    def __init__(self, members: Any) -> None:
        self.members, self.calls = members, 0

    def act(self, observation: np.ndarray, action_mask: np.ndarray) -> int:
        self.calls += 1
        return int(np.flatnonzero(action_mask)[-1])  # quits whenever it may


@pytest.mark.parametrize(
    "members",
    [[agents.make("heuristic"), agents.make("greedy")], [np.zeros((52, 9)), np.ones((52, 9))], np.zeros((3, 52, 9))],
    ids=["agents", "weights", "array"],
)
def test_an_agent_with_members_that_is_no_population_plays_as_itself(members):
    """Any agent with a non-empty ``members`` was taken for a population: a member played
    in its place and its act was never called (with agents as members), or a member was
    seated and refused (weights), or the evaluation failed on the array's truth value.
    Now only ``population = True`` makes a population; the ensemble plays its own moves,
    game by game, since it has no act_batch."""
    ensemble = _Ensemble(members)
    r = evaluate([ensemble, "random"], 4, seed=0, workers=1)
    assert not r.batched and ensemble.calls > 0
    with pytest.raises(ValueError, match="agent 'ensemble' has no act_batch"):
        evaluate([_Ensemble(members), "random"], 4, seed=0, workers=1, batched=True)


@pytest.mark.parametrize(
    ("members", "found"),
    [
        (np.zeros((3, 52, 9)), r"got array\(\[\[\["),
        ([], r"got \[\]"),
        ([agents.make("heuristic"), np.zeros((52, 9))], r"members\[1\] must be an agent .*, got array"),
    ],
    ids=["array", "empty", "weights"],
)
@pytest.mark.parametrize("batched", [True, False])
def test_a_population_whose_members_are_no_agents_is_refused_by_name(members, found, batched):
    """A population (``population = True``) must hold a non-empty list of agents: else a
    ValueError names it, briefly (an array's repr was printed whole)."""
    population = agents.make("perturbed", seed=0, size=2)
    population.members = members
    with pytest.raises(ValueError, match=r"agent 'perturbed:size=2' is a population \(population = True\): ") as caught:
        evaluate([population, "heuristic"], 2, seed=0, workers=1, batched=batched)
    assert re.search(found, str(caught.value)) and len(str(caught.value)) < 300


def test_a_population_is_checked_where_it_is_taken_not_at_every_game():
    """Each game checked all the members again at each seat of the population (twice).
    Game by game only: the batched engine seats no member per game."""
    population = agents.make("perturbed", seed=0, size=4)
    population.members = looked = LookedMembers(population.members)
    r = evaluate([population, "random"], 64, seed=0, workers=1, batched=False)
    assert not r.batched and 0 < looked.looks < 64


class NoBatch:
    """An agent with act alone."""

    name = "nobatch"

    def act(self, observation: np.ndarray, action_mask: np.ndarray) -> int:
        return int(np.flatnonzero(action_mask)[0])


@pytest.mark.parametrize(
    ("kwargs", "reason"),
    [
        ({"duplicate": True}, "duplicate deals"),
        ({"record_dir": "RECORDS"}, "game records"),
        ({"agents": [NoBatch(), "random"]}, "agent 'nobatch' has no act_batch"),
    ],
)
def test_what_the_batch_cannot_play_goes_game_by_game(tmp_path, kwargs, reason):
    args: dict[str, Any] = {"agents": ["greedy", "random"], **kwargs}
    if args.get("record_dir"):
        args["record_dir"] = tmp_path / "records"
    table = args.pop("agents")
    r = evaluate(table, 8, seed=0, workers=1, **args)
    assert not r.batched
    with pytest.raises(ValueError, match=f"cannot be played on the batched engine: {reason}"):
        evaluate(table, 8, seed=0, workers=1, batched=True, **args)


def test_batched_must_be_a_flag():
    with pytest.raises(ValueError, match="batched must be True, False or None"):
        evaluate(["greedy", "random"], 4, workers=1, batched="yes")  # type: ignore[arg-type]
    # numpy's booleans are taken, as for duplicate and rotate (they were refused)
    assert evaluate(["greedy", "random"], 4, workers=1, batched=np.True_).batched
    assert not evaluate(["greedy", "random"], 4, workers=1, batched=np.False_).batched
    assert not tournament(["greedy", "random"], 2, 4, workers=1, batched=np.False_).batched


SEATS_2 = np.array([[0, 1], [1, 0]] * 2)


@pytest.mark.parametrize(
    ("seat_agents", "kwargs", "error", "match"),
    [
        # played agents[-1] and recorded -1 as its position
        (
            np.array([[0, -1]] * 4),
            {},
            ValueError,
            r"seat_agents\[0, 1\]: -1 is not a player position 0..1",
        ),
        (
            np.array([[0, 1], [2, 0]]),
            {},
            ValueError,
            r"seat_agents\[1, 0\]: 2 is not a player position 0..1",
        ),  # an IndexError
        (
            np.zeros((0, 2), dtype=int),
            {},
            ValueError,
            r"(?s)one game at least: .* of shape \(0, 2\)",
        ),  # divided by 0
        (np.array([[0, 1, 0]] * 2), {}, ValueError, r"(?s)shape \(games, 2\), one game at least: .* of shape \(2, 3\)"),
        (
            SEATS_2.astype(float),
            {},
            ValueError,
            r"seat_agents must be an integer array of shape \(games, 2\), one game at least",
        ),
        (SEATS_2, {"seed": -1}, ValueError, "seed must be a non-negative integer, got -1"),
        (SEATS_2, {"rules": None}, TypeError, "rules must be a llama_env.Rules, got None"),
        (SEATS_2, {"workers": 0}, ValueError, "workers must be a positive integer"),
    ],
)
def test_play_batched_checks_its_arguments(seat_agents, kwargs, error, match):
    """The exported runner took what evaluate() makes for granted: a negative position
    silently seated the last agent, others failed deep inside."""
    args: dict[str, Any] = {"seed": 0, "workers": 1, "rules": Rules(2), **kwargs}
    with pytest.raises(error, match=match):
        batched_module.play_batched(["greedy", "random"], seat_agents, **args)


def test_llama_rl_eval_plays_batched_and_no_batch_plays_game_by_game(capsys):
    args = ["eval", "--agents", "heuristic,random,random", "--games", "300", "--workers", "1", "--no-progress"]
    assert main(args) == 0
    batched_out = capsys.readouterr().out
    assert main([*args, "--no-batch"]) == 0
    scalar_out = capsys.readouterr().out
    assert str(evaluate(["heuristic", "random", "random"], 300, seed=0, workers=1)) + "\n" == batched_out
    expected = evaluate(["heuristic", "random", "random"], 300, seed=0, workers=1, batched=False)
    assert str(expected) + "\n" == scalar_out
    assert main([*args, "--batch", "--duplicate"]) == 2
    assert "cannot be played on the batched engine: duplicate deals" in capsys.readouterr().err
