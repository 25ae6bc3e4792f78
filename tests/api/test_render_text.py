"""The text table and round summary a person reads in a terminal: each seat's scored
cards and points at a round's end, the person's seat marked, rows wrapped between cards
(never inside a hand) at a narrow width, and counts that agree with their nouns."""

from __future__ import annotations

import pytest
from conftest import make_game

from llama_env.engine import Action, LlamaGame
from llama_env.render import plural, render_round_summary, render_table, wrap_row


def _round_over():
    """Round 2 ends with player_0 going out; player_1 holds 2 5 (+7), player_2 1 6 6 6
    (+7: a value counts once)."""
    game = make_game(num_players=3, hands=[[3], [2, 5], [1, 6, 6, 6]], top=3, scores=[12, 0, 5])
    return game.step(Action.PLAY_3)


def test_a_round_summary_shows_what_each_seat_held_and_marks_you():
    """The summary showed only each seat's points: not the cards that cost them, nor
    which seat was the person's."""
    text = render_round_summary(_round_over(), ("ann", "bob", "cy"), you=1)
    assert text.splitlines() == [
        "Round 2 over: ann went out.",
        "  ann                 -10  -> 2    went out",
        "  bob (you)            +7  -> 7    held 2 5",
        "  cy                   +7  -> 12   held 1 6 6 6",
    ]


def test_a_round_summary_marks_no_seat_without_you():
    assert "(you)" not in render_round_summary(_round_over())


def test_a_round_summary_refuses_a_you_off_the_table():
    with pytest.raises(ValueError, match="seat must be 0..2 at a 3-player table"):
        render_round_summary(_round_over(), you=3)


def test_a_narrow_table_wraps_between_cards_not_inside_a_hand():
    """At 40 columns each row was one long line that the terminal cut inside a hand."""
    game = make_game(num_players=3, hands=[[1, 2, 3, 4, 5, 6, 7, 7, 7, 2, 3], [2, 5], [1, 6]], top=3)
    text = render_table(game, 0, width=40)
    lines = text.splitlines()
    assert all(len(line) <= 40 for line in lines), lines
    cards = [line for line in lines if line.startswith("    ")]
    assert " ".join(" ".join(line.split()) for line in cards[:-2]) == "1 2 2 3 3 4 5 6 L L L"
    assert "    2 cards" in lines
    assert render_table(game, 0) == render_table(game, 0, width=200)  # wide: one line a seat


def test_a_wide_enough_row_keeps_its_hand_beside_it_wrapping_under_it():
    lines = wrap_row("ab: ", ["1", "2", "3", "4", "5", "6", "7", "8", "9"], width=16)
    assert lines == ["ab: 1 2 3 4 5 6", "    7 8 9"]


def test_a_narrow_round_summary_wraps_between_cards():
    lines = render_round_summary(_round_over(), you=2, width=36).splitlines()
    assert all(len(line) <= 36 for line in lines), lines
    assert "    held 1 6 6 6" in lines


@pytest.mark.parametrize(("n", "text"), [(0, "0 cards"), (1, "1 card"), (2, "2 cards")])
def test_plural(n, text):
    assert plural(n, "card") == text


def test_a_hand_of_one_card_is_one_card():
    game = make_game(num_players=2, hands=[[1, 2], [5]], top=3)
    assert "1 card\n" in render_table(game, 0) + "\n" and "1 cards" not in render_table(game, 0)


def test_a_game_dealt_at_random_still_renders():
    assert "(you)" in render_table(LlamaGame(3, rng=0), 0, width=40)


@pytest.mark.parametrize("width", [30, 31, 32, 35, 36])
def test_a_phone_wide_terminal_keeps_each_seats_score_on_its_row(width):
    """Below about 34 columns the names' padding of 18 pushed the rows past the edge, and
    a seat's score or status broke onto a line of its own."""
    game = make_game(num_players=3, hands=[[1, 2, 3, 4, 5, 6], [2, 5], [1, 6]], top=3)
    table = render_table(game, 1, width=width).splitlines()[1:]
    summary = render_round_summary(_round_over(), you=2, width=width).splitlines()[1:]
    for lines in (table, summary):
        assert all(len(line) <= width for line in lines), lines
    rows = [line for line in table if "score" in line]
    assert [row.split()[-1] for row in rows] == ["in", "in", "in"]
    assert [line.split()[0] for line in summary if "->" in line] == ["player_0", "player_1", "player_2"]
    scored = [line for line in summary if "->" in line]
    assert all(line.index("->") == scored[0].index("->") for line in scored)  # aligned


@pytest.mark.parametrize("width", [20, 24, 29])
def test_a_terminal_too_narrow_for_a_name_beside_its_score_puts_the_name_above(width):
    """Below about 30 columns a seat's name, its score and its status could not share a
    line: the rows broke wherever the terminal cut them, and the table's first line
    (37 characters) broke inside a word."""
    game = make_game(num_players=3, hands=[[1, 2, 3, 4, 5, 6], [2, 5], [1, 6]], top=3, scores=[0, 12, 5])
    names = ["ann", "search:worlds=16", "bob"]
    table = render_table(game, 0, names, width=width).splitlines()
    summary = render_round_summary(_round_over(), names, you=0, width=width).splitlines()
    for lines in (table, summary):
        assert all(len(line) <= width for line in lines), lines
    head = table[: table.index("* ann (you)")]
    assert len(head) > 1 and [part for line in head for part in line.split(" | ")] == [
        f"Round {game.round}",
        "top card: 3",
        "draw pile: 45",
    ]
    for who, score in (("* ann (you)", 0), ("  search:worlds=16", 12), ("  bob", 5)):
        row = table[table.index(who) + 1].split()
        assert row[:3] == ["score", str(score), "in"], table
    assert " ".join(summary[: summary.index("  ann (you)")]) == "Round 2 over: ann went out."
    row = summary.index("  search:worlds=16")
    assert " ".join(" ".join(summary[row + 1 : row + 3]).split()).startswith("+7 -> 7 held 2 5"), summary


def test_a_wide_terminal_pads_the_names_as_without_a_width():
    game = make_game(num_players=3, hands=[[1, 2], [2, 5], [1, 6]], top=3)
    assert render_table(game, 0, width=80) == render_table(game, 0)
    assert render_round_summary(_round_over(), width=80) == render_round_summary(_round_over())
