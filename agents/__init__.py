"""Agents for LLAMA-RL: one interface, ``act(observation, action_mask) -> int``.

Build one by name with :func:`make`; :func:`names` lists them.
"""

from agents.base import Agent, BaseAgent, describe, make, names, register, resolve

__all__ = ["Agent", "BaseAgent", "describe", "make", "names", "register", "resolve"]
