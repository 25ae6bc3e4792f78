"""What happens during sb3 training besides PPO itself: the SB3 callback that refreshes
the self-play opponent, grows the past league, saves checkpoints, runs the periodic
evaluation (:mod:`train.training.evaluation`, shared with the other backends) and logs
speed.

Snapshots, checkpoints and evaluations are taken between rollouts, after an update, so
that the policy saved or measured at ``N`` steps is the one trained on exactly the first
``N`` steps of experience (taken during a rollout, ``ppo_N`` would hold the policy before
the update of the rollout that reached ``N``). A run stopped in the middle of a rollout
(Ctrl-C, or its target reached) is likewise saved at the steps its policy was trained on:
the part of a rollout collected but never learned from is not counted."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.logger import Logger

from agents.ppo import Actor, actor_from_policy
from train.training.evaluation import evaluation_message, evaluation_row, next_multiple, stops_early
from train.training.result import leave_out, step_bar
from train.training.sb3.vec_env import ActorPolicy

if TYPE_CHECKING:
    from train.training.config import TrainConfig
    from train.training.run_dir import RunDir
    from train.training.sb3.vec_env import LlamaVecEnv
    from train.training.sb3.workers import SplitVecEnv

__all__ = ["TrainingHooks"]


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"about {seconds:.0f} s"
    if seconds < 5400:
        return f"about {seconds / 60:.0f} min"
    return f"about {seconds / 3600:.1f} h"


class TrainingHooks(BaseCallback):
    """The per-step and per-rollout work of a training run (see the module docstring)."""

    def __init__(
        self,
        config: TrainConfig,
        env: LlamaVecEnv | SplitVecEnv,
        run: RunDir,
        past: list[Actor],
        opp_rng: np.random.Generator,
        save_checkpoint: Callable[[], Any],
        evals: list[dict[str, Any]],
        start_steps: int,
    ) -> None:
        super().__init__()
        self.config = config
        self.env = env
        self.run = run
        self.past = past
        self.opp_rng = opp_rng
        self.save_checkpoint = save_checkpoint
        self.evals = evals
        self.start_steps = start_steps
        self.next_ckpt = next_multiple(start_steps, config.checkpoint_every)
        self.next_eval = next_multiple(start_steps, config.eval_every)
        self.next_past = next_multiple(start_steps, config.past_every)
        self.trained = start_steps
        """Steps of experience the policy has been updated on (the step count at the
        start of the current rollout)."""
        self.collecting = False
        """Whether a rollout is being collected (not yet learned from)."""
        self.halt = False
        """Set between rollouts to stop training at the next step (a target reached, or
        the run directory lost)."""
        self.t0 = time.perf_counter()
        self.t_roll = 0.0
        self.rollout_s = 0.0
        self.wins: list[float] = []
        self.write_error: OSError | None = None
        """Set when the run directory could not be written; training then stops."""
        self.stopped_early = False
        """Set when an evaluation reached ``config.stop_win_share`` before the step budget's
        end, confirmed on fresh deals; training then stops
        (:func:`~train.training.evaluation.stops_early`)."""
        self.aside_s = 0.0
        """Seconds of the periodic evaluations and checkpoint saves: no part of training's
        time (:attr:`learn_seconds`, the bar's rate and the speed logged leave them out)."""
        self.learn_seconds = 0.0
        """Seconds from the first to the last step of ``learn``, evaluations and checkpoint
        saves left out (what the bar's rate covers)."""
        self.bar: Any = None
        self._eta_shown = False

    def _on_training_start(self) -> None:
        self.t0 = time.perf_counter()
        budget = self.config.total_timesteps - self.start_steps
        if self.config.progress_bar and budget > 0:
            rollout = self.config.n_steps * self.config.n_envs
            later = "; a time estimate follows the first update" if budget > rollout else ""  # one rollout: none
            print(
                f"training {budget:,} steps (to {self.config.total_timesteps:,}) in {self.run.path}{later}", flush=True
            )
            self.bar = step_bar(budget)

    def _on_training_end(self) -> None:
        self.learn_seconds = self._training_seconds()

    def close(self) -> None:
        if not self.learn_seconds:
            self.learn_seconds = self._training_seconds()
        if self.bar is not None:
            self.bar.close()
            self.bar = None

    def _on_rollout_start(self) -> None:
        self.t_roll = time.perf_counter()
        # torch on one thread while the games move: a rollout's forward passes are a few
        # hundred rows, and idle intra-op threads would spin on the cores the env
        # workers need; the updates get the config's torch_threads back
        torch.set_num_threads(1)
        # "self" plays a numpy copy of the current actor, refreshed at every rollout start
        # (the policy only changes between rollouts)
        actor = actor_from_policy(self.model.policy)
        self.env.set_policy("self", ActorPolicy(actor, self.opp_rng))
        self.collecting = True
        self._between_rollouts(actor)
        if not self.halt:
            self._show_estimate()

    def after_learn(self) -> None:
        """What fell due with ``learn``'s last update (the checkpoint and evaluation at the
        end); the trainer calls it when ``learn`` returned of itself. The games are not
        asked anything: no rollout follows, so no past snapshot joins the league, and an
        env worker that died during the last update stops nothing (the run has trained
        its whole budget; closing the env ends the others)."""
        self._between_rollouts(actor_from_policy(self.model.policy), rollout_follows=False)

    def _between_rollouts(self, actor: Actor, rollout_follows: bool = True) -> None:
        """The past snapshot (before a rollout only), checkpoint and evaluation due by
        now, of ``actor``, the policy updated on the model's steps so far. Sets
        :attr:`halt` when training should stop."""
        config = self.config
        n = self.trained = self.model.num_timesteps
        if rollout_follows and config.past_every and n >= self.next_past:
            self.past.append(actor)
            del self.past[: -config.past_pool]
            self.env.set_past_policies([ActorPolicy(a, self.opp_rng) for a in self.past])
            self.next_past = next_multiple(n, config.past_every)
        started = time.perf_counter()
        try:
            if config.checkpoint_every and n >= self.next_ckpt:
                self.save_checkpoint()
                self.next_ckpt = next_multiple(n, config.checkpoint_every)
            if config.eval_every and n >= self.next_eval:
                self.run_eval(actor)
                self.next_eval = next_multiple(n, config.eval_every)
        except OSError as exc:  # the run directory cannot be written: stop, keep what is saved
            self.write_error = exc
        finally:
            aside = time.perf_counter() - started
            self.aside_s += aside
            if self.bar is not None:
                leave_out(self.bar, aside)
        self.halt = self.write_error is not None or self.stopped_early

    def steps_learned(self) -> int:
        """The step count to save the policy under now: :attr:`trained` in the middle of
        a rollout (what it collected was not learned from), else the model's count; the
        count it started from when ``learn`` stopped before it began (in its first reset,
        where the opponents move first: no model is given to the callback yet)."""
        if getattr(self, "model", None) is None:
            return self.start_steps
        return self.trained if self.collecting else self.model.num_timesteps

    def _on_rollout_end(self) -> None:
        self.collecting = False
        torch.set_num_threads(self.config.torch_threads)
        self.rollout_s += time.perf_counter() - self.t_roll
        wall = self._training_seconds()
        done = self.model.num_timesteps - self.start_steps
        self.logger.record("speed/env_steps_per_s", done / max(wall, 1e-9))
        self.logger.record("speed/env_s", self.env.env_time)
        self.logger.record("speed/rollout_s", self.rollout_s)
        if self.wins:
            self.logger.record("rollout/win_share", float(np.mean(self.wins)))
            self.wins = []

    def _show_estimate(self) -> None:
        """The time left, shown once: at the start of the second rollout, from the rate of
        the first rollout and the update that followed it (taken at the end of the rollout,
        the rate left the updates out, and the estimate was a fraction of the time)."""
        done = self.model.num_timesteps - self.start_steps
        if self.bar is None or self._eta_shown or done <= 0:
            return
        self._eta_shown = True
        rate = done / max(self._training_seconds(), 1e-9)
        left = (self.config.total_timesteps - self.model.num_timesteps) / rate
        self.bar.write(f"{rate:,.0f} steps/s so far: {_duration(left)} to go (evaluations add a little)")

    def _training_seconds(self) -> float:
        """Seconds since training started, the evaluations and checkpoint saves left out."""
        return time.perf_counter() - self.t0 - self.aside_s

    def _on_step(self) -> bool:
        if self.halt:  # decided between rollouts; this step's experience is not counted
            return False
        if self.bar is not None:
            self.bar.update(self.training_env.num_envs)
        for info, d in zip(self.locals["infos"], self.locals["dones"], strict=True):
            if d:
                self.wins.append(info["win_share"])
        return True

    def run_eval(self, actor: Actor) -> None:
        config = self.config
        row = evaluation_row(actor, config, self.trained)
        # written now, at the step measured, by a logger of their own on the run's outputs:
        # recorded in the model's, SB3 would write them at its next dump, a rollout later,
        # and the evaluation at the end of the budget never
        logger = Logger(folder=None, output_formats=self.logger.output_formats)
        logger.set_level(self.logger.level)
        for n in config.eval_players:
            logger.record(f"eval/win_share_vs_{config.eval_opponent}_{n}p", row[f"win_share_{n}p"])
            logger.record(f"eval/fair_share_{n}p", 1.0 / n)
        logger.dump(self.trained)
        self.evals.append(row)
        self.run.append_eval(row)
        self.stopped_early = stops_early(config, row)
        if self.bar is not None:
            self.bar.write(evaluation_message(config, row))
        else:  # no bar, or the evaluation at the end, once the bar is closed
            print(evaluation_message(config, row), flush=True)
