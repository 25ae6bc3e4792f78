"""``BatchGame.from_worlds``: many games that differ from a snapshot only in where its
cards lie (the worlds a search imagines), loaded with array operations.

A world is the snapshot with its hands and draw pile dealt anew: it must be exactly the
game the engine makes of the same snapshot with those cards (every snapshot field but the
generator, every observation, the mask), step as the engine steps, and keep nothing else
of another world. Dealt with the snapshot's own cards it is the batch ``from_snapshots``
makes, array for array (so a state array ``from_worlds`` forgot to copy shows here).
Worlds that change a hand's size or the cards in play are refused, naming the world.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from test_batch import _pick, _random_states

from llama_env.batch import BatchGame
from llama_env.engine import NUM_CARD_VALUES, LlamaGame, Rules
from llama_env.observation import SPECS, encoder

_V = NUM_CARD_VALUES


def _counts(hands: list[list[int]]) -> np.ndarray:
    return np.array([np.bincount(h, minlength=_V + 1)[1:] for h in hands], dtype=np.int64)


def _redeal(d: dict[str, Any], rng: np.random.Generator) -> dict[str, Any]:
    """``d`` with every hand (same sizes) and the draw pile dealt anew from their cards."""
    cards = [c for h in d["hands"] for c in h] + d["draw_pile"]
    cards = [int(c) for c in rng.permutation(cards)]
    hands, at = [], 0
    for h in d["hands"]:
        hands.append(cards[at : at + len(h)])
        at += len(h)
    return {**d, "hands": hands, "draw_pile": cards[at:]}


def _worlds(states: list[dict[str, Any]], per: int, rng: np.random.Generator):
    """``per`` redealt worlds of each state: the snapshots, ``of``, hands, draw piles and
    the worlds as snapshots."""
    of = np.repeat(np.arange(len(states)), per)
    worlds = [_redeal(states[i], rng) for i in of.tolist()]
    return of, np.stack([_counts(w["hands"]) for w in worlds]), [w["draw_pile"] for w in worlds], worlds


@pytest.mark.parametrize("players", [2, 4, 6])
def test_a_world_is_the_engines_game_with_its_cards(players):
    rng = np.random.default_rng(players)
    compared = 0
    every = [(rules, d) for rules, d in _random_states(players, 150, seed=players) if not d["game_over"]]
    for rules in sorted({rules for rules, _ in every}, key=repr):  # one batch per rule set
        compared += _step_worlds([d for r, d in every if r == rules], rng)
    assert compared > 500


def _step_worlds(states: list[dict[str, Any]], rng: np.random.Generator) -> int:
    of, hands, piles, worlds = _worlds(states, 3, rng)
    batch = BatchGame.from_worlds(states, of, hands, piles, seed=0, auto_reset=False)
    games = [LlamaGame.from_dict(w) for w in worlds]
    first_round = [g.round for g in games]
    compared = 0
    for step in range(12):  # the worlds then step as the engine steps, within the round
        live = np.array([not g.game_over and g.round == r for g, r in zip(games, first_round, strict=True)])
        for i in np.flatnonzero(live).tolist():  # the batch deals later rounds from its own generator
            g = games[i]
            mine, theirs = batch.snapshot(i), g.to_dict()
            del mine["rng_state"], theirs["rng_state"]
            assert mine == theirs, f"world {i}, step {step}"
            assert batch.legal_action_mask[i].tolist() == g.legal_mask()
            for version in SPECS:
                np.testing.assert_array_equal(batch.observation(version)[i], encoder(version)[0](g, g.current_player))
            compared += 1
        if not live.any():
            break
        actions = np.array([_pick(g, rng, 0.2) if keep else 0 for g, keep in zip(games, live.tolist(), strict=True)])
        batch.step(actions, where=live)
        for i in np.flatnonzero(live).tolist():
            games[i].step(int(actions[i]))
    return compared


def test_worlds_dealt_with_the_snapshots_own_cards_are_the_batch_of_the_snapshots():
    states = [d for rules, d in _random_states(4, 200, seed=1) if rules == Rules(4)]  # games over too
    of = np.arange(len(states)).repeat(2)
    hands = np.stack([_counts(states[i]["hands"]) for i in of.tolist()])
    piles = [states[i]["draw_pile"] for i in of.tolist()]
    worlds = BatchGame.from_worlds(states, of, hands, piles, seed=3)
    plain = BatchGame.from_snapshots([states[i] for i in of.tolist()], seed=3)
    for name, value in vars(plain).items():
        if isinstance(value, np.ndarray) and name != "_ar":
            np.testing.assert_array_equal(getattr(worlds, name), value, err_msg=name)
    for _ in range(40):  # and they deal the same next rounds and games
        for i in range(len(of)):
            assert worlds.snapshot(i) == plain.snapshot(i)
        moves = np.argmax(plain.legal_action_mask, axis=1)
        worlds.step(moves)
        plain.step(moves)


@pytest.mark.parametrize(
    ("change", "fragment"),
    [
        ("size", "world 1 does not deal the cards of snapshot 0 anew: each hand must keep its size"),
        ("cards", "world 1 does not deal the cards of snapshot 0 anew"),
        ("pile", "world 1: its draw pile must be"),
        ("of", "of must be a non-empty array of snapshot indices 0..0"),
        ("shape", "hands must be"),
    ],
)
def test_worlds_that_do_not_deal_the_same_cards_are_refused_by_number(change, fragment):
    d = LlamaGame(4, rng=0).to_dict()
    hands = np.stack([_counts(d["hands"])] * 2)
    piles = [list(d["draw_pile"]), list(d["draw_pile"])]
    of = np.array([0, 0])
    if change == "size":  # a card moves from one hand to another
        seat = int(np.flatnonzero(hands[1, 0])[0])
        hands[1, 0, seat] -= 1
        hands[1, 1, seat] += 1
    elif change == "cards":  # a card becomes another
        piles[1][0] = piles[1][0] % _V + 1
    elif change == "pile":
        piles[1] = piles[1][:-1]
    elif change == "of":
        of = np.array([0, 1])
    else:
        hands = hands[:, :3]
    with pytest.raises(ValueError, match=fragment):
        BatchGame.from_worlds([d], of, hands, piles)
