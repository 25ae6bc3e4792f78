"""The learner side of :mod:`train.training.rllib.runner`: episode chunks to PPO's train batch.

RLlib's default learner pipeline for PPO appends one phantom step to every episode (for
the bootstrap value, masked out of the loss), then gathers the batch column by column and
episode by episode in Python, then runs GAE. With a game's learning seats as separate
chunks, one iteration of 8,192 decisions brings about 2,000 chunks, so the learner spent
as long gathering as training, and the 2,000 phantom rows made each epoch one minibatch
longer.

:class:`EpisodesToTrainBatch` replaces that pipeline (RLlib's
``add_default_connectors_to_learner_pipeline=False`` extension point) for the runner's
episodes: it concatenates their arrays, computes every value in one forward pass (each
chunk's states and the state after it), and GAE over the concatenation, to the same value
targets as RLlib's ``compute_value_targets``: a terminated chunk bootstraps from 0, a cut
one from the value of the state it stops at, and no advantage crosses from one chunk to
the next. The batch holds exactly the steps sampled, no phantom rows, so PPO's
minibatches divide it as they divide the SB3 trainer's. Advantages are normalised over the
batch, as RLlib does (over the real steps only: RLlib's statistics include the phantom
rows).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from ray.rllib.connectors.connector_v2 import ConnectorV2
from ray.rllib.core.columns import Columns
from ray.rllib.evaluation.postprocessing import Postprocessing
from ray.rllib.utils.postprocessing.value_predictions import compute_value_targets

from train.training.rllib.env import SHARED_POLICY

__all__ = ["EpisodesToTrainBatch"]


def _data(buffer: Any) -> Any:
    """A finalized lookback buffer's steps (the runner builds them with no lookback)."""
    if not buffer.finalized or buffer.lookback:
        raise ValueError("EpisodesToTrainBatch takes the numpy episodes LlamaEnvRunner makes (no lookback)")
    return buffer.data


class EpisodesToTrainBatch(ConnectorV2):
    """PPO's train batch for the shared module, straight from the runner's episode chunks."""

    def __init__(
        self,
        input_observation_space: Any = None,
        input_action_space: Any = None,
        *,
        gamma: float,
        lambda_: float,
        **kwargs: Any,
    ) -> None:
        super().__init__(input_observation_space, input_action_space, **kwargs)
        self.gamma = gamma
        self.lambda_ = lambda_

    def __call__(self, *, rl_module: Any, batch: dict[str, Any], episodes: list[Any], **kwargs: Any) -> dict[str, Any]:
        # chunks without a step (RLlib's own runners can make them) carry nothing to train on
        eps = [e for e in self.single_agent_episode_iterator(episodes, agents_that_stepped_only=False) if len(e)]
        if not eps:
            return batch
        lens = np.array([len(e) for e in eps], dtype=np.int64)
        obs = [_data(e.observations) for e in eps]
        # rows of the concatenated observations: each chunk's len + 1 states
        ends = np.cumsum(lens + 1)
        last = ends - 1  # the state each chunk stops at
        is_step = np.ones(int(ends[-1]), dtype=bool)
        is_step[last] = False
        all_obs = {key: np.concatenate([o[key] for o in obs]) for key in obs[0]}
        module = rl_module[SHARED_POLICY]
        device = next(module.parameters()).device
        with torch.no_grad():
            values = module.compute_values({Columns.OBS: _tensors(all_obs, device)}).cpu().numpy().astype(np.float64)
        terminated = np.array([bool(e.is_terminated) for e in eps])
        rewards = np.concatenate([_data(e.rewards) for e in eps]).astype(np.float64)
        # value targets as RLlib's compute_value_targets gives them (its layout: each
        # chunk's steps, then one row for the state after; that row's flags gate the
        # chunk's bootstrap and stop GAE there)
        all_rewards = np.zeros(len(values))
        all_rewards[is_step] = rewards
        terminateds = np.zeros(len(values))
        truncateds = np.zeros(len(values))
        step_rows = np.flatnonzero(is_step)
        final_step = last - 1  # each chunk's last real step (chunks have at least one)
        terminateds[final_step] = terminated
        truncateds[final_step] = ~terminated
        targets = compute_value_targets(
            values=values,
            rewards=all_rewards,
            terminateds=terminateds,
            truncateds=truncateds,
            gamma=self.gamma,
            lambda_=self.lambda_,
        )[step_rows]
        advantages = targets - values[step_rows]
        advantages = (advantages - advantages.mean()) / max(1e-4, float(advantages.std()))
        steps_obs = {key: value[step_rows] for key, value in all_obs.items()}
        columns = {
            Columns.OBS: steps_obs,
            Columns.ACTIONS: np.concatenate([_data(e.actions) for e in eps]),
            Columns.ACTION_LOGP: np.concatenate(
                [_data(e.extra_model_outputs[Columns.ACTION_LOGP]) for e in eps]
            ).astype(np.float32),
            Columns.ACTION_DIST_INPUTS: np.concatenate(
                [_data(e.extra_model_outputs[Columns.ACTION_DIST_INPUTS]) for e in eps]
            ),
            Postprocessing.ADVANTAGES: advantages.astype(np.float32),
            Postprocessing.VALUE_TARGETS: targets.astype(np.float32),
        }
        batch[SHARED_POLICY] = {
            key: (_tensors(value, device) if key == Columns.OBS else torch.from_numpy(value).to(device))
            for key, value in columns.items()
        }
        return batch


def _tensors(obs: dict[str, np.ndarray], device: Any) -> dict[str, torch.Tensor]:
    return {key: torch.from_numpy(np.ascontiguousarray(value)).to(device) for key, value in obs.items()}
