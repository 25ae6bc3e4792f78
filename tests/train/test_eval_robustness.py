"""Evaluation at its edges: the interval of a share of exactly 0 or 1, the rating fit
and the pairwise counts of a tournament, the default number of workers, and a worker
process that dies."""

from __future__ import annotations

import importlib
import os
import signal
from collections.abc import Iterator
from concurrent.futures.process import BrokenProcessPool

import numpy as np
import pytest

import agents  # noqa: F401 - the built-in agents, registered
from llama_env import agent as registry
from train.cli import main
from train.evaluation import evaluate, mean_ci, tournament
from train.evaluation.ratings import fit_ratings
from train.evaluation.runner import num_workers

ratings_module = importlib.import_module("train.evaluation.ratings")


def test_a_share_of_exactly_0_or_1_has_that_bound_exactly() -> None:
    """Rounding put the lower bound of a share of 0 at 7e-18 and the upper bound of a
    share of 1 at 0.9999999999999999."""
    for n in (1, 7, 100, 2000, 123_457):
        mean, low, high = mean_ci(np.zeros(n))
        assert (mean, low) == (0.0, 0.0) and 0.0 < high < 1.0
        mean, low, high = mean_ci(np.ones(n))
        assert (mean, high) == (1.0, 1.0) and 0.0 < low < 1.0


def _games(count: int) -> list[tuple[list[int], list[float]]]:
    rng = np.random.default_rng(3)
    skill = np.array([30.0, -5.0, 32.0, 40.0]) / (25 / 6 * 2)
    seats = rng.permuted(np.tile(np.arange(4), (count, 1)), axis=1)
    scores = np.floor(-skill[seats] + rng.gumbel(size=(count, 4)))
    return list(zip(seats.tolist(), scores.tolist(), strict=True))


def test_the_rating_fit_stops_at_its_maximum_despite_rounding(monkeypatch: pytest.MonkeyPatch) -> None:
    """The gradient of 100,000 games' log-likelihood is a sum rounded to about 1e-9, and
    the mean of the skills, which only the prior holds, moved by that over 0.014: the
    step never fell below the fixed 1e-10 that ended the fit, which ran its 100 Newton
    steps (12.9 s for 100,000 games where 9 evaluations found the same ratings). Here
    the rounding is added to a small fit's gradient."""
    games = _games(400)
    exact = fit_ratings(games, range(4))
    posterior = ratings_module._posterior
    rng = np.random.default_rng(0)
    calls = 0

    def rounded(mu: np.ndarray, tables: list) -> tuple[float, np.ndarray, np.ndarray]:
        nonlocal calls
        calls += 1
        value, grad, hess = posterior(mu, tables)
        return value, grad + rng.normal(scale=1e-8, size=grad.shape), hess

    monkeypatch.setattr(ratings_module, "_posterior", rounded)
    fitted = fit_ratings(games, range(4))
    assert calls <= 15
    for k in range(4):
        assert fitted[k].mu == pytest.approx(exact[k].mu, abs=1e-5)
        assert fitted[k].sigma == pytest.approx(exact[k].sigma, abs=1e-6)


def test_a_tournament_counts_each_pair_as_its_games_say() -> None:
    """The win shares, games and pairwise shares, counted from the records one by one."""
    pool = ["random", "greedy", "cautious", "heuristic", "cautious:threshold=2"]
    result = tournament(pool, 3, 300, seed=4, workers=1)
    m = len(pool)
    wins, played = np.zeros(m), np.zeros(m, dtype=np.int64)
    ahead, met = np.zeros((m, m)), np.zeros((m, m), dtype=np.int64)
    for r in result.records:
        for seat, (i, share) in enumerate(zip(r.seat_agents, r.win_shares, strict=True)):
            wins[i] += share
            played[i] += 1
            for other, j in enumerate(r.seat_agents):
                if other != seat:
                    met[i, j] += 1
                    mine, theirs = r.scores[seat], r.scores[other]
                    ahead[i, j] += 1.0 if mine < theirs else (0.5 if mine == theirs else 0.0)
    assert result.win_share == [float(wins[i] / played[i]) for i in range(m)]
    assert result.games_played == played.tolist()
    assert np.array_equal(result.pair_games, met)
    assert np.array_equal(result.pairwise, np.where(met > 0, ahead / np.maximum(met, 1), np.nan), equal_nan=True)


def test_default_workers_are_the_cores_this_process_may_use(monkeypatch: pytest.MonkeyPatch) -> None:
    """A job given 2 cores of a 64-core machine (taskset, a cpuset) started 64 workers."""
    monkeypatch.setattr(os, "cpu_count", lambda: 64)
    monkeypatch.delattr(os, "process_cpu_count", raising=False)  # before Python 3.13
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 5}, raising=False)
    assert num_workers(None) == 2
    monkeypatch.setattr(os, "process_cpu_count", lambda: 3, raising=False)  # its affinity, in Python 3.13
    assert num_workers(None) == 3
    assert num_workers(5) == 5


class DiesInAWorker:
    """Plays the first legal action, except in a process other than ``home``: there it
    is killed at its first move, as the out-of-memory killer or ``kill -9`` would."""

    name = "dies_in_a_worker"

    def __init__(self, home: int = 0) -> None:
        self.home = home

    def act(self, observation: np.ndarray, action_mask: np.ndarray) -> int:
        if os.getpid() != self.home:
            os.kill(os.getpid(), getattr(signal, "SIGKILL", signal.SIGTERM))
        return int(np.flatnonzero(action_mask)[0])


@pytest.fixture
def dies() -> Iterator[str]:
    registry.register("tf_dies")(DiesInAWorker)
    try:
        yield f"tf_dies:home={os.getpid()}"
    finally:
        for table in (registry._REGISTRY, registry._DOCS, registry._GROUPS):
            table.pop("tf_dies", None)


@pytest.mark.parametrize("command", ["eval", "tournament"])
def test_a_worker_that_dies_is_one_line_exit_1(dies: str, command: str, capsys: pytest.CaptureFixture[str]) -> None:
    """The pool's BrokenProcessPool was a 25-line traceback; the command line promises one."""
    argv = [command, "--players", "2", "--agents", f"{dies},random", "--games", "8", "--no-batch", "--workers", "2"]
    code = main([*argv, "--no-progress"])
    err = capsys.readouterr().err
    assert code == 1, err
    assert err.strip().splitlines() == [
        "llama-rl: error: a worker process died (killed, or out of memory?): try fewer --workers"
    ]


def test_a_worker_that_dies_is_named_to_a_caller(dies: str) -> None:
    with pytest.raises(BrokenProcessPool) as raised:
        evaluate([dies, "random"], 8, workers=2, batched=False)
    assert str(raised.value) == "a worker process died (killed, or out of memory?): try fewer workers"
    # in this process the agent plays on: the failure was the worker's, not the agent's
    assert len(evaluate([dies, "random"], 4, workers=1, batched=False).agents) == 2
