"""Games for the browser: sessions on the table driver, what each viewer may see, game
records and their replay, and a bounded store of live games.

Everything here is plain Python, tested without a web server; :mod:`train.play.web`
puts HTTP in front of it.

**Who sees what.** A game has seats for people and seats for agents. Each person holds
a secret *token* for their seat (the page that created the game holds them all, to hand
out as links); a watched or replayed game has one *owner* token. What a viewer receives
is built by :meth:`GameSession.view`: a person sees their own hand and their own drawn
cards, the top card, the draw pile's size (never its order), every seat's score, hand
size and whether it quit, and the others' hands only when the rules show them, at the
scoring of a round. The owner of a watched or replayed game sees every hand (the draw
pile's order never). A game's record (the start with the generator's state, so every
later deal) is given out only once the game is over. A person may leave the table while
another plays on, and one whose page has sent no request for :data:`AWAY_SECONDS`, or
whose move the table has awaited for :data:`TURN_SECONDS`, may have their seat handed to
an agent by another person at the table when it is their turn
(:meth:`GameSession.hand_over`); their token then shows that seat and moves nothing.

**An agent that fails** at its turn (its ``act`` raises, or it answers a move the rules
refuse: a plugin's bug) stops its game for good: the view's ``stopped`` says which agent at
which seat and why, the game takes no more moves and is not saved
(:attr:`GameSession.failed`). A failure that passes (the process of costly agents
stopped twice) leaves the game waiting, and a later look tries again
(:attr:`GameSession.stalled`).

**Seeds.** A seed chosen in a request is mixed with the store's secret before it deals,
so the same seed repeats a game on this server but tells the person nothing about the
others' hands. Only a game with one person at most takes one: whoever starts a game
could start another with its seed, watch it, and see every hand and the draw pile's
order, which at a table of several people are the others' secrets.

**Bounds.** Names are at most :data:`NAME_LENGTH` characters, agent specs at most
:data:`SPEC_LENGTH`; agents take no file paths unless the server allows model
directories; numeric agent parameters are finite and inside the ``request_limits`` an
agent class declares; a request steps at most :data:`MAX_STEP` moves, and a response
carries at most :data:`MAX_EVENTS` events (it says when it left older ones out). A
replayed record holds at most :data:`MAX_RECORD_MOVES` moves, and its names, agents,
start and context at most :data:`RECORD_PART_BYTES` each.
"""

from __future__ import annotations

import contextlib
import copy
import json
import logging
import math
import os
import re
import secrets
import threading
import time
import weakref
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import Field, dataclass, field
from pathlib import Path
from typing import Any, NamedTuple, overload

import numpy as np

from agents.ppo import model_file
from llama_env import __version__
from llama_env._install import MissingExtra
from llama_env.agent import (
    Agent,
    AgentSpec,
    agent_label,
    forewarn,
    is_path_parameter,
    parse_agent_spec,
    request_limits,
    resolve,
    seat_for_game,
    seed_keys,
    table_warnings,
)
from llama_env.engine import (
    DEFAULT_RULES,
    MAX_PLAYERS,
    MIN_PLAYERS,
    NUM_ACTIONS,
    Action,
    IllegalActionError,
    LlamaGame,
    RoundResult,
    Rules,
    action_index,
    brief,
    card_name,
    check_rule_option,
    option_high,
    rule_option_fields,
    winners,
)
from llama_env.observation import check_obs_version
from llama_env.record import RECORD_FORMAT, GameRecording
from llama_env.table import AgentError, Table, TableListener
from train.evaluation.runner import agent_display_names
from train.play.agent_host import AgentHostFull, AgentLost
from train.play.history import context_seat, stayed_winners

__all__ = [
    "GameSession",
    "SessionStore",
    "SessionError",
    "GameRecording",
    "AgentPolicy",
    "new_game",
    "replay",
    "RECORD_FORMAT",
    "move_text",
    "MAX_EVENTS",
    "int_field",
    "known_fields",
    "rule_options",
    "MAX_STEP",
    "NAME_LENGTH",
    "SPEC_LENGTH",
]

log = logging.getLogger("llama_rl.serve")
"""The server's log (:mod:`train.play.web`): what the page is not told, its operator reads."""

MAX_EVENTS = 200
"""Events in one response at most (a response that leaves older ones out says so)."""
KEEP_FRAMES = MAX_EVENTS
"""Frames (moves) a game keeps for viewers who fall behind: no more than one response
sends, since each frame holds an event at least (2,000 kept a long 6-player game at
5.6 MB of the server's memory, 1.1 GB at the default 200 games, for frames no response
could carry)."""
MAX_STEP = 200
"""Moves one step request may ask for."""
RESUME_SECONDS = 5.0
"""How often at most a look at a game that an agent's error stopped tries its agents
again (:attr:`GameSession.stalled`): an agent that fails every time must not be asked
at every poll of every page."""
SLOW_STEP_SECONDS = 0.25
"""How long one step request of a game in the slow lane (:attr:`GameSession.slow`) goes
on moving: the lane is one, and 200 moves of searching agents held every other game
with a costly agent for seconds. The page asks again for the rest."""
AWAY_SECONDS = 90.0
"""How long the table waits for a person whose page sends no request before another
person at the table may hand the seat to an agent (:meth:`GameSession.hand_over`). A
page open on a game asks at least every 15 s (a browser slows the timers of a page in
the background to about one a minute); a closed tab, or a phone whose screen locked,
asks nothing."""
TURN_SECONDS = 300.0
"""How long the table waits for a person's move, their page open or not, before another
person at the table may hand the seat to an agent: a page left open on a desk, or in a
tab behind others, still asks, so :data:`AWAY_SECONDS` alone would let it hold the
table for ever. A move in L.L.A.M.A. takes seconds; five minutes is no hurry."""
HAND_OVER_AGENT = "heuristic"
"""The agent that takes over a seat when the request names none."""
PERSON = "person"
"""The label of a person's seat in a game's record (its ``agents``)."""
NAME_LENGTH = 40
"""Longest name of a person or a seat in a record."""
SPEC_LENGTH = 100
"""Longest agent spec (or agent label in a record)."""
MAX_RECORD_MOVES = 20_000
"""Moves in a replayed record at most (a long game has a few hundred)."""
RECORD_PART_BYTES = 65_536
"""Largest ``names``, ``agents``, ``start`` and ``context`` of a replayed record, each
as compact JSON (a real record's are well under a kilobyte; a replay keeps its record,
and a 2 MB context of empty lists held 45 MB of the server's memory per replay)."""
SLOW_MOVE = 0.02
"""Seconds an agent's move takes on average in a game the server computes apart."""
PARAMETER_BOUND = 1e9
"""No numeric agent parameter from a request is larger than this in size."""


class SessionError(ValueError):
    """A request that cannot be done: ``status`` is the HTTP status that fits it."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


def move_text(name: str, action: int, drawn: int | None = None, *, own: bool = False) -> str:
    """A move in words: ``Ann plays 5``, ``You draw a llama``."""
    who = "You" if own else name
    a = Action(action)
    if a == Action.DRAW:
        if own and drawn is not None:
            return f"You draw {card_name(drawn)}"
        return f"{who} draw{'' if own else 's'}"
    if a == Action.QUIT:
        return f"{who} quit{'' if own else 's'} the round"
    card = int(a) + 1
    return f"{who} {'play' if own else 'plays'} {'a llama' if card == 7 else card}"


def _names_text(names: Sequence[str]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


# --------------------------------------------------------------------------- frames


class _State(NamedTuple):
    """The whole table after a move (every hand: :meth:`GameSession.view` filters them)."""

    round: int
    top_card: int
    draw_pile: int
    current_player: int
    starter: int
    game_over: bool
    scores: tuple[int, ...]
    quit: tuple[bool, ...]
    hands: tuple[tuple[int, ...], ...]
    penalties: tuple[int, ...]
    legal: tuple[int, ...]


_Frame = tuple[int, tuple[tuple[tuple[str, Any], ...], ...], tuple[Any, ...]]
"""One change of the table: its number, the events it brought (each as the items of its
dict), and the :class:`_State` after it, all as plain tuples. A server keeps thousands
of frames, and plain tuples of numbers and strings are the one kind of container the
garbage collector stops tracking (a dict, a named tuple or a tuple holding either stays
tracked for ever): scanning them made the slowest responses under load several times
slower."""


class _Roles(NamedTuple):
    """Who plays which seat, replaced whole by a hand-over (one assignment: a view on
    another thread reads one consistent value)."""

    people: tuple[int, ...]
    """The seats whose moves come from persons now."""
    left: dict[int, str]
    """Seats whose person left (:meth:`GameSession.hand_over`) -> the agent that plays them."""
    handed: dict[int, int]
    """Those seats -> the frame of the hand-over (the seat was the person's before it)."""

    def person_at(self, seat: int, frame: int) -> bool:
        """Whether a person played ``seat`` at ``frame``."""
        return seat in self.people or (seat in self.handed and frame < self.handed[seat])

    def handing(self, seat: int, agent: str | None, frame: int) -> _Roles:
        """These roles once ``seat`` goes to an agent: at ``frame`` to ``agent`` after its
        person left, or (``agent`` ``None``) as if the agent had sat there from the start."""
        people = tuple(p for p in self.people if p != seat)
        if agent is None:
            return self._replace(people=people)
        return _Roles(people, {**self.left, seat: agent}, {**self.handed, seat: frame})


def _snapshot(game: LlamaGame) -> tuple[Any, ...]:
    g = game
    return (
        g.round,
        g.top_card,
        len(g.draw_pile),
        g.current_player,
        g.starter,
        g.game_over,
        tuple(g.scores),
        tuple(g.quit),
        tuple(tuple(g.hand(p)) for p in range(g.num_players)),
        tuple(g.penalty(p) for p in range(g.num_players)),
        () if g.game_over else tuple(g.legal_actions()),
    )


class _Recorder(TableListener):
    """Hears the table driver and turns each move into a frame; records the moves."""

    def __init__(self, session: GameSession) -> None:
        # weak: the session holds its recorder, and a cycle between them would keep every
        # game the store forgets alive until a full collection, which the server runs rarely
        self._session = weakref.ref(session)
        self._events: list[dict[str, Any]] = []

    @property
    def session(self) -> GameSession:
        session = self._session()
        if session is None:  # pragma: no cover - a recorder is only called through its session
            raise RuntimeError("the game of this recorder is gone")
        return session

    def on_move(self, table: Table, seat: int, action: int, drawn: int | None) -> None:
        self.session.moves.append((seat, action))
        event: dict[str, Any] = {"type": "move", "seat": seat, "action": action}
        if drawn is not None:
            event["drawn"] = drawn
        self._events.append(event)

    def on_round_end(self, table: Table, result: RoundResult) -> None:
        g = self.session.game
        best = min(result.scores)
        self._events.append(
            {
                "type": "round",
                "round": result.round,
                "went_out": result.went_out,
                "penalties": tuple(result.penalties),
                "returned": tuple(result.returned),
                "scores": tuple(result.scores),
                "hands": tuple(tuple(h) for h in result.hands),  # the rules show every hand at scoring
                "game_over": result.game_over,
                "winners": tuple(p for p, v in enumerate(result.scores) if v == best) if result.game_over else (),
            }
        )
        if not result.game_over:
            self.on_start(g)

    def on_left(self, seat: int, agent: str, person: str, *, joined: bool = True, chose: bool = False) -> None:
        """``person``'s seat is handed to an agent (``joined``: the person had come;
        ``chose``: they left the table themselves). The event keeps the person's name: a
        seat whose person never came takes the agent's name from then on."""
        self._events.append(
            {"type": "left", "seat": seat, "agent": agent, "name": person, "joined": joined, "chose": chose}
        )

    def on_start(self, game: LlamaGame) -> None:
        """A round is dealt: who starts, on what card."""
        self._events.append({"type": "start", "round": game.round, "starter": game.starter, "top_card": game.top_card})

    def flush(self) -> None:
        """Close the frame of the move just applied."""
        if self._events:
            self.session._push(tuple(tuple(event.items()) for event in self._events))  # see _Frame
            self._events = []


# --------------------------------------------------------------------------- sessions

Viewer = int | None
"""A person's seat, or ``None``: the owner of a watched or replayed game (sees every hand)."""


class GameSession:
    """One game in the browser. ``people`` are the seats whose moves come from persons
    (none when agents sit everywhere or a record is replayed)."""

    def __init__(
        self,
        game: LlamaGame,
        agents: Sequence[Agent | None],
        *,
        names: Sequence[str],
        labels: Sequence[str],
        mode: str,
    ) -> None:
        self.id = secrets.token_urlsafe(18)
        self.mode = mode
        self.names = list(names)
        self.labels = list(labels)
        people = tuple(p for p, a in enumerate(agents) if a is None) if mode == "play" else ()
        self._roles = _Roles(people, {}, {})
        self.tokens: dict[str, Viewer] = (
            {secrets.token_urlsafe(24): p for p in people} if people else {secrets.token_urlsafe(24): None}
        )
        """Each token and the viewer it opens; the first is the creator's."""
        self._start = json.dumps(game.to_dict())  # a string: see _Frame on what the collector tracks
        self.moves: list[tuple[int, int]] = []
        """(seat, action) of every move so far."""
        self.recorder = _Recorder(self)
        self.table = Table(game, agents, names=self.names, listener=self.recorder)
        self.lock = threading.Lock()
        """Held while the game changes; a second change meanwhile is refused, not queued."""
        self._resumed = -math.inf  # when a look last let the agents of a stalled game move
        self.failed: str | None = None
        """Why an agent's failure stopped the game for good, as the page reads it (``agent
        'x' at seat 1: RuntimeError: ...``, through :attr:`on_the_page`): its ``act`` raised,
        or it answered a move the rules refuse. The game then takes no move, its agents are
        let go, and it is not saved (it is not over). A failure that passes is not one of
        these (:attr:`stalled`)."""
        self.on_the_page: Callable[[str], str] = str
        """How an agent's error reads on the page (:meth:`AgentPolicy.on_the_page`: no path
        of the server's disk; :func:`new_game` sets it)."""
        self.touched = time.monotonic()
        self.created = self.touched
        self.seen: dict[int, float] = {people[0]: self.created} if people else {}
        """Per person's seat, when a request last came with its token (:meth:`look`);
        a seat whose link was never opened is not in it. The first person's seat is the
        creator's (its token comes first in :attr:`tokens`: the page that starts the game
        plays it), and has come when the game starts."""
        self._replayed: str | None = None
        """The record a replay replays (:func:`replay`), as compact JSON: text is the
        smallest way to keep it, and one the garbage collector never scans."""
        self._turn: tuple[int | None, int, float] = (None, -1, self.created)
        """The seat the table waits for, after how many moves, and since when (one value,
        replaced whole: a view reads it without the lock)."""
        self.history_id: int | None = None
        self.warnings: list[str] = []
        """What the page says of the agents at this table, each once: one made for other
        table sizes or rules, a ``search`` whose networks go unused here (:func:`build_agent`);
        the server's console would reach no player."""
        self.agent_seconds = 0.0
        self.agent_moves = 0
        self.apart = _runs_apart(agents)
        """Whether an agent of it computes in another process (:mod:`train.play.agent_host`),
        where this process's clock cannot see its time."""
        self.on_over: Callable[[GameSession], None] | None = None
        """Called once, on the thread that ends the game, when it is over (the server saves
        it to the history there, and sets :attr:`history_id`)."""
        self._over_done = False
        """Whether the game is over and :attr:`on_over` has returned: until then a view says
        ``saving`` (another person's page may look while the game is being saved)."""
        self.context: dict[str, Any] = {"llama_rl_version": __version__, "source": "llama-rl serve"}
        """Where the game comes from, written into its record: the version that plays it
        here (so that the history can tell an agent's versions apart later). A replay's
        record keeps its own (:attr:`recording`)."""
        self._replay = b""
        """A replayed record's actions, one byte each (:func:`replay`)."""
        self._replayed_moves = 0
        """How many of them the replay has made."""
        self._left_at: dict[int, list[tuple[int, str, bool]]] = {}
        """A replayed record's hand-overs: move number -> (seat, agent, whether the person
        chose to leave) from that move on."""
        self._frames: list[_Frame] = []
        self._moved = 0
        """The latest frame that changed the game (a move, a deal), not only who plays a
        seat: a move made on a view of a frame before it is refused (:meth:`move`)."""
        g = game
        self.recorder.on_start(g)
        self.recorder.flush()

    @property
    def game(self) -> LlamaGame:
        return self.table.game

    @property
    def people(self) -> list[int]:
        """The seats whose moves come from persons now (none when agents sit everywhere
        or a record is replayed)."""
        return list(self._roles.people)

    @property
    def left(self) -> dict[int, str]:
        """The seats whose person left, handed to an agent (:meth:`hand_over`): its label.
        (A seat whose link was never opened becomes an agent's seat, not one of these.)"""
        return self._roles.left

    @property
    def recording(self) -> GameRecording:
        """The game's record so far (the start, with the generator's state, every move and
        :attr:`context`); a replay's is the whole record it replays, however far it has
        been stepped."""
        if self._replayed is not None:
            return GameRecording.from_json(json.loads(self._replayed))
        return GameRecording(self.names, self.labels, json.loads(self._start), list(self.moves), dict(self.context))

    @property
    def seq(self) -> int:
        """The number of the latest frame (the page asks for what came after it)."""
        return self._frames[-1][0]

    def _push(self, events: tuple[tuple[tuple[str, Any], ...], ...]) -> None:
        seq = self._frames[-1][0] + 1 if self._frames else 0
        if any(dict(event)["type"] != "left" for event in events):
            self._moved = seq
        self._frames.append((seq, events, _snapshot(self.game)))
        if len(self._frames) > KEEP_FRAMES:
            del self._frames[: len(self._frames) - KEEP_FRAMES]

    # ------------------------------------------------------------------ access

    def viewer(self, token: object) -> Viewer:
        """The viewer a token belongs to; a missing or wrong token is a 403."""
        if isinstance(token, str):
            for known, viewer in self.tokens.items():
                if secrets.compare_digest(known.encode(), token.encode("utf-8", "replace")):
                    return viewer
        raise SessionError("this game needs the token of its link (the X-Llama-Token header)", 403)

    def links(self) -> list[dict[str, Any]]:
        """Every token with the seat it opens (for the page that created the game)."""
        return [
            {"seat": v, "name": self.names[v] if v is not None else None, "token": t} for t, v in self.tokens.items()
        ]

    # ------------------------------------------------------------------ what a viewer sees

    def look(self, viewer: Viewer) -> None:
        """A request came with ``viewer``'s token: its seat is not away."""
        if viewer in self._roles.people:
            self.seen[viewer] = time.monotonic()

    def has_come(self, seat: int) -> bool:
        """Whether the page of the person at ``seat`` has come: a request came with its
        token (:meth:`look`), or it is the creator's. A state's ``joined``, whether another
        person plays on for one to leave (:meth:`_others_play_on`) and a hand-over (a seat
        whose link was never opened is the agent's from the start) all ask here."""
        return seat in self.seen

    def away(self, people: Sequence[int] | None = None) -> list[int]:
        """The seats of ``people`` (default: the people playing) whose pages have sent no
        request for :data:`AWAY_SECONDS` (counted from the game's start for a link never
        opened), and the seat whose move the table has awaited for :data:`TURN_SECONDS`,
        while the game goes on. When the table waits for one of them, another person at
        the table may hand that seat to an agent."""
        if self.ended:
            return []
        game = self.game
        now = time.monotonic()
        seat, _, since = self._turn
        idle = seat if seat == game.current_player and now - since >= TURN_SECONDS else None
        return [
            p
            for p in (self._roles.people if people is None else people)
            if p == idle or now - self.seen.get(p, self.created) >= AWAY_SECONDS
        ]

    def _table(self, state: _State, viewer: Viewer, roles: _Roles, frame: int) -> dict[str, Any]:
        everything = viewer is None or state.game_over
        seats = []
        for p in range(len(self.names)):
            person = roles.person_at(p, frame)
            if self.mode == "replay":  # the record labels a person's seat "person"; a hand-over ends it
                person = self.labels[p] == PERSON and (person or p not in roles.handed)
            seat: dict[str, Any] = {
                "name": self.names[p],
                "agent": roles.left[p] if p in roles.left and not person else self.labels[p],
                "person": person,
                "you": p == viewer,
                "score": state.scores[p],
                "quit": state.quit[p],
                "hand_size": len(state.hands[p]),
            }
            if everything or p == viewer:
                seat["hand"] = list(state.hands[p])
            seats.append(seat)
        return {
            "round": state.round,
            "top_card": state.top_card,
            "draw_pile": state.draw_pile,
            "current_player": state.current_player,
            "starter": state.starter,
            "game_over": state.game_over,
            "seats": seats,
        }

    def _event(self, raw: dict[str, Any], viewer: Viewer, roles: _Roles, frame: int) -> dict[str, Any]:
        names = self.names
        kind = raw["type"]

        def yours(seat: int | None) -> bool:  # the viewer's seat, played by the viewer (an agent's is not "yours")
            return seat is not None and seat == viewer and roles.person_at(seat, frame)

        if kind == "move":
            seat = raw["seat"]
            own = yours(seat)
            shown = own or (viewer is None and not roles.people)
            event = {k: v for k, v in raw.items() if k != "drawn" or shown}
            event["name"] = names[seat]
            event["text"] = move_text(names[seat], raw["action"], raw.get("drawn") if own else None, own=own)
            if shown and "drawn" in raw and not own:
                event["text"] += f" ({card_name(raw['drawn'])})"
            return event
        event = dict(raw)
        if kind == "left":
            seat = raw["seat"]
            person = raw["name"]  # (the seat's name now is the agent's when its person never came)
            who, whose = ("You were", "your") if seat == viewer else (f"{person} was", f"{person}'s")
            if raw.get("chose", False):
                who = "You" if seat == viewer else person
                event["text"] = f"{who} left the table: {raw['agent']} plays {whose} seat from here on."
            elif raw.get("joined", True):
                event["text"] = f"{who} away: {raw['agent']} plays {whose} seat from here on."
            elif seat == viewer:
                event["text"] = f"You did not come in time: {raw['agent']} plays your seat."
            else:
                event["text"] = f"{person} did not come: {raw['agent']} plays {whose} seat."
        elif kind == "start":
            starter = "You start" if yours(raw["starter"]) else f"{names[raw['starter']]} starts"
            event["text"] = f"Round {raw['round']} begins: {starter} on {card_name(raw['top_card'])}."
        else:
            out = raw["went_out"]
            ended = f"{'You' if yours(out) else names[out]} went out." if out is not None else "everybody quit."
            event["text"] = f"Round {raw['round']} over: {ended}"
            if raw["game_over"]:
                event["text"] += " " + self._result_text(raw["scores"], viewer, roles)
                event["winners"] = tuple(_winners(raw["scores"], roles.left))  # who stayed: as the history says
        return event

    def _result_text(self, scores: Sequence[int], viewer: Viewer, roles: _Roles) -> str:
        """The game's result for ``viewer``: the win goes to the lowest score among the
        seats whose person did not leave (as the history counts it); "you" only for a
        viewer who still plays their seat."""
        best = _winners(scores, roles.left)
        you = viewer if viewer in roles.people else None
        who = ["you" if p == you else self.names[p] for p in best]
        if len(best) > 1:
            return f"Game over: a shared win for {_names_text(who)}, with {scores[best[0]]} each."
        return f"Game over: {'You win' if best[0] == you else who[0] + ' wins'} with {scores[best[0]]}."

    def view(self, viewer: Viewer, since: int | None = None) -> dict[str, Any]:
        """What ``viewer`` may see now, with the events after frame ``since`` (all
        kept ones when ``None``; at most :data:`MAX_EVENTS`, the latest). Once the game
        is over, ``history_id`` is its id in the history, ``None`` when it was not saved;
        ``saving`` is true while that is not known yet. ``joined`` lists the people's
        seats whose page has come (a link opened), ``away`` those the table may hand on;
        ``warnings``, what the agents at the table warn of (:attr:`warnings`); ``stopped``,
        the line that says which agent's failure stopped the game (:attr:`failed`), else
        ``None``."""
        frames = list(self._frames)  # a copy: the thread that moves may append and trim meanwhile
        roles = self._roles  # one value: a hand-over replaces it whole
        over_done = self._over_done  # (read before history_id: on_over sets that, then this)
        last_seq, _, last_state = frames[-1]
        state = _State._make(last_state)
        first_kept = frames[0][0]
        wanted = 0 if since is None else since + 1
        start = max(wanted, first_kept, last_seq + 1 - MAX_EVENTS)  # each frame holds an event or more
        events: list[dict[str, Any]] = []
        for seq, raw_events, frame_state in frames[start - first_kept :]:
            table = self._table(_State._make(frame_state), viewer, roles, seq)
            for raw in raw_events:
                event = self._event(dict(raw), viewer, roles, seq)
                event["table"] = table
                events.append(event)
        truncated = start > wanted or len(events) > MAX_EVENTS
        events = events[-MAX_EVENTS:]
        game_over = state.game_over
        your_turn = viewer in roles.people and state.current_player == viewer and not game_over
        away = self.away(roles.people)
        out: dict[str, Any] = {
            "id": self.id,
            "mode": self.mode,
            "seat": viewer,
            "num_players": len(self.names),
            **self.game.rules.options(),
            "seq": last_seq,
            "events": events,
            "truncated": truncated,
            "table": self._table(state, viewer, roles, last_seq),
            "game_over": game_over,
            "your_turn": your_turn,
            "legal": list(state.legal) if your_turn else [],
            "moves_left": len(self._replay) - self._replayed_moves,
            "history_id": self.history_id,
            "saving": game_over and not over_done,
            "away": away,
            "joined": [p for p in roles.people if self.has_come(p)],
            "left": sorted(roles.left),
            "can_leave": not game_over and self.failed is None and self._others_play_on(viewer, roles.people, away),
            "warnings": self.warnings,
            "stopped": self.stopped,
        }
        if viewer is not None:
            hand = state.hands[viewer]
            out["hand"] = list(hand)
            out["penalty"] = state.penalties[viewer]
        if game_over:
            scores = state.scores
            won = set(_winners(scores, roles.left))
            order = sorted(range(len(scores)), key=lambda p: (p in roles.left, scores[p], p))  # who left: last
            out["standings"] = [
                {"seat": p, "name": self.names[p], "score": scores[p], "winner": p in won, "left": p in roles.left}
                for p in order
            ]
            out["result"] = self._result_text(scores, viewer, roles)
        return out

    # ------------------------------------------------------------------ moves

    def move(self, viewer: Viewer, action: object, since: int | None = None) -> None:
        """A person's move, validated by the driver's one rule, then the agents'
        replies until a person must act. ``since`` is the last frame the mover saw: a
        move made on an older view (another tab of the same seat has moved meanwhile)
        is refused, not played on the seat's next turn; a view older only by hand-overs
        (a person left: no card moved) is not."""
        if self.mode != "play" or viewer is None:
            raise SessionError(f"this game is being {self.mode}ed: it takes no moves", 409)
        self._going_on()
        if viewer not in self.people:  # handed to an agent: when its person left, or never came
            agent = self.left.get(viewer, self.labels[viewer])
            raise SessionError(f"{agent} plays this seat since it was handed over: it takes no moves", 409)
        if since is not None and 0 <= since < self._moved:
            raise SessionError("the game has moved on since this view of it; look again before moving", 409)
        g = self.game
        if g.game_over:
            raise SessionError("the game is over", 409)
        if g.current_player != viewer:
            raise SessionError(f"it is {self.names[g.current_player]}'s turn, not yours", 409)
        index = action_index(action)
        if index is None or not 0 <= index < NUM_ACTIONS:
            raise SessionError(f"an action must be an integer 0..{NUM_ACTIONS - 1}, got {brief(action)}", 400)
        try:
            self.table.apply(action)
        except IllegalActionError as exc:
            raise SessionError(str(exc), 409) from None
        self.recorder.flush()
        self._advance()

    def _others_play_on(self, viewer: Viewer, people: Sequence[int], away: Sequence[int]) -> bool:
        """Whether ``viewer`` may leave the table: another person plays there, one whose
        page has come and is not away (else the game would wait for nobody)."""
        return viewer in people and any(p != viewer and self.has_come(p) and p not in away for p in people)

    def hand_over(self, viewer: Viewer, seat: object, agent: Callable[[], Seated]) -> None:
        """Give a person's seat to an agent, then let the agents move until a person must
        act: one's own seat, to leave the table (while another person plays on), or the
        seat the table waits for when its person is away (:meth:`away`). ``agent()``
        builds the agent (:func:`build_agent`); it is called once the request is found
        sound. What it warns of at this table joins :attr:`warnings`.

        A person who had opened their link *left*: their token still shows the seat and
        moves nothing, and the history rates them last in the game (``forfeit`` of
        :meth:`History.save() <train.play.history.History.save>`). A seat whose link was
        never opened is the agent's from the start, as if it had sat there."""
        if self.mode != "play" or viewer not in self.people:
            raise SessionError("only a person playing at this table can hand a seat to an agent", 409)
        self._going_on()
        n = len(self.names)
        if type(seat) is not int or not 0 <= seat < n:
            raise SessionError(f"'seat' must be an integer 0..{n - 1}, got {brief(seat)}")
        if self.game.game_over:
            raise SessionError("the game is over", 409)
        if seat == viewer:
            if not self._others_play_on(viewer, self._roles.people, self.away()):
                raise SessionError(
                    "no other person is here to play on: close the page to stop (a game not finished is not "
                    "saved), or play on",
                    409,
                )
        elif seat not in self.people:
            raise SessionError(f"seat {seat} ({self.names[seat]}) is an agent's already", 409)
        elif self.game.current_player != seat:
            who = self.names[seat]
            raise SessionError(f"it is not {who}'s turn: a seat is handed over when the table waits for it", 409)
        elif seat not in self.away():
            now = time.monotonic()
            who, waited = self.names[seat], now - self._turn[2]
            if self.has_come(seat):
                why = f"{who}'s page asked {now - self.seen[seat]:.0f} s ago"
            else:  # (no page has asked: its away time counts from the game's start)
                why = f"{who} has not opened the link yet (the game started {now - self.created:.0f} s ago)"
            raise SessionError(
                f"{why} and the table has waited {waited:.0f} s for the move: a seat is handed over after "
                f"{AWAY_SECONDS:.0f} s away or a {TURN_SECONDS:.0f} s wait",
                409,
            )
        built, label, said = agent()
        self.table.seat(seat, built)  # (checked as a new game's seats are)
        self.warnings = list(dict.fromkeys([*self.warnings, *said]))  # (replaced whole: a view may read it meanwhile)
        joined = self.has_come(seat) or seat == viewer
        self._roles = self._roles.handing(seat, label if joined else None, self.seq + 1)  # (its frame is the next)
        if joined:
            left = self.context.setdefault("left", {})  # in the record: who played the seat from which move
            left[str(seat)] = {"agent": label, "from_move": len(self.moves), "chose": seat == viewer}
        person = self.names[seat]
        if not joined:  # an agent's seat from the start: the table, the record and the history say so
            self.labels[seat] = label
            # (a new list, one assignment: a view on another thread reads the old or the new)
            self.names = [f"{label} (for {person})" if p == seat else name for p, name in enumerate(self.names)]
            self.table.names[seat] = self.names[seat]
            given = {k: v for k, v in self.context.get("names_given", {}).items() if k != str(seat)}
            self.context["names_given"] = given
        self.apart = self.apart or _runs_apart([built])
        self.recorder.on_left(seat, label, person, joined=joined, chose=seat == viewer)
        self.recorder.flush()
        self._advance()

    def step(self, viewer: Viewer, moves: int = 1) -> None:
        """Watched or replayed games: the next ``moves`` moves (owner only); in a slow
        game, as many of them as :data:`SLOW_STEP_SECONDS` allows, one at least."""
        if self.mode == "play" or viewer is not None:
            raise SessionError("step is for watched and replayed games; play with moves", 409)
        self._going_on()
        deadline = time.monotonic() + SLOW_STEP_SECONDS if self.slow else math.inf
        for made in range(moves):
            if made and time.monotonic() >= deadline:
                break
            if self.ended:
                break
            if self.mode == "replay":
                if self._replayed_moves == len(self._replay):
                    break
                for seat, label, chose in self._left_at.pop(len(self.moves), ()):
                    self._roles = self._roles.handing(seat, label, self.seq + 1)
                    self.recorder.on_left(seat, label, self.names[seat], chose=chose)
                action = self._replay[self._replayed_moves]
                self._replayed_moves += 1
                self.table.apply(action)  # the record was replayed whole when it arrived
                self.recorder.flush()
            else:
                self._agent_turn()
        self._finish()

    def _advance(self) -> None:
        """Let the agents move until a person must act (each move a frame); the wait for
        that person's move starts then (a hand-over of another seat does not restart it)."""
        while self.table.waiting_for_agent:
            self._agent_turn()
        turn = (self.game.current_player, len(self.moves))
        if turn != self._turn[:2]:
            self._turn = (*turn, time.monotonic())
        self._finish()

    def _agent_turn(self) -> None:
        t0 = time.thread_time()  # the time it computed, not the time it waited for the processor
        try:
            self.table.play_turn()
        except (AgentError, IllegalActionError) as exc:
            if isinstance(exc.__cause__, (AgentLost, AgentHostFull)):
                raise  # the process of costly agents stopped twice: a later look tries again (stalled)
            self._stop(exc)
            return
        self.agent_seconds += time.thread_time() - t0
        self.agent_moves += 1
        self.recorder.flush()

    def _stop(self, exc: Exception) -> None:
        """An agent failed at its turn (``exc`` names it and its seat): the game stops
        for good (:attr:`failed`), and its agents are let go."""
        log.warning("game %s stopped: %s", self.id, exc)  # (the operator reads it whole)
        self.failed = self.on_the_page(str(exc))
        self.release()

    @property
    def ended(self) -> bool:
        """Whether the game is over, or an agent's failure stopped it (:attr:`failed`)."""
        return self.game.game_over or self.failed is not None

    @property
    def stopped(self) -> str | None:
        """What the page says of a game an agent's failure stopped (:attr:`failed`), else ``None``."""
        return None if self.failed is None else f"the game stopped, and is not saved: {self.failed}"

    def _going_on(self) -> None:
        """A 409 saying why, when an agent's failure stopped the game."""
        if self.stopped is not None:
            raise SessionError(self.stopped, 409)

    @property
    def stalled(self) -> bool:
        """Whether a played game waits for an agent's move that no request computes (an
        error stopped the agents' turns: their process failed twice) and was not
        tried again for :data:`RESUME_SECONDS`: a look at the game then lets them move
        again (:meth:`resume`)."""
        return (
            self.mode == "play"
            and self.table.waiting_for_agent
            and not self.lock.locked()
            and time.monotonic() - self._resumed >= RESUME_SECONDS
        )

    def resume(self) -> None:
        """Let the agents move until a person must act, if no other request is changing
        the game (it does not wait for one). An error that passes is raised, and the game
        waits :data:`RESUME_SECONDS` before a look tries again (an agent's own failure
        stops the game instead: :attr:`failed`)."""
        if not self.lock.acquire(blocking=False):
            return
        self._resumed = time.monotonic()
        try:
            if self.mode == "play":
                self._advance()
        finally:
            self.lock.release()

    @property
    def slow(self) -> bool:
        """Whether an agent of it runs apart (:attr:`apart`), or its agents have taken
        more than :data:`SLOW_MOVE` of this thread's time a move on average (the server
        computes such games in a lane of their own, so that they delay no other game)."""
        return self.apart or (self.agent_moves > 0 and self.agent_seconds > SLOW_MOVE * self.agent_moves)

    def release(self) -> None:
        """Let the agents go (those of another process are forgotten there): the game is
        over, or the store forgot it. Idempotent."""
        agents, self.table.agents = self.table.agents, [None] * len(self.names)
        _close_agents(agents)

    def _finish(self) -> None:
        if not self.game.game_over:
            return
        self.release()  # a finished game needs its agents no more
        callback, self.on_over = self.on_over, None
        try:
            if callback is not None:
                callback(self)
        finally:
            self._over_done = True


def _winners(scores: Sequence[int], left: dict[int, str]) -> list[int]:
    """The seats that won, as the history counts them (:func:`stayed_winners`); all
    seats' winners where every person left (a replayed record may say so)."""
    return stayed_winners(scores, left) or winners(list(scores))


def _runs_apart(agents: Sequence[object]) -> bool:
    """Whether an agent of ``agents`` runs in the process of costly agents."""
    return any(getattr(a, "runs_apart", False) for a in agents)


def _close_agents(agents: Sequence[object]) -> None:
    for agent in agents:
        close = getattr(agent, "close", None)
        if callable(close):
            with contextlib.suppress(Exception):  # the agents' process may be gone already
                close()


# --------------------------------------------------------------------------- making games


@dataclass(frozen=True)
class AgentPolicy:
    """Which agents a request may seat: registered agents by name, with numeric
    parameters finite and inside the limits their class declares; file paths
    (``ppo:path=...``) only under ``model_dirs``, checked without touching the disk
    outside them."""

    model_dirs: tuple[Path, ...] = ()

    def spec(self, text: object, what: str) -> AgentSpec:
        """``text`` parsed as an agent spec a request may seat, or a ``SessionError``
        naming ``what`` (the field of the request) and what is wrong: too long, unknown, a
        number outside its limits, a path outside ``model_dirs``."""
        if not isinstance(text, str):
            raise SessionError(f"{what} must be an agent name, got {brief(text)}")
        if len(text) > SPEC_LENGTH:
            raise SessionError(f"{what}: an agent spec is at most {SPEC_LENGTH} characters")
        try:
            spec = parse_agent_spec(text, check=False)
            limits = request_limits(spec.name)
        except (TypeError, ValueError) as exc:
            raise SessionError(f"{what}: {exc}") from None
        if len(spec.label) > SPEC_LENGTH:  # its label, as records and the history keep it: 1e8 is 100000000.0
            raise SessionError(
                f"{what}: agent {brief(spec.label)} is {len(spec.label)} characters long with its numbers written "
                f"out; at most {SPEC_LENGTH} are kept"
            )
        for key, value in spec.params.items():
            if is_path_parameter(key):
                self._check_path(value, f"{what} ({spec.name}:{key}=...)", f"{spec.name}:{key}")
            elif isinstance(value, (int, float)) and not isinstance(value, bool):
                low, high = limits.get(key, (-PARAMETER_BOUND, PARAMETER_BOUND))
                if not (low <= value <= high) or (isinstance(value, float) and not math.isfinite(value)):
                    raise SessionError(f"{what}: {spec.name}'s {key} must be within {low:g}..{high:g} here")
        return spec

    def _under_root(self, value: object) -> str | None:
        """``value`` as a path under one of :attr:`model_dirs` (checked lexically, then
        with links resolved), or ``None``; nothing outside them is looked at."""
        if not isinstance(value, str) or not value or "\x00" in value:
            return None
        for root in self.model_dirs:
            candidate = os.path.normpath(os.path.join(root, value))  # lexical: no disk access
            if _inside(candidate, str(root)) and _inside(os.path.realpath(candidate), str(root)):
                return candidate  # (the second: a link inside must not lead out)
        return None

    def _check_path(self, value: object, what: str, parameter: str) -> None:
        """A 400 unless ``value`` lies under :attr:`model_dirs`; the message is the same
        whatever the path (it tells nothing of the disk), and says how to allow models."""
        if self._under_root(value) is None:
            raise SessionError(
                f"{what}: agents from the web load no files by path; to play the models under DIR, start the "
                f"server with --allow-models DIR ({parameter}=NAME then reads DIR/NAME)"
                if not self.model_dirs
                else f"{what}: a model path must lie under a directory the server allows"
            )

    def on_the_page(self, text: str) -> str:
        """``text`` (why a model did not load) as a page may read it: each absolute path
        named as ``ppo:path=NAME`` reaches it (``run/checkpoints/ppo_2048.zip``, the
        directory itself ``.``), relative to the first of :attr:`model_dirs` that
        :meth:`_under_root` resolves that name under, and any other left out whole, so that
        an error tells nothing of the disk outside them. One pass: no part of a path is
        read again as a path of its own."""
        out: list[str] = []
        at = 0
        while (found := _ABSOLUTE_PATH.search(text, at)) is not None:
            path = self._path_in(found.group(0))
            name, end = self._page_name(path), found.start() + len(path)
            if name == _HIDDEN and (more := _PATH_GOES_ON.match(text, end)) is not None:
                end = more.end()  # hidden whole: words that go on with a folder (my models/x.npz) are its own
            out += [text[at : found.start()], name]
            at = end
        return "".join(out) + text[at:]

    @staticmethod
    def _path_in(run: str) -> str:
        """The path at the start of ``run`` (a path and what follows it up to a
        delimiter). Where the path ends is not in the text when it holds a space (``run
        (2)/model.zip``, ``my models/x.npz``; ``x.zip is not written``): the longest part
        of ``run`` that is on the disk, or whose directory with a space in its name is (a
        file not yet written, its own name without a space), else up to the first space
        (without a closing bracket or full stop after it)."""
        words = run.split(" ")
        for count in range(len(words), 1, -1):
            whole = " ".join(words[:count])
            for candidate in (whole, whole.rstrip(".)]")):
                folder, file = os.path.split(candidate)
                if os.path.lexists(candidate) or (
                    " " in folder[len(words[0]) :] and " " not in file and os.path.isdir(folder)
                ):
                    return candidate
        return words[0] if os.path.lexists(words[0]) else words[0].rstrip(".)]") or words[0]  # (x.npz).

    def _page_name(self, path: str) -> str:
        """``path`` as ``ppo:path=NAME`` reaches it (``NAME`` resolves back to it), else
        :data:`_HIDDEN`."""
        full = os.path.normpath(path)
        for root in self.model_dirs:
            if _inside(full, str(root)):
                name = os.path.relpath(full, root)
                if self._under_root(name) == full:  # not a name an earlier directory takes
                    return name
        return _HIDDEN

    def where_names_lead(self, spec: AgentSpec) -> str:
        """Where the paths of ``spec`` that name nothing are read, for the message of an agent
        that did not load (empty where each is there): inside the directory the server
        allows, so that ``ppo:path=runs/x`` under ``--allow-models runs`` is ``runs/runs/x``,
        as ``llama-rl train`` names a run for the command line. A name that starts with an
        allowed directory's own name, the rest of it there, is suggested without it. Nothing
        outside :attr:`model_dirs` is looked at, and no directory is named but by the name
        the request gave it."""
        notes = []
        for key, value in spec.params.items():
            full = self._under_root(value) if is_path_parameter(key) else None
            if full is None or os.path.lexists(full):
                continue
            many = len(self.model_dirs) > 1
            note = (
                f"{spec.name}:{key}=NAME is read inside the {'first ' if many else ''}folder the server allows "
                "(--allow-models DIR reads DIR/NAME)"
            )
            first, *rest = Path(os.path.normpath(value)).parts or (".",)
            for root in self.model_dirs:
                candidate = os.path.join(root, *rest)
                if (
                    rest
                    and first == root.name
                    and (name := self._page_name(candidate)) != _HIDDEN
                    and os.path.lexists(candidate)  # (inside the directory: _page_name resolved it there)
                ):
                    note += f", and {first} is {'one of the folders it allows' if many else 'that folder'}: "
                    note += f"try {spec.name}:{key}={name}"
                    break
            notes.append(note)
        return "".join(f"; {note}" for note in notes)

    def resolve_paths(self, spec: AgentSpec) -> AgentSpec:
        """The spec with its (checked) paths made absolute under their directory."""
        if not any(is_path_parameter(k) for k in spec.params):
            return spec
        return AgentSpec(
            spec.name, {k: self._under_root(v) if is_path_parameter(k) else v for k, v in spec.params.items()}
        )

    def as_read(self, spec: AgentSpec, full: AgentSpec) -> AgentSpec:
        """``spec`` (checked, its agent built from ``full``, the spec :meth:`resolve_paths`
        made of it) with each path named as the page names the
        file read there (:meth:`_page_name`), in one spelling however a request wrote it, so
        that the table, the game's record and the history's ratings know one model file as
        one agent: ``ppo:path=runA``, ``ppo:path=./runA/`` and ``ppo:path=runA/model.npz``
        are each ``ppo:path=runA/model.npz``. A folder given as ``path`` or ``*_path`` is the
        model it holds (:func:`agents.ppo.model_file`, through which those agents read it; an
        RLlib checkpoint stays its folder), and links inside the allowed directories are
        followed. A file is named by its path, not its contents: a model replaced under the
        same name is the same agent. A path whose links lead out of them is named without
        following its links, and a spec that would grow past :data:`SPEC_LENGTH` keeps the
        paths as the request gave them."""
        if not any(is_path_parameter(k) for k in spec.params):
            return spec
        named = dict(spec.params)
        for key in spec.params:
            path = full.params.get(key) if is_path_parameter(key) else None
            if not isinstance(path, str):
                continue
            read = path
            if not key.endswith("_dir") and os.path.isdir(path):
                with contextlib.suppress(ValueError, OSError):
                    model = model_file(path)
                    read = str(model) if model.parent == Path(path) else path  # (a checkpoint is its folder)
            for candidate in (os.path.realpath(read), read, path):
                if (name := self._page_name(candidate)) != _HIDDEN:
                    named[key] = name
                    break
        out = AgentSpec(spec.name, named)
        return out if len(out.label) <= SPEC_LENGTH else spec


_HIDDEN = "(a path on the server)"
"""What the page reads for a path it may not be told."""
_PATH_GOES_ON = re.compile(r"(?: [^ ]*[/\\][^ ]*)+")
"""Words after a path's first space that hold a folder separator (``models/x.npz``)."""
_ABSOLUTE_PATH = re.compile(r"(?:^|(?<=[\s'\"(=\[]))(?:/|[A-Za-z]:\\)[^\s'\"?:;,]*(?: [^\s'\"?:;,]+)*")
"""A POSIX or Windows absolute path in a message (``/srv/x``, ``C:\\x``; not ``a/b`` or
the ``/2`` of ``1/2``), at the start, after a space, a quote, a bracket or ``=``, with
what follows it up to a delimiter (a quote, ``?``, ``:``, ``;``, ``,``, two spaces, a line's
end): :meth:`AgentPolicy._path_in` finds where the path ends."""


def _inside(path: str, root: str) -> bool:
    """Whether ``path`` is ``root`` or below it (a path on another drive of Windows, which
    ``commonpath`` refuses with a ``ValueError``, is not)."""
    try:
        return os.path.commonpath([path, root]) == root
    except ValueError:
        return False


def known_fields(body: dict[str, Any], known: Sequence[str]) -> None:
    """A 400 naming the first field of ``body``, in its order, outside ``known`` (a
    misspelt one would otherwise be ignored without a word). It stops at that field:
    sorting every key of a body of 150,000 held the event loop 0.2 s."""
    for key in body:
        if key not in known:
            raise SessionError(f"unknown field {brief(str(key))} (known: {', '.join(known) or 'none'})")


@overload
def int_field(
    body: dict[str, Any], key: str, low: int, high: int | None, default: int, *, what: str | None = None
) -> int: ...


@overload
def int_field(
    body: dict[str, Any], key: str, low: int, high: int | None, default: None = None, *, what: str | None = None
) -> int | None: ...


def int_field(
    body: dict[str, Any], key: str, low: int, high: int | None, default: int | None = None, *, what: str | None = None
) -> int | None:
    """``body[key]``, an integer ``low..high`` (not a bool or a float; ``high=None``: no
    upper bound), or ``default`` when it is absent or ``null``; anything else is a 400
    naming the field (as ``what``, ``'key'`` by default)."""
    value = body.get(key)
    if value is None:
        return default
    if type(value) is not int or not low <= value <= (value if high is None else high):
        bound = f"{low}.." if high is None else f"{low}..{high}"
        name = what or f"'{key}'"
        raise SessionError(f"{name} must be an integer {bound}, got {brief(value)}")
    return value


def rule_option_words(option: Field[Any]) -> str:
    """How an error names the rule ``option``: its label on the page's form and its field,
    ``'Game ends at … points' (end_score)``, so that a person finds the field they filled
    in and an API client the key it sent."""
    return f"'{option.metadata['label'].replace('{}', '…')}' ({option.name})"


_GAME_FIELDS = ("seats", "seed", *(f.name for f in rule_option_fields()))
"""The fields of a new game's body: the seats, the seed and the rule options by their
:class:`Rules` names."""


def _rules(body: dict[str, Any], num_players: int) -> Rules:
    """The rules of a new game from its body's rule option fields (each an integer in its
    declared range, the default when absent); a combination the rules refuse is a 400. An
    option out of range is named by its label and its field (:func:`rule_option_words`)."""
    options = {}
    for f in rule_option_fields():
        what = rule_option_words(f)
        value = int_field(
            body, f.name, f.metadata["low"], f.metadata["high"], getattr(DEFAULT_RULES, f.name), what=what
        )
        try:  # its range at this table size (the deck bounds the hand)
            options[f.name] = check_rule_option(f, value, num_players)
        except ValueError as exc:  # "hand_size must be between 1 and 18 for 3 players ...", named as above
            text = str(exc)
            raise SessionError(
                what + text[len(f.name) :] if text.startswith(f"{f.name} ") else f"{what}: {text}"
            ) from None
    try:
        return Rules(num_players, **options)
    except ValueError as exc:
        raise SessionError(str(exc)) from None


def rule_options() -> list[dict[str, Any]]:
    """The rule options a new game's body takes (:func:`rule_option_fields`), for the page
    to build its fields from (``GET /api/rules``): each ``{"name", "label", "brief",
    "help", "default", "low", "high"}``, ``label`` and ``brief`` the declaration's words
    around its number (``{}``) on the form and in the list of saved games, ``high`` the
    largest value at each table size (``{"2": 27, ..., "6": 9}`` for the hand, which the
    deck bounds)."""
    out = []
    for f in rule_option_fields():
        out.append(
            {
                "name": f.name,
                "label": f.metadata["label"],
                "brief": f.metadata["brief"],
                "help": f.metadata["help"],
                "default": getattr(DEFAULT_RULES, f.name),
                "low": f.metadata["low"],
                "high": {str(n): option_high(f, n) for n in range(MIN_PLAYERS, MAX_PLAYERS + 1)},
            }
        )
    return out


def _name(value: object, what: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise SessionError(f"{what} must be a non-empty name, got {brief(value)}")
    name = " ".join(value.split())
    if not name.isprintable():
        raise SessionError(f"{what} holds a control character")
    if len(name) > NAME_LENGTH:
        raise SessionError(f"{what} is longer than {NAME_LENGTH} characters")
    return name


def _seeds(seed: int | None, secret: bytes, count: int, fresh: int | None) -> list[int]:
    """``count`` seeds: from ``seed`` mixed with the server's ``secret`` (a seed repeats
    a game on this server, and tells nothing of its deals; :func:`new_game` takes one
    only for a game of one person at most), or from ``fresh`` (``None``: the system's
    randomness)."""
    if seed is None:
        sequence = np.random.SeedSequence(fresh)
    else:
        sequence = np.random.SeedSequence([seed, *np.frombuffer(secret, dtype=np.uint32).tolist()])
    return [int(s) for s in sequence.generate_state(count, np.uint64)]


def new_game(
    body: Any,
    *,
    policy: AgentPolicy | None = None,
    secret: bytes = b"\0" * 16,
    fresh: int | None = None,
    build: Callable[[AgentSpec, int], Agent] | None = None,
) -> GameSession:
    """A session from a request body::

        {"seats": [{"person": "Ann"}, {"agent": "heuristic"}, ...],   # 2..6 seats
         "seed": 7, "end_score": 40, "hand_size": 6}                    # optional

    The optional rule fields are the rule options of :class:`Rules`
    (:func:`~llama_env.engine.rule_option_fields`), by name.

    A game with a person in any seat is played (``mode`` ``"play"``); one with agents
    everywhere is watched. A ``seed`` repeats a game on this server; a game of several
    people takes none (its creator holds every seat's link, and could deal the game
    again to watch every hand); without one, it is dealt from ``fresh``
    (:meth:`SessionStore.fresh_seed`; ``None``: the system's randomness).
    ``build(spec, seed)`` makes an agent (default: the registry). Bad input is a :class:`SessionError`.
    """
    policy = policy or AgentPolicy()
    if not isinstance(body, dict):
        raise SessionError("the request body must be a JSON object")
    known_fields(body, _GAME_FIELDS)
    seats = body.get("seats")
    if not isinstance(seats, list) or not MIN_PLAYERS <= len(seats) <= MAX_PLAYERS:
        raise SessionError(
            f'\'seats\' must list {MIN_PLAYERS}..{MAX_PLAYERS} seats, each {{"person": name}} or {{"agent": spec}}'
        )
    n = len(seats)
    rules = _rules(body, n)
    seed = int_field(body, "seed", 0, 2**63 - 1)
    if seed is not None and sum(isinstance(s, dict) and "person" in s for s in seats) > 1:
        raise SessionError(
            "'seed' is for a game with one person at most: with it, whoever starts this game could deal it "
            "again in a watched game and see the other people's hands"
        )
    specs: list[AgentSpec | None] = []
    names: list[str] = []  # a person's; an agent's is its label, once built
    typed: dict[int, str] = {}
    for p, seat in enumerate(seats):
        if not isinstance(seat, dict) or len(seat) != 1 or next(iter(seat)) not in ("person", "agent"):
            raise SessionError(f'seat {p} must be {{"person": name}} or {{"agent": spec}}, got {brief(seat)}')
        if "person" in seat:
            specs.append(None)
            names.append(_name(seat["person"], f"seat {p}'s name"))
            same = next((q for q, name in typed.items() if name == names[-1]), None)
            if same is not None:  # the history would rate them as one person holding two seats
                raise SessionError(
                    f"seats {same} and {p} are both named {names[-1]!r}: give each person a name of their own "
                    "(the history rates each name as one player)"
                )
            typed[p] = names[-1]
        else:
            specs.append(policy.spec(seat["agent"], f"seat {p}"))
            names.append("")
    seeds = _seeds(seed, secret, n + 1, fresh)
    agents: list[Agent | None] = []
    labels: list[str] = []
    said: list[str] = []
    for p, spec in enumerate(specs):
        if spec is None:
            agents.append(None)
            labels.append(PERSON)
            continue
        try:
            seated = build_agent(spec, seeds[p + 1], f"seat {p}", rules=rules, policy=policy, build=build)
        except SessionError:
            _close_agents(agents)  # the seats built before this one are not kept anywhere
            raise
        agents.append(seated.agent)
        labels.append(seated.label)
        said += seated.warnings
    # an agent is known by its spec, its model as read (AgentPolicy.as_read); a name used twice gets #1, #2
    names = agent_display_names(
        [name if spec is None else label for name, spec, label in zip(names, specs, labels, strict=True)]
    )
    game = LlamaGame(rules=rules, rng=seeds[0])
    mode = "play" if any(a is None for a in agents) else "watch"
    session = GameSession(game, agents, names=names, labels=labels, mode=mode)
    session.warnings = list(dict.fromkeys(said))  # (two seats of one spec: said once)
    session.on_the_page = policy.on_the_page
    if typed:  # the history rates a person by the name typed, not the table's display name
        session.context["names_given"] = {str(p): name for p, name in typed.items()}
    return session


class Seated(NamedTuple):
    """An agent made for a seat (:func:`build_agent`)."""

    agent: Agent
    """The player that sits there (a population's member, for a population)."""
    label: str
    """The agent's spec, each path named as the model file read there
    (:meth:`AgentPolicy.as_read`): the table, the record and the history know it so."""
    warnings: list[str]
    """What it warns of at the table, as the page says it (:attr:`GameSession.warnings`)."""


def _as_the_page_says(warning: str, agent: Agent, named: AgentSpec) -> str:
    """``warning``, which ``agent`` words for a console, as the note under the table says
    it: the agent named by its seat's spec where the warning names it by its ``repr``
    (``SearchAgent(worlds=16) does not search`` is ``agent 'search:worlds=16' does not
    search``), and without the console's ``(said once)``: the note says it once a game."""
    warning = warning.removesuffix(" (said once)")
    shown = repr(agent)
    return f"agent {named.label!r}{warning[len(shown) :]}" if warning.startswith(f"{shown} ") else warning


def build_agent(
    spec: AgentSpec,
    seed: int,
    what: str,
    *,
    rules: Rules,
    policy: AgentPolicy,
    build: Callable[[AgentSpec, int], Agent] | None = None,
) -> Seated:
    """The agent of ``spec`` (checked by ``policy``) for a seat at a table of ``rules``, built by ``build(spec, seed)``
    (default: the registry, through :func:`~llama_env.agent.resolve`, silent on an agent
    that cannot be seeded, as each game is seeded here) and reset to ``seed``, the spec's
    own ``seed=`` mixed in as play, watch, evaluation and ``Llama-v0`` mix it
    (:func:`~llama_env.agent.seed_keys`: ``random:seed=1`` and ``random:seed=2`` play
    differently); for a population (``perturbed``), a member of its own drawn from
    ``seed``, as ``Llama-v0`` seats it (:func:`~llama_env.agent.seat_for_game`), never the
    population, whose own ``act`` no driver calls; what fails is a :class:`SessionError`
    naming ``what`` and the agent (a 429 when the process of costly agents is full; that
    process lost, at the build or as the agent forewarns, is the server's failure, an
    :class:`~train.play.agent_host.AgentLost`, not the agent's), its
    model's paths as the page names them (:meth:`AgentPolicy.on_the_page`) and, for a path
    that names nothing, where the server reads it (:meth:`AgentPolicy.where_names_lead`).

    The seat's label is ``spec`` with its model files named as read (:meth:`AgentPolicy.as_read`).
    What the agent warns of at the table (:func:`~llama_env.agent.table_warnings`: a
    model trained at other table sizes or rules, a ``search`` whose networks go unused
    there) comes with it, worded for the page, and the agent says it no more as it plays."""
    agent: Agent | None = None
    full = spec
    try:
        full = policy.resolve_paths(spec)
        agent = build(full, seed) if build is not None else resolve(full, seed)
        named = policy.as_read(spec, full)
        # (a plugin's table_sizes or forewarn of the wrong kind, or its obs_version, is a ValueError)
        warned = table_warnings([named], rules, [agent])
        said = [policy.on_the_page(_as_the_page_says(str(w), agent, named)) for w in warned]
        player = seat_for_game(agent, seed, seed_keys([spec])[0])
        if player is not agent:  # a population's member: told too, so that it says nothing at the table
            forewarn(player, rules)
        # here, where a refusal names the seat and lets the agent go: the Table checks it again as it seats it
        check_obs_version(getattr(player, "obs_version", 0))
    except (TypeError, ValueError, OSError, ModuleNotFoundError, AgentHostFull) as exc:
        _close_agents([agent])  # built, then refused: a costly one is let go in its process
        # its process lost twice or full as it forewarned: the server's failure, as at the build, not the agent's
        if isinstance(exc.__cause__, AgentLost):
            raise exc.__cause__ from None  # (a 500, logged)
        if isinstance(exc.__cause__, AgentHostFull):
            exc = exc.__cause__  # (a 429: try again)
        # MissingExtra: the page is told which extra the server lacks, its console the command that
        # installs it (naming the server's Python and checkout); AgentHostFull: too many costly agents live
        if isinstance(exc, MissingExtra):
            log.warning("%s, agent %r: %s", what, spec.label, exc)
            why = exc.for_others()
        else:
            labels = [full.label] if agent is None else [full.label, agent_label(agent)]
            why = policy.on_the_page(_unnamed(str(exc), labels)) + policy.where_names_lead(spec)
        raise SessionError(
            f"{what}, agent {spec.label!r}: {why}", 429 if isinstance(exc, AgentHostFull) else 400
        ) from None
    return Seated(player, named.label, said)


def _unnamed(text: str, labels: Sequence[str]) -> str:
    """``text`` without the ``agent '<label>': `` it starts with for one of ``labels`` (the
    agent's, as the registry's errors name it): :func:`build_agent` names the agent itself."""
    for label in labels:
        said = f"agent {label!r}: "
        if text.startswith(said):
            return text[len(said) :]
    return text


def start(session: GameSession) -> GameSession:
    """Let the agents move before the first person's turn. An agent that fails meanwhile
    (:attr:`GameSession.failed`) is a 400 naming it and its seat: the game is not made."""
    if session.mode == "play":
        session._advance()
        if session.failed is not None:
            raise SessionError(f"the game cannot start: {session.failed}")
    return session


def _shortened(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def replay(record: Any) -> GameSession:
    """A session that replays a game record move by move (see :class:`GameRecording`).
    The whole record is checked first: a record the rules refuse is a 400, and so is
    one whose names, agents, start or context is larger than :data:`RECORD_PART_BYTES`.
    A :class:`GameRecording` is taken as read and replayed already (as
    :meth:`History.recording() <train.play.history.History.recording>` gives a saved
    game), its sizes checked, not its moves again.
    The session keeps the record as compact JSON, and its moves as one byte each."""
    checked = isinstance(record, GameRecording)
    _check_part_sizes(record.to_json() if checked else record)
    try:
        rec = record if checked else GameRecording.from_json(record)
        if len(rec.moves) > MAX_RECORD_MOVES:
            raise ValueError(f"it holds {len(rec.moves)} moves; at most {MAX_RECORD_MOVES} are replayed")
        for key, items in (("names", rec.names), ("agents", rec.agents)):
            if not all(" ".join(x.split()).isprintable() for x in items):  # as a new game's names
                raise ValueError(f"its '{key}' hold a control character")
        if not checked:
            rec.replay()
    except (ValueError, IllegalActionError) as exc:
        raise SessionError(f"cannot replay this record: {exc}") from None
    game = LlamaGame.from_dict(copy.deepcopy(rec.start))
    names = [
        f"seat {p}" if name == "You" else " ".join(name.split()) or f"seat {p}" for p, name in enumerate(rec.names)
    ]
    # shown, not run: a long name or spec (an evaluation's ppo:path=<deep path>) is shortened
    names = [_shortened(n, NAME_LENGTH) for n in names]
    labels = [_shortened(a, SPEC_LENGTH) for a in rec.agents]
    session = GameSession(game, [None] * game.num_players, names=names, labels=labels, mode="replay")
    session._replay = bytes(action for _, action in rec.moves)  # (each 0..8: the record replayed)
    session._left_at = _hand_overs(rec.context, game.num_players, len(rec.moves))
    session._replayed = json.dumps(rec.to_json(), ensure_ascii=False, separators=(",", ":"))
    return session


def _check_part_sizes(record: Any) -> None:
    """A 400 naming the first of a record's ``names``, ``agents``, ``start`` and
    ``context`` that is larger than :data:`RECORD_PART_BYTES` as compact JSON (checked
    before the record is read: a large start's unknown keys are slow to check)."""
    if not isinstance(record, dict):
        return  # (not a record: GameRecording.from_json says so)
    for key in ("names", "agents", "start", "context"):
        try:
            size = len(json.dumps(record.get(key), ensure_ascii=False, separators=(",", ":")).encode())
        except (TypeError, ValueError, RecursionError):
            continue  # not JSON data: GameRecording.from_json refuses it
        if size > RECORD_PART_BYTES:
            raise SessionError(
                f"cannot replay this record: its '{key}' is {size:,} bytes of JSON; a replay takes at most "
                f"{RECORD_PART_BYTES:,}"
            )


def _hand_overs(context: dict[str, Any], n: int, moves: int) -> dict[int, list[tuple[int, str, bool]]]:
    """The hand-overs a record's ``context["left"]`` names (what :meth:`GameSession.hand_over`
    writes), by the move they came before; entries that are not a seat, an agent label and
    a move of the record are ignored (a record is shown, not trusted)."""
    left = context.get("left")
    out: dict[int, list[tuple[int, str, bool]]] = {}
    for key, entry in (left if isinstance(left, dict) else {}).items():
        seat = context_seat(key, n)
        if seat is None or not isinstance(entry, dict):
            continue
        label, at = entry.get("agent"), entry.get("from_move")
        if isinstance(label, str) and label.strip() and label.isprintable() and type(at) is int and 0 <= at < moves:
            out.setdefault(at, []).append((seat, _shortened(label, SPEC_LENGTH), entry.get("chose") is True))
    return out


# --------------------------------------------------------------------------- the store


ABANDONED_SECONDS = 120.0
"""A game not looked at for this long gives its place to a new game when the store is
full: a page playing a game asks about twice a second while it waits, and on its own
turn every 3 s while another person is at the table, else every 15 s; so such a game has
no page open on it (a paused watch or a replay asks nothing)."""


@dataclass
class SessionStore:
    """Live games, bounded: at most ``max_games`` at once, each forgotten after
    ``idle_seconds`` without a request; when the store is full, a new game replaces the
    least recently used game that is over (or that an agent's failure stopped), else the
    least recently used one that no page has looked at for :data:`ABANDONED_SECONDS`, else
    it is refused. Ids and tokens are unguessable (``secrets``); ``secret`` mixes into
    chosen seeds.

    ``entropy`` is where the seeds that no request chose come from (the deal of a game
    without a ``seed``, an agent taking over a seat): ``None``, the system's randomness;
    an integer deals the same games in the same order on every run, as tests of games
    between several people need (such games take no ``seed``)."""

    max_games: int = 200
    idle_seconds: float = 1800.0
    secret: bytes = field(default_factory=lambda: secrets.token_bytes(16))
    entropy: int | None = None
    _games: OrderedDict[str, GameSession] = field(default_factory=OrderedDict, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _fresh: np.random.SeedSequence = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._fresh = np.random.SeedSequence(self.entropy)

    def fresh_seed(self) -> int:
        """A seed no request chose, the next drawn from ``entropy``."""
        with self._lock:
            (child,) = self._fresh.spawn(1)
        return int(child.generate_state(1, np.uint64)[0] >> np.uint64(1))  # 63 bits, as a chosen seed

    def __len__(self) -> int:
        return len(self._games)

    def add(self, session: GameSession) -> GameSession:
        """Keep ``session``; a 429 when the store is full of games not over (the
        session's agents are then let go)."""
        with self._lock:
            dropped = self._expire()
            if len(self._games) >= self.max_games:
                # room is made by forgetting the least recently used game that is over, else
                # one that no page is open on (a game left in a closed tab held its place
                # for idle_seconds, and 200 of them refused every new game)
                finished = self._least_recent(lambda s: s.ended) or self._least_recent(_abandoned)
                if finished is not None:
                    dropped.append(self._games.pop(finished))
            full = len(self._games) >= self.max_games
            if not full:
                self._games[session.id] = session
        _release(dropped)
        if full:
            _release([session])
            raise SessionError(
                f"the server holds {self.max_games} live games already; try again when one ends or expires", 429
            )
        return session

    def get(self, game_id: str) -> GameSession:
        """The live game ``game_id``, marked as just used; a 404 ``SessionError`` saying
        why a game may be gone where there is none."""
        with self._lock:
            dropped = self._expire()
            session = self._games.get(game_id)
            if session is not None:
                session.touched = time.monotonic()
                self._games.move_to_end(game_id)
        _release(dropped)
        if session is None:
            raise SessionError(
                "no such game on this server: the server restarted since, or the game went "
                f"{self.idle_seconds / 60:g} minutes without a look or a move (or made room for a new one when "
                f"the server was full: a game over, or one not looked at for {ABANDONED_SECONDS / 60:g} minutes)",
                404,
            )
        return session

    def forget_abandoned_apart(self) -> bool:
        """Forget the least recently used game that still holds agents in the process of
        costly agents and that no page has looked at for :data:`ABANDONED_SECONDS`, and
        let its agents go: room for a new game's when that process is full. (A game over
        let its agents go already: forgetting it frees nothing.) Whether there was one."""
        with self._lock:
            key = self._least_recent(lambda s: _abandoned(s) and _runs_apart(s.table.agents))
            dropped = [self._games.pop(key)] if key is not None else []
        _release(dropped)
        return bool(dropped)

    def _least_recent(self, which: Callable[[GameSession], bool]) -> str | None:
        """The id of the least recently used game of the kind ``which`` picks (the store's
        lock held)."""
        return next((k for k, s in self._games.items() if which(s)), None)

    def forget_idle(self) -> None:
        """Forget the games idle for ``idle_seconds`` now, and let their agents go."""
        with self._lock:
            dropped = self._expire()
        _release(dropped)

    def _expire(self) -> list[GameSession]:
        """Forget the games idle for ``idle_seconds``; returns them, to be released once
        the store's lock is let go (a costly agent's process may be busy a while)."""
        now = time.monotonic()
        dropped: list[GameSession] = []
        while self._games:
            oldest = next(iter(self._games.values()))
            if now - oldest.touched < self.idle_seconds:
                break
            dropped.append(self._games.popitem(last=False)[1])
        return dropped


def _abandoned(session: GameSession) -> bool:
    """Whether no page has looked at ``session`` for :data:`ABANDONED_SECONDS`."""
    return time.monotonic() - session.touched >= ABANDONED_SECONDS


def _release(sessions: Sequence[GameSession]) -> None:
    for session in sessions:
        session.release()
