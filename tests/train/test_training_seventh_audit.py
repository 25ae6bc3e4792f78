"""What the seventh stop's audit of training found: env workers that hung the trainer's
Ctrl-C and outlived a killed trainer, a killed worker that lost the steps since the last
checkpoint, periodic evaluations at sizes the run never trained at, the evaluation at the
end never shown, the progress bar's last line, late and misnamed errors of env_workers."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from test_backends import toy  # noqa: F401 - a fixture

from train.cli import main
from train.training import TrainConfig, TrainingStopped, train
from train.training.presets import PRESETS
from train.training.sb3.vec_env import ScalarLlamaVecEnv
from train.training.sb3.workers import CLOSE_WAIT, TRAINER_CHECK, SplitVecEnv

posix = pytest.mark.skipif(
    os.name == "nt", reason="checks processes with os.kill(pid, 0) and SIGKILL, which Windows does not have"
)


def running(pid: int) -> bool:
    """Whether process ``pid`` runs: it exists, and (where /proc says) is no zombie that
    nobody reaped."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process: it exists
        return True
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:  # no /proc (macOS): it exists
        return True
    return "\nState:\tZ" not in status


# --------------------------------------------------------------------------- 1. close() after a step cut short


def test_close_stops_a_worker_writing_an_answer_nobody_reads():
    """Ctrl-C while the trainer waited for a step left the worker writing an answer too big
    for the pipe; close() sent SIGTERM, which the worker ignores, then waited for it for ever."""
    env = SplitVecEnv(ScalarLlamaVecEnv, 4096, 2, players=2, opponents="random", seed=0)
    procs = list(env._procs)
    try:
        env.reset()
        env._conns[0].send(("get", "games"))  # about 1 MB of answer, never read
        time.sleep(0.3)
        closing = threading.Thread(target=env.close, daemon=True)
        started = time.perf_counter()
        closing.start()
        closing.join(CLOSE_WAIT + 10)
        assert not closing.is_alive(), "close() hung"
        assert time.perf_counter() - started < CLOSE_WAIT  # stopped by the closed pipe, not killed after the wait
        assert not any(p.is_alive() for p in procs)
    finally:
        for p in procs:
            if p.is_alive():
                p.kill()
                p.join()


@pytest.mark.parametrize("built", [True, False], ids=["its-games-built", "its-games-refused"])
def test_a_worker_told_to_stop_while_it_starts_ends_without_a_traceback(built, capfd):
    """Ctrl-C while the env workers started: close() closes the pipes before it waits, and
    a worker still building its games hit BrokenPipeError sending its startup answer
    ("ok", or the error that refused its games) and printed a 15-line traceback."""
    import multiprocessing as mp

    import cloudpickle

    from llama_env.agent import registrations
    from train.training.sb3.workers import _serve

    ctx = mp.get_context("fork" if sys.platform.startswith("linux") else "spawn")
    mine, theirs = ctx.Pipe()
    mine.close()  # the trainer closed its end before the worker answered
    kwargs = {"players": 2 if built else 9, "opponents": "random"}
    share = (ScalarLlamaVecEnv, 2, 0, kwargs, cloudpickle.dumps(registrations("random")))
    worker = ctx.Process(target=_serve, args=(theirs, [], os.getpid(), *share))
    worker.start()
    theirs.close()
    worker.join(60)
    assert worker.exitcode == 0
    assert "Traceback" not in capfd.readouterr().err


# --------------------------------------------------------------------------- 2. workers outliving the trainer

TRAINER = """
import sys, time
from train.cli import main
from train.training import TrainConfig, TrainingStopped, train
from train.training.presets import PRESETS
from train.training.sb3.vec_env import ScalarLlamaVecEnv
from train.training.sb3.workers import SplitVecEnv
env = SplitVecEnv(ScalarLlamaVecEnv, 6, 3, players=2, opponents="random", seed=0)
env.reset()
print(*[p.pid for p in env._procs], flush=True)
time.sleep(120)
"""


@posix
def test_env_workers_stop_when_the_trainer_is_killed():
    """Each forked worker held the trainer's end of its own pipe (and of the pipes made
    before it), so the pipe never read as closed: after a kill -9 of the trainer the
    workers waited for requests for ever, and ignore SIGTERM."""
    trainer = subprocess.Popen([sys.executable, "-c", TRAINER], stdout=subprocess.PIPE, text=True, cwd=os.getcwd())
    workers: list[int] = []
    try:
        assert trainer.stdout is not None
        workers = [int(pid) for pid in trainer.stdout.readline().split()]
        assert len(workers) == 2 and all(running(pid) for pid in workers)
        trainer.kill()
        trainer.wait()
        deadline = time.monotonic() + 10
        while any(running(pid) for pid in workers) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not any(running(pid) for pid in workers), "env workers outlived the trainer"
    finally:
        trainer.kill()
        trainer.wait()
        for pid in workers:
            if running(pid):
                os.kill(pid, signal.SIGKILL)


HELD = """
import os, time
from train.training.sb3.vec_env import ScalarLlamaVecEnv
from train.training.sb3.workers import SplitVecEnv
env = SplitVecEnv(ScalarLlamaVecEnv, 4, 2, players=2, opponents="random", seed=0)
env.reset()
holder = os.fork()
if holder == 0:  # holds a copy of the trainer's end of the worker's pipe, as any process it forks does
    time.sleep(120)
    os._exit(0)
print(env._procs[0].pid, holder, flush=True)
time.sleep(120)
"""


@posix
def test_an_env_worker_stops_when_the_trainer_is_killed_though_another_process_holds_its_pipe():
    """Another process the trainer forked (a subprocess that outlives it, say) holds a
    copy of the trainer's end of the worker's pipe, which then never reads as closed: only
    the worker's check of its parent stops it."""
    trainer = subprocess.Popen([sys.executable, "-c", HELD], stdout=subprocess.PIPE, text=True, cwd=os.getcwd())
    worker = holder = 0
    try:
        assert trainer.stdout is not None
        worker, holder = map(int, trainer.stdout.readline().split())
        assert running(worker) and running(holder)
        trainer.kill()
        trainer.wait()
        deadline = time.monotonic() + TRAINER_CHECK + 10
        while running(worker) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not running(worker), "the env worker outlived the trainer"
        assert running(holder)  # the pipe stayed open all along
    finally:
        trainer.kill()
        trainer.wait()
        for pid in (worker, holder):
            if pid and running(pid):
                os.kill(pid, signal.SIGKILL)


LEFT_OPEN = """
from train.cli import main
from train.training import TrainConfig, TrainingStopped, train
from train.training.presets import PRESETS
from train.training.sb3.vec_env import ScalarLlamaVecEnv
from train.training.sb3.workers import SplitVecEnv
env = SplitVecEnv(ScalarLlamaVecEnv, 4, 2, players=2, opponents="random", seed=0)
env.reset()
print(env._procs[0].pid, flush=True)
"""


@posix
def test_a_script_that_never_closes_its_split_env_exits():
    """multiprocessing's exit function sent the workers SIGTERM, which they ignore, then
    waited for them: the script hung at its end."""
    script = subprocess.Popen([sys.executable, "-c", LEFT_OPEN], stdout=subprocess.PIPE, text=True, cwd=os.getcwd())
    worker = 0
    try:
        assert script.stdout is not None
        worker = int(script.stdout.readline())
        assert script.wait(timeout=20) == 0
        assert not running(worker)
    finally:
        script.kill()
        script.wait()
        if worker and running(worker):
            os.kill(worker, signal.SIGKILL)


# --------------------------------------------------------------------------- 3. a worker killed


@posix
def test_a_killed_env_worker_saves_the_steps_learned_and_says_so_in_one_line(tmp_path, monkeypatch, capsys):
    """A worker killed (the system out of memory) raised a 30-line traceback, and the steps
    since the last checkpoint were lost: a new run was deleted outright."""
    real = SplitVecEnv.step_wait
    calls = {"k": 0}

    def step_wait(self):
        calls["k"] += 1
        if calls["k"] == 40:  # 640 steps: in the second rollout of 512, the first learned from
            os.kill(self._procs[0].pid, signal.SIGKILL)
        return real(self)

    monkeypatch.setattr(SplitVecEnv, "step_wait", step_wait)
    args = ["train", "--preset", "smoke", "--env-workers", "2", "--eval-every", "0", "--no-tensorboard"]
    code = main([*args, "--run-dir", str(tmp_path), "--run-name", "oom", "--final-eval-games", "0"])
    err = capsys.readouterr().err
    assert code == 1
    assert err.count("\n") == 1, err
    assert "training stopped: env worker 1 stopped (killed by SIGKILL, most often the system out of memory)" in err
    assert f"at 512 steps; the steps learned are saved in {tmp_path / 'oom'}" in err
    assert f"llama-rl train --resume {tmp_path / 'oom'}" in err
    run = tmp_path / "oom"
    assert (run / "checkpoints" / "ppo_512.zip").is_file() and (run / "model.zip").is_file()
    summary = json.loads((run / "summary.json").read_text())
    assert summary["num_timesteps"] == 512 and summary["interrupted"]


@posix
def test_a_worker_that_dies_once_the_budget_is_trained_leaves_a_finished_run(tmp_path, monkeypatch, capsys):
    """The past league was sent to the workers after the last update, though no rollout
    followed: a worker that died during that update (out of memory) turned a run that had
    trained its whole budget into a stopped one: exit 1, summary.json "interrupted", no
    evaluation at the end, and a printed --resume that was refused (nothing left to train)."""
    from train.training.sb3.callbacks import TrainingHooks

    sent: list[int] = []
    real_past, real_end = SplitVecEnv.set_past_policies, TrainingHooks._on_training_end

    def set_past_policies(self, fns):
        sent.append(self.num_envs)
        return real_past(self, fns)

    def on_training_end(self):  # the last update done: the worker dies before anything else asks it
        worker = self.env._procs[0]
        os.kill(worker.pid, signal.SIGKILL)
        worker.join(10)
        real_end(self)

    monkeypatch.setattr(SplitVecEnv, "set_past_policies", set_past_policies)
    monkeypatch.setattr(TrainingHooks, "_on_training_end", on_training_end)
    args = ["train", "--preset", "smoke", "--env-workers", "2", "--no-tensorboard", "--progress-bar"]
    assert main([*args, "--run-dir", str(tmp_path), "--run-name", "done", "--final-eval-games", "0"]) == 0
    out, err = capsys.readouterr()
    assert "training stopped" not in err and "interrupted" not in out
    assert "[eval @ 2,048] win share vs heuristic" in out
    assert sent == [16]  # at 1,024 steps, before the second half's rollouts: none after the last update
    run = tmp_path / "done"
    assert (run / "checkpoints" / "ppo_2048.zip").is_file() and (run / "model.zip").is_file()
    summary = json.loads((run / "summary.json").read_text())
    assert summary["num_timesteps"] == 2048 and not summary["interrupted"]
    assert [json.loads(line)["timesteps"] for line in (run / "eval.jsonl").read_text().splitlines()] == [1024, 2048]
    assert json.loads((run / "sessions.jsonl").read_text().splitlines()[-1])["interrupted"] is False


@posix
def test_a_worker_killed_before_training_began_is_named_and_the_new_run_left_out(tmp_path, monkeypatch):
    real = SplitVecEnv.set_policy

    def set_policy(self, name, fn):
        os.kill(self._procs[0].pid, signal.SIGKILL)
        return real(self, name, fn)

    monkeypatch.setattr(SplitVecEnv, "set_policy", set_policy)
    config = TrainConfig(**{**PRESETS["smoke"], "run_dir": str(tmp_path), "run_name": "early"})
    config.options = {"env_workers": 2, "tensorboard": False}
    with pytest.raises(TrainingStopped, match=r"^env worker 1 stopped \(killed by SIGKILL.*\) before training began$"):
        train(config)
    assert not (tmp_path / "early").exists()


class FailsOnCue:
    """An opponent whose ``act`` raises once the file named by ``$TF_FAILS_ON_CUE`` exists
    (read in every process: env workers forked or spawned see the same file)."""

    def act(self, observation, action_mask):
        if os.path.exists(os.environ["TF_FAILS_ON_CUE"]):
            raise RuntimeError("the model file vanished")
        return int(action_mask.argmax())


@pytest.fixture
def fails_on_cue(tmp_path, monkeypatch):
    """The cue's path; the agent ``tf_fails_on_cue`` registered meanwhile."""
    from llama_env import agent as registry

    cue = tmp_path / "cue"
    monkeypatch.setenv("TF_FAILS_ON_CUE", str(cue))
    registry.register("tf_fails_on_cue")(FailsOnCue)
    try:
        yield cue
    finally:
        for table in (registry._REGISTRY, registry._DOCS, registry._GROUPS):
            table.pop("tf_fails_on_cue", None)


@posix
@pytest.mark.parametrize("workers", [1, 2])
@pytest.mark.parametrize("who", ["opponent", "evaluation"])
def test_an_agent_failing_during_training_saves_the_steps_learned_and_says_so(
    fails_on_cue, tmp_path, monkeypatch, capsys, workers, who
):
    """An opponent (or the evaluation's agent) that raised in the middle of a run ended it
    with the steps since the last checkpoint lost, where Ctrl-C and a killed env worker
    save them: its error line, exit 1, and a new run deleted outright."""
    from train.training.sb3.callbacks import TrainingHooks

    real = TrainingHooks._on_rollout_end

    def on_rollout_end(self):  # the first rollout collected: the agent fails from the second on
        fails_on_cue.touch()
        real(self)

    monkeypatch.setattr(TrainingHooks, "_on_rollout_end", on_rollout_end)
    agents = ["--opponents", "tf_fails_on_cue"] if who == "opponent" else ["--eval-opponent", "tf_fails_on_cue"]
    args = ["train", "--preset", "smoke", "--env-workers", str(workers), "--no-tensorboard", *agents]
    if who == "opponent":
        args += ["--eval-every", "0"]
    run = tmp_path / "runs" / "failed"
    code = main([*args, "--run-dir", str(run.parent), "--run-name", "failed", "--final-eval-games", "0"])
    err = capsys.readouterr().err
    assert code == 1, err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert err.startswith("llama-rl: error: training stopped: agent 'tf_fails_on_cue' at seat "), err
    steps = 512 if who == "opponent" else 1024  # the second rollout's first step; the evaluation at 1,024
    game = r" \(evaluation game \d+\)" if who == "evaluation" else ""
    saved = rf"the {steps:,} steps learned are saved in {re.escape(str(run))}:"
    said = rf"RuntimeError: the model file vanished{game}; {saved}"
    assert re.search(said, err), err
    assert err.endswith(f": continue it with llama-rl train --resume {run}\n"), err
    assert (run / "checkpoints" / f"ppo_{steps}.zip").is_file() and (run / "model.zip").is_file()
    summary = json.loads((run / "summary.json").read_text())
    assert summary["num_timesteps"] == steps and summary["interrupted"]


def test_an_agent_failing_in_the_evaluation_at_the_end_of_the_budget_keeps_the_model(
    fails_on_cue, tmp_path, monkeypatch, capsys
):
    """The evaluation due with the budget's last update runs after training: an agent that
    raised there left the run without its ``model.zip`` and its summary, and the command
    said nothing of the steps learned."""
    from train.training.sb3.callbacks import TrainingHooks

    real = TrainingHooks.after_learn

    def after_learn(self):  # the budget is trained: the agent fails from here on
        fails_on_cue.touch()
        real(self)

    monkeypatch.setattr(TrainingHooks, "after_learn", after_learn)
    args = ["train", "--preset", "smoke", "--no-tensorboard", "--eval-opponent", "tf_fails_on_cue"]
    run = tmp_path / "runs" / "end"
    code = main([*args, "--run-dir", str(run.parent), "--run-name", "end", "--final-eval-games", "0"])
    err = capsys.readouterr().err
    assert code == 1, err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert "RuntimeError: the model file vanished (evaluation game " in err, err
    assert f"; the 2,048 steps learned are saved in {run}" in err, err
    assert (run / "model.zip").is_file() and (run / "checkpoints" / "ppo_2048.zip").is_file()
    assert json.loads((run / "summary.json").read_text())["num_timesteps"] == 2048


@posix
@pytest.mark.parametrize("workers", [1, 2])
def test_an_opponent_failing_before_a_step_is_learned_still_leaves_no_new_run(fails_on_cue, tmp_path, capsys, workers):
    fails_on_cue.touch()
    args = ["train", "--preset", "smoke", "--env-workers", str(workers), "--opponents", "tf_fails_on_cue"]
    runs = tmp_path / "runs"
    code = main([*args, "--no-tensorboard", "--run-dir", str(runs), "--run-name", "early", "--final-eval-games", "0"])
    err = capsys.readouterr().err
    assert code == 1, err
    assert err.startswith("llama-rl: error: training stopped: agent 'tf_fails_on_cue' at seat "), err
    assert err.strip().endswith("RuntimeError: the model file vanished"), err
    assert not (runs / "early").exists()


# --------------------------------------------------------------------------- 6. the evaluation at the end


def test_the_evaluation_at_the_end_is_shown_and_a_run_that_trained_its_budget_did_not_stop_early(tmp_path, capsys):
    """The evaluation at the end ran after the bar closed and printed nothing; when it beat
    the target, a run that had trained every step of its budget said it stopped early and
    skipped the final table."""
    args = ["train", "--players", "4", "--eval-players", "4", "--opponents", "random", "--eval-opponent", "random"]
    args += ["--total-timesteps", "256", "--n-envs", "8", "--n-steps", "16", "--batch-size", "64", "--n-epochs", "1"]
    args += ["--eval-every", "256", "--eval-games", "40", "--stop-win-share", "0.01", "--checkpoint-every", "0"]
    args += ["--past-every", "0", "--net-arch", "16", "--no-tensorboard", "--final-eval-games", "2"]
    assert main([*args, "--run-dir", str(tmp_path), "--run-name", "end"]) == 0
    out = capsys.readouterr().out
    assert re.search(
        r"\[eval @ 256\] win share vs random: 4p \d\.\d{3} \(interval from \d\.\d{3}\): above 0\.01$", out, re.M
    )
    assert "stopping" not in out and "stopped early" not in out
    assert "Evaluating against the baselines (2 games per row)" in out
    assert json.loads((tmp_path / "end" / "summary.json").read_text())["stopped_early"] is False


# --------------------------------------------------------------------------- 7. the bar's last line in a log


def test_the_bar_draws_its_last_line_in_a_log_after_time_was_left_out(monkeypatch):
    """Leaving an evaluation's time out moved the bar's start past the moment it was last
    drawn, and close() took it for a bar never shown: a log ended at "0/256" (or the
    last line drawn) with no newline, and the summary was glued to it."""
    import io

    from train.training.result import leave_out, step_bar

    log = io.StringIO()
    monkeypatch.setattr("sys.stderr", log)
    bar = step_bar(256)
    bar.update(128)
    leave_out(bar, 5.0)
    bar.update(128)
    bar.close()
    assert log.getvalue().endswith("\n")
    assert "256/256" in log.getvalue().rstrip("\n").rsplit("\r", 1)[-1]


def test_tqdm_behaves_as_the_bar_assumes():
    import tqdm

    from train.training._tqdm_internals import CHECKED_VERSION, broken_assumptions

    broken = broken_assumptions()
    assert not broken, f"tqdm {tqdm.__version__} (checked: {CHECKED_VERSION}) breaks: {'; '.join(broken)}"


# --------------------------------------------------------------------------- 8. games env_workers cannot share


@pytest.mark.parametrize(
    "n_envs, options, match",
    [
        (2, {"env_workers": 4}, r"config key 'env_workers' \(4\) must be at most n_envs \(2\)"),
        (
            8,
            {"engine": "batch", "env_workers": 2},
            r"config keys 'n_envs' \(8\) and 'env_workers' \(2\) give shares of 4 games, fewer than the 5 table "
            r"sizes of players \(2, 3, 4, 5, 6\) that engine batch holds in one batch each: give n_envs 10 or more",
        ),
        (4, {"engine": "batch"}, r"config key 'n_envs' \(4\) must be at least the 5 table sizes of players"),
    ],
)
def test_games_the_env_workers_cannot_share_are_refused_with_the_config_keys(n_envs, options, match):
    """Both passed the config's checks and failed once the run had started, naming
    neither env_workers nor engine ("num_envs (4) must be at least the number of table
    sizes")."""
    with pytest.raises(ValueError, match=match):
        TrainConfig(n_envs=n_envs, batch_size=8, options=options).validate()
    TrainConfig(n_envs=10, batch_size=8, options={"engine": "batch", "env_workers": 2}).validate()


def test_the_command_line_refuses_them_before_training(tmp_path, capsys):
    args = ["train", "--n-envs", "2", "--env-workers", "4", "--batch-size", "8", "--run-dir", str(tmp_path)]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "config key 'env_workers' (4) must be at most n_envs (2)" in err
    assert not any(tmp_path.iterdir())


# --------------------------------------------------------------------------- 5. evaluation sizes


def test_the_periodic_evaluation_plays_at_the_runs_own_sizes_by_default():
    """eval_players defaulted to 2,4 whatever the run trained at: a 6-player run was
    evaluated at 2 and 4 only, tables it never saw."""
    assert TrainConfig().eval_players == (2, 4)
    assert TrainConfig(players=6).eval_players == (6,)
    assert TrainConfig(players=(2, 2, 6)).eval_players == (2, 6)
    assert TrainConfig(players="3-5").eval_players == (3, 4)
    assert TrainConfig(players=6, eval_players=(2, 6)).eval_players == (2, 6)  # given: kept
    assert TrainConfig(players=6).to_dict()["eval_players"] == [6]  # a run records the sizes it used


def parse(*argv: str) -> TrainConfig:
    import argparse

    from train.cli.train import add_arguments, config_from_args

    parser = argparse.ArgumentParser()
    add_arguments(parser)
    return config_from_args(parser.parse_args(list(argv)))


def test_a_presets_evaluation_follows_the_players_given_and_its_heads_up_target_is_refused_elsewhere(capsys):
    """--preset beat-heuristic --players 4 evaluated at 2 players only (the preset's) and
    stopped on 0.5 there, a heads-up target, at a 4-player run."""
    with pytest.raises(
        ValueError,
        match=r"^--preset beat-heuristic stops at a win share of 0\.5 measured at 2 players, and this run is "
        r"evaluated at 4: give --stop-win-share for those sizes \(an even share is 1/4 at 4 players; 0 trains to "
        r"--total-timesteps\), or --eval-players 2 to measure it as the preset does \(a size this run does not "
        r"train at\)$",
    ):
        parse("--preset", "beat-heuristic", "--players", "4")
    config = parse("--preset", "beat-heuristic", "--players", "4", "--stop-win-share", "0.3")
    assert config.eval_players == (4,) and config.stop_win_share == 0.3
    assert parse("--preset", "beat-heuristic", "--players", "2").eval_players == (2,)
    assert parse("--preset", "beat-heuristic").stop_win_share == 0.5
    assert parse("--preset", "beat-heuristic", "--players", "4", "--eval-players", "2").eval_players == (2,)
    assert parse("--preset", "ship", "--players", "6").eval_players == (6,)
    assert "config key 'stop_win_share'" not in capsys.readouterr().err


@pytest.mark.parametrize("players", ["2-6", "2,4"])
def test_a_presets_evaluation_stays_where_the_run_trains_at_its_sizes(players):
    """--preset beat-heuristic --players 2-6 (or 2,4) ran before: measured heads-up, as
    the preset is, and stopped at 0.5 there. It was refused, though the run trains at 2
    players, and the error named --stop-win-share only, not --eval-players 2."""
    config = parse("--preset", "beat-heuristic", "--players", players)
    assert config.eval_players == (2,) and config.stop_win_share == 0.5
    assert parse("--preset", "specialist-2p", "--players", players).eval_players == (2,)
    with pytest.raises(
        ValueError, match=r"evaluated at 2 and 4: .*, or --eval-players 2 to measure it as the preset does$"
    ):
        parse("--preset", "beat-heuristic", "--players", players, "--eval-players", "2,4")


_REFUSED = r"^--preset beat-heuristic stops at a win share of 0\.5 measured at 2 players, .* evaluated at 4:"


@pytest.mark.parametrize(
    ("flags", "given", "expected"),
    [
        ((), {}, {"players": [2], "eval_players": [2], "stop_win_share": 0.5}),
        (("--players", "2-6"), {"players": (2, 3, 4, 5, 6)}, {"eval_players": [2], "stop_win_share": 0.5}),
        (("--players", "4", "--eval-players", "2"), {"players": (4,), "eval_players": (2,)}, {"eval_players": [2]}),
        (
            ("--players", "4", "--stop-win-share", "0.3"),
            {"players": (4,), "stop_win_share": 0.3},
            {"eval_players": [4]},
        ),
        (("--players", "4"), {"players": (4,)}, _REFUSED),
    ],
)
def test_a_preset_gives_python_what_it_gives_the_command_line(flags, given, expected, tmp_path):
    """The preset's evaluation rule lived in the command line only: Python's
    config_from_dict({**PRESETS["beat-heuristic"], "players": (4,)}) measured a 4-player
    run heads-up and stopped it at 0.5 there, where the command line refused it. The
    documented Python route, with typed values, builds what the flags build, and both
    what the rule says."""
    from train.training import config_from_dict, preset_values

    argv = ["--preset", "beat-heuristic", "--run-dir", str(tmp_path), *flags]
    values = {**given, "run_dir": str(tmp_path)}
    if isinstance(expected, str):
        with pytest.raises(ValueError, match=expected):
            parse(*argv)
        with pytest.raises(ValueError, match=expected):
            config_from_dict(preset_values("beat-heuristic", values))
        return
    command_line = parse(*argv).to_dict()
    assert config_from_dict(preset_values("beat-heuristic", values)).to_dict() == command_line
    assert {key: command_line[key] for key in expected} == expected


def test_a_second_phase_preset_gives_python_the_runs_config_through_resume_config(tmp_path):
    """The guide and the presets module said preset_values feeds config_from_dict; for a
    preset that resumes a run that gave the defaults under the preset's few values
    (net_arch 128,128 for a run of 32,32), not the run's config the command line resumes."""
    from train.training import config_from_dict, preset_values, resume_config
    from train.training.resume import session_run
    from train.training.run_dir import write_json_atomic

    first = parse("--preset", "specialist-4p", "--run-dir", str(tmp_path), "--net-arch", "32,32")
    run, _ = session_run(first)
    run.path.mkdir(parents=True)
    write_json_atomic(run.config_path, first.to_dict())
    command_line = parse("--preset", "specialist-4p-more", "--run-dir", str(tmp_path))
    values = preset_values("specialist-4p-more", {"run_dir": str(tmp_path)})
    python = resume_config(values["resume"], values)
    assert python.to_dict() == command_line.to_dict()
    assert python.net_arch == (32, 32) and python.total_timesteps == 22_000_000
    assert config_from_dict(values).net_arch != (32, 32)  # why a second phase goes through resume_config


@pytest.mark.usefixtures("toy")
def test_an_evaluation_at_sizes_the_run_does_not_train_at_is_warned_of(tmp_path):
    config = TrainConfig(
        **{**PRESETS["smoke"], "backend": "toy", "run_dir": str(tmp_path), "players": (4,), "eval_players": (2, 4)}
    )
    config.stop_win_share = 0.5
    with pytest.warns(
        RuntimeWarning,
        match=r"^eval_players: the periodic evaluation plays at 2 players, where this run does not train "
        r"\(players 4\), and stop_win_share 0\.5 decides on them: give eval_players among the sizes it trains at",
    ):
        train(config)


# --------------------------------------------------------------------------- 9. the guide's commands


def test_the_guides_new_run_from_a_model_file_asks_for_steps_the_file_has_not_trained(tmp_path):
    """docs/training.md's `llama-rl train --resume ~/Downloads/model.zip --run-name mine
    --players 6` failed on the shipped model: it has trained 26,001,408 steps, more than the
    default total_timesteps of 2,000,000."""
    import re
    import shlex
    import shutil

    from agents.ppo import DEFAULT_MODEL_ZIP
    from train.training.resume import check_steps_left
    from train.training.run_dir import saved_steps

    guide = (Path(__file__).parents[2] / "docs" / "training.md").read_text()
    (command,) = re.findall(r"`(llama-rl train --resume\s+~/Downloads/model\.zip[^`]*)`", guide)
    model = tmp_path / "Downloads" / "model.zip"
    model.parent.mkdir()
    shutil.copy(DEFAULT_MODEL_ZIP, model)
    argv = [str(model) if word == "~/Downloads/model.zip" else word for word in shlex.split(command)[2:]]
    config = parse(*argv, "--run-dir", str(tmp_path / "runs"))
    assert config.players == (6,) and config.resume == str(model)
    check_steps_left(model, saved_steps(model), config)


def test_every_evaluation_prints_its_line_without_the_progress_bar(tmp_path, capsys):
    """With --no-progress-bar (a log, a batch job) no evaluation line was printed at all:
    only eval.jsonl held them."""
    args = ["train", "--players", "2", "--opponents", "random", "--eval-opponent", "random", "--eval-players", "2"]
    args += ["--total-timesteps", "256", "--n-envs", "8", "--n-steps", "16", "--batch-size", "64", "--n-epochs", "1"]
    args += ["--eval-every", "128", "--eval-games", "10", "--checkpoint-every", "0", "--no-progress-bar"]
    args += ["--past-every", "0", "--net-arch", "16", "--no-tensorboard", "--final-eval-games", "0"]
    assert main([*args, "--run-dir", str(tmp_path), "--run-name", "quiet"]) == 0
    out = capsys.readouterr().out
    assert "[eval @ 128] win share vs random: 2p " in out and "[eval @ 256] win share vs random: 2p " in out
