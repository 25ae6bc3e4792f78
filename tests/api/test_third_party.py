"""Other people's internals stay in one guarded place: each lives in one module, and these tests
fail by name, with the installed version, when an upgrade no longer behaves as that module
assumes.

* PettingZoo: :mod:`llama_env._pettingzoo` (the fast wrapper chain of ``llama_env.env()``);
* Ray RLlib: :mod:`train.training.rllib._internals` (the env runner's own ``_sample``, Tune's log folder).
* uvicorn: :mod:`train.play._uvicorn` (its h11 protocol's ``cycle``, read by the idle-connection timer).
* threadpoolctl: :mod:`agents._threadpoolctl_internals` (the say over OpenBLAS's threads
  that threadpoolctl 3.8 gives one thread, given up so that searches in several threads
  share one limit).
* Python's process pool: :mod:`train.evaluation._pool_internals` (``_processes`` and
  ``_executor_manager_thread``, read to stop an interrupted evaluation's workers before
  Python 3.14); the installed Python is checked in ``tests/train/test_evaluate.py``, the
  check itself here.

The pins in ``pyproject.toml`` name the minor versions the modules were checked against.
"""

from __future__ import annotations

import re
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
import pettingzoo
import pytest
import threadpoolctl
from conftest import needs_rllib
from pettingzoo.utils import wrappers
from pettingzoo.utils.env_logger import EnvLogger

import llama_env
from llama_env import _pettingzoo
from llama_env.aec_env import MaskedDiscrete
from llama_env.observation import action_mask

PYPROJECT = (Path(__file__).parents[2] / "pyproject.toml").read_text()


def pinned_minor(package: str) -> str:
    """The minor version ``pyproject.toml`` pins ``package`` to (``>=X.Y,<X.Y+1``)."""
    m = re.search(rf'"{re.escape(package)}(?:\[\w+\])?>=(\d+)\.(\d+)(?:\.\d+)?,<(\d+)\.(\d+)"', PYPROJECT)
    assert m, f"pyproject.toml pins no minor version of {package}"
    major, minor, major_below, minor_below = map(int, m.groups())
    assert (major_below, minor_below) == (major, minor + 1), f"{package}'s range spans more than one minor version"
    return f"{major}.{minor}"


# --------------------------------------------------------------------------- PettingZoo


def test_pettingzoo_behaves_as_the_fast_wrappers_assume():
    problems = _pettingzoo.broken_assumptions(llama_env.raw_env)
    assert not problems, (
        f"PettingZoo {pettingzoo.__version__} no longer behaves as llama_env/_pettingzoo.py assumes "
        f"(checked against {_pettingzoo.CHECKED_VERSION}): " + "; ".join(problems)
    )


def test_pettingzoo_pin_is_the_checked_version():
    assert pinned_minor("pettingzoo") == _pettingzoo.CHECKED_VERSION
    assert pettingzoo.__version__.startswith(_pettingzoo.CHECKED_VERSION + ".")


def test_the_pettingzoo_check_names_a_new_override(monkeypatch):
    """A method PettingZoo adds to a wrapper would be skipped by the fast paths."""
    monkeypatch.setattr(wrappers.OrderEnforcingWrapper, "last", lambda self, observe=True: None, raising=False)
    problems = _pettingzoo.broken_assumptions(llama_env.raw_env)
    assert any(p.startswith("1: OrderEnforcingWrapper now defines ['last']") for p in problems), problems


def test_the_pettingzoo_check_names_a_flag_that_moved(monkeypatch):
    """A wrapper that kept its order flag elsewhere would leave the fast step's write unread."""

    def step(self, action):
        wrappers.BaseWrapper.step(self, action)  # no _has_updated

    monkeypatch.setattr(wrappers.OrderEnforcingWrapper, "step", step)
    problems = _pettingzoo.broken_assumptions(llama_env.raw_env)
    assert any(p.startswith("3/4: step does not set _has_updated") for p in problems), problems


def test_the_pettingzoo_check_names_a_field_that_is_gone(monkeypatch):
    """A wrapper that no longer keeps ``_terminated`` (renamed, say) fails the check, not the game."""
    cls = wrappers.TerminateIllegalWrapper
    init, reset = cls.__init__, cls.reset

    def init_without(self, env, illegal_reward):
        init(self, env, illegal_reward)
        del self._terminated

    def reset_without(self, seed=None, options=None):
        reset(self, seed=seed, options=options)
        del self._terminated

    monkeypatch.setattr(cls, "__init__", init_without)
    monkeypatch.setattr(cls, "reset", reset_without)
    problems = _pettingzoo.broken_assumptions(llama_env.raw_env)
    assert len(problems) == 1 and problems[0].startswith("2-5: checking them raised AttributeError"), problems
    assert "_terminated" in problems[0]


def test_the_pettingzoo_check_compares_whole_games(monkeypatch):
    """Where the flags hold but the fast chain plays differently, the scripted game says where."""
    monkeypatch.setattr(llama_env.LlamaAECEnv, "illegal_action_reward", lambda self, agent: -0.5)
    problems = _pettingzoo.broken_assumptions(llama_env.raw_env)
    assert len(problems) == 1 and problems[0].startswith("6: the fast chain and PettingZoo's differ"), problems


def test_the_pettingzoo_check_names_a_penalty_kept_elsewhere(monkeypatch):
    """The fast chain hands PettingZoo's wrapper the env's penalty in ``_illegal_value``
    before each step: a wrapper that paid a number kept under another name would pay the
    NaN it was made with."""
    cls = wrappers.TerminateIllegalWrapper
    init, step = cls.__init__, cls.step

    def init_elsewhere(self, env, illegal_reward):
        init(self, env, illegal_reward)
        self._fixed = illegal_reward

    def step_elsewhere(self, action):
        self._illegal_value = self._fixed
        step(self, action)

    monkeypatch.setattr(cls, "__init__", init_elsewhere)
    monkeypatch.setattr(cls, "step", step_elsewhere)
    problems = _pettingzoo.broken_assumptions(llama_env.raw_env)
    assert len(problems) == 1 and problems[0].startswith("6: the fast chain and PettingZoo's differ"), problems
    assert "nan" in problems[0]


def test_the_fast_chain_warns_after_the_end_as_pettingzoos_does():
    """A step once every agent has stepped out warns (PettingZoo's wrapper) instead of the
    KeyError the fast path gave before it was compared with PettingZoo's chain."""
    e = llama_env.env(2)
    e.reset(seed=1)
    for _ in e.agent_iter():
        obs, _, terminated, truncated, _ = e.last()
        e.step(None if terminated or truncated else int(obs["action_mask"].argmax()))
    EnvLogger.flush()
    e.step(None)
    assert any("step() called after all agents are terminated" in m for m in EnvLogger.mqueue)


def test_masked_discrete_reads_no_private_field_of_gymnasium():
    """MaskedDiscrete follows ``seed()`` (the only way Gymnasium replaces a space's
    generator) instead of reading ``Space._np_random`` at every sample."""
    mask = action_mask((0, 3, 7))
    space = MaskedDiscrete(9)
    space.seed(5)
    first = [int(space.sample(mask)) for _ in range(40)]
    space.seed(5)
    assert [int(space.sample(mask)) for _ in range(40)] == first
    space.seed(6)
    assert [int(space.sample(mask)) for _ in range(40)] != first
    assert set(first) <= {0, 3, 7} and type(space.sample(mask)) is np.int64


# --------------------------------------------------------------------------- Ray RLlib


@needs_rllib
def test_ray_behaves_as_the_env_runner_assumes():
    import ray

    from train.training.rllib import _internals as _rllib
    from train.training.rllib.runner import LlamaEnvRunner

    problems = _rllib.broken_assumptions(LlamaEnvRunner)
    assert not problems, (
        f"Ray {ray.__version__} no longer behaves as train/training/rllib/_internals.py assumes "
        f"(checked against {_rllib.CHECKED_VERSION}): " + "; ".join(problems)
    )


@needs_rllib
def test_ray_pin_is_the_checked_version():
    import ray

    from train.training.rllib import _internals as _rllib

    assert pinned_minor("ray") == _rllib.CHECKED_VERSION
    assert ray.__version__.startswith(_rllib.CHECKED_VERSION + ".")


@needs_rllib
def test_the_ray_check_names_a_moved_tune_log_folder(monkeypatch):
    import ray.tune.trainable.trainable as tune_trainable

    from train.training.rllib import _internals as _rllib

    monkeypatch.setattr(tune_trainable.Trainable, "_setup_logdir", lambda self: None)
    problems = _rllib.broken_assumptions()
    assert any(p.startswith("9: Trainable no longer makes its log folder") for p in problems), problems


@needs_rllib
def test_the_ray_check_names_a_changed_sample(monkeypatch):
    from ray.rllib.env.multi_agent_env_runner import MultiAgentEnvRunner

    from train.training.rllib import _internals as _rllib

    def _sample(self, *, num_timesteps=None, num_episodes=None, explore, random_actions=False):
        raise AssertionError("not called")

    monkeypatch.setattr(MultiAgentEnvRunner, "_sample", _sample)
    problems = _rllib.broken_assumptions()
    assert any(p.startswith("1: MultiAgentEnvRunner._sample takes") for p in problems), problems


@needs_rllib
def test_the_ray_check_names_a_private_name_that_rllib_uses_too():
    """A runner method that happens to share a name with one of RLlib's would replace it silently."""
    from train.training.rllib import _internals as _rllib
    from train.training.rllib.runner import LlamaEnvRunner

    class Clashing(LlamaEnvRunner):
        def _reset_envs(self, episodes, shared_data, explore):
            pass

        def __init__(self, config, **kwargs):
            super().__init__(config, **kwargs)
            self._cached_to_module = {}

    problems = _rllib.broken_assumptions(Clashing)
    assert problems == ["4: Clashing's private names ['_cached_to_module', '_reset_envs'] are RLlib's runner's too"]


@needs_rllib
def test_the_ray_check_names_a_sampling_loop_that_no_longer_counts_the_runners_steps(monkeypatch):
    from ray.rllib.execution import rollout_ops

    from train.training.rllib import _internals as _rllib

    def synchronous_parallel_sample(worker_set, max_env_steps=None, **kwargs):
        raise AssertionError("not called")

    monkeypatch.setattr(rollout_ops, "synchronous_parallel_sample", synchronous_parallel_sample)
    assert _rllib.broken_assumptions() == [
        "6: synchronous_parallel_sample no longer counts the runners' NUM_ENV_STEPS_SAMPLED"
    ]


@needs_rllib
def test_the_ray_check_names_an_apply_that_no_longer_runs_the_call_as_assumed(monkeypatch):
    """The runner's ``apply`` takes over RLlib's to pass a failed opponent's error on; an
    RLlib whose ``apply`` calls the function another way would leave it unused."""
    from ray.rllib.utils import actor_manager

    from train.training.rllib import _internals as _rllib

    def apply(self, func, *args, **kwargs):
        return func(self, args, kwargs)

    monkeypatch.setattr(actor_manager.FaultAwareApply, "apply", apply)
    assert _rllib.broken_assumptions() == [
        "7: MultiAgentEnvRunner no longer runs func(self, *args, **kwargs) in FaultAwareApply.apply"
    ]


@needs_rllib
def test_the_ray_check_names_a_runner_apply_no_longer_reaches(monkeypatch):
    """The other two parts of 7: the runner is no ``FaultAwareApply`` any more, or RLlib's
    actor manager no longer calls a runner through ``apply``."""
    from ray.rllib.utils import actor_manager

    from train.training.rllib import _internals as _rllib

    with monkeypatch.context() as patch:
        patch.setattr(actor_manager, "FaultAwareApply", type("FaultAwareApply", (), {"apply": lambda self: None}))
        assert _rllib.broken_assumptions() == [
            "7: MultiAgentEnvRunner no longer runs func(self, *args, **kwargs) in FaultAwareApply.apply"
        ]

    class FaultTolerantActorManager:
        def foreach_actor(self, func):  # type: ignore[no-untyped-def]
            return [actor.run.remote(func) for actor in ()]

    monkeypatch.setattr(actor_manager, "FaultTolerantActorManager", FaultTolerantActorManager)
    assert _rllib.broken_assumptions() == ["7: RLlib's actor manager no longer calls a runner through apply"]


@needs_rllib
def test_the_ray_check_names_a_runner_group_that_no_longer_raises_a_failed_start_as_assumed(monkeypatch):
    """The trainer tells a runner that cannot start by the ``RayActorError`` that
    ``EnvRunnerGroup.__init__`` raises, or the runner's own error raised while it handles
    that one (8); an RLlib that swallowed it, or caught something else, would leave the
    trainer's check blind."""
    from ray.exceptions import RayActorError
    from ray.rllib.env.env_runner_group import EnvRunnerGroup

    from train.training.rllib import _internals as _rllib

    def swallowing(self, **kwargs):  # type: ignore[no-untyped-def]
        try:
            self._setup(**kwargs)
        except RayActorError:
            self.failed = True

    def other(self, **kwargs):  # type: ignore[no-untyped-def]
        try:
            self._setup(**kwargs)
        except RuntimeError as e:
            raise e

    for init in (swallowing, other):
        monkeypatch.setattr(EnvRunnerGroup, "__init__", init)
        assert _rllib.broken_assumptions() == [
            "8: EnvRunnerGroup.__init__ no longer raises a runner's error inside except RayActorError"
        ]


# --------------------------------------------------------------------------- uvicorn


def test_uvicorn_sets_what_the_idle_connection_timer_reads():
    """The web server closes a connection that sends no request by reading ``cycle`` of
    uvicorn's h11 protocol; an uvicorn without it would get its own protocol back, and
    silently no timer."""
    import uvicorn
    from uvicorn.protocols.http.h11_impl import H11Protocol

    from train.play._uvicorn import sets_cycle, timely_protocol

    assert sets_cycle(H11Protocol), (
        f"uvicorn {uvicorn.__version__}'s h11 protocol no longer sets 'cycle' in __init__, which "
        "train/play/_uvicorn.py reads to close idle connections"
    )
    assert issubclass(timely_protocol(1.0), H11Protocol)
    assert not sets_cycle(object)  # an uvicorn without it: its own protocol, as before


# --------------------------------------------------------------------------- threadpoolctl


def test_threadpoolctl_behaves_as_the_shared_blas_limit_assumes():
    from agents import _threadpoolctl_internals as internals

    problems = internals.broken_assumptions()
    assert not problems, (
        f"threadpoolctl {threadpoolctl.__version__} no longer behaves as agents/_threadpoolctl_internals.py "
        f"assumes (checked against {internals.CHECKED_VERSION}): " + "; ".join(problems)
    )


needs_a_say = pytest.mark.skipif(
    not hasattr(threadpoolctl.OpenBLASController, "clear_controlling_thread"),
    reason="threadpoolctl before 3.8 gives no thread a say over OpenBLAS's threads",
)


@needs_a_say
def test_the_threadpoolctl_check_names_a_give_up_that_is_gone(monkeypatch):
    from threadpoolctl import OpenBLASController

    from agents import _threadpoolctl_internals as internals

    monkeypatch.delattr(OpenBLASController, "clear_controlling_thread")
    assert internals.broken_assumptions() == ["2: OpenBLASController has no clear_controlling_thread()"]


@needs_a_say
def test_the_threadpoolctl_check_names_a_give_up_that_no_longer_gives_the_say_up(monkeypatch):
    """A threadpoolctl whose clear_controlling_thread() kept the say would leave the last
    search unable to lift the limit: numpy on one thread for good."""
    from threadpoolctl import OpenBLASController

    from agents import _threadpoolctl_internals as internals

    monkeypatch.setattr(OpenBLASController, "clear_controlling_thread", classmethod(lambda cls, force=False: None))
    problems = internals.broken_assumptions()
    assert len(problems) == 1 and problems[0].startswith("2: a thread's setting did not take effect"), problems


@needs_a_say
def test_the_threadpoolctl_check_names_a_say_kept_elsewhere(monkeypatch):
    from threadpoolctl import OpenBLASController

    from agents import _threadpoolctl_internals as internals

    class Elsewhere:
        lock = OpenBLASController._SHARED_STATE.lock

    monkeypatch.setattr(OpenBLASController, "_SHARED_STATE", Elsewhere)
    assert internals.broken_assumptions() == ["1: OpenBLASController has no _SHARED_STATE.controlling_thread"]


# --------------------------------------------------------------------------- Python's process pool


@pytest.mark.skipif(
    hasattr(ProcessPoolExecutor, "terminate_workers"),
    reason="Python 3.14's pool ends its workers publicly: no private attribute is read",
)
def test_the_process_pool_check_names_a_pool_that_keeps_its_thread(monkeypatch):
    """The check that ``tests/train/test_evaluate.py`` runs against the installed Python
    names a broken assumption by its number: here a pool whose ``shutdown(wait=False)``
    keeps ``_executor_manager_thread``, as a new Python might."""
    from train.evaluation import _pool_internals

    class KeepsItsThread(ProcessPoolExecutor):
        def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
            thread = self._executor_manager_thread  # type: ignore[attr-defined]
            super().shutdown(wait=wait, cancel_futures=cancel_futures)
            self._executor_manager_thread = thread

    monkeypatch.setattr(_pool_internals, "ProcessPoolExecutor", KeepsItsThread)
    assert _pool_internals.broken_assumptions() == ["2: shutdown(wait=False) does not forget _executor_manager_thread"]
