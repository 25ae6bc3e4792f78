"""``LlamaGame.from_dict`` refuses a state no game can reach, with or without the round's
history: what the hands hold must follow from the deal, the draws and the plays the
piles show, and the seats named for rule 11 and the turn must fit the record."""

from __future__ import annotations

import numpy as np
import pytest

from llama_env.batch import BatchGame
from llama_env.engine import Action, LlamaGame


def _without_history(game: LlamaGame) -> dict:
    d = game.to_dict()
    d["history"] = None  # as an older or a hand-written snapshot
    return d


def test_hands_the_deal_cannot_become_are_refused_without_a_history():
    """Nothing drawn or played, yet one seat holds 1 card and the other 11: accepted
    before, because only a history was checked against the hands."""
    d = _without_history(LlamaGame(2, rng=1))
    h0, h1 = d["hands"]
    d["hands"] = [h0[:1], sorted(h1 + h0[1:])]
    with pytest.raises(ValueError, match=r"snapshot hands hold \[1, 11\] cards.*5 beyond the deal.*0 drawn"):
        LlamaGame.from_dict(d)


def test_a_hand_beyond_the_deal_fits_when_as_many_cards_were_drawn():
    """Seat 0 drew a card and holds 7: that fits. Holding 8 while seat 1 holds 5 would
    take two draws, and only one card left the draw pile."""
    game = LlamaGame(2, rng=1)
    game.step(Action.DRAW)
    d = _without_history(game)
    assert LlamaGame.from_dict(d).hand_sizes == [7, 6]
    d["hands"] = [sorted(d["hands"][0] + d["hands"][1][:1]), d["hands"][1][1:]]
    with pytest.raises(ValueError, match=r"snapshot hands hold \[8, 5\] cards.*2 beyond the deal.*1 drawn"):
        LlamaGame.from_dict(d)


def test_a_last_player_who_played_nothing_is_refused_without_a_history():
    """Seat 0 played a 4 and nobody drew: only a seat holding fewer than it was dealt
    can have played, so last_player 1 (still holding 6) is impossible."""
    game = LlamaGame(2, rng=0)
    game.step(Action.PLAY_4)
    d = _without_history(game)
    assert LlamaGame.from_dict(d).last_player == 0
    d["last_player"] = 1
    with pytest.raises(ValueError, match="snapshot last_player 1 played no card this round"):
        LlamaGame.from_dict(d)


@pytest.mark.parametrize(("n", "hand_size"), [(2, 6), (3, 1), (4, 6), (5, 11), (6, 3)])
def test_every_state_of_real_games_is_accepted_without_its_history(n, hand_size):
    """Guard: the checks refuse nothing a game reaches (every snapshot of random games,
    with the history dropped, mid-round and finished)."""
    rng = np.random.default_rng(n)
    for seed in range(3):
        game = LlamaGame(n, hand_size=hand_size, end_score=25, rng=seed)
        while True:
            restored = LlamaGame.from_dict(_without_history(game))
            assert restored.hand_sizes == game.hand_sizes
            if game.game_over:
                break
            legal = game.legal_actions()
            game.step(int(rng.choice(legal)) if rng.random() < 0.9 else legal[-1])


def _after_a_play() -> LlamaGame:
    """A three-player game stopped at the first card played (after draws until a seat
    could play), so last_player is the one seat that played."""
    game = LlamaGame(3, rng=2)
    while not any(a < Action.DRAW for a in game.legal_actions()):
        game.step(Action.DRAW)
    game.step(min(game.legal_actions()))
    return game


def test_a_last_player_who_by_the_history_played_nothing_is_refused():
    """Rule 11 makes last_player the next round's starter: one who, by the round's
    history, never played (so not the top card) started the next round wrongly."""
    game = _after_a_play()
    d = game.to_dict()
    d["last_player"] = (game.last_player + 1) % 3
    with pytest.raises(ValueError, match=rf"snapshot last_player {d['last_player']} played no .* by the history's"):
        LlamaGame.from_dict(d)
    with pytest.raises(ValueError, match="snapshot last_player"):
        BatchGame.from_snapshots([d])


@pytest.mark.parametrize("history", [True, False])
def test_a_current_player_other_than_the_starter_before_any_move_is_refused(history):
    """Nothing played, drawn or quit: the seat that starts the round (rule 11) is to act,
    never another."""
    d = LlamaGame(3, rng=0).to_dict()
    d["current_player"] = 2
    if not history:
        d["history"] = None
    with pytest.raises(ValueError, match="snapshot current_player 2 is not the starter 0, but no move was made"):
        LlamaGame.from_dict(d)
    d["starter"] = 2  # seat 2 started: fine
    assert LlamaGame.from_dict(d).current_player == 2


@pytest.mark.parametrize(("n", "hand_size"), [(2, 6), (3, 1), (4, 6), (6, 3)])
def test_every_state_of_real_games_is_accepted_with_its_history(n, hand_size):
    """Guard: the history's checks refuse nothing a game reaches."""
    rng = np.random.default_rng(n)
    for seed in range(3):
        game = LlamaGame(n, hand_size=hand_size, end_score=25, rng=seed, random_first_player=True)
        while True:
            assert LlamaGame.from_dict(game.to_dict()).to_dict() == game.to_dict()
            if game.game_over:
                break
            legal = game.legal_actions()
            game.step(int(rng.choice(legal)) if rng.random() < 0.9 else legal[-1])


def test_a_snapshot_built_from_numpy_values_loads_as_the_plain_one():
    """Numpy integers were taken for the scores but numpy booleans refused for ``quit`` and
    ``game_over`` ("must be a list of 3 booleans, got [np.False_, ...]"), so a snapshot
    built from arrays failed on some fields only."""
    game = LlamaGame(3, rng=4)
    game.step(Action.DRAW)
    plain = game.to_dict()
    numpy = dict(plain, scores=[np.int64(s) for s in plain["scores"]])
    numpy["quit"] = list(np.array(plain["quit"], dtype=bool))
    numpy["game_over"] = np.bool_(plain["game_over"])
    loaded = LlamaGame.from_dict(numpy)
    assert loaded.to_dict() == plain
    assert all(type(q) is bool for q in loaded.quit) and type(loaded.to_dict()["game_over"]) is bool
