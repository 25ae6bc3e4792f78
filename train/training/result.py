"""What a training run returns and shows, whichever backend trained it."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from train._program import Dropping, is_terminal
from train.training._tqdm_internals import leave_out  # a periodic evaluation left out of the bar, as of wall_s

if TYPE_CHECKING:
    from train.training.run_dir import RunDir

__all__ = [
    "ProcessStopped",
    "TrainResult",
    "TrainingStopped",
    "step_bar",
    "leave_out",
    "raise_unless_learned",
    "result_or_stopped",
    "say_interrupted",
    "NothingSaved",
    "say_nothing_saved",
    "removed_if_new",
]

LOG_INTERVAL = 60.0
"""Seconds between the bar's lines when stderr is a file (a log), not a terminal."""


def step_bar(total: int) -> Any:
    """The progress bar of a training session's ``total`` steps: the rate shown is the
    average since the start, the evaluations and checkpoint saves left out
    (:func:`leave_out`: the number the summary reports). On a terminal it redraws in
    place; written to a file it adds a line a minute instead of ten a second."""
    if sys.stderr is None:  # pythonw, or a stderr closed: nowhere to draw (the callers take None as no bar)
        return None
    from tqdm.auto import tqdm

    interval = 0.1 if is_terminal(sys.stderr) else LOG_INTERVAL
    return tqdm(
        total=total,
        unit="step",
        unit_scale=True,
        smoothing=0,
        dynamic_ncols=True,
        mininterval=interval,
        file=Dropping(sys.stderr),  # a full stderr (2>/dev/full) stops the bar, not the run
    )


@dataclass
class TrainResult:
    """What a run produced and how fast it went."""

    run_dir: Path
    model_path: Path
    """The trained policy: ``model.zip`` (sb3) or ``model.npz`` (rllib); ``agents.make("ppo", path=...)``
    plays either."""
    num_timesteps: int
    """Learner steps of the whole run (resumed sessions included)."""
    steps_this_session: int
    wall_s: float
    """Seconds of training: rollouts and updates, the periodic evaluations and checkpoint
    saves left out (they are :attr:`eval_save_s`)."""
    env_s: float
    """Seconds in the environment (rules, encoding, the opponents' moves); 0 where the backend cannot tell."""
    learn_s: float
    """Seconds of policy inference and updates (wall - env)."""
    interrupted: bool
    evals: list[dict[str, Any]]
    """The periodic evaluations (the rows of ``eval.jsonl``)."""
    backend: str = "sb3"
    stopped_early: bool = False
    """Whether training stopped before ``total_timesteps`` because an evaluation reached
    ``stop_win_share`` (:func:`train.training.evaluation.stops_early`)."""
    eval_save_s: float = 0.0
    """Seconds of the periodic evaluations and of the checkpoints saved while training,
    which :attr:`wall_s` and :attr:`steps_per_s` leave out."""

    @property
    def steps_per_s(self) -> float:
        """Steps of this session per second of training (:attr:`wall_s`)."""
        return self.steps_this_session / self.wall_s if self.wall_s > 0 else 0.0


class TrainingStopped(RuntimeError):
    """Training stopped by a failure it cannot go on from (an env worker or an rllib env
    runner killed: the system out of memory, a ``kill -9``; an rllib env runner failing; an
    opponent or the evaluation's agent failing in a game, its ``AgentError`` the
    ``__cause__``). The message says what stopped it and what is
    saved: the steps learned until then are saved as Ctrl-C saves them (a checkpoint and
    the model, :attr:`result`; ``None`` when it stopped before training began), so the
    run can be resumed."""

    def __init__(self, message: str, result: TrainResult | None = None) -> None:
        super().__init__(message)
        self.result = result


class ProcessStopped(RuntimeError):
    """A process a trainer samples its games in stopped (an sb3 env worker, an RLlib env
    runner): the run cannot go on. Its message says what the process was doing."""


def say_interrupted(steps: int, learned: bool, run: Path, resume_from: Path | None) -> None:
    """What a trainer does at a Ctrl-C or SIGTERM that stopped it, whichever the backend:
    it says that it saves the ``steps`` learned, and goes on to save them. A new run (one
    that continues no checkpoint: ``resume_from`` is ``None``) that ``learned`` no step
    keeps nothing: it says so, naming its directory ``run``, and raises
    ``KeyboardInterrupt``, on which the trainer removes the run as for a failure before
    the first step (it kept a checkpoint of 0 steps and an untrained model, played as the
    run's). A resumed run is saved all the same: its steps are its earlier sessions'."""
    if resume_from is None and not learned:
        say_nothing_saved(steps, run)
        raise NothingSaved
    print(f"\ninterrupted at {steps} steps: saving a checkpoint", flush=True)


class NothingSaved(KeyboardInterrupt):
    """The Ctrl-C (or SIGTERM) of a new run that learned no step, said already
    (:func:`say_interrupted`): the trainer removes the run, and says nothing more."""


def say_nothing_saved(steps: int, run: Path) -> None:
    """The line of a new run stopped (Ctrl-C, SIGTERM) before it learned a step: it is removed."""
    print(f"\ninterrupted at {steps} steps: nothing learned yet, so nothing is saved; removing {run}", flush=True)


@contextlib.contextmanager
def removed_if_new(run: RunDir, fresh: bool) -> Iterator[None]:
    """What a trainer does when its session fails or is stopped, whichever the backend: a
    new run (``fresh``) that saved nothing yet is removed (:meth:`RunDir.remove_new_run`:
    Ray's start-up files, the logs, its config), leaving no folder to block the next try,
    and the failure raised on. A run stopped so (Ctrl-C, SIGTERM: while Ray or the env
    workers start) says it once, unless :func:`say_interrupted` said it already
    (:class:`NothingSaved`); a run that saved (a Ctrl-C in the final save, or as Ray
    stops) is kept, and said nothing of. Only the holder of the run's lock enters it."""
    try:
        yield
    except BaseException as exc:
        if fresh and run.remove_new_run() and isinstance(exc, KeyboardInterrupt) and not isinstance(exc, NothingSaved):
            say_nothing_saved(0, run.path)
        raise


def raise_unless_learned(failure: BaseException | None, learned: bool) -> None:
    """How a run stopped by ``failure`` before it ``learned`` a step ends, whichever the
    backend: with nothing to save, an agent's error is raised as it is (the trainer then
    leaves a new run out, as for an agent that fails at the start), a
    :class:`ProcessStopped` as a :class:`TrainingStopped` "... before training began"."""
    if failure is None or learned:
        return
    if isinstance(failure, ProcessStopped):
        raise TrainingStopped(f"{failure} before training began") from failure
    raise failure


def result_or_stopped(result: TrainResult, failure: BaseException | None) -> TrainResult:
    """``result`` of a run that ended as it should, or the :class:`TrainingStopped` (carrying
    ``result``, whose steps are saved) that names the ``failure`` that stopped it: a
    :class:`ProcessStopped` (its message says what the process was doing), or an agent's
    error, which it is raised from."""
    if failure is None:
        return result
    if isinstance(failure, ProcessStopped):
        raise TrainingStopped(
            f"{failure} at {result.num_timesteps:,} steps; the steps learned are saved in {result.run_dir}", result
        )
    raise TrainingStopped(
        f"{failure}; the {result.num_timesteps:,} steps learned are saved in {result.run_dir}", result
    ) from failure
