"""The PPO agent: a MaskablePPO policy trained by ``llama-rl train`` (see docs/training.md).

``agents.make("ppo")`` plays the shipped models: specialists that read observation
version 1 at 2-, 4- and 6-player tables (``agents/models/ppo_llama_2p.npz``,
``ppo_llama_4p.npz``, ``ppo_llama_6p.npz``), and the general model
``agents/models/ppo_llama.npz`` at 3 and 5 players (:data:`SHIPPED` says which file plays
where); each specialist is PPO's with the search agent's moves distilled into it
(``llama-rl distill``: two rounds heads-up and at 6 players, three at 4). The earlier
agents stay: ``ppo_v4`` plays the specialists before the third round at 4 players
(``ppo_llama_4p_v4.npz``, ``ppo``'s own files at 2 and 6), ``ppo_v3`` the specialists as PPO
left them (``ppo_llama_2p_v3.npz``, ``ppo_llama_4p_v3.npz``, ``ppo_llama_6p_v3.npz``),
``ppo_v2`` the same heads-up specialist as ``ppo_v3`` with the general model at 3 to 6
players, ``ppo_v1`` the first heads-up specialist
(``ppo_llama_2p_v1.npz``) with the general model, and ``ppo_v0``, the first shipped agent,
the general model at every table size. Every shipped model is a ``.npz`` that plays with
numpy alone; the general model's training run, ``ppo_llama.zip`` (with its value network,
to fine-tune it), needs torch to read, and ``llama-rl export`` wrote the ``.npz`` from it.
``agents.make("ppo", path="runs/<run>/model.zip")`` loads any run's model (or a
checkpoint: an SB3 ``.zip`` or an RLlib ``checkpoints/rllib_<steps>`` folder), and
``path="runs/<run>"`` the run directory's model, for every table size.

Only the actor is kept: the zip's policy weights are read with torch on the CPU and the
action head's logits of the illegal actions are masked out, so a move is one small
forward pass and never illegal.
"""

from __future__ import annotations

import base64
import contextlib
import functools
import io
import json
import operator
import pickle
import pickletools
import re
import zipfile
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import Field
from pathlib import Path
from typing import IO, Any, NamedTuple, cast

import numpy as np

from agents.base import (
    MAX_ARRAY_BYTES,
    BaseAgent,
    agent_path,
    check_finite,
    check_observation,
    held_instead,
    layer_keys,
    load_arrays,
    mask_list,
    too_large,
)
from llama_env._atomic import atomic_savez
from llama_env._install import MissingExtra
from llama_env.agent import and_list, register
from llama_env.engine import (
    MIN_PLAYERS,
    NUM_ACTIONS,
    Rules,
    brief,
    check_flag,
    check_table_sizes,
    distinct_ints,
    error_line,
    option_high,
    parse_table_sizes,
    rule_option_fields,
)
from llama_env.observation import OBS_SIZE, OBS_VERSIONS, SLICES, VERSION_OF_SIZE, guess_obs_version, one_hot_reader

__all__ = [
    "PPOAgent",
    "Actor",
    "load_actor",
    "save_actor",
    "model_file",
    "no_model_yet",
    "checkpoint_problem",
    "read_save",
    "saved_steps",
    "sb3_hidden_layers",
    "SB3_POLICY_WEIGHTS",
    "MAX_SAVE_DATA_BYTES",
    "rllib_checkpoint_problem",
    "RLLIB_CHECKPOINT_FILES",
    "named_checkpoints",
    "checkpoint_name_steps",
    "sb3_checkpoint_name",
    "resumed_configs",
    "resume_config_name",
    "RUN_CONFIG",
    "RUN_SESSIONS",
    "RUN_CHECKPOINTS",
    "whole_checkpoints",
    "is_run_directory",
    "run_table_sizes",
    "overtaken_model",
    "run_trained_at",
    "TrainedAt",
    "TABLE_SIZES_KEY",
    "trained_rule_key",
    "check_trained_rules",
    "UnseenRules",
    "unseen_rules",
    "untrained_rules",
    "untrained_rules_said",
    "with_run_trained_at",
    "actor_from_policy",
    "DEFAULT_MODEL",
    "DEFAULT_MODEL_ZIP",
    "HEADS_UP_MODEL",
    "HEADS_UP_MODEL_V1",
    "HEADS_UP_MODEL_V3",
    "FOUR_PLAYER_MODEL",
    "FOUR_PLAYER_MODEL_V3",
    "FOUR_PLAYER_MODEL_V4",
    "SIX_PLAYER_MODEL",
    "SIX_PLAYER_MODEL_V3",
    "MODEL_NAMES",
    "MODELS_DIR",
    "SHIPPED",
    "PPOv0Agent",
    "PPOv1Agent",
    "PPOv2Agent",
    "PPOv3Agent",
    "PPOv4Agent",
]

MODELS_DIR = Path(__file__).resolve().parent / "models"
"""Where the shipped model files live."""
DEFAULT_MODEL = MODELS_DIR / "ppo_llama.npz"
"""The first shipped model: every table size (observation version 0). Its policy, written
by ``llama-rl export`` from :data:`DEFAULT_MODEL_ZIP`, so that it plays without torch."""
DEFAULT_MODEL_ZIP = MODELS_DIR / "ppo_llama.zip"
"""The general model as ``llama-rl train`` left it (MaskablePPO, with its value network):
what a fine-tune starts from; reading it needs torch."""
HEADS_UP_MODEL = MODELS_DIR / "ppo_llama_2p.npz"
"""The shipped heads-up specialist (observation version 1), played at 2-player tables: the
PPO specialist of :data:`HEADS_UP_MODEL_V3` after one round of ``llama-rl distill``."""
HEADS_UP_MODEL_V3 = MODELS_DIR / "ppo_llama_2p_v3.npz"
"""The heads-up specialist trained by PPO alone (observation version 1), played by ``ppo_v3``
and ``ppo_v2``."""
HEADS_UP_MODEL_V1 = MODELS_DIR / "ppo_llama_2p_v1.npz"
"""The first heads-up specialist (observation version 1), played by ``ppo_v1``."""
FOUR_PLAYER_MODEL = MODELS_DIR / "ppo_llama_4p.npz"
"""The shipped 4-player specialist (observation version 1), played at 4-player tables: the
PPO specialist of :data:`FOUR_PLAYER_MODEL_V3` after three rounds of ``llama-rl distill``
(the third with soft targets, ``--temperature 0.05``)."""
FOUR_PLAYER_MODEL_V4 = MODELS_DIR / "ppo_llama_4p_v4.npz"
"""The 4-player specialist after two rounds of ``llama-rl distill``, played by ``ppo_v4``
and searched on by ``search``."""
FOUR_PLAYER_MODEL_V3 = MODELS_DIR / "ppo_llama_4p_v3.npz"
"""The 4-player specialist trained by PPO alone (observation version 1), played by ``ppo_v3``."""
SIX_PLAYER_MODEL = MODELS_DIR / "ppo_llama_6p.npz"
"""The shipped 6-player specialist (observation version 1), played at 6-player tables: the
PPO specialist of :data:`SIX_PLAYER_MODEL_V3` after ``llama-rl distill``."""
SIX_PLAYER_MODEL_V3 = MODELS_DIR / "ppo_llama_6p_v3.npz"
"""The 6-player specialist trained by PPO alone (observation version 1), played by ``ppo_v3``."""

SHIPPED: dict[str, dict[int, Path]] = {
    "ppo": {2: HEADS_UP_MODEL, 4: FOUR_PLAYER_MODEL, 6: SIX_PLAYER_MODEL},
    "ppo_v4": {2: HEADS_UP_MODEL, 4: FOUR_PLAYER_MODEL_V4, 6: SIX_PLAYER_MODEL},
    "ppo_v3": {2: HEADS_UP_MODEL_V3, 4: FOUR_PLAYER_MODEL_V3, 6: SIX_PLAYER_MODEL_V3},
    "ppo_v2": {2: HEADS_UP_MODEL_V3},
    "ppo_v1": {2: HEADS_UP_MODEL_V1},
    "ppo_v0": {},
}
"""Each shipped agent's specialists: table size -> the model file it plays there;
:data:`DEFAULT_MODEL` plays every other table size."""


class Actor:
    """The policy half of an SB3 ``MlpPolicy``: ``obs -> masked logits``, batched, in numpy.

    Built from the weights of ``mlp_extractor.policy_net`` (Linear + activation layers) and
    ``action_net``; the value head is not needed to act. Plain numpy rather than torch:
    for a small MLP a numpy forward pass is cheaper than torch's per-call overhead, and it
    never competes with the learner's torch threads.
    """

    def __init__(
        self,
        layers: list[tuple[np.ndarray, np.ndarray]],
        activation: str = "tanh",
        table_sizes: Iterable[int] | None = None,
        trained_rules: Mapping[str, Iterable[int]] | None = None,
    ) -> None:
        if activation not in ("tanh", "relu"):
            raise ValueError(f"activation must be 'tanh' or 'relu', got {activation!r}")
        self.layers = [
            (np.ascontiguousarray(np.asarray(w, dtype=np.float32).T), np.asarray(b, dtype=np.float32))
            for w, b in layers
        ]
        self.activation = activation
        self.table_sizes: tuple[int, ...] | None = None if table_sizes is None else check_table_sizes(table_sizes)
        """The table sizes it was trained at, where its file says (:func:`save_actor`
        writes them, a run directory's config names them); ``None`` where nothing says."""
        self.trained_rules: dict[str, tuple[int, ...]] | None = (
            None if trained_rules is None else check_trained_rules(trained_rules)
        )
        """The values of each rule option (``end_score``, ``hand_size``:
        :func:`llama_env.engine.rule_option_fields`) it was trained at, where its file or
        run directory says (:func:`check_trained_rules`); an option it does not name is one
        nothing says of, and ``None`` is nothing said of any (older files, the shipped
        models)."""
        self._obs_version: int | None = None

    @property
    def obs_size(self) -> int:
        """The length of the observations this actor reads."""
        return int(self.layers[0][0].shape[0])

    @property
    def obs_version(self) -> int:
        """The observation version it was trained on: 0 (52 entries) or 1 (with the
        public history), from the width of its first layer. The table driver reads it at
        every decision, so it is worked out once."""
        if self._obs_version is None:
            self._obs_version = guess_obs_version(self.layers[0][0].T)  # (out, in): the last axis is the input
        return self._obs_version

    def logits(self, obs: np.ndarray, masks: np.ndarray) -> np.ndarray:
        """Masked logits (illegal actions at -inf), shape ``(B, 9)``."""
        x = np.asarray(obs, dtype=np.float32)
        last = len(self.layers) - 1
        for k, (wt, b) in enumerate(self.layers):
            x = x @ wt + b
            if k < last:
                x = np.tanh(x) if self.activation == "tanh" else np.maximum(x, 0.0)
        return np.where(np.asarray(masks, dtype=bool), x, -np.inf)

    def act_batch(self, obs: np.ndarray, masks: np.ndarray, deterministic: bool = True, rng: Any = None) -> np.ndarray:
        """Actions for a batch: argmax over legal actions, or a sample from the masked softmax."""
        masks = np.asarray(masks, dtype=bool)
        logits = self.logits(obs, masks)
        if deterministic:
            return logits.argmax(axis=1)
        z = logits - logits.max(axis=1, keepdims=True)
        p = np.exp(z.astype(np.float64))
        cdf = np.cumsum(p, axis=1)
        gen = rng if rng is not None else np.random.default_rng()
        u = gen.random((len(cdf), 1)) * cdf[:, -1:]
        acts = (u >= cdf).sum(axis=1)
        acts = np.minimum(acts, masks.shape[1] - 1)
        # a masked action has zero probability; guard the boundaries against rounding
        bad = ~masks[np.arange(len(acts)), acts]
        if bad.any():
            acts[bad] = logits[bad].argmax(axis=1)
        return acts


def actor_from_policy(policy: Any) -> Actor:
    """A frozen copy of the actor of an SB3 (Maskable)ActorCriticPolicy with an MLP."""
    layers = []
    act = "tanh"
    for m in policy.mlp_extractor.policy_net:
        if hasattr(m, "weight"):
            layers.append((m.weight.detach().cpu().numpy().copy(), m.bias.detach().cpu().numpy().copy()))
        elif type(m).__name__ == "ReLU":
            act = "relu"
    an = policy.action_net
    layers.append((an.weight.detach().cpu().numpy().copy(), an.bias.detach().cpu().numpy().copy()))
    return Actor(layers, act)


MODEL_NAMES = ("model.zip", "model.npz")
"""What a run directory holds: ``model.zip`` (the SB3 trainer) or ``model.npz`` (the
actor exported by the RLlib trainer)."""


RLLIB_POLICY = "shared"
"""The id of the one policy (RLlib module) the RLlib trainer learns for every seat."""

RLLIB_MODULE_STATE = Path("learner_group", "learner", "rl_module", RLLIB_POLICY, "module_state.pkl")
"""Where an RLlib checkpoint (``runs/<run>/checkpoints/rllib_<steps>/``) keeps the
weights of that policy."""


def model_file(path: str | Path, spec: str = "ppo:path=") -> Path:
    """The model behind ``path``: the file itself, a run directory's model (of either
    trainer), or an RLlib checkpoint's module state. For a run directory without its model
    yet, the message suggests its newest checkpoint as ``spec`` names it (the caller's
    own words: ``search:path=``, ``--model ``). A leading ``~`` of a string is the home
    folder; a ``Path`` is read as it is (:func:`agents.base.agent_path`)."""
    p = agent_path(
        path, "the model path", "name a model file or run directory"
    )  # "" is refused there: "no PPO model in ." hid the slip
    if p.is_dir():
        for name in MODEL_NAMES:
            if (p / name).is_file():
                stale = overtaken_model(p, lambda file: f"{spec}{file}")
                if stale is not None:
                    raise ValueError(f"which model of {p}? {stale}")
                return p / name
        if (p / RLLIB_MODULE_STATE).is_file():
            return p / RLLIB_MODULE_STATE
        unfinished = no_model_yet(p, "use", lambda checkpoint: f"{spec}{checkpoint}")
        if unfinished is not None:
            raise ValueError(f"no PPO model in {p}: {unfinished}")
        raise ValueError(
            f"no PPO model in {p}: it is not a run directory (it has no {' or '.join(MODEL_NAMES)}) "
            f"nor an RLlib checkpoint (it has no {RLLIB_MODULE_STATE.as_posix()})"
        )
    if not p.exists():
        raise ValueError(f"no PPO model at {p}: the file does not exist")
    return p


def checkpoint_problem(path: Path) -> str | None:
    """Why ``path`` is not a whole MaskablePPO save (``None`` when it looks whole): an
    empty or truncated file, a bad zip, anything :func:`read_save` refuses, a step count
    missing or negative."""
    try:
        if path.stat().st_size == 0:
            return "the file is empty"
        data, _ = read_save(path, ())
        if not isinstance(data, dict) or type(data.get("num_timesteps")) is not int:  # not true, not 1.5
            return "its data has no step count"
        if data["num_timesteps"] < 0:
            return f"its step count is negative ({data['num_timesteps']})"
    except (OSError, zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, ValueError, RecursionError) as exc:
        # our own refusal as it is; anything else with its type and first line (RecursionError: JSON nested too deep)
        return str(exc) if type(exc) is ValueError else error_line(exc)
    return None


SB3_POLICY_WEIGHTS = "policy.pth"
"""The entry of a MaskablePPO save (SB3's ``model.save`` zip) that holds the policy's
state dict, beside ``data``, the model's settings and counters as JSON; every save has both."""

MAX_SAVE_DATA_BYTES = 16 * 2**20
"""The most a MaskablePPO save's ``data`` (JSON, some 100 KB) may unpack to; the whole
save may unpack to :data:`agents.base.MAX_ARRAY_BYTES`."""


def read_save(path: Path, weights: Iterable[str] = (SB3_POLICY_WEIGHTS,)) -> tuple[Any, dict[str, bytes]]:
    """The MaskablePPO save at ``path`` as SB3 wrote it: its ``data`` parsed (JSON: the
    settings and counters; a dict unless the file is damaged) and the bytes of the
    ``weights`` entries asked for (``<state dict>.pth``, for ``torch.load``). The one
    reader of the zip, so every caller gets the same checks before anything is unpacked:
    a ``ValueError`` saying why for a save without ``data`` or ``policy.pth`` (or an entry
    asked for), one that unpacks to more than :data:`agents.base.MAX_ARRAY_BYTES` (its zip
    directory's sizes: a 1 MB save of 1 GiB of zeros as its ``policy.pth`` took 2.3 GB),
    one with a bad CRC, or a ``data`` over :data:`MAX_SAVE_DATA_BYTES`; what ``zipfile``,
    ``json`` and ``bytes.decode`` raise for a damaged one."""
    wanted = tuple(weights)
    with zipfile.ZipFile(path) as zf:
        names = set(zf.namelist())
        missing = [n for n in dict.fromkeys(("data", SB3_POLICY_WEIGHTS, *wanted)) if n not in names]
        if missing:
            raise ValueError(f"it has no {' and no '.join(missing)} (not a MaskablePPO save, or one cut short)")
        total = sum(info.file_size for info in zf.infolist())
        if total > MAX_ARRAY_BYTES:
            raise too_large(f"it unpacks to {total / 2**20:,.0f} MiB,", MAX_ARRAY_BYTES, "read")
        bad = zf.testzip()
        if bad is not None:
            raise ValueError(f"its entry {bad} is corrupt (bad CRC)")
        if zf.getinfo("data").file_size > MAX_SAVE_DATA_BYTES:
            raise ValueError(f"its data unpacks to more than {MAX_SAVE_DATA_BYTES // 2**20} MiB (it is some 100 KB)")
        return json.loads(zf.read("data").decode()), {name: zf.read(name) for name in wanted}


def saved_steps(path: Path) -> int:
    """The step count the whole save at ``path`` holds (:func:`checkpoint_problem` says it
    is whole)."""
    data, _ = read_save(path, ())
    return int(data["num_timesteps"])


_SB3_LAYER = re.compile(r"(mlp_extractor\.(policy|value)_net\.([0-9]+))\.weight")


def sb3_hidden_layers(state: Any, net: str = "policy") -> list[str]:
    """The hidden layers of the ``net`` network (``"policy"``, the actor, or ``"value"``)
    in a state dict of SB3's ``MlpPolicy``, in order: their names,
    ``mlp_extractor.<net>_net.<i>`` (``Linear`` at even ``i``), to which ``.weight`` and
    ``.bias`` are added. The output layers are ``action_net`` and ``value_net``."""
    found = ((_SB3_LAYER.fullmatch(str(key)), key) for key in state)
    return [name for _, name in sorted((int(m.group(3)), m.group(1)) for m, _ in found if m and m.group(2) == net)]


RLLIB_CHECKPOINT_FILES = ("rllib_checkpoint.json", "algorithm_state.pkl", "learner_group/learner/state.pkl")
"""What every RLlib checkpoint folder holds (beside the policy's module state): RLlib's
index, the algorithm's state and the learner's (the weights and the optimiser)."""


def rllib_checkpoint_problem(path: Path) -> str | None:
    """Why ``path`` is not a whole RLlib checkpoint folder (``None`` when it looks whole):
    not a folder, empty, a file it must hold missing, a JSON file unreadable or a pickle cut
    short. Read without Ray and without unpickling anything (the pickles' opcodes are
    walked to their end)."""
    if not path.is_dir():
        return "it is not a folder"
    try:
        files = sorted(p for p in path.rglob("*") if p.is_file())
        if not files:
            return "the folder is empty"
        for name in (*RLLIB_CHECKPOINT_FILES, RLLIB_MODULE_STATE.as_posix()):
            if not (path / name).is_file():
                return f"it has no {name}"
    except OSError as exc:
        return error_line(exc)
    for file in files:
        try:
            if file.suffix == ".json":
                json.loads(file.read_text(encoding="utf-8"))
            elif file.suffix == ".pkl":
                with open(file, "rb") as fh:
                    for _ in _opcodes(fh):
                        pass
        except (OSError, ValueError, RecursionError) as exc:
            return f"its {file.relative_to(path).as_posix()} is cut short or unreadable ({error_line(exc)})"
    return None


RUN_CONFIG = "config.json"
"""A run directory's config, as its first session started it; each resumed session adds
``config.resume_<k>.json`` with what it ran (:func:`resumed_configs`)."""
RUN_SESSIONS = "sessions.jsonl"
"""A run's record of its sessions, one JSON line each as ``llama-rl train`` ends one:
``started_at_step``, ``ended_at_step`` and ``config``, the name of its config file."""
RUN_CHECKPOINTS = "checkpoints"
"""A run's folder of checkpoints: the sb3 backend's ``ppo_<steps>.zip``
(:func:`sb3_checkpoint_name`) and the rllib backend's ``rllib_<steps>/`` folders."""

_CHECKPOINT_NAME = re.compile(r"ppo_([0-9]+)\.zip|rllib_([0-9]+)")  # [0-9]: \d takes every script's digits
_RESUMED = re.compile(r"config\.resume_([0-9]+)\.json")


def sb3_checkpoint_name(steps: int) -> str:
    """The name of the sb3 backend's checkpoint after ``steps`` steps."""
    return f"ppo_{steps}.zip"


def checkpoint_name_steps(name: str) -> tuple[int, bool] | None:
    """The step count a checkpoint's name gives, and whether it is the rllib backend's
    (``rllib_<steps>``, else ``ppo_<steps>.zip``); ``None`` for any other name."""
    m = _CHECKPOINT_NAME.fullmatch(name)
    return None if m is None else (int(m.group(1) or m.group(2)), m.group(2) is not None)


def resume_config_name(k: int | str) -> str:
    """The name of the config the ``k``-th resumed session of a run records (``"*"``: a glob of them)."""
    return f"config.resume_{k}.json"


def resumed_configs(run: Path) -> list[tuple[int, Path]]:
    """The configs resumed sessions recorded in the run directory ``run``, with their
    numbers ``k``, oldest first."""
    found = ((_RESUMED.fullmatch(p.name), p) for p in run.glob(resume_config_name("*")))
    return sorted((int(m.group(1)), p) for m, p in found if m)


def named_checkpoints(run: Path) -> list[tuple[int, Path, bool]]:
    """Every checkpoint of either backend in the run directory ``run``, whole or not, by
    its name: its step count, its path and whether it is the rllib backend's
    (``rllib_<steps>/``, else ``ppo_<steps>.zip``), fewest steps first."""
    folder = run / RUN_CHECKPOINTS
    if not folder.is_dir():
        return []
    found = ((checkpoint_name_steps(p.name), p) for p in folder.iterdir())
    return sorted((named[0], p, named[1]) for named, p in found if named)


def whole_checkpoints(run: Path) -> list[tuple[int, Path]]:
    """The checkpoints of either backend in the run directory ``run`` that look whole,
    with their step counts, fewest steps first: ``ppo_<steps>.zip`` by
    :func:`checkpoint_problem`, ``rllib_<steps>/`` by :func:`rllib_checkpoint_problem`."""
    return [(steps, path) for steps, path, rllib in named_checkpoints(run) if _looks_whole(path, rllib)]


def newest_whole_checkpoint(run: Path) -> Path | None:
    """The last of :func:`whole_checkpoints`, checking from the newest back only as far as
    the first whole one (each check reads the checkpoint through)."""
    newest = _newest_whole(run)
    return None if newest is None else newest[1]


def _newest_whole(run: Path, above: int = -1) -> tuple[int, Path] | None:
    """The newest whole checkpoint of ``run`` of more than ``above`` steps, with its step
    count, checking from the newest back only as far as the first whole one."""
    later = (c for c in reversed(named_checkpoints(run)) if c[0] > above)
    return next(((steps, path) for steps, path, rllib in later if _looks_whole(path, rllib)), None)


def _looks_whole(path: Path, rllib: bool) -> bool:
    return (rllib_checkpoint_problem(path) if rllib else checkpoint_problem(path)) is None


def is_run_directory(path: Path) -> bool:
    """Whether a trainer wrote in the folder ``path``: a recorded config, a session or a
    checkpoints folder."""
    return (
        (path / RUN_CONFIG).exists()
        or bool(resumed_configs(path))
        or (path / RUN_SESSIONS).exists()
        or (path / RUN_CHECKPOINTS).is_dir()
    )


def overtaken_model(path: Path, instead: Callable[[Path], str]) -> str | None:
    """Why the model of the run directory ``path`` may not be the one meant: a checkpoint
    of more steps than the model (its ``summary.json`` step count) lies beside it, from a
    later session still training or stopped before its end (a crash, a killed process),
    which writes the model only at its end. The message names both, as ``instead(file)``
    writes them (a command, an agent spec). ``None`` where the model is the newest, or
    where the step counts cannot be read (the model plays all the same)."""
    model = next((path / name for name in MODEL_NAMES if (path / name).is_file()), None)
    steps = None if model is None else _summary_steps(path)
    if model is None or steps is None:
        return None
    newest = _newest_whole(path, above=steps)
    if newest is None:
        return None
    return (
        f"its model ({steps} steps) is older than its checkpoint of {newest[0]} steps, from a later session "
        "still training or stopped before its end; name the one you mean: "
        f"{instead(model)} or {instead(newest[1])}"
    )


def no_model_yet(path: Path, use: str, instead: Callable[[Path], str]) -> str | None:
    """Why the run directory ``path`` gives no model: it has none yet (it is still
    training, or it stopped before its end, when the model is written), and the newest
    whole checkpoint to ``use`` instead, as ``instead(checkpoint)`` writes it (a command,
    an agent spec). ``None`` where ``path`` is no such run: not a folder, a run with its
    model, an RLlib checkpoint, or a folder no trainer wrote. ``llama-rl export`` and
    ``ppo:path=`` both say it."""
    has_model = any((path / name).is_file() for name in MODEL_NAMES) or (path / RLLIB_MODULE_STATE).is_file()
    if not path.is_dir() or has_model or not is_run_directory(path):
        return None
    newest = newest_whole_checkpoint(path)
    whole = "model yet (it is still training, or it stopped before its end, when the model is written)"
    if newest is None:
        return f"the run has no {whole}, and no checkpoint to {use} either"
    return f"the run has no {whole}; {use} its newest checkpoint instead: {instead(newest)}"


def save_actor(actor: Actor, path: str | Path) -> None:
    """Write ``actor`` as a numpy archive (``.npz``): the layers' weights and the
    activation, all a ``ppo`` agent needs to play, with no torch at play time, and what it
    says it was trained at (:data:`TABLE_SIZES_KEY`, :func:`trained_rule_key`). Written
    to a temporary file and moved into place, so it is never half written; an actor
    with NaN or infinite weights (a fit gone wrong) is a ``ValueError``, and nothing is
    written (``ppo:path=`` would refuse the file, and an earlier one would be lost).
    ``path`` is read as :func:`load_actor` reads it (:func:`agents.base.agent_path`: a
    leading ``~`` the home folder, an empty one refused)."""
    path = agent_path(path, "the model path")
    arrays: dict[str, Any] = {"activation": np.array(actor.activation)}
    for k, (wt, b) in enumerate(actor.layers):
        if not (np.isfinite(wt).all() and np.isfinite(b).all()):
            raise ValueError(f"the policy's layer {k} holds NaN or infinite weights: {path} is not written")
        w_key, b_key = layer_keys(k)
        arrays[w_key] = wt.T  # stored as (out, in), like torch
        arrays[b_key] = b
    if actor.table_sizes is not None:
        arrays[TABLE_SIZES_KEY] = np.array(actor.table_sizes, dtype=np.int64)
    for option, values in (actor.trained_rules or {}).items():
        arrays[trained_rule_key(option)] = np.array(values, dtype=np.int64)
    atomic_savez(path, arrays)


TABLE_SIZES_KEY = "table_sizes"
"""The entry of an exported actor (``.npz``) naming the table sizes it was trained at
(written when known; files from before llama-rl 0.3 have none)."""


def trained_rule_key(option: str) -> str:
    """The entry of an exported actor (``.npz``) naming the values of the rule option
    ``option`` it was trained at: ``trained_end_score``, ``trained_hand_size`` (written
    when known; older files have none)."""
    return f"trained_{option}"


class UnseenRules(UserWarning):
    """A model sits at a table whose rules use a value of a rule option it was never
    trained at (:meth:`PPOAgent.forewarn`)."""


def unseen_rules(
    who: str, trained: Mapping[str, tuple[int, ...]] | None, rules: Rules, said: set[tuple[tuple[str, int], ...]]
) -> UnseenRules | None:
    """The :class:`UnseenRules` warning for the model ``who`` (its description), trained at
    ``trained`` (rule option -> values; ``None``: nothing says), at a table of ``rules``:
    ``None`` where it was trained at every value the table uses, or where ``said`` (the
    unseen values named so far, updated) holds them already."""
    trained = trained or {}
    unseen = untrained_rules(trained, rules)
    if not unseen or unseen in said:
        return None
    said.add(unseen)
    was, plays = untrained_rules_said(trained, unseen)
    return UnseenRules(
        f"{who} was trained at {was} only; this table plays {plays}, rules it never saw: it plays all the same "
        "(said once)"
    )


def untrained_rules(trained: Mapping[str, tuple[int, ...]] | None, rules: Rules) -> tuple[tuple[str, int], ...]:
    """The rule options of ``rules``, with their values, that a model trained at
    ``trained`` (rule option -> values; ``None``: nothing says) never saw: ``()`` where it
    saw them all, or where nothing says (an option ``trained`` does not name)."""
    trained = trained or {}
    return tuple((k, v) for k, v in rules.options().items() if k in trained and v not in trained[k])


def untrained_rules_said(
    trained: Mapping[str, tuple[int, ...]] | None, unseen: tuple[tuple[str, int], ...]
) -> tuple[str, str]:
    """How a message says that a model trained at ``trained`` never saw the rule options
    ``unseen`` (:func:`untrained_rules`): what it was trained at (``"end_score 20 and
    30"``) and what the table plays (``"end_score 40"``)."""
    trained = trained or {}
    return ", ".join(f"{k} {and_list(trained[k])}" for k, _ in unseen), ", ".join(f"{k} {v}" for k, v in unseen)


def check_trained_rules(rules: Mapping[str, Iterable[int]]) -> dict[str, tuple[int, ...]] | None:
    """``rules`` (rule option -> the values a model was trained at) in the order
    :func:`llama_env.engine.rule_option_fields` declares the options, each option's values
    a sorted tuple of distinct integers in its range (a hand size in the range of the
    smallest table); ``None`` for an empty mapping. A ``ValueError`` names an unknown
    option or what is wrong with its values."""
    options = {f.name: f for f in rule_option_fields()}
    if not isinstance(rules, Mapping):
        raise ValueError(f"trained rules must map rule options ({', '.join(options)}) to values, got {brief(rules)}")
    unknown = sorted(str(k) for k in rules if k not in options)
    if unknown:
        raise ValueError(f"unknown rule option {unknown[0]!r} (known: {', '.join(options)})")
    checked = {name: _option_values(option, rules[name]) for name, option in options.items() if name in rules}
    return checked or None


def _option_values(option: Field[Any], values: Iterable[int]) -> tuple[int, ...]:
    """``values`` of the rule ``option`` as a sorted tuple of distinct integers in its
    range; a ``ValueError`` naming the option otherwise."""
    return distinct_ints(values, option.metadata["low"], option_high(option, MIN_PLAYERS), f"{option.name} values")


class TrainedAt(NamedTuple):
    """What the sessions of a training run that made a model played (:func:`run_trained_at`)."""

    table_sizes: tuple[int, ...]
    """The table sizes (``players``), sorted, each once."""
    rules: dict[str, tuple[int, ...]]
    """Each rule option's values (:func:`check_trained_rules`); a config without an
    option's key (written before the option existed) played its default."""


def run_table_sizes(file: Path) -> tuple[int, ...] | None:
    """The table sizes the training run that made ``file`` played (:func:`run_trained_at`);
    ``None`` where it cannot tell."""
    trained = run_trained_at(file)
    return None if trained is None else trained.table_sizes


def run_trained_at(file: Path) -> TrainedAt | None:
    """The table sizes and rule option values the training run that made ``file`` played
    (``players``, ``end_score``... of its ``config.json`` and of every resumed session's
    ``config.resume_<k>.json``: a resumed session may change them), when ``file`` is where
    ``llama-rl train`` puts a model: a run directory's model (the sessions up to the step
    count its ``summary.json`` gives), a checkpoint in its ``checkpoints`` folder (the
    sessions that had started before its step), or an RLlib checkpoint's module state
    there, as the run's ``sessions.jsonl`` says; every session where it cannot tell. A
    session that failed before it trained (its config written, no line in
    ``sessions.jsonl``, and no steps it could have trained) is not counted. ``None``
    otherwise, or when a config cannot be read or names no table sizes (the model plays
    all the same); a rule option out of its range or not a number in a config leaves the
    sizes known and the rules empty (unknown)."""
    parents = file.absolute().parents  # not resolved: a model linked into a run is that run's
    steps: int | None = None  # a checkpoint's step count
    if file.suffix == ".pkl":  # runs/<run>/checkpoints/rllib_<steps>/<RLLIB_MODULE_STATE>
        depth = len(RLLIB_MODULE_STATE.parts)  # parents[depth - 1] is rllib_<steps>
        in_run = len(parents) > depth + 1 and parents[depth].name == RUN_CHECKPOINTS
        candidates = [parents[depth + 1]] if in_run else []
        steps = _checkpoint_steps(parents[depth - 1].name) if candidates else None
    else:
        candidates = [parents[0]] if file.name in MODEL_NAMES else []
        if parents[0].name == RUN_CHECKPOINTS and len(parents) > 1:
            candidates = [parents[1]]
            steps = _checkpoint_steps(file.name)
    for run in candidates:
        configs = [run / RUN_CONFIG, *(f for _, f in resumed_configs(run))]
        if steps is None and file.name in MODEL_NAMES:
            steps = _summary_steps(run)
        if steps is not None:
            configs = _started_before(run, configs, steps)
        if not configs:  # a checkpoint of step 0: no session had trained it
            return None
        options = rule_option_fields()
        sizes: set[int] = set()
        values: dict[str, list[Any]] = {option.name: [] for option in options}
        try:
            for config in configs:
                recorded = json.loads(config.read_text(encoding="utf-8"))
                sizes.update(parse_table_sizes(recorded["players"]))
                for option in options:
                    values[option.name].append(recorded.get(option.name, option.default))
        except (OSError, ValueError, TypeError, KeyError, RecursionError, AttributeError):
            return None
        try:  # a bad rule option leaves the table sizes known
            rules = check_trained_rules(values) or {}
        except ValueError:
            rules = {}
        return TrainedAt(tuple(sorted(sizes)), rules)
    return None


def _checkpoint_steps(name: str) -> int | None:
    named = checkpoint_name_steps(name)
    return None if named is None else named[0]


def _summary_steps(run: Path) -> int | None:
    """The step count of a run's model: ``num_timesteps`` of its ``summary.json``, which
    the session that wrote the model wrote with it (``None`` when it cannot be read)."""
    try:
        steps = json.loads((run / "summary.json").read_text(encoding="utf-8"))["num_timesteps"]
    except (OSError, ValueError, TypeError, KeyError, RecursionError):
        return None
    return steps if isinstance(steps, int) and not isinstance(steps, bool) else None


def _started_before(run: Path, configs: list[Path], steps: int) -> list[Path]:
    """The config files of the sessions of ``run`` that had started before ``steps``,
    oldest first: a checkpoint of an early session did not train at the sizes a later
    session resumed it with. A session its record does not name (running, or killed)
    started after the sessions named before it ended, and counts only where it may have
    trained: for steps beyond them, and only if the next session it names went on from
    further than they ended (one that went on from the same step shows that the session
    between failed before it trained). Every file where the record cannot be read."""
    try:
        rows = [json.loads(line) for line in (run / RUN_SESSIONS).read_text(encoding="utf-8").splitlines() if line]
        started = {row["config"]: (int(row["started_at_step"]), int(row["ended_at_step"])) for row in rows}
    except (OSError, ValueError, TypeError, KeyError, RecursionError, AttributeError):
        return configs
    spans = [started.get(config.name) for config in configs]
    out, ended = [], 0
    for k, (config, span) in enumerate(zip(configs, spans, strict=True)):
        if span is None:
            later = next((s for s in spans[k + 1 :] if s is not None), None)
            if steps > ended and (later is None or later[0] > ended):
                out.append(config)
        elif span[0] < steps:
            out.append(config)
        if span is not None:
            ended = max(ended, span[1])
    return out


def _load_npz(file: Path) -> Actor:
    with load_arrays(file) as z:
        names = set(z.files)
        if "activation" not in names or layer_keys(0)[0] not in names:
            raise ValueError(held_instead(names, "actor") or "it is not an exported actor (no activation or w0)")
        layers = []
        k = 0
        while (keys := layer_keys(k))[0] in names:
            layers.append((z[keys[0]], z[keys[1]]))
            k += 1
        activation = str(z["activation"])
        sizes = _integer_entry(z, TABLE_SIZES_KEY)
        rules = {f: _integer_entry(z, trained_rule_key(f.name)) for f in rule_option_fields()}
    _check_layers(layers)
    said = {}
    for option, values in rules.items():
        if values is not None:
            try:
                said[option.name] = _option_values(option, values)
            except ValueError as exc:
                raise ValueError(f"its {trained_rule_key(option.name)} entry: {exc}") from None
    return Actor(layers, activation, None if sizes is None else check_table_sizes(sizes), said or None)


def _integer_entry(z: Any, key: str) -> list[int] | None:
    """The entry ``key`` of the open archive ``z`` as a list of integers, ``None`` where
    it has none; a ``ValueError`` naming the entry where it holds anything else."""
    if key not in z.files:
        return None
    entry = z[key]
    if entry.ndim != 1 or entry.dtype.kind not in "iu":
        raise ValueError(f"its {key} entry is not a list of integers ({entry.dtype}, shape {entry.shape})")
    return list(entry.tolist())


MAX_PICKLE_OPS = 2**20
"""The most opcodes a module state file may hold: a dict of weights pickles in some
twenty an array. The unpickler's stack and memo grow with them (a 9-byte pickle asking
to memoize entry 400,000,000 grew the memo to 6 GB)."""


class _Capped:
    """A binary file as :func:`pickletools.genops` reads it, whose reads never ask for more
    than the file has left: genops reads a length the pickle declares in one call, and a
    file allocates the length asked before it reads (18 bytes declaring 2**36 bytes were a
    ``MemoryError``). A line (of a text opcode) is cut at 1 MiB."""

    def __init__(self, fh: IO[bytes]) -> None:
        self._fh = fh
        self._size = fh.seek(0, io.SEEK_END)
        fh.seek(0)

    def read(self, n: int = -1) -> bytes:
        left = self._size - self._fh.tell()
        return self._fh.read(left if n < 0 else min(n, left))

    def readline(self) -> bytes:
        return self._fh.readline(2**20)

    def tell(self) -> int:
        return self._fh.tell()


def _opcodes(fh: IO[bytes]) -> Iterator[tuple[Any, Any, int | None]]:
    """The opcodes of the pickle in ``fh``, read, not run (:class:`_Capped`); a
    ``ValueError`` where it is cut short or damaged."""
    return pickletools.genops(cast("IO[bytes]", _Capped(fh)))  # what genops calls: read, readline, tell


def _walk_pickle(data: bytes) -> None:
    """Walk the opcodes of the pickle ``data`` without running any, and refuse one that
    would make the unpickler allocate beyond what the file holds: more than
    :data:`MAX_PICKLE_OPS` opcodes, a memo entry further than the opcodes before it
    could fill (the memo is made as long as the entry asks), a frame longer than the
    file. A pickle cut short or damaged is an ``UnpicklingError`` (an empty one an
    ``EOFError``), as the unpickler would have named it."""
    if not data:
        raise EOFError("the file is empty")
    ops = _opcodes(io.BytesIO(data))
    count = 0
    while True:
        try:
            op = next(ops, None)
        except ValueError as exc:
            raise pickle.UnpicklingError(f"its pickle is damaged: {error_line(exc)}") from None
        if op is None:
            return
        opcode, arg, _ = op
        if count >= MAX_PICKLE_OPS:
            raise ValueError(f"its pickle holds more than {MAX_PICKLE_OPS:,} opcodes, more than weights need")
        if opcode.name in ("PUT", "BINPUT", "LONG_BINPUT") and isinstance(arg, int) and arg > count:
            raise ValueError(f"its pickle memoizes entry {arg:,} after {count:,} opcodes (refused: a damaged pickle)")
        if opcode.name == "FRAME" and isinstance(arg, int) and arg > len(data):
            raise ValueError(f"its pickle declares a frame of {arg:,} bytes in a file of {len(data):,}")
        count += 1


def _number_dtype(dtype: Any) -> np.dtype[Any]:
    """``dtype`` as numpy's own dtype of plain numbers (bool, integer, float, complex);
    a ``ValueError`` for anything else. A pickle may set a dtype's flags (a ``V8`` marked
    as holding Python objects reads pointers from the file's bytes): numpy's dtype of
    the same name is used instead."""
    dtype = np.dtype(dtype)
    if dtype.kind not in "biufc" or dtype.fields is not None or dtype.subdtype is not None:
        raise ValueError(f"it holds an array of {dtype.str[:40]!r}, not of numbers")
    return np.dtype(dtype.str)


class _ArraysOnly(pickle.Unpickler):
    """Unpickles a dict of numpy arrays and nothing else: a module state file is a pickle,
    and a pickle may name any callable; this one may name only what rebuilds arrays, of
    numbers, :data:`agents.base.MAX_ARRAY_BYTES` of them together at most (a 294-byte
    pickle asked for 1.5 GB arrays that were never filled). Unpickle only what
    :func:`_walk_pickle` passed."""

    _ALLOWED = {
        ("collections", "OrderedDict"),
        ("numpy", "ndarray"),
        ("numpy", "dtype"),
        ("numpy.core.multiarray", "_reconstruct"),
        ("numpy._core.multiarray", "_reconstruct"),
        ("numpy.core.multiarray", "scalar"),
        ("numpy._core.multiarray", "scalar"),
        ("numpy.core.numeric", "_frombuffer"),
        ("numpy._core.numeric", "_frombuffer"),
    }

    def __init__(self, file: IO[bytes]) -> None:
        super().__init__(file)
        self._left = MAX_ARRAY_BYTES
        self._array = self._array_type()

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) not in self._ALLOWED:
            raise ValueError(f"it holds a {module}.{name}, not only numpy arrays (refused: a pickle may run code)")
        found = super().find_class(module, name)
        if name == "ndarray":
            return self._array
        if name == "_reconstruct":
            return lambda subtype, shape, dtype: found(self._array_of(subtype), shape, self._take(shape, dtype))
        if name == "scalar":
            return lambda dtype, *args: found(_number_dtype(dtype), *args)
        if name == "_frombuffer":
            return lambda buf, dtype, shape, order: found(buf, self._take(shape, dtype), shape, order)
        return found

    def _take(self, shape: Any, dtype: Any) -> np.dtype[Any]:
        """Count an array of ``shape`` and ``dtype`` against what is left of the bound,
        before it is made; numpy's dtype of its name (:func:`_number_dtype`)."""
        dtype = _number_dtype(dtype)
        dims = shape if isinstance(shape, (tuple, list)) else (shape,)
        size = dtype.itemsize
        for n in dims:
            size *= max(operator.index(n), 0)
        if size > self._left:
            raise too_large("its arrays hold", MAX_ARRAY_BYTES)
        self._left -= size
        return dtype

    def _array_of(self, subtype: Any) -> type[np.ndarray]:
        if subtype is not self._array:
            raise ValueError(f"it rebuilds an array as {brief(subtype)}, not as a numpy array")
        return self._array

    def _array_type(self) -> type[np.ndarray]:
        """What the pickle's ``numpy.ndarray`` stands for: the class whose arrays count
        against the bound as they are made (called) and filled (``__setstate__``)."""
        take = self._take

        class Array(np.ndarray):
            def __new__(cls, shape: Any, dtype: Any = float, *args: Any, **kwargs: Any) -> np.ndarray:  # type: ignore[misc]
                return np.ndarray(shape, take(shape, dtype), *args, **kwargs)

            def __setstate__(self, state: Any) -> None:
                if not isinstance(state, tuple) or len(state) not in (4, 5):
                    raise ValueError("it holds an array of a state numpy does not write")
                *version, shape, dtype, fortran, data = state
                super().__setstate__((*version, shape, take(shape, dtype), fortran, data))

        return Array


def _rllib_activation(state_file: Path) -> str:
    """The activation of the run an RLlib checkpoint belongs to: ``state_file`` lies at
    ``<run>/checkpoints/rllib_<steps>/`` + :data:`RLLIB_MODULE_STATE`, the activation in
    ``<run>/config.json`` (it cannot change when a run is resumed)."""
    checkpoint = state_file
    for _ in RLLIB_MODULE_STATE.parts:
        checkpoint = checkpoint.parent
    config = checkpoint.parent.parent / RUN_CONFIG
    try:
        activation = json.loads(config.read_text(encoding="utf-8")).get("activation")
    except (OSError, ValueError, AttributeError, RecursionError):
        raise ValueError(
            f"its activation is recorded in its run's config.json, and {config} cannot be read "
            "(load the run directory's model.npz, or keep the checkpoint inside its run)"
        ) from None
    if activation not in ("tanh", "relu"):
        raise ValueError(f"{config} records the activation {activation!r}; expected 'tanh' or 'relu'")
    return str(activation)


def _load_rllib_state(file: Path) -> Actor:
    """The actor of an RLlib checkpoint: its actor encoder's linear layers, then the
    policy head (what the trainer exports as ``model.npz``), with no Ray or torch."""
    size = file.stat().st_size
    if size > MAX_ARRAY_BYTES:
        raise too_large(f"it is {size:,} bytes,", MAX_ARRAY_BYTES)
    data = file.read_bytes()
    _walk_pickle(data)
    state = _ArraysOnly(io.BytesIO(data)).load()
    if not isinstance(state, dict):
        raise ValueError("its module state is not a dict of weights")

    def linear(prefix: str) -> list[tuple[np.ndarray, np.ndarray]]:
        indices = sorted(
            int(k[len(prefix) : -len(".weight")])
            for k in state
            if k.startswith(prefix) and k.endswith(".weight") and k[len(prefix) : -len(".weight")].isdigit()
        )
        return [(np.asarray(state[f"{prefix}{i}.weight"]), np.asarray(state[f"{prefix}{i}.bias"])) for i in indices]

    try:
        encoder, head = linear("encoder.actor_encoder.net.mlp."), linear("pi.net.mlp.")
    except KeyError as exc:
        raise ValueError(f"its module state has a weight without its bias ({exc})") from None
    if not encoder or not head:
        raise ValueError("its module state has no actor encoder (encoder.actor_encoder) or no policy head (pi)")
    layers = encoder + head
    _check_layers(layers)
    return Actor(layers, _rllib_activation(file))


def load_actor(path: str | Path, spec: str = "ppo:path=") -> Actor:
    """Read the actor from a MaskablePPO ``.zip`` (``policy.pth`` state dict) without
    building the whole algorithm, from an exported ``.npz``, or from an RLlib checkpoint's
    module state: fast, CPU only. ``path`` may be a run directory (its model, of either
    trainer) or an RLlib checkpoint directory; for a run without its model yet, the
    message names its newest checkpoint as ``spec`` (the caller's words) would take it
    (:func:`model_file`).

    The actor's :attr:`Actor.table_sizes` are those the ``.npz`` names, else those of
    the run directory the model sits in (:func:`run_table_sizes`), else ``None`` (the
    shipped specialists' files name theirs); its :attr:`Actor.trained_rules` likewise,
    option by option (:func:`run_trained_at`).

    Raises ``ValueError`` naming the file for anything that is not a readable model of
    this game's shapes (empty, truncated or corrupt file, missing entries, garbage
    weights), and ``ModuleNotFoundError`` naming the extra when torch is missing for a
    ``.zip``.
    """
    file = model_file(path, spec)
    return with_run_trained_at(_load_actor_file(file), file)


def with_run_trained_at(actor: Actor, file: Path) -> Actor:
    """``actor``, the policy of ``file``, saying the table sizes and rule options that
    the training run that made ``file`` played (:func:`run_trained_at`) where it says
    nothing of them itself: what :func:`load_actor` reads, ``llama-rl export`` writes, and
    the rllib trainer writes into a run's ``model.npz`` (from the checkpoint saved with
    it), so that a copy of that file alone keeps them."""
    said = actor.trained_rules or {}
    if actor.table_sizes is None or len(said) < len(rule_option_fields()):
        run = run_trained_at(file)
        if run is not None:
            actor.table_sizes = actor.table_sizes or run.table_sizes
            actor.trained_rules = {**run.rules, **said} or None  # what the file says wins
    return actor


def _load_actor_file(file: Path) -> Actor:
    if file.suffix in (".npz", ".pkl"):
        try:
            return _load_npz(file) if file.suffix == ".npz" else _load_rllib_state(file)
        except Exception as exc:  # noqa: BLE001 - a bad archive raises many types
            raise _unreadable(file, exc) from None
    try:
        import torch
    except ImportError:
        raise MissingExtra(
            "the ppo agent reads its model with torch, which is not installed", "train", name="torch"
        ) from None

    try:
        data, weights = read_save(file)
        state = torch.load(io.BytesIO(weights[SB3_POLICY_WEIGHTS]), map_location="cpu", weights_only=True)
        actor = _actor_from_state(state, data)
    except Exception as exc:  # noqa: BLE001 - a bad zip or unpickling garbage raises many types
        raise _unreadable(file, exc) from None
    return actor


def _unreadable(file: Path, exc: Exception) -> ValueError:
    """One line naming ``file``: our own ``ValueError`` as it is, anything else (a bad zip,
    unpickling garbage, and ``ValueError`` subclasses such as ``UnicodeDecodeError``) with
    its type, so the message never depends on which byte of the garbage failed first."""
    if type(exc) is ValueError:
        return ValueError(f"cannot load a PPO model from {file}: {exc}")
    return ValueError(f"cannot load a PPO model from {file}: {torch_load_error(exc)}")


def torch_load_error(exc: BaseException, limit: int = 160) -> str:
    """``exc`` of loading weights with torch in one line (:func:`error_line`), except
    torch's refusal of a file that holds more than tensors: its message advises loading
    the file with ``weights_only=False``, which would run any code the file names."""
    if "Weights only load failed" in str(exc):
        return (
            f"{type(exc).__name__}: its weights file is damaged or holds more than plain tensors "
            "(refused: loading such a file could run code)"
        )
    return error_line(exc, limit)


@functools.cache
def shipped_actor(file: Path) -> Actor:
    """A model shipped with the package, read once per process and shared by every agent
    that plays it (its weights are read-only: an agent never changes them). A user's
    model file is read again each time (:func:`load_actor`): it may have changed."""
    actor = load_actor(file)
    for w, b in actor.layers:
        w.setflags(write=False)
        b.setflags(write=False)
    return actor


def _actor_from_state(state: Any, data: Any) -> Actor:
    if not isinstance(state, dict) or not isinstance(data, dict):
        raise ValueError("its policy weights or data are not what MaskablePPO saves")
    act = _activation(data.get("policy_kwargs"))
    try:
        layers = [(state[f"{name}.weight"].numpy(), state[f"{name}.bias"].numpy()) for name in sb3_hidden_layers(state)]
        layers.append((state["action_net.weight"].numpy(), state["action_net.bias"].numpy()))
    except KeyError as exc:
        raise ValueError(f"its policy has no {exc.args[0]!r} weights") from None
    _check_layers(layers)
    return Actor(layers, act)


_TORCH_ACTIVATIONS = {"Tanh": "tanh", "ReLU": "relu"}
_ACTIVATION_NAME = re.compile(
    rb"\b(LeakyReLU|ReLU6|ReLU|Tanh|Hardtanh|ELU|SELU|CELU|GELU|SiLU|Mish|Sigmoid|Softplus)\b"
)


def _activation(kwargs: Any) -> str:
    """The policy's activation from the zip's ``policy_kwargs``: SB3 writes the class as
    text (``"<class 'torch.nn.modules.activation.ReLU'>"``) beside the whole dict pickled
    (``":serialized:"``), or as a dict with its own pickle; SB3's default when none is
    recorded, tanh. One the actor cannot play is a ``ValueError``: read as tanh, a relu
    policy played other moves (it did until 2026-12-05)."""
    if not isinstance(kwargs, dict):
        return "tanh"
    fn = kwargs.get("activation_fn")
    texts = [fn.encode() if isinstance(fn, str) else b""]
    for blob in (fn.get(":serialized:") if isinstance(fn, dict) else None, kwargs.get(":serialized:")):
        with contextlib.suppress(ValueError):  # not base64: the text form decides
            texts.append(base64.b64decode(blob) if isinstance(blob, str) else b"")
    found = {m.decode() for t in texts for m in _ACTIVATION_NAME.findall(t)}
    if not found:
        return "tanh"
    if len(found) > 1 or not found <= set(_TORCH_ACTIVATIONS):
        raise ValueError(
            f"its policy's activation is {'/'.join(sorted(found))}; the ppo agent plays tanh or relu networks"
        )
    return _TORCH_ACTIVATIONS[found.pop()]


def _check_layers(layers: list[tuple[np.ndarray, np.ndarray]]) -> None:
    """Weights of shapes (out, in) that chain from the observation (of any version)
    to the 9 actions."""
    first = layers[0][0] if layers else None
    sizes = list(VERSION_OF_SIZE)
    width = first.shape[1] if first is not None and np.ndim(first) == 2 and first.shape[1] in sizes else OBS_SIZE
    for k, (w, b) in enumerate(layers):
        kinds = {np.asarray(w).dtype.kind, np.asarray(b).dtype.kind}
        if kinds != {"f"}:  # integers would be read as weights silently, strings fail deep inside
            raise ValueError(
                f"layer {k} holds weights of type {np.asarray(w).dtype} and bias of type {np.asarray(b).dtype}; "
                "a model's weights are floating-point numbers"
            )
        if w.ndim != 2 or b.shape != (w.shape[0],) or w.shape[1] != width:
            expected = (
                " or ".join(f"(N, {n})" for n in sizes)
                + f" for this game's observations (version {' or '.join(map(str, OBS_VERSIONS))})"
                if k == 0
                else f"(N, {width})"
            )
            raise ValueError(
                f"layer {k} has weights of shape {tuple(w.shape)} and bias {tuple(b.shape)}; "
                f"expected {expected} and (N,)"
            )
        if not (np.isfinite(w).all() and np.isfinite(b).all()):
            raise ValueError(f"layer {k} holds NaN or infinite weights")
        width = w.shape[0]
    if width != NUM_ACTIONS:
        raise ValueError(f"its action layer has {width} outputs; this game has {NUM_ACTIONS} actions")


_TABLE_SIZE = SLICES["num_players"]
read_top_card, read_table_size = one_hot_reader("top_card"), one_hot_reader("num_players")
"""The one-hot fields that ``ppo``'s and ``search``'s ``act`` check (their ``act_batch`` reads them unchecked)."""


@register("ppo", group="policy")
class PPOAgent(BaseAgent):
    """Specialists at 2, 4 and 6 players, the general model at 3 and 5 (or any model:
    path=...); argmax over the legal actions."""

    name = "ppo"

    def __init__(self, path: str | None = None, deterministic: bool = True, seed: int | None = None) -> None:
        super().__init__(seed)
        if path is not None and not isinstance(path, (str, Path)):
            raise ValueError(
                f"PPOAgent path must be a model file, a run directory or an RLlib checkpoint, got {path!r}"
            )
        self.deterministic = check_flag("PPOAgent deterministic", deterministic)
        self.path: Path | None = model_file(path) if path is not None else DEFAULT_MODEL
        self.actor = load_actor(self.path) if path is not None else shipped_actor(self.path)
        """The model played at every table size without a specialist."""
        shipped = SHIPPED.get(self.name, {}) if path is None else {}
        self.specialists: dict[int, Actor] = {n: shipped_actor(f) for n, f in shipped.items()}
        """Table size -> the model played there instead of :attr:`actor`."""
        self._said: set[tuple[tuple[str, int], ...]] = set()  # the unseen rules forewarn has named

    @classmethod
    def from_actor(cls, actor: Actor, deterministic: bool = True, seed: int | None = None) -> PPOAgent:
        """An agent around an in-memory :class:`Actor` (e.g. the policy being trained)."""
        agent = cls.__new__(cls)
        BaseAgent.__init__(agent, seed)
        agent.path = None
        agent.deterministic = bool(deterministic)
        agent.actor = actor
        agent.specialists = {}
        agent._said = set()
        return agent

    @property
    def table_sizes(self) -> tuple[int, ...] | None:
        """The table sizes its one model (``path``) was trained at, where the model's
        file or run directory says (:attr:`Actor.table_sizes`); evaluation warns when it
        sits at another. ``None`` where nothing says, and for the shipped agents."""
        return None if self.specialists else self.actor.table_sizes

    @property
    def trained_rules(self) -> dict[str, tuple[int, ...]] | None:
        """The rule option values its one model (``path``) was trained at, where the
        model's file or run directory says (:attr:`Actor.trained_rules`); ``None`` where
        nothing says, and for the shipped agents."""
        return None if self.specialists else self.actor.trained_rules

    def forewarn(self, rules: Rules) -> Warning | None:
        """An :class:`UnseenRules` warning when ``rules`` use a value of a rule option its
        model was never trained at (:attr:`trained_rules`), given once for those values
        (:func:`llama_env.agent.forewarn`: evaluation asks it before any game); ``None``
        where the model was trained at them, or says nothing. It plays all the same."""
        return unseen_rules(repr(self), self.trained_rules, rules, self._said)

    @property
    def obs_version(self) -> int:
        """The observation version the agent reads (the table driver encodes it so): the
        newest its models read (a version-1 vector starts with the version-0 one)."""
        return max([self.actor.obs_version, *(a.obs_version for a in self.specialists.values())])

    @property
    def obs_size(self) -> int:
        """The length of the observations the agent reads (it also takes the shorter ones
        of :attr:`actor`'s version, and then plays :attr:`actor` alone, and those of a
        later version, whose first entries it reads)."""
        return max([self.actor.obs_size, *(a.obs_size for a in self.specialists.values())])

    def act(self, observation: np.ndarray, action_mask: np.ndarray) -> int:
        """The move of the model for the observation's table size: the legal action it
        rates best, or one drawn from its masked policy (``deterministic=False``)."""
        check_observation(observation)
        if np.shape(observation)[0] < self.actor.obs_size:  # a later version's starts with this one's
            raise ValueError(
                f"this PPO agent reads version-{self.obs_version} observations of {self.obs_size} values, "
                f"got {np.shape(observation)[0]} (use an env with obs_version={self.obs_version}, e.g. "
                f"{'Llama-v1' if self.obs_version else 'Llama-v0'})"
            )
        entries = mask_list(action_mask)
        if not any(entries):  # on the list: ndarray.any() costs a microsecond, a twentieth of act
            raise ValueError("PPOAgent.act: the action mask has no legal action")
        mask = np.asarray(entries, dtype=bool).reshape(1, -1)
        check_finite(observation)
        obs = np.asarray(observation, dtype=np.float32).reshape(1, -1)
        row = obs[0]
        read_top_card(row)  # checked here: act_batch reads the one-hot blocks unchecked
        return int(self._play(self._model(read_table_size(row), obs.shape[1]), obs, mask)[0])

    def act_batch(self, observations: np.ndarray, action_masks: np.ndarray) -> np.ndarray:
        """Actions for many observations at once (one forward pass per model); the table
        size is read by its block's largest entry, unchecked (:meth:`act` checks it)."""
        obs = np.asarray(observations, dtype=np.float32)
        masks = np.asarray(action_masks).astype(bool)
        sizes = sorted((n for n in VERSION_OF_SIZE if n >= self.actor.obs_size), reverse=True)
        if obs.ndim != 2 or obs.shape[1] not in sizes or masks.shape != (len(obs), NUM_ACTIONS):
            shapes = " or ".join(f"(B, {n})" for n in sizes)
            raise ValueError(
                f"PPOAgent.act_batch takes observations {shapes} and masks (B, {NUM_ACTIONS}), "
                f"got {obs.shape} and {masks.shape}"
            )
        if not masks.any(axis=1).all():
            raise ValueError("PPOAgent.act_batch: an action mask has no legal action")
        check_finite(obs)
        return self._act(obs, masks)

    def _model(self, players: int, width: int) -> Actor:
        """The model that plays at a table of ``players`` given observations of ``width``
        values: its specialist there, if it has one that reads them (a specialist needs its
        observation version: given an older, shorter observation, ``Llama-v0``'s say,
        :attr:`actor` plays every table size), else :attr:`actor`. :meth:`act` and
        :meth:`_act` both choose by it."""
        specialist = self.specialists.get(players)
        return specialist if specialist is not None and specialist.obs_size <= width else self.actor

    def _play(self, actor: Actor, obs: np.ndarray, masks: np.ndarray) -> np.ndarray:
        """``actor``'s moves for the rows of ``obs``, on the part of them that it reads."""
        return actor.act_batch(obs[:, : actor.obs_size], masks, self.deterministic, self.rng)

    def _act(self, obs: np.ndarray, masks: np.ndarray) -> np.ndarray:
        """Each row played by the model for its table size (read from the observation's
        one-hot ``num_players``, :meth:`_model`), the specialists' rows first."""
        width = obs.shape[1]
        usable = {n: specialist for n, specialist in self.specialists.items() if self._model(n, width) is specialist}
        if not usable:
            return self._play(self.actor, obs, masks)
        sizes = obs[:, _TABLE_SIZE].argmax(axis=1) + MIN_PLAYERS
        out = np.empty(len(obs), dtype=np.int64)
        rest = np.ones(len(obs), dtype=bool)
        for n, specialist in usable.items():
            rows = sizes == n
            if rows.any():
                out[rows] = self._play(specialist, obs[rows], masks[rows])
                rest &= ~rows
        if rest.any():
            out[rest] = self._play(self.actor, obs[rest], masks[rest])
        return out

    def __repr__(self) -> str:
        if type(self) is not PPOAgent or self.specialists:  # a shipped agent: its name says which models
            return f"{type(self).__name__}(deterministic={self.deterministic})"
        return f"PPOAgent(path={str(self.path)!r}, deterministic={self.deterministic})"


class _EarlierShippedAgent(PPOAgent):
    """An earlier shipped agent: the models :data:`SHIPPED` lists under its ``name``, the
    general model at every other table size; it takes no ``path``."""

    def __init__(self, deterministic: bool = True, seed: int | None = None) -> None:
        super().__init__(None, deterministic, seed)


@register("ppo_v0", group="history")
class PPOv0Agent(_EarlierShippedAgent):
    """The first shipped PPO agent: one model (observation version 0) at every table size."""

    name = "ppo_v0"


@register("ppo_v1", group="history")
class PPOv1Agent(_EarlierShippedAgent):
    """The second shipped PPO agent: the first heads-up specialist at 2 players, the
    general model at 3 to 6."""

    name = "ppo_v1"


@register("ppo_v2", group="history")
class PPOv2Agent(_EarlierShippedAgent):
    """The third shipped PPO agent: ppo_v3's heads-up specialist at 2 players, the general
    model at 3 to 6."""

    name = "ppo_v2"


@register("ppo_v3", group="history")
class PPOv3Agent(_EarlierShippedAgent):
    """The fourth shipped PPO agent: the specialists at 2, 4 and 6 players as PPO left them,
    before llama-rl distill."""

    name = "ppo_v3"


@register("ppo_v4", group="history")
class PPOv4Agent(_EarlierShippedAgent):
    """The fifth shipped PPO agent: the specialists after two rounds of llama-rl distill at
    2, 4 and 6 players (ppo's before its third round at 4 players)."""

    name = "ppo_v4"
