"""Resuming a run: which checkpoint, and which config.

Neither needs the training extra, so the command line can check a ``--resume`` before
it imports the trainer.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from agents.ppo import named_checkpoints
from train.training.config import TrainConfig, check_new_run_name, config_from_dict
from train.training.run_dir import RunDir, checkpoint_problem, saved_steps

__all__ = [
    "FIXED_ON_RESUME",
    "run_of",
    "bare_model",
    "session_run",
    "find_checkpoint",
    "refuse_newer",
    "refuse_nothing_saved",
    "resume_config",
    "check_fixed",
    "check_steps_left",
]

FIXED_ON_RESUME = ("backend", "net_arch", "activation", "reward", "obs_version")
"""Settings a resumed run cannot change: its trainer, the network's shape and what it
learned to value (a backend adds its own: :attr:`train.training.backend.Backend.fixed_on_resume`)."""
_RUN_IDENTITY = ("run_dir", "run_name", "resume")


def run_of(path: str | Path) -> RunDir:
    """The run a ``--resume`` path names: a run directory, its ``checkpoints`` folder, or
    a checkpoint in one (a file, or an RLlib checkpoint's folder)."""
    p = Path(path)
    if p.is_dir():
        parent = RunDir(p.parent)
        if p == parent.checkpoints_dir and (parent.config_files() or parent.sessions_path.exists()):
            return parent
        owner = RunDir(p.parent.parent)
        if p.parent == owner.checkpoints_dir and owner.config_files():  # an RLlib checkpoint is a folder
            return owner
        return RunDir(p)
    if p.is_file():
        return RunDir(p.parent.parent if p.parent.name == "checkpoints" else p.parent)
    raise ValueError(f"config key 'resume': {str(path)!r} is neither a run directory nor a checkpoint")


def bare_model(path: str | Path) -> bool:
    """A model file that lies outside any run directory."""
    return Path(path).is_file() and not run_of(path).is_run()


def session_run(config: TrainConfig) -> tuple[RunDir, bool]:
    """The run directory a training session writes, and whether the run starts there.

    A new run goes to ``config.run_path()``. Resuming a run (its directory, or a
    checkpoint in it) continues it in place, refusing a change of a setting in
    :data:`FIXED_ON_RESUME`. Resuming a model file that lies outside any run (a
    downloaded or copied ``model.zip``) starts a new run at ``config.run_path()`` from its
    weights and step count: the folder the file lies in is never written to. A run that
    saved nothing to go on from is refused (:func:`refuse_nothing_saved`), on either backend,
    and so is an exported policy (a ``.npz`` outside any run: the weights alone, not what
    training goes on from)."""
    bare = bool(config.resume) and bare_model(config.resume)
    if bare and Path(config.resume).suffix == ".npz":
        raise ValueError(
            f"config key 'resume': {config.resume} is an exported policy (.npz), which cannot be resumed: it holds "
            "the policy's weights, not what training goes on from; resume the run it came from (its directory)"
        )
    if not config.resume or bare:
        check_new_run_name(config.run_name, config.run_dir)
        return RunDir(config.run_path(claim=not config.resume)), True  # (a resume is checked before the run is made)
    run = run_of(config.resume)
    recorded = _recorded(run)  # a config file that cannot be read is named first, as resume_config does
    refuse_nothing_saved(run)
    if recorded is not None:
        check_fixed(recorded, config, run)
    return run, False


def _recorded(run: RunDir) -> TrainConfig | None:
    """The config ``run`` recorded, read as its own file (``None``: it recorded none)."""
    recorded = run.recorded_config()
    return None if recorded is None else _config_of(run, recorded)


def _config_of(run: RunDir, recorded: Mapping[str, Any]) -> TrainConfig:
    """The mapping of ``run``'s recorded config file as a config; a ``ValueError`` names
    the file (a key it should not hold, a value of the wrong type: edited by hand, or
    written by another version)."""
    try:
        return config_from_dict({k: v for k, v in recorded.items() if k != "resume"}, recorded=True)
    except ValueError as exc:
        raise ValueError(f"in {run.recorded_config_path()}: {exc}") from None


def refuse_nothing_saved(run: RunDir) -> None:
    """The ``ValueError`` of ``--resume`` of a run that saved nothing to go on from
    (:meth:`RunDir.nothing_saved`)."""
    unsaved = run.nothing_saved()
    if unsaved is not None:
        raise ValueError(f"config key 'resume': {run.path} is {unsaved}")


def find_checkpoint(path: str | Path) -> Path:
    """The checkpoint to resume from: the given zip, or a run directory's newest whole
    checkpoint (else its ``model.zip``). Checkpoints that are empty or corrupt are
    skipped with a warning naming them; a given zip that is not whole is a ``ValueError``
    naming it."""
    p = Path(path)
    if p.is_file():
        problem = checkpoint_problem(p)
        if problem is not None:
            raise ValueError(f"config key 'resume': {p} is not a usable checkpoint ({problem.splitlines()[0]})")
        run = run_of(p)
        if run.is_run():  # a model outside any run has no newer checkpoints
            refuse_newer(p, saved_steps(p), run)
        return p
    run = run_of(p)
    found, skipped = run.newest_valid_checkpoint()
    for bad, why in skipped:
        warnings.warn(f"resume: skipping {bad} ({why})", RuntimeWarning, stacklevel=2)
    if found is None:
        raise ValueError(f"config key 'resume': no usable checkpoint in {p} (a .zip or a run directory)")
    return found


def refuse_newer(given: Path, steps: int, run: RunDir) -> None:
    """The ``ValueError`` of a ``--resume`` of the checkpoint ``given`` (of ``steps``
    steps) while ``run`` holds newer checkpoints, of either backend: training on from it
    would overwrite them, and a later resume would pick them up again."""
    newer = [path.name for n, path, _ in named_checkpoints(run.path) if n > steps]
    if newer:
        raise ValueError(
            f"config key 'resume': {given} ({steps} steps) is older than the run's {', '.join(newer)}: training on "
            f"from it would overwrite them; move them out of {run.checkpoints_dir} first, or resume {run.path} to "
            "continue from its newest"
        )


def resume_config(resume: str | Path, overrides: Mapping[str, Any] | None = None) -> TrainConfig:
    """The config that continues the run at ``resume``: the run's recorded config (what
    its last session that trained ran: :meth:`RunDir.recorded_config_path`), with
    ``overrides`` (the settings given explicitly) on top.

    A model file outside any run has no recorded config: the overrides alone make it,
    ``run_dir`` and ``run_name`` included (the new run :func:`session_run` starts). A run
    directory's ``run_dir`` and ``run_name`` are where it lies now (a copied run records
    the copy).

    A backend's options of one session (:attr:`~train.training.backend.Backend.per_session`:
    rllib's ``address``) are not carried over: they take their defaults unless given.

    Settings in :data:`FIXED_ON_RESUME` cannot be overridden: a ``ValueError`` names the
    key and both values. A run without a recorded config uses ``overrides`` alone (and
    its place)."""
    if bare_model(resume):  # a new run, named by the overrides (an exported .npz is refused by session_run)
        return config_from_dict({**(overrides or {}), "resume": str(resume)})
    run = run_of(resume)
    asked = {k: str(v) for k, v in (overrides or {}).items() if k in ("run_dir", "run_name") and v}
    if asked:  # a run continues in its own directory: a different one asked for is refused, not dropped
        where = Path(asked.get("run_dir", run.path.parent)) / asked.get("run_name", run.path.name)
        if where.resolve() != run.path.resolve():
            raise ValueError(
                f"config keys 'run_dir'/'run_name' name {where}, but resuming {resume} continues its run in "
                f"{run.path}: leave them out (or, to train it on as another run, copy {run.path} to {where} and "
                "resume the copy; on sb3 a copy of its model.zip that lies outside any run starts one too)"
            )
    overrides = {k: v for k, v in (overrides or {}).items() if k not in _RUN_IDENTITY}
    # The run continues where it lies now: a copied or moved run records its own place,
    # not the one its first session wrote in.
    here = {"run_dir": str(run.path.parent), "run_name": run.path.name, "resume": str(resume)}
    recorded = run.recorded_config()
    if recorded is None:
        return config_from_dict({**overrides, **here})
    base = _config_of(run, recorded)
    _warn_defaulted(run, recorded, base)
    backend = overrides.get("backend", base.backend)
    if backend != base.backend:  # before the run's own options meet it: they belong to its backend
        raise _cannot_change("backend", base.backend, backend, run)
    # where the last session ran (a cluster's address) is no part of the run: each session gives its own
    carried = {k: v for k, v in base.to_dict().items() if k not in base.backend_spec().per_session}
    candidate = config_from_dict({**carried, **overrides, **here})
    check_fixed(base, candidate, run)
    return candidate


def _warn_defaulted(run: RunDir, recorded: Mapping[str, Any], base: TrainConfig) -> None:
    """A warning naming the settings the run's config file (``recorded``) does not hold
    (written by an older version before they existed, or edited by hand): the run resumes
    with today's defaults for them, ``base``'s, which may not be what it trained with."""
    missing = [k for k in base.to_dict() if k not in recorded and k not in _RUN_IDENTITY]
    if missing:
        shown = ", ".join(missing[:8]) + (f" and {len(missing) - 8} more" if len(missing) > 8 else "")
        warnings.warn(
            f"resume: {run.recorded_config_path()} does not record {shown}; the run goes on with today's defaults "
            "for them (give them as flags to choose)",
            RuntimeWarning,
            stacklevel=3,
        )


def check_fixed(recorded: TrainConfig, config: TrainConfig, run: RunDir) -> None:
    """A ``ValueError`` naming the first setting the run cannot change that ``config`` changes."""
    for key in FIXED_ON_RESUME + recorded.backend_spec().fixed_on_resume:
        then, now = recorded.value(key), config.value(key)
        if then != now:
            raise _cannot_change(key, then, now, run)


def _cannot_change(key: str, then: Any, now: Any, run: RunDir) -> ValueError:
    return ValueError(
        f"config key {key!r} cannot change when resuming {run.path}: the run was trained with "
        f"{then!r}, the config asks for {now!r} (start a new run to change it)"
    )


def check_steps_left(checkpoint: Path, trained: int, config: TrainConfig) -> None:
    """A ``ValueError`` when the ``trained`` steps of ``checkpoint`` already reach the
    config's ``total_timesteps``: nothing would be trained, so nothing is written either."""
    if trained >= config.total_timesteps:
        raise ValueError(
            f"config key 'total_timesteps': {checkpoint} has trained {trained} steps, the config asks for "
            f"{config.total_timesteps} in all: the run is finished; give a larger --total-timesteps to train it "
            "further"
        )
