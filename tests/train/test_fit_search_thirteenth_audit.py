"""What the thirteenth stop's audit of fit-search and distill found: an ``out`` the agents
cannot read, a ``worlds`` refused only after the games began, empty path options read as
the current folder, and help texts that said what the code does not do."""

from __future__ import annotations

import contextlib
import io
import re
from dataclasses import replace

import numpy as np
import pytest

from agents.search import MAX_WORLDS
from train.cli import main
from train.fit import out_file
from train.fit.distill import DistillConfig, distill
from train.fit.search_nets import SearchNetsConfig, fit_search_networks


def _cli(argv: list[str]) -> tuple[int, str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out), contextlib.suppress(SystemExit):
        return main(argv), out.getvalue()
    return 2, out.getvalue()


def _no_games(monkeypatch) -> None:
    import train.fit.distill
    import train.fit.search_nets

    def no_games(*args, **kwargs):
        raise AssertionError("a game was played")

    monkeypatch.setattr(train.fit.search_nets, "collect", no_games)
    monkeypatch.setattr(train.fit.distill, "collect_searched", no_games)


@pytest.mark.parametrize("writes", ["actor", "networks"])
def test_the_python_api_refuses_an_out_that_is_no_npz_file(writes, tmp_path):
    """distill(config, 'dnoext') wrote a model that ppo:path=dnoext then refused; the CLI
    refused such a name, the Python API did not."""
    with pytest.raises(ValueError, match=r"^out must name a \.npz file, got '.*dnoext'$"):
        out_file(tmp_path / "dnoext", writes)
    with pytest.raises(ValueError, match=r"^--out must name a \.npz file, got 'x\.txt'$"):
        out_file("x.txt", writes, "--out ")


@pytest.mark.parametrize("command", ["fit-search", "distill"])
def test_fit_and_distill_refuse_an_out_that_is_no_npz_file_before_any_game(command, tmp_path, monkeypatch):
    _no_games(monkeypatch)
    out = tmp_path / "dnoext"
    with pytest.raises(ValueError, match=r"must name a \.npz file"):
        if command == "fit-search":
            fit_search_networks(SearchNetsConfig(players=2, games=2), out)
        else:
            distill(DistillConfig(players=2, games=2), out)
    assert not out.exists()


def test_distill_config_refuses_more_worlds_than_the_search_takes():
    """worlds=5000 passed validate() and failed later, naming the agent, not the field."""
    DistillConfig(worlds=MAX_WORLDS).validate()
    with pytest.raises(ValueError, match=rf"^worlds must be 1\.\.{MAX_WORLDS} \(.*\), got {MAX_WORLDS + 1}$"):
        DistillConfig(worlds=MAX_WORLDS + 1).validate()


@pytest.mark.parametrize(
    ("argv", "flag"),
    [
        (["distill", "--model", ""], "--model"),
        (["distill", "--networks", ""], "--networks"),
        (["fit-search", "--model", ""], "--model"),
    ],
)
def test_an_empty_path_option_is_said_to_be_empty(argv, flag, tmp_path, monkeypatch):
    """distill --model '' said 'no PPO model in .: ...', --networks '' 'cannot load the
    search networks from .: it is a folder': the empty name read as the current folder."""
    _no_games(monkeypatch)
    code, output = _cli([*argv, "--players", "2", "--games", "2", "--out", str(tmp_path / "x.npz")])
    assert code == 2 and "Traceback" not in output, output
    (line,) = [t for t in output.strip().splitlines() if "error" in t]
    wanted = "a model file or run directory" if flag == "--model" else "a file's name"
    assert f"argument {flag}: needs {wanted}, got ''" in line and " . " not in line and "from ." not in line, line


@pytest.mark.parametrize(
    "config",
    [
        DistillConfig(players=2, games=2, model=""),
        DistillConfig(players=2, games=2, networks=""),
        SearchNetsConfig(players=2, games=2, model=""),
    ],
)
def test_the_python_api_says_an_empty_path_is_empty(config):
    field = "networks" if getattr(config, "networks", None) == "" else "model"
    with pytest.raises(ValueError, match=rf"^{type(config).__name__} {field} is empty"):
        config.validate()


def _help(command: str) -> str:
    code, text = _cli([command, "--help"])
    return re.sub(r"\s+", " ", text)


def test_the_help_says_which_games_fit_search_holds_out():
    """It said '(game 0 is held out: at least 2)', where one game in 20 is held out."""
    text = _help("fit-search")
    assert "game 0 is held out" not in text
    assert "one game in 20 is held out" in text


def test_the_help_says_where_distills_playouts_end_without_a_horizon():
    """It said '0: at the round's end', where the play-out runs to seat 0's next decision,
    in the next round if the game goes on."""
    text = _help("distill")
    assert "at the round's end" not in text
    assert "0: to the searcher's next decision" in text


@pytest.mark.parametrize("players", [2, 3, 4, 5, 6])
def test_the_held_out_games_sit_at_every_seat(players):
    """fit-search held out the games g % 20 == 0, where its specialist sits at g % players:
    at 2, 4 and 5 players all of them at seat 0."""
    from train.fit import held_out_games

    games = np.arange(20 * players * 10)
    held = held_out_games(games, 20, players)
    assert held[0] and held.sum() == len(games) // 20
    assert all(held[k * 20 : (k + 1) * 20].sum() == 1 for k in range(len(games) // 20))  # one game in each 20
    seats = np.bincount(games[held] % players, minlength=players)
    assert (seats == seats[0]).all(), seats  # as many at every seat


def test_distill_holds_out_whole_games_at_every_seat():
    """distill held out every 20th decision of the games it trained on, so the held-out
    decisions' games were fitted on too; it holds out whole games, at every seat in turn,
    as fit-search does."""
    from agents.ppo import SHIPPED, load_actor
    from train.fit import held_out_games
    from train.fit.distill import DistillData, fit_policy

    actor = load_actor(SHIPPED["ppo"][2])
    n = 400
    rng = np.random.default_rng(0)
    game = np.arange(n) // 5  # 80 games of 5 decisions each
    searched = rng.random(n) < 0.5
    data = DistillData(
        obs=rng.random((n, 175), dtype=np.float32),
        masks=np.ones((n, 9), dtype=bool),
        prior=np.full((n, 9), 1 / 9, dtype=np.float32),
        searched=searched,
        move=rng.integers(0, 9, n),
        values=np.full((n, 9), np.nan, dtype=np.float32),
        game=game,
    )
    lines: list[str] = []
    fit_policy(data, actor, DistillConfig(players=2, epochs=1), log=lines.append)
    held = held_out_games(game, 20, 2)
    assert np.unique(game[held]).tolist() == [0, 21, 40, 61]  # seats 0, 1, 0, 1
    assert lines[0].startswith(f"  held-out searched decisions: {int((held & searched).sum())};"), lines[0]


def test_distill_records_the_game_of_every_decision():
    from agents.ppo import SHIPPED, load_actor
    from agents.search import SearchAgent
    from train.fit.distill import collect_searched

    actor = load_actor(SHIPPED["ppo"][2])
    data = collect_searched(SearchAgent(worlds=2, below=0.9, seed=0), actor, 2, 6, seed=0, slots=3)
    assert data.game.shape == (len(data.obs),) and set(data.game.tolist()) == set(range(6))


@pytest.mark.parametrize(
    ("players", "held_out"), [(2, 2), (2, 3), (3, 3), (3, 5), (4, 4), (4, 6), (5, 7), (6, 6), (6, 20)]
)
def test_one_game_in_held_out_is_held_out_at_every_seat(players, held_out):
    """held_out=2 at 4 players held out seats 0 and 3 alone, a share of 1/4, not 1/2:
    at any held_out the table size allows, exactly one game in held_out at every seat."""
    from train.fit import held_out_games

    games = np.arange(players * held_out * 3)
    held = held_out_games(games, held_out, players)
    assert held[0]
    assert all(held[k * held_out : (k + 1) * held_out].sum() == 1 for k in range(len(games) // held_out))
    seat = games % players
    for s in range(players):
        assert held[seat == s].sum() * held_out == (seat == s).sum(), (s, games[held].tolist())


@pytest.mark.parametrize(("players", "held_out"), [(3, 2), (4, 2), (4, 3), (6, 5)])
def test_a_held_out_below_the_table_size_is_refused(players, held_out):
    """Fewer than ``players`` games a turn cannot hold out every seat in turn."""
    from train.fit import held_out_games

    message = rf"^held_out must be >= {players} at {players} players \(.*\), got {held_out}$"
    with pytest.raises(ValueError, match=message):
        held_out_games(np.arange(40), held_out, players)
    for config in (
        SearchNetsConfig(players=players, model="m.npz"),
        DistillConfig(players=players, model="m.npz", networks="n.npz"),
    ):
        with pytest.raises(ValueError, match=message):
            replace(config, held_out=held_out).validate()


def test_fit_search_holds_out_the_games_at_every_seat():
    """Put back to ``data.game % held_out == 0`` (games 0, 20, 40, 60: all at seat 0 of
    2), fit-search's split left every fit test passing: its held-out loss is that of games
    0, 21, 40 and 61."""
    import torch

    from train.fit.search_nets import SearchData, fit_network

    rng = np.random.default_rng(0)
    n = 400
    game = np.arange(n) // 5  # 80 games of 5 decisions each
    data = SearchData(
        obs=rng.random((n, 175), dtype=np.float32),
        hands=rng.integers(0, 3, (n, 1, 7)).astype(np.int8),
        win=(rng.random(n) < 0.5).astype(np.float32),
        game=game.astype(np.int32),
    )
    config = SearchNetsConfig(players=2, hidden=(8,), batch_size=64, value_epochs=1)
    layers, losses = fit_network(data, "value", config, log=lambda line: None)
    held = np.isin(game, [0, 21, 40, 61])  # seats 0, 1, 0, 1
    h = torch.from_numpy(data.obs[held])
    for k, (w, b) in enumerate(layers):
        h = h @ torch.from_numpy(w) + torch.from_numpy(b)
        if k < len(layers) - 1:
            h = torch.relu(h)
    loss = torch.nn.functional.binary_cross_entropy_with_logits(h[:, 0], torch.from_numpy(data.win[held]))
    assert losses[-1] == pytest.approx(float(loss), rel=1e-5)


def test_an_empty_path_is_refused_where_it_becomes_the_current_folder():
    """agents.base.agent_path('') was the current folder: every reader of a path met '.'."""
    from agents.base import agent_path
    from agents.search import load_networks

    with pytest.raises(ValueError, match="^the path is empty$"):
        agent_path("")
    with pytest.raises(ValueError, match="is empty") as caught:
        load_networks("")  # "cannot load the search networks from .: it is a folder"
    assert " . " not in str(caught.value) and "from ." not in str(caught.value)


def test_export_of_an_empty_model_says_it_is_empty(tmp_path):
    """llama-rl export '' said "no PPO model in .: it is not a run directory"."""
    code, output = _cli(["export", "", "--out", str(tmp_path / "x.npz")])
    assert code == 2 and output.strip().splitlines()[-1].endswith(
        "argument MODEL: needs a model file (.zip or .npz), a run directory or an RLlib checkpoint, got ''"
    ), output


def test_an_empty_out_is_said_to_be_empty(tmp_path):
    """Said as fit-search says an empty --model: when the command line is read."""
    code, output = _cli(["fit-search", "--players", "2", "--games", "2", "--out", ""])
    assert code == 2 and output.strip().splitlines()[-1].endswith("argument --out: needs a file's name, got ''"), output
