"""Training: a small core and one folder per backend behind one interface.

``from train.training import TrainConfig, train`` is the whole API of a run:
``train(TrainConfig(players=4, total_timesteps=2_000_000))`` trains with the config's
``backend`` (``"sb3"`` by default: MaskablePPO on the batched vec env; ``"rllib"``:
multi-agent PPO on Ray RLlib) and returns a :class:`TrainResult`.

The core: :mod:`~train.training.config` (the typed config and its checks),
:mod:`~train.training.presets`, :mod:`~train.training.run_dir` (where a run's files go,
written so that nothing saved is lost), :mod:`~train.training.resume`,
:mod:`~train.training.seats` (who sits where, for every backend),
:mod:`~train.training.evaluation` (evaluation during training) and
:mod:`~train.training.result`. The backends: :mod:`train.training.sb3` and
:mod:`train.training.rllib`, listed in :data:`train.training.backend.BUILTIN`; each
imports its heavy dependencies only when a run starts, so configs can be built and
checked without them.
"""

from __future__ import annotations

import contextlib
import random
import sys
import warnings
from collections.abc import Iterator

import numpy as np

from llama_env._install import extra_named
from train.training.backend import Backend, backend_named, backends, register_backend
from train.training.config import TrainConfig, config_from_dict
from train.training.presets import PRESETS, preset_values
from train.training.result import TrainingStopped, TrainResult
from train.training.resume import resume_config

__all__ = [
    "PRESETS",
    "Backend",
    "TrainConfig",
    "TrainResult",
    "TrainingStopped",
    "backend_named",
    "backends",
    "config_from_dict",
    "preset_values",
    "register_backend",
    "resume_config",
    "train",
]


def train(config: TrainConfig) -> TrainResult:
    """Run (or resume) a training run on ``config.backend``.

    Raises ``ValueError`` for a bad config (naming the key),
    :class:`train.training.run_dir.RunDirError` when the run directory cannot be
    written or is in use (what was saved before is kept), a
    :class:`~llama_env._install.MissingExtra` naming the backend's extra and the command
    that installs it when a package it trains with is not installed (torch and
    sb3-contrib: ``train``; Ray: ``rllib``), as ``agents.make`` does for a model that
    needs torch, and :class:`TrainingStopped`
    when a failure outside the policy stopped it (an env worker or an rllib env runner
    killed or failing; an opponent failing in a game: its ``AgentError`` is the
    ``__cause__``), once the steps learned are saved. An agent that fails before a step is learned
    raises its ``AgentError`` (or ``IllegalActionError``), and a new run is left out.

    The run seeds Python's, numpy's and torch's global generators (SB3 does, from
    ``config.seed``); their states are put back when it returns, so the caller's own
    random streams go on as if no run had drawn from them. The built-in backends put
    torch's thread count back too (a run sets it to ``config.torch_threads``)."""
    config = config.validate().with_absolute_paths()
    unseen = config.unseen_eval_sizes()
    if unseen and config.eval_every:
        warnings.warn(unseen, RuntimeWarning, stacklevel=2)
    backend = config.backend_spec()
    trains_with = extra_named(
        backend.extra, lambda package: f"the {backend.name} backend trains with {package}, which is not installed"
    )
    with _global_random_states_kept(), trains_with:
        return backend.run(config)


@contextlib.contextmanager
def _global_random_states_kept() -> Iterator[None]:
    """Restore the global generators of ``random``, numpy and (if imported) torch."""
    python_state, numpy_state = random.getstate(), np.random.get_state()
    torch = sys.modules.get("torch")
    torch_state = torch.get_rng_state() if torch is not None else None
    try:
        yield
    finally:
        random.setstate(python_state)
        np.random.set_state(numpy_state)
        if torch is not None:
            torch.set_rng_state(torch_state)
