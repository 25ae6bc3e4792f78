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
  the Gymnasium env and the VecEnv deal identical games from identical generators.

Validation is one rule everywhere: an answer must be an action by
:func:`llama_env.engine.action_index` (an integer, not a bool, float or string), in
range, and legal; otherwise :class:`~llama_env.engine.IllegalActionError` names the
agent, the seat, what is wrong and the legal actions, and the game is left untouched.

A :class:`TableListener` hears every move (after it is validated, just before it is
applied, so it still sees the state the mover saw) and every round's result. The driver
itself keeps no other state, so a table can be driven by any mix of the calls above.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from llama_env.agent import Agent, agent_label, reset_agent
from llama_env.engine import Action, IllegalActionError, LlamaGame, RoundResult, Rules, action_index
from llama_env.observation import OBS_VERSIONS, action_mask, check_obs_version, encoder

__all__ = ["Table", "TableListener", "advance_all", "deal_table"]

_DRAW = int(Action.DRAW)


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
        seats: list[Agent | None] = [None] * n if agents is None else list(agents)
        if len(seats) != n:
            raise ValueError(f"a table of {n} players needs {n} seats (an agent or None each), got {len(seats)}")
        for seat, agent in enumerate(seats):
            if agent is not None and not callable(getattr(agent, "act", None)):
                raise TypeError(f"seat {seat}: an agent must have act(observation, action_mask) -> int, got {agent!r}")
            version = getattr(agent, "obs_version", 0) if agent is not None else 0
            if version:
                try:
                    check_obs_version(version)
                except ValueError as exc:
                    raise ValueError(f"seat {seat}: agent {agent!r}: {exc}") from None
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
        action = agent.act(_observe(agent, game, seat), action_mask(game.legal_actions()))
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
            action = agent.act(_observe(agent, game, seat), action_mask(game.legal_actions()))
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


def advance_all(tables: Sequence[Table]) -> list[tuple[int, RoundResult]]:
    """Advance every table until an outside seat must act or its game is over, asking
    the agents in batches.

    Each pass collects the tables whose seat to act has an agent and groups them by that
    agent object; an agent with ``act_batch(observations, masks)`` answers its whole
    group in one call (``(B, OBS_SIZE)`` float32 and ``(B, 9)`` bool), any other agent
    one decision at a time. Answers are validated and applied as in :meth:`Table.apply`.
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
    ``act_batch`` call when the agent has it, else one ``act`` per game."""
    one, many = encoder(getattr(agent, "obs_version", 0))
    batch = getattr(agent, "act_batch", None)
    if not callable(batch):
        return [agent.act(one(g, g.current_player), action_mask(g.legal_actions())) for g in games]
    masks = np.zeros((len(games), len(Action)), dtype=bool)
    for r, g in enumerate(games):
        masks[r, g.legal_actions()] = True
    answers = np.asarray(batch(many(games), masks))
    if answers.shape != (len(games),):
        raise ValueError(
            f"agent {name!r}: act_batch must return one action per observation, shape ({len(games)},), "
            f"got shape {answers.shape}"
        )
    return answers.tolist() if np.issubdtype(answers.dtype, np.integer) else list(answers)


def deal_table(
    rng: np.random.Generator,
    seat: int,
    opponents: Sequence[Agent],
    *,
    rules: Rules,
    random_first_player: bool = False,
    names: Sequence[str] | None = None,
    listener: TableListener | None = None,
) -> Table:
    """A new game by ``rules`` with an outside seat at ``seat`` and ``opponents`` at the
    others, in turn order from that seat's left.

    Each opponent is first reset with a seed drawn from ``rng`` (so a seeded env replays
    the opponents' choices too), then the game is dealt from ``rng``. ``Llama-v0`` and
    the batched VecEnv start every game through here, which is why the same generator
    gives both the same game. ``names`` labels the seats in messages (see :class:`Table`).
    """
    n = rules.num_players
    if len(opponents) != n - 1:
        raise ValueError(f"a table of {n} players needs {n - 1} opponents, got {len(opponents)}")
    agents: list[Agent | None] = [None] * n
    for i, agent in enumerate(opponents):
        agents[(seat + 1 + i) % n] = agent
    for agent in opponents:
        reset_agent(agent, int(rng.integers(2**31)))
    game = LlamaGame(rules=rules, rng=rng, random_first_player=random_first_player)
    return Table(game, agents, names=names, listener=listener)
