"""Resuming a model file runs none of the code it may hold: the sb3 trainer reads its
weights, optimizer state and step counts without unpickling its ``data``
(:mod:`train.training.sb3._internals`), where SB3's ``load`` unpickled every object in it
first; and that module's assumptions about SB3 still hold."""

from __future__ import annotations

import base64
import json
import pickle
import shutil
import zipfile
from pathlib import Path

import pytest

from train.cli import main
from train.training.sb3 import _internals

SMOKE = ["train", "--preset", "smoke", "--final-eval-games", "0"]


class WritesAMarker:
    """Unpickled, it writes ``marker``: what a stranger's model file could run instead."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):  # type: ignore[no-untyped-def]
        return (Path.write_text, (self.marker, "pwned"))


def rewrite_data(src: Path, dst: Path, change) -> None:  # type: ignore[no-untyped-def]
    """``src`` copied to ``dst`` with its ``data`` JSON passed through ``change``."""
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w") as zout:
        for item in zin.infolist():
            body = zin.read(item.filename)
            if item.filename == "data":
                body = json.dumps(change(json.loads(body))).encode()
            zout.writestr(item, body)


def booby_trapped(src: Path, dst: Path, marker: Path) -> None:
    """``src`` with every pickled object of its ``data`` replaced by one that writes ``marker``."""
    evil = base64.b64encode(pickle.dumps(WritesAMarker(marker))).decode()

    def change(data):  # type: ignore[no-untyped-def]
        for value in data.values():
            if isinstance(value, dict) and ":serialized:" in value:
                value[":serialized:"] = evil
        return data

    rewrite_data(src, dst, change)


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("runs")
    assert main([*SMOKE, "--run-dir", str(root), "--run-name", "tiny", "--total-timesteps", "512"]) == 0
    return root / "tiny"


def test_resuming_a_model_file_runs_no_code_it_holds(tiny_run, tmp_path):
    """The audit's proof: SB3's load ran a pickle planted in the data of a model.zip."""
    marker = tmp_path / "pwned"
    evil = tmp_path / "downloads" / "model.zip"
    evil.parent.mkdir()
    booby_trapped(tiny_run / "model.zip", evil, marker)
    argv = [*SMOKE, "--resume", str(evil), "--run-dir", str(tmp_path / "runs"), "--run-name", "mine"]
    code = main([*argv, "--total-timesteps", "1024"])
    assert not marker.exists(), "resuming the model file ran the pickle planted in it"
    assert code == 0
    summary = json.loads((tmp_path / "runs" / "mine" / "summary.json").read_text())
    assert summary["num_timesteps"] == 1024 and summary["steps_this_session"] == 512


def test_resuming_a_run_directory_runs_no_code_its_checkpoint_holds(tiny_run, tmp_path):
    run = tmp_path / "tiny"
    shutil.copytree(tiny_run, run)
    marker = tmp_path / "pwned"
    checkpoint = run / "checkpoints" / "ppo_512.zip"
    booby_trapped(tiny_run / "checkpoints" / "ppo_512.zip", checkpoint, marker)
    code = main(["train", "--resume", str(run), "--total-timesteps", "1024", "--final-eval-games", "0"])
    assert not marker.exists(), "resuming the run ran the pickle planted in its checkpoint"
    assert code == 0
    assert json.loads((run / "summary.json").read_text())["num_timesteps"] == 1024


def test_a_resumed_model_continues_its_optimizer_and_update_counts(tiny_run, tmp_path):
    """Adam's step count and SB3's update count go on from the file's, as SB3's load had them."""
    copy = tmp_path / "model.zip"
    shutil.copy(tiny_run / "model.zip", copy)
    argv = [*SMOKE, "--resume", str(copy), "--run-dir", str(tmp_path / "runs"), "--run-name", "on"]
    assert main([*argv, "--total-timesteps", "1024"]) == 0

    def counts(path: Path) -> tuple[int, int, set[float]]:
        saved = _internals.read_model_file(path)
        state = saved.state_dicts["policy.optimizer"]["state"]
        return saved.counters["num_timesteps"], saved.counters["_n_updates"], {float(s["step"]) for s in state.values()}

    steps, updates, adam = counts(copy)
    assert (steps, updates) == (512, 1) and adam == {2.0}  # smoke: one epoch of 2 batches a rollout
    assert counts(tmp_path / "runs" / "on" / "model.zip") == (1024, 2, {4.0})


def test_a_model_trained_at_another_end_score_is_refused_by_name(tiny_run, tmp_path, capsys):
    """SB3's load refused it too, in a message cut off inside two arrays of bounds."""
    copy = tmp_path / "model.zip"
    shutil.copy(tiny_run / "model.zip", copy)
    argv = [*SMOKE, "--resume", str(copy), "--run-dir", str(tmp_path / "runs"), "--end-score", "60"]
    assert main([*argv, "--total-timesteps", "1024"]) == 2
    err = capsys.readouterr().err
    assert "was trained on observations scaled for another end score than this run's 60" in err
    assert "resume it with the --end-score it was trained with" in err


def test_a_policy_with_settings_the_trainer_does_not_make_is_refused(tiny_run, tmp_path, capsys):
    """An optimizer or features other than the trainer's would be lost silently (SB3's load unpickled them)."""
    odd = tmp_path / "odd.zip"

    def change(data):  # type: ignore[no-untyped-def]
        data["policy_kwargs"]["optimizer_class"] = "<class 'torch.optim.rmsprop.RMSprop'>"
        return data

    rewrite_data(tiny_run / "model.zip", odd, change)
    argv = [*SMOKE, "--resume", str(odd), "--run-dir", str(tmp_path), "--total-timesteps", "1024"]
    assert main(argv) == 2
    assert "settings this trainer does not make (optimizer_class)" in capsys.readouterr().err


def test_a_weights_file_holding_more_than_tensors_is_refused(tiny_run, tmp_path, capsys):
    """The weights are read with torch's weights_only: a pickle planted there is refused, not run."""
    marker = tmp_path / "pwned"
    evil = tmp_path / "evil.zip"
    with zipfile.ZipFile(tiny_run / "model.zip") as zin, zipfile.ZipFile(evil, "w") as zout:
        for item in zin.infolist():
            body = zin.read(item.filename)
            zout.writestr(
                item, pickle.dumps(WritesAMarker(marker)) if item.filename == "policy.optimizer.pth" else body
            )
    argv = [*SMOKE, "--resume", str(evil), "--run-dir", str(tmp_path), "--total-timesteps", "1024"]
    assert main(argv) == 2
    assert not marker.exists()
    assert f"cannot load {evil} as a MaskablePPO model" in capsys.readouterr().err


# --------------------------------------------------------------------------- SB3's internals


def test_sb3_behaves_as_the_resume_reader_assumes():
    import stable_baselines3

    problems = _internals.broken_assumptions()
    assert not problems, (
        f"stable-baselines3 {stable_baselines3.__version__} no longer behaves as train/training/sb3/_internals.py "
        f"assumes (checked against {_internals.CHECKED_VERSION}): " + "; ".join(problems)
    )


def test_the_sb3_check_names_an_optimizer_state_left_behind(monkeypatch):
    """A set_parameters that no longer restored the optimizer would restart Adam's moments."""
    from sb3_contrib import MaskablePPO

    real = MaskablePPO.set_parameters

    def policy_only(self, load_path_or_dict, exact_match=True, device="auto"):  # type: ignore[no-untyped-def]
        real(self, {"policy": load_path_or_dict["policy"]}, exact_match=False, device=device)

    monkeypatch.setattr(MaskablePPO, "set_parameters", policy_only)
    problems = _internals.broken_assumptions()
    assert any(p.startswith("4: set_parameters put the optimizer's step counts") for p in problems), problems


def test_a_resumed_run_plays_games_of_its_own(tiny_run, tmp_path, monkeypatch):
    """The resumed part plays games seeded from (seed, step count), as docs/training.md
    says: building the model seeded them again with the file's seed (SB3's load did too),
    so a resume replayed the deals its run began with."""
    import numpy as np

    import train.training.sb3.trainer as trainer

    first: list[np.ndarray] = []
    made: list[dict] = []
    real = trainer.make_vec_env

    def recording(engine, env_workers, num_envs, **kwargs):  # type: ignore[no-untyped-def]
        env = real(engine, env_workers, num_envs, **kwargs)
        made.append({"engine": engine, "env_workers": env_workers, "num_envs": num_envs, **kwargs})
        reset = env.reset

        def first_reset():  # type: ignore[no-untyped-def]
            obs = reset()
            if not first:
                first.append(np.array(obs, copy=True))
            return obs

        env.reset = first_reset
        return env

    monkeypatch.setattr(trainer, "make_vec_env", recording)
    run = tmp_path / "tiny"
    shutil.copytree(tiny_run, run)
    # heuristic opponents only: the first observations then follow from the deals alone
    argv = ["train", "--resume", str(run), "--total-timesteps", "1024", "--final-eval-games", "0"]
    assert main([*argv, "--opponents", "heuristic"]) == 0

    def deals(seed: int) -> np.ndarray:
        kwargs = dict(made[0], seed=seed)
        env = real(kwargs.pop("engine"), kwargs.pop("env_workers"), kwargs.pop("num_envs"), **kwargs)
        try:
            return np.asarray(env.reset())
        finally:
            env.close()

    own = int(np.random.SeedSequence([0, 512]).generate_state(1)[0])  # smoke's seed 0, resumed at step 512
    assert made[0]["seed"] == own
    assert not np.array_equal(first[0], deals(0)), "the resumed part replayed the deals its run began with"
    assert np.array_equal(first[0], deals(own))
