"""Evaluation on the batched engine: thousands of games at once, through the batched
table driver (:class:`llama_env.table.BatchTable` over :class:`llama_env.batch.BatchGame`).

When every agent at the table answers batches (``act_batch``), :func:`play_batched` plays
the games of the tasks (their seatings) in batches and returns the statistics the scalar
runner's listener collects (plays, draws and quits per seat, the hand penalty at each
quit, who went out, rounds, decisions, final scores) as :class:`GameColumns`, heard from
the batch through a :class:`~llama_env.table.BatchTableListener`. :func:`batch_refusal`
says why a request cannot be played so; :func:`train.evaluation.evaluate` and
:func:`train.evaluation.tournament` then play it game by game.

Reproducibility: the games are cut into chunks of consecutive tasks by their number
alone (:func:`chunk_bounds`); chunk ``c`` deals from a generator seeded by ``(seed,
KEY_BATCH, c)`` and resets every player once with a seed derived from ``(seed,
KEY_BATCH, c, player)`` (and its spec's own ``seed=``:
:func:`llama_env.agent.seed_keys`). The same seed gives the same results with
any number of workers. The deals are the batch's own, not the scalar runner's (whose
game ``i`` deals from ``(seed, i)``), so the two paths give different games of the same
distribution: equal statistics, not equal numbers.

Populations (an agent with ``population = True`` and ``members``, as ``perturbed``:
:func:`llama_env.agent.population_members`) seat a member per seat of each game, drawn
from the chunk's generator, as the scalar runner seats one per seat of each game with
the game's seed (:func:`train.evaluation.runner.seat_members`). An agent is reset once
per chunk, not once per game: an agent whose play depends on a per-game ``reset`` other
than through ``members`` must not offer ``act_batch``.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from llama_env.agent import Agent, AgentLike, own_keys, population_members, resolve, seed_int, seed_keys
from llama_env.batch import BatchGame, unplayed_options
from llama_env.engine import Action, Rules, check_seed
from llama_env.table import BatchTable, BatchTableListener, reset_seat, seat_positions
from train.evaluation.runner import (
    KEY_BATCH,
    ChunkExecutor,
    GameColumns,
    GameTask,
    RunArgs,
    agent_display_names,
    agent_list,
    carried,
    check_rules,
    play_games,
    run_chunks,
)

__all__ = [
    "CHUNK_GAMES",
    "SLOTS",
    "batch_refusal",
    "can_act_on_batches",
    "chunk_bounds",
    "play_batched",
    "play_either",
]

CHUNK_GAMES = 50_000
"""The most games in a chunk, the unit of work of a worker process with its own
generator: ``ceil(games / CHUNK_GAMES)`` chunks (an even number, when more than one, so
that two or four workers share them evenly) of equal size."""
SLOTS = 8192
"""Games played at once in a chunk (as one ends, the next task's game starts in its slot)."""

_DRAW, _QUIT = int(Action.DRAW), int(Action.QUIT)


def can_act_on_batches(agent: Agent) -> bool:
    """Whether ``agent`` (and every member of a population) has ``act_batch``."""
    members = population_members(agent)
    players = [agent] if members is None else list(members)
    return all(callable(getattr(p, "act_batch", None)) for p in players)


def batch_refusal(
    agents: Sequence[AgentLike],
    *,
    duplicate: bool = False,
    record_dir: str | Path | None = None,
    rules: Rules | None = None,
) -> str | None:
    """Why these games cannot be played on the batched engine, or ``None`` if they can:
    duplicate deals (the batch deals from its own generator, so it cannot replay one
    deal for several seatings), game records (written move by move by the scalar
    runner), a rule option it does not play yet (:func:`llama_env.batch.unplayed_options`),
    or an agent without ``act_batch`` (named). Builds the agents given by name."""
    unplayed = unplayed_options(rules) if rules is not None else []
    if unplayed:
        return f"the batched engine does not play the rule option {unplayed[0]!r} yet"
    if duplicate:
        return "duplicate deals replay one deal for several seatings, which the batch's own deals cannot"
    if record_dir is not None:
        return "game records are written move by move by the game-by-game runner"
    names = agent_display_names(agents)
    for name, agent in zip(names, agents, strict=True):
        if not can_act_on_batches(resolve(agent)):
            return f"agent {name!r} has no act_batch"
    return None


class _Recorder(BatchTableListener):
    """What a :class:`GameColumns` row holds beyond the scores, per slot of the batch,
    heard step by step (the batched counterpart of the scalar runner's listener)."""

    def __init__(self, slots: int, players: int) -> None:
        self.p = players
        self.counts = np.zeros((slots, players, 3), dtype=np.int64)  # plays, draws, quits
        self.quit_penalty = np.zeros((slots, players), dtype=np.int64)
        self.outs = np.zeros((slots, players), dtype=np.int64)
        self.decisions = np.zeros(slots, dtype=np.int64)

    def on_step(self, table: BatchTable, games: np.ndarray, seats: np.ndarray, actions: np.ndarray) -> None:
        kind = (actions >= _DRAW).astype(np.int64) + (actions == _QUIT)
        at = games * self.p + seats
        self.counts.reshape(-1)[at * 3 + kind] += 1  # one move per game: no index repeats
        self.decisions[games] += 1
        batch = table.batch
        quits = np.flatnonzero(kind == 2)
        if quits.size:  # the hand it quits with
            penalty = batch.penalties(games[quits])[np.arange(quits.size), seats[quits]]
            self.quit_penalty.reshape(-1)[at[quits]] += penalty
        plays = np.flatnonzero(kind == 0)
        if plays.size:  # a play of the last card goes out
            last = batch.hand_sizes(games[plays])[np.arange(plays.size), seats[plays]] == 1
            self.outs.reshape(-1)[at[plays[last]]] += 1

    def take(self, slots: np.ndarray) -> tuple[np.ndarray, ...]:
        """The counts of the games in ``slots``, which start anew."""
        out = (self.counts[slots], self.quit_penalty[slots], self.outs[slots], self.decisions[slots])
        self.counts[slots] = 0
        self.quit_penalty[slots] = 0
        self.outs[slots] = 0
        self.decisions[slots] = 0
        return out


def _play_batch_chunk(agents: list[Agent], args: RunArgs, job: tuple[int, int, np.ndarray]) -> GameColumns:
    """Play one chunk of games (``job``: the chunk's number, its first game's index and
    the games' seatings) on a batch of :data:`SLOTS` games, refilling each slot with the
    next game as its game ends."""
    chunk, start, seat_agents = job
    names, seed, rules, keys = args.names, args.seed, args.rules, args.keys
    p = rules.num_players
    gen = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(KEY_BATCH, chunk)))
    # every player: an agent, or each member of a population
    players: list[Agent] = []
    labels: list[str] = []
    first, size, own = [], [], []
    for agent, name, key in zip(agents, names, own_keys(agents, keys), strict=True):
        members = population_members(agent)
        group = [agent] if members is None else list(members)
        first.append(len(players))
        size.append(len(group))
        players.extend(group)
        own.extend([key] * len(group))
        labels.extend([name] if len(group) == 1 else [f"{name} member {k}" for k in range(len(group))])
    for k, player in enumerate(players):
        reset_seat(player, seed_int(seed, KEY_BATCH, chunk, k, *own[k]), labels[k], None)
    seating = np.array(first)[seat_agents] + gen.integers(np.array(size)[seat_agents])

    g = len(seat_agents)
    slots = min(g, SLOTS)
    batch = BatchGame(slots, rules=rules, seed=gen, auto_reset=False)
    heard = _Recorder(slots, p)
    table = BatchTable(batch, players, seating[:slots], names=labels, listener=heard)
    scores = np.zeros((g, p), dtype=np.int64)
    rounds = np.zeros(g, dtype=np.int64)
    actions = np.zeros((g, p, 3), dtype=np.int64)
    quit_penalty = np.zeros((g, p), dtype=np.int64)
    outs = np.zeros((g, p), dtype=np.int64)
    decisions = np.zeros(g, dtype=np.int64)

    def ended(done: np.ndarray, rows: np.ndarray) -> None:
        scores[rows] = batch.scores[done]
        rounds[rows] = batch.round[done]
        actions[rows], quit_penalty[rows], outs[rows], decisions[rows] = heard.take(done)

    table.play_games(seating, ended, first_game=start)  # errors name the evaluation's game index
    index = np.arange(start, start + g, dtype=np.int64)
    return GameColumns(index, seat_agents, scores, outs, rounds, decisions, actions, quit_penalty)


def chunk_bounds(games: int) -> list[int]:
    """Where the chunks of ``games`` games begin and end: ``ceil(games / CHUNK_GAMES)``
    chunks, made even when more than one, of sizes differing by one at most."""
    n = -(-games // CHUNK_GAMES)
    n += n > 1 and n % 2
    return [games * c // n for c in range(n + 1)]


def play_batched(
    agents: Sequence[AgentLike],
    seat_agents: np.ndarray,
    *,
    seed: int,
    workers: int | None,
    rules: Rules,
    progress: bool | str = False,
    executor: ChunkExecutor | None = None,
) -> GameColumns:
    """Play games ``0..G-1`` with the seatings ``seat_agents`` (``(G, P)``: the position
    in ``agents`` of the agent at each seat) by ``rules`` on the batched engine and return
    them in order. The chunks (:func:`chunk_bounds`) go to the worker processes (spread
    by ``executor``, :class:`~train.evaluation.runner.ChunkExecutor`).

    The arguments are checked as :func:`~train.evaluation.runner.play_games` checks its
    own: ``seat_agents`` an integer array of at least one row, each entry a position in
    ``agents`` (a ``ValueError`` names the first that is not)."""
    agents = agent_list(agents)
    seed = check_seed(seed)
    rules = check_rules(rules)
    seats = seat_positions(seat_agents, None, rules.num_players, len(agents), "seat_agents[{row}, {seat}]")
    names = agent_display_names(agents)
    bounds = chunk_bounds(len(seats))
    jobs = [(c, a, seats[a:b]) for c, (a, b) in enumerate(itertools.pairwise(bounds))]
    return run_chunks(
        agents,
        jobs,
        _play_batch_chunk,
        GameColumns.concat,
        args=RunArgs(names, seed, rules, None, seed_keys(agents)),
        workers=workers,
        sizes=[len(j[2]) for j in jobs],
        progress=progress,
        executor=executor,
    )


def play_either(
    agents: Sequence[AgentLike],
    seat_agents: np.ndarray,
    deal_keys: np.ndarray,
    *,
    seed: int,
    workers: int | None,
    rules: Rules,
    progress: bool | str,
    record_dir: str | Path | None,
    duplicate: bool,
    batched: bool | None,
    executor: ChunkExecutor | None = None,
) -> tuple[GameColumns, bool]:
    """Games ``0..G-1`` with the seatings ``seat_agents`` ``(G, P)``, played on the
    batched engine when ``batched`` is ``None`` and nothing refuses it
    (:func:`batch_refusal`) or when ``batched`` is ``True`` (a ``ValueError`` says why it
    cannot), else game by game by :func:`train.evaluation.runner.play_games`, game ``i``
    dealt from the deal key ``deal_keys[i]``; and whether they were batched. An agent made
    for other table sizes, or whose parameters go unused at this table, is warned about
    once, before any game."""
    if batched is not None:  # numpy's booleans too, as check_flag takes them for the other switches
        if not isinstance(batched, (bool, np.bool_)):
            raise ValueError(f"batched must be True, False or None (when it can), got {batched!r}")
        batched = bool(batched)  # np.False_ is not False
    if batched is not False:
        refusal = batch_refusal(agents, duplicate=duplicate, record_dir=record_dir, rules=rules)
        if refusal is None:
            return carried(
                lambda games: (games, True),
                play_batched,
                agents,
                seat_agents,
                seed=seed,
                workers=workers,
                rules=rules,
                progress=progress,
                executor=executor,
            )
        if batched:
            raise ValueError(f"these games cannot be played on the batched engine: {refusal}")
    tasks = [
        GameTask(i, key, tuple(seats))
        for i, (key, seats) in enumerate(zip(deal_keys.tolist(), seat_agents.tolist(), strict=True))
    ]
    return carried(
        lambda records: (GameColumns.of(records, rules.num_players), False),
        play_games,
        agents,
        tasks,
        seed=seed,
        workers=workers,
        rules=rules,
        progress=progress,
        record_dir=record_dir,
        executor=executor,
    )
