"""Playing many games among agents: the game runner behind :func:`evaluate` and
:func:`tournament`.

Each game is played by the table driver (:class:`llama_env.table.Table`); a listener
records what the evaluation reports (plays, draws and quits per seat, the penalty held
when quitting, who went out).

Reproducibility: every game's deal and every agent's ``reset(seed)`` are derived from
``(seed, game index)`` (and an agent spec's own ``seed=``,
:func:`llama_env.agent.seed_keys`) through ``np.random.SeedSequence`` -- never from a
worker's order -- so the same ``seed`` gives the same results with any number of
``workers``.

Parallelism: games are split into chunks played by a ``ProcessPoolExecutor``. The
workers build the agents once each (a registered name or an agent spec is resolved
there; an agent object is pickled over). An agent object that cannot be pickled, or
cannot be rebuilt from its pickle, makes the evaluation run in this process
(``workers=1``) with a warning. In this process the agent objects are used as they are
(their ``reset`` is called before each game; a population seats a member at each seat,
:func:`seat_members`), in a worker they are copies; both give the same results for
agents whose behaviour depends only on their seed, as :class:`agents.base.BaseAgent`
subclasses do.
"""

from __future__ import annotations

import contextlib
import functools
import math
import multiprocessing
import os
import pickle
import queue
import signal
import threading
import time
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from collections.abc import Set as AbstractSet
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, NamedTuple, ParamSpec, Protocol, TypeVar, runtime_checkable

import cloudpickle
import numpy as np

from llama_env import __version__
from llama_env._atomic import check_writable_folder, user_path
from llama_env.agent import (
    Agent,
    AgentLike,
    AgentSpec,
    SeedKey,
    adopt,
    agent_label,
    forewarn,
    is_population,
    own_keys,
    parse_agent_list,
    program_frame,
    registrations,
    resolve,
    seat_member,
    seed_int,
    seed_keys,
    warn_of_table,
)
from llama_env.engine import Action, IllegalActionError, LlamaGame, RoundResult, Rules, check_seed
from llama_env.record import GameRecording
from llama_env.render import plural
from llama_env.table import AgentError, Table, TableListener, check_agent, reset_seat, seat_positions
from train._program import game_bar
from train.evaluation._pool_internals import stop_workers

__all__ = [
    "GameRecord",
    "GameColumns",
    "GameTask",
    "GamesInterrupted",
    "play_games",
    "agent_display_names",
    "check_num_games",
    "agent_list",
    "ChunkExecutor",
    "LocalProcesses",
    "setup_worker",
    "run_job",
]

# Spawn keys of the SeedSequence tree under the user's seed (one namespace each, so a
# deal seed can never equal an agent seed, a table draw or a batch's generator).
KEY_DEAL, KEY_AGENT, KEY_TABLES, KEY_BATCH = 0, 1, 2, 3

_DRAW = int(Action.DRAW)
C = TypeVar("C")
R = TypeVar("R")
T = TypeVar("T")
P = ParamSpec("P")


def agent_display_names(agents: Sequence[AgentLike]) -> list[str]:
    """Display names (:func:`llama_env.agent.agent_label`), all different: a name used
    more than once gets ``#1``, ``#2``... in list order, skipping a number that would
    repeat another agent's name (an agent labelled ``random#1`` beside two ``random``)."""
    raw = [agent_label(a) for a in agents]
    counts: dict[str, int] = {}
    for n in raw:
        counts[n] = counts.get(n, 0) + 1
    taken = {n for n in raw if counts[n] == 1}
    seen: dict[str, int] = {}
    out = []
    for n in raw:
        if counts[n] > 1:
            k = seen.get(n, 0) + 1
            while f"{n}#{k}" in taken:
                k += 1
            seen[n] = k
            out.append(f"{n}#{k}")
            taken.add(out[-1])
        else:
            out.append(n)
    return out


@dataclass(frozen=True)
class GameRecord:
    """One finished game, by seat."""

    index: int
    """The game's index (its seeds are derived from it)."""
    seat_agents: tuple[int, ...]
    """For each seat, the position of its agent in the agents list."""
    scores: tuple[int, ...]
    """Final scores by seat."""
    went_out: tuple[int, ...]
    """Rounds each seat ended by playing its last card."""
    rounds: int
    """Rounds the game lasted."""
    decisions: int
    """Actions taken in the game (all seats)."""
    actions: tuple[tuple[int, int, int], ...] = ()
    """For each seat, how many times it played, drew and quit."""
    quit_penalty: tuple[int, ...] = ()
    """For each seat, the summed hand penalty at the moments it quit."""

    @property
    def win_shares(self) -> tuple[float, ...]:
        """Each seat's share of the win: 1/k for each of the k tied lowest scores."""
        best = min(self.scores)
        k = self.scores.count(best)
        return tuple(1.0 / k if s == best else 0.0 for s in self.scores)


@dataclass(frozen=True)
class GameColumns:
    """Finished games as arrays, one row per game, a column per :class:`GameRecord`
    field: how the statistics read them (and how the batched runner returns them, where a
    record object per game would cost more than the game)."""

    index: np.ndarray
    """``(G,)`` the games' indices."""
    seat_agents: np.ndarray
    """``(G, P)`` the position in the agents list of the agent at each seat."""
    scores: np.ndarray
    """``(G, P)`` final scores by seat."""
    went_out: np.ndarray
    """``(G, P)`` rounds each seat ended by playing its last card."""
    rounds: np.ndarray
    """``(G,)`` rounds each game lasted."""
    decisions: np.ndarray
    """``(G,)`` actions taken in each game."""
    actions: np.ndarray
    """``(G, P, 3)`` how many times each seat played, drew and quit."""
    quit_penalty: np.ndarray
    """``(G, P)`` each seat's summed hand penalty at the moments it quit."""

    def __len__(self) -> int:
        return len(self.index)

    def head(self, games: int) -> GameColumns:
        """The first ``games`` rows."""
        return GameColumns(*(getattr(self, f.name)[:games] for f in fields(self)))

    @property
    def win_shares(self) -> np.ndarray:
        """``(G, P)``: each seat's share of the win, 1/k for each of the k tied lowest
        scores (:attr:`GameRecord.win_shares` for every game)."""
        best = self.scores == self.scores.min(axis=1, keepdims=True)
        return best / best.sum(axis=1, keepdims=True)

    @classmethod
    def of(cls, records: Sequence[GameRecord], num_players: int) -> GameColumns:
        """The columns of ``records`` (games at tables of ``num_players``)."""
        p = num_players
        return cls(
            index=np.array([r.index for r in records], dtype=np.int64),
            seat_agents=np.array([r.seat_agents for r in records], dtype=np.int64).reshape(-1, p),
            scores=np.array([r.scores for r in records], dtype=np.int64).reshape(-1, p),
            went_out=np.array([r.went_out for r in records], dtype=np.int64).reshape(-1, p),
            rounds=np.array([r.rounds for r in records], dtype=np.int64),
            decisions=np.array([r.decisions for r in records], dtype=np.int64),
            actions=np.array([r.actions for r in records], dtype=np.int64).reshape(-1, p, 3),
            quit_penalty=np.array([r.quit_penalty for r in records], dtype=np.int64).reshape(-1, p),
        )

    @classmethod
    def concat(cls, parts: Sequence[GameColumns]) -> GameColumns:
        """The rows of ``parts``, one after the other."""
        return cls(*(np.concatenate([getattr(p, f.name) for p in parts]) for f in fields(cls)))

    def records(self) -> list[GameRecord]:
        """One :class:`GameRecord` per row, in row order."""
        columns = zip(
            self.index.tolist(),
            self.seat_agents.tolist(),
            self.scores.tolist(),
            self.went_out.tolist(),
            self.rounds.tolist(),
            self.decisions.tolist(),
            self.actions.tolist(),
            self.quit_penalty.tolist(),
            strict=True,
        )
        return [
            GameRecord(i, tuple(seats), tuple(score), tuple(out), rounds, decided, tuple(map(tuple, acts)), tuple(q))
            for i, seats, score, out, rounds, decided, acts, q in columns
        ]


@dataclass(frozen=True)
class GameTask:
    """One game to play: its index (which seeds the agents' resets), the key of its deal
    sequence (games sharing a key get the same shuffles) and the agent at each seat."""

    index: int
    deal_key: int
    seat_agents: tuple[int, ...]


class _Recorder(TableListener):
    """What a :class:`GameRecord` holds beyond the scores, heard from the table (and,
    when recording, every move)."""

    __slots__ = ("counts", "quit_penalty", "outs", "rounds", "decisions", "moves")

    def __init__(self, n: int, record: bool = False) -> None:
        self.counts = [[0, 0, 0] for _ in range(n)]  # plays, draws, quits per seat
        self.quit_penalty = [0] * n
        self.outs = [0] * n
        self.rounds = 0
        self.decisions = 0
        self.moves: list[tuple[int, int]] | None = [] if record else None

    def on_move(self, table: Table, seat: int, action: int, drawn: int | None) -> None:
        self.decisions += 1
        if self.moves is not None:
            self.moves.append((seat, action))
        if action < _DRAW:
            self.counts[seat][0] += 1
        elif action == _DRAW:
            self.counts[seat][1] += 1
        else:
            self.counts[seat][2] += 1
            self.quit_penalty[seat] += table.game.penalty(seat)  # the hand it quits with

    def on_round_end(self, table: Table, result: RoundResult) -> None:
        self.rounds += 1
        if result.went_out is not None:
            self.outs[result.went_out] += 1


def seat_members(agents: Sequence[Agent], task: GameTask, seed: int) -> list[Agent]:
    """The agent at each seat of the game of ``task``: ``agents[i]`` itself, or, for a
    population (:func:`llama_env.agent.seat_member`, e.g. ``perturbed``), a member of its
    own at each seat, as the batched runner seats them. The members of agent ``i`` are
    drawn from a generator seeded by ``(seed, KEY_AGENT, game, i)``, the seed its
    ``reset`` gets: the first is the member ``perturbed``'s own ``reset`` draws, so a
    population at one seat plays as it did. One population object at several seats of a
    game drew one member for them all (each seat's ``reset`` of the shared object
    replaced the last one's): a mirror match."""
    draws: dict[int, np.random.Generator] = {}
    seated = []
    for i in task.seat_agents:
        agent = agents[i]
        if is_population(agent):  # its members checked when it was resolved
            rng = draws.setdefault(i, np.random.default_rng(seed_int(seed, KEY_AGENT, task.index, i)))
            agent = seat_member(agent, rng)
        seated.append(agent)
    return seated


def play_one(
    agents: Sequence[Agent],
    names: Sequence[str],
    task: GameTask,
    seed: int,
    rules: Rules,
    record_dir: str | None = None,
    keys: Sequence[SeedKey] | None = None,
) -> GameRecord:
    """Play the game of ``task`` by ``rules`` on the table driver and record it (with
    ``record_dir``, also as ``game_<index>.json``, a game record that the web app replays).
    ``keys`` (:func:`own_keys`) add each agent's own seed to the seed of its ``reset``."""
    n = rules.num_players
    game = LlamaGame(
        rules=rules, rng=np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(KEY_DEAL, task.deal_key)))
    )
    rec = _Recorder(n, record=record_dir is not None)
    start = game.to_dict() if record_dir is not None else None
    seat_names = [names[i] for i in task.seat_agents]
    seated = seat_members(agents, task, seed)
    table = Table(game, seated, names=seat_names, listener=rec)
    try:
        for seat, (i, agent) in enumerate(zip(task.seat_agents, seated, strict=True)):
            own = keys[i] if keys else ()
            reset_seat(agent, seed_int(seed, KEY_AGENT, task.index, i, *own), names[i], seat)
        table.play()
    except IllegalActionError as exc:
        raise IllegalActionError(
            f"{exc} (evaluation game {task.index})", exc.action, exc.legal, seat=exc.seat, agent=exc.agent
        ) from None
    except AgentError as exc:
        raise AgentError(f"{exc} (evaluation game {task.index})", agent=exc.agent, seat=exc.seat) from exc.__cause__
    if record_dir is not None and start is not None and rec.moves is not None:
        context = {"llama_rl_version": __version__, "seed": seed, "game": task.index, "seats": list(task.seat_agents)}
        recording = GameRecording([f"player_{p}" for p in range(n)], seat_names, start, rec.moves, context)
        recording.save(Path(record_dir) / f"game_{task.index:06d}.json")  # whole, even if the run is stopped
    return GameRecord(
        task.index,
        task.seat_agents,
        tuple(game.scores),
        tuple(rec.outs),
        rec.rounds,
        rec.decisions,
        tuple((c[0], c[1], c[2]) for c in rec.counts),
        tuple(rec.quit_penalty),
    )


# Per-worker state: the agents built once by the pool initializer.
_WORKER: dict[str, Any] = {}


class RunArgs(NamedTuple):
    """What every chunk of games is played with besides the agents, sent to each worker
    once with them (pickled: a class of this module travels by its name)."""

    names: list[str]
    """The agents' display names (:func:`agent_display_names`)."""
    seed: int
    """The evaluation's seed, from which each game's derives."""
    rules: Rules
    """The rules of every game."""
    record_dir: str | None
    """The folder for game records, or ``None``."""
    keys: list[SeedKey]
    """The agents' own seeds (:func:`seed_keys`)."""


Job = tuple[Callable[[list[Agent], RunArgs, Any], Any], Any]
"""One chunk's work: a module-level function and its chunk, for :func:`run_job`."""


@runtime_checkable
class ChunkExecutor(Protocol):
    """Where the chunks of games of an evaluation or a tournament are played when they
    are spread (``workers`` above 1): the ``executor`` of :func:`train.evaluation.evaluate`
    and :func:`train.evaluation.tournament`. The default, :class:`LocalProcesses`, is a
    process pool on this machine; another (an actor pool of Ray, say) may spread the
    chunks further.

    ``run`` calls :func:`run_job` on each of ``jobs`` in at most ``workers`` processes (or
    remote actors), each of which first called :func:`setup_worker` with ``payload`` once
    (the agents, built there once, and what every chunk needs), and yields the results as
    they come, in any order (each carries its job's place, by which they are put back in
    order: Ray's ``map_unordered`` will do). The numbers then do not depend on where or
    when a chunk ran. Ending the iteration early (Ctrl-C, an error in a game) should stop
    the chunks under way."""

    def run(self, payload: bytes, jobs: Sequence[Job], workers: int) -> Iterator[Any]:
        """The results of :func:`run_job` on each of ``jobs``, as they come, from at most
        ``workers`` processes each set up once with ``payload`` (the class's docstring says
        what an implementation must keep)."""
        ...


def setup_worker(payload: bytes) -> None:
    """Make this process ready to play chunks (:func:`run_job`): learn the agents its
    parent registered at run time, build the agents once, keep what every chunk needs,
    and keep numpy to one BLAS thread (the workers already fill the cores). A failure is
    kept and raised by the first job, so the caller sees it, not a broken pool."""
    try:
        _one_blas_thread()
        try:
            loaded = pickle.loads(payload)
        except Exception as exc:  # a bare TypeError of some __init__ named neither the worker nor the cure
            raise ValueError(
                f"the agents could not be rebuilt in a worker process ({type(exc).__name__}: {exc}); "
                f"evaluate with workers=1, or make the agent rebuild from its pickle"
            ) from exc
        registered, specs, args = loaded
        adopt(registered)  # what the parent registered at run time: a spawned worker starts without it
        _WORKER["agents"] = [resolve(s) for s in specs]
        for agent in _WORKER["agents"]:  # said once by the parent: told, they stay silent
            forewarn(agent, args.rules)
        _WORKER["args"] = args
        _WORKER.pop("error", None)
    except Exception as exc:  # noqa: BLE001 - raised by the first job
        _WORKER["error"] = exc


def run_job(job: Job) -> Any:
    """Play one chunk (``job``: its work function and the chunk) with the agents
    :func:`setup_worker` built in this process."""
    if "error" in _WORKER:
        raise _WORKER["error"]
    work, chunk = job
    try:
        return work(_WORKER["agents"], _WORKER["args"], chunk)
    except AgentError as exc:  # its __cause__ does not cross to the parent: it travels along
        if exc.__cause__ is not None:
            exc._carried_cause = _CarriedCause(exc.__cause__)  # type: ignore[attr-defined]
        raise


class _CarriedCause:
    """An agent's exception on its way from a worker to the parent, where
    :func:`_bring_back_cause` makes it the :class:`AgentError`'s ``__cause__`` again: a
    pickled exception loses its ``__cause__``, and the process pool puts the worker's
    traceback text there (``_RemoteTraceback``). The exception itself when it survives
    pickling (cloudpickle: a class defined in a notebook or a script comes back as the
    parent's own), else its type's name, builtin base and message, from which the parent
    makes a stand-in of that name."""

    def __init__(self, exc: BaseException) -> None:
        kind = type(exc)
        self.module, self.qualname = kind.__module__, kind.__qualname__
        self.base = next(c for c in kind.__mro__ if c.__module__ == "builtins")  # pickled by name
        self.message = str(exc)
        self.args: tuple[Any, ...] | None = None
        self.data: bytes | None = None
        try:
            data = cloudpickle.dumps(exc)
            pickle.loads(data)  # an exception whose __init__ takes other arguments than its args fails here
            self.data = data
        except Exception:  # noqa: BLE001 - any failure means "send a stand-in"
            with contextlib.suppress(Exception):  # else the message alone
                self.args = pickle.loads(pickle.dumps(exc.args))

    def restore(self) -> BaseException:
        """The exception, or a stand-in: an instance of a class of the same name and
        module, derived from the same builtin exception, with the same message."""
        if self.data is not None:
            try:
                return pickle.loads(self.data)
            except Exception:  # noqa: BLE001 - unpicklable here: the stand-in
                pass
        doc = "A stand-in, made where the evaluation ran, for an agent's exception that a worker could not send back."

        def named(base: type[BaseException]) -> type[BaseException]:
            name = self.qualname.rpartition(".")[2]
            return type(name, (base,), {"__module__": self.module, "__qualname__": self.qualname, "__doc__": doc})

        try:
            return named(self.base)(*(self.args if self.args is not None else (self.message,)))
        except Exception:  # noqa: BLE001 - a base that wants other arguments (UnicodeDecodeError)
            return named(Exception)(self.message)

    def is_kind_of(self, exc: BaseException | None) -> bool:
        return exc is not None and (type(exc).__module__, type(exc).__qualname__) == (self.module, self.qualname)


def _bring_back_cause(exc: AgentError) -> None:
    """Make the agent's exception that :func:`run_job` sent along with ``exc`` its
    ``__cause__`` again, as in this process (docs/agents.md promises it); the worker's
    traceback (the pool's ``_RemoteTraceback``, the ``__cause__`` it got instead) becomes
    that exception's own ``__cause__``, so a printed traceback still shows where the agent
    failed in the worker."""
    carried = exc.__dict__.pop("_carried_cause", None)
    if not isinstance(carried, _CarriedCause) or carried.is_kind_of(exc.__cause__):  # not sent, or never lost
        return
    cause = carried.restore()
    if cause.__cause__ is None and exc.__cause__ is not None:
        cause.__cause__ = exc.__cause__
    exc.__cause__ = cause


WORKER_DIED = "a worker process died (killed, or out of memory?)"
"""What a :class:`concurrent.futures.process.BrokenProcessPool` from
:class:`LocalProcesses` says: a worker ended without a word (the kernel's out-of-memory
killer, ``kill -9``, a crash in native code)."""


class LocalProcesses:
    """The default :class:`ChunkExecutor`: a process pool on this machine whose workers
    ignore Ctrl-C (the parent ends them), end with SIGTERM, and end themselves when the
    parent is gone; stopped early, it ends its workers at once, games under way
    included. A worker that dies (killed, out of memory) ends the run with a
    :class:`concurrent.futures.process.BrokenProcessPool` that says so
    (:data:`WORKER_DIED`), the others ended too."""

    def run(self, payload: bytes, jobs: Sequence[Job], workers: int) -> Iterator[Any]:
        """The results of the jobs, in their order, from a process pool of at most
        ``workers`` processes (no more than the jobs); leaving the loop early (Ctrl-C, an
        error in a game) stops the workers."""
        pool = ProcessPoolExecutor(max_workers=min(workers, len(jobs)), initializer=_init_worker, initargs=(payload,))
        results: queue.SimpleQueue[tuple[bool, Any]] = queue.SimpleQueue()
        # the first job here: the workers it starts (forked) are this thread's children
        first = pool.submit(run_job, jobs[0])

        def drive() -> None:
            # not pool.map: interrupted, it cancels its futures, which raced with the pool
            # failing them once stop_workers ended the workers (Python 3.11)
            try:
                futures = [first] + [pool.submit(run_job, job) for job in jobs[1:]]
                for future in futures:
                    results.put((True, future.result()))
            except BrokenProcessPool as exc:  # the pool's own words name neither cause nor remedy
                died = BrokenProcessPool(f"{WORKER_DIED}: try fewer workers")
                died.__cause__ = exc
                results.put((False, died))
            except BaseException as exc:  # noqa: BLE001 - raised in the caller's thread
                results.put((False, exc))

        # The pool is driven from a thread of its own: Ctrl-C (or SIGTERM as Ctrl-C) is raised
        # in the main thread wherever it is, and raised inside submit or result, just after
        # one of the pool's locks was taken (a Condition's __enter__), it left the lock held;
        # the pool's thread then waited on it for good, and so did the interpreter at exit.
        # Here the main thread waits on a SimpleQueue alone, which an interrupt leaves whole.
        threading.Thread(target=drive, name="llama-rl chunks", daemon=True).start()
        try:
            for _ in jobs:
                ok, value = results.get()
                if not ok:
                    raise value
                yield value
        except BaseException:  # Ctrl-C, SIGTERM (as Ctrl-C), an error in a game, the caller stopping early
            stop_workers(pool)
            raise
        pool.shutdown()


def _init_worker(payload: bytes) -> None:
    # Ctrl-C is the parent's to handle (it ends the workers): an idle worker printed a traceback;
    # and SIGTERM ends a worker, whatever handler a forked one inherited from its parent
    # (llama-rl's turns it into Ctrl-C, with which a worker went on to its next job)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    _exit_with_parent()
    setup_worker(payload)


def _exit_with_parent() -> None:
    """End this worker within a second once the process that started it is gone (killed
    with no chance to end its workers): it would play its games on, for no one."""
    parent_pid = os.getppid()
    parent = multiprocessing.parent_process()  # on Windows a dead parent's id stays this process's ppid

    def watch() -> None:
        while os.getppid() == parent_pid and (parent is None or parent.is_alive()):
            time.sleep(1.0)
        os._exit(1)

    threading.Thread(target=watch, name="llama-rl parent watch", daemon=True).start()


def _one_blas_thread() -> None:
    """Keep a worker's numpy to one BLAS thread: the workers already fill the cores, and
    a batched forward pass (the search agent's) that spreads over every core as well
    doubles the time of a game on a busy machine."""
    from threadpoolctl import threadpool_limits

    threadpool_limits(limits=1, user_api="blas")


def _play_chunk(agents: list[Agent], args: RunArgs, tasks: list[GameTask]) -> list[GameRecord]:
    own = own_keys(agents, args.keys)
    return [play_one(agents, args.names, t, args.seed, args.rules, args.record_dir, own) for t in tasks]


def _payload(agents: Sequence[AgentLike], args: RunArgs) -> bytes | None:
    """What every worker gets (:func:`setup_worker`): the agents, their registrations and
    ``args``, pickled with cloudpickle (a class defined in a notebook or a script travels
    by value); ``None``, with a ``RuntimeWarning`` naming the agent, where an agent cannot
    be pickled, or pickles but cannot be rebuilt from its pickle (an exception it holds
    whose ``__init__`` takes other arguments, say), as every worker would have failed to:
    the evaluation then runs in this process."""
    try:
        payload = cloudpickle.dumps((registrations(agents), list(agents), args))
        pickle.loads(payload)  # what each worker does first
        return payload
    except Exception as exc:  # noqa: BLE001 - any pickling failure means "run here"
        who = _unpicklable(agents)
        warnings.warn(
            f"{who} cannot be pickled and rebuilt in a worker process ({type(exc).__name__}: {exc}); "
            f"evaluating in this process (workers=1)",
            RuntimeWarning,
            stacklevel=program_frame()[1],  # the caller's line that evaluated, past llama-rl's packages
        )
        return None


def _warn_above_cores(workers: int, started: int) -> None:
    """A ``RuntimeWarning`` where the ``started`` worker processes (``workers`` asked for,
    at most one a chunk) outnumber the cores this process may use (:func:`usable_cores`):
    they take turns on them, which is no faster and takes more memory. Not refused: the
    results are the same, and a machine shared with other work may want it."""
    cores = usable_cores()
    if started > cores:
        asked = "" if started == workers else f" (of the {workers} asked for, one a chunk of games at most)"
        warnings.warn(
            f"{plural(started, 'worker')}{asked} are more than the {plural(cores, 'core')} this process may use: "
            f"they take turns on {'it' if cores == 1 else 'them'}, no faster than {plural(cores, 'worker')}",
            RuntimeWarning,
            stacklevel=program_frame()[1],  # the caller's line that evaluated, past llama-rl's packages
        )


def _unpicklable(agents: Sequence[AgentLike]) -> str:
    """``agent 'name'`` for the first of ``agents`` that, or whose registration (a class
    defined in a script, with a lock among its attributes), does not survive a pickle and
    its loading, else ``an agent``."""
    for name, agent in zip(agent_display_names(agents), agents, strict=True):
        try:
            pickle.loads(cloudpickle.dumps((registrations([agent]), agent)))
        except Exception:  # noqa: BLE001 - this one
            return f"agent {name!r}"
    return "an agent"


def run_chunks(
    agents: Sequence[AgentLike],
    chunks: Sequence[C],
    work: Callable[[list[Agent], RunArgs, C], R],
    combine: Callable[[list[R]], T],
    *,
    args: RunArgs,
    workers: int | None,
    sizes: Sequence[int],
    progress: bool | str = False,
    executor: ChunkExecutor | None = None,
) -> T:
    """``work(agents, args, chunk)`` for every chunk, its results in chunk order made into
    one by ``combine`` (the records of all the games, say): in this process, or
    spread by ``executor`` (default :class:`LocalProcesses`) over workers that build the
    agents once each (``work`` must be a module-level function). The workers know the
    agents registered here at run time, and the classes defined in a notebook or a
    script, whatever the start method. An agent that cannot be pickled keeps it in this
    process, with a warning. ``sizes`` (games per chunk) move the progress bar.

    What the agents warn of at a table of the rules (``args``), an agent made for other
    table sizes or one whose parameters go unused there
    (:func:`llama_env.agent.warn_of_table`), is said here once, before any game: an
    agent's own warning as it played was given in every worker process, and a Python
    caller catching warnings never saw it.

    Stopped by Ctrl-C (or SIGTERM as Ctrl-C), it raises :class:`GamesInterrupted` with
    the results of the chunks finished in a row from the first, combined."""
    workers = num_workers(workers)
    if isinstance(executor, type):  # its run is a function that wants an instance first
        raise ValueError(f"executor must be an instance: {executor.__name__}(), not the class {executor.__name__}")
    if executor is not None and not callable(getattr(executor, "run", None)):  # checked whether used or not
        raise ValueError(
            f"executor must have run(payload, jobs, workers), as train.evaluation.runner.LocalProcesses; "
            f"got {executor!r}"
        )
    # None: played here, one worker or one chunk, or an agent that cannot be pickled
    payload = _payload(agents, args) if workers > 1 and len(chunks) > 1 else None
    if payload is not None and executor is None:  # this machine's processes, not another executor's
        _warn_above_cores(workers, min(workers, len(chunks)))
    objs = [resolve(a) for a in agents] if payload is None else []  # played here: built once, asked, then played
    # said to the caller of evaluate or tournament; the agents that play here are told it was said
    warn_of_table(agents, args.rules, built=objs or None, seated=objs, stacklevel=None)
    done: dict[int, R] = {}  # by the chunk's place: what an interrupt leaves
    try:
        with game_bar(progress, sum(sizes)) as bar:
            if payload is None:
                for k, (c, size) in enumerate(zip(chunks, sizes, strict=True)):
                    done[k] = work(objs, args, c)
                    bar.update(size)
            else:
                _run_spread(executor or LocalProcesses(), payload, chunks, work, workers, sizes, bar, done)
    except KeyboardInterrupt as stop:  # Ctrl-C, or SIGTERM as Ctrl-C: the games finished are kept
        first = 0
        while first in done:
            first += 1
        finished = combine([done[k] for k in range(first)]) if first else None
        interrupted = GamesInterrupted(finished, sum(sizes[:first]), sum(sizes))
        raise interrupted.with_traceback(stop.__traceback__) from None
    return combine([done[k] for k in range(len(chunks))])


def _run_spread(
    runner: ChunkExecutor,
    payload: bytes,
    chunks: Sequence[C],
    work: Callable[[list[Agent], RunArgs, C], R],
    workers: int,
    sizes: Sequence[int],
    bar: Any,
    done: dict[int, R],
) -> None:
    """:func:`run_chunks`' chunks spread by ``runner``, each result put in ``done`` at its
    chunk's place as it comes (an interrupt leaves those that came)."""
    jobs = [(functools.partial(_numbered, work, k), c) for k, c in enumerate(chunks)]
    results = runner.run(payload, jobs, workers)
    try:
        for item in results:  # in any order: each comes with its job's place
            k, result = _place(item, runner, len(chunks))
            if k in done:
                raise RuntimeError(
                    f"the executor {runner!r} returned more results than its {len(chunks)} jobs (job {k}'s twice)"
                )
            done[k] = result
            bar.update(sizes[k])
        if len(done) < len(chunks):
            raise RuntimeError(f"the executor {runner!r} returned {len(done)} results for {len(chunks)} jobs")
    except AgentError as exc:
        _bring_back_cause(exc)
        raise
    finally:  # stopped early (Ctrl-C in this loop): the executor stops its chunks now
        close = getattr(results, "close", None)
        if callable(close):
            close()


class GamesInterrupted(KeyboardInterrupt):
    """Ctrl-C (or SIGTERM, which ``llama-rl`` turns into Ctrl-C) that stopped games under
    way, with what the games finished before it give: still a ``KeyboardInterrupt``, so
    code that catches that is unchanged.

    ``partial`` is what the function interrupted would have returned, for its first
    ``games`` of the ``planned`` games alone (an :class:`~train.evaluation.EvalResult`
    from :func:`~train.evaluation.evaluate`, a
    :class:`~train.evaluation.TournamentResult` from
    :func:`~train.evaluation.tournament`, the records from :func:`play_games`), or
    ``None`` where no game had finished. They are the first games in order, the chunks
    finished one after the other from the first: a chunk that finished while one before
    it was still under way is left out, so that the games kept do not depend on which
    worker was faster. Game by game, they are the games (and the numbers) that asking
    for ``games`` games with the same seed gives. An interrupted
    :func:`~train.evaluation.evaluate` with ``duplicate`` keeps whole deals.
    ``str()`` of it is the line ``llama-rl eval`` heads the table of those games with."""

    def __init__(self, partial: Any, games: int, planned: int) -> None:
        super().__init__(partial, games, planned)
        self.partial = partial
        self.games = games
        self.planned = planned

    def carry(self, make: Callable[[Any], Any], games: int | None = None) -> None:
        """Made ready for a caller to raise on: ``partial`` made into what the caller
        returns (``make(partial)``), over its first ``games`` games where given (fewer
        than finished: an evaluation of duplicate deals keeps whole deals)."""
        if games is not None:
            self.games = games
        self.partial = make(self.partial) if self.partial is not None and self.games else None
        self.args = (self.partial, self.games, self.planned)

    def __str__(self) -> str:
        if self.partial is None:
            if self.planned == 1:
                return "interrupted before the one game had finished"
            return f"interrupted before any of {self.planned:,} games had finished"
        return (
            f"interrupted: the first {self.games:,} of {self.planned:,} games, in order "
            f"(later ones finished early are left out)"
        )


def carried(make: Callable[[R], T], play: Callable[P, R], /, *args: P.args, **kwargs: P.kwargs) -> T:
    """``make(play(*args, **kwargs))``: games played, made into what the caller returns
    (their result, say); interrupted, the :class:`GamesInterrupted` raised on carries the
    games finished made so (:meth:`GamesInterrupted.carry`)."""
    try:
        played = play(*args, **kwargs)
    except GamesInterrupted as stop:
        stop.carry(make)
        raise
    return make(played)


def _numbered(
    work: Callable[[list[Agent], RunArgs, C], R], k: int, agents: list[Agent], args: RunArgs, chunk: C
) -> tuple[int, R]:
    """``work``'s result for the ``k``-th chunk with ``k``: how :func:`run_chunks` puts
    an executor's results back in the order of the chunks, whatever order it yields
    them in."""
    return k, work(agents, args, chunk)


def _place(item: object, executor: ChunkExecutor, jobs: int) -> tuple[int, Any]:
    """``item``, one result an executor yielded, as its job's place and the result
    (:func:`_numbered`); a ``RuntimeError`` naming the executor where it is no result
    that :func:`run_job` returned for one of the ``jobs``."""
    if isinstance(item, tuple) and len(item) == 2 and isinstance(item[0], int) and 0 <= item[0] < jobs:
        return item[0], item[1]
    raise RuntimeError(f"the executor {executor!r} returned {item!r:.60}, not what run_job returned for a job")


def _record_folder(folder: str | Path) -> Path:
    """``folder``, made if missing, to write a run's game records to: a name given as a
    string with a leading ``~`` is in the home folder (:func:`llama_env._atomic.user_path`:
    the shell leaves ``--record=~/games`` as written). Refused, in a line ``game records:``
    naming the folder and why, where it is not a folder, already holds game records,
    which a run of other agents would otherwise leave mixed with this one's under the
    same names, or takes no new file: that is found here, before the first game, not as
    the first record is written. A refused folder it made (and those above it) is removed."""
    folder = user_path(folder)
    made = [p for p in (folder, *folder.parents) if not p.exists() and not p.is_symlink()]  # deepest first
    try:
        try:  # a file in its place, or above it: mkdir refuses, and the check below says which
            folder.mkdir(parents=True, exist_ok=True)
            held = sorted(p.name for p in folder.glob("game_*.json"))
        except (NotADirectoryError, FileExistsError):
            check_writable_folder(folder)
            raise
        if held:
            raise ValueError(
                f"{str(folder)!r} already holds {len(held)} from an earlier run "
                f"({held[0]}{', ...' if len(held) > 1 else ''}); name a new or empty folder"
            )
        check_writable_folder(folder)
    except (ValueError, OSError) as exc:
        for p in made:  # empty: nothing was written in them
            with contextlib.suppress(OSError):
                p.rmdir()
        why = str(exc) if isinstance(exc, ValueError) else f"cannot make {str(folder)!r} ({exc.strerror or exc})"
        raise ValueError(f"game records: {why}") from None
    return folder


def play_games(
    agents: Sequence[AgentLike],
    tasks: Sequence[GameTask],
    *,
    seed: int,
    workers: int | None,
    rules: Rules,
    progress: bool | str = False,
    record_dir: str | Path | None = None,
    executor: ChunkExecutor | None = None,
) -> list[GameRecord]:
    """Play ``tasks`` (game index, deal key, seat assignment) by ``rules`` and return their
    records in task order. The lower-level runner behind :func:`evaluate` and :func:`tournament`.
    With ``record_dir`` every game is also written there as a game record
    (:class:`llama_env.record.GameRecording`), ``game_<index>.json``. ``executor`` spreads
    the chunks (:class:`ChunkExecutor`).

    The arguments are checked as :func:`evaluate` checks its own, and each task is a
    :class:`GameTask` whose index and deal key are non-negative integers (the index
    another task's does not repeat) and whose
    ``seat_agents`` name a position in ``agents`` for each of the rules' seats (a
    ``ValueError`` or ``TypeError`` names the task)."""
    agents = agent_list(agents)
    seed = check_seed(seed)
    rules = check_rules(rules)
    first_at: dict[int, int] = {}
    for k, task in enumerate(tasks):
        if not isinstance(task, GameTask):
            raise TypeError(f"tasks[{k}] must be a GameTask(index, deal_key, seat_agents), got {task!r}")
        check_seed(task.index, f"tasks[{k}].index")
        if first_at.setdefault(int(task.index), k) != k:  # its agents' seeds and its record's name would repeat
            raise ValueError(
                f"tasks[{k}].index {task.index} repeats tasks[{first_at[int(task.index)]}].index: "
                f"each game needs an index of its own (it seeds the agents and names the game's record)"
            )
        check_seed(task.deal_key, f"tasks[{k}].deal_key")
        if len(task.seat_agents) != rules.num_players:
            raise ValueError(
                f"tasks[{k}].seat_agents must name an agent for each of the {rules.num_players} seats, "
                f"got {task.seat_agents!r}"
            )
    if tasks:
        cell = "tasks[{row}].seat_agents[{seat}]"
        seat_positions([t.seat_agents for t in tasks], None, rules.num_players, len(agents), cell)
    names = agent_display_names(agents)
    if record_dir is not None and not str(record_dir).strip():  # Path("") is the current folder
        raise ValueError('record_dir is empty: name a folder for the game records ("." for the current one)')
    record = None if record_dir is None else str(_record_folder(record_dir))
    chunk = max(1, min(256, math.ceil(len(tasks) / (num_workers(workers) * 8))))
    chunks = [list(tasks[i : i + chunk]) for i in range(0, len(tasks), chunk)]
    return run_chunks(
        agents,
        chunks,
        _play_chunk,
        lambda parts: [r for records in parts for r in records],
        args=RunArgs(names, seed, rules, record, seed_keys(agents)),
        workers=workers,
        sizes=[len(c) for c in chunks],
        progress=progress,
        executor=executor,
    )


def num_workers(workers: int | None) -> int:
    """``workers`` checked; ``None`` means every core this process may run on
    (:func:`usable_cores`; at most :data:`MAX_WORKERS_WINDOWS` on Windows, whose process
    pools take no more)."""
    if workers is None:
        cores = usable_cores()
        return min(cores, MAX_WORKERS_WINDOWS) if os.name == "nt" else cores
    if isinstance(workers, (bool, np.bool_)) or not isinstance(workers, (int, np.integer)) or workers < 1:
        raise ValueError(f"workers must be a positive integer or None (all cores), got {workers!r}")
    workers = int(workers)
    if os.name == "nt" and workers > MAX_WORKERS_WINDOWS:
        raise ValueError(
            f"workers must be at most {MAX_WORKERS_WINDOWS} on Windows (its process pools' limit), got {workers}"
        )
    return workers


def usable_cores() -> int:
    """The cores this process may run on: its CPU affinity (``taskset``, a container's or
    a batch job's cpuset), not the machine's count, which made a job given 2 of 64 cores
    start 64 workers on them. A CPU quota without a cpuset (``docker --cpus``) is not
    seen."""
    count = getattr(os, "process_cpu_count", None)  # Python 3.13: the affinity, or PYTHON_CPU_COUNT
    if callable(count):
        return int(count() or 1)
    affinity = getattr(os, "sched_getaffinity", None)  # Linux and some Unixes
    if callable(affinity):
        return len(affinity(0)) or 1
    return os.cpu_count() or 1


MAX_WORKERS_WINDOWS = 61
"""The most processes a process pool takes on Windows."""


def check_num_games(num_games: object) -> int:
    """``num_games`` checked: a positive integer (numpy's too, not a bool) as a Python
    ``int``, else a ``ValueError``."""
    if isinstance(num_games, (bool, np.bool_)) or not isinstance(num_games, (int, np.integer)) or num_games < 1:
        raise ValueError(f"num_games must be a positive integer, got {num_games!r}")
    return int(num_games)


def check_rules(rules: object) -> Rules:
    """``rules`` if they are a :class:`llama_env.engine.Rules` (which give the table
    size, so ``None`` is no default here), else a ``TypeError`` naming the argument."""
    if not isinstance(rules, Rules):
        raise TypeError(f"rules must be a llama_env.Rules, got {rules!r} ({type(rules).__name__})")
    return rules


def agent_list(agents: object) -> list[AgentLike]:
    """The table or pool of an evaluation: a sequence of agents, names or specs, or one
    comma-separated string of names and specs (``"heuristic,random"``, as ``--agents``
    takes it), which would otherwise be read letter by letter. A set is refused: its
    order, on which the seats and every agent's seeds depend, follows string hashing,
    so the same seed gave other results in each Python process; so is a dict, read as
    its keys."""
    if isinstance(agents, str):
        return list(parse_agent_list(agents))
    if isinstance(agents, AgentSpec) or callable(getattr(agents, "act", None)):
        raise ValueError(f"agents must be a list, one agent per seat, got one agent: {agents!r}")
    if isinstance(agents, (AbstractSet, Mapping)):
        raise ValueError(f"agents must be an ordered sequence (a list), got a {type(agents).__name__}")
    try:
        out = list(agents)  # type: ignore[call-overload]
    except TypeError:
        raise ValueError(f"agents must be a list of agents, names or specs, got {agents!r}") from None
    for k, agent in enumerate(out):
        if isinstance(agent, type):  # before anything builds or pickles it as an agent
            check_agent(agent, f"agents[{k}]")
    return out
