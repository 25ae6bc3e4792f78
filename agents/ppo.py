"""The PPO agent: a MaskablePPO policy trained by ``llama-rl train`` (see docs/training.md).

``agents.make("ppo")`` loads the shipped model ``agents/models/ppo_llama.zip``;
``agents.make("ppo", path="runs/<run>/model.zip")`` loads any run's model (or checkpoint).

Only the actor is kept: the zip's policy weights are read with torch on the CPU and the
action head's logits of the illegal actions are masked out, so a move is one small
forward pass and never illegal.
"""

from __future__ import annotations

import base64
import io
import json
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

from agents.base import BaseAgent
from llama_env.agent import register

__all__ = ["PPOAgent", "Actor", "load_actor", "actor_from_policy", "DEFAULT_MODEL"]

DEFAULT_MODEL = Path(__file__).resolve().parent / "models" / "ppo_llama.zip"


class Actor:
    """The policy half of an SB3 ``MlpPolicy``: ``obs -> masked logits``, batched, in numpy.

    Built from the weights of ``mlp_extractor.policy_net`` (Linear + activation layers) and
    ``action_net``; the value head is not needed to act. Plain numpy rather than torch:
    for a small MLP a numpy forward pass is cheaper than torch's per-call overhead, and it
    never competes with the learner's torch threads.
    """

    def __init__(self, layers: list[tuple[np.ndarray, np.ndarray]], activation: str = "tanh") -> None:
        if activation not in ("tanh", "relu"):
            raise ValueError(f"activation must be 'tanh' or 'relu', got {activation!r}")
        self.layers = [
            (np.ascontiguousarray(np.asarray(w, dtype=np.float32).T), np.asarray(b, dtype=np.float32))
            for w, b in layers
        ]
        self.activation = activation

    def logits(self, obs: np.ndarray, masks: np.ndarray) -> np.ndarray:
        """Masked logits (illegal actions at -inf), shape ``(B, 9)``."""
        x = np.asarray(obs, dtype=np.float32)
        last = len(self.layers) - 1
        for k, (wt, b) in enumerate(self.layers):
            x = x @ wt + b
            if k < last:
                x = np.tanh(x) if self.activation == "tanh" else np.maximum(x, 0.0)
        return np.where(np.asarray(masks, dtype=bool), x, -np.inf)

    def act_batch(self, obs: np.ndarray, masks: np.ndarray, deterministic: bool = True, rng: Any = None) -> np.ndarray:
        """Actions for a batch: argmax over legal actions, or a sample from the masked softmax."""
        masks = np.asarray(masks, dtype=bool)
        logits = self.logits(obs, masks)
        if deterministic:
            return logits.argmax(axis=1)
        z = logits - logits.max(axis=1, keepdims=True)
        p = np.exp(z.astype(np.float64))
        cdf = np.cumsum(p, axis=1)
        gen = rng if rng is not None else np.random.default_rng()
        u = gen.random((len(cdf), 1)) * cdf[:, -1:]
        acts = (u >= cdf).sum(axis=1)
        acts = np.minimum(acts, masks.shape[1] - 1)
        # a masked action has zero probability; guard the boundaries against rounding
        bad = ~masks[np.arange(len(acts)), acts]
        if bad.any():
            acts[bad] = logits[bad].argmax(axis=1)
        return acts


def actor_from_policy(policy: Any) -> Actor:
    """A frozen copy of the actor of an SB3 (Maskable)ActorCriticPolicy with an MLP."""
    layers = []
    act = "tanh"
    for m in policy.mlp_extractor.policy_net:
        if hasattr(m, "weight"):
            layers.append((m.weight.detach().cpu().numpy().copy(), m.bias.detach().cpu().numpy().copy()))
        elif type(m).__name__ == "ReLU":
            act = "relu"
    an = policy.action_net
    layers.append((an.weight.detach().cpu().numpy().copy(), an.bias.detach().cpu().numpy().copy()))
    return Actor(layers, act)


def load_actor(path: str | Path) -> Actor:
    """Read the actor from a MaskablePPO ``.zip`` (``policy.pth`` state dict) without
    building the whole algorithm: fast, CPU only."""
    try:
        import torch
    except ImportError:
        raise ModuleNotFoundError(
            "the ppo agent reads its model with torch, which is not installed: pip install 'llama-rl[train]'",
            name="torch",
        ) from None

    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"no PPO model at {path}")
    with zipfile.ZipFile(path) as zf:
        state = torch.load(io.BytesIO(zf.read("policy.pth")), map_location="cpu", weights_only=True)
        data = json.loads(zf.read("data").decode())
    # the activation is pickled in the zip's data; its name is all we need to know
    fn = (data.get("policy_kwargs") or {}).get("activation_fn")
    blob = fn.get(":serialized:", "") if isinstance(fn, dict) else ""
    act = "relu" if b"ReLU" in base64.b64decode(blob or b"") else "tanh"
    idx = sorted(
        {int(k.split(".")[2]) for k in state if k.startswith("mlp_extractor.policy_net.") and k.endswith(".weight")}
    )
    layers = [
        (state[f"mlp_extractor.policy_net.{i}.weight"].numpy(), state[f"mlp_extractor.policy_net.{i}.bias"].numpy())
        for i in idx
    ]
    layers.append((state["action_net.weight"].numpy(), state["action_net.bias"].numpy()))
    return Actor(layers, act)


@register("ppo")
class PPOAgent(BaseAgent):
    """A trained MaskablePPO policy (default: the shipped model); argmax over legal actions."""

    name = "ppo"

    def __init__(self, path: str | None = None, deterministic: bool = True, seed: int | None = None) -> None:
        super().__init__(seed)
        self.path: Path | None = Path(path) if path is not None else DEFAULT_MODEL
        self.deterministic = bool(deterministic)
        self.actor = load_actor(self.path)

    @classmethod
    def from_actor(cls, actor: Actor, deterministic: bool = True, seed: int | None = None) -> PPOAgent:
        """An agent around an in-memory :class:`Actor` (e.g. the policy being trained)."""
        agent = cls.__new__(cls)
        BaseAgent.__init__(agent, seed)
        agent.path = None
        agent.deterministic = bool(deterministic)
        agent.actor = actor
        return agent

    def act(self, observation: np.ndarray, action_mask: np.ndarray) -> int:
        mask = np.asarray(action_mask).astype(bool).reshape(1, -1)
        if not mask.any():
            raise ValueError("PPOAgent.act: the action mask has no legal action")
        obs = np.asarray(observation, dtype=np.float32).reshape(1, -1)
        return int(self.actor.act_batch(obs, mask, self.deterministic, self.rng)[0])

    def act_batch(self, observations: np.ndarray, action_masks: np.ndarray) -> np.ndarray:
        """Actions for many observations at once (one forward pass)."""
        return self.actor.act_batch(observations, np.asarray(action_masks).astype(bool), self.deterministic, self.rng)

    def __repr__(self) -> str:
        return f"PPOAgent(path={str(self.path)!r}, deterministic={self.deterministic})"
