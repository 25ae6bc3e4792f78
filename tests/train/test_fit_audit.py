"""fit-search and distill as the seventh stop's audit found them: their result is the file
they write, and what they print on the way is progress."""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from agents.heuristic import HEURISTIC_DEFAULTS
from agents.ppo import SHIPPED, load_actor
from agents.search import load_networks
from llama_env.agent import resolve
from train.cli import main
from train.fit import held_out_games
from train.fit.distill import DistillConfig, DistillData, fit_policy
from train.fit.heuristic import TuneConfig, validate
from train.fit.search_nets import SearchNetsConfig, fit_search_networks

ROOT = Path(__file__).resolve().parents[2]

SMALL = {
    "distill": ["--players", "2", "--games", "2", "--epochs", "1", "--below", "0.99"],
    "fit-search": ["--players", "2", "--games", "2"],
}


@pytest.mark.parametrize("command", ["distill", "fit-search"])
def test_a_reader_that_leaves_early_does_not_cost_the_file(command, tmp_path):
    """`llama-rl distill ... | head -1`: the next progress line raised BrokenPipeError, and
    the command exited 1 without a word and without the file its games and fitting made."""
    out = tmp_path / "out.npz"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    argv = [sys.executable, "-m", "train.cli", command, *SMALL[command], "--out", str(out)]
    proc = subprocess.Popen(argv, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    first = proc.stdout.readline()
    proc.stdout.close()  # the reader leaves after one line, as `head -1` does
    error = proc.stderr.read().decode()
    code = proc.wait(timeout=300)
    assert first and code == 0 and error == "", (first, code, error)
    if command == "distill":
        assert load_actor(out).obs_size == 175
    else:
        load_networks(out, 2)


def _cli(argv: list[str]) -> tuple[int, list[str]]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        code = main(argv)
    return code, out.getvalue().splitlines()


def test_fit_search_ends_with_the_spec_that_searches_with_its_networks(tmp_path):
    """export ends with `play it with ppo:path=FILE`; fit-search ended with the file alone,
    and at 3 and 5 players `search:networks_path=FILE` alone is refused (no specialist)."""
    out = tmp_path / "nets.npz"
    code, lines = _cli(["fit-search", *SMALL["fit-search"], "--out", str(out)])
    assert code == 0, lines
    assert lines[-1] == f"networks written to {out}; search with them at 2 players: search:networks_path={out}"
    assert resolve(f"search:networks_path={out}").networks_path == out
    model = SHIPPED["ppo_v3"][2]
    lines = []
    config = SearchNetsConfig(players=2, games=2, hidden=(8,), model=str(model))
    fit_search_networks(config, out, log=lines.append)
    assert lines[-1].endswith(f"search with them at 2 players: search:path={model}:networks_path={out}")


def test_distill_ends_with_the_specs_that_play_and_search_its_policy(tmp_path):
    out = tmp_path / "d.npz"
    code, lines = _cli(["distill", *SMALL["distill"], "--out", str(out)])
    assert code == 0, lines
    assert lines[-1].endswith(f"written to {out}; play it with ppo:path={out}, search on it with search:path={out}")
    assert resolve(f"search:path={out}").path == out and resolve(f"ppo:path={out}") is not None


def test_distill_says_when_no_searched_decision_is_held_out():
    """`distill --games 1` reported "the specialist plays the search's move in nan" and an
    agreement of nan after each epoch: nothing searched was held out to measure it on."""
    actor = load_actor(SHIPPED["ppo"][2])
    n = 60
    rng = np.random.default_rng(0)
    masks = np.ones((n, 9), dtype=bool)
    game = np.arange(n)  # a decision a game
    searched = ~held_out_games(game, 20, 4)  # the held-out games' decisions (one game in 20) were not searched
    data = DistillData(
        obs=rng.random((n, 175), dtype=np.float32),
        masks=masks,
        prior=np.full((n, 9), 1 / 9, dtype=np.float32),
        searched=searched,
        move=rng.integers(0, 9, n),
        values=np.full((n, 9), np.nan, dtype=np.float32),
        game=game,
    )
    lines: list[str] = []
    fit_policy(data, actor, DistillConfig(epochs=2), log=lines.append)
    assert lines == [
        "  no searched decision held out (one game in 20 is held out, 57 searched in all): play more games to "
        "measure the agreement with the search",
        "  epoch 1 fitted",
        "  epoch 2 fitted",
    ]


def test_tune_heuristic_says_how_many_games_each_validation_row_played(monkeypatch):
    """The header said "4 games per row", but duplicate deals round up to a multiple of the
    table size: the 6-player row played 6 (and 2004 of the default 2000)."""
    import train.cli.tune_heuristic as command

    monkeypatch.setattr(command, "tune", lambda config, log: dict(HEURISTIC_DEFAULTS))
    out = io.StringIO()
    config = TuneConfig(games=1, passes=1, validate_games=4, workers=1)
    command.run_tune_heuristic(config, out)
    header = "validation on a fresh seed (777), duplicate deals, 4 games per row at 2 and 4 players, 6 at 6:"
    assert header in out.getvalue().splitlines()
    rows = validate(HEURISTIC_DEFAULTS, 8, 0, workers=1)
    assert [(row.players, row.games) for row in rows] == [(4, 8)] * 4 + [(2, 8)] * 3 + [(6, 12)]
    assert command.games_per_row(rows[:7]) == "8 games per row"
    default = [replace(row, games=2000 + (row.players == 6) * 4) for row in rows]
    assert command.games_per_row(default) == "2000 games per row at 2 and 4 players, 2004 at 6"
