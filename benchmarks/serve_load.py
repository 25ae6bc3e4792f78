"""The web server under load: many games at once, on this machine only.

    python benchmarks/serve_load.py [--games 50] [--seconds 20] [--opponents heuristic]
                                    [--costly search:worlds=96]

Starts ``llama-rl serve`` in a child process on a free port of 127.0.0.1, then plays
``--games`` games at once from as many client threads, each making moves as fast as the
server answers, for ``--seconds`` (bounded: the clients stop by themselves and the
server is stopped). Prints the latency of a move request -- the person's move and the
agents' replies -- as p50 and p99, the requests per second, and the latency of a single
game played alone (a click's round trip, no load). The agents are checked before the
server starts; a request the server refuses, or a server that does not start, stops the
script with the server's message (exit 1).

Then it runs the same load again with one more client whose game seats ``--costly``
agents (a search agent at its largest by default) and reports the others' latency beside
the first run's: one costly game must leave the others unaffected, since costly agents
move in a child process of their own, at a lower priority.
"""

from __future__ import annotations

import argparse
import http.client
import json
import random
import socket
import subprocess
import sys
import tempfile
import threading
import time
from functools import partial
from typing import IO, NoReturn

import numpy as np
from machine import agents_or_exit, print_machine

import agents  # noqa: F401 - the built-in agents registered, so that their names are checked
from llama_env.agent import parse_agent_spec
from train.cli.common import float_in, games_type, import_or_exit
from train.play import WEB_REQUIRES

PROG = "serve_load.py"
START_SECONDS = 30.0
"""How long the server may take to answer on its port."""
MAX_SECONDS = 86_400
"""The longest load, a day: the clients' deadlines and the wait for them are taken from it
(1e10 seconds overflowed the wait once the server had started)."""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def request(
    conn: http.client.HTTPConnection, method: str, path: str, body: object = None, token: str | None = None
) -> tuple[int, dict]:
    data = None if body is None else json.dumps(body)
    headers = {"Content-Type": "application/json"}
    if token is not None:
        headers["X-Llama-Token"] = token
    conn.request(method, path, body=data, headers=headers)
    response = conn.getresponse()
    body = response.read()
    try:
        return response.status, json.loads(body)
    except ValueError:  # a refusal in plain text (uvicorn's 503 past its connections) is the caller's to report
        if response.status < 400:
            raise
        return response.status, {"error": body.decode(errors="replace").strip() or response.reason}


def client(
    port: int,
    opponents: str,
    until: float,
    seed: int,
    latencies: list[float],
    errors: list[str],
    stop: threading.Event,
) -> None:
    """Games against ``opponents`` until ``until`` or ``stop``; the first refused request
    or lost connection is added to ``errors`` and stops every client."""
    rng = random.Random(seed)
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    seats = [{"person": "load"}] + [{"agent": opponents}] * 3
    try:
        while time.time() < until and not stop.is_set():
            status, state = request(conn, "POST", "/api/games", {"seats": seats})
            if status != 201:
                errors.append(f"the server refused a game against {opponents}: {status} {_said(state)}")
                stop.set()
                return
            token, seq = state["token"], state["seq"]
            while not state["game_over"] and time.time() < until and not stop.is_set():
                t0 = time.perf_counter()
                body = {"action": rng.choice(state["legal"]), "since": seq}
                status, state = request(conn, "POST", f"/api/games/{state['id']}/move", body, token)
                if status != 200:
                    errors.append(f"the server refused a move against {opponents}: {status} {_said(state)}")
                    stop.set()
                    return
                latencies.append(time.perf_counter() - t0)
                seq = state["seq"]
    except (OSError, http.client.HTTPException, ValueError) as exc:  # ValueError: an answer that is not JSON
        errors.append(f"lost the server: {type(exc).__name__}: {exc}")
        stop.set()
    finally:
        conn.close()


def _said(state: object) -> str:
    """The server's message in a refusal's body (``{"error": ...}``), else the body."""
    return str(state["error"]) if isinstance(state, dict) and "error" in state else str(state)


def load(port: int, args: argparse.Namespace, costly: str | None) -> tuple[np.ndarray, float, list[str], int]:
    """``args.games`` clients (and one costly one) for ``args.seconds``: the ordinary
    clients' latencies (ms), the wall time, the errors, the costly client's moves."""
    latencies: list[float] = []
    errors: list[str] = []
    slow: list[float] = []
    stop = threading.Event()
    until = time.time() + args.seconds
    threads = [
        threading.Thread(target=client, args=(port, args.opponents, until, k + 1, latencies, errors, stop))
        for k in range(args.games)
    ]
    if costly is not None:
        threads.append(threading.Thread(target=client, args=(port, costly, until, 999, slow, errors, stop)))
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=args.seconds + 120)
    return np.array(latencies) * 1000, time.perf_counter() - t0, errors, len(slow)


def fail(message: str) -> NoReturn:
    """Stop with one line on stderr (and what the server said after it) and exit 1."""
    sys.exit(f"{PROG}: error: {message}")


def server_said(log: IO[bytes]) -> str:
    """What the server wrote on stderr (its last 20 lines), as the end of an error message."""
    log.seek(0)
    said = "\n".join(log.read().decode(errors="replace").strip().splitlines()[-20:])
    return f"; the server said:\n{said}" if said else ""


def start_server(port: int, log: IO[bytes], games: int) -> subprocess.Popen[bytes]:
    """``llama-rl serve`` on ``port`` once it answers there, its stderr written to
    ``log``, with room for the live games of ``games`` clients (a game cut short by the
    end of the first load stays live through the second: a thousand to spare beside both
    loads); if it exits or does not answer within :data:`START_SECONDS`, its stderr is
    shown and the script stops."""
    live = str(1000 + 2 * games)
    server = subprocess.Popen(
        [sys.executable, "-m", "train.cli", "serve", "--port", str(port), "--max-games", live, "--no-history"],
        stdout=subprocess.DEVNULL,
        stderr=log,
    )
    deadline = time.monotonic() + START_SECONDS
    while server.poll() is None and time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return server
        except OSError:
            time.sleep(0.1)
    if server.poll() is None:
        server.terminate()
        server.wait(timeout=20)
        fail(f"the server did not answer on port {port} within {START_SECONDS:g} s{server_said(log)}")
    fail(f"the server exited with code {server.returncode}{server_said(log)}")


def probe(port: int, agent: str) -> list[str]:
    """A new game seating ``agent``: the server's refusal, if it refuses it."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    try:
        status, state = request(conn, "POST", "/api/games", {"seats": [{"person": "load"}] + [{"agent": agent}] * 3})
    except (OSError, http.client.HTTPException, ValueError) as exc:
        return [f"lost the server: {type(exc).__name__}: {exc}"]
    finally:
        conn.close()
    return [] if status == 201 else [f"the server refused a game against {agent}: {status} {_said(state)}"]


def percentiles(ms: np.ndarray) -> str:
    return f"p50 {np.percentile(ms, 50):.1f} ms, p99 {np.percentile(ms, 99):.1f} ms" if len(ms) else "no moves"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument(
        "--games",
        type=games_type,
        default=50,
        help="games played at once (client threads), fewer than the server's connections",
    )
    ap.add_argument(
        "--seconds",
        type=float_in(1, MAX_SECONDS, "--seconds"),
        default=20.0,
        help=f"how long the load lasts, at most {MAX_SECONDS:g} (a day)",
    )
    ap.add_argument("--opponents", default="heuristic", help="the agent in the three other seats (one spec)")
    ap.add_argument("--costly", default="search:worlds=96", help="the agent of the one costly game of the second run")
    args = ap.parse_args()
    for option in ("opponents", "costly"):  # each its name and parameters; the agent built once
        agents_or_exit(ap, f"--{option}", partial(parse_agent_spec, getattr(args, option)))
    import_or_exit(PROG, "web", *WEB_REQUIRES, "train.play.web")  # what llama-rl serve needs, before it starts
    from train.play.web import MAX_CONNECTIONS

    most = MAX_CONNECTIONS - 2  # 503 from the 512th connection on, one asking counted: the games' and the costly one
    if args.games > most:
        ap.error(f"--games must be at most {most} (the server takes {MAX_CONNECTIONS} connections), got {args.games}")
    port = free_port()
    with tempfile.TemporaryFile() as log:
        server = start_server(port, log, args.games)
        try:
            alone: list[float] = []
            errors: list[str] = []
            client(port, args.opponents, time.time() + 3, 0, alone, errors, threading.Event())
            errors = errors or probe(port, args.costly)  # an agent the server refuses stops the run here
            if not errors:
                plain, wall, errors, _ = load(port, args, None)
            if not errors:
                mixed, mixed_wall, errors, costly_moves = load(port, args, args.costly)
            if errors:
                fail(errors[0] + (server_said(log) if server.poll() is not None else ""))
        finally:
            server.terminate()
            server.wait(timeout=20)
    a = np.array(alone) * 1000
    print_machine(__file__)  # with the results: a run the server stops prints only its error
    print(f"4-player games against {args.opponents}; the server on 127.0.0.1, 1 process")
    print(f"one game alone: {len(a)} moves, {percentiles(a)}")
    for label, x, w in (
        (f"{args.games} games at once", plain, wall),
        (f"{args.games} games and one against {args.costly}", mixed, mixed_wall),
    ):
        print(f"{label} for {w:.0f} s: {len(x)} moves, {len(x) / w:.0f} moves/s, {percentiles(x)}")
    print(f"(the costly game made {costly_moves} moves meanwhile)")


if __name__ == "__main__":
    main()
