"""The table driver: the one place where agents are asked for moves, their answers are
validated, and moves are applied.

A :class:`Table` is a :class:`~llama_env.engine.LlamaGame` plus what sits at each seat:
an agent (anything with ``act(observation, action_mask) -> int``), or ``None`` for a
seat played from outside (a learner, a person at a terminal or a browser, the user of
the PettingZoo env). Every game loop of LLAMA-RL goes through it:

* :meth:`Table.play` plays a whole game among agents (evaluation, watching);
* :meth:`Table.advance` lets the agents move until an outside seat must act
  (``Llama-v0``, terminal play), and :meth:`Table.apply` applies that seat's move;
* :func:`advance_all` advances many tables together, answering all decisions that wait
  on one agent with one ``act_batch`` call when the agent has it (the batched VecEnv);
* :func:`deal_table` starts a game with one outside seat the way ``Llama-v0`` does, so
  the Gymnasium env and the VecEnv deal identical games from identical generators;
* :class:`BatchTable` drives the N games of a :class:`~llama_env.batch.BatchGame` at
  once: each agent answers all the games waiting on it in one ``act_batch`` call per
  step, and :meth:`BatchTable.apply` moves the outside seats (batched evaluation and
  training).

Validation is one rule everywhere: an answer must be an action by
:func:`llama_env.engine.action_index` (an integer, not a bool, float or string), in
range, and legal; otherwise :class:`~llama_env.engine.IllegalActionError` names the
agent, the seat, what is wrong and the legal actions, and the game is left untouched.
An agent whose ``act``, ``act_batch`` or ``reset`` raises is named the same way: the
driver raises :class:`AgentError` with the agent, its seat and the first line of its
error, the agent's own exception as the ``__cause__`` (an ``act_batch`` that answers in
the wrong shape is an :class:`AgentError` naming the agent too).

A :class:`TableListener` hears every move (after it is validated, just before it is
applied, so it still sees the state the mover saw) and every round's result; a
:class:`BatchTableListener` hears every step of a batch the same way. The driver itself
keeps no other state, so a table can be driven by any mix of the calls above.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from llama_env.agent import (
    Agent,
    SeedKey,
    agent_label,
    batch_from,
    check_agent,
    reset_agent,
    seat_for_game,
)
from llama_env.batch import BatchEngine
from llama_env.engine import (
    NUM_ACTIONS,
    Action,
    IllegalActionError,
    LlamaGame,
    RoundResult,
    Rules,
    action_index,
    brief,
    check_seat,
    error_line,
)
from llama_env.observation import OBS_VERSIONS, check_obs_version, encoder, unchecked_agent_mask

__all__ = [
    "AgentError",
    "Table",
    "TableListener",
    "advance_all",
    "deal_table",
    "BatchTable",
    "BatchTableListener",
    "BatchResult",
    "check_agent",
    "illegal_rows",
    "seat_positions",
]

_DRAW = int(Action.DRAW)


class AgentError(RuntimeError):
    """An agent failed at a table: its ``act``, ``act_batch`` or ``reset`` raised, or its
    ``act_batch`` answered in the wrong shape (not one action per observation).

    The message names the agent and its seat (``agent 'x' at seat 1: RuntimeError:
    ...``), as :attr:`agent` and :attr:`seat` do (``seat`` is ``None`` where one call
    answered games at several seats: an ``act_batch``); the agent's own exception is the
    ``__cause__``. An answer of the wrong shape has neither: ``seat`` is ``None`` and there
    is no cause, the message naming the agent and the shapes wanted and got. An agent that
    answers an illegal move raises :class:`~llama_env.engine.IllegalActionError` instead,
    which names them too (one that its own ``act`` raises, from a table inside it, is an
    ``AgentError`` of the agent); a ``KeyboardInterrupt``, a ``MemoryError`` or a missing
    package (``ModuleNotFoundError``) is not an agent's failure and goes through as it is."""

    def __init__(self, message: str, *, agent: str = "", seat: int | None = None) -> None:
        super().__init__(message)
        self.agent = agent
        self.seat = seat


_NOT_BLAMED = (ModuleNotFoundError, MemoryError)
"""What an agent's call may raise that the driver passes on as it is: what is no agent's
fault (a missing extra, memory). Anything else is the agent's, even an error that a
table inside it raised naming an agent of its own (a search's rollouts): the message
names the agent at this table first, that error after it."""


def agent_failed(exc: Exception, agent: str, seat: int | None, where: str = "") -> AgentError:
    """The :class:`AgentError` for ``exc``, raised by the agent labelled ``agent`` at
    ``seat`` (``None``: several seats), with ``where`` (`` in act_batch``) after the seat."""
    at = f" at seat {seat}" if seat is not None else ""
    return AgentError(f"agent {agent!r}{at}{where}: {error_line(exc, 200)}", agent=agent, seat=seat)


class _Blame:
    """``with _Blame(name, seat, where):`` around a call to the agent labelled ``name``:
    what it raises (but :data:`_NOT_BLAMED`) leaves as :func:`agent_failed`'s
    :class:`AgentError`, the agent's exception its ``__cause__``. ``seat`` may be a
    function that gives ``(seat, where)``, for a seat found only on failure."""

    __slots__ = ("name", "seat", "where")

    def __init__(self, name: str, seat: int | None | Callable[[], tuple[int | None, str]], where: str = "") -> None:
        self.name, self.seat, self.where = name, seat, where

    def __enter__(self) -> _Blame:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: object) -> None:
        if not isinstance(exc, Exception) or isinstance(exc, _NOT_BLAMED):
            return  # no error, or one that goes through as it is
        seat, where = self.seat() if callable(self.seat) else (self.seat, self.where)
        raise agent_failed(exc, self.name, seat, where) from exc


def reset_seat(agent: Agent, seed: int | None, name: str, seat: int | None) -> None:
    """:func:`~llama_env.agent.reset_agent` for the agent labelled ``name`` at ``seat``:
    what its ``reset`` raises is an :class:`AgentError` naming them."""
    with _Blame(name, seat, " in reset"):
        reset_agent(agent, seed)


class TableListener:
    """Hears what happens at a :class:`Table`. Subclass it and override what you need.

    ``on_move`` is called for every move once it has been validated and just before it
    is applied: ``table.game`` is still the state the mover saw, and for a draw
    ``drawn`` is the card that the draw is about to take (private to the mover: a
    listener that shows other seats must not reveal it). ``on_round_end`` is called
    after a round has been scored (and, unless the game ended, the next one dealt).
    """

    def on_move(self, table: Table, seat: int, action: int, drawn: int | None) -> None:
        """A validated move of ``seat`` (an action index 0..8), about to be applied."""

    def on_round_end(self, table: Table, result: RoundResult) -> None:
        """A round was scored; ``result.game_over`` says whether the game ended."""


def _not_a_name(agents: object) -> None:
    """A ``TypeError`` for a name where a table takes its list of agents: read letter by
    letter, ``"heuristic"`` was nine players (``player 0: an agent must have act(...),
    got 'h'``)."""
    if isinstance(agents, str):
        raise TypeError(
            f"agents must be a list of agents (or None for an outside seat), got the name {agents!r}: "
            f"make the agent first, agents.make({agents!r})"
        )


def _check_seats(seats: Iterable[tuple[int, Agent | None]]) -> None:
    """What a table checks of the agent at each seat (none for an outside seat), each
    error naming the seat: an agent (:func:`check_agent`) of an observation version the
    encoder knows."""
    for seat, agent in seats:
        if agent is not None:
            check_agent(agent, f"seat {seat}")
            try:  # any obs_version, None and False included: the encoder would refuse it naming no agent
                check_obs_version(getattr(agent, "obs_version", 0))
            except ValueError as exc:
                raise ValueError(f"seat {seat}: agent {agent_label(agent)!r}: {exc}") from None


class Table:
    """A game and what sits at each seat: an agent, or ``None`` for an outside seat.

    Args:
        game: the game to drive (its current state is where driving starts).
        agents: one entry per seat; ``None`` (or a shorter list padded with ``None``
            is NOT accepted: give every seat) marks a seat whose moves come from outside
            through :meth:`apply`. Default: every seat outside.
        names: a label per seat for messages (default: the agent's label, or
            ``player_<seat>`` for an outside seat).
        listener: a :class:`TableListener` that hears every move and round result.
    """

    __slots__ = ("game", "agents", "names", "listener")

    def __init__(
        self,
        game: LlamaGame,
        agents: Sequence[Agent | None] | None = None,
        *,
        names: Sequence[str] | None = None,
        listener: TableListener | None = None,
    ) -> None:
        n = game.num_players
        _not_a_name(agents)
        seats: list[Agent | None] = [None] * n if agents is None else list(agents)
        if len(seats) != n:
            raise ValueError(f"a table of {n} players needs {n} seats (an agent or None each), got {len(seats)}")
        _check_seats(enumerate(seats))
        if names is not None and len(names) != n:
            raise ValueError(f"names must label all {n} seats, got {len(names)}")
        self.game = game
        self.agents = seats
        self.names = (
            list(names)
            if names is not None
            else [agent_label(a) if a is not None else f"player_{s}" for s, a in enumerate(seats)]
        )
        self.listener = listener

    def seat(self, seat: int, agent: Agent | None) -> None:
        """Put ``agent`` (``None``: an outside seat) at ``seat`` of a game under way,
        checked as the table checks its seats at the start; its name stays (set
        :attr:`names` to change it)."""
        _check_seats([(seat, agent)])
        self.agents[seat] = agent

    # ------------------------------------------------------------------ queries

    @property
    def to_act(self) -> int:
        """The seat whose move it is."""
        return self.game.current_player

    @property
    def waiting_for_outside(self) -> bool:
        """Whether the game goes on and the seat to act has no agent."""
        return not self.game.game_over and self.agents[self.game.current_player] is None

    @property
    def waiting_for_agent(self) -> bool:
        """Whether the game goes on and the seat to act has an agent."""
        return not self.game.game_over and self.agents[self.game.current_player] is not None

    def who(self, seat: int) -> str:
        """How messages name ``seat``: ``agent 'heuristic' at seat 2`` or ``seat 0``."""
        if self.agents[seat] is None:
            return f"seat {seat}"
        return f"agent {self.names[seat]!r} at seat {seat}"

    # ------------------------------------------------------------------ moves

    def apply(self, action: object) -> RoundResult | None:
        """Apply the move of the seat to act, validated by the one rule.

        Returns the round's result when the move ended a round. Raises
        :class:`IllegalActionError` (the game untouched) for anything but a legal action.
        """
        if self.listener is None:  # the hot path of the envs: the engine validates
            try:
                return self.game.step(action)
            except IllegalActionError:
                raise self._error(self.game.current_player, action) from None
        return self._apply(self.game.current_player, action)

    def ask(self) -> int:
        """Ask the agent at the seat to act for its move, validate it and return it
        (not applied). Raises ``ValueError`` if that seat has no agent."""
        game = self.game
        seat = game.current_player
        agent = self.agents[seat]
        if agent is None:
            raise ValueError(f"seat {seat} has no agent: its move comes from outside (Table.apply)")
        action = _asked(agent, game, seat, self.names[seat])
        a = action_index(action)
        if a is None or not game.is_legal(a):
            raise self._error(seat, action)
        return a

    def play_turn(self) -> RoundResult | None:
        """Ask the agent at the seat to act and apply its move."""
        seat = self.game.current_player
        return self._apply(seat, self.ask())

    def advance(self) -> list[RoundResult]:
        """Let the agents move until an outside seat must act or the game is over;
        return the results of the rounds that ended meanwhile (usually none)."""
        game = self.game
        agents = self.agents
        listener = self.listener
        results: list[RoundResult] = []
        while not game.game_over:
            seat = game.current_player
            agent = agents[seat]
            if agent is None:
                break
            action = _asked(agent, game, seat, self.names[seat])
            # what _apply does, inlined: this loop is the hot path of evaluation
            if listener is None:
                try:
                    result = game.step(action)
                except IllegalActionError:
                    raise self._error(seat, action) from None
            else:
                a = action if type(action) is int else action_index(action)
                if a is None or not game.is_legal(a):
                    raise self._error(seat, action)
                listener.on_move(self, seat, a, game.draw_pile[-1] if a == _DRAW else None)
                result = game.step(a)
                if result is not None:
                    listener.on_round_end(self, result)
            if result is not None:
                results.append(result)
        return results

    def play(self) -> list[RoundResult]:
        """Play the game to its end among the agents; return every round's result.

        Raises ``ValueError`` when a seat has no agent."""
        missing = [s for s, a in enumerate(self.agents) if a is None]
        if missing:
            raise ValueError(f"Table.play needs an agent at every seat; seats {missing} have none")
        return self.advance()

    # ------------------------------------------------------------------ internals

    def _apply(self, seat: int, action: object) -> RoundResult | None:
        game = self.game
        listener = self.listener
        if listener is not None:
            a = action if type(action) is int else action_index(action)
            if a is None or not game.is_legal(a):
                raise self._error(seat, action)
            drawn = game.draw_pile[-1] if a == _DRAW else None
            listener.on_move(self, seat, a, drawn)
            result = game.step(a)
            if result is not None:
                listener.on_round_end(self, result)
            return result
        try:
            return game.step(action)
        except IllegalActionError:
            raise self._error(seat, action) from None

    def _error(self, seat: int, action: object) -> IllegalActionError:
        err = self.game.illegal_action_error(action, who=self.who(seat))
        if self.agents[seat] is not None:
            err.agent = self.names[seat]
        return err

    def __repr__(self) -> str:
        return f"Table({self.game!r}, seats={self.names})"


_ENCODE = {version: encoder(version)[0] for version in OBS_VERSIONS}


def _observe(agent: Agent, game: LlamaGame, seat: int) -> np.ndarray:
    """What ``agent`` sees at ``seat``: the observation in the version it reads (its
    ``obs_version`` attribute; 0, the 52-entry vector, when it has none)."""
    version = getattr(agent, "obs_version", 0)
    encode_one = _ENCODE.get(version)
    return (encode_one or encoder(version)[0])(game, seat)  # encoder() names an unknown version


def _asked(agent: Agent, game: LlamaGame, seat: int, name: str) -> object:
    """The answer of ``agent`` (labelled ``name``) at ``seat`` of ``game``, not yet
    validated; what its ``act`` raises is an :class:`AgentError` naming it and its seat."""
    obs, mask = _observe(agent, game, seat), unchecked_agent_mask(game.legal_actions())
    with _Blame(name, seat):
        return agent.act(obs, mask)


def _batch_seat(games: list[LlamaGame]) -> tuple[int | None, str]:
    """For an :class:`AgentError` of an ``act_batch`` over ``games``: the seat that acts in
    them all (``None`` where they differ), and where it failed."""
    seats = {g.current_player for g in games}
    return (seats.pop() if len(seats) == 1 else None), " in act_batch"


def advance_all(tables: Sequence[Table]) -> list[tuple[int, RoundResult]]:
    """Advance every table until an outside seat must act or its game is over, asking
    the agents in batches.

    Each pass collects the tables whose seat to act has an agent and groups them by that
    agent object; an agent with ``act_batch(observations, masks)`` answers its whole
    group in one call (``(B, OBS_SIZE)`` float32 and ``(B, 9)`` bool), unless the group
    is smaller than its :func:`~llama_env.agent.batch_from`; any other agent one decision
    at a time. Answers are validated and applied as in :meth:`Table.apply`; an
    ``act_batch`` answer of the wrong shape is an :class:`AgentError` naming the agent.
    Returns ``(table index, result)`` for every round that ended, in order.
    """
    ended: list[tuple[int, RoundResult]] = []
    pending = [i for i, t in enumerate(tables) if t.waiting_for_agent]
    while pending:
        groups: dict[int, list[int]] = {}
        for i in pending:
            t = tables[i]
            groups.setdefault(id(t.agents[t.game.current_player]), []).append(i)
        for idx in groups.values():
            first = tables[idx[0]]
            agent = first.agents[first.game.current_player]
            assert agent is not None  # grouped from tables waiting for an agent
            games = [tables[i].game for i in idx]
            moves = _answers(agent, games, first.names[first.game.current_player])
            for i, action in zip(idx, moves, strict=True):
                t = tables[i]
                result = t._apply(t.game.current_player, action)
                if result is not None:
                    ended.append((i, result))
        pending = [i for i in pending if tables[i].waiting_for_agent]
    return ended


def _answers(agent: Agent, games: list[LlamaGame], name: str) -> Sequence[object]:
    """One agent's answers to the decisions of ``games`` (at their seats to act): one
    ``act_batch`` call when the agent has it (and they are at least its
    :func:`~llama_env.agent.batch_from`), else one ``act`` per game."""
    batch = getattr(agent, "act_batch", None)
    if not callable(batch) or len(games) < batch_from(agent):
        return [_asked(agent, g, g.current_player, name) for g in games]
    many = encoder(getattr(agent, "obs_version", 0))[1]
    masks = np.zeros((len(games), len(Action)), dtype=bool)
    for r, g in enumerate(games):
        masks[r, g.legal_actions()] = True
    observations = many(games)
    with _Blame(name, functools.partial(_batch_seat, games)) as blame:
        answered = batch(observations, masks)
    answers = _batch_answers(blame, len(games), answered)
    return answers.tolist() if np.issubdtype(answers.dtype, np.integer) else list(answers)


def _batch_answers(blame: _Blame, rows: int, answered: object) -> np.ndarray:
    """``answered``, what the agent of ``blame`` returned from ``act_batch`` for ``rows``
    observations, as an array: what reading it raises is the agent's (``blame``), and any
    shape but ``(rows,)`` is an :class:`AgentError` naming it, or naming the answer itself
    where it is no array (``None``, where it said "got shape ()"). Raised outside
    ``blame``, which would name the agent twice."""
    with blame:
        answers = np.asarray(answered)
    if answers.shape != (rows,):
        got = f"shape {answers.shape}" if answers.ndim else brief(answered)
        name = blame.name
        raise AgentError(
            f"agent {name!r}: act_batch must return one action per observation, shape ({rows},), got {got}",
            agent=name,
        )
    return answers


def deal_table(
    rng: np.random.Generator,
    seat: int,
    opponents: Sequence[Agent],
    *,
    rules: Rules,
    random_first_player: bool = False,
    names: Sequence[str] | None = None,
    listener: TableListener | None = None,
    keys: Sequence[SeedKey] | None = None,
) -> Table:
    """A new game by ``rules`` with an outside seat at ``seat`` and ``opponents`` at the
    others, in turn order from that seat's left.

    Each opponent is first reset with a seed drawn from ``rng`` (so a seeded env replays
    the opponents' choices too), its own seed mixed in where ``keys`` (one per opponent,
    :func:`~llama_env.agent.seed_keys`; a population's is not mixed into its member's)
    gives it one (``random:seed=5`` and
    ``random:seed=6`` play differently, as in evaluation), then the game is dealt from
    ``rng``. ``Llama-v0`` and
    the scalar VecEnv start every game through here, which is why the same generator
    gives both the same game. A population (:func:`~llama_env.agent.is_population`, as
    ``perturbed``) is not seated itself: each of its seats gets a member of its own
    (:func:`~llama_env.agent.seat_for_game`), drawn from that seat's seed, the member the
    population's own ``reset`` would pick, and reset with it; its members are not checked
    here (callers :func:`~llama_env.agent.resolve` it once). ``names`` labels the seats
    in messages (see :class:`Table`; by default an opponent's label, a population's and
    not its member's).
    """
    n = rules.num_players
    seat = check_seat(seat, n)
    if len(opponents) != n - 1:
        raise ValueError(f"a table of {n} players needs {n - 1} opponents, got {len(opponents)}")
    if names is not None and len(names) != n:  # before any opponent is reset
        raise ValueError(f"names must label all {n} seats, got {len(names)}")
    if keys is not None and len(keys) != n - 1:
        raise ValueError(f"keys must hold one seed key per opponent ({n - 1}), got {len(keys)}")
    agents: list[Agent | None] = [None] * n
    labels = list(names) if names is not None else [f"player_{s}" for s in range(n)]
    for i, agent in enumerate(opponents):
        at = (seat + 1 + i) % n
        if names is None:
            labels[at] = agent_label(agent)
        drawn = int(rng.integers(2**31))
        with _Blame(labels[at], at, " in reset"):  # as reset_seat names it
            agents[at] = seat_for_game(agent, drawn, keys[i] if keys is not None else ())
    game = LlamaGame(rules=rules, rng=rng, random_first_player=random_first_player)
    return Table(game, agents, names=labels, listener=listener)


# --------------------------------------------------------------------------- many games at once


def illegal_rows(answers: np.ndarray, masks: np.ndarray) -> np.ndarray:
    """The rows (indices, ascending) whose integer answer is out of 0..8 or not legal by
    its row of ``masks`` (``(len(answers), 9)`` bool): the one rule of a batch of moves."""
    ok = (answers >= 0) & (answers < NUM_ACTIONS)
    ok &= masks[np.arange(answers.size), np.where(ok, answers, 0)]
    return np.flatnonzero(~ok)


def seat_positions(seating: object, rows: int | None, width: int, count: int, cell: str) -> np.ndarray:
    """``seating`` checked as positions in a list of ``count`` players, ``width`` seats a
    row: an integer array of shape ``(rows, width)`` (``rows`` ``None``: any number, one
    at least), each entry ``0..count - 1`` (a negative one would silently seat a player
    from the list's end). Else a ``ValueError`` naming the first bad entry by ``cell``
    (formatted with ``row`` and ``seat``) or the shape by ``cell``'s name. The seatings
    of :class:`BatchTable` and of the evaluation's runners. Returns it as ``int64``."""
    a = np.asarray(seating)
    expected = (max(1, a.shape[0]) if a.ndim else 1) if rows is None else rows  # (0 rows: no game)
    if a.ndim != 2 or a.shape[1] != width or a.dtype.kind not in "iu" or a.shape[0] != expected:
        name = cell.split("[", 1)[0].split(" row", 1)[0]
        shape = f"({rows}, {width})" if rows is not None else f"(games, {width}), one game at least"
        raise ValueError(
            f"{name} must be an integer array of shape {shape}: a player position per seat, "
            f"got {brief(seating)} of shape {a.shape}"
        )
    bad = (a < 0) | (a >= count)
    if bad.any():
        row, seat = (int(x) for x in np.argwhere(bad)[0])
        where = cell.format(row=row, seat=seat)
        raise ValueError(f"{where}: {int(a[row, seat])} is not a player position 0..{count - 1}")
    return a.astype(np.int64)


class BatchTableListener:
    """Hears what happens at a :class:`BatchTable`. Subclass it and override what you need.

    ``on_step`` is called once per step of the batch, after the step's moves have been
    validated and just before they are applied: ``table.batch`` is still the state the
    movers saw. ``games`` are the indices of the games that move (ascending), ``seats``
    and ``actions`` the seat that moves in each and its action, all ``(K,)`` int64.
    """

    def on_step(self, table: BatchTable, games: np.ndarray, seats: np.ndarray, actions: np.ndarray) -> None:
        """The validated moves of one step, about to be applied."""


@dataclass(frozen=True)
class BatchResult:
    """What :meth:`BatchTable.advance` or :meth:`BatchTable.apply` did."""

    rewards: np.ndarray
    """``(N, players)`` float32: each seat's ``"game"`` reward, summed over the steps
    taken (nonzero only in the games that ended)."""
    ended: np.ndarray
    """``(N,)`` bool: the games that ended in these steps (with ``auto_reset`` already
    replaced by new games, without it over and waiting for :meth:`BatchTable.reset`)."""
    steps: int
    """Steps of the batch taken."""


class BatchTable:
    """The games of a :class:`~llama_env.batch.BatchGame` and who sits at each seat of each.

    Args:
        batch: the games to drive (N of them, ``P`` seats each).
        agents: the players, each an agent or ``None`` for an outside player whose moves
            come through :meth:`apply` (a learner). An agent's ``act_batch(observations,
            masks)`` answers all the games waiting on it at once (fewer than its
            :func:`~llama_env.agent.batch_from` are asked through ``act``); one without
            it is asked with ``act`` game by game (correct, slower).
        seating: ``(N, P)`` integers, ``seating[i, s]`` the position in ``agents`` of the
            player at seat ``s`` of game ``i``, so that games may seat different players;
            default: seat ``s`` of every game is ``agents[s]`` (``agents`` then has ``P``
            entries). One agent object may sit in many games and seats: it is asked once
            per step for all of them.
        names: a label per entry of ``agents`` for messages (default: the agent's label,
            ``outside`` for ``None``).
        listener: a :class:`BatchTableListener` that hears every step.

    Each agent sees the observation version it reads (its ``obs_version`` attribute, 0 by
    default), from :meth:`BatchGame.observation <llama_env.batch.BatchGame.observation>`.
    Answers are validated by the one rule of :class:`Table`: one integer action per game,
    legal in that game; otherwise an
    :class:`~llama_env.engine.IllegalActionError` names the agent, the game, the seat, what
    is wrong and the legal actions (an ``act_batch`` answer of the wrong shape is an
    :class:`AgentError` naming the agent), and no game has moved.
    """

    __slots__ = (
        "batch",
        "agents",
        "names",
        "listener",
        "_seats",
        "_player",
        "_asks",
        "_versions",
        "_ar_seats",
        "_game_numbers",
    )

    def __init__(
        self,
        batch: BatchEngine,
        agents: Sequence[Agent | None],
        seating: np.ndarray | Sequence[Sequence[int]] | None = None,
        *,
        names: Sequence[str] | None = None,
        listener: BatchTableListener | None = None,
    ) -> None:
        if not isinstance(batch, BatchEngine):
            raise TypeError(
                "a BatchTable drives a batched engine (llama_env.batch.BatchEngine, such as BatchGame), "
                f"got {brief(batch)}"
            )
        _not_a_name(agents)
        players = list(agents)
        if not players:
            raise ValueError("a BatchTable needs at least one player (an agent, or None for an outside seat)")
        versions = []
        for k, agent in enumerate(players):
            if agent is None:
                versions.append(0)
                continue
            check_agent(agent, f"player {k}")
            try:
                versions.append(check_obs_version(getattr(agent, "obs_version", 0)))
            except ValueError as exc:
                raise ValueError(f"player {k}: agent {agent_label(agent)!r}: {exc}") from None
        if names is not None and len(names) != len(players):
            raise ValueError(f"names must label all {len(players)} players, got {len(names)}")
        self.batch = batch
        self.agents = players
        """The players; a seat's entry of the seating indexes this list."""
        self.names = (
            list(names) if names is not None else [agent_label(a) if a is not None else "outside" for a in players]
        )
        self.listener = listener
        # who answers for each player: the first position of the same agent object, so one
        # object is asked once per step however many positions it holds; -1 for outside
        first: dict[int, int] = {}
        self._asks = np.array([-1 if a is None else first.setdefault(id(a), k) for k, a in enumerate(players)])
        self._versions = versions
        self._game_numbers: tuple[np.ndarray, int] | None = None
        """While :meth:`play_games` plays: each slot's row and the first game's number, so
        that errors name a game as its caller numbers it."""
        n, p = batch.num_games, batch.num_players
        self._ar_seats = np.arange(n) * p
        if seating is None:
            if len(players) != p:
                raise ValueError(
                    f"without a seating, agents are one per seat: a table of {p} players needs {p}, got {len(players)}"
                )
            self._seats = np.tile(np.arange(p, dtype=np.int64), n)
        else:
            self._seats = self._checked_seating(seating, n).reshape(-1).copy()
        self._player = self._seats  # (N * P,) flat: the player at each seat of each game

    # ------------------------------------------------------------------ seating

    @property
    def seating(self) -> np.ndarray:
        """``(N, P)``: the position in :attr:`agents` of the player at each seat (a copy)."""
        return self._seats.reshape(self.batch.num_games, self.batch.num_players).copy()

    def seat(self, games: np.ndarray | Sequence[int], seating: np.ndarray | Sequence[Sequence[int]]) -> None:
        """Seat new players in ``games`` (indices): ``seating`` has a row of ``P`` player
        positions per game. Their games go on as they are (see :meth:`reset`)."""
        g = self._checked_games(games)
        rows = self._checked_seating(seating, g.size)
        p = self.batch.num_players
        self._seats.reshape(-1, p)[g] = rows

    def reset(
        self,
        games: np.ndarray | Sequence[int] | None = None,
        seating: np.ndarray | Sequence[Sequence[int]] | None = None,
    ) -> None:
        """Start new games (all, or those at the indices ``games``) and, with ``seating``
        (a row per game), seat new players in them: how a table without ``auto_reset``
        plays on with the games it needs."""
        g = np.arange(self.batch.num_games) if games is None else self._checked_games(games)
        if seating is not None:
            self.seat(g, seating)
        self.batch.reset(g)

    def play_games(
        self,
        seating: np.ndarray | Sequence[Sequence[int]],
        on_end: Callable[[np.ndarray, np.ndarray], None],
        first_game: int = 0,
    ) -> None:
        """Play one game per row of ``seating`` (``(G, P)`` player positions, ``G`` at least
        the table's ``N`` games) through the table's games used as slots: the slots take
        the first ``N`` rows, and each slot whose game ends starts the next row's game
        (:meth:`reset`) until every row is played. The batch must not start new games by
        itself (``auto_reset=False``) and its games must not have begun: they are the first
        ``N`` rows' games.

        ``on_end(slots, rows)`` is called whenever games end, before their slots start
        anew: the slots (indices into the batch, whose scores and round still show the
        finished games) and the row of ``seating`` each of them played. An illegal answer
        names its game as ``first_game`` plus its row (the caller's numbering: an
        evaluation's game index), not as the slot it was played in.
        """
        batch = self.batch
        if batch.auto_reset:
            raise ValueError("play_games starts the next games itself: make the BatchGame with auto_reset=False")
        a = np.asarray(seating)
        if a.ndim != 2:
            raise ValueError(
                f"seating must be an integer array of shape (games, {batch.num_players}): a row of player "
                f"positions per game, got {brief(seating)} of shape {a.shape}"
            )
        rows = self._checked_seating(a, a.shape[0])
        n, g = batch.num_games, rows.shape[0]
        if g < n:
            raise ValueError(f"play_games needs at least a row of seating per game of the batch ({n}), got {g}")
        outside = np.flatnonzero(self._asks < 0)
        if np.isin(rows, outside).any():
            raise ValueError(
                f"play_games plays whole games with agents only: player position(s) {outside.tolist()} "
                "are outside players (None), whose moves come from apply() instead"
            )
        begun = np.flatnonzero(~batch.unbegun())
        if begun.size:
            raise ValueError(
                f"play_games plays the batch's games from their first deal: game {int(begun[0])} has begun "
                f"({begun.size} game(s) in all); make a new BatchGame(auto_reset=False) or reset() it"
            )
        self.seat(np.arange(n), rows[:n])
        row_of = np.arange(n)  # each slot's row of seating
        busy = np.ones(n, dtype=bool)
        started = n
        self._game_numbers = (row_of, first_game)
        try:
            while busy.any():
                self.advance(steps=1)
                done = np.flatnonzero(batch.game_over & busy)
                if not done.size:
                    continue
                on_end(done, row_of[done])
                more = min(done.size, g - started)
                if more:
                    self.reset(done[:more], rows[started : started + more])
                    row_of[done[:more]] = np.arange(started, started + more)
                    started += more
                busy[done[more:]] = False
        finally:
            self._game_numbers = None

    def _checked_games(self, games: object) -> np.ndarray:
        return self.batch.checked_games(games)  # the batch's games: its one check

    def _checked_seating(self, seating: object, rows: int) -> np.ndarray:
        return seat_positions(seating, rows, self.batch.num_players, len(self.agents), "seating row {row}, seat {seat}")

    # ------------------------------------------------------------------ queries

    def _to_act(self) -> tuple[np.ndarray, np.ndarray]:
        """Each game's seat to act and the position of the player there."""
        cp = self.batch.current_player
        return cp, self._player[self._ar_seats + cp]

    @property
    def waiting_for_outside(self) -> np.ndarray:
        """``(N,)`` bool: the games that go on and whose seat to act is an outside player's."""
        _, who = self._to_act()
        return (self._asks[who] < 0) & ~self.batch.game_over

    @property
    def waiting_for_agent(self) -> np.ndarray:
        """``(N,)`` bool: the games that go on and whose seat to act has an agent."""
        _, who = self._to_act()
        return (self._asks[who] >= 0) & ~self.batch.game_over

    # ------------------------------------------------------------------ moves

    def advance(self, steps: int | None = None) -> BatchResult:
        """Let the agents move in every game until an outside seat must act or the game
        ends, at most ``steps`` steps of the batch (default: as many as that takes).

        Each step asks every agent with a game waiting on it once, for all those games,
        validates the answers and steps the batch in those games (the others wait). A
        game that ends moves no further in this call: with ``auto_reset`` the new game
        that replaced it waits for the next call, so its rewards never mix with the old
        one's (reseat it first with :meth:`seat` if you like).
        """
        if steps is not None:
            if isinstance(steps, (bool, np.bool_)) or not isinstance(steps, (int, np.integer)) or steps < 0:
                raise ValueError(f"steps must be a non-negative integer or None, got {brief(steps)}")
            steps = int(steps)
        batch = self.batch
        n = batch.num_games
        total = np.zeros((n, batch.num_players), dtype=np.float32)
        ended = np.zeros(n, dtype=bool)
        taken = 0
        while steps is None or taken < steps:
            cp, who = self._to_act()
            asks = self._asks[who]
            acting = (asks >= 0) & ~batch.game_over & ~ended
            games = np.flatnonzero(acting)
            if not games.size:
                break
            actions = self._answers(games, asks[games])
            self._step(games, cp, actions, None if games.size == n else acting, total, ended)
            taken += 1
        return BatchResult(total, ended, taken)

    def apply(self, actions: np.ndarray | Sequence[int]) -> BatchResult:
        """Apply the outside players' moves: ``actions`` ``(N,)`` integers, read in the
        games waiting for an outside seat (:attr:`waiting_for_outside`) and ignored in the
        others, which wait. Raises ``ValueError`` for another shape or dtype and
        :class:`~llama_env.engine.IllegalActionError` naming the first game whose move is
        illegal and its seat; no game has moved then."""
        batch = self.batch
        n = batch.num_games
        a = np.asarray(actions)
        if a.shape != (n,) or a.dtype.kind not in "iu":
            raise ValueError(
                f"actions must be an integer array of shape ({n},), one per game, got {brief(actions)} "
                f"of shape {a.shape} ({a.dtype})"
            )
        total = np.zeros((n, batch.num_players), dtype=np.float32)
        ended = np.zeros(n, dtype=bool)
        moving = self.waiting_for_outside
        games = np.flatnonzero(moving)
        if not games.size:
            return BatchResult(total, ended, 0)
        cp, _ = self._to_act()
        moves = a[games].astype(np.int64)
        self._check(moves, batch.legal_action_mask[games], games, -1)
        full = np.zeros(n, dtype=np.int64)
        full[games] = moves
        self._step(games, cp, full, None if games.size == n else moving, total, ended)
        return BatchResult(total, ended, 1)

    # ------------------------------------------------------------------ internals

    def _step(
        self,
        games: np.ndarray,
        cp: np.ndarray,
        actions: np.ndarray,
        where: np.ndarray | None,
        total: np.ndarray,
        ended: np.ndarray,
    ) -> None:
        """Tell the listener, then step the batch in ``games`` (``where``; ``None``: all)."""
        if self.listener is not None:
            self.listener.on_step(self, games, cp[games], actions[games])
        batch = self.batch
        total += batch.step_checked(actions, where)  # the answers were checked (_check) against the same masks
        ended[games] |= batch.terminated[games]

    def _answers(self, games: np.ndarray, asks: np.ndarray) -> np.ndarray:
        """Every acting agent's validated answers, ``(N,)`` (0 in the games not asked):
        the observations of the games asked (``games``, ascending), one array per version,
        and each agent's rows of them."""
        batch = self.batch
        n = batch.num_games
        every = games.size == n
        masks = batch.legal_action_mask if every else batch.legal_action_mask[games]
        first = int(asks[0])
        if (asks == first).all():
            groups: list[tuple[int, np.ndarray | None]] = [(first, None)]
        else:
            order = np.argsort(asks, kind="stable")  # game order kept within each agent
            keys, starts = np.unique(asks[order], return_index=True)
            bounds = [*starts.tolist(), order.size]
            groups = [(int(k), order[bounds[j] : bounds[j + 1]]) for j, k in enumerate(keys.tolist())]
        seen: dict[int, np.ndarray] = {}
        actions = np.zeros(n, dtype=np.int64)
        for k, at in groups:
            version = self._versions[k]
            obs = seen.get(version)
            if obs is None:
                obs = seen[version] = batch.observation(version) if every else batch.observation(version, games=games)
            if at is None:
                actions[games] = self._ask(k, obs, masks, games)
            else:
                rows = games[at]
                actions[rows] = self._ask(k, obs[at], masks[at], rows)
        return actions

    def _ask(self, k: int, obs: np.ndarray, masks: np.ndarray, games: np.ndarray) -> np.ndarray:
        """Agent ``k``'s answers for ``games``, validated: one ``act_batch`` call, or one
        ``act`` per game for an agent without it or for fewer games than its
        :func:`~llama_env.agent.batch_from`."""
        agent = self.agents[k]
        assert agent is not None  # only agents are asked
        masks.flags.writeable = False  # the answers are checked against it: the agent may not edit it
        batch_act: Callable[[np.ndarray, np.ndarray], np.ndarray] | None = getattr(agent, "act_batch", None)
        if callable(batch_act) and games.size >= batch_from(agent):
            where = f" in act_batch ({games.size} game{'s' if games.size != 1 else ''})"
            with _Blame(self.names[k], None, where) as blame:
                answered = batch_act(obs, masks)
            answers = _batch_answers(blame, games.size, answered)
            if answers.dtype.kind == "O":  # Python objects (a list with a None in it): each by the one rule
                read = [action_index(x) for x in answers.tolist()]
                bad = [r for r, a in enumerate(read) if a is None]
                if bad:
                    raise self._illegal(k, int(games[bad[0]]), answers[bad[0]], len(bad) - 1)
                answers = np.array(read, dtype=np.int64)
            elif answers.dtype.kind not in "iu":
                raise self._illegal(k, int(games[0]), answers[0].item(), games.size - 1)
        else:
            out = []
            for r in range(games.size):
                mask = unchecked_agent_mask(np.flatnonzero(masks[r]).tolist())
                with _Blame(self.names[k], functools.partial(self._seat_and_game, int(games[r]))):
                    answer = agent.act(obs[r], mask)
                a = action_index(answer)
                if a is None:
                    raise self._illegal(k, int(games[r]), answer)
                out.append(a)
            answers = np.array(out, dtype=np.int64)
        self._check(answers, masks, games, k)
        return answers.astype(np.int64, copy=False)

    def _check(self, answers: np.ndarray, masks: np.ndarray, games: np.ndarray, k: int) -> None:
        """The one rule for integer ``answers`` of player ``k`` (-1: an outside seat) in
        ``games``: each in range and legal by its row of ``masks``."""
        bad = illegal_rows(answers, masks)
        if bad.size:
            raise self._illegal(k, int(games[bad[0]]), answers[bad[0]].item(), bad.size - 1)

    def game_numbers(self, games: np.ndarray) -> np.ndarray:
        """The numbers of the batch's ``games`` (slots), as the table's messages name them:
        during :meth:`play_games`, each one's row of its seating plus ``first_game``; the
        slots themselves otherwise. How a listener tells which game a step's moves are of."""
        g = np.asarray(games, dtype=np.int64)
        if self._game_numbers is None:
            return g.copy()
        row_of, first_game = self._game_numbers
        return row_of[g] + first_game

    def _seat_of(self, game: int) -> tuple[int, int]:
        """The seat to act in ``game`` (a slot of the batch) and the game's number for
        messages (its row of :meth:`play_games`' seating, or the slot)."""
        return int(self.batch.current_player[game]), int(self.game_numbers(np.array([game]))[0])

    def _seat_and_game(self, game: int) -> tuple[int, str]:
        """The seat to act in ``game`` and `` of game N``, for an :class:`AgentError`."""
        seat, number = self._seat_of(game)
        return seat, f" of game {number}"

    def _illegal(self, k: int, game: int, action: object, others: int = 0) -> IllegalActionError:
        """The engine's error for ``action`` in ``game``, naming the agent (player ``k``;
        -1: an outside seat), the game and the seat."""
        state = LlamaGame.from_dict(self.batch.snapshot(game))
        seat = state.current_player
        agent = k >= 0 and self.agents[k] is not None
        _, number = self._seat_of(game)
        who = f"agent {self.names[k]!r} at seat {seat} of game {number}" if agent else f"game {number}, seat {seat}"
        err = state.illegal_action_error(action, who=who)
        if agent:
            err.agent = self.names[k]
        if others:
            err.args = (f"{err.args[0]} (and {others} more game(s) with an illegal answer)",)
        return err

    def __repr__(self) -> str:
        return f"BatchTable({self.batch!r}, players={self.names})"
