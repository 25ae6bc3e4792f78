"""The text and SVG pictures of a table refuse a viewer off the table and names that do
not label every seat, instead of drawing no hand or failing with a bare IndexError."""

from __future__ import annotations

import numpy as np
import pytest

from llama_env.engine import LlamaGame
from llama_env.render import render_table
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
