"""train.analysis: the notebook tables agree with the evaluation's own numbers."""

from __future__ import annotations

import numpy as np
import pytest

from agents.base import BaseAgent
from train.evaluation import evaluate, tournament
from train.evaluation.analysis import behaviour_frame, games_frame, win_share_frame


def test_games_frame_has_a_row_per_seat_and_shares_sum_to_one():
    t = tournament(["random", "greedy", "heuristic"], 2, 30, seed=0, workers=1)
    df = games_frame(t.records, t.names)
    assert len(df) == 60
    np.testing.assert_allclose(df.groupby("game").win_share.sum(), 1.0)
    np.testing.assert_allclose(df.points_per_round, df.score / df.rounds)


def test_win_share_frame_matches_the_tournament():
    t = tournament(["random", "greedy", "cautious", "heuristic"], 3, 60, seed=1, workers=1)
    ws = win_share_frame(t)
    for i, name in enumerate(t.names):
        assert ws.loc[name, "win_share"] == pytest.approx(t.win_share[i])
        assert ws.loc[name, "games"] == t.games_played[i]
        assert ws.loc[name, "ci_low"] <= ws.loc[name, "win_share"] <= ws.loc[name, "ci_high"]
    assert list(ws.index) == [t.names[i] for i in t.ranking()]


class Quitter(BaseAgent):
    name = "quitter"

    def act(self, observation, action_mask):
        return 8


def test_behaviour_frame_known_answer_for_quitters():
    # Quitting at once every round: no plays or draws, never out, and the penalty held
    # when quitting is exactly the points taken.
    t = tournament([Quitter(), Quitter(), "random"], 2, 30, seed=2, workers=1)
    b = behaviour_frame(t.records, t.names)
    for name in ("quitter#1", "quitter#2"):
        assert (b.loc[name, "play_rate"], b.loc[name, "draw_rate"], b.loc[name, "quit_rate"]) == (0, 0, 1)
        assert b.loc[name, "go_out_rate"] == 0
        assert b.loc[name, "penalty_at_quit"] == pytest.approx(b.loc[name, "points_per_round"])
    np.testing.assert_allclose(b[["play_rate", "draw_rate", "quit_rate"]].sum(axis=1), 1.0)


def test_behaviour_frame_agrees_with_evaluate_rates():
    r = evaluate(["greedy", "cautious", "random"], 40, seed=3, workers=1)
    t = tournament(["greedy", "cautious", "random"], 3, 40, seed=3, workers=1)
    b = behaviour_frame(t.records, t.names)
    # a 3-agent pool at 3-player tables seats everybody in every game, rotated, as evaluate does
    for i, name in enumerate(r.names):
        assert b.loc[name, "quit_rate"] == pytest.approx(r.agents[i].quit_rate, abs=0.05)


def test_a_column_the_rows_have_and_the_declared_columns_lack_is_named(monkeypatch):
    """The columns and their types are declared once (``_COLUMNS``): pandas would drop a
    row's column left out of them without a word."""
    from train.evaluation import analysis

    t = tournament(["random", "greedy"], 2, 2, seed=0, workers=1)
    monkeypatch.setattr(analysis, "_COLUMNS", {k: v for k, v in analysis._COLUMNS.items() if k != "quits"})
    with pytest.raises(RuntimeError, match=r"games_frame's rows have the columns \[.*'quits'.*\], _COLUMNS declares"):
        games_frame(t.records, t.names)


def test_behaviour_frame_rows_follow_the_names_given():
    """Rows come in the order of ``names``, not in the order the agents first sat down
    (which follows the seating): a reader compares the table with the pool as written."""
    t = tournament(["random", "greedy", "cautious", "heuristic"], 2, 12, seed=5, workers=1)
    for names in (t.names, list(reversed(t.names))):
        # reversed, the names label the same seats the other way round; the rows still follow them
        b = behaviour_frame(t.records, names)
        assert list(b.index) == list(names)
