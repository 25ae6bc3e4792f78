"""What the twelfth stop's audit of evaluation through the Python API found: results
that could not be compared with ``==``."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from train.evaluation import evaluate, tournament


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
