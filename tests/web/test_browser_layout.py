"""How the page of ``llama-rl serve`` looks, in a real headless Chromium (the server and
the browser are test_browser.py's fixtures): the history fits a phone, and what cannot
be played or is out of the round looks so while its words stay readable (WCAG's 4.5:1
for text).
"""

from __future__ import annotations

import re
from typing import Any

import httpx
import pytest
import test_browser
from selenium.webdriver.common.by import By
from test_browser import BROKEN_WORDS, DESKTOP, PHONE, SMALL_PHONE, Screen, console_errors, idle, open_page, wait
from test_game_history import T0, play_record

site = test_browser.site
browser = test_browser.browser
_module_browser = test_browser._module_browser  # (each module has a browser of its own)

# --------------------------------------------------------------------------- the history on a phone


PHONE_360 = Screen("phone 360", 360, 740, phone=True)

IN_VIEW = """
const inside = (e) => {
  const r = e.getBoundingClientRect();
  return r.width > 0 && r.left >= 0 && r.right <= innerWidth;
};
const ratings = [...document.querySelectorAll('#ratings tr')].slice(1).map((tr) => tr.children[6]);
return {
  replay: [...document.querySelectorAll('button.replay')].map(inside),
  rating: ratings.map(inside),
  ratingText: ratings.map((td) => td.innerText),
  boxes: [...document.querySelectorAll('#history .scroll')].map((s) => s.scrollWidth <= s.clientWidth),
};
"""


@pytest.mark.parametrize("screen", [PHONE_360, PHONE, SMALL_PHONE], ids=lambda s: s.name)
def test_the_history_on_a_phone_shows_each_rating_and_replay_button_without_scrolling(site, browser, screen):
    """At 360 px the ratings table was 505 px wide in a 324 px box and the games' 402:
    Replay sat at x=340..421 (7 px of it in view) and the rating beyond the screen, with
    nothing to say the boxes scrolled. Now each row is laid out to fit: every Replay
    button and every rating is in view, and neither box scrolls."""
    names = ["Bartholomew Featherstonehaugh", "cautious:threshold=3", "greedy", "random"]
    for k in range(3):
        record, _ = play_record(
            k, ["heuristic", "random", "heuristic", "random"], names=names, labels=["person", *names[1:]]
        )
        site.history.save(record, people=[True, False, False, False], finished=T0 + k)
    driver = browser
    open_page(driver, f"{site.url}/#history", screen)
    wait(driver, 10).until(lambda d: len(d.find_elements(By.CSS_SELECTOR, "button.replay")) == 3)
    seen = driver.execute_script(IN_VIEW)
    assert seen["replay"] == [True] * 3, seen
    assert seen["rating"] == [True] * 4 and all(re.fullmatch(r"-?\d+\.\d", t) for t in seen["ratingText"]), seen
    assert seen["boxes"] == [True, True], seen
    assert driver.execute_script("return document.documentElement.scrollWidth <= innerWidth")
    # words whole, but for a spec wider than the name's column (below 390 px)
    broken = driver.execute_script(BROKEN_WORDS, "#history td, #history th, #history button")
    assert broken == [] if screen.width >= PHONE.width else set(broken) <= {"cautious:threshold=3"}, broken
    assert console_errors(driver) == []


def test_the_history_on_a_wide_screen_keeps_every_column(site, browser):
    """The phone's layout is the phone's: on a laptop the ratings show all eight columns."""
    record, _ = play_record(0, ["heuristic", "random"])
    site.history.save(record, people=[False, False], finished=T0)
    driver = browser
    open_page(driver, f"{site.url}/#history", DESKTOP)
    wait(driver, 10).until(lambda d: d.find_elements(By.CSS_SELECTOR, "button.replay"))
    heads = [th.text for th in driver.find_elements(By.CSS_SELECTOR, "#ratings th")]
    assert heads == ["#", "name", "kind", "games", "wins", "win share", "rating", "mu ± σ"]


# --------------------------------------------------------------------------- what is out of play


def _rgba(css: str) -> tuple[float, float, float, float]:
    """A computed colour (``rgb(1, 2, 3)`` or ``rgba(1, 2, 3, 0.5)``) as 0..255 channels and alpha."""
    parts = [float(x) for x in re.findall(r"[\d.]+", css)]
    return (parts[0], parts[1], parts[2], parts[3] if len(parts) > 3 else 1.0)


def _over(top: str, below: tuple[float, float, float]) -> tuple[float, float, float]:
    r, g, b, a = _rgba(top)
    return (r * a + below[0] * (1 - a), g * a + below[1] * (1 - a), b * a + below[2] * (1 - a))


def contrast(a: tuple[float, ...], b: tuple[float, ...]) -> float:
    """WCAG's contrast ratio of two sRGB colours (0..255 channels)."""

    def luminance(c: tuple[float, ...]) -> float:
        lin = [v / 255 / 12.92 if v / 255 <= 0.03928 else ((v / 255 + 0.055) / 1.055) ** 2.4 for v in c[:3]]
        return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]

    hi, lo = sorted((luminance(a), luminance(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


BOARD_LIGHTEST = (0x2E, 0x7D, 0x32)
"""The board's lightest green (its gradient's centre): text over it has the least contrast."""


def api(at: Any, method: str, path: str, token: str | None = None, **body: Any) -> dict[str, Any]:
    headers = {"X-Llama-Token": token} if token else {}
    r = httpx.request(method, at.url + path, json=body if method == "POST" else None, headers=headers)
    assert r.status_code < 300, r.text
    return r.json()


def _game_with_a_seat_out(at: Any) -> tuple[str, str]:
    """A watched game of agents stepped until a seat has quit the round (its id and token)."""
    seats = [{"agent": "heuristic"}, {"agent": "random"}, {"agent": "greedy"}]
    state = api(at, "POST", "/api/games", seats=seats, seed=1)
    game, token = state["id"], state["token"]
    for _ in range(300):
        seats = state["table"]["seats"]
        if any(s["quit"] for s in seats) and not state["table"]["game_over"]:
            return game, token
        state = api(at, "POST", f"/api/games/{game}/step", token, moves=1)
    raise AssertionError("no seat quit")


SEAT_STYLE = """
const seat = document.querySelector('#seats .seat.out');
const words = [...seat.querySelectorAll('.who b, .kind, .nums, .tags')];
let faded = 1;
for (let e = seat; e; e = e.parentElement) faded *= Number(getComputedStyle(e).opacity);
return {faded, background: getComputedStyle(seat).backgroundColor,
        words: words.map((w) => [w.textContent, getComputedStyle(w).color, Number(getComputedStyle(w).opacity)])};
"""


def test_a_seat_out_of_the_round_looks_out_and_its_words_stay_readable(site, browser):
    """The seat of a player who quit the round was drawn at 0.6 opacity, its 12 px words
    ('agent' 2.8:1, 'quit' 3.6:1) faded below 4.5:1. Its box is shaded and dashed now,
    and every word on it is at least 4.5:1 over the board's lightest green."""
    game, token = _game_with_a_seat_out(site)
    driver = browser
    open_page(driver, f"{site.url}/#game={game}&token={token}", DESKTOP)
    idle(driver)
    style = driver.execute_script(SEAT_STYLE)
    assert style["faded"] == 1, style
    assert (
        driver.find_element(By.CSS_SELECTOR, "#seats .seat.out").value_of_css_property("border-top-style") == "dashed"
    )
    behind = _over(style["background"], BOARD_LIGHTEST)
    for text, colour, opacity in style["words"]:
        assert opacity == 1 and contrast(_over(colour, behind), behind) >= 4.5, (text, colour, style)
    assert any("quit" in text for text, _, _ in style["words"]), style


WARNINGS_STYLE = """
const box = document.getElementById('table-warnings');
const s = getComputedStyle(box);
return {shown: box.checkVisibility(), colour: s.color, background: s.backgroundColor};
"""


def test_the_note_under_the_table_is_readable(site, browser):
    """The note naming an agent out of its depth at the table was the muted grey on the
    board's green, 3.6:1 at 14 px. It is at least 4.5:1 now, over the board's lightest green."""
    state = api(
        site, "POST", "/api/games", seats=[{"person": "Ann"}, {"agent": "search:worlds=16"}, {"agent": "random"}]
    )
    assert state["warnings"], state
    driver = browser
    open_page(driver, f"{site.url}/#game={state['id']}&token={state['token']}", DESKTOP)
    idle(driver)
    note = driver.execute_script(WARNINGS_STYLE)
    behind = _over(note["background"], BOARD_LIGHTEST)
    assert note["shown"] and contrast(_over(note["colour"], behind), behind) >= 4.5, note
    assert console_errors(driver) == []


CARD_STYLE = """
return [...document.querySelectorAll('#hand button.card')].map((b) => {
  const s = getComputedStyle(b);
  return {card: b.textContent, disabled: b.disabled, opacity: Number(s.opacity), filter: s.filter,
          border: s.borderTopStyle, background: s.backgroundColor, veil: s.backgroundImage, colour: s.color};
});
"""

CARD_COLOURS = """
return [1, 2, 3, 4, 5, 6, 7].map((c) => {
  const face = document.body.appendChild(Object.assign(document.createElement('span'), {className: `card c${c}`}));
  const colour = getComputedStyle(face).backgroundColor;
  face.remove();
  return colour;
});
"""
"""The face of a card of each value, as a playable one shows it."""


def _saturated(rgb: tuple[float, ...], s: float) -> tuple[float, float, float]:
    """``rgb`` through CSS's ``saturate(s)`` filter (its matrix, Filter Effects 1)."""
    r, g, b = rgb[:3]
    m = (
        (0.213 + 0.787 * s, 0.715 - 0.715 * s, 0.072 - 0.072 * s),
        (0.213 - 0.213 * s, 0.715 + 0.285 * s, 0.072 - 0.072 * s),
        (0.213 - 0.213 * s, 0.715 - 0.715 * s, 0.072 + 0.928 * s),
    )
    out = [min(255.0, max(0.0, row[0] * r + row[1] * g + row[2] * b)) for row in m]
    return (out[0], out[1], out[2])


def _saturation(css_filter: str) -> float:
    found = re.fullmatch(r"saturate\(([\d.]+)\)", css_filter)
    return float(found.group(1)) if found else 1.0


def _veiled(face: str, veil: str) -> tuple[float, float, float]:
    """The colour ``face`` under ``veil``, a computed ``linear-gradient`` of one colour
    (``none``: no veil)."""
    below = _rgba(face)[:3]
    found = re.match(r"linear-gradient\((rgba?\([^)]*\))", veil)
    return _over(found.group(1), below) if found else below


def test_a_card_that_cannot_be_played_looks_unlike_a_playable_one_and_its_digit_stays_readable(site, browser):
    """A card that could not be played now was only at 0.85 opacity, hard to tell from a
    playable one; greyed, a cream llama stayed the brightest card of the hand. It is
    darkened under a veil, greyed and outlined in dashes now (a playable card's outline is
    solid), not faded: darker than a card of any colour, its digit at least 4.5:1 on it."""
    for seed in range(40):  # a deal where Ann moves first with a card she may play and one she may not
        state = api(site, "POST", "/api/games", seats=[{"person": "Ann"}, {"agent": "random"}], seed=seed)
        unplayable = [c for c in state["hand"] if c - 1 not in state["legal"]]
        if state["your_turn"] and unplayable and len(unplayable) < len(state["hand"]):
            break
    else:
        raise AssertionError("no deal with a playable and an unplayable card")
    driver = browser
    open_page(driver, f"{site.url}/#game={state['id']}&token={state['token']}", DESKTOP)
    idle(driver, "window.llamaState.your_turn && document.querySelector('#hand button:enabled') !== null")
    cards = driver.execute_script(CARD_STYLE)
    off = [c for c in cards if c["disabled"]]
    on = [c for c in cards if not c["disabled"]]
    assert off and on, cards
    for card in on:
        assert card["border"] == "solid" and _saturation(card["filter"]) == 1 and card["veil"] == "none", card
    black = (0.0, 0.0, 0.0)
    darkest = min(contrast(_rgba(face), black) for face in driver.execute_script(CARD_COLOURS))
    for card in off:
        grey = _saturation(card["filter"])
        assert card["opacity"] == 1 and card["border"] == "dashed" and grey <= 0.5, card
        face = _saturated(_veiled(card["background"], card["veil"]), grey)
        assert contrast(face, black) < darkest, (card, "no darker than a playable card")
        digit = contrast(_saturated(_rgba(card["colour"]), grey), face)
        assert digit >= 4.5, (card, digit)


SEAT_NAME_LINES = """
const b = document.querySelector(`.seat[data-seat="${arguments[0]}"] .who b`);
const lines = (node) => {
  const range = document.createRange();
  range.selectNodeContents(node);
  return new Set([...range.getClientRects()].map((r) => Math.round(r.top))).size;
};
return {text: b.textContent, parts: [...b.childNodes].filter((n) => n.nodeType === 3).map((n) => [n.data, lines(n)]),
        lines: lines(b)};
"""


@pytest.mark.parametrize("screen", [PHONE, SMALL_PHONE], ids=lambda s: s.name)
def test_an_agent_s_spec_breaks_between_its_parts_on_a_phone(site, browser, screen):
    """On a phone a seat of 'search:worlds=16' read "search:worl" over "ds=16": the name was
    one word to the browser, cut where the seat's box ended, beside "agent". It breaks
    after ':' and ',' now, each part whole on its line ("agent" goes below a name that
    needs the room), and its text (what a screen reader reads) is the spec as written."""
    seats = [{"person": "Ann"}, {"agent": "search:worlds=16"}, {"agent": "random"}]
    state = api(site, "POST", "/api/games", seats=seats)
    driver = browser
    open_page(driver, f"{site.url}/#game={state['id']}&token={state['token']}", screen)
    idle(driver)
    shown = driver.execute_script(SEAT_NAME_LINES, 1)
    assert shown["text"] == "search:worlds=16", shown
    assert shown["lines"] == 2, f"the test needs a name wider than its seat: {shown}"
    assert shown["parts"] == [["search:", 1], ["worlds=16", 1]], f"the name is cut inside a part: {shown}"
    assert console_errors(driver) == []
