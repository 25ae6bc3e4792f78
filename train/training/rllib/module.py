"""The RLlib side of the policy: a PPO module that masks illegal actions, and the export
of its actor into the numpy :class:`agents.ppo.Actor` that the ``ppo`` agent plays with.

The env's observations are dicts ``{"observation", "action_mask"}`` (PettingZoo's keys):
the module builds its networks for the ``observation`` vector alone and sets the logits
of masked actions to the lowest float before any action is sampled, so an illegal
action has probability 0 in exploration, inference and training alike.

A privileged critic (``model_config["critic_input_size"]``, with the env's
``privileged_critic``): the value network reads ``obs["critic"]`` (the observation and
the hidden state) instead of ``obs["observation"]``. The value is only a baseline for
PPO's advantages, never used to act, so knowing the others' hands there is fair: it lowers
the variance of the advantages (an asymmetric actor-critic), and the policy that is
played still sees only the observation.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import torch
from ray.rllib.algorithms.ppo.torch.default_ppo_torch_rl_module import DefaultPPOTorchRLModule
from ray.rllib.core.columns import Columns
from ray.rllib.core.models.base import ENCODER_OUT
from ray.rllib.utils.torch_utils import FLOAT_MIN

from agents.ppo import Actor

__all__ = ["MaskedPPOModule", "actor_from_module"]


class MaskedPPOModule(DefaultPPOTorchRLModule):
    """RLlib's default PPO module over ``obs["observation"]``, with ``obs["action_mask"]``
    applied to the action logits."""

    def __init__(self, *args: Any, observation_space: Any = None, **kwargs: Any) -> None:
        # the env's Dict space, or (restored from a checkpoint) the observation space itself
        spaces = getattr(observation_space, "spaces", None)
        inner = spaces["observation"] if spaces is not None else observation_space
        super().__init__(*args, observation_space=inner, **kwargs)

    def setup(self) -> None:
        super().setup()
        size = self._option("critic_input_size")
        if size and self._option("vf_share_layers", True):
            raise ValueError("a privileged critic needs its own network: set model_config['vf_share_layers'] = False")
        if size and not self.inference_only:
            # the critic's MLP again, over the longer privileged input
            assert self.catalog is not None  # RLlib's default modules are built from their catalog
            base = self.catalog.actor_critic_encoder_config.base_encoder_config
            config = dataclasses.replace(base, input_dims=[int(size)])
            self.encoder.critic_encoder = config.build(framework="torch")

    def _option(self, key: str, default: Any = None) -> Any:
        config = self.model_config
        return config.get(key, default) if isinstance(config, dict) else getattr(config, key, default)

    @property
    def privileged(self) -> bool:
        """Whether the value network reads ``obs["critic"]`` (see the module docstring)."""
        return bool(self._option("critic_input_size"))

    def _split(self, batch: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
        obs = batch[Columns.OBS]
        return obs["action_mask"], {**batch, Columns.OBS: obs["observation"]}

    def _masked(self, out: dict[str, Any], mask: Any) -> dict[str, Any]:
        logits = out[Columns.ACTION_DIST_INPUTS]
        out[Columns.ACTION_DIST_INPUTS] = torch.where(mask > 0, logits, torch.full_like(logits, FLOAT_MIN))
        return out

    def _forward(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        mask, inner = self._split(batch)
        if not self.privileged:
            return self._masked(super()._forward(inner, **kwargs), mask)
        # acting needs the actor alone (RLlib's default would run the critic on the observation)
        actor = self.encoder.actor_encoder(inner)[ENCODER_OUT]
        return self._masked({Columns.ACTION_DIST_INPUTS: self.pi(actor)}, mask)

    def _forward_train(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        mask, inner = self._split(batch)
        if not self.privileged:
            return self._masked(super()._forward_train(inner, **kwargs), mask)
        out = self._forward(batch)  # the actor alone, as in acting
        out[Columns.EMBEDDINGS] = self._critic_embeddings(batch)
        return out

    def _critic_embeddings(self, batch: dict[str, Any]) -> Any:
        obs = batch[Columns.OBS]
        if "critic" not in obs:
            raise ValueError(
                "this module has a privileged critic: its batches need obs['critic'] (privileged_critic env)"
            )
        return self.encoder.critic_encoder({**batch, Columns.OBS: obs["critic"]})[ENCODER_OUT]

    def compute_values(self, batch: dict[str, Any], embeddings: Any = None) -> Any:
        if self.privileged and embeddings is None:
            embeddings = self._critic_embeddings(batch)
        elif isinstance(batch[Columns.OBS], dict):
            _, batch = self._split(batch)
        return super().compute_values(batch, embeddings)


def actor_from_module(module: Any, activation: str) -> Actor:
    """The module's actor (its actor encoder's linear layers, then the policy head) as a
    numpy :class:`Actor`: the same logits, with no Ray or torch needed to play."""
    encoder = getattr(module.encoder, "actor_encoder", module.encoder)
    layers = []
    for part in (encoder, module.pi):
        for m in part.modules():
            if isinstance(m, torch.nn.Linear):
                layers.append((m.weight.detach().cpu().numpy().copy(), m.bias.detach().cpu().numpy().copy()))
    return Actor([(np.asarray(w), np.asarray(b)) for w, b in layers], activation)
