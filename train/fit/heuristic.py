"""The ``heuristic`` agent's parameters, tuned by playing games.

Coordinate descent: starting from :data:`START` (the hand-set values the search began
from), each parameter in turn is set to each value of its grid in :data:`GRID` with the
others held, and the value with the best objective is kept; up to ``passes`` sweeps,
stopping after one that changes nothing. The objective is the candidate's mean win
share over three fields, all with duplicate deals and the *same* seed for every
candidate (common random numbers: candidates meet identical deals, so small differences
are not noise):

* 4 players: the candidate against three copies of the starting heuristic;
* 4 players: the candidate against ``greedy``, ``cautious`` and the starting heuristic;
* 2 players: the candidate against the starting heuristic.

A fair candidate scores about 0.25, 0.25 and 0.5. :func:`validate` then plays the result
on a fresh seed against the starting point and every baseline. The defaults reproduce
``agents.heuristic.HEURISTIC_DEFAULTS``: ``llama-rl tune-heuristic`` prints them
(docs/training.md, "Reproduce every shipped agent"; the evidence is in
docs/research/2026-12-05-agents-measurement-details.md, "How the heuristic was tuned").
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from agents.heuristic import HEURISTIC_DEFAULTS, HeuristicAgent
from llama_env.agent import AgentLike
from train.evaluation.evaluate import evaluate

__all__ = ["START", "GRID", "TuneConfig", "Row", "objective", "tune", "validate", "format_defaults"]

START: dict[str, float] = {
    "quit_base": 3.0,
    "quit_per_draw_cost": 1.0,
    "quit_danger": 6.0,
    "danger_hand": 1,
    "quit_marker": 2.0,
    "quit_per_card": 0.0,
    "quit_per_pile": 0.0,
    "quit_playable": 0.0,
    "quit_per_quitter": 0.0,
    "lead_margin": 99.0,
    "strand_cost": 2.0,
    "urgency_points": 1.0,
    "chain_bonus": 0.0,
}
"""Where the search starts: the first hand-set guesses."""

GRID: dict[str, list[float]] = {
    "strand_cost": [0, 1, 2, 4, 8, 16],
    "urgency_points": [0, 0.5, 1, 2],
    "chain_bonus": [0, 0.5, 1, 2, 4],
    "quit_base": [-4, -2, -1, 0, 1, 2, 3, 4, 6],
    "quit_per_draw_cost": [0, 0.5, 1, 1.5, 2, 3],
    "quit_danger": [0, 2, 4, 6, 8, 12],
    "danger_hand": [1, 2, 3],
    "quit_marker": [0, 2, 4, 6, 8, 12],
    "quit_per_card": [-1, 0, 0.5, 1, 1.5, 2, 3, 4],
    "quit_per_pile": [-1, -0.5, -0.25, 0, 0.25, 0.5, 1],
    "quit_playable": [0, 0.5, 1, 2],
    "quit_per_quitter": [-2, -1, 0, 1, 2],
    "lead_margin": [-5, 0, 3, 6, 10, 99],
}
"""The values each parameter is tried at, in the order the sweep visits the parameters."""


@dataclass(frozen=True)
class TuneConfig:
    """How the parameters are tuned and checked; the defaults made ``HEURISTIC_DEFAULTS``."""

    games: int = 500
    """Games per field per candidate (duplicate deals: rounded up to a multiple of the table size)."""
    passes: int = 3
    """Coordinate-descent sweeps at most."""
    seed: int = 12345
    """The seed every candidate is played on."""
    start: str = "start"
    """Where the descent starts: ``"start"`` (:data:`START`) or ``"current"``
    (``HEURISTIC_DEFAULTS``)."""
    validate_games: int = 2000
    """Games per row of the validation (0: none; rounded up to a multiple of the table size, as :attr:`games`)."""
    validate_seed: int = 777
    workers: int | None = None
    """Worker processes per evaluation (``None``: every core this process may use); the results do not depend
    on it."""

    def validate(self) -> TuneConfig:
        """Raise ``ValueError`` naming the first bad field; return self."""
        if self.start not in ("start", "current"):
            raise ValueError(f"start must be 'start' or 'current', got {self.start!r}")
        for key in ("games", "passes"):
            if getattr(self, key) < 1:
                raise ValueError(f"{key} must be >= 1, got {getattr(self, key)}")
        for key in ("validate_games", "seed", "validate_seed"):
            if getattr(self, key) < 0:
                raise ValueError(f"{key} must be >= 0, got {getattr(self, key)}")
        if self.workers is not None and self.workers < 1:
            raise ValueError(f"workers must be >= 1, got {self.workers}")
        return self

    def starting_point(self) -> dict[str, float]:
        """The parameters the search starts from: the hand-set :data:`START` for
        ``start="start"``, else a copy of the shipped ``HEURISTIC_DEFAULTS``."""
        return dict(START) if self.start == "start" else dict(HEURISTIC_DEFAULTS)


@dataclass(frozen=True)
class Row:
    """One validation row: the tuned heuristic's win share at one table."""

    label: str
    win_share: float
    ci_low: float
    ci_high: float
    players: int
    games: int
    """The games played: duplicate deals round the games asked for up to a multiple of
    :attr:`players`."""

    @property
    def fair(self) -> float:
        """The fair share at its table: one in :attr:`players`."""
        return 1 / self.players

    def __str__(self) -> str:
        return (
            f"{self.label:<28} win share {self.win_share:.3f} [{self.ci_low:.3f}, {self.ci_high:.3f}]  "
            f"(fair {self.fair:.3f})"
        )


def _heuristic(params: Mapping[str, Any]) -> HeuristicAgent:
    return HeuristicAgent(**params)


def objective(
    params: Mapping[str, float], base: Mapping[str, float], games: int, seed: int, workers: int | None = None
) -> tuple[float, list[float]]:
    """The candidate's mean win share over the three tuning fields, and each field's."""
    cand = _heuristic(params)
    ref = [_heuristic(base) for _ in range(3)]
    fields: list[list[AgentLike]] = [
        [cand, *ref],
        [cand, "greedy", "cautious", ref[0]],
        [cand, ref[0]],
    ]
    shares = [evaluate(f, games, seed=seed, duplicate=True, workers=workers).agents[0].win_share for f in fields]
    return sum(shares) / len(shares), shares


def tune(config: TuneConfig, log: Callable[[str], None] = print) -> dict[str, float]:
    """The coordinate descent; each parameter's sweep is logged as one line of
    ``value:objective`` pairs, ``-> value`` where it moved."""
    start = config.starting_point()
    best = dict(start)
    best_obj, shares = objective(best, start, config.games, config.seed, config.workers)
    log(f"start: objective {best_obj:.4f} (fields {', '.join(f'{x:.3f}' for x in shares)})")
    for p in range(config.passes):
        changed = False
        for name, values in GRID.items():
            results = []
            for value in values:
                trial = {**best, name: value}
                same = value == best[name]
                obj = best_obj if same else objective(trial, start, config.games, config.seed, config.workers)[0]
                results.append((obj, value))
            top_obj, top_value = max(results, key=lambda r: (r[0], -abs(r[1] - best[name])))
            row = "  ".join(f"{v:g}:{o:.4f}" for o, v in results)
            mark = ""
            if top_value != best[name] and top_obj > best_obj:
                mark = f"  -> {top_value:g}"
                best[name] = top_value
                best_obj = top_obj
                changed = True
            log(f"pass {p + 1} {name:<19} {row}{mark}")
        if not changed:
            break
    return {k: type(START[k])(v) for k, v in best.items()}  # each value of START's type: 16 -> 16.0


def validate(params: Mapping[str, float], games: int, seed: int, workers: int | None = None) -> list[Row]:
    """``params`` against :data:`START` and against each baseline, duplicate deals
    (``games`` rounded up to a multiple of each table's size)."""
    tuned = _heuristic(params)
    tables: list[tuple[str, list[AgentLike]]] = [
        ("4p: tuned vs 3 x start", [tuned, *(_heuristic(START) for _ in range(3))]),
        ("4p: tuned vs 3 x random", [tuned, "random", "random", "random"]),
        ("4p: tuned vs 3 x greedy", [tuned, "greedy", "greedy", "greedy"]),
        ("4p: tuned vs 3 x cautious", [tuned, "cautious", "cautious", "cautious"]),
        ("2p: tuned vs start", [tuned, _heuristic(START)]),
        ("2p: tuned vs greedy", [tuned, "greedy"]),
        ("2p: tuned vs cautious", [tuned, "cautious"]),
        ("6p: tuned vs 5 x start", [tuned, *(_heuristic(START) for _ in range(5))]),
    ]
    rows = []
    for label, table in tables:
        result = evaluate(table, games, seed=seed, duplicate=True, workers=workers)
        a = result.agents[0]
        rows.append(Row(label, a.win_share, a.ci_low, a.ci_high, len(table), result.num_games))
    return rows


def format_defaults(params: Mapping[str, Any]) -> str:
    """``params`` written as ``agents/heuristic.py`` writes ``HEURISTIC_DEFAULTS``, to paste there."""
    lines = [f"    {k!r}: {v!r}," for k, v in params.items()]
    return "HEURISTIC_DEFAULTS: dict[str, float] = {\n" + "\n".join(lines).replace("'", '"') + "\n}"
