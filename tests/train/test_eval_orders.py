"""Seatings of an evaluation: rotation, and every order round the table."""

from __future__ import annotations

import itertools
import json
import math

import numpy as np
import pytest

import agents  # noqa: F401 - the built-in agents, registered
from train.cli import main
from train.evaluation import evaluate
from train.evaluation.evaluate import seatings


def _followers(row: np.ndarray) -> set[tuple[int, int]]:
    """(agent, the agent who plays right after it) round one table."""
    n = len(row)
    return {(int(row[s]), int(row[(s + 1) % n])) for s in range(n)}


@pytest.mark.parametrize("n", range(2, 7))
def test_rotation_alone_seats_everyone_everywhere_in_the_lists_order(n):
    at = seatings(3 * n, n)
    expected = (np.arange(n)[None, :] - (np.arange(3 * n) % n)[:, None]) % n  # agent j at seat (j + i) mod n
    assert (at == expected).all()
    assert all(sorted(row) == list(range(n)) for row in at)
    assert set().union(*map(_followers, at)) == {(j, (j + 1) % n) for j in range(n)}


@pytest.mark.parametrize("n", range(2, 6))
def test_every_order_plays_every_seating_once_in_n_factorial_games(n):
    """With rotation alone, agent 2 always played after agent 1 at a 3-player table: the
    order of --agents moved a win share by more than its interval over 100,000 games."""
    games = math.factorial(n)
    at = seatings(games, n, every_order=True)
    assert {tuple(row) for row in at} == set(itertools.permutations(range(n)))
    assert (at[:n] == seatings(n, n)).all()  # the first block is the plain rotation
    for block in range(games // n):  # each block of n games: one order, every rotation of it
        rows = at[block * n : (block + 1) * n]
        assert len({frozenset(_followers(r)) for r in rows}) == 1
        assert sorted(int(np.flatnonzero(r == 0)[0]) for r in rows) == list(range(n))
    if n > 2:
        assert set().union(*map(_followers, at)) == {(a, b) for a in range(n) for b in range(n) if a != b}


def test_every_order_changes_nothing_heads_up_or_against_copies_of_one_deterministic_opponent():
    heads_up = [evaluate(["heuristic", "random"], 40, seed=2, every_order=e).to_dict() for e in (False, True)]
    assert heads_up[0]["agents"] == heads_up[1]["agents"]
    copies = [evaluate(["random", "heuristic", "heuristic"], 60, seed=2, every_order=e) for e in (False, True)]
    assert copies[0].agents[0] == copies[1].agents[0]  # heuristic has no randomness of its own


def test_every_order_changes_a_table_of_different_opponents_and_says_so():
    plain = evaluate(["heuristic", "random", "greedy"], 60, seed=2)
    mixed = evaluate(["heuristic", "random", "greedy"], 60, seed=2, every_order=True)
    assert mixed.every_order and not plain.every_order
    assert mixed.to_dict()["every_order"] is True
    assert ", every order," in mixed.to_table().splitlines()[0]
    assert [a.mean_score for a in plain.agents] != [a.mean_score for a in mixed.agents]


def test_every_order_is_refused_without_rotation():
    with pytest.raises(ValueError, match=r"every_order=True .* not with rotate=False \(--no-rotate\)"):
        evaluate(["heuristic", "random", "greedy"], 6, every_order=True, rotate=False)
    # duplicate deals always rotate: rotate=False with them is refused too, as --no-rotate is
    with pytest.raises(ValueError, match=r"duplicate=True .* not with rotate=False \(--no-rotate\)"):
        evaluate(["heuristic", "random", "greedy"], 6, every_order=True, rotate=False, duplicate=True)
    both = evaluate(["heuristic", "random", "greedy"], 6, every_order=True, duplicate=True)
    assert both.every_order and both.duplicate and both.rotate


@pytest.mark.parametrize(
    ("args", "kwargs", "error", "match"),
    [
        ((2.5, 3), {}, ValueError, "num_games must be a non-negative integer, got 2.5"),
        ((-1, 3), {}, ValueError, "num_games must be a non-negative integer, got -1"),
        ((3, 0), {}, ValueError, "num_players must be between 2 and 6, got 0"),
        ((3, 7), {}, ValueError, "num_players must be between 2 and 6, got 7"),
        ((3, 3.0), {}, ValueError, "num_players must be an integer, got 3.0"),
        ((3, True), {}, ValueError, "num_players must be an integer, got True"),
        ((6, 3), {"every_order": True, "rotate": False}, ValueError, "every_order=True .* not with rotate=False"),
        ((6, 3), {"rotate": "no"}, TypeError, "rotate must be True or False"),
    ],
)
def test_seatings_checks_its_arguments(args, kwargs, error, match):
    """seatings (which docs/agents.md points to) failed in numpy (an IndexError, a
    divide-by-zero warning and empty rows) or, with every_order, rotated though told
    rotate=False, which evaluate refuses."""
    with pytest.raises(error, match=match):
        seatings(*args, **kwargs)
    assert seatings(0, 3).shape == (0, 3)
    assert (seatings(np.int64(4), np.int64(2)) == seatings(4, 2)).all()


def test_the_command_line_takes_every_order(tmp_path, capsys):
    code = main(
        ["eval", "--agents", "heuristic,random,greedy", "--games", "12", "--every-order", "--record", str(tmp_path)]
    )
    out = capsys.readouterr().out
    assert code == 0 and "rotated seats, every order, game by game" in out
    seats = [json.loads((tmp_path / f"game_{i:06d}.json").read_text())["context"]["seats"] for i in range(12)]
    assert seats == seatings(12, 3, every_order=True).tolist()
    assert main(["eval", "--agents", "heuristic,random,greedy", "--games", "3", "--every-order", "--no-rotate"]) == 2
    assert "(--every-order) changes the order round the table" in capsys.readouterr().err


def test_a_tournaments_tables_keep_their_seating_unless_every_order():
    """A table kept the pool's order round it; with every_order its k! seatings all come,
    about equally often."""
    from collections import Counter

    from train.evaluation.tournament import _tables

    plain = _tables(5, 3, 180, seed=0)
    assert all(
        tuple(sorted(t)) == tuple(t[(s + t.index(min(t))) % 3] for s in range(3)) for t in plain
    )  # each a rotation of its ascending combination
    mixed = Counter(_tables(5, 3, 180, seed=0, every_order=True))
    assert len(mixed) == 60 and set(mixed.values()) <= {2, 3, 4}  # 10 combinations x 3! seatings, about 3 times each
    assert _tables(5, 3, 180, seed=0, every_order=False) == plain
    # the tables since each game's seating evens out its agents' seats: what a seed plays
    assert plain[:12] == [
        (1, 2, 4), (3, 4, 2), (2, 3, 0), (4, 0, 2), (0, 1, 3), (2, 0, 1),
        (0, 3, 4), (1, 2, 3), (3, 4, 1), (0, 1, 4), (4, 1, 2), (4, 2, 3),
    ]  # fmt: skip
    rotations = [(0, 1, 2, 3), (3, 0, 1, 2), (2, 3, 0, 1), (1, 2, 3, 0)]
    assert _tables(4, 4, 6, seed=3) == rotations + rotations[:2]


def test_tournament_every_order_says_so(capsys):
    from train.evaluation import tournament

    plain = tournament(["heuristic", "random", "greedy", "cautious"], 3, 48, seed=1)
    mixed = tournament(["heuristic", "random", "greedy", "cautious"], 3, 48, seed=1, every_order=True)
    assert mixed.to_dict()["every_order"] is True and plain.to_dict()["every_order"] is False
    assert "players per table, every order," in mixed.to_table().splitlines()[0]
    assert [r.seat_agents for r in plain.records] != [r.seat_agents for r in mixed.records]
    assert (
        main(["tournament", "--players", "3", "--agents", "heuristic,random,greedy", "--games", "6", "--every-order"])
        == 0
    )
    assert "every order" in capsys.readouterr().out
