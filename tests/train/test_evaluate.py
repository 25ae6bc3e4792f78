"""train.evaluate: statistics with known answers, seeding independent of workers,
duplicate deals, tournaments and errors."""

from __future__ import annotations

import json
import math
import os
import threading

import numpy as np
import pytest
from conftest import ScriptedExecutor

import agents
import llama_env
from agents.base import BaseAgent
from llama_env.agent import agent_label
from llama_env.engine import IllegalActionError, Rules
from train.evaluation import GameTask, agent_display_names, evaluate, mean_ci, play_games, tournament
from train.evaluation.ratings import BETA, Rater, fit_ratings


class QuitAgent(BaseAgent):
    """Quits at once, every turn."""

    name = "quitter"

    def act(self, observation, action_mask):
        return 8


class MaskedAgent(BaseAgent):
    """Always plays a llama, legal or not."""

    name = "cheater"

    def act(self, observation, action_mask):
        return 6


class Unpicklable(BaseAgent):
    """A random agent holding a lock, which cannot be pickled."""

    name = "local"

    def __init__(self, seed=None):
        super().__init__(seed)
        self.lock = threading.Lock()

    def act(self, observation, action_mask):
        legal = np.flatnonzero(action_mask)
        return int(legal[self.rng.integers(legal.size)])


class _Held(Exception):
    """An exception whose ``__init__`` takes two arguments: it pickles, but its pickle
    does not load (``__init__`` is called with its ``args``, one)."""

    def __init__(self, a, b):
        super().__init__(a)
        self.b = b


class Unrebuildable(BaseAgent):
    """A random agent holding a :class:`_Held`: it pickles, but cannot be rebuilt from its
    pickle."""

    name = "unrebuildable"

    def __init__(self, seed=None):
        super().__init__(seed)
        self.held = _Held("x", 1)

    def act(self, observation, action_mask):
        legal = np.flatnonzero(action_mask)
        return int(legal[self.rng.integers(legal.size)])


def test_result_shape_and_shares_sum_to_one_per_game():
    r = evaluate(["heuristic", "random", "random"], 60, seed=1, workers=1)
    assert r.names == ["heuristic", "random#1", "random#2"]
    assert r.num_games == 60 and r.shares.shape == (60, 3)
    np.testing.assert_allclose(r.shares.sum(axis=1), 1.0)
    assert math.isclose(sum(r.win_shares), 1.0)
    assert r.rounds_per_game >= 1
    for a in r.agents:
        assert a.ci_low <= a.win_share <= a.ci_high
        assert 0 <= a.go_out_rate <= 1
    # points per round is score change per round: final scores / rounds
    np.testing.assert_allclose(r[0].points_per_round, r.scores[:, 0].sum() / r.rounds.sum())
    assert r["heuristic"] is r[0]
    text = str(r)
    assert "heuristic" in text and "random#2" in text and "95% CI" in text
    d = r.to_dict()
    assert d["agents"][0]["name"] == "heuristic" and d["num_games"] == 60
    assert d["batched"] is r.batched  # the same seed deals other games on the batched engine


def test_quitters_never_go_out_and_score_every_round():
    r = evaluate([QuitAgent(), QuitAgent(), QuitAgent()], 30, seed=2, workers=1)
    assert all(a.go_out_rate == 0 for a in r.agents)
    # every player quits holding 6 cards: a penalty of at least 1 every round; the
    # largest hand penalty is 31, so reaching 40 takes at least two rounds
    assert r.rounds.min() >= 2
    assert all(a.points_per_round >= 1 for a in r.agents)


def test_behaviour_stats_of_quitters_add_up_to_their_scores():
    # Everybody quits on their first turn, so nobody plays or draws, and the penalty each
    # held when quitting is exactly what it scored: the quit penalties sum to the scores.
    r = evaluate([QuitAgent(), QuitAgent()], 40, seed=5, workers=1)
    for i, a in enumerate(r.agents):
        assert (a.play_rate, a.draw_rate, a.quit_rate) == (0.0, 0.0, 1.0)
        np.testing.assert_allclose(r.quit_penalty[:, i], r.scores[:, i])
        np.testing.assert_allclose(a.quit_penalty, r.scores[:, i].sum() / r.actions[:, i, 2].sum())
    np.testing.assert_array_equal(r.actions.sum(axis=(1, 2)), r.decisions)


def test_behaviour_stats_tell_styles_apart():
    r = evaluate(["greedy", "cautious", "random"], 60, seed=6, workers=1)
    greedy, cautious, rand = r.agents
    for a in r.agents:
        assert math.isclose(a.play_rate + a.draw_rate + a.quit_rate, 1.0)
    # greedy quits only when it can neither play nor draw; cautious quits with small hands
    assert greedy.quit_rate < rand.quit_rate
    assert cautious.quit_penalty < greedy.quit_penalty


def test_quitter_against_a_player_who_never_quits():
    # The quitter never goes out; greedy, left alone (and so unable to draw), plays what
    # it can before it too must quit, so it takes fewer points per round and wins
    r = evaluate([QuitAgent(), "greedy"], 100, seed=3, workers=1)
    assert r[0].go_out_rate == 0
    assert r[1].go_out_rate > 0
    assert r[1].win_share > 0.8 and r[1].points_per_round < r[0].points_per_round


def test_identical_random_agents_split_evenly_within_the_ci():
    r = evaluate(["random", "random"], 400, seed=4, workers=1)
    for a in r.agents:
        assert a.ci_low < 0.5 < a.ci_high
    assert math.isclose(r[0].win_share + r[1].win_share, 1.0)


def test_same_seed_same_results_whatever_the_workers():
    table = ["heuristic", "greedy", "random", "cautious"]
    one = evaluate(table, 40, seed=7, workers=1)
    two = evaluate(table, 40, seed=7, workers=2)
    np.testing.assert_array_equal(one.shares, two.shares)
    np.testing.assert_array_equal(one.scores, two.scores)
    np.testing.assert_array_equal(one.rounds, two.rounds)
    other = evaluate(table, 40, seed=8, workers=1)
    assert not np.array_equal(one.scores, other.scores)


def test_agent_objects_are_reset_per_game_so_objects_and_names_agree():
    from agents.random_agent import RandomAgent

    by_name = evaluate(["random", "random"], 20, seed=5, workers=1)
    by_obj = evaluate([RandomAgent(seed=123), RandomAgent()], 20, seed=5, workers=2)
    np.testing.assert_array_equal(by_name.scores, by_obj.scores)


@pytest.mark.parametrize("batched", [False, True])
def test_a_specs_own_seed_is_mixed_into_the_seeds_of_its_games(batched):
    """Each game's (or batched chunk's) reset replaced a spec's seed: ``random:seed=5``
    and ``random:seed=6`` played the very games of ``random``. Mixed in, they differ, each
    repeats itself with any workers, and an agent without ``seed=`` plays as it did (as an
    object does, whose own seed is replaced); a population's ``seed=`` picks the population
    and its games are seeded as before."""
    from agents import make
    from llama_env.agent import AgentSpec

    def scores(agent, workers=1):
        return evaluate([agent, "heuristic"], 60, seed=0, workers=workers, batched=batched).scores

    plain, five, six = scores("random"), scores("random:seed=5"), scores("random:seed=6")
    assert not np.array_equal(five, six) and not np.array_equal(five, plain)
    np.testing.assert_array_equal(five, scores(AgentSpec("random", {"seed": 5}), workers=2))
    np.testing.assert_array_equal(plain, scores(make("random", seed=5)))
    population = scores("perturbed:seed=3:size=4")
    np.testing.assert_array_equal(population, scores(make("perturbed", seed=3, size=4)))


def test_unpicklable_agents_fall_back_to_this_process():
    with pytest.warns(RuntimeWarning, match="cannot be pickled"):
        r = evaluate([Unpicklable(), "random"], 12, seed=6, workers=2)
    ref = evaluate([Unpicklable(), "random"], 12, seed=6, workers=1)
    np.testing.assert_array_equal(r.scores, ref.scores)


def test_agents_that_cannot_be_rebuilt_from_their_pickle_fall_back_to_this_process():
    """Every worker failed to rebuild the agent, and the evaluation raised a bare
    ``TypeError`` of ``_Held.__init__``, naming neither the workers nor the agent. It is
    now played in this process, with the warning of an agent that cannot be pickled, which
    names it."""
    with pytest.warns(RuntimeWarning, match=r"agent 'unrebuildable' cannot be pickled and rebuilt in a worker") as w:
        r = evaluate([Unrebuildable(), "random"], 12, seed=6, workers=2, batched=False)
    assert "missing 1 required positional argument: 'b'" in str(w[0].message)
    ref = evaluate([Unrebuildable(), "random"], 12, seed=6, workers=1)
    np.testing.assert_array_equal(r.scores, ref.scores)


def test_an_agent_whose_registration_cannot_be_pickled_is_named(agent_registry):
    """A class registered in a script (sent by value) with a lock among its class's
    attributes: the warning said "an agent cannot be pickled", naming none, because only
    the agent objects were tried, not the registrations sent with them."""
    from llama_env.agent import register

    class ClassLock:  # defined here, as in a script's __main__: pickled by value
        lock = threading.Lock()

        def act(self, observation, action_mask):
            return int(np.flatnonzero(action_mask)[0])

    register("classlock")(ClassLock)
    with pytest.warns(RuntimeWarning, match=r"^agent 'classlock' cannot be pickled and rebuilt in a worker") as w:
        evaluate(["random", "classlock"], 8, workers=2, batched=False)
    assert "cannot pickle '_thread.lock' object" in str(w[0].message)


def test_the_warning_of_an_agent_that_cannot_be_pickled_points_at_the_callers_line(agent_registry):
    """It pointed at a fixed depth inside llama-rl (train/evaluation/batched.py), not at
    the caller's line that evaluated; ``llama-rl eval`` still prints it as one line."""
    import contextlib
    import io
    import sys
    import warnings

    from llama_env.agent import register
    from train.cli import main

    class ClassLock:  # defined here, as in a script's __main__: pickled by value
        lock = threading.Lock()

        def act(self, observation, action_mask):
            return int(np.flatnonzero(action_mask)[0])

    register("classlock")(ClassLock)
    for play in (
        lambda: evaluate(["random", "classlock"], 8, workers=2),
        lambda: evaluate(["random", "classlock"], 8, workers=2, batched=False),
        lambda: tournament(["random", "classlock", "random"], 2, 4, workers=2, batched=False),
    ):
        with pytest.warns(RuntimeWarning, match="cannot be pickled") as caught:
            play()
        assert [w.filename for w in caught] == [__file__]
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err), warnings.catch_warnings():
        warnings.simplefilter("always")
        warnings.showwarning = lambda message, category, filename, lineno, file=None, line=None: sys.stderr.write(
            warnings.formatwarning(message, category, filename, lineno, line)
        )  # on stderr, as at the command line (pytest records them)
        assert main(["eval", "--agents", "classlock,random", "--games", "4", "--workers", "2", "--no-progress"]) == 0
    assert err.getvalue().startswith("llama-rl: warning: agent 'classlock' cannot be pickled and rebuilt in a worker")
    assert err.getvalue().count("\n") == 1, err.getvalue()


def test_a_worker_that_cannot_rebuild_the_agents_says_so():
    """Where only the worker fails to load the agents (another executor's remote
    process, a worker started anew), the first job raises a ``ValueError`` saying so, with
    the loading's error as its cause, not that error alone."""
    import cloudpickle

    from train.evaluation import runner

    args = runner.RunArgs(["unrebuildable", "random"], 0, Rules(2), None, [(), ()])
    payload = cloudpickle.dumps(([], [Unrebuildable(), "random"], args))
    try:
        runner.setup_worker(payload)
        with pytest.raises(ValueError, match=r"the agents could not be rebuilt in a worker process \(TypeError: ") as e:
            runner.run_job((lambda *a: None, []))
        assert isinstance(e.value.__cause__, TypeError) and "evaluate with workers=1" in str(e.value)
    finally:
        runner._WORKER.clear()


class Counting:
    """Counts the games and moves it plays."""

    name = "counting"

    def __init__(self):
        self.games = self.moves = 0

    def reset(self, seed=None):
        self.games += 1

    def act(self, observation, action_mask):
        self.moves += 1
        return int(np.flatnonzero(action_mask)[0])


def test_worker_processes_play_copies_of_the_agent_objects():
    """As the docs say (they did not): with workers the object passed is left as it was,
    its copies played; with ``workers=1`` it plays, and counts every game."""
    spread, here = Counting(), Counting()
    evaluate([spread, "random"], 8, seed=0, workers=2, batched=False)
    evaluate([here, "random"], 8, seed=0, workers=1)
    assert (spread.games, spread.moves) == (0, 0)
    assert here.games == 8 and here.moves > 0


def _blas_threads() -> list[int]:
    from threadpoolctl import threadpool_info

    return [i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"]


def test_evaluation_workers_keep_numpy_to_one_blas_thread():
    # the workers fill the cores; a BLAS that also spread over them doubled the search agent's time
    from concurrent.futures import ProcessPoolExecutor

    from train.evaluation.runner import _one_blas_thread

    with ProcessPoolExecutor(1, initializer=_one_blas_thread) as pool:
        threads = pool.submit(_blas_threads).result()
    assert threads and all(n == 1 for n in threads)


def test_rotation_moves_every_agent_through_every_seat():
    from train.evaluation import play_games  # noqa: F401 - the driver is public

    fixed = evaluate(["greedy", "random", "random"], 9, seed=1, workers=1, rotate=False, batched=False)
    rotated = evaluate(["greedy", "random", "random"], 9, seed=1, workers=1, batched=False)
    assert not fixed.rotate and rotated.rotate
    # game by game, game i deals from (seed, i): game 0 is seated identically either way
    assert fixed.scores[0].tolist() == rotated.scores[0].tolist()


def test_duplicate_deals_round_up_to_whole_groups_and_cancel_the_deal():
    r = evaluate(["greedy", "greedy", "greedy"], 10, seed=3, workers=1, duplicate=True)
    assert r.num_games == 12 and r.duplicate
    # identical deterministic agents: over a whole group every seating of the same deals
    # is played, so each agent's total share over a group is the same for all agents
    groups = r.shares.reshape(4, 3, 3).sum(axis=1)
    np.testing.assert_allclose(groups, groups[:, :1].repeat(3, axis=1))
    for a in r.agents:
        assert a.ci_low <= a.win_share <= a.ci_high


def test_duplicate_deals_won_every_time_still_have_an_interval():
    """Every deal group's mean was 1: the normal interval over groups had no width."""
    r = evaluate(["heuristic", "random"], 4, seed=0, workers=1, duplicate=True)
    best, worst = r.agents
    assert best.win_share == 1.0 and 0.2 < best.ci_low < 0.5 and best.ci_high == 1.0
    assert worst.win_share == 0.0 and worst.ci_low == 0.0 and 0.5 < worst.ci_high < 0.8

    # duplicate self-play gives every deal group a mean of exactly 1/3; the interval, which
    # cannot tell that from a sample that merely never varied, is no point but holds 1/3
    # (mean_ci pads the values' spread) and narrows with the groups
    def selfplay(games: int) -> tuple[float, float, float]:
        r = evaluate(["greedy"] * 3, games, seed=0, workers=1, duplicate=True)
        (one,) = {(a.win_share, a.ci_low, a.ci_high) for a in r.agents}
        return one

    (share, lo, hi), (_, lo_more, hi_more) = selfplay(6), selfplay(60)
    assert share == pytest.approx(1 / 3) and lo < lo_more < 1 / 3 < hi_more < hi


def test_masked_action_raises_naming_the_agent():
    with pytest.raises(IllegalActionError, match="cheater"):
        evaluate([MaskedAgent(), "random"], 4, seed=0, workers=1)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"agents": ["random"]}, "2..6 agents"),
        ({"agents": ["random"] * 7}, "2..6 agents"),
        ({"num_games": 0}, "num_games"),
        ({"workers": 0}, "workers"),
        ({"rules": Rules(3)}, r"the rules are for 3 players .* but the table has 2 seats"),
        ({"rules": {"end_score": 20}}, "rules must be a llama_env.Rules"),
        ({"agents": ["nope", "random"]}, "unknown agent"),
    ],
)
def test_bad_arguments(kwargs, match):
    args = {"agents": ["random", "random"], "num_games": 2, "workers": 1, **kwargs}
    with pytest.raises((ValueError, TypeError), match=match):
        evaluate(args.pop("agents"), args.pop("num_games"), **args)


class RuleSpy(BaseAgent):
    """Records the end score and its own hand size at its first decision of every game."""

    name = "spy"

    def __init__(self, seed=None):
        super().__init__(seed)
        self.seen: set[tuple[int, int]] = set()
        self.first = True

    def reset(self, seed=None):
        super().reset(seed)
        self.first = True

    def act(self, observation, action_mask):
        from llama_env.observation import ObsView

        o = ObsView(observation, 0)
        if self.first:
            self.seen.add((o.end_score, o.hand_size))
            self.first = False
        return int(np.flatnonzero(action_mask)[0])


def test_the_rules_reach_every_game_and_the_result():
    rules = Rules(3, end_score=15, hand_size=4)
    spy = RuleSpy()
    r = evaluate([spy, "random", "random"], 6, seed=0, workers=1, rules=rules)
    assert r.rules == rules and r.num_players == 3
    assert spy.seen == {(15, 4)}  # in every game: its hand before its first move
    assert all(r.scores.max(axis=1) >= 15)
    data = r.to_dict()
    assert (data["num_players"], data["end_score"], data["hand_size"]) == (3, 15, 4)
    assert "end_score 15" in r.to_table()
    t = tournament(["random", "greedy", "cautious"], 3, 6, seed=0, workers=1, rules=rules)
    assert t.rules == rules and (t.to_dict()["end_score"], t.to_dict()["hand_size"]) == (15, 4)
    assert t.to_dict()["batched"] is t.batched and data["batched"] is r.batched
    assert t.to_dict()["llama_rl_version"] == data["llama_rl_version"] == llama_env.__version__
    with pytest.raises(ValueError, match="the rules are for 3 players"):
        tournament(["random", "greedy", "cautious"], 2, 6, rules=rules)


def test_heuristic_beats_random_clearly():
    r = evaluate(["heuristic", "random", "random", "random"], 300, seed=11, workers=2)
    assert r[0].ci_low > 0.75
    two = evaluate(["heuristic", "random"], 200, seed=12, workers=2)
    assert two[0].ci_low > 0.85


def test_display_names():
    class Named(BaseAgent):
        name = "mine"

    class Plain:
        def act(self, o, m):
            return 8

    assert agent_display_names(["a", Named(), Plain(), "a"]) == ["a#1", "mine", "Plain", "a#2"]

    class Numbered(BaseAgent):
        name = "random#1"

    # two agents shared a name, and the tables built by name counted them as one
    assert agent_display_names([Numbered(), "random", "random"]) == ["random#1", "random#2", "random#3"]


def test_a_base_agent_subclass_without_a_name_is_named_by_its_class():
    """BaseAgent's name "agent" labelled every subclass that set none: tables read
    agent#1, agent#2 and result["MyBot"] was a KeyError."""

    class MyBot(BaseAgent):
        def act(self, o, m):
            return int(self.rng.choice(np.flatnonzero(m)))

    class Other(BaseAgent):
        def act(self, o, m):
            return int(np.flatnonzero(m)[0])

    assert agent_display_names([MyBot(seed=1), Other(), "random"]) == ["MyBot", "Other", "random"]
    result = evaluate([MyBot(seed=1), Other()], 4, seed=0, workers=1)
    assert [a.name for a in result.agents] == ["MyBot", "Other"]
    assert result["MyBot"].name == "MyBot"
    assert [agent_label(a) for a in (agents.make("greedy"), agents.make("perturbed"), agents.make("random"))] == [
        "greedy",
        "perturbed",
        "random",
    ]


def test_results_are_strict_json_when_an_agent_played_no_game():
    """An agent seated in no game had a NaN win share: json.dumps wrote NaN, which strict
    JSON readers refuse."""
    import json

    result = tournament(["random", "heuristic", "greedy", "cautious"], 2, 3, seed=0, workers=1)
    assert 0 in result.games_played
    data = json.loads(json.dumps(result.to_dict(), allow_nan=False))
    idle = [a for a in data["agents"] if a["games"] == 0]
    assert idle and all(a["win_share"] is None for a in idle)
    json.dumps(evaluate(["greedy", "random"], 20, seed=0, workers=1).to_dict(), allow_nan=False)


def test_mean_ci_known_values():
    mean, lo, hi = mean_ci(np.array([1.0] * 50 + [0.0] * 50), binary=True)
    assert mean == 0.5 and lo == pytest.approx(0.4038, abs=1e-3) and hi == pytest.approx(0.5962, abs=1e-3)
    assert mean_ci(np.array([1.0] * 50 + [0.0] * 50)) == (mean, lo, hi)  # 0/1 values are found so
    # four two-way ties: the padded values are 4 x 0.5 and z²/2 each of 0 and 1, p = 0.5,
    # v = z²/4 / (4 + z²), n_eff = 4 (4 + z²) / z² = 8.165...: not a point (it was [0.5, 0.5])
    mean, lo, hi = mean_ci(np.array([0.5, 0.5, 0.5, 0.5]))
    assert mean == 0.5 and lo == pytest.approx(0.2172, abs=1e-4) and hi == pytest.approx(0.7828, abs=1e-4)


def test_tournament_pairwise_ratings_and_determinism():
    pool = ["heuristic", "greedy", "random", "random"]
    t = tournament(pool, 3, 48, seed=2, workers=1)
    assert t.names == ["heuristic", "greedy", "random#1", "random#2"]
    assert sum(t.games_played) == 48 * 3
    # C(4, 3) = 4 tables cycled: every agent plays 3/4 of the games
    assert t.games_played == [36, 36, 36, 36]
    met = t.pair_games > 0
    np.testing.assert_allclose((t.pairwise + t.pairwise.T)[met], 1.0)
    assert np.all(np.isnan(np.diag(t.pairwise)))
    assert t.ranking()[0] == 0 and t.ranking()[-1] in (2, 3)
    assert t.pairwise[0, 2] > 0.8
    text = str(t)
    assert "ordinal" in text and "finished ahead" in text
    assert t.to_dict()["agents"][0]["name"] == "heuristic"
    t2 = tournament(pool, 3, 48, seed=2, workers=2)
    np.testing.assert_array_equal(t.pairwise, t2.pairwise)
    assert [r.mu for r in t.ratings] == [r.mu for r in t2.ratings]


Games = list[tuple[list[str], list[float]]]


def _plackett_luce_games(skills: dict[str, float], count: int, seats: int, seed: int) -> Games:
    """Games drawn from the model :func:`fit_ratings` fits: each table's places by
    Gumbel-perturbed strengths ``mu / (BETA * sqrt(seats))``, the score a seat's place."""
    rng = np.random.default_rng(seed)
    names = list(skills)
    games = []
    for _ in range(count):
        seated = [str(x) for x in rng.choice(names, seats, replace=False)]
        performance = np.array([skills[k] for k in seated]) / (BETA * np.sqrt(seats)) + rng.gumbel(size=seats)
        games.append((seated, [float(x) for x in (-performance).argsort().argsort()]))
    return games


def test_tournament_ratings_are_fitted_to_all_games_at_once():
    """Fixed agents: the fit finds the skills the games were drawn with, every game counts
    the same (their order changes nothing; openskill's online rater, the web history's,
    ends elsewhere when they are reversed) and sigma halves with four times the games."""
    skills = {"a": 28.0, "b": 25.0, "c": 25.0, "d": 22.0}
    games = _plackett_luce_games(skills, 6000, 3, seed=0)
    fitted = fit_ratings(games, "abcd")
    assert list(fitted) == ["a", "b", "c", "d"]
    for k, mu in skills.items():
        assert abs(fitted[k].mu - mu) < 4 * fitted[k].sigma
        assert fitted[k].ordinal == pytest.approx(fitted[k].mu - 3 * fitted[k].sigma)
    assert np.mean([r.mu for r in fitted.values()]) == pytest.approx(25.0)
    backwards = fit_ratings(games[::-1], "abcd")
    shuffled = fit_ratings([games[i] for i in np.random.default_rng(1).permutation(len(games))], "abcd")
    for k in "abcd":
        assert backwards[k].mu == pytest.approx(fitted[k].mu, abs=1e-9)
        assert shuffled[k].sigma == pytest.approx(fitted[k].sigma, abs=1e-9)
    forwards_online, backwards_online = Rater[str](), Rater[str]()
    for seated, scores in games:
        forwards_online.rate(seated, scores)
    for seated, scores in games[::-1]:
        backwards_online.rate(seated, scores)
    assert max(abs(forwards_online.ratings()[k].mu - backwards_online.ratings()[k].mu) for k in "abcd") > 0.5
    quarter = fit_ratings(games[:1500], "abcd")
    for k in "abcd":
        assert 1.7 < quarter[k].sigma / fitted[k].sigma < 2.3
    t = tournament(["heuristic", "greedy", "random"], 3, 60, seed=1, workers=1)
    again = fit_ratings([(g.seat_agents, g.scores) for g in t.records], range(3))
    assert t.ratings == list(again.values())


def test_fitted_ratings_edge_cases():
    """A participant who never wins keeps a finite rating, last; games where everyone ties
    tell nothing; one who never played has the mean; bad games are refused by name."""
    games = [(["a", "b", "z"], [0.0, 1.0, 2.0]), (["b", "a", "z"], [0.0, 1.0, 2.0])] * 50
    fitted = fit_ratings(games, ["a", "b", "z", "idle"])
    assert all(np.isfinite([r.mu, r.sigma]).all() for r in fitted.values())
    assert fitted["z"].mu < fitted["idle"].mu < fitted["a"].mu
    assert fitted["a"].mu == pytest.approx(fitted["b"].mu)
    assert fitted["idle"].mu == pytest.approx(25.0)
    with_ties = fit_ratings(games + [(["a", "z"], [3.0, 3.0])] * 40, ["a", "b", "z", "idle"])
    for k in fitted:
        assert with_ties[k].mu == pytest.approx(fitted[k].mu, abs=1e-9)
    tied = fit_ratings([(["a", "b", "z"], [1.0, 1.0, 0.0])] * 200)
    assert tied["a"].mu == pytest.approx(tied["b"].mu) and tied["z"].mu > tied["a"].mu
    assert fit_ratings([]) == {}
    with pytest.raises(ValueError, match="game 0: a game needs one score per seat: 2 seats, 3 scores"):
        fit_ratings([(["a", "b"], [1.0, 2.0, 3.0])])
    with pytest.raises(ValueError, match=r"game 0: scores must be finite numbers, got \[1.0, nan\]"):
        fit_ratings([(["a", "b"], [1.0, float("nan")])])


@pytest.mark.parametrize("bad", ["x", None, "1", float("inf")])
def test_fit_ratings_names_the_game_whose_scores_are_not_numbers(bad):
    """A score 'x' failed with float()'s "could not convert string to float: 'x'", None
    with a TypeError, though the docstring promises a ValueError; neither named the game."""
    games = [(["a", "b"], [1, 2]), (["a", "b"], np.array([3, 1])), (["b", "a"], [0, bad])]
    with pytest.raises(ValueError, match=r"^game 2: scores must be finite numbers, got \[0, "):
        fit_ratings(games)
    assert fit_ratings(games[:2])["a"].mu == fit_ratings([(["a", "b"], [1.0, 2.0]), (["a", "b"], [3.0, 1.0])])["a"].mu


def test_fitted_ratings_of_a_heads_up_record_and_a_prior_alone():
    """Known answers a mutation audit found missing: a 2-player game must move the ratings
    (an off-by-one in the placing levels left both at 25), and with no game the spread is
    the prior's, centred (sigma SIGMA / sqrt(2) for two fixed participants)."""
    from train.evaluation.ratings import SIGMA

    heads_up = fit_ratings([(["a", "b"], [0.0, 10.0])] * 10)
    assert heads_up["a"].mu > 30 and heads_up["b"].mu < 20
    assert heads_up["a"].mu - 25 == pytest.approx(25 - heads_up["b"].mu)
    three = fit_ratings([(["a", "b", "c"], [0.0, 5.0, 10.0])] * 10)
    assert three["a"].mu > three["b"].mu > three["c"].mu  # the second against the last counts too
    alone = fit_ratings([], ["x", "y"])
    assert alone["x"].mu == 25.0 and alone["x"].sigma == pytest.approx(SIGMA / np.sqrt(2))


def test_the_fitted_posterior_has_the_gradient_and_curvature_of_its_value_with_ties():
    """Sigma comes from the posterior's Hessian. A mutation audit found that dropping the
    tied places' weight from it passed: check the gradient and the Hessian against finite
    differences on games with ties at several levels."""
    from train.evaluation.ratings import _posterior, _Tables

    seats = np.array([[0, 1, 2, 3], [1, 2, 3, 0], [2, 3, 0, 1], [3, 0, 1, 2]] * 2)
    scores = np.array([[0, 0, 5, 9], [1, 4, 4, 4], [2, 2, 7, 7], [3, 6, 8, 8]] * 2, dtype=float)
    tables = [_Tables(seats, scores)]
    mu = np.array([24.0, 27.5, 22.0, 26.0])
    _, grad, hess = _posterior(mu, tables)
    h = 1e-4
    unit = np.eye(4)
    fd_grad = [(_posterior(mu + h * e, tables)[0] - _posterior(mu - h * e, tables)[0]) / (2 * h) for e in unit]
    fd_hess = np.column_stack(
        [(_posterior(mu + h * e, tables)[1] - _posterior(mu - h * e, tables)[1]) / (2 * h) for e in unit]
    )
    np.testing.assert_allclose(grad, fd_grad, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(hess, fd_hess, rtol=1e-5, atol=1e-9)


def test_a_tournament_of_as_many_agents_as_seats_moves_each_through_every_seat():
    """Without the rotation each agent kept one seat, and its rating held that seat's
    advantage."""
    t = tournament(["heuristic", "greedy", "cautious", "random"], 4, 8, seed=0, workers=1, batched=False)
    seen = {name: set() for name in t.names}
    for g in t.records:
        for seat, agent in enumerate(g.seat_agents):
            seen[t.names[agent]].add(seat)
    assert all(seats == {0, 1, 2, 3} for seats in seen.values()), seen


def test_tables_drawn_at_random_seat_each_agent_once(monkeypatch):
    """Past MAX_LISTED_TABLES combinations each game draws its table: drawing with
    replacement (one agent at two seats) passed every test."""
    import importlib

    tournament_module = importlib.import_module("train.evaluation.tournament")
    monkeypatch.setattr(tournament_module, "MAX_LISTED_TABLES", 0)
    tables = tournament_module._tables(6, 4, 300, seed=1)
    assert all(len(set(t)) == 4 for t in tables)
    assert {a for t in tables for a in t} == set(range(6))


@pytest.mark.parametrize(
    ("m", "k", "num_games"), [(30, 4, 20_000), (6, 3, 100), (12, 6, 5000), (9, 3, 300), (6, 2, 75)]
)
def test_tournament_seats_are_balanced_before_the_games_cover_every_table(m, k, num_games):
    """Combinations list their agents in ascending order and the seats shifted only once
    a pass, so until the games went round every combination the pool's first agent sat at
    seat 0 (which starts the first round) in every game it played."""
    from train.evaluation.tournament import _tables

    counts = np.zeros((m, k), dtype=np.int64)
    for table in _tables(m, k, num_games, seed=0):
        counts[list(table), np.arange(k)] += 1
    games = counts.sum(axis=1)
    spread = counts.max(axis=1) - counts.min(axis=1)
    assert (spread <= 0.1 * games + 3).all(), counts


@pytest.mark.parametrize("every_order", [False, True])
@pytest.mark.parametrize(("m", "k"), [(8, 4), (4, 2), (5, 2), (3, 2), (5, 3), (6, 4), (7, 6), (6, 6), (9, 6), (12, 3)])
def test_tournament_seats_are_balanced_at_any_number_of_games(m, k, every_order):
    """A combination's seating shifted by its place in the pass and the pass: seats
    evened out only after C(m, k) * k games. 8 agents at 4-seat tables, 70 games (35
    each): an agent sat at seat 0 in 16 of its games, another in 6. Now at every game
    count each agent's games at its seats differ by at most 5, and each combination's
    starts (each seating of it, with every_order) by at most 4."""
    from collections import Counter

    from train.evaluation.tournament import _tables

    count = math.comb(m, k)
    num_games = min(4 * k * count, 2000)
    tables = _tables(m, k, num_games, seed=1, every_order=every_order)
    counts = np.zeros((m, k), dtype=np.int64)
    for g, table in enumerate(tables):
        counts[list(table), np.arange(k)] += 1
        assert (counts.max(axis=1) - counts.min(axis=1)).max() <= 5, (g + 1, counts)
    ways = math.factorial(k) if every_order else k
    by_combination: dict[tuple[int, ...], Counter[tuple[int, ...]]] = {}
    for table in tables:
        by_combination.setdefault(tuple(sorted(table)), Counter())[table] += 1
    for seated in by_combination.values():
        fewest = min(seated.values()) if len(seated) == ways else 0
        assert max(seated.values()) - fewest <= 4, seated
    if m == 8 and k == 4 and not every_order:  # the audit's case
        seat0 = np.bincount([t[0] for t in _tables(8, 4, 70, seed=1)], minlength=8)
        assert seat0.max() - seat0.min() <= 2, seat0


def test_tournament_errors():
    with pytest.raises(ValueError, match="at least 4 agents"):
        tournament(["random", "greedy"], 4, 10)
    with pytest.raises(ValueError, match="num_players"):
        tournament(["random", "greedy"], 7, 10)


def test_a_tournament_too_short_for_every_agent_says_so():
    """An agent without a game showed a win share of nan, ranked among the measured."""
    t = tournament(["random", "greedy", "cautious"], 2, 1, seed=0, workers=1)
    idle = t.names[t.games_played.index(0)]
    table = t.to_table()
    assert "nan" not in table
    assert f"note: no game for {idle} (rated at the prior): play at least 2 games (seed 0's first 2 tables" in table
    assert "note" not in tournament(["random", "greedy", "cautious"], 2, 3, seed=0, workers=1).to_table()


def test_dataframes():
    import pandas as pd  # the notebooks extra, part of dev

    r = evaluate(["greedy", "random"], 10, seed=0, workers=1)
    df = r.to_dataframe()
    assert isinstance(df, pd.DataFrame) and list(df.index) == ["greedy", "random"]
    t = tournament(["greedy", "random", "cautious"], 2, 12, seed=0, workers=1)
    assert t.to_dataframe().index[0] in t.names
    assert t.pairwise_dataframe().shape == (3, 3)


def test_the_comparison_after_training_plays_the_runs_rules(monkeypatch: pytest.MonkeyPatch):
    """``llama-rl train`` ends with compare_agents on the run's rules: each row plays them
    at its own table size, not the standard rules."""
    from train.evaluation import report

    seen = []
    real = report.evaluate

    def spy(agents, num_games, **kwargs):
        result = real(agents, num_games, **kwargs)
        seen.append(result.rules)
        return result

    monkeypatch.setattr(report, "evaluate", spy)
    rows = report.compare_agents({"r": "random"}, games=4, players=(2, 4), rules=Rules(2, end_score=20, hand_size=4))
    assert [(r.players, r.opponent) for r in rows] == [(2, "random"), (2, "heuristic"), (4, "random"), (4, "heuristic")]
    assert seen == [Rules(n, end_score=20, hand_size=4) for n in (2, 2, 4, 4)]
    report.compare_agents({"r": "random"}, games=2, players=(3,), opponents=("random",))
    assert seen[-1] == Rules(3)


def test_the_comparison_table_names_rules_other_than_the_standard_ones():
    """The table `llama-rl train` prints after a run at --end-score 20 read as if played at
    the standard rules, unlike the eval and tournament headers."""
    from train.evaluation import report

    args = {"games": 2, "players": (2, 3), "opponents": ("random",), "workers": 1}
    odd = report.format_comparison(report.compare_agents({"r": "random"}, rules=Rules(2, end_score=20), **args))
    assert odd.splitlines()[0].endswith("seats rotated, end_score 20 (95% CI)"), odd
    both = report.compare_agents({"r": "random"}, rules=Rules(2, end_score=20, hand_size=4), **args)
    assert "seats rotated, end_score 20, hand_size 4 (95% CI)" in report.format_comparison(both)
    standard = report.format_comparison(report.compare_agents({"r": "random"}, **args))
    assert standard.splitlines()[0].endswith("2 games each, seats rotated (95% CI)"), standard


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"contenders": {}}, "needs at least one of contenders, got {}"),
        ({"opponents": ()}, r"needs at least one of opponents, got \(\)"),
        ({"players": []}, r"needs at least one of players, got \[\]"),
    ],
)
def test_a_comparison_of_nothing_is_refused(kwargs, match):
    """No contender, opponent or table size gave no rows, and formatting them crashed with
    "max expected at least 1 argument" (max(22, *()))."""
    from train.evaluation import report

    args = {"contenders": {"r": "random"}, "games": 2, "players": (2,), **kwargs}
    with pytest.raises(ValueError, match=match):
        report.compare_agents(args.pop("contenders"), **args)
    with pytest.raises(ValueError, match="format_comparison needs at least one row"):
        report.format_comparison([])
    rows = report.compare_agents({"r": "random"}, opponents=["random"], games=2, players=np.array([2, 3]), workers=1)
    assert [r.players for r in rows] == [2, 3]  # a numpy array of sizes, as before the check


def test_the_comparison_after_training_keeps_to_the_table_sizes_the_rules_allow(monkeypatch, capsys):
    """A run heads-up with 20 cards a hand cannot be compared at 4 players (the deal needs
    81 cards): the comparison plays 2 players only instead of failing after training."""
    from train.cli import train as train_cli
    from train.evaluation import report

    seen = []
    monkeypatch.setattr(report, "has_shipped_models", lambda: False)
    monkeypatch.setattr(report, "compare_agents", lambda contenders, **kw: seen.append(kw) or [])
    monkeypatch.setattr(report, "format_comparison", lambda rows: "table")
    monkeypatch.setattr("llama_env.agent.make", lambda name, **kw: "random")
    train_cli.print_final_comparison("unused", 4, rules=Rules(2, hand_size=20))
    assert seen[-1]["players"] == [2] and seen[-1]["rules"] == Rules(2, hand_size=20)
    train_cli.print_final_comparison("unused", 4, rules=Rules(2))
    assert seen[-1]["players"] == [2, 4]


SPAWNED = """
import json
import multiprocessing as mp
import sys

import numpy as np

from llama_env.agent import register

if __name__ == "__main__":  # as a notebook defines them: a spawned worker never runs this

    @register("picky_in_main")
    class Picky:
        def reset(self, seed=None):
            self.rng = np.random.default_rng(seed)

        def act(self, observation, action_mask):
            return int(self.rng.choice(np.flatnonzero(action_mask)))

    class Highest:
        def act(self, observation, action_mask):
            return int(np.flatnonzero(action_mask)[-1])

    mp.set_start_method(sys.argv[1], force=True)
    from train.evaluation import evaluate

    out = [evaluate(["picky_in_main", Highest(), "random"], 40, seed=3, workers=w).to_dict() for w in (1, 2)]
    print(json.dumps(out))
"""


@pytest.mark.parametrize("method", ["spawn", "forkserver"])
def test_workers_started_anew_know_the_agents_of_a_script(tmp_path, method):
    """Under spawn (macOS, Windows) or forkserver, a worker imports the package afresh: an
    agent registered at run time, or a class defined in a notebook or under the script's
    main guard, failed in every worker with a broken process pool. The workers now get
    them, and the same numbers."""
    import json
    import subprocess
    import sys

    script = tmp_path / "main.py"
    script.write_text(SPAWNED)
    done = subprocess.run([sys.executable, str(script), method], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    alone, workers = json.loads(done.stdout)
    assert alone == workers


def test_a_worker_that_cannot_build_its_agents_raises_the_reason():
    """The pool broke, and the reason went to stderr only."""
    import pickle

    from train.evaluation import runner

    payload = pickle.dumps(([], ["no_such_agent"], runner.RunArgs(["x"], 0, Rules(2), None, [()])))
    try:
        runner.setup_worker(payload)
        with pytest.raises(ValueError, match="unknown agent 'no_such_agent'"):
            runner.run_job((lambda *a: None, []))
    finally:
        runner._WORKER.clear()


def _children(pid: int) -> set[int]:
    """The process ids of ``pid``'s children (Linux's /proc)."""
    try:
        text = open(f"/proc/{pid}/task/{pid}/children").read()  # noqa: SIM115 - read at once
    except OSError:
        return set()
    return {int(c) for c in text.split()}


def _gone(pids: set[int], timeout: float) -> bool:
    """Whether every process of ``pids`` has ended (or is a zombie) within ``timeout``."""
    import time

    def alive(pid: int) -> bool:
        try:
            return open(f"/proc/{pid}/stat").read().split(") ", 1)[1][0] != "Z"  # noqa: SIM115
        except OSError:
            return False

    deadline = time.monotonic() + timeout
    while any(alive(p) for p in pids):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


@pytest.mark.skipif(not os.path.exists("/proc/self/task"), reason="reads the process tree from Linux's /proc")
@pytest.mark.parametrize("signum", ["SIGTERM", "SIGKILL"])
def test_an_evaluation_stopped_or_killed_leaves_no_worker_running(tmp_path, signum):
    """``kill PID`` (SIGTERM) stops an evaluation as Ctrl-C does, with exit code 130, and it
    ends its workers (they went on playing for no one, handed to init, for good); a
    parent killed outright (SIGKILL) leaves workers that end themselves within seconds."""
    import signal
    import subprocess
    import sys
    import time

    args = ["eval", "--agents", "heuristic,random,random,random", "--games", "400000", "--workers", "2"]
    args += ["--no-batch", "--record", str(tmp_path / "rec")]
    script = "import sys\nfrom train.cli import main\nsys.exit(main(sys.argv[1:]))\n"
    proc = subprocess.Popen([sys.executable, "-c", script, *args], stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while len(list((tmp_path / "rec").glob("game_*.json"))) < 20:  # the workers play
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
            time.sleep(0.1)
        workers = _children(proc.pid)
        assert len(workers) == 2, workers
        proc.send_signal(getattr(signal, signum))
        _, err = proc.communicate(timeout=30)
    finally:
        proc.kill()
    if signum == "SIGTERM":
        assert proc.returncode == 130 and "llama-rl: interrupted (SIGTERM)" in err, err
        assert "Traceback" not in err, err
    assert _gone(workers, timeout=10), f"workers left running after {signum}: {workers}"
    for record in (tmp_path / "rec").glob("game_*.json"):  # each is whole: written aside, then moved
        assert json.loads(record.read_text())["format"] == "llama-rl-game"


def test_workers_stopped_leave_no_pool_thread_for_exit_to_race_with():
    """Python 3.11's exit hook wakes a process pool's thread with no lock: when that thread
    was still closing its wakeup pipe, an interrupted ``llama-rl eval`` printed an
    "Exception ignored ... Bad file descriptor" traceback after "interrupted". Stopping the
    workers now ends them and waits for the pool's thread to end. Before Python 3.14 that
    reads the pool's private attributes (train/evaluation/_pool_internals.py): this fails,
    naming the assumption, on a Python that no longer behaves as assumed."""
    import platform

    from train.evaluation._pool_internals import CHECKED_VERSIONS, broken_assumptions

    broken = broken_assumptions()
    assert not broken, f"Python {platform.python_version()} (checked: {CHECKED_VERSIONS}) breaks: {'; '.join(broken)}"


def test_workers_on_windows_stay_within_its_process_pools_limit(monkeypatch):
    """Windows' process pools take at most 61 processes: on a machine of 64 cores every
    default evaluation failed with "max_workers must be <= 61" (and train's final
    comparison with a traceback)."""
    from train.evaluation import runner

    monkeypatch.setattr(runner, "usable_cores", lambda: 128)  # the cores this process may run on
    assert runner.num_workers(None) == 128
    monkeypatch.setattr(runner.os, "name", "nt")
    assert runner.num_workers(None) == 61 and runner.num_workers(61) == 61
    with pytest.raises(ValueError, match="workers must be at most 61 on Windows"):
        runner.num_workers(62)


class SpawnedPool:
    """An executor other than the default: a ``multiprocessing`` pool of fresh
    interpreters, as a remote one (Ray's actors) would be; it counts its jobs."""

    def __init__(self) -> None:
        self.jobs = 0
        self.closed = False

    def run(self, payload, jobs, workers):
        import multiprocessing

        self.jobs += len(jobs)
        from train.evaluation.runner import run_job, setup_worker

        try:
            with multiprocessing.get_context("spawn").Pool(workers, setup_worker, (payload,)) as pool:
                yield from pool.imap(run_job, jobs)
        finally:
            self.closed = True


def test_another_executor_gives_the_same_numbers(monkeypatch):
    from train.evaluation import batched

    table = ["heuristic", "greedy", "random", "cautious"]
    pool = SpawnedPool()
    scalar = evaluate(table, 40, seed=7, workers=2, batched=False)
    spread = evaluate(table, 40, seed=7, workers=2, batched=False, executor=pool)
    np.testing.assert_array_equal(scalar.scores, spread.scores)
    assert pool.jobs > 1 and pool.closed
    monkeypatch.setattr(batched, "CHUNK_GAMES", 30)  # several batched chunks from a few games
    here = tournament(table, 3, 120, seed=2, workers=2)
    pool = SpawnedPool()
    there = tournament(table, 3, 120, seed=2, workers=2, executor=pool)
    assert here.batched and there.batched and pool.jobs == 4
    assert [r.scores for r in here.records] == [r.scores for r in there.records]


def test_an_executor_that_returns_the_wrong_number_of_results_is_named():
    short = ScriptedExecutor(lambda places: places[:-1])  # loses the last result
    with pytest.raises(RuntimeError, match=r"returned \d+ results for \d+ jobs"):
        evaluate(["random", "random"], 20, workers=2, batched=False, executor=short)
    extra = ScriptedExecutor(lambda places: [*places, 0])  # yields the first twice
    with pytest.raises(RuntimeError, match="returned more results than its"):
        evaluate(["random", "random"], 20, workers=2, batched=False, executor=extra)
    assert extra.closed  # stopped early, the executor was told
    with pytest.raises(ValueError, match=r"executor must have run\(payload, jobs, workers\)"):
        evaluate(["random", "random"], 20, workers=2, batched=False, executor=object())


@pytest.mark.parametrize("workers", [1, 2])
@pytest.mark.parametrize("batched", [False, True])
def test_an_executor_class_is_refused_whatever_the_workers(workers, batched):
    """The class instead of an instance: with workers a TypeError deep in the pool (run()
    missing an argument), with workers=1 silently accepted."""
    from train.evaluation.runner import LocalProcesses

    with pytest.raises(ValueError, match=r"executor must be an instance: LocalProcesses\(\), not the class"):
        evaluate(["random", "heuristic"], 40, workers=workers, batched=batched, executor=LocalProcesses)
    with pytest.raises(ValueError, match=r"executor must be an instance: LocalProcesses\(\)"):
        tournament(["random", "heuristic", "greedy"], 2, 6, workers=workers, batched=batched, executor=LocalProcesses)


def test_a_comma_separated_string_is_a_table_and_one_agent_is_refused():
    listed = evaluate(["heuristic", "cautious:threshold=2"], 20, seed=1, workers=1)
    joined = evaluate("heuristic,cautious:threshold=2", 20, seed=1, workers=1)  # was read letter by letter
    assert joined.names == listed.names == ["heuristic", "cautious:threshold=2"]
    np.testing.assert_array_equal(joined.scores, listed.scores)
    assert tournament("heuristic,greedy,random", 2, 6, workers=1).names == ["heuristic", "greedy", "random"]
    from agents.random_agent import RandomAgent

    with pytest.raises(ValueError, match="agents must be a list, one agent per seat, got one agent"):
        evaluate(RandomAgent(), 2, workers=1)


@pytest.mark.parametrize("batched", [True, False])
def test_an_agent_class_is_refused_by_name_before_any_game(batched):
    """A class has a callable act too: it passed the check and failed in its first game
    with "HeuristicAgent.act() missing 1 required positional argument"."""
    from agents.heuristic import HeuristicAgent

    match = r"agents\[0\]: got the class HeuristicAgent: pass an instance, HeuristicAgent\(\)"
    with pytest.raises(TypeError, match=match):
        evaluate([HeuristicAgent, "random"], 10, workers=2, batched=batched)
    with pytest.raises(TypeError, match=match):
        tournament([HeuristicAgent, "random", "greedy"], 2, 10, workers=2, batched=batched)


@pytest.mark.parametrize(
    ("tasks", "kwargs", "error", "match"),
    [
        ([GameTask(0, 0, (0, -1))], {}, ValueError, r"tasks\[0\].seat_agents\[1\]: -1 is not a player position 0..1"),
        ([GameTask(0, 0, (0, 1)), GameTask(1, 1, (0, 5))], {}, ValueError, r"tasks\[1\].seat_agents\[1\]: 5 is not"),
        ([GameTask(0, 0, (0, 1, 1))], {}, ValueError, r"tasks\[0\].seat_agents must name an agent for each of the 2"),
        ([GameTask(-1, 0, (0, 1))], {}, ValueError, r"tasks\[0\].index must be a non-negative integer, got -1"),
        ([GameTask(0, -2, (0, 1))], {}, ValueError, r"tasks\[0\].deal_key must be a non-negative integer, got -2"),
        (
            [GameTask(0, 0, (0, 1)), GameTask(1, 1, (1, 0)), GameTask(0, 2, (1, 0))],
            {},
            ValueError,
            r"tasks\[2\].index 0 repeats tasks\[0\].index: each game needs an index of its own",
        ),
        ([(0, 0, (0, 1))], {}, TypeError, r"tasks\[0\] must be a GameTask\(index, deal_key, seat_agents\)"),
        ([GameTask(0, 0, (0, 1))], {"rules": None}, TypeError, "rules must be a llama_env.Rules, got None"),
        ([GameTask(0, 0, (0, 1))], {"seed": -1}, ValueError, "seed must be a non-negative integer, got -1"),
    ],
)
def test_play_games_checks_its_arguments(tasks, kwargs, error, match):
    """The exported runner took what evaluate() makes for granted: a bad task failed deep
    inside numpy or as an AttributeError."""
    args = {"seed": 0, "workers": 1, "rules": Rules(2), **kwargs}
    with pytest.raises(error, match=match):
        play_games(["greedy", "random"], tasks, **args)
    assert play_games(["greedy", "random"], [], seed=0, workers=1, rules=Rules(2)) == []


def test_numpy_numbers_are_taken_as_python_ones_and_results_stay_plain_json():
    import json

    r = evaluate(["heuristic", "random"], np.int64(8), seed=np.int64(2), workers=1)
    assert r.num_games == 8 and type(r.seed) is int
    assert json.loads(json.dumps(r.to_dict()))["seed"] == 2  # a numpy seed failed json.dumps
    t = tournament(["heuristic", "random", "greedy"], np.int64(2), np.int64(6), seed=np.int64(1), workers=1)
    assert t.num_players == 2 and json.loads(json.dumps(t.to_dict()))["seed"] == 1


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"seed": -1}, ValueError, "seed must be a non-negative integer, got -1"),
        ({"seed": None}, ValueError, "seed must be a non-negative integer, got None"),  # was random, "seed None"
        ({"seed": "a"}, ValueError, "seed must be a non-negative integer, got 'a'"),
        ({"duplicate": "no"}, TypeError, "duplicate must be True or False, got 'no'"),  # was read as True
        ({"rotate": 0}, TypeError, "rotate must be True or False, got 0"),
        ({"record_dir": ""}, ValueError, "record_dir is empty"),  # the records went to the current folder
    ],
)
def test_seeds_and_switches_are_checked_by_name(kwargs, error, match):
    with pytest.raises(error, match=match):
        evaluate(["random", "random"], 2, workers=1, **kwargs)
    if "seed" in kwargs:
        with pytest.raises(error, match=match):
            tournament(["random", "random"], 2, 2, workers=1, **kwargs)


def test_the_first_line_says_how_the_games_were_played_and_every_rule_changed():
    rules = Rules(2, end_score=20, hand_size=4)
    batched = evaluate(["cautious", "greedy"], 10, workers=1, rules=rules)
    scalar = evaluate(["cautious", "greedy"], 10, workers=1, rules=rules, batched=False)
    assert (
        batched.to_table()
        .splitlines()[0]
        .startswith("10 games, 2 players, rotated seats, batched engine, seed 0, end_score 20, hand_size 4;")
    )
    assert ", game by game, seed 0, end_score 20, hand_size 4;" in scalar.to_table().splitlines()[0]
    standard = evaluate(["cautious", "greedy"], 10, workers=1, batched=False).to_table().splitlines()[0]
    assert "end_score 40;" in standard and "hand_size" not in standard
    t = tournament(["cautious", "greedy", "random"], 2, 6, workers=1, rules=rules)
    assert t.to_table().splitlines()[0] == (
        "6 games, 2 players per table, batched engine, seed 0, end_score 20, hand_size 4"
    )


def test_a_tournament_result_answers_as_an_evaluation_does():
    t = tournament(["heuristic", "greedy", "random"], 2, 6, workers=1)
    assert t.win_shares == t.win_share
    row = t["heuristic"]
    assert row == t[0] and row["name"] == "heuristic" and row["games"] == t.games_played[0]
    assert row["ordinal"] == t.ratings[0].ordinal and row == t.to_dict()["agents"][0] | {"win_share": row["win_share"]}


def test_an_unknown_name_is_a_key_error_listing_the_agents_in_both_results():
    """An evaluation's result said only "ValueError: 'nope' is not in list"."""
    r = evaluate(["heuristic", "random", "random"], 4, workers=1)
    with pytest.raises(
        KeyError, match=r"no agent 'nope' in this evaluation; its agents: heuristic, random#1, random#2"
    ):
        r["nope"]
    assert r["random#2"] is r[2]
    t = tournament(["heuristic", "greedy", "random"], 2, 6, workers=1)
    with pytest.raises(KeyError, match=r"no agent 'nope' in this tournament; its agents: heuristic, greedy, random"):
        t["nope"]


def test_a_tournament_command_refuses_games_given_as_its_rules():
    from llama_env.agent import AgentSpec
    from train.cli.tournament import TournamentCommand

    with pytest.raises(ValueError, match="second field is rules.*got 20; give the games by name: games=20"):
        TournamentCommand((AgentSpec("random"), AgentSpec("greedy")), 20)  # was an AttributeError in the run


def test_make_takes_an_agent_spec():
    import agents

    made = agents.make("cautious:threshold=2")
    assert made.threshold == 2 and made.name == "cautious:threshold=2"
    with pytest.raises(ValueError, match="agent 'cautious' has no parameter 'x'"):
        agents.make("cautious:x=1")


def test_rule_options_by_name_as_the_envs_take_them():
    by_name = evaluate(["cautious", "greedy"], 10, workers=1, end_score=20, hand_size=4)
    given = evaluate(["cautious", "greedy"], 10, workers=1, rules=Rules(2, end_score=20, hand_size=4))
    assert by_name.rules == given.rules and by_name.to_dict() == given.to_dict()  # was a TypeError
    assert tournament(["cautious", "greedy", "random"], 2, 6, workers=1, end_score=15).rules == Rules(2, end_score=15)
    with pytest.raises(TypeError, match=r"evaluate\(\) got an unexpected keyword argument 'end_scor'"):
        evaluate(["cautious", "greedy"], 10, end_scor=20)
    with pytest.raises(ValueError, match=r"either as rules=Rules\(...\) or as end_score=..., not both"):
        tournament(["cautious", "greedy"], 2, 2, rules=Rules(2), end_score=20)
    with pytest.raises(ValueError, match="hand_size"):
        evaluate(["cautious", "greedy"], 10, hand_size=99)
