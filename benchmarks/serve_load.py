"""The web server under load: many games at once, on this machine only.

    python benchmarks/serve_load.py [--games 50] [--seconds 20] [--opponents heuristic]

Starts ``llama-rl serve`` in a child process on a free port of 127.0.0.1, then plays
``--games`` games at once from as many client threads, each making moves as fast as the
server answers, for ``--seconds`` (bounded: the clients stop by themselves and the
server is stopped). Prints the latency of a move request -- the person's move, the
agents' replies and the pictures of the table -- as p50 and p99, the requests per second,
and the latency of a single game played alone (a click's round trip, no load).
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


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def request(conn: http.client.HTTPConnection, method: str, path: str, body: object = None) -> tuple[int, dict]:
    data = None if body is None else json.dumps(body)
    conn.request(method, path, body=data, headers={"Content-Type": "application/json"})
    response = conn.getresponse()
    return response.status, json.loads(response.read())


def client(port: int, opponents: str, until: float, seed: int, latencies: list[float], errors: list[str]) -> None:
    rng = random.Random(seed)
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    while time.time() < until:
        status, state = request(conn, "POST", "/api/games", {"players": 4, "opponents": opponents})
        if status != 201:
            errors.append(f"create: {status} {state}")
            return
        while not state["game_over"] and time.time() < until:
            t0 = time.perf_counter()
            status, state = request(
                conn, "POST", f"/api/games/{state['id']}/move", {"action": rng.choice(state["legal"])}
            )
            latencies.append(time.perf_counter() - t0)
            if status != 200:
                errors.append(f"move: {status} {state}")
                return
    conn.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--games", type=int, default=50, help="games played at once (client threads)")
    ap.add_argument("--seconds", type=float, default=20.0, help="how long the load lasts")
    ap.add_argument("--opponents", default="heuristic", help="the agents in the three other seats")
    args = ap.parse_args()
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "train.cli", "serve", "--port", str(port), "--max-games", "1000"],
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
        latencies: list[float] = []
        until = time.time() + args.seconds
        threads = [
            threading.Thread(target=client, args=(port, args.opponents, until, k + 1, latencies, errors))
            for k in range(args.games)
        ]
        t0 = time.perf_counter()
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=args.seconds + 60)
        wall = time.perf_counter() - t0
    finally:
        server.terminate()
        server.wait(timeout=20)
    a = np.array(alone) * 1000
    x = np.array(latencies) * 1000
    print(f"4-player games against {args.opponents}; the server on 127.0.0.1, 1 process")
    print(f"one game alone: {len(a)} moves, p50 {np.percentile(a, 50):.1f} ms, p99 {np.percentile(a, 99):.1f} ms")
    print(
        f"{args.games} games at once for {wall:.0f} s: {len(x)} moves, {len(x) / wall:.0f} moves/s, "
        f"p50 {np.percentile(x, 50):.1f} ms, p99 {np.percentile(x, 99):.1f} ms, errors {len(errors)}"
    )
    for e in errors[:5]:
        print("  error:", e)


if __name__ == "__main__":
    main()
