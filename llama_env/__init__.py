"""LLAMA-RL: Reiner Knizia's L.L.A.M.A. as a rules engine, a PettingZoo AEC env and the
Gymnasium env ``Llama-v0``, with the table driver that plays games among agents.

``import llama_env`` registers ``Llama-v0`` with Gymnasium.
"""

from llama_env.aec_env import LlamaAECEnv, env, raw_env
from llama_env.agent import Agent, AgentSpec
from llama_env.engine import Action, Card, IllegalActionError, LlamaGame, RoundResult
from llama_env.gym_env import LlamaEnv
from llama_env.observation import FIELDS, OBS_SIZE, ObsView, decode, encode, view
from llama_env.rewards import REWARD_MODES
from llama_env.table import Table, TableListener

__version__ = "0.2.0"

__all__ = [
    "Action",
    "Agent",
    "AgentSpec",
    "Card",
    "FIELDS",
    "IllegalActionError",
    "LlamaAECEnv",
    "LlamaEnv",
    "LlamaGame",
    "OBS_SIZE",
    "ObsView",
    "REWARD_MODES",
    "RoundResult",
    "Table",
    "TableListener",
    "decode",
    "encode",
    "env",
    "raw_env",
    "view",
]


def _register() -> None:
    from gymnasium.envs.registration import register, registry

    if "Llama-v0" not in registry:
        register(id="Llama-v0", entry_point="llama_env.gym_env:LlamaEnv")


_register()
