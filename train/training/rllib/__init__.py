"""The rllib backend: multi-agent PPO on Ray RLlib's current API stack.

:func:`train.training.rllib.trainer.train_rllib` trains one shared policy from every
learning seat of :class:`train.training.rllib.env.LlamaMultiAgentEnv`; the masked
module is :mod:`~train.training.rllib.module`, the fast sampling
:mod:`~train.training.rllib.runner` and :mod:`~train.training.rllib.batch`, and RLlib's
internals that they lean on are confined to :mod:`~train.training.rllib._internals`.
Needs the ``rllib`` extra (Ray), imported only when a run starts.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from train.training.backend import Backend, imported_when_run

__all__ = ["BACKEND", "RllibOptions"]


@dataclass(frozen=True)
class RllibOptions:
    """The rllib backend's own settings."""

    num_env_runners: int = field(
        default=0,
        metadata={
            "help": "remote env runner processes, one CPU each: at most the cores of a local Ray (0 = sample in "
            "the trainer's process)"
        },
    )
    address: str = field(
        default="",
        metadata={
            "help": "the address of a running Ray cluster (default: RAY_ADDRESS, else a local Ray); a session's own, "
            "not carried over when the run is resumed"
        },
    )
    privileged_critic: bool = field(
        default=False,
        metadata={
            "help": "the value network (a training baseline, never used to act) also sees the others' hands and "
            "the draw pile; the policy still sees only its observation"
        },
    )

    def __post_init__(self) -> None:
        n = self.num_env_runners
        if isinstance(n, int) and not isinstance(n, bool) and n < 0:
            raise ValueError(f"config key 'num_env_runners' must be >= 0, got {n}")


def _check(config: Any) -> None:
    """RLlib seeds each remote env runner with ``seed`` plus its index (1, 2...), and numpy
    takes seeds up to 2**32-1: a seed that the runners would push past it is refused here,
    not by numpy in a runner after Ray has started. Each env runner plays an equal share of
    the ``n_envs`` games, at least one: more runners than games are refused (each played
    one, more games than asked, without a word)."""
    from train.training.config import LARGEST_SEED

    runners = config.options.num_env_runners
    if runners > config.n_envs:
        raise ValueError(
            f"config key 'num_env_runners' ({runners}) must be at most n_envs ({config.n_envs}): each env runner "
            "plays a share of the games"
        )
    if config.seed + runners > LARGEST_SEED:
        raise ValueError(
            f"config key 'seed' must be at most 2**32-1 - num_env_runners ({LARGEST_SEED - runners}) on rllib, which "
            f"seeds each env runner with seed + its index, got {config.seed}"
        )


BACKEND = Backend(
    name="rllib",
    summary="multi-agent PPO on Ray RLlib (the rllib extra)",
    extra="rllib",
    algorithm="rllib-ppo",
    run=imported_when_run("train.training.rllib.trainer", "train_rllib"),
    options=RllibOptions,
    fixed_on_resume=("privileged_critic",),
    per_session=("address",),
    check=_check,
)
