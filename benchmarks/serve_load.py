"""The web server under load: many games at once, on this machine only.

    python benchmarks/serve_load.py [--games 50] [--seconds 20] [--opponents heuristic]
                                    [--costly search:worlds=96]

Starts ``llama-rl serve`` in a child process on a free port of 127.0.0.1, then plays
``--games`` games at once from as many client threads, each making moves as fast as the
server answers, for ``--seconds`` (bounded: the clients stop by themselves and the
server is stopped). Prints the latency of a move request -- the person's move and the
agents' replies -- as p50 and p99, the requests per second, and the latency of a single
game played alone (a click's round trip, no load).

Then it runs the same load again with one more client whose game seats ``--costly``
agents (a search agent at its largest by default) and reports the others' latency beside
the first run's: one costly game must leave the others unaffected, since agents move on
worker threads.
"""

from __future__ import annotations

import argparse
import http.client
import json
import random
import socket
import subprocess
import sys
import threading
import time

import numpy as np

from train.cli.common import float_in, games_type


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
    return response.status, json.loads(response.read())


def client(port: int, opponents: str, until: float, seed: int, latencies: list[float], errors: list[str]) -> None:
    rng = random.Random(seed)
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    seats = [{"person": "load"}] + [{"agent": opponents}] * 3
    while time.time() < until:
        status, state = request(conn, "POST", "/api/games", {"seats": seats})
        if status != 201:
            errors.append(f"create: {status} {state}")
            return
        token, seq = state["token"], state["seq"]
        while not state["game_over"] and time.time() < until:
            t0 = time.perf_counter()
            body = {"action": rng.choice(state["legal"]), "since": seq}
            status, state = request(conn, "POST", f"/api/games/{state['id']}/move", body, token)
            latencies.append(time.perf_counter() - t0)
            if status != 200:
                errors.append(f"move: {status} {state}")
                return
            seq = state["seq"]
    conn.close()


def load(port: int, args: argparse.Namespace, costly: str | None) -> tuple[np.ndarray, float, list[str], int]:
    """``args.games`` clients (and one costly one) for ``args.seconds``: the ordinary
    clients' latencies (ms), the wall time, the errors, the costly client's moves."""
    latencies: list[float] = []
    errors: list[str] = []
    slow: list[float] = []
    until = time.time() + args.seconds
    threads = [
        threading.Thread(target=client, args=(port, args.opponents, until, k + 1, latencies, errors))
        for k in range(args.games)
    ]
    if costly is not None:
        threads.append(threading.Thread(target=client, args=(port, costly, until, 999, slow, errors)))
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=args.seconds + 120)
    return np.array(latencies) * 1000, time.perf_counter() - t0, errors, len(slow)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--games", type=games_type, default=50, help="games played at once (client threads)")
    ap.add_argument("--seconds", type=float_in(1, None, "--seconds"), default=20.0, help="how long the load lasts")
    ap.add_argument("--opponents", default="heuristic", help="the agents in the three other seats")
    ap.add_argument("--costly", default="search:worlds=96", help="the agents of the one costly game of the second run")
    args = ap.parse_args()
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "train.cli", "serve", "--port", str(port), "--max-games", "1000", "--no-history"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        for _ in range(300):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                time.sleep(0.1)
        alone: list[float] = []
        errors: list[str] = []
        client(port, args.opponents, time.time() + 3, 0, alone, errors)
        plain, wall, plain_errors, _ = load(port, args, None)
        mixed, mixed_wall, mixed_errors, costly_moves = load(port, args, args.costly)
    finally:
        server.terminate()
        server.wait(timeout=20)
    a = np.array(alone) * 1000
    print(f"4-player games against {args.opponents}; the server on 127.0.0.1, 1 process")
    print(f"one game alone: {len(a)} moves, p50 {np.percentile(a, 50):.1f} ms, p99 {np.percentile(a, 99):.1f} ms")
    for label, x, w, errs in (
        (f"{args.games} games at once", plain, wall, plain_errors),
        (f"{args.games} games and one against {args.costly}", mixed, mixed_wall, mixed_errors),
    ):
        print(
            f"{label} for {w:.0f} s: {len(x)} moves, {len(x) / w:.0f} moves/s, "
            f"p50 {np.percentile(x, 50):.1f} ms, p99 {np.percentile(x, 99):.1f} ms, errors {len(errs)}"
        )
        for e in errs[:5]:
            print("  error:", e)
    print(f"(the costly game made {costly_moves} moves meanwhile)")


if __name__ == "__main__":
    main()
