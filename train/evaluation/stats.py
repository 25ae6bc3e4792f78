"""The statistics of evaluation: one confidence interval for the whole project.

A game's winners share the win (1/k each for k tied lowest scores). The 95% interval of
a win share (:func:`mean_ci`) is the normal approximation with the sample standard
deviation of the per-game shares; when every share is 0 or 1 (no ties) it is the
Wilson score interval, which behaves better near 0 and 1. With duplicate deals the games
of one deal group are correlated, so the interval is computed from the per-group means
instead (one value per deal group; Wilson's again when every group's mean is 0 or 1, as
when one agent wins every game, where the normal one would have no width). Training's
periodic evaluation uses the same code.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from llama_env._install import install_hint
from train.evaluation.runner import GameColumns

__all__ = ["Z95", "mean_ci", "AgentStats", "aggregate", "json_number", "pandas"]

Z95 = 1.959963984540054
"""The two-sided 95% normal quantile."""


def pandas() -> Any:
    """The ``pandas`` module, which the results' tables need (it comes with the
    ``notebooks`` extra); a ``ModuleNotFoundError`` that says how to get it if missing."""
    try:
        import pandas as pd
    except ModuleNotFoundError as exc:
        if exc.name != "pandas":
            raise
        raise ModuleNotFoundError(
            "the results' tables (to_dataframe and train.evaluation.analysis) need pandas: "
            f"{install_hint('notebooks')} (or pip install pandas)",
            name="pandas",
        ) from None
    return pd


def json_number(value: Any) -> Any:
    """``value`` as JSON holds it: a float that is not finite (an undefined mean) is
    ``None``, which strict JSON writers and readers accept; anything else is kept."""
    if isinstance(value, (float, np.floating)):
        return float(value) if math.isfinite(value) else None
    return value


def mean_ci(values: np.ndarray, binary: bool = False) -> tuple[float, float, float]:
    """Mean and 95% interval of i.i.d. values in [0, 1].

    Wilson score interval when ``binary`` (every value 0 or 1), else the normal
    approximation with the sample standard deviation (clipped to [0, 1]).
    """
    x = np.asarray(values, dtype=np.float64)
    m = x.size
    if m == 0:
        return (math.nan, math.nan, math.nan)
    mean = float(x.mean())
    if binary:
        z2 = Z95 * Z95
        centre = (mean + z2 / (2 * m)) / (1 + z2 / m)
        half = Z95 * math.sqrt(mean * (1 - mean) / m + z2 / (4 * m * m)) / (1 + z2 / m)
        return (mean, max(0.0, centre - half), min(1.0, centre + half))
    if m < 2:
        return (mean, 0.0, 1.0)
    half = Z95 * float(x.std(ddof=1)) / math.sqrt(m)
    return (mean, max(0.0, mean - half), min(1.0, mean + half))


@dataclass
class AgentStats:
    """One agent's results in an evaluation."""

    name: str
    win_share: float
    """Mean share of the win per game (ties shared 1/k)."""
    ci_low: float
    ci_high: float
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
        mean, lo, hi = mean_ci(values, binary=bool(np.all((values == 0) | (values == 1))))
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
