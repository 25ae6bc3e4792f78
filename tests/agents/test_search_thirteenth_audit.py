"""What the thirteenth stop's audit of the search agent found: settings given that go
unused on a version-0 observation without a word, and a search whose memory grew with the
number of decisions it was handed at once."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from agents.search import SearchAgent
from llama_env.gym_env import LlamaEnv


def _observation(version: int, players: int = 4, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    env = LlamaEnv(num_players=players, opponents="heuristic", obs_version=version)
    obs, info = env.reset(seed=seed)
    return obs, np.asarray(info["action_mask"], dtype=bool)


def test_settings_given_go_unused_on_a_version_0_observation_and_it_says_so_once():
    """search:below=1.0 on the gym default (obs_version 0) never searched and said nothing:
    it played as its policy."""
    agent = SearchAgent(below=1.0, seed=0)
    obs, mask = _observation(0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        agent.act(obs, mask)
        agent.act(obs, mask)  # said once
    assert [str(w.message) for w in caught] == [
        "SearchAgent(below=1) does not search on a version-0 observation (it searches on version 1's history: "
        "obs_version=1): what it was given (below=1) goes unused there, and it plays its policy's moves (said once)"
    ]
    assert agent.searched == 0


def test_nothing_is_said_on_a_version_0_observation_where_nothing_was_given():
    agent = SearchAgent(seed=0)
    obs, mask = _observation(0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        agent.act(obs, mask)


def _decisions(n: int) -> tuple[np.ndarray, np.ndarray]:
    pairs = [_observation(1, seed=i) for i in range(n)]
    return np.stack([o for o, _ in pairs]), np.stack([m for _, m in pairs])


def test_a_search_of_many_decisions_plays_them_out_in_groups_of_bounded_worlds(monkeypatch):
    """Every decision of a call was played out in one batch: about 67 MB a decision at
    4,096 worlds, so a batched evaluation's thousands of decisions needed tens of GB. Split
    into groups, it finds what it found whole: the same moves and the same values."""
    import agents.search as search_module

    obs, masks = _decisions(6)
    whole = SearchAgent(worlds=8, below=1.0, horizon=0, seed=3).decide(obs, masks)
    assert whole.searched.sum() >= 4  # enough decisions to split

    sizes: list[int] = []
    batch_values = search_module.batch_values

    def spy(searches, legal, *args, **kwargs):
        sizes.append(sum(len(w.hands) for w in searches))
        return batch_values(searches, legal, *args, **kwargs)

    monkeypatch.setattr(search_module, "batch_values", spy)
    monkeypatch.setattr(search_module, "MAX_WORLDS_AT_ONCE", 16)
    split = SearchAgent(worlds=8, below=1.0, horizon=0, seed=3).decide(obs, masks)
    assert sizes and max(sizes) <= 16 and sum(sizes) == 8 * int(whole.searched.sum()), sizes
    assert len(sizes) == -(-int(whole.searched.sum()) // 2)  # two decisions of 8 worlds a group
    np.testing.assert_array_equal(split.moves, whole.moves)
    np.testing.assert_array_equal(split.searched, whole.searched)
    np.testing.assert_array_equal(split.values, whole.values)


def test_the_cap_holds_at_least_one_decision_of_the_most_worlds():
    from agents.search import MAX_WORLDS, MAX_WORLDS_AT_ONCE

    assert MAX_WORLDS <= MAX_WORLDS_AT_ONCE


def _hands(d) -> np.ndarray:
    return np.array([np.bincount(h, minlength=8)[1:] for h in d["hands"]], dtype=np.int64)


def _next_deals(states, keys, moves_seed: int) -> list[list[list[int]]]:
    """Each world's hands at its first deal after the round it starts in, its moves
    the first legal action each step."""
    from llama_env.batch import BatchGame

    of = np.arange(len(states))
    batch = BatchGame.from_worlds(
        states, of, np.stack([_hands(d) for d in states]), [d["draw_pile"] for d in states], seed=moves_seed,
        auto_reset=False, deal_keys=keys,
    )  # fmt: skip
    first = batch.snapshot(0)["round"]
    seen: dict[int, list[list[int]]] = {}
    for _ in range(400):
        for i in range(len(states)):
            snap = batch.snapshot(i)
            if i not in seen and snap["round"] != first and not snap["game_over"]:
                seen[i] = snap["hands"]
        if len(seen) == len(states) or batch.game_over.all():
            break
        live = ~batch.game_over
        batch.step(np.argmax(batch.legal_action_mask, axis=1), where=live)
    return [seen.get(i, []) for i in range(len(states))]


def test_worlds_with_deal_keys_deal_alike_in_any_batch():
    """The search's batches deal the later rounds from each world's key: a world deals the
    same next round whatever else shares its batch, and whatever the batch's seed."""
    from llama_env.engine import LlamaGame

    states = [LlamaGame(4, rng=s).to_dict() for s in range(4)]
    keys = np.array([11, 11, 12, 13])
    together = _next_deals(states, keys, 0)
    assert all(together) and together[0] == together[1] and together[2] != together[3]
    assert _next_deals(states[2:], keys[2:], 5) == together[2:]


def test_deal_keys_of_the_wrong_shape_are_refused_in_one_line():
    from llama_env.batch import BatchGame
    from llama_env.engine import LlamaGame

    d = LlamaGame(4, rng=0).to_dict()
    with pytest.raises(ValueError, match=r"^deal_keys must be 1 non-negative integers, one per world, got "):
        BatchGame.from_worlds([d], [0], _hands(d)[None], [d["draw_pile"]], deal_keys=[-1])
