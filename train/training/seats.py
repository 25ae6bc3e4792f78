"""Who sits where in a training game: the one routine both backends use.

A training game has one *learner* seat; every other seat draws a *kind* from the
opponent mix (``config.opponents``), independently, in turn order from the learner's
left. A kind is a registered agent name (``"heuristic"``...), ``"self"`` (the policy
being trained) or ``"past"`` (a snapshot of it from earlier in the run, drawn from the
pool; while the pool is empty, ``"self"``). :meth:`OpponentMix.draw` resolves ``"past"``
to ``"past#<i>"``, the pool entry, so a seating names exactly who plays.

What ``"self"`` means is the same on both backends: the current policy. How it plays
differs only in the machinery: the sb3 backend plays a frozen numpy copy refreshed at
every rollout (PPO changes the policy only between rollouts); the rllib backend makes
the seat another learning seat of the one shared policy.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from llama_env.agent import RESERVED_NAMES

__all__ = ["OpponentMix", "Seating", "POLICY_KINDS", "past_index", "past_never_plays"]

POLICY_KINDS = RESERVED_NAMES
"""Opponent kinds played by the policy being trained (or a snapshot of it) rather than a
registered agent: ``"self"`` and ``"past"``, names the agent registry keeps from agents
(:data:`llama_env.agent.RESERVED_NAMES`)."""


@dataclass(frozen=True, slots=True)
class Seating:
    """One game's table: its size, the learner's seat and every seat's kind (``None``
    at the learner's seat; ``"self"``, ``"past#<i>"`` or an agent name elsewhere)."""

    num_players: int
    learner: int
    kinds: tuple[str | None, ...]

    def opponents(self) -> list[str]:
        """The other seats' kinds in turn order from the learner's left."""
        n = self.num_players
        return [self.kinds[(self.learner + 1 + j) % n] or "" for j in range(n - 1)]


def past_index(kind: str) -> int | None:
    """The pool entry of a ``"past#<i>"`` kind, else ``None``."""
    return int(kind[5:]) if kind.startswith("past#") else None


class OpponentMix:
    """Draws seatings: a table size from ``players`` (uniformly; repeat a size to weight
    it), the learner's seat (uniformly, or ``fixed_seat``), then each other seat's kind
    from ``mix`` (kind -> weight, weights >= 0 with a positive sum)."""

    def __init__(self, mix: Mapping[str, float], players: Sequence[int], fixed_seat: int | None = None) -> None:
        if not mix or any(not (w >= 0 and math.isfinite(w)) for w in mix.values()) or sum(mix.values()) <= 0:
            raise ValueError(f"opponents must map kinds to non-negative weights with a positive sum, got {dict(mix)!r}")
        if not players:
            raise ValueError("players must name at least one table size")
        self.players = [int(p) for p in players]
        self.kinds = [k for k, w in mix.items() if w > 0]
        weights = np.array([mix[k] for k in self.kinds], dtype=np.float64)
        self.p = weights / weights.sum()
        self.fixed_seat = fixed_seat

    @property
    def baselines(self) -> list[str]:
        """The kinds that are registered agents."""
        return [k for k in self.kinds if k not in POLICY_KINDS]

    def draw(self, rng: np.random.Generator, past_pool: int, num_players: int | None = None) -> Seating:
        """One game's seating; ``past_pool`` is the size of the pool ``"past"`` draws from.
        ``num_players`` fixes the table size instead of drawing it (a trainer whose games
        keep their size, one batch per size, draws only the seats)."""
        players = self.players
        if num_players is not None:
            n = num_players
        else:
            n = players[int(rng.integers(len(players)))] if len(players) > 1 else players[0]
        seat = self.fixed_seat if self.fixed_seat is not None else int(rng.integers(n))
        kinds: list[str | None] = [None] * n
        picks = rng.choice(len(self.kinds), size=n - 1, p=self.p) if len(self.kinds) > 1 else [0] * (n - 1)
        for j, k in enumerate(picks):
            kind = self.kinds[int(k)]
            if kind == "past":
                kind = f"past#{int(rng.integers(past_pool))}" if past_pool else "self"
            kinds[(seat + 1 + j) % n] = kind
        return Seating(n, seat, tuple(kinds))


def past_never_plays(
    opponents: Mapping[str, float], past_every: int, total_timesteps: int, start: int, pool: int
) -> str | None:
    """The warning for a session whose ``"past"`` opponents would play as ``"self"`` from
    its start to its end: the mix holds ``past``, the pool holds ``pool`` snapshots at the
    session's ``start`` step (none on a new run), and the first snapshot, at the next
    multiple of ``past_every``, comes no sooner than ``total_timesteps``. ``None`` otherwise."""
    from train.training.evaluation import next_multiple  # (the env workers import this module: kept light)

    if not opponents.get("past") or pool or not past_every:
        return None
    first = next_multiple(start, past_every)
    if first < total_timesteps:
        return None
    return (
        f"opponents: 'past' plays as 'self' until the first snapshot at step {first:,} (past_every "
        f"{past_every:,}), and this run ends at {total_timesteps:,}: give a smaller past_every, or drop 'past'"
    )
