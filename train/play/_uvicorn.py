"""uvicorn's internals, in one guarded place: the web server's HTTP protocol is
uvicorn's h11 protocol with one timer, which closes a connection that sends no request in
time (uvicorn waits on it for ever, and its connection limit counts it).
``tests/api/test_third_party.py`` fails by name, with uvicorn's version, when an upgrade
no longer behaves as this module assumes.
"""

from __future__ import annotations

import asyncio
from typing import Any

__all__ = ["timely_protocol"]


def timely_protocol(seconds: float) -> Any:
    """uvicorn's h11 protocol, closing a connection that sends no request within
    ``seconds``, for ``uvicorn.Config(http=...)``. It reads one attribute of uvicorn's
    (``cycle``, the request under way, ``None`` before the first); where uvicorn's
    ``__init__`` does not set it (another uvicorn), the protocol is uvicorn's own."""
    from uvicorn.protocols.http.h11_impl import H11Protocol

    class TimelyH11(H11Protocol):
        def connection_made(self, transport: Any) -> None:
            super().connection_made(transport)
            self._waiting = asyncio.get_running_loop().call_later(seconds, self._no_request, transport)

        def _no_request(self, transport: Any) -> None:
            if getattr(self, "cycle", None) is None and not transport.is_closing():
                transport.close()

        def connection_lost(self, exc: Exception | None) -> None:
            self._waiting.cancel()
            super().connection_lost(exc)

    return TimelyH11 if sets_cycle(H11Protocol) else "h11"


def sets_cycle(protocol: type) -> bool:
    """Whether ``protocol``'s ``__init__`` sets the ``cycle`` attribute the timer reads."""
    init = getattr(protocol, "__init__", None)
    return "cycle" in getattr(getattr(init, "__code__", None), "co_names", ())
