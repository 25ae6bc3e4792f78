"""A person who leaves a table of friends: once their page has been away for
``AWAY_SECONDS``, another person at the table hands the seat to an agent, the game goes
on, and the history rates the person who left last. (Before, the seat was held for ever
and every other person waited for a move that never came.)"""

from __future__ import annotations

import sqlite3
import time

import pytest
from test_api import as_, create, make_client
from test_game_history import T0, play_record

from train.evaluation.ratings import Rater
from train.play import history as history_module
from train.play.history import History
from train.play.session import AWAY_SECONDS, SessionStore


def away(store: SessionStore, game_id: str, seat: int) -> None:
    """The page of ``seat`` last asked ``AWAY_SECONDS`` ago and more."""
    store.get(game_id).seen[seat] = time.monotonic() - AWAY_SECONDS - 1


def hand_over(client, game_id: str, token: str, **body):
    return client.post(f"/api/games/{game_id}/hand-over", json=body, headers=as_(token))


@pytest.fixture
def table(tmp_path):
    """Ann, Bob and a heuristic at one table (Bob's turn comes before Ann's second), with
    a history: (client, store, history, first view, tokens by seat)."""
    store = SessionStore()
    history = History(tmp_path / "history.sqlite3")
    client = make_client(store, history=history)
    state = create(client, "Ann", "Bob", "@heuristic", seed=5)
    tokens = {link["seat"]: link["token"] for link in state["links"]}
    yield client, store, history, state, tokens
    history.close()


def test_an_away_seat_goes_to_an_agent_the_game_ends_and_the_history_rates_the_person_last(table):
    client, store, history, state, tokens = table
    gid = state["id"]
    assert state["away"] == [] and state["left"] == []
    away(store, gid, 1)
    view = client.get(f"/api/games/{gid}", headers=as_(tokens[0])).json()
    assert view["away"] == [1]  # the page offers the seat to another person
    r = hand_over(client, gid, tokens[0], seat=1)  # the agent by default: heuristic
    assert r.status_code == 200, r.text
    view = r.json()
    bob = view["table"]["seats"][1]
    assert (bob["name"], bob["person"], bob["agent"]) == ("Bob", False, "heuristic")
    assert view["left"] == [1] and view["away"] == []
    texts = [e["text"] for e in view["events"] if e["type"] == "left"]
    assert texts == ["Bob was away: heuristic plays Bob's seat from here on."]
    # Bob, back, sees his seat played for him and cannot move it
    back = client.get(f"/api/games/{gid}", headers=as_(tokens[1])).json()
    assert back["your_turn"] is False and back["legal"] == [] and back["left"] == [1]
    assert "You were away: heuristic plays your seat from here on." in [e["text"] for e in back["events"]]
    refused = client.post(f"/api/games/{gid}/move", json={"action": 7}, headers=as_(tokens[1]))
    assert refused.status_code == 409 and "handed to heuristic while you were away" in refused.json()["error"]
    # Ann alone now plays the game to its end: the agents answer her every move
    for _ in range(500):
        if view["game_over"]:
            break
        assert view["your_turn"], "the game waits for someone who is not Ann"
        view = client.post(f"/api/games/{gid}/move", json={"action": view["legal"][-1]}, headers=as_(tokens[0])).json()
    assert view["game_over"] and isinstance(view["history_id"], int)
    (game,) = history.games()
    assert [(s["name"], s["kind"], s["forfeit"]) for s in game["seats"]] == [
        ("Ann", "person", False),
        ("Bob", "person", True),
        ("heuristic", "agent", False),
    ]
    record = history.record(view["history_id"])
    assert record["agents"] == ["person", "heuristic", "heuristic"]
    assert record["context"]["left"]["1"]["agent"] == "heuristic"
    assert 0 <= record["context"]["left"]["1"]["from_move"] <= len(record["moves"])
    bob_row = next(r for r in history.ratings() if r["name"] == "Bob")
    assert (bob_row["kind"], bob_row["games"], bob_row["wins"], bob_row["win_share"]) == ("person", 1, 0, 0.0)


@pytest.mark.parametrize(
    ("who", "body", "status", "fragment"),
    [
        (0, {"seat": 1, "agent": "nobody"}, 400, "unknown agent 'nobody'"),
        (0, {"seat": 7}, 400, "'seat' must be an integer 0..2"),
        (0, {"seat": "1"}, 400, "'seat' must be an integer 0..2"),
        (0, {"seat": 1, "colour": "red"}, 400, "unknown field 'colour'"),
        (0, {"agent": "random"}, 400, '{"seat": N, "agent": spec}'),
        (0, {"seat": 0}, 409, "your own seat is handed over by another person"),
        (0, {"seat": 2}, 409, "seat 2 (heuristic) is an agent's already"),
        (0, {"seat": 1, "agent": "ppo:path=/etc/passwd"}, 400, "load no files by path"),
    ],
)
def test_a_bad_hand_over_is_refused_naming_the_problem_and_changes_nothing(table, who, body, status, fragment):
    client, store, _, state, tokens = table
    gid = state["id"]
    away(store, gid, 1)
    before = store.get(gid).seq
    r = hand_over(client, gid, tokens[who], **body)
    assert r.status_code == status and fragment in r.json()["error"], r.text
    session = store.get(gid)
    assert session.seq == before and session.left == {} and 1 in session.people


def test_a_seat_whose_page_still_asks_is_not_handed_over(table):
    client, store, _, state, tokens = table
    gid = state["id"]
    r = hand_over(client, gid, tokens[0], seat=1)  # Bob's seat is new: not away yet
    assert r.status_code == 409 and "a seat is handed over after 90 s away" in r.json()["error"]
    away(store, gid, 1)
    client.get(f"/api/games/{gid}", headers=as_(tokens[1]))  # Bob's page asks again: he is back
    assert hand_over(client, gid, tokens[0], seat=1).status_code == 409
    assert client.get(f"/api/games/{gid}", headers=as_(tokens[0])).json()["away"] == []


def test_only_a_person_still_at_the_table_hands_a_seat_over(tmp_path):
    store = SessionStore()
    client = make_client(store)
    state = create(client, "Ann", "Bob", "Cy", seed=1)
    gid, tokens = state["id"], {link["seat"]: link["token"] for link in state["links"]}
    away(store, gid, 1)
    assert hand_over(client, gid, tokens[0], seat=1, agent="random").status_code == 200
    away(store, gid, 2)
    r = hand_over(client, gid, tokens[1], seat=2)  # Bob left: his page cannot hand Cy's seat
    assert r.status_code == 409 and "only a person playing at this table" in r.json()["error"]
    assert hand_over(client, gid, tokens[0], seat=2).status_code == 200
    assert store.get(gid).people == [0] and store.get(gid).labels == ["person", "random", "heuristic"]
    watched = create(client, "@random", "@random")
    r = hand_over(client, watched["id"], watched["token"], seat=0)
    assert r.status_code == 409 and "only a person playing at this table" in r.json()["error"]


def test_a_forfeit_person_is_rated_last_and_wins_nothing_even_where_the_seat_won(tmp_path):
    with History(tmp_path / "h.sqlite3") as hist:
        record, scores = play_record(3, ["heuristic", "random"], names=["Ann", "Bob"], labels=["person", "person"])
        winner = scores.index(min(scores))
        forfeit = [p == winner for p in range(2)]
        hist.save(record, people=[True, True], forfeit=forfeit, finished=T0)
        (game,) = hist.games()
        assert [s["winner"] for s in game["seats"]] == [p == winner for p in range(2)]  # the seat's result stands
        rows = {r["name"]: r for r in hist.ratings()}
        gone, stayed = rows[["Ann", "Bob"][winner]], rows[["Ann", "Bob"][1 - winner]]
        assert (gone["wins"], gone["win_share"], stayed["wins"], stayed["win_share"]) == (0, 0.0, 0, 0.0)
        expected: Rater[str] = Rater()
        expected.rate(["gone", "stayed"], [1, 0])  # the one who left ranks below
        want = expected.ratings()
        assert (gone["mu"], stayed["mu"]) == pytest.approx((want["gone"].mu, want["stayed"].mu))
        with pytest.raises(ValueError, match="only a person's seat can be forfeit"):
            hist.save(record, people=[True, False], forfeit=[False, True])
        with pytest.raises(ValueError, match="forfeit must list 2 booleans"):
            hist.save(record, people=[True, True], forfeit=[1, 0])
        assert hist.count() == 1


def test_a_history_of_schema_1_is_brought_to_schema_2_when_opened(tmp_path):
    """A file written before forfeits were kept: its games read back as played whole,
    and new games are saved beside them."""
    path = tmp_path / "old.sqlite3"
    record, scores = play_record(0, ["heuristic", "random"], names=["Ann", "player_1"], labels=["person", "random"])
    with History(path) as hist:
        hist.save(record, people=[True, False], finished=T0)
    con = sqlite3.connect(path)  # as schema 1 made it: no forfeit column
    con.executescript(
        "CREATE TABLE old AS SELECT game, seat, name, kind, score, winner FROM seats; DROP TABLE seats; "
        "ALTER TABLE old RENAME TO seats; PRAGMA user_version = 1;"
    )
    con.close()
    with History(path) as hist:
        (game,) = hist.games()
        assert [s["forfeit"] for s in game["seats"]] == [False, False]
        assert [s["score"] for s in game["seats"]] == scores
        hist.save(record, people=[True, True], forfeit=[False, True], finished=T0 + 1)
        assert [r["games"] for r in hist.ratings() if r["name"] == "Ann"] == [2]
    con = sqlite3.connect(path)
    assert con.execute("PRAGMA user_version").fetchone()[0] == history_module.SCHEMA_VERSION == 2
    con.close()
