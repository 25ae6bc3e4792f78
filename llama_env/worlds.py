"""Worlds that one seat cannot tell from the real game: the public state rebuilt from its
version-1 observation, and whole games made from it by dealing the cards it cannot see.

A search agent plays from its observation alone (it never touches the real engine), yet
to look ahead it needs games to play in. :func:`public_state` reads everything public
from the observation; :func:`deal_world` completes it with the other hands and the draw
pile, which a search draws (uniformly, or from a belief about the others) once per world.
The world puts the observer at seat 0 and the others at seats 1.. in turn order from its
left, as the observation lists them, and it is the observer's turn.

Two things the observation does not say are filled with a choice the engine accepts
and that encodes back to the same observation (tests/property/test_worlds.py holds both):

* the order of the discard pile: the one ordering the counts allow that starts with a
  card the others' plays leave unexplained (when the observer played last, other than
  the top card it played) and climbs value by value (rule 4) to the top card, round the
  cycle as often as the counts need;
* the observer's own moves this round: it played the cards on the pile that the others
  did not, and drew what the draw pile lost beyond the others' draws (counted as drawn
  on the top card: no observation shows on what the observer itself drew).

Who started the round is read back from the number of moves made in it and the move each
seat quit with (:func:`_round_starter`): every move, a play, a draw or a quit, passes the
turn to the next seat on the left that is still in (rule 7). It matters when the round
ends with no card played (rule 11: the seat left of its starter begins the next one).

The hand size the round was dealt with is a rule option the observation does not hold;
it is the rule's default unless given. An observation that contradicts it (the observer
would have drawn a negative number of cards) raises ``ValueError``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from llama_env.engine import (
    COPIES_PER_VALUE,
    DECK_SIZE,
    DEFAULT_HAND_SIZE,
    NUM_CARD_VALUES,
    LlamaGame,
    Rules,
    brief,
    check_rule_option,
    is_int,
)
from llama_env.observation import OBS_SIZE_V1, ObsView

__all__ = ["PublicState", "public_state", "dealt_hand_size", "deal_world", "discard_order"]

_NV = NUM_CARD_VALUES


@dataclass(frozen=True)
class PublicState:
    """What one seat knows of a game, as a snapshot with the hidden cards left out."""

    snapshot: dict[str, Any]
    """A :meth:`LlamaGame.to_dict` snapshot whose other hands and draw pile are empty
    (the observer is seat 0)."""
    unseen: tuple[int, ...]
    """Cards of each value (index 0 = value 1 .. 6 = llama) the observer cannot see: in
    the other hands or the draw pile."""
    hand_sizes: tuple[int, ...]
    """How many cards each other seat holds, in turn order from the observer's left."""


def discard_order(counts: Sequence[int], top: int, bottoms: Sequence[int]) -> list[int]:
    """A discard pile (card codes, bottom first) holding ``counts[v]`` cards of value
    ``v + 1``, with ``top`` (a card code) on top and every card playable on the one below
    (rule 4), starting with one of the card codes ``bottoms``. Raises ``ValueError`` when
    no such pile exists."""
    total = sum(counts)
    for b in bottoms:
        for loops in range(total // _NV + 1):
            length = (top - b) % _NV + 1 + _NV * loops  # the values b, b + 1, ..., top, round the cycle
            if length > total:
                break
            path = [(b - 1 + i) % _NV for i in range(length)]
            visits = [path.count(v) for v in range(_NV)]
            if any(visits[v] > counts[v] or (counts[v] and not visits[v]) for v in range(_NV)):
                continue
            pile: list[int] = []
            extra = [counts[v] - visits[v] for v in range(_NV)]
            for v in path:  # the copies a value has beyond its visits go with its first visit
                pile += [v + 1] * (1 + extra[v])
                extra[v] = 0
            return pile
    raise ValueError(f"no discard pile holds {list(counts)} cards per value with {top} on top and rule 4 kept")


def public_state(observation: np.ndarray | Sequence[float], hand_size: int = DEFAULT_HAND_SIZE) -> PublicState:
    """The public state of the game behind a version-1 observation of the seat to act.

    Raises ``ValueError`` for a version-0 observation and for one that no game dealt
    with ``hand_size`` cards a hand could produce."""
    if np.shape(observation) != (OBS_SIZE_V1,):
        raise ValueError(
            f"a world is rebuilt from a version-1 observation ({OBS_SIZE_V1} values), got shape {np.shape(observation)}"
        )
    o = ObsView(observation, 1)
    rules = Rules(o.num_players, end_score=o.end_score, hand_size=hand_size)  # checks hand_size for the table
    n = o.num_players
    others = n - 1
    on_pile = list(o.discarded)
    opp_played = [list(row) for row in o.opp_played]
    opp_total = [sum(row[v] for row in opp_played) for v in range(_NV)]
    # the bottom card was turned up, not played: it is one the others' plays do not
    # explain, and when I played last, not my copy of the top card's value (the top card)
    mine = [int(o.last_player == 0 and v + 1 == o.top_card) for v in range(_NV)]
    bottoms = [v + 1 for v in range(_NV) if on_pile[v] - opp_total[v] - mine[v] >= 1]
    if any(on_pile[v] < opp_total[v] + mine[v] for v in range(_NV)) or not bottoms:
        raise ValueError("the observation's discard pile holds fewer cards than the others played")
    pile = discard_order(on_pile, o.top_card, bottoms)
    # what lies on the pile above its bottom card and the others did not play: never
    # negative, since the bottom is one of ``bottoms``
    my_played = [on_pile[v] - (v + 1 == pile[0]) - opp_total[v] for v in range(_NV)]
    drawn = DECK_SIZE - n * hand_size - 1 - o.draw_pile
    my_draws = drawn - sum(o.opp_draws)
    if my_draws < 0 or o.hand_size != hand_size + my_draws - sum(my_played):
        raise ValueError(
            f"the observation does not fit a round dealt with hand_size={hand_size} "
            f"(the draw pile holds {o.draw_pile} cards, the others drew {sum(o.opp_draws)})"
        )
    my_drew_on = [0] * _NV
    my_drew_on[o.top_card - 1] = my_draws
    last = o.last_player
    quit_on = [0, *o.opp_quit_on]
    hand = [v + 1 for v in range(_NV) for _ in range(o.hand[v])]
    snapshot: dict[str, Any] = {
        "num_players": n,
        "scores": [o.my_score, *o.opp_score],
        "hands": [hand] + [[] for _ in range(others)],
        "draw_pile": [],
        "discard_pile": pile,
        "quit": [False] + [not i for i in o.opp_in_round],
        "current_player": 0,
        "round": max(1, o.round),
        "game_over": False,
        **rules.options(),
        "starter": _round_starter(o.round_moves, [0, *o.opp_quit_at]),
        "last_player": last,
        "history": {
            "moves": o.round_moves,
            "played": [my_played, *opp_played],
            "drew_on": [my_drew_on, *[list(row) for row in o.opp_drew_on]],
            "quit_on": quit_on,
            "quit_at": [0, *o.opp_quit_at],
        },
        "rng_state": None,
    }
    unseen = tuple(COPIES_PER_VALUE - o.hand[v] - on_pile[v] for v in range(_NV))
    return PublicState(snapshot, unseen, o.opp_hand_size)


def _round_starter(moves: int, quit_at: Sequence[int]) -> int:
    """The seat that started a round in which ``moves`` moves were made and the seat now to
    act is seat 0; ``quit_at[p]`` is the move seat ``p`` quit with (1 for the round's first
    move), 0 while it is in.

    Rule 7 passes the turn left after every move (a play, a draw or a quit), skipping those
    who quit, so the seat that made a move is the nearest one right of the next move's seat
    that had not quit before it."""
    n = len(quit_at)
    seat = 0
    for move in range(moves, 0, -1):
        seat = (seat - 1) % n
        while 0 < quit_at[seat] < move:
            seat = (seat - 1) % n
    return seat


def dealt_hand_size(observation: np.ndarray | Sequence[float]) -> int | None:
    """The hand size that the counts of a version-1 observation balance at: the only one
    the round behind it can have been dealt with; ``None`` where none can (a vector of no
    game: made up, or damaged).

    The deck less the turned-up card is the hands dealt, the draw pile and the cards drawn
    since, and my hand is what I was dealt and drew less what I played (the pile but its
    bottom card and the others' plays): one hand size balances them, and it must be one the
    table can be dealt, with my draws not negative. The rest of the vector is not looked at
    (:func:`public_state` reads it). A search that cannot read a round at the default hand
    size tells so a round dealt another from a vector of no game, in a few microseconds."""
    if np.shape(observation) != (OBS_SIZE_V1,):
        return None
    try:
        o = ObsView(observation, 1)
        n = o.num_players
        played = sum(o.discarded) - 1 - sum(sum(row) for row in o.opp_played)
        unseen = DECK_SIZE - 1 - o.draw_pile - sum(o.opp_draws)  # dealt and drawn by all, as the counts have it
        dealt, rest = divmod(unseen - played - o.hand_size, n - 1)
        if rest or unseen - n * dealt < 0:  # my draws would be negative
            return None
        check_rule_option("hand_size", dealt, n)  # a hand size that table can be dealt
    except (ValueError, OverflowError):  # a NaN read as a count, a hand size out of bounds
        return None
    return dealt


def deal_world(state: PublicState, hands: Sequence[Sequence[int]], rng: np.random.Generator) -> LlamaGame:
    """A whole game from ``state``: the other seats hold ``hands`` (card codes, in turn
    order from the observer's left), the draw pile the rest of the unseen cards,
    shuffled by ``rng``; later rounds are dealt from a generator seeded from ``rng``.
    Raises ``ValueError`` when the hands do not fit (wrong sizes, a card that is no card
    code 1..7, or more cards of a value than are unseen)."""
    if [len(h) for h in hands] != list(state.hand_sizes):
        raise ValueError(f"the other hands must hold {list(state.hand_sizes)} cards, got {[len(h) for h in hands]}")
    rest = list(state.unseen)
    for hand in hands:
        for card in hand:
            if not is_int(card) or not 1 <= card <= _NV:
                raise ValueError(f"the other hands must hold card codes 1..7, got {brief(card)} in {brief(hand)}")
            rest[card - 1] -= 1
    if min(rest) < 0:
        raise ValueError(f"the other hands hold more cards of a value than are unseen ({list(state.unseen)})")
    deck = [v + 1 for v in range(_NV) for _ in range(rest[v])]
    rng.shuffle(deck)
    snapshot = {**state.snapshot, "hands": [state.snapshot["hands"][0], *[list(h) for h in hands]], "draw_pile": deck}
    return LlamaGame.from_dict(snapshot, rng=int(rng.integers(2**63)))
