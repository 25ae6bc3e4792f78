"""Agents named on a command line: ``heuristic``, ``cautious:threshold=4``.

A spec is a registered agent name, optionally followed by ``:key=value`` parameters
(several are chained: ``name:a=1:b=x``). Values are read as ``int``, ``float``,
``true``/``false``/``none`` or else left as strings. Lists of specs are separated by
commas: ``heuristic,random,cautious:threshold=4``.

Specs are checked against the registry when parsed, so an unknown agent or parameter is
reported before any game is played.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import Any

import agents as agent_registry

__all__ = ["AgentSpec", "parse_agent_spec", "parse_agent_list"]


@dataclass(frozen=True)
class AgentSpec:
    """A registered agent name and the keyword parameters to build it with."""

    name: str
    params: dict[str, Any] = field(default_factory=dict)

    @property
    def label(self) -> str:
        """The spec as written on a command line (``cautious:threshold=4``)."""
        return ":".join([self.name, *(f"{k}={_fmt(v)}" for k, v in self.params.items())])

    def build(self, seed: int | None = None) -> agent_registry.Agent:
        """A new agent; ``seed`` makes its choices reproducible.

        Raises ``ValueError`` (from the registry) for an unknown name or parameter.
        """
        if not self.params:
            return agent_registry.resolve(self.name, seed=seed)
        agent = agent_registry.make(self.name, **self.params)
        reset = getattr(agent, "reset", None)
        if seed is not None and callable(reset):
            reset(seed)
        return agent

    def as_agent_like(self) -> agent_registry.AgentLike:
        """The plain name when there are no parameters (cheap to send to worker
        processes, seeded by whoever resolves it), else a built agent whose ``name`` is
        the label, so result tables tell ``cautious:threshold=2`` from ``cautious``."""
        if not self.params:
            return self.name
        agent = self.build()
        with contextlib.suppress(AttributeError):  # an agent with a read-only name keeps it
            agent.name = self.label  # type: ignore[attr-defined]
        return agent


def _fmt(value: Any) -> str:
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _parse_value(text: str) -> Any:
    low = text.lower()
    if low in ("true", "false"):
        return low == "true"
    if low == "none":
        return None
    for conv in (int, float):
        try:
            return conv(text)
        except ValueError:
            pass
    return text


def parse_agent_spec(text: str, *, check: bool = True) -> AgentSpec:
    """Parse ``name`` or ``name:key=value[:key=value...]``.

    With ``check`` (the default) the name is looked up in the registry and the agent is
    built once, so bad parameters or a missing model file are found before any game is
    played; a problem raises ``ValueError`` that names it and lists what exists.
    """
    parts = text.strip().split(":")
    name = parts[0].strip()
    if not name:
        raise ValueError(f"empty agent name in {text!r}; known agents: {', '.join(agent_registry.names())}")
    params: dict[str, Any] = {}
    for part in parts[1:]:
        key, sep, value = part.partition("=")
        key = key.strip()
        if not sep or not key:
            raise ValueError(f"agent parameter {part!r} in {text!r} is not of the form key=value")
        if key in params:
            raise ValueError(f"agent parameter {key!r} is given twice in {text!r}")
        params[key] = _parse_value(value.strip())
    spec = AgentSpec(name, params)
    if check:
        if name not in agent_registry.names():
            raise ValueError(f"unknown agent {name!r}; known agents: {', '.join(agent_registry.names())}")
        try:  # the registry checks parameter names, the agent its values (and e.g. its model file)
            spec.build(seed=0)
        except ValueError:
            raise
        except (OSError, TypeError) as exc:
            raise ValueError(f"cannot build agent {spec.label!r}: {exc}") from exc
    return spec


def parse_agent_list(text: str, *, check: bool = True) -> list[AgentSpec]:
    """Parse a comma-separated list of specs (empty entries are an error)."""
    items = text.split(",")
    if any(not item.strip() for item in items):
        raise ValueError(f"empty entry in the agent list {text!r}; separate agent names with single commas")
    return [parse_agent_spec(item, check=check) for item in items]
