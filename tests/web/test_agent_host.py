"""Costly agents in a child process: the same decisions as in the server's own process,
clear errors, a child that dies is replaced, and the web app seats a search there."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from starlette.testclient import TestClient

from llama_env.agent import AgentSpec, costly, make, parse_agent_spec
from llama_env.engine import LlamaGame
from llama_env.table import Table
from train.play.agent_host import AgentHost, AgentHostFull, AgentLost, RemoteAgent
from train.play.session import SessionStore
from train.play.web import create_app


@pytest.fixture(scope="module")
def host():
    h = AgentHost()
    yield h
    h.close()


def moves_of(agents, seed: int) -> list[tuple[int, int]]:
    game = LlamaGame(len(agents), rng=seed)
    moves: list[tuple[int, int]] = []

    class Listen:
        def on_move(self, table, seat, action, drawn):
            moves.append((seat, action))

        def on_round_end(self, table, result):
            pass

    Table(game, agents, listener=Listen()).play()  # type: ignore[arg-type]
    return moves


def test_a_hosted_agent_decides_as_the_same_agent_at_home(host):
    for seed in range(3):
        spec = parse_agent_spec("heuristic")
        home = [spec.build(seed), make("random", seed=seed + 10), make("greedy", seed=seed + 20)]
        apart = [host.agent(spec, seed), make("random", seed=seed + 10), make("greedy", seed=seed + 20)]
        assert isinstance(apart[0], RemoteAgent) and apart[0].obs_version == 0
        assert moves_of(apart, seed) == moves_of(home, seed)


def test_a_hosted_search_reads_the_version_1_observation_and_plays_as_at_home(host):
    assert costly("search") and not costly("heuristic")
    spec = AgentSpec("search", {"worlds": 4})
    remote = host.agent(spec, 3)
    assert remote.obs_version == 1
    home = spec.build(3)
    game = LlamaGame(4, rng=5)
    table = Table(game, [remote, make("heuristic", seed=1), make("heuristic", seed=2), make("heuristic", seed=3)])
    for _ in range(12):
        if game.game_over:
            break
        if game.current_player == 0:
            observation_game = LlamaGame.from_dict(game.to_dict())
            expected = Table(observation_game, [home, None, None, None]).ask()
            assert table.ask() == expected
        table.play_turn()


def test_bad_specs_and_a_dead_child_are_clear_errors(host):
    with pytest.raises(ValueError, match="threshold"):
        host.agent(AgentSpec("cautious", {"threshold": "x"}), 0)
    with pytest.raises(ValueError) as refused:  # the message as the server's own build gives it
        host.agent(AgentSpec("search", {"zzz": 1}), 0)
    assert str(refused.value).startswith("agent 'search' has no parameter 'zzz'"), str(refused.value)
    agent = host.agent(AgentSpec("random"), 0)
    host._process.kill()  # type: ignore[union-attr]
    host._process.join()  # type: ignore[union-attr]
    assert not host.alive
    agent.close()  # a child that stopped forgot it already: no new child for that
    assert not host.alive
    agent.reset(1)  # a new child serves, and the agent is built again there (it was "no longer known")
    assert agent.rebuilt == 1 and host.alive
    again = host.agent(AgentSpec("random"), 0)
    again.reset(2)


def test_a_game_against_a_search_goes_on_when_the_agents_process_dies():
    """A search agent's process killed (out of memory, say) froze every game with a
    search for good: the person's move was a 500, then 'it is search's turn' for ever.
    The agent is built again in a new process and the game goes on."""
    store = SessionStore(entropy=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        client = TestClient(create_app(store), base_url="http://127.0.0.1")
    with client:
        r = client.post("/api/games", json={"seats": [{"person": "Ann"}, {"agent": "search:worlds=4"}], "seed": 1})
        assert r.status_code == 201, r.text
        state, token = r.json(), r.json()["token"]
        session = store.get(state["id"])
        remote = session.table.agents[1]
        for _ in range(3):
            process = remote.host._process
            process.kill()
            process.join()
            r = client.post(
                f"/api/games/{state['id']}/move",
                json={"action": state["legal"][0], "since": state["seq"]},
                headers={"X-Llama-Token": token},
            )
            assert r.status_code == 200, r.text
            state = r.json()
            if state["game_over"]:
                break
            assert state["your_turn"]  # the search moved in its new process
        assert remote.rebuilt >= 1


def test_the_web_app_seats_a_search_apart_and_forgets_it_at_the_end():
    store = SessionStore(entropy=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        client = TestClient(create_app(store), base_url="http://127.0.0.1")
    with client:
        r = client.post("/api/games", json={"seats": [{"agent": "search:worlds=4"}, {"agent": "random"}]})
        assert r.status_code == 201, r.text
        game = r.json()
        session = store.get(game["id"])
        assert isinstance(session.table.agents[0], RemoteAgent)
        # its moves take the server's threads no time, yet it computes in the slow games' lane
        assert session.apart and session.slow and session.agent_seconds < 0.01
        state = game
        while not state["game_over"]:
            state = client.post(
                f"/api/games/{game['id']}/step", json={"moves": 200}, headers={"X-Llama-Token": game["token"]}
            ).json()
        assert session.table.agents == [None, None]


SEARCH_AND_ANN = {"seats": [{"agent": "search:worlds=4"}, {"person": "Ann"}]}


def app_of_two_costly_agents(monkeypatch, idle_seconds: float) -> tuple[SessionStore, TestClient]:
    """A store and a client of a web app whose costly agents' process holds two agents."""
    import functools

    import train.play.web as web

    monkeypatch.setattr(web, "AgentHost", functools.partial(AgentHost, max_agents=2))
    store = SessionStore(entropy=0, idle_seconds=idle_seconds)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return store, TestClient(create_app(store), base_url="http://127.0.0.1")


def test_a_forgotten_game_lets_its_costly_agents_go_and_a_full_child_refuses_new_ones(monkeypatch):
    """The child dropped its least recently used agent to make room, a live game's among
    them, whose next move was then a 500 and the game stuck for good; and a game the store
    forgot kept its agents there. Now a game that would need more than the child keeps is
    a 429, and the agents of a forgotten game are let go, so that new games fit again."""
    store, client = app_of_two_costly_agents(monkeypatch, idle_seconds=600)
    body = SEARCH_AND_ANN
    with client:
        made = [client.post("/api/games", json=body) for _ in range(2)]
        assert [r.status_code for r in made] == [201, 201]
        refused = client.post("/api/games", json=body)
        assert refused.status_code == 429, refused.text
        assert "the server runs 2 costly agents already" in refused.json()["error"]
        first, second = (store.get(r.json()["id"]) for r in made)
        kept = second.table.agents[0]
        first.touched -= 601  # idle too long: the next request forgets it, and its agent
        assert client.post("/api/games", json=body).status_code == 201
        assert first.table.agents == [None, None]
        kept.reset(1)  # the live game's agent is still there


def test_games_left_in_closed_tabs_make_room_for_new_costly_agents(monkeypatch):
    """Games abandoned in closed tabs held the costly agents' process full for
    idle_seconds (30 minutes), refusing every new search game though the store had room:
    one not looked at for ABANDONED_SECONDS now makes room, as in the full store."""
    from train.play.session import ABANDONED_SECONDS

    store, client = app_of_two_costly_agents(monkeypatch, idle_seconds=1800)
    body = SEARCH_AND_ANN
    with client:
        made = [client.post("/api/games", json=body) for _ in range(2)]
        assert [r.status_code for r in made] == [201, 201]
        assert client.post("/api/games", json=body).status_code == 429  # both looked at just now
        first, second = (store.get(r.json()["id"]) for r in made)
        assert not store.forget_abandoned_apart()  # both looked at just now
        first.touched -= ABANDONED_SECONDS + 1  # its tab closed two minutes ago; the store is far from full
        again = client.post("/api/games", json=body)
        assert again.status_code == 201, again.text
        assert first.table.agents == [None, None] and len(store) == 2
        second.table.agents[0].reset(1)  # the game still looked at keeps its agent


def test_the_agents_process_leaves_ctrl_c_to_the_server(host):
    """Ctrl-C in the terminal reaches the whole process group: the child printed a
    traceback and died under the server; the server stops it by closing its pipe."""
    import os
    import signal
    import time

    agent = host.agent(AgentSpec("random"), 0)
    os.kill(host._process.pid, signal.SIGINT)  # type: ignore[union-attr]
    time.sleep(0.3)
    agent.reset(1)  # the same child, with the agent it built
    assert host._process.is_alive()  # type: ignore[union-attr]


def failing_app(store: SessionStore) -> TestClient:
    """A client of a web app over ``store`` that answers its own failures as 500s."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return TestClient(create_app(store), base_url="http://127.0.0.1", raise_server_exceptions=False)


def move_until_the_agent_fails(client: TestClient) -> tuple[object, dict, str]:
    """A new game of Ann (seat 0, who starts) and an agent; Ann moves until a move's
    reply by the agent fails: that response, the game's first state and Ann's token."""
    r = client.post("/api/games", json={"seats": [{"person": "Ann"}, {"agent": "random"}], "seed": 3})
    assert r.status_code == 201 and r.json()["your_turn"], r.text  # seat 0 starts the first round
    state, token = r.json(), r.json()["token"]
    move = client.post(
        f"/api/games/{state['id']}/move", json={"action": state["legal"][0]}, headers={"X-Llama-Token": token}
    )
    while move.status_code == 200:  # Ann ended the round and starts the next: move again
        move = client.post(
            f"/api/games/{state['id']}/move", json={"action": move.json()["legal"][0]}, headers={"X-Llama-Token": token}
        )
    return move, state, token


def test_a_game_an_agents_error_stopped_goes_on_at_the_next_look(monkeypatch):
    """A move whose agent reply failed as the process of costly agents stopped twice (a
    failure that passes) left the game waiting for that agent for good: every look showed
    its turn. The next look lets the agents move again."""
    import train.play.web as web

    class FailsOnce:
        def __init__(self, agent):
            self.agent, self.failed = agent, False

        def act(self, observation, action_mask):
            if not self.failed:
                self.failed = True
                raise AgentLost("the process of costly agents stopped: EOFError")
            return self.agent.act(observation, action_mask)

    monkeypatch.setattr(web._App, "build", lambda self, spec, seed: FailsOnce(spec.build(seed)))
    store = SessionStore(entropy=0)
    with failing_app(store) as client:
        r, state, token = move_until_the_agent_fails(client)
        game_id, session = state["id"], store.get(state["id"])
        assert r.status_code == 500 and session.stalled
        look = client.get(f"/api/games/{game_id}", headers={"X-Llama-Token": token})
        assert look.status_code == 200 and look.json()["your_turn"]  # the agent moved at the look
        assert not session.stalled and session.table.agents[1].failed


def test_a_game_whose_agent_always_fails_is_still_shown_and_not_retried_at_every_look(monkeypatch):
    """The look that tried a stalled game's agents again answered 500 when they failed
    again, and tried at every poll: the game could not be seen, and a failing agent
    (a costly one: its process rebuilt) was asked at every poll of every page."""
    import train.play.web as web

    calls = []

    class Fails:
        def act(self, observation, action_mask):
            calls.append(1)
            raise AgentLost("the process of costly agents stopped: EOFError")

    monkeypatch.setattr(web._App, "build", lambda self, spec, seed: Fails())
    store = SessionStore(entropy=0)
    with failing_app(store) as client:
        move, state, token = move_until_the_agent_fails(client)
        assert move.status_code == 500 and len(calls) == 1
        looks = [client.get(f"/api/games/{state['id']}", headers={"X-Llama-Token": token}) for _ in range(5)]
        assert [r.status_code for r in looks] == [200] * 5  # shown as it stands
        assert len(calls) == 2  # tried again once, not at every look


class _Raises:
    def act(self, observation, action_mask):
        raise RuntimeError("boom")


class _AnswersAFloat:
    def act(self, observation, action_mask):
        return np.float64(np.flatnonzero(action_mask)[0])  # a legal move's number, as a numpy float: no action


STOPPED = "the game stopped, and is not saved: agent 'p2_bad' at seat {seat}: "


@pytest.mark.parametrize(
    ("agent", "why"),
    [(_Raises, "RuntimeError: boom"), (_AnswersAFloat, "(float64) is not an action")],
    ids=["raises", "answers_a_float"],
)
def test_an_agent_that_fails_at_its_turn_stops_the_game_saying_which_and_why(agent_registry, agent, why):
    """An agent whose act raised, or that answered no legal move (a plugin's bug), was taken
    for a failure that passes: the move that met it was a bare 500, every later move a 409
    "it is p2_bad's turn, not yours" for good, and only the server's log named the agent.
    The game stops: the view says which agent at which seat and why, the game takes no
    move, is not saved and lets its agents go. An agent that fails before the first
    person's turn is a 400 naming it, and the game is not made."""
    from llama_env.agent import register

    register("p2_bad")(agent)
    store = SessionStore(entropy=0)
    with failing_app(store) as client:
        made = client.post("/api/games", json={"seats": [{"person": "Ann"}, {"agent": "p2_bad"}], "seed": 3})
        assert made.status_code == 201 and made.json()["your_turn"] and made.json()["stopped"] is None, made.text
        state, token = made.json(), {"X-Llama-Token": made.json()["token"]}
        game = f"/api/games/{state['id']}"
        moved = client.post(f"{game}/move", json={"action": state["legal"][0]}, headers=token)
        assert moved.status_code == 200, moved.text
        stopped = moved.json()["stopped"]
        assert stopped.startswith(STOPPED.format(seat=1)) and why in stopped, stopped
        assert [e["seat"] for e in moved.json()["events"] if e["type"] == "move"] == [0]  # Ann's move stands
        again = client.post(f"{game}/move", json={"action": 7}, headers=token)
        assert again.status_code == 409 and again.json()["error"] == stopped
        look = client.get(game, headers=token).json()
        assert look["stopped"] == stopped and not look["your_turn"] and not look["game_over"]
        assert look["history_id"] is None and look["away"] == [] and not look["can_leave"]
        assert store.get(state["id"]).table.agents == [None, None]  # let go
        first = client.post("/api/games", json={"seats": [{"agent": "p2_bad"}, {"person": "Ann"}], "seed": 3})
        assert first.status_code == 400, first.text
        assert first.json()["error"].startswith("the game cannot start: agent 'p2_bad' at seat 0: "), first.text
        assert len(store) == 1
        watched = client.post("/api/games", json={"seats": [{"agent": "p2_bad"}, {"agent": "random"}], "seed": 3})
        owner = {"X-Llama-Token": watched.json()["token"]}
        stepped = client.post(f"/api/games/{watched.json()['id']}/step", json={"moves": 5}, headers=owner)
        assert stepped.status_code == 200 and stepped.json()["stopped"].startswith(STOPPED.format(seat=0))
        refused = client.post(f"/api/games/{watched.json()['id']}/step", json={"moves": 1}, headers=owner)
        assert refused.status_code == 409 and refused.json()["error"] == stepped.json()["stopped"]


def test_a_step_of_a_slow_game_stops_after_a_quarter_second():
    """A step of 200 moves of searching agents held the one slow lane, and so every
    other game with a costly agent, for seconds: it now stops after SLOW_STEP_SECONDS
    (one move at least), and the page asks again for the rest."""
    import time

    from train.play.session import SLOW_STEP_SECONDS, new_game

    class Slow:
        runs_apart = True  # as a costly agent: the game is computed in the slow lane

        def __init__(self, agent):
            self.agent = agent

        def act(self, observation, action_mask):
            time.sleep(0.05)
            return self.agent.act(observation, action_mask)

    body = {"seats": [{"agent": "random"}, {"agent": "random"}], "seed": 0}
    slow = new_game(body, build=lambda spec, seed: Slow(spec.build(seed)))
    quick = new_game(body, build=lambda spec, seed: spec.build(seed))
    assert slow.slow and not quick.slow
    t = time.monotonic()
    slow.step(None, 200)
    took = time.monotonic() - t
    assert 1 < slow.seq < 200 and took < SLOW_STEP_SECONDS + 0.2
    slow.step(None, 200)  # the rest, a quarter second at a time, the same game
    quick.step(None, 200)
    assert quick.seq >= 200 or quick.game.game_over  # a quick game takes its 200 moves at once


def test_a_finished_game_is_not_forgotten_to_make_room_for_costly_agents():
    """A game over let its costly agents go already: forgetting it (its page and record
    then a 404) freed nothing."""
    from train.play.session import ABANDONED_SECONDS, new_game

    store = SessionStore(entropy=0)

    class Apart:
        runs_apart = True

        def act(self, observation, action_mask):
            return int(action_mask.nonzero()[0][0])

    session = new_game({"seats": [{"agent": "random"}, {"agent": "random"}]}, build=lambda spec, seed: Apart())
    store.add(session)
    session.touched -= ABANDONED_SECONDS + 1  # unseen for two minutes, not yet idle
    session.step(None, 200)
    while not session.game.game_over:
        session.step(None, 200)
    assert session.table.agents == [None, None]  # released at the end
    assert not store.forget_abandoned_apart() and store.get(session.id) is session


def test_a_hosted_agent_whose_extra_is_missing_is_named_on_the_page_as_at_home(tmp_path, monkeypatch):
    """A search reading a model only torch reads, on a server without the train extra: the
    page got the child's message with its paths hidden ("(a path on the server) -m pip
    install -e '(a path on the server)'"); it says which extra is missing, as for ppo."""
    from agents.ppo import DEFAULT_MODEL_ZIP
    from llama_env._install import MissingExtra

    (tmp_path / "torch.py").write_text("raise ImportError('as if not installed')\n")
    monkeypatch.syspath_prepend(str(tmp_path))  # the spawned child starts with this process's path
    host = AgentHost()
    try:
        with pytest.raises(MissingExtra) as refused:
            host.agent(AgentSpec("search", {"path": str(DEFAULT_MODEL_ZIP)}), 0)
        assert refused.value.extra == "train" and "torch" in str(refused.value)
    finally:
        host.close()
    store = SessionStore(entropy=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        client = TestClient(create_app(store, model_dirs=[DEFAULT_MODEL_ZIP.parent]), base_url="http://127.0.0.1")
    with client:
        spec = f"search:path={DEFAULT_MODEL_ZIP.name}"
        r = client.post("/api/games", json={"seats": [{"agent": spec}, {"person": "Ann"}]})
    assert r.status_code == 400 and r.json()["error"] == (
        f"seat 0, agent '{spec}': the ppo agent reads its model with torch, which is not installed: "
        "this server lacks the train extra; its operator installs it"
    ), r.text


class _Unseeded:
    """A user's agent with no seed parameter and no reset: a seed cannot reach it."""

    def act(self, observation, action_mask):
        return int(action_mask.nonzero()[0][0])


@pytest.mark.parametrize("in_child", [False, True], ids=["server", "child"])
def test_an_agent_that_cannot_be_seeded_is_seated_without_a_warning(monkeypatch, in_child):
    """The server seeds every game it seats an agent in, yet built each agent as
    ``AgentSpec.build(seed)`` does, so a user's agent without a seed parameter or a reset
    warned "cannot be seeded" into the server's log (in the child of costly agents too)."""
    import multiprocessing
    import threading

    import llama_env.agent as registry
    import train.play.agent_host

    monkeypatch.setattr(registry, "_UNSEEDABLE_SAID", set())
    registry.register("tw_unseeded")(_Unseeded)
    try:
        with warnings.catch_warnings(record=True) as said:
            warnings.simplefilter("always")
            if in_child:  # the child's loop, run here (a spawned child would not know the agent)
                monkeypatch.setattr(train.play.agent_host.signal, "signal", lambda *a: None)
                server, child = multiprocessing.Pipe()
                serving = threading.Thread(target=train.play.agent_host._main, args=(child, 0, 4))
                serving.start()
                server.send(("build", 0, "tw_unseeded", {}, 7))
                ok, (version, sizes, shown) = server.recv()  # its observation version, table sizes and repr
                assert (ok, version, sizes) == (True, 0, None) and isinstance(shown, str)
                server.close()
                serving.join(10)
            else:
                with TestClient(create_app(SessionStore(entropy=0)), base_url="http://127.0.0.1") as client:
                    r = client.post(
                        "/api/games", json={"seats": [{"person": "Ann"}, {"agent": "tw_unseeded"}], "seed": 7}
                    )
                assert r.status_code == 201, r.text
        assert [str(w.message) for w in said if "cannot be seeded" in str(w.message)] == []
    finally:
        for table in (registry._REGISTRY, registry._DOCS, registry._GROUPS):
            table.pop("tw_unseeded", None)


def test_a_hosted_agent_says_what_it_warns_of_at_a_table_as_at_home(host):
    """The page said nothing of a costly agent at a table it does not fit: the child's
    agent answered only ``act`` and ``reset``, so a ``search:worlds=16`` at 3 players
    (which does not search there) or one playing a 2-player model at 4 players looked
    like any other seat. It answers ``table_sizes`` and ``forewarn`` as at home, and an
    agent built again in a new child is told again (it said it at the table)."""
    from agents.ppo import DEFAULT_MODEL_ZIP
    from llama_env.agent import table_warnings
    from llama_env.engine import Rules

    unused = AgentSpec("search", {"worlds": 16})
    remote = host.agent(unused, 0)
    said = [str(w) for w in table_warnings([unused], Rules(num_players=3), [remote])]
    assert said == [str(w) for w in table_warnings([unused], Rules(num_players=3))]
    assert len(said) == 1 and "does not search at a 3-player table" in said[0]
    assert repr(remote) == "SearchAgent(worlds=16)"  # as its warnings name it: the page names it by its spec there
    assert remote.forewarn(Rules(num_players=3)) is None  # said once, in the child as at home
    host._process.kill()  # type: ignore[union-attr]
    host._process.join()  # type: ignore[union-attr]
    remote.reset(1)  # built again in a new child, and told again: it would say it at the table
    assert remote.rebuilt == 1 and host.call("forewarn", remote.key, Rules(num_players=3)) is None
    sized = AgentSpec("search", {"path": str(DEFAULT_MODEL_ZIP.parent / "ppo_llama_2p.npz")})
    assert host.agent(sized, 0).table_sizes == (2,)


@pytest.mark.parametrize(
    ("failure", "why"),
    [
        (AgentLost, "the process of costly agents stopped: EOFError"),
        (AgentHostFull, "the server runs 256 costly agents already: try again when a game ends"),
    ],
)
def test_a_costly_agents_process_failing_as_it_forewarns_is_the_servers_failure(failure, why):
    """The process of costly agents lost twice, or full, as a seat's agent was asked what it
    warns of was a 400 blaming the agent: "agent 'search': forewarn(rules) raised
    AgentLost: ..."; it is the server's failure, as at the agent's build: a 500 (the
    AgentLost, which the server logs) or a 429 to try again."""
    from llama_env.engine import DEFAULT_RULES
    from train.play.session import AgentPolicy, SessionError, build_agent

    class Failing:
        def act(self, observation, action_mask):
            return 0

        def forewarn(self, rules):
            raise failure(why)

    def seat():
        return build_agent(
            AgentSpec("random"), 0, "seat 1", rules=DEFAULT_RULES, policy=AgentPolicy(), build=lambda s, _: Failing()
        )

    if failure is AgentLost:
        with pytest.raises(AgentLost):
            seat()
    else:
        with pytest.raises(SessionError) as refused:
            seat()
        assert refused.value.status == 429
        assert str(refused.value) == f"seat 1, agent 'random': {why}"
