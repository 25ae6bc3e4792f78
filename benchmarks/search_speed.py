"""The search agent's cost: its rollouts in one batch against one engine game at a time, in one run.

    python benchmarks/search_speed.py [--games 200] [--batched-games 2000] [--rounds 2]
                                      [--players 4] [--worlds N] [--horizon N] [--mirror S]
                                      [--seed 0]

Three agents play ``--players`` games (4 unless given; 2, 4 or 6, the sizes the search has
networks for) against ``heuristic`` at every other seat on one CPU (the process pins
itself to one core and keeps numpy to one thread), with the search's settings at that
size unless given (:data:`agents.search.SETTINGS`):

* ``engine``: the search as it was before its rollouts were batched, rebuilt from the
  reference functions of ``agents.search`` (``belief_world`` draws a world at a time,
  ``searched_move`` plays each world and move in its own engine game; it mirrors no
  world, where ``--mirror`` sets the share the other two mirror);
* ``search``: ``agents.make("search")``, asked one move at a time (``llama-rl eval
  --no-batch``, terminal and web play): each searched move plays its worlds in one
  ``BatchGame``;
* ``search, batched``: the same agent in ``evaluate``'s batched games (``llama-rl eval``'s
  default), where one ``act_batch`` call searches every unsure decision of thousands of
  games together.

The first two play the same ``--games`` deals (``evaluate(..., batched=False)``, seed
``--seed``) in alternating rounds; every move of the searching seat is timed, so the
per-move p50/p99 of the searched moves come out too. The batched one plays
``--batched-games`` games. Printed: per game wall and CPU seconds (CPU is the process's own
time, steadier on a shared machine), the ratio to ``engine``, the searched moves and the
per-move times, and each agent's win share (same deals for the first two: similar, not
equal, since the batch deals the rounds after a searched one its own way).
"""

from __future__ import annotations

import argparse
import os
import time
from typing import Any

import numpy as np
from machine import pin_to_one_core, print_machine

from agents.base import BaseAgent, check_observation, legal_actions
from agents.search import MAX_WORLDS, SETTINGS, SearchAgent, belief_world, policy_move, searched_move
from llama_env.engine import DEFAULT_END_SCORE
from llama_env.observation import OBS_SIZE_V1, ObsView
from llama_env.worlds import public_state
from train.cli.common import MAX_GAMES, float_in, int_in, seed_type
from train.evaluation import evaluate


class EngineSearch(SearchAgent):
    """The search agent as it played before its rollouts were batched: its ``act`` of
    commit 9195c1e, on the reference functions it kept."""

    def act(self, observation: np.ndarray, action_mask: np.ndarray) -> int:
        check_observation(observation)
        legal = legal_actions(action_mask)
        if np.shape(observation) != (OBS_SIZE_V1,):
            return self.ppo.act(observation, action_mask)
        o = ObsView(observation, 1)
        actor = self.ppo.specialists.get(o.num_players)
        if actor is None or o.num_players not in self.networks or len(legal) == 1:
            return self.ppo.act(observation, action_mask)
        obs = np.asarray(observation, dtype=np.float32)
        settings = self.settings[o.num_players]
        best, confidence = policy_move(actor, obs, legal)
        if confidence >= settings.below or o.end_score != DEFAULT_END_SCORE:
            return best
        try:
            state = public_state(obs)
        except ValueError:
            return best
        self.searched += 1
        value_net, belief_net = self.networks[len(state.hand_sizes) + 1]
        worlds = (belief_world(obs, state, belief_net, self.rng) for _ in range(settings.worlds))
        pick = searched_move(worlds, 0, legal, actor, self.opponent, value_net)
        self.changed += pick != best
        return pick

    act_batch = None  # type: ignore[assignment]  # one move at a time, as before


class Timed(BaseAgent):
    """An agent's moves, each timed (wall seconds), the searched ones apart."""

    def __init__(self, agent: SearchAgent) -> None:
        super().__init__()
        self.agent = agent
        self.obs_version = agent.obs_version
        self.moves: list[float] = []
        self.searched: list[float] = []

    def reset(self, seed: int | None = None) -> None:
        self.agent.reset(seed)

    def act(self, observation: np.ndarray, action_mask: np.ndarray) -> int:
        before = self.agent.searched
        t = time.perf_counter()
        move = self.agent.act(observation, action_mask)
        took = time.perf_counter() - t
        self.moves.append(took)
        if self.agent.searched > before:
            self.searched.append(took)
        return move


def _play(agent: Any, players: int, games: int, seed: int, batched: bool) -> tuple[float, float, float]:
    """Wall and CPU seconds for ``games`` games against ``heuristic`` at the ``players - 1``
    other seats (the deals of ``seed``), and the agent's win share."""
    table = [agent] + ["heuristic"] * (players - 1)
    c, t = time.process_time(), time.perf_counter()
    result = evaluate(table, games, seed=seed, workers=1, batched=batched)
    return time.perf_counter() - t, time.process_time() - c, float(result[0].win_share)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument(
        "--games",
        type=int_in(1, MAX_GAMES, "--games"),
        default=200,
        help="games of each one-move-at-a-time agent, split evenly over the rounds",
    )
    p.add_argument(
        "--batched-games",
        type=int_in(0, MAX_GAMES, "--batched-games"),
        default=2000,
        help="games of the batched evaluation (0: none)",
    )
    p.add_argument(
        "--rounds", type=int_in(1, MAX_GAMES, "--rounds"), default=2, help="alternations of the first two agents"
    )
    p.add_argument("--players", type=int, choices=sorted(SETTINGS), default=4, help="the table size (default 4)")
    p.add_argument(
        "--worlds",
        type=int_in(1, MAX_WORLDS, "--worlds"),
        default=None,
        help="the search's worlds (default: the agent's)",
    )
    p.add_argument(
        "--horizon", type=int_in(0, None, "--horizon"), default=None, help="the search's horizon (default: the agent's)"
    )
    p.add_argument(
        "--mirror",
        type=float_in(0.0, 1.0, "--mirror"),
        default=None,
        help="the share of the search's worlds mirrored (default: the agent's; engine mirrors none)",
    )
    p.add_argument("--seed", type=seed_type, default=0)
    args = p.parse_args(argv)
    per = args.games // args.rounds
    if args.games % args.rounds:  # each round plays as many games: the rest would be dropped
        near = " or ".join(f"{k * args.rounds}" for k in (per, per + 1) if 0 < k * args.rounds <= MAX_GAMES)
        p.error(
            f"--games {args.games} cannot be split evenly over --rounds {args.rounds}: give a multiple of "
            f"{args.rounds} ({near})"
        )
    given: dict[str, Any] = {} if args.horizon is None else {"horizon": args.horizon}
    if args.worlds is not None:
        given["worlds"] = args.worlds
    if args.mirror is not None:
        given["mirror"] = args.mirror
    pin_to_one_core()
    print_machine(__file__, argv)  # once pinned: the one core it measures on
    try:
        from threadpoolctl import threadpool_limits

        threadpool_limits(limits=1)
    except ImportError:  # pragma: no cover - a dependency of the train extra
        pass

    agents = {
        "engine": Timed(EngineSearch(worlds=args.worlds)),
        "search": Timed(SearchAgent(**given)),
    }
    totals: dict[str, list[float]] = {name: [0.0, 0.0, 0.0] for name in agents}
    for r in range(args.rounds):
        for name, agent in agents.items():
            wall, cpu, win = _play(agent, args.players, per, args.seed + r, False)
            totals[name][0] += wall
            totals[name][1] += cpu
            totals[name][2] += win / args.rounds
            print(
                f"round {r + 1} {name:>6}: {per} games, {wall / per:.3f} s/game wall, {cpu / per:.3f} CPU, "
                f"load {_load():.1f}",
                flush=True,
            )
    base_wall, base_cpu = totals["engine"][0] / args.games, totals["engine"][1] / args.games
    used = agents["search"].agent.settings[args.players]
    print(
        f"\n{args.players} players, {args.games} games each against {args.players - 1} heuristic, {used.worlds} "
        f"worlds below {used.below:g}, horizon {used.horizon}, mirror {used.mirror:g}, seed {args.seed}"
    )
    print(
        f"{'agent':<17}{'wall s/game':>12}{'CPU s/game':>12}{'x (CPU)':>9}{'win share':>11}"
        f"{'searched/game':>15}{'move p50 ms':>13}{'p99 ms':>8}{'searched p50':>14}{'p99':>7}"
    )
    for name, agent in agents.items():
        wall, cpu, win = totals[name][0] / args.games, totals[name][1] / args.games, totals[name][2]
        moves, searched = np.array(agent.moves) * 1e3, np.array(agent.searched) * 1e3
        print(
            f"{name:<17}{wall:12.3f}{cpu:12.3f}{base_cpu / cpu:9.2f}{win:11.3f}{len(searched) / args.games:15.2f}"
            f"{_pct(moves, 50):13.1f}{_pct(moves, 99):8.1f}{_pct(searched, 50):14.1f}{_pct(searched, 99):7.1f}"
        )
    if args.batched_games:
        batched = SearchAgent(**given)
        wall, cpu, win = _play(batched, args.players, args.batched_games, args.seed, True)
        n = args.batched_games
        print(
            f"{'search, batched':<17}{wall / n:12.3f}{cpu / n:12.3f}{base_cpu / (cpu / n):9.2f}{win:11.3f}"
            f"{batched.searched / n:15.2f}   ({n} games at once)"
        )
    print(f"(engine: {base_wall:.3f} s/game wall; load {_load():.1f} at the end)")


def _pct(ms: np.ndarray, q: float) -> float:
    """The ``q``-th percentile of ``ms``, NaN where there is none (a few games may search no move)."""
    return float(np.percentile(ms, q)) if len(ms) else float("nan")


def _load() -> float:
    """The 1-minute load average (NaN where the system keeps none, as on Windows)."""
    return os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")


if __name__ == "__main__":
    main()
