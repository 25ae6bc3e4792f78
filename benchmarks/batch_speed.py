"""Decisions per second on one core: the batched engine against the scalar one, in one run.

    python benchmarks/batch_speed.py [--games 4096] [--players 4] [--obs-version 0]
                                     [--seconds 3] [--repeats 3]

Both sides play random legal moves and build the observation of the player to act at
every decision:

* batch: ``llama_env.batch.BatchGame(games, players)`` with ``auto_reset``; each step
  builds ``observation(version)`` for all games, picks one legal action per game
  uniformly (a table of the 512 possible masks: one matrix product, two look-ups) and
  calls ``step``. Every game decides at every step, so a step is ``games`` decisions;
  the deals of the rounds and games that end are part of the step.
* scalar: ``LlamaGame`` games one after the other; each decision encodes the observation
  (``encode`` / ``encode_v1``), lists ``legal_actions()`` and steps a uniform pick.

The process pins itself to one CPU. The two sides are measured in alternating windows of
``--seconds``, ``--repeats`` times, and the median of each is printed with the ratio of
the medians; the state's size is printed too.
"""

from __future__ import annotations

import argparse
import math
import statistics
import time

import numpy as np
from machine import pin_to_one_core, print_machine

from llama_env.batch import BatchGame
from llama_env.engine import NUM_ACTIONS, LlamaGame
from llama_env.observation import encoder
from train.cli.common import float_in, int_in, players_type


class MaskPicker:
    """A uniform pick among the legal actions of every row of a ``(N, 9)`` mask: the mask
    read as a 9-bit number, and a table of each number's legal actions."""

    def __init__(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)
        self.weights = (1 << np.arange(NUM_ACTIONS)).astype(np.float32)
        masks = np.arange(1 << NUM_ACTIONS)[:, None] >> np.arange(NUM_ACTIONS) & 1
        self.count = masks.sum(axis=1)
        table = np.zeros((1 << NUM_ACTIONS, NUM_ACTIONS), dtype=np.int64)
        for bits, row in enumerate(masks):
            legal = np.flatnonzero(row)
            table[bits, : legal.size] = legal
        self.table = table.reshape(-1)

    def __call__(self, mask: np.ndarray) -> np.ndarray:
        bits = (mask.astype(np.float32) @ self.weights).astype(np.int64)
        k = (self.rng.random(len(mask), dtype=np.float32) * self.count[bits]).astype(np.int64)
        return np.take(self.table, bits * NUM_ACTIONS + k)


def batch_rate(batch: BatchGame, pick: MaskPicker, version: int, seconds: float) -> float:
    n = 0
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        batch.observation(version)
        batch.step(pick(batch.legal_action_mask))
        n += batch.num_games
    return n / (time.perf_counter() - t0)


def scalar_rate(players: int, version: int, seconds: float, rng: np.random.Generator) -> float:
    encode = encoder(version)[0]
    buf = rng.random(1 << 16).tolist()
    i = n = 0
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        g = LlamaGame(players, rng=rng)
        while not g.game_over:
            encode(g, g.current_player)
            legal = g.legal_actions()
            g.step(legal[int(buf[i] * len(legal))])
            i = (i + 1) & 0xFFFF
            n += 1
    return n / (time.perf_counter() - t0)


MAX_BATCH = 1_000_000
"""The most games in the batch: 0.6 GB of state at 6 players, 2.2 GB in all with what
each step builds (the engine takes up to 67,108,863, tens of GiB); the documented runs
use 4,096."""


def batch_games(text: str) -> int:
    """``--games``: 1 to :data:`MAX_BATCH`."""
    value = int_in(1, None, "--games")(text)
    if value > MAX_BATCH:
        raise argparse.ArgumentTypeError(
            f"--games must be at most {MAX_BATCH:,} (a game takes about 2 KB at 6 players with what each "
            f"step builds), got {value:,}"
        )
    return value


def two_figures(x: float) -> str:
    """A positive ratio to two significant figures (0.034, 1.5, 21; 140 whole): a small
    batch is slower than the scalar engine, which one decimal printed as 0.0."""
    rounded = float(f"{x:.2g}")  # 9.96 is 10, not 10.0
    return f"{rounded:.{max(0, 1 - math.floor(math.log10(rounded)))}f}"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--games", type=batch_games, default=4096, help=f"games in the batch, 1 to {MAX_BATCH:,}")
    parser.add_argument("--players", type=players_type, default=4, help="players at every table, 2..6")
    parser.add_argument("--obs-version", type=int, default=0, choices=(0, 1), help="observation built every step")
    parser.add_argument(
        "--seconds", type=float_in(0.01, None, "--seconds"), default=3.0, help="length of one measuring window"
    )
    parser.add_argument("--repeats", type=int_in(1, None, "--repeats"), default=3, help="windows per side")
    args = parser.parse_args(argv)
    pin_to_one_core()
    print_machine(__file__, argv)  # once pinned: the one core it measures on
    batch = BatchGame(args.games, args.players, seed=0)
    pick = MaskPicker(1)
    rng = np.random.default_rng(2)
    batch_rate(batch, pick, args.obs_version, 0.5)  # warm up: plans, caches
    scalar_rate(args.players, args.obs_version, 0.5, rng)
    batched, scalar = [], []
    for _ in range(args.repeats):
        batched.append(batch_rate(batch, pick, args.obs_version, args.seconds))
        scalar.append(scalar_rate(args.players, args.obs_version, args.seconds, rng))
    b, s = statistics.median(batched), statistics.median(scalar)
    print(
        f"random legal play, {args.players} players, observation v{args.obs_version} at every decision, one core "
        f"(median of {args.repeats} windows of {args.seconds:g} s)"
    )
    print(f"  batch  (N={args.games}): {b:12,.0f} decisions/s   [{', '.join(f'{x:,.0f}' for x in batched)}]")
    print(f"  scalar engine:   {s:12,.0f} decisions/s   [{', '.join(f'{x:,.0f}' for x in scalar)}]")
    print(f"  batch / scalar: {two_figures(b / s)}x")
    print(f"  batch state: {batch.nbytes / 1e6:.2f} MB for {args.games} games")


if __name__ == "__main__":
    main()
