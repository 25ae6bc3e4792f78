"""The training backend interface (docs/architecture.md, "Add a training backend"): a
backend registered in the table runs through ``llama-rl train`` with the core's config,
run directory, seating and rules, validates its own options and refuses what it would
ignore; runs are named by their backend."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import numpy as np
import pytest

import agents
from agents.ppo import Actor, save_actor
from llama_env.engine import LlamaGame, Rules
from llama_env.observation import obs_size
from train.cli import main
from train.training import TrainConfig, TrainResult, backends, register_backend
from train.training.backend import BUILTIN, Backend, backend_named
from train.training.config import config_from_dict
from train.training.resume import session_run
from train.training.run_dir import write_json_atomic
from train.training.seats import OpponentMix

SEEN: list[dict] = []


@dataclass(frozen=True)
class ToyOptions:
    games: int = field(default=3, metadata={"help": "games the toy deals"})

    def __post_init__(self) -> None:
        if isinstance(self.games, int) and self.games < 1:
            raise ValueError(f"config key 'games' must be >= 1, got {self.games}")


def _toy_run(config: TrainConfig) -> TrainResult:
    """Deal ``games`` games on the run's seating and rules, save an untrained policy."""
    run, fresh = session_run(config)
    run.create(fresh=fresh)
    with run.lock():
        write_json_atomic(run.config_path, config.to_dict())
        mix = OpponentMix(config.opponents, config.players)
        rng = np.random.default_rng(config.seed)
        for _ in range(config.options.games):
            seating = mix.draw(rng, past_pool=0)
            game = LlamaGame(rules=config.rules_at(seating.num_players), rng=rng)
            SEEN.append({"rules": game.rules, "seating": seating})
        width = obs_size(config.obs_version)
        actor = Actor([(np.zeros((9, width), np.float32), np.zeros(9, np.float32))])
        save_actor(actor, run.path / "model.npz")
    return TrainResult(run.path, run.path / "model.npz", 0, 0, 0.0, 0.0, 0.0, False, [], backend="toy")


TOY = Backend(
    name="toy",
    summary="deals a few games and saves an untrained policy (a test)",
    extra="train",
    algorithm="toy",
    run=_toy_run,
    options=ToyOptions,
    ignores=("target_kl",),
)


@pytest.fixture()
def toy():
    register_backend(TOY)
    SEEN.clear()
    yield TOY
    from train.training import backend

    backend._REGISTERED.pop("toy", None)


def test_the_builtin_table_names_each_backend_folder():
    assert list(BUILTIN) == ["sb3", "rllib"]
    for name, spec in backends().items():
        assert spec.name == name and spec.run is not None
    with pytest.raises(ValueError, match="'backend' must be one of sb3, rllib"):
        backend_named("tf")


def test_a_registered_backend_trains_through_the_command_line(toy, tmp_path, capsys):
    args = ["train", "--backend", "toy", "--preset", "smoke", "--run-dir", str(tmp_path), "--final-eval-games", "0"]
    code = main([*args, "--games", "5", "--end-score", "30", "--hand-size", "5", "--players", "2,6"])
    out, err = capsys.readouterr()
    assert code == 0, err
    (run,) = tmp_path.iterdir()
    assert run.name.startswith("llama__toy__0__")  # named by its backend
    recorded = json.loads((run / "config.json").read_text())
    assert recorded["backend"] == "toy" and recorded["games"] == 5
    assert recorded["end_score"] == 30 and recorded["hand_size"] == 5
    assert len(SEEN) == 5
    assert {s["rules"] for s in SEEN} <= {Rules(2, 30, 5), Rules(6, 30, 5)}
    assert all(s["rules"].num_players == s["seating"].num_players for s in SEEN)
    assert f"run {run}" in out
    agents.make("ppo", path=str(run / "model.npz"))  # what it saved plays


def test_a_backend_option_is_a_flag_and_belongs_to_its_backend(toy, capsys):
    assert main(["train", "--help"]) == 0
    assert "toy: games the toy deals" in capsys.readouterr().out
    for argv, message in [
        (["--games", "4"], "'games' is an option of backend 'toy' (this run uses 'sb3')"),
        (["--backend", "toy", "--num-env-runners", "2"], "'num_env_runners' is an option of backend 'rllib'"),
        (["--backend", "toy", "--games", "0"], "'games' must be >= 1"),
        (["--backend", "toy", "--target-kl", "0.02"], "'target_kl' is not used by backend 'toy'"),
        (["--backend", "toy", "--players", "6", "--hand-size", "10"], "hand_size must be between 1 and 9 for 6"),
        # another backend's flag at its default value was dropped without a word
        (["--backend", "toy", "--tensorboard"], "--tensorboard is an option of backend 'sb3'; this run uses 'toy'"),
        (["--backend", "toy", "--env-workers", "1"], "--env-workers is an option of backend 'sb3'; this run uses"),
    ]:
        assert main(["train", *argv, "--final-eval-games", "0"]) == 2
        assert message in capsys.readouterr().err


@dataclass(frozen=True)
class _ClashingOptions:
    games: int = 3
    engine: str = "numpy"  # the sb3 backend's option


@dataclass(frozen=True)
class _CoreClash:
    seed: int = 0  # a core setting


@pytest.mark.parametrize(("options", "what"), [(_ClashingOptions, "backend 'sb3'"), (_CoreClash, "a core setting")])
def test_a_backend_option_named_like_a_taken_flag_is_refused_when_registered(options, what):
    """It crashed ``llama-rl train`` later with argparse's 'conflicting option string',
    and the config read the value as the other backend's."""
    clash = Backend(name="clash", summary="s", extra="train", algorithm="c", run=_toy_run, options=options)
    with pytest.raises(ValueError, match=f"cannot have an option named .* it is .*{what}"):
        register_backend(clash)
    assert "clash" not in backends()
    register_backend(TOY)  # its own options again, on replacing itself, are not a clash
    register_backend(TOY)
    from train.training import backend

    backend._REGISTERED.pop("toy", None)


def test_config_json_is_one_flat_mapping_and_reads_back(toy):
    cfg = config_from_dict({"backend": "toy", "games": 2, "end_score": 25})
    data = json.loads(json.dumps(cfg.to_dict()))
    assert data["games"] == 2 and "options" not in data
    assert config_from_dict(data) == cfg
    # files written before backends had options of their own list every backend's defaults
    old = {**TrainConfig().to_dict(), "num_env_runners": 0, "address": "", "privileged_critic": False}
    assert config_from_dict(old) == TrainConfig().validate()


def test_a_runs_own_config_json_drops_another_backends_options_whatever_they_hold(toy, tmp_path):
    """0.2.0 wrote every backend's options into config.json: an RLlib run started with
    --no-tensorboard recorded sb3's tensorboard false, and could not be resumed ("an option
    of backend 'sb3'"), though that option never applied to it."""
    old = {**TrainConfig(backend="toy").to_dict(), "tensorboard": False, "verbose": 1}
    with pytest.raises(ValueError, match="'tensorboard' is an option of backend 'sb3'"):
        config_from_dict(old)  # given, not recorded: still refused
    assert config_from_dict(old, recorded=True) == TrainConfig(backend="toy").validate()
    first = TrainConfig(backend="toy", run_dir=str(tmp_path), run_name="r").validate()
    run = _toy_run(first).run_dir
    write_json_atomic(run / "config.json", {**first.to_dict(), "tensorboard": False, "verbose": 1})
    resumed, fresh = session_run(TrainConfig(backend="toy", resume=str(run)).validate())
    assert not fresh and resumed.path == run


def test_rule_options_are_config_keys_and_reach_every_table_size():
    from llama_env.engine import rule_option_fields

    cfg = TrainConfig(players="2-6", end_score=30, hand_size=5).validate()
    for f in rule_option_fields():  # every rule option the engine declares is a training setting
        assert f.name in cfg.to_dict()
    assert [cfg.rules_at(n) for n in cfg.players] == [Rules(n, 30, 5) for n in range(2, 7)]


def test_the_sb3_vec_env_plays_the_configured_rules():
    from train.training.sb3.vec_env import BatchedLlamaVecEnv

    env = BatchedLlamaVecEnv(4, players=(2, 6), opponents="random", rules=Rules(end_score=30, hand_size=5))
    env.reset()
    for game in env.games:
        assert game.rules == Rules(game.num_players, 30, 5)
    with pytest.raises(ValueError, match="hand_size must be between 1 and 9 for 6 players"):
        BatchedLlamaVecEnv(2, players=(2, 6), rules=Rules(2, hand_size=12))
