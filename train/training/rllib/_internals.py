"""The one place that knows RLlib's internals: the env runner's own sampling, and where
Tune's ``Trainable`` (RLlib's ``Algorithm``) makes its log folder.

:class:`train.training.rllib.runner.LlamaEnvRunner` samples its games its own way (four
times faster than RLlib's per-step bookkeeping; see that module). RLlib offers no public
hook for it: the public ``MultiAgentEnvRunner.sample`` does the work around sampling
(the weights' pull, timers, the ``explore`` default, the step count of
``truncate_episodes``, the ``on_sample_end`` callbacks) and calls the private ``_sample``
for the sampling itself. Overriding ``sample`` would drop that work, so
:class:`OwnSampling` overrides ``_sample`` and hands the call to a method of ours,
:meth:`OwnSampling.sample_episodes`, and names the two other private things the runner
needs. Nothing else in the project touches an RLlib name that starts with ``_``, except
the RLModule methods RLlib's documentation tells a custom module to override
(``_forward``, ``_forward_train``, in :mod:`train.training.rllib.module`), checked here
too.

What it assumes of RLlib, checked against **ray 2.60** (``pyproject.toml`` pins the minor
version); :func:`broken_assumptions` checks each, and ``tests/api/test_third_party.py``
fails, naming the Ray version and the assumption, when an upgrade breaks one
(``tests/train/test_rllib.py`` checks 1, 2 and 6 on a running runner):

1. ``MultiAgentEnvRunner.sample`` calls ``self._sample`` and returns its episodes;
   ``_sample`` takes the keyword-only ``num_timesteps``, ``num_episodes``, ``explore``,
   ``random_actions`` and ``force_reset``;
2. RLlib sets ``_needs_initial_reset`` when it makes the env (``make_env``): the next
   sample must deal new games (:attr:`OwnSampling.needs_reset`);
3. ``_log_episode_metrics(length, ret, sec, agents, modules, agent_steps)`` logs one
   finished episode under RLlib's names (:meth:`OwnSampling.log_episode`);
4. no private name of a runner built on :class:`OwnSampling` (its methods, its
   ``self._x =`` attributes) is one RLlib's runner already uses, but the two above;
5. RLModule's documented hooks ``_forward(batch, **kwargs)`` and
   ``_forward_train(batch, **kwargs)`` are still the ones RLlib calls;
6. PPO's ``training_step`` samples through ``synchronous_parallel_sample``, which samples
   again until the ``NUM_ENV_STEPS_SAMPLED`` the runners log add up to the train batch:
   so the runner logs the steps it returns (the moves carried over from a sample
   included), or PPO trains on a second round's steps too;
7. the env runner group calls a runner through ``FaultAwareApply.apply(func, ...)``,
   which ends the runner's process (``sys.exit(1)``) when ``func`` raises: the trainer
   then saw only "the actor died", never the opponent that failed or why.
   :meth:`OwnSampling.apply` lets the error go to the trainer instead, when RLlib is set
   not to restart failed runners (the trainer's setting: the runner is out of service).
   Checked: the runner class is a ``FaultAwareApply`` whose ``apply`` runs
   ``func(self, *args, **kwargs)``, and RLlib's actor manager calls runners through
   ``.apply.remote(``;
8. ``EnvRunnerGroup.__init__`` raises a runner's error in its constructor inside
   ``except RayActorError``: Ray's ``RayActorError``, or the runner's own error of any
   type with that one as its ``__context__``, which is how the trainer's ``_build_algo``
   tells a runner that cannot start from any other error. Checked: the constructor
   catches ``RayActorError`` and raises in that ``except`` block;
9. a ``Trainable`` built without Tune's storage (the trainer's ``Algorithm``) makes its
   log folder in ``_setup_logdir``, called from ``Trainable.__init__``, under the module
   global ``ray.tune.trainable.trainable.DEFAULT_STORAGE_PATH`` (which Ray sets from
   ``~/ray_results`` when it is imported), read as it runs; on the current API stack it
   writes nothing there. :func:`tune_logdir_aside` points that global at a temporary
   folder for a session, so that nothing is left in ``~/ray_results``, nor in the run.
"""

from __future__ import annotations

import ast
import contextlib
import inspect
import re
import tempfile
import textwrap
from collections.abc import Iterator
from typing import Any

import ray.tune.trainable.trainable as tune_trainable
from ray.rllib.algorithms.ppo import PPO
from ray.rllib.core.rl_module.rl_module import RLModule
from ray.rllib.env.env_runner_group import EnvRunnerGroup
from ray.rllib.env.multi_agent_env_runner import MultiAgentEnvRunner
from ray.rllib.execution import rollout_ops
from ray.rllib.utils import actor_manager

__all__ = ["CHECKED_VERSION", "OwnSampling", "tune_logdir_aside", "broken_assumptions"]

CHECKED_VERSION = "2.60"
"""The Ray minor version the assumptions were checked against."""

_OVERRIDDEN = {"_sample", "_needs_initial_reset"}  # the private names OwnSampling means to touch
_SAMPLE_PARAMETERS = ("num_timesteps", "num_episodes", "explore", "random_actions", "force_reset")
_EPISODE_METRICS_PARAMETERS = ("length", "ret", "sec", "agents", "modules", "agent_steps")


class OwnSampling(MultiAgentEnvRunner):
    """RLlib's multi-agent env runner, whose sampling a subclass does in :meth:`sample_episodes`."""

    def _sample(
        self,
        *,
        num_timesteps: int | None = None,
        num_episodes: int | None = None,
        explore: bool,
        random_actions: bool = False,
        force_reset: bool = False,
    ) -> list[Any]:
        return self.sample_episodes(
            num_timesteps=num_timesteps,
            num_episodes=num_episodes,
            explore=explore,
            random_actions=random_actions,
            force_reset=force_reset,
        )

    def sample_episodes(
        self,
        *,
        num_timesteps: int | None,
        num_episodes: int | None,
        explore: bool,
        random_actions: bool,
        force_reset: bool,
    ) -> list[Any]:
        """``num_timesteps`` steps or ``num_episodes`` whole episodes (one of them is
        ``None``), as RLlib's ``sample`` asks for them."""
        raise NotImplementedError

    def apply(self, func: Any, *args: Any, **kwargs: Any) -> Any:
        """``func(self, *args, **kwargs)``, what RLlib's ``apply`` runs for the trainer. What
        it raises goes to the trainer as it is (an opponent's ``AgentError``, with its
        message), where RLlib's own ``apply`` ends the runner's process and the trainer learns
        only that it died (7); with RLlib set to restart failed runners, it is RLlib's."""
        if self.config.restart_failed_env_runners:
            return super().apply(func, *args, **kwargs)
        return func(self, *args, **kwargs)

    @property
    def needs_reset(self) -> bool:
        """Whether the next sample must deal new games (RLlib sets it when it makes the env)."""
        return bool(self._needs_initial_reset)

    @needs_reset.setter
    def needs_reset(self, value: bool) -> None:
        self._needs_initial_reset = value

    def log_episode(
        self,
        length: int,
        ret: float,
        seconds: float,
        agent_returns: dict[str, float],
        module_returns: dict[str, float],
        agent_steps: dict[str, int],
    ) -> None:
        """One finished episode's metrics, under RLlib's names and its smoothing window."""
        self._log_episode_metrics(length, ret, seconds, agent_returns, module_returns, agent_steps)


@contextlib.contextmanager
def tune_logdir_aside() -> Iterator[None]:
    """Tune's ``DEFAULT_STORAGE_PATH`` on a temporary folder while the block runs, removed
    after it, and Ray's path again (9): RLlib's Algorithm makes an empty log folder there,
    under ~/ray_results otherwise. (In the run directory it was an empty ``ray_results/``
    said to hold RLlib's logs; the run's metrics are ``progress.jsonl``.)"""
    before = tune_trainable.DEFAULT_STORAGE_PATH
    with tempfile.TemporaryDirectory(prefix="llama-rl-tune-", ignore_cleanup_errors=True) as folder:
        tune_trainable.DEFAULT_STORAGE_PATH = folder
        try:
            yield
        finally:
            tune_trainable.DEFAULT_STORAGE_PATH = before


# --------------------------------------------------------------------------- the checks


def broken_assumptions(runner: type[OwnSampling] | None = None) -> list[str]:
    """Each assumption of this module (see its docstring) that the installed Ray breaks,
    in words; empty when all hold. ``runner``: a runner class built on :class:`OwnSampling`
    whose private names to check (4)."""
    problems: list[str] = []
    base = MultiAgentEnvRunner
    sample = getattr(base, "_sample", None)
    if sample is None:
        problems.append("1: MultiAgentEnvRunner has no _sample")
    else:
        params = inspect.signature(sample).parameters
        found = tuple(name for name in params if name != "self")
        if found != _SAMPLE_PARAMETERS or any(params[n].kind is not inspect.Parameter.KEYWORD_ONLY for n in found):
            problems.append(f"1: MultiAgentEnvRunner._sample takes {inspect.signature(sample)}")
    if "self._sample(" not in _source(base.sample):
        problems.append("1: MultiAgentEnvRunner.sample no longer calls self._sample")
    if "self._needs_initial_reset = True" not in _source(base.make_env):
        problems.append("2: MultiAgentEnvRunner.make_env no longer sets _needs_initial_reset")
    if sample is not None and "self._needs_initial_reset" not in _source(sample):
        problems.append("2: MultiAgentEnvRunner._sample no longer reads _needs_initial_reset")
    log = getattr(base, "_log_episode_metrics", None)
    if log is None:
        problems.append("3: MultiAgentEnvRunner has no _log_episode_metrics")
    else:
        found = tuple(name for name in inspect.signature(log).parameters if name != "self")
        if found != _EPISODE_METRICS_PARAMETERS:
            problems.append(f"3: MultiAgentEnvRunner._log_episode_metrics takes {inspect.signature(log)}")
    if runner is not None:
        clash = sorted((_private_names(runner, stop=base) & _private_names(base)) - _OVERRIDDEN)
        if clash:
            problems.append(f"4: {runner.__name__}'s private names {clash} are RLlib's runner's too")
    if "synchronous_parallel_sample(" not in _source(PPO.training_step):
        problems.append("6: PPO.training_step no longer samples through synchronous_parallel_sample")
    if "NUM_ENV_STEPS_SAMPLED" not in _source(rollout_ops.synchronous_parallel_sample):
        problems.append("6: synchronous_parallel_sample no longer counts the runners' NUM_ENV_STEPS_SAMPLED")
    if not issubclass(base, actor_manager.FaultAwareApply) or "func(self, *args, **kwargs)" not in _source(
        actor_manager.FaultAwareApply.apply
    ):
        problems.append("7: MultiAgentEnvRunner no longer runs func(self, *args, **kwargs) in FaultAwareApply.apply")
    if ".apply.remote(" not in _source(actor_manager.FaultTolerantActorManager):
        problems.append("7: RLlib's actor manager no longer calls a runner through apply")
    if not _raises_in_except(_source(EnvRunnerGroup.__init__), "RayActorError"):
        problems.append("8: EnvRunnerGroup.__init__ no longer raises a runner's error inside except RayActorError")
    trainable = tune_trainable.Trainable
    if not isinstance(getattr(tune_trainable, "DEFAULT_STORAGE_PATH", None), str):
        problems.append("9: ray.tune.trainable.trainable has no DEFAULT_STORAGE_PATH")
    if "self._setup_logdir()" not in _source(trainable.__init__) or "dir=DEFAULT_STORAGE_PATH" not in _source(
        getattr(trainable, "_setup_logdir", None)
    ):
        problems.append("9: Trainable no longer makes its log folder under DEFAULT_STORAGE_PATH in _setup_logdir")
    for hook in ("_forward", "_forward_train"):
        method = getattr(RLModule, hook, None)
        if method is None or list(inspect.signature(method).parameters)[:2] != ["self", "batch"]:
            problems.append(f"5: RLModule.{hook}(batch, **kwargs) is gone")
        elif f"self.{hook}(" not in _source(RLModule):
            problems.append(f"5: RLModule no longer calls self.{hook}")
    return problems


def _raises_in_except(source: str, error: str) -> bool:
    """Whether ``source`` has an ``except <error>`` block with a ``raise`` in it."""
    try:
        tree = ast.parse(textwrap.dedent(source))
    except SyntaxError:
        return False
    return any(
        isinstance(node, ast.ExceptHandler)
        and error in ast.unparse(node.type or ast.Name(""))
        and any(isinstance(n, ast.Raise) for n in ast.walk(node))
        for node in ast.walk(tree)
    )


def _source(obj: Any) -> str:
    try:
        return inspect.getsource(obj)
    except (OSError, TypeError):
        return ""


_ASSIGNED = re.compile(r"self\.(_[A-Za-z0-9]\w*)\s*(?::[^=\n]+)?=(?!=)")


def _private_names(cls: type, stop: type | None = None) -> set[str]:
    """The private names (not dunders) that ``cls`` and its bases, up to ``stop``
    (excluded), define or assign to ``self``."""
    names: set[str] = set()
    for c in cls.__mro__:
        if c is stop or c is object:
            break
        names |= {n for n in vars(c) if n.startswith("_") and not n.startswith("__") and n != "_abc_impl"}
        names |= set(_ASSIGNED.findall(_source(c)))
    return names
