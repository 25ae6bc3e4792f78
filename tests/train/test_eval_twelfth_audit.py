"""What the twelfth stop's audit of evaluation through the Python API found: results
that could not be compared with ``==`` and showed as long dataclass dumps in notebooks, a
tournament's note of a number of games no one needs, docstrings pointing at a private
function, and a rater and compare_agents that took what they could not use."""

from __future__ import annotations

import dataclasses
import inspect
import math

import numpy as np
import pytest

from train.evaluation import evaluate, tournament
from train.evaluation.ratings import Rater


@pytest.mark.parametrize("batched", [True, False])
def test_two_evaluations_of_one_seed_are_equal(batched):
    """``==`` asked a numpy array for its truth: a ValueError."""
    a = evaluate("heuristic,random", 20, workers=1, batched=batched)
    b = evaluate("heuristic,random", 20, workers=1, batched=batched)
    assert a == b
    assert a != evaluate("heuristic,random", 20, seed=1, workers=1, batched=batched)
    changed = dataclasses.replace(b, scores=b.scores.copy())
    changed.scores[0, 0] += 1
    assert a != changed
    assert a != "a result"


def test_two_tournaments_of_one_seed_are_equal():
    """An idle agent's win share and the pairs that never met are NaN: equal to a NaN."""
    a = tournament("heuristic,random,random:seed=1,random:seed=2", 2, 2, workers=1)
    b = tournament("heuristic,random,random:seed=1,random:seed=2", 2, 2, workers=1)
    assert np.isnan(a.pairwise).any() and a == b
    assert a != tournament("heuristic,random,random:seed=1,random:seed=2", 2, 3, workers=1)
    with pytest.raises(TypeError, match="unhashable"):
        hash(a)


@pytest.mark.parametrize(
    "play",
    [
        lambda: evaluate("heuristic,random", 20, workers=1),
        lambda: tournament("heuristic,random,random:seed=1", 2, 4, workers=1),
    ],
)
def test_a_notebook_shows_a_result_as_its_table(play):
    """A cell ending with a result showed the dataclass's fields, 800 characters on one
    line (a tournament's arrays among them)."""
    pretty = pytest.importorskip("IPython.lib.pretty").pretty
    result = play()
    assert pretty(result) == str(result)
    assert repr(result) == (
        f"<{type(result).__name__}: {result.num_games} games, {result.num_players} players, seed 0; win shares "
        + ", ".join(f"{n} {w:.3f}" for n, w in zip(result.names, result.win_shares, strict=True))
        + ">"
    )
    assert len(repr(result)) < 120


@pytest.mark.parametrize(("m", "k"), [(10, 4), (30, 6)])  # the tables listed, and drawn at random (593,775)
def test_a_tournament_too_short_names_the_games_that_seat_everyone(m, k):
    """The note said C(m, k) games: 210 at 10 agents where 5 seat them all, 593,775 at 30
    agents where the tables drawn at random need not seat everyone in as many."""
    pool = [f"random:seed={i}" for i in range(m)]
    table = tournament(pool, k, 2, workers=1).to_table()
    enough = int(table.split("play at least ")[1].split()[0])
    assert f"(seed 0's first {enough} tables of {k} seat all {m} agents)" in table
    assert enough < 20
    assert 0 in tournament(pool, k, enough - 1, workers=1).games_played
    assert 0 not in tournament(pool, k, enough, workers=1).games_played


def test_the_tournament_docstrings_say_how_tables_are_drawn():
    """They said "see _tables", which the API reference does not show."""
    from train.evaluation.tournament import TournamentResult

    assert "_tables" not in (tournament.__doc__ or "")
    assert "every combination of ``num_players`` agents" in (tournament.__doc__ or "")
    assert ":func:`_tables`" not in inspect.getsource(TournamentResult)


@pytest.mark.parametrize("scores", [["5", 3], [1, math.nan], [None, 2]])
def test_a_rater_refuses_scores_that_are_no_numbers(scores):
    """'5' was rated silently, a NaN failed inside openskill; fit_ratings refused both."""
    rater: Rater[str] = Rater()
    with pytest.raises(ValueError, match=r"^scores must be finite numbers, got \["):
        rater.rate(["a", "b"], scores)
    assert rater.ratings() == {}
    with pytest.raises(ValueError, match=r"^a game needs one score per seat: 2 seats, 1 scores$"):
        rater.rate(["a", "b"], [1])


@pytest.mark.parametrize(
    ("contenders", "kwargs", "match"),
    [
        (["heuristic"], {}, r"contenders as a mapping of label to agent \(\{'new': 'heuristic'\}\), got a list$"),
        ({"h": "heuristic"}, {"players": (2, 1)}, r"^compare_agents needs table sizes 2\.\.6 in players, got 1$"),
        ({"h": "heuristic"}, {"players": (7,)}, r"^compare_agents needs table sizes 2\.\.6 in players, got 7$"),
        ({"h": "heuristic"}, {"opponents": ["random", "nosuch"]}, r"^unknown agent 'nosuch'"),
        ({"h": "heuristic", "x": "nosuch"}, {}, r"^unknown agent 'nosuch'"),
    ],
)
def test_compare_agents_checks_what_it_is_given_before_any_game(monkeypatch, contenders, kwargs, match):
    """A list of contenders was an AttributeError, players=(1,) said "evaluate needs 2..6
    agents", an unknown opponent or contender was found after the other rows' games."""
    from train.evaluation import report

    monkeypatch.setattr(report, "evaluate", lambda *a, **k: pytest.fail("a game was played"))
    with pytest.raises(ValueError, match=match):
        report.compare_agents(contenders, games=2, workers=1, **kwargs)


def test_compare_agents_rows_hold_plain_int_table_sizes():
    """Sizes given as a numpy array reached each row as numpy integers (the row says ``int``,
    and ``json.dumps`` refuses a numpy integer); they are checked as the engine checks a
    table size, and held as plain ints."""
    from train.evaluation.report import compare_agents

    rows = compare_agents({"h": "heuristic"}, opponents="random", players=np.array([2, 3]), games=2, workers=1)
    assert [type(r.players) for r in rows] == [int, int]
