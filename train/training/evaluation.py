"""Evaluation during training, for every backend: the policy (as a numpy
:class:`agents.ppo.Actor`) against ``config.eval_opponent`` at each size of
``config.eval_players``, on the run's rules; one row of ``eval.jsonl`` per evaluation,
and whether it reaches ``config.stop_win_share`` (:func:`target_reached`), where a run
stops early (:func:`stops_early`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agents.ppo import Actor, PPOAgent
from llama_env.engine import Rules
from train.evaluation.evaluate import evaluate

if TYPE_CHECKING:
    from train.training.config import TrainConfig

__all__ = ["evaluate_vs", "evaluation_row", "evaluation_message", "next_multiple", "stops_early", "target_reached"]


def evaluate_vs(actor: Actor, opponent: str, rules: Rules, games: int, seed: int = 0) -> tuple[float, float, float]:
    """Win share and its 95% interval (low, high) of ``actor`` (argmax) against
    ``rules.num_players - 1`` copies of ``opponent``, measured by
    :func:`train.evaluation.evaluate` (seats rotated, in this process)."""
    agent = PPOAgent.from_actor(actor)
    result = evaluate([agent] + [opponent] * (rules.num_players - 1), games, seed=seed + 777, workers=1, rules=rules)
    stats = result.agents[0]
    return stats.win_share, stats.ci_low, stats.ci_high


def evaluation_row(actor: Actor, config: TrainConfig, steps: int) -> dict[str, Any]:
    """One periodic evaluation (a line of ``eval.jsonl``): the argmax policy against
    ``config.eval_opponent`` at each table size of ``config.eval_players``: the win share,
    the half-width of its 95% interval (``ci95_<n>p``) and the interval's lower end
    (``ci_low_<n>p``)."""
    row: dict[str, Any] = {"timesteps": steps, "opponent": config.eval_opponent}
    for n in config.eval_players:
        share, low, high = evaluate_vs(actor, config.eval_opponent, config.rules_at(n), config.eval_games, config.seed)
        row[f"win_share_{n}p"] = share
        row[f"ci95_{n}p"] = (high - low) / 2
        row[f"ci_low_{n}p"] = low
    return row


def target_reached(config: TrainConfig, row: dict[str, Any]) -> bool:
    """Whether an evaluation row shows the policy beating ``config.stop_win_share``: the
    lower end of the 95% interval at or above it at every table size evaluated (never
    when ``stop_win_share`` is 0)."""
    target = config.stop_win_share
    return target > 0 and all(row[f"ci_low_{n}p"] >= target for n in config.eval_players)


def stops_early(config: TrainConfig, row: dict[str, Any]) -> bool:
    """Whether an evaluation row stops training before ``config.total_timesteps``: it
    reached the target (:func:`target_reached`) with steps of the budget left. Both
    backends stop when it does; the evaluation at the end of the budget stops nothing
    (a run that trained its whole budget did not stop early)."""
    return row["timesteps"] < config.total_timesteps and target_reached(config, row)


def evaluation_message(config: TrainConfig, row: dict[str, Any]) -> str:
    """The line shown for an evaluation row."""
    txt = ", ".join(f"{n}p {row[f'win_share_{n}p']:.3f}" for n in config.eval_players)
    reached = ""
    if target_reached(config, row):
        reached = f" (above {config.stop_win_share:g}{': stopping' if stops_early(config, row) else ''})"
    return f"[eval @ {row['timesteps']:,}] win share vs {config.eval_opponent}: {txt}{reached}"


def next_multiple(n: int, every: int) -> int:
    """The next step count after ``n`` at which something done ``every`` steps is due (0: never)."""
    return (n // every + 1) * every if every else 0
