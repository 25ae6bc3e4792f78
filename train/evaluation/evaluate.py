"""Evaluate agents at one table: win shares with confidence intervals, scores and how
each agent plays (:func:`evaluate`).

The games are played on the table driver: on the batched engine when every agent can
act on a batch (:mod:`train.evaluation.batched`), else game by game
(:func:`train.evaluation.runner.play_games`); seeds, workers and reproducibility are
described there, the statistics in :mod:`train.evaluation.stats`.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from llama_env import __version__
from llama_env.agent import AgentLike
from llama_env.engine import (
    DEFAULT_RULES,
    MAX_PLAYERS,
    MIN_PLAYERS,
    Rules,
    check_flag,
    check_num_players,
    check_seed,
    rule_option_fields,
)
from llama_env.render import plural
from train.evaluation.batched import play_either
from train.evaluation.runner import (
    ChunkExecutor,
    GameColumns,
    GamesInterrupted,
    agent_display_names,
    agent_list,
    check_num_games,
)
from train.evaluation.stats import AgentStats, aggregate, json_number, pandas

__all__ = ["EvalResult", "evaluate", "seatings", "table_orders"]


class ByAgentName:
    """A result read as a dict of the agents' results by display name, as the docs read
    it: ``result["heuristic"]`` (the class's ``__getitem__``, which takes a list position
    too), ``"heuristic" in result``, ``for name in result`` (the names, in list order) and
    ``len(result)`` (the agents). Without these Python read ``in`` and ``for`` through
    ``__getitem__`` by position, so ``"heuristic" in result`` was ``False``."""

    names: list[str]
    rules: Rules
    num_games: int
    seed: int

    @property
    def num_players(self) -> int:
        """The table size, ``rules.num_players``."""
        return self.rules.num_players

    @property
    def win_shares(self) -> list[float]:
        """Each agent's win share, as listed."""
        raise NotImplementedError

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name in self.names

    def __iter__(self) -> Iterator[str]:
        return iter(self.names)

    def __len__(self) -> int:
        return len(self.names)

    def __eq__(self, other: object) -> bool:
        """Every field equal: arrays element by element, and a NaN (an undefined number, as
        an idle agent's win share) equal to a NaN, so two runs of one seed are equal. The
        dataclass's own ``==`` asked a numpy array for its truth, a ``ValueError``."""
        if type(other) is not type(self):
            return NotImplemented
        return same_values(vars(self), vars(other))

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        """IPython shows a result that ends a notebook cell as ``print`` does: its table
        (the dataclass's fields were 800 characters of numbers on one line)."""
        printer.text(str(self))

    def __repr__(self) -> str:
        """One line: the games and each agent's win share (the table is ``str``)."""
        wins = ", ".join(f"{n} {w:.3f}" for n, w in zip(self.names, self.win_shares, strict=True))
        return (
            f"<{type(self).__name__}: {plural(self.num_games, 'game')}, {self.num_players} players, "
            f"seed {self.seed}; win shares {wins}>"
        )


def same_values(a: object, b: object) -> bool:
    """``a == b`` for a result's fields: numpy arrays, dataclasses, lists, tuples and
    dicts compared item by item, a NaN equal to a NaN."""
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return (
            isinstance(a, np.ndarray)
            and isinstance(b, np.ndarray)
            and a.dtype == b.dtype
            and bool(np.array_equal(a, b, equal_nan=a.dtype.kind in "fc"))
        )
    if dataclasses.is_dataclass(a) and not isinstance(a, type):
        return type(a) is type(b) and same_values(vars(a), vars(b))
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(same_values(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(map(same_values, a, b))
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return bool(a == b)


@dataclass(eq=False, repr=False)  # ByAgentName's: the dataclass's == failed on arrays, its repr ran long
class EvalResult(ByAgentName):
    """What :func:`evaluate` measured; per agent in the order of the agents list.

    ``print(result)`` shows :meth:`to_table`, as does a notebook cell ending with it;
    :meth:`to_dict` and :meth:`to_dataframe` serve notebooks. ``result["heuristic"]`` (or
    ``result[0]``) is one agent's :class:`AgentStats`; ``"heuristic" in result``, ``for
    name in result`` and ``len(result)`` read it as a dict of the agents by name. The
    per-game arrays (``shares`` to ``quit_penalty``) are kept for further analysis; their
    agents axis follows the agents list, not the seats. Two results are ``==`` when every
    field is, as two runs of one seed are; ``repr`` is one line of the win shares.
    """

    names: list[str]
    """The agents' display names, in the order of the agents list."""
    rules: Rules
    """The rules every game was played by (:meth:`to_dict` writes each option by name)."""
    num_games: int
    """The games played (with ``duplicate``, rounded up to a multiple of the table size)."""
    seed: int
    """The seed every deal and every agent's ``reset`` derive from."""
    duplicate: bool
    """Whether each deal was replayed with the seating rotated through the table."""
    rotate: bool
    """Whether the seating shifted by one seat each game."""
    agents: list[AgentStats]
    """Each agent's results (win share with its 95% interval, score, rates), as listed."""
    rounds_per_game: float
    """The mean number of rounds a game lasted."""
    shares: np.ndarray = field(repr=False)
    """Each agent's share of the win in each game, shape ``(games, agents)``."""
    scores: np.ndarray = field(repr=False)
    """Each agent's final score in each game, shape ``(games, agents)``."""
    outs: np.ndarray = field(repr=False)
    """How many rounds each agent ended by going out in each game, shape ``(games, agents)``."""
    rounds: np.ndarray = field(repr=False)
    """Each game's rounds, shape ``(games,)``."""
    decisions: np.ndarray = field(repr=False)
    """The actions taken in each game, all seats together, shape ``(games,)``."""
    actions: np.ndarray = field(repr=False, default_factory=lambda: np.zeros((0, 0, 3)))
    """Each agent's plays, draws and quits in each game, shape ``(games, agents, 3)``."""
    quit_penalty: np.ndarray = field(repr=False, default_factory=lambda: np.zeros((0, 0)))
    """The hand penalty each agent held at its quits, summed per game, shape ``(games, agents)``."""
    batched: bool = False
    """Whether the games were played on the batched engine (their own deals) rather than
    game by game (the deals of ``seed`` and the game index)."""
    every_order: bool = False
    """Whether the order in which the agents follow one another round the table varied
    too (:func:`seatings`), not only their seats."""

    def __getitem__(self, key: int | str) -> AgentStats:
        """Stats by list position or display name (a ``KeyError`` lists the names)."""
        return self.agents[agent_position(self.names, key, "evaluation")]

    @property
    def win_shares(self) -> list[float]:
        """Each agent's win share, as listed (the numbers of :attr:`agents`)."""
        return [a.win_share for a in self.agents]

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON data, no per-game arrays (an undefined number, as the penalty an
        agent that never quit quit with, is ``None``). ``batched`` is there because the
        same seed deals other games on the batched engine: it is part of what repeats
        a result."""
        return {
            "num_players": self.num_players,
            "num_games": self.num_games,
            "seed": self.seed,
            "duplicate": self.duplicate,
            "rotate": self.rotate,
            "every_order": self.every_order,
            "batched": self.batched,
            "llama_rl_version": __version__,  # which engine, agents and chunking made these numbers
            **self.rules.options(),
            "rounds_per_game": self.rounds_per_game,
            "agents": [{k: json_number(v) for k, v in vars(a).items()} for a in self.agents],
        }

    def to_dataframe(self) -> Any:
        """A pandas DataFrame, one row per agent (needs pandas)."""
        pd = pandas()

        return pd.DataFrame([vars(a) for a in self.agents]).set_index("name")

    def to_table(self) -> str:
        """A plain-text table, one row per agent."""
        mode = "duplicate deals" if self.duplicate else ("rotated seats" if self.rotate else "fixed seats")
        if self.every_order:
            mode += ", every order"
        engine = "batched engine" if self.batched else "game by game"
        head = (
            f"{plural(self.num_games, 'game')}, {self.num_players} players, {mode}, {engine}, seed {self.seed}, "
            f"{rules_text(self.rules)}; {self.rounds_per_game:.2f} rounds/game"
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


def agent_position(names: Sequence[str], key: int | str, what: str) -> int:
    """The list position of the agent a result is indexed with, ``key`` a position or a
    display name; an unknown name is a ``KeyError`` that lists the ``what``'s agents
    (``list.index`` said only "'x' is not in list")."""
    if not isinstance(key, str):
        return key
    if key not in names:
        raise KeyError(f"no agent {key!r} in this {what}; its agents: {', '.join(names)}")
    return list(names).index(key)


def table_rules(num_players: int, rules: Rules | None, options: dict[str, Any], caller: str) -> Rules | None:
    """``rules``, or the rules at ``num_players`` of the rule options given by name to
    ``caller`` (a ``TypeError`` names a keyword that is none, as Python would; a
    ``ValueError`` refuses both forms at once)."""
    if not options:
        return rules
    known = [f.name for f in rule_option_fields()]
    unknown = [k for k in options if k not in known]
    if unknown:
        raise TypeError(
            f"{caller}() got an unexpected keyword argument {unknown[0]!r} (rule options: {', '.join(known)})"
        )
    if rules is not None:
        return Rules.given(rules, **options)  # refuses both forms at once, naming the options
    return Rules(num_players, **options)  # checked at this table size


def rules_text(rules: Rules) -> str:
    """The rule options of a result's first line: the end score always, any other option
    where it is not the standard rules' (``end_score 40``, ``end_score 40, hand_size 4``)."""
    standard = DEFAULT_RULES.options()
    shown = {k: v for k, v in rules.options().items() if k == "end_score" or v != standard[k]}
    return ", ".join(f"{k} {v}" for k, v in shown.items())


def table_orders(n: int) -> list[tuple[int, ...]]:
    """The ``(n - 1)!`` orders round a table of ``n`` (positions ``0..n-1``) that differ
    other than by a rotation: position 0 first, the others in every order, the list's own
    first."""
    return [(0, *rest) for rest in itertools.permutations(range(1, n))]


def _check_rotation(*, rotate: bool, duplicate: bool = False, every_order: bool = False) -> None:
    """A ``ValueError`` where what always rotates the seats (``duplicate``, ``every_order``)
    is asked for with ``rotate=False``, naming the Python argument and ``llama-rl eval``'s
    flag for each, for a caller of either."""
    if not rotate and duplicate:
        raise ValueError(
            "duplicate=True (--duplicate) plays every deal from every seat, so it always rotates the seats: "
            "not with rotate=False (--no-rotate)"
        )
    if not rotate and every_order:
        raise ValueError(
            "every_order=True (--every-order) changes the order round the table, so it rotates the seats too: "
            "not with rotate=False (--no-rotate)"
        )


def seatings(num_games: int, num_players: int, *, rotate: bool = True, every_order: bool = False) -> np.ndarray:
    """Who sits where in each game of an evaluation: ``(num_games, num_players)``, the
    position in the agents list of the agent at each seat.

    With ``rotate``, game ``i`` shifts the seating by ``i mod n``: agent ``j`` sits at
    seat ``(j + i) mod n``, so every agent plays from every seat, but always right after
    the same agent (the one before it in the list). With ``every_order`` the order round
    the table changes too: each block of ``n`` games (a block of rotations, one deal of
    a duplicate evaluation) takes the next of the ``(n - 1)!`` orders of agents ``1..n-1``
    after agent 0 (the first, the list's own), so ``n!`` games play every seating once.
    Without either, every agent keeps its seat.

    ``num_games`` is a non-negative integer and ``num_players`` an integer 2..6 (a
    ``ValueError`` otherwise); ``every_order`` rotates, so with ``rotate=False`` it is a
    ``ValueError``, as :func:`evaluate` says."""
    num_games = check_seed(num_games, "num_games")
    n = check_num_players(num_players)
    rotate, every_order = check_flag("rotate", rotate), check_flag("every_order", every_order)
    _check_rotation(rotate=rotate, every_order=every_order)
    index = np.arange(num_games)
    shift = index % n if rotate else np.zeros(num_games, dtype=np.int64)
    seats = (np.arange(n)[None, :] + shift[:, None]) % n  # [game, list position] -> seat
    if every_order:
        orders = np.array(table_orders(n))
        order = orders[(index // n) % len(orders)]  # [game, place round the table] -> list position
        seats = np.take_along_axis(seats, np.argsort(order, axis=1), axis=1)  # agent order[p] takes place p's seat
    at = np.empty_like(seats)
    np.put_along_axis(at, seats, np.arange(n)[None, :].repeat(num_games, axis=0), axis=1)
    return at


def evaluate(
    agents: Sequence[AgentLike],
    num_games: int,
    *,
    seed: int = 0,
    workers: int | None = None,
    duplicate: bool = False,
    rotate: bool = True,
    rules: Rules | None = None,
    progress: bool = False,
    record_dir: str | Path | None = None,
    batched: bool | None = None,
    executor: ChunkExecutor | None = None,
    every_order: bool = False,
    **options: int,
) -> EvalResult:
    """Play ``num_games`` games with ``agents`` at one table and measure each of them.

    Args:
        agents: the table, 2..6 entries, each an agent object or a registered name
            (names may repeat: ``["heuristic", "random", "random", "random"]``), or one
            comma-separated string of them (``"heuristic,random"``). Results are
            reported per list position.
        num_games: games to play. With ``duplicate`` it is rounded up to a multiple of
            the table size (``result.num_games`` is the number played).
        seed: derives every deal and every agent's ``reset(seed)`` per game index (a
            non-negative integer). A spec's own ``seed=`` is mixed into its agent's
            (:func:`~llama_env.agent.seed_keys`): ``random:seed=5`` and
            ``random:seed=6`` play differently; an agent object's own seed is replaced.
        workers: processes to use; ``None`` = every core this process may use
            (:func:`~train.evaluation.runner.usable_cores`), 1 = this process; more
            worker processes than those cores is a ``RuntimeWarning``. Worker
            processes play with copies of the agent objects (pickled over), so what an
            agent records as it plays (``search``'s ``searched``) stays in the copies and
            the objects passed are left as they were; ``workers=1`` plays with them.
        duplicate: replay each deal sequence (the same shuffles) with the seating
            rotated through all n rotations, so luck of the deal cancels out; the
            confidence intervals are then computed over deal groups.
        rotate: game ``i`` shifts the seating by ``i mod n`` (agent ``j`` sits at seat
            ``(j + i) mod n``), so no agent keeps the first seat. ``duplicate`` and
            ``every_order`` rotate: with ``rotate=False`` either is a ``ValueError``.
        every_order: also change the order in which the agents follow one another
            (:func:`seatings`): with rotation alone each agent always plays right
            after the same one, which moves a result by a little when the others
            differ (0.005 of a win share, say). ``n!`` games play every seating once
            (24 at 4 players). It rotates too: with ``rotate=False`` it is a
            ``ValueError``. With copies of one opponent only which copy sits where
            changes: the numbers move as another seed's would, their expectation does not.
        rules: the rules every game is played by; their ``num_players`` must be the
            number of agents (a ``ValueError`` otherwise). Default: the standard rules
            at that table size, ``Rules(len(agents))``.
        progress: show a tqdm progress bar. On the batched engine it moves a chunk of
            games at a time (up to 50,000: :data:`~train.evaluation.batched.CHUNK_GAMES`).
        record_dir: also write every game there as a game record (``game_<index>.json``),
            which ``llama-rl serve`` replays; a string's leading ``~`` is the home folder.
            A folder that holds records already, or takes no new file, is a ``ValueError``
            before the first game.
        batched: play on the batched engine (:mod:`train.evaluation.batched`): ``None``
            (the default) whenever it can (every agent has ``act_batch``, no duplicate
            deals, no records), ``True`` to insist (a ``ValueError`` says why it cannot),
            ``False`` to play game by game. The batch deals its own cards, so its numbers
            differ from the game-by-game path's for the same seed, within the intervals.
        options: rule options by name instead of ``rules`` (``end_score=20``,
            ``hand_size=4``: :func:`llama_env.engine.rule_option_fields`), as the envs
            take them; not both.
        executor: where the chunks of games are played when ``workers`` is above 1: a
            :class:`~train.evaluation.runner.ChunkExecutor` (default: a process pool on
            this machine, :class:`~train.evaluation.runner.LocalProcesses`). Any executor
            gives the same numbers for the same seed.

    Stopped by Ctrl-C, it raises :class:`~train.evaluation.runner.GamesInterrupted`, a
    ``KeyboardInterrupt`` whose ``partial`` is the result of the first games that had
    finished (``None`` if none had); on the batched engine, of the chunks finished.
    """
    agents = agent_list(agents)
    n = len(agents)
    if not MIN_PLAYERS <= n <= MAX_PLAYERS:
        raise ValueError(f"evaluate needs {MIN_PLAYERS}..{MAX_PLAYERS} agents (one per seat), got {n}")
    rules = Rules.for_table(n, table_rules(n, rules, options, "evaluate"))
    num_games = check_num_games(num_games)
    seed = check_seed(seed)
    duplicate, rotate = check_flag("duplicate", duplicate), check_flag("rotate", rotate)
    every_order = check_flag("every_order", every_order)
    _check_rotation(rotate=rotate, duplicate=duplicate)  # every_order: seatings checks it, before any game
    if duplicate:
        num_games = math.ceil(num_games / n) * n
    index = np.arange(num_games)
    seat_agents = seatings(num_games, n, rotate=rotate, every_order=every_order)
    deal_keys = index // n if duplicate else index
    names = agent_display_names(agents)

    def measured(games: GameColumns, was_batched: bool) -> EvalResult:
        return EvalResult(
            names=names,
            rules=rules,
            num_games=len(games),
            seed=seed,
            duplicate=duplicate,
            rotate=rotate,
            **aggregate(games, names, duplicate, n),
            batched=was_batched,
            every_order=every_order,
        )

    try:
        games, was_batched = play_either(
            agents,
            seat_agents,
            deal_keys,
            seed=seed,
            workers=workers,
            rules=rules,
            progress=progress,
            record_dir=record_dir,
            duplicate=duplicate,
            batched=batched,
            executor=executor,
        )
    except GamesInterrupted as stop:  # the games finished, measured; whole deals, on which the intervals rest
        whole = stop.games // n * n if duplicate else stop.games
        stop.carry(lambda finished: measured(finished[0].head(whole), finished[1]), whole)
        raise
    return measured(games, was_batched)
