"""``llama-rl serve``: play and watch L.L.A.M.A. in the browser.

A small Starlette app over :mod:`train.play.session`: a page (plain HTML, CSS and
JavaScript served as package data, no build step) and a JSON API.

    POST /api/games              {"mode": "play"|"watch", "players": 3, "seat": 0,
                                  "opponents": "heuristic" | [...], "agents": [...], "seed": 7}
    GET  /api/games/{id}         the state the browser may see
    POST /api/games/{id}/move    {"action": 0..8}: your move, then the agents' replies
    POST /api/games/{id}/step    {"moves": 1}: the next moves of a watched or replayed game
    GET  /api/games/{id}/record  the game record (JSON): the start and every move
    POST /api/replays            a game record: a new game that replays it
    GET  /api/agents             the registered agents

Every request is validated: a bad one gets a 4xx with ``{"error": message}`` and changes
nothing. Games are isolated behind unguessable ids, bounded in number, and forgotten
when idle (:class:`train.play.session.SessionStore`). The server binds to 127.0.0.1
unless told otherwise. Needs the ``web`` extra (Starlette, uvicorn).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from llama_env.agent import describe
from train.play.session import GameSession, SessionError, SessionStore, new_game, replay

__all__ = ["create_app", "serve", "STATIC", "MAX_BODY"]

STATIC = Path(__file__).resolve().parent / "static"
MAX_BODY = 2_000_000
"""Largest request body accepted (a game record of a long game is well under this)."""


def _error(message: str, status: int) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status)


async def _body(request: Request) -> Any:
    raw = await request.body()
    if len(raw) > MAX_BODY:
        raise SessionError(f"the request body is larger than {MAX_BODY} bytes", 413)
    if not raw:
        return {}
    try:
        return json.loads(raw)
    except ValueError:
        raise SessionError("the request body is not JSON") from None


def _state(session: GameSession) -> dict[str, Any]:
    state = session.view()
    state["events"] = session.take_events()
    return state


Handler = Callable[[Request], Awaitable[Response]]


def _guarded(handler: Callable[[Request, SessionStore], Awaitable[Response]], store: SessionStore) -> Handler:
    async def endpoint(request: Request) -> Response:
        try:
            return await handler(request, store)
        except SessionError as exc:
            return _error(str(exc), exc.status)

    return endpoint


async def _create(request: Request, store: SessionStore) -> Response:
    body = await _body(request)
    session = store.add(new_game(body))
    with session.lock:
        return JSONResponse(_state(session), status_code=201)


async def _get(request: Request, store: SessionStore) -> Response:
    session = store.get(request.path_params["game_id"])
    with session.lock:
        return JSONResponse(_state(session))


async def _move(request: Request, store: SessionStore) -> Response:
    body = await _body(request)
    session = store.get(request.path_params["game_id"])
    if not isinstance(body, dict) or "action" not in body:
        raise SessionError('the request body must be {"action": 0..8}')
    with session.lock:
        session.move(body["action"])
        return JSONResponse(_state(session))


async def _step(request: Request, store: SessionStore) -> Response:
    body = await _body(request)
    session = store.get(request.path_params["game_id"])
    moves = body.get("moves", 1) if isinstance(body, dict) else None
    if type(moves) is not int or not 1 <= moves <= 1000:
        raise SessionError(f"'moves' must be an integer 1..1000, got {moves!r}")
    with session.lock:
        session.step(moves)
        return JSONResponse(_state(session))


async def _record(request: Request, store: SessionStore) -> Response:
    session = store.get(request.path_params["game_id"])
    if session.mode == "play" and not session.game.game_over:
        raise SessionError("the record of your game is available when it ends (it shows every hand)", 409)
    with session.lock:
        return JSONResponse(session.recording.to_json())


async def _replay(request: Request, store: SessionStore) -> Response:
    session = store.add(replay(await _body(request)))
    with session.lock:
        return JSONResponse(_state(session), status_code=201)


async def _agents(request: Request, store: SessionStore) -> Response:
    return JSONResponse([{"name": n, "doc": d} for n, d in describe().items()])


async def _index(request: Request) -> Response:
    return FileResponse(STATIC / "index.html")


def create_app(store: SessionStore | None = None) -> Starlette:
    """The web app; ``store`` holds its live games (a fresh bounded store by default)."""
    store = store if store is not None else SessionStore()
    routes = [
        Route("/", _index),
        Route("/api/agents", _guarded(_agents, store)),
        Route("/api/games", _guarded(_create, store), methods=["POST"]),
        Route("/api/games/{game_id}", _guarded(_get, store)),
        Route("/api/games/{game_id}/move", _guarded(_move, store), methods=["POST"]),
        Route("/api/games/{game_id}/step", _guarded(_step, store), methods=["POST"]),
        Route("/api/games/{game_id}/record", _guarded(_record, store)),
        Route("/api/replays", _guarded(_replay, store), methods=["POST"]),
        Mount("/static", StaticFiles(directory=STATIC), name="static"),
    ]
    app = Starlette(routes=routes)
    app.state.store = store
    return app


def serve(host: str = "127.0.0.1", port: int = 8000, *, max_games: int = 200, idle_minutes: float = 30) -> None:
    """Run the app with uvicorn until interrupted."""
    import uvicorn

    app = create_app(SessionStore(max_games=max_games, idle_seconds=idle_minutes * 60))
    print(f"LLAMA-RL is served at http://{host}:{port}/  (Ctrl-C stops it)", flush=True)
    uvicorn.run(app, host=host, port=port, log_level="warning")
