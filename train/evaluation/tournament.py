"""Tournaments: a pool of agents meeting at tables of one size, rated on openskill's
scale and compared pairwise (:func:`tournament`).

The games are played as :func:`train.evaluation.evaluate` plays them (on the batched
engine when every agent can act on a batch); seeds and workers behave as there.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from llama_env import __version__
from llama_env.agent import AgentLike
from llama_env.engine import Rules, check_flag, check_num_players, check_seed
from llama_env.render import plural
from train.evaluation.batched import play_either
from train.evaluation.evaluate import ByAgentName, agent_position, rules_text, table_orders, table_rules
from train.evaluation.ratings import Rating, fit_ratings
from train.evaluation.runner import (
    KEY_TABLES,
    ChunkExecutor,
    GameColumns,
    GameRecord,
    agent_display_names,
    agent_list,
    carried,
    check_num_games,
)
from train.evaluation.stats import json_number, pandas

__all__ = ["Rating", "TournamentResult", "tournament", "MAX_LISTED_TABLES"]


@dataclass(eq=False, repr=False)  # ByAgentName's: the dataclass's == failed on arrays, its repr ran long
class TournamentResult(ByAgentName):
    """What :func:`tournament` measured: per agent in the order of the agents list.

    ``print(result)`` shows :meth:`to_table` (the agents ranked by rating) and
    :meth:`pairwise_table`, as does a notebook cell ending with it;
    ``result["ppo"]`` (or ``result[0]``) is one agent's row; ``"ppo" in result``, ``for
    name in result`` and ``len(result)`` read it as a dict of the agents by name. Two
    results are ``==`` when every field is, as two runs of one seed are; ``repr`` is one
    line of the win shares.
    """

    names: list[str]
    """The agents' display names, in the order of the agents list."""
    rules: Rules
    """The rules every game was played by (``num_players`` is the table size)."""
    num_games: int
    """The games played."""
    seed: int
    """The seed the tables drawn and every game's deal derive from."""
    ratings: list[Rating]
    """Plackett-Luce ratings on openskill's scale, ranked by final score, ties equal, fitted
    to all the games at once (:func:`train.evaluation.ratings.fit_ratings`)."""
    win_share: list[float]
    """Each agent's mean share of the win over the games it played (ties 1/k)."""
    games_played: list[int]
    """How many games each agent sat in."""
    pairwise: np.ndarray
    """``pairwise[i][j]``: the share of the games where agents i and j both sat in which i
    finished ahead of j (ties 0.5; NaN if they never met)."""
    pair_games: np.ndarray
    """``pair_games[i][j]``: how many games agents i and j both sat in."""
    records: list[GameRecord] = field(repr=False)
    """Every game: who sat where, the scores, the rounds and the decisions."""
    batched: bool = False
    """Whether the games were played on the batched engine (see :func:`tournament`)."""
    every_order: bool = False
    """Whether the order round a table varied too, not only the seats: each table of
    agents goes round in the next of its orders every few times it is drawn."""

    @property
    def win_shares(self) -> list[float]:
        """:attr:`win_share`, by the name :class:`~train.evaluation.EvalResult` gives it."""
        return self.win_share

    def __getitem__(self, key: int | str) -> dict[str, Any]:
        """One agent's results, by list position or display name: its name, rating,
        win share and games, as a row of :meth:`to_dict`."""
        i = agent_position(self.names, key, "tournament")
        r = self.ratings[i]
        return {
            "name": self.names[i],
            "mu": r.mu,
            "sigma": r.sigma,
            "ordinal": r.ordinal,
            "win_share": self.win_share[i],
            "games": self.games_played[i],
        }

    def ranking(self) -> list[int]:
        """Agent positions, best rating (ordinal) first."""
        return sorted(range(len(self.names)), key=lambda i: -self.ratings[i].ordinal)

    def to_table(self) -> str:
        """The ratings table, best first."""
        w = max(5, *(len(n) for n in self.names))
        lines = [
            f"{plural(self.num_games, 'game')}, {self.num_players} players per table, "
            f"{'every order, ' if self.every_order else ''}"
            f"{'batched engine' if self.batched else 'game by game'}, seed {self.seed}, {rules_text(self.rules)}",
            f"{'rank':>4}  {'agent':<{w}}  {'mu':>6}  {'sigma':>5}  {'ordinal':>7}  {'win share':>9}  {'games':>6}",
        ]
        for rank, i in enumerate(self.ranking(), 1):
            r = self.ratings[i]
            share = "-" if not self.games_played[i] else f"{self.win_share[i]:.3f}"
            lines.append(
                f"{rank:>4}  {self.names[i]:<{w}}  {r.mu:>6.2f}  {r.sigma:>5.2f}  {r.ordinal:>7.2f}  "
                f"{share:>9}  {self.games_played[i]:>6}"
            )
        idle = [self.names[i] for i in range(len(self.names)) if not self.games_played[i]]
        if idle:
            enough = _games_seating_everyone(len(self.names), self.num_players, self.seed)
            lines.append(
                f"note: no game for {', '.join(idle)} (rated at the prior): play at least {enough} games "
                f"(seed {self.seed}'s first {enough} tables of {self.num_players} seat all {len(self.names)} agents)"
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
        """Plain JSON data (an undefined number, as the win share of an agent that played
        no game, is ``None``)."""
        return {
            "num_players": self.num_players,
            "num_games": self.num_games,
            "seed": self.seed,
            "batched": self.batched,  # the same seed deals other games on the batched engine
            "every_order": self.every_order,
            "llama_rl_version": __version__,  # which engine, agents and chunking made these numbers
            **self.rules.options(),
            "agents": [
                {
                    "name": n,
                    "mu": r.mu,
                    "sigma": r.sigma,
                    "ordinal": r.ordinal,
                    "win_share": json_number(w),  # None for an agent that played no game
                    "games": g,
                }
                for n, r, w, g in zip(self.names, self.ratings, self.win_share, self.games_played, strict=True)
            ],
            "pairwise": [[json_number(v) for v in row] for row in self.pairwise],
        }

    def to_dataframe(self) -> Any:
        """A pandas DataFrame of the ratings, best first (needs pandas)."""
        pd = pandas()

        rows = self.to_dict()["agents"]
        return pd.DataFrame(rows).set_index("name").sort_values("ordinal", ascending=False)

    def pairwise_dataframe(self) -> Any:
        """The pairwise matrix as a pandas DataFrame (needs pandas)."""
        pd = pandas()

        return pd.DataFrame(self.pairwise, index=self.names, columns=self.names)


MAX_LISTED_TABLES = 100_000


def _tables(m: int, k: int, num_games: int, seed: int, every_order: bool = False) -> list[tuple[int, ...]]:
    """The seating of each game (agent positions by seat).

    All ``C(m, k)`` combinations of agents are taken in a seeded random order and cycled
    through, so every combination plays about equally often. A combination goes round
    the table in ascending order, so each agent plays right after the same one; with
    ``every_order`` the ``j``-th combination of pass ``p`` takes the next of the
    ``(k - 1)!`` orders of its other agents after its first whenever ``j + p`` reaches a
    multiple of ``k``. Where round the table a game starts is chosen by
    :class:`_SeatBalance` to seat its agents where they have sat least so far, and to
    start the combination where it has started least: everyone sits everywhere about
    equally often at any number of games, not only after whole passes. In every pool of
    up to 12 agents measured, an agent's games at its ``k`` seats differed by at most 5
    at any point, and a combination's starts by at most 3 (a fixed turn per combination
    and pass had left an agent's seats up to 40 games apart). With more than
    :data:`MAX_LISTED_TABLES` combinations each game draws its table at random (seeded
    by the game index) instead, seated the same way.
    """
    balance = _SeatBalance(m, k)
    tables = itertools.islice(_table_agents(m, k, seed), num_games)
    count = math.comb(m, k)
    if count > MAX_LISTED_TABLES:  # drawn tables: seated from their first agent's turn
        return [balance.seat(list(table), 0) for table in tables]
    orders = table_orders(k) if every_order else [tuple(range(k))]
    starts: dict[tuple[int, int], list[int]] = {}  # [combination, order][turn]: games so far
    out = []
    for g, combo in enumerate(tables):
        j, p = g % count, g // count
        o = ((j + p) // k) % len(orders)
        round_table = [combo[i] for i in orders[o]]
        out.append(balance.seat(round_table, (j + p) % k, starts.setdefault((j, o), [0] * k)))
    return out


def _table_agents(m: int, k: int, seed: int) -> Iterator[Sequence[int]]:
    """The agents of each game's table in turn, without end (:func:`_tables` seats them):
    up to :data:`MAX_LISTED_TABLES` combinations, all of them in a seeded order, cycled
    through; with more, one drawn at random per game (seeded by the game index)."""
    count = math.comb(m, k)
    if count <= MAX_LISTED_TABLES:
        combos = list(itertools.combinations(range(m), k))
        order = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(KEY_TABLES,))).permutation(count)
        for g in itertools.count():
            yield combos[order[g % count]]
    else:
        for g in itertools.count():
            rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(KEY_TABLES, g)))
            yield [int(x) for x in rng.choice(m, size=k, replace=False)]


def _games_seating_everyone(m: int, k: int, seed: int) -> int:
    """The fewest games whose tables (:func:`_tables`, of ``seed``) seat each of the
    ``m`` agents at least once: the note of a tournament too short for some agent."""
    seated: set[int] = set()
    for games, table in enumerate(_table_agents(m, k, seed), 1):
        seated.update(table)
        if len(seated) == m:
            return games
    raise AssertionError("unreachable: _table_agents goes on without end")


class _SeatBalance:
    """Seats tables one after the other so that each agent sits at every seat about
    equally often (:func:`_tables`). Of the ``k`` turns of a table (where round it the
    first seat falls), the one of least cost, the first such from ``start``: for each of
    its agents, the square of how many more games it has played at the seat it would
    take than at its least-used seat, plus twice the square of how many more times the
    table started at that turn than at its least-used one. The second term keeps each
    combination going round (alone, the first let a combination start at one turn 13
    times more than at another over 32 passes); twice, because the measured balance of
    both was best so."""

    def __init__(self, m: int, k: int) -> None:
        self.k = k
        self.counts = [[0] * k for _ in range(m)]  # [agent][seat]: games so far
        # turn s: the i-th agent round the table sits at seat places[s][i]
        self.places = [[(i + s) % k for i in range(k)] for s in range(k)]

    def seat(self, round_table: list[int], start: int, turns: list[int] | None = None) -> tuple[int, ...]:
        """The agents of ``round_table`` (in their order round it) by seat, counted;
        ``turns``, the games this table started at each turn so far, counted too."""
        k = self.k
        rows = [self.counts[a] for a in round_table]
        lows = [min(row) for row in rows]
        fewest = min(turns) if turns is not None else 0
        best, best_cost = start, -1
        for c in range(k):
            turn = (start + c) % k
            cost = 2 * (turns[turn] - fewest) ** 2 if turns is not None else 0
            for row, low, at in zip(rows, lows, self.places[turn], strict=True):
                cost += (row[at] - low) ** 2
            if best_cost < 0 or cost < best_cost:
                best, best_cost = turn, cost
        if turns is not None:
            turns[best] += 1
        seated = [0] * k
        for a, row, at in zip(round_table, rows, self.places[best], strict=True):
            row[at] += 1
            seated[at] = a
        return tuple(seated)


def tournament(
    agents: Sequence[AgentLike],
    num_players: int,
    num_games: int,
    *,
    seed: int = 0,
    workers: int | None = None,
    rules: Rules | None = None,
    progress: bool = False,
    record_dir: str | Path | None = None,
    batched: bool | None = None,
    executor: ChunkExecutor | None = None,
    every_order: bool = False,
    **options: int,
) -> TournamentResult:
    """Play ``num_games`` games at tables of ``num_players`` drawn from ``agents`` (at
    least ``num_players`` of them), rate them with a Plackett-Luce model on openskill's
    scale (ranked by final score, lower better, ties equal), fitted to all the games at
    once, as the agents do not change (:func:`train.evaluation.ratings.fit_ratings`), and
    count pairwise results.

    ``rules``: the rules every game is played by, for ``num_players`` players (a
    ``ValueError`` otherwise); default ``Rules(num_players)``. Seeds, workers,
    ``record_dir``, ``batched``, ``executor``, ``every_order`` (also vary the order round
    each table) and rule options by name (``end_score=20``) behave as in :func:`evaluate`,
    and so does Ctrl-C: its :class:`~train.evaluation.runner.GamesInterrupted` carries the
    tournament of the first games that had finished, the tables a tournament of that many
    games draws.

    The tables: every combination of ``num_players`` agents, in an order drawn from
    ``seed``, one per game, over again once all have played, so each combination plays
    about equally often (with more than :data:`MAX_LISTED_TABLES` combinations each game
    draws its agents at random instead, from ``seed`` and the game index). Each table is
    turned so that its agents sit where they have sat least so far: every agent plays
    from every seat about equally often at any number of games. ``every_order`` also
    varies who follows whom round a table, taking each combination round in the next of
    its orders every few times it plays. A tournament too short to seat every agent says
    in its table how many games would.
    """
    agents = agent_list(agents)
    m = len(agents)
    num_players = check_num_players(num_players)
    seed = check_seed(seed)
    if m < num_players:
        raise ValueError(f"a tournament at {num_players}-player tables needs at least {num_players} agents, got {m}")
    rules = Rules.for_table(num_players, table_rules(num_players, rules, options, "tournament"))
    num_games = check_num_games(num_games)
    names = agent_display_names(agents)
    every_order = check_flag("every_order", every_order)
    seat_agents = np.array(_tables(m, num_players, num_games, seed, every_order), dtype=np.int64).reshape(
        -1, num_players
    )
    return carried(  # interrupted, the first games: the tables a tournament of that many draws
        lambda played: _measured(*played, names, rules, seed, every_order),
        play_either,
        agents,
        seat_agents,
        np.arange(num_games),
        seed=seed,
        workers=workers,
        rules=rules,
        progress=progress,
        record_dir=record_dir,
        duplicate=False,
        batched=batched,
        executor=executor,
    )


def _measured(
    games: GameColumns, was_batched: bool, names: list[str], rules: Rules, seed: int, every_order: bool
) -> TournamentResult:
    """The ratings, win shares and pairwise matrix of a tournament's ``games``."""
    m, num_players = len(names), rules.num_players
    records = games.records()

    agent_at = games.seat_agents.ravel()
    # bincount adds in game order, seat by seat, as a loop over the records did: the same sums
    wins = np.bincount(agent_at, weights=games.win_shares.ravel(), minlength=m)
    played = np.bincount(agent_at, minlength=m)
    seat, other = (a.ravel() for a in np.nonzero(~np.eye(num_players, dtype=bool)))  # every ordered pair of seats
    pair = (games.seat_agents[:, seat] * m + games.seat_agents[:, other]).ravel()
    mine, theirs = games.scores[:, seat], games.scores[:, other]
    finished_ahead = np.where(mine < theirs, 1.0, np.where(mine == theirs, 0.5, 0.0)).ravel()  # halves: exact sums
    met = np.bincount(pair, minlength=m * m).reshape(m, m)
    ahead = np.bincount(pair, weights=finished_ahead, minlength=m * m).reshape(m, m)
    with np.errstate(invalid="ignore", divide="ignore"):
        pairwise = np.where(met > 0, ahead / np.maximum(met, 1), np.nan)
    return TournamentResult(
        names=names,
        rules=rules,
        num_games=len(games),
        seed=seed,
        ratings=list(fit_ratings(((r.seat_agents, r.scores) for r in records), range(m)).values()),
        win_share=[float(wins[i] / played[i]) if played[i] else math.nan for i in range(m)],
        games_played=[int(x) for x in played],
        pairwise=pairwise,
        pair_games=met,
        records=records,
        batched=was_batched,
        every_order=every_order,
    )
