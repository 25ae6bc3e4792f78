"""Decisions per second on one core, random legal actions, for the three layers.

    python benchmarks/env_speed.py [--seconds 5] [--players 4]

* engine: LlamaGame.legal_actions() + step(), nothing else;
* aec: the env exactly as ``llama_env.env()`` returns it (PettingZoo wrappers on),
  driven by the standard ``agent_iter()`` / ``last()`` loop, so the observation and
  the action mask are built at every decision;
* gym: ``gym.make("Llama-v0")`` with the learner choosing from ``info["action_mask"]``;
  opponents' decisions (``"random"`` agents, observation encoded for each) count too.

Random choices come from one seeded numpy Generator, drawn in blocks so the sampling
costs little next to what is measured.
"""

from __future__ import annotations

import argparse
import time

import gymnasium as gym
import numpy as np

import llama_env
from agents.random_agent import RandomAgent
from llama_env import LlamaGame


class Uniform:
    """Cheap uniform picks from a list, from a seeded numpy generator."""

    def __init__(self, seed: int, block: int = 1 << 16) -> None:
        self.rng = np.random.default_rng(seed)
        self.block = block
        self._refill()

    def _refill(self) -> None:
        self.buf = self.rng.random(self.block).tolist()
        self.i = 0

    def pick(self, items):
        if self.i == self.block:
            self._refill()
        u = self.buf[self.i]
        self.i += 1
        return items[int(u * len(items))]


def bench_engine(players: int, seconds: float, seed: int = 0) -> tuple[int, float]:
    u = Uniform(seed)
    rng = np.random.default_rng(seed)
    n = 0
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        for _ in range(100):
            g = LlamaGame(players, rng=rng)
            while not g.game_over:
                g.step(u.pick(g.legal_actions()))
                n += 1
    return n, time.perf_counter() - t0


def bench_aec(players: int, seconds: float, seed: int = 0) -> tuple[int, float]:
    u = Uniform(seed)
    env = llama_env.env(num_players=players)
    env.reset(seed=seed)
    n = 0
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        for _ in range(20):
            env.reset()
            for _agent in env.agent_iter():
                obs, reward, term, trunc, info = env.last()
                if term or trunc:
                    env.step(None)
                    continue
                env.step(u.pick(np.flatnonzero(obs["action_mask"]).tolist()))
                n += 1
    return n, time.perf_counter() - t0


def bench_gym(players: int, seconds: float, seed: int = 0) -> tuple[int, float]:
    u = Uniform(seed)
    opponents = [CountingRandom(seed + i) for i in range(players - 1)]
    env = gym.make("Llama-v0", num_players=players, opponents=opponents)
    env.reset(seed=seed)
    n = 0
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        for _ in range(20):
            _, info = env.reset()
            done = False
            while not done:
                action = u.pick(np.flatnonzero(info["action_mask"]).tolist())
                _, _, term, trunc, info = env.step(action)
                done = term or trunc
                n += 1
    return n + sum(o.calls for o in opponents), time.perf_counter() - t0


class CountingRandom(RandomAgent):
    """The random baseline, counting its decisions."""

    calls = 0

    def act(self, observation, action_mask):
        self.calls += 1
        return super().act(observation, action_mask)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--seconds", type=float, default=5.0, help="time per measurement")
    p.add_argument("--players", type=int, default=4)
    args = p.parse_args(argv)
    print(f"decisions per second, one core, {args.players} players, random legal actions")
    for name, fn in (("engine", bench_engine), ("aec", bench_aec), ("gym", bench_gym)):
        n, dt = fn(args.players, args.seconds)
        print(f"{name:<8} {n / dt:>10,.0f} /s   ({n:,} decisions in {dt:.1f} s)")


if __name__ == "__main__":
    main()
