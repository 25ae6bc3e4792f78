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
``--scalar-games`` plays fewer games game by game, and the two paths are compared by their
games per second (and games per CPU second), each measured on its own calls: no time is
scaled. A call's start-up (worker processes started, agents built) is shared by its
games, so a game-by-game call of fewer games than the batch's reads slower per game, and
the ratio high, by that share (0.05 to 0.13 s a call on two cores, as measured: 1 to 3%
of a call of 5,000 games). Each run says how many processes played it: up to 50,000 games (one chunk) the
batch plays in this process, whatever ``--workers``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

try:
    import resource
except ImportError:  # Windows
    resource = None  # type: ignore[assignment]

from machine import agents_or_exit, print_machine

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
    agents_or_exit(p, "--agents", lambda: parse_agent_list(table))  # a misspelt name named, not a missing seat
    if not MIN_PLAYERS <= len(table) <= MAX_PLAYERS:
        p.error(
            f"--agents names {len(table)} agent{'s' if len(table) != 1 else ''}; "
            f"give one per seat, {MIN_PLAYERS} to {MAX_PLAYERS}"
        )
    workers = args.workers or usable_cores()
    scalar_games = args.scalar_games or args.games
    print_machine(__file__, argv)
    fewer = (
        " (fewer: a call's start-up weighs more a game, so the ratio reads high)" if scalar_games < args.games else ""
    )
    print(
        f"{','.join(table)}: {args.games} games a call batched, {scalar_games} game by game{fewer}; "
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
            times[batched].append(wall)
            cpus[batched].append(cpu)
            print(
                f"  {'batched' if batched else 'game by game':>12}, run {r + 1}: {wall:6.2f} s, {cpu:6.2f} CPU s, "
                f"{games} games, {_processes(used[batched])}, load {_load():.2f}"
            )
    paths = {
        True: Runs(args.games, times[True], cpus[True], _decisions_a_game(last[True])),
        False: Runs(scalar_games, times[False], cpus[False], _decisions_a_game(last[False])),
    }
    for batched in (True, False):
        a, name = last[batched].agents[0], "batched" if batched else "game by game"
        print(
            f"{name:>12} ({_processes(used[batched])}): {paths[batched].summary()}; "
            f"{a.name} {a.win_share:.3f} [{a.ci_low:.3f}, {a.ci_high:.3f}] over {last[batched].num_games} games"
        )
    print(speed_up(paths[True], paths[False]))


@dataclass(frozen=True)
class Runs:
    """One path's runs: the games of each call, the wall and CPU seconds of each call, and
    the decisions a game (of the last call)."""

    games: int
    walls: list[float]
    cpus: list[float]
    decisions_a_game: float

    def rates(self) -> tuple[float, float, float, float]:
        """Games per second of the best and the median call, and games per CPU second of
        the best and the median call's CPU seconds."""
        g = self.games
        return (
            g / min(self.walls),
            g / statistics.median(self.walls),
            g / min(self.cpus),
            g / statistics.median(self.cpus),
        )

    def summary(self) -> str:
        best, median = min(self.walls), statistics.median(self.walls)
        per_s = self.rates()[0]
        return (
            f"best {best:.2f} s, median {median:.2f} s for {self.games} games "
            f"({per_s:,.0f} games/s, {per_s * self.decisions_a_game:,.0f} decisions/s), "
            f"CPU best {min(self.cpus):.2f} s, median {statistics.median(self.cpus):.2f} s"
        )


def speed_up(batched: Runs, scalar: Runs) -> str:
    """The batch's rates over the game-by-game path's: games per second (best and median)
    and games per CPU second, each path on its own calls."""
    b, s = batched.rates(), scalar.rates()
    return (
        f"batched / game by game, games per second: {b[0] / s[0]:.1f}x (best), {b[1] / s[1]:.1f}x (median); "
        f"games per CPU second: {b[2] / s[2]:.1f}x (best), {b[3] / s[3]:.1f}x (median)"
    )


def _decisions_a_game(result: EvalResult) -> float:
    return int(result.decisions.sum()) / result.num_games


def _processes(n: int) -> str:
    return "this process" if n == 1 else f"{n} worker processes"


def _cpu() -> float:
    """CPU seconds of this process and of its children that have ended (the workers), to
    the microsecond (``os.times`` counts the children in 10 ms ticks; on Windows, which
    keeps no children's times, this process's alone)."""
    children = 0.0
    if resource is not None:
        usage = resource.getrusage(resource.RUSAGE_CHILDREN)
        children = usage.ru_utime + usage.ru_stime
    return time.process_time() + children


def _load() -> float:
    """The 1-minute load average (NaN where the system keeps none, as on Windows)."""
    return os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")


if __name__ == "__main__":
    main()
