"""What the sixth stop's audit of training found: seeds numpy refuses, opponent weights
that overflow, rule errors that blamed a table size nobody gave, a run's config errors
that did not name the file, unquoted paths, torch's thread count left changed, relative
model paths in a run's config, ``ppo:path=`` of a run still training, timings that
counted evaluations, and a final table at sizes the run never trained at."""

from __future__ import annotations

import json
import re
import shlex
import shutil
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
from test_backends import toy  # noqa: F401 - a fixture
from test_run_safety import smoke
from test_training_audit import fake_rllib_run, needs_rllib, no_ray  # noqa: F401 - no_ray: a fixture

import agents
from agents.ppo import DEFAULT_MODEL, DEFAULT_MODEL_ZIP
from train.cli import main
from train.cli.common import EXIT_INTERRUPTED
from train.training import TrainResult, train
from train.training.config import TrainConfig, absolute_agent_paths
from train.training.resume import resume_config, session_run


def usage_error(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    """The one error line ``llama-rl`` prints for a usage error (exit 2)."""
    assert main(list(args)) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    return err


# --------------------------------------------------------------------------- 1. seeds numpy takes


def test_a_seed_beyond_numpys_range_is_refused_before_the_run(tmp_path, capsys):
    """2**32 passed the checks (0..2**63-1), then SB3 and RLlib failed with numpy's "Seed
    must be between 0 and 2**32 - 1" once the run had started."""
    assert TrainConfig(seed=2**32 - 1).validate().seed == 2**32 - 1
    with pytest.raises(ValueError, match=r"config key 'seed' must be an integer 0\.\.2\*\*32-1 .*, got 4294967296"):
        TrainConfig(seed=2**32).validate()
    err = usage_error(capsys, "train", "--preset", "smoke", "--run-dir", str(tmp_path), "--seed", str(2**32))
    assert "config key 'seed'" in err and not any(tmp_path.iterdir())


def test_an_rllib_seed_that_its_env_runners_would_push_past_numpys_range_is_refused():
    """RLlib seeds each env runner with seed + its index."""
    top = 2**32 - 1
    assert TrainConfig(backend="rllib", seed=top).validate().seed == top  # no remote runner
    assert TrainConfig(backend="rllib", seed=top - 2, options={"num_env_runners": 2}).validate()
    with pytest.raises(ValueError, match=r"config key 'seed' must be at most .* \(4294967293\) on rllib"):
        TrainConfig(backend="rllib", seed=top - 1, options={"num_env_runners": 2}).validate()


# --------------------------------------------------------------------------- 10. weights that overflow


def test_opponent_weights_whose_total_overflows_are_refused_in_one_line(tmp_path, capsys):
    """Each weight was finite, their total infinite: numpy's "Probabilities do not sum to
    1" once the games were dealt."""
    with pytest.raises(ValueError, match="config key 'opponents' must give a finite total weight"):
        TrainConfig(opponents={"heuristic": 1e308, "self": 1e308}).validate()
    args = ("train", "--preset", "smoke", "--run-dir", str(tmp_path), "--opponents", "heuristic:1e308,self:1e308")
    assert "config key 'opponents' must give a finite total weight" in usage_error(capsys, *args)


# --------------------------------------------------------------------------- 5. the table size a rule error blames


def test_a_rule_option_error_names_the_key_its_table_size_came_from(tmp_path, capsys):
    """``--players 2 --eval-players 2,4 --hand-size 20`` said "the rule options at 4
    players", without the key the size came from. (eval_players' default is now the run's
    own sizes: a run at 2 players is evaluated at 2.)"""
    args = ("train", "--preset", "smoke", "--run-dir", str(tmp_path), "--players", "2", "--hand-size", "20")
    err = usage_error(capsys, *args, "--eval-players", "2,4")
    assert err == (
        "llama-rl: error: config key 'eval_players' includes 4: hand_size must be between 1 and "
        "13 for 4 players (the deal needs 4 x hand_size + 1 <= 56 cards), got 20; give eval_players sizes these "
        "rules allow: 2\n"
    )
    # the rules hold at eval_players 2: what is refused next is the step count
    assert "config key 'total_timesteps'" in usage_error(capsys, *args, "--total-timesteps", "0")
    with pytest.raises(
        ValueError, match=r"^config key 'players' includes 3: .*; give players sizes these rules allow: 2$"
    ):
        TrainConfig(players=(2, 3), eval_players=2, hand_size=20).validate()


# --------------------------------------------------------------------------- 7. a run's config that cannot be read


@pytest.mark.parametrize(
    ("change", "said"),
    [
        ({"bogus": 1}, "unknown config key 'bogus'; allowed keys: "),
        ({"n_envs": "16"}, "config key 'n_envs' must be an integer, got '16'"),
    ],
)
def test_an_error_in_a_runs_recorded_config_names_the_file(tmp_path, capsys, change, said):
    """It said "unknown config key 'bogus'" without saying it came from runs/x/config.json,
    not from the flags given."""
    run = tmp_path / "x"
    run.mkdir()
    (run / "config.json").write_text(json.dumps({**TrainConfig().to_dict(), **change}))
    err = usage_error(capsys, "train", "--resume", str(run), "--total-timesteps", "4096")
    assert err.startswith(f"llama-rl: error: in {run / 'config.json'}: {said}")
    with pytest.raises(ValueError, match=f"^in {re.escape(str(run / 'config.json'))}: {re.escape(said)}"):
        session_run(TrainConfig(resume=str(run)))


# --------------------------------------------------------------------------- 8. the line printed after Ctrl-C


def test_the_line_that_continues_an_interrupted_run_pastes_into_a_shell(tmp_path, monkeypatch, capsys):
    """It printed ``--resume runs/sp ace`` unquoted, where the commands printed after a
    finished run are quoted."""
    import train.training

    def interrupted(config: TrainConfig) -> TrainResult:
        run = tmp_path / "sp ace"
        return TrainResult(run, run / "model.zip", 512, 512, 1.0, 0.0, 1.0, True, [])

    monkeypatch.setattr(train.training, "train", interrupted)
    args = ["train", "--preset", "smoke", "--run-dir", str(tmp_path), "--run-name", "sp ace"]
    assert main(args) == EXIT_INTERRUPTED
    out = capsys.readouterr().out
    assert out.splitlines()[-1] == f"continue it with: llama-rl train --resume {shlex.quote(str(tmp_path / 'sp ace'))}"
    assert shlex.split(out.splitlines()[-1])[-1] == str(tmp_path / "sp ace")


# --------------------------------------------------------------------------- 11. the reason a checkpoint is skipped


def test_a_checkpoint_that_is_no_zip_names_the_error_once(tmp_path):
    """It said "(BadZipFile: BadZipFile: File is not a zip file)"."""
    from train.training.run_dir import checkpoint_problem

    bad = tmp_path / "ppo_512.zip"
    bad.write_bytes(b"not a zip at all")
    assert checkpoint_problem(bad) == "BadZipFile: File is not a zip file"


# --------------------------------------------------------------------------- 9. torch's thread count


def test_a_run_puts_torchs_thread_count_back(tmp_path):
    """train() put back the global random streams, not torch's thread count: a caller's
    torch went on with the run's ``torch_threads`` (1)."""
    import torch

    before = torch.get_num_threads()
    try:
        torch.set_num_threads(3)
        train(smoke(tmp_path, "threads", total_timesteps=512, opponents="heuristic,self"))
        assert torch.get_num_threads() == 3
    finally:
        torch.set_num_threads(before)


@needs_rllib
@pytest.mark.usefixtures("no_ray")
def test_an_rllib_run_puts_torchs_thread_count_back(tmp_path):
    import torch

    from train.training.rllib.trainer import train_rllib

    before = torch.get_num_threads()
    try:
        torch.set_num_threads(3)
        assert train_rllib(TrainConfig(backend="rllib", run_dir=str(tmp_path), progress_bar=False)) == "trained"
        assert torch.get_num_threads() == 3
    finally:
        torch.set_num_threads(before)


# --------------------------------------------------------------------------- 2. relative model paths in a run's config


@pytest.mark.usefixtures("toy")
def test_a_runs_config_names_its_agents_files_by_absolute_path(tmp_path, monkeypatch, capsys):
    """``--opponents ppo:path=bare.npz`` was recorded as typed, so ``--resume`` from
    another folder failed with "no PPO model at bare.npz"."""
    monkeypatch.chdir(tmp_path)
    shutil.copy(DEFAULT_MODEL, "bare.npz")
    model = Path.cwd() / "bare.npz"
    args = ["train", "--backend", "toy", "--preset", "smoke", "--run-dir", "runs", "--run-name", "rel"]
    opponents = ["--opponents", "ppo:path=bare.npz:0.5,heuristic:0.5", "--eval-opponent", "ppo:path=bare.npz"]
    assert main([*args, *opponents, "--final-eval-games", "0"]) == 0, capsys.readouterr().err
    recorded = json.loads(Path("runs", "rel", "config.json").read_text())
    assert recorded["opponents"] == {f"ppo:path={model}": 0.5, "heuristic": 0.5}
    assert recorded["eval_opponent"] == f"ppo:path={model}"
    monkeypatch.chdir(tmp_path / "runs")  # elsewhere
    resumed = resume_config(tmp_path / "runs" / "rel", {"total_timesteps": 4096}).validate()
    assert resumed.opponents == {f"ppo:path={model}": 0.5, "heuristic": 0.5}


def test_file_parameters_of_agent_specs_are_made_absolute(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    here = Path.cwd()
    assert absolute_agent_paths("ppo:path=m.zip") == f"ppo:path={here / 'm.zip'}"
    assert (
        absolute_agent_paths("search:networks_path=n.npz:worlds=8") == f"search:networks_path={here / 'n.npz'}:worlds=8"
    )
    for same in ("heuristic", "cautious:threshold=2", "ppo:path=/abs/m.zip", "ppo:path="):
        assert absolute_agent_paths(same) == same
    monkeypatch.setenv("HOME", str(tmp_path / "home"))  # ~ is the home folder, as the agents read it (was ./~/m.zip)
    assert absolute_agent_paths("ppo:path=~/m.zip") == f"ppo:path={tmp_path / 'home' / 'm.zip'}"
    config = TrainConfig(opponents={"ppo:path=m.zip": 1, f"ppo:path={here / 'm.zip'}": 2, "self": 1})
    assert config.with_absolute_paths().opponents == {f"ppo:path={here / 'm.zip'}": 3, "self": 1}
    assert TrainConfig().with_absolute_paths().opponents == TrainConfig().opponents


def test_a_plugins_file_parameters_are_made_absolute_as_it_reads_them(tmp_path, monkeypatch):
    """agents.make hands a plugin's model_path=~/m.npz over as written (read in ./~ by a
    plugin that opens it): the record of the spec read it in the home folder, which only
    the built-in agents do."""
    from llama_env import agent as registry

    class Mine:
        def __init__(self, model_path: str = "") -> None:
            self.model_path = model_path

        def act(self, observation, action_mask):  # pragma: no cover - never played
            return 0

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    registry.register("tilde_plugin_test_agent")(Mine)
    try:
        spec = "tilde_plugin_test_agent:model_path=~/m.npz"
        assert absolute_agent_paths(spec) == f"tilde_plugin_test_agent:model_path={tmp_path / '~' / 'm.npz'}"
        assert agents.make(spec).model_path == "~/m.npz"
    finally:
        for table in (registry._REGISTRY, registry._DOCS, registry._GROUPS):
            table.pop("tilde_plugin_test_agent", None)


# --------------------------------------------------------------------------- 3. ppo:path= of a run still training

NO_MODEL_YET = (
    "the run has no model yet (it is still training, or it stopped before its end, when the model is written)"
)


def test_ppo_path_of_a_run_still_training_names_its_newest_checkpoint(tmp_path, capsys):
    """``ppo:path=runs/<run>`` said "it is not a run directory" of a run without its model
    yet, where ``llama-rl export`` of it names the newest checkpoint: both say it now."""
    run = fake_rllib_run(tmp_path)
    newest = run.checkpoints_dir / "rllib_512"
    with pytest.raises(ValueError) as info:
        agents.make("ppo", path=str(run.path))
    assert str(info.value) == f"no PPO model in {run.path}: {NO_MODEL_YET}; use its newest checkpoint instead: " + (
        f"ppo:path={newest}"
    )

    sb3 = tmp_path / "sb3"
    (sb3 / "checkpoints").mkdir(parents=True)
    (sb3 / "config.json").write_text("{}")
    shutil.copy(DEFAULT_MODEL_ZIP, sb3 / "checkpoints" / "ppo_512.zip")
    (sb3 / "checkpoints" / "ppo_1024.zip").write_bytes(b"")  # being written: the one before
    with pytest.raises(ValueError, match=re.escape(f"instead: ppo:path={sb3 / 'checkpoints' / 'ppo_512.zip'}")):
        agents.make("ppo", path=str(sb3))
    out = tmp_path / "o.npz"
    err = usage_error(capsys, "export", str(sb3), "--out", str(out))
    assert err == (
        f"llama-rl: error: MODEL '{sb3}': {NO_MODEL_YET}; export its newest checkpoint instead: "
        f"llama-rl export {sb3 / 'checkpoints' / 'ppo_512.zip'} --out {out}\n"
    )
    agents.make("ppo", path=str(sb3 / "checkpoints" / "ppo_512.zip"))  # what it names plays
    (sb3 / "checkpoints" / "ppo_512.zip").unlink()
    with pytest.raises(ValueError, match=re.escape(f"{NO_MODEL_YET}, and no checkpoint to use either")):
        agents.make("ppo", path=str(sb3))


# --------------------------------------------------------------------------- 4. training's time, evaluations left out

PAUSE = 0.4
"""Seconds each evaluation or checkpoint save is made to take in the timing tests."""


def test_sb3_training_time_leaves_out_the_evaluations(tmp_path, monkeypatch):
    """``wall_s`` (and the steps/s printed from it) was documented as leaving evaluations
    and saving out, and counted them: an 8,192-step run read 2,112 steps/s with an
    evaluation every rollout against 5,144 without."""
    from sb3_contrib import MaskablePPO

    import train.training.sb3.callbacks as callbacks

    real_eval, real_learn = callbacks.evaluation_row, MaskablePPO.learn
    learning: list[float] = []

    def slow_eval(*args):
        time.sleep(PAUSE)
        return real_eval(*args)

    def timed_learn(self, *args, **kwargs):
        t0 = time.perf_counter()
        try:
            return real_learn(self, *args, **kwargs)
        finally:
            learning.append(time.perf_counter() - t0)

    monkeypatch.setattr(callbacks, "evaluation_row", slow_eval)
    monkeypatch.setattr(MaskablePPO, "learn", timed_learn)
    config = smoke(tmp_path, "t", total_timesteps=1536, eval_every=512, checkpoint_every=0, opponents="heuristic,self")
    result = train(config)
    # evaluations at 512 and 1024 steps, inside learn(); the one at 1536 after it
    assert result.wall_s <= learning[0] - 2 * PAUSE
    assert result.eval_save_s >= 3 * PAUSE
    assert result.steps_per_s == pytest.approx(1536 / result.wall_s)
    summary = json.loads((tmp_path / "t" / "summary.json").read_text())
    assert summary["wall_s"] == result.wall_s and summary["eval_save_s"] == result.eval_save_s


@needs_rllib
def test_rllib_training_time_leaves_out_the_evaluations_and_checkpoints(tmp_path, monkeypatch):
    import train.training.rllib.trainer as trainer
    from train.training.rllib.env import SHARED_POLICY
    from train.training.run_dir import RunDir

    def slow(result):
        def pause(*args):
            time.sleep(PAUSE)
            return result(*args)

        return pause

    monkeypatch.setattr(trainer, "_save_checkpoint", slow(lambda algo, run, steps: run.checkpoint_path(steps)))
    row = {"timesteps": 0, "win_share_2p": 0.5, "ci95_2p": 0.1, "ci_low_2p": 0.4}
    monkeypatch.setattr(trainer, "_evaluate", slow(lambda algo, config, run, steps, bar: row))
    monkeypatch.setattr(trainer, "export_actor", lambda algo, config: None)
    monkeypatch.setattr(trainer, "with_run_trained_at", lambda actor, file: actor)
    monkeypatch.setattr(trainer, "save_actor", lambda actor, path: None)
    monkeypatch.setattr(trainer, "_runner_counts", lambda algo: (0, 0, 0))
    algo = SimpleNamespace(
        train=lambda: {"env_runners": {"num_module_steps_sampled": {SHARED_POLICY: 512}}},
        metrics=SimpleNamespace(get_state=dict, set_state=lambda state: None),  # RLlib's metrics logger
    )
    config = TrainConfig(backend="rllib", total_timesteps=1024, checkpoint_every=512, eval_every=512, past_every=0,
                         opponents="heuristic", eval_players=2, progress_bar=False, run_dir=str(tmp_path))  # fmt: skip
    run = RunDir(tmp_path / "run")
    run.create(fresh=True)
    t0 = time.perf_counter()
    result = trainer._loop(config, run, algo, None, 0, run.config_path, [])
    elapsed = time.perf_counter() - t0
    # two iterations, each with a checkpoint and an evaluation; then the final checkpoint
    assert result.wall_s <= elapsed - 5 * PAUSE
    assert result.eval_save_s >= 4 * PAUSE
    assert json.loads(run.summary_path.read_text())["eval_save_s"] == result.eval_save_s


def test_the_step_bar_leaves_out_what_it_is_told_to():
    from train.training.result import leave_out, step_bar

    bar = step_bar(100)
    try:
        bar.update(50)
        before = bar.start_t
        leave_out(bar, 5.0)
        assert bar.start_t == before + 5.0  # its elapsed time, and so its rate, 5 s less: read at once
    finally:
        bar.close()


# --------------------------------------------------------------------------- 6. the table printed after training


@pytest.mark.usefixtures("toy")
def test_the_table_after_training_measures_the_run_at_sizes_it_trained_at(tmp_path, monkeypatch, capsys):
    """A run trained at 6 players only was measured at 2 and 4, sizes it never saw, and
    the table did not say so."""
    from llama_env.engine import Rules
    from train.evaluation import report

    seen = []
    monkeypatch.setattr(report, "has_shipped_models", lambda: False)
    monkeypatch.setattr(report, "compare_agents", lambda contenders, **kw: seen.append(kw) or [])
    monkeypatch.setattr(report, "format_comparison", lambda rows: "table")
    args = ["train", "--backend", "toy", "--preset", "smoke", "--run-dir", str(tmp_path), "--final-eval-games", "4"]
    assert main([*args, "--players", "6", "--eval-players", "6", "--end-score", "30"]) == 0, capsys.readouterr().err
    assert seen[-1]["players"] == [6] and seen[-1]["rules"] == Rules(6, end_score=30)
    assert main([*args, "--players", "2-6"]) == 0  # make train's run: 2 and 4, as before
    assert seen[-1]["players"] == [2, 4]


def test_the_sizes_of_the_table_after_training_are_the_runs_two_at_most():
    from train.cli.train import comparison_sizes

    for players, sizes in [((2, 3, 4, 5, 6), [2, 4]), ((6,), [6]), ((5, 6), [5, 6]), ((3, 4, 5), [3, 4])]:
        assert comparison_sizes(players) == sizes
    assert comparison_sizes((2, 2, 6)) == [2, 6]
