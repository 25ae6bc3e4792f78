"""Costly agents play in a child process of lower priority.

A search agent spends tenths of a second of pure Python on a move. In the server's
process that time holds the interpreter lock, so every other game's requests wait
behind it, threads or not. Agents that declare themselves costly
(:func:`llama_env.agent.costly`) are therefore built and asked for their moves in one
child process: the server's thread waits on a pipe (holding no lock) while the child
computes, and the child runs at a lower priority (``nice``), so that on a busy machine
the operating system serves the other games first.

:class:`AgentHost` starts the child on first use; :class:`RemoteAgent` stands in for an
agent of the table driver: it answers ``act``, ``reset`` and ``forewarn`` by asking the child, and
its decisions are exactly those of the same agent built in the server.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import threading
from multiprocessing.connection import Connection
from typing import Any

import numpy as np

from llama_env._install import MissingExtra
from llama_env.agent import Agent, AgentSpec, forewarn, reset_agent, resolve, table_sizes
from llama_env.engine import Rules

__all__ = ["AgentHost", "AgentHostFull", "AgentLost", "RemoteAgent", "NICENESS"]

NICENESS = 19
"""How much lower the child's priority is than the server's (Unix ``nice``)."""
MAX_AGENTS = 256
"""Agents the child keeps at most: a game that would need more is refused
(:class:`AgentHostFull`) until games end or are forgotten and their agents with them."""


class AgentHostFull(RuntimeError):
    """The child holds :data:`MAX_AGENTS` agents already."""


class AgentLost(RuntimeError):
    """The child that held an agent stopped (killed, out of memory): the agent is gone
    with it, and the next call starts a new child."""


class AgentHost:
    """One child process that builds and runs costly agents (see the module docstring).
    Its calls are one at a time: costly games take turns, as in the server's slow lane."""

    def __init__(self, niceness: int = NICENESS, max_agents: int = MAX_AGENTS) -> None:
        self.niceness = niceness
        self.max_agents = max_agents
        self._conn: Connection | None = None
        self._process: multiprocessing.process.BaseProcess | None = None
        self._lock = threading.Lock()
        self._keys = 0

    def _start(self) -> Connection:
        if self._conn is None or self._process is None or not self._process.is_alive():
            context = multiprocessing.get_context("spawn")
            parent, child = context.Pipe()
            process = context.Process(
                target=_main, args=(child, self.niceness, self.max_agents), name="llama-rl agents", daemon=True
            )
            process.start()
            child.close()
            self._conn, self._process = parent, process
        return self._conn

    def call(self, *message: Any) -> Any:
        with self._lock:
            conn = self._start()
            try:
                conn.send(message)
                ok, value = conn.recv()
            except (EOFError, OSError) as exc:
                self.close()
                raise AgentLost(f"the process of costly agents stopped: {exc or type(exc).__name__}") from None
        if ok is None:
            raise AgentHostFull(value)
        if ok == _LOST:
            raise AgentLost(value)
        if ok == _EXTRA:  # the child's MissingExtra, pickled by its parts
            raise value
        if not ok:
            raise ValueError(value)
        return value

    def agent(self, spec: AgentSpec, seed: int | None) -> RemoteAgent:
        """Build ``spec`` in the child (a ``ValueError`` names what is wrong with it;
        :class:`AgentHostFull` when the child holds :attr:`max_agents` already)."""
        with self._lock:
            self._keys += 1
            key = self._keys
        obs_version, sizes, shown = self.call("build", key, spec.name, dict(spec.params), seed)
        agent = RemoteAgent(self, key, int(obs_version), spec, seed)
        agent.table_sizes = sizes
        agent.shown = str(shown)
        return agent

    @property
    def alive(self) -> bool:
        """Whether a child runs now (a call starts one when none does)."""
        process = self._process
        return process is not None and process.is_alive()

    def close(self) -> None:
        """Stop the child (a later call starts another)."""
        conn, process = self._conn, self._process
        self._conn = self._process = None
        if conn is not None:
            conn.close()
        if process is not None:
            process.terminate()
            process.join(timeout=5)


class RemoteAgent:
    """An agent that lives in the :class:`AgentHost`'s child process. Should the child
    stop (killed, out of memory), the agent is built again, from its spec and seed, in
    the next child and asked again: the game goes on (from there its choices are those
    of an agent started anew, not the lost one's)."""

    runs_apart = True
    """Its moves take this process no time (:attr:`train.play.session.GameSession.apart`)."""

    def __init__(self, host: AgentHost, key: int, obs_version: int, spec: AgentSpec, seed: int | None) -> None:
        self.host = host
        self.key = key
        self.obs_version = obs_version
        self.spec = spec
        self.seed = seed
        self.name = spec.label
        self.rebuilt = 0
        """How many times it was built again after its child stopped."""
        self.table_sizes: tuple[int, ...] | None = None
        """The table sizes the agent in the child says it was made for
        (:func:`~llama_env.agent.table_sizes`), told when it was built."""
        self.shown = f"RemoteAgent({spec.label!r})"
        """The ``repr`` of the agent in the child, told when it was built: its warnings name it so."""
        self._forewarned: Rules | None = None
        """The rules it was forewarned of (:meth:`forewarn`): an agent built again is told too."""

    def __repr__(self) -> str:
        return self.shown

    def _ask(self, *message: Any) -> Any:
        try:
            return self.host.call(*message)
        except AgentLost:
            self.host.call("build", self.key, self.spec.name, dict(self.spec.params), self.seed)
            self.rebuilt += 1
            if self._forewarned is not None:  # what the page said already it says no more at the table
                self.host.call("forewarn", self.key, self._forewarned)
            return self.host.call(*message)  # a second loss is the caller's

    def act(self, observation: np.ndarray, action_mask: np.ndarray) -> int:
        return int(self._ask("act", self.key, observation, action_mask))

    def reset(self, seed: int | None = None) -> None:
        self.seed = seed
        self._ask("reset", self.key, seed)

    def forewarn(self, rules: Rules) -> Warning | None:
        """What the agent in the child forewarns of at a table of ``rules``
        (:func:`~llama_env.agent.forewarn`), which it then does not say at the table."""
        warning = self._ask("forewarn", self.key, rules)
        self._forewarned = rules
        return warning if isinstance(warning, Warning) else None

    def close(self) -> None:
        """Let the child forget this agent (a child that stopped forgot it already)."""
        if self.host.alive:
            self.host.call("drop", self.key)


_LOST = "lost"
"""The child's answer about an agent it never built (an earlier child held it)."""
_EXTRA = "extra"
"""The child's answer when an agent needs an extra that is not installed (:class:`MissingExtra`)."""


def _main(conn: Connection, niceness: int, max_agents: int) -> None:
    """The child: build, ask and forget agents as the server says, until the pipe closes."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the server's: it closes the pipe (a traceback here)
    if niceness and hasattr(os, "nice"):
        os.nice(niceness)
    agents: dict[int, Agent] = {}
    while True:
        try:
            kind, key, *args = conn.recv()
        except (EOFError, OSError):
            return
        try:
            value: Any = None
            if kind == "build":
                if len(agents) >= max_agents:  # a live game's agent is never dropped to make room
                    conn.send((None, f"the server runs {max_agents} costly agents already: try again when a game ends"))
                    continue
                name, params, seed = args
                built = resolve(AgentSpec(name, params), seed)  # seeded each game: no word on one that cannot be
                # (sizes of the wrong kind: refused; the repr names it as its warnings do)
                value = (getattr(built, "obs_version", 0), table_sizes(built), repr(built))
                agents[key] = built
            elif kind == "drop":
                agents.pop(key, None)
            else:
                agent = agents.get(key)
                if agent is None:  # built in a child that stopped: the server builds it again here
                    conn.send((_LOST, f"costly agent {key} is not in this process: an earlier one stopped"))
                    continue
                if kind == "act":
                    value = int(agent.act(*args))
                elif kind == "forewarn":
                    value = forewarn(agent, args[0])
                else:
                    reset_agent(agent, args[0])
            conn.send((True, value))
        except MissingExtra as exc:  # the server words it for the page (without this machine's paths)
            conn.send((_EXTRA, exc))
        except Exception as exc:  # the server reports it; the child serves on
            # a bad spec or parameter is the message itself, as in the server; anything else says what failed
            conn.send((False, str(exc) if isinstance(exc, (ValueError, TypeError)) else f"{type(exc).__name__}: {exc}"))
