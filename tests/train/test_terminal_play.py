"""Terminal play and watch: what the transcript shows."""

from __future__ import annotations

import io

import pytest

from llama_env.engine import LlamaGame
from train.play.terminal import MoveError, WatchConfig, parse_move, watch


def test_watch_heads_each_round_once_with_its_top_card():
    out = io.StringIO()
    watch(WatchConfig(("heuristic", "heuristic"), seed=1, delay=0), out)
    text = out.getvalue()
    assert "Round 2: " in text
    for r in range(2, 10):
        assert text.count(f"Round {r}: ") <= 1, text
        assert f"Round {r}: player_0 starts." not in text and f"Round {r}: player_1 starts." not in text


def test_a_long_unparseable_move_is_cut_in_its_refusal():
    with pytest.raises(MoveError) as info:
        parse_move("x" * 100_000, LlamaGame(3, rng=0))
    msg = str(info.value)
    assert len(msg) < 100 and msg.startswith("I don't understand 'xxx") and msg.endswith("...")
