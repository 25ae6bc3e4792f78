"""The L.L.A.M.A. rules engine.

Pure game logic: it imports only the standard library and numpy, knows nothing about
reinforcement learning, and can be snapshotted to a JSON-friendly dict and restored.

The rules of ``docs/rules.md`` that decide something (what may be played, drawn, scored,
returned, who starts and who wins) are small module-level functions below whose
docstrings state the rule and cite its number there; :class:`LlamaGame` strings them
together with the rest (the deck, the turn order, the end of a round).  Randomness
enters through one door, the ``np.random.Generator`` the game is given: the shuffle at
each deal, and the first starter when ``random_first_player`` asks for it.  Applying an
action is deterministic.

Hands are held internally as counts per card code (``hand[c]`` is how many cards of
code ``c`` the seat holds, index 0 unused) because that makes the hot paths -- legality,
playing, scoring -- a handful of list look-ups.
"""

from __future__ import annotations

import difflib
import hashlib
import math
import operator
import re
import reprlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import Field, dataclass, field, fields, replace
from enum import IntEnum
from itertools import compress
from typing import Any, NamedTuple, TypeGuard

import numpy as np

__all__ = [
    "Action",
    "Card",
    "IllegalActionError",
    "LlamaGame",
    "RoundResult",
    "NUM_ACTIONS",
    "NUM_CARD_VALUES",
    "COPIES_PER_VALUE",
    "DECK_SIZE",
    "MIN_PLAYERS",
    "MAX_PLAYERS",
    "DEFAULT_NUM_PLAYERS",
    "DEFAULT_END_SCORE",
    "DEFAULT_HAND_SIZE",
    "MAX_PENALTY",
    "CARD_POINTS",
    "card_points",
    "playable_on",
    "can_play_on",
    "hand_penalty",
    "marker_to_return",
    "can_draw",
    "next_round_starter",
    "is_game_over",
    "winners",
    "Rules",
    "DEFAULT_RULES",
    "rule_option_fields",
    "max_hand_size",
    "option_high",
    "table_sizes_allowing",
    "check_table_sizes",
    "validate_rule_options",
    "check_flag",
    "action_index",
    "read_int",
    "read_number",
]


class Card(IntEnum):
    """Card codes shared by every part of LLAMA-RL (``docs/env.md``, Actions)."""

    ONE = 1
    TWO = 2
    THREE = 3
    FOUR = 4
    FIVE = 5
    SIX = 6
    LLAMA = 7


class Action(IntEnum):
    """The ``Discrete(9)`` action encoding used by the engine, both envs and all agents."""

    PLAY_1 = 0
    PLAY_2 = 1
    PLAY_3 = 2
    PLAY_4 = 3
    PLAY_5 = 4
    PLAY_6 = 5
    PLAY_LLAMA = 6
    DRAW = 7
    QUIT = 8

    @classmethod
    def play(cls, card: int) -> Action:
        """The action that plays a card of code ``card`` (1..7); a ``ValueError`` for
        anything else (8 is no card, though ``Action(7)`` is the draw)."""
        if not is_int(card) or not 1 <= card <= 7:
            raise ValueError(f"a card code is an integer 1..7 (6 a six, 7 a llama), got {brief(card)}")
        return cls(int(card) - 1)

    @property
    def card(self) -> Card | None:
        """The card this action plays, or ``None`` for draw and quit."""
        return Card(self.value + 1) if self.value <= Action.PLAY_LLAMA else None


NUM_ACTIONS = len(Action)
"""The size of the one action space, ``Discrete(9)``: a play of each kind of card, draw, quit."""
NUM_CARD_VALUES = len(Card)
"""The kinds of card (rule 1): 1 to 6 and the llama, card codes 1 to 7."""
COPIES_PER_VALUE = 8
"""Copies of each kind in the deck (rule 1)."""
DECK_SIZE = NUM_CARD_VALUES * COPIES_PER_VALUE
"""56 cards: each round deals from the whole deck (rules 1 and 2)."""
MIN_PLAYERS = 2
"""The fewest players a table seats (rule 1)."""
MAX_PLAYERS = 6
"""The most players a table seats (rule 1); observations leave room for this many."""


class _StandardValue(int):
    """A rule option's standard value as the default of a keyword argument (the engine's,
    the envs'): equal to the number and shown as it, but an object of its own, so that
    :meth:`Rules.given` tells an option left out from one given, and refuses ``rules=``
    beside a given one (passing these constants themselves counts as leaving it out)."""

    __slots__ = ()


DEFAULT_NUM_PLAYERS: int = _StandardValue(4)
"""The table size where none is given: the engine's, the batch engine's and both environments'."""
DEFAULT_END_SCORE: int = _StandardValue(40)
"""The rulebook's end of the game, a score of 40 (rule 12); the ``end_score`` option."""
DEFAULT_HAND_SIZE: int = _StandardValue(6)
"""The rulebook's hand of 6 cards at the deal (rule 2); the ``hand_size`` option."""
MAX_END_SCORE = 1000
LLAMA_POINTS = 10

_DECK = tuple(c for c in range(1, NUM_CARD_VALUES + 1) for _ in range(COPIES_PER_VALUE))
CARD_POINTS: tuple[int, ...] = (0, 1, 2, 3, 4, 5, 6, LLAMA_POINTS)
"""Rule 9 as a table indexed by card code: a number card is worth its value, a llama 10
points (index 0 is no card and worth 0). :func:`card_points` reads it with the code checked."""
MAX_PENALTY = sum(CARD_POINTS)
"""The most a round costs (rule 9): one of each kind left in hand, 1 + ... + 6 + 10 = 31."""


# The actions as plain ints for the hot paths: comparing an int with an IntEnum member
# costs about six times as much as with an int.
_PLAY_LLAMA, _DRAW, _QUIT = int(Action.PLAY_LLAMA), int(Action.DRAW), int(Action.QUIT)


class IllegalActionError(ValueError):
    """An action that the rules do not allow in the current state.

    Carries the offending ``action``, the ``legal`` actions, and (when known) the
    ``seat`` that chose it and the ``agent`` that sits there, so callers and error
    messages can name all of them.
    """

    def __init__(
        self,
        message: str,
        action: object = None,
        legal: list[int] | None = None,
        *,
        seat: int | None = None,
        agent: str | None = None,
    ) -> None:
        super().__init__(message)
        self.action = action
        self.legal = legal if legal is not None else []
        self.seat = seat
        self.agent = agent


# --------------------------------------------------------------------------- rules


def card_points(card: int) -> int:
    """Rule 9: a number card is worth its value, a llama 10 points.

    ``card`` is a card code 1..7; anything else is a ``ValueError``.
    """
    if not is_int(card) or not 1 <= card <= NUM_CARD_VALUES:
        raise ValueError(f"card must be a card code 1..7 (7 a llama), got {brief(card)}")
    return CARD_POINTS[card]


def playable_on(top: int) -> tuple[int, int]:
    """Rule 4: on ``top`` one may play the same value or that value plus one;
    on a 6 a 6 or a llama; on a llama a llama or a 1.

    Returns the two card codes, in that order (same value first). A ``top`` that is no
    card code 1..7 is a ``ValueError``.
    """
    if not is_int(top) or not 1 <= top <= NUM_CARD_VALUES:
        raise ValueError(f"top must be a card code 1..7 (7 a llama), got {brief(top)}")
    return (top, top % NUM_CARD_VALUES + 1)


def can_play_on(card: int, top: int) -> bool:
    """Rule 4 as a predicate: may ``card`` be played on ``top``. Both are card codes
    1..7, taken unchecked (this runs for every card of a snapshot's discard pile)."""
    return card == top or card == top % NUM_CARD_VALUES + 1


def hand_penalty(counts: Sequence[int]) -> int:
    """Rule 9: the penalty of a hand is the sum of its DISTINCT values (a llama counts
    10; two cards of one value count once).

    ``counts`` holds the number of cards per card code: 8 entries, index 0 unused, then
    a count 0..8 for each code 1..7. Anything else is a ``ValueError``.
    """
    if not isinstance(counts, (Sequence, np.ndarray)) or len(counts) != NUM_CARD_VALUES + 1:
        got = f"{len(counts)}: " if isinstance(counts, (Sequence, np.ndarray)) else ""
        raise ValueError(f"counts must hold 8 entries (index 0 unused, then codes 1..7), got {got}{brief_line(counts)}")
    for code in range(1, NUM_CARD_VALUES + 1):
        if not is_int(counts[code]) or not 0 <= counts[code] <= COPIES_PER_VALUE:
            raise ValueError(f"counts[{code}] must be a count of cards 0..8, got {brief(counts[code])}")
    return _hand_penalty(counts)


def _hand_penalty(counts: Sequence[int]) -> int:
    """:func:`hand_penalty` unchecked, for the engine's own hands (scoring every round):
    the :data:`CARD_POINTS` of each code held (index 0's are 0)."""
    return sum(compress(CARD_POINTS, counts))


def marker_to_return(score: int) -> int:
    """Rule 10: the player who went out gives back one marker: 10 points if their score
    is at least 10, otherwise 1 point if it is at least 1, otherwise nothing."""
    if score >= 10:
        return 10
    if score >= 1:
        return 1
    return 0


def can_draw(draw_pile_size: int, players_in_round: int) -> bool:
    """Rule 5: drawing is allowed only while the draw pile has cards and at least one
    other player is still in the round (a lone remaining player may not draw)."""
    return draw_pile_size > 0 and players_in_round > 1


def next_round_starter(last_player: int | None, previous_starter: int, num_players: int) -> int:
    """Rule 11: the next round starts with the last player who played a card; if nobody
    played a card, the player left of the previous starter begins.

    ``num_players`` is a table size 2..6, ``previous_starter`` one of its seats and
    ``last_player`` one too or ``None`` (nobody played); anything else is a ``ValueError``.
    """
    n = check_num_players(num_players)
    starter = check_seat(previous_starter, n, "previous_starter")
    if last_player is not None and (not is_int(last_player) or not 0 <= last_player < n):
        raise ValueError(
            f"last_player must be 0..{n - 1} at a {n}-player table (or None: nobody played), got {brief(last_player)}"
        )
    return _next_round_starter(None if last_player is None else int(last_player), starter, n)


def _next_round_starter(last_player: int | None, previous_starter: int, num_players: int) -> int:
    """:func:`next_round_starter` unchecked, for the engine's own seats (every round)."""
    if last_player is not None:
        return last_player
    return (previous_starter + 1) % num_players


def is_game_over(scores: list[int], end_score: int) -> bool:
    """Rule 12: after a round is scored the game ends if any score reached ``end_score``.
    No ``scores`` at all is a ``ValueError``."""
    if len(scores) == 0:  # (an array of scores, too)
        raise ValueError("scores must hold a score for each seat, got none")
    return max(scores) >= end_score


def winners(scores: list[int]) -> list[int]:
    """Rule 12: the lowest score wins; tied lowest scores share the victory. No ``scores``
    at all is a ``ValueError``."""
    if len(scores) == 0:  # (an array of scores, too)
        raise ValueError("scores must hold a score for each seat, got none")
    best = min(scores)
    return [seat for seat, s in enumerate(scores) if s == best]


def check_flag(name: str, value: object) -> bool:
    """``value`` if it is a bool, else a ``TypeError`` naming the option: options that
    switch something on or off take ``True`` or ``False``, never a truthy string."""
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be True or False, got {value!r} ({type(value).__name__})")
    return bool(value)


def check_seed(value: object, name: str = "seed") -> int:
    """``value`` as a Python ``int`` if it is a non-negative integer (numpy's too, never a
    bool), else a ``ValueError`` naming ``name``: a numpy seed kept as it is would make
    a result that is no longer plain JSON, and numpy's own refusal of a negative one names
    no argument."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)) or value < 0:
        raise ValueError(f"{name} must be a non-negative integer, got {value!r}")
    return int(value)


def is_int(value: object) -> TypeGuard[int | np.integer[Any]]:
    """An integer, of the snapshot format or an argument: ``int`` or a numpy integer, never
    a bool (which ``isinstance`` takes for an ``int``)."""
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)


def check_seat(seat: object, num_players: int, name: str = "seat") -> int:
    """``seat`` as a Python ``int`` if it is a seat of a ``num_players`` table (numpy's
    integers too; never a bool, a float or a negative index, which read another seat),
    else a ``ValueError`` naming ``name``."""
    if not is_int(seat) or not 0 <= seat < num_players:
        raise ValueError(f"{name} must be 0..{num_players - 1} at a {num_players}-player table, got {brief(seat)}")
    return int(seat)


def check_num_players(num_players: object) -> int:
    """``num_players`` as a Python ``int`` if it is a table size 2..6 (numpy's integers
    too; never a bool or a float, which would be truncated to another table), else a
    ``ValueError``."""
    if not is_int(num_players):
        raise ValueError(f"num_players must be an integer, got {brief(num_players)} ({type(num_players).__name__})")
    n = int(num_players)  # a numpy integer is named as the number it is (9, not np.int64(9))
    if not MIN_PLAYERS <= n <= MAX_PLAYERS:
        raise ValueError(f"num_players must be between {MIN_PLAYERS} and {MAX_PLAYERS}, got {n}")
    return n


def parse_table_sizes(spec: object, what: str = "table sizes") -> tuple[int, ...]:
    """Table sizes as a run's ``players`` writes them, sorted, repeats kept (a repeat
    weighs a size): ``'4'`` -> (4,), ``'2-6'`` -> (2, 3, 4, 5, 6), ``'2,4,6'`` -> (2, 4, 6),
    also an int or a list. Anything else is a ``ValueError`` naming ``what``."""
    allowed = f"ints {MIN_PLAYERS}..{MAX_PLAYERS} as 'N', 'A-B' or 'A,B,...'"
    if isinstance(spec, bool):
        raise ValueError(f"{what} must be {allowed}, got {brief(spec)}")
    if isinstance(spec, int):
        out = [spec]
    elif isinstance(spec, (list, tuple)):
        if not all(isinstance(x, int) and not isinstance(x, bool) for x in spec):
            raise ValueError(f"{what} must be {allowed}, got {brief(spec)}")
        out = list(spec)
    elif isinstance(spec, str):
        try:  # the digits 0-9 (int also reads ١٢ and 1_000), a size's few at most
            s = spec.replace(" ", "")
            if "-" in s:
                a, b = s.split("-")
                out = list(range(read_int(a, what, 0, MAX_PLAYERS), read_int(b, what, 0, MAX_PLAYERS) + 1))
            else:
                out = [read_int(x, what, 0, MAX_PLAYERS) for x in s.split(",") if x]
        except ValueError:
            raise ValueError(f"{what} must be {allowed}, got {brief(spec)}") from None
    else:
        raise ValueError(f"{what} must be {allowed}, got {brief(spec)}")
    if not out or any(not MIN_PLAYERS <= p <= MAX_PLAYERS for p in out):
        raise ValueError(f"{what} must be {allowed}, got {brief(spec)}")
    return tuple(sorted(out))


def check_table_sizes(sizes: object, what: str = "table sizes") -> tuple[int, ...]:
    """``sizes`` as a sorted tuple of distinct table sizes 2..6, at least one (a model's
    or an agent's ``table_sizes``: what it was made for); a ``ValueError`` naming ``what``
    otherwise (:func:`distinct_ints`)."""
    return distinct_ints(sizes, MIN_PLAYERS, MAX_PLAYERS, what)


def distinct_ints(values: Any, low: int, high: int, what: str) -> tuple[int, ...]:
    """``values`` as a sorted tuple of distinct integers ``low..high``, at least one
    (numpy's integers too; never a bool, a float or a string); otherwise a ``ValueError``
    saying in one line that ``what`` must be so."""
    allowed = f"{what} must be integers {low}..{high}"
    try:
        items = list(values) if not isinstance(values, (str, bytes)) else None
        if items is None or any(isinstance(v, (bool, np.bool_)) for v in items):
            raise TypeError
        checked = [operator.index(v) for v in items]
    except TypeError:
        raise ValueError(f"{allowed}, got {brief_line(values)}") from None
    if not checked or any(not low <= v <= high for v in checked):
        raise ValueError(f"{allowed}, got {brief_line(checked)}")
    return tuple(sorted(set(checked)))


def validate_rule_options(num_players: Any, end_score: Any, hand_size: Any) -> None:
    """Raise a ``ValueError`` naming the option when a rule option is out of range
    (what making a :class:`Rules` checks; prefer making one and passing it on)."""
    Rules(num_players, end_score, hand_size)


def _option(
    default: int,
    help: str,  # noqa: A002
    low: int,
    high: int | None,
    flag_help: str,
    label: str,
    brief: str,
) -> Any:
    """A rule option of :class:`Rules`: its default, its help for the API docs and for a
    command-line flag, its range (``high=None``: bounded by the table size), and the
    words a page puts around its number (``{}``): ``label`` on a form's field, ``brief``
    where a game changed it."""
    metadata = {"help": help, "low": low, "high": high, "flag_help": flag_help, "label": label, "brief": brief}
    return field(default=default, metadata=metadata)


def max_hand_size(num_players: int) -> int:
    """Rule 2 bounds the deal: ``num_players`` x ``hand_size`` cards and one to turn up
    come from the 56-card deck. A table of no size 2..6 is a ``ValueError``
    (:func:`check_num_players`)."""
    return (DECK_SIZE - 1) // check_num_players(num_players)


@dataclass(frozen=True)
class Rules:
    """The rules a game is played by: the table size and the rule options, one
    immutable, validated value.

    Made once where a game's settings come in (an env's arguments, a command's flags, a
    training config, a web request) and carried from there to every game: the engine
    (:attr:`LlamaGame.rules`), the table driver, both envs, evaluation, training,
    terminal and web play all take a ``Rules``. Making one checks every field (a
    ``ValueError`` naming the option and its range; a bool is refused); numpy integers
    become plain ints. ``Rules(3, end_score=30)`` is three players with the standard hand.

    The fields after ``num_players`` are the *rule options*
    (:func:`rule_option_fields`): each command-line tool, the training config and the
    web API offer exactly these, built from the field's metadata, so a new option is a
    new field here (with its range and help) and the engine code that reads it; see
    docs/architecture.md.
    """

    num_players: int = DEFAULT_NUM_PLAYERS
    end_score: int = _option(
        DEFAULT_END_SCORE,
        "the game ends after a round in which a score reaches this (rule 12)",
        1,
        MAX_END_SCORE,
        "the game ends after a round in which a score reaches N",
        "Game ends at {} points",
        "to {} points",
    )
    hand_size: int = _option(
        DEFAULT_HAND_SIZE,
        f"cards dealt to each player (rule 2); at most ({DECK_SIZE} - 1) // players",
        1,
        None,
        "cards dealt to each player",
        "Cards in a hand {}",
        "{} cards",
    )

    def __post_init__(self) -> None:
        n = check_num_players(self.num_players)
        object.__setattr__(self, "num_players", n)
        for f in rule_option_fields():
            object.__setattr__(self, f.name, check_rule_option(f, getattr(self, f.name), n))

    @classmethod
    def given(cls, rules: Rules | None = None, **options: Any) -> Rules:
        """The rules from either ``rules`` or keyword options (``num_players=...``,
        ``end_score=...``), never both: how an env or a game takes its rules,
        ``Env(num_players=3, end_score=30)`` or ``Env(rules=Rules(3, end_score=30))``.
        An option whose value is its standard default (:data:`DEFAULT_END_SCORE`...,
        the keyword's default) counts as left out."""
        named = {k: v for k, v in options.items() if not isinstance(v, _StandardValue)}
        if rules is None:
            return cls(**named)
        if not isinstance(rules, Rules):
            raise TypeError(f"rules must be a llama_env.Rules, got {rules!r} ({type(rules).__name__})")
        if named:
            raise ValueError(
                f"give the rules either as rules=Rules(...) or as {', '.join(f'{k}=...' for k in named)}, not both "
                f"(rules={rules!r})"
            )
        return rules

    @classmethod
    def for_table(cls, num_players: int, rules: Rules | None = None) -> Rules:
        """The rules of a table of ``num_players`` seats (as many as the agents given):
        ``rules`` when they are for that many players, the standard rules at that size
        when ``rules`` is ``None``; a ``ValueError`` when the two disagree."""
        if rules is None:
            return cls(num_players)
        if not isinstance(rules, Rules):
            raise TypeError(f"rules must be a llama_env.Rules, got {rules!r} ({type(rules).__name__})")
        if rules.num_players != num_players:
            raise ValueError(
                f"the rules are for {rules.num_players} players ({rules.brief()}), but the table has "
                f"{num_players} seats"
            )
        return rules

    @classmethod
    def options_at(cls, sizes: Iterable[int], **options: Any) -> dict[int, Rules]:
        """The rules at each table size of ``sizes`` with the same ``options`` (a
        training run's table mix): every size is checked, so an option that no size
        allows is refused before the first game, and so are no sizes at all."""
        rules = [cls(n, **options) for n in dict.fromkeys(sizes)]  # Rules checks each size: 2.7 is no table
        if not rules:
            raise ValueError(f"sizes must name at least one table size ({MIN_PLAYERS}..{MAX_PLAYERS}), got none")
        return {r.num_players: r for r in sorted(rules, key=lambda r: r.num_players)}

    def at(self, num_players: int) -> Rules:
        """The same options at another table size (checked again: the largest hand
        depends on the table)."""
        return self if num_players == self.num_players else replace(self, num_players=num_players)

    def options(self) -> dict[str, int]:
        """The rule options (every field but the table size) by name."""
        return {f.name: getattr(self, f.name) for f in rule_option_fields()}

    def to_dict(self) -> dict[str, int]:
        """Every field by name (what :meth:`from_dict` reads)."""
        return {f.name: getattr(self, f.name) for f in fields(self)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Rules:
        """Rules from plain data (a record, a request); an unknown key is a ``ValueError``."""
        known = [f.name for f in fields(cls)]
        if not isinstance(data, Mapping):  # a string or a list of pairs read key by key named nonsense
            raise ValueError(f"rules are a mapping of {', '.join(known)} to integers, got {brief(data)}")
        unknown = sorted(str(k) for k in data if k not in known)
        if unknown:
            raise ValueError(f"unknown rule option {unknown[0]!r} (known: {', '.join(known)})")
        return cls(**data)

    def brief(self) -> str:
        """``"4 players, end score 40, hand size 6"``."""
        return f"{self.num_players} players, " + ", ".join(
            f"{k.replace('_', ' ')} {v}" for k, v in self.options().items()
        )


def rule_option_fields() -> tuple[Field[Any], ...]:
    """The rule options: :class:`Rules`'s fields after the table size, each with
    ``help``, ``flag_help``, ``low`` and ``high`` (``None``: bounded by the table) in
    its metadata."""
    return _RULE_OPTIONS


def table_sizes_allowing(**options: int) -> tuple[int, ...]:
    """The table sizes at which the rule ``options`` hold (a large hand fits fewer seats;
    a value no table takes, none). An unknown option or one that is no integer is a
    ``ValueError`` naming it, not "no table fits"."""
    for name, value in options.items():
        if name not in _RULE_OPTION_NAMES or not is_int(value):
            check_rule_option(name, value)  # raises, naming it
    sizes = []
    for n in range(MIN_PLAYERS, MAX_PLAYERS + 1):
        try:
            Rules(n, **options)
        except ValueError:
            continue
        sizes.append(n)
    return tuple(sizes)


def check_rule_option(option: Field[Any] | str, value: object, num_players: int = MIN_PLAYERS) -> int:
    """``value`` of the rule ``option`` (one of :func:`rule_option_fields`, or its name)
    as a Python ``int`` if :class:`Rules` takes it at a table of ``num_players`` (by
    default the smallest, where a hand may be largest), else a ``ValueError`` naming the
    option and its range: the one check of an option's value."""
    if isinstance(option, str):
        named = {f.name: f for f in _RULE_OPTIONS}
        if option not in named:
            raise ValueError(f"unknown rule option {option!r} (known: {', '.join(named)})")
        option = named[option]
    name = option.name
    if not is_int(value):
        raise ValueError(f"{name} must be an integer, got {brief(value)} ({type(value).__name__})")
    number = int(value)  # a numpy integer is named as the number it is (30, not np.int32(30))
    low, high = option.metadata["low"], option_high(option, num_players)
    if low <= number <= high:
        return number
    if option.metadata["high"] is None:  # the one option the table bounds
        raise ValueError(
            f"{name} must be between {low} and {high} for {num_players} players "
            f"(the deal needs {num_players} x {name} + 1 <= {DECK_SIZE} cards), got {number}"
        )
    raise ValueError(f"{name} must be between {low} and {high}, got {number}")


def option_high(option: Field[Any], num_players: int) -> int:
    """The largest value of the rule ``option`` (one of :func:`rule_option_fields`) at a
    table of ``num_players``: its ``high``, or where that is ``None`` what the deck allows
    (:func:`max_hand_size`)."""
    high = option.metadata["high"]
    return max_hand_size(num_players) if high is None else int(high)


_RULE_OPTIONS: tuple[Field[Any], ...] = tuple(f for f in fields(Rules) if f.name != "num_players")
_RULE_OPTION_NAMES = frozenset(f.name for f in _RULE_OPTIONS)
DEFAULT_RULES = Rules()
"""The standard rules: 4 players, end score 40, hand size 6."""


def action_index(action: object) -> int | None:
    """The one rule for what counts as an action: a Python or numpy integer (not a
    bool), or a one-element integer array as vectorised RL code passes them; returns it
    as an ``int`` (in range or not), or ``None`` for anything else (floats, strings,
    bools, ``None``...). :meth:`LlamaGame.step`, :meth:`LlamaGame.is_legal` and the
    table driver all apply it, so they agree on every input."""
    t = type(action)
    if t is int:
        return action  # type: ignore[return-value]
    if t is np.int64 or t is np.int32:
        return int(action)  # type: ignore[call-overload]
    if isinstance(action, (bool, np.bool_)):
        return None
    if isinstance(action, (int, np.integer)):
        return operator.index(action)
    if isinstance(action, np.ndarray) and action.size == 1 and np.issubdtype(action.dtype, np.integer):
        return int(action.reshape(()))
    return None


# --------------------------------------------------------------------------- results


class RoundResult(NamedTuple):
    """What happened when a round was scored (immutable; one is made every round, so it
    is a named tuple, which is cheap to build)."""

    round: int
    """The number of the round that ended (1 for the first)."""
    went_out: int | None
    """The seat that played its last card, or ``None`` if every player quit."""
    penalties: tuple[int, ...]
    """Points each seat took for the cards left in hand (rule 9)."""
    returned: tuple[int, ...]
    """Points each seat gave back (rule 10; only the seat that went out)."""
    scores: tuple[int, ...]
    """Scores after this round."""
    game_over: bool
    """Whether this round ended the game (rule 12)."""
    hand_counts: tuple[tuple[int, ...], ...] = ()
    """Cards per code (index 0 unused) each seat held when the round was scored."""

    @property
    def hands(self) -> tuple[tuple[int, ...], ...]:
        """The cards each seat held when the round was scored (they are shown at
        scoring), sorted; the seat that went out holds none."""
        return tuple(
            tuple(c for c in range(1, NUM_CARD_VALUES + 1) for _ in range(counts[c])) for counts in self.hand_counts
        )

    @property
    def score_changes(self) -> tuple[int, ...]:
        """Net change of each seat's score in this round."""
        return tuple(p - r for p, r in zip(self.penalties, self.returned, strict=True))


# --------------------------------------------------------------------------- seeding


class _HashedSeed(np.random.bit_generator.ISpawnableSeedSequence):
    """A seed sequence whose state words are a BLAKE2b hash of an integer seed (a
    request for more words than the hash holds, and ``spawn``, go to numpy's
    ``SeedSequence`` of the same seed)."""

    __slots__ = ("_words", "_seed")

    def __init__(self, seed: int) -> None:
        self._seed = seed
        self._words = hashlib.blake2b(
            seed.to_bytes(max(8, (seed.bit_length() + 7) // 8), "little"), digest_size=32
        ).digest()

    def generate_state(self, n_words: int, dtype: Any = np.uint32) -> np.ndarray:
        dtype = np.dtype(dtype)
        if n_words * dtype.itemsize > len(self._words):
            return np.random.SeedSequence(self._seed).generate_state(n_words, dtype)
        return np.frombuffer(self._words, dtype=dtype, count=n_words).copy()

    def spawn(self, n_children: int) -> list[np.random.SeedSequence]:
        return np.random.SeedSequence(self._seed).spawn(n_children)


def seeded_generator(seed: int | np.integer[Any] | None) -> np.random.Generator:
    """A ``PCG64`` generator for an integer ``seed`` (``None``: fresh entropy).

    Reproducible, and distinct seeds give unrelated streams: the generator's state is a
    BLAKE2b hash of the seed. It is three times cheaper to build than
    ``np.random.default_rng(seed)`` (3 vs 10 us: numpy's ``SeedSequence`` hashing is
    most of a new game's cost when an env is reset with a new seed for every short
    heads-up game), and deals differently from it. Anything but a non-negative integer
    (Python or numpy) goes to ``np.random.default_rng``, with its checks.
    """
    if is_int(seed) and seed >= 0:
        # int(): np.int64(5) deals as 5 does. numpy's bit generators take any
        # ISeedSequence (its documented extension point); its stubs name only SeedSequence
        return np.random.Generator(np.random.PCG64(_HashedSeed(int(seed))))  # type: ignore[arg-type]
    return np.random.default_rng(seed)


# --------------------------------------------------------------------------- game


def _check_rng(rng: object) -> None:
    """A ``TypeError`` or ``ValueError`` unless ``rng`` is what :func:`_make_rng` takes."""
    if isinstance(rng, np.random.Generator) or rng is None:
        return
    if not is_int(rng):
        raise TypeError(f"rng must be a numpy Generator, an int seed or None, got {type(rng).__name__}")
    if rng < 0:
        raise ValueError(f"rng: a seed must be a non-negative integer, got {rng}")


def _make_rng(rng: np.random.Generator | int | None) -> np.random.Generator:
    _check_rng(rng)
    return rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)


class LlamaGame:
    """One whole game of L.L.A.M.A. for 2 to 6 players.

    Args:
        num_players: players at the table, 2..6 (default 4).
        end_score: the game ends after a round in which a score reaches this (default 40).
        hand_size: cards dealt to each player (default 6).
        rng: the ``np.random.Generator`` that shuffles every deal (or a seed).
        random_first_player: pick the first round's starter at random instead of seat 0.
        rules: the table size and rule options as one :class:`Rules`, instead of
            ``num_players``, ``end_score`` and ``hand_size`` (giving both is a ``ValueError``).

    The first round is dealt on construction. :meth:`step` applies one action for
    :attr:`current_player`; when a round ends it is scored, and unless the game is over
    the next round is dealt at once. The rules are in ``docs/rules.md``; each is a function
    of this module.
    """

    __slots__ = (
        "_history_known",
        "_played",
        "_drew_on",
        "_quit_on",
        "_quit_at",
        "rules",
        "num_players",
        "end_score",
        "hand_size",
        "scores",
        "_hands",
        "hand_sizes",
        "draw_pile",
        "discard_pile",
        "discard_counts",
        "quit",
        "_in_round",
        "current_player",
        "round",
        "game_over",
        "starter",
        "last_player",
        "last_result",
        "_rng",
    )
    rules: Rules
    """The table size and rule options the game is played by."""
    num_players: int
    """``rules.num_players``, kept as a plain attribute for the hot paths (as are
    ``end_score`` and ``hand_size``)."""
    end_score: int
    """The score that ends the game (rule 12), ``rules.end_score``."""
    hand_size: int
    """The cards each seat is dealt (rule 2), ``rules.hand_size``."""
    scores: list[int]
    """Each seat's score so far, the sum of its penalties less the markers it gave back
    (rules 9 and 10); the lowest wins (rule 12)."""
    _hands: list[list[int]]
    hand_sizes: list[int]
    """How many cards each seat holds (live: read it, never modify it)."""
    draw_pile: list[int]
    """The face-down pile; the next card drawn is the last element."""
    discard_pile: list[int]
    """The face-up pile; the top card is the last element."""
    discard_counts: list[int]
    """Cards per code in the discard pile this round (index 0 unused; live: read it,
    never modify it). Kept as the pile grows, so reading it costs nothing."""
    quit: list[bool]
    """Whether each seat has quit the current round."""
    _in_round: int
    current_player: int
    """The seat to act."""
    round: int
    """The number of the current round (1 for the first)."""
    game_over: bool
    """Whether a score has reached :attr:`end_score` (rule 12): :meth:`step` then refuses
    every action."""
    starter: int
    """The seat that started the current round."""
    last_player: int | None
    """The last seat to play a card this round (rule 11), or ``None``."""
    last_result: RoundResult | None
    """The result of the last round scored, or ``None`` before the first."""
    _rng: np.random.Generator

    def __init__(
        self,
        num_players: int = DEFAULT_NUM_PLAYERS,
        *,
        end_score: int = DEFAULT_END_SCORE,
        hand_size: int = DEFAULT_HAND_SIZE,
        rng: np.random.Generator | int | None = None,
        random_first_player: bool = False,
        rules: Rules | None = None,
    ) -> None:
        rules = Rules.given(rules, num_players=num_players, end_score=end_score, hand_size=hand_size)
        check_flag("random_first_player", random_first_player)
        self._start(rules, _make_rng(rng), random_first_player)

    @classmethod
    def unchecked(cls, rules: Rules, rng: np.random.Generator, random_first_player: bool) -> LlamaGame:
        """A new game by ``rules`` (valid by construction) from a ``Generator`` and a
        bool that were already checked, without checking them again: for environments
        that start many games with the options they checked once."""
        game = cls.__new__(cls)
        game._start(rules, rng, random_first_player)
        return game

    def _set_rules(self, rules: Rules) -> None:
        self.rules = rules
        self.num_players, self.end_score, self.hand_size = rules.num_players, rules.end_score, rules.hand_size

    def _start(self, rules: Rules, rng: np.random.Generator, random_first_player: bool) -> None:
        self._set_rules(rules)
        num_players = rules.num_players
        self._rng = rng
        self.scores = [0] * num_players
        self.round = 1
        self.game_over = False
        self.last_result = None
        self._deal(int(rng.integers(num_players)) if random_first_player else 0)

    # ------------------------------------------------------------------ queries

    @property
    def rng(self) -> np.random.Generator:
        """The generator that shuffles the deals."""
        return self._rng

    @property
    def top_card(self) -> int:
        """The card code on top of the discard pile."""
        return self.discard_pile[-1]

    @property
    def players_in_round(self) -> int:
        """How many players have not quit the current round."""
        return self._in_round

    def _seat(self, seat: object) -> int:
        """``seat`` if it is one of this table's (a negative index or one past the table
        read another seat's data, or none, without a word); else a ``ValueError``."""
        if type(seat) is int and 0 <= seat < self.num_players:  # the common case, first
            return seat
        return check_seat(seat, self.num_players)

    def hand(self, seat: int) -> list[int]:
        """The card codes in ``seat``'s hand, sorted."""
        counts = self._hands[self._seat(seat)]
        return [c for c in range(1, NUM_CARD_VALUES + 1) for _ in range(counts[c])]

    def hand_counts(self, seat: int) -> list[int]:
        """Cards per code in ``seat``'s hand as a list of 8 (index 0 unused). A copy."""
        return list(self._hands[self._seat(seat)])

    def hand_view(self, seat: int) -> Sequence[int]:
        """``seat``'s cards per code (index 0 unused), live and not copied: for hot paths
        such as the observation encoder. Read it, never modify it; :meth:`hand_counts`
        gives a copy. A seat off the table is a ``ValueError`` (-1 would read the last seat)."""
        if type(seat) is int and 0 <= seat < self.num_players:  # the hot path: one test
            return self._hands[seat]
        return self._hands[check_seat(seat, self.num_players)]

    def hand_size_of(self, seat: int) -> int:
        """How many cards ``seat`` holds."""
        return self.hand_sizes[self._seat(seat)]

    # -- the public record of the round: what everyone saw each player do since the deal

    @property
    def round_moves(self) -> int:
        """Moves made in this round so far (plays, draws and quits)."""
        drawn = DECK_SIZE - self.num_players * self.hand_size - 1 - len(self.draw_pile)
        return len(self.discard_pile) - 1 + drawn + self.num_players - self._in_round

    def played_counts(self, seat: int) -> list[int]:
        """The cards ``seat`` played this round, per code (a list of 8, index 0 unused)."""
        seat = self._seat(seat)
        return self._played[seat * 8 : seat * 8 + 8]

    def drew_on_counts(self, seat: int) -> list[int]:
        """How often ``seat`` drew this round while the top card was each code (a list of
        8, index 0 unused). A draw instead of a play tells the table something about what
        that player holds."""
        seat = self._seat(seat)
        return self._drew_on[seat * 8 : seat * 8 + 8]

    @property
    def quit_on(self) -> Sequence[int]:
        """Per seat, the top card's code when it quit this round (0: still in)."""
        return self._quit_on

    @property
    def quit_at(self) -> Sequence[int]:
        """Per seat, the number of the move of this round (1, 2, ...) with which it quit
        (0: still in)."""
        return self._quit_at

    def history(self) -> dict[str, Any]:
        """The public record of this round as plain data (the ``history`` key of
        :meth:`to_dict`): ``moves``, and per seat ``played`` and ``drew_on`` (per value,
        index 0 = value 1 .. index 6 = llama), ``quit_on`` (card code, 0 = still in) and
        ``quit_at`` (move number, 0 = still in). At the end of the game it is the last
        round's. A game restored from a snapshot without a history (older, or written by
        hand) knows only what happened since; its snapshots say ``"history": None`` until
        the next deal."""
        return {
            "moves": self.round_moves,
            "played": [self._played[p * 8 + 1 : p * 8 + 8] for p in range(self.num_players)],
            "drew_on": [self._drew_on[p * 8 + 1 : p * 8 + 8] for p in range(self.num_players)],
            "quit_on": list(self._quit_on),
            "quit_at": list(self._quit_at),
        }

    def may_draw(self, seat: int) -> bool:
        """Rule 5 for ``seat``: whether it could draw on its turn now (it is still in
        the round, the draw pile has cards and someone else is still in)."""
        return not self.quit[self._seat(seat)] and can_draw(len(self.draw_pile), self._in_round)

    def penalty(self, seat: int) -> int:
        """The points ``seat`` would take if the round ended now (rule 9)."""
        return _hand_penalty(self._hands[self._seat(seat)])

    def can_draw(self) -> bool:
        """Whether the current player may draw (rule 5)."""
        return can_draw(len(self.draw_pile), self._in_round)

    def legal_actions(self) -> list[int]:
        """The legal actions of the current player, ascending; empty once the game is over."""
        if self.game_over:
            return []
        hand = self._hands[self.current_player]
        top = self.discard_pile[-1]
        nxt = top % NUM_CARD_VALUES + 1
        out = []
        if nxt < top:  # on a llama: a 1 (action 0) sorts before a llama (action 6)
            if hand[nxt]:
                out.append(nxt - 1)
            if hand[top]:
                out.append(top - 1)
        else:
            if hand[top]:
                out.append(top - 1)
            if hand[nxt]:
                out.append(nxt - 1)
        if self.draw_pile and self._in_round > 1:
            out.append(_DRAW)
        out.append(_QUIT)
        return out

    def legal_mask(self) -> list[bool]:
        """A list of 9 booleans, ``True`` where the action is legal."""
        mask = [False] * NUM_ACTIONS
        for a in self.legal_actions():
            mask[a] = True
        return mask

    def is_legal(self, action: object) -> bool:
        """Whether ``action`` is legal now. Anything :meth:`step` would refuse is not:
        non-integers (see :func:`action_index`), actions out of range, and every action
        once the game is over."""
        if type(action) is not int:
            action = action_index(action)
            if action is None:
                return False
        if self.game_over or not 0 <= action < NUM_ACTIONS:
            return False
        if action == _QUIT:
            return True
        if action == _DRAW:
            return bool(self.draw_pile) and self._in_round > 1
        card = action + 1
        top = self.discard_pile[-1]
        return self._hands[self.current_player][card] > 0 and (card == top or card == top % NUM_CARD_VALUES + 1)

    # ------------------------------------------------------------------ actions

    def step(self, action: object) -> RoundResult | None:
        """Apply ``action`` for :attr:`current_player`.

        Returns the :class:`RoundResult` when this action ended a round, else ``None``.
        Raises :class:`IllegalActionError` (the state untouched) for an action the rules
        forbid, one out of range, one that is not an integer (:func:`action_index`), or
        any action once the game is over.
        """
        a = action if type(action) is int else action_index(action)
        if a is None or self.game_over or not 0 <= a < NUM_ACTIONS:
            raise self.illegal_action_error(action)
        # each branch checks its own rule (as is_legal does), so a move is checked once
        p = self.current_player
        if a <= _PLAY_LLAMA:
            card = a + 1
            top = self.discard_pile[-1]
            if not self._hands[p][card] or not (card == top or card == top % NUM_CARD_VALUES + 1):  # rule 4
                raise self.illegal_action_error(action)
            self._hands[p][card] -= 1
            self.hand_sizes[p] -= 1
            self.discard_pile.append(card)
            self.discard_counts[card] += 1
            self._played[p * 8 + card] += 1
            self.last_player = p
            if self.hand_sizes[p] == 0:
                return self._end_round(p)
        elif a == _DRAW:
            if not (self.draw_pile and self._in_round > 1):  # rule 5
                raise self.illegal_action_error(action)
            self._drew_on[p * 8 + self.discard_pile[-1]] += 1
            card = self.draw_pile.pop()
            self._hands[p][card] += 1
            self.hand_sizes[p] += 1
        else:
            self.quit[p] = True
            self._quit_on[p] = self.discard_pile[-1]
            self._quit_at[p] = self.round_moves + 1  # this move's number in the round
            self._in_round -= 1
            if self._in_round == 0:
                return self._end_round(None)
        # rule 7, as _next_active (inlined: this runs at every move)
        nxt = p + 1 if p + 1 < self.num_players else 0
        if self.quit[nxt]:
            nxt = self._next_active(nxt)
        self.current_player = nxt
        return None

    def illegal_action_error(self, action: object, who: str | None = None) -> IllegalActionError:
        """The error for ``action`` refused at the current seat, saying what is wrong
        with it (not an integer, out of range, against the rules, or the game is over)
        and which actions are legal. ``who`` names the chooser (default ``"seat <current
        player>"``; the table driver passes ``"agent 'heuristic' at seat 2"``)."""
        legal = self.legal_actions()
        seat = self.current_player
        who = who or f"seat {seat}"
        names = ", ".join(f"{a} ({Action(a).name})" for a in legal)
        a = action_index(action)
        if self.game_over:
            msg = f"{who}: the game is over: no action is legal (got {action!r})"
        elif a is None:
            msg = (
                f"{who}: {action!r} ({type(action).__name__}) is not an action: an action must be an integer "
                f"0..{NUM_ACTIONS - 1}; legal now: {names}"
            )
        elif not 0 <= a < NUM_ACTIONS:
            msg = f"{who}: action {brief(a)} is out of range (actions are 0..{NUM_ACTIONS - 1}); legal now: {names}"
        else:
            msg = f"{who}: action {a} ({Action(a).name}) is illegal; legal now: {names}"
        return IllegalActionError(msg, action, legal, seat=seat)

    def _next_active(self, seat: int) -> int:
        """Rule 7: play passes to the left (seat + 1), skipping players who quit; a
        player left alone keeps the turn."""
        n = self.num_players
        quit_ = self.quit
        nxt = (seat + 1) % n
        while quit_[nxt]:
            nxt = (nxt + 1) % n
        return nxt

    def _end_round(self, went_out: int | None) -> RoundResult:
        """Rules 8-12: score the round, check the end of the game, deal the next round."""
        n = self.num_players
        scores = self.scores
        penalties = [_hand_penalty(hand) for hand in self._hands]
        returned = [0] * n
        if went_out is not None:
            penalties[went_out] = 0
            returned[went_out] = marker_to_return(scores[went_out])
        for p in range(n):
            scores[p] += penalties[p] - returned[p]
        self.game_over = is_game_over(scores, self.end_score)
        result = RoundResult(
            self.round,
            went_out,
            tuple(penalties),
            tuple(returned),
            tuple(scores),
            self.game_over,
            tuple(map(tuple, self._hands)),
        )
        self.last_result = result
        if not self.game_over:
            self.round += 1
            self._deal(_next_round_starter(self.last_player, self.starter, n))
        return result

    def _deal(self, starter: int) -> None:
        """Rule 2: shuffle all 56 cards, deal ``hand_size`` to each player, turn the top
        card of the draw pile face up to start the discard pile."""
        deck = list(_DECK)
        self._rng.shuffle(deck)  # the same shuffle as rng.permutation of the deck array, cheaper
        n, h = self.num_players, self.hand_size
        hands = []
        for start in range(0, n * h, h):
            counts = [0] * (NUM_CARD_VALUES + 1)
            for c in deck[start : start + h]:
                counts[c] += 1
            hands.append(counts)
        self._hands = hands
        self.hand_sizes = [h] * n
        del deck[: n * h]  # what is left is the draw pile
        top = deck.pop()
        self.draw_pile = deck
        self.discard_pile = [top]
        discard_counts = [0] * (NUM_CARD_VALUES + 1)
        discard_counts[top] = 1
        self.discard_counts = discard_counts
        self.quit = [False] * n
        self._in_round = n
        self.starter = starter
        self.current_player = starter
        self.last_player = None
        self._clear_history()

    def _clear_history(self) -> None:
        """The public record of the round (see :meth:`history`): empty at a deal."""
        n = self.num_players
        self._history_known = True
        self._played = [0] * (8 * n)  # seat p's count of code c at p * 8 + c (c = 0 unused)
        self._drew_on = [0] * (8 * n)
        self._quit_on = [0] * n
        self._quit_at = [0] * n

    # ------------------------------------------------------------------ snapshots

    def to_dict(self) -> dict[str, Any]:
        """The whole state as plain JSON-serialisable data (``docs/env.md``, the snapshot).

        Beyond the keys every snapshot must have it holds the rule options, the round's
        starter and last player to play a card (rule 11) and the generator's state, so that
        ``LlamaGame.from_dict(g.to_dict())`` also deals the same future rounds.
        """
        return {
            "num_players": self.num_players,
            "scores": list(self.scores),
            "hands": [self.hand(p) for p in range(self.num_players)],
            "draw_pile": list(self.draw_pile),
            "discard_pile": list(self.discard_pile),
            "quit": list(self.quit),
            "current_player": self.current_player,
            "round": self.round,
            "game_over": self.game_over,
            **self.rules.options(),
            "starter": self.starter,
            "last_player": self.last_player,
            "history": self.history() if self._history_known else None,
            "rng_state": _jsonable(self._rng.bit_generator.state),
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any], rng: np.random.Generator | int | None = None) -> LlamaGame:
        """Rebuild a game from :meth:`to_dict` output (or a hand-written state).

        Keys beyond the required ones are optional: the rule options (``end_score``,
        ``hand_size``: :func:`rule_option_fields`) default to the standard rules,
        ``starter`` to the current player, ``last_player`` to nobody (only while no card
        has been played this round: rule 11 needs it after), and the generator to
        ``rng`` (or fresh entropy) when ``rng_state`` is absent (``rng`` is checked either
        way). Other keys (up to 1,000) are ignored, except one that looks like a
        misspelling of a key the engine reads (``endscore``).
        An impossible state raises ``ValueError`` saying what is wrong.
        """
        _check_rng(rng)  # even when the snapshot's generator is taken: a wrong one is a mistake all the same
        if not isinstance(d, dict):
            raise ValueError(f"a game snapshot must be a dict, got {type(d).__name__}")
        missing = [k for k in _REQUIRED_KEYS if k not in d]
        if missing:
            raise ValueError(f"snapshot is missing required keys: {', '.join(missing)}")
        known = (*_REQUIRED_KEYS, *DEFAULT_RULES.options(), *_OPTIONAL_KEYS)
        extra = [str(k) for k in d if k not in known]
        if len(extra) > _MAX_OTHER_KEYS:  # a hostile dict's 20,000 took 0.3 s of the search below
            raise ValueError(
                f"a game snapshot holds the engine's keys and at most {_MAX_OTHER_KEYS} others, got {len(extra)} others"
            )
        for key in sorted(k for k in extra if len(k) <= 2 * _LONGEST_KEY):  # more keys are allowed, but
            near = difflib.get_close_matches(key.lower(), known, n=1, cutoff=0.8)
            if near:  # a misspelt rule option would play the standard rules without a word
                raise ValueError(f"snapshot key {key!r} is not one the engine reads: did you mean {near[0]!r}?")
        n = _int_field(d, "num_players")
        rules = Rules(n, **{key: _int_field(d, key, default) for key, default in DEFAULT_RULES.options().items()})
        end_score, hand_size = rules.end_score, rules.hand_size

        scores = _int_list(d, "scores", n)
        if any(s < 0 for s in scores):
            raise ValueError(f"snapshot scores must be non-negative, got {scores}")
        hands_raw = d["hands"]
        if not isinstance(hands_raw, list) or len(hands_raw) != n:
            raise ValueError(f"snapshot 'hands' must be a list of {n} hands, got {brief(hands_raw)}")
        hands = [_card_list(h, f"hands[{p}]") for p, h in enumerate(hands_raw)]
        draw_pile = _card_list(d["draw_pile"], "draw_pile")
        discard_pile = _card_list(d["discard_pile"], "discard_pile")
        quit_ = d["quit"]
        if not isinstance(quit_, list) or len(quit_) != n or not all(isinstance(q, (bool, np.bool_)) for q in quit_):
            raise ValueError(f"snapshot 'quit' must be a list of {n} booleans, got {brief(quit_)}")
        quit_ = [bool(q) for q in quit_]  # numpy's too, as the counts take numpy integers
        current = _int_field(d, "current_player")
        if not 0 <= current < n:
            raise ValueError(f"snapshot current_player must be a seat 0..{n - 1}, got {current}")
        round_ = _int_field(d, "round")
        if round_ < 1:
            raise ValueError(f"snapshot round must be at least 1, got {round_}")
        game_over = d["game_over"]
        if not isinstance(game_over, (bool, np.bool_)):
            raise ValueError(f"snapshot game_over must be a bool, got {brief(game_over)}")
        game_over = bool(game_over)

        counts = [0] * (NUM_CARD_VALUES + 1)
        for pile in (*hands, draw_pile, discard_pile):
            for c in pile:
                counts[c] += 1
        wrong = {c: counts[c] for c in range(1, NUM_CARD_VALUES + 1) if counts[c] != COPIES_PER_VALUE}
        if wrong:
            detail = ", ".join(f"{Card(c).name.lower()}: {k}" for c, k in wrong.items())
            raise ValueError(
                f"snapshot does not hold the 56-card deck: each card code must appear "
                f"{COPIES_PER_VALUE} times across hands and piles, but {detail}"
            )
        if not discard_pile:
            raise ValueError("snapshot discard_pile is empty: a round always has a top card")
        for i in range(1, len(discard_pile)):
            below, card = discard_pile[i - 1], discard_pile[i]
            if not can_play_on(card, below):
                raise ValueError(
                    f"snapshot discard_pile breaks the play rule at position {i}: "
                    f"{card_name(card)} cannot lie on {card_name(below)} (rule 4)"
                )
        undealt = DECK_SIZE - n * hand_size - 1
        if len(draw_pile) > undealt:
            raise ValueError(
                f"snapshot hand_size={hand_size} is contradicted by the draw pile: a deal of {n} x {hand_size} "
                f"cards leaves {undealt} in the draw pile, which only shrinks, but it holds {len(draw_pile)}"
            )
        if game_over != is_game_over(scores, end_score):
            raise ValueError(f"snapshot game_over={game_over} contradicts scores {scores} with end_score {end_score}")
        if max(scores) > end_score - 1 + MAX_PENALTY:  # (every score was below end_score before the last round)
            raise ValueError(
                f"snapshot scores {brief(scores)} cannot come from end_score {end_score}: the game ends once a score "
                f"reaches it, so a score can pass it by at most one round's points ({MAX_PENALTY}), up to "
                f"{end_score - 1 + MAX_PENALTY}"
            )
        # Scores change only when a round is scored, and every scored round costs someone
        # a point; a finished game keeps the number of its last round.
        scored_rounds = round_ if game_over else round_ - 1
        if not scored_rounds and any(scores):
            raise ValueError(f"snapshot is in round 1 but holds scores {scores}: scores change only when a round ends")
        if scored_rounds and not any(scores):
            raise ValueError(
                f"snapshot has {scored_rounds} scored round(s) (round {round_}) but every score is 0: "
                "each scored round costs someone a point"
            )
        if game_over and not all(quit_) and all(hands):
            raise ValueError(
                "snapshot has game_over=True but its last round did not end: nobody went out (every hand "
                "holds cards) and not every player quit (rule 8)"
            )
        if not game_over:
            if all(quit_):
                raise ValueError("snapshot has every player quit but the round not scored")
            if quit_[current]:
                raise ValueError(f"snapshot current_player {current} has quit the round")
            empty = [p for p, h in enumerate(hands) if not h]
            if empty:
                raise ValueError(f"snapshot seat {empty[0]} has no cards but the round was not scored")
        starter = _int_field(d, "starter", current)
        if not 0 <= starter < n:
            raise ValueError(f"snapshot starter must be a seat 0..{n - 1}, got {starter}")
        if len(discard_pile) == 1 and len(draw_pile) == undealt and not any(quit_) and current != starter:
            raise ValueError(
                f"snapshot current_player {current} is not the starter {starter}, but no move was made this round "
                "(nothing played, drawn or quit): the starter makes the first move"
            )
        last_player = d.get("last_player")
        if last_player is not None:
            last_player = _int_field(d, "last_player")
            if not 0 <= last_player < n:
                raise ValueError(f"snapshot last_player must be a seat 0..{n - 1} or None, got {last_player}")
        played = len(discard_pile) - 1
        if played and last_player is None:
            raise ValueError(
                f"snapshot has {played} card(s) played this round but no last_player: rule 11 needs the seat "
                "that played last to choose the next starter"
            )
        if not played and last_player is not None:
            raise ValueError(f"snapshot names last_player {last_player} but no card was played this round")

        history = d.get("history")
        if history is not None:
            history = _check_history(history, n, hand_size, hands, draw_pile, discard_pile, quit_, last_player)
        else:
            _check_hands_without_history(hand_size, hands, undealt - len(draw_pile), last_player)

        if "rng_state" in d and d["rng_state"] is not None:
            gen = _rng_from_state(d["rng_state"])
        else:
            gen = _make_rng(rng)

        g = cls.__new__(cls)
        g._set_rules(rules)
        g._rng = gen
        g.scores = scores
        g._hands = []
        for h in hands:
            per_code = [0] * (NUM_CARD_VALUES + 1)
            for card in h:
                per_code[card] += 1
            g._hands.append(per_code)
        g.hand_sizes = [len(h) for h in hands]
        g.draw_pile = draw_pile
        g.discard_pile = discard_pile
        g.discard_counts = [0] * (NUM_CARD_VALUES + 1)
        for card in discard_pile:
            g.discard_counts[card] += 1
        g.quit = list(quit_)
        g._in_round = quit_.count(False)
        g.current_player = current
        g.round = round_
        g.game_over = game_over
        g.starter = starter
        g.last_player = last_player
        g.last_result = None
        g._clear_history()
        if history is None:
            g._history_known = False  # an older or hand-written snapshot: known again from the next deal
        else:
            for p in range(n):
                g._played[p * 8 + 1 : p * 8 + 8] = history["played"][p]
                g._drew_on[p * 8 + 1 : p * 8 + 8] = history["drew_on"][p]
            g._quit_on = list(history["quit_on"])
            g._quit_at = list(history["quit_at"])
        return g

    def copy(self) -> LlamaGame:
        """An independent copy, generator state included (for search and what-ifs)."""
        g = LlamaGame.__new__(LlamaGame)
        g._set_rules(self.rules)
        g.scores = list(self.scores)
        g._hands = [list(h) for h in self._hands]
        g.hand_sizes = list(self.hand_sizes)
        g.draw_pile = list(self.draw_pile)
        g.discard_pile = list(self.discard_pile)
        g.discard_counts = list(self.discard_counts)
        g.quit = list(self.quit)
        g._in_round = self._in_round
        g.current_player = self.current_player
        g.round = self.round
        g.game_over = self.game_over
        g.starter = self.starter
        g.last_player = self.last_player
        g.last_result = self.last_result
        g._history_known = self._history_known
        g._played = list(self._played)
        g._drew_on = list(self._drew_on)
        g._quit_on = list(self._quit_on)
        g._quit_at = list(self._quit_at)
        g._rng = _rng_from_state(self._rng.bit_generator.state)
        return g

    def __repr__(self) -> str:
        return (
            f"LlamaGame(num_players={self.num_players}, round={self.round}, "
            f"current_player={self.current_player}, scores={self.scores}, game_over={self.game_over})"
        )


def _check_hands_without_history(hand_size: int, hands: list[list[int]], drawn: int, last_player: int | None) -> None:
    """The hands of a snapshot without its round's history, checked against what the
    piles show (``ValueError`` naming the contradiction), ``drawn`` being the cards that
    left the draw pile this round. Each seat holds the ``hand_size`` dealt, plus what it
    drew, less what it played. Who drew or played is unknown, but every card a seat holds
    beyond the deal was drawn, so those cards together are at most ``drawn`` (the whole
    deck being accounted for, the cards missing below the deal are then at most those
    played). When they are exactly ``drawn``, no seat that drew also played, so only the
    seats holding fewer than the deal played, and ``last_player`` is one of them."""
    sizes = [len(h) for h in hands]
    beyond = sum(max(0, k - hand_size) for k in sizes)
    if beyond > drawn:
        raise ValueError(
            f"snapshot hands hold {sizes} cards, which a deal of {hand_size} each cannot become: they hold {beyond} "
            f"beyond the deal, but the draw pile shows {drawn} drawn this round"
        )
    if beyond == drawn and last_player is not None and sizes[last_player] >= hand_size:
        raise ValueError(
            f"snapshot last_player {last_player} played no card this round: with hands of {sizes} cards after a deal "
            f"of {hand_size} and {drawn} drawn, only the seats holding fewer than {hand_size} played"
        )


def _check_history(
    h: Any,
    n: int,
    hand_size: int,
    hands: list[list[int]],
    draw_pile: list[int],
    discard_pile: list[int],
    quit_: list[bool],
    last_player: int | None,
) -> dict[str, Any]:
    """The ``history`` of a snapshot, checked against the rest of it (``ValueError``
    naming the first contradiction)."""
    keys = ("moves", "played", "drew_on", "quit_on", "quit_at")
    if not isinstance(h, dict) or len(h) != len(keys) or set(h) != set(keys):
        raise ValueError(f"snapshot 'history' must be a dict with the keys {', '.join(keys)}, got {brief(h)}")

    def count(x: Any, what: str) -> int:
        if not is_int(x) or x < 0:
            raise ValueError(f"snapshot history {what} must be a non-negative integer, got {brief(x)}")
        return int(x)

    def per_seat(key: str, width: int | None) -> list[Any]:
        rows = h[key]
        if not isinstance(rows, list) or len(rows) != n:
            raise ValueError(f"snapshot history '{key}' must list {n} seats, got {brief(rows)}")
        if width is None:
            return [count(x, f"'{key}'[{p}]") for p, x in enumerate(rows)]
        out = []
        for p, row in enumerate(rows):
            if not isinstance(row, list) or len(row) != width:
                raise ValueError(f"snapshot history '{key}'[{p}] must list {width} counts, got {brief(row)}")
            out.append([count(x, f"'{key}'[{p}]") for x in row])
        return out

    moves = count(h["moves"], "'moves'")
    played = per_seat("played", NUM_CARD_VALUES)
    drew_on = per_seat("drew_on", NUM_CARD_VALUES)
    quit_on = per_seat("quit_on", None)
    quit_at = per_seat("quit_at", None)
    on_pile = [discard_pile[1:].count(c) for c in range(1, NUM_CARD_VALUES + 1)]
    by_value = [sum(played[p][v] for p in range(n)) for v in range(NUM_CARD_VALUES)]
    if by_value != on_pile:
        raise ValueError(
            f"snapshot history 'played' ({by_value} per value) contradicts the discard pile, which holds "
            f"{on_pile} cards per value played this round"
        )
    top = discard_pile[-1]
    if last_player is not None and not played[last_player][top - 1]:  # the top card is the last one played
        raise ValueError(
            f"snapshot last_player {last_player} played no {card_name(top)[2:]} this round by the history's 'played' "
            f"({played[last_player]} per value), yet the top card, played last, is {card_name(top)}"
        )
    drawn = DECK_SIZE - n * hand_size - 1 - len(draw_pile)
    if sum(map(sum, drew_on)) != drawn:
        raise ValueError(
            f"snapshot history 'drew_on' counts {sum(map(sum, drew_on))} draws, but the draw pile shows {drawn}"
        )
    for p in range(n):
        expected = hand_size + sum(drew_on[p]) - sum(played[p])
        if len(hands[p]) != expected:
            raise ValueError(
                f"snapshot seat {p} holds {len(hands[p])} cards, but its history (dealt {hand_size}, drew "
                f"{sum(drew_on[p])}, played {sum(played[p])}) leaves {expected}"
            )
        if quit_[p] != (quit_on[p] != 0) or quit_[p] != (quit_at[p] != 0):
            raise ValueError(
                f"snapshot history quit_on[{p}]={quit_on[p]}, quit_at[{p}]={quit_at[p]} contradict quit[{p}]={quit_[p]}"
            )
        if quit_on[p] > NUM_CARD_VALUES or quit_at[p] > moves:
            raise ValueError(f"snapshot history quit_on[{p}] or quit_at[{p}] is out of range")
    if moves != sum(by_value) + drawn + sum(quit_):
        raise ValueError(
            f"snapshot history 'moves' is {brief(moves)}, but {sum(by_value)} plays, {drawn} draws and "
            f"{sum(quit_)} quits were made this round"
        )
    return {"moves": moves, "played": played, "drew_on": drew_on, "quit_on": quit_on, "quit_at": quit_at}


_REQUIRED_KEYS = (
    "num_players",
    "scores",
    "hands",
    "draw_pile",
    "discard_pile",
    "quit",
    "current_player",
    "round",
    "game_over",
)
_OPTIONAL_KEYS = ("starter", "last_player", "history", "rng_state")
_LONGEST_KEY = max(map(len, (*_REQUIRED_KEYS, *DEFAULT_RULES.options(), *_OPTIONAL_KEYS)))
_MAX_OTHER_KEYS = 1_000
"""How many keys a snapshot may hold that the engine does not read: each is compared with
the keys it reads for a misspelling (a key twice as long as the longest is none)."""


def _int_field(d: dict[str, Any], key: str, default: int | None = None) -> int:
    value = d.get(key, default)
    if not is_int(value):
        raise ValueError(f"snapshot {key} must be an integer, got {brief(value)}")
    return int(value)


def _int_list(d: dict[str, Any], key: str, length: int) -> list[int]:
    value = d[key]
    if not isinstance(value, list) or len(value) != length or not all(is_int(v) for v in value):
        raise ValueError(f"snapshot {key} must be a list of {length} integers, got {brief(value)}")
    return [int(v) for v in value]


def _card_list(value: Any, what: str) -> list[int]:
    if not isinstance(value, list):
        raise ValueError(f"snapshot {what} must be a list of card codes 1..7, got {brief(value)}")
    if len(value) > DECK_SIZE:
        raise ValueError(f"snapshot {what} holds {len(value)} cards, more than the {DECK_SIZE} of the deck")
    for c in value:
        if not is_int(c) or not 1 <= c <= NUM_CARD_VALUES:
            raise ValueError(f"snapshot {what} holds {brief(c)}, which is not a card code 1..7")
    return [int(c) for c in value]


def card_name(card: int) -> str:
    """A card in words, for messages: ``a 5``, ``a llama``."""
    return "a llama" if card == Card.LLAMA else f"a {card}"


class _Brief(reprlib.Repr):
    """``repr`` cut short: a few levels, items and characters, and an integer of many
    digits by its size (``repr`` of one beyond 4300 digits raises)."""

    def __init__(self) -> None:
        super().__init__()
        self.maxlevel, self.maxlist, self.maxtuple, self.maxdict = 3, 10, 10, 6
        self.maxstring = self.maxother = 60

    def repr_int(self, x: int, level: int) -> str:
        bits = abs(x).bit_length()
        return repr(x) if bits <= 200 else f"<an integer of {bits} bits>"


_BRIEF = _Brief()


def error_line(exc: BaseException, limit: int = 160) -> str:
    """``exc`` in one line for a message of ours: its type and the first line of its text,
    at most ``limit`` characters of it (a library's error can run to pages)."""
    first = (str(exc).strip().splitlines() or [""])[0][:limit]
    return f"{type(exc).__name__}: {first}"


def brief(value: Any) -> str:
    """``repr(value)`` bounded in depth and length, for error messages about input data:
    a hostile snapshot nested 50,000 deep or a million entries long is named in a line,
    never with a ``RecursionError`` or a long wait."""
    return _BRIEF.repr(value)


def brief_line(value: Any) -> str:
    """:func:`brief` in one line, for a message about what is no such value: an array's
    repr runs over many lines."""
    return " ".join(brief(value).split())


INTEGER = re.compile(r"[+-]?[0-9]+")
DECIMAL = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
"""Numbers as a person types them, in ASCII: a sign at most, no spaces. Python's ``int``
and ``float`` also read other scripts' digits (``١٢`` is 12), underscores (``1_000``) and
spaces around them, which no one means as a number on a command line or in a spec."""

MAX_DIGITS = 1000
"""The most digits ``read_int`` reads where no bound says fewer: more than any value
means (an agent's parameter of 400 digits is refused by the agent, as out of float
range), and ``int`` of thousands of digits is slow, beyond 4,300 an error."""


def _bound(low: float | None, high: float | None, above: bool = False) -> str:
    """How the range ``[low, high]`` (``(low, high]`` with ``above``; one of them at
    least) is said in a message."""
    if low is None:
        return f"at most {high}"
    if high is None:
        return f"above {low}" if above else f"at least {low}"
    return f"above {low} and at most {high}" if above else f"between {low} and {high}"


def read_int(text: str, what: str, low: int | None = None, high: int | None = None) -> int:
    """``text`` read as an integer in ``[low, high]`` (``None``: no bound), written in the
    ASCII digits 0-9 with a sign at most (``INTEGER``); anything else is a one-line
    ``ValueError`` saying that ``what`` must be so, the text shortened (``brief``). A
    value of more digits than a bound has is out of range by its length, not read."""
    if not isinstance(text, str) or not INTEGER.fullmatch(text):
        raise ValueError(f"{what} must be an integer (digits 0-9), got {brief(text)}")
    digits = len(text.lstrip("+-").lstrip("0"))
    toward = low if text.startswith("-") else high  # the bound its sign runs toward
    if digits > (MAX_DIGITS if toward is None else len(str(abs(toward)))):  # past it by its length alone
        allowed = f"an integer of at most {MAX_DIGITS} digits" if toward is None else _bound(low, high)
        raise ValueError(f"{what} must be {allowed}, got {brief(text)}")
    value = int(text)
    if (low is not None and value < low) or (high is not None and value > high):
        shown = str(value) if len(text) <= 40 else brief(text)
        raise ValueError(f"{what} must be {_bound(low, high)}, got {shown}")
    return value


def read_number(
    text: str, what: str, low: float | None = None, high: float | None = None, *, above: bool = False
) -> float:
    """``text`` read as a finite number in ``[low, high]`` (``(low, high]`` with
    ``above``; ``None``: no bound), written in ASCII (``DECIMAL``: ``2``, ``-0.5``,
    ``1e-3``); anything else is a one-line ``ValueError`` saying that ``what`` must be so,
    the text shortened (``brief``)."""
    if not isinstance(text, str) or not DECIMAL.fullmatch(text):
        raise ValueError(f"{what} must be a number (digits 0-9), got {brief(text)}")
    value = float(text)
    low_ok = low is None or (low < value if above else low <= value)
    if not (math.isfinite(value) and low_ok and (high is None or value <= high)):
        if low is None:
            allowed = f"a finite number of at most {high}" if high is not None else "a finite number"
        elif high is None:
            allowed = f"a finite number {'above' if above else 'of at least'} {low}"
        else:
            allowed = _bound(low, high, above)
        raise ValueError(f"{what} must be {allowed}, got {text if len(text) <= 40 else brief(text)}")
    return value


def _jsonable(state: Any) -> Any:
    if isinstance(state, dict):
        return {k: _jsonable(v) for k, v in state.items()}
    if isinstance(state, np.ndarray):
        return state.tolist()
    if isinstance(state, np.integer):
        return int(state)
    return state


_BIT_GENERATORS: dict[str, type[np.random.BitGenerator]] = {
    "PCG64": np.random.PCG64,
    "PCG64DXSM": np.random.PCG64DXSM,
    "Philox": np.random.Philox,
    "SFC64": np.random.SFC64,
    "MT19937": np.random.MT19937,
}
"""The bit generators a snapshot may name: an allow-list, so a snapshot can never make
``from_dict`` call anything else that ``numpy.random`` happens to hold."""


def _rng_from_state(state: Any) -> np.random.Generator:
    if not isinstance(state, dict):
        raise ValueError(f"snapshot rng_state must be a numpy bit generator state (a dict), got {brief(state)}")
    name = state.get("bit_generator")
    bit_gen_cls = _BIT_GENERATORS.get(name) if isinstance(name, str) else None
    if bit_gen_cls is None:
        raise ValueError(f"snapshot rng_state names bit generator {brief(name)}; allowed: {', '.join(_BIT_GENERATORS)}")
    bit_gen = bit_gen_cls(0)  # seeded, so no entropy is drawn; the state is replaced next
    try:
        _check_state_fields(state, bit_gen.state, "rng_state")
    except ValueError as exc:
        raise ValueError(f"snapshot rng_state is not a valid {name} state: {exc}") from None
    try:
        bit_gen.state = state
    except (KeyError, TypeError, ValueError, OverflowError, IndexError, AttributeError) as exc:
        raise ValueError(f"snapshot rng_state is not a valid {name} state: {type(exc).__name__}: {exc}") from None
    return np.random.Generator(bit_gen)


def _check_state_fields(given: Any, like: Any, where: str) -> None:
    """Each field of a bit generator state holds what numpy keeps there (``like``, a
    fresh generator's state): an integer (never a bool, a float or a string, which numpy
    would silently take as 1, truncate or refuse obscurely) or a list of as many integers
    as its array, none negative (numpy 1.x wraps a negative one around to a huge state,
    with only a warning). The walk follows ``like``, so it is as deep as numpy's state
    (two levels), whatever ``given`` nests."""
    if isinstance(like, dict):
        if not isinstance(given, dict):
            raise ValueError(f"{where} must be a dict with the keys {', '.join(like)}, got {brief(given)}")
        missing = [k for k in like if k not in given]
        if missing:
            raise ValueError(f"{where} has no {', '.join(map(repr, missing))}")
        for key, value in like.items():
            _check_state_fields(given[key], value, f"{where}.{key}")
    elif isinstance(like, np.ndarray):
        if isinstance(given, np.ndarray):
            ok = given.dtype.kind in "iu" and given.shape == like.shape and not (given < 0).any()
        else:
            ok = isinstance(given, list) and len(given) == like.size and all(is_int(v) and v >= 0 for v in given)
        if not ok:
            raise ValueError(f"{where} must be a list of {like.size} integers >= 0, got {brief(given)}")
    elif isinstance(like, int):
        bound = _STATE_BOUNDS.get(where.rsplit(".", 1)[-1])
        if not (is_int(given) and given >= 0):
            raise ValueError(f"{where} must be an integer >= 0, got {brief(given)}")
        if bound is not None and given > bound:
            raise ValueError(f"{where} must be an integer 0..{bound}, got {brief(given)}")


_STATE_BOUNDS = {"pos": 624, "buffer_pos": 4, "has_uint32": 1, "uinteger": 2**32 - 1}
"""The fields of a bit generator state that index its own buffers (MT19937's ``pos`` in
its 624 words, Philox's ``buffer_pos`` in its 4) or flag one: numpy does not check them,
and a larger one reads memory outside the generator (a crash, or deals that differ
from run to run)."""
