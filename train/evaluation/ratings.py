"""Plackett-Luce ratings from finished games, in one place: tournaments
(:mod:`train.evaluation.tournament`) and the web app's game history
(:mod:`train.play.history`) rate on the same scale.

A game is the participant at each seat and each seat's final score. Every seat is its
own team, ranked by final score (lower is better, ties equal). Two ways to rate, for two
kinds of participant:

* **People learn** (the web history): :class:`Rater`, openskill's Plackett-Luce kept up
  to date game by game, with its default dynamics (a skill may change, so recent games
  weigh more). ``openskill`` is imported when a :class:`Rater` is made, so modules that
  only import this one work without it.
* **Agents do not change** (tournaments): :func:`fit_ratings`, the same model fitted to
  all the games at once, so every game counts the same and their order does not matter.
  Rated one by one, even without dynamics, the games' order swung the gap between the
  leaders of a 12,000-game tournament by half a point and reordered its top five
  (CHANGELOG.md, "Tournament ratings fitted to all games at once", has the measurement).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import numpy as np

__all__ = ["Rater", "Rating", "fit_ratings", "MU", "SIGMA", "BETA"]

MU = 25.0
"""A new participant's ``mu``: openskill's default, so both ways of rating share its scale."""
SIGMA = MU / 3
"""A new participant's ``sigma`` (openskill's default, 25 / 3): how unsure a first skill is."""
BETA = MU / 6
"""The spread of one game's performance around a skill (openskill's default, 25 / 6)."""

K = TypeVar("K", bound=Hashable)


@dataclass
class Rating:
    """A rating on openskill's scale: ``mu`` and ``sigma``; ``ordinal`` = mu - 3 sigma ranks them."""

    mu: float
    """The skill's most likely value (a new participant's is :data:`MU`)."""
    sigma: float
    """How unsure ``mu`` is: it shrinks as games are played."""
    ordinal: float
    """``mu - 3 * sigma``: a skill the participant very likely has at least; tables rank by it."""


class Rater(Generic[K]):
    """Openskill Plackett-Luce ratings kept up to date game by game (:meth:`rate`).

    ``participants`` start with the model's default rating even if they never play
    (:meth:`ratings` lists them first, in the given order, then the others as they first
    sit down). Building a rater imports ``openskill``, so a caller that makes one before
    it plays its games fails early when openskill is missing.

    Its dynamics (openskill's default ``tau``) let a skill change between games, as a
    person's does; fixed agents are rated by :func:`fit_ratings` instead.
    """

    def __init__(self, participants: Iterable[K] = ()) -> None:
        from openskill.models import PlackettLuce

        self._model = PlackettLuce(mu=MU, sigma=SIGMA, beta=BETA)
        self._current: dict[K, Any] = {key: self._model.rating() for key in participants}

    def rate(self, seated: Sequence[K], scores: Sequence[float]) -> None:
        """Apply one game: the participant at each seat and that seat's final score.

        Every seat is its own team, ranked by score (lower is better, ties equal). A
        participant at several seats (three copies of one agent against a person) is
        rated at each seat from the rating it came with and then takes the mean of its
        seats' new ``mu`` and ``sigma``: each seat is one observation, yet one game moves
        it once, and the places its copies take among themselves cancel out. Raises
        ``ValueError`` for seats and scores that differ in number, or a score that is no
        finite number (a string, ``None`` or NaN), as :func:`fit_ratings` does.
        """
        _check_game(seated, scores)  # openskill took '5' and failed on a NaN deep inside
        model, current = self._model, self._current
        for key in seated:
            if key not in current:
                current[key] = model.rating()
        teams, seen = [], set()
        for key in seated:
            r = current[key]
            # a copy for each further seat: openskill merges a rating object that
            # appears in several teams into one player (its own rule, not the mean here)
            teams.append([r if key not in seen else model.rating(mu=r.mu, sigma=r.sigma)])
            seen.add(key)
        new = model.rate(teams, ranks=[float(s) for s in scores])
        seats_of: dict[K, list[Any]] = {}
        for key, team in zip(seated, new, strict=True):
            seats_of.setdefault(key, []).append(team[0])
        for key, rated in seats_of.items():
            if len(rated) == 1:
                current[key] = rated[0]
            else:
                current[key] = model.rating(
                    mu=sum(r.mu for r in rated) / len(rated), sigma=sum(r.sigma for r in rated) / len(rated)
                )

    def ratings(self) -> dict[K, Rating]:
        """Every participant's rating now."""
        return {key: Rating(float(r.mu), float(r.sigma), float(r.ordinal())) for key, r in self._current.items()}


def fit_ratings(
    games: Iterable[tuple[Sequence[K], Sequence[float]]], participants: Iterable[K] = ()
) -> dict[K, Rating]:
    """The ratings of fixed participants, fitted to all ``games`` at once: each game the
    participant at each seat and that seat's final score, as :meth:`Rater.rate` takes it.

    The model is openskill's Plackett-Luce for well-measured skills: in a game of ``n``
    seats, of the seats not yet placed the best-placed one is seat ``i`` with a
    probability proportional to ``exp(mu_i / (BETA * sqrt(n)))``; seats tied on score are
    placed together (Breslow's rule), and the last place says nothing more, so neither
    does a tie for it (a drawn 2-player game leaves both ratings where they were). ``mu`` is the
    most probable skill given the games and openskill's prior (``MU``, ``SIGMA``: an
    agent that never wins keeps a finite rating), found by Newton's method on this
    concave problem. The games tell only differences of skill, so the mean of ``mu`` stays
    at ``MU``, and ``sigma`` is the standard deviation of a skill about that mean, from the
    curvature at the maximum. ``ordinal`` = mu - 3 sigma, as openskill's. A participant at
    several seats of a game plays each with the same skill.

    ``participants`` are listed first, in the given order (one that never plays keeps
    ``mu`` = ``MU``, and its ``sigma`` is the prior's about the pool's mean: less than
    ``SIGMA``), then the others as they first sit down. Raises ``ValueError``, naming the
    game by its place in ``games``, for a game whose seats and scores differ in number or
    whose scores are not finite numbers (a string, ``None`` or NaN).
    """
    index: dict[K, int] = {key: i for i, key in enumerate(dict.fromkeys(participants))}
    by_size: dict[int, tuple[list[list[int]], list[list[float]]]] = {}
    for k, (seated, scores) in enumerate(games):
        _check_game(seated, scores, f"game {k}: ")
        seats, score_rows = by_size.setdefault(len(seated), ([], []))
        seats.append([index.setdefault(key, len(index)) for key in seated])
        score_rows.append([float(x) for x in scores])
    m = len(index)
    if m == 0:
        return {}
    tables = [_Tables(np.array(seats, dtype=np.int64), np.array(rows)) for seats, rows in by_size.values() if seats]
    mu = np.full(m, MU)
    value, grad, hess = _posterior(mu, tables)
    for _ in range(100):
        step = np.linalg.solve(hess, grad)  # the Newton step towards the maximum
        # the Newton decrement squared: twice what the full step promises to gain
        gain = -float(grad @ step)
        shrink = 1.0
        while shrink > 1e-6:
            trial = mu - shrink * step
            trial_value, trial_grad, trial_hess = _posterior(trial, tables)
            if trial_value >= value - 1e-12 * abs(value):
                break
            shrink /= 2
        mu, value, grad, hess = trial, trial_value, trial_grad, trial_hess
        # a step that promised next to nothing lands on the maximum (Newton's convergence
        # is quadratic): stop. Not on the step's size: along the skills' mean, which only
        # the prior holds, the rounding of 100,000 games' gradient kept it above 1e-10,
        # and the fit ran all 100 steps
        if gain <= _GAIN_TOLERANCE * (1.0 + abs(value)):
            break
    # the games fix only differences of skill (the prior holds the mean at MU): sigma is
    # each skill's spread about the participants' mean, not the mean's own uncertainty
    centre = np.eye(m) - 1.0 / m
    sigma = np.sqrt(np.maximum(np.diag(centre @ np.linalg.inv(-hess) @ centre), 0.0))
    return {key: Rating(float(mu[i]), float(sigma[i]), float(mu[i] - 3 * sigma[i])) for key, i in index.items()}


def _check_game(seated: Sequence[object], scores: Sequence[object], where: str = "") -> None:
    """A ``ValueError``, its message starting with ``where``, for a game whose seats and
    scores differ in number or whose scores are not finite numbers."""
    if len(seated) != len(scores):
        raise ValueError(f"{where}a game needs one score per seat: {len(seated)} seats, {len(scores)} scores")
    if not all(_finite_number(x) for x in scores):
        raise ValueError(f"{where}scores must be finite numbers, got {list(scores)}")


def _finite_number(x: object) -> bool:
    """Whether ``x`` is a finite real number (numpy's too), not a string such as ``'1'``
    that ``float`` would read, nor ``None``."""
    return isinstance(x, numbers.Real) and math.isfinite(x)


_GAIN_TOLERANCE = 1e-12
"""Where :func:`fit_ratings` stops: after a Newton step that promised to raise the
log-posterior by less than this share of its size."""


class _Tables:
    """The games of one table size: who sat at each seat ``(G, n)``, each seat's place as
    a level (0 for the lowest score, tied seats share one), each game's last level and
    each seat's game (the row of ``seats.ravel()``)."""

    def __init__(self, seats: np.ndarray, scores: np.ndarray) -> None:
        self.seats = seats
        g, n = scores.shape
        same = scores[:, :, None] == scores[:, None, :]
        first = ~(same & np.tri(n, k=-1, dtype=bool)).any(axis=2)  # a score's first seat in its row
        # the number of distinct scores below each seat's: dense ranks, ties equal
        self.levels = ((scores[:, None, :] < scores[:, :, None]) & first[:, None, :]).sum(axis=2)
        self.last = self.levels.max(axis=1)
        self.rows = np.repeat(np.arange(g), n)


def _posterior(mu: np.ndarray, tables: list[_Tables]) -> tuple[float, np.ndarray, np.ndarray]:
    """The log-posterior of the skills ``mu`` given the games (up to a constant), its
    gradient and its Hessian."""
    m = len(mu)
    value = float(-0.5 * (((mu - MU) / SIGMA) ** 2).sum())
    grad = -(mu - MU) / SIGMA**2
    hess = -np.eye(m) / SIGMA**2
    for t in tables:
        g, n = t.seats.shape
        scale = BETA * math.sqrt(n)
        strength = mu[t.seats] / scale  # (G, n)
        for k in range(n - 1):
            live = k < t.last  # level k exists and is not the last place
            if not live.any():
                break
            risk = (t.levels >= k) & live[:, None]
            chosen = (t.levels == k) & live[:, None]
            d = chosen.sum(axis=1)
            top = np.where(live, np.where(risk, strength, -np.inf).max(axis=1), 0.0)  # for exp's range
            w = np.where(risk, np.exp(strength - top[:, None]), 0.0)
            total = np.where(live, w.sum(axis=1), 1.0)
            p = w / total[:, None]
            value += float((np.where(chosen, strength, 0.0).sum(axis=1) - d * (np.log(total) + top))[live].sum())
            per_seat = (chosen - d[:, None] * p) / scale
            np.add.at(grad, t.seats.ravel(), per_seat.ravel())
            by_agent = np.zeros((g, m))
            np.add.at(by_agent, (t.rows, t.seats.ravel()), p.ravel())
            hess -= (np.diag((d[:, None] * by_agent).sum(axis=0)) - (by_agent.T * d) @ by_agent) / scale**2
    return value, grad, hess
