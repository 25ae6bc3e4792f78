"""Nothing a training run saved is ever lost: atomic files, a second Ctrl-C, broken
checkpoints, resuming with the run's own config, locked and unwritable run directories."""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
import warnings
from pathlib import Path

import pytest
from sb3_contrib import MaskablePPO

from train.cli import main
from train.training import TrainConfig, train
from train.training.presets import PRESETS
from train.training.resume import resume_config
from train.training.run_dir import RunDir, RunDirError, checkpoint_problem
from train.training.sb3.vec_env import VEC_ENVS

QUICK = {**PRESETS["smoke"], "eval_every": 0, "options": {"tensorboard": False}}


def smoke(tmp_path: Path, name: str, **changes) -> TrainConfig:
    return TrainConfig(**{**QUICK, "run_dir": str(tmp_path), "run_name": name, **changes})


def files_are_whole(run: Path) -> None:
    """No empty or half-written file anywhere, no temporary file left behind."""
    for p in run.rglob("*"):
        if p.is_file():
            assert not p.name.endswith(".tmp"), f"temporary file left: {p}"
            if p.suffix == ".zip":
                assert checkpoint_problem(p) is None, f"{p}: {checkpoint_problem(p)}"
            if p.suffix == ".json":
                json.loads(p.read_text())


@pytest.fixture
def interrupt_at(monkeypatch):
    """Raise KeyboardInterrupt at the n-th VecEnv step (as Ctrl-C would)."""

    def arm(n: int) -> None:
        calls = {"k": 0}
        for cls in VEC_ENVS.values():  # whichever the run's engine picks

            def step_wait(self, real=cls.step_wait):
                calls["k"] += 1
                if calls["k"] == n:
                    raise KeyboardInterrupt
                return real(self)

            monkeypatch.setattr(cls, "step_wait", step_wait)

    return arm


def test_a_second_ctrl_c_while_saving_leaves_every_file_whole_and_resume_works(tmp_path, interrupt_at, monkeypatch):
    interrupt_at(80)  # after the checkpoint at 1024 steps (16 envs: step 64)
    real_save = MaskablePPO.save
    saves = {"k": 0}

    def save(self, path, *args, **kwargs):
        saves["k"] += 1
        if saves["k"] == 2:  # the interrupt checkpoint: half written, then Ctrl-C again
            path.write(b"PK\x03\x04 half a zip")
            raise KeyboardInterrupt
        return real_save(self, path, *args, **kwargs)

    monkeypatch.setattr(MaskablePPO, "save", save)
    with pytest.raises(KeyboardInterrupt):
        train(smoke(tmp_path, "twice"))
    run = tmp_path / "twice"
    files_are_whole(run)
    assert [p.name for p in RunDir(run).checkpoints()] == ["ppo_1024.zip"]
    assert not (run / "model.zip").exists() and not (run / ".lock").exists()
    monkeypatch.setattr(MaskablePPO, "save", real_save)
    monkeypatch.undo()  # the VecEnv steps normally again
    result = train(resume_config(run))
    assert result.num_timesteps == QUICK["total_timesteps"] and not result.interrupted
    files_are_whole(run)


def test_ctrl_c_saves_and_says_how_to_continue(tmp_path, interrupt_at, capsys):
    interrupt_at(40)
    code = main(
        ["train", "--preset", "smoke", "--run-dir", str(tmp_path), "--run-name", "int", "--final-eval-games", "0"]
    )
    assert code == 130
    out = capsys.readouterr().out
    assert f"llama-rl train --resume {tmp_path / 'int'}" in out
    files_are_whole(tmp_path / "int")
    summary = json.loads((tmp_path / "int" / "summary.json").read_text())
    assert summary["interrupted"] and (tmp_path / "int" / f"checkpoints/ppo_{summary['num_timesteps']}.zip").exists()


def test_a_new_run_stopped_while_it_starts_says_nothing_is_saved_once(tmp_path, monkeypatch, capsys):
    """A Ctrl-C while the env workers started removed the new run without a word, where
    rllib's (while Ray starts) said so: both say it, once."""
    import train.training.sb3.trainer as trainer

    def interrupted_start(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(trainer, "make_vec_env", interrupted_start)
    code = main(
        ["train", "--preset", "smoke", "--run-dir", str(tmp_path), "--run-name", "s", "--final-eval-games", "0"]
    )
    assert code == 130 and not (tmp_path / "s").exists()
    said = f"interrupted at 0 steps: nothing learned yet, so nothing is saved; removing {tmp_path / 's'}"
    assert capsys.readouterr().out.count(said) == 1


@pytest.mark.parametrize(
    ("damage", "why"),
    [
        (lambda p: p.write_bytes(b""), "the file is empty"),
        (lambda p: p.write_bytes(p.read_bytes()[:2000]), ""),
        (lambda p: p.write_bytes(random.Random(1).randbytes(3000)), "BadZipFile"),
    ],
    ids=["empty", "truncated", "garbage"],
)
def test_resume_skips_a_broken_newest_checkpoint_with_a_warning(tmp_path, damage, why):
    train(smoke(tmp_path, "r"))
    run = RunDir(tmp_path / "r")
    newest = run.checkpoints()[-1]
    damage(newest)
    damage(run.model_path)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = train(resume_config(run.path, {"total_timesteps": 2560}))
    skipped = [str(w.message) for w in caught if "skipping" in str(w.message)]
    assert any(str(newest) in m and why in m for m in skipped), skipped
    assert result.num_timesteps == 2560  # continued from ppo_1024 (+3 rollouts of 512)
    files_are_whole(run.path)


def test_resume_takes_a_whole_final_save_newer_than_the_whole_checkpoints(tmp_path):
    """With the newest checkpoint broken, resume took the one before it although model.zip,
    whole, held the run's last step."""
    train(smoke(tmp_path, "r"))
    run = RunDir(tmp_path / "r")
    first, newest = run.checkpoints()
    newest.write_bytes(b"")
    found, skipped = run.newest_valid_checkpoint()
    assert found == run.model_path and [p for p, _ in skipped] == [newest]
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        result = train(resume_config(run.path, {"total_timesteps": 3072}))
    session = json.loads(run.sessions_path.read_text().splitlines()[-1])
    assert session["resumed_from"] == str(run.model_path) and session["started_at_step"] == 2048
    assert result.num_timesteps == 3072
    import llama_env

    assert session["llama_rl_version"] == llama_env.__version__  # a run outlives an upgrade


def test_resuming_an_older_checkpoint_than_the_runs_newest_is_refused(tmp_path):
    """Training on from ppo_1024 overwrote the newer checkpoints, and a later resume of the
    run went back to the abandoned newest one."""
    train(smoke(tmp_path, "r"))
    run = RunDir(tmp_path / "r")
    first, newest = run.checkpoints()
    before = {p: p.read_bytes() for p in run.checkpoints()}
    with pytest.raises(ValueError, match=r"ppo_1024.zip \(1024 steps\) is older than the run's ppo_2048.zip"):
        train(resume_config(first, {"total_timesteps": 3072}))
    assert {p: p.read_bytes() for p in run.checkpoints()} == before
    newest.rename(tmp_path / "set-aside.zip")  # moved away, as the message says: then it resumes
    assert train(resume_config(first, {"total_timesteps": 2048})).num_timesteps == 2048


def test_resume_restores_the_runs_config_and_records_what_ran(tmp_path, capsys):
    root = str(tmp_path)
    assert main(["train", "--preset", "smoke", "--run-dir", root, "--run-name", "c", "--final-eval-games", "0"]) == 0
    run = tmp_path / "c"
    first = json.loads((run / "config.json").read_text())
    code = main(
        ["train", "--resume", str(run), "--total-timesteps", "3072", "--n-epochs", "2", "--final-eval-games", "0"]
    )
    assert code == 0, capsys.readouterr().err
    ran = json.loads((run / "config.resume_1.json").read_text())
    changed = {k for k in first if first[k] != ran[k]}
    assert changed == {"total_timesteps", "n_epochs", "resume"}  # n_envs, batch, network... from the run
    assert ran["n_envs"] == 16 and ran["net_arch"] == [32, 32] and ran["checkpoint_every"] == 1024
    sessions = [json.loads(line) for line in (run / "sessions.jsonl").read_text().splitlines()]
    assert [s["config"] for s in sessions] == ["config.json", "config.resume_1.json"]
    assert sessions[1]["started_at_step"] == 2048 and sessions[1]["ended_at_step"] == 3072
    code = main(["train", "--resume", str(run), "--net-arch", "64,64", "--final-eval-games", "0"])
    err = capsys.readouterr().err
    assert code == 2 and "config key 'net_arch' cannot change when resuming" in err and "(32, 32)" in err


def test_a_copied_run_resumes_as_itself_and_leaves_the_original_alone(tmp_path, capsys):
    root = str(tmp_path)
    assert main(["train", "--preset", "smoke", "--run-dir", root, "--run-name", "c", "--final-eval-games", "0"]) == 0
    shutil.copytree(tmp_path / "c", tmp_path / "copy")
    code = main(["train", "--resume", str(tmp_path / "copy"), "--total-timesteps", "3072", "--final-eval-games", "0"])
    assert code == 0, capsys.readouterr().err
    ran = json.loads((tmp_path / "copy" / "config.resume_1.json").read_text())
    assert (ran["run_dir"], ran["run_name"]) == (root, "copy")  # not the original's name
    assert not (tmp_path / "c" / "config.resume_1.json").exists()
    assert len((tmp_path / "c" / "sessions.jsonl").read_text().splitlines()) == 1


def test_resuming_a_model_outside_any_run_starts_a_new_run_and_never_writes_beside_it(tmp_path, capsys):
    root = str(tmp_path)
    assert main(["train", "--preset", "smoke", "--run-dir", root, "--run-name", "a", "--final-eval-games", "0"]) == 0
    downloads = tmp_path / "downloads"
    downloads.mkdir()
    source = downloads / "theirs.zip"
    source.write_bytes((tmp_path / "a" / "model.zip").read_bytes())
    (downloads / "model.zip").write_bytes(b"a different model, not to be overwritten")
    argv = ["train", "--preset", "smoke", "--resume", str(source), "--total-timesteps", "3072"]
    code = main([*argv, "--run-dir", root, "--run-name", "b", "--final-eval-games", "0"])
    assert code == 0, capsys.readouterr().err
    assert sorted(p.name for p in downloads.iterdir()) == ["model.zip", "theirs.zip"]
    assert (downloads / "model.zip").read_bytes() == b"a different model, not to be overwritten"
    run = tmp_path / "b"
    assert json.loads((run / "config.json").read_text())["resume"] == str(source)
    sessions = [json.loads(line) for line in (run / "sessions.jsonl").read_text().splitlines()]
    assert [(s["started_at_step"], s["ended_at_step"]) for s in sessions] == [(2048, 3072)]
    assert MaskablePPO.load(run / "model.zip", device="cpu").num_timesteps == 3072
    code = main([*argv, "--run-dir", root, "--run-name", "b", "--final-eval-games", "0"])
    assert code == 2 and "run directory" in capsys.readouterr().err  # a new run never lands on an old one
    code = main([*argv, "--backend", "rllib", "--run-dir", root, "--run-name", "c", "--final-eval-games", "0"])
    err = capsys.readouterr().err
    assert code == 2 and f"no RLlib checkpoint in {source}" in err, err
    assert not (tmp_path / "c").exists() and sorted(p.name for p in downloads.iterdir()) == ["model.zip", "theirs.zip"]


def test_python_resume_with_a_different_network_is_refused(tmp_path):
    train(smoke(tmp_path, "p"))
    with pytest.raises(ValueError, match="'net_arch' cannot change when resuming"):
        train(TrainConfig(resume=str(tmp_path / "p")))  # the default 128,128 against the run's 32,32


def test_a_run_in_use_is_refused_and_a_stale_lock_is_taken_over(tmp_path):
    train(smoke(tmp_path, "l"))
    run = RunDir(tmp_path / "l")
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        run.lock_path.write_text(json.dumps({"pid": sleeper.pid, "host": os.uname().nodename, "since": 0}))
        with pytest.raises(RunDirError, match=rf"in use by another trainer \(process {sleeper.pid}") as refused:
            train(resume_config(run.path, {"total_timesteps": 2560}))
        assert f"delete {run.lock_path}" in str(refused.value)  # a process id reused after a restart
    finally:
        sleeper.kill()
        sleeper.wait()
    with pytest.warns(RuntimeWarning, match=f"stale lock left by process {sleeper.pid}"):
        result = train(resume_config(run.path, {"total_timesteps": 2560}))
    assert result.num_timesteps == 2560 and not run.lock_path.exists()


def test_a_file_in_the_way_is_a_clear_error(tmp_path, capsys):
    (tmp_path / "busy").write_text("not a directory")
    code = main(["train", "--preset", "smoke", "--run-dir", str(tmp_path / "busy"), "--final-eval-games", "0"])
    err = capsys.readouterr().err
    assert code == 1 and err.startswith("llama-rl: error: cannot write the run directory") and "Traceback" not in err


def test_a_fresh_run_in_a_folder_that_holds_no_run_is_not_told_to_resume_it(tmp_path):
    """A folder of other files was called "an earlier run's", to continue with --resume,
    which then found no run there."""
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "notes.txt").write_text("hi")
    with pytest.raises(ValueError, match="holds no run") as refused:
        RunDir(tmp_path / "other").create(fresh=True)
    assert "--resume" not in str(refused.value)
    run = RunDir(tmp_path / "run")
    run.create(fresh=False)
    run.checkpoint_path(1024).write_bytes(b"")  # a run that saved something
    with pytest.raises(ValueError, match=r"an earlier run's\): give another --run-name, continue it with --resume"):
        RunDir(tmp_path / "run").create(fresh=True)


def test_an_unwritable_parent_is_a_clear_error(capsys):
    code = main(["train", "--preset", "smoke", "--run-dir", "/proc/llama-rl-runs", "--final-eval-games", "0"])
    err = capsys.readouterr().err
    assert code == 1 and "cannot write the run directory /proc/llama-rl-runs" in err


def test_losing_the_run_directory_mid_run_keeps_what_was_saved(tmp_path, monkeypatch):
    import train.training.sb3.trainer as trainer

    real = trainer.save_model
    calls = {"k": 0}

    def save_model(model, path):
        calls["k"] += 1
        if calls["k"] == 2:  # the second checkpoint: the disk went read-only
            raise PermissionError(13, "Permission denied", str(path))
        real(model, path)

    monkeypatch.setattr(trainer, "save_model", save_model)
    with pytest.raises(RunDirError) as info:
        train(smoke(tmp_path, "ro", total_timesteps=4096))
    msg = str(info.value)
    assert "cannot write to the run directory" in msg and "Permission denied" in msg
    assert "ppo_1024.zip" in msg and "saved to" in msg
    rescue = Path(msg.rsplit("saved to ", 1)[1].split(" instead")[0])
    assert checkpoint_problem(rescue) is None
    rescue.unlink()
    files_are_whole(tmp_path / "ro")
    assert not (tmp_path / "ro" / ".lock").exists()


def test_sigterm_stops_a_run_as_ctrl_c_does_and_it_resumes(tmp_path):
    """``kill``, ``timeout`` and job schedulers stop a process with SIGTERM: the run saves a
    checkpoint as on Ctrl-C instead of dying with everything since the last one."""
    import signal
    import time

    run = tmp_path / "term"
    args = ["train", "--preset", "smoke", "--total-timesteps", "50000000", "--eval-every", "0"]
    args += ["--run-dir", str(tmp_path), "--run-name", "term", "--final-eval-games", "0", "--no-progress-bar"]
    script = "import sys\nfrom train.cli import main\nsys.exit(main(sys.argv[1:]))\n"
    proc = subprocess.Popen(
        [sys.executable, "-c", script, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        deadline = time.monotonic() + 120
        while not list((run / "checkpoints").glob("ppo_*.zip")):  # it is training
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "the run never saved a checkpoint"
            time.sleep(0.05)
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=120)
    finally:
        proc.kill()
    assert proc.returncode == 130, (out, err)
    assert "llama-rl: interrupted (SIGTERM)" in err and f"llama-rl train --resume {run}" in out
    files_are_whole(run)
    summary = json.loads((run / "summary.json").read_text())
    assert summary["interrupted"] and 0 < summary["num_timesteps"] < 50_000_000
    assert (run / f"checkpoints/ppo_{summary['num_timesteps']}.zip").is_file()
    resume = ["train", "--resume", str(run), "--total-timesteps", str(summary["num_timesteps"] + 2048)]
    code = main([*resume, "--final-eval-games", "0"])  # the evaluation at the end is no part of resuming
    assert code == 0 and json.loads((run / "summary.json").read_text())["num_timesteps"] > summary["num_timesteps"]


# --------------------------------------------------------------------------- a bad --resume, races, leftovers


def _fake_run(root: Path, name: str) -> Path:
    """A run directory as a trainer leaves it (its config, a checkpoints folder), without
    training: for the checks that must fail before any training starts."""
    run = root / name
    (run / "checkpoints").mkdir(parents=True)
    (run / "config.json").write_text(json.dumps(smoke(root, name).to_dict()))
    return run


BAD_FILES = {
    "empty": b"",
    "garbage": b"\x00\xffnot a zip at all" * 100,
    "half a zip": b"PK\x03\x04 half a zip",
}


@pytest.mark.parametrize("case", list(BAD_FILES))
def test_resuming_a_corrupt_file_is_one_line_and_leaves_nothing_behind(tmp_path, capsys, case):
    """A bad --resume FILE once died in SB3's loader with a traceback, after it had made
    the new run's directory and written its config.json there: the next try then found
    "run directory ... already exists"."""
    downloads = tmp_path / "downloads"
    downloads.mkdir()
    bad = downloads / "model.zip"
    bad.write_bytes(BAD_FILES[case])
    argv = ["train", "--preset", "smoke", "--resume", str(bad), "--run-dir", str(tmp_path / "runs")]
    code = main([*argv, "--run-name", "n", "--final-eval-games", "0"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "Traceback" not in err, err
    assert err.startswith(f"llama-rl: error: config key 'resume': {bad} is not a usable checkpoint")
    assert not (tmp_path / "runs").exists() and sorted(p.name for p in downloads.iterdir()) == ["model.zip"]
    # the same inside a run: nothing added to the run, no lock left
    run = _fake_run(tmp_path, "r")
    checkpoint = run / "checkpoints" / "ppo_1024.zip"
    checkpoint.write_bytes(BAD_FILES[case])
    code = main(["train", "--resume", str(checkpoint), "--final-eval-games", "0"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and f"{checkpoint} is not a usable checkpoint" in err, err
    assert sorted(p.name for p in run.rglob("*")) == ["checkpoints", "config.json", "ppo_1024.zip"]


def test_a_model_that_sb3_cannot_load_is_one_line_and_leaves_no_run(tmp_path, capsys):
    """A zip whole enough for the checks (data with a step count, policy.pth) that SB3
    still cannot load: a ValueError naming the file, and the new run's folder removed."""
    import zipfile

    fake = tmp_path / "fake.zip"
    with zipfile.ZipFile(fake, "w") as zf:
        zf.writestr("data", json.dumps({"num_timesteps": 1024}))
        zf.writestr("policy.pth", b"not torch")
    argv = ["train", "--preset", "smoke", "--resume", str(fake), "--run-dir", str(tmp_path / "runs")]
    code = main([*argv, "--run-name", "n", "--final-eval-games", "0"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and f"config key 'resume': cannot load {fake}" in err, err
    assert not (tmp_path / "runs" / "n").exists()


@pytest.mark.parametrize("steps", [True, 1024.0, "1024", None])
def test_a_checkpoint_whose_step_count_is_no_integer_is_not_whole(tmp_path, steps):
    """``"num_timesteps": true`` passed as a step count (a bool is an int in Python)."""
    import zipfile

    path = tmp_path / "ppo_1024.zip"
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("data", json.dumps({"num_timesteps": steps}))
        zf.writestr("policy.pth", b"weights")
    assert checkpoint_problem(path) == "its data has no step count"


def test_resuming_the_checkpoints_folder_resumes_its_run_and_makes_no_stray_folder(tmp_path, capsys):
    """``--resume <run>/checkpoints`` once made ``<run>/checkpoints/checkpoints`` and then
    found no checkpoint in it."""
    run = _fake_run(tmp_path, "r")
    code = main(["train", "--resume", str(run / "checkpoints"), "--final-eval-games", "0"])
    err = capsys.readouterr().err
    assert code == 2 and f"config key 'resume': {run} is a run stopped before its first save" in err, err
    assert sorted(p.name for p in run.rglob("*")) == ["checkpoints", "config.json"]
    train(smoke(tmp_path, "whole"))
    whole = tmp_path / "whole"
    code = main(
        ["train", "--resume", str(whole / "checkpoints"), "--total-timesteps", "2560", "--final-eval-games", "0"]
    )
    assert code == 0, capsys.readouterr().err
    assert json.loads((whole / "summary.json").read_text())["num_timesteps"] == 2560
    assert (whole / "config.resume_1.json").is_file() and not (whole / "checkpoints" / "checkpoints").exists()


def test_temporary_files_of_a_killed_write_are_removed_at_the_next_start(tmp_path):
    """A trainer killed (SIGKILL, power loss) while writing leaves ``.<name>.<random>.tmp``
    beside the file; the next trainer to take the lock removes them, and only them."""
    run = RunDir(tmp_path / "k")
    run.create(fresh=True)
    left = [
        run.checkpoints_dir / ".ppo_4096.zip.3f9a1c.tmp",
        run.path / ".model.zip.77aa01.tmp",
        run.path / ".summary.json.0b1c2d.tmp",
    ]
    for p in left:
        p.write_bytes(b"PK\x03\x04 half")
    (run.checkpoints_dir / ".rllib_4096.tmp").mkdir()  # the RLlib backend's checkpoint folder
    (run.checkpoints_dir / ".rllib_4096.tmp" / "state.pkl").write_bytes(b"half")
    kept = [run.path / "notes.tmp", run.path / ".hidden", run.checkpoints_dir / "ppo_1024.zip"]
    for p in kept:
        p.write_bytes(b"mine")
    with run.lock():
        assert not any(p.exists() for p in left) and not (run.checkpoints_dir / ".rllib_4096.tmp").exists()
    assert all(p.read_bytes() == b"mine" for p in kept)


@pytest.mark.parametrize("umask", [0o022, 0o027, 0o002], ids=oct)
def test_run_files_follow_the_umask(tmp_path, umask):
    """Files were written through ``mkstemp`` and kept its 0600: a run could not be read
    by the group or by a web server that shows it."""
    from train.training.run_dir import write_json_atomic

    old = os.umask(umask)
    try:
        run = RunDir(tmp_path / "u")
        run.create(fresh=True)
        write_json_atomic(run.summary_path, {"a": 1})
        with run.lock():
            lock_mode = run.lock_path.stat().st_mode & 0o777
        run.append_jsonl(run.sessions_path, {"b": 2})
    finally:
        os.umask(old)
    expected = 0o666 & ~umask
    assert (run.summary_path.stat().st_mode & 0o777) == expected
    assert (run.sessions_path.stat().st_mode & 0o777) == expected
    assert lock_mode == expected


def _race_for_the_lock(path: str, barrier, results) -> None:
    run = RunDir(path)
    barrier.wait()
    try:
        run.create(fresh=False)
        with run.lock():
            fd = os.open(os.path.join(path, "holder"), os.O_CREAT | os.O_EXCL | os.O_WRONLY)  # two holders: fails
            time.sleep(0.1)
            os.close(fd)
            os.unlink(os.path.join(path, "holder"))
            results.put("held")
    except RunDirError as exc:
        results.put(str(exc))
    except Exception as exc:  # noqa: BLE001 - reported to the test
        results.put(f"{type(exc).__name__}: {exc}")


def test_trainers_racing_for_one_run_get_the_lock_message(tmp_path):
    """Two trainers started at once on one run: the second once got "cannot write the
    run directory" (both wrote and removed one probe file) or, reading the first's lock
    before it was written, took it over as stale; now one holds it and the others are
    told the run is in use."""
    import multiprocessing

    ctx = multiprocessing.get_context("fork")
    path = str(tmp_path / "race")
    messages: list[str] = []
    for _ in range(8):
        barrier, results = ctx.Barrier(4), ctx.Queue()
        procs = [ctx.Process(target=_race_for_the_lock, args=(path, barrier, results)) for _ in range(4)]
        for p in procs:
            p.start()
        got = [results.get(timeout=30) for _ in procs]
        for p in procs:
            p.join()
        assert got.count("held") >= 1, got
        messages += [m for m in got if m != "held"]
    assert all("is in use by another trainer" in m for m in messages), messages
    assert not RunDir(path).lock_path.exists()


def test_a_lock_being_written_is_not_taken_over(tmp_path):
    """A lock file that is there but not yet readable and only just made belongs to a
    trainer that is starting: the run is in use. An old unreadable one is stale."""
    run = RunDir(tmp_path / "w")
    run.create(fresh=True)
    run.lock_path.write_text("")
    with pytest.raises(RunDirError, match="is in use by another trainer"), run.lock():
        pass
    os.utime(run.lock_path, (time.time() - 60, time.time() - 60))
    with pytest.warns(RuntimeWarning, match="taking over a stale lock"), run.lock():
        pass
    assert not run.lock_path.exists()


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_one_more_ctrl_c_or_sigterm_is_held_back_while_the_last_files_are_written(signum, capsys):
    """SIGTERM stops a run as Ctrl-C does, but a second one during the final save was not
    held back as a second Ctrl-C is."""
    from train.training.run_dir import saving_despite_ctrl_c, signal_handler

    def stop_now(signum: int, frame: object) -> None:  # as llama-rl train's own handlers stop a run
        raise RuntimeError("stopped at the first signal")

    with signal_handler(signum, stop_now):
        with pytest.raises(KeyboardInterrupt), saving_despite_ctrl_c():
            os.kill(os.getpid(), signum)  # held back, with a word
            assert "still saving the checkpoint" in capsys.readouterr().err
            os.kill(os.getpid(), signum)  # the next one stops at once
            time.sleep(1)  # the handler runs between bytecodes; it has stopped the block by now
            pytest.fail("the second signal did not stop the block")
        assert signal.getsignal(signum) is stop_now  # the caller's handler is back


def test_on_windows_the_run_lock_asks_the_kernel_instead_of_sending_a_ctrl_c(monkeypatch):
    """os.kill(pid, 0) is how POSIX asks whether a process lives; on Windows signal 0 is
    CTRL_C_EVENT, so checking another trainer's lock would have interrupted it."""
    from train.training import run_dir

    def no_kill(pid: int, sig: int) -> None:
        raise AssertionError("os.kill called on Windows")

    monkeypatch.setattr(run_dir.sys, "platform", "win32")
    monkeypatch.setattr(run_dir.os, "kill", no_kill)
    monkeypatch.setattr(run_dir, "_windows_pid_alive", lambda pid: pid == 1234)
    assert run_dir._pid_alive(1234) and not run_dir._pid_alive(4321)


def test_json_nested_too_deep_in_a_run_is_named_not_a_recursion_error(tmp_path):
    """A config.json or a checkpoint's data nested 100,000 deep ended train --resume in a
    RecursionError traceback."""
    import zipfile

    from train.training.run_dir import checkpoint_problem

    deep = "[" * 100_000 + "]" * 100_000
    run = RunDir(tmp_path / "deep")
    run.path.mkdir()
    (run.path / "config.json").write_text(deep)
    with pytest.raises(RunDirError, match=r"cannot read the run's config .*config.json: .*recursion"):
        run.recorded_config()
    save = tmp_path / "ppo_1024.zip"
    with zipfile.ZipFile(save, "w") as zf:
        zf.writestr("data", deep)
        zf.writestr("policy.pth", b"")
    assert (checkpoint_problem(save) or "").startswith("RecursionError:")
    with zipfile.ZipFile(save, "w") as zf:  # resumed to "error: expected non-negative integer", no file named
        zf.writestr("data", '{"num_timesteps": -5}')
        zf.writestr("policy.pth", b"")
    assert checkpoint_problem(save) == "its step count is negative (-5)"


def test_a_folder_where_the_lock_goes_is_named(tmp_path):
    """It was an IsADirectoryError traceback, with a .lock.stale.* folder left behind."""
    run = RunDir(tmp_path / "r")
    run.path.mkdir()
    run.lock_path.mkdir()
    with pytest.raises(RunDirError, match=r"\.lock is a folder; remove it"), run.lock():
        pass
    assert sorted(p.name for p in run.path.iterdir()) == [".lock"]
