"""LLAMA-RL: Reiner Knizia's L.L.A.M.A. as a rules engine, a PettingZoo AEC env and the
Gymnasium env ``Llama-v0``, with the table driver that plays games among agents.

``import llama_env`` registers ``Llama-v0`` and ``Llama-v1`` (the observation with the
public history of the round) with Gymnasium.
"""

from llama_env._version import __version__ as __version__
from llama_env.aec_env import LlamaAECEnv, env, raw_env
from llama_env.agent import Agent, AgentSpec
from llama_env.engine import Action, Card, IllegalActionError, LlamaGame, RoundResult, Rules
from llama_env.gym_env import LlamaEnv
from llama_env.observation import FIELDS, FIELDS_V1, OBS_SIZE, OBS_SIZE_V1, ObsView, decode, encode, encode_v1, view
from llama_env.rewards import REWARD_MODES
from llama_env.table import AgentError, Table, TableListener

__all__ = [
    "Action",
    "Agent",
    "AgentError",
    "AgentSpec",
    "Card",
    "FIELDS",
    "FIELDS_V1",
    "IllegalActionError",
    "LlamaAECEnv",
    "LlamaEnv",
    "LlamaGame",
    "OBS_SIZE",
    "OBS_SIZE_V1",
    "ObsView",
    "REWARD_MODES",
    "RoundResult",
    "Rules",
    "Table",
    "TableListener",
    "decode",
    "encode",
    "encode_v1",
    "env",
    "raw_env",
    "view",
]


def _register() -> None:
    import warnings

    from gymnasium.envs.registration import register, registry

    # Gymnasium calls an env "out of date" once a higher version is registered; Llama-v0
    # is not: both versions are supported, v1 only adds the public history.
    warnings.filterwarnings("ignore", message=r".*The environment Llama-v0 is out of date", category=DeprecationWarning)

    if "Llama-v0" not in registry:
        register(id="Llama-v0", entry_point="llama_env.gym_env:LlamaEnv")
    if "Llama-v1" not in registry:
        register(id="Llama-v1", entry_point="llama_env.gym_env:make_v1", kwargs={"obs_version": 1})


_register()
