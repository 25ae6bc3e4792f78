"""An empty path option is refused when the command line is read, in one line that names
the option and says what it takes: ``llama-rl train --resume "$RUN"`` with RUN unset
trained a preset from scratch, ``--run-dir ''`` wrote the run into the current folder, and
the Python messages for an empty model or networks path said what to do."""

from __future__ import annotations

import contextlib
import io

import pytest

from train.cli import main


def _cli(argv: list[str]) -> tuple[int, str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out), contextlib.suppress(SystemExit):
        return main(argv), out.getvalue()
    return 2, out.getvalue()


def _error_line(output: str) -> str:
    (line,) = [t for t in output.strip().splitlines() if "error" in t]
    assert "Traceback" not in output, output
    return line


@pytest.mark.parametrize(
    ("flag", "wanted"),
    [
        ("--resume", "needs a checkpoint .zip or run directory, got ''"),
        ("--run-dir", "needs a folder's name (\".\" for the current one), got ''"),
    ],
)
@pytest.mark.parametrize("value", ["", "  "])
def test_train_refuses_an_empty_path_option_before_training(flag, wanted, value, tmp_path, monkeypatch):
    import train.training

    def no_training(*args, **kwargs):
        raise AssertionError("a run was trained")

    monkeypatch.setattr(train.training, "train", no_training)
    monkeypatch.chdir(tmp_path)
    code, output = _cli(["train", "--preset", "ship", flag, value])
    assert code == 2, output
    assert _error_line(output).endswith(f"argument {flag}: {wanted.replace(repr(''), repr(value))}"), output
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("argv", "wanted"),
    [
        (["fit-search", "--model", ""], "argument --model: needs a model file or run directory, got ''"),
        (["fit-search", "--out", ""], "argument --out: needs a file's name, got ''"),
        (["distill", "--model", ""], "argument --model: needs a model file or run directory, got ''"),
        (["distill", "--networks", ""], "argument --networks: needs a file's name, got ''"),
        (["distill", "--out", ""], "argument --out: needs a file's name, got ''"),
        (["export", "--out", "", "m.zip"], "argument --out: needs a file's name, got ''"),
        (
            ["export", "", "--out", "x.npz"],
            "argument MODEL: needs a model file (.zip or .npz), a run directory or an RLlib checkpoint, got ''",
        ),
    ],
)
def test_fit_distill_and_export_say_an_empty_path_option_alike(argv, wanted, tmp_path):
    """fit-search --model '' said "needs a file's name" (a run directory is one too), and
    --out '' "llama-rl: error: --out is empty": two wordings for one mistake. export said
    "MODEL is empty" and "--out is empty", after the parser, and without what to name."""
    rest = [] if argv[0] == "export" else ["--players", "2", "--games", "2"]
    rest += [] if "--out" in argv else ["--out", str(tmp_path / "x.npz")]
    code, output = _cli([*argv, *rest])
    assert code == 2 and _error_line(output).endswith(wanted), output


def test_an_empty_model_or_networks_path_says_what_to_name():
    """c3c34e4 dropped the hints: '--agents: the model path is empty', 'SearchAgent
    networks_path is empty'."""
    from agents.ppo import model_file
    from agents.search import SearchAgent, load_networks

    with pytest.raises(ValueError, match="^the model path is empty: name a model file or run directory$"):
        model_file("")
    with pytest.raises(
        ValueError, match="^SearchAgent networks_path is empty: name a file that llama-rl fit-search wrote$"
    ):
        SearchAgent(networks_path="")
    with pytest.raises(ValueError, match="^the search networks' path is empty: name a file that llama-rl fit-search"):
        load_networks("")


@pytest.mark.parametrize("value", ["", "  "])
def test_a_train_config_from_python_refuses_an_empty_run_dir(value, tmp_path, monkeypatch):
    """TrainConfig(run_dir="") trained into the current folder, where --run-dir '' is refused."""
    from train.training import TrainConfig

    monkeypatch.chdir(tmp_path)
    with pytest.raises(ValueError, match=r"^config key 'run_dir' must name a folder \(\"\.\" for the current one\)"):
        TrainConfig(run_dir=value).validate()
    assert list(tmp_path.iterdir()) == []


def test_a_train_config_reads_a_leading_tilde_in_run_dir_as_the_home_folder(tmp_path, monkeypatch):
    """run_dir="~/runs" made a folder named '~' in the current one; --run-dir=~/runs, which
    the shell leaves alone, did too."""
    from train.training import TrainConfig

    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    config = TrainConfig(run_dir="~/runs", run_name="r").validate()
    assert config.run_path() == tmp_path / "home" / "runs" / "r"
    assert config.run_path(claim=False).parent == tmp_path / "home" / "runs"
    assert TrainConfig(run_dir="~/runs").validate().run_path(claim=True).parent == tmp_path / "home" / "runs"
    assert not (tmp_path / "~").exists()
