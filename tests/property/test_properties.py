"""Hypothesis properties of the engine and the observation, over random games.

Games are driven by a seeded chooser that picks uniformly among the legal actions, so
every property holds for whole games at every table size and rule option.
"""

from __future__ import annotations

import json

import numpy as np
from conftest import card_counts, full_deck_counts, make_game
from hypothesis import given, settings
from hypothesis import strategies as st

from llama_env.engine import IllegalActionError, LlamaGame
from llama_env.observation import OBS_SIZE, decode, encode, encode_many, observation_bounds, view
from llama_env.render import render_table

MAX_STEPS = 20_000
SETTINGS = settings(max_examples=100, deadline=None)


@st.composite
def games(draw: st.DrawFn) -> tuple[LlamaGame, int]:
    """A fresh game (any table size and rule options) and a seed for the action chooser."""
    n = draw(st.integers(2, 6))
    hand_size = draw(st.integers(1, 55 // n))
    end_score = draw(st.sampled_from([1, 5, 15, 40]))
    seed = draw(st.integers(0, 2**32 - 1))
    first = draw(st.booleans())
    g = LlamaGame(n, end_score=end_score, hand_size=hand_size, rng=seed, random_first_player=first)
    return g, draw(st.integers(0, 2**32 - 1))


def pick(g: LlamaGame, rng: np.random.Generator) -> int:
    """A random legal action; quitting is rare so that rounds last and draw piles run dry."""
    legal = g.legal_actions()
    if len(legal) > 1 and rng.random() < 0.9:
        legal = legal[:-1]  # quit is always the last legal action
    return legal[int(rng.integers(len(legal)))]


def advance(g: LlamaGame, rng: np.random.Generator, steps: int) -> None:
    for _ in range(steps):
        if g.game_over:
            return
        g.step(pick(g, rng))


@SETTINGS
@given(games())
def test_cards_conserved_at_every_step(game_and_seed):
    g, seed = game_and_seed
    rng = np.random.default_rng(seed)
    deck = full_deck_counts()
    steps = 0
    while not g.game_over:
        d = g.to_dict()
        assert card_counts(d) == deck
        assert len(d["discard_pile"]) >= 1
        assert [len(h) for h in d["hands"]] == [g.hand_size_of(p) for p in range(g.num_players)]
        g.step(pick(g, rng))
        steps += 1
        assert steps < MAX_STEPS
    assert card_counts(g.to_dict()) == deck


@SETTINGS
@given(games())
def test_legal_mask_equals_is_legal_and_step_acceptance(game_and_seed):
    g, seed = game_and_seed
    rng = np.random.default_rng(seed)
    for _ in range(60):
        if g.game_over:
            break
        mask = g.legal_mask()
        legal = g.legal_actions()
        assert mask == [g.is_legal(a) for a in range(9)]
        assert legal == [a for a in range(9) if mask[a]]
        assert 8 in legal  # quit is always allowed while the game goes on
        before = g.to_dict()
        for a in range(9):
            if mask[a]:
                g.copy().step(a)  # accepted
            else:
                try:
                    g.step(a)
                except IllegalActionError as exc:
                    assert exc.action == a and exc.legal == legal
                else:
                    raise AssertionError(f"illegal action {a} was accepted")
                assert g.to_dict() == before
        g.step(pick(g, rng))
    if g.game_over:
        assert g.legal_actions() == [] and g.legal_mask() == [False] * 9


@SETTINGS
@given(games())
def test_every_random_game_ends(game_and_seed):
    g, seed = game_and_seed
    rng = np.random.default_rng(seed)
    steps = 0
    while not g.game_over and steps < MAX_STEPS:
        g.step(pick(g, rng))
        steps += 1
    assert g.game_over
    assert max(g.scores) >= g.end_score
    assert min(g.scores) >= 0
    assert g.last_result is not None and g.last_result.game_over


def _future(g: LlamaGame, seed: int, steps: int) -> list[dict]:
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(steps):
        if g.game_over:
            break
        g.step(pick(g, rng))
        out.append(g.to_dict())
    return out


@SETTINGS
@given(games(), st.integers(0, 80), st.integers(0, 2**32 - 1))
def test_from_dict_to_dict_replays_identically(game_and_seed, prefix, future_seed):
    g, seed = game_and_seed
    advance(g, np.random.default_rng(seed), prefix)
    snap = g.to_dict()
    h = LlamaGame.from_dict(snap)
    assert h.to_dict() == snap
    rounds_before = g.round
    a = _future(g, future_seed, 400)
    b = _future(h, future_seed, 400)
    assert a == b
    # the future covered new deals, not only the current round, when the game went on
    if a and a[-1]["round"] > rounds_before:
        assert any(s["round"] > rounds_before for s in b)


@SETTINGS
@given(games(), st.integers(0, 80))
def test_json_round_trip(game_and_seed, prefix):
    g, seed = game_and_seed
    advance(g, np.random.default_rng(seed), prefix)
    snap = g.to_dict()
    text = json.dumps(snap)
    back = json.loads(text)
    assert back == snap
    h = LlamaGame.from_dict(back)
    assert h.to_dict() == snap
    assert _future(g, seed, 200) == _future(h, seed, 200)


@settings(max_examples=40, deadline=None)
@given(st.integers(2, 6), st.integers(0, 2**32 - 1), st.integers(0, 2**32 - 1))
def test_same_seed_same_game(n, game_seed, action_seed):
    def play() -> list[dict]:
        g = LlamaGame(n, rng=game_seed)
        return [g.to_dict(), *_future(g, action_seed, MAX_STEPS)]

    first = play()
    assert first == play()
    assert first[-1]["game_over"] is True


def _reshuffle_hidden(g: LlamaGame, observer: int, rng: np.random.Generator) -> LlamaGame:
    """The same public state with other players' hands (same sizes) and the draw pile
    order redealt from the cards the observer cannot see."""
    d = g.to_dict()
    others = [p for p in range(g.num_players) if p != observer]
    hidden = [c for p in others for c in d["hands"][p]] + d["draw_pile"]
    hidden = [int(c) for c in rng.permutation(hidden)]
    pos = 0
    for p in others:
        k = len(d["hands"][p])
        d["hands"][p] = hidden[pos : pos + k]
        pos += k
    d["draw_pile"] = hidden[pos:]
    return LlamaGame.from_dict(d)


@SETTINGS
@given(games(), st.integers(0, 60), st.integers(0, 2**32 - 1))
def test_observation_never_leaks_hidden_information(game_and_seed, prefix, shuffle_seed):
    g, seed = game_and_seed
    advance(g, np.random.default_rng(seed), prefix)
    rng = np.random.default_rng(shuffle_seed)
    for observer in range(g.num_players):
        h = _reshuffle_hidden(g, observer, rng)
        assert h.hand(observer) == g.hand(observer)
        np.testing.assert_array_equal(encode(g, observer), encode(h, observer))
        if not g.game_over:
            assert render_table(g, observer) == render_table(h, observer)


def test_observation_differs_when_own_hand_differs():
    """Guard for the leak test: the encoding does react to the observer's own cards
    and to other players' public facts (hand sizes)."""
    a = make_game(num_players=3, hands=[[1, 1], [5, 6], [2]], top=4)
    b = make_game(num_players=3, hands=[[2, 2], [5, 6], [1]], top=4)
    c = make_game(num_players=3, hands=[[1, 1], [5], [2, 6]], top=4)
    assert not np.array_equal(encode(a, 0), encode(b, 0))
    assert not np.array_equal(encode(a, 0), encode(c, 0))
    np.testing.assert_array_equal(encode(a, 0), encode(make_game(num_players=3, hands=[[1, 1], [2, 6], [5]], top=4), 0))


@SETTINGS
@given(games(), st.integers(0, 80))
def test_decode_encode_matches_public_facts(game_and_seed, prefix):
    g, seed = game_and_seed
    advance(g, np.random.default_rng(seed), prefix)
    n = g.num_players
    for seat in range(n):
        obs = encode(g, seat)
        assert obs.shape == (OBS_SIZE,) and obs.dtype == np.float32
        o = decode(obs)
        counts = g.hand_counts(seat)
        assert o.hand == tuple(counts[1:])
        assert o.hand_size == g.hand_size_of(seat)
        assert o.hand_penalty == g.penalty(seat)
        assert o.top_card == g.top_card
        assert o.discarded == tuple(g.discard_pile.count(c) for c in range(1, 8))
        assert o.draw_pile == len(g.draw_pile)
        assert o.can_draw == (len(g.draw_pile) > 0 and g.players_in_round > 1 and not g.quit[seat])
        assert o.num_players == n
        assert o.end_score == g.end_score
        assert o.my_score == g.scores[seat]
        left = [(seat + 1 + i) % n for i in range(n - 1)]
        assert o.opp_in_round == tuple(not g.quit[p] for p in left)
        assert o.opp_hand_size == tuple(g.hand_size_of(p) for p in left)
        assert o.opp_score == tuple(g.scores[p] for p in left)
        low, high = observation_bounds(g.end_score)
        assert np.all(obs >= low) and np.all(obs <= high)
        fields = view(obs)
        assert fields["opp_present"].tolist() == [1.0] * (n - 1) + [0.0] * (6 - n)
        assert float(fields["top_card"].sum()) == 1.0


def _play_to_end(g: LlamaGame, seed: int) -> list[dict]:
    return _future(g, seed, MAX_STEPS)


def test_snapshot_replays_future_deals():
    """A snapshot taken mid-round replays the rest of the game, new deals included."""
    g = LlamaGame(3, rng=123)
    advance(g, np.random.default_rng(1), 5)
    snap = json.loads(json.dumps(g.to_dict()))
    assert snap["round"] == 1 and not snap["game_over"]
    a = _play_to_end(g, 9)
    b = _play_to_end(LlamaGame.from_dict(snap), 9)
    assert a == b
    assert a[-1]["game_over"] and a[-1]["round"] >= 3  # several deals after the snapshot


def test_without_rng_state_future_deals_come_from_the_given_rng():
    """Guard for the replay property: the deals do depend on the stored generator."""
    g = LlamaGame(3, rng=123)
    advance(g, np.random.default_rng(1), 5)
    snap = g.to_dict()
    del snap["rng_state"]
    a = _play_to_end(LlamaGame.from_dict(snap, rng=1), 9)
    b = _play_to_end(LlamaGame.from_dict(snap, rng=2), 9)
    c = _play_to_end(LlamaGame.from_dict(snap, rng=1), 9)
    assert a == c
    assert a != b


def test_copy_is_independent():
    g = LlamaGame(4, rng=5)
    h = g.copy()
    assert h.to_dict() == g.to_dict()
    advance(h, np.random.default_rng(0), 50)
    assert g.to_dict() == LlamaGame(4, rng=5).to_dict()


def reference_encode(g: LlamaGame, seat: int) -> np.ndarray:
    """The observation written out field by field from the engine's public state: the
    slow, obvious encoder that the fast one must match exactly."""
    n, end = g.num_players, g.end_score
    hand = g.hand_counts(seat)
    others = [(seat + 1 + i) % n for i in range(n - 1)]
    pad = [0.0] * (5 - len(others))
    obs = (
        [hand[c] / 8 for c in range(1, 8)]
        + [sum(hand) / 10, g.penalty(seat) / 31]
        + [1.0 if c == g.top_card else 0.0 for c in range(1, 8)]
        + [g.discard_pile.count(c) / 8 for c in range(1, 8)]
        + [len(g.draw_pile) / 56, 1.0 if (g.draw_pile and g.players_in_round > 1 and not g.quit[seat]) else 0.0]
        + [1.0] * len(others)
        + pad
        + [0.0 if g.quit[o] else 1.0 for o in others]
        + pad
        + [g.hand_size_of(o) / 10 for o in others]
        + pad
        + [g.scores[o] / end for o in others]
        + pad
        + [g.scores[seat] / end]
        + [1.0 if k == n else 0.0 for k in range(2, 7)]
        + [end / 100]
    )
    return np.array(obs, dtype=np.float32)


@SETTINGS
@given(games(), st.integers(0, 200))
def test_fast_encoder_matches_the_reference_encoder(game_and_seed, steps):
    g, seed = game_and_seed
    rng = np.random.default_rng(seed)
    for _ in range(steps):
        for seat in range(g.num_players):
            np.testing.assert_array_equal(encode(g, seat), reference_encode(g, seat))
        if g.game_over:
            break
        g.step(pick(g, rng))
    batch = encode_many([g] * g.num_players, list(range(g.num_players)))
    for seat in range(g.num_players):
        np.testing.assert_array_equal(batch[seat], reference_encode(g, seat))
    obs = encode(g, 0)
    obs[0] = 5.0  # a fresh, writable array: writing into it changes nothing else
    np.testing.assert_array_equal(encode(g, 0), reference_encode(g, 0))


def test_encoder_handles_scores_far_past_the_end():
    """A game's scores set by hand may be any (a snapshot refuses those no game reaches);
    the memoised score blocks must follow them, without a table as long as the score."""
    for n, scores, end in ((3, [500, 3, 7], 40), (2, [999, 0], 1000), (4, [0, 0, 0, 70], 1), (2, [10**12, 1], 40)):
        g = make_game(num_players=n, end_score=end, hands=[[1], [2], [3], [4]][:n])
        g.scores = scores
        for seat in range(n):
            np.testing.assert_array_equal(encode(g, seat), reference_encode(g, seat))
