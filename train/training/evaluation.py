"""Evaluation during training, for every backend: the policy (as a numpy
:class:`agents.ppo.Actor`) against ``config.eval_opponent`` at each size of
``config.eval_players``, on the run's rules; one row of ``eval.jsonl`` per evaluation,
and whether it reaches ``config.stop_win_share`` (:func:`target_reached`), where a run
stops early (:func:`stops_early`).

Each evaluation plays deals of its own (:func:`eval_seed`): had every evaluation played
the same deals, a run stopping on its target would stop at the first evaluation whose one
sample of deals happened to read high, and the policy would then read lower on any other
deals. For the same reason a run stops only once a second set of fresh deals confirms the
target."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agents.ppo import Actor, PPOAgent
from llama_env.agent import seed_int
from llama_env.engine import Rules
from train.evaluation.evaluate import evaluate

if TYPE_CHECKING:
    from train.training.config import TrainConfig

__all__ = [
    "eval_seed",
    "evaluate_vs",
    "evaluation_row",
    "evaluation_message",
    "next_multiple",
    "stops_early",
    "target_reached",
    "win_share_reading",
]

# the evaluations' branch of a run's seed (a SeedSequence spawn key), hashed apart from the seeds of its games
_EVAL_KEY = 777


def eval_seed(seed: int, steps: int, confirming: bool = False) -> int:
    """The seed of the deals of a run's evaluation at ``steps`` (``seed``: the run's), or of
    the second set that confirms a target reached there (``confirming``): different for
    every step and run, the same when the run is made again. Derived with
    :func:`llama_env.agent.seed_int` (63-bit), as evaluation derives the seeds of its games'
    agents; the trainers seed their environments with 32 bits of ``SeedSequence``."""
    return seed_int(seed, _EVAL_KEY, steps, int(confirming))


def evaluate_vs(actor: Actor, opponent: str, rules: Rules, games: int, seed: int = 0) -> tuple[float, float, float]:
    """Win share and its 95% interval (low, high) of ``actor`` (argmax) against
    ``rules.num_players - 1`` copies of ``opponent`` on the deals of ``seed``, measured by
    :func:`train.evaluation.evaluate` (seats rotated, in this process)."""
    agent = PPOAgent.from_actor(actor)
    result = evaluate([agent] + [opponent] * (rules.num_players - 1), games, seed=seed, workers=1, rules=rules)
    stats = result.agents[0]
    return stats.win_share, stats.ci_low, stats.ci_high


def evaluation_row(actor: Actor, config: TrainConfig, steps: int) -> dict[str, Any]:
    """One periodic evaluation (a line of ``eval.jsonl``): the argmax policy against
    ``config.eval_opponent`` at each table size of ``config.eval_players``, on deals of
    this step's own (:func:`eval_seed`): the win share, the half-width of its 95% interval
    (``ci95_<n>p``) and the interval's lower end (``ci_low_<n>p``). Where that reaches
    ``config.stop_win_share`` with steps of the budget left, a second set of fresh deals,
    as many, confirms it or not (``confirm_win_share_<n>p``, ``confirm_ci_low_<n>p``)."""
    row: dict[str, Any] = {"timesteps": steps, "opponent": config.eval_opponent}

    def measure(confirming: bool) -> None:
        prefix = "confirm_" if confirming else ""
        seed = eval_seed(config.seed, steps, confirming)
        for n in config.eval_players:
            share, low, high = evaluate_vs(actor, config.eval_opponent, config.rules_at(n), config.eval_games, seed)
            row[f"{prefix}win_share_{n}p"] = share
            if not confirming:
                row[f"ci95_{n}p"] = (high - low) / 2
            row[f"{prefix}ci_low_{n}p"] = low

    measure(confirming=False)
    if _reached_early(config, row):
        measure(confirming=True)
    return row


def target_reached(config: TrainConfig, row: dict[str, Any]) -> bool:
    """Whether an evaluation row shows the policy beating ``config.stop_win_share``: the
    lower end of the 95% interval at or above it at every table size evaluated (never
    when ``stop_win_share`` is 0)."""
    return _beats_target(config, row)


def _beats_target(config: TrainConfig, row: dict[str, Any], prefix: str = "") -> bool:
    """Whether the set of deals under ``prefix`` in an evaluation row (``""``: the first,
    ``"confirm_"``: the second, where one was played) reads above ``config.stop_win_share``
    at every table size evaluated: the lower end of each interval at or above it."""
    target = config.stop_win_share
    return target > 0 and all(row.get(f"{prefix}ci_low_{n}p", -1.0) >= target for n in config.eval_players)


def _reached_early(config: TrainConfig, row: dict[str, Any]) -> bool:
    """Whether an evaluation row reached the target with steps of the budget left: where a
    second set of fresh deals is played to confirm it, and where the run stops if they do."""
    return row["timesteps"] < config.total_timesteps and target_reached(config, row)


def stops_early(config: TrainConfig, row: dict[str, Any]) -> bool:
    """Whether an evaluation row stops training before ``config.total_timesteps``: it
    reached the target (:func:`target_reached`) with steps of the budget left, and the
    second set of fresh deals played there reached it too, at every table size evaluated.
    Both backends stop when it does; the evaluation at the end of the budget stops nothing
    (a run that trained its whole budget did not stop early)."""
    return _reached_early(config, row) and _beats_target(config, row, "confirm_")


def win_share_reading(row: dict[str, Any], n: int, prefix: str = "", interval: bool = True) -> str:
    """The win share at table size ``n`` in an evaluation row, of the set of deals under
    ``prefix`` (``"confirm_"``: the second set), with the lower end of its 95% interval
    (``interval``), which decides whether it beat the target: ``0.550 (interval from
    0.530)``. The evaluation's line and the line after a run that stopped on its target
    both read a row so."""
    share = f"{row[f'{prefix}win_share_{n}p']:.3f}"
    return f"{share} (interval from {row[f'{prefix}ci_low_{n}p']:.3f})" if interval else share


def evaluation_message(config: TrainConfig, row: dict[str, Any]) -> str:
    """The line shown for an evaluation row. Where the target is reached, each set's
    reading is shown with the lower end of its interval, which is what decides."""

    def shares(prefix: str = "") -> str:
        return ", ".join(
            f"{n}p {win_share_reading(row, n, prefix, interval=reached)}"
            for n in config.eval_players
            if f"{prefix}win_share_{n}p" in row
        )

    reached = target_reached(config, row)
    txt = shares()
    if reached:
        txt += f": above {config.stop_win_share:g}"
        if again := shares("confirm_"):
            txt += f"; on fresh deals {again}: {'stopping' if stops_early(config, row) else 'not confirmed'}"
    return f"[eval @ {row['timesteps']:,}] win share vs {config.eval_opponent}: {txt}"


def next_multiple(n: int, every: int) -> int:
    """The next step count after ``n`` at which something done ``every`` steps is due (0: never)."""
    return (n // every + 1) * every if every else 0
