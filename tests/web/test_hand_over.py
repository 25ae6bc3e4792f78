"""A person who leaves a table of friends: once the table waits for them and their page
has been away for ``AWAY_SECONDS``, another person at the table hands the seat to an
agent, the game goes on, and the history rates the person who left last. (Before, the
seat was held for ever and every other person waited for a move that never came.) A
friend who never opened their link leaves no forfeit: the agent sits there from the
start."""

from __future__ import annotations

import json
import re
import sqlite3
import time

import pytest
from test_api import as_, create, make_client
from test_game_history import SCHEMA_2, T0, play_record

from agents.heuristic import HeuristicAgent
from train.evaluation.ratings import Rater
from train.play import history as history_module
from train.play.history import History
from train.play.session import (
    AWAY_SECONDS,
    TURN_SECONDS,
    GameSession,
    Seated,
    SessionError,
    SessionStore,
    new_game,
    replay,
)


def away(session: GameSession, seat: int) -> None:
    """The page of ``seat`` (and the game, for a link never opened) last asked
    ``AWAY_SECONDS`` ago and more."""
    long_ago = time.monotonic() - AWAY_SECONDS - 1
    session.created = min(session.created, long_ago)
    if seat in session.seen:
        session.seen[seat] = long_ago


def waited(session: GameSession) -> None:
    """The table has waited ``TURN_SECONDS`` and more for the move it waits for."""
    seat, moves, since = session._turn
    session._turn = (seat, moves, since - TURN_SECONDS - 1)


def hand_over(client, game_id: str, token: str, **body):
    return client.post(f"/api/games/{game_id}/hand-over", json=body, headers=as_(token))


def until_turn_of(client, session: GameSession, token: str, seat: int) -> dict:
    """The person of ``token`` plays until the table waits for ``seat``; their last view."""
    for _ in range(100):
        view = client.get(f"/api/games/{session.id}", headers=as_(token)).json()
        if session.game.current_player == seat:
            return view
        assert view["your_turn"]
        client.post(f"/api/games/{session.id}/move", json={"action": view["legal"][0]}, headers=as_(token))
    raise AssertionError(f"seat {seat}'s turn never came")


@pytest.fixture
def table(tmp_path):
    """Ann, Bob and a heuristic at one table, with a history; Bob has opened his link
    and the table waits for him: (client, session, history, tokens by seat)."""
    store = SessionStore(entropy=0)
    history = History(tmp_path / "history.sqlite3")
    client = make_client(store, history=history)
    state = create(client, "Ann", "Bob", "@heuristic")  # (a game of people takes no seed)
    tokens = {link["seat"]: link["token"] for link in state["links"]}
    session = store.get(state["id"])
    client.get(f"/api/games/{session.id}", headers=as_(tokens[1]))  # Bob opens his link
    until_turn_of(client, session, tokens[0], 1)
    yield client, session, history, tokens
    history.close()


def test_an_away_seat_goes_to_an_agent_the_game_ends_and_the_history_rates_the_person_last(table):
    client, session, history, tokens = table
    gid = session.id
    bob_view = client.get(f"/api/games/{gid}", headers=as_(tokens[1])).json()
    client.post(f"/api/games/{gid}/move", json={"action": bob_view["legal"][0]}, headers=as_(tokens[1]))
    until_turn_of(client, session, tokens[0], 1)  # Bob played once; then he goes
    assert client.get(f"/api/games/{gid}", headers=as_(tokens[0])).json()["away"] == []
    away(session, 1)
    view = client.get(f"/api/games/{gid}", headers=as_(tokens[0])).json()
    assert view["away"] == [1] and view["left"] == []  # the page offers the seat to another person
    moves_before = len(session.moves)
    r = hand_over(client, gid, tokens[0], seat=1)  # the agent by default: heuristic
    assert r.status_code == 200, r.text
    view = r.json()
    bob = view["table"]["seats"][1]
    assert (bob["name"], bob["person"], bob["agent"]) == ("Bob", False, "heuristic")
    # a page that opens now sees the frames before the hand-over as they were
    reopened = client.get(f"/api/games/{gid}", headers=as_(tokens[0])).json()["events"]
    before = reopened[: [e["type"] for e in reopened].index("left")]
    assert before and all(e["table"]["seats"][1]["person"] for e in before)
    assert all(e["table"]["seats"][1]["person"] is False for e in reopened[-1:])
    assert view["left"] == [1] and view["away"] == []
    texts = [e["text"] for e in view["events"] if e["type"] == "left"]
    assert texts == ["Bob was away: heuristic plays Bob's seat from here on."]
    assert session.moves[moves_before][0] == 1  # the agent moved for Bob at once
    # Bob, back, sees his seat played for him, not as his own moves, and cannot move it
    back = client.get(f"/api/games/{gid}", headers=as_(tokens[1])).json()
    assert back["your_turn"] is False and back["legal"] == [] and back["left"] == [1]
    back_texts = [e["text"] for e in back["events"]]
    bob_moves = [e["text"] for e in back["events"] if e["type"] == "move" and e["seat"] == 1]
    assert bob_moves[0].startswith("You ")  # his own moves, before he left, are still his
    assert "You were away: heuristic plays your seat from here on." in back_texts
    after = back_texts[back_texts.index("You were away: heuristic plays your seat from here on.") + 1 :]
    assert after and after[0].startswith("Bob ") and not any(t.startswith("You ") for t in after)
    refused = client.post(f"/api/games/{gid}/move", json={"action": 7}, headers=as_(tokens[1]))
    assert refused.status_code == 409
    assert "heuristic plays this seat since it was handed over" in refused.json()["error"]
    # Ann alone now plays the game to its end: the agents answer her every move
    for _ in range(500):
        if view["game_over"]:
            break
        assert view["your_turn"], "the game waits for someone who is not Ann"
        view = client.post(f"/api/games/{gid}/move", json={"action": view["legal"][-1]}, headers=as_(tokens[0])).json()
    assert view["game_over"] and isinstance(view["history_id"], int)
    assert [s["winner"] for s in sorted(view["standings"], key=lambda s: s["seat"])] == [
        s["winner"] for s in history.games()[0]["seats"]
    ]  # the page and the history agree on who won
    assert [s["left"] for s in sorted(view["standings"], key=lambda s: s["seat"])] == [False, True, False]
    back = client.get(f"/api/games/{gid}", headers=as_(tokens[1])).json()
    assert "You win" not in back["result"] and "you" not in back["result"]
    (game,) = history.games()
    assert [(s["name"], s["kind"], s["forfeit"]) for s in game["seats"]] == [
        ("Ann", "person", False),
        ("Bob", "person", True),
        ("heuristic", "agent", False),
    ]
    assert not game["seats"][1]["winner"]  # the win goes to the best of those who stayed
    record = history.record(view["history_id"])
    assert record["agents"] == ["person", "person", "heuristic"]  # Bob sat there first
    assert record["context"]["left"] == {"1": {"agent": "heuristic", "from_move": moves_before, "chose": False}}
    bob_row = next(r for r in history.ratings() if r["name"] == "Bob")
    assert (bob_row["kind"], bob_row["games"], bob_row["wins"], bob_row["win_share"]) == ("person", 1, 0, 0.0)
    # a replay of the record says where the agent took over, at that move
    replayed = replay(record)
    replayed.step(None, moves_before)
    assert replayed.left == {} and len(replayed.moves) == moves_before
    replayed.step(None, 1)
    shown = replayed.view(None)
    assert shown["left"] == [1] and shown["table"]["seats"][1]["agent"] == "heuristic"
    assert "Bob was away: heuristic plays Bob's seat from here on." in [e["text"] for e in shown["events"]]


def test_a_friend_who_never_came_leaves_an_agent_in_the_seat_and_no_forfeit(tmp_path):
    store = SessionStore(entropy=0)
    with History(tmp_path / "h.sqlite3") as history:
        client = make_client(store, history=history)
        state = create(client, "Ann", "Bob", end_score=15)
        tokens = {link["seat"]: link["token"] for link in state["links"]}
        session = store.get(state["id"])
        view = until_turn_of(client, session, tokens[0], 1)  # Bob's link is never opened
        assert view["away"] == []
        away(session, 1)
        r = hand_over(client, session.id, tokens[0], seat=1, agent="random")
        assert r.status_code == 200, r.text
        assert [e["text"] for e in r.json()["events"] if e["type"] == "left"] == [
            "Bob did not come: random plays Bob's seat."
        ]
        assert r.json()["left"] == [] and session.labels == ["person", "random"]
        late = client.post(f"/api/games/{session.id}/move", json={"action": 7}, headers=as_(tokens[1]))
        assert late.status_code == 409 and "random plays this seat" in late.json()["error"]  # Bob, too late
        seen = client.get(f"/api/games/{session.id}", headers=as_(tokens[1])).json()
        texts = [e["text"] for e in seen["events"]]
        assert "You did not come in time: random plays your seat." in texts
        assert not any(t.startswith("You play") or t.startswith("You draw") for t in texts)
        assert seen["can_leave"] is False and seen["table"]["seats"][1]["person"] is False
        view = r.json()
        while not view["game_over"]:
            view = client.post(
                f"/api/games/{session.id}/move", json={"action": view["legal"][-1]}, headers=as_(tokens[0])
            ).json()
        (game,) = history.games()
        assert [(s["name"], s["kind"], s["forfeit"]) for s in game["seats"]] == [
            ("Ann", "person", False),
            ("random", "agent", False),
        ]
        assert history.record(view["history_id"])["context"]["names_given"] == {"0": "Ann"}


def test_a_hand_over_refused_for_a_link_never_opened_says_so():
    """The refusal said "Bob's page asked 0 s ago" of a link Bob never opened: it now says
    he has not opened it yet, and how long ago the game started."""
    store = SessionStore(entropy=0)
    client = make_client(store)
    state = create(client, "Ann", "Bob", "@heuristic")
    tokens = {link["seat"]: link["token"] for link in state["links"]}
    session = store.get(state["id"])
    until_turn_of(client, session, tokens[0], 1)  # Bob's link is never opened
    r = hand_over(client, session.id, tokens[0], seat=1)
    assert r.status_code == 409, r.text
    assert re.fullmatch(
        r"Bob has not opened the link yet \(the game started \d+ s ago\) and the table has waited \d+ s for the "
        rf"move: a seat is handed over after {AWAY_SECONDS:.0f} s away or a {TURN_SECONDS:.0f} s wait",
        r.json()["error"],
    ), r.text
    assert 1 in session.people and session.left == {}


def test_a_seat_whose_person_never_came_bears_the_agent_s_name_on_the_page_the_record_and_the_history(tmp_path):
    """Bob never opened his link and heuristic took his seat from the start: the history
    rated heuristic, but the page's log, result and standings, and the saved record (so
    its replay), still named the seat Bob, and gave Bob the wins of a game he never
    played. The seat is now "heuristic (for Bob)" everywhere, and the history rates the
    agent."""
    store = SessionStore(entropy=0)
    with History(tmp_path / "h.sqlite3") as history:
        client = make_client(store, history=history)
        state = create(client, "Ann", "Bob", "@heuristic", end_score=15)
        tokens = {link["seat"]: link["token"] for link in state["links"]}
        session = store.get(state["id"])
        until_turn_of(client, session, tokens[0], 1)
        away(session, 1)
        view = hand_over(client, session.id, tokens[0], seat=1).json()
        name = "heuristic (for Bob)"
        assert [e["text"] for e in view["events"] if e["type"] == "left"] == [
            "Bob did not come: heuristic plays Bob's seat."
        ]
        assert view["table"]["seats"][1]["name"] == name
        assert [e["name"] for e in view["events"] if e["type"] == "move" and e["seat"] == 1][:1] == [name]
        while not view["game_over"]:
            view = client.post(
                f"/api/games/{session.id}/move", json={"action": view["legal"][-1]}, headers=as_(tokens[0])
            ).json()
        assert [s["name"] for s in sorted(view["standings"], key=lambda s: s["seat"])] == ["Ann", name, "heuristic"]
        assert "Bob " not in view["result"] and "Bob." not in view["result"]
        record = history.record(view["history_id"])
        assert record["names"] == ["Ann", name, "heuristic"]
        assert record["agents"] == ["person", "heuristic", "heuristic"]
        (game,) = history.games()
        assert [(s["name"], s["kind"]) for s in game["seats"]] == [
            ("Ann", "person"),
            ("heuristic", "agent"),
            ("heuristic", "agent"),
        ]
        assert not any(r["name"] == "Bob" for r in history.ratings())
        replayed = replay(record)
        replayed.step(None, 10_000)
        assert replayed.view(None)["table"]["seats"][1]["name"] == name  # a replay shows the agent too
        bob = client.get(f"/api/games/{session.id}", headers=as_(tokens[1])).json()
        assert bob["table"]["seats"][1]["name"] == name and "You win" not in bob["result"]


def test_the_creator_has_come_to_the_table_even_if_their_page_asks_nothing_more(tmp_path):
    """Ann started a game of Ann and Bob, then her page asked nothing more (it opened a
    replay): her seat counted as never come, so Bob could give it to an agent "as if it
    had sat there from the start", and the history rated the agent instead of Ann's
    forfeit. The page that starts a game has come."""
    store = SessionStore(entropy=0)
    with History(tmp_path / "h.sqlite3") as history:
        client = make_client(store, history=history)
        state = create(client, "Ann", "Bob", end_score=15)
        tokens = {link["seat"]: link["token"] for link in state["links"]}
        assert state["token"] == tokens[0]
        session = store.get(state["id"])
        assert list(session.seen) == [0]
        view = until_turn_of(client, session, tokens[1], 0)  # Bob opens his link and plays until Ann's turn
        assert view["can_leave"] is True  # Ann's page has come: Bob may leave her to play on
        away(session, 0)
        r = hand_over(client, session.id, tokens[1], seat=0)
        assert r.status_code == 200, r.text
        assert [e["text"] for e in r.json()["events"] if e["type"] == "left"] == [
            "Ann was away: heuristic plays Ann's seat from here on."
        ]
        assert session.left == {0: "heuristic"} and session.labels == ["person", "person"]
        view = r.json()
        while not view["game_over"]:
            view = client.post(
                f"/api/games/{session.id}/move", json={"action": view["legal"][-1]}, headers=as_(tokens[1])
            ).json()
        (game,) = history.games()
        assert [(s["name"], s["kind"], s["forfeit"]) for s in game["seats"]] == [
            ("Ann", "person", True),
            ("Bob", "person", False),
        ]


def test_the_page_of_one_who_left_calls_the_agent_s_round_starts_and_going_out_the_agent_s():
    """Bob's page said "Round 2 over: You went out." and "Round 3 begins: You start"
    for what the agent did in his seat after he left."""
    store = SessionStore(entropy=0)  # once: each try deals the next of its fixed games
    client = make_client(store)
    for _ in range(20):  # a game in which Bob's seat starts a round or goes out after he left
        state = create(client, "Ann", "Bob", "@random", end_score=25)
        tokens = {link["seat"]: link["token"] for link in state["links"]}
        gid = state["id"]
        view = client.get(f"/api/games/{gid}", headers=as_(tokens[0])).json()
        client.get(f"/api/games/{gid}", headers=as_(tokens[1]))  # Bob comes, then leaves
        assert hand_over(client, gid, tokens[1], seat=1).status_code == 200
        bob, seq = [], None
        while True:
            path = f"/api/games/{gid}" if seq is None else f"/api/games/{gid}?since={seq}"
            seen = client.get(path, headers=as_(tokens[1])).json()
            bob += seen["events"]
            seq = seen["seq"]
            if view["game_over"]:
                break
            move = {"action": view["legal"][-1]}
            view = client.post(f"/api/games/{gid}/move", json=move, headers=as_(tokens[0])).json()
        agent_did = [
            e["text"]
            for e in bob
            if (e["type"] == "start" and e["starter"] == 1) or (e["type"] == "round" and e["went_out"] == 1)
        ]
        if agent_did:
            assert [t for t in agent_did if "You" in t] == [], agent_did
            assert all("Bob start" in t or "Bob went out" in t for t in agent_did)
            return
    raise AssertionError("Bob's seat never started a round nor went out after he left")


def test_a_person_may_leave_the_table_while_another_plays_on(table):
    client, session, history, tokens = table
    r = hand_over(client, session.id, tokens[1], seat=1, agent="random")  # Bob leaves, on his turn
    assert r.status_code == 200, r.text
    assert session.left == {1: "random"} and session.people == [0]
    texts = [e["text"] for e in r.json()["events"] if e["type"] == "left"]
    assert texts == ["You left the table: random plays your seat from here on."]
    ann = client.get(f"/api/games/{session.id}", headers=as_(tokens[0])).json()
    assert "Bob left the table: random plays Bob's seat from here on." in [e["text"] for e in ann["events"]]
    assert ann["your_turn"]  # the agent moved for Bob at once
    r = hand_over(client, session.id, tokens[0], seat=0)  # Ann is the last person: she just closes the page
    assert r.status_code == 409 and "no other person is here to play on" in r.json()["error"]
    view = ann
    while not view["game_over"]:
        view = client.post(
            f"/api/games/{session.id}/move", json={"action": view["legal"][-1]}, headers=as_(tokens[0])
        ).json()
    assert [s["forfeit"] for s in history.games()[0]["seats"]] == [False, True, False]
    replayed = replay(history.record(view["history_id"]))
    replayed.step(None, 200)
    texts = [e["text"] for e in replayed.view(None)["events"] if e["type"] == "left"]
    assert texts == ["Bob left the table: random plays Bob's seat from here on."]


def test_a_seat_handed_to_a_registered_population_plays_a_member_of_it(table, register_league):
    """The hand-over seated the population itself: one whose own ``act`` raises (no driver
    calls it, docs/agents.md) stopped the game at the seat's first move."""
    client, session, _, tokens = table
    leagues = register_league("tw_league")
    r = hand_over(client, session.id, tokens[1], seat=1, agent="tw_league")  # Bob leaves, on his turn
    assert r.status_code == 200, r.text
    assert session.table.agents[1] in leagues[0].members and leagues.moves == 1
    view = client.get(f"/api/games/{session.id}", headers=as_(tokens[0])).json()
    while not view["game_over"]:
        assert view["your_turn"], "the game waits for someone who is not Ann"
        view = client.post(
            f"/api/games/{session.id}/move", json={"action": view["legal"][-1]}, headers=as_(tokens[0])
        ).json()
    assert leagues.moves > 1


def test_someone_leaving_does_not_refuse_the_move_of_the_person_whose_turn_it_is():
    """Bob left while the table waited for Ann: her next click was refused as made on a
    view of a game that had moved on, though nothing she could play had changed. A
    hand-over that moves no card leaves her view current; a move since is still refused."""
    store = SessionStore(entropy=0)
    client = make_client(store)
    state = create(client, "Ann", "Bob", "@heuristic")
    tokens = {link["seat"]: link["token"] for link in state["links"]}
    session = store.get(state["id"])
    bob = client.get(f"/api/games/{session.id}", headers=as_(tokens[1])).json()  # Bob comes
    while session.game.current_player != 0:
        bob = client.post(
            f"/api/games/{session.id}/move", json={"action": bob["legal"][0]}, headers=as_(tokens[1])
        ).json()
    ann = client.get(f"/api/games/{session.id}", headers=as_(tokens[0])).json()
    assert ann["your_turn"]
    assert hand_over(client, session.id, tokens[1], seat=1).status_code == 200  # Bob leaves
    assert session.seq > ann["seq"]
    moves = len(session.moves)
    body = {"action": ann["legal"][0], "since": ann["seq"]}
    r = client.post(f"/api/games/{session.id}/move", json=body, headers=as_(tokens[0]))
    assert r.status_code == 200, r.text
    assert session.moves[moves] == (0, ann["legal"][0])
    assert "Bob left the table: heuristic plays Bob's seat from here on." in [e["text"] for e in r.json()["events"]]
    stale = client.post(f"/api/games/{session.id}/move", json=body, headers=as_(tokens[0]))
    assert stale.status_code == 409 and "moved on since this view" in stale.json()["error"]


def test_no_one_leaves_a_table_where_nobody_else_is_there_to_play_on(tmp_path):
    """Ann left while Bob had not opened his link: the game then waited for Bob for
    ever, and no page was left to hand his seat over."""
    store = SessionStore(entropy=0)
    client = make_client(store)
    state = create(client, "Ann", "Bob", "@heuristic")
    tokens = {link["seat"]: link["token"] for link in state["links"]}
    session = store.get(state["id"])
    assert client.get(f"/api/games/{session.id}", headers=as_(tokens[0])).json()["can_leave"] is False
    r = hand_over(client, session.id, tokens[0], seat=0)
    assert r.status_code == 409 and "no other person is here to play on" in r.json()["error"]
    client.get(f"/api/games/{session.id}", headers=as_(tokens[1]))  # Bob comes
    assert client.get(f"/api/games/{session.id}", headers=as_(tokens[0])).json()["can_leave"] is True
    away(session, 1)  # and goes again
    assert client.get(f"/api/games/{session.id}", headers=as_(tokens[0])).json()["can_leave"] is False


def test_a_record_s_hand_overs_are_read_as_data_not_trusted():
    """A seat key such as "²" passed str.isdigit() and failed int(): the replay was a 500."""
    store = SessionStore(entropy=0)
    client = make_client(store)
    record, _ = play_record(0, ["heuristic", "random"], names=["Ann", "Bob"], labels=["person", "person"])
    for key in ("²", "1" * 5000, "-1", "7"):
        body = dict(record, context={"left": {key: {"agent": "random", "from_move": 1}}})
        r = client.post("/api/replays", json=body)
        assert r.status_code == 201, (key[:5], r.text)
        assert store.get(r.json()["id"])._left_at == {}


def test_a_seat_whose_page_stays_open_but_never_moves_can_be_handed_over_after_the_turn_wait(table):
    """A page left open on a desk asks every few seconds, so it is never away: the wait
    for the move counts too (``TURN_SECONDS``), from when the turn came, and only for
    the seat the table waits for."""
    client, session, _, tokens = table
    gid = session.id

    def look(seat: int) -> dict:
        return client.get(f"/api/games/{gid}", headers=as_(tokens[seat])).json()

    look(1)
    assert look(0)["away"] == []
    r = hand_over(client, gid, tokens[0], seat=1)
    assert r.status_code == 409 and re.search(r"the table has waited \d+ s for the move", r.json()["error"]), r.text
    waited(session)
    bob = look(1)  # his page is open
    assert look(0)["away"] == [1] and bob["away"] == [1] and bob["your_turn"]
    client.post(f"/api/games/{gid}/move", json={"action": bob["legal"][0]}, headers=as_(tokens[1]))
    until_turn_of(client, session, tokens[0], 1)  # Bob moved after all: his next turn's wait starts afresh
    look(1)
    assert look(0)["away"] == []
    waited(session)
    look(1)
    r = hand_over(client, gid, tokens[0], seat=1)
    assert r.status_code == 200, r.text
    assert session.left == {1: "heuristic"} and session.people == [0]


@pytest.mark.parametrize(
    ("who", "body", "status", "fragment"),
    [
        (0, {"seat": 1, "agent": "nobody"}, 400, "unknown agent 'nobody'"),
        (0, {"seat": 7}, 400, "'seat' must be an integer 0..2"),
        (0, {"seat": "1"}, 400, "'seat' must be an integer 0..2"),
        (0, {"seat": 1, "colour": "red"}, 400, "unknown field 'colour'"),
        (0, {"agent": "random"}, 400, '{"seat": N, "agent": spec}'),
        (0, {"seat": 2}, 409, "seat 2 (heuristic) is an agent's already"),
        (0, {"seat": 1, "agent": "ppo:path=/etc/passwd"}, 400, "load no files by path"),
        (2, {"seat": 1}, 403, "token"),
    ],
)
def test_a_bad_hand_over_is_refused_naming_the_problem_and_changes_nothing(table, who, body, status, fragment):
    client, session, _, tokens = table
    away(session, 1)
    before = session.seq
    r = hand_over(client, session.id, tokens.get(who, "not-a-token"), **body)
    assert r.status_code == status and fragment in r.json()["error"], r.text
    assert session.seq == before and session.left == {} and 1 in session.people


def never(*_):
    raise AssertionError("the agent was built for a hand-over that is refused")


def test_a_refused_hand_over_builds_no_agent():
    """A costly agent built before the checks would hold its place in the process of
    costly agents for nothing."""
    session = new_game({"seats": [{"person": "Ann"}, {"person": "Bob"}, {"person": "Cy"}]})
    assert session.game.current_player in (0, 1, 2)
    turn = session.game.current_player
    other, third = (turn + 1) % 3, (turn + 2) % 3
    session.look(turn)
    cases = [
        (other, turn, "page asked"),  # the seat is not away
        (other, third, "it is not"),  # not its turn
        (other, 9, "'seat' must be"),
    ]
    away(session, third)
    for viewer, seat, fragment in cases:
        with pytest.raises(SessionError, match=fragment):
            session.hand_over(viewer, seat, never)
    assert session.people == [0, 1, 2] and session.left == {}
    alone = new_game({"seats": [{"person": "Ann"}, {"agent": "random"}], "seed": 4})
    with pytest.raises(SessionError, match="no other person is here to play on"):
        alone.hand_over(0, 0, never)


class _Apart(HeuristicAgent):
    runs_apart = True  # as a RemoteAgent says: it computes in the process of costly agents


def test_a_seat_handed_to_a_costly_agent_puts_the_game_in_the_slow_lane():
    session = new_game({"seats": [{"person": "Ann"}, {"person": "Bob"}]})
    turn = session.game.current_player
    session.look(turn)
    session.look(1 - turn)
    away(session, turn)
    assert not session.slow
    session.hand_over(1 - turn, turn, lambda: Seated(_Apart(), "search", []))
    assert session.apart and session.slow and session.left == {turn: "search"}


def test_a_replay_where_the_one_who_left_scored_lowest_shows_the_win_and_places_as_the_history_does():
    """The page's last round highlighted the seat of a person who left when it scored
    lowest, and its standings put that seat first, while the history (and the page's own
    result line) gave the win to the best of those who stayed."""
    for seed in range(50):  # pragma: no branch - a game that Bob's seat wins
        record, scores = play_record(seed, ["random", "heuristic", "random"])
        if scores[1] < min(scores[0], scores[2]):
            break
    else:
        raise AssertionError("no game among 50 that Bob's seat won")
    record = dict(record, names=["Ann", "Bob", "Cy"], agents=["person", "person", "random"])
    record["context"] = {"left": {"1": {"agent": "heuristic", "from_move": 0}}}
    session = replay(record)
    moves = len(session._replay)
    session.step(None, 1)
    assert session.recording.to_json() == record  # the whole record, not the moves stepped so far
    view = session.view(None)
    seats = view["events"][0]["table"]["seats"]
    assert [(s["person"], s["agent"]) for s in seats] == [(True, "person"), (True, "person"), (False, "random")]
    assert [(s["person"], s["agent"]) for s in view["table"]["seats"]][1] == (False, "heuristic")  # Bob left
    session.step(None, moves)
    view = session.view(None)
    (last,) = [e for e in view["events"] if e["type"] == "round" and e["game_over"]]
    stayed = 0 if scores[0] < scores[2] else 2
    assert (
        last["winners"] == (stayed,)
        and view["result"] == f"Game over: {'Ann' if stayed == 0 else 'Cy'} wins with {scores[stayed]}."
    )
    assert [(s["seat"], s["winner"], s["left"]) for s in view["standings"]] == [
        (stayed, True, False),
        (2 - stayed, False, False),
        (1, False, True),
    ]


def test_two_who_left_rank_last_together_whatever_their_seats_scored(tmp_path):
    with History(tmp_path / "h.sqlite3") as hist:
        names = ["Ann", "Bob", "Cy"]
        record, scores = play_record(7, ["heuristic", "random", "heuristic"], names=names, labels=["person"] * 3)
        assert scores[1] != scores[2]
        hist.save(record, people=[True] * 3, forfeit=[False, True, True], finished=T0)
        (game,) = hist.games()
        assert [s["winner"] for s in game["seats"]] == [True, False, False]  # Ann stayed: hers is the win
        rows = {r["name"]: r for r in hist.ratings()}
        expected: Rater[str] = Rater()
        expected.rate(names, [0, 1, 1])  # the two who left tie, below Ann
        want = expected.ratings()
        assert [rows[n]["mu"] for n in names] == pytest.approx([want[n].mu for n in names])
        assert [(rows[n]["wins"], rows[n]["win_share"]) for n in names] == [(1, 1.0), (0, 0.0), (0, 0.0)]


def test_a_forfeit_person_is_rated_last_and_wins_nothing_even_where_the_seat_won(tmp_path):
    with History(tmp_path / "h.sqlite3") as hist:
        record, scores = play_record(3, ["heuristic", "random"], names=["Ann", "Bob"], labels=["person", "person"])
        winner = scores.index(min(scores))
        forfeit = [p == winner for p in range(2)]
        hist.save(record, people=[True, True], forfeit=forfeit, finished=T0)
        (game,) = hist.games()
        assert [s["winner"] for s in game["seats"]] == [p != winner for p in range(2)]
        rows = {r["name"]: r for r in hist.ratings()}
        gone, stayed = rows[["Ann", "Bob"][winner]], rows[["Ann", "Bob"][1 - winner]]
        assert (gone["wins"], gone["win_share"], stayed["wins"], stayed["win_share"]) == (0, 0.0, 1, 1.0)
        expected: Rater[str] = Rater()
        expected.rate(["gone", "stayed"], [1, 0])  # the one who left ranks below
        want = expected.ratings()
        assert (gone["mu"], stayed["mu"]) == pytest.approx((want["gone"].mu, want["stayed"].mu))
        with pytest.raises(ValueError, match="only a person's seat can be forfeit"):
            hist.save(record, people=[True, False], forfeit=[False, True])
        with pytest.raises(ValueError, match="forfeit must list 2 booleans"):
            hist.save(record, people=[True, True], forfeit=[1, 0])
        assert hist.count() == 1


def test_a_history_of_schema_1_is_brought_up_to_date_when_opened(tmp_path):
    """A file written before forfeits were kept (schema 1's own tables, made here from
    schema 2's without the forfeit column): its games read back as played whole, and new
    games are saved beside them."""
    forfeit_line = "    forfeit INTEGER NOT NULL DEFAULT 0 CHECK (forfeit IN (0, 1)),\n"
    assert forfeit_line in SCHEMA_2
    path = tmp_path / "old.sqlite3"
    record, scores = play_record(0, ["heuristic", "random"], names=["Ann", "player_1"], labels=["person", "random"])
    con = sqlite3.connect(path)
    con.executescript(SCHEMA_2.replace(forfeit_line, ""))
    con.execute(f"PRAGMA application_id = {history_module.APPLICATION_ID}")
    con.execute("PRAGMA user_version = 1")
    con.execute("INSERT INTO games VALUES (1, ?, 2, 40, ?)", (T0, json.dumps(record)))
    won = [int(s == min(scores)) for s in scores]
    con.execute("INSERT INTO seats VALUES (1, 0, 'Ann', 'person', ?, ?)", (scores[0], won[0]))
    con.execute("INSERT INTO seats VALUES (1, 1, 'random', 'agent', ?, ?)", (scores[1], won[1]))
    con.commit()
    con.close()
    with History(path) as hist:
        (game,) = hist.games()
        assert [s["forfeit"] for s in game["seats"]] == [False, False]
        assert [s["score"] for s in game["seats"]] == scores
        hist.save(record, people=[True, True], forfeit=[False, True], finished=T0 + 1)
        assert [r["games"] for r in hist.ratings() if r["name"] == "Ann"] == [2]
    con = sqlite3.connect(path)
    assert con.execute("PRAGMA user_version").fetchone()[0] == history_module.SCHEMA_VERSION
    assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    con.close()


def test_the_page_says_what_the_agents_warn_of_at_this_table_a_hand_over_s_too():
    """``serve`` seated a model trained at other table sizes, or a ``search:worlds=16``
    at 3 players (where it does not search), without a word to anyone at the table,
    where ``eval``, ``play`` and ``watch`` warn: the view's ``warnings`` say it, each
    once, with the model named as the page named it, never the server's paths."""
    from agents.ppo import DEFAULT_MODEL_ZIP

    store = SessionStore(entropy=0)
    with make_client(store, model_dirs=[DEFAULT_MODEL_ZIP.parent]) as client:
        state = create(client, "Ann", "Bob", "@ppo:path=ppo_llama_2p.npz")
        sized = (
            "agent 'ppo:path=ppo_llama_2p.npz' was trained at 2 players only; it plays this 3-player table "
            "as a table size it never saw"
        )
        assert state["warnings"] == [sized]
        assert str(DEFAULT_MODEL_ZIP.parent) not in json.dumps(state)
        assert create(client, "Ann", "@heuristic", "@ppo")["warnings"] == []
        tokens = {link["seat"]: link["token"] for link in state["links"]}
        session = store.get(state["id"])
        client.get(f"/api/games/{session.id}", headers=as_(tokens[1]))  # Bob opens his link
        until_turn_of(client, session, tokens[0], 1)
        r = hand_over(client, session.id, tokens[1], seat=1, agent="search:worlds=16")  # Bob leaves
        assert r.status_code == 200, r.text
        said = client.get(f"/api/games/{session.id}", headers=as_(tokens[0])).json()["warnings"]
        assert said[0] == sized and len(said) == 2
        # worded for the page: the agent by its spec, not its repr, and no console's "(said once)"
        assert said[1].startswith("agent 'search:worlds=16' does not search at a 3-player table")
        assert "(said once)" not in said[1]


class _OddSizes(HeuristicAgent):
    table_sizes = "two"  # a plugin's mistake: not integers


class _OddForewarning(HeuristicAgent):
    def forewarn(self, rules):
        return "mind the table"  # a plugin's mistake: not a Warning


class _Closed(HeuristicAgent):
    closed = 0

    def close(self):
        type(self).closed += 1


class _RaisingForewarning(HeuristicAgent):
    def forewarn(self, rules):
        raise RuntimeError("boom")


class _NoSizes(HeuristicAgent):
    table_sizes: tuple[int, ...] = ()


@pytest.mark.parametrize(
    ("odd", "why"),
    [
        (_OddSizes, "table_sizes must be integers 2..6, got 'two'"),
        (_OddForewarning, "forewarn(rules) must return a Warning or None, got 'mind the table'"),
        (_RaisingForewarning, "forewarn(rules) raised RuntimeError: boom"),
        (_NoSizes, "table_sizes must be integers 2..6, got []"),
        (
            lambda quit_base=1: None,
            "its factory returned no agent: an agent must have act(observation, action_mask) -> int, got None",
        ),
    ],
    ids=["table_sizes", "forewarn", "forewarn raises", "no table_sizes", "no agent"],
)
def test_an_agent_whose_table_sizes_or_forewarn_is_of_the_wrong_kind_is_refused_naming_the_seat(
    agent_registry, odd, why
):
    """Asking the agents what they warn of at the table ran after the guard that names a
    seat's failure: a plugin's ``table_sizes = "two"`` or a ``forewarn`` returning a
    string made a new game (or a hand-over) a bare 500, and the agents built for the
    seats before it were never let go. The refusal then named the agent twice ("seat 2,
    agent 'tw_odd': agent 'tw_odd': ...")."""
    from llama_env.agent import register

    register("tw_odd")(odd)
    register("tw_closed")(_Closed)
    _Closed.closed = 0
    with pytest.raises(SessionError) as refused:
        new_game({"seats": [{"person": "Ann"}, {"agent": "tw_closed"}, {"agent": "tw_odd"}]})
    assert refused.value.status == 400 and str(refused.value) == f"seat 2, agent 'tw_odd': {why}"
    assert _Closed.closed == 1  # the seat built before it, let go
    with pytest.raises(SessionError) as refused:
        new_game({"seats": [{"person": "Ann"}, {"agent": "tw_odd:quit_base=2"}]})
    assert str(refused.value) == f"seat 1, agent 'tw_odd:quit_base=2': {why}"


class _ObsVersion7(HeuristicAgent):
    obs_version = 7  # a plugin's mistake: no such observation


def test_an_agent_of_an_unknown_obs_version_is_refused_naming_the_seat(agent_registry):
    """The table refused it once the seats were built, after the guard that names a seat's
    failure: a new game was a bare 500 (the seats built before it held), and a hand-over
    seated it, to fail at its first move."""
    from llama_env.agent import AgentSpec, register
    from train.play.session import AgentPolicy, build_agent

    register("tw_obs7")(_ObsVersion7)
    register("tw_closed")(_Closed)
    _Closed.closed = 0
    with pytest.raises(SessionError) as refused:
        new_game({"seats": [{"person": "Ann"}, {"agent": "tw_closed"}, {"agent": "tw_obs7"}]})
    assert refused.value.status == 400, refused.value
    assert str(refused.value).startswith("seat 2, agent 'tw_obs7': obs_version must be one of 0, 1"), refused.value
    assert _Closed.closed == 1  # the seat built before it, let go
    session = new_game({"seats": [{"person": "Ann"}, {"person": "Bob"}]})
    turn = session.game.current_player
    session.look(1 - turn)  # Bob's page has come: Ann may leave
    rules = session.game.rules

    def agent() -> Seated:
        return build_agent(AgentSpec("tw_obs7"), 0, f"seat {turn}", rules=rules, policy=AgentPolicy())

    with pytest.raises(SessionError, match=f"^seat {turn}, agent 'tw_obs7': obs_version must be one of"):
        session.hand_over(turn, turn, agent)
    assert session.people == [0, 1] and session.moves == []
