"""Decisions per second on one core, random legal play, side by side with OpenSpiel.

    python benchmarks/env_speed.py [--seconds 0.5] [--repeats 12] [--players 2 4] [--no-openspiel]

Ours:

* engine: ``LlamaGame.legal_actions()`` + ``step()``, nothing else;
* aec, as PettingZoo documents it: ``llama_env.env()`` (PettingZoo's wrappers on),
  ``env.reset(seed=k)`` for each new game, then ``agent_iter()`` / ``env.last()`` /
  ``env.action_space(agent).sample(mask)`` / ``env.step()``: the observation and the
  mask are built at every decision;
* aec, one picker: the same loop, but the action is picked from
  ``obs["action_mask"].nonzero()[0]`` by the cheap uniform picker both sides share;
* gym: ``gym.make("Llama-v0")``, the learner choosing from ``info["action_mask"]``;
  the opponents' decisions (``random`` agents, observation encoded for each) count too.

OpenSpiel's C++ ``crazy_eights`` (``pip install open_spiel``; not a dependency of this
project), with ``state.observation_tensor()`` read at every decision:

* as OpenSpiel documents it (its Python example): chance outcomes drawn with
  ``np.random.choice(actions, p=probs)``, moves with ``random.choice(legal_actions)``;
* one picker: chance outcomes and moves drawn by the same cheap picker as ours.

Only decisions count (OpenSpiel's chance nodes, the deal, do not; neither do ours). The
process pins itself to one CPU.
Each cell is measured ``--repeats`` times in short windows, the rows interleaved so that
a change of load on the machine hits every row alike, and the median is printed. A
ratio ours / OpenSpiel is taken for each repeat from the two windows measured back to
back, and the median of those ratios is printed with their range and the number of
repeats in which ours was the faster: on a shared host the rates drift by tens of
percent within a minute, the back-to-back ratios much less.
"""

from __future__ import annotations

import argparse
import random
import time
from collections.abc import Callable, Sequence
from typing import Any

import gymnasium as gym
import numpy as np
from machine import pin_to_one_core, print_machine

import llama_env
from agents.random_agent import RandomAgent
from llama_env import LlamaGame
from train.cli.common import float_in, int_in, players_type


class Picker:
    """Cheap uniform picks from a sequence, from a seeded numpy generator drawn in blocks
    (so picking costs little next to what is measured). Both sides use it."""

    def __init__(self, seed: int, block: int = 1 << 16) -> None:
        self.rng = np.random.default_rng(seed)
        self.block = block
        self._refill()

    def _refill(self) -> None:
        self.buf = self.rng.random(self.block).tolist()
        self.i = 0

    def pick(self, items: Sequence[Any] | np.ndarray) -> Any:
        if self.i == self.block:
            self._refill()
        u = self.buf[self.i]
        self.i += 1
        return items[int(u * len(items))]


def timed(run_one_game: Callable[[int], int], seconds: float) -> float:
    """Decisions per second of ``run_one_game(game_index) -> decisions``, over ``seconds``."""
    n = g = 0
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        n += run_one_game(g)
        g += 1
    return n / (time.perf_counter() - t0)


def bench_engine(players: int, seconds: float) -> float:
    p = Picker(0)
    rng = np.random.default_rng(0)

    def game(_: int) -> int:
        g = LlamaGame(players, rng=rng)
        n = 0
        while not g.game_over:
            g.step(p.pick(g.legal_actions()))
            n += 1
        return n

    return timed(game, seconds)


def bench_aec_documented(players: int, seconds: float) -> float:
    env = llama_env.env(num_players=players)

    def game(k: int) -> int:
        env.reset(seed=k)
        n = 0
        for agent in env.agent_iter():
            observation, reward, termination, truncation, info = env.last()
            if termination or truncation:
                action = None
            else:
                mask = observation["action_mask"]
                action = env.action_space(agent).sample(mask)
                n += 1
            env.step(action)
        return n

    return timed(game, seconds)


def bench_aec_picker(players: int, seconds: float) -> float:
    env = llama_env.env(num_players=players)
    p = Picker(0)

    def game(k: int) -> int:
        env.reset(seed=k)
        n = 0
        for _agent in env.agent_iter():
            observation, reward, termination, truncation, info = env.last()
            if termination or truncation:
                env.step(None)
                continue
            env.step(p.pick(observation["action_mask"].nonzero()[0]))
            n += 1
        return n

    return timed(game, seconds)


class CountingRandom(RandomAgent):
    """The random baseline, counting its decisions."""

    calls = 0

    def act(self, observation: np.ndarray, action_mask: np.ndarray) -> int:
        self.calls += 1
        return super().act(observation, action_mask)


def bench_gym(players: int, seconds: float) -> float:
    p = Picker(0)
    opponents = [CountingRandom(i) for i in range(players - 1)]
    env = gym.make("Llama-v0", num_players=players, opponents=opponents)

    def game(k: int) -> int:
        before = sum(o.calls for o in opponents)
        _, info = env.reset(seed=k)
        n = 0
        done = False
        while not done:
            _, _, term, trunc, info = env.step(p.pick(np.flatnonzero(info["action_mask"])))
            done = term or trunc
            n += 1
        return n + sum(o.calls for o in opponents) - before

    return timed(game, seconds)


def bench_openspiel_documented(players: int, seconds: float) -> float:
    import pyspiel

    game_def = pyspiel.load_game("crazy_eights", {"players": players})
    random.seed(0)
    np.random.seed(0)

    def game(_: int) -> int:
        state = game_def.new_initial_state()
        n = 0
        while not state.is_terminal():
            if state.is_chance_node():
                action_list, prob_list = zip(*state.chance_outcomes(), strict=True)
                state.apply_action(np.random.choice(action_list, p=prob_list))
            else:
                state.observation_tensor()
                state.apply_action(random.choice(state.legal_actions(state.current_player())))
                n += 1
        return n

    return timed(game, seconds)


def bench_openspiel_picker(players: int, seconds: float) -> float:
    import pyspiel

    game_def = pyspiel.load_game("crazy_eights", {"players": players})
    p = Picker(0)

    def game(_: int) -> int:
        state = game_def.new_initial_state()
        n = 0
        while not state.is_terminal():
            if state.is_chance_node():  # crazy_eights deals uniformly: pick an outcome
                state.apply_action(p.pick(state.chance_outcomes())[0])
            else:
                state.observation_tensor()
                state.apply_action(p.pick(state.legal_actions()))
                n += 1
        return n

    return timed(game, seconds)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float_in(0.01, None, "--seconds"), default=0.5, help="time per measurement")
    ap.add_argument(
        "--repeats", type=int_in(1, None, "--repeats"), default=12, help="measurements per cell (the median is printed)"
    )
    ap.add_argument("--players", type=players_type, nargs="+", default=[2, 4], help="table sizes")
    ap.add_argument("--no-openspiel", action="store_true", help="skip the OpenSpiel rows")
    args = ap.parse_args(argv)
    pin_to_one_core()
    print_machine(__file__, argv)  # once pinned: the one core it measures on

    rows: list[tuple[str, Callable[[int, float], float]]] = [
        ("engine (legal_actions + step)", bench_engine),
        ("aec, as PettingZoo documents it", bench_aec_documented),
        ("aec, one picker", bench_aec_picker),
        ("gym Llama-v0 (opponents counted)", bench_gym),
    ]
    if not args.no_openspiel:
        try:
            import pyspiel  # noqa: F401
        except ImportError:
            print("open_spiel is not installed (pip install open_spiel): skipping the OpenSpiel rows\n")
        else:
            rows += [
                ("OpenSpiel crazy_eights, as documented", bench_openspiel_documented),
                ("OpenSpiel crazy_eights, one picker", bench_openspiel_picker),
            ]
    print(
        f"decisions per second, one core, random legal play; median of {args.repeats} interleaved runs "
        f"of {args.seconds:g} s per cell"
    )
    runs: dict[tuple[str, int], list[float]] = {(name, n): [] for name, _ in rows for n in args.players}
    # each of our AEC rows is measured right before its OpenSpiel counterpart
    partner = {
        "aec, as PettingZoo documents it": "OpenSpiel crazy_eights, as documented",
        "aec, one picker": "OpenSpiel crazy_eights, one picker",
    }
    order: list[tuple[str, Callable[[int, float], float]]] = []
    fns = dict(rows)
    for name, fn in rows:
        if name in partner.values():
            continue
        order.append((name, fn))
        if partner.get(name) in fns:
            order.append((partner[name], fns[partner[name]]))
    for _ in range(args.repeats):
        for n in args.players:
            for name, fn in order:
                runs[(name, n)].append(fn(n, args.seconds))
    print(f"{'':<40}" + "".join(f"{f'{n} players':>14}" for n in args.players))
    results: dict[str, list[float]] = {}
    for name, _ in rows:
        results[name] = [float(np.median(runs[(name, n)])) for n in args.players]
        print(f"{name:<40}" + "".join(f"{r:>14,.0f}" for r in results[name]))
    pairs = [
        ("aec, as PettingZoo documents it", "OpenSpiel crazy_eights, as documented", "as each documents it"),
        ("aec, one picker", "OpenSpiel crazy_eights, one picker", "one picker"),
    ]
    for ours, theirs, label in pairs:
        if ours in results and theirs in results:
            cells = []
            for n in args.players:
                ratios = [a / b for a, b in zip(runs[(ours, n)], runs[(theirs, n)], strict=True)]
                ahead = sum(r > 1.0 for r in ratios)
                cells.append(f"{np.median(ratios):.2f}x [{min(ratios):.2f}-{max(ratios):.2f}] {ahead}/{len(ratios)}")
            print(f"{'aec / OpenSpiel, ' + label:<40}" + "".join(f"{c:>28}" for c in cells))


if __name__ == "__main__":
    main()
