"""The observation vector, declared once.

One flat ``float32`` vector of the same size at every table size (other seats padded
to :data:`MAX_PLAYERS` - 1), so one policy can play any table. Each field is named in
:data:`FIELDS` with its size and the scale it is divided by. Three readers sit on that
one declaration, for three kinds of user:

* :class:`ObsView`: one observation in natural units (card counts, points), read field
  by field on demand. This is how agents read observations: fast enough for the hot
  path of evaluation (one ``tolist()``, then plain list reads).
* :func:`decode`: the same, eagerly, as a frozen :class:`Decoded` record (notebooks,
  tests, printing).
* :func:`view`: the scaled fields as numpy views by name, for batched or network code.

Seats are relative to the observer: field ``opp_*`` entry 0 is the player to my left
(the next to act after me), entry 1 the one after, and so on.

Only public information and the observer's own hand go in: never another player's
cards nor the order of the draw pile.

Two versions. Version 0 (:data:`FIELDS`, :data:`OBS_SIZE` = 52 entries) is the
contract of ``Llama-v0``. Version 1 (:data:`FIELDS_V1`, :data:`OBS_SIZE_V1` entries) is
version 0 followed by :data:`HISTORY_FIELDS`: what each other player did this round
(cards played by value, draws and the top card each was made on, when and on what it
quit), who played last, the round and how far it has gone. It is what ``Llama-v1`` and
``llama_env.env(obs_version=1)`` return. The first 52 entries of a version-1 vector are
the version-0 vector, so every reader of version 0 reads version 1 too.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from llama_env.engine import (
    COPIES_PER_VALUE,
    DECK_SIZE,
    MAX_END_SCORE,
    MAX_PLAYERS,
    MIN_PLAYERS,
    NUM_ACTIONS,
    NUM_CARD_VALUES,
    hand_penalty,
)

if TYPE_CHECKING:
    from llama_env.engine import LlamaGame

__all__ = [
    "Field",
    "FIELDS",
    "OBS_SIZE",
    "SLICES",
    "HISTORY_FIELDS",
    "FIELDS_V1",
    "OBS_SIZE_V1",
    "SLICES_V1",
    "OBS_VERSIONS",
    "obs_size",
    "obs_version_of",
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
    "view",
    "decode",
    "Decoded",
    "observation_bounds",
    "action_mask",
    "is_shared_mask",
]

MAX_OTHERS = MAX_PLAYERS - 1
HAND_SIZE_SCALE = 10.0
MAX_PENALTY = 31  # 1 + 2 + 3 + 4 + 5 + 6 + 10
END_SCORE_SCALE = 100.0
MOVES_SCALE = 50.0
ROUND_SCALE = 10.0
MAX_ROUND_MOVES = 2 * DECK_SIZE + MAX_PLAYERS  # every card played and drawn, every player quits
MAX_ROUND = 1000  # the round field is capped here (real games last a few rounds)


@dataclass(frozen=True)
class Field:
    """One named block of the observation vector."""

    name: str
    size: int
    scale: float | None
    """Natural units are divided by this; ``None`` for one-hot and 0/1 fields and for the
    scores, which are divided by the game's ``end_score``."""
    doc: str


FIELDS: tuple[Field, ...] = (
    Field("hand", NUM_CARD_VALUES, COPIES_PER_VALUE, "my cards per value 1..6, llama; count / 8"),
    Field("hand_size", 1, HAND_SIZE_SCALE, "how many cards I hold / 10"),
    Field("hand_penalty", 1, MAX_PENALTY, "points my hand would cost now (distinct values) / 31"),
    Field("top_card", NUM_CARD_VALUES, None, "one-hot top card of the discard pile (1..6, llama)"),
    Field("discarded", NUM_CARD_VALUES, COPIES_PER_VALUE, "cards of each value in the discard pile this round / 8"),
    Field("draw_pile", 1, DECK_SIZE, "cards left in the draw pile / 56"),
    Field("can_draw", 1, None, "1 if drawing is allowed for me now (pile not empty, someone else still in)"),
    Field("opp_present", MAX_OTHERS, None, "1 for each other seat at the table, in turn order from my left"),
    Field("opp_in_round", MAX_OTHERS, None, "1 if that player has not quit this round"),
    Field("opp_hand_size", MAX_OTHERS, HAND_SIZE_SCALE, "that player's hand size / 10"),
    Field("opp_score", MAX_OTHERS, None, "that player's score / end_score"),
    Field("my_score", 1, None, "my score / end_score"),
    Field("num_players", MAX_PLAYERS - MIN_PLAYERS + 1, None, "one-hot table size 2..6"),
    Field("end_score", 1, END_SCORE_SCALE, "the end_score rule option / 100"),
)

HISTORY_FIELDS: tuple[Field, ...] = (
    Field(
        "opp_played",
        MAX_OTHERS * NUM_CARD_VALUES,
        COPIES_PER_VALUE,
        "per other seat (7 values each), the cards of each value it played this round / 8",
    ),
    Field("opp_draws", MAX_OTHERS, HAND_SIZE_SCALE, "per other seat, the cards it drew this round / 10"),
    Field(
        "opp_drew_on",
        MAX_OTHERS * NUM_CARD_VALUES,
        COPIES_PER_VALUE,
        "per other seat (7 values each), its draws this round made while that value was on top / 8",
    ),
    Field(
        "opp_quit_on",
        MAX_OTHERS * NUM_CARD_VALUES,
        None,
        "per other seat (7 values each), one-hot top card when it quit this round (0s while in)",
    ),
    Field(
        "opp_quit_at", MAX_OTHERS, MOVES_SCALE, "per other seat, the move of this round it quit with / 50 (0 while in)"
    ),
    Field(
        "last_player",
        MAX_PLAYERS,
        None,
        "one-hot who played the last card this round: 0 = me, 1.. = the others from my left (0s: nobody)",
    ),
    Field("round", 1, ROUND_SCALE, "the round number / 10 (capped at 1000)"),
    Field("round_moves", 1, MOVES_SCALE, "moves made this round / 50"),
)
"""The public history of the round: the fields version 1 adds after :data:`FIELDS`."""

FIELDS_V1: tuple[Field, ...] = FIELDS + HISTORY_FIELDS


def _slices(fields: tuple[Field, ...]) -> tuple[dict[str, slice], int]:
    out: dict[str, slice] = {}
    offset = 0
    for f in fields:
        out[f.name] = slice(offset, offset + f.size)
        offset += f.size
    return out, offset


SLICES, OBS_SIZE = _slices(FIELDS)
SLICES_V1, OBS_SIZE_V1 = _slices(FIELDS_V1)
OBS_VERSIONS = (0, 1)
_SIZES = {0: OBS_SIZE, 1: OBS_SIZE_V1}


def obs_size(version: int) -> int:
    """The length of an observation of ``version`` (0: 52; 1: :data:`OBS_SIZE_V1`)."""
    return _SIZES[check_obs_version(version)]


def check_obs_version(version: object) -> int:
    """``version`` if it is a known observation version, else ``ValueError``."""
    if isinstance(version, bool) or not isinstance(version, (int, np.integer)) or int(version) not in _SIZES:
        raise ValueError(f"obs_version must be one of {', '.join(map(str, OBS_VERSIONS))}, got {version!r}")
    return int(version)


def obs_version_of(observation: Any) -> int:
    """The version of an observation vector (or of a batch of them), from its length."""
    size = np.shape(observation)[-1] if np.ndim(observation) else -1
    for version, n in _SIZES.items():
        if size == n:
            return version
    raise ValueError(
        f"an observation is a vector of {OBS_SIZE} (version 0) or {OBS_SIZE_V1} (version 1) values, "
        f"got shape {np.shape(observation)}"
    )


_S = {name: s.start for name, s in SLICES.items()}


def observation_bounds(end_score: int, version: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Lower and upper bounds of every entry for a game with this ``end_score``."""
    size = obs_size(version)
    low = np.zeros(size, dtype=np.float32)
    high = np.ones(size, dtype=np.float32)
    if version == 1:
        high[SLICES_V1["opp_draws"]] = DECK_SIZE / HAND_SIZE_SCALE
        high[SLICES_V1["opp_drew_on"]] = DECK_SIZE / COPIES_PER_VALUE
        high[SLICES_V1["opp_quit_at"]] = MAX_ROUND_MOVES / MOVES_SCALE
        high[SLICES_V1["round_moves"]] = MAX_ROUND_MOVES / MOVES_SCALE
        high[SLICES_V1["round"]] = MAX_ROUND / ROUND_SCALE
    high[SLICES["hand_size"]] = DECK_SIZE / HAND_SIZE_SCALE
    high[SLICES["opp_hand_size"]] = DECK_SIZE / HAND_SIZE_SCALE
    max_score = (end_score - 1 + MAX_PENALTY) / end_score
    high[SLICES["opp_score"]] = max_score
    high[SLICES["my_score"]] = max_score
    high[SLICES["end_score"]] = MAX_END_SCORE / END_SCORE_SCALE
    return low, high


# --------------------------------------------------------------------------- encode
#
# The encoder is on the hot path of every environment (one call per decision), so it
# assembles the vector from pre-packed float32 byte strings, one per field value, and
# makes ONE numpy array at the end: per-element numpy writes, or a 52-float Python list
# converted by np.array, cost several times more. The blocks that repeat (a hand, the
# discard counts, what the others show, the per-round score block) are memoised in
# small bounded caches, keyed by the content they encode.
# tests/property checks it against a plain reference encoder.

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


def _hand_block(key: tuple[int, ...]) -> bytes:
    """``hand``, ``hand_size`` and ``hand_penalty`` for per-code counts (index 0 unused)."""
    return _remember(
        _hand_cache,
        key,
        b"".join(_BY_8[k] for k in key[1:]) + _BY_10[sum(key)] + _pack(hand_penalty(key) / MAX_PENALTY),
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
    top = max(scores)
    if by_end is None or top >= len(by_end):  # score / end for every score up to the highest seen
        by_end = _by_end[end] = [_pack(k / end) for k in range(max(end + MAX_PENALTY, top + 1))]
    block = b"".join(
        [
            *[by_end[scores[o]] for o in _OTHERS[n][seat]],
            _PAD[n - 1],
            by_end[scores[seat]],
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
            _hand_cache.get(hand) or _hand_block(hand),
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
    """Seven per-value counts / 8 (one seat's plays or draws by top card), memoised."""
    block = _row_cache.get(key)
    if block is None:
        block = _remember(_row_cache, key, b"".join([_BY_8[k] for k in key]))
    return block


def _history_bytes(game: LlamaGame, seat: int) -> bytes:
    n = game.num_players
    others = _OTHERS[n][seat]
    played, drew_on, quit_on, quit_at = game.history_view()
    pad, pad7 = _PAD[n - 1], _PAD7[n - 1]
    drew_rows = [tuple(drew_on[o * 8 + 1 : o * 8 + 8]) for o in others]
    last = game.last_player
    return b"".join(
        [
            *[_row(tuple(played[o * 8 + 1 : o * 8 + 8])) for o in others],
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
    ``(OBS_SIZE_V1,)`` laid out as :data:`FIELDS_V1`."""
    return _frombuffer(bytearray(_encode_bytes(game, seat) + _history_bytes(game, seat)), _FLOAT32)


def encode_many_v1(games: Sequence[LlamaGame], seats: Sequence[int] | None = None) -> np.ndarray:
    """:func:`encode_many` in version 1: shape ``(len(games), OBS_SIZE_V1)``."""
    if seats is None:
        seats = [g.current_player for g in games]
    data = b"".join([_encode_bytes(g, s) + _history_bytes(g, s) for g, s in zip(games, seats, strict=True)])
    return _frombuffer(bytearray(data), _FLOAT32).reshape(len(games), OBS_SIZE_V1)


_ENCODERS = {0: (encode, encode_many), 1: (encode_v1, encode_many_v1)}


def encoder(version: int) -> tuple[Any, Any]:
    """``(encode, encode_many)`` of observation ``version``."""
    return _ENCODERS[check_obs_version(version)]


# --------------------------------------------------------------------------- masks

_MASKS: dict[tuple[int, ...], np.ndarray] = {}


def action_mask(legal: Sequence[int]) -> np.ndarray:
    """The ``int8`` mask (length 9) of a list of legal actions.

    There are few distinct legal sets, so masks are cached and returned read-only: an
    agent that writes into its mask gets an error instead of corrupting later decisions.
    Copy it before handing it to code that may keep or modify it.
    """
    key = tuple(legal)
    m = _MASKS.get(key)
    if m is None:
        m = np.zeros(NUM_ACTIONS, dtype=np.int8)
        m[list(key)] = 1
        m.flags.writeable = False
        _MASKS[key] = m
        _SHARED[id(m)] = m
    return m


_SHARED: dict[int, np.ndarray] = {}


def is_shared_mask(mask: object) -> bool:
    """Whether ``mask`` is one of the shared, read-only masks :func:`action_mask` returns
    (they live as long as the process, so their contents never change)."""
    return _SHARED.get(id(mask)) is mask


# --------------------------------------------------------------------------- reading


def view(obs: np.ndarray) -> dict[str, np.ndarray]:
    """The fields of an observation (or a batch of them) by name: numpy views, still
    scaled. A version-1 observation also has the fields of :data:`HISTORY_FIELDS`."""
    slices = SLICES_V1 if obs_version_of(obs) == 1 else SLICES
    return {name: obs[..., s] for name, s in slices.items()}


_HAND, _HSIZE, _PEN, _TOPC = _S["hand"], _S["hand_size"], _S["hand_penalty"], _S["top_card"]
_DISC, _DRAW, _CAN, _PRES = _S["discarded"], _S["draw_pile"], _S["can_draw"], _S["opp_present"]
_IN, _OHS, _OSC, _MYSC = _S["opp_in_round"], _S["opp_hand_size"], _S["opp_score"], _S["my_score"]
_NP, _END = _S["num_players"], _S["end_score"]
_NV = NUM_CARD_VALUES


class ObsView:
    """One observation read by field name, in natural units: the way agents read.

    ``ObsView(observation)`` costs one ``tolist()``; each attribute is then decoded
    from the list when it is read, so an agent pays only for the fields it uses. The
    attribute names are the names of :data:`FIELDS`; per-value tuples are indexed by
    value (index 0 = value 1, index 6 = llama), per-opponent tuples by seat relative to
    me (index 0 = the player to my left) and have ``num_players - 1`` entries.
    :meth:`count`, :meth:`hand_counts`, :meth:`discarded_count` and
    :meth:`discard_counts` index by card code instead.
    """

    __slots__ = ("_v", "_n")

    def __init__(self, observation: np.ndarray | Sequence[float]) -> None:
        v = observation.tolist() if type(observation) is np.ndarray else list(observation)
        if (len(v) != OBS_SIZE and len(v) != OBS_SIZE_V1) or type(v[0]) is list:
            raise ValueError(
                f"an observation is a flat vector of {OBS_SIZE} (version 0) or {OBS_SIZE_V1} (version 1) values, "
                f"got shape {np.shape(observation)}"
            )
        self._v: list[float] = v
        self._n = 0  # players at the table, read on first use

    @property
    def version(self) -> int:
        """The observation's version: 0, or 1 with the public history."""
        return 1 if len(self._v) == OBS_SIZE_V1 else 0

    # -- my hand
    @property
    def hand(self) -> tuple[int, ...]:
        """My cards per value (index 0 = value 1 .. index 6 = llama)."""
        return tuple([int(x * COPIES_PER_VALUE + 0.5) for x in self._v[_HAND : _HAND + _NV]])

    def count(self, card: int) -> int:
        """How many cards of code ``card`` (1..7) I hold."""
        return int(self._v[_HAND + card - 1] * COPIES_PER_VALUE + 0.5)

    def hand_counts(self) -> list[int]:
        """My cards per card CODE, index 0 unused: the convention of the engine's
        ``LlamaGame.hand_counts``, handy for rules code (``counts[top]``)."""
        return [0, *[int(x * COPIES_PER_VALUE + 0.5) for x in self._v[_HAND : _HAND + _NV]]]

    @property
    def hand_size(self) -> int:
        return int(self._v[_HSIZE] * HAND_SIZE_SCALE + 0.5)

    @property
    def hand_penalty(self) -> int:
        """Points my hand would cost if the round ended now."""
        return int(self._v[_PEN] * MAX_PENALTY + 0.5)

    # -- the piles
    @property
    def top_card(self) -> int:
        """The card code (1..7) on top of the discard pile."""
        top = self._v[_TOPC : _TOPC + _NV]
        return top.index(max(top)) + 1

    @property
    def discarded(self) -> tuple[int, ...]:
        """Cards of each value in the discard pile this round (index 0 = value 1)."""
        return tuple([int(x * COPIES_PER_VALUE + 0.5) for x in self._v[_DISC : _DISC + _NV]])

    def discarded_count(self, card: int) -> int:
        """Cards of code ``card`` (1..7) in the discard pile this round."""
        return int(self._v[_DISC + card - 1] * COPIES_PER_VALUE + 0.5)

    def discard_counts(self) -> list[int]:
        """Cards per card CODE in the discard pile this round, index 0 unused."""
        return [0, *[int(x * COPIES_PER_VALUE + 0.5) for x in self._v[_DISC : _DISC + _NV]]]

    @property
    def draw_pile(self) -> int:
        return int(self._v[_DRAW] * DECK_SIZE + 0.5)

    @property
    def can_draw(self) -> bool:
        return self._v[_CAN] > 0.5

    # -- the table
    @property
    def num_players(self) -> int:
        if not self._n:
            one_hot = self._v[_NP : _NP + MAX_PLAYERS - MIN_PLAYERS + 1]
            self._n = one_hot.index(max(one_hot)) + MIN_PLAYERS
        return self._n

    @property
    def end_score(self) -> int:
        return int(self._v[_END] * END_SCORE_SCALE + 0.5)

    @property
    def my_score(self) -> int:
        return int(self._v[_MYSC] * self.end_score + 0.5)

    @property
    def opp_in_round(self) -> tuple[bool, ...]:
        return tuple([x > 0.5 for x in self._v[_IN : _IN + self.num_players - 1]])

    @property
    def opp_hand_size(self) -> tuple[int, ...]:
        return tuple([int(x * HAND_SIZE_SCALE + 0.5) for x in self._v[_OHS : _OHS + self.num_players - 1]])

    @property
    def min_opp_hand_in_round(self) -> int | None:
        """The fewest cards held by an opponent still in the round (``None`` when all
        the others have quit): how close the round is to being ended by someone else."""
        v = self._v
        sizes = [v[_OHS + i] for i in range(self.num_players - 1) if v[_IN + i] > 0.5]
        return int(min(sizes) * HAND_SIZE_SCALE + 0.5) if sizes else None

    @property
    def opp_score(self) -> tuple[int, ...]:
        end = self.end_score
        return tuple([int(x * end + 0.5) for x in self._v[_OSC : _OSC + self.num_players - 1]])

    # -- version 1: the public history of the round
    def _history(self, name: str) -> int:
        if len(self._v) != OBS_SIZE_V1:
            raise ValueError(f"{name!r} is a field of version-1 observations (Llama-v1); this one is version 0")
        return SLICES_V1[name].start

    def _per_value(self, name: str) -> tuple[tuple[int, ...], ...]:
        start, v = self._history(name), self._v
        return tuple(
            tuple([int(x * COPIES_PER_VALUE + 0.5) for x in v[start + o * _NV : start + (o + 1) * _NV]])
            for o in range(self.num_players - 1)
        )

    @property
    def opp_played(self) -> tuple[tuple[int, ...], ...]:
        """Per other seat (from my left), the cards it played this round per value
        (index 0 = value 1 .. 6 = llama)."""
        return self._per_value("opp_played")

    @property
    def opp_drew_on(self) -> tuple[tuple[int, ...], ...]:
        """Per other seat, its draws this round per value of the top card at the time."""
        return self._per_value("opp_drew_on")

    @property
    def opp_draws(self) -> tuple[int, ...]:
        """Per other seat, the cards it drew this round."""
        start, v = self._history("opp_draws"), self._v
        return tuple([int(x * HAND_SIZE_SCALE + 0.5) for x in v[start : start + self.num_players - 1]])

    @property
    def opp_quit_on(self) -> tuple[int, ...]:
        """Per other seat, the top card's code (1..7) when it quit this round; 0 while in."""
        start, v = self._history("opp_quit_on"), self._v
        out = []
        for o in range(self.num_players - 1):
            block = v[start + o * _NV : start + (o + 1) * _NV]
            out.append(block.index(1.0) + 1 if 1.0 in block else 0)
        return tuple(out)

    @property
    def opp_quit_at(self) -> tuple[int, ...]:
        """Per other seat, the number of the move of this round it quit with; 0 while in."""
        start, v = self._history("opp_quit_at"), self._v
        return tuple([int(x * MOVES_SCALE + 0.5) for x in v[start : start + self.num_players - 1]])

    @property
    def last_player(self) -> int | None:
        """Who played the last card this round: 0 = me, 1.. = the others from my left;
        ``None`` when nobody has played yet."""
        start, v = self._history("last_player"), self._v
        block = v[start : start + MAX_PLAYERS]
        return block.index(1.0) if 1.0 in block else None

    @property
    def round(self) -> int:
        return int(self._v[self._history("round")] * ROUND_SCALE + 0.5)

    @property
    def round_moves(self) -> int:
        """Moves made this round so far."""
        return int(self._v[self._history("round_moves")] * MOVES_SCALE + 0.5)

    def __repr__(self) -> str:
        return f"ObsView({decode(self)!r})"


@dataclass(frozen=True)
class Decoded:
    """An observation in natural units, all fields at once (see :class:`ObsView`)."""

    hand: tuple[int, ...]
    """Cards per value, index 0 = value 1 .. index 6 = llama."""
    hand_size: int
    hand_penalty: int
    top_card: int
    """Card code 1..7."""
    discarded: tuple[int, ...]
    """Cards of each value in the discard pile this round (index 0 = value 1)."""
    draw_pile: int
    can_draw: bool
    num_players: int
    end_score: int
    my_score: int
    opp_in_round: tuple[bool, ...]
    """For the other seats in turn order from my left (length num_players - 1)."""
    opp_hand_size: tuple[int, ...]
    opp_score: tuple[int, ...]
    history: DecodedHistory | None = None
    """The public history of the round (version-1 observations); ``None`` for version 0."""


@dataclass(frozen=True)
class DecodedHistory:
    """The fields a version-1 observation adds, in natural units (see :class:`ObsView`)."""

    opp_played: tuple[tuple[int, ...], ...]
    opp_draws: tuple[int, ...]
    opp_drew_on: tuple[tuple[int, ...], ...]
    opp_quit_on: tuple[int, ...]
    opp_quit_at: tuple[int, ...]
    last_player: int | None
    round: int
    round_moves: int


def decode(obs: np.ndarray | ObsView | Any) -> Decoded:
    """Every field of one observation in natural units (read through :class:`ObsView`)."""
    o = obs if isinstance(obs, ObsView) else ObsView(np.asarray(obs, dtype=np.float64))
    return Decoded(
        hand=o.hand,
        hand_size=o.hand_size,
        hand_penalty=o.hand_penalty,
        top_card=o.top_card,
        discarded=o.discarded,
        draw_pile=o.draw_pile,
        can_draw=o.can_draw,
        num_players=o.num_players,
        end_score=o.end_score,
        my_score=o.my_score,
        opp_in_round=o.opp_in_round,
        opp_hand_size=o.opp_hand_size,
        opp_score=o.opp_score,
        history=None
        if o.version == 0
        else DecodedHistory(
            opp_played=o.opp_played,
            opp_draws=o.opp_draws,
            opp_drew_on=o.opp_drew_on,
            opp_quit_on=o.opp_quit_on,
            opp_quit_at=o.opp_quit_at,
            last_player=o.last_player,
            round=o.round,
            round_moves=o.round_moves,
        ),
    )
