"""The text and SVG pictures of a table, and the summary of a round, refuse a viewer off
the table, names that do not label every seat or are not strings, and a ``reveal`` that
is not a bool, instead of drawing no hand, every hand, or failing with a bare
IndexError."""

from __future__ import annotations

import numpy as np
import pytest

from llama_env.engine import LlamaGame
from llama_env.render import render_round_summary, render_table
from llama_env.render_svg import table_svg


@pytest.mark.parametrize("seat", [3, -1, 7, True, 1.0])
def test_a_viewer_off_the_table_is_refused(seat):
    """A seat outside the table drew the table with no hand and no "(you)"."""
    game = LlamaGame(3, rng=0)
    with pytest.raises(ValueError, match="seat must be 0..2 at a 3-player table"):
        render_table(game, seat)
    with pytest.raises(ValueError, match="seat must be 0..2 at a 3-player table"):
        table_svg(game, seat)


@pytest.mark.parametrize("names", [["a", "b"], ["a", "b", "c", "d"], []])
def test_names_that_do_not_label_every_seat_are_refused(names):
    """A short list was an IndexError from inside the drawing."""
    game = LlamaGame(3, rng=0)
    with pytest.raises(ValueError, match=f"names must label all 3 seats, got {len(names)}"):
        render_table(game, 0, names)
    with pytest.raises(ValueError, match=f"names must label all 3 seats, got {len(names)}"):
        table_svg(game, 0, names=names)


def test_a_seat_of_the_table_a_spectator_and_full_names_still_draw():
    game = LlamaGame(3, rng=0)
    assert "ann (you)" in render_table(game, np.int64(1), ("bob", "ann", "cy"))
    assert "ann (you)" in table_svg(game, np.int64(1), names=("bob", "ann", "cy"))
    assert "(you)" not in table_svg(game, None)


def _a_round_result(n: int = 3):
    game = LlamaGame(n, rng=0)
    while True:
        result = game.step(game.legal_actions()[-1])
        if result is not None:
            return result


@pytest.mark.parametrize("names", [["a"], ["a", "b", "c", "d"], []])
def test_a_round_summary_refuses_names_that_do_not_label_every_seat(names):
    """One name was an IndexError halfway through, four at three seats were taken."""
    with pytest.raises(ValueError, match=f"names must label all 3 seats, got {len(names)}"):
        render_round_summary(_a_round_result(), names)


def test_a_round_summary_names_each_seat():
    text = render_round_summary(_a_round_result(), ("ann", "bob", "cy"))
    assert [line.split()[0] for line in text.splitlines()[1:4]] == ["ann", "bob", "cy"]
    assert "player_2" in render_round_summary(_a_round_result())


@pytest.mark.parametrize(
    ("names", "match"), [([1, 2, 3], r"got 1 \(int\) for seat 0"), ("abc", "got the string 'abc'")]
)
def test_names_that_are_not_strings_are_refused(names, match):
    """Integers were an AttributeError inside table_svg (name.lower()); one string of
    three letters named the three seats a, b and c."""
    game = LlamaGame(3, rng=0)
    for draw in (lambda: render_table(game, 0, names), lambda: table_svg(game, 0, names=names)):
        with pytest.raises(ValueError, match=match):
            draw()


@pytest.mark.parametrize("reveal", ["no", 1, None])
def test_reveal_must_be_a_bool(reveal):
    """reveal="no" showed every hand to a spectator."""
    game = LlamaGame(3, rng=0)
    with pytest.raises(TypeError, match="reveal must be True or False"):
        table_svg(game, None, reveal=reveal)
    assert "data-card" not in table_svg(game, None, reveal=False).split("top", 1)[1]
