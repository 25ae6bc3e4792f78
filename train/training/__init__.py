"""Training: the typed config, the batched VecEnv, the MaskablePPO trainer, its
callbacks and its run directory.

``from train.training import TrainConfig, train`` is the whole API of a run. The trainer
needs the ``train`` extra (torch, stable-baselines3, sb3-contrib); it is imported only
when ``train`` or ``TrainResult`` is first used, so the config can be read without it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from train.training.config import TrainConfig, config_from_dict
from train.training.presets import PRESETS
from train.training.resume import resume_config

if TYPE_CHECKING:
    from train.training.trainer import TrainResult, train

__all__ = ["PRESETS", "TrainConfig", "TrainResult", "config_from_dict", "resume_config", "train"]


def __getattr__(name: str) -> Any:
    if name in ("train", "TrainResult"):
        from train.training import trainer

        return getattr(trainer, name)
    raise AttributeError(f"module 'train.training' has no attribute {name!r}")
