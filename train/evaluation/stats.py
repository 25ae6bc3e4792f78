"""The statistics of evaluation: one confidence interval for the whole project.

A game's winners share the win (1/k each for k tied lowest scores). The 95% interval of
a win share (:func:`mean_ci`) is the Wilson score interval, which behaves well near 0
and 1, at an effective number of games that credits the smaller spread of shared wins:
the Wilson interval itself when every share is 0 or 1 (no ties), about the normal
approximation with the sample standard deviation away from 0 and 1. With duplicate
deals the games of one deal group are correlated, so the interval is computed from the
per-group means instead (one value per deal group). Training's periodic evaluation uses
the same code.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from numbers import Real
from typing import Any

import numpy as np

from llama_env._install import extra_named
from train.evaluation.runner import GameColumns

__all__ = ["Z95", "mean_ci", "AgentStats", "aggregate", "json_number", "pandas"]

Z95 = 1.959963984540054
"""The two-sided 95% normal quantile."""


def pandas() -> Any:
    """The ``pandas`` module, which the results' tables need (it comes with the
    ``notebooks`` extra); a :class:`~llama_env._install.MissingExtra` naming that extra if
    missing, as every missing optional package is (the command line tells them by it)."""
    why = (
        "the results' tables (to_dataframe and train.evaluation.analysis) need pandas, which is not "
        "installed; pandas alone will do, or the notebooks extra"
    )
    with extra_named("notebooks", lambda _package: why):
        import pandas as pd
    return pd


def json_number(value: Any) -> Any:
    """``value`` as JSON holds it: a float that is not finite (an undefined mean) is
    ``None``, which strict JSON writers and readers accept; anything else is kept."""
    if isinstance(value, (float, np.floating)):
        return float(value) if math.isfinite(value) else None
    return value


def mean_ci(values: np.ndarray, binary: bool = False) -> tuple[float, float, float]:
    """Mean and 95% interval of i.i.d. values in [0, 1] (win shares, or the per-deal
    means of duplicate deals).

    The Wilson score interval at the mean ``m`` of the ``n`` values, with ``n`` replaced
    by an effective size ``n_eff = n * p (1 - p) / v``, where ``p`` and ``v`` are the mean
    and variance of the values padded with ``z² / 2`` pseudo-values at 0 and ``z² / 2`` at
    1 (Agresti and Coull's padding, z = :data:`Z95`). The rule:

    * every value 0 or 1 (or ``binary``): ``n_eff = n``, Wilson's interval exactly;
    * values in [0, 1] vary at most as 0/1 values of the same mean do, so ``n_eff >= n``:
      a smaller spread (ties, per-deal means) narrows the interval, and away from 0 and
      1 it is about the normal interval with the sample standard deviation;
    * the padding keeps a spread that the sample barely shows from counting as none:
      one value throughout (every game a two-way tie, 0.5) gets an interval about as
      wide as Wilson's for all zeros, not a point, and one tie among zeros one no
      narrower than all zeros (the normal interval made it 2.6 times narrower).

    ``values`` are one-dimensional, each a number in [0, 1]: anything else (a score, a
    NaN, a string, a table of rows) is a ``ValueError`` naming the first such value, where
    it gave an interval that did not hold the mean (``[5, 7]``: 6.0 in [2.34, -4.71]).
    Numbers held as objects (a pandas ``object`` column) are read as numbers, and no
    values at all give ``(nan, nan, nan)``: no games, no mean.
    """
    x = _unit_values(values)
    n = x.size
    if n == 0:
        return (math.nan, math.nan, math.nan)
    mean = float(x.mean())
    size = float(n)
    if not binary and not np.all((x == 0) | (x == 1)):
        pad = Z95 * Z95 / 2  # pseudo-values at 0 and at 1 each
        p = (float(x.sum()) + pad) / (n + 2 * pad)
        v = (float(((x - p) ** 2).sum()) + pad * (p * p + (1 - p) * (1 - p))) / (n + 2 * pad)
        size = n * p * (1 - p) / v
    z2 = Z95 * Z95
    centre = (mean + z2 / (2 * size)) / (1 + z2 / size)
    half = Z95 * math.sqrt(mean * (1 - mean) / size + z2 / (4 * size * size)) / (1 + z2 / size)
    # at a mean of exactly 0 or 1 the bound is the mean itself (centre and half are
    # equal there), which rounding left a hair inside: 7e-18, 0.9999999999999999
    low = 0.0 if mean == 0.0 else max(0.0, centre - half)
    high = 1.0 if mean == 1.0 else min(1.0, centre + half)
    return (mean, low, high)


def _unit_values(values: Any) -> np.ndarray:
    """``values`` as a float array, checked as :func:`mean_ci` needs them (vectorised: it
    runs on every game of an evaluation)."""
    try:
        given = np.asarray(values)
    except ValueError:  # numpy: an inhomogeneous shape
        raise ValueError("values must be one number in [0, 1] per game or deal (1-D), got rows") from None
    if given.ndim != 1:
        raise ValueError(f"values must be one number in [0, 1] per game or deal (1-D), got shape {given.shape}")
    if given.dtype.kind not in "biuf":  # strings, None, objects: numpy read '1' as 1.0
        items = given.tolist() if isinstance(values, np.ndarray) else list(values)  # [1, '0'] became strings
        first = next((k for k, v in enumerate(items) if not isinstance(v, (Real, np.bool_))), None)
        if first is not None:
            raise ValueError(f"{_UNIT}, got {items[first]!r} at values[{first}]")
        given = np.array(items, dtype=np.float64)  # numbers in an object array (a pandas column, empty too)
    x = given.astype(np.float64, copy=False)
    if x.size and not (x.min() >= 0.0 and x.max() <= 1.0):  # NaN too: its min is NaN
        first = int((~((x >= 0.0) & (x <= 1.0))).argmax())
        raise ValueError(f"{_UNIT}, got {float(x[first])!r} at values[{first}]")
    return x


_UNIT = "values must be numbers in [0, 1] (win shares, or per-deal means)"


@dataclass
class AgentStats:
    """One agent's results in an evaluation."""

    name: str
    """The agent's display name."""
    win_share: float
    """Mean share of the win per game (ties shared 1/k)."""
    ci_low: float
    """The low end of the win share's 95% confidence interval."""
    ci_high: float
    """The high end of the win share's 95% confidence interval."""
    mean_score: float
    """Mean final score (lower is better)."""
    points_per_round: float
    """Mean score change per round (penalties minus returned markers)."""
    go_out_rate: float
    """Fraction of rounds this agent ended by playing its last card."""
    play_rate: float = math.nan
    """Fraction of this agent's decisions that played a card."""
    draw_rate: float = math.nan
    """Fraction of its decisions that drew a card."""
    quit_rate: float = math.nan
    """Fraction of its decisions that quit the round."""
    quit_penalty: float = math.nan
    """Mean hand penalty (points) it held when it quit."""


def aggregate(games: GameColumns, names: Sequence[str], duplicate: bool, group_size: int) -> dict[str, Any]:
    """Per-agent statistics and the per-game arrays of an evaluation's games (agents by
    list position; ``group_size`` games form a deal group when ``duplicate``)."""
    g, m = len(games), len(names)
    at = (np.arange(g)[:, None], games.seat_agents)  # each seat's column: its agent's
    shares = np.zeros((g, m))
    shares[at] = games.win_shares
    scores = np.zeros((g, m))
    scores[at] = games.scores
    outs = np.zeros((g, m))
    outs[at] = games.went_out
    rounds = games.rounds.astype(np.float64)
    decisions = games.decisions.astype(np.int64)
    actions = np.zeros((g, m, 3), dtype=np.int64)
    actions[at] = games.actions
    quit_pen = np.zeros((g, m))
    quit_pen[at] = games.quit_penalty
    total_rounds = float(rounds.sum())
    stats = []
    per_agent_actions = actions.sum(axis=0)
    for i, name in enumerate(names):
        plays, draws, quits = (int(x) for x in per_agent_actions[i])
        taken = max(1, plays + draws + quits)
        col = shares[:, i]
        values = col.reshape(-1, group_size).mean(axis=1) if duplicate else col
        mean, lo, hi = mean_ci(values)
        stats.append(
            AgentStats(
                name=name,
                win_share=mean,
                ci_low=lo,
                ci_high=hi,
                mean_score=float(scores[:, i].mean()),
                points_per_round=float(scores[:, i].sum() / total_rounds),
                go_out_rate=float(outs[:, i].sum() / total_rounds),
                play_rate=plays / taken,
                draw_rate=draws / taken,
                quit_rate=quits / taken,
                quit_penalty=float(quit_pen[:, i].sum() / quits) if quits else math.nan,
            )
        )
    return {
        "agents": stats,
        "rounds_per_game": float(rounds.mean()),
        "shares": shares,
        "scores": scores,
        "outs": outs,
        "rounds": rounds,
        "decisions": decisions,
        "actions": actions,
        "quit_penalty": quit_pen,
    }
