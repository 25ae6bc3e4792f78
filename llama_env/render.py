"""Text rendering of a table, shared by the envs and the terminal player.

Shows what one seat may know: its own hand, the top card, the draw pile size, the
others' hand sizes, who has quit and the scores; never another seat's cards until a round
is scored, when every hand is shown. Given a ``width`` (a terminal's columns, which the
caller reads), rows too long for it wrap between cards, never inside one.
"""

from __future__ import annotations

from collections.abc import Sequence

from llama_env.engine import LlamaGame, RoundResult, brief, check_seat

CARD_NAMES = {1: "1", 2: "2", 3: "3", 4: "4", 5: "5", 6: "6", 7: "L"}


def card_str(card: int) -> str:
    """Short name of a card code: ``"1"``..``"6"``, ``"L"`` for a llama."""
    return CARD_NAMES[int(card)]


def plural(count: int, noun: str) -> str:
    """``count`` and ``noun``, plural unless ``count`` is 1: ``"1 card"``, ``"3 cards"``."""
    return f"{count} {noun}{'' if count == 1 else 's'}"


WRAP_ROOM = 8
"""The fewest columns a row's items wrap in beside its start; with less room they go on
the lines below it, indented 4."""


def wrap_row(prefix: str, items: Sequence[str], width: int | None, sep: str = " ") -> list[str]:
    """The line ``prefix`` followed by ``items`` (cards, moves) joined by ``sep``, as lines
    of at most ``width`` characters that break only between items: under the first item
    when the room beside ``prefix`` holds the longest item and :data:`WRAP_ROOM`
    columns (or ``prefix`` is blank), else from the next line, indented 4 (an item longer
    than the room is a line of its own). ``width=None``, or a line that fits, is the one
    line unchanged."""
    line = prefix + sep.join(items)
    if width is None or len(line) <= width or not items:
        return [line]
    longest = max(len(item) for item in items)
    if width - len(prefix) >= max(longest, WRAP_ROOM) or not prefix.strip():  # (nothing to indent under)
        lines, indent = [prefix], " " * len(prefix)
    else:
        lines, indent = [prefix.rstrip(), "    "], "    "
    fresh = True  # nothing on the last line yet but its start
    for item in items:
        if not fresh and len(lines[-1]) + len(sep) + len(item) > width:
            lines.append(indent)
            fresh = True
        lines[-1] += item if fresh else sep + item
        fresh = False
    return lines


NAME_COLUMN = 18
"""The columns a seat's label is padded to in :func:`render_table`'s and
:func:`render_round_summary`'s rows, so that the scores line up under each other."""


def name_column(labels: Sequence[str], width: int | None, rest: int) -> int | None:
    """The columns to pad ``labels`` to in rows whose other parts take ``rest`` columns:
    :data:`NAME_COLUMN` where the row fits in ``width`` (or no width is given), else the
    longest label's, so that a narrow terminal (a phone's) keeps a seat's score on its row
    where the padding pushed it past the edge and the row broke between words; ``None``
    where even the longest label leaves no room for the rest: each label then takes a line
    of its own above its row (:func:`seat_rows`)."""
    longest = max(len(label) for label in labels)
    if width is None or max(NAME_COLUMN, longest) + rest <= width:
        return NAME_COLUMN
    return longest if longest + rest <= width else None


def seat_rows(start: str, label: str, pad: int | None, rest: str, items: Sequence[str], width: int | None) -> list[str]:
    """A seat's row: ``start`` (its marks), ``label`` padded to ``pad`` columns, ``rest``
    (its score, status) and ``items`` (cards) wrapped to ``width`` (:func:`wrap_row`); with
    ``pad`` ``None`` (:func:`name_column`: too narrow a terminal), the label on a line of
    its own and the rest on the next, indented 4, so that the label never breaks the row."""
    if pad is None:
        return [f"{start}{label}".rstrip(), *wrap_row(f"    {rest}", items, width)]
    return wrap_row(f"{start}{label:<{pad}} {rest}", items, width)


def wrap_words(text: str, width: int | None) -> list[str]:
    """``text`` as lines of at most ``width`` characters broken between words (a word
    longer than that a line of its own); ``width=None``, or a text that fits, the one line."""
    if width is None or len(text) <= width:
        return [text]
    return wrap_row("", text.split(" "), width)


def seat_label(seat: int, names: Sequence[str] | None = None, you: int | None = None) -> str:
    """``names[seat]``, or ``player_<seat>`` without names; ``(you)`` after it where
    ``seat`` is ``you``."""
    return (names[seat] if names else f"player_{seat}") + (" (you)" if seat == you else "")


def seat_names(names: Sequence[str] | None, num_players: int) -> list[str]:
    """``names`` as a list labelling each seat of a ``num_players`` table (``player_<seat>``
    without them); a list of another length, or one of anything but strings (or one
    string, whose letters would name the seats), is a ``ValueError``, not an
    ``IndexError`` or ``AttributeError`` halfway through a drawing."""
    if names is None:
        return [f"player_{p}" for p in range(num_players)]
    if isinstance(names, str):
        raise ValueError(f"names must be a list of strings, one per seat, got the string {brief(names)}")
    if len(names) != num_players:
        raise ValueError(f"names must label all {num_players} seats, got {len(names)}")
    for p, name in enumerate(names):
        if not isinstance(name, str):
            raise ValueError(f"names must be strings, got {brief(name)} ({type(name).__name__}) for seat {p}")
    return list(names)


def render_table(game: LlamaGame, seat: int, names: Sequence[str] | None = None, width: int | None = None) -> str:
    """The table as ``seat`` sees it, its rows wrapped between cards to ``width``
    columns (``None``: a line a seat). A seat off the table, or ``names`` that do not
    label every seat, is a ``ValueError``."""
    seat = check_seat(seat, game.num_players)  # else: no hand, no "(you)", silently
    names = seat_names(names, game.num_players)
    head = [f"Round {game.round}", f"top card: {card_str(game.top_card)}", f"draw pile: {len(game.draw_pile)}"]
    lines = wrap_row("", head, width, sep=" | ")
    labels = [seat_label(p, names, you=seat) for p in range(game.num_players)]
    rests = [f"score {game.scores[p]:>3}  {'quit' if game.quit[p] else 'in':<4}  " for p in range(game.num_players)]
    pad = name_column(labels, width, 3 + max(len(rest.rstrip()) for rest in rests))  # the row but its name, cards
    for p, who in enumerate(labels):
        me = p == seat
        turn = "*" if (p == game.current_player and not game.game_over) else " "
        cards = [card_str(c) for c in game.hand(p)] if me else [plural(game.hand_size_of(p), "card")]
        lines += seat_rows(f"{turn} ", who, pad, rests[p], cards, width)
    return "\n".join(lines)


def render_round_summary(
    result: RoundResult, names: Sequence[str] | None = None, you: int | None = None, width: int | None = None
) -> str:
    """What a round cost each seat: the points, the score after it and the cards it held
    (all shown at scoring; a value held twice counts once), or that it went out; ``you``
    marks a seat ``(you)``; rows wrap between cards to ``width`` columns as
    :func:`render_table`'s. A ``you`` off the table, or ``names`` that do not label every
    seat, is a ``ValueError``."""
    names = seat_names(names, len(result.scores))
    if you is not None:
        you = check_seat(you, len(result.scores))
    if result.went_out is None:
        head = f"Round {result.round} over: everybody quit."
    else:
        head = f"Round {result.round} over: {seat_label(result.went_out, names)} went out."
    lines = wrap_words(head, width)
    hands = result.hands
    labels = [seat_label(p, names, you) for p in range(len(result.scores))]
    changes = [
        f"+{pen}" if pen else ("-" + str(ret) if ret else "+0")
        for pen, ret in zip(result.penalties, result.returned, strict=True)
    ]
    rests = [f"{change:>4}  -> {score:<4} " for change, score in zip(changes, result.scores, strict=True)]
    pad = name_column(labels, width, 3 + max(len(rest.rstrip()) for rest in rests))  # the row but its name
    for p, rest in enumerate(rests):
        if not hands:  # a result built without them: the row ends at the score
            what = []
        else:
            what = ["went out"] if p == result.went_out else ["held", *map(card_str, hands[p])]
        lines += [line.rstrip() for line in seat_rows("  ", labels[p], pad, rest, what, width)]
    if result.game_over:
        best = min(result.scores)
        won = [seat_label(p, names) for p, s in enumerate(result.scores) if s == best]
        verdict = "wins" if len(won) == 1 else "share the victory"
        lines += wrap_words(f"Game over: {' and '.join(won)} {verdict} with {best}.", width)
    return "\n".join(lines)
