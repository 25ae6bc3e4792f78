"""Games for the browser: sessions on the table driver, what the browser may see, game
records and their replay, and a bounded store of live games.

Everything here is plain Python, tested without a web server; :mod:`train.play.web`
puts HTTP in front of it.

What the browser receives is built by :meth:`GameSession.view` and the events of
:class:`_Events`: in a game with a person, only what that person's seat may know (their
own hand and their own drawn cards, the top card, the draw pile's size -- never its
order --, every seat's score, hand size and whether it quit); the hands of the others
only when the rules show them, at the scoring of a round. In a watched or replayed game
there is no person, and every hand is shown (the draw pile's order never is).
"""

from __future__ import annotations

import copy
import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

import numpy as np

from llama_env.agent import Agent, AgentSpec, agent_label, parse_agent_spec, reset_agent
from llama_env.engine import (
    DEFAULT_END_SCORE,
    DEFAULT_HAND_SIZE,
    MAX_PLAYERS,
    MIN_PLAYERS,
    Action,
    IllegalActionError,
    LlamaGame,
    RoundResult,
    action_index,
    validate_rule_options,
    winners,
)
from llama_env.record import RECORD_FORMAT, GameRecording
from llama_env.render_svg import table_svg
from llama_env.table import Table, TableListener

__all__ = [
    "GameSession",
    "SessionStore",
    "SessionError",
    "GameRecording",
    "new_game",
    "replay",
    "RECORD_FORMAT",
    "move_text",
]

MAX_EVENTS = 500


class SessionError(ValueError):
    """A request that cannot be done: ``status`` is the HTTP status that fits it."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


def move_text(name: str, action: int, drawn: int | None = None, *, own: bool = False) -> str:
    """A move in words: ``player_2 plays 5``, ``You draw a llama``."""
    who = "You" if own else name
    a = Action(action)
    if a == Action.DRAW:
        if own and drawn is not None:
            return f"You draw {'a llama' if drawn == 7 else f'a {drawn}'}"
        return f"{who} draw{'' if own else 's'}"
    if a == Action.QUIT:
        return f"{who} quit{'' if own else 's'} the round"
    card = int(a) + 1
    verb = "play" if own else "plays"
    return f"{who} {verb} {'a llama' if card == 7 else card}"


class _Events(TableListener):
    """Turns what the table driver reports into events for one viewer, and records the
    game's moves."""

    def __init__(self, session: GameSession) -> None:
        self.session = session
        self.pending: list[dict[str, Any]] = []
        self._moved: dict[str, Any] | None = None

    def on_move(self, table: Table, seat: int, action: int, drawn: int | None) -> None:
        s = self.session
        s.recording.moves.append((seat, action))
        own = seat == s.human
        self._moved = {
            "type": "move",
            "seat": seat,
            "name": s.names[seat],
            "action": action,
            "text": move_text(s.names[seat], action, drawn, own=own),
        }
        if drawn is not None and (own or s.human is None):
            self._moved["drawn"] = drawn  # a drawn card is shown to its owner (or a spectator) only

    def after_move(self) -> None:
        """Called once the move is applied: the event gets the picture of the table."""
        event = self._moved
        if event is not None:
            event["svg"] = self.session.svg()
            self.pending.append(event)
            self._moved = None

    def on_round_end(self, table: Table, result: RoundResult) -> None:
        s = self.session
        if self._moved is not None:
            self.after_move()
        best = min(result.scores)
        self.pending.append(
            {
                "type": "round",
                "round": result.round,
                "went_out": result.went_out,
                "penalties": list(result.penalties),
                "returned": list(result.returned),
                "scores": list(result.scores),
                "hands": [list(h) for h in result.hands],  # the rules show every hand at scoring
                "game_over": result.game_over,
                "winners": [p for p, v in enumerate(result.scores) if v == best] if result.game_over else [],
                "text": (
                    f"Round {result.round} over: "
                    + (f"{s.names[result.went_out]} went out." if result.went_out is not None else "everybody quit.")
                ),
                "svg": s.svg(),
            }
        )


class GameSession:
    """One game in the browser: ``human`` is the person's seat (``None`` when agents sit
    everywhere or a record is replayed)."""

    def __init__(
        self,
        game: LlamaGame,
        agents: Sequence[Agent | None],
        *,
        names: Sequence[str],
        labels: Sequence[str],
        human: int | None,
        mode: str,
    ) -> None:
        self.id = secrets.token_urlsafe(18)
        self.mode = mode
        self.human = human
        self.names = list(names)
        self.labels = list(labels)
        self.recording = GameRecording(self.names, self.labels, game.to_dict())
        self.events = _Events(self)
        self.table = Table(game, agents, names=self.names, listener=self.events)
        self.lock = threading.Lock()
        self.touched = time.monotonic()
        self._replay: list[tuple[int, int]] = []

    @property
    def game(self) -> LlamaGame:
        return self.table.game

    # ------------------------------------------------------------------ what the viewer sees

    def svg(self) -> str:
        g = self.game
        legal = []
        if self.human is not None and g.current_player == self.human and not g.game_over:
            legal = [a + 1 for a in g.legal_actions() if a <= Action.PLAY_LLAMA]
        return table_svg(g, self.human, names=self.names, reveal=self.human is None or g.game_over, legal_cards=legal)

    def view(self) -> dict[str, Any]:
        """The state the browser may see (see the module docstring)."""
        g = self.game
        seats = []
        for p in range(g.num_players):
            seat: dict[str, Any] = {
                "name": self.names[p],
                "agent": self.labels[p],
                "score": g.scores[p],
                "quit": g.quit[p],
                "hand_size": g.hand_size_of(p),
            }
            if p == self.human or self.human is None:
                seat["hand"] = g.hand(p)
            seats.append(seat)
        your_turn = self.human is not None and g.current_player == self.human and not g.game_over
        state: dict[str, Any] = {
            "id": self.id,
            "mode": self.mode,
            "human": self.human,
            "num_players": g.num_players,
            "end_score": g.end_score,
            "round": g.round,
            "top_card": g.top_card,
            "draw_pile": len(g.draw_pile),
            "current_player": g.current_player,
            "game_over": g.game_over,
            "your_turn": your_turn,
            "legal": g.legal_actions() if your_turn else [],
            "seats": seats,
            "svg": self.svg(),
            "moves_left": len(self._replay),
        }
        if self.human is not None:
            state["hand"] = g.hand(self.human)
            state["penalty"] = g.penalty(self.human)
        if g.game_over:
            best = min(g.scores)
            order = sorted(range(g.num_players), key=lambda p: (g.scores[p], p))
            state["standings"] = [
                {"seat": p, "name": self.names[p], "score": g.scores[p], "winner": g.scores[p] == best} for p in order
            ]
        return state

    def take_events(self) -> list[dict[str, Any]]:
        out, self.events.pending = self.events.pending[-MAX_EVENTS:], []
        return out

    # ------------------------------------------------------------------ moves

    def move(self, action: object) -> None:
        """The person's move, validated by the driver's one rule, then the agents' replies."""
        if self.mode != "play":
            raise SessionError(f"this game is being {self.mode}ed: it takes no moves", 409)
        g = self.game
        if g.game_over:
            raise SessionError("the game is over", 409)
        if g.current_player != self.human:
            raise SessionError(f"it is {self.names[g.current_player]}'s turn, not yours", 409)
        if action_index(action) is None:
            raise SessionError(f"an action must be an integer 0..8, got {action!r}", 400)
        try:
            self.table.apply(action)
        except IllegalActionError as exc:
            raise SessionError(str(exc), 409) from None
        self.events.after_move()
        self._advance()

    def step(self, moves: int = 1) -> None:
        """Watched or replayed games: the next ``moves`` moves."""
        if self.mode == "play":
            raise SessionError("step is for watched and replayed games; play with moves", 409)
        for _ in range(moves):
            g = self.game
            if g.game_over:
                break
            if self.mode == "replay":
                if not self._replay:
                    break
                seat, action = self._replay.pop(0)
                if seat != g.current_player:
                    raise SessionError(f"the record has seat {seat} move when seat {g.current_player} is to act", 422)
                try:
                    self.table.apply(action)
                except IllegalActionError as exc:
                    raise SessionError(f"the record holds an illegal move: {exc}", 422) from None
            else:
                self.table.play_turn()
            self.events.after_move()

    def _advance(self) -> None:
        """Let the agents move until the person must act (each move an event)."""
        g = self.game
        while not g.game_over and self.table.waiting_for_agent:
            self.table.play_turn()
            self.events.after_move()


# --------------------------------------------------------------------------- making games


def _specs(value: Any, count: int, what: str) -> list[AgentSpec]:
    items = [value] * count if isinstance(value, str) else value
    if not isinstance(items, list) or len(items) != count:
        raise SessionError(f"'{what}' must be an agent name, or a list of {count} of them")
    out = []
    for item in items:
        if not isinstance(item, str):
            raise SessionError(f"'{what}' holds {item!r}, which is not an agent name")
        try:
            out.append(parse_agent_spec(item, check=False))
        except (TypeError, ValueError) as exc:
            raise SessionError(f"'{what}': {exc}") from None
    return out


def _int(body: dict[str, Any], key: str, default: int, low: int, high: int) -> int:
    value = body.get(key, default)
    if type(value) is not int or not low <= value <= high:
        raise SessionError(f"'{key}' must be an integer {low}..{high}, got {value!r}")
    return value


def new_game(body: Any, build: Any = None) -> GameSession:
    """A session from a request body: ``mode`` ``"play"`` (default) or ``"watch"``,
    ``players`` (2..6), ``seat`` (the person's, when playing), ``opponents`` (one name
    for every other seat, or a list in seat order) or ``agents`` (watching: one per
    seat), ``seed`` (optional), ``end_score`` and ``hand_size``. ``build(spec, seed)``
    makes an agent (default: the registry). Bad input is a :class:`SessionError`."""
    if not isinstance(body, dict):
        raise SessionError("the request body must be a JSON object")
    unknown = sorted(set(body) - {"mode", "players", "seat", "opponents", "agents", "seed", "end_score", "hand_size"})
    if unknown:
        raise SessionError(f"unknown field {unknown[0]!r}")
    mode = body.get("mode", "play")
    if mode not in ("play", "watch"):
        raise SessionError(f"'mode' must be 'play' or 'watch', got {mode!r}")
    n = _int(body, "players", 3, MIN_PLAYERS, MAX_PLAYERS)
    end_score = _int(body, "end_score", DEFAULT_END_SCORE, 1, 1000)
    hand_size = _int(body, "hand_size", DEFAULT_HAND_SIZE, 1, 55)
    try:
        validate_rule_options(n, end_score, hand_size)
    except ValueError as exc:
        raise SessionError(str(exc)) from None
    seed = body.get("seed")
    if seed is not None and (type(seed) is not int or not 0 <= seed < 2**63):
        raise SessionError(f"'seed' must be a non-negative integer, got {seed!r}")
    seeds = np.random.SeedSequence(seed).generate_state(n + 1, np.uint64).tolist()
    seat_specs: list[AgentSpec | None]
    if mode == "play":
        human: int | None = _int(body, "seat", 0, 0, n - 1)
        specs = _specs(body.get("opponents", "heuristic"), n - 1, "opponents")
        others = [p for p in range(n) if p != human]
        seat_specs = [None] * n
        for p, spec in zip(others, specs, strict=True):
            seat_specs[p] = spec
    else:
        human = None
        seat_specs = [*_specs(body.get("agents", "heuristic"), n, "agents")]
    agents: list[Agent | None] = []
    for p, seat_spec in enumerate(seat_specs):
        if seat_spec is None:
            agents.append(None)
            continue
        try:
            agent = build(seat_spec, int(seeds[p + 1])) if build is not None else seat_spec.build(int(seeds[p + 1]))
        except (TypeError, ValueError, OSError) as exc:
            raise SessionError(f"agent {seat_spec.label!r}: {exc}") from None
        reset_agent(agent, int(seeds[p + 1]))
        agents.append(agent)
    names = ["You" if p == human else f"player_{p}" for p in range(n)]
    labels = ["person" if a is None else agent_label(seat_specs[p] or a) for p, a in enumerate(agents)]
    game = LlamaGame(n, end_score=end_score, hand_size=hand_size, rng=int(seeds[0]))
    session = GameSession(game, agents, names=names, labels=labels, human=human, mode=mode)
    if mode == "play":
        session._advance()  # the agents before the person's first turn
    return session


def replay(record: Any) -> GameSession:
    """A session that replays a game record move by move (see :class:`GameRecording`)."""
    try:
        rec = GameRecording.from_json(record)
    except ValueError as exc:
        raise SessionError(f"cannot replay this record: {exc}") from None
    game = LlamaGame.from_dict(copy.deepcopy(rec.start))
    session = GameSession(
        game, [None] * game.num_players, names=rec.names, labels=rec.agents, human=None, mode="replay"
    )
    session._replay = list(rec.moves)
    return session


# --------------------------------------------------------------------------- the store


class SessionStore:
    """Live games, bounded: at most ``max_games`` at once, each forgotten after
    ``idle_seconds`` without a request; when the store is full, a new game replaces the
    least recently used game that is over (if none is over, it is refused). Ids are
    unguessable (``secrets``)."""

    def __init__(self, max_games: int = 200, idle_seconds: float = 1800.0) -> None:
        self.max_games = max_games
        self.idle_seconds = idle_seconds
        self._games: OrderedDict[str, GameSession] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._games)

    def add(self, session: GameSession) -> GameSession:
        with self._lock:
            self._expire()
            if len(self._games) >= self.max_games:
                # room is made by forgetting the least recently used game that is over
                finished = next((k for k, s in self._games.items() if s.game.game_over), None)
                if finished is not None:
                    del self._games[finished]
            if len(self._games) >= self.max_games:
                raise SessionError(
                    f"the server holds {self.max_games} live games already; try again when one ends or expires", 503
                )
            self._games[session.id] = session
            return session

    def get(self, game_id: str) -> GameSession:
        with self._lock:
            self._expire()
            session = self._games.get(game_id)
            if session is None:
                raise SessionError("no such game (it may have expired)", 404)
            session.touched = time.monotonic()
            self._games.move_to_end(game_id)
            return session

    def _expire(self) -> None:
        now = time.monotonic()
        while self._games:
            oldest = next(iter(self._games.values()))
            if now - oldest.touched < self.idle_seconds:
                break
            self._games.popitem(last=False)


def standings_text(scores: Sequence[int], names: Sequence[str]) -> str:
    best = winners(list(scores))
    return ", ".join(f"{names[p]} {scores[p]}" + (" (wins)" if p in best else "") for p in range(len(scores)))
