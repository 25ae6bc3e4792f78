"""What the tenth stop's audit of evaluation found: intervals of values that are no win
shares, a table of agents given as a set, an executor that returns its chunks out of
order, and results and analysis tables that took what they could not read."""

from __future__ import annotations

import math

import numpy as np
import pytest
from conftest import ScriptedExecutor

from train.evaluation import evaluate, mean_ci, tournament


@pytest.mark.parametrize(
    ("values", "match"),
    [
        ([5, 7], r"got 5\.0 at values\[0\]"),  # was (6.0, 2.341, -4.711): the mean outside its interval
        ([0.5, -1, 0], r"got -1\.0 at values\[1\]"),
        ([0, math.nan, 1], r"got nan at values\[1\]"),  # was (nan, 0.0, 1.0)
        ([0, math.inf], r"got inf at values\[1\]"),
        (["1", "0"], r"got '1' at values\[0\]"),  # was read as the numbers 1 and 0
        ([1, "0"], r"got '0' at values\[1\]"),
        ([0.5, None], r"got None at values\[1\]"),
    ],
)
def test_mean_ci_refuses_what_is_no_win_share(values, match):
    with pytest.raises(
        ValueError, match=r"values must be numbers in \[0, 1\] \(win shares, or per-deal means\), " + match
    ):
        mean_ci(values)


@pytest.mark.parametrize(
    ("values", "shape"),
    [([[0, 1], [1, 0]], r"shape \(2, 2\)"), (0.5, r"shape \(\)"), ([[0, 1], [1]], "rows")],
)
def test_mean_ci_refuses_what_is_not_one_row_of_values(values, shape):
    """A table of rows was flattened into one list of games."""
    with pytest.raises(
        ValueError, match=r"values must be one number in \[0, 1\] per game or deal \(1-D\), got " + shape
    ):
        mean_ci(values)


def test_mean_ci_still_takes_win_shares_in_any_numeric_form():
    assert mean_ci([True, False]) == mean_ci(np.array([1.0, 0.0]))
    assert mean_ci(np.float32([0.5, 1.0]))[0] == 0.75
    assert math.isnan(mean_ci([])[0])


def test_mean_ci_reads_numbers_held_as_objects():
    """A pandas ``object`` column of win shares (an empty table's) was refused naming a
    good value ("got 0.5 at values[0]"), and an empty one was an IndexError."""
    assert mean_ci(np.array([0.5, 1.0], dtype=object)) == mean_ci([0.5, 1.0])
    assert all(math.isnan(x) for x in mean_ci(np.array([], dtype=object)))
    with pytest.raises(ValueError, match=r"got None at values\[1\]"):
        mean_ci(np.array([0.5, None], dtype=object))
    with pytest.raises(ValueError, match=r"got 1j at values\[0\]"):
        mean_ci(np.array([1j, 0.5], dtype=object))


@pytest.mark.parametrize(
    ("agents", "kind"),
    [
        ({"heuristic", "random"}, "set"),
        (frozenset({"heuristic", "random"}), "frozenset"),
        ({"heuristic": 1, "random": 2}, "dict"),
        ({"heuristic": 1, "random": 2}.keys(), "dict_keys"),
    ],
)
def test_a_set_or_dict_of_agents_is_refused(agents, kind):
    """A set's order follows string hashing, so the same seed seated the agents, and gave
    results, differently in each Python process; a dict was read as its keys."""
    message = rf"agents must be an ordered sequence \(a list\), got a {kind}$"
    with pytest.raises(ValueError, match=message):
        evaluate(agents, 4, workers=1)
    with pytest.raises(ValueError, match=message):
        tournament(agents, 2, 4, workers=1)


def test_an_executor_that_yields_out_of_order_gives_the_same_numbers(monkeypatch):
    """The results were taken in the order they came: the per-game arrays were reordered
    and a duplicate evaluation's deal groups mixed other deals' games. The executor yields
    them last job first, as an unordered one (Ray's ``map_unordered``) may."""
    from train.evaluation import batched

    table = ["heuristic", "random", "greedy"]
    here = evaluate(table, 60, seed=1, workers=1, duplicate=True)
    backwards = ScriptedExecutor(reversed)
    there = evaluate(table, 60, seed=1, workers=2, duplicate=True, executor=backwards)
    assert backwards.jobs > 1
    np.testing.assert_array_equal(here.shares, there.shares)
    assert [(a.ci_low, a.ci_high) for a in here.agents] == [(a.ci_low, a.ci_high) for a in there.agents]
    monkeypatch.setattr(batched, "CHUNK_GAMES", 30)  # several batched chunks from a few games
    here_t = tournament(table, 2, 120, seed=2, workers=1)
    backwards = ScriptedExecutor(reversed)
    there_t = tournament(table, 2, 120, seed=2, workers=2, executor=backwards)
    assert here_t.batched and there_t.batched and backwards.jobs == 4
    assert [r.scores for r in here_t.records] == [r.scores for r in there_t.records]


class Stranger:
    """An executor that yields what it made up, not what run_job returned."""

    def run(self, payload, jobs, workers):
        yield from ["a result"] * len(jobs)


def test_an_executor_that_yields_no_job_result_is_named():
    with pytest.raises(
        RuntimeError, match=r"the executor <.*Stranger.*> returned 'a result', not what run_job returned"
    ):
        evaluate(["random", "random"], 20, workers=2, batched=False, executor=Stranger())


def test_a_result_is_read_by_agent_name_as_a_dict():
    """``"heuristic" in result`` was False while ``result["heuristic"]`` worked: Python
    read ``in`` (and ``for``) through ``__getitem__`` by position, meeting AgentStats."""
    r = evaluate(["heuristic", "random"], 4, seed=0, workers=1)
    assert "heuristic" in r and "random" in r and "greedy" not in r and 0 not in r
    assert list(r) == ["heuristic", "random"] and len(r) == 2
    assert {name: r[name].win_share for name in r} == dict(zip(r.names, r.win_shares, strict=True))
    t = tournament(["heuristic", "random", "greedy"], 2, 6, seed=0, workers=1)
    assert "greedy" in t and "cautious" not in t
    assert list(t) == t.names and len(t) == 3
    assert [t[name]["games"] for name in t] == t.games_played


def test_the_analysis_tables_say_what_they_need():
    """A result where its records belong failed deep inside: "'EvalResult' object has no
    attribute 'records'", "'AgentStats' object has no attribute 'win_shares'"; no
    records at all were a KeyError 'agent'."""
    import dataclasses

    from train.evaluation.analysis import behaviour_frame, games_frame, win_share_frame

    r = evaluate(["heuristic", "random"], 4, seed=0, workers=1)
    t = tournament(["heuristic", "random", "greedy"], 2, 6, seed=0, workers=1)
    needs = r"games_frame needs game records, a tournament's \(result.records, result.names\), got "
    with pytest.raises(
        TypeError, match=r"win_share_frame needs a TournamentResult \(its game records\), got EvalResult: "
    ):
        win_share_frame(r)
    with pytest.raises(TypeError, match=needs + "the EvalResult: an evaluation keeps none"):
        games_frame(r, r.names)
    with pytest.raises(TypeError, match=needs + r"the TournamentResult: pass its \.records"):
        games_frame(t, t.names)
    with pytest.raises(TypeError, match=needs + r"AgentStats at records\[0\]"):
        games_frame(r.agents, r.names)
    with pytest.raises(ValueError, match=r"behaviour_frame needs .*: records\[0\] seats agent \d, names has 1"):
        behaviour_frame(t.records, t.names[:1])
    # each names itself, not the games_frame it calls
    with pytest.raises(TypeError, match=needs.replace("games_frame", "behaviour_frame") + "the EvalResult"):
        behaviour_frame(r, r.names)
    with pytest.raises(TypeError, match=needs.replace("games_frame", "win_share_frame") + r"AgentStats at records"):
        win_share_frame(dataclasses.replace(t, records=r.agents))
    assert games_frame(iter(t.records), t.names).equals(games_frame(t.records, t.names))
    none = behaviour_frame([], [])
    assert none.empty and list(none.columns) == list(behaviour_frame(t.records, t.names).columns)
    assert games_frame([], []).empty and "win_share" in games_frame([], []).columns


def test_the_analysis_tables_without_records_have_their_columns_types():
    """With no records the games table's columns held objects, so win_share_frame of a
    tournament without records failed deep inside (mean_ci: IndexError)."""
    import dataclasses

    from train.evaluation.analysis import games_frame, win_share_frame

    t = tournament(["heuristic", "random", "greedy"], 2, 6, seed=0, workers=1)
    full, empty = games_frame(t.records, t.names), games_frame([], [])
    assert dict(empty.dtypes) == dict(full.dtypes) and "object" not in set(map(str, full.drop(columns="agent").dtypes))
    none = win_share_frame(dataclasses.replace(t, records=[]))
    assert sorted(none.index) == sorted(t.names) and (none.games == 0).all() and none.win_share.isna().all()


def test_compare_agents_takes_one_opponent_or_table_size_alone():
    """``opponents="random"`` was read letter by letter ("unknown agent 'r'"), and
    ``players=4`` failed with "object of type 'int' has no len()"."""
    from train.evaluation.report import compare_agents

    alone = compare_agents({"h": "heuristic"}, opponents="random", players=3, games=3, workers=1)
    listed = compare_agents({"h": "heuristic"}, opponents=["random"], players=[3], games=3, workers=1)
    assert alone == listed and [(row.players, row.opponent) for row in alone] == [(3, "random")]
    with pytest.raises(ValueError, match="compare_agents needs at least one of opponents"):
        compare_agents({"h": "heuristic"}, opponents="", games=3)


def test_compare_agents_reads_a_string_of_opponents_as_evaluate_reads_agents():
    """``opponents="random,greedy"`` was one agent ("unknown agent 'random,greedy'"), where
    ``evaluate("random,greedy", ...)`` seats two."""
    from train.evaluation.report import compare_agents

    args = {"players": 2, "games": 2, "workers": 1}
    text = compare_agents({"h": "heuristic"}, opponents="random,cautious:threshold=4", **args)
    listed = compare_agents({"h": "heuristic"}, opponents=["random", "cautious:threshold=4"], **args)
    assert text == listed and [row.opponent for row in text] == ["random", "cautious:threshold=4"]
    with pytest.raises(ValueError, match=r"empty entry in the agent list 'random,'"):
        compare_agents({"h": "heuristic"}, opponents="random,", **args)
