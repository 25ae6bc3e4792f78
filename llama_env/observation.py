"""The observation vector, declared once.

One flat ``float32`` vector of the same size at every table size (other seats padded
to :data:`MAX_PLAYERS` - 1), so one policy can play any table. Each field is named in
:data:`FIELDS` with its size and the scale it is divided by; :func:`view` returns the
fields of a vector by name and :func:`decode` turns them back into natural units
(card counts, points) for rule-based agents.

Seats are relative to the observer: field ``opp_*`` entry 0 is the player to my left
(the next to act after me), entry 1 the one after, and so on.

Only public information and the observer's own hand go in: never another player's
cards nor the order of the draw pile.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

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
    "encode",
    "view",
    "decode",
    "Decoded",
    "observation_bounds",
    "action_mask",
]

MAX_OTHERS = MAX_PLAYERS - 1
HAND_SIZE_SCALE = 10.0
MAX_PENALTY = 31  # 1 + 2 + 3 + 4 + 5 + 6 + 10
END_SCORE_SCALE = 100.0


@dataclass(frozen=True)
class Field:
    """One named block of the observation vector."""

    name: str
    size: int
    scale: float | None
    """Natural units are divided by this; ``None`` for one-hot and 0/1 fields and for the
    scores, which are divided by the game's ``end_score`` (see :data:`SCORE_FIELDS`)."""
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
SCORE_FIELDS = frozenset({"opp_score", "my_score"})

SLICES: dict[str, slice] = {}
_offset = 0
for _f in FIELDS:
    SLICES[_f.name] = slice(_offset, _offset + _f.size)
    _offset += _f.size
OBS_SIZE = _offset
del _offset, _f

_S = {name: s.start for name, s in SLICES.items()}
_HAND, _HSIZE, _PEN, _TOP, _DISC = _S["hand"], _S["hand_size"], _S["hand_penalty"], _S["top_card"], _S["discarded"]
_DRAW, _CAN_DRAW, _PRES, _IN = _S["draw_pile"], _S["can_draw"], _S["opp_present"], _S["opp_in_round"]
_OHS, _OSC, _MYSC, _NP, _END = _S["opp_hand_size"], _S["opp_score"], _S["my_score"], _S["num_players"], _S["end_score"]


def observation_bounds(end_score: int) -> tuple[np.ndarray, np.ndarray]:
    """Lower and upper bounds of every entry for a game with this ``end_score``."""
    low = np.zeros(OBS_SIZE, dtype=np.float32)
    high = np.ones(OBS_SIZE, dtype=np.float32)
    high[SLICES["hand_size"]] = DECK_SIZE / HAND_SIZE_SCALE
    high[SLICES["opp_hand_size"]] = DECK_SIZE / HAND_SIZE_SCALE
    max_score = (end_score - 1 + MAX_PENALTY) / end_score
    high[SLICES["opp_score"]] = max_score
    high[SLICES["my_score"]] = max_score
    high[SLICES["end_score"]] = MAX_END_SCORE / END_SCORE_SCALE
    return low, high


_INV8 = 1.0 / COPIES_PER_VALUE


def encode(game: LlamaGame, seat: int) -> np.ndarray:
    """The observation of ``seat``: public information and that seat's own hand only."""
    obs = [0.0] * OBS_SIZE
    hand = game._hands[seat]
    for c in range(1, NUM_CARD_VALUES + 1):
        k = hand[c]
        if k:
            obs[_HAND + c - 1] = k * _INV8
    obs[_HSIZE] = game._sizes[seat] / HAND_SIZE_SCALE
    obs[_PEN] = hand_penalty(hand) / MAX_PENALTY
    pile = game.discard_pile
    obs[_TOP + pile[-1] - 1] = 1.0
    for c in pile:
        obs[_DISC + c - 1] += _INV8
    obs[_DRAW] = len(game.draw_pile) / DECK_SIZE
    obs[_CAN_DRAW] = 1.0 if (game.draw_pile and game._in_round > 1 and not game.quit[seat]) else 0.0
    n = game.num_players
    end = game.end_score
    quit_, sizes, scores = game.quit, game._sizes, game.scores
    for i in range(n - 1):
        other = (seat + 1 + i) % n
        obs[_PRES + i] = 1.0
        obs[_IN + i] = 0.0 if quit_[other] else 1.0
        obs[_OHS + i] = sizes[other] / HAND_SIZE_SCALE
        obs[_OSC + i] = scores[other] / end
    obs[_MYSC] = scores[seat] / end
    obs[_NP + n - MIN_PLAYERS] = 1.0
    obs[_END] = end / END_SCORE_SCALE
    return np.array(obs, dtype=np.float32)


_MASKS: dict[tuple[int, ...], np.ndarray] = {}


def action_mask(legal: list[int] | tuple[int, ...]) -> np.ndarray:
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
    return m


def view(obs: np.ndarray) -> dict[str, np.ndarray]:
    """The fields of an observation by name (numpy views, still scaled)."""
    return {name: obs[..., s] for name, s in SLICES.items()}


@dataclass(frozen=True)
class Decoded:
    """An observation in natural units, for rule-based agents."""

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


def decode(obs: np.ndarray) -> Decoded:
    """Turn one observation vector back into natural units."""
    o = np.asarray(obs, dtype=np.float64)
    if o.shape != (OBS_SIZE,):
        raise ValueError(f"an observation has shape ({OBS_SIZE},), got {o.shape}")
    v = o.tolist()
    n = int(np.argmax(o[SLICES["num_players"]])) + MIN_PLAYERS
    end = round(v[_END] * END_SCORE_SCALE)
    k = n - 1
    return Decoded(
        hand=tuple(round(x * COPIES_PER_VALUE) for x in v[_HAND : _HAND + NUM_CARD_VALUES]),
        hand_size=round(v[_HSIZE] * HAND_SIZE_SCALE),
        hand_penalty=round(v[_PEN] * MAX_PENALTY),
        top_card=int(np.argmax(o[SLICES["top_card"]])) + 1,
        discarded=tuple(round(x * COPIES_PER_VALUE) for x in v[_DISC : _DISC + NUM_CARD_VALUES]),
        draw_pile=round(v[_DRAW] * DECK_SIZE),
        can_draw=v[_CAN_DRAW] > 0.5,
        num_players=n,
        end_score=end,
        my_score=round(v[_MYSC] * end),
        opp_in_round=tuple(x > 0.5 for x in v[_IN : _IN + k]),
        opp_hand_size=tuple(round(x * HAND_SIZE_SCALE) for x in v[_OHS : _OHS + k]),
        opp_score=tuple(round(x * end) for x in v[_OSC : _OSC + k]),
    )
