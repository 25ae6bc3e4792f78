"""distill --networks: the search it distils searches with networks that fit-search wrote
(the docs' train -> fit-search -> distill), at their table size only."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import numpy as np
import pytest

import train.fit.distill
from agents.ppo import SHIPPED, load_actor, save_actor
from agents.search import save_networks
from train.cli import main
from train.fit.distill import DistillConfig


def _cli(argv: list[str]) -> tuple[int, str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        code = main(argv)
    return code, out.getvalue()


def _networks(path: Path, players: int) -> Path:
    """Small networks of a ``players``-seat table, as fit-search writes them."""
    rng = np.random.default_rng(players)

    def layers(out: int) -> list[tuple[np.ndarray, np.ndarray]]:
        return [
            (rng.normal(0, 0.1, (175, 4)).astype(np.float32), np.zeros(4, np.float32)),
            (rng.normal(0, 0.1, (4, out)).astype(np.float32), np.zeros(out, np.float32)),
        ]

    save_networks(path, layers(1), layers((players - 1) * 7))
    return path


@pytest.fixture
def no_games(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("a game was played")

    monkeypatch.setattr(train.fit.distill, "collect_searched", refuse)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--players", "4", "--networks", "two.npz"], "the networks of two.npz are for 2 players, not 4 (--players)"),
        (["--players", "3", "--networks", "three.npz"], "no ppo specialist is shipped at 3 players (only at 2, 4, 6)"),
        (["--players", "2", "--networks", "nowhere.npz"], "cannot load the search networks from nowhere.npz"),
        (["--players", "2", "--networks", "two.npz", "--out", "two.npz"], "--out 'two.npz' is the networks' own file"),
        (["--players", "3"], "players must be a table size with search networks (2, 4, 6), got 3"),
    ],
)
def test_networks_that_do_not_fit_are_refused_before_any_game(argv, message, tmp_path, monkeypatch, no_games):
    monkeypatch.chdir(tmp_path)
    _networks(tmp_path / "two.npz", 2)
    _networks(tmp_path / "three.npz", 3)
    before = sorted(p.name for p in tmp_path.iterdir())
    code, output = _cli(["distill", "--games", "2", *argv, *([] if "--out" in argv else ["--out", "x.npz"])])
    assert code == 2 and message in output and "Traceback" not in output, output
    assert sorted(p.name for p in tmp_path.iterdir()) == before


@pytest.mark.parametrize("players", [2, 3])
def test_the_search_distilled_searches_with_the_networks_given(players, tmp_path, monkeypatch):
    """distill had no --networks: it searched with the shipped networks alone, fitted on
    ppo_v3's games, whatever specialist it distilled, and not at all at 3 or 5 players."""
    nets = _networks(tmp_path / "nets.npz", players)
    model = SHIPPED["ppo"][2]
    if players == 3:  # a shipped specialist saved saying no table size (its file says 4)
        model = tmp_path / "specialist.npz"
        unsized = load_actor(SHIPPED["ppo_v3"][4])
        unsized.table_sizes = None
        save_actor(unsized, model)
    real, seen = train.fit.distill.collect_searched, []

    def collect(search, *args, **kwargs):
        seen.append(search)
        return real(search, *args, **kwargs)

    monkeypatch.setattr(train.fit.distill, "collect_searched", collect)
    argv = ["distill", "--players", str(players), "--games", "2", "--epochs", "1", "--below", "0.99"]
    code, output = _cli([*argv, "--model", str(model), "--networks", str(nets), "--out", str(tmp_path / "d.npz")])
    assert code == 0, output
    assert f"with the networks of {nets}" in output
    assert f"search on it with search:path={tmp_path / 'd.npz'}:networks_path={nets}\n" in output
    (search,) = seen
    assert [w.shape for w, _ in search.networks[players][0]] == [(175, 4), (4, 1)]  # the file's, not the shipped
    assert search.searched > 0 and load_actor(tmp_path / "d.npz").obs_size == 175


def test_the_networks_flag_reaches_the_config(monkeypatch):
    import train.cli.distill

    seen: list[DistillConfig] = []
    monkeypatch.setattr(train.cli.distill, "run_distill", lambda config, out, progress: seen.append(config))
    assert _cli(["distill", "--out", "x.npz", "--networks", "n.npz"])[0] == 0
    assert _cli(["distill", "--out", "x.npz"])[0] == 0
    assert (seen[0].networks, seen[1].networks) == ("n.npz", None)
