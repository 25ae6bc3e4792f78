"""What the ninth stop's audit of fit-search, distill and export found: a result saved
aside when its file cannot be written, and an --out that holds what must not be written
over."""

from __future__ import annotations

import contextlib
import io
import re
import tempfile
from pathlib import Path

import numpy as np
import pytest

from agents.ppo import SHIPPED, load_actor, save_actor
from agents.search import NETWORKS
from train.cli import main
from train.fit.distill import DistillConfig, distill
from train.fit.search_nets import SearchNetsConfig, fit_search_networks
from train.training.run_dir import save_aside


def test_a_second_rescue_keeps_the_first_and_follows_no_planted_link(tmp_path, monkeypatch):
    """Both went to /tmp/llama-rl-rescue-<name>: a second rescue of the same name
    replaced the first without a word, and a link planted there by another user of the
    machine sent the write where it pointed."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    victim = tmp_path / "victim.txt"
    victim.write_text("not yours")
    (tmp_path / "llama-rl-rescue-out.npz").symlink_to(victim)

    def save(text: str):
        return lambda path: Path(path).write_text(text)

    first = save_aside(save("first"), "out.npz")
    second = save_aside(save("second"), "out.npz")
    assert first is not None and second is not None and first != second
    assert first.read_text() == "first" and second.read_text() == "second"
    assert victim.read_text() == "not yours"
    for rescued in (first, second):
        assert rescued.parent == tmp_path and not rescued.is_symlink()
        assert rescued.name.startswith("llama-rl-rescue-out-") and rescued.suffix == ".npz"


def test_a_rescue_that_fails_too_leaves_no_empty_file(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))

    def fail(path: Path) -> None:
        raise OSError(28, "No space left on device")

    assert save_aside(fail, "out.npz") is None
    assert list(tmp_path.iterdir()) == []


def test_a_rescue_stopped_by_ctrl_c_leaves_no_empty_file(tmp_path, monkeypatch):
    """The rescue's file is made first, and was removed only when the save failed with an
    OSError: Ctrl-C while it was written left an empty llama-rl-rescue-*.npz behind."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))

    def interrupted(path: Path) -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        save_aside(interrupted, "out.npz")
    assert list(tmp_path.iterdir()) == []


# --------------------------------------------------------------------------- --out of the other kind


def _cli(argv: list[str]) -> tuple[int, str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        code = main(argv)
    return code, out.getvalue()


def _no_games(monkeypatch) -> None:
    import train.fit.distill
    import train.fit.search_nets

    def no_games(*args, **kwargs):
        raise AssertionError("a game was played")

    monkeypatch.setattr(train.fit.search_nets, "collect", no_games)
    monkeypatch.setattr(train.fit.distill, "collect_searched", no_games)


def _writes(command: str) -> list[str]:
    return {
        "export": ["export", str(SHIPPED["ppo"][2])],
        "fit-search": ["fit-search", "--players", "2", "--games", "2"],
        "distill": ["distill", "--players", "2", "--games", "2"],
    }[command]


@pytest.mark.parametrize("command", ["export", "fit-search", "distill"])
def test_a_file_of_the_other_kind_is_not_written_over(command, tmp_path, monkeypatch):
    """export and distill wrote a policy over the search's networks, fit-search networks
    over a policy (a run's own model.npz), with only a note: the agents reading the file
    then refused it ('it has no value network', 'not an exported actor')."""
    _no_games(monkeypatch)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "r").mkdir()
    policy, networks = tmp_path / "r" / "model.npz", tmp_path / "nets.npz"
    policy.write_bytes(SHIPPED["ppo"][2].read_bytes())
    networks.write_bytes(NETWORKS[2].read_bytes())
    out, holds = ("r/model.npz", "a PPO policy") if command == "fit-search" else ("nets.npz", "the search's")
    before = {p: p.read_bytes() for p in (policy, networks)}
    code, output = _cli([*_writes(command), "--out", out])
    assert code == 2 and "Traceback" not in output and len(output.strip().splitlines()) == 1, output
    assert f"--out {out!r} holds {holds}" in output and "would be written over it" in output
    assert {p: p.read_bytes() for p in before} == before
    # the Python API refuses it too, before any game
    if command == "fit-search":
        with pytest.raises(ValueError, match="holds a PPO policy"):
            fit_search_networks(SearchNetsConfig(players=2, games=2), policy)
    elif command == "distill":
        with pytest.raises(ValueError, match="holds the search's value and belief networks"):
            distill(DistillConfig(players=2, games=2), networks)


@pytest.mark.parametrize("command", ["export", "fit-search", "distill"])
def test_no_writer_writes_into_the_shipped_models(command, tmp_path, monkeypatch):
    """distill alone refused the shipped networks files; export and fit-search wrote over
    any shipped file (`--out agents/models/search_4p.npz`) with only a note."""
    import train.fit

    _no_games(monkeypatch)
    shipped = tmp_path / "models"
    shipped.mkdir()
    monkeypatch.setattr(train.fit, "MODELS_DIR", shipped, raising=False)
    (shipped / "search_2p.npz").write_bytes(NETWORKS[2].read_bytes())
    (tmp_path / "link.npz").symlink_to(shipped / "search_2p.npz")
    for out in (shipped / "search_2p.npz", shipped / "new.npz", tmp_path / "link.npz"):
        code, output = _cli([*_writes(command), "--out", str(out)])
        assert code == 2 and "Traceback" not in output and len(output.strip().splitlines()) == 1, output
        assert f"--out {str(out)!r} is in {shipped}, the models the package's agents play" in output
    assert sorted(p.name for p in shipped.iterdir()) == ["search_2p.npz"]
    assert (shipped / "search_2p.npz").read_bytes() == NETWORKS[2].read_bytes()


def test_a_file_of_the_same_kind_is_still_replaced_with_a_note(tmp_path, capsys):
    """A new version of one's own file: replaced on purpose, and said."""
    from train.cli.export import run_export

    out = tmp_path / "mine.npz"
    out.write_bytes(SHIPPED["ppo"][4].read_bytes())
    run_export(str(SHIPPED["ppo"][2]), out)
    assert capsys.readouterr().out.splitlines()[-1] == f"note: the new {out} replaced the file that was there"
    assert load_actor(out).obs_size == load_actor(SHIPPED["ppo"][2]).obs_size


@pytest.mark.parametrize("command", ["fit-search", "distill"])
def test_the_python_api_checks_the_out_folder_before_any_game(command, tmp_path, monkeypatch):
    """fit_search_networks and distill played and fitted, then found the folder missing
    and saved the result aside; the command line alone checked it first."""
    _no_games(monkeypatch)
    out = tmp_path / "missing" / "x.npz"
    with pytest.raises(ValueError, match=f"the folder {str(out.parent)!r} does not exist"):
        if command == "fit-search":
            fit_search_networks(SearchNetsConfig(players=2, games=2), out)
        else:
            distill(DistillConfig(players=2, games=2), out)


@pytest.mark.parametrize("command", ["fit-search", "distill"])
def test_an_out_that_is_a_file_the_command_reads_is_said_to_be_so(command, tmp_path, monkeypatch):
    """The kind check came first: `fit-search --model mine.npz --out mine.npz` said '--out
    'mine.npz' holds a PPO policy: ... write to another file, or delete it first', and
    distill the same of its --networks: deleting it would lose the file the command reads."""
    _no_games(monkeypatch)
    monkeypatch.chdir(tmp_path)
    if command == "fit-search":
        mine, whose = tmp_path / "mine.npz", "the specialist's"
        mine.write_bytes(SHIPPED["ppo"][2].read_bytes())
        argv = ["--model", "mine.npz"]
    else:
        mine, whose = tmp_path / "mine.npz", "the networks'"
        mine.write_bytes(NETWORKS[2].read_bytes())
        argv = ["--networks", "mine.npz"]
    code, output = _cli([*_writes(command), *argv, "--out", "mine.npz"])
    assert code == 2 and "Traceback" not in output and len(output.strip().splitlines()) == 1, output
    assert f"--out 'mine.npz' is {whose} own file (mine.npz): " in output and "delete" not in output
    with pytest.raises(ValueError, match=f"^'mine.npz' is {whose} own file"):
        if command == "fit-search":
            fit_search_networks(SearchNetsConfig(players=2, games=2, model="mine.npz"), "mine.npz")
        else:
            distill(DistillConfig(players=2, games=2, networks="mine.npz"), "mine.npz")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mine.npz"]


@pytest.mark.parametrize("command", ["export", "fit-search", "distill"])
def test_the_folder_checked_is_the_one_a_link_writes_in(command, tmp_path, monkeypatch):
    """The check looked at the link's folder, the write follows the link: --out
    dangling.npz (a link to /nonexistent/t.npz) passed, and fit-search played and fitted,
    then failed at the last write."""
    _no_games(monkeypatch)
    monkeypatch.chdir(tmp_path)
    missing = tmp_path / "nowhere" / "t.npz"
    (tmp_path / "dangling.npz").symlink_to(missing)
    code, output = _cli([*_writes(command), "--out", "dangling.npz"])
    assert code == 2 and "Traceback" not in output and len(output.strip().splitlines()) == 1, output
    assert f"--out 'dangling.npz' (a link to {str(missing)!r}): the folder {str(missing.parent)!r} does not exist" in (
        output
    )
    if command == "fit-search":
        with pytest.raises(ValueError, match="the folder .* does not exist"):
            fit_search_networks(SearchNetsConfig(players=2, games=2), "dangling.npz")
    elif command == "distill":
        with pytest.raises(ValueError, match="the folder .* does not exist"):
            distill(DistillConfig(players=2, games=2), "dangling.npz")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dangling.npz"]


@pytest.mark.parametrize("command", ["fit-search", "distill"])
def test_the_python_api_names_its_out_file_without_the_flag(command, tmp_path, monkeypatch):
    """fit_search_networks and distill said '--out 'x.npz' holds ...', a flag a Python
    caller never gave."""
    _no_games(monkeypatch)
    out = tmp_path / "x.npz"
    if command == "fit-search":
        out.write_bytes(SHIPPED["ppo"][2].read_bytes())
        with pytest.raises(ValueError, match=f"^{re.escape(repr(str(out)))} holds a PPO policy: "):
            fit_search_networks(SearchNetsConfig(players=2, games=2), out)
    else:
        out.write_bytes(NETWORKS[2].read_bytes())
        with pytest.raises(ValueError, match=f"^{re.escape(repr(str(out)))} holds the search's value"):
            distill(DistillConfig(players=2, games=2), out)


@pytest.mark.parametrize("command", ["export", "fit-search", "distill"])
def test_the_shipped_models_rule_comes_before_the_folders_write_check(command, tmp_path, monkeypatch):
    """On a read-only install, --out agents/models/x.npz said 'cannot write in ...', as if
    the folder's permissions were the problem, where the rule is that nothing is written
    there."""
    import train.fit

    _no_games(monkeypatch)
    shipped = tmp_path / "models"
    shipped.mkdir()
    monkeypatch.setattr(train.fit, "MODELS_DIR", shipped, raising=False)

    def read_only(directory, prefix, suffix):
        raise PermissionError(30, "Read-only file system", str(directory))

    monkeypatch.setattr("llama_env._atomic.new_file", read_only)
    out = str(shipped / "x.npz")
    code, output = _cli([*_writes(command), "--out", out])
    assert code == 2 and "Traceback" not in output and len(output.strip().splitlines()) == 1, output
    assert f"--out {out!r} is in {shipped}, the models the package's agents play" in output


# --------------------------------------------------------------------------- a specialist of other rules


@pytest.mark.parametrize("command", ["fit-search", "distill"])
def test_a_specialist_trained_under_other_rules_is_refused_before_any_game(command, tmp_path, monkeypatch):
    """Both play standard-rule games alone, and took a specialist trained at end_score 20
    and hand_size 4 without a word (evaluation warns of it); distill's policy then said
    it was trained at end_score 20 and 40, hand_size 4 and 6."""
    _no_games(monkeypatch)
    monkeypatch.chdir(tmp_path)
    actor = load_actor(SHIPPED["ppo"][2])
    actor.trained_rules = {"end_score": (20,), "hand_size": (4, 6)}
    save_actor(actor, tmp_path / "short.npz")
    code, output = _cli([command, "--players", "2", "--games", "2", "--model", "short.npz", "--out", "x.npz"])
    assert code == 2 and "Traceback" not in output and len(output.strip().splitlines()) == 1, output
    assert (
        "short.npz was trained at end_score 20 only; fit-search and distill play standard-rule games "
        "(end_score 40), which it never saw: give a specialist trained at them"
    ) in output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["short.npz"]


# --------------------------------------------------------------------------- the Python API's configs


@pytest.mark.parametrize(
    ("config", "message"),
    [
        (DistillConfig(temperature=float("inf")), "DistillConfig temperature must be a finite number, got inf"),
        (DistillConfig(learning_rate=float("inf")), "DistillConfig learning_rate must be a finite number, got inf"),
        (DistillConfig(searched_weight=float("nan")), "DistillConfig searched_weight must be a finite number"),
        (DistillConfig(games="10"), "DistillConfig games must be an integer, got '10'"),
        (DistillConfig(worlds=2.5), "DistillConfig worlds must be an integer, got 2.5"),
        (DistillConfig(model=3), "DistillConfig model must be a file's path"),
        (SearchNetsConfig(games="10"), "SearchNetsConfig games must be an integer, got '10'"),
        (SearchNetsConfig(seed=True), "SearchNetsConfig seed must be an integer, got True"),
        (SearchNetsConfig(learning_rate=float("inf")), "SearchNetsConfig learning_rate must be a finite number"),
        (SearchNetsConfig(hidden=256), "hidden must be positive layer sizes, got 256"),
        (SearchNetsConfig(hidden=(8.5,)), r"hidden must be positive layer sizes, got \(8.5,\)"),
    ],
)
def test_a_config_field_of_the_wrong_type_or_not_finite_is_named_by_validate(config, message):
    """validate() let an infinite temperature through (`not T >= 0`): distill played and
    fitted, then failed on 'the policy's layer 0 holds NaN or infinite weights'; a string
    of digits was a raw TypeError of a comparison."""
    with pytest.raises(ValueError, match=message):
        config.validate()


@pytest.mark.parametrize(
    ("config", "message"),
    [
        (DistillConfig(games=None), "DistillConfig games must be an integer, got None"),
        (DistillConfig(seed=None), "DistillConfig seed must be an integer, got None"),
        (DistillConfig(temperature=None), "DistillConfig temperature must be a finite number, got None"),
        (SearchNetsConfig(players=None), "SearchNetsConfig players must be an integer, got None"),
        (SearchNetsConfig(held_out=None), "SearchNetsConfig held_out must be an integer, got None"),
        (SearchNetsConfig(learning_rate=None), "SearchNetsConfig learning_rate must be a finite number, got None"),
    ],
)
def test_none_is_refused_by_validate_where_the_field_does_not_allow_it(config, message):
    """Every field skipped None, though only worlds, below, horizon, model and networks
    mean something by it: DistillConfig(games=None) passed validate(), and distill failed
    in numpy ('NoneType' object cannot be interpreted as an integer)."""
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        config.validate()
    assert DistillConfig(players=2, worlds=None, below=None, horizon=None, model=None, networks=None).validate()


def test_run_distill_refuses_an_infinite_temperature_before_any_game(tmp_path, monkeypatch, capsys):
    from train.cli.common import CommandError
    from train.cli.distill import run_distill

    _no_games(monkeypatch)
    with pytest.raises(CommandError, match="temperature must be a finite number, got inf"):
        run_distill(DistillConfig(players=2, games=3, temperature=float("inf")), tmp_path / "x.npz")
    assert list(tmp_path.iterdir()) == []


# --------------------------------------------------------------------------- 3 and 5 players


def test_distills_help_says_which_settings_the_search_takes_at_3_and_5_players(capsys):
    """The help listed the search's defaults at 2, 4 and 6 players only; at 3 and 5 it
    takes those of 2 and 4, which the agent and the help now read from one place."""
    from agents.search import settings_size

    assert [settings_size(n) for n in range(2, 7)] == [2, 2, 4, 4, 6]
    assert main(["distill", "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "0.99 at 6 players; at 3 and 5 players those of 2 and 4)" in text
    assert "at 3 and 5 players the search takes the settings of 2 and 4 players" in text


# --------------------------------------------------------------------------- --progress


@pytest.mark.parametrize("command", ["fit-search", "distill"])
def test_progress_shows_a_bar_of_the_games_and_changes_nothing_else(command, tmp_path, monkeypatch, capsys):
    """fit-search printed nothing until its games were all played (911 s for the shipped
    4-player file), distill nothing after 'searching on ...' for up to 53 minutes."""
    monkeypatch.chdir(tmp_path)
    argv = [command, "--players", "2", "--games", "4"]
    argv += ["--epochs", "1", "--below", "0.99"] if command == "distill" else []
    printed = {}
    for flag in ("--progress", "--no-progress"):
        out = f"{flag[2:]}.npz"
        assert main([*argv, "--out", out, flag]) == 0
        captured = capsys.readouterr()
        printed[flag] = captured.out.replace(out, "OUT").splitlines()
        bar = "games of data" if command == "fit-search" else "games of search"
        assert (f"{bar}: 100%" in captured.err and "4/4" in captured.err) == (flag == "--progress"), captured.err
    timings = re.compile(r"\d+ s\b")
    assert [timings.sub("", line) for line in printed["--progress"]] == [
        timings.sub("", line) for line in printed["--no-progress"]
    ]
    with np.load(tmp_path / "progress.npz") as a, np.load(tmp_path / "no-progress.npz") as b:
        assert a.files == b.files and all(np.array_equal(a[k], b[k]) for k in a.files)
