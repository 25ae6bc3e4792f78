"""Openskill ratings from finished games, in one place: tournaments
(:mod:`train.evaluation.tournament`) and the web app's game history
(:mod:`train.play.history`) rate the same way.

A game is the participant at each seat and each seat's final score. Openskill's
Plackett-Luce model rates the games in the order given, every seat its own team, ranked
by final score (lower is better, ties equal). ``openskill`` is imported when a
:class:`Rater` is made, so modules that only import this one work without it.

Tournaments rate fixed agents, whose strength does not change from game to game, so
their rater has no drift (``drift=False``): every game counts the same and sigma keeps
shrinking as games are added. With openskill's default dynamics (its ``tau``, 25/300,
widens every sigma before each game; the web history keeps them, as people learn) sigma
settles near 1.7 however many games are played, and the last few hundred decide the
order (CHANGELOG.md, "Tournament ratings without drift", has the measurement).
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

__all__ = ["Rater", "Rating"]

K = TypeVar("K", bound=Hashable)


@dataclass
class Rating:
    """An openskill rating: ``mu`` and ``sigma``; ``ordinal`` = mu - 3 sigma ranks them."""

    mu: float
    sigma: float
    ordinal: float


class Rater(Generic[K]):
    """Openskill Plackett-Luce ratings kept up to date game by game (:meth:`rate`).

    ``participants`` start with the model's default rating even if they never play
    (:meth:`ratings` lists them first, in the given order, then the others as they first
    sit down). Building a rater imports ``openskill``, so a caller that makes one before
    it plays its games fails early when openskill is missing.

    ``drift``: openskill's default dynamics (a skill may change between games: people);
    ``False`` for fixed agents, whose every game then counts the same (see the module).
    """

    def __init__(self, participants: Iterable[K] = (), *, drift: bool = True) -> None:
        from openskill.models import PlackettLuce

        self._model = PlackettLuce() if drift else PlackettLuce(tau=0.0)
        self._current: dict[K, Any] = {key: self._model.rating() for key in participants}

    def rate(self, seated: Sequence[K], scores: Sequence[float]) -> None:
        """Apply one game: the participant at each seat and that seat's final score.

        Every seat is its own team, ranked by score (lower is better, ties equal). A
        participant at several seats (three copies of one agent against a person) is
        rated at each seat from the rating it came with and then takes the mean of its
        seats' new ``mu`` and ``sigma``: each seat is one observation, yet one game moves
        it once, and the places its copies take among themselves cancel out.
        """
        if len(seated) != len(scores):
            raise ValueError(f"a game needs one score per seat: {len(seated)} seats, {len(scores)} scores")
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
