"""Agents for LLAMA-RL: one interface, ``act(observation, action_mask) -> int``.

Importing this package registers the built-in agents (``random``, ``greedy``,
``cautious``, ``heuristic``, ``ppo``, ``search``) in the registry of :mod:`llama_env.agent`; it is
also the ``llama_rl.agents`` entry point, so ``llama_env`` finds them by name without
importing this package itself. :func:`make` builds an agent by name, :func:`names` lists
them.
"""

from agents import heuristic, ppo, random_agent, search  # noqa: F401 - importing registers them
from agents.base import Agent, AgentLike, BaseAgent, BatchAgent
from llama_env.agent import AgentSpec, describe, make, names, parse_agent_list, parse_agent_spec, register, resolve

__all__ = [
    "Agent",
    "AgentLike",
    "AgentSpec",
    "BaseAgent",
    "BatchAgent",
    "describe",
    "make",
    "names",
    "parse_agent_list",
    "parse_agent_spec",
    "register",
    "resolve",
]
