"""The observation vector: each version declared once, as a spec.

One flat ``float32`` vector of the same size at every table size (other seats padded
to :data:`MAX_PLAYERS` - 1), so one policy can play any table. A version is an
:class:`ObsSpec`: a tuple of :class:`Field` s, each with its name, its :class:`Unit`
(how a natural value, a card count or a seat, becomes floats and back), what it reads
from the game and its doc. Everything else follows from that one declaration:

* the layout: :attr:`ObsSpec.size`, :attr:`ObsSpec.slices` (:data:`OBS_SIZE`,
  :data:`SLICES`, ... are the specs' numbers under their historic names);
* the bounds of the Box spaces (:meth:`ObsSpec.bounds`, :func:`observation_bounds`);
* :class:`ObsView`: one observation in natural units, field by field on demand, with a
  property per field made from its unit. This is how agents read observations: fast
  enough for the hot path of evaluation (one ``tolist()``, then plain list reads);
* :func:`decode`: every field at once, as a frozen :class:`Decoded` record whose
  attributes are the fields (notebooks, tests, printing);
* :func:`view`: the scaled fields as numpy views by name, for batched or network code;
* the encoder: :meth:`ObsSpec.encode_reference` writes any spec out field by field. The
  environments use the hand-tuned :func:`encode` / :func:`encode_v1` (one call per
  decision), which tests hold equal to the spec's on thousands of random states.

Seats are relative to the observer: field ``opp_*`` entry 0 is the player to my left
(the next to act after me), entry 1 the one after, and so on.

Only public information and the observer's own hand go in: never another player's
cards nor the order of the draw pile (:data:`HIDDEN`, the privileged critic's extra
input, is the one exception, and no policy reads it).

Two versions. Version 0 (:data:`OBS_V0`, 52 entries) is the contract of ``Llama-v0``.
Version 1 (:data:`OBS_V1`) extends it with :data:`HISTORY_FIELDS`: what each other player
did this round (cards played by value, draws and the top card each was made on, when and
on what it quit), who played last, the round and how far it has gone. It is what
``Llama-v1`` and ``llama_env.env(obs_version=1)`` return. A version-1 vector starts with
the version-0 vector, so every reader of version 0 reads version 1 too: told version 0,
:func:`view`, :class:`ObsView`, :class:`BatchView` and :func:`decode` read a version-1
vector's first 52 entries (and told version 1, they refuse a version-0 vector).

The version travels explicitly (``obs_version`` of the envs, the table driver and the
agents; the ``version`` argument here). Only where a bare vector arrives from outside,
an agent's ``act`` or the first layer of a model file, is it told by its length
(:func:`guess_obs_version`).
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass, make_dataclass
from dataclasses import field as _field
from typing import TYPE_CHECKING, Any

import numpy as np

from llama_env.engine import (
    COPIES_PER_VALUE,
    DECK_SIZE,
    MAX_END_SCORE,
    MAX_PENALTY,
    MAX_PLAYERS,
    MIN_PLAYERS,
    NUM_ACTIONS,
    NUM_CARD_VALUES,
    brief,
    check_rule_option,
    check_seat,
    is_int,
)

if TYPE_CHECKING:
    from llama_env.engine import LlamaGame

__all__ = [
    "Unit",
    "Count",
    "Score",
    "Flag",
    "OneHot",
    "Field",
    "ObsSpec",
    "OBS_V0",
    "OBS_V1",
    "SPECS",
    "obs_spec",
    "FIELDS",
    "OBS_SIZE",
    "SLICES",
    "HISTORY_FIELDS",
    "FIELDS_V1",
    "OBS_SIZE_V1",
    "SLICES_V1",
    "OBS_VERSIONS",
    "obs_size",
    "check_obs_version",
    "guess_obs_version",
    "VERSION_OF_SIZE",
    "sizes_text",
    "encoder",
    "encode_v1",
    "encode_many_v1",
    "DecodedHistory",
    "MAX_OTHERS",
    "HAND_SIZE_SCALE",
    "MAX_PENALTY",
    "END_SCORE_SCALE",
    "encode",
    "encode_many",
    "ObsView",
    "one_hot_reader",
    "BatchView",
    "view",
    "decode",
    "Decoded",
    "observation_bounds",
    "HIDDEN",
    "HIDDEN_SIZE",
    "hidden_state",
    "action_mask",
    "is_shared_mask",
    "agent_mask",
]

MAX_OTHERS = MAX_PLAYERS - 1
"""The other seats a per-seat field has room for: an observation is one length at any table size."""
HAND_SIZE_SCALE = 10.0
"""Counts of cards held or drawn are divided by this (``hand_size``: cards I hold / 10), keeping entries small."""
END_SCORE_SCALE = 100.0
"""The ``end_score`` rule option is divided by this in the observation (40 reads 0.4)."""
MOVES_SCALE = 50.0
ROUND_SCALE = 10.0
MAX_ROUND_MOVES = 2 * DECK_SIZE + MAX_PLAYERS  # every card played and drawn, every player quits
MAX_ROUND = 1000  # the round field is capped here (real games last a few rounds)

Reader = Callable[["ObsView"], Any]
"""Reads one field of an :class:`ObsView` in natural units."""


# --------------------------------------------------------------------------- units


class Unit:
    """How one natural value (a count, a flag, a card code) is written as ``width``
    floats and read back. ``per_value`` units hold one entry per card value 1..6, llama."""

    width: int = 1

    def entries(self, value: Any, end_score: int) -> list[float]:  # pragma: no cover - abstract
        """The floats of ``value`` in a game with this ``end_score``."""
        raise NotImplementedError

    def high(self, end_score: int) -> float:
        """The largest entry (every entry is at least 0)."""
        return 1.0

    def reader(self, start: int, per_other: bool, name: str) -> Reader:  # pragma: no cover - abstract
        """A function reading the value at ``start`` of an :class:`ObsView` (one per
        other seat, for the ``num_players - 1`` seats present, when ``per_other``);
        ``name``, the field's, is what a message about a bad value names."""
        raise NotImplementedError

    def values(self, block: np.ndarray, end_score: np.ndarray) -> np.ndarray:  # pragma: no cover - abstract
        """The natural values of a block of entries ``(..., width)`` (the last axis dropped
        when ``width`` is 1), as :meth:`reader` reads each one; ``end_score`` holds each
        row's end score (``(B,)``, broadcast over the other axes). What :class:`BatchView`
        reads with."""
        raise NotImplementedError


@dataclass(frozen=True)
class Count(Unit):
    """A count divided by ``scale``; read back rounded. ``most`` is its largest value."""

    scale: float
    most: int
    per_value: bool = False

    @property
    def width(self) -> int:  # type: ignore[override]
        return NUM_CARD_VALUES if self.per_value else 1

    def entries(self, value: Any, end_score: int) -> list[float]:
        """The count (each value's, for ``per_value``) divided by ``scale``."""
        s = self.scale
        return [k / s for k in value] if self.per_value else [value / s]

    def high(self, end_score: int) -> float:
        """The largest entry, ``most / scale``."""
        return self.most / self.scale

    def reader(self, start: int, per_other: bool, name: str) -> Reader:
        """Reads the count back as ``int(entry * scale + 0.5)`` (a tuple per value, per
        other seat, or both); a ``ValueError`` for a NaN or an infinity."""
        i, s, w = start, self.scale, self.width
        if not per_other:
            if w == 1:

                def one(o: ObsView) -> int:
                    try:
                        return int(o._v[i] * s + 0.5)
                    except (ValueError, OverflowError):
                        raise _not_finite(o._v, i, 1) from None

                return one

            def values(o: ObsView) -> tuple[int, ...]:
                try:
                    return tuple([int(x * s + 0.5) for x in o._v[i : i + w]])
                except (ValueError, OverflowError):
                    raise _not_finite(o._v, i, w) from None

            return values
        if w == 1:

            def each(o: ObsView) -> tuple[int, ...]:
                n = o.num_players - 1
                try:
                    return tuple([int(x * s + 0.5) for x in o._v[i : i + n]])
                except (ValueError, OverflowError):
                    raise _not_finite(o._v, i, n) from None

            return each

        def each_values(o: ObsView) -> tuple[tuple[int, ...], ...]:
            n = o.num_players - 1
            try:
                return tuple(tuple([int(x * s + 0.5) for x in o._v[i + k * w : i + (k + 1) * w]]) for k in range(n))
            except (ValueError, OverflowError):
                raise _not_finite(o._v, i, n * w) from None

        return each_values

    def values(self, block: np.ndarray, end_score: np.ndarray) -> np.ndarray:
        """The counts of a block, as :meth:`reader` rounds them."""
        v = (block.astype(np.float64) * self.scale + 0.5).astype(np.int64)  # int() of each: truncated
        return v if self.per_value else v[..., 0]


@dataclass(frozen=True)
class Score(Unit):
    """Points divided by the game's ``end_score`` (read from the ``end_score`` field);
    at most a hand's worth past the end."""

    def entries(self, value: Any, end_score: int) -> list[float]:
        """The points divided by the game's ``end_score``."""
        return [value / end_score]

    def high(self, end_score: int) -> float:
        """A score one short of the end plus the largest penalty of a hand, over
        ``end_score``."""
        return (end_score - 1 + MAX_PENALTY) / end_score

    def reader(self, start: int, per_other: bool, name: str) -> Reader:
        """Reads the points back with the view's ``end_score``; a ``ValueError`` for a NaN
        or an infinity."""
        i = start
        if not per_other:

            def one(o: ObsView) -> int:
                end = o.end_score
                try:
                    return int(o._v[i] * end + 0.5)
                except (ValueError, OverflowError):
                    raise _not_finite(o._v, i, 1) from None

            return one

        def each(o: ObsView) -> tuple[int, ...]:
            end, n = o.end_score, o.num_players - 1
            try:
                return tuple([int(x * end + 0.5) for x in o._v[i : i + n]])
            except (ValueError, OverflowError):
                raise _not_finite(o._v, i, n) from None

        return each

    def values(self, block: np.ndarray, end_score: np.ndarray) -> np.ndarray:
        """The points of a block, each row times its own ``end_score``."""
        end = end_score.reshape(end_score.shape + (1,) * (block.ndim - 2))
        return (block[..., 0].astype(np.float64) * end + 0.5).astype(np.int64)


@dataclass(frozen=True)
class Flag(Unit):
    """A yes/no as 1/0."""

    def entries(self, value: Any, end_score: int) -> list[float]:
        """1.0 for a true ``value``, else 0.0."""
        return [1.0 if value else 0.0]

    def reader(self, start: int, per_other: bool, name: str) -> Reader:
        """Reads an entry above 0.5 as true; a ``ValueError`` for a NaN or an infinity."""
        i = start
        if not per_other:

            def read(o: ObsView) -> bool:
                x = o._v[i]
                if x - x == 0.0:  # not NaN or infinite, which would compare as a flag without a word
                    return x > 0.5
                raise _not_finite(o._v, i, 1)

            return read

        def each(o: ObsView) -> tuple[bool, ...]:
            flags = o._v[i : i + o.num_players - 1]
            total = sum(flags)
            if total - total == 0.0:
                return tuple([x > 0.5 for x in flags])
            raise _not_finite(o._v, i, len(flags))

        return each

    def values(self, block: np.ndarray, end_score: np.ndarray) -> np.ndarray:
        """A block's entries above 0.5, as booleans."""
        return block[..., 0] > 0.5


_ALWAYS = object()  # OneHot.empty of a value that is always set


@dataclass(frozen=True)
class OneHot(Unit):
    """One of ``count`` values ``first, first + 1, ...`` as a one-hot block; ``empty``
    (say ``None`` or 0) is the value written as all zeros, if the value may be unset."""

    first: int
    count: int
    empty: Any = _ALWAYS

    @property
    def width(self) -> int:  # type: ignore[override]
        return self.count

    def entries(self, value: Any, end_score: int) -> list[float]:
        """A 1.0 at ``value - first``, 0.0 elsewhere (all zeros for ``empty``)."""
        return [1.0 if value == self.first + k else 0.0 for k in range(self.count)]

    def reader(self, start: int, per_other: bool, name: str) -> Reader:
        """Reads the value a block marks, checked as :meth:`checked` says."""
        one, c = self.checked(name), self.count
        i = start
        if not per_other:
            return lambda o: one(o._v, i)
        return lambda o: tuple([one(o._v, i + k * c) for k in range(o.num_players - 1)])

    def checked(self, name: str) -> Callable[[list[float], int], Any]:
        """``one(v, i)``: the value that the block ``v[i : i + count]`` of field ``name``
        marks, checked (a ``ValueError`` names the field and the block's entries, or the
        entry of a NaN or an infinity): what :class:`ObsView` and :func:`one_hot_reader`
        read a block with."""
        first, c, empty = self.first, self.count, self.empty
        marks = self._marks()

        # a 1 and a sum of 1: one 1 and 0s, as the encoders write it (a NaN or an
        # infinity anywhere fails the sum; the block's largest entry read as the value let
        # a NaN through as another card, without a word)
        if empty is _ALWAYS:

            def one(v: list[float], i: int) -> Any:
                b = v[i : i + c]
                if sum(b) == 1.0:
                    try:
                        return b.index(1.0) + first
                    except ValueError:
                        pass
                raise _not_one_hot(v, i, c, marks, name)

        else:

            def one(v: list[float], i: int) -> Any:
                b = v[i : i + c]
                total = sum(b)
                if total == 1.0:
                    try:
                        return b.index(1.0) + first
                    except ValueError:
                        pass
                elif total == 0.0 and max(b) == 0.0:
                    return empty
                raise _not_one_hot(v, i, c, marks, name)

        return one

    def _marks(self) -> str:
        """What a block holds, for messages."""
        return "one 1 and 0s" if self.empty is _ALWAYS else "one 1 and 0s, or only 0s"

    def values(self, block: np.ndarray, end_score: np.ndarray) -> np.ndarray:
        """The value each block marks; an unset block (of a value that may be unset)
        reads ``first - 1``, an integer standing for :attr:`empty`. Unchecked, unlike the
        reader: a block that is not one-hot reads its first largest entry (the check would
        cost a batched agent's decisions a tenth more; ``act_batch`` refuses a NaN or an
        infinity anywhere in its rows first)."""
        if self.empty is _ALWAYS:
            return np.argmax(block, axis=-1) + self.first
        one = block == 1.0
        return np.where(one.any(axis=-1), np.argmax(one, axis=-1) + self.first, self.first - 1)


def _not_finite(v: list[float], start: int, count: int) -> ValueError:
    """The error of entries ``v[start : start + count]`` whose sum is NaN or infinite,
    naming the first that is (or, where they are finite but add up beyond float range,
    the largest)."""
    span = range(start, start + count)
    at = next((k for k in span if v[k] - v[k] != 0.0), None)
    if at is None:
        at = max(span, key=lambda k: abs(v[k]))
        return ValueError(f"an observation's entries must be far below float range, got {v[at]} at entry {at}")
    return ValueError(f"an observation must hold finite numbers, got {v[at]} at entry {at}")


def _not_one_hot(v: list[float], start: int, count: int, marks: str, name: str) -> ValueError:
    """The error of the one-hot block ``v[start : start + count]`` of field ``name`` that
    does not hold ``marks`` (``one 1 and 0s``): a NaN or an infinity named by its entry,
    anything else by the field and the block's entries."""
    block = v[start : start + count]
    if sum(block) - sum(block) != 0.0:
        return _not_finite(v, start, count)
    return ValueError(
        f"{name} (entries {start} to {start + count - 1}) is a one-hot block, which holds {marks}; got {block}"
    )


# --------------------------------------------------------------------------- specs


@dataclass(frozen=True)
class Field:
    """One named block of the observation vector.

    ``get(game, seat)`` is its value in natural units as ``seat`` sees it; a
    ``per_other`` field has one value per other seat, in turn order from the observer's
    left and padded with zeros to :data:`MAX_OTHERS`, and ``get`` is called with each
    other seat."""

    name: str
    unit: Unit
    get: Callable[[LlamaGame, int], Any] = _field(repr=False, compare=False)
    doc: str
    per_other: bool = False

    @property
    def size(self) -> int:
        return self.unit.width * (MAX_OTHERS if self.per_other else 1)


@dataclass(frozen=True)
class ObsSpec:
    """One observation layout: its fields in order, and what follows from them."""

    version: int | None
    """The observation version (``None`` for a layout no policy reads: :data:`HIDDEN`)."""
    fields: tuple[Field, ...]
    slices: dict[str, slice] = _field(init=False, repr=False, compare=False)
    """Each field's entries, by name."""
    size: int = _field(init=False, repr=False, compare=False)
    """Entries in all."""

    def __post_init__(self) -> None:
        slices: dict[str, slice] = {}
        offset = 0
        for f in self.fields:
            if f.name in slices:
                raise ValueError(f"field {f.name!r} is declared twice")
            slices[f.name] = slice(offset, offset + f.size)
            offset += f.size
        object.__setattr__(self, "slices", slices)
        object.__setattr__(self, "size", offset)

    def extend(self, version: int, fields: tuple[Field, ...]) -> ObsSpec:
        """A new version: this one's vector followed by ``fields``."""
        return ObsSpec(version, self.fields + fields)

    def bounds(self, end_score: int) -> tuple[np.ndarray, np.ndarray]:
        """Lower and upper bounds of every entry for a game with this ``end_score`` (an
        end score the rules do not allow is a ``ValueError``: 0 divided by zero, and a
        negative one gave negative bounds)."""
        end_score = check_rule_option("end_score", end_score)
        high = np.ones(self.size, dtype=np.float32)
        for f in self.fields:
            high[self.slices[f.name]] = f.unit.high(end_score)
        return np.zeros(self.size, dtype=np.float32), high

    def encode_reference(self, game: LlamaGame, seat: int) -> np.ndarray:
        """The vector of ``seat`` written out field by field: the slow, obvious encoder
        that the fast ones must match exactly. A seat off the table is a ``ValueError``."""
        n, end = game.num_players, game.end_score
        seat = check_seat(seat, n)  # else -1 or n + 2 are another seat's vector, silently
        others = [(seat + 1 + k) % n for k in range(n - 1)]
        out: list[float] = []
        for f in self.fields:
            if f.per_other:
                for o in others:
                    out += f.unit.entries(f.get(game, o), end)
                out += [0.0] * (f.unit.width * (MAX_OTHERS - len(others)))
            else:
                out += f.unit.entries(f.get(game, seat), end)
        return np.array(out, dtype=np.float32)

    def view(self, obs: np.ndarray) -> dict[str, np.ndarray]:
        """The fields of an observation (or a batch of them) by name: numpy views, still
        scaled."""
        return {name: obs[..., s] for name, s in self.slices.items()}


def _last_player(game: LlamaGame, seat: int) -> int | None:
    last = game.last_player
    return None if last is None else (last - seat) % game.num_players


_HAND8 = Count(COPIES_PER_VALUE, COPIES_PER_VALUE, per_value=True)
_DECK10 = Count(HAND_SIZE_SCALE, DECK_SIZE)
_MOVES = Count(MOVES_SCALE, MAX_ROUND_MOVES)
_CARD = OneHot(1, NUM_CARD_VALUES)

FIELDS: tuple[Field, ...] = (
    Field("hand", _HAND8, lambda g, s: g.hand_view(s)[1:], "my cards per value 1..6, llama; count / 8"),
    Field("hand_size", _DECK10, lambda g, s: g.hand_sizes[s], "how many cards I hold / 10"),
    Field(
        "hand_penalty",
        Count(MAX_PENALTY, MAX_PENALTY),
        lambda g, s: g.penalty(s),
        "points my hand would cost now (distinct values) / 31",
    ),
    Field("top_card", _CARD, lambda g, s: g.top_card, "one-hot top card of the discard pile (1..6, llama)"),
    Field(
        "discarded",
        _HAND8,
        lambda g, s: g.discard_counts[1:],
        "cards of each value in the discard pile this round / 8",
    ),
    Field("draw_pile", Count(DECK_SIZE, DECK_SIZE), lambda g, s: len(g.draw_pile), "cards left in the draw pile / 56"),
    Field(
        "can_draw",
        Flag(),
        lambda g, s: g.may_draw(s),
        "1 if drawing is allowed for me now (pile not empty, someone else still in)",
    ),
    Field(
        "opp_present",
        Flag(),
        lambda g, o: True,
        "1 for each other seat at the table, in turn order from my left",
        per_other=True,
    ),
    Field(
        "opp_in_round", Flag(), lambda g, o: not g.quit[o], "1 if that player has not quit this round", per_other=True
    ),
    Field("opp_hand_size", _DECK10, lambda g, o: g.hand_sizes[o], "that player's hand size / 10", per_other=True),
    Field("opp_score", Score(), lambda g, o: g.scores[o], "that player's score / end_score", per_other=True),
    Field("my_score", Score(), lambda g, s: g.scores[s], "my score / end_score"),
    Field(
        "num_players",
        OneHot(MIN_PLAYERS, MAX_PLAYERS - MIN_PLAYERS + 1),
        lambda g, s: g.num_players,
        "one-hot table size 2..6",
    ),
    Field(
        "end_score",
        Count(END_SCORE_SCALE, MAX_END_SCORE),
        lambda g, s: g.end_score,
        "the end_score rule option / 100",
    ),
)
"""The fields of version 0."""

HISTORY_FIELDS: tuple[Field, ...] = (
    Field(
        "opp_played",
        _HAND8,
        lambda g, o: g.played_counts(o)[1:],
        "per other seat (7 values each), the cards of each value it played this round / 8",
        per_other=True,
    ),
    Field(
        "opp_draws",
        _DECK10,
        lambda g, o: sum(g.drew_on_counts(o)),
        "per other seat, the cards it drew this round / 10",
        per_other=True,
    ),
    Field(
        "opp_drew_on",
        Count(COPIES_PER_VALUE, DECK_SIZE, per_value=True),
        lambda g, o: g.drew_on_counts(o)[1:],
        "per other seat (7 values each), its draws this round made while that value was on top / 8",
        per_other=True,
    ),
    Field(
        "opp_quit_on",
        OneHot(1, NUM_CARD_VALUES, empty=0),
        lambda g, o: g.quit_on[o],
        "per other seat (7 values each), one-hot top card when it quit this round (0s while in)",
        per_other=True,
    ),
    Field(
        "opp_quit_at",
        _MOVES,
        lambda g, o: g.quit_at[o],
        "per other seat, the move of this round it quit with / 50 (0 while in)",
        per_other=True,
    ),
    Field(
        "last_player",
        OneHot(0, MAX_PLAYERS, empty=None),
        _last_player,
        "one-hot who played the last card this round: 0 = me, 1.. = the others from my left (0s: nobody)",
    ),
    Field(
        "round",
        Count(ROUND_SCALE, MAX_ROUND),
        lambda g, s: min(g.round, MAX_ROUND),
        "the round number / 10 (capped at 1000)",
    ),
    Field("round_moves", _MOVES, lambda g, s: g.round_moves, "moves made this round / 50"),
)
"""The public history of the round: the fields version 1 adds after :data:`FIELDS`."""

OBS_V0 = ObsSpec(0, FIELDS)
"""Version 0: ``Llama-v0``'s 52 entries."""
OBS_V1 = OBS_V0.extend(1, HISTORY_FIELDS)
"""Version 1: version 0 followed by the public history of the round."""
SPECS: dict[int, ObsSpec] = {0: OBS_V0, 1: OBS_V1}
"""Every observation version's spec, by version. Each extends the one before."""

FIELDS_V1 = OBS_V1.fields
"""The fields of version 1: :data:`FIELDS`, then :data:`HISTORY_FIELDS`."""
SLICES = OBS_V0.slices
"""Where each field of version 0 lies in the vector, by name."""
OBS_SIZE = OBS_V0.size
"""The length of a version-0 observation (``Llama-v0``): 52."""
SLICES_V1 = OBS_V1.slices
"""Where each field of version 1 lies in the vector, by name."""
OBS_SIZE_V1 = OBS_V1.size
"""The length of a version-1 observation (``Llama-v1``): 175."""
OBS_VERSIONS = tuple(SPECS)
"""The observation versions there are, for ``obs_version=`` (0 and 1)."""

HIDDEN = ObsSpec(
    None,
    (
        Field(
            "opp_hand",
            _HAND8,
            lambda g, o: g.hand_view(o)[1:],
            "per other seat (7 values each), its cards of each value / 8",
            per_other=True,
        ),
        Field(
            "draw_pile",
            _HAND8,
            lambda g, s: np.bincount(g.draw_pile, minlength=NUM_CARD_VALUES + 1)[1:].tolist(),
            "the draw pile's cards of each value / 8",
        ),
        Field(
            "next_card",
            OneHot(1, NUM_CARD_VALUES, empty=0),
            lambda g, s: g.draw_pile[-1] if g.draw_pile else 0,
            "one-hot the draw pile's next card (0s when it is empty)",
        ),
    ),
)
"""What a seat cannot see, for a privileged critic (never for a policy): the other
seats' hands, the draw pile by value and its next card."""
HIDDEN_SIZE = HIDDEN.size
"""Entries of :func:`hidden_state`."""


def hidden_state(game: LlamaGame, seat: int) -> np.ndarray:
    """:data:`HIDDEN` for ``seat``: each other seat's hand per value 1..6, llama (count / 8,
    in turn order from the seat's left, zeros for absent seats), the draw pile per value
    (count / 8) and its next card (one-hot, zeros when the pile is empty). A seat off the
    table is a ``ValueError``."""
    return HIDDEN.encode_reference(game, seat)


def obs_spec(version: int) -> ObsSpec:
    """The spec of observation ``version`` (``ValueError`` for an unknown one)."""
    return SPECS[check_obs_version(version)]


def obs_size(version: int) -> int:
    """The length of an observation of ``version`` (0: 52; 1: :data:`OBS_SIZE_V1`)."""
    return obs_spec(version).size


def check_obs_version(version: object) -> int:
    """``version`` if it is a known observation version, else ``ValueError``."""
    if not is_int(version) or int(version) not in SPECS:
        raise ValueError(f"obs_version must be one of {', '.join(map(str, OBS_VERSIONS))}, got {version!r}")
    return int(version)


VERSION_OF_SIZE = {spec.size: v for v, spec in SPECS.items()}
"""Each version's vector length -> the version (every version's vector has its own length)."""


def sizes_text(since: int = 0) -> str:
    """The vector lengths of the versions from ``since`` on, for messages: ``52 (version 0)
    or 175 (version 1)``."""
    return " or ".join(f"{spec.size} (version {v})" for v, spec in SPECS.items() if v >= since)


def _read_as(size: int, version: int | None) -> int | None:
    """The version a vector of ``size`` entries is read as (``None``: it can't be). Without
    ``version`` the length tells it; with it, the vector must be of that version or a later
    one, whose vector starts with it (a version-1 vector read as version 0 is its first 52
    entries). An unknown ``version`` is a ``ValueError``."""
    told = VERSION_OF_SIZE.get(size)
    if version is None:
        return told
    version = check_obs_version(version)
    return version if told is not None and told >= version else None


def guess_obs_version(observation: Any) -> int:
    """The version of an observation vector (or of a batch of them, or of weights whose
    last axis reads one) told by its length: only for a vector that arrives from outside
    without its version (an agent's ``act``, the first layer of a model file). Where the
    version is known, pass it."""
    size = np.shape(observation)[-1] if np.ndim(observation) else -1
    version = VERSION_OF_SIZE.get(size)
    if version is None:
        raise ValueError(f"an observation is a vector of {sizes_text()} values, got shape {np.shape(observation)}")
    return version


def observation_bounds(end_score: int, version: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Lower and upper bounds of every entry for a game with this ``end_score``
    (:meth:`ObsSpec.bounds`)."""
    return obs_spec(version).bounds(end_score)


# --------------------------------------------------------------------------- encode
#
# The encoder is on the hot path of every environment (one call per decision), so it
# assembles the vector from pre-packed float32 byte strings, one per field value, and
# makes ONE numpy array at the end: per-element numpy writes, or a 52-float Python list
# converted by np.array, cost several times more. The blocks that repeat (a hand, the
# discard counts, what the others show, the per-round score block) are memoised in
# small bounded caches, keyed by the content they encode.
# Tests hold it equal to the spec's ObsSpec.encode_reference on thousands of random
# states, and to the golden hashes of tests/property/test_obs_spec.py.

_pack = struct.Struct("=f").pack  # native order, so np.frombuffer(..., float32) reads it
_frombuffer = np.frombuffer
_FLOAT32 = np.dtype(np.float32)  # passed positionally: a keyword and the scalar type cost 0.4 us a call
_ZERO, _ONE = _pack(0.0), _pack(1.0)
_BY_8 = tuple(_pack(k / COPIES_PER_VALUE) for k in range(DECK_SIZE + 1))
_BY_10 = tuple(_pack(k / HAND_SIZE_SCALE) for k in range(DECK_SIZE + 1))
_BY_DECK = tuple(_pack(k / DECK_SIZE) for k in range(DECK_SIZE + 1))
_TOP = (b"",) + tuple(
    b"".join(_ONE if c == top else _ZERO for c in range(1, NUM_CARD_VALUES + 1))
    for top in range(1, NUM_CARD_VALUES + 1)
)
_PAD = tuple(_ZERO * (MAX_OTHERS - k) for k in range(MAX_OTHERS + 1))  # after k real other seats
_PRESENT = {n: _ONE * (n - 1) + _PAD[n - 1] for n in range(MIN_PLAYERS, MAX_PLAYERS + 1)}
_OTHERS = {
    n: tuple(tuple((s + 1 + i) % n for i in range(n - 1)) for s in range(n))
    for n in range(MIN_PLAYERS, MAX_PLAYERS + 1)
}
_CODES = range(1, NUM_CARD_VALUES + 1)
_CACHE_LIMIT = 1 << 16
_hand_cache: dict[tuple[int, ...], bytes] = {}
_tail_cache: dict[tuple[int, ...], bytes] = {}
_discard_cache: dict[tuple[int, ...], bytes] = {}
_others_cache: dict[tuple[int, ...], bytes] = {}
_by_end: dict[int, list[bytes]] = {}
_NUM_PLAYERS = {
    n: b"".join(_ONE if k == n else _ZERO for k in range(MIN_PLAYERS, MAX_PLAYERS + 1))
    for n in range(MIN_PLAYERS, MAX_PLAYERS + 1)
}


def _remember(cache: dict[tuple[int, ...], bytes], key: tuple[int, ...], block: bytes) -> bytes:
    """Store ``block`` under ``key`` in one of the encoder's caches (emptied when full,
    which keeps memory bounded) and return it."""
    if len(cache) >= _CACHE_LIMIT:
        cache.clear()
    cache[key] = block
    return block


def _hand_block(key: tuple[int, ...], penalty: int) -> bytes:
    """``hand``, ``hand_size`` and ``hand_penalty`` for per-code counts (index 0 unused)
    and the hand's ``penalty``, which the engine scores (:meth:`LlamaGame.penalty`: its own
    hand, unchecked)."""
    return _remember(
        _hand_cache,
        key,
        b"".join(_BY_8[k] for k in key[1:]) + _BY_10[sum(key)] + _pack(penalty / MAX_PENALTY),
    )


def _discard_block(key: tuple[int, ...]) -> bytes:
    """``discarded`` for the discard pile's per-code counts (index 0 unused)."""
    return _remember(_discard_cache, key, b"".join([_BY_8[key[c]] for c in _CODES]))


def _others_block(key: tuple[int, ...]) -> bytes:
    """``opp_present``, ``opp_in_round`` and ``opp_hand_size`` for the key
    ``(seat, *quit, *hand_sizes)``: what the others show, from ``seat``'s left."""
    n = (len(key) - 1) // 2
    others = _OTHERS[n][key[0]]
    pad = _PAD[n - 1]
    block = b"".join(
        [
            _PRESENT[n],
            *[_ZERO if key[1 + o] else _ONE for o in others],
            pad,
            *[_BY_10[key[1 + n + o]] for o in others],
            pad,
        ]
    )
    return _remember(_others_cache, key, block)


def _tail_block(key: tuple[int, ...]) -> bytes:
    """``opp_score``, ``my_score``, ``num_players`` and ``end_score`` for the key
    ``(seat, end_score, *scores)``: fixed for a round."""
    seat, end, *scores = key
    n = len(scores)
    by_end = _by_end.get(end)
    if by_end is None:  # score / end for every score a game can reach
        by_end = _by_end[end] = [_pack(k / end) for k in range(end + MAX_PENALTY)]
    reach = len(by_end)

    def score(k: int) -> bytes:  # (a game whose scores were set by hand may hold any)
        return by_end[k] if k < reach else _pack(k / end)

    block = b"".join(
        [
            *[score(scores[o]) for o in _OTHERS[n][seat]],
            _PAD[n - 1],
            score(scores[seat]),
            _NUM_PLAYERS[n],
            _pack(end / END_SCORE_SCALE),
        ]
    )
    return _remember(_tail_cache, key, block)


def _encode_bytes(game: LlamaGame, seat: int) -> bytes:
    # four blocks looked up by their content (each key is a small tuple of ints, far
    # cheaper to hash than the block is to build), and four single fields
    hand = tuple(game.hand_view(seat))
    discard = tuple(game.discard_counts)
    others = (seat, *game.quit, *game.hand_sizes)
    tail = (seat, game.end_score, *game.scores)
    return b"".join(
        (
            _hand_cache.get(hand) or _hand_block(hand, game.penalty(seat)),
            _TOP[game.discard_pile[-1]],
            _discard_cache.get(discard) or _discard_block(discard),
            _BY_DECK[len(game.draw_pile)],
            _ONE if game.may_draw(seat) else _ZERO,
            _others_cache.get(others) or _others_block(others),
            _tail_cache.get(tail) or _tail_block(tail),
        )
    )


def encode(game: LlamaGame, seat: int) -> np.ndarray:
    """The observation of ``seat``: public information and that seat's own hand only.

    A new, writable ``float32`` array of shape ``(OBS_SIZE,)`` laid out as :data:`FIELDS`.
    A seat off the table is a ``ValueError`` (checked where its hand is read:
    :meth:`LlamaGame.hand_view`).
    """
    return _frombuffer(bytearray(_encode_bytes(game, seat)), _FLOAT32)


def encode_many(games: Sequence[LlamaGame], seats: Sequence[int] | None = None) -> np.ndarray:
    """The observations of many games at once, shape ``(len(games), OBS_SIZE)``: row
    ``i`` is ``encode(games[i], seats[i])`` (default: each game's player to act)."""
    if seats is None:
        seats = [g.current_player for g in games]
    data = b"".join([_encode_bytes(g, s) for g, s in zip(games, seats, strict=True)])
    return _frombuffer(bytearray(data), _FLOAT32).reshape(len(games), OBS_SIZE)


# --------------------------------------------------------------------------- version 1

_BY_MOVES = tuple(_pack(k / MOVES_SCALE) for k in range(MAX_ROUND_MOVES + 1))
_NO_QUIT = _ZERO * NUM_CARD_VALUES
_PAD7 = tuple(_ZERO * (NUM_CARD_VALUES * (MAX_OTHERS - k)) for k in range(MAX_OTHERS + 1))
_LAST = {(n, r): b"".join(_ONE if i == r else _ZERO for i in range(MAX_PLAYERS)) for n in range(2, 7) for r in range(n)}
_NOBODY = _ZERO * MAX_PLAYERS


_row_cache: dict[tuple[int, ...], bytes] = {}


def _row(key: tuple[int, ...]) -> bytes:
    """Seven per-value counts / 8 (one seat's plays or draws by top card) for its counts
    per card code (index 0 unused), memoised."""
    block = _row_cache.get(key)
    if block is None:
        block = _remember(_row_cache, key, b"".join([_BY_8[k] for k in key[1:]]))
    return block


def _history_bytes(game: LlamaGame, seat: int) -> bytes:
    n = game.num_players
    others = _OTHERS[n][seat]
    played, drew_on, quit_on, quit_at = game.played_counts, game.drew_on_counts, game.quit_on, game.quit_at
    pad, pad7 = _PAD[n - 1], _PAD7[n - 1]
    drew_rows = [tuple(drew_on(o)) for o in others]
    last = game.last_player
    return b"".join(
        [
            *[_row(tuple(played(o))) for o in others],
            pad7,
            *[_BY_10[sum(r)] for r in drew_rows],
            pad,
            *[_row(r) for r in drew_rows],
            pad7,
            *[_TOP[quit_on[o]] if quit_on[o] else _NO_QUIT for o in others],
            pad7,
            *[_BY_MOVES[quit_at[o]] for o in others],
            pad,
            _NOBODY if last is None else _LAST[n, (last - seat) % n],
            _pack(min(game.round, MAX_ROUND) / ROUND_SCALE),
            _BY_MOVES[game.round_moves],
        ]
    )


def encode_v1(game: LlamaGame, seat: int) -> np.ndarray:
    """The version-1 observation of ``seat``: :func:`encode` followed by the public
    history of the round (:data:`HISTORY_FIELDS`). A new ``float32`` array of shape
    ``(OBS_SIZE_V1,)`` laid out as :data:`FIELDS_V1`. A seat off the table is a
    ``ValueError``, as in :func:`encode`."""
    return _frombuffer(bytearray(_encode_bytes(game, seat) + _history_bytes(game, seat)), _FLOAT32)


def encode_many_v1(games: Sequence[LlamaGame], seats: Sequence[int] | None = None) -> np.ndarray:
    """:func:`encode_many` in version 1: shape ``(len(games), OBS_SIZE_V1)``."""
    if seats is None:
        seats = [g.current_player for g in games]
    data = b"".join([_encode_bytes(g, s) + _history_bytes(g, s) for g, s in zip(games, seats, strict=True)])
    return _frombuffer(bytearray(data), _FLOAT32).reshape(len(games), OBS_SIZE_V1)


_FAST = {0: (encode, encode_many), 1: (encode_v1, encode_many_v1)}
"""The hand-tuned encoders of the specs in :data:`SPECS` (tests hold each equal to its
spec's :meth:`ObsSpec.encode_reference`)."""


def encoder(version: int) -> tuple[Any, Any]:
    """``(encode, encode_many)`` of observation ``version``: the fast pair where there is
    one, else the spec's own encoder (a new version works before it is tuned)."""
    spec = obs_spec(version)
    fast = _FAST.get(int(version))
    if fast is not None:
        return fast

    def many(games: Sequence[LlamaGame], seats: Sequence[int] | None = None) -> np.ndarray:
        chosen = [g.current_player for g in games] if seats is None else seats
        rows = [spec.encode_reference(g, s) for g, s in zip(games, chosen, strict=True)]
        return np.stack(rows) if rows else np.zeros((0, spec.size), np.float32)

    return spec.encode_reference, many


# --------------------------------------------------------------------------- masks

_MASKS: dict[tuple[int, ...], np.ndarray] = {}


def action_mask(legal: Sequence[int]) -> np.ndarray:
    """The ``int8`` mask (length 9) of a list of legal actions.

    There are few distinct legal sets, so masks are cached and returned read-only: an
    agent that writes into its mask gets an error instead of corrupting later decisions.
    Copy it before handing it to code that may keep or modify it. An action that is no
    integer 0..8 is a ``ValueError``, whatever sets were seen before: a cached mask is
    handed out unchecked only for a set of plain ``int`` (as keys, ``[1.0]`` and ``[True]``
    equal ``[1]``); numpy integers are checked at each call.
    """
    key = tuple(legal)
    m = _MASKS.get(key)
    return m if m is not None and _PLAIN.issuperset(map(type, key)) else _new_mask(key, np.int8, _MASKS)


_SHARED: dict[int, np.ndarray] = {}
_PLAIN = {int}  # the one type a cached set's look-up trusts: a float or a bool equals an int key

_AGENT_MASKS: dict[tuple[int, ...], np.ndarray] = {}


def _new_mask(key: tuple[int, ...], dtype: Any, cache: dict[tuple[int, ...], np.ndarray]) -> np.ndarray:
    """The read-only mask of ``dtype`` with ``key``'s actions set, kept in ``cache`` and
    known to :func:`is_shared_mask` (the masks' cached look-ups stay inline: they run at
    every decision). A set already cached under an equal key (numpy integers for ints) is
    that mask, once checked."""
    if not all(is_int(a) and 0 <= a < NUM_ACTIONS for a in key):
        raise ValueError(f"legal actions must be integers 0..{NUM_ACTIONS - 1}, got {brief(list(key))}")
    m = cache.get(key)
    if m is not None:
        return m
    m = np.zeros(NUM_ACTIONS, dtype=dtype)
    m[list(key)] = 1
    m.flags.writeable = False
    cache[key] = m
    _SHARED[id(m)] = m
    return m


def agent_mask(legal: Sequence[int]) -> np.ndarray:
    """The boolean mask (length 9) of a list of legal actions, as an agent's ``act``
    gets it: the dtype of the Gym env's ``info["action_mask"]`` and of ``act_batch``'s
    masks, so that one policy reads its mask the same way as the learner and as an
    opponent (``~mask`` on the ``int8`` mask picked the wrong actions). Cached, read-only
    and checked, as :func:`action_mask`."""
    key = tuple(legal)
    m = _AGENT_MASKS.get(key)
    return m if m is not None and _PLAIN.issuperset(map(type, key)) else _new_mask(key, bool, _AGENT_MASKS)


def unchecked_action_mask(legal: list[int]) -> np.ndarray:
    """:func:`action_mask` of a set of plain ``int`` 0..8, unchecked once cached: for the
    engine's own callers, which pass ``legal_actions()`` at every decision (the check of
    the public one doubled the look-up's time)."""
    key = tuple(legal)
    m = _MASKS.get(key)
    return m if m is not None else _new_mask(key, np.int8, _MASKS)


def unchecked_agent_mask(legal: list[int]) -> np.ndarray:
    """:func:`agent_mask` of a set of plain ``int`` 0..8, unchecked once cached (as
    :func:`unchecked_action_mask`)."""
    key = tuple(legal)
    m = _AGENT_MASKS.get(key)
    return m if m is not None else _new_mask(key, bool, _AGENT_MASKS)


def is_shared_mask(mask: object) -> bool:
    """Whether ``mask`` is one of the shared, read-only masks :func:`action_mask` and
    :func:`agent_mask` return
    (they live as long as the process, so their contents never change)."""
    return _SHARED.get(id(mask)) is mask


# --------------------------------------------------------------------------- reading


def view(obs: np.ndarray | Sequence[float], version: int | None = None) -> dict[str, np.ndarray]:
    """The fields of an observation (or a batch of them) of ``version`` by name: numpy
    views, still scaled (of the array a list is made into, as :func:`decode` takes one).
    Without a version it is told by the length (a vector from outside); a version-1
    observation also has the fields of :data:`HISTORY_FIELDS`, and read as version 0 it is
    its first 52 entries. A vector of no version from ``version`` on (52 entries read as
    version 1) is a ``ValueError``."""
    obs = np.asarray(obs)
    if version is None:
        return obs_spec(guess_obs_version(obs)).view(obs)
    if _read_as(np.shape(obs)[-1] if np.ndim(obs) else -1, version) is None:
        raise ValueError(f"version {version} reads a vector of {sizes_text(version)} values, got shape {np.shape(obs)}")
    return obs_spec(version).view(obs)


_S = {name: s.start for name, s in SLICES.items()}
_HAND, _DISC, _IN, _OHS = _S["hand"], _S["discarded"], _S["opp_in_round"], _S["opp_hand_size"]
_NV = NUM_CARD_VALUES
_SIZES = {v: spec.size for v, spec in SPECS.items()}


class ObsView:
    """One observation read by field name, in natural units: the way agents read.

    ``ObsView(observation, version)`` costs one ``tolist()``; each attribute is then
    decoded from the list when it is read, so an agent pays only for the fields it uses.
    There is one attribute per field of the version's spec (:data:`FIELDS`, then
    :data:`HISTORY_FIELDS`), made from the field's unit: counts are ints, flags bools,
    one-hot blocks the value they mark; per-value tuples are indexed by value (index 0 =
    value 1, index 6 = llama), per-opponent tuples by seat relative to me (index 0 = the
    player to my left) and have ``num_players - 1`` entries. Without ``version`` it is
    told by the length (an agent's ``act`` gets a bare vector); told version 0, a
    version-1 vector is read by its first 52 entries.

    :meth:`count`, :meth:`hand_counts`, :meth:`discarded_count` and
    :meth:`discard_counts` index by card code instead.

    Only the shape is checked here: a NaN or infinite entry is not looked for (that would
    cost each of an agent's decisions again), but reading one (a count, a flag, a one-hot
    block, a seat of :attr:`min_opp_hand_in_round`) is a ``ValueError`` naming its entry,
    and so is a one-hot block that holds anything but one 1 and 0s (all 0s too, where its
    value may be unset).
    """

    __slots__ = ("_v", "_n", "version")

    if TYPE_CHECKING:  # the fields' attributes are made from the specs below

        def __getattr__(self, name: str) -> Any: ...

    def __init__(self, observation: np.ndarray | Sequence[float], version: int | None = None) -> None:
        try:
            v = observation.tolist() if type(observation) is np.ndarray else list(observation)
            n = len(v)
        except TypeError:  # None, a number, a 0-d array: no vector (a bare "not iterable" named nothing)
            what = "an observation is" if version is None else f"version {version} reads"
            raise ValueError(
                f"{what} a flat vector of {sizes_text(version or 0)} values, got shape {np.shape(observation)}"
            ) from None
        if version is None:  # the hot path: an agent's act
            told = VERSION_OF_SIZE.get(n)
        else:
            told = _read_as(n, version)
            if told is not None and n != _SIZES[told]:  # a later version's vector: its first entries
                v = v[: _SIZES[told]]
        if told is None or type(v[0]) is list:
            what = "an observation is" if version is None else f"version {version} reads"
            raise ValueError(
                f"{what} a flat vector of {sizes_text(version or 0)} values, got shape {np.shape(observation)}"
            )
        version = told
        self._v: list[float] = v
        self._n = 0  # players at the table, read on first use
        self.version: int = version
        """The observation's version: 0, or 1 with the public history."""

    @property
    def num_players(self) -> int:
        if not self._n:
            self._n = _read_num_players(self)
        return int(self._n)

    # -- by card code: the convention of the engine's LlamaGame.hand_counts
    def count(self, card: int) -> int:
        """How many cards of code ``card`` (1..7) I hold."""
        return _card_count(self._v, _HAND + card - 1)

    def hand_counts(self) -> list[int]:
        """My cards per card CODE, index 0 unused: the convention of the engine's
        ``LlamaGame.hand_counts``, handy for rules code (``counts[top]``)."""
        return [0, *self.hand]

    def discarded_count(self, card: int) -> int:
        """Cards of code ``card`` (1..7) in the discard pile this round."""
        return _card_count(self._v, _DISC + card - 1)

    def discard_counts(self) -> list[int]:
        """Cards per card CODE in the discard pile this round, index 0 unused."""
        return [0, *self.discarded]

    @property
    def min_opp_hand_in_round(self) -> int | None:
        """The fewest cards held by an opponent still in the round (``None`` when all
        the others have quit): how close the round is to being ended by someone else."""
        v, others = self._v, self.num_players - 1
        read = sum(v[_IN : _OHS + others])  # the flags (padded to MAX_OTHERS), then the sizes
        if read - read != 0.0:  # a NaN or an infinity, which min() and the flags would pass over
            raise _not_finite(v, _IN, _OHS + others - _IN)
        sizes = [v[_OHS + i] for i in range(others) if v[_IN + i] > 0.5]
        return int(min(sizes) * HAND_SIZE_SCALE + 0.5) if sizes else None

    def __repr__(self) -> str:
        return f"ObsView({decode(self)!r})"


def _card_count(v: list[float], at: int) -> int:
    """The count of one card value at entry ``at`` (a hand's or the discard pile's)."""
    try:
        return int(v[at] * COPIES_PER_VALUE + 0.5)
    except (ValueError, OverflowError):
        raise _not_finite(v, at, 1) from None


def _field_property(f: Field, start: int, since: int) -> property:
    """The attribute of field ``f`` (at ``start``, first in version ``since``)."""
    read = f.unit.reader(start, f.per_other, f.name)
    if since == 0:  # in every version: no check on the hot path
        return property(read, doc=f.doc)

    def checked(o: ObsView) -> Any:
        if o.version < since:
            raise ValueError(
                f"{f.name!r} is a field of version-{since} observations (Llama-v{since}); "
                f"this one is version {o.version}"
            )
        return read(o)

    return property(checked, doc=f.doc)


def _since(name: str) -> int:
    return min(v for v, spec in SPECS.items() if name in spec.slices)


_NEWEST = SPECS[max(SPECS)]
for _f in _NEWEST.fields:
    if _f.name not in ObsView.__dict__:
        setattr(ObsView, _f.name, _field_property(_f, _NEWEST.slices[_f.name].start, _since(_f.name)))
_read_num_players = next(f for f in FIELDS if f.name == "num_players").unit.reader(
    SLICES["num_players"].start, False, "num_players"
)


_ONE_HOTS: dict[str, OneHot] = {
    f.name: f.unit for f in _NEWEST.fields if isinstance(f.unit, OneHot) and not f.per_other
}
"""The units of the one-hot fields of one value each, by field name."""


def one_hot_reader(name: str) -> Callable[[np.ndarray | Sequence[float]], Any]:
    """A reader of the one-hot field ``name`` (``"top_card"``, ``"num_players"``,
    ``"last_player"``) of one observation vector, checked as :class:`ObsView` reads it:
    the value the block marks, and a ``ValueError`` naming the field and its entries for a
    block that holds anything but one 1 and 0s (or only 0s, where the value may be unset),
    naming the entry of a NaN or an infinity. It reads the field's entries alone, where an
    ``ObsView`` reads the whole vector: an agent's ``act`` checks so, for under half a
    microsecond a field, the blocks its ``act_batch`` reads unchecked
    (:meth:`OneHot.values`). The vector's shape is the caller's to check."""
    unit = _ONE_HOTS.get(name)
    if unit is None:
        raise ValueError(f"one_hot_reader reads the one-hot fields {', '.join(_ONE_HOTS)}, got {name!r}")
    one = unit.checked(name)
    start, stop, since = _NEWEST.slices[name].start, _NEWEST.slices[name].stop, _since(name)

    def read(observation: np.ndarray | Sequence[float]) -> Any:
        entries = observation[start:stop]
        try:
            return one(entries.tolist() if type(entries) is np.ndarray else list(entries), 0)
        except ValueError:  # named again below, by the block's place in the vector
            pass
        if len(observation) < stop:
            raise ValueError(
                f"{name!r} is a field of version-{since} observations (Llama-v{since}); "
                f"this one has {len(observation)} values"
            ) from None
        return one(observation.tolist() if type(observation) is np.ndarray else list(observation), start)

    return read


class BatchView:
    """Many observations ``(B, size)`` read by field name in natural units: :class:`ObsView`
    for a batch, the way batched agents (``act_batch``) read.

    One attribute per field of the version's spec, an array with one row per observation,
    each entry what :class:`ObsView` reads there: counts ``int64``, flags ``bool``, one-hot
    blocks the value they mark (``int64``; a block that may be unset reads ``first - 1``:
    0 for ``opp_quit_on``, -1 for ``last_player``). Per-value fields are ``(B, 7)``,
    indexed by value (index 0 = value 1, index 6 = llama); per-opponent fields keep all
    :data:`MAX_OTHERS` columns, the seats beyond a row's table reading as their zero
    padding does (``opp_present`` says which are real). A field is decoded when it is read.
    Without ``version`` it is told by the length; told version 0, rows of version 1 are
    read by their first 52 entries.
    """

    __slots__ = ("_obs", "_end", "version")

    if TYPE_CHECKING:  # the fields' attributes are made from the specs below

        def __getattr__(self, name: str) -> Any: ...

    def __init__(self, observations: np.ndarray, version: int | None = None) -> None:
        obs = np.asarray(observations)
        size = obs.shape[-1] if obs.ndim == 2 else -1
        told = _read_as(size, version)
        if told is None or obs.dtype.kind not in "fiub":
            what = "observations are" if version is None else f"version {version} reads"
            raise ValueError(
                f"{what} a (B, size) array of rows of {sizes_text(version or 0)} values, "
                f"got shape {obs.shape} ({obs.dtype})"
            )
        if version is not None and size != _SIZES[told]:  # rows of a later version: their first entries
            obs = obs[:, : _SIZES[told]]
        version = told
        self._obs = obs
        self._end: np.ndarray | None = None
        self.version: int = version
        """The observations' version."""

    def __len__(self) -> int:
        return len(self._obs)

    @property
    def end_score_rows(self) -> np.ndarray:
        """Each row's end score, ``(B,)`` (what ``Score`` fields are scaled by)."""
        if self._end is None:
            self._end = _END_SCORE_FIELD.unit.values(self._obs[:, _END_SCORE_SLICE], _NO_END)
        return self._end


def _batch_property(f: Field, start: int, since: int) -> property:
    """The :class:`BatchView` attribute of field ``f`` (at ``start``, first in version ``since``)."""
    w, unit = f.unit.width, f.unit
    stop = start + f.size

    def read(b: BatchView) -> np.ndarray:
        if b.version < since:
            raise ValueError(
                f"{f.name!r} is a field of version-{since} observations (Llama-v{since}); these are version {b.version}"
            )
        block = b._obs[:, start:stop]
        block = block.reshape(len(block), MAX_OTHERS, w) if f.per_other else block.reshape(len(block), w)
        return unit.values(block, b.end_score_rows if isinstance(unit, Score) else _NO_END)

    return property(read, doc=f.doc)


_END_SCORE_FIELD = next(f for f in FIELDS if f.name == "end_score")
_END_SCORE_SLICE = SLICES["end_score"]
_NO_END = np.zeros(0, dtype=np.int64)  # what units that need no end score are given
for _f in _NEWEST.fields:
    setattr(BatchView, _f.name, _batch_property(_f, _NEWEST.slices[_f.name].start, _since(_f.name)))


def _record(name: str, fields: tuple[Field, ...], doc: str, extra: list[Any] | None = None) -> type:
    cls = make_dataclass(name, [(f.name, Any) for f in fields] + (extra or []), frozen=True)
    cls.__module__ = __name__
    cls.__doc__ = doc
    return cls


DecodedHistory = _record(
    "DecodedHistory",
    HISTORY_FIELDS,
    "The fields a version-1 observation adds, in natural units (see :class:`ObsView`).",
)
"""The record :attr:`Decoded.history` holds for a version-1 observation (``None`` for version 0)."""
Decoded = _record(
    "Decoded",
    FIELDS,
    "An observation in natural units, all fields at once (see :class:`ObsView`); ``history``"
    " holds the fields version 1 adds (``None`` for version 0).",
    [("history", Any, _field(default=None))],
)
"""What :func:`decode` returns: every field of an observation in natural units, by name."""


def decode(obs: np.ndarray | ObsView | Any, version: int | None = None) -> Any:
    """Every field of one observation of ``version`` in natural units, as a
    :class:`Decoded` record (read through :class:`ObsView`; without a version it is told
    by the length)."""
    o = obs if isinstance(obs, ObsView) else ObsView(np.asarray(obs, dtype=np.float64), version)
    history = None if o.version == 0 else DecodedHistory(**{f.name: getattr(o, f.name) for f in HISTORY_FIELDS})
    return Decoded(**{f.name: getattr(o, f.name) for f in FIELDS}, history=history)
