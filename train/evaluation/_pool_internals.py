"""``concurrent.futures.ProcessPoolExecutor``'s internals, in one guarded place: ending a
pool's workers now.

An interrupted evaluation must neither wait for the games under way nor leave them
running. Python 3.14 says so publicly (``terminate_workers``), and :func:`stop_workers`
uses it there; before it, a pool has no public way, and :func:`stop_workers` reads two of
its private attributes instead. What it assumes of them, checked against **CPython 3.10
to 3.13**; :func:`broken_assumptions` checks each, and ``tests/train/test_evaluate.py``
fails, naming Python's version and the assumption, when a new Python breaks one:

1. a pool that has started its workers holds them in ``_processes``, a dict whose values
   are the ``multiprocessing.Process`` objects: terminated, the games under way end;
2. a pool at work has its thread in ``_executor_manager_thread``, a ``threading.Thread``
   that ``shutdown(wait=False)`` forgets (it sets the attribute to ``None``) and that
   ends once the workers are gone, having failed the jobs not begun. Python 3.11's exit
   hook wakes that thread with no lock: had it not yet closed its wakeup pipe, exit wrote
   to a pipe closing under it, and an interrupted run printed an "Exception ignored ...
   Bad file descriptor" traceback. :func:`stop_workers` joins it first.

Where an attribute is missing, :func:`stop_workers` shuts the pool down without it: the
workers then finish the games under way before they end.
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import ProcessPoolExecutor

__all__ = ["CHECKED_VERSIONS", "stop_workers", "broken_assumptions"]

CHECKED_VERSIONS = "3.10 to 3.13"
"""The Python versions whose process pools the assumptions were checked against."""


def stop_workers(pool: ProcessPoolExecutor) -> None:
    """End ``pool``'s workers now, games under way included, and fail the jobs not begun;
    return once the pool's thread has ended (within 5 s)."""
    terminate = getattr(pool, "terminate_workers", None)  # Python 3.14
    if callable(terminate):
        terminate()
        return
    for process in list((getattr(pool, "_processes", None) or {}).values()):  # assumption 1
        process.terminate()
    manager = getattr(pool, "_executor_manager_thread", None)  # assumption 2: shutdown forgets it
    # the pool finds its workers gone and fails the jobs not begun; cancelling them as well
    # raced with that in Python 3.11 (an InvalidStateError traceback from its thread)
    pool.shutdown(wait=False)
    if isinstance(manager, threading.Thread):
        manager.join(timeout=5.0)


def broken_assumptions() -> list[str]:
    """The assumptions of the module docstring that the installed Python breaks (none: an
    empty list), each named by its number; none where the pool has ``terminate_workers``,
    which :func:`stop_workers` then uses alone."""
    pool = ProcessPoolExecutor(max_workers=1)
    if callable(getattr(pool, "terminate_workers", None)):
        pool.shutdown()
        return []
    broken = []
    futures = [pool.submit(time.sleep, 30.0) for _ in range(2)]
    deadline = time.monotonic() + 30
    while not futures[0].running() and time.monotonic() < deadline:  # the worker has begun
        time.sleep(0.05)
    processes = getattr(pool, "_processes", None)
    workers = list(processes.values()) if isinstance(processes, dict) else []
    if not workers or not all(callable(getattr(p, "terminate", None)) for p in workers):
        broken.append(f"1: a pool at work holds no worker processes in _processes (it holds {processes!r})")
    manager = getattr(pool, "_executor_manager_thread", None)
    if not (isinstance(manager, threading.Thread) and manager.is_alive()):
        broken.append(f"2: a pool at work has no running thread in _executor_manager_thread (it has {manager!r})")
    stop_workers(pool)
    if any(p.is_alive() for p in workers):
        broken.append("1: terminating the processes in _processes does not end the games under way")
    if getattr(pool, "_executor_manager_thread", None) is not None:
        broken.append("2: shutdown(wait=False) does not forget _executor_manager_thread")
    if isinstance(manager, threading.Thread) and (manager.is_alive() or not all(f.done() for f in futures)):
        broken.append("2: the pool's thread does not end, failing the jobs not begun, once its workers are gone")
    if broken:
        for process in workers:
            process.kill()
    return broken
