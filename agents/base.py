"""The one interface every agent implements, and the registry that builds them by name.

An agent sees exactly what a learner sees: the observation vector (read through the
named fields of :mod:`llama_env.observation`) and the action mask. It never touches the
engine. That keeps baselines honest and lets the same evaluation code run any agent.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable

import numpy as np

__all__ = ["Agent", "AgentLike", "BaseAgent", "register", "make", "names", "resolve"]


@runtime_checkable
class Agent(Protocol):
    """What the envs, the evaluation and the CLI need from an agent."""

    def act(self, observation: np.ndarray, action_mask: np.ndarray) -> int:
        """Return a legal action (an int 0..8) for this observation and mask."""
        ...


AgentLike = Agent | str


class BaseAgent:
    """Convenience base: a seeded ``np.random.Generator`` in ``self.rng`` and a
    ``reset(seed)`` that reseeds it. ``reset`` is called at the start of each game."""

    name = "agent"

    def __init__(self, seed: int | None = None) -> None:
        self.seed = seed
        self.rng = np.random.default_rng(seed)

    def reset(self, seed: int | None = None) -> None:
        """Start of a game; a seed makes the agent's choices reproducible from here."""
        if seed is not None:
            self.rng = np.random.default_rng(seed)

    def act(self, observation: np.ndarray, action_mask: np.ndarray) -> int:  # pragma: no cover - abstract
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


_REGISTRY: dict[str, Callable[..., Agent]] = {}
_DOCS: dict[str, str] = {}


def register(name: str, doc: str = "") -> Callable[[Callable[..., Agent]], Callable[..., Agent]]:
    """Class decorator (or factory wrapper) that makes ``agents.make(name)`` build it."""

    def deco(factory: Callable[..., Agent]) -> Callable[..., Agent]:
        if name in _REGISTRY:
            raise ValueError(f"an agent named {name!r} is already registered")
        _REGISTRY[name] = factory
        _DOCS[name] = doc or " ".join((inspect.getdoc(factory) or "").split("\n\n")[0].split())
        return factory

    return deco


def names() -> list[str]:
    """The registered agent names, sorted."""
    _load_builtin()
    return sorted(_REGISTRY)


def describe() -> dict[str, str]:
    """Each registered name with its one-line description."""
    _load_builtin()
    return {n: _DOCS[n] for n in sorted(_REGISTRY)}


def make(name: str, **params: Any) -> Agent:
    """Build the agent registered as ``name`` with keyword ``params``.

    Unknown names and parameters raise ``ValueError`` listing what exists.
    """
    _load_builtin()
    if name not in _REGISTRY:
        raise ValueError(f"unknown agent {name!r}; known agents: {', '.join(sorted(_REGISTRY))}")
    factory = _REGISTRY[name]
    sig = inspect.signature(factory)
    accepts_any = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in sig.parameters.values())
    if not accepts_any:
        allowed = [p for p in sig.parameters if p != "self"]
        bad = [k for k in params if k not in allowed]
        if bad:
            raise ValueError(
                f"agent {name!r} has no parameter {', '.join(map(repr, bad))}; "
                f"its parameters: {', '.join(allowed) or '(none)'}"
            )
    return factory(**params)


def resolve(agent: AgentLike, seed: int | None = None) -> Agent:
    """An agent object from an agent or a registered name (built with ``seed``)."""
    if isinstance(agent, str):
        _load_builtin()
        factory = _REGISTRY.get(agent)
        if factory is not None and "seed" in inspect.signature(factory).parameters:
            return make(agent, seed=seed)
        return make(agent)
    if not callable(getattr(agent, "act", None)):
        raise TypeError(f"an agent must have act(observation, action_mask) -> int or be a name, got {agent!r}")
    return agent


_loaded = False


def _load_builtin() -> None:
    """Import the modules that register the built-in agents (once)."""
    global _loaded
    if _loaded:
        return
    _loaded = True
    import importlib

    for mod in ("agents.random_agent", "agents.heuristic", "agents.ppo"):
        importlib.import_module(mod)
