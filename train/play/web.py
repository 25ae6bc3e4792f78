"""``llama-rl serve``: play, watch and replay L.L.A.M.A. in the browser.

A small Starlette app over :mod:`train.play.session` (the games) and
:mod:`train.play.history` (finished games and ratings): a page (plain HTML, CSS and
JavaScript served as package data, no build step) and a JSON API.

    POST /api/games                  {"seats": [{"person": "Ann"}, {"agent": "heuristic"}, ...],
                                      "seed": 7, "end_score": 40, "hand_size": 6}
                                     -> the creator's view, its "token" and every seat's "links"
    GET  /api/games/{id}?since=N     what the token's viewer may see, with the events after N
    POST /api/games/{id}/move        {"action": 0..8, "since": N}: a person's move, then the agents'
                                     (a 409 when the game has moved on since frame N)
    POST /api/games/{id}/step        {"moves": 1..200, "since": N}: a watched or replayed game goes on
    POST /api/games/{id}/hand-over   {"seat": N, "agent": "heuristic"}: one's own seat (to leave while
                                     another person plays on), or the seat the table waits for, its
                                     page away for 90 s or its move awaited for 300 s, goes to an
                                     agent (the history rates that person last; a link never
                                     opened: the agent's from the start)
    GET  /api/games/{id}/record      the game record, once the game is over
    POST /api/replays                a game record: a new game that replays it
    GET  /api/history?limit=&offset= saved games, and the ratings of people and agents
    GET  /api/history/{n}            a saved game's record
    POST /api/history/{n}/replay     {} (or no body): a saved game, replayed
    GET  /api/agents                 the registered agents
    GET  /api/rules                  the rule options a new game's body takes (session.rule_options),
                                     from which the page builds its fields

An agent that fails at its turn (its ``act`` raises, or it answers a move the rules refuse:
a plugin's bug) stops its game for good: the view's ``stopped`` says which agent at which
seat and why, and a move, step or hand-over is then a 409 saying so; one that fails before
the first person's turn makes the new game a 400 naming it (:attr:`GameSession.failed`).

**Safety.** A server on 127.0.0.1 can be reached by every page the user has open, so
:class:`Guard` answers only requests whose ``Host`` is an address it serves (the
defence against DNS rebinding) and, on the API, whose ``Origin`` (when sent) is its own
and whose ``Sec-Fetch-Site`` (when sent) is not another site's; a POST to the API must be
``application/json`` (which a page of another origin cannot send without asking first).
Every request about a game carries the token of one of its seats in the
``X-Llama-Token`` header: only the page that created the game holds them. Agents' moves
and every other piece of CPU or disk work run on worker threads, never on the event loop,
so one slow game leaves the others' requests fast; and since a thread computing in pure
Python holds the interpreter lock until asked to hand it over, the app shortens that wait
for the whole process to :data:`SWITCH_INTERVAL` (Python's default of 5 ms made every
other request wait 80-120 ms behind an agent computing in the server). Bad input is a 4xx with
``{"error": message}`` that changes nothing. The page is served with a content security
policy that runs no inline script, and it writes every name and message as text.

Needs the ``web`` extra (Starlette, uvicorn).
"""

from __future__ import annotations

import contextlib
import gc
import html
import json
import logging
import mimetypes
import os
import re
import socket
import sqlite3
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Sequence
from functools import partial
from pathlib import Path
from typing import Any, TypeVar, overload

import anyio
import anyio.to_thread
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect, Request
from starlette.responses import FileResponse, HTMLResponse, JSONResponse, PlainTextResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from llama_env.agent import Agent, AgentSpec, costly, describe, parse_agent_spec, resolve
from llama_env.engine import MAX_PLAYERS, brief, error_line
from train.play._uvicorn import timely_protocol
from train.play.agent_host import AgentHost
from train.play.history import DamagedGameError, History, HistoryError
from train.play.hosts import LOCAL_HOSTS, host_name, normal_host
from train.play.session import (
    HAND_OVER_AGENT,
    MAX_STEP,
    AgentPolicy,
    GameSession,
    Seated,
    SessionError,
    SessionStore,
    build_agent,
    int_field,
    known_fields,
    new_game,
    replay,
    rule_options,
    start,
)

__all__ = ["create_app", "serve", "bind", "Guard", "STATIC", "MAX_BODY", "LOCAL_HOSTS", "SWITCH_INTERVAL"]

STATIC = Path(__file__).resolve().parent / "static"
# The page's own types, whatever the machine says: on Windows mimetypes reads them from
# the registry, which often calls .js text/plain, and a browser told nosniff then runs
# no script at all (the page loads and does nothing).
mimetypes.add_type("text/javascript", ".js")
mimetypes.add_type("text/css", ".css")
MAX_BODY = 2_000_000
"""Largest request body accepted (a game record of a long game is well under this)."""
TOKEN_HEADER = "x-llama-token"
log = logging.getLogger("llama_rl.serve")

T = TypeVar("T")

_HEADERS = [
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"no-referrer"),
    (
        b"content-security-policy",
        b"default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        b"object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
    ),
]


def _error(message: str, status: int) -> JSONResponse:
    headers = {"cache-control": "no-store"}
    if status == 408:  # the body that did not come is unread: the connection cannot carry another request
        headers["connection"] = "close"
    return JSONResponse({"error": message}, status_code=status, headers=headers)


def _hostname(host: str) -> str:
    """The name in a ``Host`` header, in its one spelling (:func:`~train.play.hosts.normal_host`):
    ``[::1]:8000`` -> ``::1``, ``LOCALHOST:80`` -> ``localhost``."""
    host = host.strip()
    if host.startswith("["):
        host = host[: host.find("]") + 1] if "]" in host else host
    elif host.count(":") == 1:
        host = host.rsplit(":", 1)[0]
    return normal_host(host)


class Guard:
    """The ASGI middleware in front of the app: refuses requests for a host it does not
    serve, API requests from another origin or site, API POSTs that are not JSON or are
    too large, and adds the security headers to every response. Anything the app lets
    escape becomes a 500 with a one-line log entry, never a traceback to the client."""

    def __init__(self, app: ASGIApp, hosts: Iterable[str]) -> None:
        self.app = app
        self.hosts = frozenset(normal_host(h) for h in hosts)

    def _refusal(self, scope: Scope) -> tuple[str, int] | Response | None:
        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
        host = headers.get("host", "")
        api = scope["path"].startswith("/api/")
        if _hostname(host) not in self.hosts:
            served = ", ".join(sorted(self.hosts))
            if not api and scope["method"] in ("GET", "HEAD"):  # a browser opening the page: words, not JSON
                return _unserved_page(_hostname(host), served)
            return f"this server answers for {served} only (llama-rl serve --allow-host adds a name)", 403
        if not api:
            return None
        origin = headers.get("origin")
        if origin is not None and origin.lower() != f"http://{host.lower()}":
            return "requests from another origin are refused", 403
        if headers.get("sec-fetch-site", "same-origin") not in ("same-origin", "none"):
            return "requests from another site are refused", 403
        if scope["method"] == "POST":
            kind = headers.get("content-type", "").split(";")[0].strip().lower()
            if kind != "application/json":
                return "the API takes JSON: send Content-Type: application/json", 415
            length = headers.get("content-length")
            if length is not None and (not _INTEGER.fullmatch(length) or int(length) > MAX_BODY):
                return f"the request body is larger than {MAX_BODY} bytes", 413
        return None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        refusal = self._refusal(scope)

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = list(message.get("headers", [])) + _HEADERS
            await send(message)

        if refusal is not None:
            response = refusal if isinstance(refusal, Response) else _error(*refusal)
            await response(scope, receive, send_with_headers)
            return
        started = False

        async def tracking_send(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send_with_headers(message)

        try:
            await self.app(scope, receive, tracking_send)
        except ClientDisconnect:  # nobody to answer, and nothing the app did wrong
            log.warning("%s %s: the connection closed before the whole request arrived", scope["method"], scope["path"])
        except Exception as exc:  # the last net: one line in the log, a plain 500 to the client
            log.error("%s %s failed: %s: %s", scope["method"], scope["path"], type(exc).__name__, exc)
            if not started:
                await _error("the server failed on this request", 500)(scope, receive, send_with_headers)


def _unserved_page(name: str, served: str) -> HTMLResponse:
    """What a browser opened at an address the server does not answer for shows (the API's
    JSON refusal read as the page): the addresses it serves, and the ``--allow-host`` that
    adds this one. ``name`` comes from the request: it is escaped, and named as an option
    only when ``--allow-host`` takes it (:func:`~train.play.hosts.host_name`)."""
    shown = html.escape(name) if name else "a request that names no host"
    if host_name(name) is not None:
        fix = (
            "To open the page at this address, start <code>llama-rl serve</code> with "
            f"<code>--allow-host {shown}</code> added to its options."
        )
    else:
        fix = "Open the page at one of those addresses."
    page = (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        "<title>L.L.A.M.A.: not served at this address</title></head>"
        f"<body><h1>Not served at this address</h1><p>This server answers for {html.escape(served)} only, "
        f"not for {shown}. {fix}</p></body></html>"
    )
    return HTMLResponse(page, status_code=403, headers={"cache-control": "no-store"})


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


async def _body(request: Request) -> Any:
    chunks, size = [], 0
    start = anyio.current_time()
    limit = _body_seconds(0)
    with anyio.CancelScope(deadline=start + limit) as scope:
        async for chunk in request.stream():
            size += len(chunk)
            if size > MAX_BODY:
                raise SessionError(f"the request body is larger than {MAX_BODY} bytes", 413)
            chunks.append(chunk)
            limit = _body_seconds(size)
            scope.deadline = start + limit
    if scope.cancelled_caught:
        raise SessionError(
            f"the request body did not arrive within {limit:g} s ({BODY_SECONDS:g} s, and 1 s more "
            f"for each {BODY_RATE} bytes of it that arrive, {BODY_MOST_SECONDS:g} s at most)",
            408,
        )
    raw = b"".join(chunks)
    if not raw:
        return {}
    if len(raw) > PARSE_HERE:  # 2 MB of JSON is tens of milliseconds: not on the event loop
        return await anyio.to_thread.run_sync(_parse, raw)
    return _parse(raw)


def _body_seconds(size: int) -> float:
    """How long a request's body may take to arrive, from its headers, once ``size`` bytes
    of it have: :data:`BODY_SECONDS` and :func:`body_grace`."""
    return BODY_SECONDS + body_grace(size)


def body_grace(size: int) -> float:
    """The time that ``size`` bytes of a request's body, once arrived, buy it: 1 s for each
    :data:`BODY_RATE` bytes (in tenths of a second), up to :data:`BODY_MOST_SECONDS` with
    :data:`BODY_SECONDS`. The one rule of both timers: the app's on a body (a 408) and the
    connection's on a whole request (:data:`REQUEST_SECONDS`)."""
    return max(0.0, min(BODY_MOST_SECONDS - BODY_SECONDS, size * 10 // BODY_RATE / 10))


BODY_SECONDS = 5.0
"""How long a request's body may take to arrive once its headers have, before any of it
has: then it is a 408, and its connection is closed (a client that sent part of a body
and nothing more held its connection, and a handler, for ever)."""
BODY_RATE = 16_000
"""Bytes of a body that give it 1 s more: a body that keeps arriving at this rate (16 KB/s)
arrives in time, up to :data:`BODY_MOST_SECONDS` (a total deadline of 5 s refused a
400 KB replay record sent over a slow mobile link), while one that trickles gains nothing."""
BODY_MOST_SECONDS = 60.0
"""The longest a request's body may take to arrive, however fast it comes (a 2 MB body
needs about 33 KB/s)."""
PARSE_HERE = 16_384
"""The largest request body parsed on the event loop; a larger one is parsed on a worker
thread (a client posting 2 MB bodies made every other request 30 times slower)."""


def _parse(raw: bytes) -> Any:
    """A request body's JSON, checked (a :class:`SessionError` naming what is wrong)."""
    try:
        value = json.loads(raw, parse_constant=_reject_constant, object_pairs_hook=_once_each)
        json.dumps(value, ensure_ascii=False).encode()  # lone surrogates ("\ud800") cannot be sent back
    except SessionError:
        raise
    except RecursionError:
        raise SessionError("the request body is nested too deeply") from None
    except UnicodeEncodeError:
        raise SessionError("the request body holds text that is not valid Unicode") from None
    except ValueError as exc:
        raise NotJSONError(str(exc)[:80]) from None
    return value


class NotJSONError(SessionError):
    """A request body that is not JSON; ``reason`` is what the JSON reader said of it."""

    def __init__(self, reason: str) -> None:
        super().__init__(f"the request body is not JSON: {reason}")
        self.reason = reason


def _once_each(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object of a request body, each field given once: a 400 names a field given
    twice (``json.loads`` kept the last, so ``{"action": 0, "action": 7}`` drew a card)."""
    fields = dict(pairs)
    if len(fields) < len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise SessionError(f"field {brief(key)} is given twice in the request body")
            seen.add(key)
    return fields


@overload
def _query_int(request: Request, key: str, low: int, high: int, default: int) -> int: ...


@overload
def _query_int(request: Request, key: str, low: int, high: int, default: None = None) -> int | None: ...


def _query_int(request: Request, key: str, low: int, high: int, default: int | None = None) -> int | None:
    """A query parameter read as :func:`train.play.session.int_field` reads a body's."""
    text = request.query_params.get(key)
    if text is not None and not _INTEGER.fullmatch(text):
        raise SessionError(f"'{key}' must be an integer {low}..{high}, got {text[:20]!r}")
    return int_field({} if text is None else {key: int(text)}, key, low, high, default)


_INTEGER = re.compile(r"-?[0-9]{1,12}")
"""An integer in a URL: ASCII digits only (``str.isdigit`` also takes "²" and other
scripts' digits, which ``int`` then refuses or reads), one sign at most."""


def _names_a_costly_agent(body: Any) -> bool:
    """Whether a new game's body seats a costly agent (:func:`llama_env.agent.costly`):
    building it and its first moves wait for the process of costly agents, so its request
    computes in the slow games' lane. A body it cannot read, or one with more seats than
    a table has, is left to :func:`new_game` to refuse (the 95,000 seats of a 2 MB body
    had their specs parsed here, on the event loop, before that refusal)."""
    seats = body.get("seats") if isinstance(body, dict) else None
    if not isinstance(seats, list) or len(seats) > MAX_PLAYERS:
        return False
    for seat in seats:
        text = seat.get("agent") if isinstance(seat, dict) else None
        if isinstance(text, str) and len(text) <= 200:
            try:
                if costly(parse_agent_spec(text, check=False).name):
                    return True
            except ValueError:
                continue
    return False


SWITCH_INTERVAL = 0.0005
"""Seconds a thread may keep the interpreter lock while another waits for it, in a
server's process (:func:`sys.setswitchinterval`; Python's default is 0.005). Measured with
an agent burning 0.4 s of pure Python a move on one game: the other requests' p99 is about
9 ms at 0.5 ms, 20 ms at 1 ms and 125 ms at the default."""


class _App:
    """The handlers, with what they share: the live games, the history, the agent
    policy, the process of costly agents, and the limits on worker threads: ``workers``
    for games that change, one lane for slow games, some for views and for the history."""

    def __init__(self, store: SessionStore, history: History | None, policy: AgentPolicy, workers: int) -> None:
        self.store = store
        self.history = history
        self.policy = policy
        self.games = anyio.CapacityLimiter(workers)
        self.slow_games = anyio.CapacityLimiter(1)
        """Games whose agents are slow (:attr:`GameSession.slow`) compute in a lane of their own."""
        self.agents_apart = AgentHost()
        self.views = anyio.CapacityLimiter(4)
        self.disk = anyio.CapacityLimiter(4)

    async def work(self, func: Callable[[], T], limiter: anyio.CapacityLimiter | None = None) -> T:
        return await anyio.to_thread.run_sync(func, limiter=limiter or self.games)

    # ------------------------------------------------------------------ helpers

    def build(self, spec: AgentSpec, seed: int) -> Agent:
        """An agent for a seat: a costly one in the child process of :mod:`train.play.agent_host`.
        Built through :func:`~llama_env.agent.resolve`, silent on an agent that cannot be
        seeded: each game resets it to its seed, and a warning there spoke to no one."""
        if costly(spec.name):
            return self.agents_apart.agent(spec, seed)
        return resolve(spec, seed)

    def making_room(self, make: Callable[[], T]) -> T:
        """``make()``, tried again while it is a 429 because the process of costly agents
        is full and a game left in a closed tab held agents there (it held them for
        idle_seconds, though the store had room): that game is forgotten each time."""
        while True:
            try:
                return make()
            except SessionError as exc:
                if exc.status != 429 or not self.store.forget_abandoned_apart():
                    raise

    def session(self, request: Request) -> tuple[GameSession, int | None]:
        game_id = request.path_params["game_id"]
        session = self.store.get(game_id if len(game_id) <= 64 else "")
        viewer = session.viewer(request.headers.get(TOKEN_HEADER))
        session.look(viewer)
        return session, viewer

    def lane(self, session: GameSession) -> anyio.CapacityLimiter:
        return self.slow_games if session.slow else self.games

    def changed(
        self, session: GameSession, change: Callable[[], None], viewer: int | None, since: int | None
    ) -> Response:
        """On a worker thread: ``change`` the game (a game already changing refuses, it
        does not queue), then the viewer's view of it."""
        if not session.lock.acquire(blocking=False):
            raise SessionError("this game is busy with another request; try again", 409)
        try:
            change()
        finally:
            session.lock.release()
        return JSONResponse(session.view(viewer, since))

    def saved(self, session: GameSession) -> None:
        """Save a finished game to the history (called on the thread that finished it)."""
        if self.history is None or session.mode == "replay":
            return
        people = [p in session.people or p in session.left for p in range(len(session.names))]
        left = [p in session.left for p in range(len(session.names))]
        try:
            session.history_id = self.history.save(session.recording.to_json(), people=people, forfeit=left)
        except (HistoryError, sqlite3.Error, ValueError) as exc:
            log.error("could not save game %s to the history: %s", session.id, exc)

    def added(self, session: GameSession) -> JSONResponse:
        session.on_over = self.saved
        start(session)
        self.store.add(session)
        viewer = next(iter(session.tokens.values()))
        state = session.view(viewer)
        state["token"] = next(iter(session.tokens))
        state["links"] = session.links()
        return JSONResponse(state, status_code=201)

    # ------------------------------------------------------------------ games

    async def create(self, request: Request) -> Response:
        body = await _body(request)

        def make() -> JSONResponse:
            self.store.forget_idle()  # before the agents are built: a forgotten game's make room
            store = self.store
            return self.making_room(
                lambda: self.added(
                    new_game(body, policy=self.policy, secret=store.secret, fresh=store.fresh_seed(), build=self.build)
                )
            )

        return await self.work(make, self.slow_games if _names_a_costly_agent(body) else self.games)

    async def get(self, request: Request) -> Response:
        since = _query_int(request, "since", -1, 10**9)
        session, viewer = self.session(request)
        view = partial(session.view, viewer, since)
        if session.stalled:  # an agent's turn that a passing error stopped: try it again, in the game's lane
            try:
                await self.work(session.resume, self.lane(session))
            except Exception as exc:  # noqa: BLE001 - it failed again: the game is shown as it stands
                log.warning("game %s: its agents could not move: %s", session.id, error_line(exc))
        return await self.work(lambda: JSONResponse(view(), headers={"cache-control": "no-store"}), self.views)

    async def move(self, request: Request) -> Response:
        body = await _body(request)
        if not isinstance(body, dict) or "action" not in body:
            raise SessionError('the request body must be {"action": 0..8}')
        known_fields(body, ("action", "since"))
        since = int_field(body, "since", -1, 10**9)
        session, viewer = self.session(request)
        change = partial(session.move, viewer, body["action"], since)
        return await self.work(partial(self.changed, session, change, viewer, since), self.lane(session))

    async def step(self, request: Request) -> Response:
        body = await _body(request)
        if not isinstance(body, dict):
            raise SessionError('the request body must be {"moves": 1..200}')
        known_fields(body, ("moves", "since"))
        moves = int_field(body, "moves", 1, MAX_STEP, 1)
        since = int_field(body, "since", -1, 10**9)
        session, viewer = self.session(request)
        change = partial(session.step, viewer, moves)
        return await self.work(partial(self.changed, session, change, viewer, since), self.lane(session))

    async def hand_over(self, request: Request) -> Response:
        body = await _body(request)
        if not isinstance(body, dict) or "seat" not in body:
            raise SessionError('the request body must be {"seat": N, "agent": spec}')
        known_fields(body, ("seat", "agent", "since"))
        since = int_field(body, "since", -1, 10**9)
        session, viewer = self.session(request)
        spec = self.policy.spec(HAND_OVER_AGENT if body.get("agent") is None else body["agent"], "agent")
        seed = self.store.fresh_seed()

        def agent() -> Seated:
            return self.making_room(
                lambda: build_agent(
                    spec, seed, f"seat {body['seat']}", rules=session.game.rules, policy=self.policy, build=self.build
                )
            )

        change = partial(session.hand_over, viewer, body["seat"], agent)
        lane = self.slow_games if costly(spec.name) else self.lane(session)
        return await self.work(partial(self.changed, session, change, viewer, since), lane)

    async def record(self, request: Request) -> Response:
        session, _ = self.session(request)
        if not session.game.game_over and session.mode != "replay":
            raise SessionError("a game's record is given out when the game is over (it shows every deal)", 409)
        return await self.work(lambda: JSONResponse(session.recording.to_json()), self.views)

    async def replay(self, request: Request) -> Response:
        try:
            body = await _body(request)
        except NotJSONError as exc:  # the page sends the text of the file a person chose
            raise SessionError(f"this file is not a game record: it is not JSON ({exc.reason})") from None
        return await self.work(lambda: self.added(replay(body)))

    # ------------------------------------------------------------------ history

    def _history(self) -> History:
        if self.history is None:
            raise SessionError("this server keeps no history (it was started with --no-history)", 404)
        return self.history

    async def history_index(self, request: Request) -> Response:
        limit = _query_int(request, "limit", 1, 200, 50)
        offset = _query_int(request, "offset", 0, 10**9, 0)
        history = self._history()

        def read() -> dict[str, Any]:
            return {"count": history.count(), "games": history.games(limit, offset), "ratings": history.ratings()}

        return JSONResponse(await self.work(read, self.disk), headers={"cache-control": "no-store"})

    def _saved_record(self, request: Request, *, read: bool = False) -> Any:
        """The saved game the path names: its record as saved, or (``read``) as
        :meth:`History.recording` reads it, to replay."""
        text = request.path_params["number"]
        if not _INTEGER.fullmatch(text) or text.startswith("-"):
            raise SessionError("no such saved game", 404)
        history = self._history()
        try:
            return (history.recording if read else history.record)(int(text))
        except LookupError:
            raise SessionError("no such saved game", 404) from None
        except DamagedGameError as exc:  # this game alone: the rest of the history reads, and the file stays unnamed
            log.error("the history failed: %s", exc)
            raise SessionError(f"saved game {exc.game_id} is damaged and cannot be shown", 500) from None

    async def history_record(self, request: Request) -> Response:
        return JSONResponse(await self.work(partial(self._saved_record, request), self.disk))

    async def history_replay(self, request: Request) -> Response:
        body = await _body(request)
        if not isinstance(body, dict):
            raise SessionError("the request body must be {}")
        known_fields(body, ())
        record = await self.work(partial(self._saved_record, request, read=True), self.disk)
        return await self.work(lambda: self.added(replay(record)))  # (replayed once, as it was read)

    async def agents(self, request: Request) -> Response:
        return JSONResponse([{"name": n, "doc": d} for n, d in describe().items()])

    async def rules(self, request: Request) -> Response:
        return JSONResponse(rule_options())


Handler = Callable[[Request], Awaitable[Response]]


def _guarded(handler: Handler) -> Handler:
    async def endpoint(request: Request) -> Response:
        try:
            return await handler(request)
        except SessionError as exc:
            return _error(str(exc), exc.status)
        except (HistoryError, sqlite3.Error) as exc:  # the file's path and the detail only in the log
            log.error("the history failed: %s", exc)
            return _error("the game history cannot be read now (the server's log says why)", 503)

    return endpoint


async def _index(request: Request) -> Response:
    return FileResponse(STATIC / "index.html")


async def _http_error(request: Request, exc: Exception) -> Response:
    """Starlette's own refusals (no such route, a method it does not take): in the API a
    JSON error like every other; a page that does not exist is a short page that leads
    to the table (a person mistyped an address); elsewhere its plain text."""
    assert isinstance(exc, HTTPException)
    if request.url.path.startswith("/api/"):
        return JSONResponse({"error": exc.detail.lower()}, status_code=exc.status_code, headers=exc.headers)
    if exc.status_code == 404 and request.method in ("GET", "HEAD"):
        return HTMLResponse(_NOT_FOUND_PAGE, status_code=404, headers=exc.headers)
    return PlainTextResponse(exc.detail, status_code=exc.status_code, headers=exc.headers)


_NOT_FOUND_PAGE = (
    '<!doctype html><html lang="en"><head><meta charset="utf-8">'
    '<meta name="viewport" content="width=device-width, initial-scale=1">'
    "<title>L.L.A.M.A.: no such page</title></head>"
    "<body><h1>No such page</h1><p>This server has nothing at this address. "
    '<a href="/">Go to the table</a> to start or join a game.</p></body></html>'
)


async def _failed(request: Request, exc: Exception) -> Response:
    """A request the app failed on: a JSON 500 to the client (Starlette then raises the
    exception on to :class:`Guard`, which logs it in one line)."""
    return _error("the server failed on this request", 500)


def create_app(
    store: SessionStore | None = None,
    *,
    history: History | None = None,
    hosts: Sequence[str] = LOCAL_HOSTS,
    model_dirs: Sequence[str | Path] = (),
    workers: int = 4,
) -> ASGIApp:
    """The web app behind its :class:`Guard`.

    Args:
        store: the live games (a fresh bounded store by default).
        history: where finished games are saved (``None``: nowhere).
        hosts: the host names it answers to (the ``Host`` header's name).
        model_dirs: directories whose models a request may name (``ppo:path=...``,
            relative to one of them); none by default: no file is named from the web.
        workers: games that compute at once on worker threads.

    Shortens the process's thread switch interval to :data:`SWITCH_INTERVAL` (never
    lengthens it): see the module docstring.
    """
    if sys.getswitchinterval() > SWITCH_INTERVAL:
        sys.setswitchinterval(SWITCH_INTERVAL)
    store = store if store is not None else SessionStore()
    roots = tuple(Path(d).resolve() for d in model_dirs)
    app = _App(store, history, AgentPolicy(roots), workers)
    g = _guarded
    routes = [
        Route("/", _index),
        Route("/api/agents", g(app.agents)),
        Route("/api/rules", g(app.rules)),
        Route("/api/games", g(app.create), methods=["POST"]),
        Route("/api/games/{game_id}", g(app.get)),
        Route("/api/games/{game_id}/move", g(app.move), methods=["POST"]),
        Route("/api/games/{game_id}/step", g(app.step), methods=["POST"]),
        Route("/api/games/{game_id}/hand-over", g(app.hand_over), methods=["POST"]),
        Route("/api/games/{game_id}/record", g(app.record)),
        Route("/api/replays", g(app.replay), methods=["POST"]),
        Route("/api/history", g(app.history_index)),
        Route("/api/history/{number}", g(app.history_record)),
        Route("/api/history/{number}/replay", g(app.history_replay), methods=["POST"]),
        Mount("/static", StaticFiles(directory=STATIC), name="static"),
    ]

    @contextlib.asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[None]:
        yield
        app.agents_apart.close()

    starlette = Starlette(
        routes=routes, lifespan=lifespan, exception_handlers={HTTPException: _http_error, Exception: _failed}
    )
    starlette.state.store = store
    starlette.state.history = history
    return Guard(starlette, hosts)


def bind(host: str, port: int) -> socket.socket:
    """A listening socket on ``host:port`` (an ``OSError`` when it is taken)."""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    family, kind, proto, _, address = infos[0]
    sock = socket.socket(family, kind, proto)
    try:
        if os.name != "nt":  # a port whose last connections wait out TIME-WAIT is free to serve again
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # (Windows: it would share a taken one)
        sock.bind(address)
        sock.listen(128)
    except OSError:
        sock.close()
        raise
    sock.set_inheritable(True)
    return sock


def serve(
    sock: socket.socket,
    *,
    hosts: Sequence[str] = LOCAL_HOSTS,
    max_games: int = 200,
    idle_minutes: float = 30,
    history: History | None = None,
    model_dirs: Sequence[str | Path] = (),
) -> None:
    """Run the app with uvicorn on a bound socket (:func:`bind`) until interrupted."""
    import uvicorn

    app = create_app(
        SessionStore(max_games=max_games, idle_seconds=idle_minutes * 60),
        history=history,
        hosts=hosts,
        model_dirs=model_dirs,
    )
    # The objects of start-up (modules, the agents' tables) live as long as the server:
    # keep them out of every collection, and collect less often. A full collection
    # scanned them all, many times a second under load: it was the slowest responses.
    gc.freeze()
    gc.set_threshold(20_000, 20, 50)
    uvicorn.Server(server_config(app)).run(sockets=[sock])


MAX_CONNECTIONS = 512
"""Open connections the server takes at once (uvicorn's ``limit_concurrency``); more
are answered 503."""
REQUEST_SECONDS = 10.0
"""How long a connection may take to send a whole request (its headers and body), from
when it opened or from the answer to its last request, before it is closed, plus the time
the bytes of its body that arrived buy (:func:`body_grace`): uvicorn waits for ever, and
512 connections that sent nothing or part of a request (a browser's speculative ones, a
stuck client) made every request of every player a 503."""
SHUTDOWN_SECONDS = 3
"""How long Ctrl-C waits for the requests under way before it cancels them (uvicorn
waited for every open connection: one stalled request held the server up as long as its
client liked)."""


def server_config(app: Any) -> Any:
    """uvicorn's config for the app: quiet, at most :data:`MAX_CONNECTIONS` connections,
    each closed when a request does not arrive whole within :data:`REQUEST_SECONDS` (more
    for a body that keeps arriving), and
    stopped within :data:`SHUTDOWN_SECONDS` of Ctrl-C."""
    import uvicorn

    return uvicorn.Config(
        app,
        log_level="warning",
        access_log=False,
        limit_concurrency=MAX_CONNECTIONS,
        http=timely_protocol(REQUEST_SECONDS, body_grace),
        timeout_graceful_shutdown=SHUTDOWN_SECONDS,
    )
