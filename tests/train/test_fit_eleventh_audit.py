"""fit-search, distill and export as the eleventh stop's audit found them: the shipped
specialists' table sizes, paths as the agents read them, the agent spec each prints, a
full disk, a file of the other kind. Small runs: refusals come before any game."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import pytest

from agents.ppo import DEFAULT_MODEL, SHIPPED, load_actor, save_actor
from train.cli import main


def _cli(argv: list[str]) -> tuple[int, str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        code = main(argv)
    return code, out.getvalue()


@pytest.fixture
def no_games(monkeypatch):
    """A game played fails the test: what is refused is refused before any."""
    import train.fit.distill
    import train.fit.search_nets

    def played(*args, **kwargs):
        raise AssertionError("a game was played")

    monkeypatch.setattr(train.fit.search_nets, "collect", played)
    monkeypatch.setattr(train.fit.distill, "collect_searched", played)


def test_a_shipped_specialist_says_the_table_size_it_is_shipped_at(tmp_path):
    """Their files named no size: each read as trained at every size, so evaluation never
    warned and fit-search and distill took a 4-player specialist at --players 2. Each file
    now says its size itself, so a copy of it elsewhere says it too."""
    for by_size in SHIPPED.values():
        for n, file in by_size.items():
            copy = tmp_path / f"copy_{n}.npz"
            copy.write_bytes(file.read_bytes())
            assert load_actor(file).table_sizes == load_actor(copy).table_sizes == (n,), file
    assert load_actor(DEFAULT_MODEL).table_sizes is None  # the general model: every size


@pytest.mark.parametrize("command", ["fit-search", "distill"])
def test_a_shipped_specialist_of_another_table_size_is_refused(command, tmp_path, no_games):
    """distill --players 2 --model ppo_llama_4p_v3.npz ran, and stamped (2,) on the result."""
    model = SHIPPED["ppo_v3"][4]
    code, output = _cli(
        [command, "--players", "2", "--model", str(model), "--games", "2", "--out", str(tmp_path / "x.npz")]
    )
    assert code == 2 and f"{model} was trained at 4 players only, not at 2 (--players)" in output, output
    assert not (tmp_path / "x.npz").exists()


def test_distill_says_no_table_size_where_its_start_said_none(tmp_path):
    """It stamped (players,) on the result of a start that said nothing."""
    actor = load_actor(SHIPPED["ppo"][2])
    actor.table_sizes = None
    save_actor(actor, tmp_path / "silent.npz")
    out = tmp_path / "d.npz"
    argv = ["distill", "--players", "2", "--games", "2", "--epochs", "1", "--below", "0.99"]
    code, output = _cli([*argv, "--model", str(tmp_path / "silent.npz"), "--out", str(out)])
    assert code == 0, output
    assert load_actor(out).table_sizes is None


def test_a_leading_tilde_is_the_home_folder_in_every_path(tmp_path, monkeypatch):
    """--model '~/m.npz' was "no such file or directory" and --out '~/x.npz' "the folder
    '~' does not exist", where ppo:path=~/m.npz reads the home folder's file (the shell
    expands no ~ after = or inside quotes)."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(tmp_path)
    (home / "m.npz").write_bytes(SHIPPED["ppo"][2].read_bytes())
    fit = ["fit-search", "--players", "2", "--games", "2", "--model", "~/m.npz", "--out", "~/n.npz"]
    code, output = _cli(fit)
    assert code == 0 and (home / "n.npz").is_file(), output
    assert f"search:path=~/m.npz:networks_path={home / 'n.npz'}\n" in output
    distill = ["distill", "--players", "2", "--games", "2", "--epochs", "1", "--below", "0.99"]
    code, output = _cli([*distill, "--model", "~/m.npz", "--networks", "~/n.npz", "--out", "~/d.npz"])
    assert code == 0 and load_actor(home / "d.npz").obs_size == 175, output
    code, output = _cli([*distill, "--model", "~/m.npz", "--networks", "~/n.npz", "--out", "~/n.npz"])
    assert code == 2 and "--out '~/n.npz' is the networks' own file" in output, output
    code, output = _cli(["export", "~/d.npz", "--out", "~/e.npz"])
    assert code == 0 and load_actor(home / "e.npz").obs_size == 175, output
    assert not any(p.name == "~" for p in tmp_path.iterdir())


@pytest.mark.parametrize("command", ["fit-search", "distill", "export"])
def test_an_out_with_a_comma_is_refused_before_any_work(command, tmp_path, no_games):
    """The agent spec each printed after writing (search:networks_path=a,b.npz) could not
    be pasted back: --agents cut it at the comma."""
    out = tmp_path / "a,b.npz"
    argv = [command, "--out", str(out)]
    argv += [str(SHIPPED["ppo"][2])] if command == "export" else ["--players", "2", "--games", "2"]
    code, output = _cli(argv)
    spec = {"fit-search": "search:networks_path", "distill": "ppo:path", "export": "ppo:path"}[command]
    assert code == 2 and output == (
        f"llama-rl: error: the agent spec '{spec}={out}' would not read back as these files (a comma, a ':key=' "
        "or a leading '~' in a path cuts or changes it): name them otherwise\n"
    )
    assert not out.exists()


@pytest.mark.parametrize("aside", [True, False])
def test_export_to_a_full_disk_names_the_file(aside, tmp_path, monkeypatch):
    """It said "llama-rl: error: No space left on device", naming no file. Now it names
    --out's file, and says where the policy went instead (the temporary directory), as
    fit-search and distill do; where that is full too, it names the file alone."""
    import tempfile

    import llama_env._atomic

    out = tmp_path / "e.npz"
    real = llama_env._atomic.atomic_write

    def full(path, write):
        if Path(path) == out or not aside:
            raise OSError(28, "No space left on device")  # as np.savez into a file object: no file named
        real(path, write)

    monkeypatch.setattr(llama_env._atomic, "atomic_write", full)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    code, output = _cli(["export", str(SHIPPED["ppo"][2]), "--out", str(out)])
    assert code == 1 and f"llama-rl: error: cannot write {out} (No space left on device)" in output, output
    rescued = list((tmp_path / "tmp").glob("llama-rl-rescue-e-*.npz"))
    if aside:
        assert output.endswith(f"; the exported policy's weights were saved to {rescued[0]} instead\n")
        assert load_actor(rescued[0]).obs_size == 175
    else:
        assert output.endswith("(No space left on device)\n") and rescued == []
    assert not out.exists()


def test_a_file_of_the_other_kind_is_named_as_what_it_holds(tmp_path):
    """A search-networks file given as ppo:path= was "not an exported actor (no activation
    or w0)", and a policy given as --networks "holds no belief network of a table": neither
    said what the file is, nor how to give it."""
    from agents.search import NETWORKS, load_networks

    policy = SHIPPED["ppo"][2]
    code, output = _cli(["eval", "--agents", f"ppo:path={NETWORKS[2]},heuristic", "--games", "1"])
    assert (
        code == 2
        and (
            f"cannot load a PPO model from {NETWORKS[2]}: it holds the search's value and belief "
            "networks (give it as search:networks_path=...)\n"
        )
        in output
    ), output
    for players in (None, 2):
        with pytest.raises(ValueError) as caught:
            load_networks(policy, players)
        assert str(caught.value) == (
            f"cannot load the search networks from {policy}: it holds a PPO policy (give it as ppo:path=..., "
            "search:path=... or --model)"
        )
    argv = ["distill", "--players", "2", "--games", "2", "--networks", str(policy), "--out", str(tmp_path / "d.npz")]
    code, output = _cli(argv)
    held = ": it holds a PPO policy (give it as ppo:path=..., search:path=... or --model)\n"
    assert code == 2 and output.endswith(held), output


def test_distill_at_a_size_without_networks_names_the_way_on(tmp_path, no_games):
    """--players 3 without --networks said only that 3 is no table size with search
    networks, not that networks of one's own (and a specialist) make it one."""
    code, output = _cli(["distill", "--players", "3", "--games", "2", "--out", str(tmp_path / "x.npz")])
    assert code == 2 and output == (
        "llama-rl: error: players must be a table size with search networks (2, 4, 6), got 3 (--players), or give "
        "--networks (a file fit-search wrote at 3 players) and --model\n"
    )


def test_a_folder_named_tilde_is_read_where_it_is(tmp_path, monkeypatch):
    """Path("./~/m.npz") prints as ~/m.npz, and a second expansion of it read the home
    folder's file: export ./~/m.npz and ppo:path=./~/m.npz played $HOME/m.npz, another
    policy, without a word."""
    import agents

    home = tmp_path / "home"
    home.mkdir()
    (tmp_path / "~").mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(tmp_path)
    (home / "m.npz").write_bytes(SHIPPED["ppo"][4].read_bytes())  # not the one named
    (tmp_path / "~" / "m.npz").write_bytes(SHIPPED["ppo"][2].read_bytes())
    meant = load_actor(SHIPPED["ppo"][2]).layers[0][0]
    code, output = _cli(["export", "./~/m.npz", "--out", "e.npz"])
    assert code == 0, output
    assert (load_actor(tmp_path / "e.npz").layers[0][0] == meant).all()
    played = agents.make("ppo:path=./~/m.npz")
    assert played.path.absolute() == tmp_path / "~" / "m.npz"
    assert (played.actor.layers[0][0] == meant).all()


@pytest.mark.parametrize("command", ["fit-search", "distill", "export"])
def test_a_printed_spec_that_would_not_read_back_is_refused_before_any_work(command, tmp_path, monkeypatch, no_games):
    """The comma check missed the other ways the printed spec was cut or changed: a
    ':key=' in --out (search:networks_path=runs/x:seed=1.npz read networks_path='runs/x',
    seed='1.npz'), a comma in --networks, a folder named ~ (printed as the home folder)."""
    from agents.search import NETWORKS

    (tmp_path / "x:seed=1").mkdir()
    (tmp_path / "~").mkdir()
    nets = tmp_path / "n,1.npz"
    nets.write_bytes(NETWORKS[2].read_bytes())
    start = [str(SHIPPED["ppo"][2])] if command == "export" else ["--players", "2", "--games", "2"]
    outs = [str(tmp_path / "x:seed=1" / "o.npz"), "./~/o.npz"]
    cases = [[*start, "--out", out] for out in outs]
    if command == "distill":
        cases.append([*start, "--networks", str(nets), "--model", str(SHIPPED["ppo"][2]), "--out", "o.npz"])
    monkeypatch.chdir(tmp_path)
    for argv in cases:
        code, output = _cli([command, *argv])
        assert code == 2 and output.startswith("llama-rl: error: the agent spec "), output
        assert output.endswith("a ':key=' or a leading '~' in a path cuts or changes it): name them otherwise\n")
        assert output.count("\n") == 1, output
    assert not list(tmp_path.rglob("o.npz"))


@pytest.mark.parametrize("players", [1, 9])
def test_distill_at_a_size_of_no_table_says_the_range(players):
    """DistillConfig(players=9) was told to give --networks "a file fit-search wrote at 9
    players" (the command line's --players is checked by its parser first)."""
    from train.fit.distill import DistillConfig

    with pytest.raises(ValueError) as caught:
        DistillConfig(players=players).validate()
    assert str(caught.value) == f"players must be 2..6, got {players}"
