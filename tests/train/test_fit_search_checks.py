"""fit-search and distill refuse what would make a file that hides a mistake: a
specialist trained at another table size than --players, an --out that is the model
itself. Small runs: refusals come before any game."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import pytest

from agents.ppo import SHIPPED, load_actor, save_actor
from train.cli import main


def _cli(argv: list[str]) -> tuple[int, str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        code = main(argv)
    return code, out.getvalue()


def _model_at(path: Path, sizes: tuple[int, ...], players: int = 2) -> Path:
    """The shipped ``players``-seat specialist, saying it was trained at ``sizes``."""
    actor = load_actor(SHIPPED["ppo"][players])
    actor.table_sizes = sizes
    save_actor(actor, path)
    return path


@pytest.mark.parametrize("command", ["fit-search", "distill"])
def test_a_specialist_trained_at_other_table_sizes_is_refused_before_any_game(command, tmp_path, monkeypatch):
    """A heads-up model given at --players 4 was played, searched on and fitted at 4 players
    without a word; distill then wrote table_sizes=(4,) over its (2,), so evaluation's
    warning never fired."""
    import train.fit.distill
    import train.fit.search_nets

    def no_games(*args, **kwargs):
        raise AssertionError("a game was played")

    monkeypatch.setattr(train.fit.search_nets, "collect", no_games)
    monkeypatch.setattr(train.fit.distill, "collect_searched", no_games)
    monkeypatch.chdir(tmp_path)
    _model_at(tmp_path / "two.npz", (2,))
    code, output = _cli([command, "--players", "4", "--model", "two.npz", "--games", "2", "--out", "x.npz"])
    assert code == 2 and "Traceback" not in output, output
    assert "two.npz was trained at 2 players only, not at 4 (--players)" in output
    assert len(output.strip().splitlines()) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["two.npz"]


def test_distill_keeps_the_table_sizes_its_model_says(tmp_path):
    """It wrote (players,) whatever the model said."""
    model = _model_at(tmp_path / "both.npz", (2, 4))
    out = tmp_path / "d.npz"
    argv = ["distill", "--players", "2", "--games", "2", "--epochs", "1", "--below", "0.99"]
    code, output = _cli([*argv, "--model", str(model), "--out", str(out)])
    assert code == 0, output
    assert load_actor(out).table_sizes == (2, 4)


def test_distill_keeps_the_rule_options_its_model_says(tmp_path):
    """It wrote no rule options: a specialist trained at end_score 20 too lost them, and
    the distilled policy was evaluated at any rules without a word. Its searched games
    play the standard rules, which it has seen too (a specialist that has not is refused)."""
    actor = load_actor(SHIPPED["ppo"][2])
    actor.trained_rules = {"end_score": (20, 40), "hand_size": (4, 6)}
    save_actor(actor, tmp_path / "es.npz")
    out = tmp_path / "d.npz"
    argv = ["distill", "--players", "2", "--games", "2", "--epochs", "1", "--below", "0.99"]
    code, output = _cli([*argv, "--model", str(tmp_path / "es.npz"), "--out", str(out)])
    assert code == 0, output
    assert load_actor(out).trained_rules == {"end_score": (20, 40), "hand_size": (4, 6)}


@pytest.mark.parametrize("out", ["model", "run", "default"])
def test_fit_search_refuses_to_write_the_networks_over_its_specialist(out, tmp_path, monkeypatch):
    """--out equal to --model wrote the networks over the specialist, after minutes of its
    games: the model was gone, and the networks need it at 3 and 5 players."""
    import train.fit.search_nets
    from agents.search import FITTED_ON

    def no_games(*args, **kwargs):
        raise AssertionError("a game was played")

    monkeypatch.setattr(train.fit.search_nets, "collect", no_games)
    monkeypatch.chdir(tmp_path)
    _model_at(tmp_path / "mine.npz", (4,), players=4)
    (tmp_path / "run").mkdir()
    _model_at(tmp_path / "run" / "model.npz", (4,), players=4)
    (tmp_path / "link.npz").symlink_to(FITTED_ON[4])  # the default specialist's file, by another name
    argv = {
        "model": ["--model", "mine.npz", "--out", "./mine.npz"],
        "run": ["--model", "run", "--out", "run/model.npz"],
        "default": ["--out", "link.npz"],
    }[out]
    message = {  # said as the specialist's own file before what it holds (a PPO policy); nor a shipped file
        "model": "--out './mine.npz' is the specialist's own file (mine.npz): the search's value and belief "
        "networks would be written over it",
        "run": "--out 'run/model.npz' is the specialist's own file (run/model.npz)",
        "default": "--out 'link.npz' is in ",
    }[out]
    before = {p: p.read_bytes() for p in (tmp_path / "mine.npz", tmp_path / "run" / "model.npz", FITTED_ON[4])}
    code, output = _cli(["fit-search", "--players", "4", "--games", "2", *argv])
    assert code == 2 and message in output and "Traceback" not in output, output
    assert "note:" not in output and len(output.strip().splitlines()) == 1
    assert {p: p.read_bytes() for p in before} == before


@pytest.mark.parametrize("out", ["model", "link", "run", "default", "networks", "other networks"])
def test_distill_refuses_to_write_the_policy_over_a_file_it_reads(out, tmp_path, monkeypatch):
    """It refused an --out that was --networks only: --model (or a link to it), the default
    specialist and the shipped networks were written over after minutes of games, and a
    policy in search_4p.npz broke the search agent at every table size."""
    import train.fit.distill
    from agents.search import NETWORKS

    def no_games(*args, **kwargs):
        raise AssertionError("a game was played")

    monkeypatch.setattr(train.fit.distill, "collect_searched", no_games)
    monkeypatch.chdir(tmp_path)
    _model_at(tmp_path / "mine.npz", (4,), players=4)
    (tmp_path / "run").mkdir()
    _model_at(tmp_path / "run" / "model.npz", (4,), players=4)
    (tmp_path / "mine_link.npz").symlink_to(tmp_path / "mine.npz")
    (tmp_path / "default.npz").symlink_to(SHIPPED["ppo"][4])
    (tmp_path / "nets.npz").symlink_to(NETWORKS[4])
    (tmp_path / "nets_2p.npz").symlink_to(NETWORKS[2])
    argv, message = {
        "model": (["--model", "mine.npz", "--out", "./mine.npz"], "is the specialist's own file"),
        "link": (["--model", "mine.npz", "--out", "mine_link.npz"], "is the specialist's own file"),
        "run": (["--model", "run", "--out", "run/model.npz"], "is the specialist's own file"),
        "default": (["--out", "default.npz"], "--out 'default.npz' is in "),  # a shipped file: none is written over
        "networks": (["--out", "nets.npz"], "--out 'nets.npz' is in "),
        "other networks": (["--model", "mine.npz", "--out", "nets_2p.npz"], "--out 'nets_2p.npz' is in "),
    }[out]
    files = (tmp_path / "mine.npz", tmp_path / "run" / "model.npz", SHIPPED["ppo"][4], NETWORKS[4], NETWORKS[2])
    before = {p: p.read_bytes() for p in files}
    code, output = _cli(["distill", "--players", "4", "--games", "2", *argv])
    assert code == 2 and message in output and "Traceback" not in output, output
    assert "note:" not in output and len(output.strip().splitlines()) == 1
    assert {p: p.read_bytes() for p in before} == before
