"""What the ninth stop's audit of training found in how a run stops: Ctrl-C or SIGTERM in
the evaluation at the end of the budget lost the run, a session killed outright left
``summary.json`` saying the run had ended cleanly, a new run killed before its first save
was refused by ``--resume`` and by its ``--run-name`` each pointing at the other, and a new
run interrupted before it learned a step kept an untrained model."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import needs_rllib

from agents.ppo import overtaken_model
from train.cli import main
from train.training import TrainConfig, train
from train.training.presets import PRESETS
from train.training.run_dir import RunDir
from train.training.sb3.vec_env import VEC_ENVS

posix = pytest.mark.skipif(os.name == "nt", reason="kills a trainer with SIGKILL, which Windows does not have")


def smoke_args(tmp_path: Path, name: str, *extra: str) -> list[str]:
    """``llama-rl train`` arguments of a smoke run ``name`` in ``tmp_path``."""
    where = ["--run-dir", str(tmp_path), "--run-name", name, "--final-eval-games", "0"]
    return ["train", "--preset", "smoke", *where, *extra]


# --------------------------------------------------------------------------- 1. Ctrl-C in the evaluation at the end


def test_ctrl_c_in_the_evaluation_at_the_end_of_the_budget_saves_the_run(tmp_path, monkeypatch, capsys):
    """The evaluation due with the budget's last update runs after ``learn`` returned, where
    no handler caught Ctrl-C: a run without a checkpoint yet (``--checkpoint-every 0``, as
    beat-heuristic runs) was deleted whole as a new run that saved nothing, one with
    checkpoints lost its model, summary and session line, and nothing said so."""
    import train.training.evaluation as evaluation

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt  # as SIGTERM or Ctrl-C does while the games are played

    monkeypatch.setattr(evaluation, "evaluate_vs", interrupted)
    run = tmp_path / "end"
    code = main(smoke_args(tmp_path, "end", "--checkpoint-every", "0", "--eval-every", "2048", "--no-tensorboard"))
    out = capsys.readouterr().out
    assert code == 130, out
    assert "interrupted at 2048 steps: saving a checkpoint" in out
    # the budget is learned and saved: nothing to continue (it said to resume it with twice the budget)
    assert "its budget of 2048 steps is learned and the model saved\n\nnext:\n  llama-rl eval --agents" in out
    assert "continue it with" not in out and "--total-timesteps 4096   # train it further" in out
    assert (run / "checkpoints" / "ppo_2048.zip").is_file() and (run / "model.zip").is_file()
    summary = json.loads((run / "summary.json").read_text())
    assert summary["num_timesteps"] == 2048 and summary["interrupted"] is True
    (session,) = [json.loads(line) for line in (run / "sessions.jsonl").read_text().splitlines()]
    assert (session["ended_at_step"], session["interrupted"]) == (2048, True)
    assert not (run / ".lock").exists()


# --------------------------------------------------------------------------- 4. summary.json of a killed session


def test_a_summary_is_marked_out_of_date_while_a_session_holds_the_run(tmp_path):
    """The figures stay the last finished session's; the mark keeps the model's step
    count (agents.ppo reads it), and a session that ends without writing its own summary
    (a failure it reports) puts the old one back."""
    run = RunDir(tmp_path / "r")
    run.create(fresh=False)
    old = {"num_timesteps": 2048, "steps_this_session": 2048, "interrupted": False, "stopped_early": False}
    run.summary_path.write_text(json.dumps(old))
    before = run.summary_path.read_bytes()
    with pytest.raises(RuntimeError), run.lock():
        marked = json.loads(run.summary_path.read_text())
        raise RuntimeError("the session fails")
    assert marked["running"] is True and marked["num_timesteps"] == 2048 and "interrupted" not in marked
    assert "the run's model (model.zip; model.npz on rllib)" in marked["note"]  # rllib writes no model.zip
    assert run.summary_path.read_bytes() == before
    with run.lock():  # a session that writes its own summary keeps it
        run.summary_path.write_text(json.dumps({**old, "num_timesteps": 4096}))
    assert json.loads(run.summary_path.read_text())["num_timesteps"] == 4096
    with run.lock():
        pass
    assert not (tmp_path / "r" / "summary.json.tmp").exists() and not list((tmp_path / "r").glob(".*.tmp"))


def test_a_failed_session_that_saved_a_checkpoint_keeps_the_mark(tmp_path):
    """A session that failed after it saved checkpoints put the old summary back: 2048
    steps, not interrupted, no mark, while ``checkpoints/`` went on to ppo_4096."""
    run = RunDir(tmp_path / "r")
    run.create(fresh=False)
    run.summary_path.write_text(json.dumps({"num_timesteps": 2048, "interrupted": False}))
    with pytest.raises(RuntimeError), run.lock():
        run.checkpoint_path(4096).write_bytes(b"a checkpoint")
        raise RuntimeError("the evaluation at 4096 steps fails")
    summary = json.loads(run.summary_path.read_text())
    assert summary["running"] is True and summary["num_timesteps"] == 2048 and "interrupted" not in summary


@posix
def test_a_resumed_session_killed_outright_leaves_no_summary_of_a_clean_end(tmp_path):
    """``kill -9`` of a resumed session left the previous session's summary, 2048 steps and
    not interrupted, while its checkpoints went on to 6144 and more."""
    run = tmp_path / "k1"
    assert main(smoke_args(tmp_path, "k1", "--no-tensorboard", "--eval-every", "0")) == 0
    args = ["train", "--resume", str(run), "--total-timesteps", "50000000", "--checkpoint-every", "1024"]
    args += ["--eval-every", "0", "--final-eval-games", "0", "--no-progress-bar"]
    script = "import sys\nfrom train.cli import main\nsys.exit(main(sys.argv[1:]))\n"
    proc = subprocess.Popen([sys.executable, "-c", script, *args], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 120
        while not (run / "checkpoints" / "ppo_3072.zip").exists():  # the session trains beyond the model
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "the resumed session never saved a checkpoint"
            time.sleep(0.05)
    finally:
        proc.kill()  # SIGKILL: no handler runs
        proc.communicate()
    summary = json.loads((run / "summary.json").read_text())
    assert summary["running"] is True and "interrupted" not in summary, summary
    assert summary["num_timesteps"] == 2048  # the model's, which ppo:path= and eval read
    warned = overtaken_model(run, lambda p: f"ppo:path={p}")
    assert warned is not None and "its model (2048 steps) is older than its checkpoint" in warned
    # the next session takes over the lock and writes a summary of its own at its end: two rollouts past the
    # newest checkpoint the killed session saved
    end = max(int(p.stem.split("_")[1]) for p in (run / "checkpoints").glob("ppo_*.zip")) + 1024
    with pytest.warns(RuntimeWarning, match="taking over a stale lock"):
        assert main(["train", "--resume", str(run), "--total-timesteps", str(end), "--final-eval-games", "0"]) == 0
    summary = json.loads((run / "summary.json").read_text())
    assert "running" not in summary and summary["num_timesteps"] == end and summary["interrupted"] is False


# --------------------------------------------------------------------------- 5. a run killed before its first save


def dead_pid() -> int:
    """The id of a process that has ended (a trainer killed outright)."""
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    return gone.pid


def killed_before_its_first_save(root: Path, name: str, backend: str = "sb3") -> Path:
    """What ``kill -9`` of a new run before its first checkpoint leaves: its config,
    ``tb/``, the lock of a process gone, an empty ``checkpoints/``."""
    run = root / name
    (run / "checkpoints").mkdir(parents=True)
    (run / "tb" / "ppo_1").mkdir(parents=True)
    config = TrainConfig(**{**PRESETS["smoke"], "run_dir": str(root), "run_name": name, "backend": backend})
    (run / "config.json").write_text(json.dumps(config.to_dict()))
    (run / ".lock").write_text(json.dumps({"pid": dead_pid(), "host": os.uname().nodename, "since": time.time()}))
    return run


@posix
def test_a_run_killed_before_its_first_save_is_named_so_by_resume_and_by_its_run_name(tmp_path, capsys):
    """``--resume`` said "no usable checkpoint", and the same --run-name "continue it with
    --resume": each sent the user to the other."""
    run = killed_before_its_first_save(tmp_path, "kk")
    said = "is a run stopped before its first save (it holds no checkpoint or model to go on from): delete it"
    assert main(["train", "--resume", str(run), "--final-eval-games", "0"]) == 2
    err = capsys.readouterr().err
    assert f"config key 'resume': {run} {said}" in err and "--resume" not in err.split(said)[1], err
    assert main(smoke_args(tmp_path, "kk")) == 2
    err = capsys.readouterr().err
    assert f"run directory {run} {said}, or give another --run-name" in err and "continue it" not in err, err
    assert sorted(p.name for p in run.iterdir()) == [".lock", "checkpoints", "config.json", "tb"]


@posix
def test_a_run_still_before_its_first_save_is_not_to_be_deleted(tmp_path):
    """A trainer that runs and has saved nothing yet leaves the same files: the refusal
    says it trains, not that it stopped."""
    run = killed_before_its_first_save(tmp_path, "live")
    alive = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        (run / ".lock").write_text(json.dumps({"pid": alive.pid, "host": os.uname().nodename, "since": time.time()}))
        unsaved = RunDir(run).nothing_saved()
    finally:
        alive.kill()
        alive.wait()
    here = os.uname().nodename
    assert unsaved is not None and f"in use by process {alive.pid} on {here}: wait for it to end" in unsaved
    assert "delete" not in unsaved


@posix
def test_a_run_trained_from_another_machine_is_not_called_stopped(tmp_path, capsys):
    """Its lock is another machine's, whose processes cannot be checked, and a new trainer
    would not take it over; yet --resume and --run-name both called the run stopped and
    said to delete it."""
    run = killed_before_its_first_save(tmp_path, "kk")
    (run / ".lock").write_text(json.dumps({"pid": 12345, "host": "gpu-node-7"}))
    said = "a run before its first save, in use by process 12345 on gpu-node-7: wait for it to end"
    assert main(["train", "--resume", str(run), "--final-eval-games", "0"]) == 2
    err = capsys.readouterr().err
    assert said in err and "delete" not in err, err
    assert main(smoke_args(tmp_path, "kk")) == 2
    err = capsys.readouterr().err
    assert said in err and "delete" not in err, err
    (run / ".lock").write_text("{")  # still being written
    assert "in use by another trainer (its lock is being written): wait" in str(RunDir(run).nothing_saved())


def test_a_run_whose_saves_are_all_broken_is_no_run_that_saved_nothing(tmp_path):
    """Its saves are named and skipped with a warning; it saved something."""
    run = RunDir(tmp_path / "b")
    run.create(fresh=False)
    run.checkpoint_path(1024).write_bytes(b"")
    assert run.saved_anything() and run.nothing_saved() is None
    assert RunDir(tmp_path / "no run").nothing_saved() is None


@posix
@needs_rllib
def test_an_rllib_run_killed_before_its_first_save_is_named_so_by_resume(tmp_path, capsys):
    run = killed_before_its_first_save(tmp_path, "kr", backend="rllib")
    assert main(["train", "--resume", str(run), "--final-eval-games", "0"]) == 2
    err = capsys.readouterr().err
    assert f"config key 'resume': {run} is a run stopped before its first save" in err, err


# --------------------------------------------------------------------------- 6. interrupted before a step is learned


def interrupt_first_step(monkeypatch: pytest.MonkeyPatch) -> None:
    """Ctrl-C at a run's first VecEnv step, before its first rollout is learned."""
    for cls in VEC_ENVS.values():  # whichever the run's engine picks

        def step_wait(self):
            raise KeyboardInterrupt

        monkeypatch.setattr(cls, "step_wait", step_wait)


@pytest.fixture
def interrupt_at_first_step(monkeypatch):
    interrupt_first_step(monkeypatch)


def test_a_new_run_interrupted_before_it_learned_a_step_is_removed(tmp_path, interrupt_at_first_step, capsys):
    """It kept ``checkpoints/ppo_0.zip`` and a ``model.zip`` of 0 steps, which
    ``ppo:path=`` then played as the run's policy: an untrained one."""
    run = tmp_path / "f3"
    assert main(smoke_args(tmp_path, "f3")) == 130
    out = capsys.readouterr().out
    assert f"interrupted at 0 steps: nothing learned yet, so nothing is saved; removing {run}" in out, out
    assert "continue it with" not in out
    assert not run.exists()


def test_a_new_run_whose_env_worker_stops_before_it_learned_a_step_is_removed(tmp_path, monkeypatch, capsys):
    """It kept ``checkpoints/ppo_0.zip`` and a ``model.zip`` of 0 steps, where the rllib
    backend says "before training began" and removes the run."""
    from train.training.sb3.workers import EnvWorkerStopped

    def step_wait(self):
        raise EnvWorkerStopped("env worker 1 stopped (killed by SIGKILL, most often the system out of memory)")

    for cls in VEC_ENVS.values():
        monkeypatch.setattr(cls, "step_wait", step_wait)
    run = tmp_path / "w0"
    assert main(smoke_args(tmp_path, "w0")) == 1
    err = capsys.readouterr().err
    assert "training stopped: env worker 1 stopped (killed by SIGKILL, most often the system out of memory) " in err
    assert "before training began" in err and "continue it" not in err, err
    assert not run.exists()


def test_a_resumed_run_interrupted_before_it_learned_a_step_is_saved_as_before(tmp_path, monkeypatch, capsys):
    """A resumed run's steps are its earlier sessions': it is kept, and the session recorded."""
    config = TrainConfig(
        **{**PRESETS["smoke"], "run_dir": str(tmp_path), "run_name": "r", "options": {"tensorboard": False}}
    )
    train(config)
    interrupt_first_step(monkeypatch)
    run = tmp_path / "r"
    assert main(["train", "--resume", str(run), "--total-timesteps", "4096", "--final-eval-games", "0"]) == 130
    assert "interrupted at 2048 steps: saving a checkpoint" in capsys.readouterr().out
    sessions = [json.loads(line) for line in (run / "sessions.jsonl").read_text().splitlines()]
    assert [(s["ended_at_step"], s["interrupted"]) for s in sessions] == [(2048, False), (2048, True)]
    assert (run / "model.zip").is_file()


@needs_rllib
def test_a_new_rllib_run_interrupted_before_it_learned_a_step_is_removed(tmp_path, monkeypatch, capsys):
    from ray.rllib.algorithms.algorithm import Algorithm

    def interrupted(self):
        raise KeyboardInterrupt

    monkeypatch.setattr(Algorithm, "train", interrupted)
    argv = ["train", "--backend", "rllib", "--players", "2", "--opponents", "random", "--total-timesteps", "100000"]
    argv += ["--n-envs", "8", "--n-steps", "32", "--batch-size", "128", "--n-epochs", "1", "--net-arch", "8"]
    argv += ["--eval-every", "0", "--run-dir", str(tmp_path), "--run-name", "r0", "--final-eval-games", "0"]
    assert main([*argv, "--no-progress-bar"]) == 130
    out = capsys.readouterr().out
    said = f"interrupted at 0 steps: nothing learned yet, so nothing is saved; removing {tmp_path / 'r0'}"
    assert out.count(said) == 1, out  # once: the trainer's removal of a new run stopped early says it too
    assert not (tmp_path / "r0").exists()
