"""One vec env's games played in several processes at once, so that they move on every core.

A step of :class:`~train.training.sb3.vec_env.LlamaVecEnv` (the rules, the observations,
every opponent's move) is Python on one core, and the trainer waits for it: at the
``ship`` preset's settings it is half of a run's time. :class:`SplitVecEnv` splits the
``num_envs`` games into shares, each a vec env of the same class: the first played in the
trainer's process, each other in a worker process of its own, all at once; then it
gathers their observations, rewards, ends, infos and masks in slot order.

Each share's games are seeded from the run's seed and the share's number
(:func:`worker_seed`), so a seeded run replays the same games for the same number of
shares (not the games one process plays: the seatings and deals come from other
generators). The ``"self"`` and ``"past"`` opponents reach the workers as
:class:`~train.training.sb3.vec_env.ActorPolicy` (the actor's weights), each share
sampling their moves from its own generator.

The sb3 backend's option ``env_workers`` picks the number of shares (1, the default: no
workers, every game in the trainer's process).
"""

from __future__ import annotations

import atexit
import contextlib
import multiprocessing as mp
import multiprocessing.util  # registers its exit function now: _close_open, registered later, runs first
import os
import pickle
import signal
import sys
import time
import weakref
from collections.abc import Sequence
from dataclasses import replace
from multiprocessing.connection import Connection
from typing import Any

import cloudpickle
import numpy as np
from stable_baselines3.common.vec_env.base_vec_env import VecEnvStepReturn

from llama_env.agent import adopt, registrations
from llama_env.engine import NUM_ACTIONS, LlamaGame, brief, check_seed, is_int
from train.training.result import ProcessStopped
from train.training.sb3.vec_env import ActorPolicy, LlamaVecEnv, OneVecEnv, PolicyFn, policy_rng, vec_env_class

__all__ = ["CLOSE_WAIT", "EnvWorkerStopped", "SplitVecEnv", "make_vec_env", "worker_seed"]

CLOSE_WAIT = 5.0
"""Seconds :meth:`SplitVecEnv.close` gives the workers to stop before it kills them."""
TRAINER_CHECK = 1.0
"""Seconds between a waiting worker's checks that the trainer still runs."""


class EnvWorkerStopped(ProcessStopped):
    """An env worker stopped without being asked to (killed: the system out of memory, a
    ``kill -9``): its games are gone, and the vec env cannot go on. The message names the
    worker and how it ended."""


def make_vec_env(engine: str, env_workers: int, num_envs: int, **kwargs: Any) -> LlamaVecEnv | SplitVecEnv:
    """The sb3 trainer's vec env: the games of ``engine`` (:func:`vec_env_class`; ``auto``
    picks by the games of one share) in the trainer's process (``env_workers=1``), or in
    ``env_workers`` shares played at once (:class:`SplitVecEnv`). ``kwargs`` are the vec
    env's arguments."""
    players = kwargs.get("players", 4)
    if env_workers == 1:
        return vec_env_class(engine, players, num_envs)(num_envs, **kwargs)
    return SplitVecEnv(vec_env_class(engine, players, num_envs // env_workers), num_envs, env_workers, **kwargs)


def worker_seed(seed: int, worker: int) -> int:
    """The seed of share ``worker``'s games (0: the trainer's own) in a run seeded ``seed``."""
    return int(np.random.SeedSequence([seed, worker]).generate_state(1)[0])


def _sendable(exc: BaseException) -> BaseException:
    """``exc`` if it survives pickling (its type and message reach the trainer), else a
    ``RuntimeError`` that names it."""
    try:
        pickle.loads(pickle.dumps(exc))
    except Exception:  # noqa: BLE001 - whatever pickling raises, the text still goes
        return RuntimeError(f"{type(exc).__name__}: {exc}")
    return exc


class _Share:
    """One share of the games: its vec env, and the generator its ``"self"`` and
    ``"past"`` opponents sample from; :meth:`handle` answers the trainer's requests, in the
    trainer's process (the first share) or a worker's."""

    def __init__(self, env_class: type[LlamaVecEnv], num_envs: int, seed: int, kwargs: dict[str, Any]) -> None:
        self.env = env_class(num_envs, seed=seed, **kwargs)
        self.rng = policy_rng(seed)

    def _policy(self, fn: PolicyFn) -> PolicyFn:
        """``fn`` as this share plays it: an actor's moves sampled from the share's generator."""
        return replace(fn, rng=self.rng) if isinstance(fn, ActorPolicy) else fn

    def handle(self, cmd: str, arg: Any) -> Any:
        env = self.env
        if cmd == "step":
            return (*env.step(arg), env.action_masks())
        if cmd == "reset":
            return env.reset(), env.action_masks()
        if cmd == "self":
            return env.set_policy("self", self._policy(arg))
        if cmd == "past":
            return env.set_past_policies([self._policy(f) for f in arg])
        if cmd == "seed":
            env.seed(arg)
            self.rng = policy_rng(arg)
            return None
        if cmd == "get":
            return getattr(env, arg)
        raise ValueError(f"unknown request {cmd!r}")


def _serve(
    conn: Connection,
    trainer_ends: Sequence[Connection],
    trainer: int,
    env_class: type[LlamaVecEnv],
    num_envs: int,
    seed: int,
    kwargs: dict[str, Any],
    registered: bytes,
) -> None:
    """A worker's life: build its share of the games, then answer the trainer's requests
    until told to close, or the trainer (process ``trainer``) is gone.

    A forked worker holds copies of the trainer's ends of the pipes made so far
    (``trainer_ends``): it closes them, else its own pipe never reads as closed when the
    trainer is killed, and the worker waited for requests for ever. While it waits it also
    checks that its parent is still process ``trainer``, for the copies some other process
    forked by the trainer may hold: on Linux and macOS a process whose parent dies gets
    another parent (``PR_SET_PDEATHSIG`` would kill it with the thread that started it, not
    the process). On Windows the parent's id stays, and the check never fires; there the
    workers are spawned, and a spawned process inherits no copy of another's pipe, so
    the pipe reads as closed once the trainer is gone."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C and SIGTERM are the trainer's to handle
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    for end in trainer_ends:
        end.close()
    try:
        adopt(pickle.loads(registered))  # the opponents registered at run time: a spawned worker lacks them
        share = _Share(env_class, num_envs, seed, kwargs)
    except Exception as exc:  # noqa: BLE001 - the trainer raises it
        _answer(conn, ("error", _sendable(exc)))
        return
    if not _answer(conn, ("ok", None)):
        return
    while True:
        try:
            while not conn.poll(TRAINER_CHECK):
                if os.getppid() != trainer:  # the trainer died and this worker got another parent (not on Windows)
                    return
            cmd, arg = conn.recv()
        except (EOFError, OSError):  # the trainer is gone
            return
        if cmd == "close":
            return
        try:
            answered = _answer(conn, ("ok", share.handle(cmd, arg)))
        except Exception as exc:  # noqa: BLE001 - the trainer raises it (an answer that does not pickle too)
            answered = _answer(conn, ("error", _sendable(exc)))
        if not answered:
            return


def _answer(conn: Connection, message: tuple[str, Any]) -> bool:
    """Send ``message`` to the trainer; ``False`` where the trainer has closed the pipe (it
    stopped without waiting for the answer: Ctrl-C while the workers started, or during a
    step), and the worker should stop."""
    try:
        conn.send(message)
    except OSError:
        return False
    return True


_OPEN: weakref.WeakSet[SplitVecEnv] = weakref.WeakSet()
"""The split vec envs not closed yet: closed at the interpreter's exit (:func:`_close_open`)."""
_registered_at_exit = False


def _close_open() -> None:
    """Close the split vec envs left open, as the interpreter exits: multiprocessing's own
    exit function sends their workers SIGTERM, which they ignore, then waits for them,
    and the exit hung."""
    for env in list(_OPEN):
        env.close()


def _close_at_exit(env: SplitVecEnv) -> None:
    """Have ``env`` closed at the interpreter's exit, before multiprocessing stops its
    children: exit functions run last registered first, and multiprocessing registered
    its own when it was imported."""
    global _registered_at_exit
    if not _registered_at_exit:
        atexit.register(_close_open)
        _registered_at_exit = True
    _OPEN.add(env)


class SplitVecEnv(OneVecEnv):
    """``num_envs`` games of vec env ``env_class`` in ``workers`` shares (the first ones
    one game more when they do not divide evenly): the first share in this process, each
    other in a worker process of its own; the other arguments are ``env_class``'s. Close
    it (:meth:`close`) to stop the workers."""

    render_mode = None

    def __init__(
        self, env_class: type[LlamaVecEnv], num_envs: int, workers: int, *, seed: int = 0, **kwargs: Any
    ) -> None:
        if not is_int(workers) or workers < 2:
            raise ValueError(f"SplitVecEnv needs at least 2 workers, got {brief(workers)}")
        if not is_int(num_envs) or num_envs < workers:
            raise ValueError(f"num_envs ({brief(num_envs)}) must be at least the number of env workers ({workers})")
        num_envs, workers, seed = int(num_envs), int(workers), check_seed(seed)
        self.shares = [len(part) for part in np.array_split(np.arange(num_envs), workers)]
        """Games per share, this process's first."""
        self._bounds = np.cumsum([0, *self.shares])
        self._conns: list[Connection] = []
        self._procs: list[Any] = []
        self._closed = False
        self._here = _Share(env_class, self.shares[0], worker_seed(seed, 0), kwargs)  # checks the arguments
        # forked where that is safe (Linux: no re-import, the arguments inherited), else spawned
        fork = sys.platform.startswith("linux")
        ctx: Any = mp.get_context("fork" if fork else "spawn")
        opponents = kwargs.get("opponents", ())
        registered = cloudpickle.dumps(registrations(opponents))
        _close_at_exit(self)
        try:
            for k in range(1, workers):
                mine, theirs = ctx.Pipe()
                ends = [mine, *self._conns] if fork else []  # what a forked worker inherits, and closes
                share = (env_class, self.shares[k], worker_seed(seed, k), kwargs, registered)
                proc = ctx.Process(target=_serve, args=(theirs, ends, os.getpid(), *share), daemon=True)
                proc.start()
                theirs.close()
                self._conns.append(mine)
                self._procs.append(proc)
            self._gather([None])
        except BaseException:
            self.close()
            raise
        env = self._here.env
        super().__init__(num_envs, env.observation_space, env.action_space)
        self.env_class = env_class
        self._masks = np.zeros((num_envs, NUM_ACTIONS), dtype=bool)
        self._actions: np.ndarray | None = None
        self.env_time = 0.0
        """Seconds in :meth:`step_wait` and :meth:`reset`: this process's share of the
        games, then the wait for the workers'."""

    # ------------------------------------------------------------------ the shares

    def _call(self, cmd: str, args: Sequence[Any]) -> list[Any]:
        """Every share's answer to ``cmd`` with its argument of ``args``: the workers
        start, this process answers for its share, then the workers' answers are
        gathered. The first error is raised once all have answered."""
        self._check_open()
        sent = []
        for conn, arg in zip(self._conns, args[1:], strict=True):
            try:
                conn.send((cmd, arg))
                sent.append(True)
            except OSError:  # the worker is gone: _gather says so
                sent.append(False)
        here: Any = None
        error: BaseException | None = None
        try:
            here = self._here.handle(cmd, args[0])
        except Exception as exc:  # noqa: BLE001 - raised once the workers have answered
            error = exc
        answers = self._gather([here], sent)
        if error is not None:
            raise error
        return answers

    def _gather(self, answers: list[Any], sent: Sequence[bool] | None = None) -> list[Any]:
        """``answers`` followed by every worker's (those ``sent`` a request); the first
        worker error is raised (after all have answered)."""
        error = None
        for k, conn in enumerate(self._conns, start=1):
            if sent is not None and not sent[k - 1]:
                status, value = "error", self._stopped(k)
            else:
                try:
                    status, value = conn.recv()
                except (EOFError, OSError):
                    status, value = "error", self._stopped(k)
            if status == "error" and error is None:
                error = value
            answers.append(value)
        if error is not None:
            raise error
        return answers

    def _stopped(self, k: int) -> EnvWorkerStopped:
        """The error for worker ``k`` (from 1), whose pipe closed: how it ended, once it
        has (a moment's wait for the system to say), a signal by its name."""
        proc = self._procs[k - 1]
        proc.join(timeout=1.0)
        code = proc.exitcode
        if code is None:
            how = "its pipe closed; it has not exited"
        elif code < 0:
            try:
                name = signal.Signals(-code).name
            except ValueError:
                name = f"signal {-code}"
            oom = -code == getattr(signal, "SIGKILL", None)  # no SIGKILL on Windows
            how = f"killed by {name}" + (", most often the system out of memory" if oom else "")
        else:
            how = f"exit code {code}"
        return EnvWorkerStopped(f"env worker {k} stopped ({how})")

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError("the vec env is closed (its env workers stopped): make a new one")

    def _each(self, cmd: str, arg: Any) -> list[Any]:
        return self._call(cmd, [arg] * len(self.shares))

    # ------------------------------------------------------------------ policies

    def set_policy(self, name: str, fn: PolicyFn) -> None:
        """:meth:`LlamaVecEnv.set_policy` in every share: ``fn`` must pickle (an
        :class:`ActorPolicy` does; each share samples from its own generator)."""
        if name != "self":
            raise ValueError(f"set_policy sets the 'self' policy; use set_past_policies for 'past', got {name!r}")
        self._each("self", self._picklable(fn))

    def set_past_policies(self, fns: Sequence[PolicyFn]) -> None:
        """:meth:`LlamaVecEnv.set_past_policies` in every share (each ``fn`` must pickle)."""
        self._each("past", [self._picklable(f) for f in fns])

    @staticmethod
    def _picklable(fn: PolicyFn) -> PolicyFn:
        try:
            pickle.dumps(fn)
        except Exception as exc:  # noqa: BLE001 - lambdas, closures, open handles...
            raise ValueError(
                f"a vec env with env workers sends its policies to them, and this one does not pickle ({exc}); "
                "give an ActorPolicy (train.training.sb3.vec_env.ActorPolicy)"
            ) from None
        return fn

    # ------------------------------------------------------------------ VecEnv API

    def reset(self) -> np.ndarray:
        t0 = time.perf_counter()
        answers = self._each("reset", None)
        self._masks[:] = np.concatenate([m for _, m in answers])
        self._started = True
        self.env_time += time.perf_counter() - t0
        return np.concatenate([o for o, _ in answers])

    def step_async(self, actions: np.ndarray) -> None:
        self._check_open()
        super().step_async(actions)

    def step_wait(self) -> VecEnvStepReturn:
        actions = self._actions
        if actions is None:
            raise RuntimeError("step_wait() called without step_async()")
        self._actions = None
        t0 = time.perf_counter()
        b = self._bounds
        answers = self._call("step", [actions[b[k] : b[k + 1]] for k in range(len(self.shares))])
        obs = np.concatenate([a[0] for a in answers])
        rews = np.concatenate([a[1] for a in answers])
        dones = np.concatenate([a[2] for a in answers])
        infos = [info for a in answers for info in a[3]]
        self._masks[:] = np.concatenate([a[4] for a in answers])
        self.env_time += time.perf_counter() - t0
        return obs, rews, dones, infos

    @property
    def games(self) -> list[LlamaGame]:
        """Every slot's current game as an engine game (for inspection)."""
        return [g for part in self._each("get", "games") for g in part]

    @property
    def seats(self) -> np.ndarray:
        """The learner's seat in each slot's game."""
        return np.concatenate(self._each("get", "seats"))

    @property
    def seat_kinds(self) -> list[list[str | None]]:
        """Each slot's seating: the kind at every seat (``None`` at the learner's)."""
        return [kinds for part in self._each("get", "seat_kinds") for kinds in part]

    def close(self) -> None:
        """Stop the workers (a second call does nothing). The pipes close with the request
        to stop, so that a worker writing an answer nobody will read (a step that Ctrl-C
        cut short) stops too; one still running :data:`CLOSE_WAIT` seconds later (in an
        opponent's endless move, say) is killed: it ignores SIGTERM, the trainer's to
        handle."""
        for conn in self._conns:
            with contextlib.suppress(OSError, ValueError):  # a worker already gone
                conn.send(("close", None))
            conn.close()
        deadline = time.monotonic() + CLOSE_WAIT
        for proc in self._procs:
            proc.join(timeout=max(deadline - time.monotonic(), 0.0))
            if proc.is_alive():
                proc.kill()
                proc.join(timeout=CLOSE_WAIT)
        self._conns, self._procs = [], []
        self._closed = True
        _OPEN.discard(self)

    def seed(self, seed: int | None = None) -> list[int | None]:
        if seed is not None:
            seed = check_seed(seed)
            self._call("seed", [worker_seed(seed, k) for k in range(len(self.shares))])
        return [seed] * self.num_envs
