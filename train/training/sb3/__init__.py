"""The sb3 backend: MaskablePPO (sb3-contrib) on the batched vec env.

The learner holds one seat of every game in the vec env of
:mod:`train.training.sb3.vec_env` (in the trainer's process, or split between processes
by :mod:`train.training.sb3.workers`: the option ``env_workers``); the trainer is
:func:`train.training.sb3.trainer.train_sb3`, the per-rollout work (self-play copy,
past league, checkpoints, evaluations, speed) :mod:`train.training.sb3.callbacks`.
Needs the ``train`` extra (torch, stable-baselines3, sb3-contrib), imported only when a
run starts. SB3's model files are read, without unpickling them, by
:func:`agents.ppo.read_save` (their entries and bounds, for the ``ppo`` agent, the
checkpoint checks and a resume alike; the layers' names by
:func:`agents.ppo.sb3_hidden_layers`); what a resume assumes beyond that (the state dicts,
the counters, ``set_parameters``) is confined to :mod:`~train.training.sb3._internals`,
which checks it against the installed SB3.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from train.training.backend import Backend, imported_when_run

__all__ = ["BACKEND", "Sb3Options", "ENGINES", "MAX_ENV_WORKERS"]

ENGINES = ("auto", "batch", "scalar")
"""``auto`` and the vec envs of :data:`train.training.sb3.vec_env.VEC_ENVS` by name (written
here too: the options are checked without importing the vec env's dependencies)."""

MAX_ENV_WORKERS = 256
"""The most env worker processes a run may ask for (each holds a copy of the trainer's
memory; far more than cores only costs)."""


@dataclass(frozen=True)
class Sb3Options:
    """The sb3 backend's own settings."""

    tensorboard: bool = field(default=True, metadata={"help": "write TensorBoard logs into the run directory"})
    verbose: int = field(default=0, metadata={"help": "SB3 verbosity (0 silent, 1 rollout tables)"})
    engine: str = field(
        default="auto",
        metadata={
            "help": "the vec env's games: batch (llama_env.batch: numpy arrays, one batch per table size; "
            "the faster with hundreds of games per size), scalar (one engine per game, dealt as Llama-v0 "
            "deals; the faster with fewer) or auto (batch from 256 games per table size on average)"
        },
    )

    env_workers: int = field(
        default=1,
        metadata={
            "help": "processes that play the games (1: the trainer's own; 2 on two cores plays them on both "
            "while the trainer waits; a seeded run replays for the same number)"
        },
    )

    def __post_init__(self) -> None:
        workers = self.env_workers
        if isinstance(workers, bool) or not isinstance(workers, int) or not 1 <= workers <= MAX_ENV_WORKERS:
            raise ValueError(f"config key 'env_workers' must be an int from 1 to {MAX_ENV_WORKERS}, got {workers!r}")
        if isinstance(self.engine, str) and self.engine not in ENGINES:
            raise ValueError(f"config key 'engine' must be one of {', '.join(ENGINES)}, got {self.engine!r}")
        if isinstance(self.verbose, int) and not isinstance(self.verbose, bool) and self.verbose not in (0, 1, 2):
            raise ValueError(f"config key 'verbose' must be 0, 1 or 2, got {self.verbose}")


def _check(config: Any) -> None:
    """A ``ValueError`` for a ``batch_size`` that leaves a minibatch of one step: MaskablePPO
    normalises the advantages of each minibatch (the last one is the rollout's remainder),
    and one step has no spread, so its update turns the policy into NaN. And for the games
    the vec env cannot share out (:func:`_check_shares`)."""
    _check_shares(config)
    rollout = config.n_steps * config.n_envs
    if config.batch_size == 1 or rollout % config.batch_size == 1:
        raise ValueError(
            f"config key 'batch_size' ({config.batch_size}) leaves a minibatch of 1 step from each rollout of "
            f"n_steps x n_envs = {rollout} steps: sb3 normalises the advantages of every minibatch, which one "
            f"step cannot do (its update would be NaN); give a batch size of at least 2 that divides {rollout} "
            "or leaves 2 steps or more"
        )


def _check_shares(config: Any) -> None:
    """A ``ValueError`` naming the keys, before anything starts, for ``n_envs`` games that
    ``env_workers`` cannot share out (a worker with no game), or that leave a share of
    ``engine`` batch fewer games than ``players`` has table sizes (it holds each size's
    games in one batch): the vec env refused them once the run had started, naming
    neither key."""
    options: Sb3Options = config.options
    workers, n_envs = options.env_workers, config.n_envs
    if workers > n_envs:
        raise ValueError(
            f"config key 'env_workers' ({workers}) must be at most n_envs ({n_envs}): each env worker plays a "
            "share of the games"
        )
    sizes = list(dict.fromkeys(config.players))
    if options.engine != "batch" or n_envs // workers >= len(sizes):
        return
    listed = f"{len(sizes)} table sizes of players ({', '.join(map(str, sizes))})"
    if workers == 1:
        raise ValueError(
            f"config key 'n_envs' ({n_envs}) must be at least the {listed} with engine batch, which holds the "
            f"games of each size in one batch: give n_envs {len(sizes)} or more, or engine auto"
        )
    raise ValueError(
        f"config keys 'n_envs' ({n_envs}) and 'env_workers' ({workers}) give shares of {n_envs // workers} games, "
        f"fewer than the {listed} that engine batch holds in one batch each: give n_envs {workers * len(sizes)} "
        "or more, fewer env_workers, or engine auto"
    )


BACKEND = Backend(
    name="sb3",
    summary="MaskablePPO on the batched vec env",
    extra="train",
    algorithm="maskableppo",
    run=imported_when_run("train.training.sb3.trainer", "train_sb3"),
    options=Sb3Options,
    check=_check,
)
