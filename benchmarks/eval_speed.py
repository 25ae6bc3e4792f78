"""How fast evaluate() plays: the batched engine and the game-by-game path, side by side.

    .venv/bin/python benchmarks/eval_speed.py [--games 100000] [--workers N]
        [--agents heuristic,random,random,random] [--repeats 3] [--seed 0]

Plays the same evaluation (one agent per seat, seats rotated) with ``batched=True``
(``llama_env.table.BatchTable`` over ``llama_env.batch.BatchGame``, built to play
100,000 four-player games of ``heuristic`` against three ``random`` in 4 s on two cores)
and ``batched=False`` (one ``Table`` per game), alternating, ``--repeats`` times each,
every run a whole ``evaluate`` call (worker processes started, agents built, results
aggregated). Prints each run's wall time and CPU time (this process and its workers: on a
shared machine the CPU seconds say what the work costs, the wall time also what the other
jobs took), the best and the median of each path, their ratio, games/s and decisions/s,
and both paths' win shares with 95% intervals (the batch deals from its own generator, so
its numbers differ from the other path's within them).
``--scalar-games`` plays fewer games game by game, the times scaled to ``--games``: the
start-up of a call (worker processes started, agents built), measured by a call of one
game a worker process, is counted once and only the rest is scaled (all of it scaled made
the ratio grow as ``--scalar-games`` shrank); a run says when it had too few games to
tell the two apart. Each run says how many processes played it: up to 50,000 games (one
chunk) the batch plays in this process, whatever ``--workers``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections.abc import Iterator, Sequence
from typing import Any

from machine import print_machine

from llama_env.agent import parse_agent_list
from llama_env.engine import MAX_PLAYERS, MIN_PLAYERS
from train.cli.common import games_type, int_in, seed_type, workers_type
from train.evaluation import EvalResult, LocalProcesses, evaluate
from train.evaluation.runner import Job, usable_cores


class CountedProcesses(LocalProcesses):
    """The default executor, noting how many worker processes the call used (1: no pool
    started, the games played in this process)."""

    def __init__(self) -> None:
        self.processes = 1

    def run(self, payload: bytes, jobs: Sequence[Job], workers: int) -> Iterator[Any]:
        self.processes = min(workers, len(jobs))  # the pool's size
        return super().run(payload, jobs, workers)


def timed(table: list[str], games: int, seed: int, workers: int, batched: bool) -> tuple[float, float, EvalResult, int]:
    """Wall and CPU seconds of a whole ``evaluate`` call, its result and its processes."""
    pool = CountedProcesses()
    c0, t0 = _cpu(), time.perf_counter()
    result = evaluate(table, games, seed=seed, workers=workers, batched=batched, executor=pool)
    return time.perf_counter() - t0, _cpu() - c0, result, pool.processes


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--games", type=games_type, default=100_000)
    p.add_argument(
        "--scalar-games", type=games_type, default=None, help="games of the game-by-game path (default: --games)"
    )
    p.add_argument("--workers", type=workers_type, default=None, help="default: all cores")
    p.add_argument("--agents", default="heuristic,random,random,random", help="one agent per seat, 2 to 6")
    p.add_argument("--repeats", type=int_in(1, None, "--repeats"), default=3)
    p.add_argument("--seed", type=seed_type, default=0)
    args = p.parse_args(argv)

    table = args.agents.split(",")
    try:
        parse_agent_list(table)  # a misspelt name is named here, not counted as a missing seat
    except ValueError as exc:
        p.error(f"--agents: {exc}")
    if not MIN_PLAYERS <= len(table) <= MAX_PLAYERS:
        p.error(
            f"--agents names {len(table)} agent{'s' if len(table) != 1 else ''}; "
            f"give one per seat, {MIN_PLAYERS} to {MAX_PLAYERS}"
        )
    workers = args.workers or usable_cores()
    scalar_games = args.scalar_games or args.games
    if scalar_games != args.games and scalar_games <= workers:
        p.error(
            f"--scalar-games must be more than the workers ({workers}): a call of one game a worker measures "
            f"their start-up, got {scalar_games}"
        )
    print_machine(__file__, argv)
    print(
        f"{args.games} games of {','.join(table)} (game by game: {scalar_games}"
        f"{f', its times scaled to {args.games}' if scalar_games != args.games else ''}), "
        f"{'this process' if workers == 1 else f'up to {workers} worker processes'}, load {_load():.2f}"
    )
    times: dict[bool, list[float]] = {True: [], False: []}
    cpus: dict[bool, list[float]] = {True: [], False: []}
    last: dict[bool, EvalResult] = {}
    used: dict[bool, int] = {}
    for r in range(args.repeats):
        for batched in (True, False):
            games = args.games if batched else scalar_games
            wall, cpu, last[batched], used[batched] = timed(table, games, args.seed + r, workers, batched)
            scaled = ""
            if games != args.games:  # the start-up once, the games' time scaled
                first = used[batched]  # one game a process: the same processes started
                wall0, cpu0 = start_up(table, first, args.seed + r, workers, batched)
                few = "; too few games to scale from" if wall - wall0 < wall0 else ""
                wall = wall0 + (wall - wall0) * (args.games - first) / (games - first)
                cpu = cpu0 + (cpu - cpu0) * (args.games - first) / (games - first)
                scaled = f" (scaled from {games} games, start-up {wall0:.2f} s{few})"
            times[batched].append(wall)
            cpus[batched].append(cpu)
            print(
                f"  {'batched' if batched else 'game by game':>12}, run {r + 1}: {wall:6.2f} s{scaled}, "
                f"{cpu:6.2f} CPU s, {_processes(used[batched])}, load {_load():.2f}"
            )
    for batched in (True, False):
        t, res = times[batched], last[batched]
        best, median = min(t), statistics.median(t)
        decisions = int(res.decisions.sum()) * args.games / res.num_games
        a = res.agents[0]
        print(
            f"{'batched' if batched else 'game by game':>12} ({_processes(used[batched])}): "
            f"best {best:.2f} s, median {median:.2f} s "
            f"({args.games / best:,.0f} games/s, {decisions / best:,.0f} decisions/s), "
            f"CPU best {min(cpus[batched]):.2f} s, median {statistics.median(cpus[batched]):.2f} s; "
            f"{a.name} {a.win_share:.3f} [{a.ci_low:.3f}, {a.ci_high:.3f}] over {res.num_games} games"
        )
    print(
        f"batched / game by game: {min(times[False]) / min(times[True]):.1f}x (best), "
        f"{statistics.median(times[False]) / statistics.median(times[True]):.1f}x (median)"
    )


def start_up(table: list[str], processes: int, seed: int, workers: int, batched: bool) -> tuple[float, float]:
    """Wall and CPU seconds of a call of one game a process (the same processes started,
    the same agents built): the median of three."""
    calls = [timed(table, processes, seed, workers, batched)[:2] for _ in range(3)]
    return statistics.median(c[0] for c in calls), statistics.median(c[1] for c in calls)


def _processes(n: int) -> str:
    return "this process" if n == 1 else f"{n} worker processes"


def _cpu() -> float:
    """CPU seconds of this process and of its children that have ended (the workers; on
    Windows, which keeps no children's times, this process's alone)."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def _load() -> float:
    """The 1-minute load average (NaN where the system keeps none, as on Windows)."""
    return os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")


if __name__ == "__main__":
    main()
