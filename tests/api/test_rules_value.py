"""The rules as one value (:class:`llama_env.Rules`): immutable, validated when made, and
taken by the engine and both envs either as ``rules=`` or as the keyword options, never
both."""

from __future__ import annotations

import dataclasses
import pickle

import gymnasium as gym
import numpy as np
import pytest

import llama_env
from llama_env import LlamaEnv, LlamaGame, Rules
from llama_env.engine import (
    DECK_SIZE,
    DEFAULT_END_SCORE,
    DEFAULT_HAND_SIZE,
    DEFAULT_RULES,
    MAX_PLAYERS,
    MIN_PLAYERS,
    max_hand_size,
    rule_option_fields,
    table_sizes_allowing,
)


def test_rules_are_immutable_and_hashable():
    rules = Rules(3, end_score=30, hand_size=5)
    with pytest.raises(dataclasses.FrozenInstanceError):
        rules.end_score = 10  # type: ignore[misc]
    assert rules == Rules(3, 30, 5) and hash(rules) == hash(Rules(3, 30, 5))
    assert pickle.loads(pickle.dumps(rules)) == rules
    assert DEFAULT_RULES == Rules() == Rules(4, DEFAULT_END_SCORE, DEFAULT_HAND_SIZE)


def test_numpy_integers_become_plain_ints():
    rules = Rules(np.int64(3), end_score=np.int32(30), hand_size=np.uint8(5))
    assert rules == Rules(3, 30, 5)
    assert all(type(v) is int for v in rules.to_dict().values())


@pytest.mark.parametrize("field", ["num_players", "end_score", "hand_size"])
@pytest.mark.parametrize("value", [True, np.bool_(True), 3.0, "3", None])
def test_non_integers_and_bools_are_refused_by_name(field, value):
    with pytest.raises(ValueError, match=f"{field} must be an integer"):
        Rules(**{field: value})


@pytest.mark.parametrize("n", range(MIN_PLAYERS, MAX_PLAYERS + 1))
def test_the_hand_size_is_bounded_by_the_table(n):
    largest = max_hand_size(n)
    assert n * largest + 1 <= DECK_SIZE < n * (largest + 1) + 1
    assert Rules(n, hand_size=largest).hand_size == largest
    with pytest.raises(ValueError, match=f"hand_size must be between 1 and {largest} for {n} players"):
        Rules(n, hand_size=largest + 1)
    with pytest.raises(ValueError, match=f"hand_size must be between 1 and {largest} for {n} players"):
        Rules(n, hand_size=0)


def test_every_rule_option_declares_its_help_and_range():
    assert [f.name for f in rule_option_fields()] == [f.name for f in dataclasses.fields(Rules)][1:]
    for f in rule_option_fields():
        assert {"help", "flag_help", "low", "high"} <= set(f.metadata)
        assert f.metadata["low"] <= f.default
        assert f.metadata["high"] is None or f.default <= f.metadata["high"]
        with pytest.raises(ValueError, match=f"{f.name} must be between"):
            Rules(**{f.name: f.metadata["low"] - 1})


def test_changing_the_table_checks_again():
    rules = Rules(2, end_score=20, hand_size=20)
    assert rules.at(2) is rules
    assert Rules(2, end_score=20, hand_size=9).at(6) == Rules(6, 20, 9)
    with pytest.raises(ValueError, match="hand_size must be between 1 and 13 for 4 players"):
        rules.at(4)
    assert Rules.options_at([2, 3, 2], end_score=20) == {2: Rules(2, 20), 3: Rules(3, 20)}
    with pytest.raises(ValueError, match="for 6 players"):
        Rules.options_at([2, 6], hand_size=20)


def test_plain_data_round_trip_and_unknown_keys():
    rules = Rules(5, end_score=12, hand_size=3)
    assert Rules.from_dict(rules.to_dict()) == rules
    assert rules.options() == {"end_score": 12, "hand_size": 3}
    assert rules.brief() == "5 players, end score 12, hand size 3"
    with pytest.raises(ValueError, match="unknown rule option 'end'"):
        Rules.from_dict({"end": 12})


def test_for_table_defaults_or_checks_the_size():
    assert Rules.for_table(3) == Rules(3)
    assert Rules.for_table(3, Rules(3, end_score=9)) == Rules(3, end_score=9)
    with pytest.raises(ValueError, match="the rules are for 4 players .* but the table has 3 seats"):
        Rules.for_table(3, Rules(4))
    with pytest.raises(TypeError, match="rules must be a llama_env.Rules"):
        Rules.for_table(3, {"end_score": 9})  # type: ignore[arg-type]


# ------------------------------------------------------- rules= or the keywords, never both

RULES = Rules(5, end_score=12, hand_size=3)
KEYWORDS = {"num_players": 5, "end_score": 12, "hand_size": 3}

FACTORIES = {
    "LlamaGame": lambda **kw: LlamaGame(rng=0, **kw),
    "LlamaEnv": lambda **kw: LlamaEnv(**kw),
    "Llama-v0": lambda **kw: gym.make("Llama-v0", **kw),
    "raw_env": lambda **kw: llama_env.raw_env(**kw),
    "env": lambda **kw: llama_env.env(**kw),
}


def _rules_of(made):
    return made.rules if isinstance(made, LlamaGame) else made.unwrapped.rules


@pytest.mark.parametrize("factory", FACTORIES.values(), ids=FACTORIES.keys())
def test_rules_given_as_a_value_equal_the_keywords(factory):
    assert _rules_of(factory(rules=RULES)) == _rules_of(factory(**KEYWORDS)) == RULES
    assert _rules_of(factory()) == DEFAULT_RULES


@pytest.mark.parametrize("factory", FACTORIES.values(), ids=FACTORIES.keys())
@pytest.mark.parametrize("keyword", KEYWORDS)
def test_rules_and_a_keyword_option_together_are_refused(factory, keyword):
    with pytest.raises(ValueError, match=f"either as rules=Rules\\(...\\) or as {keyword}=..., not both"):
        factory(rules=RULES, **{keyword: KEYWORDS[keyword]})


@pytest.mark.parametrize("factory", FACTORIES.values(), ids=FACTORIES.keys())
def test_rules_must_be_a_rules_value(factory):
    with pytest.raises(TypeError, match="rules must be a llama_env.Rules"):
        factory(rules="5 players")  # (the Gym env also takes a mapping of the fields: EnvSpec.to_json's form)


def test_envs_built_either_way_play_the_same_games():
    by_value, by_keywords = LlamaEnv(rules=RULES, opponents="heuristic"), LlamaEnv(**KEYWORDS, opponents="heuristic")
    for env in (by_value, by_keywords):
        env.reset(seed=3)
        assert env.game is not None and env.game.rules == RULES
    assert by_value.game.to_dict() == by_keywords.game.to_dict()  # type: ignore[union-attr]
    assert by_value.observation_space == by_keywords.observation_space
    a, b = llama_env.raw_env(rules=RULES), llama_env.raw_env(**KEYWORDS)
    a.reset(seed=4)
    b.reset(seed=4)
    assert a.game.to_dict() == b.game.to_dict()
    assert a.observation_space("player_0") == b.observation_space("player_0")


def test_a_game_keeps_its_rules_through_snapshot_and_copy():
    game = LlamaGame(rules=RULES, rng=1)
    assert (game.num_players, game.end_score, game.hand_size) == (5, 12, 3)
    assert LlamaGame.from_dict(game.to_dict()).rules == RULES
    assert game.copy().rules == RULES


@pytest.mark.parametrize("data", [None, "abc", [("num_players", 3)]], ids=["None", "a string", "pairs"])
def test_rules_from_anything_but_a_mapping_is_refused_as_such(data):
    """None was "'NoneType' object is not iterable", a string "unknown rule option 'a'" and a
    list of pairs an unknown option named by the pair."""
    with pytest.raises(
        ValueError, match=r"^rules are a mapping of num_players, end_score, hand_size to integers, got "
    ):
        Rules.from_dict(data)


@pytest.mark.parametrize(
    ("options", "message"),
    [({"end_score": "x"}, "end_score must be an integer"), ({"hand": 3}, "unknown rule option 'hand'")],
)
def test_table_sizes_allowing_a_malformed_option_is_an_error_not_no_table(options, message):
    """It answered ``()``, "no table fits", for an option that is no option or no integer."""
    with pytest.raises(ValueError, match=message):
        table_sizes_allowing(**options)
    assert table_sizes_allowing(hand_size=11) == (2, 3, 4, 5)  # a large hand: fewer seats, no error
    assert table_sizes_allowing(hand_size=0) == table_sizes_allowing(hand_size=28) == ()  # no table takes it
