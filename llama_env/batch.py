"""Many games at once: N games of one table size held in numpy arrays and stepped together.

:class:`BatchGame` plays the rules of ``docs/rules.md`` exactly as :class:`~llama_env.engine.LlamaGame`
does, for ``num_games`` games at a time, with array operations over all of them (no Python
loop over games in :meth:`BatchGame.step`): what evaluation, vectorised training and search
rollouts need. The API follows Pgx: the fields :attr:`BatchGame.current_player`,
:attr:`BatchGame.legal_action_mask` and :attr:`BatchGame.terminated`, one
:meth:`BatchGame.step` for all games, finished games started anew (``auto_reset``).

Exactness is the contract: a game loaded with :meth:`BatchGame.from_snapshots` and stepped
in the batch passes through the same states as the engine stepped with the same actions
(:meth:`BatchGame.snapshot` is the engine's ``to_dict`` format), its observations are the
vectors of :func:`llama_env.observation.encode` / :func:`~llama_env.observation.encode_v1`,
its rewards the ``"game"`` reward of ``llama_env.rewards``. The one difference is the
shuffle (rule 2): the batch deals every round from its own generator, so a deal is as random
as the engine's but not the same cards.

How the state is held (per game; ``P`` seats): one row of small integers per seat with its
cards per value, its hand size and its public record of the round (cards played and draws
per value, draws, when and on what it quit: what the engine keeps); the draw pile as an
array of 56 card codes and its length (the next card drawn is the last one, as in the
snapshot); the discard pile likewise, with its top card and its counts per value kept
beside it; the seats that quit as the bits of one integer, so that rule 7's next seat is
one table look-up. With the public fields and the tables, about 500 bytes a game at four
players and 600 at six (:attr:`BatchGame.nbytes`).

The step applies each kind of action's rules to the games that chose it with array
operations (no Python loop runs over the games), and the observation is written field by
field from the specs of ``llama_env.observation``: a field is declared once there and read
here by its name.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np

from llama_env.engine import (
    CARD_POINTS,
    COPIES_PER_VALUE,
    DECK_SIZE,
    DEFAULT_END_SCORE,
    DEFAULT_HAND_SIZE,
    DEFAULT_NUM_PLAYERS,
    NUM_ACTIONS,
    NUM_CARD_VALUES,
    IllegalActionError,
    LlamaGame,
    Rules,
    brief,
    check_flag,
    is_int,
    seeded_generator,
)
from llama_env.observation import (
    MAX_ROUND,
    Count,
    Flag,
    ObsSpec,
    OneHot,
    Score,
    Unit,
    check_obs_version,
    obs_spec,
)

__all__ = ["BatchEngine", "BatchGame", "unplayed_options"]

_V = NUM_CARD_VALUES  # 7 values: 1..6 and the llama (code 7 = index 6)
_POINTS = np.array(CARD_POINTS[1:], dtype=np.int64)  # rule 9, per value index (code - 1)
_POINTS32 = _POINTS.astype(np.float32)
_MAX_INT = 2**31 - 1  # the largest score or round number a batch holds
_OPTIONS = frozenset({"end_score", "hand_size"})
"""The rule options the batch plays by (a new option of ``Rules`` must be read here too)."""


def unplayed_options(rules: Rules) -> list[str]:
    """The rule options of ``rules`` that the batched engine does not play and that
    differ from the standard rules (an option it does not know, left at its default,
    plays the standard game it does know): empty when a batch can play ``rules``."""
    options = rules.options()
    if options.keys() <= _OPTIONS:  # the usual case, on the search's hot path: nothing to compare
        return []
    standard = Rules(rules.num_players).options()
    return sorted(k for k, v in options.items() if k not in _OPTIONS and v != standard[k])


# The deal (rule 2) sorts 56 random 64-bit keys per game whose lowest 3 bits are replaced
# by the card codes: the codes then come out in a uniformly random order (two keys equal
# in their other 61 bits, about one deal in 10^15, keep the codes' order).
_KEY_CARDS = np.repeat(np.arange(1, _V + 1, dtype=np.uint64), COPIES_PER_VALUE)
_KEY_HIGH = ~np.uint64(7)
_KEY_LOW = np.uint64(7)
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_COUNTER = np.arange(1, DECK_SIZE + 1, dtype=np.uint64)


def _keyed_raw(keys: np.ndarray, deals: np.ndarray) -> np.ndarray:
    """``(k, 56)`` random 64-bit words for the deals of ``k`` games that each have a key
    of their own (:meth:`BatchGame.from_worlds`' ``deal_keys``): splitmix64's output for
    the counter ``deals * 56 + card`` from the key, so a function of the game's key and its
    count of deals alone, whatever else the batch holds and deals."""
    with np.errstate(over="ignore"):
        x = keys[:, None] + (deals.astype(np.uint64)[:, None] * np.uint64(DECK_SIZE) + _COUNTER) * _GOLDEN
        x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return x ^ (x >> np.uint64(31))


# One row of int8 per seat of every game: what the seat holds and its public record.
_HAND = 0  # 7 columns: cards per value
_SIZE = 7  # cards held
_PLAYED = 8  # 7 columns: cards per value played this round
_DREW = 15  # 7 columns: draws this round by the top card's value
_QUIT_ON = 22  # the top card's code when the seat quit (0: still in)
_QUIT_AT = 23  # the move of the round it quit with (0: still in)
_DRAWS = 24  # cards drawn this round
_SEAT_COLUMNS = 25
_PER_GAME = (
    *("_seats", "_scores", "_draw", "_draw_len", "_discard", "_discard_len", "_discard_counts", "_top"),
    *("_quit_bits", "_in_round", "_cp", "_starter", "_last", "_round", "_over", "_history_known", "_deals"),
)
"""The state arrays with a row per game (what :meth:`BatchGame.from_worlds` copies)."""


def _penalties(hands: np.ndarray) -> np.ndarray:
    """Rule 9 for hands given as counts per value (last axis): the sum of the distinct
    values held, a llama 10 (as float32 sums, exact for these small integers, which numpy
    adds several times faster than integers)."""
    held = (hands > 0).astype(np.float32).reshape(-1, _V)
    return (held @ _POINTS32).astype(np.int64).reshape(hands.shape[:-1])


def _codes(cards: np.ndarray) -> bool:
    """Whether every entry is a card code, 1..7."""
    return bool(((cards >= 1) & (cards <= _V)).all())


def _value_counts(codes: np.ndarray) -> np.ndarray:
    """``(N, 7)``: the cards of each value among each row of card codes (0: no card)."""
    rows = codes.shape[0]
    at = codes.astype(np.int64) + (_V + 1) * np.arange(rows)[:, None]
    return np.bincount(at.reshape(-1), minlength=rows * (_V + 1)).reshape(rows, _V + 1)[:, 1:]


def _next_seat_table(n: int) -> np.ndarray:
    """Rule 7 as a table: entry ``seat << n | quit bits`` is the next seat to the left that
    has not quit (the seat itself when it is the only one left)."""
    table = np.zeros(n << n, dtype=np.int64)
    for seat in range(n):
        for bits in range(1 << n):
            nxt = (seat + 1) % n
            while bits >> nxt & 1 and nxt != seat:
                nxt = (nxt + 1) % n
            table[seat << n | bits] = nxt
    return table


def _others_table(n: int) -> np.ndarray:
    """``[seat]`` -> the other seats in turn order from that seat's left (the observation's
    ``opp_*`` order)."""
    return np.array([[(s + 1 + k) % n for k in range(n - 1)] for s in range(n)], dtype=np.int64)


def _quit_table(n: int) -> np.ndarray:
    """``[quit bits]`` -> which seats have quit, as ``n`` booleans."""
    return (np.arange(1 << n)[:, None] >> np.arange(n) & 1).astype(bool)


def _others_in_table(n: int) -> np.ndarray:
    """``[seat << n | quit bits]`` -> whether each other seat, in turn order from that
    seat's left, is still in the round."""
    others = _others_table(n)
    return np.array([[not bits >> o & 1 for o in others[seat]] for seat in range(n) for bits in range(1 << n)])


@runtime_checkable
class BatchEngine(Protocol):
    """What the batched table driver (:class:`llama_env.table.BatchTable`), and through
    it evaluation, the SB3 vec env and the search's rollouts, asks of a batched engine:
    :class:`BatchGame` is the one that ships (numpy). Another one (JAX, say) that keeps
    this interface and the exactness contract of the module docstring plugs in there.
    Its fields and returns must be numpy arrays (a JAX engine converts its own with
    ``np.asarray``: the driver marks the mask read-only), and it may deal other cards
    for the same seed (rule 2), as the batch already does against the engine.
    """

    num_games: int
    num_players: int
    rules: Rules
    auto_reset: bool
    current_player: np.ndarray
    """``(N,)`` int: the seat to act in each game."""
    legal_action_mask: np.ndarray
    """``(N, 9)`` bool, read-only: the legal actions of each game's current player."""
    terminated: np.ndarray
    """``(N,)`` bool: the game ended in the last step, or is over and waits."""

    @property
    def game_over(self) -> np.ndarray: ...

    @property
    def scores(self) -> np.ndarray: ...

    @property
    def round(self) -> np.ndarray: ...

    def hand_sizes(self, games: np.ndarray | None = None) -> np.ndarray:
        """``(N, players)`` int: the cards each seat holds (``(K, players)`` for ``games``)."""
        ...

    def penalties(self, games: np.ndarray | None = None) -> np.ndarray:
        """``(N, players)`` int: what each seat's hand would cost now (rule 9)."""
        ...

    def observation(
        self, version: int = 0, seats: np.ndarray | None = None, games: np.ndarray | None = None
    ) -> np.ndarray:
        """``(N, size)`` float32: each row what ``encode`` of ``llama_env.observation``
        writes for that game's current player (or ``seats[i]``), in ``version``'s layout."""
        ...

    def step(self, actions: np.ndarray | Sequence[int], where: np.ndarray | None = None) -> np.ndarray:
        """Apply one action per game (only in the games ``where`` marks), each for its
        current player; an illegal one raises ``IllegalActionError``. Returns each seat's
        ``"game"`` reward, ``(N, players)`` float32, as :meth:`BatchGame.step` does."""
        ...

    def step_checked(self, a: np.ndarray, moving: np.ndarray | None) -> np.ndarray:
        """:meth:`step` for actions the caller has checked against
        :attr:`legal_action_mask` (the driver checks its players' answers once)."""
        ...

    def reset(self, games: np.ndarray | Sequence[int] | None = None) -> None:
        """Start new games: all of them, or those ``games`` names."""
        ...

    def snapshot(self, i: int) -> dict[str, Any]:
        """Game ``i`` as :meth:`LlamaGame.to_dict` writes it, which ``from_dict`` plays on."""
        ...

    def checked_games(self, games: object) -> np.ndarray:
        """``games`` as int64 game indices of this batch; a ``ValueError`` otherwise."""
        ...

    def unbegun(self) -> np.ndarray:
        """``(N,)`` bool: the games still at their first deal, before any move."""
        ...


class BatchGame:
    """``num_games`` games of L.L.A.M.A. at one table size, stepped together.

    Args:
        num_games: how many games the batch holds (at least 1).
        num_players: players at every table, 2..6 (default 4).
        seed: an int, a ``np.random.Generator`` or ``None`` (fresh entropy): the one
            generator that shuffles every deal of every game (rule 2).
        end_score: the game ends after a round in which a score reaches this (default 40).
        hand_size: cards dealt to each player (default 6).
        rules: the table size and rule options as one :class:`~llama_env.engine.Rules`,
            instead of ``num_players``, ``end_score`` and ``hand_size`` (giving both is a
            ``ValueError``, as for the engine).
        auto_reset: start a new game wherever one ends (default ``True``).

    Every game starts as the engine's does: scores 0, round 1, seat 0 begins (rule 11).

    Fields (read them, never write them; each step makes new arrays, so one kept from
    before a step still says what it said):

    * :attr:`current_player` ``(N,)``: the seat to act in each game;
    * :attr:`legal_action_mask` ``(N, 9)`` bool: its legal actions (rules 3-6; all
      ``False`` in a game that is over);
    * :attr:`terminated` ``(N,)`` bool: the game ended in the last step (with
      ``auto_reset`` it has already been replaced by a new game, whose observation and mask
      the fields show, as in Pgx), or it is over and waits (without ``auto_reset``).

    :meth:`step` takes one action per game and returns each seat's reward; :meth:`observation`
    gives what each game's current player sees; :meth:`snapshot` and :meth:`from_snapshots`
    move single games between the batch and the engine.
    """

    current_player: np.ndarray
    """The seat to act in each game, ``(N,)`` int64."""
    legal_action_mask: np.ndarray
    """``(N, 9)`` bool: the legal actions of each game's current player."""
    terminated: np.ndarray
    """``(N,)`` bool: the game ended in the last step, or is over (see the class doc)."""
    num_games: int
    """N, the games in the batch."""
    num_players: int
    """Seats at every table."""
    rules: Rules
    """The table size and rule options of every game of the batch."""
    auto_reset: bool
    """Whether a game that ends starts anew at once."""

    def __init__(
        self,
        num_games: int,
        num_players: int = DEFAULT_NUM_PLAYERS,
        *,
        seed: int | np.random.Generator | None = None,
        end_score: int = DEFAULT_END_SCORE,
        hand_size: int = DEFAULT_HAND_SIZE,
        rules: Rules | None = None,
        auto_reset: bool = True,
    ) -> None:
        rules = Rules.given(rules, num_players=num_players, end_score=end_score, hand_size=hand_size)
        self._setup(num_games, rules, seed, auto_reset)
        self._new_games(self._ar)
        self._publish(np.zeros(self.num_games, dtype=bool))

    def _setup(self, num_games: object, rules: Rules, seed: object, auto_reset: object) -> None:
        """Check the arguments and allocate the state (every game still to be dealt)."""
        if not is_int(num_games) or num_games < 1:
            raise ValueError(f"num_games must be a positive integer, got {brief(num_games)}")
        most = _MAX_INT // (rules.num_players * (_V + 1))  # the deal's row numbers are int32
        if num_games > most:
            raise ValueError(
                f"num_games must be at most {most:,} at {rules.num_players} players (the batch would hold "
                f"tens of GiB), got {int(num_games):,}"
            )
        self.auto_reset = check_flag("auto_reset", auto_reset)
        if isinstance(seed, np.random.Generator):
            self._rng = seed
        elif seed is None:
            self._rng = seeded_generator(None)
        elif is_int(seed):
            if seed < 0:
                raise ValueError(f"seed must be a non-negative integer, got {seed}")
            self._rng = seeded_generator(seed)
        else:
            raise TypeError(f"seed must be a non-negative int, a numpy Generator or None, got {brief(seed)}")
        self._key = int(self._rng.integers(2**63))  # of the generators that snapshots name
        unknown = unplayed_options(rules)
        if unknown:
            raise NotImplementedError(f"the batched engine does not play the rule option {unknown[0]!r} yet")
        self.rules = rules
        n = self.num_games = int(num_games)
        p = self.num_players = rules.num_players
        self._end = rules.end_score
        self._hand_size = rules.hand_size
        self._undealt = DECK_SIZE - p * rules.hand_size - 1  # the draw pile of a fresh deal
        self._ar = np.arange(n)
        self._next = _next_seat_table(p)
        self._others = _others_table(p)
        self._quit_of = _quit_table(p)
        self._others_in = _others_in_table(p)

        self._seats = np.zeros((n, p, _SEAT_COLUMNS), dtype=np.int8)
        self._seat_flat = self._seats.reshape(-1)
        self._seat_rows = self._seats.reshape(n * p, _SEAT_COLUMNS)
        self._scores = np.zeros((n, p), dtype=np.int64)
        self._draw = np.zeros((n, DECK_SIZE), dtype=np.int8)  # the next card drawn is the last
        self._draw_len = np.zeros(n, dtype=np.int64)
        self._discard = np.zeros((n, DECK_SIZE), dtype=np.int8)  # the top card is the last
        self._discard_len = np.zeros(n, dtype=np.int64)
        self._discard_counts = np.zeros((n, _V), dtype=np.int8)
        self._top = np.zeros(n, dtype=np.int64)
        self._quit_bits = np.zeros(n, dtype=np.int64)
        self._in_round = np.zeros(n, dtype=np.int64)
        self._cp = np.zeros(n, dtype=np.int64)
        self._starter = np.zeros(n, dtype=np.int64)
        self._last = np.full(n, -1, dtype=np.int64)  # -1: nobody played this round
        self._round = np.ones(n, dtype=np.int64)
        self._over = np.zeros(n, dtype=bool)
        self._history_known = np.ones(n, dtype=bool)
        self._deals = np.zeros(n, dtype=np.int64)  # deals the batch made, for the snapshots' generators
        self._deal_keys: np.ndarray | None = None  # (n,) uint64: each game deals from its own key (from_worlds)
        self._loaded_rng: dict[int, Any] = {}  # game -> the generator state its snapshot named, until a deal
        self._plans: dict[int, _Plan] = {}
        self._me = np.zeros((n, _SEAT_COLUMNS), dtype=np.int8)  # the current seats' rows
        # for counting the dealt cards per seat: (game x seat) * 8 for each card dealt
        self._deal_rows = np.repeat(np.arange(n * p, dtype=np.int32) * (_V + 1), rules.hand_size)

    # ------------------------------------------------------------------ fields

    @property
    def scores(self) -> np.ndarray:
        """``(N, players)``: each seat's points (a copy)."""
        return self._scores.copy()

    @property
    def round(self) -> np.ndarray:
        """``(N,)``: each game's round number, 1 for the first (a copy)."""
        return self._round.copy()

    @property
    def game_over(self) -> np.ndarray:
        """``(N,)`` bool: the games that are over and wait (only ever ``True`` without
        ``auto_reset``, or for finished games loaded from snapshots until the next step)."""
        return self._over.copy()

    def hand_sizes(self, games: np.ndarray | None = None) -> np.ndarray:
        """``(N, players)``: the cards each seat holds (or ``(K, players)`` for the game
        indices ``games``)."""
        rows = self._seats[:, :, _SIZE] if games is None else self._seats[self.checked_games(games), :, _SIZE]
        return rows.astype(np.int64)

    def penalties(self, games: np.ndarray | None = None) -> np.ndarray:
        """``(N, players)``: what each seat's hand would cost now (rule 9: the distinct
        values held, a llama 10), as ``LlamaGame.penalty`` (or ``(K, players)`` for the
        game indices ``games``)."""
        seats = self._seats if games is None else self._seats[self.checked_games(games)]
        return _penalties(seats[:, :, _HAND : _HAND + _V])

    def checked_games(self, games: object) -> np.ndarray:
        """``games`` as int64 game indices of this batch; a ``ValueError`` otherwise."""
        g = np.asarray(games)
        if g.ndim == 1 and g.size == 0:  # [] reads as float
            return np.zeros(0, dtype=np.int64)
        if g.ndim != 1 or g.dtype.kind not in "iu" or ((g < 0) | (g >= self.num_games)).any():
            raise ValueError(f"games must be game indices 0..{self.num_games - 1}, got {brief(games)}")
        return g.astype(np.int64, copy=False)

    def unbegun(self) -> np.ndarray:
        """``(N,)`` bool: the games still at their first deal, before any move."""
        return (
            (self._round == 1)
            & ~self._over
            & (self._discard_len == 1)
            & (self._draw_len == self._undealt)
            & (self._in_round == self.num_players)
        )

    @property
    def nbytes(self) -> int:
        """Bytes held in the batch's arrays: the state, the public fields and the tables
        (about 500 bytes a game at four players, 600 at six)."""
        return sum(v.nbytes for v in vars(self).values() if isinstance(v, np.ndarray) and v.base is None)

    def _publish(self, ended: np.ndarray) -> None:
        """Make the public fields anew from the state after a step, a reset or a load."""
        me = self._me = np.take(self._seat_rows, self._ar * self.num_players + self._cp, axis=0)
        mask = np.zeros((self.num_games, NUM_ACTIONS), dtype=bool)
        flat, at, held = mask.reshape(-1), self._ar * NUM_ACTIONS, me.reshape(-1)
        for card in (self._top - 1, self._top % _V):  # rule 4: the top card's value, and the next
            flat[at + card] = np.take(held, self._ar * _SEAT_COLUMNS + (_HAND + card)) > 0
        np.logical_and(self._draw_len > 0, self._in_round > 1, out=mask[:, _V])  # rule 5
        mask[:, _V + 1] = True  # rule 6
        if self._over.any():
            mask[self._over] = False
        mask.flags.writeable = False  # step checks actions against it: nobody may edit it
        self.legal_action_mask = mask
        self.current_player = self._cp.copy()
        self.terminated = ended | self._over

    # ------------------------------------------------------------------ stepping

    def step(self, actions: np.ndarray | Sequence[int], where: np.ndarray | None = None) -> np.ndarray:
        """Apply one action per game, each for that game's :attr:`current_player`.

        ``actions`` is an integer array of shape ``(N,)`` holding ``Action`` values. A game
        that is over when the step begins ignores its action (with ``auto_reset`` it
        starts anew instead). ``where``, a boolean array of shape ``(N,)``, limits the step
        to the games it marks: the others keep their state exactly (their actions are not
        read, a finished one is not started anew), as when a table waits for a player
        from outside in some games only. Returns the rewards, ``(N, players)`` float32:
        the ``"game"`` reward of ``llama_env.rewards`` (``1/k`` to each of the ``k`` seats
        tied on the lowest score in a game that ended in this step, rule 12; 0 elsewhere).

        A round that ends (rule 8) is scored (rules 9 and 10); if no score reached the end
        (rule 12) the next round is dealt at once (rules 2 and 11), otherwise the game is
        over, and with ``auto_reset`` a new game starts.

        Raises ``ValueError`` (the batch untouched) for actions or ``where`` of another
        shape or dtype, and :class:`~llama_env.engine.IllegalActionError` (a
        ``ValueError``) naming the first game whose action is illegal, its seat and the
        legal actions.
        """
        moving = self._checked_where(where)
        return self.step_checked(self._checked_actions(actions, moving), moving)

    def step_checked(self, a: np.ndarray, moving: np.ndarray | None) -> np.ndarray:
        """:meth:`step` for checked actions: ``a`` int64 ``(N,)``, legal in every game that
        moves and is not over; ``moving`` a boolean ``(N,)`` (``None``: every game).
        :class:`~llama_env.table.BatchTable`, which checks its players' answers against
        the same masks, steps through here."""
        n = self.num_games
        rewards = np.zeros((n, self.num_players), dtype=np.float32)
        ended = np.zeros(n, dtype=bool)
        if moving is not None or self._over.any():
            still = ~self._over if moving is None else ~self._over & moving
            waiting = np.flatnonzero(self._over if moving is None else self._over & moving)
            live = np.flatnonzero(still)
            if self.auto_reset and waiting.size:
                self._new_games(waiting)
            if live.size:
                self._apply(live, a[live], rewards, ended)
        else:
            self._apply(None, a, rewards, ended)
        self._publish(ended)
        return rewards

    def _checked_where(self, where: object) -> np.ndarray | None:
        if where is None:
            return None
        w = where if isinstance(where, np.ndarray) else np.asarray(where)
        if w.shape != (self.num_games,) or w.dtype != bool:
            raise ValueError(
                f"where must be a boolean array of shape ({self.num_games},): the games that move, "
                f"got {brief(where)} of shape {w.shape} ({w.dtype})"
            )
        return None if w.all() else w

    def _checked_actions(self, actions: object, moving: np.ndarray | None = None) -> np.ndarray:
        a = actions if isinstance(actions, np.ndarray) else np.asarray(actions)
        n = self.num_games
        if a.shape != (n,):
            raise ValueError(f"actions must have shape ({n},): one per game, got shape {a.shape}")
        if a.dtype.kind not in "iu":
            raise ValueError(f"actions must be an integer array (Action values 0..8), got dtype {a.dtype}")
        given, a = a, a.astype(np.int64, copy=False)
        ok = (given >= 0) & (given < NUM_ACTIONS)
        ok &= np.take(self.legal_action_mask.reshape(-1), self._ar * NUM_ACTIONS + np.where(ok, a, 0))
        ok |= self._over
        if moving is not None:
            ok |= ~moving
        if not ok.all():
            bad = np.flatnonzero(~ok)
            raise self._illegal(int(bad[0]), int(given[bad[0]]), bad.size - 1)
        return a

    def _illegal(self, i: int, action: int, others: int) -> IllegalActionError:
        """The engine's own error for ``action`` in game ``i``, naming the game."""
        game = LlamaGame.from_dict(self.snapshot(i))
        error = game.illegal_action_error(action, who=f"game {i}, seat {game.current_player}")
        if others:
            error.args = (f"{error.args[0]} (and {others} more game(s) with an illegal action)",)
        return error

    def _apply(self, g: np.ndarray | None, a: np.ndarray, rewards: np.ndarray, ended: np.ndarray) -> None:
        """One legal action ``a`` in each game ``g`` (``None``: all), rules 3-8, then the
        end of the rounds that ended."""
        nseat = self.num_players
        gi = self._ar if g is None else g
        p = self._cp[gi]
        row = (gi * nseat + p) * _SEAT_COLUMNS  # the mover's row of the seat table, flat
        seats = self._seat_flat
        top = self._top[gi]
        # rule 4: a card played leaves the hand for the discard pile
        k = np.flatnonzero(a < _V)
        gk, rk, card = gi[k], row[k], a[k]
        seats[rk + (_HAND + card)] -= 1
        seats[rk + _SIZE] -= 1
        seats[rk + (_PLAYED + card)] += 1
        pile = self._discard_len[gk]
        self._discard.reshape(-1)[gk * DECK_SIZE + pile] = card + 1
        self._discard_len[gk] = pile + 1
        self._discard_counts.reshape(-1)[gk * _V + card] += 1
        self._top[gk] = card + 1
        self._last[gk] = p[k]
        went_out = k[seats[rk + _SIZE] == 0]
        # rule 5: a draw takes the draw pile's last card
        k = np.flatnonzero(a == _V)
        gk, rk = gi[k], row[k]
        left = self._draw_len[gk] - 1
        self._draw_len[gk] = left
        seats[rk + (_HAND - 1 + np.take(self._draw.reshape(-1), gk * DECK_SIZE + left))] += 1
        seats[rk + _SIZE] += 1
        seats[rk + (_DREW - 1 + top[k])] += 1
        seats[rk + _DRAWS] += 1
        # rule 6: a seat that quits is out of the round
        k = np.flatnonzero(a == _V + 1)
        gk, rk = gi[k], row[k]
        in_round = self._in_round[gk]
        moves = self._discard_len[gk] - 1 + (self._undealt - self._draw_len[gk]) + (nseat - in_round)
        seats[rk + _QUIT_ON] = top[k]
        seats[rk + _QUIT_AT] = moves + 1  # this move's number in the round
        self._quit_bits[gk] |= 1 << p[k]
        self._in_round[gk] = in_round - 1
        all_quit = k[in_round == 1]
        # rule 7: the next seat to the left that is still in
        self._cp[gi] = np.take(self._next, p << nseat | self._quit_bits[gi])
        # rule 8: the round ends when a hand is empty or nobody is left in it
        if went_out.size or all_quit.size:
            done = np.concatenate([went_out, all_quit])
            seat = np.concatenate([p[went_out], np.full(all_quit.size, -1)])
            order = np.argsort(done)  # in game order, whatever ended each round
            done, seat = done[order], seat[order]
            self._end_rounds(gi[done], seat, p[done], rewards, ended)

    def _end_rounds(
        self, g: np.ndarray, went_out: np.ndarray, mover: np.ndarray, rewards: np.ndarray, ended: np.ndarray
    ) -> None:
        """Rules 9-12 for the games ``g`` whose round just ended: score it, then deal the
        next round, or end the game (``went_out``: the seat that went out, or -1)."""
        penalties = _penalties(np.take(self._seats, g, axis=0)[:, :, _HAND : _HAND + _V])  # rule 9
        scores = self._scores[g]
        out = np.flatnonzero(went_out >= 0)
        seat = went_out[out]
        penalties[out, seat] = 0
        kept = scores[out, seat]
        scores[out, seat] -= np.where(kept >= 10, 10, np.where(kept >= 1, 1, 0))  # rule 10
        scores += penalties
        self._scores[g] = scores
        self._cp[g] = mover  # a finished game leaves the turn with the seat that moved last
        over = scores.max(axis=1) >= self._end  # rule 12
        last = self._last[g]
        starters = np.where(last >= 0, last, (self._starter[g] + 1) % self.num_players)  # rule 11
        self._round[g] += 1
        if over.any():
            fin = g[over]
            final = scores[over]
            won = final == final.min(axis=1, keepdims=True)
            rewards[fin] = won / won.sum(axis=1, keepdims=True)
            ended[fin] = True
            self._round[fin] -= 1  # a finished game keeps the number of its last round
            if not self.auto_reset:
                self._over[fin] = True
                g, starters = g[~over], starters[~over]
            else:  # new games: scores 0, round 1, seat 0 begins (rule 11)
                self._scores[fin] = 0
                self._round[fin] = 1
                starters[over] = 0
        if g.size:
            self._deal(g, starters)

    # ------------------------------------------------------------------ dealing

    def _new_games(self, g: np.ndarray) -> None:
        """Start new games in ``g``: scores 0, round 1, seat 0 begins (rule 11)."""
        self._scores[g] = 0
        self._round[g] = 1
        self._over[g] = False
        self._deal(g, np.zeros(g.size, dtype=np.int64))

    def _deal(self, g: np.ndarray, starters: np.ndarray) -> None:
        """Rule 2 for the games ``g``: shuffle the 56 cards, deal ``hand_size`` to each
        seat, turn the next card up; the rest is the draw pile (its last card drawn first,
        as the engine deals)."""
        k, nseat, h = g.size, self.num_players, self._hand_size
        if self._deal_keys is None:
            keys = self._rng.bit_generator.random_raw((k, DECK_SIZE))
        else:
            keys = _keyed_raw(self._deal_keys[g], self._deals[g])
        keys &= _KEY_HIGH
        keys |= _KEY_CARDS
        keys.sort(axis=1)
        decks = (keys & _KEY_LOW).astype(np.int8)
        dealt = nseat * h
        per_seat = self._deal_rows[: k * dealt] + decks[:, :dealt].reshape(-1)
        counts = np.bincount(per_seat, minlength=k * nseat * (_V + 1)).reshape(k, nseat, _V + 1)
        rows = np.zeros((k, nseat, _SEAT_COLUMNS), dtype=np.int8)
        rows[:, :, _HAND : _HAND + _V] = counts[:, :, 1:]
        rows[:, :, _SIZE] = h
        self._seats[g] = rows
        self._draw[g, : self._undealt] = decks[:, dealt : DECK_SIZE - 1]
        self._draw_len[g] = self._undealt
        top = decks[:, DECK_SIZE - 1].astype(np.int64)
        self._discard[g, 0] = top
        self._discard_len[g] = 1
        self._top[g] = top
        discarded = np.zeros((k, _V), dtype=np.int8)
        discarded[np.arange(k), top - 1] = 1
        self._discard_counts[g] = discarded
        self._quit_bits[g] = 0
        self._in_round[g] = nseat
        self._starter[g] = starters
        self._cp[g] = starters
        self._last[g] = -1
        self._history_known[g] = True
        self._deals[g] += 1
        if self._loaded_rng:
            for i in g.tolist():
                self._loaded_rng.pop(i, None)

    def reset(self, games: np.ndarray | Sequence[int] | None = None) -> None:
        """Start new games: all of them, or those at the indices (or the ``True`` entries
        of a boolean mask) ``games``. For batches without ``auto_reset``."""
        if games is None:
            g = self._ar
        else:
            sel = np.asarray(games)
            if sel.dtype == bool and sel.shape == (self.num_games,):
                g = np.flatnonzero(sel)
            else:
                try:
                    g = np.unique(self.checked_games(sel))
                except ValueError:
                    raise ValueError(
                        f"games must be game indices 0..{self.num_games - 1} or a boolean mask of shape "
                        f"({self.num_games},), got {brief(games)}"
                    ) from None
        self._new_games(g)
        ended = self.terminated.copy()  # the other games keep what their last step said
        ended[g] = False
        self._publish(ended)

    # ------------------------------------------------------------------ observing

    def observation(
        self, version: int = 0, seats: np.ndarray | None = None, games: np.ndarray | None = None
    ) -> np.ndarray:
        """What each game's current player sees (or the seat ``seats[i]`` of game ``i``):
        ``(N, 52)`` float32 for ``version`` 0, ``(N, 175)`` for version 1, row ``i`` equal
        to ``encode(game_i, seat)`` / ``encode_v1(game_i, seat)`` of ``llama_env.observation``.
        Only public information and the seat's own hand go in. With ``games`` (``(K,)``
        game indices) only those games are observed, row ``k`` for game ``games[k]`` (and
        ``seats``, if given, has shape ``(K,)``): the cost follows the rows asked for."""
        version = check_obs_version(version)
        plan = self._plans.get(version)
        if plan is None:
            plan = self._plans[version] = _Plan(obs_spec(version), self)
        g = None if games is None else self.checked_games(games)
        rows = self.num_games if g is None else g.size
        if seats is None:
            seat = self._cp if g is None else self._cp[g]
            me = self._me if g is None else self._me[g]
        else:
            seat = np.asarray(seats)
            if seat.shape != (rows,) or seat.dtype.kind not in "iu":
                raise ValueError(f"seats must be an integer array of shape ({rows},), got {brief(seats)}")
            if ((seat < 0) | (seat >= self.num_players)).any():
                raise ValueError(f"seats must be seats 0..{self.num_players - 1}, got {brief(seats)}")
            seat = seat.astype(np.int64)
            at = self._ar if g is None else g
            me = np.take(self._seat_rows, at * self.num_players + seat, axis=0)
        return plan.write(_Seen(self, seat, me, g))

    # ------------------------------------------------------------------ snapshots

    def snapshot(self, i: int) -> dict[str, Any]:
        """Game ``i`` in the engine's snapshot format (:meth:`LlamaGame.to_dict`):
        ``LlamaGame.from_dict(batch.snapshot(i))`` is that game, and plays on as the batch
        would until its next deal. The generator state it names is the one the snapshot it
        was loaded from named, until the batch deals that game; after that, a state derived
        from the batch's seed, the game and its deals (the batch deals from its own)."""
        if not is_int(i) or not 0 <= i < self.num_games:
            raise ValueError(f"game must be an index 0..{self.num_games - 1}, got {brief(i)}")
        i = int(i)
        seats = self._seats[i]
        hands = [[c + 1 for c, k in enumerate(counts) for _ in range(k)] for counts in seats[:, :_V].tolist()]
        quit_ = self._quit_of[self._quit_bits[i]].tolist()
        last = int(self._last[i])
        draw_len, discard_len = int(self._draw_len[i]), int(self._discard_len[i])
        history = None
        if self._history_known[i]:
            history = {
                "moves": discard_len - 1 + self._undealt - draw_len + sum(quit_),
                "played": seats[:, _PLAYED : _PLAYED + _V].tolist(),
                "drew_on": seats[:, _DREW : _DREW + _V].tolist(),
                "quit_on": seats[:, _QUIT_ON].tolist(),
                "quit_at": seats[:, _QUIT_AT].tolist(),
            }
        return {
            "num_players": self.num_players,
            "scores": self._scores[i].tolist(),
            "hands": hands,
            "draw_pile": self._draw[i, :draw_len].tolist(),
            "discard_pile": self._discard[i, :discard_len].tolist(),
            "quit": quit_,
            "current_player": int(self._cp[i]),
            "round": int(self._round[i]),
            "game_over": bool(self._over[i]),
            **self.rules.options(),
            "starter": int(self._starter[i]),
            "last_player": None if last < 0 else last,
            "history": history,
            "rng_state": self._rng_state(i),
        }

    def _rng_state(self, i: int) -> Any:
        state = self._loaded_rng.get(i)
        if state is not None:
            return copy.deepcopy(state)
        return seeded_generator(self._key << 128 | i << 64 | int(self._deals[i])).bit_generator.state

    @classmethod
    def from_snapshots(
        cls,
        snapshots: Sequence[dict[str, Any]],
        *,
        seed: int | np.random.Generator | None = None,
        auto_reset: bool = True,
    ) -> BatchGame:
        """A batch of the games ``snapshots`` describe (:meth:`LlamaGame.to_dict`
        output, or anything ``LlamaGame.from_dict`` accepts), in that order. Each is
        checked as ``from_dict`` checks it; all must share the table size and rule options.
        A ``ValueError`` names the first snapshot that is refused. ``seed`` seeds the
        generator of the batch's deals. Finished games stay over until a step (with
        ``auto_reset``) or :meth:`reset` starts them anew."""
        if not isinstance(snapshots, (list, tuple)) or not snapshots:
            raise ValueError(f"snapshots must be a non-empty list of game snapshots, got {brief(snapshots)}")
        canon: list[dict[str, Any]] = []
        named_rng: list[bool] = []
        rules = None
        for i, d in enumerate(snapshots):
            try:
                game = LlamaGame.from_dict(d, rng=0)
            except ValueError as exc:
                raise ValueError(f"snapshot {i}: {exc}") from None
            if rules is None:
                rules = game.rules
            elif game.rules != rules:
                raise ValueError(
                    f"snapshot {i} is for {game.rules.brief()}, snapshot 0 for {rules.brief()}: "
                    "one batch holds games of one table size and rule options"
                )
            c = game.to_dict()
            if c["round"] > _MAX_INT or max(c["scores"]) > _MAX_INT:
                raise ValueError(f"snapshot {i}: a round or score beyond {_MAX_INT} is more than a batch holds")
            canon.append(c)
            named_rng.append(d.get("rng_state") is not None)
        batch = cls.__new__(cls)
        batch._setup(len(canon), game.rules, seed, auto_reset)
        for i, c in enumerate(canon):
            batch._load(i, c, named_rng[i])
        batch._publish(np.zeros(batch.num_games, dtype=bool))
        return batch

    @classmethod
    def from_worlds(
        cls,
        snapshots: Sequence[dict[str, Any]],
        of: np.ndarray | Sequence[int],
        hands: np.ndarray,
        draw_piles: Sequence[Sequence[int]] | np.ndarray,
        *,
        seed: int | np.random.Generator | None = None,
        auto_reset: bool = True,
        deal_keys: np.ndarray | Sequence[int] | None = None,
    ) -> BatchGame:
        """A batch of *worlds*: game ``i`` is the game ``snapshots[of[i]]`` describes with
        its cards dealt anew, its seats holding ``hands[i]`` (``(players, 7)`` cards of each
        value, index 0 = value 1) and its draw pile ``draw_piles[i]`` (card codes, the last
        drawn first). Everything else (scores, the discard pile, the round's public record,
        whose turn it is, the generator state a snapshot names) is the snapshot's.

        How a search loads many games that one seat cannot tell apart (``agents.search``):
        the snapshots are checked once each, as :meth:`from_snapshots` checks them, the
        worlds with array operations. A world must keep each seat's hand size, the draw
        pile's length and the cards of each value the snapshot's hands and draw pile hold
        between them, so that all the snapshot's record says stays true; a ``ValueError``
        names the first world that does not, or ``of`` that names no snapshot.

        ``deal_keys`` (one non-negative integer per game; ``None``: the batch's generator,
        ``seed``, deals them all) gives each game deals of its own: its next deals are a
        function of its key and its count of deals alone, so games of one key (the moves
        tried in one world) meet the same next deal, and a game deals alike in any batch
        (a search split into several batches finds what it finds in one)."""
        base = cls.from_snapshots(snapshots, seed=0, auto_reset=auto_reset)  # the snapshots checked
        k, p = base.num_games, base.num_players
        at = np.asarray(of)
        if at.ndim != 1 or at.size == 0 or at.dtype.kind not in "iu" or ((at < 0) | (at >= k)).any():
            raise ValueError(f"of must be a non-empty array of snapshot indices 0..{k - 1}, got {brief(of)}")
        at = at.astype(np.int64)
        n = at.size
        held = np.asarray(hands)
        if held.shape != (n, p, _V) or held.dtype.kind not in "iu" or (held < 0).any():
            raise ValueError(
                f"hands must be ({n}, {p}, {_V}) non-negative integers: cards of each value per seat, "
                f"got {brief(hands)} of shape {held.shape}"
            )
        if not hasattr(draw_piles, "__len__") or len(draw_piles) != n:
            raise ValueError(f"draw_piles must hold one draw pile per world ({n}), got {brief(draw_piles)}")
        piles = np.zeros((n, DECK_SIZE), dtype=np.int8)
        lengths = base._draw_len[at].tolist()
        for i, pile in enumerate(draw_piles):
            codes = np.asarray(pile)
            if codes.shape != (lengths[i],) or (codes.size and codes.dtype.kind not in "iu") or not _codes(codes):
                raise ValueError(
                    f"world {i}: its draw pile must be {lengths[i]} card codes 1..{_V}, as in snapshot "
                    f"{int(at[i])}, got {brief(pile)}"
                )
            piles[i, : codes.size] = codes
        then = base._seats[at][:, :, _HAND : _HAND + _V].astype(np.int64)
        cards = held.sum(axis=1) + _value_counts(piles)
        cards_then = then.sum(axis=1) + _value_counts(base._draw[at])
        bad = (held.sum(axis=2) != then.sum(axis=2)).any(axis=1) | (cards != cards_then).any(axis=1)
        if bad.any():
            i = int(np.argmax(bad))
            raise ValueError(
                f"world {i} does not deal the cards of snapshot {int(at[i])} anew: each hand must keep its size "
                f"{then[i].sum(axis=1).tolist()}, and the hands and the draw pile must hold "
                f"{cards_then[i].tolist()} cards of each value between them"
            )
        batch = cls.__new__(cls)
        batch._setup(n, base.rules, seed, auto_reset)  # as from_snapshots would: the same deals
        for name in _PER_GAME:
            getattr(batch, name)[...] = getattr(base, name)[at]
        batch._seats[:, :, _HAND : _HAND + _V] = held
        batch._draw[...] = piles
        batch._loaded_rng = {i: base._loaded_rng[g] for i, g in enumerate(at.tolist()) if g in base._loaded_rng}
        if deal_keys is not None:
            keys = np.asarray(deal_keys)
            if keys.shape != (n,) or keys.dtype.kind not in "iu" or (keys < 0).any():
                raise ValueError(
                    f"deal_keys must be {n} non-negative integers, one per world, got {brief(deal_keys)} of shape "
                    f"{keys.shape}"
                )
            batch._deal_keys = keys.astype(np.uint64)
        batch._publish(np.zeros(n, dtype=bool))
        return batch

    def _load(self, i: int, d: dict[str, Any], keep_rng: bool) -> None:
        """Write the checked, canonical snapshot ``d`` into game ``i``."""
        seats = self._seats[i]
        for seat, hand in enumerate(d["hands"]):
            seats[seat, _HAND : _HAND + _V] = np.bincount(np.asarray(hand, dtype=np.int64), minlength=_V + 1)[1:]
            seats[seat, _SIZE] = len(hand)
        draw, discard = d["draw_pile"], d["discard_pile"]
        self._draw[i, : len(draw)] = draw
        self._draw_len[i] = len(draw)
        self._discard[i, : len(discard)] = discard
        self._discard_len[i] = len(discard)
        self._top[i] = discard[-1]
        self._discard_counts[i] = np.bincount(np.asarray(discard, dtype=np.int64), minlength=_V + 1)[1:]
        self._quit_bits[i] = sum(1 << s for s, q in enumerate(d["quit"]) if q)
        self._in_round[i] = d["quit"].count(False)
        self._cp[i] = d["current_player"]
        self._starter[i] = d["starter"]
        self._last[i] = -1 if d["last_player"] is None else d["last_player"]
        self._scores[i] = d["scores"]
        self._round[i] = d["round"]
        self._over[i] = d["game_over"]
        history = d["history"]
        self._history_known[i] = history is not None
        if history is not None:
            seats[:, _PLAYED : _PLAYED + _V] = history["played"]
            seats[:, _DREW : _DREW + _V] = history["drew_on"]
            seats[:, _QUIT_ON] = history["quit_on"]
            seats[:, _QUIT_AT] = history["quit_at"]
            seats[:, _DRAWS] = [sum(row) for row in history["drew_on"]]
        if keep_rng:
            self._loaded_rng[i] = d["rng_state"]

    def __getstate__(self) -> dict[str, Any]:
        """A copy (``copy.deepcopy``) or a pickle keeps the seat arrays once: their two
        flat views (:meth:`__setstate__` makes them again) would come back as arrays of
        their own, and a step would write the hands where the masks and snapshots do not
        read them. The observation plans are left out too (their readers are lambdas,
        which do not pickle); :meth:`observation` makes them again."""
        state = self.__dict__.copy()
        del state["_seat_flat"], state["_seat_rows"], state["_plans"]
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._seat_flat = self._seats.reshape(-1)
        self._seat_rows = self._seats.reshape(-1, _SEAT_COLUMNS)
        self._plans = {}

    def __repr__(self) -> str:
        return f"BatchGame(num_games={self.num_games}, rules={self.rules!r}, auto_reset={self.auto_reset})"


# --------------------------------------------------------------------------- the observation


class _Seen:
    """What the observed seats see, for the fields' readers: the observed games ``g``
    (``None``: all of them), their ``seat`` ``(n,)``, its rows of the seat table ``me``
    ``(n, columns)``, and the other seats in turn order from each seat's left (gathered
    on first use). :meth:`at` takes a per-game array's rows of the observed games."""

    def __init__(self, batch: BatchGame, seat: np.ndarray, me: np.ndarray, games: np.ndarray | None = None) -> None:
        self.b = batch
        self.seat = seat
        self.me = me
        self.g = games
        self.n = batch.num_games if games is None else games.size
        self.games = batch._ar if games is None else games
        self._others_flat: np.ndarray | None = None
        self._their_rows: np.ndarray | None = None

    def at(self, array: np.ndarray) -> np.ndarray:
        """The rows of a per-game array ``(N, ...)`` for the observed games."""
        return array if self.g is None else array[self.g]

    @property
    def others_flat(self) -> np.ndarray:
        """``(n, players - 1)``: the other seats' indices into ``(games x seats)`` arrays."""
        if self._others_flat is None:
            b = self.b
            self._others_flat = np.take(b._others, self.seat, axis=0) + (self.games * b.num_players)[:, None]
        return self._others_flat

    @property
    def their_rows(self) -> np.ndarray:
        """The other seats' rows of the seat table, ``(n, players - 1, columns)``."""
        if self._their_rows is None:
            rows = np.take(self.b._seat_rows, self.others_flat.reshape(-1), axis=0)
            self._their_rows = rows.reshape(self.n, self.b.num_players - 1, _SEAT_COLUMNS)
        return self._their_rows

    def theirs(self, column: int, width: int = 1) -> np.ndarray:
        """The other seats' entries of the seat table, ``(n, players - 1)`` or ``(n,
        players - 1, width)``."""
        if width == 1 and self._their_rows is None:
            return np.take(self.b._seat_flat, self.others_flat * _SEAT_COLUMNS + column)
        block = self.their_rows[:, :, column : column + width]
        return block[:, :, 0] if width == 1 else block

    def their_scores(self) -> np.ndarray:
        return np.take(self.b._scores, self.others_flat)

    def my_score(self) -> np.ndarray:
        return np.take(self.b._scores, self.games * self.b.num_players + self.seat)

    def mine_quit(self) -> np.ndarray:
        return (self.at(self.b._quit_bits) >> self.seat & 1).astype(bool)

    def theirs_in(self) -> np.ndarray:
        b = self.b
        return np.take(b._others_in, self.seat << b.num_players | self.at(b._quit_bits), axis=0)

    def round_moves(self) -> np.ndarray:
        b, at = self.b, self.at
        return at(b._discard_len) - 1 + (b._undealt - at(b._draw_len)) + (b.num_players - at(b._in_round))


Reader = Callable[[_Seen], np.ndarray]

_SEAT_FIELDS: dict[str, tuple[bool, int, int]] = {
    "hand": (False, _HAND, _V),
    "hand_size": (False, _SIZE, 1),
    "opp_hand_size": (True, _SIZE, 1),
    "opp_played": (True, _PLAYED, _V),
    "opp_draws": (True, _DRAWS, 1),
    "opp_drew_on": (True, _DREW, _V),
    "opp_quit_on": (True, _QUIT_ON, 1),
    "opp_quit_at": (True, _QUIT_AT, 1),
}
"""The observation fields whose natural values are columns of the seat table as they
stand, by name: (the other seats' or the observer's, first column, width). Their readers
are made from this; :class:`_Plan` gathers those of them written as a count over a scale
for all the seats in one take."""


def _seat_reader(theirs: bool, column: int, width: int) -> Reader:
    if theirs:
        return lambda s: s.theirs(column, width)
    return lambda s: s.me[:, column] if width == 1 else s.me[:, column : column + width]


_READERS: dict[str, Reader] = {
    **{name: _seat_reader(*where) for name, where in _SEAT_FIELDS.items()},
    # version 0 (observation.FIELDS): natural values, as each field's get() reads the engine
    "hand_penalty": lambda s: _penalties(s.me[:, _HAND : _HAND + _V]),
    "top_card": lambda s: s.at(s.b._top),
    "discarded": lambda s: s.at(s.b._discard_counts),
    "draw_pile": lambda s: s.at(s.b._draw_len),
    "can_draw": lambda s: ~s.mine_quit() & (s.at(s.b._draw_len) > 0) & (s.at(s.b._in_round) > 1),
    "opp_present": lambda s: np.ones((s.n, s.b.num_players - 1), dtype=bool),
    "opp_in_round": lambda s: s.theirs_in(),
    "opp_score": lambda s: s.their_scores(),
    "my_score": lambda s: s.my_score(),
    "num_players": lambda s: np.full(s.n, s.b.num_players),
    "end_score": lambda s: np.full(s.n, s.b._end),
    # version 1 (observation.HISTORY_FIELDS); a one-hot value that is unset reads first - 1
    "last_player": lambda s: np.where(s.at(s.b._last) < 0, -1, (s.at(s.b._last) - s.seat) % s.b.num_players),
    "round": lambda s: np.minimum(s.at(s.b._round), MAX_ROUND),
    "round_moves": lambda s: s.round_moves(),
}
"""Each observation field's natural value in every game, by the field's name: the batched
``Field.get``. A field the specs gain must be added here (a test holds the two equal)."""

_CONSTANT = frozenset({"opp_present", "num_players", "end_score"})
"""Fields whose value is the same in every state of a batch: written once per batch."""

Writer = Callable[[np.ndarray, np.ndarray], None]


def _exact(unit: Count) -> np.ndarray:
    """The entries the scalar encoders write for the values ``0..most``: ``k / scale``
    in double precision, rounded to float32."""
    return np.array([k / unit.scale for k in range(unit.most + 1)], dtype=np.float32)


def _divides(unit: Unit) -> bool:
    """Whether a float32 division by the scale writes a count unit's exact entries."""
    return isinstance(unit, Count) and np.array_equal(
        np.arange(unit.most + 1, dtype=np.float32) / np.float32(unit.scale), _exact(unit)
    )


def _writer(unit: Unit, end_score: int) -> Writer:
    """A function writing the unit's ``entries`` for an array of natural values (one row
    per game) into an ``(N, count)`` block of the observation: the same float32 bits as the
    scalar encoders write."""
    if isinstance(unit, Count):
        scale = np.float32(unit.scale)
        if _divides(unit):

            def count(v: np.ndarray, out: np.ndarray) -> None:
                np.divide(v.reshape(out.shape), scale, out=out, dtype=np.float32)

            return count
        exact = _exact(unit)
        return lambda v, out: out.__setitem__(Ellipsis, np.take(exact, v).reshape(out.shape))
    if isinstance(unit, Score):
        return lambda v, out: out.__setitem__(Ellipsis, (v / end_score).reshape(out.shape))
    if isinstance(unit, Flag):
        return lambda v, out: out.__setitem__(Ellipsis, v.reshape(out.shape))
    if isinstance(unit, OneHot):
        if isinstance(unit.empty, int) and unit.empty != unit.first - 1:
            raise NotImplementedError(f"a one-hot unit whose unset value is {unit.empty}, not first - 1")
        rows = np.vstack([np.eye(unit.count, dtype=np.float32), np.zeros(unit.count, dtype=np.float32)])
        first = unit.first
        # the unset value, first - 1, reads the last row: zeros
        return lambda v, out: out.__setitem__(Ellipsis, np.take(rows, v - first, axis=0).reshape(out.shape))
    raise NotImplementedError(f"the batch has no writer for the unit {unit!r}")


class _Plan:
    """How to write one observation spec for one batch: the constant fields once, into a
    template row; per call the counts of the seat table (:data:`_SEAT_FIELDS`) of every
    seat in one gather and one division, then each other field's block."""

    def __init__(self, spec: ObsSpec, batch: BatchGame) -> None:
        self.size = spec.size
        self.blocks: list[tuple[int, int, Reader, Writer]] = []
        template = np.zeros((1, spec.size), dtype=np.float32)
        probe = _Seen(batch, batch._cp[:1], batch._me[:1], np.zeros(1, dtype=np.int64))
        others = batch.num_players - 1
        source: list[int] = []  # columns of [the observer's row, the others' rows] ...
        target: list[int] = []  # ... and where each goes in the observation ...
        scale: list[float] = []  # ... divided by this
        for f in spec.fields:
            read = _READERS.get(f.name)
            if read is None:
                raise NotImplementedError(f"the batch cannot read the observation field {f.name!r}: add it to _READERS")
            start = spec.slices[f.name].start
            count = f.unit.width * (others if f.per_other else 1)
            write = _writer(f.unit, batch._end)
            if f.name in _CONSTANT:
                write(read(probe), template[:, start : start + count])
            elif f.name in _SEAT_FIELDS and _divides(f.unit):
                theirs, column, width = _SEAT_FIELDS[f.name]
                for k in range(others if theirs else 1):
                    row = (1 + k if theirs else 0) * _SEAT_COLUMNS + column
                    source += range(row, row + width)
                    target += range(start + k * width, start + (k + 1) * width)
                    scale += [f.unit.scale] * width  # type: ignore[attr-defined]
            else:
                self.blocks.append((start, count, read, write))
        self.template = template
        self.source = np.array(source, dtype=np.int64)
        self.target = np.array(target, dtype=np.int64)
        self.scale = np.array(scale, dtype=np.float32)
        self.their_width = others * _SEAT_COLUMNS

    def write(self, seen: _Seen) -> np.ndarray:
        out = np.repeat(self.template, seen.n, axis=0)
        if self.source.size:
            rows = np.concatenate([seen.me, seen.their_rows.reshape(seen.n, self.their_width)], axis=1)
            out[:, self.target] = np.divide(np.take(rows, self.source, axis=1), self.scale, dtype=np.float32)
        for start, count, read, write in self.blocks:
            write(read(seen), out[:, start : start + count])
        return out
