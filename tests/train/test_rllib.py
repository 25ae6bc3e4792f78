"""Training on Ray RLlib: the masked module and the multi-agent env without Ray running,
then one short training run through ``llama-rl train --backend rllib``.

These tests need the ``rllib`` extra (``make test`` installs it through ``dev``); they
are skipped only where it is knowingly absent: ``LLAMA_RL_NO_RLLIB=1``.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import re
import signal
import tempfile
import warnings
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

if os.environ.get("LLAMA_RL_NO_RLLIB") == "1":
    pytest.skip("LLAMA_RL_NO_RLLIB=1: the rllib extra is knowingly absent", allow_module_level=True)

import gymnasium as gym  # noqa: E402
import torch  # noqa: E402
from conftest import random_decisions  # noqa: E402
from ray.rllib.core.columns import Columns  # noqa: E402
from ray.rllib.core.rl_module.rl_module import RLModuleSpec  # noqa: E402

import agents  # noqa: E402
from llama_env._install import install_hint  # noqa: E402
from llama_env.engine import IllegalActionError, LlamaGame  # noqa: E402
from llama_env.observation import OBS_SIZE, action_mask, encode  # noqa: E402
from llama_env.rewards import game_rewards, illegal_action_return  # noqa: E402
from train.cli import main  # noqa: E402
from train.training.rllib.env import LlamaMultiAgentEnv  # noqa: E402
from train.training.rllib.module import MaskedPPOModule, actor_from_module  # noqa: E402

SPACE = gym.spaces.Dict(
    {
        "observation": gym.spaces.Box(0.0, 10.0, (OBS_SIZE,), np.float32),
        "action_mask": gym.spaces.Box(0, 1, (9,), np.int8),
    }
)


def build_module(hidden=(16, 16), activation="tanh") -> MaskedPPOModule:
    spec = RLModuleSpec(
        module_class=MaskedPPOModule,
        observation_space=SPACE,
        action_space=gym.spaces.Discrete(9),
        model_config={"fcnet_hiddens": list(hidden), "fcnet_activation": activation, "head_fcnet_hiddens": []},
    )
    return spec.build()


def real_batch(n: int = 64, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rows = [(encode(g, g.current_player), action_mask(legal)) for g, legal in random_decisions(n, seed)]
    return np.array([o for o, _ in rows], np.float32), np.array([m for _, m in rows], np.int8)


# --------------------------------------------------------------------------- the module, no Ray running


@pytest.mark.parametrize("activation", ["tanh", "relu"])
def test_masked_module_never_allows_an_illegal_action_and_exports_exactly(activation):
    module = build_module(activation=activation)
    obs, masks = real_batch()
    batch = {Columns.OBS: {"observation": torch.from_numpy(obs), "action_mask": torch.from_numpy(masks)}}
    for forward in (module.forward_inference, module.forward_exploration, module.forward_train):
        logits = forward(dict(batch))[Columns.ACTION_DIST_INPUTS].detach().numpy()
        assert (logits[masks == 0] < -1e30).all()
        probs = torch.softmax(torch.from_numpy(logits), dim=1).numpy()
        assert (probs[masks == 0] == 0).all()
        assert np.allclose(probs.sum(axis=1), 1.0)
    values = module.compute_values(dict(batch))
    assert values.shape == (len(obs),)
    actor = actor_from_module(module, activation)
    mine = actor.logits(obs, masks.astype(bool))
    legal = masks.astype(bool)
    np.testing.assert_allclose(mine[legal], logits[legal], rtol=1e-5, atol=1e-5)
    assert (actor.act_batch(obs, legal) == logits.argmax(axis=1)).all()


# --------------------------------------------------------------------------- the env, no Ray running


def play(env: LlamaMultiAgentEnv, seed: int, illegal_at: int | None = None) -> tuple[dict, int]:
    """Play one episode with random legal actions; return the rewards each agent got."""
    rng = np.random.default_rng(seed)
    obs, _ = env.reset(seed=seed)
    totals: dict[str, float] = {}
    steps = 0
    while True:
        assert len(obs) >= 1
        (me,) = obs.keys() if len(obs) == 1 else (None,)
        assert me is not None, f"more than one agent asked to act: {sorted(obs)}"
        mask = obs[me]["action_mask"]
        legal = np.flatnonzero(mask)
        action = int(np.flatnonzero(mask == 0)[0]) if steps == illegal_at else int(rng.choice(legal))
        obs, rewards, terminated, truncated, infos = env.step({me: action})
        steps += 1
        for agent, r in rewards.items():
            totals[agent] = totals.get(agent, 0.0) + r
        if terminated["__all__"] or truncated["__all__"]:
            return totals, env.illegal_actions


@pytest.mark.parametrize("mix", [{"self": 1.0}, {"heuristic": 1.0}, {"random": 1.0, "self": 1.0, "past": 1.0}])
def test_env_asks_one_learning_seat_at_a_time_and_pays_the_game_reward(mix):
    env = LlamaMultiAgentEnv({"players": [2, 3, 4], "opponents": mix, "seed": 1})
    for seed in range(12):
        totals, illegal = play(env, seed)
        game = env.table.game
        assert game.game_over and illegal == 0
        shares = game_rewards(game.scores)
        for agent, total in totals.items():
            seat = int(agent.rsplit("_", 1)[1])
            assert seat in env.learning
            assert total == pytest.approx(shares[seat])
        assert all(s in env.learning or env.table.agents[s] is not None for s in range(game.num_players))


def test_env_runners_get_the_opponents_registered_at_run_time():
    """Ray's env runners never import the driver's script or notebook: an opponent
    registered there was an unknown agent in every runner (an IndexError from Ray)."""
    import pickle

    from llama_env.agent import _REGISTRY, register
    from train.training.config import TrainConfig
    from train.training.rllib.trainer import build_algorithm_config

    class Lowest:
        def act(self, observation, action_mask):
            return int(np.flatnonzero(action_mask)[0])

    register("lowest_for_rllib")(Lowest)
    try:
        config = TrainConfig(backend="rllib", players="2", opponents="lowest_for_rllib:1")
        env_config = build_algorithm_config(config, 0).env_config
    finally:
        del _REGISTRY["lowest_for_rllib"]  # as in a runner's process
    assert [entry[0] for entry in pickle.loads(env_config["registered"])] == ["lowest_for_rllib"]
    env = LlamaMultiAgentEnv(env_config)
    totals, illegal = play(env, 0)
    assert illegal == 0 and isinstance(env._baselines["lowest_for_rllib"], Lowest)
    del _REGISTRY["lowest_for_rllib"]


def test_env_counts_an_illegal_action_and_ends_the_game_with_a_penalty():
    env = LlamaMultiAgentEnv({"players": [2], "opponents": {"heuristic": 1.0}, "seed": 0})
    totals, illegal = play(env, seed=3, illegal_at=0)
    assert illegal == 1 and env.illegal_total == 1
    assert min(totals.values()) == pytest.approx(-1.0)


@pytest.mark.parametrize("reward", ["round", "shaped"])
def test_an_illegal_action_ends_the_seat_s_game_below_any_finished_game(reward):
    """The env paid -1 on top of what the seat was paid: in "round", where a whole game pays
    minus the final score, that was a shortcut. The game now adds up to illegal_action_return."""
    config = {"players": [2], "opponents": {"heuristic": 1.0}, "reward": reward, "rules": {"end_score": 1000}}
    env = LlamaMultiAgentEnv(config)
    totals, illegal = play(env, seed=3, illegal_at=20)
    assert illegal == 1 and env.table.game.round > 2  # rounds were paid before
    assert list(totals.values()) == [pytest.approx(illegal_action_return(reward, 1000), abs=1e-9)]


def test_env_seats_past_snapshots_when_it_has_them():
    env = LlamaMultiAgentEnv({"players": [4], "opponents": {"past": 1.0}, "seed": 0})
    env.reset(seed=0)
    assert len(env.learning) == 4  # no snapshot yet: "past" seats learn, as "self"
    env.set_past_policies([agents.make("ppo").actor])
    env.reset(seed=0)
    assert len(env.learning) == 1 and sum(a is not None for a in env.table.agents) == 3
    totals, illegal = play(env, seed=1)
    assert illegal == 0 and list(totals) == [f"player_{next(iter(env.learning))}"]


def random_plays(env: LlamaMultiAgentEnv, n: int = 24) -> tuple[int, ...]:
    """The next ``n`` moves of the env's ``random`` opponent, on a board where all nine are legal."""
    agent = env._baselines["random"]
    return tuple(int(agent.act(np.zeros(OBS_SIZE, np.float32), np.ones(9, np.int8))) for _ in range(n))


def test_each_env_on_each_runner_seats_opponents_of_its_own():
    """The opponents' random choices are the env's own: RLlib's EnvContext names the runner
    and the vector slot (a plain dict of its keys dropped them, so every env on every
    runner built the same opponents), and a seeded reset, which the env runner gives each
    env of a vector on its first deal, seeds the opponents with the deals."""
    from ray.rllib.env.env_context import EnvContext

    config = {"players": [2], "opponents": {"random": 1.0}, "seed": 7}
    slots = [(0, 0), (1, 0), (2, 0), (1, 1)]
    plays = [random_plays(LlamaMultiAgentEnv(EnvContext(config, worker_index=w, vector_index=v))) for w, v in slots]
    assert len(set(plays)) == len(slots)
    assert random_plays(LlamaMultiAgentEnv(EnvContext(config, worker_index=2))) == plays[2]  # reproducible
    by_runner = []
    for _ in range(2):
        runner = make_runner({"random": 1.0}, players=(2,), n_envs=4)
        runner.sample(num_timesteps=8, explore=True)
        by_runner.append([random_plays(env) for env in runner._llama_envs])
    assert len(set(by_runner[0])) == 4 and by_runner[0] == by_runner[1]


def test_the_table_driver_refuses_what_the_env_passes_on():
    env = LlamaMultiAgentEnv({"players": [2], "opponents": {"heuristic": 1.0}, "seed": 0})
    env.reset(seed=0)
    with pytest.raises(IllegalActionError):
        env.table.apply(True)


def test_env_hooks_skip_the_local_runner_that_holds_no_env():
    """With remote env runners the local runner has no env: past snapshots and the
    illegal-action count must reach the remote runners' envs and not fail on it."""
    from types import SimpleNamespace

    from train.training.rllib.trainer import _sub_envs

    env = LlamaMultiAgentEnv({"players": [2], "opponents": {"self": 1.0}, "seed": 0})
    vector = SimpleNamespace(unwrapped=SimpleNamespace(envs=[env, env]))
    assert _sub_envs(SimpleNamespace(env=None)) == []
    assert _sub_envs(SimpleNamespace(env=vector)) == [env, env]


# --------------------------------------------------------------------------- a short run on Ray


class OneRay:
    """A local Ray that this module's runs share where starting their own is no part of
    what the test checks: a local Ray takes seconds to start and to stop, a run on it well
    under one. ``up()`` starts it as ``llama-rl train`` starts its own (``ray_session``),
    and a run then trains on it as on a caller's Ray; ``down()`` stops it, for a run that
    starts its own."""

    def __init__(self, folder: Path) -> None:
        self.folder, self.starts = folder, 0
        self.session: contextlib.ExitStack | None = None

    def up(self) -> None:
        from train.training.rllib.trainer import ray_session
        from train.training.run_dir import RunDir

        if self.session is None:
            self.starts += 1
            session = contextlib.ExitStack()
            session.enter_context(ray_session(RunDir(self.folder / f"ray{self.starts}"), "local"))
            self.session = session

    def down(self) -> None:
        session, self.session = self.session, None
        if session is not None:
            session.close()


@pytest.fixture(scope="module")
def one_ray(tmp_path_factory) -> Iterator[OneRay]:
    shared = OneRay(tmp_path_factory.mktemp("shared-ray"))
    yield shared
    shared.down()


@pytest.fixture
def shared_ray(one_ray: OneRay) -> None:
    """The module's local Ray is running: the test's runs train on it (:class:`OneRay`)."""
    one_ray.up()


@pytest.fixture
def no_ray_running(monkeypatch) -> None:
    """The process has no Ray of its own (``ray.is_initialized()`` says so), though the
    module's shared Ray (:class:`OneRay`) may be up."""
    import ray

    monkeypatch.setattr(ray, "is_initialized", lambda: False)


@pytest.fixture(scope="module")
def rllib_run(tmp_path_factory, one_ray: OneRay) -> tuple[Path, Path, int]:
    """A run that starts and stops a local Ray of its own, as ``llama-rl train`` does."""
    one_ray.down()
    root = tmp_path_factory.mktemp("rllib")
    home = tmp_path_factory.mktemp("home")
    old_home = os.environ.get("HOME")
    os.environ["HOME"] = str(home)
    try:
        code = main(
            [
                "train",
                "--backend",
                "rllib",
                "--players",
                "2,3",
                "--opponents",
                "heuristic:1,self:1,past:1",
                "--total-timesteps",
                "3000",
                "--n-envs",
                "16",
                "--n-steps",
                "64",
                "--batch-size",
                "256",
                "--n-epochs",
                "1",
                "--net-arch",
                "16,16",
                "--checkpoint-every",
                "1024",
                "--past-every",
                "1024",
                "--eval-every",
                "2048",
                "--eval-games",
                "20",
                "--run-dir",
                str(root),
                "--run-name",
                "r",
                "--final-eval-games",
                "0",
                "--no-progress-bar",
            ]
        )
    finally:
        if old_home is None:
            os.environ.pop("HOME")
        else:
            os.environ["HOME"] = old_home
    return root / "r", home, code


def test_rllib_run_trains_without_an_illegal_action_and_writes_nothing_home(rllib_run):
    run, home, code = rllib_run
    assert code == 0
    assert list(home.iterdir()) == [], f"written to the home directory: {list(home.rglob('*'))}"
    summary = json.loads((run / "summary.json").read_text())
    assert summary["backend"] == "rllib" and summary["illegal_actions"] == 0
    assert summary["num_timesteps"] >= 3000 and summary["all_seats_decisions_sampled"] > summary["num_timesteps"]
    for name in ("config.json", "progress.jsonl", "eval.jsonl", "sessions.jsonl", "model.npz"):
        assert (run / name).is_file(), name
    checkpoints = sorted(p.name for p in (run / "checkpoints").iterdir())
    assert checkpoints and all(p.startswith("rllib_") for p in checkpoints)  # no temporary folder left
    assert (run / "ray").is_dir() and not (run / ".lock").exists()
    assert not (run / "ray_results").exists()  # RLlib's log folder, always empty, is a temporary one


def test_exported_agent_plays_like_the_rllib_module(rllib_run):
    from ray.rllib.core.rl_module import RLModule

    run, _, _ = rllib_run
    newest = max((run / "checkpoints").iterdir(), key=lambda p: int(p.name.split("_")[1]))
    module_dir = newest / "learner_group" / "learner" / "rl_module" / "shared"
    module = RLModule.from_checkpoint(str(module_dir))
    obs, masks = real_batch(200, seed=5)
    batch = {Columns.OBS: {"observation": torch.from_numpy(obs), "action_mask": torch.from_numpy(masks)}}
    logits = module.forward_inference(batch)[Columns.ACTION_DIST_INPUTS].detach().numpy()
    for path in (run, newest):  # the run directory's model.npz, and the checkpoint itself: no torch needed
        agent = agents.make("ppo", path=str(path))
        chosen = [agent.act(o, m) for o, m in zip(obs, masks, strict=True)]
        assert chosen == logits.argmax(axis=1).tolist(), path


def test_a_copy_of_an_rllib_runs_model_says_what_the_run_trained_at(rllib_run, tmp_path):
    """The run's model.npz said nothing of its table sizes or rules, which `llama-rl
    export runs/<name>` writes: a copy of the file alone (the training guide's `cp`)
    let fit-search and distill take another --players, and evaluation warned of nothing."""
    from agents.ppo import load_actor

    run, _, _ = rllib_run
    loose = tmp_path / "specialist.npz"
    loose.write_bytes((run / "model.npz").read_bytes())
    actor = load_actor(loose)
    assert actor.table_sizes == (2, 3)
    assert actor.trained_rules == {"end_score": (40,), "hand_size": (6,)}


def test_rllib_run_resumes(rllib_run, shared_ray, capsys):
    run, _, _ = rllib_run
    code = main(
        ["train", "--resume", str(run), "--total-timesteps", "4500", "--final-eval-games", "0", "--no-progress-bar"]
    )
    assert code == 0, capsys.readouterr().err
    sessions = [json.loads(line) for line in (run / "sessions.jsonl").read_text().splitlines()]
    assert len(sessions) == 2 and sessions[1]["started_at_step"] == sessions[0]["ended_at_step"]
    assert all(s["llama_rl_version"] for s in sessions)
    assert sessions[1]["ended_at_step"] >= 4500
    ran = json.loads((run / "config.resume_1.json").read_text())
    assert ran["backend"] == "rllib" and ran["net_arch"] == [16, 16] and ran["n_envs"] == 16
    # one of its checkpoint folders, named instead of the run: the newest resumes, as sb3's newest zip does (it
    # was refused: "resume the run's directory"), an older one is refused, as on sb3
    folders = sorted((run / "checkpoints").iterdir(), key=lambda p: int(p.name.split("_")[1]))
    steps = int(folders[-1].name.split("_")[1])
    code = main(["train", "--resume", str(folders[0]), "--total-timesteps", "9000", "--final-eval-games", "0"])
    err = capsys.readouterr().err
    assert code == 2 and f"{folders[0]} ({folders[0].name[6:]} steps) is older than the run's {folders[1].name}" in err
    again = ["train", "--resume", str(folders[-1]), "--total-timesteps", str(steps + 1), "--final-eval-games", "0"]
    assert main([*again, "--no-progress-bar"]) == 0, capsys.readouterr().err
    sessions = (run / "sessions.jsonl").read_text().splitlines()
    assert len(sessions) == 3 and json.loads(sessions[2])["started_at_step"] == steps


def tiny_run(tmp_path: Path, name: str, total: int, *extra: str) -> list[str]:
    """``llama-rl train`` arguments for a tiny heads-up RLlib run against ``random``."""
    argv = ["train", "--backend", "rllib", "--players", "2", "--opponents", "random", "--total-timesteps", str(total)]
    argv += ["--n-envs", "8", "--n-steps", "32", "--batch-size", "128", "--n-epochs", "1", "--net-arch", "8"]
    argv += ["--eval-every", "0", "--run-dir", str(tmp_path), "--run-name", name, "--final-eval-games", "0"]
    return [*argv, *extra, "--no-progress-bar"]


def test_ctrl_c_saves_an_rllib_run(tmp_path, monkeypatch, capsys, shared_ray):
    """Ctrl-C saves a checkpoint and the model; a second Ctrl-C while they are written is
    held back, as on the SB3 trainer."""
    from ray.rllib.algorithms.algorithm import Algorithm

    from train.training.rllib import trainer as rllib_trainer

    real, real_save = Algorithm.train, rllib_trainer._save_checkpoint
    calls = {"k": 0}

    def train_then_interrupt(self):
        calls["k"] += 1
        if calls["k"] == 2:
            raise KeyboardInterrupt
        return real(self)

    def save_after_another_ctrl_c(algo, run, steps):
        signal.raise_signal(signal.SIGINT)  # the user presses Ctrl-C again while it saves
        return real_save(algo, run, steps)

    monkeypatch.setattr(Algorithm, "train", train_then_interrupt)
    monkeypatch.setattr(rllib_trainer, "_save_checkpoint", save_after_another_ctrl_c)
    code = main(tiny_run(tmp_path, "i", 100_000))
    out, err = capsys.readouterr()
    assert code == 130 and "interrupted at" in out and f"llama-rl train --resume {tmp_path / 'i'}" in out
    assert "still saving the checkpoint" in err
    summary = json.loads((tmp_path / "i" / "summary.json").read_text())
    assert summary["interrupted"] and 0 < summary["num_timesteps"] < 100_000
    assert (tmp_path / "i" / "model.npz").is_file()
    assert (tmp_path / "i" / "checkpoints" / f"rllib_{summary['num_timesteps']}").is_dir()


def test_a_ctrl_c_in_the_learners_update_is_resumed_at_the_steps_learned(tmp_path, monkeypatch, shared_ray):
    """A stop in the learner's update left that iteration's sampled steps in RLlib's
    metrics, which the final checkpoint saved: the resumed session's first iteration
    counted them with its own, a batch never learned from."""
    from ray.rllib.core.learner.learner_group import LearnerGroup

    from train.training import TrainConfig, resume_config, train
    from train.training.rllib import trainer as rllib_trainer

    real_update, real_steps = LearnerGroup.update, rllib_trainer._learner_steps
    calls = {"n": 0}

    def update_then_interrupt(self, *args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 2:
            raise KeyboardInterrupt
        return real_update(self, *args, **kwargs)

    monkeypatch.setattr(LearnerGroup, "update", update_then_interrupt)
    config = TrainConfig(
        backend="rllib",
        players=(2,),
        opponents="random",
        total_timesteps=100_000,
        n_envs=8,
        n_steps=32,
        batch_size=256,
        n_epochs=1,
        net_arch=(8,),
        eval_every=0,
        checkpoint_every=0,
        past_every=0,
        progress_bar=False,
        run_dir=str(tmp_path),
        run_name="u",
    )
    first = train(config)
    assert first.interrupted and first.num_timesteps > 0
    monkeypatch.setattr(LearnerGroup, "update", real_update)
    seen: list[tuple[int, int]] = []  # (steps counted, steps trained on) of each iteration

    def counted(result):  # type: ignore[no-untyped-def]
        seen.append((real_steps(result), int(result["learners"]["shared"]["num_module_steps_trained"])))
        return seen[-1][0]

    monkeypatch.setattr(rllib_trainer, "_learner_steps", counted)
    again = train(resume_config(tmp_path / "u", {"total_timesteps": first.num_timesteps + 1}))
    assert len(seen) == 1 and seen[0][0] == seen[0][1]  # one epoch on one minibatch: each step trained once
    assert again.num_timesteps == first.num_timesteps + seen[0][1]


def test_an_rllib_run_that_cannot_write_its_final_files_says_so_and_keeps_the_policy(
    tmp_path, monkeypatch, capsys, shared_ray
):
    """A full disk at the final save: one error line naming the run directory and the
    cause, and the policy exported to the temporary directory, never a traceback; it says
    the table sizes and rules the run trained at, as the run's model.npz does (the rescued
    file said nothing of them, and no checkpoint was saved at its step to read them from)."""
    from agents.ppo import load_actor
    from train.training.rllib import trainer as rllib_trainer

    def disk_full(algo, run, steps):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(rllib_trainer, "_save_checkpoint", disk_full)
    name = f"full-{os.getpid()}-{tmp_path.name}"
    code = main(tiny_run(tmp_path, name, 256, "--checkpoint-every", "0"))
    err = capsys.readouterr().err
    assert code == 1 and "Traceback" not in err, err
    assert f"cannot write the final files of {tmp_path / name} ([Errno 28] No space left on device)" in err
    rescued = Path(err.split("the current policy was saved to ")[1].split(" instead")[0])
    try:
        assert rescued.parent == Path(tempfile.gettempdir()) and rescued.name.startswith(f"llama-rl-rescue-{name}-")
        obs, masks = real_batch(20, seed=2)
        agent = agents.make("ppo", path=str(rescued))
        assert all(masks[i, agent.act(o, m)] for i, (o, m) in enumerate(zip(obs, masks, strict=True)))
        actor = load_actor(rescued)
        assert actor.table_sizes == (2,) and actor.trained_rules == {"end_score": (40,), "hand_size": (6,)}
    finally:
        rescued.unlink(missing_ok=True)
    assert not (tmp_path / name / "model.npz").exists() and not (tmp_path / name / ".lock").exists()


def test_sigterm_saves_an_rllib_run_although_ray_installs_its_own_handler(tmp_path):
    """ray.init replaces SIGTERM's handler with one that dies at once; the trainer puts
    ``llama-rl train``'s back, so SIGTERM saves a checkpoint as Ctrl-C does."""
    import subprocess
    import sys

    script = (
        "import os, signal, sys\n"
        "from ray.rllib.algorithms.algorithm import Algorithm\n"
        "from train.cli import main\n"
        "real, calls = Algorithm.train, [0]\n"
        "def train_then_terminate(self):\n"
        "    calls[0] += 1\n"
        "    if calls[0] == 2:\n"
        "        os.kill(os.getpid(), signal.SIGTERM)\n"
        "    return real(self)\n"
        "Algorithm.train = train_then_terminate\n"
        "sys.exit(main(sys.argv[1:]))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", script, *tiny_run(tmp_path, "t", 100_000)], capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 130, (proc.stdout, proc.stderr[-3000:])
    assert "interrupted (SIGTERM)" in proc.stderr and "interrupted at" in proc.stdout
    summary = json.loads((tmp_path / "t" / "summary.json").read_text())
    assert summary["interrupted"] and 0 < summary["num_timesteps"] < 100_000
    assert (tmp_path / "t" / "checkpoints" / f"rllib_{summary['num_timesteps']}").is_dir()


def test_an_address_where_nothing_answers_is_refused_before_ray_retries(tmp_path, capsys, monkeypatch, no_ray_running):
    """Ray retried an unreachable cluster for minutes before it said anything."""
    import ray

    def no_init(*args, **kwargs):
        raise AssertionError("ray.init called")

    monkeypatch.setattr(ray, "init", no_init)
    argv = ["--backend", "rllib", "--players", "2", "--total-timesteps", "1000", "--no-progress-bar"]
    for address in ("127.0.0.1:1", "ray://127.0.0.1:1"):
        code = main(["train", *argv, "--address", address, "--run-dir", str(tmp_path), "--run-name", "a"])
        err = capsys.readouterr().err
        assert code == 2 and f"nothing answers at {address} (127.0.0.1:1: " in err, err
        assert not (tmp_path / "a").exists()


def test_a_ray_address_from_the_environment_is_named_as_such(tmp_path, capsys, monkeypatch, no_ray_running):
    """RAY_ADDRESS where nothing answers said "config key 'address' ... or leave --address
    out", though no --address was given: the message names RAY_ADDRESS and says to unset it."""
    import ray

    def no_init(*args, **kwargs):
        raise AssertionError("ray.init called")

    monkeypatch.setattr(ray, "init", no_init)
    monkeypatch.setenv("RAY_ADDRESS", "127.0.0.1:1")
    code = main(tiny_run(tmp_path, "env", 256))
    err = capsys.readouterr().err
    assert code == 2 and err.startswith(
        "llama-rl: error: RAY_ADDRESS: nothing answers at 127.0.0.1:1 (127.0.0.1:1: "
    ), err
    assert err.endswith("; start the cluster's head (ray start --head) or unset RAY_ADDRESS to train on a local Ray\n")
    assert "--address" not in err and not (tmp_path / "env").exists()


def test_a_clusters_address_is_not_carried_over_when_its_run_is_resumed(tmp_path):
    """A run trained with --address recorded it, and a resume after the cluster was gone
    went there again, refused with "leave --address out", which the user never gave."""
    from train.training import TrainConfig, resume_config
    from train.training.run_dir import write_json_atomic

    run = tmp_path / "c"
    (run / "checkpoints" / "rllib_256").mkdir(parents=True)
    trained = TrainConfig(backend="rllib", players=(2,), options={"address": "10.0.0.1:6379", "num_env_runners": 2})
    write_json_atomic(run / "config.json", trained.to_dict())
    resumed = resume_config(run, {"total_timesteps": 512})
    assert resumed.options.address == "" and resumed.options.num_env_runners == 2
    assert resume_config(run, {"address": "10.0.0.2:6379"}).options.address == "10.0.0.2:6379"


def test_resuming_an_rllib_runs_model_elsewhere_says_what_works(tmp_path, capsys):
    """An rllib run's model.npz resumed under another --run-name was told to "resume a copy
    of its model.zip", which it lacks, and a copied .npz that it "is not a usable
    checkpoint (it has no data and no policy.pth ...)"."""
    from train.training import TrainConfig, resume_config, train
    from train.training.run_dir import write_json_atomic

    run = tmp_path / "a1"
    (run / "checkpoints" / "rllib_256").mkdir(parents=True)
    write_json_atomic(run / "config.json", TrainConfig(backend="rllib", players=(2,)).to_dict())
    (run / "model.npz").write_bytes(b"weights")
    with pytest.raises(ValueError, match=re.escape(f"copy {run} to {tmp_path / 'x'} and resume the copy")):
        resume_config(run / "model.npz", {"run_name": "x"})
    loose = tmp_path / "policy.npz"
    loose.write_bytes(b"weights")
    refused = r"policy.npz is an exported policy \(.npz\), which cannot be resumed"
    assert main(["train", "--resume", str(loose), "--run-dir", str(tmp_path), "--run-name", "y"]) == 2
    assert re.search(refused, capsys.readouterr().err)
    # train() refuses it too, on either backend (it was "no RLlib checkpoint in" / "not a usable checkpoint")
    for backend in ("rllib", "sb3"):
        with pytest.raises(ValueError, match=refused):
            train(TrainConfig(backend=backend, players=(2,), resume=str(loose), run_dir=str(tmp_path), run_name="z"))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a1", "policy.npz"]


def test_games_that_the_env_runners_cannot_share_equally_are_said(tmp_path):
    """Each env runner got max(1, n_envs // runners) games without a word: --n-envs 1
    --num-env-runners 2 played 2 games, --n-envs 10 over 4 runners 8."""
    from train.training import TrainConfig
    from train.training.rllib.trainer import build_algorithm_config

    with pytest.raises(ValueError, match=re.escape("config key 'num_env_runners' (2) must be at most n_envs (1)")):
        TrainConfig(backend="rllib", players=(2,), n_envs=1, batch_size=64, options={"num_env_runners": 2}).validate()
    config = TrainConfig(backend="rllib", players=(2,), n_envs=10, options={"num_env_runners": 4})
    with pytest.warns(RuntimeWarning, match="n_envs 10 is no multiple of num_env_runners 4: each env runner plays 2"):
        assert build_algorithm_config(config, 0).num_envs_per_env_runner == 2
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        build_algorithm_config(TrainConfig(backend="rllib", players=(2,), n_envs=12, options={"num_env_runners": 4}), 0)


def test_resuming_a_clusters_run_without_address_warns_that_it_trains_locally(tmp_path, monkeypatch):
    """The address is a session's own: a cluster's run resumed without --address trained on
    a local Ray without a word. Ray and the training are stand-ins here."""
    import train.training.rllib.trainer as trainer
    from train.training import TrainConfig, resume_config
    from train.training.run_dir import write_json_atomic

    run = tmp_path / "c"
    (run / "checkpoints" / "rllib_256").mkdir(parents=True)
    trained = TrainConfig(backend="rllib", players=(2,), options={"address": "10.0.0.1:6379"})
    write_json_atomic(run / "config.json", trained.to_dict())
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    monkeypatch.setattr(trainer, "_resumed_checkpoint", lambda given, found, run: found[-1])
    monkeypatch.setattr(trainer, "ray_session", lambda run, address, **kwargs: contextlib.nullcontext())
    monkeypatch.setattr(trainer, "_train_rllib_locked", lambda *args: "trained")
    said = "resume: the run trained on 10.0.0.1:6379; this session trains on a local Ray: give --address to resume"
    with pytest.warns(RuntimeWarning) as caught:
        assert trainer.train_rllib(resume_config(run, {"total_timesteps": 512})) == "trained"
    assert [str(w.message) for w in caught if "trained on" in str(w.message)] == [f"{said} there"]
    for given, env in (({"address": "10.0.0.2:6379"}, None), ({}, "10.0.0.3:6379")):  # a cluster all the same
        if env:
            monkeypatch.setenv("RAY_ADDRESS", env)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            assert trainer.train_rllib(resume_config(run, {"total_timesteps": 512, **given})) == "trained"


def test_address_local_is_a_local_ray_of_the_runs_own(tmp_path, monkeypatch, capsys):
    """``--address local`` (Ray's word for a new local Ray) skipped what a local Ray gets:
    its CPUs counted, its files in the run directory, no token file in ~/.ray (it wrote
    /root/.ray/auth_token and /tmp/ray/session_*), and the check of runners against cores.
    Ray is a stand-in here; RAY_ADDRESS naming a cluster does not take it there."""
    import ray

    from train.training.rllib import trainer

    monkeypatch.delenv("RAY_AUTH_MODE", raising=False)
    monkeypatch.setenv("RAY_ADDRESS", "10.0.0.1:6379")
    running: list[dict] = []
    seen = {}
    monkeypatch.setattr(ray, "is_initialized", lambda: bool(running))
    monkeypatch.setattr(ray, "init", lambda **kwargs: running.append(kwargs))
    monkeypatch.setattr(ray, "shutdown", running.clear)
    monkeypatch.setattr(trainer, "usable_cores", lambda: 2)
    _stop_at_build(monkeypatch, trainer, lambda: seen.update(running[0], auth=os.environ.get("RAY_AUTH_MODE")))
    with pytest.raises(_Built):
        trainer.train_rllib(_small_rllib_config(tmp_path, "local", address="local"))
    assert seen["address"] == "local" and seen["num_cpus"] == 2 and seen["auth"] == "disabled"
    assert seen["_temp_dir"] == str(trainer.ray_link((tmp_path / "local" / "ray").resolve()))  # to the run's ray/
    assert main(tiny_run(tmp_path, "many", 256, "--address", "local", "--num-env-runners", "3")) == 2
    assert "config key 'num_env_runners' must be at most 2 on a local Ray" in capsys.readouterr().err


def test_rllib_without_the_extra_names_the_extra():
    import subprocess
    import sys

    script = (
        "import sys\n"
        "sys.modules['ray'] = None\n"
        "from train.cli import main\n"
        "sys.exit(main(['train', '--backend', 'rllib', '--run-dir', sys.argv[1]]))\n"
    )
    proc = subprocess.run([sys.executable, "-c", script, "unused"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1, proc.stderr
    assert install_hint("rllib") in proc.stderr and "Traceback" not in proc.stderr


# --------------------------------------------------------------------------- the env runner, no Ray running


def make_runner(opponents: dict[str, float], players=(2, 3, 4), n_envs: int = 6, seed: int = 0):
    from ray.tune.registry import register_env

    from train.training.config import TrainConfig
    from train.training.rllib.runner import LlamaEnvRunner
    from train.training.rllib.trainer import ENV_NAME, build_algorithm_config

    register_env(ENV_NAME, lambda env_config: LlamaMultiAgentEnv(env_config))
    config = TrainConfig(
        backend="rllib", players=players, opponents=opponents, n_envs=n_envs, n_steps=8, batch_size=16, net_arch=(8,)
    )
    with warnings.catch_warnings():  # every runner registers RLlib's env name with gymnasium again
        warnings.filterwarnings("ignore", message=".*Overriding environment rllib-multi-agent-env-v0")
        return LlamaEnvRunner(config=build_algorithm_config(config, seed))


def chunks_by_seat(episodes) -> dict[tuple[str, str], list]:
    seats: dict[tuple[str, str], list] = {}
    for e in episodes:
        seats.setdefault((e.multi_agent_episode_id, e.agent_id), []).append(e)
    return seats


@pytest.mark.parametrize("mix", [{"self": 1.0}, {"heuristic": 1.0, "self": 1.0}])
def test_runner_returns_each_learning_seats_moves_with_their_outcomes(mix):
    """Every chunk is one seat's consecutive moves: observations one longer than actions,
    legal actions only, log-probabilities of the masked logits stored, the shared module;
    a sample returns exactly the steps asked for, and a seat's chunks join up."""
    runner = make_runner(mix)
    history: list = []
    for _ in range(4):
        episodes = runner.sample(num_timesteps=60, explore=True)
        assert sum(len(e) for e in episodes) == 60
        history += episodes
        for e in episodes:
            assert e.module_id == "shared" and e.agent_id.startswith("player_")
            obs = e.get_observations()
            actions = e.get_actions()
            assert len(obs["observation"]) == len(actions) + 1 == len(e.get_rewards()) + 1
            masks = obs["action_mask"][:-1]
            assert masks[np.arange(len(actions)), actions].all()  # every move legal
            logits = e.get_extra_model_outputs(Columns.ACTION_DIST_INPUTS)
            logp = torch.log_softmax(torch.from_numpy(logits), dim=1).numpy()[np.arange(len(actions)), actions]
            np.testing.assert_allclose(e.get_extra_model_outputs(Columns.ACTION_LOGP), logp, rtol=1e-4, atol=1e-5)
    for chunks in chunks_by_seat(history).values():
        for a, b in itertools.pairwise(chunks):
            assert not a.is_done and b.t_started == a.t_started + len(a)
            np.testing.assert_array_equal(a.get_observations(-1)["observation"], b.get_observations(0)["observation"])
    assert any(e.is_terminated for e in history)
    if "self" in mix and len(mix) == 1:  # every seat learns: each game's seats all report
        games = {e.multi_agent_episode_id for e in history if e.is_terminated}
        seats = {g: {a for (gg, a) in chunks_by_seat(history) if gg == g} for g in games}
        assert all(len(s) >= 2 for s in seats.values())


def test_runner_pays_each_finished_game_its_win_shares():
    """Over a game's chunks, each learning seat's rewards add up to its share of the win
    in that game's final scores, and its observations are the ones the env showed it."""
    runner = make_runner({"heuristic": 1.0, "self": 1.0}, players=(2, 3), n_envs=1)
    env = runner._llama_envs[0]
    tables, shown = [], []
    real_reset, real_obs = env.reset, env._obs

    def reset(**kwargs):
        shown.append({})
        out = real_reset(**kwargs)
        tables.append(env.table)
        return out

    def obs(seat):
        o = real_obs(seat)
        shown[-1].setdefault(f"player_{seat}", []).append(o["observation"])
        return o

    env.reset, env._obs = reset, obs
    history: list = []
    for _ in range(8):
        history += runner.sample(num_timesteps=40, explore=True)
    games = list(dict.fromkeys(e.multi_agent_episode_id for e in history))  # in the order they were dealt
    chunks = chunks_by_seat(history)
    finished = [g for g in games if any(e.is_terminated for e in history if e.multi_agent_episode_id == g)]
    assert len(finished) >= 5
    for k, game in enumerate(games[: len(finished)]):
        table = tables[k]
        assert table.game.game_over
        shares = game_rewards(table.game.scores)
        for (g, aid), seat_chunks in chunks.items():
            if g != game:
                continue
            seat = int(aid.rsplit("_", 1)[1])
            assert sum(float(np.sum(c.get_rewards())) for c in seat_chunks) == pytest.approx(shares[seat])
            seen = np.concatenate([c.get_observations()["observation"][:-1] for c in seat_chunks])
            seen = np.concatenate([seen, seat_chunks[-1].get_observations(-1)["observation"][None]])
            np.testing.assert_array_equal(seen, np.array(shown[k][aid]))


def test_runner_deals_each_env_its_own_games():
    """RLlib builds a vector's envs from one EnvContext: without a stream of its own each
    env would deal the very same games (it did: the runner seeds them on the first deal)."""
    deals = []
    for seed in (0, 0, 1):
        runner = make_runner({"heuristic": 1.0}, players=(2, 3, 4), n_envs=8, seed=seed)
        runner.sample(num_timesteps=8, explore=True)
        deals.append([json.dumps(env.table.game.to_dict(), sort_keys=True) for env in runner._llama_envs])
    assert len(set(deals[0])) == 8  # eight envs, eight different games
    assert deals[0] == deals[1] and deals[0] != deals[2]  # reproducible from the env seed


def test_runner_random_actions_are_uniform_over_the_legal_ones():
    runner = make_runner({"heuristic": 1.0}, n_envs=4)
    for e in runner.sample(num_timesteps=40, random_actions=True):
        masks = e.get_observations()["action_mask"][:-1]
        actions = e.get_actions()
        assert masks[np.arange(len(actions)), actions].all()
        np.testing.assert_allclose(
            e.get_extra_model_outputs(Columns.ACTION_LOGP), -np.log(masks.sum(axis=1)), rtol=1e-5
        )


def test_rllibs_sample_goes_through_the_runners_own_sampling():
    """What train/training/rllib/_internals.py assumes of a running RLlib (1, 2): its public
    ``sample`` reaches the runner's ``sample_episodes`` through the private ``_sample`` and
    returns its episodes, and making the env again asks for new games."""
    import ray

    runner = make_runner({"heuristic": 1.0}, n_envs=2)
    calls = []
    real = runner.sample_episodes

    def spy(**kwargs):
        calls.append(kwargs)
        return real(**kwargs)

    runner.sample_episodes = spy
    episodes = runner.sample(num_timesteps=10, explore=False)
    broken = f"Ray {ray.__version__}: MultiAgentEnvRunner.sample no longer calls _sample as rllib/_internals.py assumes"
    assert calls == [
        {"num_timesteps": 10, "num_episodes": None, "explore": False, "random_actions": False, "force_reset": False}
    ], broken
    assert sum(len(e) for e in episodes) == 10, broken
    assert not runner.needs_reset
    with warnings.catch_warnings():  # RLlib registers its env name with gymnasium again
        warnings.filterwarnings("ignore", message=".*Overriding environment rllib-multi-agent-env-v0")
        runner.make_env()
    assert runner.needs_reset, f"Ray {ray.__version__}: make_env no longer sets _needs_initial_reset"


def test_runner_samples_whole_games_when_asked_for_episodes():
    runner = make_runner({"heuristic": 1.0, "self": 1.0}, n_envs=4)
    episodes = runner.sample(num_episodes=5, explore=False)
    assert episodes and all(e.is_terminated and e.t_started == 0 for e in episodes)
    assert len({e.multi_agent_episode_id for e in episodes}) >= 5


def test_runner_counts_the_learner_decisions_it_returned():
    """The counts RLlib and the trainer read (env steps, each agent's, the shared module's)
    are the steps returned, what the learner trains on: the moves carried over from one
    sample are counted in the next, which returns them, and those that one sample makes
    beyond the steps asked for are not counted yet."""
    runner = make_runner({"self": 1.0})
    for _ in range(3):
        episodes = runner.sample(num_timesteps=40, explore=True)
        per_agent: dict[str, int] = {}
        for e in episodes:
            per_agent[e.agent_id] = per_agent.get(e.agent_id, 0) + len(e)
        metrics = runner.get_metrics()
        assert sum(per_agent.values()) == 40 and metrics["num_env_steps_sampled"] == 40
        assert metrics["num_module_steps_sampled"]["shared"] == 40
        assert {a: int(n) for a, n in metrics["num_agent_steps_sampled"].items()} == per_agent
    assert sum(len(s.actions) for g in runner._games for s in g.seats.values()) > 0  # some moves carried on
    assert metrics["num_episodes"] >= 1 and metrics["episode_len_mean"] > 0


def test_rllibs_sampling_stops_at_the_train_batch():
    """What train/training/rllib/_internals.py assumes of RLlib's PPO (6): it samples
    until the runners' logged env steps reach the train batch. They counted the moves
    made in the call, fewer than the steps returned when moves carried over, so PPO
    sampled a second round and trained on twice the batch asked for."""
    from types import SimpleNamespace

    import ray
    from ray.rllib.execution.rollout_ops import synchronous_parallel_sample

    for mix in ({"self": 1.0}, {"heuristic": 1.0, "self": 1.0}):
        runner = make_runner(mix, players=(2, 3, 4), n_envs=6)
        group = SimpleNamespace(num_remote_workers=lambda: 0, local_env_runner=runner)
        batch = runner.config.total_train_batch_size
        for _ in range(6):  # as PPO's training_step calls it
            episodes, _ = synchronous_parallel_sample(
                worker_set=group, max_env_steps=batch, _uses_new_env_runners=True, _return_metrics=True
            )
            assert sum(len(e) for e in episodes) == batch, f"Ray {ray.__version__}, opponents {mix}"


def test_runner_reports_whole_games_in_its_episode_metrics():
    """A game cut into chunks over several samples counts all its moves and rewards in
    RLlib's episode length and return, not its last chunk's."""
    runner = make_runner({"heuristic": 1.0, "self": 1.0}, players=(4,), n_envs=2)
    history: list = []
    for _ in range(12):
        history += runner.sample(num_timesteps=6, explore=True)
    finished = {e.multi_agent_episode_id for e in history if e.is_terminated}
    per_game = {g: [e for e in history if e.multi_agent_episode_id == g] for g in finished}
    assert any(any(not e.is_done for e in eps) for eps in per_game.values())  # some games were cut
    lengths = sorted(sum(len(e) for e in eps) for eps in per_game.values())
    returns = sorted(round(sum(float(np.sum(e.get_rewards())) for e in eps), 6) for eps in per_game.values())
    assert finished and len(runner._done_games) == len(finished)
    assert sorted(length for length, *_ in runner._done_games) == lengths
    assert sorted(round(ret, 6) for _, ret, *_ in runner._done_games) == returns
    metrics = runner.get_metrics()
    assert float(metrics["episode_len_mean"]) == pytest.approx(float(np.mean(lengths)))


def test_train_batch_matches_rllibs_own_pipeline_on_the_runners_episodes():
    """The one-piece train batch (rllib_batch) holds what RLlib's default PPO learner
    pipeline makes of the same episodes on its real (unmasked) rows: the same
    observations, actions, log-probabilities and value targets; advantages are the same
    up to the normalisation (RLlib's statistics also count its phantom rows)."""
    import copy

    from ray.rllib.connectors.learner import AddOneTsToEpisodesAndTruncate, GeneralAdvantageEstimation
    from ray.rllib.core.rl_module.multi_rl_module import MultiRLModuleSpec
    from ray.rllib.evaluation.postprocessing import Postprocessing

    from train.training.rllib.batch import EpisodesToTrainBatch

    runner = make_runner({"heuristic": 1.0, "self": 1.0}, players=(2, 3, 4))
    runner.sample(num_timesteps=48, explore=True)
    episodes = runner.sample(num_timesteps=96, explore=True)  # cut chunks, finished ones and continuations
    assert any(e.is_terminated for e in episodes) and any(not e.is_done for e in episodes)
    spec = RLModuleSpec(
        module_class=MaskedPPOModule,
        observation_space=SPACE,
        action_space=gym.spaces.Discrete(9),
        model_config={"fcnet_hiddens": [8], "fcnet_activation": "tanh", "head_fcnet_hiddens": []},
    )
    module = MultiRLModuleSpec(rl_module_specs={"shared": spec}).build()
    gamma, lam = 0.99, 0.95
    mine = EpisodesToTrainBatch(gamma=gamma, lambda_=lam)(rl_module=module, batch={}, episodes=episodes)["shared"]

    config = runner.config.copy(copy_frozen=False)
    config.add_default_connectors_to_learner_pipeline = True
    config._learner_connector = None
    env = runner._llama_envs[0]
    pipeline = config.build_learner_connector(
        input_observation_space=gym.spaces.Dict(env.observation_spaces),
        input_action_space=gym.spaces.Dict(env.action_spaces),
    )
    pipeline.prepend(AddOneTsToEpisodesAndTruncate())
    pipeline.append(GeneralAdvantageEstimation(gamma=gamma, lambda_=lam))
    theirs = pipeline(rl_module=module, batch={}, episodes=copy.deepcopy(episodes), explore=False, shared_data={})
    theirs = theirs["shared"]
    real = theirs[Columns.LOSS_MASK].numpy().astype(bool)
    assert real.sum() == len(mine[Columns.ACTIONS]) == 96
    for key in ("observation", "action_mask"):
        np.testing.assert_array_equal(mine[Columns.OBS][key].numpy(), theirs[Columns.OBS][key].numpy()[real])
    for column in (Columns.ACTIONS, Columns.ACTION_LOGP, Columns.ACTION_DIST_INPUTS):
        np.testing.assert_allclose(mine[column].numpy(), theirs[column].numpy()[real], rtol=1e-6)
    targets = theirs[Postprocessing.VALUE_TARGETS].numpy()[real]
    np.testing.assert_allclose(mine[Postprocessing.VALUE_TARGETS].numpy(), targets, rtol=1e-5, atol=1e-6)
    values = module["shared"].compute_values({Columns.OBS: mine[Columns.OBS]}).detach().numpy()
    raw = targets - values
    expected = (raw - raw.mean()) / max(1e-4, raw.std())
    np.testing.assert_allclose(mine[Postprocessing.ADVANTAGES].numpy(), expected, rtol=1e-4, atol=1e-5)


# --------------------------------------------------------------------------- the privileged critic


def test_hidden_state_holds_the_others_hands_and_the_draw_pile():
    from train.training.rllib.env import HIDDEN_SIZE, hidden_state

    rng = np.random.default_rng(3)
    for n in (2, 4, 6):
        g = LlamaGame(n, rng=n)
        for _ in range(int(rng.integers(0, 12))):  # somewhere into the round
            if g.game_over:
                break
            legal = g.legal_actions()
            g.step(legal[int(rng.integers(len(legal)))])
        seat = int(rng.integers(n))
        h = hidden_state(g, seat)
        assert h.shape == (HIDDEN_SIZE,) and h.dtype == np.float32
        hands = h[:35].reshape(5, 7) * 8
        for k in range(1, n):
            assert hands[k - 1].tolist() == g.hand_counts((seat + k) % n)[1:]
        assert not hands[n - 1 :].any()  # absent seats
        pile = np.bincount(g.draw_pile, minlength=8)[1:]
        assert (h[35:42] * 8).tolist() == pile.tolist()
        nxt = h[42:]
        assert nxt.sum() == (1 if g.draw_pile else 0) and (not g.draw_pile or nxt[g.draw_pile[-1] - 1] == 1)


def test_privileged_env_adds_the_critic_input_and_keeps_the_observation():
    from train.training.rllib.env import HIDDEN_SIZE, hidden_state

    plain = LlamaMultiAgentEnv({"players": [4], "opponents": {"heuristic": 1.0}, "seed": 5})
    env = LlamaMultiAgentEnv({"players": [4], "opponents": {"heuristic": 1.0}, "seed": 5, "privileged_critic": True})
    space = env.observation_spaces["player_0"]
    assert space["critic"].shape == (OBS_SIZE + HIDDEN_SIZE,) and "critic" not in plain.observation_spaces["player_0"]
    obs, _ = env.reset(seed=1)
    ref, _ = plain.reset(seed=1)
    for _ in range(30):
        (aid, o), (_, r) = next(iter(obs.items())), next(iter(ref.items()))
        np.testing.assert_array_equal(o["observation"], r["observation"])  # the policy's input is unchanged
        seat = int(aid.rsplit("_", 1)[1])
        np.testing.assert_array_equal(
            o["critic"], np.concatenate([o["observation"], hidden_state(env.table.game, seat)])
        )
        assert space.contains(o)
        action = int(np.flatnonzero(o["action_mask"])[0])
        obs, _, done, _, _ = env.step({aid: action})
        ref, _, _, _, _ = plain.step({aid: action})
        if done["__all__"]:
            break


def build_privileged_module(hidden=(16, 16)) -> MaskedPPOModule:
    from train.training.rllib.env import HIDDEN_SIZE

    critic = gym.spaces.Box(0.0, 10.0, (OBS_SIZE + HIDDEN_SIZE,), np.float32)
    spec = RLModuleSpec(
        module_class=MaskedPPOModule,
        observation_space=gym.spaces.Dict({**SPACE.spaces, "critic": critic}),
        action_space=gym.spaces.Discrete(9),
        model_config={
            "fcnet_hiddens": list(hidden),
            "fcnet_activation": "tanh",
            "head_fcnet_hiddens": [],
            "vf_share_layers": False,
            "critic_input_size": OBS_SIZE + HIDDEN_SIZE,
        },
    )
    return spec.build()


def test_privileged_critic_values_read_the_hidden_state_and_the_policy_does_not():
    from train.training.rllib.env import HIDDEN_SIZE

    module = build_privileged_module()
    obs, masks = real_batch(32, seed=2)
    rng = np.random.default_rng(0)
    hidden = [rng.random((len(obs), HIDDEN_SIZE), dtype=np.float32) for _ in range(2)]
    out = []
    for h in hidden:
        batch = {
            Columns.OBS: {
                "observation": torch.from_numpy(obs),
                "action_mask": torch.from_numpy(masks),
                "critic": torch.from_numpy(np.concatenate([obs, h], axis=1)),
            }
        }
        with torch.no_grad():
            train = module.forward_train(dict(batch))
            out.append(
                (
                    module.forward_inference(dict(batch))[Columns.ACTION_DIST_INPUTS].numpy(),
                    train[Columns.ACTION_DIST_INPUTS].numpy(),
                    module.compute_values(dict(batch)).numpy(),
                    module.compute_values(dict(batch), embeddings=train[Columns.EMBEDDINGS]).numpy(),
                )
            )
    (act0, train0, v0, e0), (act1, train1, v1, _) = out
    np.testing.assert_array_equal(act0, act1)  # the policy ignores what it may not see
    np.testing.assert_array_equal(train0, act0)
    np.testing.assert_allclose(e0, v0, rtol=1e-6)  # the loss's values are the connector's
    assert not np.allclose(v0, v1)  # the value reads the hidden state
    assert (act0[masks == 0] < -1e30).all()
    actor = actor_from_module(module, "tanh")
    np.testing.assert_allclose(actor.logits(obs, masks.astype(bool))[masks > 0], act0[masks > 0], rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match="obs\\['critic'\\]"):
        module.compute_values({Columns.OBS: {"observation": torch.from_numpy(obs)}})


def test_privileged_critic_needs_its_own_network():
    spec = RLModuleSpec(
        module_class=MaskedPPOModule,
        observation_space=SPACE,
        action_space=gym.spaces.Discrete(9),
        model_config={"fcnet_hiddens": [8], "critic_input_size": OBS_SIZE + 10},
    )
    with pytest.raises(ValueError, match="vf_share_layers"):
        spec.build()


def test_privileged_critic_is_an_rllib_option():
    from train.training.config import TrainConfig

    with pytest.raises(ValueError, match="'privileged_critic' is an option of backend 'rllib'"):
        TrainConfig(options={"privileged_critic": True})


def test_rllib_run_with_a_privileged_critic_trains_and_resumes(tmp_path, capsys, shared_ray):
    from ray.rllib.core.rl_module import RLModule

    from train.training.rllib.env import HIDDEN_SIZE

    common = ["--final-eval-games", "0", "--no-progress-bar"]
    args = [
        "train",
        "--backend",
        "rllib",
        "--privileged-critic",
        "--players",
        "2,4",
        "--opponents",
        "heuristic:1,self:1",
    ]
    args += ["--total-timesteps", "1024", "--n-envs", "8", "--n-steps", "64", "--batch-size", "256", "--n-epochs", "1"]
    args += ["--net-arch", "16", "--eval-every", "0", "--checkpoint-every", "0", "--run-dir", str(tmp_path)]
    assert main([*args, "--run-name", "p", *common]) == 0, capsys.readouterr().err
    run = tmp_path / "p"
    capsys.readouterr()
    assert main(["train", "--resume", str(run), "--no-privileged-critic", *common]) == 2  # its critic's input is fixed
    assert "'privileged_critic' cannot change when resuming" in capsys.readouterr().err
    assert main(["train", "--resume", str(run), "--total-timesteps", "2048", *common]) == 0, capsys.readouterr().err
    summary = json.loads((run / "summary.json").read_text())
    assert summary["num_timesteps"] >= 2048 and summary["illegal_actions"] == 0
    newest = max((run / "checkpoints").iterdir(), key=lambda p: int(p.name.split("_")[1]))
    module = RLModule.from_checkpoint(str(newest / "learner_group" / "learner" / "rl_module" / "shared"))
    linear = [m for m in module.encoder.critic_encoder.modules() if isinstance(m, torch.nn.Linear)]
    assert linear[0].in_features == OBS_SIZE + HIDDEN_SIZE  # restored with its privileged input
    assert agents.make("ppo", path=str(run)).actor.obs_size == OBS_SIZE  # the agent reads the observation only


def test_the_rllib_env_plays_the_rules_of_the_config():
    from llama_env.engine import Rules
    from train.training.config import TrainConfig
    from train.training.rllib.trainer import build_algorithm_config

    env = LlamaMultiAgentEnv(
        {"players": [2, 6], "opponents": {"heuristic": 1.0}, "rules": {"end_score": 30, "hand_size": 5}}
    )
    for seed in range(6):
        env.reset(seed=seed)
        game = env.table.game
        assert game.rules == Rules(game.num_players, 30, 5)
    config = TrainConfig(backend="rllib", players=(2, 6), end_score=30, hand_size=5).validate()
    assert build_algorithm_config(config, 0).env_config["rules"] == {"end_score": 30, "hand_size": 5}
    with pytest.raises(ValueError, match="hand_size must be between 1 and 9 for 6 players"):
        LlamaMultiAgentEnv({"players": [2, 6], "rules": {"hand_size": 12}})


def test_an_rllib_run_stops_when_its_evaluation_beats_the_target(tmp_path, capsys, shared_ray):
    """stop_win_share stops RLlib training too, at the first evaluation above it on its deals
    and on a second set of fresh ones."""
    args = ["train", "--backend", "rllib", "--players", "2", "--opponents", "random", "--eval-opponent", "random"]
    args += ["--total-timesteps", "20000", "--n-envs", "16", "--n-steps", "64", "--batch-size", "256"]
    args += ["--n-epochs", "1", "--net-arch", "16,16", "--checkpoint-every", "0", "--past-every", "0"]
    args += ["--eval-every", "1024", "--eval-games", "40", "--eval-players", "2", "--stop-win-share", "0.05"]
    code = main([*args, "--run-dir", str(tmp_path), "--run-name", "s", "--no-progress-bar"])
    assert code == 0
    assert "stopped early" in capsys.readouterr().out
    summary = json.loads((tmp_path / "s" / "summary.json").read_text())
    rows = [json.loads(line) for line in (tmp_path / "s" / "eval.jsonl").read_text().splitlines()]
    assert summary["stopped_early"] and summary["num_timesteps"] < 20000
    stops = [r["ci_low_2p"] >= 0.05 and r.get("confirm_ci_low_2p", -1) >= 0.05 for r in rows]
    assert stops == [False] * (len(rows) - 1) + [True] and "confirm_win_share_2p" in rows[-1]


def test_a_new_rllib_run_stopped_while_ray_starts_leaves_no_folder_behind(tmp_path, monkeypatch, capsys):
    """Ctrl-C during Ray's start left runs/<name>/ with Ray's files and an empty checkpoints/:
    the same --run-name was then refused as an existing run, and --resume found nothing."""
    import contextlib

    import train.training.rllib.trainer as trainer

    @contextlib.contextmanager
    def interrupted_start(run, address, **kwargs):
        (run.path / "ray" / "session_x").mkdir(parents=True)  # what Ray writes as it starts
        (run.path / "ray" / "session_x" / "log.txt").write_text("starting")
        raise KeyboardInterrupt
        yield  # pragma: no cover

    monkeypatch.setattr(trainer, "ray_session", interrupted_start)
    assert main(tiny_run(tmp_path, "int", 256)) == 130
    assert not (tmp_path / "int").exists()
    # said so, as a run stopped later before its first step is (it printed only "llama-rl: interrupted")
    said = f"interrupted at 0 steps: nothing learned yet, so nothing is saved; removing {tmp_path / 'int'}"
    assert capsys.readouterr().out.count(said) == 1


def test_a_new_rllib_run_stopped_after_it_saved_is_kept_and_not_said_removed(tmp_path, monkeypatch, capsys):
    """A Ctrl-C escaping a new run that saved (a second one as Ray stops, or one in the final
    save) printed 'nothing is saved; removing <run>' about the run it then kept."""
    import contextlib

    import train.training.rllib.trainer as trainer

    @contextlib.contextmanager
    def ray_up(run, address, **kwargs):  # type: ignore[no-untyped-def]
        yield

    def saved_then_interrupted(config, run, resume_from, stopping):  # type: ignore[no-untyped-def]
        (run.checkpoints_dir / "rllib_512").mkdir(parents=True)
        (run.checkpoints_dir / "rllib_512" / "state.pkl").write_bytes(b"s")
        (run.path / "model.npz").write_bytes(b"w")
        raise KeyboardInterrupt

    monkeypatch.setattr(trainer, "ray_session", ray_up)
    monkeypatch.setattr(trainer, "_train_rllib_locked", saved_then_interrupted)
    assert main(tiny_run(tmp_path, "kept", 1024)) == 130
    assert (tmp_path / "kept" / "model.npz").exists() and (tmp_path / "kept" / "checkpoints" / "rllib_512").exists()
    assert "nothing is saved" not in capsys.readouterr().out


class _Built(Exception):
    """Raised by a stand-in algorithm config once ``train_rllib`` comes to building it."""


def _stop_at_build(monkeypatch, trainer, seen=lambda: None):  # type: ignore[no-untyped-def]
    """``train_rllib`` ends where it builds its algorithm (``_Built``), ``seen()`` called first."""

    def build_algo():  # type: ignore[no-untyped-def]
        seen()
        raise _Built

    monkeypatch.setattr(
        trainer, "build_algorithm_config", lambda config, seed: type("C", (), {"build_algo": build_algo})
    )


def _small_rllib_config(tmp_path, name, **options):  # type: ignore[no-untyped-def]
    """A 64-step heads-up rllib run ``name`` in ``tmp_path`` against ``heuristic``."""
    from train.training.config import TrainConfig

    extra = {"options": options} if options else {}
    return TrainConfig(
        backend="rllib",
        players=(2,),
        opponents="heuristic",
        total_timesteps=64,
        run_dir=str(tmp_path),
        run_name=name,
        **extra,
    )


def test_an_rllib_run_puts_back_the_process_state_it_changed(tmp_path, monkeypatch):
    """A run from Python left Tune's storage path on its run's folder (the caller's
    next Algorithm logged into an old run) and RAY_AUTH_MODE=disabled in os.environ (the
    caller's next ray.init started without auth). Ray and RLlib are stand-ins here: the
    algorithm fails as it is built, when both are set."""
    import ray
    import ray.tune.trainable.trainable as trainable

    from train.training.rllib import trainer

    monkeypatch.delenv("RAY_AUTH_MODE", raising=False)
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    storage = trainable.DEFAULT_STORAGE_PATH
    running = []
    seen = {}
    monkeypatch.setattr(ray, "is_initialized", lambda: bool(running))
    monkeypatch.setattr(ray, "init", lambda **kwargs: running.append(kwargs))
    monkeypatch.setattr(ray, "shutdown", running.clear)

    def record() -> None:
        seen["storage"], seen["auth"] = trainable.DEFAULT_STORAGE_PATH, os.environ.get("RAY_AUTH_MODE")

    _stop_at_build(monkeypatch, trainer, record)
    config = _small_rllib_config(tmp_path, "state")
    with pytest.raises(_Built):
        trainer.train_rllib(config)
    assert seen["auth"] == "disabled" and seen["storage"] != storage
    # an empty log folder of its own, removed after the session (it was the run's ray_results/, left empty)
    assert tmp_path not in Path(seen["storage"]).parents and not Path(seen["storage"]).exists()
    assert storage == trainable.DEFAULT_STORAGE_PATH and "RAY_AUTH_MODE" not in os.environ
    monkeypatch.setenv("RAY_AUTH_MODE", "token")  # a caller's own setting is its own
    with pytest.raises(_Built):
        trainer.train_rllib(config)
    assert seen["auth"] == "token" and os.environ["RAY_AUTH_MODE"] == "token"


def test_an_rllib_run_gives_sigterm_back_after_ray_shuts_down(tmp_path, monkeypatch):
    """ray.shutdown() sets SIGTERM back to the system's default, beneath Python: after an
    rllib run SIGTERM killed the process at once (exit 143), the caller's handler never
    called, and ``llama-rl train`` died without a word in its final evaluation. Whatever
    SIGTERM was before the session is put back. Ray is a stand-in here, which does to
    SIGTERM what Ray does (its own handler at ray.init, the default at ray.shutdown)."""
    import ray

    from train.training.rllib import trainer

    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    running = []

    def init(**kwargs):  # type: ignore[no-untyped-def]
        signal.signal(signal.SIGTERM, lambda signum, frame: None)
        running.append(kwargs)

    def shutdown():  # type: ignore[no-untyped-def]
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        running.clear()

    monkeypatch.setattr(ray, "is_initialized", lambda: bool(running))
    monkeypatch.setattr(ray, "init", init)
    monkeypatch.setattr(ray, "shutdown", shutdown)
    _stop_at_build(monkeypatch, trainer)
    before = signal.getsignal(signal.SIGTERM)

    def mine(signum, frame):  # type: ignore[no-untyped-def]
        pass

    try:
        for k, handler in enumerate((mine, signal.SIG_IGN)):
            signal.signal(signal.SIGTERM, handler)
            with pytest.raises(_Built):
                trainer.train_rllib(_small_rllib_config(tmp_path, f"term{k}"))
            assert signal.getsignal(signal.SIGTERM) is handler
    finally:
        signal.signal(signal.SIGTERM, before)


def test_a_ctrl_c_while_ray_stops_after_the_save_is_held_back(tmp_path, monkeypatch, capsys):
    """RLlib's runners and Ray take seconds to stop after the final save, and a second
    Ctrl-C then lost the run's result: ``llama-rl train`` printed only "interrupted", not
    the run's line nor the command that continues it. One is held back there too, saying
    so, from RLlib's stop until Ray's is done; the next stops at once (each stop held one
    back on a count of its own: up to five presses). Ray and RLlib are stand-ins, pressed
    as they stop."""
    import ray

    from train.training.rllib import trainer
    from train.training.run_dir import signal_handler

    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    running = []
    stopped = []

    def press_and(then, presses=1):  # type: ignore[no-untyped-def]
        def stop() -> None:
            for _ in range(presses):
                signal.raise_signal(signal.SIGINT)  # the user presses Ctrl-C again as it stops
            stopped.append(then())

        return stop

    def algo_stopping(presses):  # type: ignore[no-untyped-def]
        algo = type("Algo", (), {"stop": staticmethod(press_and(lambda: "algo", presses))})()
        monkeypatch.setattr(
            trainer, "build_algorithm_config", lambda config, seed: type("C", (), {"build_algo": lambda: algo})
        )

    monkeypatch.setattr(ray, "is_initialized", lambda: bool(running))
    monkeypatch.setattr(ray, "init", lambda **kwargs: running.append(kwargs))
    monkeypatch.setattr(trainer, "_loop", lambda *args: "the result")
    with signal_handler(signal.SIGINT, signal.default_int_handler):
        for name, (in_algo, in_ray) in {"algo": (1, 0), "ray": (0, 1)}.items():
            algo_stopping(in_algo)
            monkeypatch.setattr(ray, "shutdown", press_and(running.clear, in_ray))
            try:
                assert trainer.train_rllib(_small_rllib_config(tmp_path, name)) == "the result"
            except KeyboardInterrupt:  # caught, or it would stop the whole test session
                pytest.fail(f"a Ctrl-C while {name} stopped lost the run's result")
            assert stopped == ["algo", None] and not running
            assert capsys.readouterr().err.count(f"\n{trainer.STOPPING_RAY}\n") == 1
            stopped.clear()
        # a second press while they stop, in RLlib's stop or Ray's: it stops at once
        for name, (in_algo, in_ray) in {"in-ray": (1, 1), "in-algo": (2, 0)}.items():
            algo_stopping(in_algo)
            monkeypatch.setattr(ray, "shutdown", press_and(running.clear, in_ray))
            with pytest.raises(KeyboardInterrupt):
                trainer.train_rllib(_small_rllib_config(tmp_path, name))
            assert capsys.readouterr().err.count(f"\n{trainer.STOPPING_RAY}\n") == 1
            running.clear()
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_an_env_runner_that_cannot_start_is_one_line_naming_its_error(tmp_path, monkeypatch, capsys):
    """An opponent that cannot be built on a remote env runner (its model file only on the
    driver's machine) ended the run in RLlib's ``IndexError: list index out of range``, or
    in the runner's own error of any type after Ray's traceback. It is one ``ValueError``
    line naming that error (``llama-rl: error:``, exit 2), and the new run is left out.
    RLlib is a stand-in, raising as it does when a runner fails in its constructor."""
    from ray.exceptions import RayActorError

    from train.training.rllib import trainer

    def build_algo():  # type: ignore[no-untyped-def]
        try:
            raise RayActorError()
        except RayActorError:  # RLlib raises the runner's own error from its RayActorError
            raise FileNotFoundError("model file /data/only-on-the-head.npz not found") from None

    monkeypatch.setattr(
        trainer, "build_algorithm_config", lambda config, seed: type("C", (), {"build_algo": build_algo})
    )
    monkeypatch.setattr(trainer, "ray_session", lambda run, address, **kwargs: contextlib.nullcontext())
    said = "an env runner failed to start (FileNotFoundError: model file /data/only-on-the-head.npz not found)"
    with pytest.raises(ValueError, match=f"^{re.escape(said)}$"):
        trainer.train_rllib(_small_rllib_config(tmp_path, "no-start"))
    assert main(tiny_run(tmp_path, "no-start", 256)) == 2
    assert capsys.readouterr().err == f"llama-rl: error: {said}\n"
    assert not (tmp_path / "no-start").exists()


def test_resuming_an_rllib_run_on_sb3_names_the_backend(tmp_path, capsys):
    """``--resume <an rllib run> --backend sb3`` said "config key 'num_env_runners' is an
    option of backend 'rllib' (this run uses 'sb3')", a flag never given: the run's own
    options met the new backend before the backend was checked. It names the backend."""
    from train.training.config import TrainConfig
    from train.training.resume import resume_config

    run = tmp_path / "r"
    run.mkdir()
    recorded = TrainConfig(backend="rllib", players=(2,), options={"num_env_runners": 2}, run_dir=str(tmp_path))
    (run / "config.json").write_text(json.dumps({**recorded.to_dict(), "run_name": "r"}))
    said = f"config key 'backend' cannot change when resuming {run}: the run was trained with 'rllib', the config "
    said += "asks for 'sb3'"
    with pytest.raises(ValueError, match=f"^{re.escape(said)}"):
        resume_config(run, {"backend": "sb3"})
    assert main(["train", "--resume", str(run), "--backend", "sb3", "--final-eval-games", "0"]) == 2
    assert said in capsys.readouterr().err
    assert resume_config(run, {"backend": "rllib"}).options.num_env_runners == 2


def test_more_env_runners_than_a_local_rays_cores_are_refused_before_ray_starts(
    tmp_path, monkeypatch, capsys, no_ray_running
):
    """A local Ray has one CPU a core and each env runner takes one: RLlib waited for the
    runners it had no CPU for with no time limit, and the run hung without a word."""
    import ray

    from train.training.rllib import trainer

    def init(**kwargs):
        raise AssertionError("Ray started")

    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    monkeypatch.setattr(ray, "init", init)
    monkeypatch.setattr(trainer, "usable_cores", lambda: 2)
    assert main(tiny_run(tmp_path, "many", 256, "--num-env-runners", "3")) == 2
    err = capsys.readouterr().err
    assert "config key 'num_env_runners' must be at most 2 on a local Ray, which has 2 cores" in err
    assert "got 3" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "many").exists()
    monkeypatch.setenv("RAY_ADDRESS", "10.0.0.1:6379")  # a cluster's CPUs are the cluster's to count
    trainer.check_local_cores(trainer.RllibOptions(num_env_runners=3))  # no error


def test_more_env_runners_than_a_clusters_cpus_are_said_before_rllib_waits_for_them(tmp_path, monkeypatch):
    """On a cluster (here a caller's own Ray, a stand-in) RLlib waits until it has a CPU
    for every env runner, as a cluster that scales up will; it says so first."""
    import ray

    from train.training.rllib import trainer

    monkeypatch.setattr(ray, "is_initialized", lambda: True)
    monkeypatch.setattr(ray, "cluster_resources", lambda: {"CPU": 2.0, "memory": 1e9})
    _stop_at_build(monkeypatch, trainer)
    config = _small_rllib_config(tmp_path, "cluster", num_env_runners=3)
    with pytest.warns(RuntimeWarning, match="num_env_runners 3: the Ray cluster has 2 CPUs"), pytest.raises(_Built):
        trainer.train_rllib(config)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        trainer._warn_short_of_cpus(2)


def test_quieting_rays_notices_keeps_everyone_elses_deprecation_warnings():
    """The filters for RLlib's notices about its own internals stay for the process: they
    match warnings raised in Ray's modules only (they hid every library's "has been
    deprecated" in a notebook that had trained once)."""
    from train.training.rllib.trainer import _quiet_ray

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        _quiet_ray()
        warnings.warn_explicit("f has been deprecated", DeprecationWarning, "x.py", 1, module="ray.rllib.algorithms")
        warnings.warn_explicit("g has been deprecated", DeprecationWarning, "y.py", 1, module="mylib.api")
        warnings.warn("h has been deprecated", DeprecationWarning, stacklevel=1)
    assert sorted(str(w.message) for w in caught) == ["g has been deprecated", "h has been deprecated"]


def test_rllibs_runner_failure_loggers_are_silenced_for_the_session_only(tmp_path, monkeypatch):
    """RLlib's loggers of a failed env runner's traceback are silenced while a run trains
    (it says what failed in a line); they stayed silenced for the process after it, a
    notebook's own RLlib work after a run included. Their levels are put back. Ray is a
    stand-in."""
    import logging

    import ray

    from train.training.rllib import trainer

    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    running: list[object] = []
    monkeypatch.setattr(ray, "is_initialized", lambda: bool(running))
    monkeypatch.setattr(ray, "init", lambda **kwargs: running.append(kwargs))
    monkeypatch.setattr(ray, "shutdown", running.clear)
    loggers = [logging.getLogger(name) for name in ("ray.rllib.utils.actor_manager", "ray.rllib.env.env_runner_group")]
    seen: list[int] = []
    _stop_at_build(monkeypatch, trainer, lambda: seen.extend(logger.level for logger in loggers))
    before = [logger.level for logger in loggers]
    try:
        loggers[0].setLevel(logging.WARNING)
        loggers[1].setLevel(logging.NOTSET)
        with pytest.raises(_Built):
            trainer.train_rllib(_small_rllib_config(tmp_path, "loggers"))
        assert seen == [logging.CRITICAL, logging.CRITICAL]
        assert [logger.level for logger in loggers] == [logging.WARNING, logging.NOTSET]
    finally:
        for logger, level in zip(loggers, before, strict=True):
            logger.setLevel(level)


def test_rays_socket_folder_is_short_enough_on_macos_and_a_long_one_is_named(monkeypatch, tmp_path):
    """On macOS the temporary folder (/var/folders/xx/<28 characters>/T) left Ray's
    socket paths at 134 bytes, over the 103 macOS takes: Ray failed to start with a
    traceback. The link now goes under /tmp there, as Ray's own does."""
    from train.training.rllib import trainer

    macos_temp = "/var/folders/zz/zyxvpxvq6csfxvn_n0000000000000/T"
    monkeypatch.setattr(tempfile, "gettempdir", lambda: macos_temp)
    monkeypatch.setattr(trainer.sys, "platform", "darwin")
    link = trainer.ray_link(tmp_path / "run" / "ray")
    assert link.parent == Path("/tmp")
    assert len(str(link)) + trainer.RAY_SOCKET_TAIL <= trainer.SOCKET_PATH_LIMIT
    monkeypatch.setattr(trainer.sys, "platform", "linux")
    with pytest.raises(ValueError, match=f"temporary folder {macos_temp} is too long a path for Ray's sockets"):
        trainer.ray_link(tmp_path / "run" / "ray")


@pytest.mark.slow
def test_an_rllib_resume_goes_past_a_truncated_newest_checkpoint(tmp_path, capsys):
    """A learner state cut short in the newest checkpoint ended the resume in a bare
    UnpicklingError traceback; it is skipped with a warning, as on sb3, and the run goes
    on from the checkpoint before it."""
    assert main(tiny_run(tmp_path, "cut", 512, "--checkpoint-every", "256")) == 0
    run = tmp_path / "cut"
    older, newest = sorted((run / "checkpoints").iterdir(), key=lambda p: int(p.name.split("_")[1]))[-2:]
    state = newest / "learner_group" / "learner" / "state.pkl"
    state.write_bytes(state.read_bytes()[: state.stat().st_size // 2])
    with pytest.warns(RuntimeWarning, match=f"resume: skipping {newest} "):
        code = main(["train", "--resume", str(run), "--total-timesteps", "1024", "--final-eval-games", "0"])
    assert code == 0, capsys.readouterr().err
    sessions = [json.loads(line) for line in (run / "sessions.jsonl").read_text().splitlines()]
    assert sessions[-1]["resumed_from"] == str(older) and sessions[-1]["ended_at_step"] >= 1024


def test_an_rllib_run_sends_no_past_snapshot_after_its_last_update(tmp_path, monkeypatch):
    """The past league was exported and sent to every env runner after the budget's last
    update, though no sampling followed: wasted work, and a runner dead by then could
    abort a finished run. RLlib is a stand-in here: each train() learns 32 steps."""
    from train.training.config import TrainConfig
    from train.training.rllib import trainer
    from train.training.rllib.env import SHARED_POLICY
    from train.training.run_dir import RunDir

    sent: list[int] = []
    steps = {"n": 0}

    class Env:
        decisions = illegal_total = 0

        def set_past_policies(self, snapshots):  # type: ignore[no-untyped-def]
            sent.append(steps["n"])

    runner = type("R", (), {"env": Env()})()

    class Algo:
        metrics = _StandInMetrics()
        env_runner_group = type(
            "G",
            (),
            {
                "foreach_env_runner": staticmethod(lambda fn: [fn(runner)]),
                "local_env_runner": runner,
                "num_remote_env_runners": staticmethod(lambda: 0),
            },
        )

        def train(self):  # type: ignore[no-untyped-def]
            steps["n"] += 32
            return {"env_runners": {"num_module_steps_sampled": {SHARED_POLICY: 32}}}

    monkeypatch.setattr(trainer, "export_actor", lambda algo, config: object())
    monkeypatch.setattr(trainer, "with_run_trained_at", lambda actor, file: actor)
    monkeypatch.setattr(trainer, "save_actor", lambda actor, path: None)
    monkeypatch.setattr(trainer, "_save_checkpoint", lambda algo, run, n: run.checkpoints_dir / f"rllib_{n}")
    config = TrainConfig(
        backend="rllib", players=(2,), opponents="heuristic:1,past:1", total_timesteps=96, past_every=32,
        eval_every=0, checkpoint_every=0, progress_bar=False, run_dir=str(tmp_path), run_name="past",
    )  # fmt: skip
    run = RunDir(tmp_path / "past")
    run.path.mkdir()
    result = trainer._loop(config, run, Algo(), None, 0, run.config_path, [])
    assert result.num_timesteps == 96 and not result.interrupted
    assert sent == [32, 64]  # before the second and third updates' sampling; none after the last


class _StandInMetrics:
    """RLlib's metrics logger (``algo.metrics``), a stand-in: its state, kept and put back."""

    def __init__(self) -> None:
        self.state: dict = {}

    def get_state(self) -> dict:
        return dict(self.state)

    def set_state(self, state: dict) -> None:
        self.state = dict(state)


class _StandInAlgo:
    """RLlib's algorithm, a stand-in for ``trainer._loop``: each ``train()`` learns 32 steps
    or does what ``iterations`` holds for it (an exception is raised, a number is the steps)."""

    def __init__(self, *iterations: object) -> None:
        self.iterations = list(iterations)
        self.metrics = _StandInMetrics()
        env = type("Env", (), {"decisions": 0, "illegal_total": 0, "set_past_policies": lambda self, s: None})()
        runner = type("R", (), {"env": env})()
        self.env_runner_group = type(
            "G",
            (),
            {
                "foreach_env_runner": staticmethod(lambda fn: [fn(runner)]),
                "local_env_runner": runner,
                "num_remote_env_runners": staticmethod(lambda: 0),
            },
        )

    def train(self):  # type: ignore[no-untyped-def]
        from train.training.rllib.env import SHARED_POLICY

        step = self.iterations.pop(0) if self.iterations else 32
        if isinstance(step, BaseException):
            raise step
        return {"env_runners": {"num_module_steps_sampled": {SHARED_POLICY: step}}}


def _stand_in_loop(tmp_path, monkeypatch, algo, name="fail"):  # type: ignore[no-untyped-def]
    """``trainer._loop`` of a 320-step run on ``algo``, RLlib's saving a stand-in; the run directory."""
    from train.training.config import TrainConfig
    from train.training.rllib import trainer
    from train.training.run_dir import RunDir

    def save(algo, run, n):  # type: ignore[no-untyped-def]
        (run.checkpoints_dir / f"rllib_{n}").mkdir(parents=True)
        return run.checkpoints_dir / f"rllib_{n}"

    monkeypatch.setattr(trainer, "export_actor", lambda algo, config: object())
    monkeypatch.setattr(trainer, "with_run_trained_at", lambda actor, file: actor)
    monkeypatch.setattr(trainer, "save_actor", lambda actor, path: Path(path).write_text("model"))
    monkeypatch.setattr(trainer, "_save_checkpoint", save)
    config = TrainConfig(
        backend="rllib", players=(2,), opponents="heuristic", total_timesteps=320, eval_every=0,
        checkpoint_every=0, progress_bar=False, run_dir=str(tmp_path), run_name=name,
    )  # fmt: skip
    run = RunDir(tmp_path / name)
    run.path.mkdir()
    return trainer._loop(config, run, algo, None, 0, run.config_path, [])


def _remote(exc: BaseException) -> BaseException:
    """``exc`` as a remote env runner's error reaches the trainer: Ray's RayTaskError, an
    instance of the error's class too, its message the runner's traceback."""
    from ray.exceptions import RayTaskError

    try:
        raise exc
    except BaseException as raised:  # noqa: BLE001 - any error a runner raises
        import traceback

        return RayTaskError("apply", traceback.format_exc(), raised).as_instanceof_cause()


def test_an_opponent_failing_on_an_env_runner_stops_the_run_and_saves_what_was_learned(tmp_path, monkeypatch):
    """An opponent raising in a remote env runner's games hung the run: RLlib restarted the
    runner a minute later, up to 1000 times, and the loop took iterations of 0 steps. The
    run now stops at once, saves the steps learned as Ctrl-C does and names the agent, as on
    sb3; RLlib, Ray's wrapping of the runner's error included, is a stand-in here."""
    from llama_env.table import AgentError
    from train.training import TrainingStopped

    failed = AgentError("agent 'flaky' at seat 1: RuntimeError: it broke", agent="flaky", seat=1)
    for name, error in (("local", failed), ("remote", _remote(failed))):
        with pytest.raises(TrainingStopped) as caught:
            _stand_in_loop(tmp_path, monkeypatch, _StandInAlgo(32, 32, error), name)
        run = tmp_path / name
        assert (
            str(caught.value)
            == f"agent 'flaky' at seat 1: RuntimeError: it broke; the 64 steps learned are saved in {run}"
        )
        assert caught.value.__cause__ is (failed if name == "local" else error.cause)  # type: ignore[attr-defined]
        assert caught.value.result is not None and caught.value.result.num_timesteps == 64
        summary = json.loads((run / "summary.json").read_text())
        assert summary["interrupted"] and summary["num_timesteps"] == 64
        assert (run / "checkpoints" / "rllib_64").is_dir() and (run / "model.npz").is_file()
    # nothing learned yet: the agent's own error, as on sb3 (a new run is then left out)
    with pytest.raises(AgentError, match="^agent 'flaky' at seat 1: RuntimeError: it broke$"):
        _stand_in_loop(tmp_path, monkeypatch, _StandInAlgo(_remote(failed)), "first")
    assert not (tmp_path / "first" / "checkpoints").exists()


def test_an_env_runner_that_dies_or_samples_nothing_stops_the_run(tmp_path, monkeypatch):
    """A runner killed (out of memory, kill -9) was restarted by RLlib a minute later, up to
    1000 times, and an iteration that sampled nothing counted as one that learned 0 steps:
    the run hung without a word. Both now stop it, saying so, the steps learned saved."""
    from ray.exceptions import ActorDiedError

    from train.training import TrainingStopped

    died = ActorDiedError()
    cases = {
        "died": (
            died,
            "an env runner stopped (ActorDiedError: The actor died unexpectedly before finishing this task.)",
        ),
        "bug": (_remote(KeyError("x")), "an env runner stopped (KeyError: 'x')"),
        "none": (0, "an RLlib iteration sampled no step (its env runners returned no games)"),
    }
    for name, (what, said) in cases.items():
        with pytest.raises(TrainingStopped) as caught:
            _stand_in_loop(tmp_path, monkeypatch, _StandInAlgo(32, what), name)
        assert str(caught.value) == f"{said} at 32 steps; the steps learned are saved in {tmp_path / name}"
        assert json.loads((tmp_path / name / "summary.json").read_text())["num_timesteps"] == 32
    with pytest.raises(TrainingStopped, match=r"^an env runner stopped \(ActorDiedError: .*\) before training began$"):
        _stand_in_loop(tmp_path, monkeypatch, _StandInAlgo(died), "at-once")


class _StandInRunners:
    """RLlib's env runner group, a stand-in: a local runner without games and remote ones,
    each ``(decisions, illegal actions)`` of its games, or the error Ray raises at a call to
    it; ``unhealthy`` holds the indexes RLlib took out of service (they are alive). A call
    raises a runner's error as RLlib's does (the first one), or returns object refs."""

    def __init__(self, runners: list[object], unhealthy: tuple[int, ...] = ()) -> None:
        self.runners, self.unhealthy = runners, unhealthy
        self.local_env_runner = type("R", (), {"env": None})()

    def num_remote_env_runners(self) -> int:
        return len(self.runners)

    def foreach_env_runner(self, fn, *, local_env_runner=True, healthy_only=True, return_obj_refs=False):  # type: ignore[no-untyped-def]
        results = [fn(self.local_env_runner)] if local_env_runner else []
        for k, runner in enumerate(self.runners):
            if healthy_only and k in self.unhealthy:
                continue
            if isinstance(runner, BaseException):
                if not return_obj_refs:
                    raise runner
                results.append(runner)
                continue
            decisions, illegal = runner  # type: ignore[misc]
            env = type("Env", (), {"decisions": decisions, "illegal_total": illegal})()
            results.append(fn(type("R", (), {"env": env})()))
        return results


def test_an_env_runner_dead_at_the_end_leaves_the_summary_counts_partial_not_missing(tmp_path, monkeypatch):
    """A remote env runner dead at the run's end (killed after its last sample, or by the
    SIGTERM ``timeout`` sends the process group) made the final save end in Ray's
    ActorDiedError traceback, after the checkpoint and the model: no summary.json, no line
    in sessions.jsonl. And the runner whose failure stopped a run was left out of the
    counts (taken out of service, though alive): 0 decisions sampled. The summary now
    counts every runner that answers and says how many did not. RLlib is a stand-in."""
    import ray
    from ray.exceptions import ActorDiedError

    from train.training import TrainingStopped

    monkeypatch.setattr(ray, "get", lambda ref: _raise(ref) if isinstance(ref, BaseException) else ref)
    algo = _StandInAlgo()
    algo.env_runner_group = _StandInRunners([(500, 0), ActorDiedError(), (700, 2)])
    result = _stand_in_loop(tmp_path, monkeypatch, algo, "dead")
    summary = json.loads((tmp_path / "dead" / "summary.json").read_text())
    assert summary["all_seats_decisions_sampled"] == 1200 and summary["illegal_actions"] == 2
    assert summary["env_runners_not_counted"] == 1 and result.num_timesteps == 320
    assert len((tmp_path / "dead" / "sessions.jsonl").read_text().splitlines()) == 1
    # the runner that failed, out of service but alive, is counted
    algo = _StandInAlgo(32, _remote(KeyError("x")))
    algo.env_runner_group = _StandInRunners([(500, 0), (700, 0)], unhealthy=(1,))
    with pytest.raises(TrainingStopped):
        _stand_in_loop(tmp_path, monkeypatch, algo, "failed")
    summary = json.loads((tmp_path / "failed" / "summary.json").read_text())
    assert summary["all_seats_decisions_sampled"] == 1200 and summary["env_runners_not_counted"] == 0


def _raise(exc: BaseException) -> None:
    raise exc


def test_an_env_runner_killed_is_said_with_the_reason_ray_gives(tmp_path, monkeypatch):
    """A runner's process killed (the node out of memory, say) was said as "an env runner
    stopped (ActorDiedError: The actor died unexpectedly before finishing this task.)", the
    reason Ray gives on a later line dropped; it is said now, its first sentence of detail
    (the node's memory figures left out). RLlib is a stand-in; Ray's error is built as Ray
    builds it."""
    from ray.core.generated.common_pb2 import ActorDiedErrorContext
    from ray.exceptions import ActorDiedError

    from train.training import TrainingStopped
    from train.training.rllib import trainer

    reason = (
        "The actor is dead because its worker process has died. Worker exit type: NODE_OUT_OF_MEMORY Worker exit "
        "detail: Task was killed due to the node running low on memory. Memory on the node (IP: 10.0.0.7) was 31GB "
        "/ 32GB."
    )
    context = ActorDiedErrorContext(
        class_name="LlamaEnvRunner", actor_id=b"\x01" * 16, pid=4242, node_ip_address="10.0.0.7", error_message=reason
    )
    with pytest.raises(TrainingStopped) as caught:
        _stand_in_loop(tmp_path, monkeypatch, _StandInAlgo(32, ActorDiedError(context)), "oom")
    assert str(caught.value) == (
        "an env runner stopped (ActorDiedError: The actor died unexpectedly before finishing this task. The actor is "
        "dead because its worker process has died. Worker exit type: NODE_OUT_OF_MEMORY Worker exit detail: Task was "
        f"killed due to the node running low on memory.) at 32 steps; the steps learned are saved in {tmp_path / 'oom'}"
    )
    killed = ActorDiedError(
        ActorDiedErrorContext(
            actor_id=b"\x02" * 16, error_message="The actor is dead because it was killed by `ray.kill`."
        )
    )
    assert str(trainer._failure(killed)) == (
        "an env runner stopped (ActorDiedError: The actor died unexpectedly before finishing this task. The actor is "
        "dead because it was killed by `ray.kill`.)"
    )


def test_env_runners_are_not_restarted_and_pass_their_error_on(monkeypatch):
    """RLlib restarted a failed runner after 60 s, up to 1000 times, and its ``apply`` ended
    a runner's process on any error (the trainer learned only that it died); a sample that
    took over 60 s was dropped. Now a failed runner stays out of service, its error (an
    opponent's AgentError) reaches the trainer, and a sample takes as long as it takes."""
    from ray.rllib.utils import actor_manager

    from llama_env.table import AgentError

    monkeypatch.setattr(actor_manager.time, "sleep", lambda s: None)  # RLlib's wait before a restart
    runner = make_runner({"heuristic": 1.0}, players=(2,), n_envs=2)
    config = runner.config
    assert config.restart_failed_env_runners is False and config.ignore_env_runner_failures is False
    assert config.sample_timeout_s is None

    def fail(runner):  # type: ignore[no-untyped-def]
        raise AgentError("agent 'x' at seat 1: RuntimeError: boom", agent="x", seat=1)

    with pytest.raises(AgentError, match="^agent 'x' at seat 1"):
        runner.apply(fail)
    assert runner.apply(lambda r, n: n + 1, 1) == 2
