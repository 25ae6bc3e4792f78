"""What the training audit found: a session that failed left its settings to the next
resume, batch sizes that leave a minibatch of one step, a new run that failed leaving its
folder, rllib resuming a corrupt checkpoint, 'past' that never plays, run names the
printed commands cannot hold, stale rows of eval.jsonl, presets with another backend or
a resume, and exporting a run that has no model yet."""

from __future__ import annotations

import json
import pickle
from pathlib import Path
from types import SimpleNamespace

import pytest
from conftest import needs_rllib
from sb3_contrib import MaskablePPO
from test_run_safety import smoke

from agents.ppo import RLLIB_MODULE_STATE, run_table_sizes
from train.training import train
from train.training.resume import resume_config
from train.training.run_dir import RLLIB_CHECKPOINT_FILES, RunDir, rllib_checkpoint_problem


def crash_in_the_first_update(monkeypatch) -> None:
    """PPO's update fails (as torch's NaN logits did), before the session saves anything."""

    def crash(self, *args, **kwargs):
        raise RuntimeError("the update failed")

    monkeypatch.setattr(MaskablePPO, "train", crash)


# --------------------------------------------------------------------------- 1. a failed session's settings


def test_a_resume_that_failed_leaves_its_settings_to_no_later_resume(tmp_path, monkeypatch):
    """A resume with --players 6 that crashed wrote config.resume_1.json and no session:
    the next plain --resume took its 6 players over, and the model claimed 6 players."""
    train(smoke(tmp_path, "a", players=(2,), eval_players=(2,)))
    run = RunDir(tmp_path / "a")
    crash_in_the_first_update(monkeypatch)
    with pytest.raises(RuntimeError, match="the update failed"):
        train(resume_config(run.path, {"players": (6,), "n_epochs": 3, "total_timesteps": 4096}))
    monkeypatch.undo()
    assert [p.name for p in run.config_files()] == ["config.json"]  # the failed session's file is gone
    config = resume_config(run.path, {"total_timesteps": 4096})
    assert (config.players, config.n_epochs) == ((2,), 1)
    assert run_table_sizes(run.model_path) == (2,)


def test_a_config_left_by_a_killed_session_counts_only_if_it_saved_a_checkpoint(tmp_path):
    """kill -9 cannot clean up: its config.resume_<k>.json stays, with no line in
    sessions.jsonl. It is passed over unless the run holds a checkpoint beyond every
    recorded session (the killed session trained it)."""
    train(smoke(tmp_path, "k", players=(2,), eval_players=(2,)))
    run = RunDir(tmp_path / "k")
    left = run.path / "config.resume_1.json"
    left.write_text(json.dumps({**json.loads(run.config_path.read_text()), "players": [6], "n_epochs": 3}))
    assert resume_config(run.path, {"total_timesteps": 4096}).players == (2,)
    assert run.recorded_config_path() == run.config_path
    assert run_table_sizes(run.model_path) == (2,)  # the model: 2048 steps, all of them heads-up
    assert run_table_sizes(run.checkpoint_path(2048)) == (2,)
    # a later session that went on from the same step shows the one between never trained
    run.append_session(2048, 3072, "config.resume_2.json", run.checkpoint_path(2048), False)
    (run.path / "config.resume_2.json").write_text(json.dumps({"players": [4]}))
    assert run_table_sizes(run.checkpoint_path(3072)) == (2, 4)
    assert run.next_resume_config_path().name == "config.resume_3.json"
    # a killed session that saved a checkpoint beyond every recorded one did train
    (run.path / "config.resume_2.json").unlink()
    run.sessions_path.write_text(run.sessions_path.read_text().splitlines()[0] + "\n")
    (run.checkpoints_dir / "ppo_3072.zip").write_bytes(run.checkpoint_path(2048).read_bytes())
    assert run.recorded_config_path() == left
    assert run_table_sizes(run.checkpoint_path(3072)) == (2, 6)


def test_the_next_resume_after_a_failed_one_trains_with_the_runs_own_settings(tmp_path, monkeypatch, capsys):
    from train.cli import main

    root = str(tmp_path)
    base = ["--final-eval-games", "0", "--no-progress-bar"]
    assert main(["train", "--preset", "smoke", "--players", "2", "--eval-players", "2", "--run-dir", root,
                 "--run-name", "a", "--no-tensorboard", *base]) == 0  # fmt: skip
    crash_in_the_first_update(monkeypatch)
    with pytest.raises(RuntimeError):
        main(["train", "--resume", str(tmp_path / "a"), "--players", "6", "--total-timesteps", "4096", *base])
    monkeypatch.undo()
    assert main(["train", "--resume", str(tmp_path / "a"), "--total-timesteps", "3072", *base]) == 0
    ran = json.loads((tmp_path / "a" / "config.resume_1.json").read_text())
    assert ran["players"] == [2] and ran["total_timesteps"] == 3072
    capsys.readouterr()


# --------------------------------------------------------------------------- 3. minibatches of 1, failed new runs


@pytest.mark.parametrize("batch_size", [511, 1, 3])
def test_a_batch_size_that_leaves_a_minibatch_of_one_step_is_refused_on_sb3(tmp_path, batch_size):
    """--preset smoke --batch-size 511 (a rollout of 16 x 32 = 512) passed the checks, then
    died in torch with NaN logits: sb3-contrib normalises the advantages of every
    minibatch, and the last one held one step (batch size 3: 512 = 170 x 3 + 2 is fine)."""
    config = smoke(tmp_path, "b", batch_size=batch_size)
    if batch_size == 3:
        config.validate()
        return
    message = rf"config key 'batch_size' \({batch_size}\) leaves a minibatch of 1 step .* 512"
    with pytest.raises(ValueError, match=message):
        config.validate()
    # rllib cycles through the batch to fill every minibatch, and normalises over the whole batch
    smoke(tmp_path, "b", batch_size=batch_size, backend="rllib", options=None).validate()


def test_the_command_line_refuses_such_a_batch_size_in_one_line(tmp_path, capsys):
    from train.cli import main

    argv = ["train", "--preset", "smoke", "--batch-size", "511", "--run-dir", str(tmp_path), "--run-name", "b"]
    assert main([*argv, "--final-eval-games", "0"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "'batch_size' (511)" in err and not (tmp_path / "b").exists()


def test_too_few_games_for_the_batch_size_name_the_fewest_n_envs(tmp_path, capsys):
    """A rollout smaller than the minibatch said 'batch_size (256) must be <= n_steps x
    n_envs (32)', leaving the n_envs that would do to be worked out."""
    from train.cli import main

    argv = ["train", "--preset", "smoke", "--n-envs", "1", "--run-dir", str(tmp_path), "--run-name", "b"]
    assert main(argv) == 2
    assert capsys.readouterr().err == (
        "llama-rl: error: config key 'batch_size' (256) must be <= n_steps x n_envs (32): "
        "at n_steps 32, n_envs must be at least 8\n"
    )


def test_a_new_run_that_fails_before_it_saves_anything_leaves_no_folder(tmp_path, monkeypatch):
    """It left runs/<name>/ with config.json and tb/: the name was taken, and the
    --resume it suggested found no checkpoint."""
    crash_in_the_first_update(monkeypatch)
    with pytest.raises(RuntimeError, match="the update failed"):
        train(smoke(tmp_path, "n", options={"tensorboard": True}))
    assert not (tmp_path / "n").exists()
    monkeypatch.undo()
    assert train(smoke(tmp_path, "n", total_timesteps=512, checkpoint_every=0)).num_timesteps == 512


def test_a_new_run_that_saved_a_checkpoint_keeps_its_folder_when_it_fails_later(tmp_path, monkeypatch):
    calls = {"k": 0}
    real = MaskablePPO.train

    def crash_later(self, *args, **kwargs):
        calls["k"] += 1
        if calls["k"] == 3:  # after the checkpoint at 1024 steps (two rollouts of 512)
            raise RuntimeError("the update failed")
        return real(self, *args, **kwargs)

    monkeypatch.setattr(MaskablePPO, "train", crash_later)
    with pytest.raises(RuntimeError):
        train(smoke(tmp_path, "s"))
    run = RunDir(tmp_path / "s")
    assert [p.name for p in run.checkpoints()] == ["ppo_1024.zip"] and run.config_path.exists()
    assert not run.lock_path.exists()


# --------------------------------------------------------------------------- 2. rllib: a damaged newest checkpoint


def rllib_checkpoint(folder: Path) -> Path:
    """A folder laid out as RLlib writes a checkpoint, whole (its pickles hold nothing)."""
    for name in (*RLLIB_CHECKPOINT_FILES, RLLIB_MODULE_STATE.as_posix(), "env_runner/state.pkl"):
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        content = b"{}" if name.endswith(".json") else pickle.dumps({"w": [1.0] * 50})
        (folder / name).write_bytes(content)
    return folder


def fake_rllib_run(root: Path) -> RunDir:
    from train.training import TrainConfig

    config = TrainConfig(backend="rllib", players=(2,), opponents={"random": 1.0}, total_timesteps=768, n_envs=8,
                         n_steps=32, batch_size=128, n_epochs=1, net_arch=(8,), eval_every=0, progress_bar=False,
                         run_dir=str(root), run_name="rl")  # fmt: skip
    run = RunDir(config.run_path())
    run.checkpoints_dir.mkdir(parents=True)
    run.config_path.write_text(json.dumps(config.to_dict()))
    run.append_session(0, 768, "config.json", None, False)
    for steps in (256, 512):
        rllib_checkpoint(run.checkpoints_dir / f"rllib_{steps}")
    return run


@pytest.fixture
def no_ray(monkeypatch):
    """The rllib trainer with Ray, RLlib's algorithm and the training loop replaced: what
    it restored, and where it stopped, are recorded."""
    import contextlib

    import train.training.rllib.trainer as trainer

    seen: dict[str, object] = {"restored": None, "fail": None}

    class Algo:
        def restore_from_path(self, path):
            if seen["fail"]:
                raise pickle.UnpicklingError(seen["fail"])
            seen["restored"] = Path(path)

        def stop(self):
            pass

    monkeypatch.setattr(trainer, "ray_session", lambda run, address, **kwargs: contextlib.nullcontext())
    monkeypatch.setattr(trainer, "build_algorithm_config", lambda config, seed: SimpleNamespace(build_algo=Algo))
    monkeypatch.setattr(trainer, "_loop", lambda *args: "trained")
    return seen


@needs_rllib
def test_an_rllib_resume_skips_a_damaged_newest_checkpoint_with_a_warning(tmp_path, no_ray):
    """A truncated learner state (or an empty rllib_<steps> folder) ended in a bare
    UnpicklingError traceback; the docs say a broken checkpoint is skipped, as on sb3."""
    from train.training.rllib.trainer import train_rllib

    run = fake_rllib_run(tmp_path)
    state = run.checkpoints_dir / "rllib_512" / "learner_group" / "learner" / "state.pkl"
    state.write_bytes(state.read_bytes()[:40])
    (run.checkpoints_dir / "rllib_768").mkdir()  # a folder left empty
    with pytest.warns(RuntimeWarning) as caught:
        assert train_rllib(resume_config(run.path, {"total_timesteps": 2048})) == "trained"
    assert no_ray["restored"] == (run.checkpoints_dir / "rllib_256").resolve()
    said = [str(w.message) for w in caught if "skipping" in str(w.message)]
    assert said == [
        f"resume: skipping {run.checkpoints_dir / 'rllib_768'} (the folder is empty)",
        f"resume: skipping {run.checkpoints_dir / 'rllib_512'} (its learner_group/learner/state.pkl is cut short "
        "or unreadable (ValueError: not enough data in stream to read float8))",
    ]
    assert rllib_checkpoint_problem(run.checkpoints_dir / "rllib_256") is None


@needs_rllib
def test_an_rllib_checkpoint_that_cannot_be_restored_is_one_line(tmp_path, no_ray, capsys):
    from train.cli import main

    run = fake_rllib_run(tmp_path)
    for name in ("rllib_256", "rllib_512"):
        (run.checkpoints_dir / name / RLLIB_MODULE_STATE).unlink()
    with pytest.warns(RuntimeWarning, match="it has no learner_group/learner/rl_module/shared/module_state.pkl"):
        code = main(["train", "--resume", str(run.path), "--total-timesteps", "2048", "--final-eval-games", "0"])
    err = capsys.readouterr().err
    assert code == 2 and err == (
        f"llama-rl: error: config key 'resume': no usable RLlib checkpoint in {run.path}: every one in "
        f"{run.checkpoints_dir} is damaged (see the warnings)\n"
    )
    rllib_checkpoint(run.checkpoints_dir / "rllib_512")
    no_ray["fail"] = "invalid load key, 'x'."
    code = main(["train", "--resume", str(run.path), "--total-timesteps", "2048", "--final-eval-games", "0"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1, err
    assert f"cannot restore {run.checkpoints_dir / 'rllib_512'} (UnpicklingError: invalid load key" in err
    assert [p.name for p in run.config_files()] == ["config.json"]  # the failed session left no config


# --------------------------------------------------------------------------- 4. 'past' that never plays


def test_past_that_never_gets_a_snapshot_is_named_once_at_the_start(tmp_path):
    """The defaults with --total-timesteps 150000 (past 0.2, past_every 200,000) played
    'past' as 'self' the whole run, without a word."""
    import warnings

    from train.cli import main

    def said(argv: list[str]) -> list[str]:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            assert main([*argv, "--final-eval-games", "0"]) == 0
        return [str(w.message) for w in caught if "'past' plays as 'self'" in str(w.message)]

    argv = ["train", "--preset", "smoke", "--opponents", "heuristic:0.5,past:0.5", "--run-dir", str(tmp_path)]
    assert said([*argv, "--past-every", "4096", "--run-name", "p"]) == [
        "opponents: 'past' plays as 'self' until the first snapshot at step 4,096 (past_every 4,096), and this "
        "run ends at 2,048: give a smaller past_every, or drop 'past'"
    ]
    # a resumed sb3 run refills its pool from the run's checkpoints: 'past' plays them
    assert said(["train", "--resume", str(tmp_path / "p"), "--total-timesteps", "3072"]) == []
    # a first snapshot in time: nothing said
    assert said([*argv, "--past-every", "1024", "--run-name", "q"]) == []


@needs_rllib
def test_an_rllib_resume_starts_with_an_empty_past_pool_and_says_when_it_never_fills(tmp_path, no_ray):
    run = fake_rllib_run(tmp_path)
    overrides = {"opponents": {"random": 1.0, "past": 1.0}, "past_every": 2048, "total_timesteps": 1536}
    from train.training.rllib.trainer import train_rllib

    with pytest.warns(RuntimeWarning, match=r"'past' plays as 'self' until the first snapshot at step 2,048 "):
        train_rllib(resume_config(run.path, overrides))


# --------------------------------------------------------------------------- 5. names the printed commands cannot hold


def test_a_comma_in_a_new_runs_name_is_refused(tmp_path, capsys):
    """--run-name a,b trained, then printed `llama-rl eval --agents ppo:path=runs/a,b,...`,
    which reads two agents."""
    from train.cli import main

    with pytest.raises(ValueError, match=r"config key 'run_name' must not hold a comma, got 'a,b': .*ppo:path="):
        smoke(tmp_path, "a,b").validate()
    argv = ["train", "--preset", "smoke", "--run-dir", str(tmp_path), "--run-name", "a,b", "--final-eval-games", "0"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "must not hold a comma" in err and not (tmp_path / "a,b").exists()
    # a model file from outside a run starts a new run too
    train(smoke(tmp_path, "m"))
    (tmp_path / "downloads").mkdir()
    model = tmp_path / "downloads" / "model.zip"
    model.write_bytes((tmp_path / "m" / "model.zip").read_bytes())
    with pytest.raises(ValueError, match="must not hold a comma"):
        train(smoke(tmp_path, "c,d", resume=str(model), total_timesteps=3072))
    assert not (tmp_path / "c,d").exists()


def test_a_comma_in_a_new_runs_folder_is_refused_too(tmp_path, capsys):
    """--run-dir 'exp,1' trained, then printed `ppo:path=exp,1/<run>/model.zip`, which
    reads two agents; a run already there goes on."""
    from train.cli import main

    parent = tmp_path / "exp,1"
    with pytest.raises(ValueError, match=r"config key 'run_dir' must not hold a comma, got '.*exp,1': .*ppo:path="):
        smoke(parent, "r").validate()
    argv = ["train", "--preset", "smoke", "--run-dir", str(parent), "--run-name", "r", "--final-eval-games", "0"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "'run_dir' must not hold a comma" in err and not parent.exists()


def test_two_new_runs_of_one_second_and_seed_get_names_of_their_own(tmp_path, monkeypatch):
    """The default name is the algorithm, the seed and the second: a second run of the
    same seed started in that second (a sweep over the learning rate) was refused, its
    name taken."""
    import time

    from train.training.config import TrainConfig

    monkeypatch.setattr(time, "time", lambda: 1_700_000_000.5)
    config = TrainConfig(run_dir=str(tmp_path), seed=3)
    first = config.run_path()
    assert first.name == "llama__maskableppo__3__1700000000"
    first.mkdir()
    assert config.run_path().name == "llama__maskableppo__3__1700000000_2"
    (tmp_path / "llama__maskableppo__3__1700000000_2").mkdir()
    assert config.run_path().name == "llama__maskableppo__3__1700000000_3"
    assert TrainConfig(run_dir=str(tmp_path), seed=4).run_path().name == "llama__maskableppo__4__1700000000"
    # two runs starting at once: each claims its name by making its folder before the other looks
    a, b = TrainConfig(run_dir=str(tmp_path / "sweep"), seed=3), TrainConfig(run_dir=str(tmp_path / "sweep"), seed=3)
    names = [a.run_path(), b.run_path()]
    assert names[0] == names[1]  # looking alone cannot tell them apart
    claimed = [a.run_path(claim=True), b.run_path(claim=True)]
    assert [p.name for p in claimed] == ["llama__maskableppo__3__1700000000", "llama__maskableppo__3__1700000000_2"]
    assert all(p.is_dir() and not any(p.iterdir()) for p in claimed)


# --------------------------------------------------------------------------- 6. rows past the resumed step


def rows(path: Path, key: str) -> list:
    return [json.loads(line)[key] for line in path.read_text().splitlines()]


def test_a_resume_drops_the_evaluations_a_killed_session_made_past_its_step(tmp_path):
    """A session killed after an evaluation at 3072 but before its checkpoint there: the
    resume went on from 2048 and evaluated at 3072 again, and eval.jsonl held two rows
    for 3072."""
    train(smoke(tmp_path, "e", eval_every=1024, eval_games=4))
    run = RunDir(tmp_path / "e")
    run.append_eval({"timesteps": 3072, "opponent": "heuristic", "win_share_2p": -1.0})  # the killed session's
    with run.eval_path.open("a") as fh:
        fh.write("a line of someone else's\n")
    train(resume_config(run.path, {"total_timesteps": 3072}))
    lines = run.eval_path.read_text().splitlines()
    assert [json.loads(line)["timesteps"] for line in lines if line.startswith("{")] == [1024, 2048, 3072]
    assert "a line of someone else's" in lines and all("-1.0" not in line for line in lines)


@needs_rllib
def test_an_rllib_resume_drops_the_progress_and_evaluations_past_its_step(tmp_path, no_ray):
    from train.training.rllib.trainer import train_rllib

    run = fake_rllib_run(tmp_path)
    for steps in (256, 512, 768):
        run.append_jsonl(run.path / "progress.jsonl", {"learner_steps": steps})
        run.append_eval({"timesteps": steps, "opponent": "heuristic"})
    train_rllib(resume_config(run.path, {"total_timesteps": 2048}))  # from rllib_512
    assert rows(run.path / "progress.jsonl", "learner_steps") == [256, 512]
    assert rows(run.eval_path, "timesteps") == [256, 512]


# --------------------------------------------------------------------------- 7. presets with --backend and --resume


def config_of(*words: str):
    from train.cli import build_parser
    from train.cli.train import config_from_args

    return config_from_args(build_parser().parse_args(["train", *words]))


def test_a_presets_backend_options_apply_on_its_backend_only():
    """--preset beat-heuristic --backend rllib was refused: "config key 'tensorboard' is an
    option of backend 'sb3'", a key the person never gave."""
    config = config_of("--preset", "beat-heuristic", "--backend", "rllib")
    assert config.backend == "rllib" and config.players == (2,) and config.stop_win_share == 0.5
    assert not hasattr(config.options, "tensorboard")
    assert config_of("--preset", "beat-heuristic").options.tensorboard is False  # on sb3, as before
    with pytest.raises(ValueError, match="'tensorboard' is an option of backend 'sb3'"):
        config_of("--preset", "beat-heuristic", "--backend", "rllib", "--no-tensorboard")  # given: refused


def test_a_preset_with_the_resume_of_a_run_is_refused_in_one_line(tmp_path, capsys):
    """--preset smoke --resume RUN laid the preset's values over the run's own settings."""
    from train.cli import main

    run = tmp_path / "r"
    (run / "checkpoints").mkdir(parents=True)
    (run / "config.json").write_text(json.dumps(smoke(tmp_path, "r").to_dict()))
    assert main(["train", "--preset", "beat-heuristic", "--resume", str(run), "--final-eval-games", "0"]) == 2
    err = capsys.readouterr().err
    assert err == (
        f"llama-rl: error: --preset beat-heuristic describes a new run, and --resume {run} continues a run with "
        "its own recorded settings: leave out --preset (the flags given change what they name), or leave out "
        "--resume to start a new run with the preset\n"
    )
    assert sorted(p.name for p in run.iterdir()) == ["checkpoints", "config.json"]
    # a second-phase preset resumes a run of its own, which --resume may name
    first = config_of("--preset", "ship", "--run-dir", str(tmp_path), "--run-name", "myship")
    (tmp_path / "myship").mkdir()
    (tmp_path / "myship" / "config.json").write_text(json.dumps(first.to_dict()))
    assert Path(config_of("--preset", "ship-finetune", "--resume", str(tmp_path / "myship")).resume).name == "myship"


# --------------------------------------------------------------------------- 8. exporting a run with no model yet


def test_exporting_a_run_without_its_model_names_the_checkpoint_to_export(tmp_path, capsys):
    """It said "it is not a run directory" of a run still training."""
    from train.cli import main

    train(smoke(tmp_path, "t"))
    run = RunDir(tmp_path / "t")
    run.model_path.unlink()  # as while the run trains
    out = tmp_path / "out.npz"
    assert main(["export", str(run.path), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err == (
        f"llama-rl: error: MODEL '{run.path}': the run has no model yet (it is still training, or it stopped before "
        "its end, when the model is written); export its newest checkpoint instead: llama-rl export "
        f"{run.checkpoint_path(2048)} --out {out}\n"
    )
    run.checkpoint_path(2048).write_bytes(b"")  # being written: the one before
    assert main(["export", str(run.path), "--out", str(out)]) == 2
    assert f"llama-rl export {run.checkpoint_path(1024)} --out" in capsys.readouterr().err
    assert main(["export", str(run.checkpoint_path(1024)), "--out", str(out)]) == 0 and out.is_file()
    for checkpoint in run.checkpoints():
        checkpoint.unlink()
    assert main(["export", str(run.path), "--out", str(out)]) == 2
    assert "the run has no model yet" in capsys.readouterr().err


def test_exporting_an_rllib_run_without_its_model_names_its_newest_checkpoint(tmp_path, capsys):
    from train.cli import main

    run = fake_rllib_run(tmp_path)
    assert main(["export", str(run.path), "--out", str(tmp_path / "o.npz")]) == 2
    assert f"instead: llama-rl export {run.checkpoints_dir / 'rllib_512'} --out" in capsys.readouterr().err


def test_a_run_that_already_has_a_comma_in_its_name_is_resumed_under_it(tmp_path):
    """The refusal of a comma in a new run's name also refused resuming a run named so
    before it: the run's own config.json was checked as if it named a new run."""
    run = train(smoke(tmp_path, "old")).run_dir
    named = tmp_path / "exp,lr=1e-3"
    run.rename(named)
    recorded = json.loads((named / "config.json").read_text())
    (named / "config.json").write_text(json.dumps({**recorded, "run_name": "exp,lr=1e-3"}))
    assert train(resume_config(named, {"total_timesteps": 3072})).num_timesteps == 3072


def test_train_without_its_extra_names_the_extra_to_install(tmp_path, monkeypatch):
    """``train(config)`` from Python without torch raised a plain "No module named
    'torch'", where ``agents.make('ppo', path=X.zip)`` names the extra and the command
    that installs it; the command line said it, Python did not."""
    import sys

    from llama_env._install import MissingExtra, install_hint

    monkeypatch.setitem(sys.modules, "torch", None)  # as if not installed
    with pytest.raises(MissingExtra, match="^the sb3 backend trains with torch, which is not installed: ") as raised:
        train(smoke(tmp_path, "no_torch"))
    assert raised.value.name == "torch" and str(raised.value).endswith(install_hint("train"))
    assert isinstance(raised.value.__cause__, ModuleNotFoundError) and raised.value.__cause__.name == "torch"
    assert not (tmp_path / "no_torch").exists()


def test_an_opponents_own_missing_module_is_its_plain_error(tmp_path, agent_registry):
    """An opponent whose reset imports a module that is not installed was 'the sb3 backend
    trains with foo_not_installed, which is not installed: pip install ...[train]', its
    traceback dropped: only a package the backend's extra brings names the extra."""
    from llama_env._install import MissingExtra
    from llama_env.agent import register

    @register("needs_foo")
    class NeedsFoo:
        def reset(self, seed=None):
            import foo_not_installed  # noqa: F401

        def act(self, observation, action_mask):
            return int(action_mask.argmax())

    with pytest.raises(ModuleNotFoundError, match="^No module named 'foo_not_installed'$") as raised:
        train(smoke(tmp_path, "needs_foo", opponents="needs_foo"))
    assert not isinstance(raised.value, MissingExtra) and raised.value.name == "foo_not_installed"
