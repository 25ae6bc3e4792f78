"""The page of ``llama-rl serve`` in a real headless Chromium (Debian's chromium and
chromium-driver; Selenium runs offline and downloads nothing).

* A whole game by clicking, on a 1280x720 screen and on a 390x844 phone: after every
  move the screen is the server's state, only legal cards can be played, nothing needs
  sideways scrolling, the controls fit a laptop screen without scrolling and are touch
  sized on the phone; then the history page rates the finished game and replays it.
* Two friends in two browsers, each with only their own hand and their own moves.
* Names from data are text, never markup (a replayed record with HTML in its names).
* Watching agents shows every hand; an unknown agent shows the server's error.
* A game reopened (keyboard play, a reload, a pasted link, a page fallen behind), a page
  that lost the server and got it back, and a 320 px phone.

``LLAMA_RL_SCREENSHOTS=docs/img`` writes the docs' pictures (play-desktop.png,
play-phone.png) instead of throwaway ones.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn
from selenium import webdriver
from selenium.common.exceptions import ElementClickInterceptedException, StaleElementReferenceException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.remote.webelement import WebElement
from selenium.webdriver.support.ui import Select, WebDriverWait
from test_game_history import T0, play_record

import llama_env.agent as agent_registry
from llama_env.engine import LlamaGame, Rules
from llama_env.record import GameRecording
from llama_env.table import Table, TableListener
from train.play.history import History, HistoryError
from train.play.session import AWAY_SECONDS, TURN_SECONDS, GameSession, SessionError, SessionStore, new_game
from train.play.web import bind, create_app

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"
SCREENSHOTS = os.environ.get("LLAMA_RL_SCREENSHOTS")


@dataclass(frozen=True)
class Screen:
    name: str
    width: int
    height: int
    phone: bool


DESKTOP = Screen("desktop", 1280, 720, phone=False)
PHONE = Screen("phone", 390, 844, phone=True)
SMALL_PHONE = Screen("small phone", 320, 640, phone=True)
TOUCH = 44
"""Smallest touch target, in CSS pixels (Apple's and Google's guidelines)."""


# --------------------------------------------------------------------------- server and browsers


@dataclass(frozen=True)
class Site:
    url: str
    store: SessionStore
    history: History


@pytest.fixture
def site(tmp_path: Path) -> Iterator[Site]:
    """The app with a history file of its own, served by uvicorn on a thread. The
    store's secret and entropy are fixed, so a seed deals the same game every run, and
    so does a game without one (a game of several people takes no seed): a test's deals
    are the same each run, not a random one now and then that its steps do not fit."""
    store = SessionStore(entropy=0, secret=bytes(16))
    history = History(tmp_path / "history.sqlite3")
    sock = bind("127.0.0.1", 0)
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(create_app(store, history=history), log_level="warning"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    for _ in range(200):
        if server.started:
            break
        time.sleep(0.05)
    assert server.started, "the server did not start"
    yield Site(f"http://127.0.0.1:{port}", store, history)
    server.should_exit = True
    thread.join(timeout=10)
    sock.close()
    history.close()


def chromium(profile: Path, prefs: dict[str, Any] | None = None) -> webdriver.Chrome:
    assert os.path.exists(CHROMIUM) and os.path.exists(CHROMEDRIVER), (
        "the browser tests need Debian's chromium and chromium-driver (.ci/run installs them)"
    )
    os.environ["SE_OFFLINE"] = "true"  # Selenium must never fetch a driver or a browser
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--hide-scrollbars",
        "--window-size=1300,900",
        f"--user-data-dir={profile}",
    ):
        options.add_argument(arg)
    if prefs:
        options.add_experimental_option("prefs", prefs)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})  # the console, for console_errors
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    driver.set_script_timeout(30)
    return driver


@pytest.fixture(scope="module")
def _module_browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[webdriver.Chrome]:
    driver = chromium(tmp_path_factory.mktemp("chromium"))
    yield driver
    driver.quit()


QUICK_MOVES = "addEventListener('DOMContentLoaded', () => { window.delay = () => 5; });"


def quick_moves(driver: webdriver.Chrome) -> str:
    """Each page this tab opens, reloads or goes back to from now on shows a game's moves
    5 ms apart instead of the slider's fastest 140 ms: app.js's ``delay()``, a global of
    its classic script, is replaced once that script has run (one set before it would be
    declared over). The same events are shown, in the same order, and the page is idle at
    the same states, seconds sooner in a whole game. The tests of the pace itself
    (:func:`paced_browser`: the speed slider, moves held for a round's result) do not use
    it. Returns the identifier that takes it away again."""
    return driver.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": QUICK_MOVES})["identifier"]


def left_blank(driver: webdriver.Chrome) -> None:
    """The browser on a blank page, its console read: a page an earlier test left open
    polled its server, stopped since, and the refused request showed in the next test's
    :func:`console_errors`."""
    driver.get("about:blank")
    console_errors(driver)


@pytest.fixture
def browser(_module_browser: webdriver.Chrome) -> Iterator[webdriver.Chrome]:
    """The module's browser for one test, its moves shown quickly (:func:`quick_moves`),
    left on a blank page after it (:func:`left_blank`)."""
    quick = quick_moves(_module_browser)
    yield _module_browser
    _module_browser.execute_cdp_cmd("Page.removeScriptToEvaluateOnNewDocument", {"identifier": quick})
    left_blank(_module_browser)


@pytest.fixture
def paced_browser(_module_browser: webdriver.Chrome) -> Iterator[webdriver.Chrome]:
    """The module's browser for a test of the pace itself: the moves shown as the speed
    slider says, left on a blank page after it (:func:`left_blank`)."""
    yield _module_browser
    left_blank(_module_browser)


def open_page(driver: webdriver.Chrome, url: str, screen: Screen) -> None:
    """``url`` in a viewport of exactly ``screen`` (a window's size would include the
    browser's own bars), as a phone's browser lays it out when ``screen.phone``."""
    resize(driver, screen)
    driver.get(url)
    assert driver.execute_script("return [innerWidth, innerHeight]") == [screen.width, screen.height]


def resize(driver: webdriver.Chrome, screen: Screen) -> None:
    """The page as it is, in a viewport of exactly ``screen`` (see :func:`open_page`)."""
    driver.execute_cdp_cmd(
        "Emulation.setDeviceMetricsOverride",
        {"width": screen.width, "height": screen.height, "deviceScaleFactor": 1, "mobile": screen.phone},
    )


def fits(driver: webdriver.Chrome) -> bool:
    """Whether nothing on the page scrolls sideways."""
    return driver.execute_script("return document.documentElement.scrollWidth <= innerWidth")


# --------------------------------------------------------------------------- reading the page


def wait(driver: Any, timeout: float = 10) -> WebDriverWait:
    """Selenium's wait for ``driver`` (or any object its conditions read), looking every
    50 ms: at its default of 500 ms, each wait that the first look did not end lasted up
    to half a second longer than the page took."""
    return WebDriverWait(driver, timeout, poll_frequency=0.05)


def idle(driver: webdriver.Chrome, until: str = "true", timeout: float = 30) -> dict[str, Any]:
    """The state the page shows once it has shown everything it received (and
    ``until``, a JavaScript condition, holds)."""
    wait(driver, timeout).until(
        lambda d: d.execute_script(f"return window.llamaIdle === true && window.llamaState !== undefined && ({until})")
    )
    return driver.execute_script("return window.llamaState")


def card_text(card: int) -> str:
    return "L" if card == 7 else str(card)


SHOWN_TEXTS = """
return [...document.querySelectorAll(arguments[0])].map((e) =>
  e.checkVisibility({opacityProperty: true, visibilityProperty: true}) ? e.innerText.trim() : '');
"""


def shown_texts(driver: webdriver.Chrome, css: str) -> list[str]:
    """The text each element that ``css`` selects shows, "" for one not shown (as
    Selenium's ``text`` reads them), in one request where ``text`` took one an element."""
    return driver.execute_script(SHOWN_TEXTS, css)


def hand_shown(driver: webdriver.Chrome) -> list[str]:
    return shown_texts(driver, "#hand button")


def enabled_cards(driver: webdriver.Chrome) -> set[int]:
    return set(
        driver.execute_script(
            "return [...document.querySelectorAll('#hand button:enabled')].map((b) => Number(b.dataset.action))"
        )
    )


def draw_and_quit_on(driver: webdriver.Chrome) -> list[bool]:
    """Whether Draw and Quit are on (as Selenium's ``is_enabled`` says), in one request."""
    return driver.execute_script("return ['draw', 'quit'].map((id) => document.getElementById(id).matches(':enabled'))")


def log_lines(driver: webdriver.Chrome) -> list[str]:
    return driver.execute_script("return [...document.querySelectorAll('#log li')].map((li) => li.textContent)")


def shown(driver: webdriver.Chrome, element_id: str) -> bool:
    return driver.find_element(By.ID, element_id).is_displayed()


LAYOUT = """
const overlay = arguments[0];
const targets = [...document.querySelectorAll('#hand button'), document.getElementById('draw'),
                 document.getElementById('quit')];
if (overlay) targets.push(document.getElementById('round-result'), document.getElementById('round-ok'));
return {
  width: innerWidth, height: innerHeight, scrollWidth: document.documentElement.scrollWidth,
  targets: targets.map((e) => {
    const r = e.getBoundingClientRect();  // where it is in the viewport, scrolled as the page left it
    return {what: e.id || 'card ' + e.textContent, left: r.left, right: r.right, top: r.top, bottom: r.bottom,
            width: r.width, height: r.height};
  }),
};
"""


BROKEN_WORDS = r"""
const broken = [];
for (const e of document.querySelectorAll(arguments[0])) {
  const text = e.textContent.trim();
  if (!text || /\s/.test(text) || e.children.length) continue;
  const range = document.createRange();
  range.selectNodeContents(e);
  if (new Set([...range.getClientRects()].map((r) => Math.round(r.top))).size > 1) broken.push(text);
}
return broken;
"""
"""The texts of one word that the page breaks over two lines (a table squeezed too far)."""


def check_layout(driver: webdriver.Chrome, screen: Screen, *, overlay: bool) -> None:
    """Nothing scrolls sideways; on a laptop's screen the cards, Draw, Quit (and the
    round's result) are in view without scrolling; on a phone they may be further down,
    but each is a touch target."""
    page = driver.execute_script(LAYOUT, overlay)
    assert [page["width"], page["height"]] == [screen.width, screen.height]
    assert page["scrollWidth"] <= page["width"], f"the page scrolls sideways: {page['scrollWidth']} px wide"
    for t in page["targets"]:
        assert t["left"] >= 0 and t["right"] <= page["width"], f"{t['what']} sticks out sideways: {t}"
        if screen.phone:
            assert t["width"] >= TOUCH and t["height"] >= TOUCH, f"{t['what']} is too small to tap: {t}"
        else:
            assert t["top"] >= 0 and t["bottom"] <= page["height"], f"{t['what']} needs scrolling: {t}"


def set_up(
    driver: webdriver.Chrome, seats: list[tuple[str, str]], *, seed: int | None, end_score: int, **options: int
) -> None:
    """Fill the new-game form: one (``person``/``agent``, name or spec) per seat; no
    ``seed``: none (a game of several people takes none: its field is off); ``options``:
    other rule options by name (``hand_size=3``), each in its field. What the form shows
    already (a kind's own default, the name the page keeps) is left as it is: the same
    form, in a third of the requests."""
    wait(driver, 10).until(lambda d: d.find_elements(By.ID, "end-score"))  # (built from GET /api/rules)
    if driver.execute_script("return document.getElementById('players').value") != str(len(seats)):
        Select(driver.find_element(By.ID, "players")).select_by_visible_text(str(len(seats)))
    rows = driver.find_elements(By.CSS_SELECTOR, "#seat-rows .seat-row")
    assert len(rows) == len(seats)
    for row, (kind, _), (shown_kind, _) in zip(rows, seats, driver.execute_script(SEATS_FORM), strict=True):
        if shown_kind != kind:  # (Select's click on the option selected already does nothing, as here)
            Select(row.find_element(By.TAG_NAME, "select")).select_by_value(kind)
    for row, (_, text), (_, shown_text) in zip(rows, seats, driver.execute_script(SEATS_FORM), strict=True):
        if shown_text != text:  # (a kind's own default, or what the page keeps, may be the text already)
            retype(row.find_element(By.TAG_NAME, "input"), text)
    fields = [("seed", seed), ("end-score", end_score), *((k.replace("_", "-"), v) for k, v in options.items())]
    shown_fields = driver.execute_script(FIELDS_FORM, [field for field, _ in fields])
    for (field, value), (shown_value, enabled) in zip(fields, shown_fields, strict=True):
        if not enabled:
            assert value is None, f"the {field} field is off"
            continue
        if shown_value == ("" if value is None else str(value)):
            continue
        retype(driver.find_element(By.ID, field), "" if value is None else str(value))
    full_speed(driver)


def retype(box: WebElement, text: str) -> None:
    """``text`` typed over all that ``box`` holds (selected first), in one request where
    ``clear`` and ``send_keys`` took two."""
    box.send_keys(Keys.CONTROL, "a", Keys.NULL, text or Keys.DELETE)


SEATS_FORM = """
return [...document.querySelectorAll('#seat-rows .seat-row')].map((row) =>
  [row.querySelector('select').value, row.querySelector('input').value]);
"""
"""Each seat's row of the new-game form as it stands: its kind and its text."""

FIELDS_FORM = """
return arguments[0].map((id) => {
  const e = document.getElementById(id);
  return [e.validity.badInput ? null : e.value, e.matches(':enabled')];
});
"""
"""The value of each field named (None while it holds what is not a number), and whether
it is on (as Selenium's ``is_enabled`` says)."""


FULL_SPEED = """
try { localStorage.setItem('llama-speeds', JSON.stringify({play: 10, watch: 10})); } catch (err) { /* blocked */ }
document.getElementById('speed').value = 10;
"""


def full_speed(driver: webdriver.Chrome) -> None:
    """The moves of the next game the page opens, played or watched, shown at full speed."""
    driver.execute_script(FULL_SPEED)


def play_something(driver: webdriver.Chrome, turn: int) -> None:
    """A legal move by clicking: the first playable card, else draw (two turns in three),
    else quit (a round's result still open closed first). A table drawn again between
    finding a button and clicking it (a look at the server that brought news without a
    move: who came, who is away) leaves the button stale and unclicked: it is found again."""
    if shown(driver, "round-result"):
        dismiss_round(driver)
    for tries in range(3):
        try:
            cards = driver.find_elements(By.CSS_SELECTOR, "#hand button:enabled")
            draw = driver.find_element(By.ID, "draw")
            if cards:
                cards[0].click()
            elif draw.is_enabled() and turn % 3:
                draw.click()
            else:
                driver.find_element(By.ID, "quit").click()
            return
        except StaleElementReferenceException:
            if tries == 2:
                raise


def dismiss_round(driver: webdriver.Chrome) -> None:
    """Continue on the round's result; then the next round's moves held for it are shown."""
    driver.find_element(By.ID, "round-ok").click()
    assert not shown(driver, "round-result")
    idle(driver)


def screenshot(driver: webdriver.Chrome, name: str, tmp_path: Path) -> None:
    path = Path(SCREENSHOTS) / name if SCREENSHOTS else tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    driver.save_screenshot(str(path))
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and path.stat().st_size > 10_000


# --------------------------------------------------------------------------- 1. a whole game, then its history


def console_errors(driver: webdriver.Chrome) -> list[str]:
    """The console's errors since the last call (a failed request, a refused script...)."""
    return [e["message"] for e in driver.get_log("browser") if e["level"] == "SEVERE"]


@pytest.mark.parametrize("screen", [DESKTOP, PHONE], ids=lambda s: s.name)
def test_a_whole_game_by_clicking_then_its_history(site, browser, screen, tmp_path):
    driver = browser
    console_errors(driver)  # what earlier tests left
    open_page(driver, site.url, screen)
    assert console_errors(driver) == []  # no file it asks for is missing (a favicon was), no policy refusal
    set_up(driver, [("person", "Ann"), ("agent", "heuristic"), ("agent", "random")], seed=7, end_score=20)
    driver.find_element(By.ID, "start").click()

    log_seen = turns = rounds = 0
    tried_disabled = forced = False
    pictured = False
    while True:
        state = idle(driver)
        log_seen += len(state["events"])
        assert shown_texts(driver, "#game-error") == [""], "an old error stays on screen"
        round_over = any(e["type"] == "round" for e in state["events"])
        check_layout(driver, screen, overlay=round_over)
        assert hand_shown(driver) == [card_text(c) for c in state["hand"]]
        if round_over:
            rounds += 1
            result = driver.find_element(By.ID, "round-result")
            assert result.is_displayed() and "Round" in result.text
            assert len(result.find_elements(By.CSS_SELECTOR, "tr")) == 1 + 3
            if not state["game_over"]:
                dismiss_round(driver)  # (the next round's moves are shown once it is closed)
        # the screen follows every move: each event is one more line in the log
        assert len(log_lines(driver)) == log_seen
        if state["game_over"]:
            break
        # the hand is the server's, and exactly the legal cards can be clicked
        assert state["your_turn"] and state["seat"] == 0
        assert enabled_cards(driver) == {c - 1 for c in state["hand"]} & set(state["legal"])
        assert draw_and_quit_on(driver) == [7 in state["legal"], 8 in state["legal"]]
        disabled = driver.find_elements(By.CSS_SELECTOR, "#hand button:disabled")
        if disabled and not tried_disabled:
            # a real click on a card that cannot be played does nothing
            ActionChains(driver).move_to_element(disabled[0]).click().perform()
            time.sleep(0.3)
            assert driver.execute_script("return window.llamaIdle && window.llamaState.seq") == state["seq"]
            assert len(log_lines(driver)) == log_seen
            tried_disabled = True
        elif disabled and not forced:
            # a card forced past its disabled state: the server refuses it and the page says why
            driver.execute_script("arguments[0].disabled = false; arguments[0].click()", disabled[0])
            assert idle(driver)["seq"] == state["seq"]
            assert "illegal" in driver.find_element(By.ID, "game-error").text.lower()
            assert len(log_lines(driver)) == log_seen
            assert hand_shown(driver) == [card_text(c) for c in state["hand"]]
            refused = console_errors(driver)  # the refusal, and only it
            assert len(refused) == 1 and "/move" in refused[0] and "409" in refused[0], refused
            forced = True
        if not pictured and turns >= 4 and len(state["hand"]) >= 4 and enabled_cards(driver):
            screenshot(driver, f"play-{screen.name}.png", tmp_path)
            pictured = True
        play_something(driver, turns)
        turns += 1
        assert turns < 300, "the game did not end"

    standings = driver.find_element(By.ID, "standings")
    assert "Final standings" in standings.text and state["result"] in standings.text
    assert [r.text.split()[1] for r in standings.find_elements(By.CSS_SELECTOR, "tr")[1:]] == [
        s["name"] for s in state["standings"]
    ]
    assert rounds >= 2 and tried_disabled and forced and pictured
    assert isinstance(state["history_id"], int) and not shown(driver, "not-saved")
    if not screen.phone:
        assert standings.is_displayed() and standings.rect["y"] + standings.rect["height"] <= screen.height

    # 5. the history: the finished game is listed and rated, and replays
    driver.find_element(By.ID, "nav-history").click()
    wait(driver, 10).until(lambda d: len(d.find_elements(By.CSS_SELECTOR, "#games tr")) == 2)
    ratings = {
        tuple(td.text for td in row.find_elements(By.TAG_NAME, "td")[1:3])
        for row in driver.find_elements(By.CSS_SELECTOR, "#ratings tr")[1:]
    }
    assert {("Ann", "person"), ("heuristic", "agent"), ("random", "agent")} == ratings
    game_row = driver.find_elements(By.CSS_SELECTOR, "#games tr")[1]
    for s in state["standings"]:
        assert f"{s['name']} ({s['score']})" in game_row.text
    assert driver.execute_script("return document.documentElement.scrollWidth <= innerWidth")
    assert driver.execute_script(BROKEN_WORDS, "#history td, #history th, #history button") == []
    game_row.find_element(By.CSS_SELECTOR, "button.replay").click()
    replaying = idle(driver, "window.llamaState.mode === 'replay'")
    assert shown(driver, "watch-controls") and not shown(driver, "you")
    assert [s["name"] for s in replaying["table"]["seats"]] == ["Ann", "heuristic", "random"]
    assert all("hand" in s for s in replaying["table"]["seats"])
    driver.find_element(By.ID, "step").click()
    after = idle(driver, f"window.llamaState.seq > {replaying['seq']}")
    assert len(log_lines(driver)) == len(replaying["events"]) + len(after["events"])
    assert console_errors(driver) == []  # a whole game, its history and a replay without one


def quit_to_the_end(driver: webdriver.Chrome) -> dict[str, Any]:
    """Play the page's game (a person against agents, a low end score) to its end by
    quitting or whatever else is legal; the last state."""
    state = idle(driver)
    for turn in range(100):
        if state["game_over"]:
            return state
        if shown(driver, "round-result"):
            dismiss_round(driver)
        if driver.find_element(By.ID, "quit").is_enabled():
            driver.find_element(By.ID, "quit").click()
        else:
            play_something(driver, turn)
        state = idle(driver, f"window.llamaState.seq > {state['seq']}")
    raise AssertionError("the game did not end")


def test_a_finished_game_the_server_could_not_save_says_so(site, browser, monkeypatch):
    """A game the history refused (a disk that failed, a name it would not store) said
    "Game over" like any other, and only the server's log told. The page says it was not
    saved; a server that keeps no history says nothing of the kind."""

    def refuse(self, *args, **kwargs):
        raise HistoryError("cannot save a game to history.sqlite3 (disk I/O error)")

    monkeypatch.setattr(History, "save", refuse)
    driver = browser
    open_page(driver, site.url, DESKTOP)
    set_up(driver, [("person", "Ann"), ("agent", "random")], seed=1, end_score=1)
    driver.find_element(By.ID, "start").click()
    state = quit_to_the_end(driver)
    assert state["history_id"] is None and state["saving"] is False
    note = wait(driver, 10).until(lambda d: d.find_element(By.CSS_SELECTOR, "#standings #not-saved"))
    wait(driver, 10).until(lambda d: note.is_displayed())
    assert note.text.startswith("This game was not saved to the history")

    server, thread = serve_on(SessionStore(entropy=0), 0)  # no history: nothing to say
    try:
        open_page(driver, f"http://127.0.0.1:{server.servers[0].sockets[0].getsockname()[1]}", DESKTOP)
        set_up(driver, [("person", "Ann"), ("agent", "random")], seed=1, end_score=1)
        driver.find_element(By.ID, "start").click()
        quit_to_the_end(driver)
        asked = wait(driver, 10).until(lambda d: console_errors(d))  # whether the server keeps one
        assert len(asked) == 1 and "/api/history?limit=1" in asked[0] and "404" in asked[0], asked
        driver.execute_script("historyKept = null; render(); render();")  # two views before the answer
        answered = wait(driver).until(lambda d: console_errors(d))
        time.sleep(0.2)  # (a second question, asked in the same moment, is answered within it)
        assert len(answered + console_errors(driver)) == 1  # one question, not one a view
        assert driver.find_elements(By.CSS_SELECTOR, "#standings #not-saved") and not shown(driver, "not-saved")
    finally:
        server.should_exit = True
        thread.join(timeout=10)


class _Raises:
    def act(self, observation, action_mask):
        raise RuntimeError("boom")


@pytest.mark.usefixtures("agent_registry")  # (the fixture: what the test registers is gone after it)
def test_a_game_an_agent_s_failure_stopped_says_which_and_why_and_stops_asking(site, browser):
    """An agent that failed at its turn (a plugin's bug) left the page saying "the server
    failed on this request", then waiting for that agent for ever. The page says which
    agent at which seat failed, and why; its moves and Step are off, and it stops asking."""
    agent_registry.register("p2_raiser")(_Raises)
    driver = browser
    open_page(driver, site.url, DESKTOP)
    set_up(driver, [("person", "Ann"), ("agent", "p2_raiser")], seed=3, end_score=20)
    driver.find_element(By.ID, "start").click()
    idle(driver, "window.llamaState.your_turn")
    play_something(driver, 1)
    state = idle(driver, "window.llamaState.stopped !== null")
    assert state["stopped"].startswith("the game stopped, and is not saved: agent 'p2_raiser' at seat 1: RuntimeError")
    assert driver.find_element(By.ID, "game-error").text == state["stopped"]
    assert driver.find_element(By.ID, "turn").text == "The game stopped."
    assert not enabled_cards(driver) and not driver.find_element(By.ID, "draw").is_enabled()
    assert driver.execute_script("return poller") is None  # nothing more will happen: it asks no more
    assert focused(driver) == "new-game"  # (the card played had it: it fell to the page)

    driver.find_element(By.ID, "new-game").click()
    set_up(driver, [("agent", "p2_raiser"), ("agent", "random")], seed=3, end_score=20)
    driver.find_element(By.ID, "start").click()
    idle(driver, "window.llamaState.mode === 'watch'")
    driver.find_element(By.ID, "step").click()
    state = idle(driver, "window.llamaState.stopped !== null")
    assert state["stopped"].startswith("the game stopped, and is not saved: agent 'p2_raiser' at seat 0: ")
    assert driver.find_element(By.ID, "game-error").text == state["stopped"]
    assert not driver.find_element(By.ID, "step").is_enabled() and not driver.find_element(By.ID, "play").is_enabled()
    assert focused(driver) == "new-game"


# --------------------------------------------------------------------------- 2. friends


def synced(driver: webdriver.Chrome, session: GameSession) -> dict[str, Any]:
    """The page's state once it has caught up with the game (a waiting page polls), and
    with who has come: news of a person's page coming draws the table again, which would
    leave the buttons a test has found stale. The server's side is read at each look: a
    page opened on a link (only the hash changed: ``get`` does not wait for its request)
    may reach the server after this was called, and the page then shows the server's news."""

    def caught_up(d: webdriver.Chrome) -> bool:
        now = session.view(None, since=session.seq)
        joined = json.dumps(now["joined"], separators=(",", ":"))  # as JSON.stringify writes it
        return d.execute_script(
            "const s = window.llamaState;"
            f"return window.llamaIdle === true && s !== undefined && s !== null && s.seq === {now['seq']}"
            f" && JSON.stringify(s.joined) === '{joined}'"
        )

    wait(driver, 15).until(caught_up)
    return driver.execute_script("return window.llamaState")


def check_private_view(driver: webdriver.Chrome, state: dict[str, Any], session: GameSession, seat: int) -> None:
    """The page shows its seat's hand, the server's, and holds no other hand."""
    game = session.game
    assert state["seat"] == seat and state["hand"] == game.hand(seat)
    assert hand_shown(driver) == [card_text(c) for c in game.hand(seat)]
    for table in [state["table"]] + [e["table"] for e in state["events"]]:
        for p, s in enumerate(table["seats"]):
            assert ("hand" in s) == (p == seat), f"seat {seat}'s page holds seat {p}'s hand"
    assert not driver.find_elements(By.CSS_SELECTOR, "#seats .mini-hand")
    # every seat's score and hand size as the server has them
    nums = [text.split("\n") for text in shown_texts(driver, "#seats .seat .nums")]
    sizes = [len(game.hand(p)) for p in range(game.num_players)]
    expected = [[f"score {s}", f"{n} card{'' if n == 1 else 's'}"] for s, n in zip(game.scores, sizes, strict=True)]
    assert [[part.strip() for part in shown] for shown in nums] == expected


def until_bob_s_turn(page: webdriver.Chrome, state: dict[str, Any], session: GameSession) -> dict[str, Any]:
    """Ann's page plays until the table waits for Bob (seat 1; her page then asks often);
    its last state."""
    for turn in range(20):
        if session.game.current_player == 1:
            break
        if any(e["type"] == "round" for e in state["events"]):
            dismiss_round(page)
        play_something(page, turn)
        state = idle(page, f"window.llamaState.seq > {state['seq']}")
    return state


def start_with_friends(driver: webdriver.Chrome, site: Site, end_score: int = 20) -> tuple[dict[str, Any], GameSession]:
    """Ann and Bob (people) and a heuristic, started on a desktop page as Ann: the page's
    state and the server's session. The deal is random (a game of two people takes no seed)."""
    open_page(driver, site.url, DESKTOP)
    set_up(driver, [("person", "Ann"), ("person", "Bob"), ("agent", "heuristic")], seed=None, end_score=end_score)
    driver.find_element(By.ID, "start").click()
    state = idle(driver)
    return state, site.store.get(state["id"])


def test_the_seed_is_off_saying_why_while_several_seats_are_people(site, browser):
    """The seed stayed open for a game of several people, and only the server's 400 said
    why, after Start: the field is off, with its reason shown, while more than one seat
    is a person (dimmed: it looked on, its number in it), and on again (what was typed in
    it kept) when one is at most."""
    driver = browser
    open_page(driver, site.url, DESKTOP)
    seed = driver.find_element(By.ID, "seed")

    def seats(*kinds: str) -> None:
        Select(driver.find_element(By.ID, "players")).select_by_visible_text(str(len(kinds)))
        for row, kind in zip(driver.find_elements(By.CSS_SELECTOR, "#seat-rows .seat-row"), kinds, strict=True):
            Select(row.find_element(By.TAG_NAME, "select")).select_by_value(kind)

    def off() -> bool:
        why = shown(driver, "seed-why")
        assert why == (not seed.is_enabled()), "the reason is shown exactly while the field is off"
        return why

    assert not off()  # a person and two agents
    seed.send_keys("7")
    seats("person", "agent", "person")
    assert off() and "several people" in driver.find_element(By.ID, "seed-why").text
    looks = driver.execute_script(
        "const s = getComputedStyle(arguments[0]); return [s.cursor, Number(s.opacity)]", seed
    )
    assert looks[0] == "not-allowed" and looks[1] <= 0.5, f"the seed off looks on: {looks}"
    seats("person", "agent")  # the second person's seat is gone
    assert not off() and seed.get_attribute("value") == "7"
    seats("agent", "agent", "agent")
    assert not off()
    seats("person", "person", "agent")
    assert off()
    driver.find_element(By.ID, "start").click()  # the typed seed is not sent: no 400
    state = idle(driver)
    assert driver.find_element(By.ID, "setup-error").text == ""
    assert [s["person"] for s in state["table"]["seats"]] == [True, True, False]


RULE_FIELDS = """
return [...document.querySelectorAll('#rule-fields input')].map((input) => {
  const r = input.getBoundingClientRect();
  return {id: input.id, label: input.closest('label').textContent.trim(), min: input.min, max: input.max,
          value: input.value, left: r.left, right: r.right, height: r.height};
});
"""


@pytest.mark.parametrize("screen", [DESKTOP, PHONE], ids=lambda s: s.name)
def test_the_form_offers_each_rule_option_and_the_hand_size_reaches_the_table_and_the_history(
    site, browser, screen, tmp_path
):
    """The form offered the end score alone, from its own HTML: a person could not choose
    the hand size the API takes, and the history listed a game of 3 cards a hand as a
    standard one. Its fields now come from the server's list of rule options, the hand's
    largest size follows the number of players, and the history says a game's options."""
    driver = browser
    open_page(driver, site.url, screen)
    options = {o["name"]: o for o in httpx.get(f"{site.url}/api/rules").json()}
    fields = wait(driver, 10).until(lambda d: d.execute_script(RULE_FIELDS))
    assert [f["id"] for f in fields] == [name.replace("_", "-") for name in options]  # end_score: end-score
    players = Select(driver.find_element(By.ID, "players")).first_selected_option.text
    for field, option in zip(fields, options.values(), strict=True):
        assert (field["min"], field["max"], field["value"]) == (
            str(option["low"]),
            str(option["high"][players]),
            str(option["default"]),
        )
        assert " ".join(field["label"].split()) == " ".join(option["label"].replace("{}", "").split())
        assert field["left"] >= 0 and field["right"] <= screen.width, field
        assert field["height"] >= TOUCH or not screen.phone, field
    assert driver.execute_script("return document.documentElement.scrollWidth <= innerWidth")
    if not screen.phone:  # the form fits a laptop's screen: Start in view
        assert driver.find_element(By.ID, "start").rect["y"] + 44 <= screen.height

    hand = driver.find_element(By.ID, "hand-size")
    for count, high in ((4, 13), (6, 9), (2, 27)):  # (56 - 1) // players
        Select(driver.find_element(By.ID, "players")).select_by_visible_text(str(count))
        assert hand.get_attribute("max") == str(high)
        if count == 4:
            hand.clear()
            hand.send_keys("13")
    assert hand.get_attribute("value") == "9"  # above the bound of 6 players: brought down to it

    set_up(driver, [("person", "Ann"), ("agent", "random")], seed=1, end_score=20, hand_size=3)
    screenshot(driver, f"rules-{screen.name}.png", tmp_path)
    driver.find_element(By.ID, "start").click()
    state = idle(driver)
    assert (state["hand_size"], state["end_score"], len(state["hand"])) == (3, 20, 3)
    assert len(hand_shown(driver)) == 3

    small = Rules(2, end_score=15, hand_size=3)
    for k, rules in enumerate((small, Rules(2))):
        record, _ = play_record(k, ["heuristic", "random"], **rules.options())
        site.history.save(record, people=[False, False], finished=T0 + k)
    driver.find_element(By.ID, "nav-history").click()
    wait(driver, 10).until(lambda d: len(d.find_elements(By.CSS_SELECTOR, "#games tr")) == 3)
    assert [td.text for td in driver.find_elements(By.CSS_SELECTOR, "#games td.rules")] == [
        "standard",
        "to 15 points, 3 cards",  # (in the order the rules declare them)
    ]
    assert driver.execute_script("return document.documentElement.scrollWidth <= innerWidth")
    assert driver.execute_script(BROKEN_WORDS, "#history td, #history th, #history button") == []
    screenshot(driver, f"rules-history-{screen.name}.png", tmp_path)
    assert console_errors(driver) == []


def test_two_friends_play_in_two_browsers_each_seeing_only_their_own_hand(site, browser, tmp_path):
    a = browser
    first, session = start_with_friends(a, site)
    invites = a.find_elements(By.CSS_SELECTOR, "#invites input.invite")
    assert shown(a, "invites") and [i.get_attribute("data-seat") for i in invites] == ["1"]
    link = invites[0].get_attribute("value")
    assert link.startswith(site.url) and session.viewer(link.rsplit("token=", 1)[1]) == 1

    b = chromium(tmp_path / "chromium-b")  # a second browser: nothing shared with the first
    try:
        quick_moves(b)
        open_page(b, link, PHONE)
        pages = {0: a, 1: b}
        moves = 0
        round_ended = False
        while moves < 10 and not round_ended:
            states = {seat: synced(page, session) for seat, page in pages.items()}
            for seat, page in pages.items():
                check_private_view(page, states[seat], session, seat)
            mover = session.game.current_player
            assert mover in pages, "the agent moves within a person's request"
            other = 1 - mover
            assert states[mover]["your_turn"] and not states[other]["your_turn"]
            # the waiting page accepts no move
            assert not enabled_cards(pages[other])
            assert draw_and_quit_on(pages[other]) == [False, False]
            # (Ann's page adds that Bob has not opened the link yet, with a button to it, until he has)
            assert pages[other].find_element(By.ID, "turn").text.startswith(f"Waiting for {['Ann', 'Bob'][mover]}…")
            if any(e["type"] == "round" for e in states[mover]["events"]):
                dismiss_round(pages[mover])
            before = len(log_lines(pages[other]))
            play_something(pages[mover], moves)
            moves += 1
            moved = idle(pages[mover], f"window.llamaState.seq > {states[mover]['seq']}")
            # the other page hears of the move by polling, and shows it too
            synced(pages[other], session)
            assert len(log_lines(pages[other])) == len(log_lines(pages[mover])) > before
            round_ended = any(e["type"] == "round" for e in moved["events"])
        if round_ended:  # both see the round's result, every hand shown as the rules say
            for page in pages.values():
                synced(page, session)
                assert shown(page, "round-result")
                assert len(page.find_elements(By.CSS_SELECTOR, "#round-result tr")) == 1 + 3
    finally:
        b.quit()


PASTE = """
const box = document.createElement('textarea');
box.id = 'pasted';
document.body.append(box);
box.focus();
"""


def pasted(driver: webdriver.Chrome) -> str:
    """What the clipboard holds, pasted with the keyboard into a box of the page."""
    driver.execute_script(PASTE)
    ActionChains(driver).key_down(Keys.CONTROL).send_keys("v").key_up(Keys.CONTROL).perform()
    text = driver.execute_script("const b = document.getElementById('pasted'); b.remove(); return b.value")
    return text


def test_copy_puts_the_link_on_the_clipboard_where_the_page_has_no_clipboard_api(site, browser):
    """Copy did nothing, and said nothing, on a page opened at http://ADDRESS on the
    network: navigator.clipboard exists only in a secure context. It copies the selected
    link instead and says so; where that fails too, it says to copy the link by hand."""
    page = browser
    start_with_friends(page, site)
    link = page.find_element(By.CSS_SELECTOR, "#invite-list input.invite").get_attribute("value")
    note = page.find_element(By.CSS_SELECTOR, "#invite-list .copy-note")
    page.find_element(By.CSS_SELECTOR, "#invite-list button").click()  # at 127.0.0.1: the clipboard's API
    wait(page, 10).until(lambda _: note.text == "Copied")
    page.execute_script(
        "const t = document.createElement('textarea'); t.value = 'BEFORE'; document.body.append(t);"
        "t.select(); document.execCommand('copy'); t.remove();"
    )
    assert pasted(page) == "BEFORE"
    page.execute_script("Object.defineProperty(navigator, 'clipboard', {value: undefined, configurable: true})")
    assert page.execute_script("return navigator.clipboard") is None  # as at http://ADDRESS
    page.find_element(By.CSS_SELECTOR, "#invite-list button").click()
    assert note.text == "Copied"
    assert pasted(page) == link
    page.execute_script("document.execCommand = () => false")  # a browser that copies nothing
    page.find_element(By.CSS_SELECTOR, "#invite-list button").click()
    assert note.text == "Select and copy the link"
    selected = page.execute_script(
        "const e = document.activeElement; return [e.selectionStart, e.selectionEnd, e.value]"
    )
    assert selected == [0, len(link), link]  # selected, for the person to copy


def test_a_friend_who_went_away_is_replaced_by_an_agent_from_the_page(site, browser, tmp_path):
    """Bob opened his link, then went: once the table waits for him and his page has
    been away for the server's time, Ann's page offers his seat to an agent (asking
    first), and the game goes on without him."""
    page = browser
    state, session = start_with_friends(page, site)
    session.look(1)  # as Bob's page does when it opens the link
    state = until_bob_s_turn(page, state, session)
    assert session.game.current_player == 1 and not page.find_elements(By.CSS_SELECTOR, ".hand-over")
    session.seen[1] = time.monotonic() - AWAY_SECONDS - 1
    button = wait(page, 10).until(lambda d: d.find_element(By.CSS_SELECTOR, '.seat[data-seat="1"] .hand-over'))
    assert "away" in page.find_element(By.CSS_SELECTOR, '.seat[data-seat="1"] .tags').text
    assert button.size["height"] >= TOUCH and button.get_attribute("aria-label") == "let heuristic play Bob's seat"
    screenshot(page, "hand-over.png", tmp_path)
    button.click()  # asked first, in the page: "no" changes nothing
    assert "Let heuristic play Bob's seat" in asked(page)
    page.find_element(By.ID, "ask-no").click()
    assert not asked(page) and session.left == {} and page.find_elements(By.CSS_SELECTOR, ".hand-over")
    # the page keeps polling while it asks: Bob coming back meanwhile takes the question away
    page.find_element(By.CSS_SELECTOR, ".hand-over").click()
    assert asked(page)
    session.look(1)
    wait(page, 10).until(lambda d: not asked(d))
    assert not page.find_elements(By.CSS_SELECTOR, ".hand-over") and session.left == {}
    session.seen[1] = time.monotonic() - AWAY_SECONDS - 1
    wait(page, 10).until(lambda d: d.find_element(By.CSS_SELECTOR, '.seat[data-seat="1"] .hand-over')).click()
    page.find_element(By.ID, "ask-yes").click()
    state = idle(page, "window.llamaState.left.includes(1)")
    assert session.left == {1: "heuristic"} and session.game.current_player != 1
    assert "Bob was away: heuristic plays Bob's seat from here on." in log_lines(page)
    # "started · " before it when the seat opens the round the agents have played on to
    tags = page.find_element(By.CSS_SELECTOR, '.seat[data-seat="1"] .tags').text.split(" · ")
    assert tags[-1] == "left: heuristic plays" and set(tags[:-1]) <= {"started"}
    assert not page.find_elements(By.CSS_SELECTOR, ".hand-over")
    assert console_errors(page) == []


def test_a_friend_who_never_came_is_shown_as_the_agent_that_took_the_seat(site, browser, tmp_path):
    """Bob never opened his link and heuristic took his seat from the start, as the
    history says: the page went on naming the seat Bob (his moves, his win). It names it
    for the agent."""
    page = browser
    state, session = start_with_friends(page, site)
    state = until_bob_s_turn(page, state, session)
    session.created = time.monotonic() - AWAY_SECONDS - 1  # Bob's link, never opened, counts from the start
    wait(page, 10).until(lambda d: d.find_element(By.CSS_SELECTOR, '.seat[data-seat="1"] .hand-over')).click()
    page.find_element(By.ID, "ask-yes").click()
    idle(page, "window.llamaState.table.seats[1].name === 'heuristic (for Bob)'")
    assert "Bob did not come: heuristic plays Bob's seat." in log_lines(page)
    assert not shown(page, "invites")  # no link left to send: the seat is the agent's
    after = log_lines(page)[log_lines(page).index("Bob did not come: heuristic plays Bob's seat.") + 1 :]
    assert after and not any(line.startswith("Bob ") for line in after)
    seat = page.find_element(By.CSS_SELECTOR, '.seat[data-seat="1"] .who')
    assert seat.text.split("\n") == ["heuristic (for Bob)", "agent"]
    whole = "const b = arguments[0]; return b.scrollWidth <= b.clientWidth && b.scrollHeight <= b.clientHeight"
    for screen in (DESKTOP, PHONE):
        resize(page, screen)
        assert fits(page)
        name = page.find_element(By.CSS_SELECTOR, '.seat[data-seat="1"] .who b')
        assert page.execute_script(whole, name), f"the seat's name is cut on the {screen.name}"
        screenshot(page, f"never-came-{screen.name}.png", tmp_path)
    assert console_errors(page) == []


def test_a_person_leaves_the_table_from_the_page_and_watches(site, browser, tmp_path):
    """With another person at the table, "Leave the table" (asked first) gives this
    page's seat to heuristic; the page then watches. Alone with agents, or with a friend
    who has not come, it is not offered."""
    page = browser
    open_page(page, site.url, DESKTOP)
    set_up(page, [("person", "Ann"), ("agent", "random")], seed=5, end_score=20)
    page.find_element(By.ID, "start").click()
    idle(page)
    assert not shown(page, "leave")
    state, session = start_with_friends(page, site)
    assert not shown(page, "leave")  # Bob has not opened his link: the game would wait for nobody
    session.look(1)  # as Bob's page does when it opens the link
    page.refresh()
    idle(page, "window.llamaState.can_leave")
    assert shown(page, "leave")
    screenshot(page, "leave.png", tmp_path)
    page.find_element(By.ID, "leave").click()
    assert "Leave the table?" in asked(page)
    screenshot(page, "ask.png", tmp_path)
    assert page.switch_to.active_element.get_attribute("id") == "ask-no"  # Enter alone does not leave
    page.find_element(By.ID, "ask-yes").click()
    idle(page, "window.llamaState.left.includes(0)")
    assert session.left == {0: "heuristic"} and session.people == [1]
    assert "You left the table: heuristic plays your seat from here on." in log_lines(page)
    assert page.find_element(By.ID, "turn").text == "heuristic plays your seat now: you are watching."
    assert not shown(page, "leave") and not enabled_cards(page)
    assert console_errors(page) == []


def test_a_person_who_looks_at_the_history_or_sets_up_a_game_keeps_their_seat(site, browser, tmp_path):
    """The history and the new-game form stopped the page's polling, with no way back:
    90 s later the person counted as away and could be replaced (a forfeit), and the
    address bar lost their seat's link. The page keeps asking while the game goes on,
    offers "Back to the game", a double click on Start asks once and makes one game, and
    the browser's Back reopens the game left for another. (Start dropped the seat
    without a word, where a replay asked first.)"""
    page = browser
    state, session = start_with_friends(page, site)
    first, ann = session.id, page.current_url
    session.look(1)
    state = until_bob_s_turn(page, state, session)
    assert session.game.current_player == 1

    def still_asking() -> None:
        session.seen[0] = time.monotonic() - AWAY_SECONDS - 1
        wait(page, 10).until(lambda _: 0 not in session.away())

    page.find_element(By.ID, "nav-history").click()
    assert shown(page, "history") and shown(page, "nav-game")
    still_asking()
    page.find_element(By.ID, "nav-new").click()
    assert shown(page, "setup") and shown(page, "nav-game") and page.current_url == ann.replace("#game=", "#new&game=")
    still_asking()
    page.find_element(By.ID, "nav-game").click()
    assert shown(page, "game") and not shown(page, "nav-game")
    page.find_element(By.ID, "nav-new").click()
    set_up(page, [("person", "Ann"), ("agent", "random")], seed=1, end_score=20)
    games = len(site.store)
    page.execute_script("const b = document.getElementById('start'); b.click(); b.click();")
    assert "Start a new game? This page then stops following your game" in asked(page)
    for screen in (DESKTOP, PHONE):
        resize(page, screen)
        assert fits(page)
        screenshot(page, f"ask-start-{screen.name}.png", tmp_path)
    resize(page, DESKTOP)
    page.find_element(By.ID, "ask-no").click()  # no: nothing is made, and the seat is kept
    assert not asked(page) and shown(page, "setup") and shown(page, "nav-game") and len(site.store) == games
    still_asking()
    page.find_element(By.ID, "start").click()
    page.find_element(By.ID, "ask-yes").click()
    idle(page, f"window.llamaState.id !== '{first}'")
    assert len(site.store) == games + 1 and page.current_url != ann
    page.back()
    idle(page, f"window.llamaState.id === '{first}'")
    assert page.current_url == ann and hand_shown(page) == [card_text(c) for c in session.game.hand(0)]
    assert console_errors(page) == []


def test_start_goes_ahead_when_the_seat_asked_about_is_handed_over_meanwhile(site, browser):
    """Start asks first while the page holds a seat; when Bob handed Ann's seat to an
    agent while she was asked, the question went away with nothing made and nothing
    said. The seat asked about is gone: the click goes ahead and makes the game."""
    page = browser
    state, session = start_with_friends(page, site)  # Ann's turn: seat 0 starts the first round
    session.look(1)
    bob = next(t for t, viewer in session.tokens.items() if viewer == 1)
    page.find_element(By.ID, "nav-new").click()
    set_up(page, [("person", "Ann"), ("agent", "random")], seed=1, end_score=20)
    games = len(site.store)
    page.find_element(By.ID, "start").click()
    assert "Start a new game?" in asked(page)
    seat, moves, _ = session._turn  # the table has waited long enough for Ann's move
    session._turn = (seat, moves, time.monotonic() - TURN_SECONDS - 1)
    answer = httpx.post(
        f"{site.url}/api/games/{session.id}/hand-over", json={"seat": 0}, headers={"X-Llama-Token": bob}
    )
    assert answer.status_code == 200, answer.text
    idle(page, f"window.llamaState.id !== '{session.id}'")
    assert len(site.store) == games + 1 and not asked(page) and shown(page, "game")
    assert console_errors(page) == []


def test_a_replay_opened_while_seated_asks_first(site, browser, tmp_path):
    """Replay, in the history or from a record's file, left the game this page plays at
    once and without a word: the page stopped asking for it, and 90 s later Bob could
    hand Ann's seat to an agent. The page asks first; no keeps the seat, and the game."""
    page = browser
    record, _ = play_record(4, ["random", "random"])
    site.history.save(record, people=[False, False])
    path = tmp_path / "record.json"
    path.write_text(json.dumps(record), encoding="utf-8")
    for where in ("history", "file"):
        state, session = start_with_friends(page, site)
        session.look(1)
        until_bob_s_turn(page, state, session)  # (the page then asks often)
        if where == "history":
            page.find_element(By.ID, "nav-history").click()
            replay = wait(page, 10).until(lambda d: d.find_element(By.CSS_SELECTOR, "button.replay"))
            replay.click()
        else:
            page.find_element(By.ID, "nav-new").click()
            page.find_element(By.ID, "replay-file").send_keys(str(path))
        assert "Open the replay? This page then stops following your game" in asked(page)
        page.find_element(By.ID, "ask-no").click()
        assert not asked(page) and shown(page, where if where == "history" else "setup") and shown(page, "nav-game")
        assert page.execute_script("return window.llamaState.id") == session.id
        session.seen[0] = time.monotonic() - AWAY_SECONDS - 1
        wait(page, 10).until(lambda _, s=session: 0 not in s.away())  # the page still asks for the game
        if where == "history":
            replay.click()
        else:
            assert page.find_element(By.ID, "replay-file").get_attribute("value") == ""
            page.find_element(By.ID, "replay-file").send_keys(str(path))
        page.find_element(By.ID, "ask-yes").click()
        state = idle(page, "window.llamaState.mode === 'replay'")
        assert state["moves_left"] == len(record["moves"])
    assert console_errors(page) == []


def test_what_happens_while_a_person_looks_at_the_history_waits_for_them(site, browser):
    """A seated person's game went on, move by move, off screen while they looked at the
    history, and the screen reader's live region read each move out. The moves are now
    written at once, unread, and "Back to the game" says when it is their turn."""
    page = browser
    state, session = start_with_friends(page, site, end_score=40)  # no round ends the game before Ann's turn
    session.look(1)
    state = until_bob_s_turn(page, state, session)
    page.find_element(By.ID, "nav-history").click()
    assert page.find_element(By.ID, "nav-game").text == "Back to the game"
    animated = page.execute_script("return window.llamaAnimated")
    said = page.execute_script("return document.getElementById('announce').textContent")
    with session.lock:  # as the server changes a game
        session.move(1, 8)  # Bob quits; the heuristic moves, then it is Ann's turn again
        while session.game.current_player == 1:  # unless Ann had quit: Bob plays on into the next round
            session.move(1, session.game.legal_actions()[0])
        while session.game.current_player == 1 and not session.game.game_over:
            # unless the round ended and Bob, who played its last card, starts the next (the
            # deal is random: a game of two people takes no seed): he moves until it is Ann's turn
            session.move(1, session.game.legal_actions()[-1])
    state = idle(page, f"window.llamaState.seq > {state['seq']} && window.llamaState.your_turn")
    assert page.execute_script("return window.llamaAnimated") == animated
    assert page.execute_script("return document.getElementById('announce').textContent") == said
    assert shown(page, "history") and page.find_element(By.ID, "nav-game").text == "Back to the game: your turn"
    assert [e["text"] for e in state["events"]][0] in log_lines(page)
    page.find_element(By.ID, "nav-game").click()
    assert shown(page, "game") and focused(page) in ("card", "draw", "quit", "round-ok")
    assert console_errors(page) == []


def test_the_browser_s_back_and_forward_go_between_the_form_and_the_games(site, browser):
    """Back to the entry of the new-game form left the game on screen, polled, under an
    address that a reload turned into the form."""
    page = browser
    open_page(page, site.url, DESKTOP)
    set_up(page, [("agent", "random"), ("agent", "greedy")], seed=1, end_score=20)
    page.find_element(By.ID, "start").click()
    first = idle(page)["id"]
    page.find_element(By.ID, "nav-new").click()
    assert shown(page, "setup") and not shown(page, "nav-game")  # a watched game is let go
    page.find_element(By.ID, "start").click()
    second = idle(page, f"window.llamaState.id !== '{first}'")["id"]
    page.back()
    wait(page, 10).until(lambda d: shown(d, "setup"))
    assert "#" not in page.current_url and not shown(page, "game")
    page.back()
    idle(page, f"window.llamaState.id === '{first}'")
    assert shown(page, "game")
    page.forward()
    page.forward()
    idle(page, f"window.llamaState.id === '{second}'")
    assert shown(page, "game") and console_errors(page) == []


def test_the_browser_s_back_goes_through_the_history_and_a_replay(site, browser):
    """Only game links were entries of the browser's history: Back from History left the
    app, Back from a replay opened from it went past History, and Back from the History
    of a game being played showed the new-game form. History and a replay are entries."""
    page = browser
    record, _ = play_record(4, ["random", "random"])
    site.history.save(record, people=[False, False])
    page.get("data:text/html,<p>another site</p>")
    open_page(page, site.url, DESKTOP)
    page.find_element(By.ID, "nav-history").click()
    replay = wait(page, 10).until(lambda d: d.find_element(By.CSS_SELECTOR, "button.replay"))
    assert page.current_url == f"{site.url}/#history"
    replay.click()
    idle(page, "window.llamaState.mode === 'replay'")
    page.back()  # from the replay to the history
    wait(page, 10).until(lambda d: shown(d, "history"))
    assert page.current_url == f"{site.url}/#history" and page.find_elements(By.CSS_SELECTOR, "button.replay")
    page.forward()  # and on to the replay again
    idle(page, "window.llamaState.mode === 'replay'")
    assert shown(page, "game")
    page.back()
    page.back()  # the form the page opened on, not the site before
    wait(page, 10).until(lambda d: shown(d, "setup"))
    assert page.current_url.startswith(site.url) and "#" not in page.current_url
    state, session = start_with_friends(page, site)
    ann = page.current_url
    page.find_element(By.ID, "nav-history").click()
    wait(page, 10).until(lambda d: d.find_elements(By.CSS_SELECTOR, "button.replay"))
    page.execute_script("document.querySelector('#log li').id = 'kept'")
    page.back()  # from the History of a game being played: the game, as it stands
    wait(page, 10).until(lambda d: shown(d, "game"))
    assert page.current_url == ann and not shown(page, "nav-game") and not shown(page, "setup")
    assert page.execute_script("return window.llamaState.id") == session.id == state["id"]
    assert page.find_elements(By.ID, "kept")  # shown as it was, not opened anew
    assert console_errors(page) == []


def test_older_games_in_the_history_repeat_none_that_finished_while_the_list_was_open(site, browser):
    """ "Older games" asked for the next 50 by position: games that finished while the
    list was open pushed the older ones down, and those already listed came again."""
    page = browser
    record, _ = play_record(2, ["random", "random"], end_score=10)
    for k in range(55):  # (each its own game: the history keeps a game it holds once)
        site.history.save(dict(record, context={"copy": k}), people=[False, False], finished=T0 + k)
    open_page(page, site.url, DESKTOP)
    page.find_element(By.ID, "nav-history").click()
    wait(page, 10).until(lambda d: len(d.find_elements(By.CSS_SELECTOR, "button.replay")) == 50)
    for k in range(3):  # finished meanwhile
        site.history.save(dict(record, context={"copy": 100 + k}), people=[False, False], finished=T0 + 100 + k)
    page.find_element(By.ID, "history-more").click()
    wait(page, 10).until(lambda d: "58 games saved" in d.find_element(By.ID, "history-count").text)
    idle_history = "return [...document.querySelectorAll('button.replay')].map((b) => Number(b.dataset.game))"
    wait(page, 10).until(lambda d: len(d.execute_script(idle_history)) == 55)
    ids = page.execute_script(idle_history)
    assert len(set(ids)) == len(ids) == 55 and set(ids) == set(range(1, 56))  # every older one, once
    assert not shown(page, "history-more")
    assert console_errors(page) == []


def test_a_seed_is_sent_as_typed_and_a_bad_one_is_refused_naming_the_range(site, browser, tmp_path):
    """The page sent Number(seed): 9007199254740993 dealt the game of 9007199254740992,
    and the largest seed the server takes, 2^63 - 1, was refused as 9223372036854776000.
    The digits reach the server as typed; what is not a whole number is refused by the
    page, and a seed too large by the server, each naming the range."""
    page = browser

    def dealt(seed: str) -> dict[str, Any] | str:
        open_page(page, site.url, DESKTOP)
        set_up(page, [("person", "Mo"), ("agent", "heuristic")], seed=None, end_score=20)
        page.find_element(By.ID, "seed").send_keys(seed)
        games = len(site.store)
        page.find_element(By.ID, "start").click()
        wait(page, 10).until(
            lambda d: shown(d, "game") or d.find_element(By.ID, "setup-error").text or len(site.store) > games
        )
        if not shown(page, "game"):
            return page.find_element(By.ID, "setup-error").text
        return json.loads(site.store.get(idle(page)["id"])._start)

    def server_deal(seed: int) -> dict[str, Any]:
        body = {"seats": [{"person": "Mo"}, {"agent": "heuristic"}], "seed": seed, "end_score": 20}
        return json.loads(new_game(body, secret=site.store.secret)._start)

    for seed in (2**53 + 1, 2**63 - 1, 7):
        assert dealt(str(seed)) == server_deal(seed), seed
    assert dealt("0009") == server_deal(9)
    assert dealt(str(2**53 + 1)) != server_deal(2**53)
    too_large = dealt(str(2**63))
    assert too_large == "'seed' must be an integer 0..9223372036854775807, got 9223372036854775808"
    refusal = "The seed must be a whole number from 0 to 9223372036854775807, or empty for a random deal."
    for bad in ("-3", "1e3", "2.5"):
        assert dealt(bad) == refusal
    screenshot(page, "seed-desktop.png", tmp_path)
    open_page(page, site.url, PHONE)
    set_up(page, [("person", "Mo"), ("agent", "heuristic")], seed=None, end_score=20)
    page.find_element(By.ID, "seed").send_keys("-3")
    page.find_element(By.ID, "start").click()
    assert page.find_element(By.ID, "setup-error").text == refusal
    assert fits(page)
    screenshot(page, "seed-phone.png", tmp_path)
    refused = console_errors(page)  # the server's 400 for 2^63, and only it
    assert len(refused) == 1 and "/api/games" in refused[0] and "400" in refused[0], refused


def test_a_rule_field_the_browser_cannot_read_is_refused_naming_it(site, browser):
    """A number field holding what the browser cannot read ("3-", "10e") reads "", and
    the game started with that option's default without a word. Start is refused, naming
    the field, as a bad seed is, and no game is made."""
    page = browser
    open_page(page, site.url, DESKTOP)
    set_up(page, [("person", "Mo"), ("agent", "heuristic")], seed=None, end_score=20)
    for field, typed, label, default in (
        ("hand-size", "3-", "Cards in a hand …", 6),
        ("end-score", "10e", "Game ends at … points", 40),
    ):
        retype(page.find_element(By.ID, field), typed)
        page.find_element(By.ID, "start").click()
        error = wait(page, 10).until(lambda d: d.find_element(By.ID, "setup-error").text)
        assert error == f"'{label}' must be a whole number, or empty for {default}.", error
        assert len(site.store) == 0 and not shown(page, "game")
        retype(page.find_element(By.ID, field), str(default))
    assert console_errors(page) == []


IN_VIEW = """
const r = document.getElementById(arguments[0]).getBoundingClientRect();
return r.height > 0 && r.top >= 0 && r.bottom <= innerHeight;
"""


@pytest.mark.parametrize("screen", [PHONE, SMALL_PHONE], ids=lambda s: s.name)
def test_an_error_of_the_form_is_brought_into_view_on_a_phone(site, browser, screen):
    """The form's errors are under it: on a phone an expired game link's explanation was
    below the screen (and said to start a new game "below", where it was the form above),
    and so was a refused Start's, so that Start seemed to do nothing. Each is scrolled
    into view when it is said."""
    driver = browser
    open_page(driver, f"{site.url}/#game=gone&token=nothing", screen)
    error = wait(driver, 10).until(lambda d: d.find_element(By.ID, "setup-error").text)
    assert error.endswith("Start a new game above."), error
    wait(driver, 10).until(lambda d: d.execute_script(IN_VIEW, "setup-error"))
    set_up(driver, [("person", "Mo"), ("agent", "heuristic")], seed=None, end_score=20)
    driver.find_element(By.ID, "seed").send_keys("-3")
    driver.execute_script("const b = document.getElementById('start'); b.scrollIntoView({block: 'end'}); b.click()")
    assert driver.find_element(By.ID, "setup-error").text.startswith("The seed must be")
    assert driver.execute_script(IN_VIEW, "setup-error") and fits(driver)


def test_a_game_started_in_this_browser_is_offered_again_when_the_page_is_reopened(site, browser, tmp_path):
    """The page kept the links of the games it started, but a creator who closed the tab
    and opened the address again found only the new-game form, and no way back to their
    game. The form offers the games started here that go on; one the server forgot is
    not offered, and is forgotten here too."""
    page = browser
    state, session = start_with_friends(page, site)
    open_page(page, site.url, DESKTOP)  # watched: kept nowhere
    set_up(page, [("agent", "random"), ("agent", "greedy")], seed=1, end_score=20)
    page.find_element(By.ID, "start").click()
    idle(page)
    page.get("data:text/html,<p>another site</p>")
    open_page(page, site.url, DESKTOP)  # the tab closed, the address opened again
    button = wait(page, 10).until(lambda d: d.find_element(By.CSS_SELECTOR, "#resume-list button.resume"))
    assert shown(page, "setup") and len(page.find_elements(By.CSS_SELECTOR, "#resume-list button")) == 1
    turn = ", Ann's turn" if state["your_turn"] else ""
    assert re.fullmatch(
        rf"Back to Ann's seat at the game with Bob and heuristic, started \d\d:\d\d( [AP]M)? \(round 1{turn}\)",
        button.text,
    )
    assert button.size["height"] >= TOUCH
    screenshot(page, "resume-desktop.png", tmp_path)
    button.click()
    back = idle(page, f"window.llamaState.id === '{session.id}'")
    assert (
        back["seat"] == 0
        and shown(page, "game")
        and page.current_url.endswith(f"#game={session.id}&token={state['token']}")
    )
    assert hand_shown(page) == [card_text(c) for c in session.game.hand(0)]
    assert page.find_elements(By.CSS_SELECTOR, "#invite-list input.invite")  # Bob's link, to send again
    open_page(page, site.url, PHONE)
    wait(page, 10).until(lambda d: d.find_element(By.CSS_SELECTOR, "#resume-list button.resume"))
    assert fits(page)
    screenshot(page, "resume-phone.png", tmp_path)
    site.store._games.pop(session.id)  # forgotten (the server restarted, say)
    page.get("data:text/html,<p>another site</p>")
    open_page(page, site.url, DESKTOP)
    wait(page, 10).until(
        lambda d: d.execute_script("return JSON.parse(localStorage.getItem('llama-invites')).length") == 0
    )
    assert not shown(page, "resume")
    refused = console_errors(page)  # the 404 of the forgotten game, and only it
    assert len(refused) == 1 and f"/api/games/{session.id}" in refused[0] and "404" in refused[0], refused


def test_a_browser_that_keeps_no_site_storage_plays_all_the_same(site, browser, tmp_path):
    """With cookies blocked, reading localStorage throws: the page stopped before it drew
    the form (no seats, no rule fields; game links opened nothing, Start failed naming
    "person"), and a full storage stopped Start. The page then keeps nothing (no name,
    no links after a reload) and plays all the same."""
    blocked = chromium(tmp_path / "chromium-blocked", {"profile.default_content_setting_values.cookies": 2})
    try:
        open_page(blocked, site.url, DESKTOP)
        assert blocked.execute_script("try { localStorage.length; return false } catch (err) { return true }")
        set_up(blocked, [("person", "Ann"), ("person", "Bob")], seed=None, end_score=20)
        blocked.find_element(By.ID, "start").click()
        idle(blocked)
        assert shown(blocked, "game") and blocked.find_element(By.ID, "setup-error").text == ""
        link = blocked.find_element(By.CSS_SELECTOR, "#invite-list input.invite").get_attribute("value")
        blocked.get("data:text/html,<p>another site</p>")
        open_page(blocked, link, DESKTOP)  # Bob's link opens his seat
        assert idle(blocked)["seat"] == 1 and shown(blocked, "game")
        assert console_errors(blocked) == []
    finally:
        blocked.quit()
    page = browser  # a storage that refuses every write (full)
    open_page(page, site.url, DESKTOP)
    page.execute_script("Storage.prototype.setItem = () => { throw new DOMException('full', 'QuotaExceededError'); }")
    set_up(page, [("person", "Ann"), ("agent", "random")], seed=1, end_score=20)
    page.find_element(By.ID, "start").click()
    first = idle(page)["id"]
    assert shown(page, "game") and page.find_element(By.ID, "setup-error").text == ""
    # alone with agents the game waits for Ann (no one can hand her seat over), as Start says
    page.find_element(By.ID, "nav-new").click()
    page.find_element(By.ID, "start").click()
    question = asked(page)
    assert "your game, which waits for you." in question and "the others" not in question
    page.find_element(By.ID, "ask-no").click()  # the keyboard's focus back on Start, not lost
    assert not asked(page) and focused(page) == "start"
    page.find_element(By.ID, "start").click()
    page.find_element(By.ID, "ask-yes").click()
    idle(page, f"window.llamaState.id !== '{first}'")
    assert shown(page, "game") and console_errors(page) == []


def test_a_reload_on_the_history_or_the_form_keeps_following_the_seat(site, browser):
    """The history's address (#history) dropped the seat's link: a seated person who
    reloaded there (a phone's pull to refresh) came back to a page that no longer
    followed their game (no "Back to the game", the seat away 90 s later). "New game"
    while seated made no entry of its own: Back went to the same form, the next left the
    app. Both addresses keep the seat's link, and Back from either leads to the game, as
    does Back from a game started on that form."""
    page = browser
    state, session = start_with_friends(page, site)
    ann = page.current_url
    session.look(1)
    until_bob_s_turn(page, state, session)  # (the page then asks often)

    def followed() -> None:
        idle(page, f"window.llamaState.id === '{session.id}'")
        assert shown(page, "nav-game")
        session.seen[0] = time.monotonic() - AWAY_SECONDS - 1
        wait(page, 10).until(lambda _: 0 not in session.away())

    for view, entry in (("history", "#history&game="), ("setup", "#new&game=")):
        page.find_element(By.ID, "nav-history" if view == "history" else "nav-new").click()
        assert shown(page, view) and page.current_url == ann.replace("#game=", entry)
        page.refresh()
        wait(page, 10).until(lambda d, v=view: shown(d, v))
        followed()
        assert shown(page, view) and page.current_url == ann.replace("#game=", entry)
        page.back()
        wait(page, 10).until(lambda d: shown(d, "game"))
        assert page.current_url == ann and hand_shown(page) == [card_text(c) for c in session.game.hand(0)]
    page.forward()
    wait(page, 10).until(lambda d: shown(d, "setup") and d.find_elements(By.ID, "end-score"))
    set_up(page, [("person", "Ann"), ("agent", "random")], seed=1, end_score=20)
    page.find_element(By.ID, "start").click()
    assert "The browser's Back button leads back to the game." in asked(page)
    page.find_element(By.ID, "ask-yes").click()
    idle(page, f"window.llamaState.id !== '{session.id}'")
    page.back()
    idle(page, f"window.llamaState.id === '{session.id}'")
    assert shown(page, "game") and page.current_url == ann
    assert console_errors(page) == []


KEPT = "return JSON.parse(localStorage.getItem('llama-invites'))"


def test_the_games_offered_again_are_those_still_played_here_a_few_at_a_time(site, browser, tmp_path):
    """The form offered every game started in this browser that went on: one whose seat
    had been handed to an agent (it then only watched), another tab's seat as "your
    game", and 20 of them pushed Start far down, each asked for on every view of the form
    (a request counts as the seat's page being there). It offers the newest three whose
    seat a person still plays, each named by its seat, more on request, and lets go
    unasked a game not open here for a day."""
    page = browser
    sessions = []
    for _ in range(6):
        _, session = start_with_friends(page, site)  # Ann's turn: seat 0 starts the first round
        session.look(1)
        sessions.append(session)
    handed = sessions[1]  # Bob hands Ann's seat to an agent
    seat, moves, _ = handed._turn
    handed._turn = (seat, moves, time.monotonic() - TURN_SECONDS - 1)
    bob = next(t for t, viewer in handed.tokens.items() if viewer == 1)
    answer = httpx.post(f"{site.url}/api/games/{handed.id}/hand-over", json={"seat": 0}, headers={"X-Llama-Token": bob})
    assert answer.status_code == 200, answer.text
    page.execute_script(  # the oldest: not open here for two days
        "const list = JSON.parse(localStorage.getItem('llama-invites'));"
        "list[0].seen = list[0].started = Date.now() - 2 * 86400000;"
        "localStorage.setItem('llama-invites', JSON.stringify(list));"
    )
    for session in sessions:
        session.seen[0] = -1.0  # (a time no request gives)
    page.get("data:text/html,<p>another site</p>")
    open_page(page, site.url, PHONE)
    wait(page, 10).until(lambda d: shown(d, "resume-more"))
    buttons = page.find_elements(By.CSS_SELECTOR, "#resume-list button.resume")
    assert [b.get_attribute("data-game") for b in buttons] == [s.id for s in sessions[:2:-1]]
    for b in buttons:
        assert b.text.startswith("Back to Ann's seat at the game with Bob and heuristic, started ")
    # asked: the newest four (three offered, a fourth to know there are more), not the older
    assert [s.seen[0] == -1.0 for s in sessions] == [True, True, False, False, False, False]
    assert [g["id"] for g in page.execute_script(KEPT)] == [s.id for s in sessions[1:]]
    assert fits(page)
    screenshot(page, "resume-more-phone.png", tmp_path)
    page.find_element(By.ID, "resume-more").click()
    wait(page, 10).until(lambda d: not shown(d, "resume-more"))
    buttons = page.find_elements(By.CSS_SELECTOR, "#resume-list button.resume")
    assert [b.get_attribute("data-game") for b in buttons] == [s.id for s in sessions[:1:-1]]  # not the handed one
    assert [bool(g.get("done")) for g in page.execute_script(KEPT)] == [True, False, False, False, False]
    assert console_errors(page) == []


def test_the_keyboard_s_focus_comes_back_to_the_moves_after_a_round_s_result(site, browser):
    """Closing the round's result left the focus on its hidden Continue button: the next
    Tab went through the log and the menus before the cards."""
    page = browser
    open_page(page, site.url, DESKTOP)
    set_up(page, [("person", "Ann"), ("person", "Bob"), ("agent", "heuristic")], seed=None, end_score=200)
    page.find_element(By.ID, "start").click()
    session = site.store.get(idle(page)["id"])
    for _ in range(40):  # everyone quits: rounds end quickly, until one ends on Ann's turn
        if session.game.current_player == 1:
            with session.lock:  # as the server changes a game
                session.move(1, 8)  # Bob quits
        state = idle(page, f"window.llamaState.seq === {session.seq}")
        if not state["your_turn"]:
            continue
        if shown(page, "round-result"):
            page.find_element(By.ID, "nav-history").click()  # Escape there leaves the unseen result alone
            ActionChains(page).send_keys("\ue00c").perform()
            page.find_element(By.ID, "nav-game").click()
            assert shown(page, "round-result")
            ActionChains(page).send_keys("\ue00c").perform()  # Escape
            assert not shown(page, "round-result")
            idle(page)  # (the next round's moves held for the result are shown first)
            assert focused(page) in ("card", "draw", "quit")
            return
        page.find_element(By.ID, "quit").click()
        idle(page, f"window.llamaState.seq > {state['seq']}")
    raise AssertionError("no round ended on Ann's turn")


def asked(driver: webdriver.Chrome) -> str:
    """The question the page's dialog asks, or "" when none is open."""
    return driver.execute_script("const d = document.getElementById('ask'); return d.open ? d.textContent : ''")


def focused(driver: webdriver.Chrome) -> str:
    """What has the keyboard's focus: a card's action, ``draw``, ``quit``, or another id."""
    return driver.execute_script(
        "const e = document.activeElement; return e.dataset.action !== undefined ? 'card' : e.id || e.tagName"
    )


def test_a_game_reopened_by_keyboard_reload_and_link(site, browser):
    """What a person meets beyond one page: the keyboard alone plays (the focus comes back
    to the move buttons after each move), a reload shows the game so far at once (it was
    replayed one event at a time, a minute for a long game) and keeps the links for the
    others, a game link pasted into the open page opens it, and a move from a page that
    fell behind (the same seat in another tab) catches up instead of staying stuck."""
    driver = browser
    state, session = start_with_friends(driver, site)
    ann = driver.current_url
    links = [i.get_attribute("value") for i in driver.find_elements(By.CSS_SELECTOR, "#invites input.invite")]
    assert len(links) == 1 and shown(driver, "invite-local")  # served on 127.0.0.1: the page says who can reach it
    flags = "return [...document.querySelectorAll('#invite-local code')].map((c) => c.getClientRects().length)"
    assert set(driver.execute_script(flags)) == {1}  # a flag on one line ("--" and "host" fell on two)
    bob = links[0]

    # the keyboard alone: Enter on the focused move, then the focus is back on a move
    pages = {0: ann, 1: bob}
    keyed = 0
    for _ in range(4):
        seat = session.game.current_player
        if driver.current_url != pages[seat]:
            driver.get(pages[seat])
        state = synced(driver, session)
        if not state["your_turn"]:
            break
        if shown(driver, "round-result"):
            ActionChains(driver).send_keys("\ue00c").perform()  # Escape closes the round's result
            assert not shown(driver, "round-result")
            idle(driver)  # (the next round's moves held for it)
        assert focused(driver) in ("card", "draw", "quit")
        ActionChains(driver).send_keys("\ue007").perform()  # Enter
        idle(driver, f"window.llamaState.seq > {state['seq']}")
        keyed += 1
    assert keyed >= 2

    # a reload shows the game so far at once, the creator's links included
    driver.get(ann)
    driver.refresh()
    state = synced(driver, session)
    assert driver.execute_script("return window.llamaAnimated") == 0
    assert len(log_lines(driver)) == len(state["events"]) + bool(state["truncated"]) > 3
    assert [i.get_attribute("value") for i in driver.find_elements(By.CSS_SELECTOR, "#invites input.invite")] == links

    # a game link pasted into the open page opens it: Bob's seat, without Ann's links
    driver.execute_script("location.hash = arguments[0]", bob.split("#", 1)[1])
    state = idle(driver, "window.llamaState.seat === 1")
    assert not shown(driver, "invites") and hand_shown(driver) == [card_text(c) for c in session.game.hand(1)]

    # the seat to move open in two tabs: the other tab moves, this one falls behind
    seat = session.game.current_player
    driver.get(pages[seat])  # (only the hash may change: the page then opens the link without a reload)
    state = idle(driver, f"window.llamaState.seat === {seat} && window.llamaState.seq === {session.seq}", timeout=15)
    assert state["your_turn"]
    driver.switch_to.new_window("tab")
    try:
        driver.get(pages[seat])
        synced(driver, session)
        play_something(driver, 0)
        idle(driver, f"window.llamaState.seq > {state['seq']}")
    finally:
        driver.close()
        driver.switch_to.window(driver.window_handles[0])
    assert session.seq > state["seq"] and driver.execute_script("return window.llamaState.your_turn")
    play_something(driver, 0)  # still shown as this page's turn: refused, then caught up
    state = synced(driver, session)
    assert "moved on" in driver.find_element(By.ID, "game-error").text
    assert hand_shown(driver) == [card_text(c) for c in session.game.hand(seat)]


def serve_on(store: SessionStore, port: int, app=None) -> tuple[uvicorn.Server, threading.Thread]:
    sock = bind("127.0.0.1", port)
    server = uvicorn.Server(uvicorn.Config(app or create_app(store), log_level="warning"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    wait(server, 10).until(lambda s: s.started)
    return server, thread


def waiting_page(driver, store: SessionStore, port: int) -> tuple[dict, object, str]:
    """A game of Ann and Bob on the server at ``port``, its page open on the seat whose
    turn it is not: the page's state, the game, and the token of the seat to move."""
    open_page(driver, f"http://127.0.0.1:{port}", DESKTOP)
    set_up(driver, [("person", "Ann"), ("person", "Bob")], seed=None, end_score=20)
    driver.find_element(By.ID, "start").click()
    state = idle(driver)
    session = store.get(state["id"])
    links = [driver.current_url, driver.find_element(By.CSS_SELECTOR, "#invites input.invite").get_attribute("value")]
    mover = session.game.current_player
    if state["your_turn"]:  # the page must wait: open the seat whose turn it is not
        driver.get(links[1 - mover])
        state = idle(driver, f"window.llamaState.seat === {1 - mover}")
    assert not state["your_turn"]
    return state, session, links[mover].rsplit("token=", 1)[1]


def test_a_waiting_page_says_the_server_is_lost_and_recovers_when_it_is_back(browser):
    """A page waiting for another person's move that cannot reach the server says so and
    tries again (it stopped polling for good, showing "Failed to fetch"); when the same
    server answers again, the message goes and the page follows the game."""
    store = SessionStore(entropy=0, secret=bytes(16))
    server, thread = serve_on(store, 0)
    port = server.servers[0].sockets[0].getsockname()[1]
    driver = browser
    try:
        state, session, token = waiting_page(driver, store, port)
        server.should_exit = True
        thread.join(timeout=10)
        error = driver.find_element(By.ID, "game-error")
        wait(driver, 10).until(lambda d: "connection to the server is lost" in error.text)
        server, thread = serve_on(store, port)  # the same games: as a server that was only unreachable
        answer = httpx.post(
            f"http://127.0.0.1:{port}/api/games/{state['id']}/move",
            json={"action": session.game.legal_actions()[0]},
            headers={"X-Llama-Token": token},
        )
        assert answer.status_code == 200, answer.text
        synced(driver, session)
        wait(driver, 20).until(lambda d: error.text == "")
    finally:
        server.should_exit = True
        thread.join(timeout=10)


def test_a_waiting_page_keeps_polling_through_a_busy_server(browser):
    """A page waiting for another person's move that got one 503 (or 500, 429) stopped
    polling for good, showing 'HTTP 503': the other person's moves never reached it. It
    says the server is busy, tries again, and follows the game once it answers."""
    store = SessionStore(entropy=0, secret=bytes(16))
    inner = create_app(store)
    outage = threading.Event()

    async def flaky(scope, receive, send):  # the API answers 503 while the outage lasts
        if outage.is_set() and scope["type"] == "http" and scope["path"].startswith("/api/games/"):
            await send({"type": "http.response.start", "status": 503, "headers": [(b"content-type", b"text/plain")]})
            await send({"type": "http.response.body", "body": b"Service Unavailable"})
            return
        await inner(scope, receive, send)

    server, thread = serve_on(store, 0, flaky)
    port = server.servers[0].sockets[0].getsockname()[1]
    driver = browser
    try:
        state, session, token = waiting_page(driver, store, port)
        outage.set()
        error = driver.find_element(By.ID, "game-error")
        wait(driver, 10).until(lambda d: "server cannot answer now" in error.text)
        outage.clear()
        answer = httpx.post(
            f"http://127.0.0.1:{port}/api/games/{state['id']}/move",
            json={"action": session.game.legal_actions()[0]},
            headers={"X-Llama-Token": token},
        )
        assert answer.status_code == 200, answer.text
        synced(driver, session)  # the move reached the page that had seen a 503
        wait(driver, 20).until(lambda d: error.text == "")
    finally:
        server.should_exit = True
        thread.join(timeout=10)


SMALL_FIELDS = """
const invite = Object.assign(document.createElement('input'), {className: 'invite', readOnly: true});
document.getElementById('invite-list').append(invite);  // a friend's link, as a game of two people shows it
const small = [...document.querySelectorAll('input, select, textarea')]
  .map((e) => [e.id || e.className || e.tagName, parseFloat(getComputedStyle(e).fontSize)])
  .filter(([, px]) => px < 16);
invite.remove();
return small;
"""
"""The form fields whose text is under 16 px: iPhone Safari zooms the page in when one is tapped."""


def test_a_small_phone_fits_the_setup_and_a_full_table_of_long_names(site, browser):
    """At 320 px nothing is wider than the screen (the record's file input was 360 px,
    so the phone zoomed the whole page out), no form field's text is under 16 px (at 15 px
    the phone zoomed the page in at each tap on one), and at six seats a name as long as
    the server takes is cut inside its seat, not spilled over the next one."""
    driver = browser
    open_page(driver, site.url, SMALL_PHONE)
    assert driver.execute_script("return document.documentElement.scrollWidth") <= SMALL_PHONE.width
    wait(driver, 10).until(lambda d: d.find_elements(By.ID, "end-score"))  # (built from GET /api/rules)
    assert driver.execute_script(SMALL_FIELDS) == []
    long_name = "Bartholomew Fitzgerald-Montgomery the 3rd"[:40]
    set_up(driver, [("person", long_name)] + [("agent", "random")] * 5, seed=1, end_score=20)
    driver.find_element(By.ID, "start").click()
    idle(driver)
    assert driver.execute_script("return document.documentElement.scrollWidth") <= SMALL_PHONE.width
    seats = driver.execute_script(
        "return [...document.querySelectorAll('#seats .seat')].map((s) => {"
        "  const box = s.getBoundingClientRect(), name = s.querySelector('b').getBoundingClientRect();"
        "  return [box.left, box.right, name.left, name.right]; })"
    )
    assert len(seats) == 6
    for left, right, name_left, name_right in seats:
        assert left <= name_left and name_right <= right, seats
    state = idle(driver)  # the round's result: its headings whole ("poin|ts" at 320 px)
    while not any(e["type"] == "round" for e in state["events"]):
        driver.find_element(By.ID, "quit").click()
        state = idle(driver, f"window.llamaState.seq > {state['seq']}")
    assert shown(driver, "round-result") and driver.execute_script(BROKEN_WORDS, "#round-result th") == []
    # the whole name in the seat's title (cut on screen: two seats of long names looked alike)
    assert driver.find_element(By.CSS_SELECTOR, '.seat[data-seat="0"] b').get_attribute("title") == long_name
    quit_to_the_end(driver)  # the final standings' headings whole too ("sc|or|e" beside a long name)
    for screen in (SMALL_PHONE, PHONE):
        resize(driver, screen)
        assert driver.execute_script(BROKEN_WORDS, "#standings th") == [], screen


# --------------------------------------------------------------------------- 3. names are text


class _Moves(TableListener):
    def __init__(self) -> None:
        self.moves: list[tuple[int, int]] = []

    def on_move(self, table: Table, seat: int, action: int, drawn: int | None) -> None:
        self.moves.append((seat, action))


IMG = '<img src=x onerror="window.pwned=1">'
BOLD = "<b>bold</b>"


def markup_record(seed: int) -> dict[str, Any]:
    """A one-round game of random agents whose names are markup (and 'You')."""
    agents = [agent_registry.make("random") for _ in range(3)]
    for seat, agent in enumerate(agents):
        agent_registry.reset_agent(agent, seed * 10 + seat)
    game = LlamaGame(3, end_score=1, rng=seed)
    start = game.to_dict()
    moves = _Moves()
    Table(game, agents, listener=moves).play()
    return GameRecording(["You", IMG, BOLD], ["random"] * 3, start, moves.moves).to_json()


def test_names_from_a_record_are_shown_as_text_never_as_markup(site, browser, tmp_path):
    driver = browser
    open_page(driver, site.url, DESKTOP)
    path = tmp_path / "record.json"
    path.write_text(json.dumps(markup_record(seed=4)), encoding="utf-8")
    full_speed(driver)
    driver.find_element(By.ID, "replay-file").send_keys(str(path))
    state = idle(driver, "window.llamaState.mode === 'replay'")
    for _ in range(3):
        driver.find_element(By.ID, "step").click()
        state = idle(driver, f"window.llamaState.seq > {state['seq']}")
    driver.find_element(By.ID, "play").click()
    state = idle(driver, "window.llamaState.game_over", timeout=60)

    assert driver.execute_script("return typeof window.pwned") == "undefined"
    for where in ("#seats", "#log", "#standings", "#round-result"):
        assert not driver.find_elements(By.CSS_SELECTOR, f"{where} img, {where} b:not(.seat b)"), where
    names = [e.text for e in driver.find_elements(By.CSS_SELECTOR, "#seats .seat .who b")]
    assert names == ["seat 0", IMG, BOLD]  # 'You' in a record is a seat, not the spectator
    log = "\n".join(log_lines(driver))
    assert IMG in log and BOLD in log and "seat 0" in log
    assert not any(line.startswith("You") for line in log_lines(driver))
    standings = driver.find_element(By.ID, "standings").text
    assert IMG in standings and BOLD in standings
    assert IMG in driver.find_element(By.ID, "round-result").text


# --------------------------------------------------------------------------- 4. watching agents


def test_watching_agents_shows_every_hand_and_a_bad_agent_the_servers_error(site, browser):
    driver = browser
    open_page(driver, site.url, DESKTOP)
    seats = [("agent", "heuristic"), ("agent", "nosuchagent"), ("agent", "random")]
    # a whole game to 40 (about 30 steps to 15): Play runs at 5 ms a move until the pause
    # lands, and on a busy machine a game to 15 could end first, which no pause can keep still
    set_up(driver, seats, seed=3, end_score=40)
    driver.find_element(By.ID, "start").click()
    with pytest.raises(SessionError) as refused:
        new_game({"seats": [{k: v} for k, v in seats], "seed": 3, "end_score": 40})
    wait(driver, 10).until(lambda d: d.find_element(By.ID, "setup-error").text == str(refused.value))
    assert shown(driver, "setup") and driver.execute_script("return window.llamaState") is None

    box = driver.find_elements(By.CSS_SELECTOR, "#seat-rows input")[1]
    box.clear()
    box.send_keys("search:worlds=16")  # which does not search at 3 players: the page says so
    driver.find_element(By.ID, "start").click()
    state = idle(driver, "window.llamaState.mode === 'watch'")
    assert driver.find_element(By.ID, "setup-error").text == ""
    assert len(state["warnings"]) == 1 and shown(driver, "table-warnings")
    assert driver.find_element(By.ID, "table-warnings").text == f"Note: {state['warnings'][0]}"
    assert shown(driver, "watch-controls") and not shown(driver, "you") and not shown(driver, "invites")
    for _ in range(3):
        driver.find_element(By.ID, "step").click()
        state = idle(driver, f"window.llamaState.seq > {state['seq']}")
        hands = [s["hand"] for s in state["table"]["seats"]]  # a spectator of agents sees every hand
        minis = driver.find_elements(By.CSS_SELECTOR, "#seats .mini-hand")
        assert [[c.text for c in m.find_elements(By.CSS_SELECTOR, ".card")] for m in minis] == [
            [card_text(c) for c in h] for h in hands
        ]
    # Play runs on by itself until paused (the round's result may be in the way)
    driver.find_element(By.ID, "play").click()
    wait(driver, 10).until(lambda d: d.execute_script("return window.llamaState.seq") >= state["seq"] + 4)
    for _ in range(3):
        if shown(driver, "round-result"):
            dismiss_round(driver)
        try:
            driver.find_element(By.ID, "pause").click()
            break
        except ElementClickInterceptedException:
            continue
    still(driver)
    # a pause while a step is on its way to the server stops the play too
    driver.execute_script(
        "document.getElementById('play').click();setTimeout(() => document.getElementById('pause').click(), 5)"
    )
    still(driver)
    assert driver.find_element(By.ID, "play").is_enabled()


def still(driver: webdriver.Chrome) -> None:
    """The watched game stays where it is (for 0.3 s: a dozen steps' time at the pace
    of :func:`quick_moves`)."""
    seq = idle(driver)["seq"]
    time.sleep(0.3)
    after = idle(driver)
    assert after["seq"] == seq and not after["game_over"], "the game went on after Pause"


# --------------------------------------------------------------------------- 5. following the game as it is shown


SAMPLE_TURN = """
const [target, seq, id, done] = arguments;
const samples = [];
let over = false;
const sample = () => {
  if (over) return;
  const seat = document.querySelector('#seats .seat.to-act b');
  const state = window.llamaState;
  samples.push({idle: window.llamaIdle, turn: document.getElementById('turn').textContent,
                to_act: seat ? seat.textContent : null, id: state ? state.id : null,
                shown: !document.getElementById('game').classList.contains('hidden')});
  if (window.llamaIdle && state && (state.seq !== seq || state.id !== id)) {
    over = true;
    clearInterval(timer);
    observer.disconnect();
    done(samples);
  }
};
const timer = setInterval(sample, 15);
const observer = new MutationObserver(sample);
observer.observe(document.body, {subtree: true, childList: true, characterData: true, attributes: true});
target.click();
"""
"""Clicks ``target`` and reads the turn line (with the seat the table marks to act) after
each change to the page, and every 15 ms besides, until the page is idle on a state
other than frame ``seq`` of game ``id``. Each step the page shows is read (a move shown
for a few milliseconds too), not only those a 15 ms look happens to fall on."""


def sampled_turn(driver: webdriver.Chrome, target: Any) -> list[dict[str, Any]]:
    state = driver.execute_script("return window.llamaState")
    before = (state["seq"], state["id"]) if state else (None, None)
    return driver.execute_async_script(SAMPLE_TURN, target, *before)


def test_the_turn_line_says_who_plays_while_the_moves_are_shown(site, browser):
    """The line over the hand was written only once the page was idle: while the agents'
    moves were shown it still said "Your turn: tap a card, draw or quit." (every button
    off, another seat marked to act), as it did while a slow move was on its way, and a
    second game in the page showed the first one's "Game over" during its opening moves.
    A screen reader heard "Your turn" once only (the line did not change). The line now
    follows each move shown, says a move is on its way, and is read out at rest."""
    driver = browser
    open_page(driver, site.url, DESKTOP)
    set_up(driver, [("person", "Kim")] + [("agent", "heuristic")] * 3, seed=3, end_score=1)
    driver.find_element(By.ID, "start").click()
    state = idle(driver)
    assert driver.find_element(By.ID, "turn").get_attribute("aria-live") is None  # (read out through #announce)
    driver.execute_script(  # a slow network: each request arrives 0.2 s late (a dozen of 15 ms looks)
        "const f = window.fetch; window.fetch = (...a) => new Promise((r) => setTimeout(r, 200)).then(() => f(...a));"
    )
    samples: list[dict[str, Any]] = []
    for turn in range(60):
        if state["game_over"]:
            break
        assert state["your_turn"]
        if shown(driver, "round-result"):
            dismiss_round(driver)
        said = driver.execute_script("return document.getElementById('announce').textContent")
        assert said == driver.find_element(By.ID, "turn").text and said.startswith("Your turn"), said
        cards = driver.find_elements(By.CSS_SELECTOR, "#hand button:enabled")
        draw = driver.find_element(By.ID, "draw")
        target = cards[0] if cards else draw if draw.is_enabled() and turn % 3 else driver.find_element(By.ID, "quit")
        samples += sampled_turn(driver, target)
        state = idle(driver)
    assert state["game_over"]
    busy = [s for s in samples if not s["idle"]]
    assert any(s["turn"] == "Sending your move…" for s in busy)
    assert any(s["turn"].endswith(" is playing…") for s in busy)
    for s in busy:
        assert s["turn"] in ("Sending your move…", "Game over.", f"{s['to_act']} is playing…") or (
            s["turn"] == "Your turn…" and s["to_act"] == "Kim"
        ), s
    if shown(driver, "round-result"):
        dismiss_round(driver)
    first = state["id"]
    driver.find_element(By.ID, "new-game").click()
    set_up(driver, [("person", "Kim")] + [("agent", "heuristic")] * 3, seed=4, end_score=1)
    samples = sampled_turn(driver, driver.find_element(By.ID, "start"))
    opening = [s for s in samples if s["id"] != first and s["shown"]]
    assert opening and not any("Game over" in s["turn"] for s in opening), opening


def card_word(card: int) -> str:
    return "llama" if card == 7 else str(card)


def card_name(card: int) -> str:
    return "a llama" if card == 7 else f"a {card}"


def check_turn_says_why(driver: webdriver.Chrome, state: dict[str, Any]) -> set[str]:
    """The turn line names the cards this page can play on the top card, whether it can
    draw and why not, and each card or move that is off says why in its title (the
    description a screen reader reads); which of the cases came up."""
    line = driver.find_element(By.ID, "turn").text
    top = state["table"]["top_card"]
    legal = set(state["legal"])
    on, playable = f"on the {card_word(top)}", (top, top % 7 + 1)
    cards = [c for c in playable if c - 1 in legal]
    cases = set()
    if cards:
        assert line.startswith(f"Your turn: play {' or '.join(card_name(c) for c in cards)} {on}, "), line
        cases.add("play")
    else:
        assert f"You hold no {card_word(playable[0])} or {card_word(playable[1])} to play {on}." in line, line
        cases.add("no card")
    draw = driver.find_element(By.ID, "draw")
    if 7 in legal:
        assert "draw" in line and "cannot draw" not in line and not draw.get_attribute("title"), line
    else:
        why = "the draw pile is empty" if state["table"]["draw_pile"] == 0 else "you are the last one in the round"
        assert line.endswith(f"You cannot draw: {why}."), line
        assert draw.get_attribute("title") == f"you cannot draw: {why}"
        cases.add("no draw")
    only = f"cannot be played {on}: only {card_name(playable[0])} or {card_name(playable[1])}"
    for button in driver.find_elements(By.CSS_SELECTOR, "#hand button"):
        assert button.get_attribute("title") == ("" if button.is_enabled() else only)
    return cases


def described(driver: webdriver.Chrome, name: str) -> list[str]:
    """The descriptions the accessibility tree gives the buttons named ``name``."""
    nodes = driver.execute_cdp_cmd("Accessibility.getFullAXTree", {})["nodes"]
    return [
        n.get("description", {}).get("value", "")
        for n in nodes
        if n.get("role", {}).get("value") == "button" and n.get("name", {}).get("value") == name
    ]


def test_the_turn_line_names_the_cards_that_can_be_played_and_why_a_move_is_off(site, browser):
    """The line always said "tap a card, draw or quit", with no card to play (a llama on
    the pile, no llama or 1 in the hand) and with Draw off (the last one in the round):
    a card that could not be played was only dimmed, and a screen reader heard "play 3,
    disabled" and no reason. The line names the plays and why a move is off, and every
    card or move that is off says why."""
    driver = browser
    open_page(driver, site.url, DESKTOP)
    cases: set[str] = set()
    for opponent in ("random", "cautious:threshold=100"):  # (the second quits at once: Kim is the last one in)
        set_up(driver, [("person", "Kim"), ("agent", opponent)], seed=2, end_score=30)
        driver.find_element(By.ID, "start").click()
        state = idle(driver)
        for turn in range(80):
            if state["game_over"]:
                break
            if shown(driver, "round-result"):
                dismiss_round(driver)
                state = idle(driver)
            cases |= check_turn_says_why(driver, state)
            off = driver.find_elements(By.CSS_SELECTOR, "#hand button:disabled")
            if off and "described" not in cases:
                top = state["table"]["top_card"]
                name = off[0].get_attribute("aria-label")
                said = described(driver, name)
                assert said and all(d.startswith(f"cannot be played on the {card_word(top)}:") for d in said), said
                cases.add("described")
            if cases >= {"play", "no card", "no draw", "described"}:
                return
            play_something(driver, turn)
            state = idle(driver, f"window.llamaState.seq > {state['seq']}")
        driver.find_element(By.ID, "new-game").click()
    raise AssertionError(f"only {sorted(cases)} came up")


LIVE = """
return [...document.querySelectorAll('[aria-live], [role=log], [role=status], [role=alert]')]
  .filter((e) => (e.getAttribute('aria-live') || 'polite') !== 'off' && e.closest('#game'))
  .map((e) => e.id || e.className);
"""
"""The live regions of the game's view (a role of log or status is polite unless aria-live says off)."""


def test_a_screen_reader_hears_each_move_once(site, browser):
    """The log (role="log", a polite live region) and #announce both read out every move,
    so a screen reader heard each one twice, and a page opened on a game under way read
    out up to 200 lines at once. The log is not read out; #announce reads each move."""
    driver = browser
    open_page(driver, site.url, DESKTOP)
    set_up(driver, [("person", "Kim"), ("agent", "heuristic")], seed=3, end_score=20)
    driver.find_element(By.ID, "start").click()
    idle(driver)
    assert driver.find_element(By.ID, "log").get_attribute("aria-live") == "off"
    regions = driver.execute_script(LIVE)
    assert "log" not in regions and "announce" in regions
    nodes = driver.execute_cdp_cmd("Accessibility.getFullAXTree", {})["nodes"]
    lives = {
        n.get("role", {}).get("value"): p["value"]["value"]
        for n in nodes
        for p in n.get("properties", [])
        if p["name"] == "live"
    }
    assert lives.get("log", "off") == "off", lives


def test_stepping_a_replay_with_the_keyboard_keeps_the_focus_on_step(site, browser, tmp_path):
    """Step and Play were switched off while a step was shown: the keyboard's focus fell
    to the page, and of three presses of Space on Step only the first stepped. They stay
    on (a step asked for while one is shown is let go), Play hands the focus to Pause, and
    Pause, off then, hands it back."""
    driver = browser
    record, _ = play_record(4, ["greedy", "greedy"])  # (a long first round: no result takes the focus)
    path = tmp_path / "record.json"
    path.write_text(json.dumps(record), encoding="utf-8")
    open_page(driver, site.url, DESKTOP)
    driver.find_element(By.ID, "replay-file").send_keys(str(path))
    state = idle(driver, "window.llamaState.mode === 'replay'")
    driver.execute_script("document.getElementById('step').focus()")
    for _ in range(3):
        ActionChains(driver).send_keys(" ").perform()
        state = idle(driver, f"window.llamaState.seq > {state['seq']}", timeout=5)
        assert focused(driver) == "step"
    assert state["moves_left"] == len(record["moves"]) - 3
    driver.execute_script("document.getElementById('play').focus()")
    ActionChains(driver).send_keys(" ").send_keys(" ").perform()  # Play, then Pause
    still(driver)
    assert focused(driver) in ("play", "step") and driver.find_element(By.ID, "play").is_enabled()
    assert not driver.find_element(By.ID, "pause").is_enabled()  # (nothing plays: it looked on)
    assert console_errors(driver) == []


def test_play_waits_at_each_round_s_result_until_it_is_closed(site, browser):
    """Watching agents with Play, each round's result was hidden again by the next step
    (0.7 s at the default speed), and the focus on its Continue button was lost. Play
    waits at the result until it is closed, then goes on, the focus on Pause."""
    driver = browser
    open_page(driver, site.url, DESKTOP)
    set_up(driver, [("agent", "heuristic"), ("agent", "greedy"), ("agent", "random")], seed=3, end_score=100)
    driver.find_element(By.ID, "start").click()
    idle(driver, "window.llamaState.mode === 'watch'")
    driver.find_element(By.ID, "play").click()
    wait(driver, 60).until(lambda d: shown(d, "round-result"))
    time.sleep(0.3)  # (a dozen steps' time at this pace: see quick_moves)
    assert shown(driver, "round-result") and focused(driver) == "round-ok"
    state = idle(driver)
    time.sleep(0.3)
    assert idle(driver)["seq"] == state["seq"]
    ActionChains(driver).send_keys("\ue00c").perform()  # Escape
    assert not shown(driver, "round-result") and focused(driver) == "pause"
    idle(driver, f"window.llamaState.seq > {state['seq']}")  # Play goes on
    driver.execute_script("document.getElementById('pause').click()")  # (another result may be over it)
    still(driver)
    assert console_errors(driver) == []


ROUND_IN_VIEW = """
const box = document.getElementById('round-result');
const title = box.querySelector('h3').getBoundingClientRect();
const ok = document.getElementById('round-ok').getBoundingClientRect();
return {scrolled: box.scrollTop, title: [title.top, title.bottom], ok: [ok.top, ok.bottom], height: innerHeight};
"""


@pytest.mark.parametrize("screen", [DESKTOP, SMALL_PHONE], ids=lambda s: s.name)
def test_a_round_s_result_opens_at_its_title(site, browser, screen):
    """The round's result was as tall as the board, and its Continue took the focus by
    scrolling to it: six players' result opened scrolled to its end, its title and first
    rows out of sight. It opens at its title, Continue in view and focused."""
    driver = browser
    open_page(driver, site.url, screen)
    set_up(driver, [("agent", "heuristic")] * 6, seed=3, end_score=100)
    driver.find_element(By.ID, "start").click()
    idle(driver, "window.llamaState.mode === 'watch'")
    driver.find_element(By.ID, "play").click()
    wait(driver, 60).until(lambda d: shown(d, "round-result"))
    driver.execute_script("document.getElementById('pause').click()")
    shown_at = driver.execute_script(ROUND_IN_VIEW)
    assert shown_at["scrolled"] == 0 and focused(driver) == "round-ok", shown_at
    assert shown_at["title"][0] >= 0 and shown_at["ok"][1] <= shown_at["height"], shown_at
    assert fits(driver)
    assert driver.execute_script(BROKEN_WORDS, "#round-result td") == []  # ("heuristi|c#2" at 320 px)


def test_the_keyboard_s_focus_goes_to_new_game_at_a_game_s_end_without_scrolling(site, browser, tmp_path):
    """At a game's end the keyboard's focus fell to the page: after Continue on the last
    result of a game played (no move is this page's to focus), and of a replay opened from
    the history (whose Replay button hides) New game took it by scrolling the page 141 px,
    Pause still on with nothing playing. The replay opens on Step; at the end New game
    has the focus, the page where it was, Pause off."""
    driver = browser
    open_page(driver, site.url, DESKTOP)
    set_up(driver, [("person", "Ann"), ("agent", "heuristic")], seed=2, end_score=1)
    driver.find_element(By.ID, "start").click()
    state = idle(driver)
    for turn in range(60):
        if state["game_over"]:
            break
        if state["your_turn"]:
            play_something(driver, turn)
        state = idle(driver, f"window.llamaState.seq > {state['seq']} || window.llamaState.game_over")
    assert state["game_over"] and shown(driver, "round-result")
    ActionChains(driver).send_keys("\ue00c").perform()  # Escape
    assert focused(driver) == "new-game"
    driver.execute_script("for (let i = 0; i < 200; i++) log('a move')")  # (a long game's log)
    for button in ("new-game", "download"):  # (the log was 420 px tall: they were below a laptop's screen)
        assert driver.execute_script(IN_VIEW, button), button
    heading = (
        "const p = document.querySelector('.log-panel'); p.scrollTop = p.scrollHeight; "
        "return p.querySelector('h3').getBoundingClientRect().top - p.getBoundingClientRect().top"
    )
    assert driver.execute_script(heading) >= 0  # the log's heading stays in sight as it scrolls

    driver.find_element(By.ID, "nav-history").click()
    replay = wait(driver, 10).until(lambda d: d.find_element(By.CSS_SELECTOR, "button.replay"))
    driver.execute_script("arguments[0].focus()", replay)
    ActionChains(driver).send_keys(Keys.ENTER).perform()
    state = idle(driver, "window.llamaState.mode === 'replay'")
    assert focused(driver) == "step" and not driver.find_element(By.ID, "pause").is_enabled()
    for _ in range(60):
        if state["moves_left"] == 0:
            break
        if shown(driver, "round-result"):
            ActionChains(driver).send_keys("\ue00c").perform()
        driver.find_element(By.ID, "step").click()
        state = idle(driver, f"window.llamaState.seq > {state['seq']}")
    assert shown(driver, "round-result")
    top = driver.execute_script("return scrollY")
    ActionChains(driver).send_keys("\ue00c").perform()
    assert focused(driver) == "new-game" and driver.execute_script("return scrollY") == top
    assert not driver.find_element(By.ID, "pause").is_enabled() and not driver.find_element(By.ID, "step").is_enabled()
    assert console_errors(driver) == []


def test_the_speed_slider_is_a_touch_target_on_a_phone(site, browser):
    """The Speed slider was 26 px tall, under a finger's 44 px."""
    driver = browser
    open_page(driver, site.url, PHONE)
    set_up(driver, [("agent", "heuristic"), ("agent", "random")], seed=3, end_score=20)
    driver.find_element(By.ID, "start").click()
    idle(driver, "window.llamaState.mode === 'watch'")
    speed = driver.find_element(By.ID, "speed").rect
    assert speed["height"] >= TOUCH and speed["width"] >= TOUCH, speed
    assert fits(driver)


def test_a_refused_leave_catches_up_with_the_table(site, browser):
    """Ann's page learnt of Bob's coming only at its next look, 15 s later on her turn (no
    "Leave the table" until then), and when Bob left just before her own Leave, the
    server's refusal was all she got: her page showed Bob as a person and offered Leave
    until its next look. It looks every 3 s while another person is at the table, and
    after a refused hand-over or Leave it asks for the game and shows what it missed."""
    page = browser
    state, session = start_with_friends(page, site)
    assert state["your_turn"] and not shown(page, "leave")
    session.look(1)  # as Bob's page does when it opens the link
    wait(page, 6).until(lambda d: shown(d, "leave"))
    page.execute_script("stopPolling()")  # (only the refusal can tell the page now)
    bob = next(t for t, viewer in session.tokens.items() if viewer == 1)
    leave = f"{site.url}/api/games/{session.id}/hand-over"
    answer = httpx.post(leave, json={"seat": 1}, headers={"X-Llama-Token": bob})
    assert answer.status_code == 200, answer.text  # Bob leaves first
    page.find_element(By.ID, "leave").click()
    page.find_element(By.ID, "ask-yes").click()
    idle(page, "window.llamaState.left.includes(1)", timeout=5)
    assert page.find_element(By.ID, "game-error").text.startswith("no other person is here to play on")
    assert "Bob left the table: heuristic plays Bob's seat from here on." in log_lines(page)
    assert not shown(page, "leave") and session.left == {1: "heuristic"}
    assert "left: heuristic plays" in page.find_element(By.CSS_SELECTOR, '.seat[data-seat="1"] .tags').text


def test_a_reload_keeps_the_round_s_result_that_was_open(site, browser):
    """A page opening a game wrote the game so far in the log only: a reload (or the link
    opened again) while a round's result was open lost the result, its points with it. A
    page opening a game shows the last round's result when its seat has not moved since."""
    driver = browser
    open_page(driver, site.url, DESKTOP)
    set_up(driver, [("person", "Kay"), ("agent", "heuristic"), ("agent", "greedy")], seed=2, end_score=100)
    driver.find_element(By.ID, "start").click()
    state = idle(driver)
    for _ in range(40):
        if shown(driver, "round-result"):
            break
        driver.find_element(By.ID, "quit").click()
        state = idle(driver, f"window.llamaState.seq > {state['seq']}")
    result = driver.find_element(By.ID, "round-result").text
    assert "Round 1 over" in result
    driver.refresh()
    idle(driver, f"window.llamaState.seq === {state['seq']}")
    assert shown(driver, "round-result") and driver.find_element(By.ID, "round-result").text == result
    assert focused(driver) == "round-ok"
    dismiss_round(driver)
    play_something(driver, 0)  # once this seat has moved, a reload shows the table
    state = idle(driver, f"window.llamaState.seq > {state['seq']}")
    driver.refresh()
    idle(driver, f"window.llamaState.seq === {state['seq']}")
    assert not shown(driver, "round-result") or "Round 1 over" not in driver.find_element(By.ID, "round-result").text
    assert console_errors(driver) == []


SPEED = """
const speed = document.getElementById('speed');
if (arguments[0] !== null) { speed.value = arguments[0]; speed.dispatchEvent(new Event('input')); }
return [speed.value, speed.getBoundingClientRect().height > 0, localStorage.getItem('llama-speeds')];
"""
"""Sets the speed as a person drags it (unless None): its value, whether it shows, what the browser keeps."""


def test_the_next_round_waits_for_the_result_and_the_speed_is_the_mode_s_own(site, paced_browser):
    """The agents' moves of a played game went by at 350 ms each, or at a watched game's
    speed from earlier in the tab, and nothing could slow them: the speed was hidden
    while playing. The next round's moves went on under the round's result. The speed
    shows while playing too, kept apart for played and watched games, and the next
    round's moves wait for the result to be closed."""
    driver = paced_browser
    open_page(driver, site.url, DESKTOP)
    set_up(driver, [("agent", "heuristic"), ("agent", "greedy")], seed=1, end_score=20)
    driver.execute_script("localStorage.setItem('llama-speeds', JSON.stringify({play: 3, watch: 9}))")
    driver.find_element(By.ID, "start").click()
    idle(driver, "window.llamaState.mode === 'watch'")
    assert driver.execute_script(SPEED, None)[:2] == ["9", True]
    driver.find_element(By.ID, "new-game").click()
    set_up(driver, [("person", "Kay"), ("agent", "heuristic"), ("agent", "greedy")], seed=2, end_score=100)
    driver.execute_script("localStorage.setItem('llama-speeds', JSON.stringify({play: 3, watch: 9}))")
    driver.find_element(By.ID, "start").click()
    state = idle(driver, "window.llamaState.mode === 'play'")
    assert driver.execute_script(SPEED, None)[:2] == ["3", True]  # shown while playing, at the played games' speed
    value, _, kept = driver.execute_script(SPEED, 10)
    assert value == "10" and json.loads(kept) == {"play": 10, "watch": 9}
    assert not any(shown(driver, b) for b in ("step", "play", "pause"))

    for _ in range(60):
        if shown(driver, "round-result"):
            after = state["events"][max(i for i, e in enumerate(state["events"]) if e["type"] == "round") + 1 :]
            if any(e["type"] == "move" for e in after):
                break
            dismiss_round(driver)
        driver.find_element(By.ID, "quit").click()
        state = idle(driver, f"window.llamaState.seq > {state['seq']}")
    else:
        raise AssertionError("no round ended before agents' moves")
    time.sleep(0.5)  # (several moves' time)
    held = [e["text"] for e in after if e["type"] == "move"]
    assert log_lines(driver)[-1].startswith("Round ") and not set(held) & set(log_lines(driver)[-len(after) :])
    driver.find_element(By.ID, "round-ok").click()
    idle(driver)
    assert log_lines(driver)[-len(after) :] == [e["text"] for e in after]
    assert focused(driver) in ("card", "draw", "quit")
    assert console_errors(driver) == []


def test_the_table_leads_the_host_to_the_link_of_a_friend_who_has_not_opened_it(site, browser, tmp_path):
    """On a phone the links for the others are below the table, out of sight, and the
    table said only "Waiting for Bob…" while Bob had perhaps never opened his link. While
    the table waits for a person whose page has not come, the page that holds their link
    says so, with a button that leads to the link; once their page comes, it says no more
    (it said "has not played yet" until Bob moved, the server telling no page who came)."""
    page = browser
    open_page(page, site.url, DESKTOP)
    set_up(page, [("person", "Ann"), ("person", "Bob"), ("agent", "heuristic")], seed=None, end_score=200)
    page.find_element(By.ID, "start").click()
    state = idle(page)
    session = site.store.get(state["id"])
    state = until_bob_s_turn(page, state, session)
    resize(page, Screen("phone", 360, 740, phone=True))
    page.execute_script("scrollTo(0, 0)")
    turn = page.find_element(By.ID, "turn")
    assert turn.text.startswith("Waiting for Bob… Bob has not opened the link yet:")
    nudge = turn.find_element(By.CSS_SELECTOR, "button.send-link")
    screenshot(page, "send-link-phone.png", tmp_path)
    assert page.execute_script("return document.getElementById('announce').textContent") == turn.text
    copy = page.find_element(By.CSS_SELECTOR, '#invite-list li[data-seat="1"] button')
    assert copy.rect["y"] > 740  # below the fold
    nudge.click()
    wait(page, 5).until(
        lambda d: 0 <= d.execute_script("return arguments[0].getBoundingClientRect().bottom", copy) <= 740
    )
    assert page.switch_to.active_element == copy
    resize(page, DESKTOP)
    link = page.find_element(By.CSS_SELECTOR, '#invite-list li[data-seat="1"] input.invite').get_attribute("value")
    bob = httpx.get(f"{site.url}/api/games/{state['id']}", headers={"X-Llama-Token": link.rsplit("token=", 1)[1]})
    assert bob.status_code == 200 and bob.json()["seat"] == 1  # Bob's page comes, and moves nothing yet
    wait(page, 15).until(lambda d: d.find_element(By.ID, "turn").text == "Waiting for Bob…")
    assert session.game.current_player == 1 and not page.find_elements(By.CSS_SELECTOR, "button.send-link")
    assert console_errors(page) == []
