"""The browser's HTTP API: the person sees only what their seat may know, every bad
request is a 4xx that changes nothing, games are isolated, bounded and expire, and a
record replays a game exactly."""

from __future__ import annotations

import json
import re
import warnings

import numpy as np
import pytest

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from starlette.testclient import TestClient

from train.play.session import GameRecording, SessionStore
from train.play.web import create_app


@pytest.fixture
def app():
    return create_app(SessionStore(max_games=20, idle_seconds=600))


@pytest.fixture
def client(app):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield TestClient(app)


def seat_groups(svg: str) -> dict[int, str]:
    return {int(m.group(1)): m.group(2) for m in re.finditer(r'<g class="seat" data-seat="(\d+)">(.*?)</g></g>', svg)}


def faces(fragment: str) -> list[int]:
    return [int(c) for c in re.findall(r'data-card="(\d)"', fragment)]


def check_hidden(state: dict, truth, human: int) -> None:
    """Nothing in ``state`` reveals another hand or the draw pile's order."""
    game = truth.game
    text = json.dumps(state)
    assert isinstance(state["draw_pile"], int)
    for p, seat in enumerate(state["seats"]):
        assert ("hand" in seat) == (p == human), f"seat {p}'s hand was sent"
    assert state["hand"] == game.hand(human)
    groups = seat_groups(state["svg"])
    for p, fragment in groups.items():
        if p != human and not game.game_over:
            assert faces(fragment) == [], f"the picture shows seat {p}'s cards"
    for event in state["events"]:
        if event["type"] == "move" and "drawn" in event:
            assert event["seat"] == human, "someone else's drawn card was sent"
        if event["type"] == "move" and not game.game_over:
            for p, fragment in seat_groups(event["svg"]).items():
                assert p == human or faces(fragment) == []
    # the draw pile's order is never sent: no run of 6 of its next cards appears anywhere
    pile = game.draw_pile
    if len(pile) >= 6:
        assert json.dumps(pile[-6:])[1:-1] not in text.replace(" ", "")


@pytest.mark.parametrize("seed", range(4))
def test_whole_games_never_show_hidden_cards(client, app, seed):
    rng = np.random.default_rng(seed)
    n = 2 + seed % 3
    human = seed % n
    r = client.post("/api/games", json={"players": n, "seat": human, "opponents": "heuristic", "seed": seed})
    assert r.status_code == 201
    state = r.json()
    truth = app.state.store.get(state["id"])
    rounds = 0
    while True:
        check_hidden(state, truth, human)
        for event in state["events"]:
            if event["type"] == "round":
                rounds += 1
                assert len(event["hands"]) == n  # shown at scoring, as the rules show them
        if state["game_over"]:
            break
        legal = state["legal"]
        action = legal[int(rng.integers(len(legal)))]
        state = client.post(f"/api/games/{state['id']}/move", json={"action": action}).json()
    assert rounds >= 1 and state["standings"][0]["winner"]


BAD_CREATE = [
    ([1, 2], "must be a JSON object"),
    ({"players": 7}, "'players' must be an integer 2..6"),
    ({"players": "3"}, "'players' must be an integer"),
    ({"players": 3, "seat": 3}, "'seat' must be an integer 0..2"),
    ({"opponents": ["heuristic"]}, "list of 2"),
    ({"opponents": "wizard"}, "unknown agent 'wizard'"),
    ({"opponents": 5}, "must be an agent name"),
    ({"mode": "spectate"}, "'mode' must be 'play' or 'watch'"),
    ({"seed": -1}, "'seed' must be a non-negative integer"),
    ({"hand_size": 30, "players": 6}, "hand_size must be between"),
    ({"colour": "red"}, "unknown field 'colour'"),
    ({"opponents": "cautious:threshold=x"}, "threshold must be an integer"),
]


@pytest.mark.parametrize(("body", "fragment"), BAD_CREATE, ids=[f for _, f in BAD_CREATE])
def test_a_bad_new_game_is_a_400_naming_the_problem(client, body, fragment):
    r = client.post("/api/games", json=body)
    assert r.status_code == 400 and fragment in r.json()["error"]


def test_bad_moves_change_nothing(client):
    state = client.post("/api/games", json={"players": 2, "seed": 3}).json()
    gid = state["id"]
    illegal = next(a for a in range(9) if a not in state["legal"])
    for body, status, fragment in [
        ({"action": illegal}, 409, "is illegal"),
        ({"action": 9}, 409, "out of range"),
        ({"action": True}, 400, "must be an integer"),
        ({"action": "8"}, 400, "must be an integer"),
        ({"act": 8}, 400, '{"action": 0..8}'),
    ]:
        r = client.post(f"/api/games/{gid}/move", json=body)
        assert r.status_code == status and fragment in r.json()["error"], (body, r.json())
        assert client.get(f"/api/games/{gid}").json()["seats"] == state["seats"]
    r = client.post(f"/api/games/{gid}/move", content=b"{not json")
    assert r.status_code == 400 and "not JSON" in r.json()["error"]
    assert client.post(f"/api/games/{gid}/step", json={"moves": 1}).status_code == 409
    assert client.get(f"/api/games/{gid}/record").status_code == 409  # not before the game ends


def test_games_are_isolated_and_ids_unguessable(client):
    a = client.post("/api/games", json={"players": 2, "seed": 1}).json()
    b = client.post("/api/games", json={"players": 2, "seed": 1}).json()
    assert a["id"] != b["id"] and len(a["id"]) >= 20
    client.post(f"/api/games/{a['id']}/move", json={"action": a["legal"][-1]})
    assert client.get(f"/api/games/{b['id']}").json()["seats"] == b["seats"]
    assert client.get("/api/games/" + "x" * 24).status_code == 404


def test_the_store_is_bounded_and_forgets_idle_games():
    store = SessionStore(max_games=3, idle_seconds=600)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        client = TestClient(create_app(store))
    ids = [client.post("/api/games", json={"players": 2}).json()["id"] for _ in range(3)]
    full = client.post("/api/games", json={"players": 2})
    assert full.status_code == 503 and "3 live games" in full.json()["error"]
    store.idle_seconds = 0.0  # every game is now idle too long: the next new game finds room
    assert client.post("/api/games", json={"players": 2}).status_code == 201
    store.idle_seconds = 600.0
    assert len(store) == 1 and client.get(f"/api/games/{ids[0]}").status_code == 404


def test_a_full_store_makes_room_by_forgetting_the_oldest_finished_game():
    store = SessionStore(max_games=3, idle_seconds=600)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        client = TestClient(create_app(store))
    watch = {"mode": "watch", "players": 2, "agents": "heuristic"}
    ids = [client.post("/api/games", json=watch).json()["id"] for _ in range(3)]
    for game_id in ids[:2]:  # two games end; the first one is then used again
        assert client.post(f"/api/games/{game_id}/step", json={"moves": 1000}).json()["game_over"]
    client.get(f"/api/games/{ids[0]}")
    assert client.post("/api/games", json=watch).status_code == 201
    assert client.get(f"/api/games/{ids[1]}").status_code == 404  # the least recently used finished game
    assert (
        client.get(f"/api/games/{ids[0]}").status_code == 200 and client.get(f"/api/games/{ids[2]}").status_code == 200
    )


def test_watch_and_replay_a_record_exactly(client):
    watched = client.post("/api/games", json={"mode": "watch", "players": 4, "agents": "heuristic", "seed": 9}).json()
    assert all("hand" in seat for seat in watched["seats"])
    done = client.post(f"/api/games/{watched['id']}/step", json={"moves": 1000}).json()
    assert done["game_over"]
    record = client.get(f"/api/games/{watched['id']}/record").json()
    GameRecording.from_json(record)  # a valid record
    replayed = client.post("/api/replays", json=record).json()
    assert replayed["moves_left"] == len(record["moves"])
    end = client.post(f"/api/games/{replayed['id']}/step", json={"moves": 1000}).json()
    assert end["standings"] == done["standings"] and end["moves_left"] == 0
    broken = dict(record, moves=[[0, 99], *record["moves"]])
    bad = client.post("/api/replays", json=broken).json()
    r = client.post(f"/api/games/{bad['id']}/step", json={"moves": 5})
    assert r.status_code == 422 and "illegal move" in r.json()["error"]
    for body, fragment in [({"format": "x"}, "not a game record"), (dict(record, version=9), "version 9")]:
        r = client.post("/api/replays", json=body)
        assert r.status_code == 400 and fragment in r.json()["error"]


def test_the_page_and_its_assets_are_served(client):
    page = client.get("/")
    assert page.status_code == 200 and "<title>L.L.A.M.A." in page.text
    for asset in ("/static/app.js", "/static/style.css"):
        assert client.get(asset).status_code == 200
    agents = client.get("/api/agents").json()
    assert {"heuristic", "random", "ppo"} <= {a["name"] for a in agents}


def test_llama_rl_serve_listens_on_localhost_and_says_where(tmp_path):
    import socket
    import subprocess
    import sys
    import time
    import urllib.request

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen(
        [sys.executable, "-m", "train.cli", "serve", "--port", str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.time() + 30
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=2) as r:
                    assert r.status == 200 and b"L.L.A.M.A." in r.read()
                break
            except OSError:
                assert time.time() < deadline and proc.poll() is None, proc.stderr.read() if proc.poll() else "timeout"
                time.sleep(0.2)
    finally:
        proc.terminate()
        out, _ = proc.communicate(timeout=20)
    assert f"http://127.0.0.1:{port}/" in out


def test_watch_in_the_terminal(capsys):
    from train.cli import main

    assert main(["watch", "--players", "3", "--agents", "heuristic", "--seed", "4", "--delay", "0"]) == 0
    out = capsys.readouterr().out
    assert "Round 1: player_0 starts" in out and "Game over" in out
    assert main(["watch", "--agents", "heuristic", "--players", "3", "--delay", "-1"]) == 2
