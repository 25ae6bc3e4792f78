"""The batched engine (``llama_env.batch``) plays exactly as the scalar engine.

Thousands of random engine states at every table size and in every phase (a player left
alone, an empty draw pile, the last round of a game, games already over, snapshots
without a history or a generator) are loaded into batches, and the batch and the engine
are stepped with the same random legal actions: within a round every snapshot, mask,
current player, observation (each version) and reward must be equal. At a round's end
the scores, the round number, the starter and the end of the game must be equal and the
batch's new deal must be a valid deal (the batch shuffles with its own generator, so
the cards differ); the engine then carries on from the batch's snapshot. The batched
observation leaks nothing hidden, a batch deals as the engine deals (chi-square), bad
input is refused with the batch untouched, and the state is small.
"""

from __future__ import annotations

import ast
import math
import tracemalloc
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import make_state
from test_properties import _reshuffle_hidden

from llama_env.batch import BatchGame
from llama_env.engine import (
    DECK_SIZE,
    NUM_ACTIONS,
    NUM_CARD_VALUES,
    IllegalActionError,
    LlamaGame,
    Rules,
    max_hand_size,
)
from llama_env.observation import SPECS, encoder
from llama_env.rewards import rewards_for

ROOT = Path(__file__).resolve().parents[2]
VERSIONS = tuple(SPECS)


def _rule_set(n: int) -> list[Rules]:
    """Rules that reach every phase: the standard game, a long one (high scores, late
    rounds), games that end after a round or two, and deals that leave a short draw pile
    (or none: 55 = 5 x 11)."""
    return [
        Rules(n),
        Rules(n, end_score=300),
        Rules(n, end_score=5),
        Rules(n, end_score=1, hand_size=1),
        Rules(n, end_score=15, hand_size=max_hand_size(n)),
    ]


def _pick(g: LlamaGame, rng: np.random.Generator, quit_rate: float) -> int:
    legal = g.legal_actions()
    if len(legal) > 1 and rng.random() >= quit_rate:
        legal = legal[:-1]  # quit is always the last legal action
    return legal[int(rng.integers(len(legal)))]


def _random_states(n: int, count: int, seed: int) -> list[tuple[Rules, dict[str, Any]]]:
    """``count`` snapshots of games at ``n`` players, played from a fresh game by random
    moves that quit rarely, sometimes or often, into a random round (up to the eighth, if
    the game lasts) and on for a random number of moves."""
    rng = np.random.default_rng(seed)
    rule_set = _rule_set(n)
    out = []
    for k in range(count):
        rules = rule_set[k % len(rule_set)]
        g = LlamaGame(rules=rules, rng=int(rng.integers(2**31)), random_first_player=bool(k % 3 == 0))
        quit_rate = (0.02, 0.3, 0.8)[int(rng.integers(3))]
        target_round, moves = int(rng.integers(1, 9)), int(rng.integers(0, 60))
        while not g.game_over and (g.round < target_round or moves):
            moves -= g.round >= target_round
            g.step(_pick(g, rng, quit_rate))
        d = g.to_dict()
        if k % 17 == 0:
            d["history"] = None  # written by hand, or older: the engine knows it again from the next deal
        if k % 19 == 0:
            del d["rng_state"]
        out.append((rules, d))
    return out


def _assert_fresh_deal(snap: dict[str, Any], rules: Rules) -> None:
    """A valid deal (rule 2) that begins a round: the engine accepts it, every seat holds
    ``hand_size`` cards, one card is face up, the rest is the draw pile, nobody has moved."""
    LlamaGame.from_dict(snap)  # the deck complete, the piles legal, the record consistent
    n, h = rules.num_players, rules.hand_size
    assert [len(hand) for hand in snap["hands"]] == [h] * n
    assert len(snap["discard_pile"]) == 1
    assert len(snap["draw_pile"]) == DECK_SIZE - n * h - 1
    assert snap["quit"] == [False] * n
    assert snap["last_player"] is None
    assert snap["current_player"] == snap["starter"]
    zeros = [[0] * NUM_CARD_VALUES for _ in range(n)]
    assert snap["history"] == {"moves": 0, "played": zeros, "drew_on": zeros, "quit_on": [0] * n, "quit_at": [0] * n}


def _keyed(snaps: list[dict[str, Any]], keys: np.ndarray, seed: int = 0, auto_reset: bool = True) -> BatchGame:
    """A batch of ``snaps`` as they are, each game dealing its later rounds from its key of
    ``keys`` (``from_worlds``' ``deal_keys``, as the search agent's play-outs deal)."""
    hands = np.array([[np.bincount(h, minlength=8)[1:] for h in d["hands"]] for d in snaps], dtype=np.int64)
    of = np.arange(len(snaps))
    piles = [d["draw_pile"] for d in snaps]
    return BatchGame.from_worlds(snaps, of, hands, piles, seed=seed, auto_reset=auto_reset, deal_keys=keys)


def _lockstep(
    rules: Rules,
    snaps: list[dict[str, Any]],
    auto_reset: bool,
    steps: int,
    seed: int,
    quit_rate: float = 0.25,
    deal_keys: bool = False,
) -> Counter:
    """Step a batch of ``snaps`` and the engine side by side, with random legal moves that
    quit at ``quit_rate``; return what was seen. ``deal_keys``: the batch deals from a key
    per game (:func:`_keyed`)."""
    rng = np.random.default_rng(seed)
    if deal_keys:
        batch = _keyed(snaps, rng.integers(2**63, size=len(snaps)), seed, auto_reset)
    else:
        batch = BatchGame.from_snapshots(snaps, seed=seed, auto_reset=auto_reset)
    games = [LlamaGame.from_dict(d, rng=0) for d in snaps]
    for i, d in enumerate(snaps):  # a snapshot without a generator: the batch names its own
        if d.get("rng_state") is None:
            games[i] = LlamaGame.from_dict(batch.snapshot(i))
    encoders = {v: encoder(v)[0] for v in VERSIONS}
    terminated = np.array([g.game_over for g in games])
    seen: Counter = Counter()
    for _ in range(steps):
        np.testing.assert_array_equal(batch.terminated, terminated)
        np.testing.assert_array_equal(batch.legal_action_mask, [g.legal_mask() for g in games])
        np.testing.assert_array_equal(batch.current_player, [g.current_player for g in games])
        for v in VERSIONS:
            np.testing.assert_array_equal(batch.observation(v), [encoders[v](g, g.current_player) for g in games])
        actions = np.zeros(len(games), dtype=np.int64)
        for i, g in enumerate(games):
            d = g.to_dict()
            assert batch.snapshot(i) == d, i
            if not g.game_over:
                actions[i] = _pick(g, rng, quit_rate)
                seen["lone"] += g.players_in_round == 1
                seen["empty pile"] += not g.draw_pile
                seen["no history"] += d["history"] is None
                seen["late round"] += g.round >= 4
                seen["last card, 10+ points"] += (
                    g.scores[g.current_player] >= 10 and g.hand_size_of(g.current_player) == 1
                )
        rewards = batch.step(actions)
        terminated = np.zeros(len(games), dtype=bool)
        for i, g in enumerate(games):
            if g.game_over:  # waiting: its action is ignored; auto_reset starts it anew
                assert not rewards[i].any()
                if auto_reset:
                    _assert_fresh_deal(batch.snapshot(i), rules)
                    games[i] = LlamaGame.from_dict(batch.snapshot(i))
                    seen["restarted"] += 1
                else:
                    terminated[i] = True
                continue
            result = g.step(int(actions[i]))
            expected = [0.0] * rules.num_players if result is None else rewards_for(result, "game")
            np.testing.assert_array_equal(rewards[i], np.array(expected, dtype=np.float32))
            if result is None:
                continue
            snap = batch.snapshot(i)
            seen["round end"] += 1
            if result.game_over:
                seen["game end"] += 1
                terminated[i] = True
                if not auto_reset:
                    continue  # no deal: the whole snapshot is compared at the top of the loop
                assert (snap["round"], snap["scores"], snap["starter"]) == (1, [0] * rules.num_players, 0)
            else:
                d = g.to_dict()
                for key in ("scores", "round", "starter", "current_player", "game_over"):
                    assert snap[key] == d[key], (i, key)
            _assert_fresh_deal(snap, rules)
            games[i] = LlamaGame.from_dict(snap)
    return seen


@pytest.mark.parametrize("n", [2, 3, 4, 5, 6])
def test_the_batch_steps_as_the_engine_from_random_states(n):
    states = _random_states(n, 400, seed=n)
    seen: Counter = Counter()
    for r, rules in enumerate(_rule_set(n)):
        snaps = [d for rl, d in states if rl == rules]
        half = len(snaps) // 2
        seen += _lockstep(rules, snaps[:half], auto_reset=False, steps=30, seed=10 * n + r, quit_rate=0.1)
        seen += _lockstep(rules, snaps[half:], auto_reset=True, steps=30, seed=20 * n + r, quit_rate=0.5)
    seen["loaded over"] = sum(d["game_over"] for _, d in states)
    # every phase was met, often (a seat down to one card holding 10 points or more, at
    # least once: the thresholds of rule 10 are scripted below)
    phases = ("lone", "empty pile", "round end", "game end", "restarted", "loaded over", "no history", "late round")
    assert all(seen[phase] >= 10 for phase in phases) and seen["last card, 10+ points"], seen


@pytest.mark.parametrize("n", [2, 4, 6])
def test_a_batch_dealing_from_keys_steps_as_the_engine(n):
    """The search's play-outs deal from a key per world (``deal_keys``): the batch plays
    those games as the engine does, its deals of later rounds and new games whole."""
    states = _random_states(n, 200, seed=n)
    seen: Counter = Counter()
    for r, rules in enumerate(_rule_set(n)):
        snaps = [d for rl, d in states if rl == rules]
        half = len(snaps) // 2
        for part, auto_reset, quit_rate, seed in ((snaps[:half], False, 0.1, 10), (snaps[half:], True, 0.5, 20)):
            seen += _lockstep(rules, part, auto_reset, steps=30, seed=seed * n + r, quit_rate=quit_rate, deal_keys=True)
    assert seen["round end"] >= 50 and seen["restarted"] >= 5, seen


@pytest.mark.parametrize("n", [2, 4, 6])
def test_observing_some_games_gives_their_rows(n):
    """``observation(version, seats, games)`` is the full observation's rows of ``games``
    (any order, repeats allowed), for the players to act or for given seats."""
    snaps = [d for rules, d in _random_states(n, 500, seed=70 + n) if rules == Rules(n)]
    batch = BatchGame.from_snapshots(snaps, seed=0)
    rng = np.random.default_rng(n)
    games = rng.integers(len(snaps), size=40)
    seats = rng.integers(n, size=len(snaps))
    for v in VERSIONS:
        np.testing.assert_array_equal(batch.observation(v, games=games), batch.observation(v)[games])
        np.testing.assert_array_equal(batch.observation(v, seats[games], games), batch.observation(v, seats)[games])
        assert batch.observation(v, games=np.zeros(0, dtype=int)).shape == (0, SPECS[v].size)
    with pytest.raises(ValueError, match=rf"games must be game indices 0..{len(snaps) - 1}"):
        batch.observation(0, games=[len(snaps)])
    with pytest.raises(ValueError, match=r"seats must be an integer array of shape \(40,\)"):
        batch.observation(0, seats, games)


@pytest.mark.parametrize("n", [3, 5])
@pytest.mark.parametrize("auto_reset", [False, True])
def test_where_steps_only_the_games_it_marks(n, auto_reset):
    """``step(actions, where)`` moves the marked games as the engine moves them and leaves
    the others exactly as they were (a finished one is not started anew, an illegal action
    there is not read); ``hand_sizes`` and ``penalties`` read as the engine's."""
    snaps = [d for rules, d in _random_states(n, 750, seed=40 + n) if rules == Rules(n, end_score=5)]
    rng = np.random.default_rng(n)
    batch = BatchGame.from_snapshots(snaps, seed=1, auto_reset=auto_reset)
    for _ in range(20):
        games = [LlamaGame.from_dict(batch.snapshot(i)) for i in range(len(snaps))]
        assert batch.hand_sizes().tolist() == [[g.hand_size_of(s) for s in range(n)] for g in games]
        assert batch.penalties().tolist() == [[g.penalty(s) for s in range(n)] for g in games]
        some = rng.integers(len(games), size=7)
        assert batch.penalties(some).tolist() == [[games[i].penalty(s) for s in range(n)] for i in some]
        assert batch.hand_sizes(some).tolist() == [[games[i].hand_size_of(s) for s in range(n)] for i in some]
        where = rng.random(len(snaps)) < 0.5
        actions = np.full(len(snaps), 99)  # illegal everywhere it is not read
        for i, g in enumerate(games):
            if where[i] and not g.game_over:
                actions[i] = _pick(g, rng, 0.3)
        rewards = batch.step(actions, where)
        for i, g in enumerate(games):
            if not where[i]:
                assert batch.snapshot(i) == g.to_dict() and not rewards[i].any()
            elif not g.game_over:
                result = g.step(int(actions[i]))
                if result is None:
                    assert batch.snapshot(i) == g.to_dict()
    with pytest.raises(ValueError, match=r"where must be a boolean array of shape \(150,\)"):
        batch.step(actions, where.astype(int))
    with pytest.raises(ValueError, match=r"where must be a boolean array of shape \(150,\)"):
        batch.step(actions, where[:3])
    live = np.flatnonzero(~batch.game_over)
    with pytest.raises(IllegalActionError, match=rf"^game {live[0]}, seat"):
        batch.step(np.full(len(snaps), 99), ~batch.game_over)


@pytest.mark.parametrize("auto_reset", [False, True])
@pytest.mark.parametrize("score", [0, 1, 9, 10, 11, 35])
def test_going_out_at_each_marker_threshold(score, auto_reset):
    """Rules 8-12 at their thresholds: seat 1 plays its last card holding ``score``
    points; with 35 the round's penalties end the game."""
    d = make_state(num_players=3, hands=[[7, 7, 5], [3], [1, 6]], top=3, scores=[score, score, 4], current_player=1)
    _check_round_end(d, auto_reset, action=2)


@pytest.mark.parametrize("auto_reset", [False, True])
def test_a_round_in_which_nobody_played_passes_the_start_to_the_left(auto_reset):
    """Rule 11: everyone quits without a card played; the seat left of the starter begins."""
    d = make_state(
        num_players=4, hands=[[1], [2], [3, 4], [5]], top=7, quit=[True, False, True, True], current_player=1, starter=2
    )
    _check_round_end(d, auto_reset, action=8)


def _check_round_end(d: dict[str, Any], auto_reset: bool, action: int) -> None:
    rules = Rules(d["num_players"], end_score=d["end_score"], hand_size=d["hand_size"])
    g = LlamaGame.from_dict(d, rng=0)
    batch = BatchGame.from_snapshots([d, d], seed=1, auto_reset=auto_reset)
    rewards = batch.step(np.array([action, action]))
    result = g.step(action)
    assert result is not None
    np.testing.assert_array_equal(rewards[0], np.array(rewards_for(result, "game"), dtype=np.float32))
    snap = batch.snapshot(0)
    if result.game_over and not auto_reset:  # (``d`` names no generator: each side has its own)
        assert {**snap, "rng_state": None} == {**g.to_dict(), "rng_state": None}
        return
    if result.game_over:
        assert (snap["round"], snap["scores"], snap["starter"]) == (1, [0] * rules.num_players, 0)
    else:
        for key in ("scores", "round", "starter", "current_player", "game_over"):
            assert snap[key] == g.to_dict()[key], key
    _assert_fresh_deal(snap, rules)


def test_a_fresh_batch_plays_whole_games_as_the_engine():
    """From the batch's own deals: each round as the engine plays it, game after game."""
    rules = Rules(4)
    batch = BatchGame(32, rules=rules, seed=5)
    snaps = [batch.snapshot(i) for i in range(32)]
    for d in snaps:
        _assert_fresh_deal(d, rules)
        assert d["round"] == 1 and d["starter"] == 0
    seen = _lockstep(rules, snaps, auto_reset=True, steps=150, seed=6)
    assert seen["game end"] >= 20


def test_snapshots_round_trip_through_the_engine():
    snaps = [d for _, d in _random_states(3, 60, seed=11) if _ == Rules(3, end_score=5)]
    batch = BatchGame.from_snapshots(snaps, seed=0)
    again = BatchGame.from_snapshots([batch.snapshot(i) for i in range(len(snaps))], seed=0)
    for i in range(len(snaps)):
        assert again.snapshot(i) == batch.snapshot(i) == LlamaGame.from_dict(batch.snapshot(i)).to_dict()


def test_seeded_batches_are_reproducible():
    def play(seed: int) -> list[dict[str, Any]]:
        batch = BatchGame(32, 3, seed=seed)
        rng = np.random.default_rng(0)
        for _ in range(200):
            legal = batch.legal_action_mask
            batch.step(np.argmax(rng.random(legal.shape) + legal, axis=1))
        return [batch.snapshot(i) for i in range(32)]

    assert play(1) == play(1)
    assert play(1) != play(2)


# --------------------------------------------------------------------------- hidden information


@pytest.mark.parametrize("n", [2, 4, 6])
def test_batched_observations_never_leak_hidden_information(n):
    """The leak test of test_properties and test_history, batched: redeal what a seat
    cannot see (the others' hands, the draw pile's order) and its observation, in every
    version, stays the same; the same redeal seen from another seat does change."""
    rng = np.random.default_rng(n)
    changed = total = 0
    for rules in _rule_set(n):
        snaps = [d for rl, d in _random_states(n, 160, seed=100 + n) if rl == rules]
        games = [LlamaGame.from_dict(d, rng=0) for d in snaps]
        batch = BatchGame.from_snapshots(snaps)
        total += n * len(games)
        for observer in range(n):
            seats = np.full(len(games), observer)
            hidden = BatchGame.from_snapshots([_reshuffle_hidden(g, observer, rng).to_dict() for g in games])
            for v in VERSIONS:
                np.testing.assert_array_equal(batch.observation(v, seats), hidden.observation(v, seats))
            other = (seats + 1) % n
            changed += int((batch.observation(0, other) != hidden.observation(0, other)).any(axis=1).sum())
    assert changed > total // 3, (changed, total)  # guard: the redeal is visible to those who hold the cards


# --------------------------------------------------------------------------- the deal


def _chi_square(a: list[int], b: list[int]) -> tuple[float, int]:
    """Pearson's statistic of two samples' counts in the same categories (empty ones
    dropped), and its degrees of freedom."""
    pairs = [(x, y) for x, y in zip(a, b, strict=True) if x + y]
    total_a, total_b = sum(a), sum(b)
    stat = 0.0
    for x, y in pairs:
        expected_a = (x + y) * total_a / (total_a + total_b)
        expected_b = (x + y) * total_b / (total_a + total_b)
        stat += (x - expected_a) ** 2 / expected_a + (y - expected_b) ** 2 / expected_b
    return stat, len(pairs) - 1


def _critical(df: int, z: float = 3.09) -> float:
    """The chi-square value exceeded with probability 0.001 (Wilson and Hilferty)."""
    return df * (1 - 2 / (9 * df) + z * math.sqrt(2 / (9 * df))) ** 3


def _deal_features(snap: dict[str, Any]) -> dict[str, int]:
    hand = snap["hands"][0]
    return {
        "top": snap["discard_pile"][-1],
        "next": snap["draw_pile"][-1],
        "llamas": hand.count(7),
        "ones": hand.count(1),
        "distinct": len(set(hand)),
        "penalty": LlamaGame.from_dict(snap).penalty(0),
    }


def _same_deal_features(ours: list[dict[str, int]], theirs: list[dict[str, int]]) -> None:
    """Each feature of :func:`_deal_features` is distributed alike in both samples (chi-square)."""
    for feature in ours[0]:
        a, b = Counter(f[feature] for f in ours), Counter(f[feature] for f in theirs)
        cats = sorted(set(a) | set(b))
        stat, df = _chi_square([a[c] for c in cats], [b[c] for c in cats])
        assert stat < _critical(df), (feature, stat, df, a, b)


@pytest.mark.parametrize("n", [2, 5])
def test_a_random_deal_is_distributed_as_the_engines(n):
    """Chi-square of the batch's first deals against the engine's: the top card, the
    draw pile's next card, and seat 0's hand (llamas, ones, distinct values, penalty)."""
    count = 4000
    batch = BatchGame(count, n, seed=n)
    ours = [_deal_features(batch.snapshot(i)) for i in range(count)]
    rng = np.random.default_rng(n)
    theirs = [_deal_features(LlamaGame(n, rng=rng).to_dict()) for _ in range(count)]
    _same_deal_features(ours, theirs)
    # and each card code is equally likely on top
    tops = Counter(f["top"] for f in ours)
    stat, df = _chi_square([tops[c] for c in range(1, 8)], [count // 7] * 7)
    assert stat < _critical(df), tops


@pytest.mark.parametrize("n", [2, 5])
def test_a_deal_from_keys_is_distributed_as_the_engines(n):
    """As above, for deals from a key per game (the search's play-outs), the keys close
    together (multiples of 7919), dealt twice: the first deal, and the next of the same
    keys."""
    count = 4000
    states = [LlamaGame(n, rng=i).to_dict() for i in range(count)]
    batch = _keyed(states, np.arange(count) * 7919, auto_reset=False)
    rng = np.random.default_rng(n)
    for _ in range(2):
        batch.reset()
        ours = [_deal_features(batch.snapshot(i)) for i in range(count)]
        theirs = [_deal_features(LlamaGame(n, rng=rng).to_dict()) for _ in range(count)]
        _same_deal_features(ours, theirs)


def test_the_later_deals_keep_the_starter_rule():
    """Rule 11 across many round ends: the new starter is the last to play, else the seat
    left of the old starter (checked against the engine by the lockstep tests; here the
    batch alone, over many rounds)."""
    batch = BatchGame(128, 5, seed=3, auto_reset=False)
    rng = np.random.default_rng(3)
    for _ in range(300):
        before = [batch.snapshot(i) for i in range(128)]
        mask = batch.legal_action_mask
        actions = np.argmax(rng.random(mask.shape) + mask, axis=1)
        rounds = batch.round
        batch.step(actions)
        for i in np.flatnonzero(batch.round > rounds):
            old = before[i]
            last = old["current_player"] if actions[i] < 7 else old["last_player"]
            expected = last if last is not None else (old["starter"] + 1) % 5
            assert batch.snapshot(int(i))["starter"] == expected


# --------------------------------------------------------------------------- bad input


def _twins() -> tuple[BatchGame, BatchGame]:
    return BatchGame(16, 3, seed=9), BatchGame(16, 3, seed=9)


def _same(a: BatchGame, b: BatchGame) -> None:
    assert [a.snapshot(i) for i in range(a.num_games)] == [b.snapshot(i) for i in range(b.num_games)]
    np.testing.assert_array_equal(a.legal_action_mask, b.legal_action_mask)
    np.testing.assert_array_equal(a.observation(1), b.observation(1))


def _first_legal(batch: BatchGame) -> np.ndarray:
    return np.argmax(batch.legal_action_mask, axis=1)


@pytest.mark.parametrize(
    "actions, message",
    [
        (np.zeros(15, dtype=np.int64), r"shape \(16,\)"),
        (np.zeros((16, 1), dtype=np.int64), r"shape \(16,\)"),
        (np.int64(3), r"shape \(16,\)"),
        (np.zeros(16, dtype=np.float32), "integer array"),
        (np.zeros(16, dtype=bool), "integer array"),
        (["8"] * 16, "integer array"),
    ],
)
def test_actions_of_the_wrong_shape_or_dtype_are_refused(actions, message):
    batch, twin = _twins()
    with pytest.raises(ValueError, match=message):
        batch.step(actions)
    _same(batch, twin)
    batch.step(_first_legal(batch))  # and both play on alike: the generator untouched too
    twin.step(_first_legal(twin))
    _same(batch, twin)


@pytest.mark.parametrize("bad", [NUM_ACTIONS, -1, 1000, 2**64 - 1])
def test_an_illegal_action_in_one_game_names_that_game(bad):
    batch, twin = _twins()
    actions = _first_legal(batch).astype(np.uint64 if bad > 2**63 else np.int64)
    actions[11] = bad
    with pytest.raises(IllegalActionError, match=rf"^game 11, seat 0: action {bad} is out of range.*8 \(QUIT\)"):
        batch.step(actions)
    _same(batch, twin)


def test_an_action_against_the_rules_names_the_first_game_and_counts_the_others():
    batch, twin = _twins()
    actions = _first_legal(batch)
    illegal = np.flatnonzero(~batch.legal_action_mask[:, 0])
    actions[illegal] = 0  # play a 1 where no 1 may be played
    with pytest.raises(IllegalActionError, match=rf"^game {illegal[0]}, seat 0: action 0 \(PLAY_1\) is illegal") as e:
        batch.step(actions)
    if illegal.size > 1:
        assert f"and {illegal.size - 1} more game(s)" in str(e.value)
    assert e.value.seat == 0 and e.value.action == 0 and 8 in e.value.legal
    _same(batch, twin)


def test_snapshots_of_mixed_tables_or_options_are_refused_by_index():
    three = LlamaGame(3, rng=0).to_dict()
    four = LlamaGame(4, rng=0).to_dict()
    short = LlamaGame(3, end_score=20, rng=0).to_dict()
    with pytest.raises(ValueError, match=r"snapshot 2 is for 4 players.*snapshot 0 for 3 players"):
        BatchGame.from_snapshots([three, three, four])
    with pytest.raises(ValueError, match=r"snapshot 1 is for 3 players, end score 20"):
        BatchGame.from_snapshots([three, short])
    broken = dict(three, current_player=7)
    with pytest.raises(ValueError, match=r"^snapshot 1: snapshot current_player must be a seat"):
        BatchGame.from_snapshots([three, broken])
    with pytest.raises(ValueError, match="non-empty list"):
        BatchGame.from_snapshots([])
    with pytest.raises(ValueError, match="beyond"):
        BatchGame.from_snapshots([dict(three, scores=[0, 1, 0], round=2**40)])


def test_other_bad_arguments_are_refused():
    batch = BatchGame(4, 2, seed=0)
    for bad in (4, -1, True, 1.0):
        with pytest.raises(ValueError, match="game must be an index 0..3"):
            batch.snapshot(bad)
    with pytest.raises(ValueError, match="obs_version"):
        batch.observation(2)
    with pytest.raises(ValueError, match="seats must be seats 0..1"):
        batch.observation(0, np.array([0, 1, 2, 0]))
    with pytest.raises(ValueError, match="seats must be an integer array"):
        batch.observation(0, np.zeros(3, dtype=np.int64))
    with pytest.raises(ValueError, match="num_games"):
        BatchGame(0, 2)
    with pytest.raises(ValueError, match="hand_size"):
        BatchGame(4, 6, hand_size=10)
    with pytest.raises(ValueError, match="either as rules"):
        BatchGame(4, rules=Rules(3), end_score=20)
    with pytest.raises(TypeError, match="auto_reset"):
        BatchGame(4, auto_reset="no")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="seed"):
        BatchGame(4, seed="x")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="games must be game indices"):
        batch.reset([7])
    with pytest.raises(ValueError, match="num_games must be at most 67,108,863 at 4 players"):
        BatchGame(10**12, 4)  # was a MemoryError from deep inside
    with pytest.raises(ValueError, match="seed must be a non-negative integer, got -1"):
        BatchGame(4, seed=-1)  # a ValueError, as the engine's
    with pytest.raises(ValueError, match="draw_piles must hold one draw pile per world"):
        BatchGame.from_worlds([batch.snapshot(0)], [0], np.zeros((1, 2, 7), dtype=np.int64), None)  # type: ignore[arg-type]


def test_empty_selections_select_no_game():
    """``[]`` reads as a float array in numpy; it still means no game."""
    batch = BatchGame(4, 3, seed=0, auto_reset=False)
    before = batch.snapshot(0)
    batch.reset([])
    assert batch.snapshot(0) == before
    assert batch.penalties([]).shape == (0, 3) and batch.hand_sizes([]).shape == (0, 3)


def test_the_mask_step_checks_against_cannot_be_edited():
    """An edited mask let illegal moves through: hands went to -1 cards."""
    batch = BatchGame(4, 4, seed=0)
    for _ in range(2):
        assert not batch.legal_action_mask.flags.writeable
        with pytest.raises(ValueError, match="read-only"):
            batch.legal_action_mask[0, :] = True
        batch.step(np.where(batch.legal_action_mask[:, 7], 7, 8))


def test_resetting_some_games_keeps_what_the_last_step_said_of_the_others():
    batch = BatchGame(16, 2, end_score=1, hand_size=1, seed=1)  # every round ends a game
    batch.step(np.full(16, 8))  # the first seat quits everywhere...
    batch.step(np.where(batch.legal_action_mask[:, 8], 8, 0))  # ...and the second: all games end
    assert batch.terminated.all()
    batch.reset([0])
    assert batch.terminated.tolist() == [False] + [True] * 15


def test_without_auto_reset_finished_games_wait_for_reset():
    batch = BatchGame(8, 2, end_score=1, hand_size=1, seed=1, auto_reset=False)
    while not batch.game_over.all():
        batch.step(np.where(batch.legal_action_mask[:, 8], 8, 0))  # everyone quits: each round ends a game
    assert batch.terminated.all() and not batch.legal_action_mask.any()
    rewards = batch.step(np.zeros(8, dtype=np.int64))  # ignored
    assert not rewards.any() and batch.game_over.all()
    batch.reset([1, 3])
    assert batch.game_over.tolist() == [True, False, True, False, True, True, True, True]
    assert batch.round[1] == 1 and batch.legal_action_mask[1].any()
    batch.reset()
    assert not batch.game_over.any() and not batch.terminated.any()


# --------------------------------------------------------------------------- size and layers


def test_the_state_of_4096_games_is_under_20_mb():
    tracemalloc.start()
    try:
        batch = BatchGame(4096, 6, seed=0)
        batch.step(np.argmax(batch.legal_action_mask, axis=1))
        batch.observation(1)
        held, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert batch.nbytes < 20e6
    assert held < 20e6, held


def test_the_batch_plays_every_rule_option():
    """A rule option added to ``Rules`` must be played by the batch as well: this fails,
    naming it, until ``llama_env/batch.py`` reads it (and lists it in ``_OPTIONS``)."""
    from llama_env import batch

    assert set(Rules().options()) == batch._OPTIONS


def test_a_rule_option_the_batch_does_not_play_yet_refuses_only_its_other_values(monkeypatch):
    """An option the batch does not read, at its standard value, plays the game the batch
    knows; any other value is refused, and an evaluation then plays game by game (it
    failed on every batched path, whatever the option's value)."""
    from llama_env import batch
    from train.evaluation import evaluate

    monkeypatch.setattr(batch, "_OPTIONS", frozenset({"end_score"}))  # as if hand_size were new
    assert batch.unplayed_options(Rules(3)) == [] and batch.BatchGame(2, rules=Rules(3), seed=0).num_games == 2
    assert batch.unplayed_options(Rules(3, hand_size=5)) == ["hand_size"]
    with pytest.raises(NotImplementedError, match="does not play the rule option 'hand_size'"):
        batch.BatchGame(2, rules=Rules(3, hand_size=5), seed=0)
    players = ["greedy", "random", "random"]
    assert not evaluate(players, 6, seed=0, workers=1, rules=Rules(3, hand_size=5)).batched
    assert evaluate(players, 6, seed=0, workers=1, rules=Rules(3)).batched
    with pytest.raises(ValueError, match="cannot be played on the batched engine: .* rule option 'hand_size'"):
        evaluate(players, 6, seed=0, workers=1, rules=Rules(3, hand_size=5), batched=True)


def test_the_batch_imports_only_numpy_and_the_engine_modules():
    """Principle 1: like the engine, the batch knows nothing about RL libraries."""
    tree = ast.parse((ROOT / "llama_env" / "batch.py").read_text(encoding="utf-8"))
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            imported.add(node.module)
    allowed = {"__future__", "copy", "collections.abc", "typing", "numpy", "llama_env.engine", "llama_env.observation"}
    assert imported <= allowed, imported - allowed


@pytest.mark.parametrize("how", ["deepcopy", "pickle"])
def test_a_copied_batch_plays_exactly_as_its_original(how):
    """Its seat arrays were copied as three arrays, not one and two views of it: a step
    wrote the hands where the masks and snapshots did not read them (a played card stayed
    in the hand, and most snapshots no longer held the deck). A batch observed once did
    not pickle at all (its cached observation plans hold lambdas)."""
    import copy
    import pickle

    batch = BatchGame(40, 4, seed=3, auto_reset=False)
    batch.observation(0), batch.observation(1)
    twin = copy.deepcopy(batch) if how == "deepcopy" else pickle.loads(pickle.dumps(batch))
    rng = np.random.default_rng(0)
    for _ in range(60):
        masks = batch.legal_action_mask
        assert np.array_equal(twin.legal_action_mask, masks)
        for version in (0, 1):
            assert np.array_equal(twin.observation(version), batch.observation(version))
        actions = np.array([rng.choice(np.flatnonzero(m)) if m.any() else 0 for m in masks])
        batch.step(actions)
        twin.step(actions)
        for i in range(batch.num_games):
            snap = twin.snapshot(i)
            assert snap == batch.snapshot(i)
            LlamaGame.from_dict(snap)  # a state the engine accepts: the deck whole, no count below 0
