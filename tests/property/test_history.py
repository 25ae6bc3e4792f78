"""The public history of the round (observation version 1), over random games.

A spectator watches every move (who moved, what, on which top card) and keeps its own
record of the round; the engine's record and the version-1 encoder must agree with it
exactly, for every seat, at every step. The history must never leak what a player
cannot see, and it must survive snapshots.
"""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest
from conftest import make_game
from hypothesis import given
from hypothesis import strategies as st
from test_properties import SETTINGS, _reshuffle_hidden, advance, games, pick, reference_encode

from llama_env.engine import Action, LlamaGame
from llama_env.observation import (
    FIELDS,
    FIELDS_V1,
    HISTORY_FIELDS,
    OBS_SIZE,
    OBS_SIZE_V1,
    SLICES_V1,
    ObsView,
    decode,
    encode,
    encode_many_v1,
    encode_v1,
    observation_bounds,
    view,
)


class Spectator:
    """What someone watching the table records in a round, from the moves alone."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.new_round()

    def new_round(self) -> None:
        n = self.n
        self.played = [[0] * 7 for _ in range(n)]
        self.drew_on = [[0] * 7 for _ in range(n)]
        self.quit_on = [0] * n
        self.quit_at = [0] * n
        self.moves = 0
        self.last: int | None = None

    def step(self, g: LlamaGame, action: int) -> None:
        seat, top = g.current_player, g.top_card
        self.moves += 1
        if action <= Action.PLAY_LLAMA:
            self.played[seat][action] += 1
            self.last = seat
        elif action == Action.DRAW:
            self.drew_on[seat][top - 1] += 1
        else:
            self.quit_on[seat] = top
            self.quit_at[seat] = self.moves
        result = g.step(action)
        if result is not None and not g.game_over:  # a new deal; a finished game keeps its last round
            self.new_round()

    def history(self) -> dict:
        return {
            "moves": self.moves,
            "played": self.played,
            "drew_on": self.drew_on,
            "quit_on": self.quit_on,
            "quit_at": self.quit_at,
        }

    def reference(self, g: LlamaGame, seat: int) -> np.ndarray:
        """The version-1 entries written out field by field from the spectator's record."""
        n = self.n
        others = [(seat + 1 + i) % n for i in range(n - 1)]
        pad, pad7 = [0.0] * (5 - len(others)), [0.0] * (7 * (5 - len(others)))
        out: list[float] = []
        out += [k / 8 for o in others for k in self.played[o]] + pad7
        out += [sum(self.drew_on[o]) / 10 for o in others] + pad
        out += [k / 8 for o in others for k in self.drew_on[o]] + pad7
        out += [1.0 if self.quit_on[o] == c else 0.0 for o in others for c in range(1, 8)] + pad7
        out += [self.quit_at[o] / 50 for o in others] + pad
        out += [1.0 if self.last is not None and (self.last - seat) % n == r else 0.0 for r in range(6)]
        out += [g.round / 10, self.moves / 50]
        return np.concatenate([reference_encode(g, seat), np.array(out, dtype=np.float32)])


def test_version_1_is_version_0_followed_by_the_history_fields():
    assert FIELDS_V1[: len(FIELDS)] == FIELDS and FIELDS_V1[len(FIELDS) :] == HISTORY_FIELDS
    assert OBS_SIZE_V1 == OBS_SIZE + sum(f.size for f in HISTORY_FIELDS) == 175
    assert list(SLICES_V1) == [f.name for f in FIELDS_V1]


@SETTINGS
@given(games(), st.integers(0, 300))
def test_engine_record_and_encoder_match_a_spectator(game_and_seed, steps):
    g, seed = game_and_seed
    rng = np.random.default_rng(seed)
    watcher = Spectator(g.num_players)
    for _ in range(steps):
        assert g.history() == watcher.history()
        for seat in range(g.num_players):
            np.testing.assert_array_equal(encode_v1(g, seat), watcher.reference(g, seat))
        if g.game_over:
            break
        watcher.step(g, pick(g, rng))
    batch = encode_many_v1([g] * g.num_players, list(range(g.num_players)))
    for seat in range(g.num_players):
        np.testing.assert_array_equal(batch[seat], encode_v1(g, seat))
        obs = encode_v1(g, seat)
        np.testing.assert_array_equal(obs[:OBS_SIZE], encode(g, seat))
        low, high = observation_bounds(g.end_score, version=1)
        assert np.all(obs >= low) and np.all(obs <= high)


@SETTINGS
@given(games(), st.integers(0, 60), st.integers(0, 2**32 - 1))
def test_history_never_leaks_hidden_information(game_and_seed, prefix, shuffle_seed):
    g, seed = game_and_seed
    advance(g, np.random.default_rng(seed), prefix)
    rng = np.random.default_rng(shuffle_seed)
    for observer in range(g.num_players):
        h = _reshuffle_hidden(g, observer, rng)
        np.testing.assert_array_equal(encode_v1(g, observer), encode_v1(h, observer))


@SETTINGS
@given(games(), st.integers(0, 150))
def test_history_decodes_to_the_engine_record_seen_from_each_seat(game_and_seed, prefix):
    g, seed = game_and_seed
    advance(g, np.random.default_rng(seed), prefix)
    n, rec = g.num_players, g.history()
    for seat in range(n):
        d = decode(encode_v1(g, seat))
        assert dataclasses.replace(d, history=None) == decode(encode(g, seat))
        h = d.history
        assert h is not None
        left = [(seat + 1 + i) % n for i in range(n - 1)]
        assert h.opp_played == tuple(tuple(rec["played"][p]) for p in left)
        assert h.opp_drew_on == tuple(tuple(rec["drew_on"][p]) for p in left)
        assert h.opp_draws == tuple(sum(rec["drew_on"][p]) for p in left)
        assert h.opp_quit_on == tuple(rec["quit_on"][p] for p in left)
        assert h.opp_quit_at == tuple(rec["quit_at"][p] for p in left)
        assert h.last_player == (None if g.last_player is None else (g.last_player - seat) % n)
        assert h.round == g.round and h.round_moves == rec["moves"]
        assert ObsView(encode_v1(g, seat)).version == 1 and decode(encode(g, seat)).history is None
        assert set(view(encode_v1(g, seat))) == set(SLICES_V1)


def test_reading_history_from_a_version_0_observation_says_so():
    g = LlamaGame(3, rng=1)
    with pytest.raises(ValueError, match="'opp_played' is a field of version-1 observations"):
        _ = ObsView(encode(g, 0)).opp_played


def test_snapshots_keep_the_history_and_check_it():
    g = LlamaGame(4, rng=5)
    rng = np.random.default_rng(0)
    advance(g, rng, 9)
    d = json.loads(json.dumps(g.to_dict()))
    h = LlamaGame.from_dict(d)
    np.testing.assert_array_equal(encode_v1(h, 2), encode_v1(g, 2))
    seat = next(p for p in range(4) if sum(d["history"]["played"][p]) or sum(d["history"]["drew_on"][p]))
    bad = json.loads(json.dumps(d))
    bad["history"]["drew_on"][seat][0] += 1
    with pytest.raises(ValueError, match="snapshot history 'drew_on' counts"):
        LlamaGame.from_dict(bad)
    bad = json.loads(json.dumps(d))
    bad["history"]["played"] = bad["history"]["played"][:-1]
    with pytest.raises(ValueError, match="'played' must list 4 seats"):
        LlamaGame.from_dict(bad)


def test_a_snapshot_without_history_knows_it_again_from_the_next_deal():
    """Older (or hand-written) snapshots have no history: the game says so in its own
    snapshots (``"history": None``) until the next deal, and never invents one."""
    g = make_game(num_players=3, hands=[[1, 2], [5, 6], [3]], top=2)
    assert g.to_dict()["history"] is None
    assert LlamaGame.from_dict(g.to_dict()).to_dict() == g.to_dict()
    rng = np.random.default_rng(1)
    start = g.round
    while g.round == start and not g.game_over:
        g.step(pick(g, rng))
    if not g.game_over:
        assert g.to_dict()["history"] == {
            "moves": 0,
            "played": [[0] * 7] * 3,
            "drew_on": [[0] * 7] * 3,
            "quit_on": [0] * 3,
            "quit_at": [0] * 3,
        }
