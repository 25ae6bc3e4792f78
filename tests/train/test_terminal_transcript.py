"""What a person reads and types in ``llama-rl play``: the moves are accepted in the
words the move list shows them in (or the key with its brackets), a refusal says to type
a move's key or its words, "a 6" is neither a card nor an action until it says which, the
counts agree with their nouns, the table wraps between cards at a narrow terminal, each
round's summary shows what every seat held and marks the person's seat, and a
transcript piped into a log (``| tee``) shows the moves typed."""

from __future__ import annotations

import io
import re

import pytest
from conftest import make_game

from llama_env.engine import Action, Rules
from train.cli import main
from train.play import terminal
from train.play.terminal import MoveError, PlayConfig, format_moves, parse_move, play


class _Terminal(io.StringIO):
    """A stream that says it is a terminal."""

    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize(
    ("typed", "action"),
    [
        ("play a llama", Action.PLAY_LLAMA),
        ("Play a 6", Action.PLAY_6),
        ("play an L", Action.PLAY_LLAMA),
        ("quit the round", Action.QUIT),
        ("quit round", Action.QUIT),
        ("draw a card", Action.DRAW),
        ("play 6", Action.PLAY_6),
        ("a7", Action.DRAW),
        ("action 7", Action.DRAW),
        ("[q]", Action.QUIT),  # the key as the list shows it, brackets and all
        ("[ L ]", Action.PLAY_LLAMA),
        ("[d]", Action.DRAW),
    ],
)
def test_a_move_is_taken_in_the_words_the_list_shows(typed, action):
    """The list shows "[L] play a llama" and "[q] quit the round"; typing those words
    was "I don't understand"."""
    game = make_game(num_players=2, hands=[[6, 7], [1, 2]], top=6)
    assert parse_move(typed, game) == action


def test_every_move_listed_is_taken_by_its_key_and_by_its_words():
    game = make_game(num_players=2, hands=[[1, 6, 7], [1, 2]], top=6)
    listed = re.findall(r"\[(\S+)\] (.+?)(?=   \[|$)", format_moves(game.legal_actions()))
    assert len(listed) == len(game.legal_actions()) == 4
    for (key, words), action in zip(listed, game.legal_actions(), strict=True):
        assert parse_move(key, game) == parse_move(words, game) == action


def test_words_for_a_card_not_in_the_deck_name_the_cards():
    game = make_game(num_players=2, hands=[[6, 7], [1, 2]], top=6)
    with pytest.raises(MoveError, match="there is no card 9: the cards are 1 to 6 and the llama"):
        parse_move("play a 9", game)


@pytest.mark.parametrize("typed", ["a 6", "A  6", "a 7"])
def test_a_and_a_number_apart_is_refused_naming_both_readings(typed):
    """The list shows "play a 6", and "a 6" was action 6: a llama played where a 6 was meant."""
    game = make_game(num_players=2, hands=[[6, 7], [1, 2]], top=6)
    n = typed[-1]
    with pytest.raises(MoveError) as info:
        parse_move(typed, game)
    assert str(info.value) == (
        f"{typed.strip()!r} could mean play a {n} or action {n}: type {n} to play the card, a{n} for the action"
    )


@pytest.mark.parametrize(
    ("typed", "message"),
    [
        ("a 0", "there is no card 0: the cards are 1 to 6 and the llama (L); a0 is action 0"),
        ("a 8", "there is no card 8: the cards are 1 to 6 and the llama (L); a8 is action 8"),
        ("a 08", "there is no card 08: the cards are 1 to 6 and the llama (L); a8 is action 8"),
        ("a 9", "there is no card 9 and no action 9: the cards are 1 to 6 and the llama (L), actions 0..8"),
        ("a  12", "there is no card 12 and no action 12: the cards are 1 to 6 and the llama (L), actions 0..8"),
    ],
)
def test_a_and_a_number_that_is_no_card_is_not_called_both(typed, message):
    """Only a 1 .. a 7 read two ways: "a 9" said to type 9 or a9, and neither is a move."""
    game = make_game(num_players=2, hands=[[6, 7], [1, 2]], top=6)
    with pytest.raises(MoveError) as info:
        parse_move(typed, game)
    assert str(info.value) == message


def test_input_not_understood_says_to_type_a_key_or_its_words():
    game = make_game(num_players=2, hands=[[6, 7], [1, 2]], top=6)
    with pytest.raises(
        MoveError,
        match=r"^I don't understand 'play the big one': type a move's key \(shown in brackets\) or its words$",
    ):
        parse_move("play the big one", game)
    with pytest.raises(MoveError, match=r"^I don't understand '\[xyz\]'"):
        parse_move("[xyz]", game)
    out = io.StringIO()
    play(PlayConfig(Rules(2), opponents=("random",), seed=0), io.StringIO("xyz\nexit\n"), out)
    refusal = next(line for line in out.getvalue().splitlines() if line.startswith("I don't"))
    assert re.fullmatch(
        r"I don't understand 'xyz': type a move's key \(shown in brackets\) or its words\. Your moves: \[.*", refusal
    )


def test_one_point_and_one_opponent_are_singular():
    """ "reaches 1 points" and "give one opponent for all 1 other seats or exactly 1
    opponents"."""
    out = io.StringIO()
    play(PlayConfig(Rules(2, end_score=1), opponents=("random",), seed=0), io.StringIO("exit\n"), out)
    assert "someone reaches 1 point; the lowest" in out.getvalue()
    with pytest.raises(ValueError) as info:
        PlayConfig(Rules(2), opponents=("random", "random")).validate()
    assert str(info.value) == "give one opponent for the other seat, got 2"
    with pytest.raises(ValueError, match="for all 2 other seats or exactly 2 opponents, got 3"):
        PlayConfig(Rules(3), opponents=("random",) * 3).validate()


def test_a_transcript_piped_into_a_log_shows_the_moves_typed():
    """``llama-rl play | tee game.log``: the terminal showed what was typed, the log
    did not ("Your move> You quit the round.")."""
    out = io.StringIO()
    play(PlayConfig(Rules(2), opponents=("random",), seed=0), _Terminal("xyz\nq\nexit\n"), out)
    text = out.getvalue()
    assert "Your move> xyz\nI don't understand 'xyz'" in text
    assert "Your move> q\nYou quit the round." in text
    assert "Your move> exit\nYou left the game unfinished." in text


def test_a_terminal_is_not_echoed_what_it_shows_itself():
    out = _Terminal()
    play(PlayConfig(Rules(2), opponents=("random",), seed=0), _Terminal("q\nexit\n"), out)
    assert "Your move> You quit the round." in out.getvalue()  # the terminal showed the "q" and its newline


def test_a_narrow_terminal_wraps_the_table_between_cards(monkeypatch):
    """At COLUMNS=40 the rows of the table ran past the edge and wrapped inside a hand."""
    monkeypatch.setenv("COLUMNS", "40")
    out = _Terminal()
    moves = "x\nhelp\n4\nq\n" * 300  # refusals and help too
    config = PlayConfig(Rules(3, end_score=20), opponents=("heuristic",), seed=3)
    assert play(config, _Terminal(moves), out) == terminal.EXIT_FINISHED
    assert play(config, _Terminal("help\n"), out) == terminal.EXIT_LEFT  # and the line that says input ended
    # a terminal ends the prompt's line with the move typed there, which this stream does not show
    lines = [line.removeprefix("Your move> ") for line in out.getvalue().splitlines()]
    assert (
        sum(bool(re.match(r"[* ] player_\d|  player_\d|    |Your moves:|            \[", line)) for line in lines) > 10
    )
    # refusals, broken between words, the line after the moves that help shows, the end of input: checked too
    for start in ("I don't", "Type 'exit'", "End of input"):
        assert any(line.startswith(start) for line in lines), start
    assert all(len(line) <= 40 for line in lines), [line for line in lines if len(line) > 40]
    assert any(re.fullmatch(r"    (?:held )?[1-6L]( [1-6L])*", line) for line in lines)


def test_watch_wraps_every_line_at_a_narrow_terminal(monkeypatch):
    """watch's opening line, which names every seat's agent, ran past the edge."""
    monkeypatch.setenv("COLUMNS", "40")
    out = _Terminal()
    config = terminal.WatchConfig(agents=("heuristic", "random:seed=5", "heuristic"), seed=2, delay=0)
    assert terminal.watch(config, out) == terminal.EXIT_FINISHED
    lines = out.getvalue().splitlines()
    assert lines[0] == "L.L.A.M.A. with 3 players: player_0 ="
    assert any("over:" in line for line in lines)
    assert all(len(line) <= 40 for line in lines), [line for line in lines if len(line) > 40]


class _Resizing(_Terminal):
    """Typed moves at a terminal that is made narrower after the first one is read."""

    def __init__(self, text: str, monkeypatch, columns: int) -> None:
        super().__init__(text)
        self.monkeypatch, self.columns = monkeypatch, columns

    def readline(self, *args) -> str:
        line = super().readline(*args)
        self.monkeypatch.setenv("COLUMNS", str(self.columns))
        return line


def test_a_resized_terminal_is_followed_at_the_next_prompt(monkeypatch):
    """The width was read once, when the game began: a terminal made narrower got lines
    as wide as it had been."""
    monkeypatch.setenv("COLUMNS", "200")
    out = _Terminal()
    moves = "x\n4\nq\n" * 300
    config = PlayConfig(Rules(3, end_score=20, hand_size=15), opponents=("heuristic",), seed=3)
    assert play(config, _Resizing(moves, monkeypatch, 40), out) == terminal.EXIT_FINISHED
    text = out.getvalue()
    before, after = text.split("Your move> ", 1)
    assert max(len(line) for line in before.splitlines()) > 40  # the table was laid out at 200 columns
    lines = [line.removeprefix("Your move> ") for line in after.splitlines()]
    assert "over:" in after and any(line.startswith("I don't") for line in lines)
    assert all(len(line) <= 40 for line in lines), [line for line in lines if len(line) > 40]


class _ResizedAfter(_Terminal):
    """A terminal that is made narrower once ``mark`` has been written to it."""

    def __init__(self, mark: str, monkeypatch, columns: int) -> None:
        super().__init__()
        self.mark, self.monkeypatch, self.columns = mark, monkeypatch, columns

    def write(self, text: str) -> int:
        if self.mark in text:
            self.monkeypatch.setenv("COLUMNS", str(self.columns))
        return super().write(text)


def test_a_resized_terminal_is_followed_by_watch(monkeypatch):
    """watch read the width of each round's hands again, and its other lines wrapped to none."""
    monkeypatch.setenv("COLUMNS", "200")
    out = _ResizedAfter("Round 2:", monkeypatch, 34)
    config = terminal.WatchConfig(agents=("heuristic",) * 3, rules=Rules(3, hand_size=12), seed=4, delay=0)
    assert terminal.watch(config, out) == terminal.EXIT_FINISHED
    before, after = out.getvalue().split("Round 2:", 1)
    assert max(len(line) for line in before.splitlines()) > 34  # laid out at 200 columns
    lines = after.splitlines()[1:]  # the resize came as "Round 2: ..." was written
    assert len(lines) > 20 and "over:" in after
    assert all(len(line) <= 34 for line in lines), [line for line in lines if len(line) > 34]


def test_a_round_summary_in_play_marks_you_and_shows_the_hands():
    out = io.StringIO()
    config = PlayConfig(Rules(2), opponents=("heuristic",), seat=1, seed=1)
    assert play(config, io.StringIO("q\n" * 500), out) == terminal.EXIT_FINISHED
    text = out.getvalue()
    rows = re.findall(r"^  player_1 \(you\) +[+-]\d+  -> \d+ +(?:held [1-6L ]+|went out)$", text, re.M)
    assert len(rows) == len(re.findall(r"^Round \d+ over: ", text, re.M)) >= 2


def test_watch_wraps_each_hand_at_a_narrow_terminal(monkeypatch):
    monkeypatch.setenv("COLUMNS", "30")
    out = _Terminal()
    config = terminal.WatchConfig(agents=("heuristic",) * 2, rules=Rules(2, hand_size=20), seed=1, delay=0)
    terminal.watch(config, out)
    hands = [line for line in out.getvalue().splitlines() if re.fullmatch(r" +(player_\d +)?[1-6L]( [1-6L])*", line)]
    assert len(hands) >= 6 and all(len(line) <= 30 for line in hands), hands


def test_play_help_says_how_moves_are_typed(capsys):
    """The help said only "key in brackets" and a7, where the guide and the game take
    [q], 'action 7' and the words, and refuse 'a 7'."""
    assert main(["play", "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    for said in ("[q]", "'play a llama'", "'a7' or 'action 7'", "'a 7', with a space, is refused"):
        assert said in text, said
