"""stable-baselines3's internals, in one guarded place: resuming a MaskablePPO model file
without unpickling anything in it.

SB3's own ``MaskablePPO.load`` cloudpickle-loads every ``":serialized:"`` entry of the
file's ``data`` (the policy class, the spaces, the learning-rate function, the episode
buffer) before it checks anything, so resuming a model file from a stranger ran whatever
code the file held. The trainer instead builds the model as a new run does and puts back
only what a resume needs, read without unpickling (:func:`read_model_file`,
:func:`restore`): the policy's and its optimizer's state dicts, through
``torch.load(weights_only=True)``, and plain numbers and texts of the ``data`` JSON, every
``":serialized:"`` entry left unread.

What it assumes of SB3's save format and of MaskablePPO, checked against
**stable-baselines3 and sb3-contrib 2.9**; :func:`broken_assumptions` checks each, and
``tests/train/test_safe_resume.py`` fails, naming SB3's version and the assumption, when
an upgrade breaks one:

1. ``model.save`` writes a zip whose ``data`` entry is JSON holding the counters of
   :data:`COUNTERS` and ``seed`` as plain numbers, the keys of ``policy_kwargs`` as
   readable entries (the activation as the text ``"<class '...Tanh'>"``) and the
   observation space's ``low`` and ``high`` as the arrays' ``str``, beside their pickles;
2. the algorithm's torch state is exactly the state dicts named in :data:`STATE_DICTS`
   (``_get_torch_save_params``), saved as ``<name>.pth``, which
   ``torch.load(weights_only=True)`` reads;
3. the policy's layers are ``mlp_extractor.policy_net.<i>`` and
   ``mlp_extractor.value_net.<i>`` (``Linear`` at even ``i``), ``action_net`` and
   ``value_net``, as :func:`agents.ppo.sb3_hidden_layers` reads them (the ``ppo`` agent
   reads its actor so too);
4. ``set_parameters(state_dicts, exact_match=True)`` puts both state dicts in place (the
   optimizer's step counts with them) and refuses a network of other layers;
5. the counters are the model's plain attributes, and ``learn(reset_num_timesteps=False)``
   continues them.

A model built as a new run does, with the file's ``seed`` (SB3's ``load`` seeded torch and
the games with it), and restored so, learns on exactly as one that ``load`` made.
"""

from __future__ import annotations

import io
import re
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from agents.ppo import read_save, sb3_hidden_layers

__all__ = [
    "CHECKED_VERSION",
    "COUNTERS",
    "STATE_DICTS",
    "SavedModel",
    "broken_assumptions",
    "read_model_file",
    "restore",
]

CHECKED_VERSION = "2.9"
"""The stable-baselines3 (and sb3-contrib) minor version the assumptions were checked against."""

STATE_DICTS = ("policy", "policy.optimizer")
"""The torch state of a MaskablePPO model: its ``.pth`` entries, by the attribute they restore."""

COUNTERS = ("num_timesteps", "_n_updates", "_episode_num")
"""The plain counters a resumed model continues (the step count, the updates TensorBoard
counts, the episodes); everything else of the model is this session's."""

_POLICY_KWARGS = ("net_arch", "activation_fn")  # the policy settings the trainer makes
_CLASS_NAME = re.compile(r"<class '(?:[\w.]*\.)?(\w+)'>")


@dataclass(frozen=True)
class SavedModel:
    """What a resume takes from a MaskablePPO model file, read without unpickling."""

    state_dicts: dict[str, Any]
    """:data:`STATE_DICTS` by name: tensors only."""
    counters: dict[str, int]
    """Those of :data:`COUNTERS` the file holds as plain integers."""
    seed: int | None
    """The seed the model was made with (``None``: none recorded)."""
    obs_size: int
    """The length of the observation the network reads."""
    policy_layers: tuple[int, ...]
    """The hidden layers' sizes of the policy network."""
    value_layers: tuple[int, ...]
    """The hidden layers' sizes of the value network."""
    activation: str
    """The activation's torch class name (``"Tanh"``; SB3's default when none is recorded)."""
    other_policy_kwargs: tuple[str, ...]
    """Policy settings the file records beside the network's (those the trainer never makes)."""
    obs_bounds: tuple[np.ndarray, np.ndarray] | None
    """The observation space's ``low`` and ``high`` (``None``: not readable)."""


def read_model_file(path: Path) -> SavedModel:
    """The parts of the model file at ``path`` a resume takes, read by
    :func:`agents.ppo.read_save` (the bounds and checks every reader of a save has).
    Raises ``ValueError`` for a file that is not a MaskablePPO save, and whatever
    ``zipfile`` and ``torch.load`` raise for a damaged one (torch's ``UnpicklingError``
    for a ``.pth`` that holds more than tensors: it is refused, not run)."""
    import torch

    data, weights = read_save(path, (f"{s}.pth" for s in STATE_DICTS))
    state_dicts = {
        s: torch.load(io.BytesIO(weights[f"{s}.pth"]), map_location="cpu", weights_only=True) for s in STATE_DICTS
    }
    if not isinstance(data, dict) or not all(isinstance(v, dict) for v in state_dicts.values()):
        raise ValueError("its data or state dicts are not what MaskablePPO saves")
    policy = state_dicts["policy"]
    pi = [policy[f"{name}.weight"] for name in sb3_hidden_layers(policy, "policy")]
    vf = [policy[f"{name}.weight"] for name in sb3_hidden_layers(policy, "value")]
    first = pi[0] if pi else policy.get("action_net.weight")
    if not isinstance(first, torch.Tensor) or first.ndim != 2:
        raise ValueError("its policy has no 'action_net.weight' weights")
    kwargs = data.get("policy_kwargs")
    kwargs = kwargs if isinstance(kwargs, dict) else {}
    fn = kwargs.get("activation_fn", "<class 'torch.nn.modules.activation.Tanh'>")  # SB3's default
    named = _CLASS_NAME.fullmatch(fn) if isinstance(fn, str) else None
    seed = data.get("seed")
    return SavedModel(
        state_dicts=state_dicts,
        counters={c: data[c] for c in COUNTERS if _plain_int(data.get(c))},
        seed=seed if _plain_int(seed) else None,
        obs_size=int(first.shape[1]),
        policy_layers=tuple(int(w.shape[0]) for w in pi),
        value_layers=tuple(int(w.shape[0]) for w in vf),
        activation=named.group(1) if named else str(fn),
        other_policy_kwargs=tuple(sorted(k for k in kwargs if not k.startswith(":") and k not in _POLICY_KWARGS)),
        obs_bounds=_bounds(data.get("observation_space")),
    )


def restore(model: Any, saved: SavedModel) -> None:
    """Put ``saved``'s state dicts and counters into ``model``, a MaskablePPO built as a new
    run does with the same network; a network of other layers raises (``RuntimeError`` or
    ``ValueError``, from torch or SB3) and leaves ``model`` unusable."""
    model.set_parameters(dict(saved.state_dicts), exact_match=True, device=model.device)
    for name, value in saved.counters.items():
        setattr(model, name, value)


def _plain_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _bounds(space: Any) -> tuple[np.ndarray, np.ndarray] | None:
    """The ``low`` and ``high`` a Box's readable entries write (``str`` of the arrays)."""
    if not isinstance(space, dict):
        return None
    try:
        low, high = (
            np.array(str(space[k]).replace("[", " ").replace("]", " ").split(), dtype=np.float64)
            for k in ("low", "high")
        )
    except (KeyError, ValueError):  # not readable, or summarised with "..."
        return None
    return (low, high) if low.shape == high.shape and low.size else None


# --------------------------------------------------------------------------- the check


def broken_assumptions() -> list[str]:
    """What of the module docstring no longer holds, numbered as there (``[]``: all
    holds): a small model is trained and saved; the file is read back with
    :func:`read_model_file` into a model built afresh, compared with the original, and
    trained on beside SB3's own ``load`` of the same file."""
    import torch
    from sb3_contrib import MaskablePPO

    from train.training.sb3.vec_env import BatchedLlamaVecEnv

    envs: list[Any] = []

    def env() -> Any:  # each model its own games: alike, as long as each is made alike
        envs.append(BatchedLlamaVecEnv(4, players=2, opponents="random", seed=3))
        return envs[-1]

    kwargs: dict[str, Any] = dict(n_steps=8, batch_size=16, n_epochs=2, device="cpu", verbose=0)
    net = dict(pi=[8, 8], vf=[8, 8])
    problems: list[str] = []
    try:
        model = MaskablePPO(
            "MlpPolicy", env(), policy_kwargs=dict(net_arch=net, activation_fn=torch.nn.ReLU), seed=5, **kwargs
        )
        model.learn(32)
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "model.zip"
            model.save(path)
            problems += _format_problems(path, model)
            saved = read_model_file(path)
            if (saved.policy_layers, saved.value_layers, saved.activation) != ((8, 8), (8, 8), "ReLU"):
                problems.append(
                    f"3: the layers read are policy {saved.policy_layers}, value {saved.value_layers}, "
                    f"{saved.activation}; saved 8,8 ReLU"
                )
            fresh = MaskablePPO(
                "MlpPolicy",
                env(),
                policy_kwargs=dict(net_arch=net, activation_fn=torch.nn.ReLU),
                seed=saved.seed,
                **kwargs,
            )
            restore(fresh, saved)
            problems += _restored_problems(fresh, model)
            fresh.learn(32, reset_num_timesteps=False)
            loaded = MaskablePPO.load(path, env=env(), device="cpu")  # our own file: SB3's load is safe here
            loaded.learn(32, reset_num_timesteps=False)
            if (fresh.num_timesteps, fresh._n_updates) != (model.num_timesteps + 32, model._n_updates + 2):
                problems.append(
                    f"5: learning 32 steps on from {model.num_timesteps} steps, {model._n_updates} updates reached "
                    f"{fresh.num_timesteps} steps, {fresh._n_updates} updates"
                )
            if not _same(fresh.policy.state_dict(), loaded.policy.state_dict()):
                problems.append("5: the restored model learned other weights than SB3's load of the same file")
            problems += _refusal_problems(env(), saved, kwargs)
    except Exception as exc:  # noqa: BLE001 - an SB3 that changed may fail anywhere: say where
        problems.append(f"checking them raised {type(exc).__name__}: {exc}")
    finally:
        for e in envs:
            e.close()
    return problems


def _format_problems(path: Path, model: Any) -> list[str]:
    problems = []
    data, _ = read_save(path, ())
    with zipfile.ZipFile(path) as zf:
        pth = sorted(n[: -len(".pth")] for n in zf.namelist() if n.endswith(".pth") and n != "pytorch_variables.pth")
    for name in (*COUNTERS, "seed"):
        if not _plain_int(data.get(name)) or data[name] != getattr(model, name):
            problems.append(f"1: the data's {name!r} is {data.get(name)!r}, the model's {getattr(model, name)!r}")
    fn = data.get("policy_kwargs", {}).get("activation_fn")
    if not (isinstance(fn, str) and _CLASS_NAME.fullmatch(fn) and fn.endswith(".ReLU'>")):
        problems.append(f"1: the data's policy_kwargs name the activation as {fn!r}")
    bounds = _bounds(data.get("observation_space"))
    space = model.observation_space
    if bounds is None or not (np.allclose(bounds[0], space.low) and np.allclose(bounds[1], space.high)):
        problems.append("1: the data's observation_space has no readable low and high of the model's")
    if tuple(model._get_torch_save_params()[0]) != STATE_DICTS or model._get_torch_save_params()[1]:
        problems.append(f"2: the torch state is {model._get_torch_save_params()}, not {list(STATE_DICTS)}")
    if tuple(pth) != tuple(sorted(STATE_DICTS)):
        problems.append(f"2: the zip's state dicts are {pth}")
    return problems


def _restored_problems(fresh: Any, model: Any) -> list[str]:
    problems = []
    if not _same(fresh.policy.state_dict(), model.policy.state_dict()):
        problems.append("4: set_parameters did not put the policy's weights back")
    steps = [float(s["step"]) for s in fresh.policy.optimizer.state_dict()["state"].values()]
    want = [float(s["step"]) for s in model.policy.optimizer.state_dict()["state"].values()]
    if not want or steps != want:
        problems.append(f"4: set_parameters put the optimizer's step counts {steps} back, not {want}")
    for name in COUNTERS:
        if getattr(fresh, name) != getattr(model, name):
            problems.append(
                f"5: the counter {name} is {getattr(fresh, name)!r} restored, {getattr(model, name)!r} saved"
            )
    return problems


def _refusal_problems(env: Any, saved: SavedModel, kwargs: dict[str, Any]) -> list[str]:
    import torch
    from sb3_contrib import MaskablePPO

    other = MaskablePPO(
        "MlpPolicy", env, policy_kwargs=dict(net_arch=dict(pi=[8, 8], vf=[8]), activation_fn=torch.nn.ReLU), **kwargs
    )
    try:
        restore(other, saved)
    except (RuntimeError, ValueError):
        return []
    return ["4: set_parameters(exact_match=True) took the state of another value network"]


def _same(a: dict[str, Any], b: dict[str, Any]) -> bool:
    import torch

    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
