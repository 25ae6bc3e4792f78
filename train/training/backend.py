"""Training backends: one interface, one table.

A backend is a folder under ``train/training/`` (``sb3/``, ``rllib/``) whose
``__init__`` defines ``BACKEND``, a :class:`Backend`: its name, its own options (a frozen
dataclass whose fields become ``llama-rl train`` flags and config keys), the core
settings it cannot honour (refused when set, never ignored), the settings a resumed
run cannot change, and ``run``, which trains (and imports its heavy dependencies only
then). The core (:mod:`train.training.config`, :mod:`~train.training.run_dir`,
:mod:`~train.training.resume`, :mod:`~train.training.seats`,
:mod:`~train.training.evaluation`, :class:`~train.training.result.TrainResult`) is shared.

:data:`BUILTIN` is the table of the backends that ship; :func:`register_backend` adds
one at run time (a plugin, a test). docs/architecture.md has the recipe.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from train.training.result import TrainResult

TrainConfig = Any
"""What a backend is given: a validated :class:`train.training.config.TrainConfig` (named
here, not imported: the config imports this module to find a config's backend)."""

__all__ = [
    "Backend",
    "BUILTIN",
    "backends",
    "backend_named",
    "register_backend",
    "reserve_option_names",
    "NoOptions",
    "imported_when_run",
]

BUILTIN: dict[str, str] = {
    "sb3": "train.training.sb3",
    "rllib": "train.training.rllib",
}
"""Name -> the module whose ``BACKEND`` it is: the backends that ship, in the order ``--help`` lists them."""


@dataclass(frozen=True)
class NoOptions:
    """A backend without options of its own."""


def _no_check(config: TrainConfig) -> None:
    return None


def imported_when_run(module: str, function: str) -> Callable[[TrainConfig], TrainResult]:
    """A backend's ``run`` that imports ``module`` (and with it torch, Ray...) only when
    a run starts, then calls its ``function``."""

    def run(config: TrainConfig) -> TrainResult:
        trainer: Callable[[TrainConfig], TrainResult] = getattr(importlib.import_module(module), function)
        return trainer(config)

    run.__qualname__ = f"{module}.{function}"
    return run


@dataclass(frozen=True)
class Backend:
    """A training backend (see the module docstring)."""

    name: str
    summary: str
    """One line for ``--help``: what trains and where."""
    extra: str
    """The pip extra it needs (``pip install -e '.[<extra>]'`` in the checkout). Its packages
    are that extra's in :data:`llama_env._install.EXTRAS`: one of them missing when a run
    starts is a ``MissingExtra`` naming the extra; any other module missing is left as it is."""
    algorithm: str
    """The middle of default run names: ``llama__<algorithm>__<seed>__<unix time>``."""
    run: Callable[[TrainConfig], TrainResult]
    """Train (or resume) as configured; raise ``ValueError`` naming a bad key and
    :class:`train.training.run_dir.RunDirError` for a run directory it cannot write."""
    options: type[Any] = NoOptions
    """A frozen dataclass of the backend's own settings; each field's metadata has its ``help``."""
    ignores: tuple[str, ...] = ()
    """Core config keys this backend does not use: a value other than the default is refused."""
    fixed_on_resume: tuple[str, ...] = ()
    """Options of its own that a resumed run cannot change (the core's are
    :data:`train.training.resume.FIXED_ON_RESUME`)."""
    per_session: tuple[str, ...] = ()
    """Options of its own that say where a session runs, not what the run is (a cluster's
    address): a resumed run does not take them from its recorded config, so each session
    has its default unless it is given again."""
    check: Callable[[TrainConfig], None] = field(default=_no_check)
    """Further checks of a config this backend runs (``ValueError`` naming the key)."""


_REGISTERED: dict[str, Backend] = {}
_RESERVED: dict[str, str] = {}
"""Option names no backend may take, each with whose it is (:func:`reserve_option_names`)."""


def reserve_option_names(names: list[str], whose: str) -> None:
    """Keep ``names`` from every backend's options: the config reserves its core
    settings, which share the command line's flags and the config's keys with them."""
    _RESERVED.update(dict.fromkeys(names, whose))


def register_backend(backend: Backend) -> Backend:
    """Add (or replace) a backend under ``backend.name``; returns it.

    Every backend's options share ``llama-rl train``'s flags and the config's keys with
    the core's settings, so an option named like a core setting or another backend's
    option is refused (a ``ValueError`` naming both), not left to clash later."""
    if not backend.name.isidentifier():
        raise ValueError(f"a backend name must be an identifier, got {backend.name!r}")
    taken = dict(_RESERVED)
    for other in backends().values():
        if other.name != backend.name:
            taken.update({f.name: f"an option of backend {other.name!r}" for f in fields(other.options)})
    for f in fields(backend.options):
        if f.name in taken:
            raise ValueError(
                f"backend {backend.name!r} cannot have an option named {f.name!r}: it is {taken[f.name]} "
                "(options share the command line's flags and the config's keys)"
            )
    _REGISTERED[backend.name] = backend
    return backend


def backends() -> dict[str, Backend]:
    """Every backend: the built-in ones (imported on first use), then registered ones."""
    for name, module in BUILTIN.items():
        if name not in _REGISTERED:
            _REGISTERED[name] = importlib.import_module(module).BACKEND
    return dict(_REGISTERED)


def backend_named(name: str) -> Backend:
    """The backend called ``name``; a ``ValueError`` listing the known ones otherwise."""
    known = backends()
    if name not in known:
        raise ValueError(f"config key 'backend' must be one of {', '.join(known)}, got {name!r}")
    return known[name]
