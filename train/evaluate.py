"""Evaluate agents by playing whole games: win shares with confidence intervals,
tournaments with openskill ratings and a pairwise matrix.

The games are played on the engine directly (``LlamaGame`` + ``encode`` + the mask),
not through the PettingZoo or Gymnasium wrappers, because evaluation is the hot path:
ten thousand four-player games take well under a minute of CPU.

Reproducibility: every game's deal and every agent's ``reset(seed)`` are derived from
``(seed, game index)`` through ``np.random.SeedSequence`` -- never from a worker's
order -- so the same ``seed`` gives the same results with any number of ``workers``.

Parallelism: games are split into chunks played by a ``ProcessPoolExecutor``. The
workers build the agents once each (a registered name is resolved there; an agent
object is pickled over). An agent object that cannot be pickled makes the evaluation
run in this process (``workers=1``) with a warning. In this process the agent objects
are used as they are (their ``reset`` is called before each game), in a worker they are
copies; both give the same results for agents whose behaviour depends only on their
seed, as :class:`agents.base.BaseAgent` subclasses do.

Statistics (see :class:`EvalResult`): a game's winners share the win (1/k each for k
tied lowest scores). The 95% interval of a win share is the normal approximation with
the sample standard deviation of the per-game shares; when every share is 0 or 1 (no
ties) it is the Wilson score interval, which behaves better near 0 and 1. With
duplicate deals the games of one deal group are correlated, so the interval is
computed from the per-group means instead (one value per deal group).
"""

from __future__ import annotations

import itertools
import math
import operator
import os
import pickle
import warnings
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from agents.base import AgentLike, resolve
from llama_env.engine import (
    DEFAULT_END_SCORE,
    DEFAULT_HAND_SIZE,
    MAX_PLAYERS,
    MIN_PLAYERS,
    Action,
    IllegalActionError,
    LlamaGame,
    validate_rule_options,
)
from llama_env.observation import action_mask, encode

__all__ = [
    "EvalResult",
    "TournamentResult",
    "GameRecord",
    "GameTask",
    "AgentStats",
    "Rating",
    "evaluate",
    "tournament",
    "play_games",
    "agent_display_names",
    "mean_ci",
    "Z95",
]

Z95 = 1.959963984540054
"""The two-sided 95% normal quantile."""

# Spawn keys of the SeedSequence tree under the user's seed (one namespace each, so a
# deal seed can never equal an agent seed or a table draw).
_KEY_DEAL, _KEY_AGENT, _KEY_TABLES = 0, 1, 2


# --------------------------------------------------------------------------- naming


def agent_display_names(agents: Sequence[AgentLike]) -> list[str]:
    """Display names: the registered name, else the object's ``name`` attribute, else its
    class name; a name used more than once gets ``#1``, ``#2``... in list order."""
    raw = []
    for a in agents:
        if isinstance(a, str):
            raw.append(a)
        else:
            n = getattr(a, "name", None)
            raw.append(n if isinstance(n, str) and n else type(a).__name__)
    counts: dict[str, int] = {}
    for n in raw:
        counts[n] = counts.get(n, 0) + 1
    seen: dict[str, int] = {}
    out = []
    for n in raw:
        if counts[n] > 1:
            seen[n] = seen.get(n, 0) + 1
            out.append(f"{n}#{seen[n]}")
        else:
            out.append(n)
    return out


# --------------------------------------------------------------------------- playing


@dataclass(frozen=True)
class GameRecord:
    """One finished game, by seat."""

    index: int
    """The game's index (its seeds are derived from it)."""
    seat_agents: tuple[int, ...]
    """For each seat, the position of its agent in the agents list."""
    scores: tuple[int, ...]
    """Final scores by seat."""
    went_out: tuple[int, ...]
    """Rounds each seat ended by playing its last card."""
    rounds: int
    """Rounds the game lasted."""
    decisions: int
    """Actions taken in the game (all seats)."""
    actions: tuple[tuple[int, int, int], ...] = ()
    """For each seat, how many times it played, drew and quit."""
    quit_penalty: tuple[int, ...] = ()
    """For each seat, the summed hand penalty at the moments it quit."""

    @property
    def win_shares(self) -> tuple[float, ...]:
        """Each seat's share of the win: 1/k for each of the k tied lowest scores."""
        best = min(self.scores)
        k = self.scores.count(best)
        return tuple(1.0 / k if s == best else 0.0 for s in self.scores)


@dataclass(frozen=True)
class GameTask:
    """One game to play: its index (which seeds the agents' resets), the key of its deal
    sequence (games sharing a key get the same shuffles) and the agent at each seat."""

    index: int
    deal_key: int
    seat_agents: tuple[int, ...]


def _seed_int(seed: int, *key: int) -> int:
    """A 63-bit integer seed derived from ``(seed, *key)`` (independent of any order)."""
    ss = np.random.SeedSequence(seed, spawn_key=key)
    return int(ss.generate_state(2, np.uint64)[0] >> np.uint64(1))


def _play(
    agents: Sequence[Any],
    names: Sequence[str],
    task: GameTask,
    seed: int,
    end_score: int,
    hand_size: int,
) -> GameRecord:
    n = len(task.seat_agents)
    seat_objs = [agents[i] for i in task.seat_agents]
    for i in task.seat_agents:
        reset = getattr(agents[i], "reset", None)
        if callable(reset):
            reset(_seed_int(seed, _KEY_AGENT, task.index, i))
    game = LlamaGame(
        n,
        end_score=end_score,
        hand_size=hand_size,
        rng=np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(_KEY_DEAL, task.deal_key))),
    )
    outs = [0] * n
    counts = [[0, 0, 0] for _ in range(n)]  # plays, draws, quits per seat
    quit_penalty = [0] * n
    rounds = 0
    steps = 0
    while True:
        steps += 1
        p = game.current_player
        legal = game.legal_actions()
        action = seat_objs[p].act(encode(game, p), action_mask(legal))
        if action not in legal:
            raise _agent_error(names[task.seat_agents[p]], p, action, legal, task.index)
        if action < Action.DRAW:
            counts[p][0] += 1
        elif action == Action.DRAW:
            counts[p][1] += 1
        else:
            counts[p][2] += 1
            quit_penalty[p] += game.penalty(p)
        result = game.step(operator.index(action))
        if result is not None:
            rounds += 1
            if result.went_out is not None:
                outs[result.went_out] += 1
            if result.game_over:
                return GameRecord(
                    task.index,
                    task.seat_agents,
                    tuple(game.scores),
                    tuple(outs),
                    rounds,
                    steps,
                    tuple(tuple(c) for c in counts),
                    tuple(quit_penalty),
                )


def _agent_error(name: str, seat: int, action: Any, legal: list[int], index: int) -> IllegalActionError:
    names = ", ".join(f"{a} ({Action(a).name})" for a in legal)
    return IllegalActionError(
        f"agent {name!r} at seat {seat} chose {action!r}, a masked action, in game {index}; legal: {names}",
        action,
        legal,
    )


# Per-worker state: the agents built once by the pool initializer.
_WORKER: dict[str, Any] = {}


def _init_worker(payload: bytes) -> None:
    specs, names, seed, end_score, hand_size = pickle.loads(payload)
    _WORKER["agents"] = [resolve(s) for s in specs]
    _WORKER["args"] = (names, seed, end_score, hand_size)


def _run_chunk(tasks: list[GameTask]) -> list[GameRecord]:
    agents = _WORKER["agents"]
    names, seed, end_score, hand_size = _WORKER["args"]
    return [_play(agents, names, t, seed, end_score, hand_size) for t in tasks]


def play_games(
    agents: Sequence[AgentLike],
    tasks: Sequence[GameTask],
    *,
    seed: int,
    workers: int | None,
    end_score: int,
    hand_size: int,
    progress: bool | str = False,
) -> list[GameRecord]:
    """Play ``tasks`` (game index, deal key, seat assignment) and return their records in
    task order. The lower-level driver behind :func:`evaluate` and :func:`tournament`."""
    names = agent_display_names(agents)
    workers = _num_workers(workers)
    chunk = max(1, min(256, math.ceil(len(tasks) / (workers * 8))))
    chunks = [list(tasks[i : i + chunk]) for i in range(0, len(tasks), chunk)]
    payload = None
    if workers > 1 and len(chunks) > 1:
        try:
            payload = pickle.dumps((list(agents), names, seed, end_score, hand_size))
        except Exception as exc:  # noqa: BLE001 - any pickling failure means "run here"
            warnings.warn(
                f"an agent cannot be pickled ({type(exc).__name__}: {exc}); evaluating in this process (workers=1)",
                RuntimeWarning,
                stacklevel=3,
            )
    bar = _progress_bar(progress, len(tasks))
    records: list[GameRecord] = []
    try:
        if payload is None:
            objs = [resolve(a) for a in agents]
            for c in chunks:
                records.extend(_play(objs, names, t, seed, end_score, hand_size) for t in c)
                if bar is not None:
                    bar.update(len(c))
        else:
            with ProcessPoolExecutor(
                max_workers=min(workers, len(chunks)), initializer=_init_worker, initargs=(payload,)
            ) as pool:
                for c, recs in zip(chunks, pool.map(_run_chunk, chunks), strict=True):
                    records.extend(recs)
                    if bar is not None:
                        bar.update(len(c))
    finally:
        if bar is not None:
            bar.close()
    return records


def _num_workers(workers: int | None) -> int:
    if workers is None:
        return os.cpu_count() or 1
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise ValueError(f"workers must be a positive integer or None (all cores), got {workers!r}")
    return workers


def _progress_bar(progress: bool | str, total: int) -> Any:
    if not progress:
        return None
    try:
        from tqdm.auto import tqdm
    except ImportError:  # pragma: no cover - tqdm is a dependency of the train extra
        return None
    return tqdm(total=total, desc=progress if isinstance(progress, str) else "games", unit="game")


def _check_common(num_games: Any, end_score: Any, hand_size: Any, table: int) -> None:
    if isinstance(num_games, bool) or not isinstance(num_games, int) or num_games < 1:
        raise ValueError(f"num_games must be a positive integer, got {num_games!r}")
    validate_rule_options(table, end_score, hand_size)


# --------------------------------------------------------------------------- statistics


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


@dataclass
class EvalResult:
    """What :func:`evaluate` measured; per agent in the order of the agents list.

    ``print(result)`` shows :meth:`to_table`; :meth:`to_dict` and :meth:`to_dataframe`
    serve notebooks. The per-game arrays are kept (``shares``, ``scores``, ``outs``,
    ``rounds``, ``decisions``, shape ``(games, agents)`` or ``(games,)``; ``actions``, shape
    ``(games, agents, 3)``: plays, draws, quits; ``quit_penalty``, shape ``(games, agents)``:
    summed hand penalty at the quits) for further analysis.
    """

    names: list[str]
    num_players: int
    num_games: int
    seed: int
    duplicate: bool
    rotate: bool
    end_score: int
    hand_size: int
    agents: list[AgentStats]
    rounds_per_game: float
    shares: np.ndarray = field(repr=False)
    scores: np.ndarray = field(repr=False)
    outs: np.ndarray = field(repr=False)
    rounds: np.ndarray = field(repr=False)
    decisions: np.ndarray = field(repr=False)
    actions: np.ndarray = field(repr=False, default_factory=lambda: np.zeros((0, 0, 3)))
    quit_penalty: np.ndarray = field(repr=False, default_factory=lambda: np.zeros((0, 0)))

    def __getitem__(self, key: int | str) -> AgentStats:
        """Stats by list position or display name."""
        if isinstance(key, str):
            return self.agents[self.names.index(key)]
        return self.agents[key]

    @property
    def win_shares(self) -> list[float]:
        return [a.win_share for a in self.agents]

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-friendly data (no per-game arrays)."""
        return {
            "num_players": self.num_players,
            "num_games": self.num_games,
            "seed": self.seed,
            "duplicate": self.duplicate,
            "rotate": self.rotate,
            "end_score": self.end_score,
            "hand_size": self.hand_size,
            "rounds_per_game": self.rounds_per_game,
            "agents": [vars(a).copy() for a in self.agents],
        }

    def to_dataframe(self) -> Any:
        """A pandas DataFrame, one row per agent (needs pandas)."""
        import pandas as pd

        return pd.DataFrame([vars(a) for a in self.agents]).set_index("name")

    def to_table(self) -> str:
        """A plain-text table, one row per agent."""
        mode = "duplicate deals" if self.duplicate else ("rotated seats" if self.rotate else "fixed seats")
        head = (
            f"{self.num_games} games, {self.num_players} players, {mode}, seed {self.seed}, "
            f"end_score {self.end_score}; {self.rounds_per_game:.2f} rounds/game"
        )
        w = max(5, *(len(n) for n in self.names))
        lines = [
            head,
            f"{'agent':<{w}}  {'win share':>9}  {'95% CI':>15}  {'score':>6}  {'pts/round':>9}  {'go-out':>6}",
        ]
        for a in self.agents:
            lines.append(
                f"{a.name:<{w}}  {a.win_share:>9.3f}  [{a.ci_low:.3f}, {a.ci_high:.3f}]  "
                f"{a.mean_score:>6.1f}  {a.points_per_round:>9.2f}  {a.go_out_rate:>6.3f}"
            )
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.to_table()


def _eval_stats(records: list[GameRecord], names: list[str], duplicate: bool, group_size: int) -> dict[str, Any]:
    g, m = len(records), len(names)
    shares = np.zeros((g, m))
    scores = np.zeros((g, m))
    outs = np.zeros((g, m))
    rounds = np.zeros(g)
    decisions = np.zeros(g, dtype=np.int64)
    actions = np.zeros((g, m, 3), dtype=np.int64)
    quit_pen = np.zeros((g, m))
    for k, r in enumerate(records):
        ws = r.win_shares
        for seat, i in enumerate(r.seat_agents):
            shares[k, i] = ws[seat]
            scores[k, i] = r.scores[seat]
            outs[k, i] = r.went_out[seat]
            actions[k, i] = r.actions[seat]
            quit_pen[k, i] = r.quit_penalty[seat]
        rounds[k] = r.rounds
        decisions[k] = r.decisions
    total_rounds = float(rounds.sum())
    stats = []
    per_agent_actions = actions.sum(axis=0)
    for i, name in enumerate(names):
        plays, draws, quits = (int(x) for x in per_agent_actions[i])
        taken = max(1, plays + draws + quits)
        col = shares[:, i]
        if duplicate:
            mean, lo, hi = mean_ci(col.reshape(-1, group_size).mean(axis=1))
        else:
            mean, lo, hi = mean_ci(col, binary=bool(np.all((col == 0) | (col == 1))))
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


# --------------------------------------------------------------------------- evaluate


def evaluate(
    agents: Sequence[AgentLike],
    num_games: int,
    *,
    seed: int = 0,
    workers: int | None = None,
    duplicate: bool = False,
    rotate: bool = True,
    end_score: int = DEFAULT_END_SCORE,
    hand_size: int = DEFAULT_HAND_SIZE,
    progress: bool = False,
) -> EvalResult:
    """Play ``num_games`` games with ``agents`` at one table and measure each of them.

    Args:
        agents: the table, 2..6 entries, each an agent object or a registered name
            (names may repeat: ``["heuristic", "random", "random", "random"]``). Results
            are reported per list position.
        num_games: games to play. With ``duplicate`` it is rounded up to a multiple of
            the table size (``result.num_games`` is the number played).
        seed: derives every deal and every agent's ``reset(seed)`` per game index.
        workers: processes to use; ``None`` = all cores, 1 = this process.
        duplicate: replay each deal sequence (the same shuffles) with the seating
            rotated through all n rotations, so luck of the deal cancels out; the
            confidence intervals are then computed over deal groups.
        rotate: game ``i`` shifts the seating by ``i mod n`` (agent ``j`` sits at seat
            ``(j + i) mod n``), so no agent keeps the first seat. Ignored (always on)
            with ``duplicate``.
        end_score, hand_size: rule options.
        progress: show a tqdm progress bar.
    """
    n = len(agents)
    if not MIN_PLAYERS <= n <= MAX_PLAYERS:
        raise ValueError(f"evaluate needs {MIN_PLAYERS}..{MAX_PLAYERS} agents (one per seat), got {n}")
    _check_common(num_games, end_score, hand_size, n)
    if duplicate:
        num_games = math.ceil(num_games / n) * n
    tasks = []
    for i in range(num_games):
        shift = i % n if (rotate or duplicate) else 0
        seat_agents = tuple((s - shift) % n for s in range(n))
        tasks.append(GameTask(i, i // n if duplicate else i, seat_agents))
    names = agent_display_names(agents)
    records = play_games(
        agents, tasks, seed=seed, workers=workers, end_score=end_score, hand_size=hand_size, progress=progress
    )
    return EvalResult(
        names=names,
        num_players=n,
        num_games=num_games,
        seed=seed,
        duplicate=duplicate,
        rotate=rotate or duplicate,
        end_score=end_score,
        hand_size=hand_size,
        **_eval_stats(records, names, duplicate, n),
    )


# --------------------------------------------------------------------------- tournament


@dataclass
class Rating:
    """An openskill rating: ``mu`` and ``sigma``; ``ordinal`` = mu - 3 sigma ranks them."""

    mu: float
    sigma: float
    ordinal: float


@dataclass
class TournamentResult:
    """What :func:`tournament` measured.

    ``ratings`` (openskill Plackett-Luce, ranked by final score, ties equal),
    ``pairwise[i][j]`` = share of the games where agents i and j both sat in which i
    finished ahead of j (ties 0.5; NaN if they never met), ``pair_games[i][j]`` = how
    many such games, ``win_share`` = mean share of the win over the games each agent
    played (ties 1/k), ``games_played``.
    """

    names: list[str]
    num_players: int
    num_games: int
    seed: int
    ratings: list[Rating]
    win_share: list[float]
    games_played: list[int]
    pairwise: np.ndarray
    pair_games: np.ndarray
    records: list[GameRecord] = field(repr=False)

    def ranking(self) -> list[int]:
        """Agent positions, best rating (ordinal) first."""
        return sorted(range(len(self.names)), key=lambda i: -self.ratings[i].ordinal)

    def to_table(self) -> str:
        """The ratings table, best first."""
        w = max(5, *(len(n) for n in self.names))
        lines = [
            f"{self.num_games} games, {self.num_players} players per table, seed {self.seed}",
            f"{'rank':>4}  {'agent':<{w}}  {'mu':>6}  {'sigma':>5}  {'ordinal':>7}  {'win share':>9}  {'games':>6}",
        ]
        for rank, i in enumerate(self.ranking(), 1):
            r = self.ratings[i]
            lines.append(
                f"{rank:>4}  {self.names[i]:<{w}}  {r.mu:>6.2f}  {r.sigma:>5.2f}  {r.ordinal:>7.2f}  "
                f"{self.win_share[i]:>9.3f}  {self.games_played[i]:>6}"
            )
        return "\n".join(lines)

    def pairwise_table(self) -> str:
        """The pairwise matrix: row agent finished ahead of column agent this often."""
        order = self.ranking()
        w = max(5, *(len(n) for n in self.names))
        cw = max(6, *(len(n) for n in self.names))
        lines = [
            "share of shared games the row agent finished ahead of the column agent (ties 0.5)",
            " " * w + "  " + "  ".join(f"{self.names[j]:>{cw}}" for j in order),
        ]
        for i in order:
            cells = []
            for j in order:
                v = self.pairwise[i, j]
                cells.append(f"{'-':>{cw}}" if i == j or math.isnan(v) else f"{v:>{cw}.3f}")
            lines.append(f"{self.names[i]:<{w}}  " + "  ".join(cells))
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.to_table() + "\n\n" + self.pairwise_table()

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-friendly data."""
        return {
            "num_players": self.num_players,
            "num_games": self.num_games,
            "seed": self.seed,
            "agents": [
                {
                    "name": n,
                    "mu": r.mu,
                    "sigma": r.sigma,
                    "ordinal": r.ordinal,
                    "win_share": w,
                    "games": g,
                }
                for n, r, w, g in zip(self.names, self.ratings, self.win_share, self.games_played, strict=True)
            ],
            "pairwise": [[None if math.isnan(v) else float(v) for v in row] for row in self.pairwise],
        }

    def to_dataframe(self) -> Any:
        """A pandas DataFrame of the ratings, best first (needs pandas)."""
        import pandas as pd

        rows = self.to_dict()["agents"]
        return pd.DataFrame(rows).set_index("name").sort_values("ordinal", ascending=False)

    def pairwise_dataframe(self) -> Any:
        """The pairwise matrix as a pandas DataFrame (needs pandas)."""
        import pandas as pd

        return pd.DataFrame(self.pairwise, index=self.names, columns=self.names)


MAX_LISTED_TABLES = 100_000


def _tables(m: int, k: int, num_games: int, seed: int) -> list[tuple[int, ...]]:
    """The seating of each game (agent positions by seat).

    All ``C(m, k)`` combinations of agents are taken in a seeded random order and cycled
    through, each pass shifting the seats by one, so every combination plays about
    equally often and everyone sits everywhere. With more than
    :data:`MAX_LISTED_TABLES` combinations each game draws its table and seating at
    random (seeded by the game index) instead.
    """
    count = math.comb(m, k)
    if count <= MAX_LISTED_TABLES:
        combos = list(itertools.combinations(range(m), k))
        order = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(_KEY_TABLES,))).permutation(count)
        out = []
        for g in range(num_games):
            combo = combos[order[g % count]]
            shift = (g // count) % k
            out.append(tuple(combo[(s - shift) % k] for s in range(k)))
        return out
    out = []
    for g in range(num_games):
        rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(_KEY_TABLES, g)))
        out.append(tuple(int(x) for x in rng.choice(m, size=k, replace=False)))
    return out


def tournament(
    agents: Sequence[AgentLike],
    num_players: int,
    num_games: int,
    *,
    seed: int = 0,
    workers: int | None = None,
    end_score: int = DEFAULT_END_SCORE,
    hand_size: int = DEFAULT_HAND_SIZE,
    progress: bool = False,
) -> TournamentResult:
    """Play ``num_games`` games at tables of ``num_players`` drawn from ``agents`` (at
    least ``num_players`` of them; see :func:`_tables` for how tables are drawn), rate
    them with openskill's Plackett-Luce model (games applied in index order, ranked by
    final score, lower better, ties equal) and count pairwise results.

    Seeds and workers behave as in :func:`evaluate`.
    """
    from openskill.models import PlackettLuce

    m = len(agents)
    if isinstance(num_players, bool) or not isinstance(num_players, int):
        raise ValueError(f"num_players must be an integer, got {num_players!r}")
    if not MIN_PLAYERS <= num_players <= MAX_PLAYERS:
        raise ValueError(f"num_players must be {MIN_PLAYERS}..{MAX_PLAYERS}, got {num_players}")
    if m < num_players:
        raise ValueError(f"a tournament at {num_players}-player tables needs at least {num_players} agents, got {m}")
    _check_common(num_games, end_score, hand_size, num_players)
    names = agent_display_names(agents)
    tasks = [GameTask(g, g, t) for g, t in enumerate(_tables(m, num_players, num_games, seed))]
    records = play_games(
        agents, tasks, seed=seed, workers=workers, end_score=end_score, hand_size=hand_size, progress=progress
    )

    model = PlackettLuce()
    ratings = [model.rating(name=n) for n in names]
    wins = np.zeros(m)
    played = np.zeros(m, dtype=np.int64)
    ahead = np.zeros((m, m))
    met = np.zeros((m, m), dtype=np.int64)
    for r in records:
        teams = [[ratings[i]] for i in r.seat_agents]
        new = model.rate(teams, ranks=[float(s) for s in r.scores])
        for i, team in zip(r.seat_agents, new, strict=True):
            ratings[i] = team[0]
        for seat, (i, share) in enumerate(zip(r.seat_agents, r.win_shares, strict=True)):
            wins[i] += share
            played[i] += 1
            for seat2, j in enumerate(r.seat_agents):
                if seat2 != seat:
                    met[i, j] += 1
                    si, sj = r.scores[seat], r.scores[seat2]
                    ahead[i, j] += 1.0 if si < sj else (0.5 if si == sj else 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        pairwise = np.where(met > 0, ahead / np.maximum(met, 1), np.nan)
    return TournamentResult(
        names=names,
        num_players=num_players,
        num_games=num_games,
        seed=seed,
        ratings=[Rating(float(r.mu), float(r.sigma), float(r.ordinal())) for r in ratings],
        win_share=[float(wins[i] / played[i]) if played[i] else math.nan for i in range(m)],
        games_played=[int(x) for x in played],
        pairwise=pairwise,
        pair_games=met,
        records=records,
    )
