"""PPO training end to end: config validation, a short run through the CLI (run
directory, config, checkpoints, resume, Ctrl-C), and the PPO agent it produces."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import numpy as np
import pytest

import agents
from agents.ppo import DEFAULT_MODEL, PPOAgent
from llama_env.gym_env import LlamaEnv
from train.cli import main
from train.cli.train import next_commands
from train.evaluation import evaluate
from train.training import train
from train.training.config import TrainConfig, config_from_dict, parse_opponents, parse_players
from train.training.presets import PRESETS
from train.training.sb3.vec_env import VEC_ENVS, BatchedLlamaVecEnv

SMOKE = ["train", "--preset", "smoke", "--final-eval-games", "0"]


def play_games(agent, num_players: int, games: int, seed: int = 0) -> int:
    """Play whole games with ``agent`` in seat 0 of the gym env (which raises on an
    illegal action); return the number of learner moves made."""
    env = LlamaEnv(num_players=num_players, opponents="random", seat="random")
    moves = 0
    for k in range(games):
        obs, info = env.reset(seed=seed + k)
        done = False
        while not done:
            mask = info["action_mask"]
            a = agent.act(obs, mask.astype(np.int8))
            assert mask[a], f"agent chose illegal action {a}"
            obs, _, done, _, info = env.step(a)
            moves += 1
    return moves


# --------------------------------------------------------------------------- config


def test_config_parsers():
    assert parse_players("2-6") == (2, 3, 4, 5, 6)
    assert parse_players("4") == (4,)
    assert parse_players("2,2,4") == (2, 2, 4)
    assert TrainConfig(players=4).validate().players == (4,)  # the Python API takes ints and lists too
    assert TrainConfig(players=[2, 6]).validate().players == (2, 6)
    assert TrainConfig(net_arch="64,32").net_arch == (64, 32)
    assert parse_opponents("heuristic:0.5,self:0.3,past") == {"heuristic": 0.5, "self": 0.3, "past": 1.0}
    for name, values in PRESETS.items():  # flat mappings of config keys, as config.json and the CLI give them
        config_from_dict(values)
        assert name


@pytest.mark.parametrize(
    "kw, key",
    [
        ({"players": "1-7"}, "players"),
        ({"players": "two"}, "players"),
        ({"opponents": "wizard:1"}, "opponents"),
        ({"opponents": "heuristic:x"}, "opponents"),
        ({"reward": "points"}, "reward"),
        ({"net_arch": "64,a"}, "net_arch"),
        ({"n_envs": 0}, "n_envs"),
        ({"gamma": 1.5}, "gamma"),
        ({"batch_size": 10**6}, "batch_size"),
        ({"n_steps": "64"}, "n_steps"),
        ({"activation": "gelu"}, "activation"),
        ({"eval_opponent": "wizard"}, "eval_opponent"),
        ({"stop_win_share": 1.0}, "stop_win_share"),
        ({"stop_win_share": 0.5, "eval_every": 0}, "stop_win_share"),
        ({"run_name": "../../elsewhere"}, "run_name"),
        ({"run_name": "a/b"}, "run_name"),
        ({"run_name": ".."}, "run_name"),
        ({"run_name": "/tmp/x"}, "run_name"),
        ({"run_name": " "}, "must not begin or end with a space"),  # a run directory named " " was made
        ({"run_name": "run\n2"}, "control character"),
        ({"eval_games": 0}, "eval_games"),  # the first evaluation failed after training had begun
        ({"seed": -1}, "seed"),
        ({"seed": 2**64}, "seed"),
        ({"opponents": "past:1", "past_every": 0}, "past_every"),  # 'past' played as 'self' without a word
        ({"opponents": {"heuristic": "a"}}, "opponents"),  # a config.json's mapping: float()'s own message
        ({"opponents": {"heuristic": -1.0}}, "opponents"),
        ({"opponents": {"heuristic": True}}, "opponents"),
        # sizes grown by mistake (a resumed run's config.json) ran the machine out of memory
        ({"n_envs": 10**30}, "'n_envs' must be at most 1,048,576"),
        ({"n_envs": 1 << 20, "n_steps": 64}, "'n_steps' x 'n_envs' must give a rollout of at most"),
        ({"net_arch": (64, 10**9)}, "'net_arch' takes layers of at most 65,536"),
        ({"past_pool": 10**6}, "'past_pool' must be at most 1,000"),
        ({"eval_games": 10**12}, "'eval_games' must be at most"),
    ],
)
def test_bad_config_names_the_key(kw, key):
    with pytest.raises(ValueError, match=key):
        TrainConfig(**kw).validate()


def test_cli_reports_a_bad_config_as_a_usage_error(capsys, tmp_path):
    code = main([*SMOKE, "--run-dir", str(tmp_path), "--players", "9"])
    assert code == 2
    assert "players" in capsys.readouterr().err
    # a run name that climbs out of --run-dir writes nothing anywhere
    code = main([*SMOKE, "--run-dir", str(tmp_path / "runs"), "--run-name", "../out"])
    assert code == 2 and "one folder's name" in capsys.readouterr().err
    assert not (tmp_path / "out").exists() and not (tmp_path / "runs").exists()


def test_help_lists_the_config_fields(capsys):
    assert main(["train", "--help"]) == 0
    out = capsys.readouterr().out
    for flag in ("--players", "--opponents", "--total-timesteps", "--n-envs", "--net-arch", "--ent-coef", "--resume"):
        assert flag in out


# --------------------------------------------------------------------------- a short run


@pytest.fixture(scope="module")
def smoke_run(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("runs")
    code = main(
        [*SMOKE, "--run-dir", str(root), "--run-name", "smoke", "--seed", "3", "--opponents", "heuristic,self,past"]
    )
    assert code == 0
    return root / "smoke"


def test_run_directory_holds_config_checkpoints_model(smoke_run):
    cfg = json.loads((smoke_run / "config.json").read_text())
    assert cfg["seed"] == 3 and cfg["total_timesteps"] == PRESETS["smoke"]["total_timesteps"]
    ckpts = sorted(p.name for p in (smoke_run / "checkpoints").glob("ppo_*.zip"))
    assert ckpts == ["ppo_1024.zip", "ppo_2048.zip"]
    assert (smoke_run / "model.zip").exists()
    assert list((smoke_run / "tb").rglob("events.out.tfevents*"))
    evals = [json.loads(line) for line in (smoke_run / "eval.jsonl").read_text().splitlines()]
    assert [e["timesteps"] for e in evals] == [1024, 2048]
    assert all(0.0 <= e["win_share_2p"] <= 1.0 for e in evals)
    summary = json.loads((smoke_run / "summary.json").read_text())
    assert summary["num_timesteps"] == 2048 and not summary["interrupted"]


def test_cli_ends_with_the_new_agent_next_to_the_shipped_one(capsys, tmp_path):
    code = main(["train", "--preset", "smoke", "--run-dir", str(tmp_path), "--final-eval-games", "12"])
    assert code == 0
    out = capsys.readouterr().out
    assert "new agent" in out and "shipped ppo" in out
    rows = [line.split() for line in out.splitlines() if line.split()[:1] in (["2"], ["4"])]
    assert [(r[0], r[1]) for r in rows] == [("2", "random"), ("2", "heuristic"), ("4", "random"), ("4", "heuristic")]
    for r in rows:  # fair share, then a share and its interval for each of the two agents
        assert len(r) == 9 and all(0.0 <= float(x.strip("[],")) <= 1.0 for x in r[2:])


@pytest.mark.parametrize("games", ["-1", "10000000000"])
def test_cli_rejects_a_final_eval_it_cannot_play_before_training(capsys, tmp_path, games):
    """10^10 games failed after the training, allocating their results."""
    code = main(["train", "--preset", "smoke", "--run-dir", str(tmp_path), "--final-eval-games", games])
    assert code == 2 and list(tmp_path.iterdir()) == []
    assert "--final-eval-games: the number of games must be between 0 and 1000000000" in capsys.readouterr().err


def test_resume_continues_the_step_count(smoke_run):
    code = main(["train", "--resume", str(smoke_run), "--total-timesteps", "3072", "--final-eval-games", "0"])
    assert code == 0
    summary = json.loads((smoke_run / "summary.json").read_text())
    assert summary["num_timesteps"] == 3072 and summary["steps_this_session"] == 1024
    assert (smoke_run / "checkpoints" / "ppo_3072.zip").exists()
    assert json.loads((smoke_run / "config.json").read_text())["total_timesteps"] == 2048  # the original kept


def test_resuming_a_finished_run_is_refused_and_writes_nothing(smoke_run, capsys):
    """It ended "give more to train it further", naming no flag (a -more preset run again
    gives its total itself), nor that the run is finished."""
    before = sorted(p.name for p in smoke_run.rglob("*"))
    done = json.loads((smoke_run / "summary.json").read_text())["num_timesteps"]
    code = main(["train", "--resume", str(smoke_run), "--total-timesteps", str(done), "--final-eval-games", "0"])
    err = capsys.readouterr().err
    assert code == 2 and f"has trained {done} steps, the config asks for {done} in all" in err
    assert err.endswith(": the run is finished; give a larger --total-timesteps to train it further\n"), err
    assert sorted(p.name for p in smoke_run.rglob("*")) == before  # no config.resume_<k>.json, no session


def test_a_model_from_outside_a_run_keeps_its_own_network(smoke_run, tmp_path, capsys):
    """--net-arch and --activation were recorded in the new run's config.json while the
    weights trained were the model's own 32-32 tanh."""
    import shutil

    copy = tmp_path / "downloads" / "model.zip"
    copy.parent.mkdir()
    shutil.copy(smoke_run / "model.zip", copy)
    steps = json.loads((smoke_run / "summary.json").read_text())["num_timesteps"]
    argv = [*SMOKE, "--resume", str(copy), "--run-dir", str(tmp_path / "runs"), "--run-name", "mine"]
    code = main([*argv, "--net-arch", "256,256", "--activation", "relu", "--total-timesteps", str(steps + 1024)])
    assert code == 0
    assert f"note: {copy} holds a 32,32 tanh network: the run trains it" in capsys.readouterr().out
    recorded = json.loads((tmp_path / "runs" / "mine" / "config.json").read_text())
    assert recorded["net_arch"] == [32, 32] and recorded["activation"] == "tanh"
    assert sorted(p.name for p in copy.parent.iterdir()) == ["model.zip"]  # the file's folder is left alone


def test_a_model_of_another_observation_version_says_which_to_resume_with(smoke_run, tmp_path, capsys):
    """SB3's own message was cut off in the middle of two long arrays of bounds."""
    import shutil

    copy = tmp_path / "downloads" / "model.zip"
    copy.parent.mkdir()
    shutil.copy(smoke_run / "model.zip", copy)  # observation version 0
    argv = [*SMOKE, "--resume", str(copy), "--run-dir", str(tmp_path / "runs"), "--obs-version", "1"]
    assert main([*argv, "--total-timesteps", "4096"]) == 2
    err = capsys.readouterr().err
    assert "reads observation version 0, and this run is set to 1: resume it with --obs-version 0" in err


def test_saved_model_loads_as_an_agent_and_plays_legal_moves(smoke_run):
    agent = agents.make("ppo", path=str(smoke_run / "model.zip"))
    assert play_games(agent, 3, 2) > 0
    sampler = agents.make("ppo", path=str(smoke_run / "checkpoints" / "ppo_1024.zip"), deterministic=False, seed=1)
    assert play_games(sampler, 5, 1) > 0


@pytest.mark.parametrize("env_workers", [1, 2])
def test_ctrl_c_saves_a_checkpoint(tmp_path, monkeypatch, env_workers):
    import multiprocessing

    from train.training.sb3.workers import SplitVecEnv

    calls = {"n": 0}
    for cls in [*VEC_ENVS.values(), SplitVecEnv]:  # whichever the run's engine picks

        def interrupting(self, real=cls.step_wait):
            calls["n"] += 1
            if calls["n"] == 100:  # in the middle of a rollout (with one or two env workers)
                raise KeyboardInterrupt
            return real(self)

        monkeypatch.setattr(cls, "step_wait", interrupting)
    cfg = TrainConfig(
        **{**PRESETS["smoke"], "run_dir": str(tmp_path), "run_name": "int", "eval_every": 0},
        options={"env_workers": env_workers},
    )
    result = train(cfg)
    assert result.interrupted
    rollout = cfg.n_envs * cfg.n_steps
    # saved at the steps learned from: the rollout cut short is not counted
    assert 0 < result.num_timesteps < cfg.total_timesteps and result.num_timesteps % rollout == 0
    assert (tmp_path / "int" / "checkpoints" / f"ppo_{result.num_timesteps}.zip").exists()
    assert (tmp_path / "int" / "model.zip").exists()
    assert not multiprocessing.active_children()  # the trainer closed its env: no env worker left


def test_a_run_leaves_the_callers_global_random_streams_alone(tmp_path):
    """SB3 seeds Python's, numpy's and torch's global generators from the run's seed:
    after ``train`` they go on where the caller left them."""
    import random

    import torch

    def draws() -> tuple[float, float, float]:
        return random.random(), float(np.random.random()), float(torch.rand(1))

    random.seed(11), np.random.seed(11), torch.manual_seed(11)
    expected = draws()
    random.seed(11), np.random.seed(11), torch.manual_seed(11)
    cfg = {**PRESETS["smoke"], "total_timesteps": 512, "eval_every": 0, "checkpoint_every": 0}
    train(TrainConfig(**cfg, run_dir=str(tmp_path), options={"tensorboard": False}))
    assert draws() == expected


def test_same_seed_same_model(tmp_path):
    """A seeded run is reproducible: the same config trains the same weights."""
    from agents.ppo import load_actor

    base = {**PRESETS["smoke"], "run_dir": str(tmp_path), "eval_every": 0, "options": {"tensorboard": False}}
    base["opponents"] = "heuristic:1,self:1,past:1"
    paths = [train(TrainConfig(**{**base, "run_name": name})).model_path for name in ("a", "b")]
    a, b = (load_actor(p) for p in paths)
    for (wa, ba), (wb, bb) in zip(a.layers, b.layers, strict=True):
        np.testing.assert_array_equal(wa, wb)
        np.testing.assert_array_equal(ba, bb)


def test_a_checkpoint_holds_the_policy_trained_on_its_steps(tmp_path):
    """``ppo_N`` is the policy after learning from N steps: a run of 1,024 steps ends with
    the weights a longer run with the same seed saves as ``ppo_1024`` (taken during the
    rollout that reached 1,024, it held the policy before that rollout's update), and the
    evaluation at 1,024 steps measured them."""
    from agents.ppo import load_actor

    base = {**PRESETS["smoke"], "run_dir": str(tmp_path), "anneal_lr": False, "checkpoint_every": 512}
    base |= {"eval_every": 1024, "eval_games": 8, "options": {"tensorboard": False}}
    short = train(TrainConfig(**{**base, "total_timesteps": 1024, "run_name": "short"}))
    long = train(TrainConfig(**{**base, "total_timesteps": 2048, "run_name": "long"}))
    ended = load_actor(short.model_path)
    for name, same in (("ppo_1024.zip", True), ("ppo_1536.zip", False)):
        saved = load_actor(tmp_path / "long" / "checkpoints" / name)
        equal = all(np.array_equal(w, v) for (w, _), (v, _) in zip(ended.layers, saved.layers, strict=True))
        assert equal is same, name
    assert [row["timesteps"] for row in short.evals] == [1024]
    assert [row["timesteps"] for row in long.evals][:1] == [1024]
    assert short.evals[0]["win_share_2p"] == long.evals[0]["win_share_2p"]


@pytest.mark.parametrize("verbose", [0, 1])
def test_a_run_without_tensorboard_leaves_nothing_in_the_temp_folder(tmp_path, monkeypatch, capsys, verbose):
    """SB3 makes an empty ``SB3-<time>`` folder in the temporary directory for every run
    whose logger it builds; the trainer gives it one, which still prints the rollout
    tables when asked to."""
    import tempfile

    temp = tmp_path / "temp"
    temp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    monkeypatch.delenv("SB3_LOGDIR", raising=False)
    config = {**PRESETS["smoke"], "run_dir": str(tmp_path / "runs"), "eval_every": 0, "total_timesteps": 512}
    train(TrainConfig(**config, options={"tensorboard": False, "verbose": verbose}))
    assert [p.name for p in temp.iterdir() if p.name.startswith("SB3-")] == []  # (torch keeps its caches there)
    assert ("total_timesteps" in capsys.readouterr().out) == (verbose == 1)


def test_existing_run_directory_is_not_overwritten(smoke_run):
    cfg = TrainConfig(**{**PRESETS["smoke"], "run_dir": str(smoke_run.parent), "run_name": "smoke"})
    with pytest.raises(ValueError, match="already exists"):
        train(cfg)


# --------------------------------------------------------------------------- the shipped agent


def test_shipped_model_loads_and_plays_legal_moves():
    assert DEFAULT_MODEL.exists(), "the shipped model agents/models/ppo_llama.npz is missing"
    assert DEFAULT_MODEL.stat().st_size < 2_000_000
    agent = agents.make("ppo")
    assert isinstance(agent, PPOAgent)
    for n in (2, 4, 6):
        assert play_games(agent, n, 1, seed=n) > 0


def test_shipped_model_batched_matches_single_moves():
    agent = agents.make("ppo")
    env = BatchedLlamaVecEnv(16, players=[2, 4, 6], opponents="random", seed=4)
    obs = env.reset()
    masks = env.action_masks()
    batched = agent.act_batch(obs, masks)
    single = [agent.act(o, m.astype(np.int8)) for o, m in zip(obs, masks, strict=True)]
    assert batched.tolist() == single
    assert masks[np.arange(16), batched].all()


@pytest.mark.slow
def test_training_beats_random_heads_up(tmp_path):
    cfg = TrainConfig(
        players="2",
        opponents="random",
        total_timesteps=300_000,
        n_envs=64,
        n_steps=64,
        batch_size=2048,
        eval_every=0,
        checkpoint_every=0,
        run_dir=str(tmp_path),
        run_name="slow",
        progress_bar=False,
        options={"tensorboard": False},
    )
    result = train(cfg)
    stats = evaluate([agents.make("ppo", path=str(result.model_path)), "random"], 400, seed=0, workers=1)[0]
    assert stats.ci_low > 0.5


def test_config_is_typed_and_parsed_once_at_the_edge():
    from train.cli.train import add_arguments, config_from_args
    from train.training.config import config_from_dict

    cfg = TrainConfig(players="2-4", opponents="heuristic:0.5,self", net_arch="64,32", eval_players=[4, 2])
    assert cfg.players == (2, 3, 4) and cfg.net_arch == (64, 32) and cfg.eval_players == (2, 4)
    assert cfg.opponents == {"heuristic": 0.5, "self": 1.0}
    assert config_from_dict(json.loads(json.dumps(cfg.to_dict()))) == cfg  # config.json round trip
    legacy = {**cfg.to_dict(), "players": "2-4", "net_arch": "64,32", "opponents": "heuristic:0.5,self:1"}
    assert config_from_dict(legacy) == cfg  # config.json files of earlier runs held strings

    import argparse

    parser = argparse.ArgumentParser()
    add_arguments(parser)
    args = parser.parse_args(["--players", "2,6", "--net-arch", "16", "--opponents", "random", "--no-tensorboard"])
    from_cli = config_from_args(args)
    assert from_cli.players == (2, 6) and from_cli.net_arch == (16,) and from_cli.opponents == {"random": 1.0}
    assert from_cli.options.tensorboard is False


@pytest.mark.parametrize(
    ("flag", "value", "fragment"),
    [
        ("--players", "2-9", "players"),
        ("--net-arch", "64,x", "net_arch"),
        ("--opponents", "heuristic:-1", "opponents"),
        ("--n-envs", "many", "config key 'n_envs' must be an integer (digits 0-9), got 'many'"),
        ("--learning-rate", "fast", "config key 'learning_rate' must be a number (digits 0-9), got 'fast'"),
    ],
)
def test_bad_flag_values_are_usage_errors(capsys, flag, value, fragment):
    code = main(["train", flag, value])
    assert code == 2
    err = capsys.readouterr().err
    assert fragment in err and "Traceback" not in err


@pytest.mark.parametrize(
    ("players", "eval_seats", "play_size"),
    [((2, 3, 4, 5, 6), 2, 3), ((4,), 4, 4), ((2,), 2, 2), ((2, 4, 4), 2, 4), ((6, 4), 4, 4), ((3, 5), 3, 3)],
    ids=["general", "4p-specialist", "heads-up-specialist", "mixed", "no-heads-up", "odd"],
)
def test_the_next_commands_fit_the_table_the_run_trained_at(smoke_run, capsys, players, eval_seats, play_size):
    lines = next_commands(str(smoke_run), players, 2048).splitlines()
    eval_argv = lines[0].split("#")[0].split()[1:]
    agents = eval_argv[eval_argv.index("--agents") + 1].split(",")
    assert agents == [f"ppo:path={smoke_run}", *["heuristic"] * (eval_seats - 1)]
    assert f"play --players {play_size} --opponents ppo:path={smoke_run}" in lines[1]
    assert f"train --resume {smoke_run} --total-timesteps 4096   # train it further" in lines[2]
    # a run that stopped at its target would stop again at its next evaluation
    stopped = next_commands(str(smoke_run), players, 2048, stopped_early=True).splitlines()[2]
    assert f"train --resume {smoke_run} --total-timesteps 4096 --stop-win-share 0   #" in stopped
    games = eval_argv.index("--games") + 1
    assert main([*eval_argv[:games], "4", *eval_argv[games + 1 :]]) == 0  # the printed command runs
    assert f"ppo:path={smoke_run}" in capsys.readouterr().out


def test_the_next_commands_paste_into_a_shell_whatever_the_run_is_called():
    """A run named "a b" printed `--opponents ppo:path=runs/a b`, which the shell splits."""
    lines = next_commands("runs/a b's", (2,), 2048).splitlines()
    argv = [shlex.split(line.split("   #")[0]) for line in lines]
    assert argv[0][argv[0].index("--agents") + 1] == "ppo:path=runs/a b's,heuristic"
    assert argv[1][argv[1].index("--opponents") + 1] == "ppo:path=runs/a b's"
    assert argv[2][argv[2].index("--resume") + 1] == "runs/a b's"


def test_the_next_commands_keep_the_rules_the_run_trained_on(smoke_run, capsys):
    from train.cli.train import rule_flags

    config = TrainConfig(end_score=30, hand_size=5)
    assert rule_flags(config) == " --end-score 30 --hand-size 5" and rule_flags(TrainConfig()) == ""
    lines = next_commands(str(smoke_run), (2,), 2048, rule_flags(config)).splitlines()
    assert lines[1].split("#")[0].rstrip().endswith("--end-score 30 --hand-size 5")  # play them
    eval_argv = lines[0].split("#")[0].split()[1:]
    games = eval_argv.index("--games") + 1
    assert main([*eval_argv[:games], "4", *eval_argv[games + 1 :]]) == 0
    assert "end_score 30" in capsys.readouterr().out


def test_a_run_stops_when_its_evaluation_beats_the_target(tmp_path):
    """stop_win_share ends training at the first evaluation whose interval lies above it,
    on its deals and on a second set of fresh ones."""
    cfg = TrainConfig(
        **{
            **PRESETS["smoke"],
            "players": 2,
            "opponents": "random",
            "total_timesteps": 8192,
            "eval_every": 1024,
            "eval_games": 40,
            "eval_players": 2,
            "stop_win_share": 0.05,
            "run_dir": str(tmp_path),
            "run_name": "stop",
            "options": {"tensorboard": False},
        }
    )
    result = train(cfg)
    assert result.stopped_early and not result.interrupted and result.num_timesteps < cfg.total_timesteps
    rows = [json.loads(line) for line in (tmp_path / "stop" / "eval.jsonl").read_text().splitlines()]
    stops = [r["ci_low_2p"] >= 0.05 and r.get("confirm_ci_low_2p", -1) >= 0.05 for r in rows]
    assert stops == [False] * (len(rows) - 1) + [True]
    assert result.num_timesteps - rows[-1]["timesteps"] < 16  # within a step of the evaluation
    assert all(0 <= r["ci_low_2p"] <= r["win_share_2p"] and r["ci95_2p"] > 0 for r in rows)
    assert json.loads((tmp_path / "stop" / "summary.json").read_text())["stopped_early"] is True


def test_the_beat_heuristic_preset_runs_heads_up_on_the_batched_engine(tmp_path, capsys):
    """The preset's config (as the command line builds it) trains heads-up against the
    heuristic on the batched engine and stops on its evaluation; a short run of it, with
    a target any policy reaches, stops at its first evaluation."""
    import argparse

    from train.cli.train import add_arguments, config_from_args
    from train.training.sb3.vec_env import vec_env_class

    parser = argparse.ArgumentParser()
    add_arguments(parser)
    cfg = config_from_args(parser.parse_args(["--preset", "beat-heuristic"]))
    assert cfg.players == (2,) and cfg.opponents == {"heuristic": 1.0} and cfg.eval_players == (2,)
    assert cfg.eval_opponent == "heuristic" and cfg.stop_win_share == 0.5
    assert vec_env_class(cfg.options.engine, cfg.players, cfg.n_envs) is BatchedLlamaVecEnv
    rollout = cfg.n_envs * cfg.n_steps
    code = main(
        [
            "train",
            "--preset",
            "beat-heuristic",
            "--total-timesteps",
            str(4 * rollout),
            "--eval-every",
            str(rollout),
            "--eval-games",
            "100",
            "--stop-win-share",
            "0.01",
            "--run-dir",
            str(tmp_path),
            "--no-progress-bar",
        ]
    )
    assert code == 0
    out = capsys.readouterr().out
    assert (
        "stopped early" in out
        and "the evaluation that stopped it, 100 games against heuristic and 100 more to confirm: 2p" in out
    )
    assert "on fresh deals" in out
    assert "Evaluating against the baselines" not in out  # a run that stopped on its target measured itself
    summary = json.loads((tmp_path / "beat-heuristic" / "summary.json").read_text())
    assert summary["stopped_early"] and summary["num_timesteps"] < 4 * rollout
    assert (tmp_path / "beat-heuristic" / "model.zip").is_file()


def test_the_step_bar_adds_a_line_a_minute_to_a_log_and_redraws_on_a_terminal(monkeypatch):
    """`make train > log` wrote ten bar updates a second into the log: 900 of them in a run."""
    import io

    from train.training.result import LOG_INTERVAL, step_bar

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    for stream, interval in ((io.StringIO(), LOG_INTERVAL), (Terminal(), 0.1)):
        monkeypatch.setattr("sys.stderr", stream)
        bar = step_bar(1000)
        assert bar.mininterval == interval and LOG_INTERVAL >= 30
        bar.close()


def test_resuming_a_run_whose_config_lacks_settings_names_them(smoke_run, tmp_path):
    """A config.json cut to {} (or written before a setting existed) resumed on today's
    defaults without a word: n_envs 16 became 128."""
    import shutil

    from train.training import resume_config
    from train.training.run_dir import RunDir

    run = tmp_path / "copy"
    shutil.copytree(smoke_run, run)
    last = RunDir(run).config_files()[-1]  # (another test may have resumed the run)
    recorded = json.loads(last.read_text())
    for key in ("n_envs", "past_every"):
        del recorded[key]
    last.write_text(json.dumps(recorded))
    with pytest.warns(RuntimeWarning, match=r"\.json does not record past_every, n_envs; the run goes on with"):
        config = resume_config(run)
    assert config.n_envs == TrainConfig().n_envs


def test_training_opponents_may_be_agent_specs_with_a_weight():
    """``cautious:threshold=2`` was read as cautious weighted 'threshold=2'."""
    assert parse_opponents("cautious:threshold=2:0.5,heuristic") == {"cautious:threshold=2": 0.5, "heuristic": 1.0}
    assert parse_opponents("cautious:threshold=2") == {"cautious:threshold=2": 1.0}
    assert parse_opponents(r"ppo:path=C:\m.npz:2,ppo:path=D:\n.npz") == {
        r"ppo:path=C:\m.npz": 2.0,
        r"ppo:path=D:\n.npz": 1.0,
    }  # a Windows path's colon is no weight
    with pytest.raises(ValueError, match=r"weight of 'heuristic' must be a number \(digits 0-9\), got 'x'"):
        parse_opponents("heuristic:x")
    with pytest.raises(ValueError, match=r"weight of 'cautious:threshold=2' must be a number \(digits 0-9\), got 'x'"):
        parse_opponents("cautious:threshold=2:x")  # was "threshold must be an integer, got '2:x'"
    with pytest.raises(ValueError, match="'cautious:threshold=2' ends in a colon with no weight after it"):
        parse_opponents("cautious:threshold=2:")
    # spaces go only around the separators: a model's path may hold one
    assert parse_opponents(" heuristic : 0.5 , ppo:path=my run/x:0.5") == {"heuristic": 0.5, "ppo:path=my run/x": 0.5}
    config = TrainConfig(opponents="cautious:threshold=2:0.5,self:0.5", eval_opponent="cautious:threshold=2")
    assert config.validate().opponents == {"cautious:threshold=2": 0.5, "self": 0.5}
    with pytest.raises(ValueError, match="config key 'opponents': agent 'cautious' has no parameter 'thresh'"):
        TrainConfig(opponents="cautious:thresh=2").validate()
    with pytest.raises(ValueError, match="config key 'eval_opponent': agent 'cautious' has no parameter 'x'"):
        TrainConfig(eval_opponent="cautious:x=1").validate()
    env = BatchedLlamaVecEnv(2, players=[2], opponents={"cautious:threshold=2": 1.0})
    assert env._agents["cautious:threshold=2"].threshold == 2  # seated with its parameter
