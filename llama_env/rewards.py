"""Rewards, derived from engine results in one place.

``"game"`` (the default): nothing until the game ends; then each winner gets
``1 / number_of_winners`` and everybody else 0. The expected return of a seat is then
exactly its expected win share, the number evaluation reports, which is why it is
the default: it rewards winning, not merely scoring few points.

``"round"``: after every round, minus the points the seat took plus the marker it gave
back, i.e. the negative change of its score. Dense and lower-variance, but it optimises
points per round rather than winning.

``"shaped"``: the game reward plus potential-based shaping (Ng, Harada and Russell,
1999). The potential of a seat is its lead over the table, ``SHAPING_PER_POINT`` times
(the other seats' mean score minus its own); after every round a seat gets the change
of its potential, and when the game ends its win share minus its last potential. A
seat's rewards over a whole game add up to exactly its ``"game"`` reward (every
potential starts at 0), so the return still measures winning, but a round that
widens or narrows the lead is credited when it happens instead of at the game's end.

:func:`rewards_for` gives the rewards of one round's result; :func:`batch_rewards` the
same numbers for many games of a batch (:class:`llama_env.batch.BatchGame`) at once, from
their scores around a step: every mode is a function of the score changes and, at a
game's end, of the final scores.

An illegal move that ends an episode (the Gymnasium env's ``illegal_action="terminate"``,
:func:`llama_env.env`'s PettingZoo wrapper, the RLlib env) must cost more than any game
played to its end, or a learner meets a shortcut: a round-mode seat that expects to lose
about 35 points by playing on learns to break a rule on its first move for -1, and a
shaped-mode seat far ahead to cash its lead and the penalty on top. So such an episode
adds up to :func:`illegal_action_return`, below every finished game's return in its mode,
and the last reward is that minus what the episode paid before
(:func:`illegal_action_reward`).
"""

from __future__ import annotations

import numpy as np

from llama_env.engine import MAX_PENALTY, RoundResult, winners

REWARD_MODES = ("game", "round", "shaped")
"""The ``reward=`` modes of both environments and of training; another is a ``ValueError``."""
DEFAULT_REWARD = "game"
"""The win share at the game's end: what evaluation measures, so what a policy should learn."""
SHAPING_PER_POINT = 0.01
"""Win share per point of lead in ``"shaped"``: heuristic self-play wins about 0.012 more
per point of lead over the table's mean score at 2, 4 and 6 players (a linear fit at
every round's start, 2,000 games per size)."""
ILLEGAL_ACTION_REWARD = -1.0
"""What an episode that an illegal move ends adds up to in ``"game"`` and ``"shaped"``:
less than any finished game's return there (a win share, 0 to 1). In ``"game"`` it is the
illegal move's own reward (nothing was paid before); ``"round"`` needs a lower total.
Read an episode's total with :func:`illegal_action_return` and the illegal step's reward
with :func:`illegal_action_reward` (this total minus what was paid before): this
constant is neither in ``"round"``, nor the step's reward in ``"shaped"``. Once what
every illegal move paid, it is still importable from :mod:`llama_env.gym_env` and
:mod:`llama_env.aec_env` for code that imports it from there, but no longer listed in
their ``__all__``."""


def validate_reward_mode(mode: object) -> str:
    """Return ``mode`` if it names a reward mode, else raise ``ValueError`` listing them."""
    if not isinstance(mode, str) or mode not in REWARD_MODES:
        raise ValueError(f"reward must be one of {', '.join(map(repr, REWARD_MODES))}, got {mode!r}")
    return mode


def game_rewards(scores: list[int] | tuple[int, ...]) -> list[float]:
    """Shared victory: each lowest score gets 1/k for k tied winners, the others 0."""
    best = winners(list(scores))
    share = 1.0 / len(best)
    out = [0.0] * len(scores)
    for seat in best:
        out[seat] = share
    return out


def round_rewards(result: RoundResult) -> list[float]:
    """Minus the points taken plus the marker given back, for every seat."""
    return [float(-c) for c in result.score_changes]


def lead_potentials(scores: list[int] | tuple[int, ...]) -> list[float]:
    """Each seat's shaping potential: ``SHAPING_PER_POINT`` x (the others' mean score
    minus its own)."""
    total, others = sum(scores), len(scores) - 1
    return [SHAPING_PER_POINT * ((total - s) / others - s) for s in scores]


def shaped_rewards(result: RoundResult) -> list[float]:
    """The change of every seat's lead potential in this round; when the game ends, plus
    its win share minus its final potential (so a game's rewards sum to its win share)."""
    changes = result.score_changes
    rewards = lead_potentials(changes)  # the potential is linear in the scores
    if result.game_over:
        final = lead_potentials(result.scores)
        share = game_rewards(result.scores)
        rewards = [r + g - f for r, g, f in zip(rewards, share, final, strict=True)]
    return rewards


def illegal_action_return(mode: str, end_score: int) -> float:
    """What an episode that an illegal move ends adds up to under ``mode``: less than any
    game played to its end. ``"game"`` and ``"shaped"``: :data:`ILLEGAL_ACTION_REWARD`
    (-1; a finished game pays a win share, 0 to 1). ``"round"``: ``-(end_score +
    MAX_PENALTY)``; a finished game pays minus the final score, which is at most
    ``end_score - 1 + MAX_PENALTY`` (every score was below ``end_score`` before the last
    round, rule 12, and a round costs at most ``MAX_PENALTY`` = 31, rule 9)."""
    if mode == "round":
        return float(-(end_score + MAX_PENALTY))
    validate_reward_mode(mode)
    return ILLEGAL_ACTION_REWARD


def illegal_action_reward(mode: str, end_score: int, paid: float) -> float:
    """The reward of the illegal move that ends an episode in which the offending seat was
    ``paid`` so far (every reward it got in this game, those paid with this step too): its
    episode then adds up to :func:`illegal_action_return`."""
    return illegal_action_return(mode, end_score) - paid


def rewards_for(result: RoundResult, mode: str) -> list[float]:
    """The rewards a round's result gives each seat under ``mode``."""
    if mode == "round":
        return round_rewards(result)
    if mode == "shaped":
        return shaped_rewards(result)
    validate_reward_mode(mode)  # "Round" or a typo was the game reward, silently
    if result.game_over:
        return game_rewards(result.scores)
    return [0.0] * len(result.scores)


def batch_rewards(mode: str, before: np.ndarray, after: np.ndarray, over: np.ndarray) -> np.ndarray:
    """Every seat's reward under ``mode`` in many games over one step (or several): the
    scores ``before`` and ``after`` it, ``(N, players)``, and which games ended in it,
    ``over`` ``(N,)`` (their ``after`` being the final scores). Row ``i`` is
    :func:`rewards_for` of the round that ended in game ``i`` (the same floats), zeros
    where none did; over several rounds, their sum (up to rounding in ``"shaped"``).
    ``(N, players)`` float64."""
    after = np.asarray(after)
    over = np.asarray(over, dtype=bool)
    changes = after - np.asarray(before)
    if mode == "round":
        return -changes.astype(np.float64)
    if mode != "shaped":
        validate_reward_mode(mode)
    out = _batch_potentials(changes) if mode == "shaped" else np.zeros(changes.shape, dtype=np.float64)
    if over.any():
        final = after[over]
        share = _batch_game_rewards(final)
        out[over] = out[over] + share - _batch_potentials(final) if mode == "shaped" else share
    return out


def _batch_game_rewards(scores: np.ndarray) -> np.ndarray:
    """:func:`game_rewards` of every row."""
    won = scores == scores.min(axis=1, keepdims=True)
    return np.where(won, 1.0 / won.sum(axis=1, keepdims=True), 0.0)


def _batch_potentials(scores: np.ndarray) -> np.ndarray:
    """:func:`lead_potentials` of every row."""
    total, others = scores.sum(axis=1, keepdims=True), scores.shape[1] - 1
    return SHAPING_PER_POINT * ((total - scores) / others - scores)
