"""uvicorn's internals, in one guarded place: the web server's HTTP protocol is
uvicorn's h11 protocol with one timer, which closes a connection whose request does not
arrive whole in time, a body that keeps arriving having longer (uvicorn waits on a
request's rest for ever, and its connection limit counts the connection), and closes at
once, on Ctrl-C, one whose request has not arrived whole (uvicorn waited for it). It assumes, of uvicorn's ``h11_impl``:

1. ``H11Protocol.__init__`` sets ``cycle``, the request under way (``None`` before the first);
2. ``H11Protocol.data_received`` takes the client's bytes, and ``handle_events`` passes
   ``on_response_complete`` to each request, which calls it once its answer is sent;
3. ``RequestResponseCycle.__init__`` sets ``more_body`` (its body is not all in) and
   ``response_complete`` (its answer is sent);
4. the server calls ``H11Protocol.shutdown`` of each connection when it stops.

Where one does not hold (another uvicorn), the protocol is uvicorn's own.
``tests/web/test_server_timeouts.py`` (all four) and ``tests/api/test_third_party.py``
(the first) fail by name, with uvicorn's version, when an upgrade no longer behaves as
this module assumes.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable
from typing import Any

__all__ = ["timely_protocol", "broken_assumptions", "sets_cycle"]


def timely_protocol(seconds: float, grace: Callable[[int], float] | None = None) -> Any:
    """uvicorn's h11 protocol for ``uvicorn.Config(http=...)``, closing a connection whose
    request (its headers and its body) has not arrived whole ``seconds`` after the
    connection began to wait for it (when it opened, and again when each answer was sent),
    plus ``grace(n)`` s once ``n`` bytes of the request's body have arrived (none without
    ``grace``). The timer stops while a whole request is being answered; bytes
    of the headers that trickle in do not extend it, nor do those of a body whose answer is
    sent. When the server stops, such a connection is closed at once."""
    from uvicorn.protocols.http.h11_impl import H11Protocol

    class TimelyH11(H11Protocol):
        _deadline: asyncio.TimerHandle | None = None
        _since = 0.0  # when the connection began to wait for the request (the loop's time)
        _body = 0  # bytes that arrived while the request's body was under way

        def connection_made(self, transport: Any) -> None:
            super().connection_made(transport)
            self._time()

        def data_received(self, data: bytes) -> None:
            cycle, in_body = self.cycle, self._in_body()
            super().data_received(data)
            if in_body or (self.cycle is not cycle and self._in_body()):
                # body bytes, or a read that began a request and brought part of its body
                # with its headers (counted whole: the headers buy a fraction of a second)
                self._body += len(data)
            self._time()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            self._time()

        def connection_lost(self, exc: Exception | None) -> None:
            self._stop()
            super().connection_lost(exc)

        def shutdown(self) -> None:
            if self._waiting():  # no whole request to answer: nothing to wait for
                self.transport.close()
            else:
                super().shutdown()

        def _waiting(self) -> bool:
            """Whether the connection waits for (the rest of) a request."""
            cycle = self.cycle
            return cycle is None or cycle.more_body or cycle.response_complete

        def _in_body(self) -> bool:
            """Whether the connection waits for the rest of the body of a request not yet answered."""
            cycle = self.cycle
            return cycle is not None and cycle.more_body and not cycle.response_complete

        def _due(self) -> float:
            """When the request under way must have arrived, in the loop's time."""
            return self._since + seconds + (grace(self._body) if grace else 0.0)

        def _time(self) -> None:
            if not self._waiting():
                self._stop()
            elif self._deadline is None and not self.transport.is_closing():
                loop = asyncio.get_running_loop()
                self._since, self._body = loop.time(), 0
                self._deadline = loop.call_at(self._due(), self._too_slow)

        def _stop(self) -> None:
            if self._deadline is not None:
                self._deadline.cancel()
                self._deadline = None

        def _too_slow(self) -> None:
            self._deadline = None
            if not self._waiting() or self.transport.is_closing():
                return
            loop = asyncio.get_running_loop()
            due = self._due()
            if loop.time() < due:  # the body kept arriving: its time grew
                self._deadline = loop.call_at(due, self._too_slow)
            else:
                self.transport.close()

    return TimelyH11 if not broken_assumptions(H11Protocol) else "h11"


def broken_assumptions(protocol: type) -> list[str]:
    """Each assumption of this module (see its docstring) that ``protocol`` (uvicorn's
    ``H11Protocol``) and the ``RequestResponseCycle`` of its module break, in words;
    empty when all hold."""
    problems = [] if sets_cycle(protocol) else ["1: H11Protocol.__init__ does not set 'cycle'"]
    if not callable(getattr(protocol, "data_received", None)):
        problems.append("2: H11Protocol has no method data_received")
    if "on_response_complete" not in _names(getattr(protocol, "handle_events", None)):
        problems.append("2: H11Protocol.handle_events does not pass on_response_complete to a request")
    cycle = getattr(sys.modules.get(protocol.__module__), "RequestResponseCycle", None)
    gone = [name for name in ("more_body", "response_complete") if name not in _names(getattr(cycle, "__init__", None))]
    if gone:
        problems.append(f"3: RequestResponseCycle.__init__ does not set {gone}")
    if not callable(getattr(protocol, "shutdown", None)):
        problems.append("4: H11Protocol has no method shutdown")
    return problems


def sets_cycle(protocol: type) -> bool:
    """Whether ``protocol``'s ``__init__`` sets the ``cycle`` attribute the timer reads."""
    return "cycle" in _names(getattr(protocol, "__init__", None))


def _names(function: Any) -> tuple[str, ...]:
    """The attribute and global names ``function``'s code reads or sets (none for a non-function)."""
    return getattr(getattr(function, "__code__", None), "co_names", ())
