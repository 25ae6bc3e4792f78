"""How the page of ``llama-rl serve`` looks, in a real headless Chromium (the server and
the browser are test_browser.py's fixtures): the history fits a phone.
"""

from __future__ import annotations

import re

import pytest
import test_browser
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait
from test_browser import BROKEN_WORDS, DESKTOP, PHONE, SMALL_PHONE, Screen, console_errors, open_page
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
    WebDriverWait(driver, 10).until(lambda d: len(d.find_elements(By.CSS_SELECTOR, "button.replay")) == 3)
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
    WebDriverWait(driver, 10).until(lambda d: d.find_elements(By.CSS_SELECTOR, "button.replay"))
    heads = [th.text for th in driver.find_elements(By.CSS_SELECTOR, "#ratings th")]
    assert heads == ["#", "name", "kind", "games", "wins", "win share", "rating", "mu ± σ"]
