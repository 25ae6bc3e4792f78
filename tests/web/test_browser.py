"""A whole 3-player game against ``heuristic``, played by clicking in a real headless
Chromium (Debian's chromium and chromium-driver; nothing is downloaded).

It checks that the screen follows every move, that an illegal card cannot be played,
and that round results and the final standings appear, and it saves a screenshot.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import threading
import time
from pathlib import Path

import pytest
import uvicorn
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select, WebDriverWait

from train.play.web import create_app

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"
SCREENSHOT = os.environ.get("LLAMA_RL_SCREENSHOT")  # set to also write the README's picture


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def server():
    port = free_port()
    config = uvicorn.Config(create_app(), host="127.0.0.1", port=port, log_level="warning")
    srv = uvicorn.Server(config)
    thread = threading.Thread(target=srv.run, daemon=True)
    thread.start()
    for _ in range(200):
        if srv.started:
            break
        time.sleep(0.05)
    assert srv.started, "the server did not start"
    yield f"http://127.0.0.1:{port}"
    srv.should_exit = True
    thread.join(timeout=10)


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    assert os.path.exists(CHROMIUM) and os.path.exists(CHROMEDRIVER), (
        "the browser test needs Debian's chromium and chromium-driver (.ci/run installs them)"
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
        "--window-size=1300,1400",
        f"--user-data-dir={tmp_path_factory.mktemp('chromium')}",
    ):
        options.add_argument(arg)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    driver.set_script_timeout(30)
    yield driver
    driver.quit()


def idle(driver) -> dict:
    WebDriverWait(driver, 30, poll_frequency=0.05).until(
        lambda d: d.execute_script("return window.llamaIdle === true && window.llamaState !== undefined")
    )
    return driver.execute_script("return window.llamaState")


def screen(driver) -> dict:
    """What the page shows now."""
    svg = driver.find_element(By.CSS_SELECTOR, "#table svg").get_attribute("outerHTML")
    return {
        "round": int(re.search(r">Round (\d+)", svg).group(1)),
        "draw": int(re.search(r">draw (\d+)<", svg).group(1)),
        "hand": [b.text for b in driver.find_elements(By.CSS_SELECTOR, "#hand button")],
        "enabled": [
            b.get_attribute("data-action") for b in driver.find_elements(By.CSS_SELECTOR, "#hand button:enabled")
        ],
        "log": len(driver.find_elements(By.CSS_SELECTOR, "#log li")),
    }


def card_text(card: int) -> str:
    return "L" if card == 7 else str(card)


def test_a_whole_game_by_clicking(server, browser, tmp_path):
    driver = browser
    driver.get(server)
    Select(driver.find_element(By.ID, "players")).select_by_visible_text("3")
    driver.find_element(By.ID, "seed").send_keys("11")
    end = driver.find_element(By.ID, "end-score")
    end.clear()
    end.send_keys("25")
    driver.execute_script("document.getElementById('speed').value = 10")
    driver.find_element(By.ID, "start").click()

    log_seen = 0
    tried_illegal = rounds_shown = clicks = 0
    while True:
        state = idle(driver)
        shown = screen(driver)
        # the screen follows every move: each event became a log line, and the picture and
        # the hand are the server's state
        log_seen += len(state["events"])
        assert shown["log"] == log_seen
        assert shown["round"] == state["round"] and shown["draw"] == state["draw_pile"]
        if state["game_over"]:
            break
        assert state["your_turn"]
        assert shown["hand"] == [card_text(c) for c in state["hand"]]
        assert {int(a) for a in shown["enabled"]} == {c - 1 for c in state["hand"]} & set(state["legal"])
        if any(e["type"] == "round" for e in state["events"]):
            rounds_shown += 1
            result = driver.find_element(By.ID, "round-result")
            assert result.is_displayed() and "Round" in result.text
            assert len(result.find_elements(By.CSS_SELECTOR, "tr")) == 1 + 3
        disabled = driver.find_elements(By.CSS_SELECTOR, "#hand button:disabled")
        if disabled:  # an illegal card cannot be played: clicking it does nothing
            driver.execute_script("arguments[0].click()", disabled[0])
            time.sleep(0.2)
            assert screen(driver)["log"] == log_seen
            assert driver.execute_script("return window.llamaState")["id"] == state["id"]
            tried_illegal += 1
        plays = driver.find_elements(By.CSS_SELECTOR, "#hand button:enabled")
        if plays:
            plays[0].click()
        elif driver.find_element(By.ID, "draw").is_enabled() and clicks % 3:
            driver.find_element(By.ID, "draw").click()
        else:
            driver.find_element(By.ID, "quit").click()
        clicks += 1
        assert clicks < 400, "the game did not end"
    standings = driver.find_element(By.ID, "standings")
    assert standings.is_displayed() and "Final standings" in standings.text
    assert len(standings.find_elements(By.CSS_SELECTOR, "tr")) == 1 + 3
    assert rounds_shown >= 1 and tried_illegal >= 1
    path = Path(SCREENSHOT) if SCREENSHOT else tmp_path / "play.png"
    driver.save_screenshot(str(path))
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and path.stat().st_size > 10_000


def test_watching_agents_and_a_bad_request_in_the_browser(server, browser):
    driver = browser
    driver.get(server)
    Select(driver.find_element(By.ID, "mode")).select_by_value("watch")
    inputs = driver.find_elements(By.CSS_SELECTOR, "#seat-agents input.agent")
    assert len(inputs) == 3  # a watched game has an agent in every seat
    inputs[1].clear()
    inputs[1].send_keys("nosuchagent")
    driver.find_element(By.ID, "start").click()
    WebDriverWait(driver, 10).until(lambda d: "unknown agent" in d.find_element(By.ID, "setup-error").text)
    inputs[1].clear()
    inputs[1].send_keys("random")
    driver.find_element(By.ID, "start").click()
    idle(driver)
    driver.execute_script("document.getElementById('speed').value = 10")
    driver.find_element(By.ID, "step").click()
    state = idle(driver)
    assert len(state["events"]) == 1 and len(driver.find_elements(By.CSS_SELECTOR, "#log li")) == 1
    assert all("hand" in seat for seat in state["seats"])  # a spectator of agents sees every hand
    driver.find_element(By.ID, "play").click()
    WebDriverWait(driver, 120, poll_frequency=0.2).until(
        lambda d: d.execute_script("return window.llamaState.game_over && window.llamaIdle")
    )
    assert driver.find_element(By.ID, "standings").is_displayed()
    assert driver.find_element(By.ID, "download").is_displayed()
