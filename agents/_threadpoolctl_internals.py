"""threadpoolctl's internals, in one guarded place: OpenBLAS's threads limited by one
thread and put back by another.

Searches in several threads at once share one limit of the threads of a BLAS whose threads
are the whole process's (OpenBLAS built with pthreads, as numpy's wheels ship it): the
first search to start sets it and the last to end lifts it
(:func:`agents.search.one_blas_thread`). threadpoolctl 3.8 gives the say over OpenBLAS's
threads to the thread that set them last, until that thread gives it up (a limit's
``with`` does at its end), and silently ignores another thread's setting meanwhile: the
last search to end, in another thread than the first, could not lift the limit, and numpy
stayed on one thread. threadpoolctl has no public way to give the say up outside a
``with``; :func:`say_given_up` does it with two of its internals. What it assumes of
threadpoolctl, checked against **threadpoolctl 3.8**; :func:`broken_assumptions` checks
each, and ``tests/api/test_third_party.py`` fails, naming threadpoolctl's version and the
assumption, when an upgrade breaks one:

1. ``OpenBLASController._SHARED_STATE.controlling_thread`` is the thread that has the say
   (``None``: no thread), and while a living thread has it, another thread's
   ``set_num_threads`` of a pthreads build does nothing;
2. ``OpenBLASController.clear_controlling_thread()``, called by the thread that has the
   say, gives it up: another thread's setting then takes effect.

The check plays them on a stand-in controller of a pthreads build whose
``_real_set_num_threads`` (where threadpoolctl calls OpenBLAS) records the settings.
Before 3.8 any thread sets OpenBLAS's threads: there is no say to give up, and nothing is
assumed. Where the internals are missing, :func:`say_given_up` does nothing: the searches
go on, and the last one may leave numpy's BLAS on one thread.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from typing import Any

__all__ = ["CHECKED_VERSION", "say_given_up", "broken_assumptions"]

CHECKED_VERSION = "3.8"
"""The threadpoolctl minor version the assumptions were checked against."""

SAY_SINCE = (3, 8)
"""The first threadpoolctl version that gives one thread the say over OpenBLAS's threads."""


def _openblas() -> Any:
    from threadpoolctl import OpenBLASController

    return OpenBLASController


@contextlib.contextmanager
def say_given_up() -> Iterator[None]:
    """Run the block (OpenBLAS's threads set by this thread), then give up the say over
    them that the block took, so that any thread may set them next. A say this thread
    held before the block it keeps: the sb3 trainer's ``with threadpool_limits(1)`` around
    a search in the same thread still holds OpenBLAS's threads at 1 against other threads."""
    openblas = _openblas()
    state = getattr(openblas, "_SHARED_STATE", None)  # assumption 1
    held = getattr(state, "controlling_thread", None) is threading.current_thread()
    try:
        yield
    finally:
        give_up = getattr(openblas, "clear_controlling_thread", None)  # assumption 2
        if not held and callable(give_up):
            give_up()


def broken_assumptions() -> list[str]:
    """The assumptions of the module docstring that the installed threadpoolctl breaks
    (none: an empty list), each named by its number; none before 3.8, where any thread sets
    OpenBLAS's threads."""
    import threadpoolctl

    version = tuple(int(part) for part in threadpoolctl.__version__.split(".")[:2] if part.isdigit())
    if version < SAY_SINCE:
        return []
    openblas = _openblas()
    broken = []
    if not hasattr(getattr(openblas, "_SHARED_STATE", None), "controlling_thread"):
        broken.append("1: OpenBLASController has no _SHARED_STATE.controlling_thread")
    if not callable(getattr(openblas, "clear_controlling_thread", None)):
        broken.append("2: OpenBLASController has no clear_controlling_thread()")
    if broken:
        return broken

    class StandIn(openblas):  # type: ignore[misc, valid-type]
        def __init__(self) -> None:  # no library behind it
            self.threading_layer = "pthreads"
            self.settings: list[tuple[str, int]] = []

        def _real_set_num_threads(self, num_threads: int) -> None:
            self.settings.append((threading.current_thread().name, num_threads))

    blas = StandIn()
    release = threading.Event()
    alive: list[threading.Thread] = []

    def in_a_thread(name: str, do: Any) -> threading.Thread:
        """``do()`` in a thread of that name, which then lives on until the check ends
        (a dead thread loses its say anyway)."""
        done = threading.Event()

        def run() -> None:
            try:
                do()
            finally:
                done.set()
                release.wait(10)

        thread = threading.Thread(target=run, name=name, daemon=True)
        alive.append(thread)
        thread.start()
        done.wait(10)
        return thread

    def set_giving_up(num_threads: int) -> None:
        with say_given_up():
            blas.set_num_threads(num_threads)

    state = openblas._SHARED_STATE
    before = state.controlling_thread  # a say held in this process: given back at the end
    state.controlling_thread = None
    try:
        first = in_a_thread("first", lambda: blas.set_num_threads(1))
        if state.controlling_thread is not first:
            broken.append("1: the thread that set OpenBLAS's threads is not _SHARED_STATE.controlling_thread")
        in_a_thread("second", lambda: blas.set_num_threads(2))
        if blas.settings != [("first", 1)]:
            broken.append(f"1: another thread set OpenBLAS's threads while the first had the say: {blas.settings}")
        state.controlling_thread = None  # as the first's own give-up leaves it
        in_a_thread("third", lambda: set_giving_up(3))
        in_a_thread("fourth", lambda: set_giving_up(4))
        if blas.settings[-2:] != [("third", 3), ("fourth", 4)]:
            broken.append(
                "2: a thread's setting did not take effect after the one before it gave up the say with "
                f"clear_controlling_thread(): {blas.settings}"
            )
    finally:
        release.set()
        for thread in alive:
            thread.join(10)
        state.controlling_thread = before
    return broken
