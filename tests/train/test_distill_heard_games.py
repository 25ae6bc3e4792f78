"""distill's data: the games heard at the search's seat and the teacher's recorded choices
are held together by a count check, a named error where numpy's "boolean index did not
match" would have said nothing of distill."""

from __future__ import annotations

import pytest

import train.fit.distill as distill
from agents.ppo import SHIPPED, load_actor
from agents.search import SearchAgent
from train.fit.distill import collect_searched


def test_a_game_heard_too_few_is_a_named_error(monkeypatch):
    heard = distill._DecisionGames.on_step

    def one_short(self, table, games, seats, actions):
        heard(self, table, games, seats, actions)
        if len(self.games) == 1:
            self.games[0] = self.games[0][1:]  # the table asked the teacher otherwise than it told

    monkeypatch.setattr(distill._DecisionGames, "on_step", one_short)
    search = SearchAgent(worlds=2, below=0.9, seed=0)
    with pytest.raises(RuntimeError, match=r"^distill: the teacher's choices \(\d+ moves\) and the games heard"):
        collect_searched(search, load_actor(SHIPPED["ppo"][2]), 2, 3, seed=0, slots=3)
