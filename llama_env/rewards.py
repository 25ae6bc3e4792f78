"""Rewards, derived from engine results in one place.

``"game"`` (the default): nothing until the game ends; then each winner gets
``1 / number_of_winners`` and everybody else 0. The expected return of a seat is then
exactly its expected win share, the number evaluation reports, which is why it is
the default: it rewards winning, not merely scoring few points.

``"round"``: after every round, minus the points the seat took plus the marker it gave
back, i.e. the negative change of its score. Dense and lower-variance, but it optimises
points per round rather than winning.
"""

from __future__ import annotations

from llama_env.engine import RoundResult, winners

REWARD_MODES = ("game", "round")
DEFAULT_REWARD = "game"


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


def rewards_for(result: RoundResult, mode: str) -> list[float]:
    """The rewards a round's result gives each seat under ``mode``."""
    if mode == "round":
        return round_rewards(result)
    if result.game_over:
        return game_rewards(result.scores)
    return [0.0] * len(result.scores)
