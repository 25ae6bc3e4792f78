"""The web server against a hostile page or request, one test class per class of defect:
other origins and hosts (DNS rebinding), file paths in agent specs, stalling the server
with costly work, amplification, markup from data (the API side; the page side runs
in Chromium in test_browser.py), hidden information in running games, and a fuzz over
every endpoint that must never answer 5xx."""

from __future__ import annotations

import contextlib
import http.client
import json
import re
import shutil
import socket
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from webclient import BASE, client_for

from llama_env.agent import Agent
from llama_env.engine import LlamaGame, rule_option_fields
from llama_env.record import GameRecording
from llama_env.table import Table
from train.play.session import MAX_EVENTS, AgentPolicy, SessionStore
from train.play.web import SWITCH_INTERVAL, create_app

MODELS = Path(__file__).resolve().parents[2] / "agents" / "models"


@pytest.fixture
def app(store):
    return create_app(store)


def new(client, seats, **body):
    r = client.post("/api/games", json={"seats": seats, **body})
    assert r.status_code == 201, r.text
    return r.json()


PLAY = [{"person": "Ann"}, {"agent": "random"}]
WATCH = [{"agent": "random"}, {"agent": "random"}]


def finished_record(names=("player_0", "player_1"), seed=0) -> dict:
    agents: list[Agent] = []
    from llama_env.agent import make

    agents = [make("random", seed=seed), make("random", seed=seed + 1)]
    game = LlamaGame(2, rng=seed)
    recording = GameRecording(list(names), ["random", "random"], game.to_dict())

    class Listen:
        def on_move(self, table, seat, action, drawn):
            recording.moves.append((seat, action))

        def on_round_end(self, table, result):
            pass

    Table(game, agents, listener=Listen()).play()  # type: ignore[arg-type]
    return recording.to_json()


class TestOtherOriginsCannotDriveIt:
    def test_a_foreign_host_is_refused_everywhere(self, app):
        rebinding = client_for(app, "http://attacker.example:8000")
        for path in ("/api/agents", "/api/rules", "/api/history"):
            r = rebinding.get(path)
            assert r.status_code == 403 and "answers for" in r.json()["error"], path
        for path in ("/", "/static/app.js"):  # a browser opening the page is told why, in words
            r = rebinding.get(path)
            assert r.status_code == 403 and r.headers["content-type"].startswith("text/html"), path
            assert "<script" not in r.text and "app.js" not in r.text, path  # not the page itself
            assert "answers for 127.0.0.1, ::1, localhost only, not for attacker.example" in r.text, path
        assert rebinding.post("/api/games", json={"seats": PLAY}).status_code == 403
        assert rebinding.post("/", json={}).json()["error"].startswith("this server answers for")

    def test_a_page_opened_at_an_address_not_served_names_the_allow_host_that_adds_it(self, app):
        """A friend opening the page at an address the server does not answer for saw the
        API's raw JSON refusal as the page; it is now a short page that names the address
        and the ``--allow-host`` to add, with the address from the request escaped."""
        page = client_for(app, "http://192.0.2.2:8735").get("/")
        assert page.status_code == 403 and page.headers["cache-control"] == "no-store"
        assert "script-src 'self'" in page.headers["content-security-policy"]
        assert "not for 192.0.2.2." in page.text and "<code>--allow-host 192.0.2.2</code>" in page.text
        assert "<code>--allow-host fe80::1</code>" in client_for(app, "http://[fe80::1]:8000").get("/").text
        for host, shown in [
            ('<img src=x onerror="alert(1)">', "not for &lt;img src=x onerror=&quot;alert(1)&quot;&gt;."),
            ("a b:80", "not for a b."),
            ("", "not for a request that names no host."),
        ]:
            r = client_for(app, host=host).get("/")
            assert r.status_code == 403 and shown in r.text, (host, r.text)
            assert "--allow-host" not in r.text and "<img" not in r.text, (host, r.text)

    @pytest.mark.parametrize("host", ["127.0.0.1:8000", "localhost:8000", "LOCALHOST", "[::1]:8000", "127.0.0.1"])
    def test_the_local_names_are_served(self, app, host):
        assert client_for(app, f"http://{host}").get("/api/agents").status_code == 200

    def test_a_named_host_can_be_allowed(self, store):
        app = create_app(store, hosts=["127.0.0.1", "llama.lan"])
        assert client_for(app, "http://llama.lan:8000").get("/").status_code == 200
        assert client_for(app, "http://other.lan:8000").get("/").status_code == 403

    @pytest.mark.parametrize(
        "origin", ["http://evil.example", "null", "http://127.0.0.1:9999", "https://127.0.0.1:8000"]
    )
    def test_another_origin_cannot_use_the_api(self, client, origin):
        game = new(client, PLAY)
        token = {"X-Llama-Token": game["token"]}
        for method, path, body in [
            ("POST", "/api/games", {"seats": PLAY}),
            ("POST", f"/api/games/{game['id']}/move", {"action": game["legal"][0]}),
            ("GET", f"/api/games/{game['id']}", None),
            ("GET", "/api/agents", None),
            ("GET", "/api/rules", None),
            ("POST", "/api/replays", finished_record()),
        ]:
            r = client.request(method, path, json=body, headers={"Origin": origin, **token})
            assert r.status_code == 403 and "another origin" in r.json()["error"], (method, path)
        # the same requests from the page's own origin go through
        r = client.get(f"/api/games/{game['id']}", headers={"Origin": BASE, **token})
        assert r.status_code == 200

    @pytest.mark.parametrize("site", ["cross-site", "same-site"])
    def test_fetch_metadata_from_another_site_is_refused(self, client, site):
        r = client.post("/api/games", json={"seats": PLAY}, headers={"Sec-Fetch-Site": site})
        assert r.status_code == 403 and "another site" in r.json()["error"]
        assert client.get("/", headers={"Sec-Fetch-Site": site}).status_code == 200  # a link to the page is fine

    @pytest.mark.parametrize(
        "content_type", [None, "text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x"]
    )
    def test_the_api_takes_json_only(self, client, store, content_type):
        headers = {} if content_type is None else {"Content-Type": content_type}
        r = client.post("/api/games", content=json.dumps({"seats": PLAY}), headers=headers)
        assert r.status_code == 415 and "application/json" in r.json()["error"]
        assert len(store) == 0

    def test_changing_a_game_needs_its_token(self, client):
        game = new(client, PLAY)
        other = new(client, PLAY)
        url = f"/api/games/{game['id']}"
        for headers in ({}, {"X-Llama-Token": ""}, {"X-Llama-Token": other["token"]}, {"X-Llama-Token": "x" * 5000}):
            assert client.post(f"{url}/move", json={"action": game["legal"][0]}, headers=headers).status_code == 403
            assert client.post(f"{url}/hand-over", json={"seat": 1}, headers=headers).status_code == 403
            assert client.get(url, headers=headers).status_code == 403
            assert client.get(f"{url}/record", headers=headers).status_code == 403
        watch = new(client, WATCH)
        r = client.post(f"/api/games/{watch['id']}/step", json={"moves": 5}, headers={"X-Llama-Token": game["token"]})
        assert r.status_code == 403

    def test_the_page_runs_no_inline_script_and_cannot_be_framed(self, client):
        page = client.get("/")
        policy = page.headers["content-security-policy"]
        assert "script-src 'self'" in policy and "frame-ancestors 'none'" in policy and "unsafe-inline" not in policy
        assert page.headers["x-frame-options"] == "DENY" and page.headers["x-content-type-options"] == "nosniff"
        assert not re.findall(r"<script(?![^>]*\bsrc=)", page.text), "an inline script"
        assert not re.findall(r"<[^>]+\son[a-z]+\s*=", page.text), "an inline event handler"


class TestNoFileSystemFromTheWeb:
    @pytest.mark.parametrize("path", ["/etc/passwd", "/nonexistent/model.zip", "/tmp", "../../etc", "agents/models"])
    def test_a_path_in_an_agent_spec_is_refused_without_a_hint(self, client, store, path):
        r = client.post("/api/games", json={"seats": [{"person": "Ann"}, {"agent": f"ppo:path={path}"}]})
        # one message for every path: existing or not, file or folder, readable or not
        assert r.status_code == 400
        assert r.json()["error"] == (
            "seat 1 (ppo:path=...): agents from the web load no files by path; to play the models under DIR, "
            "start the server with --allow-models DIR (ppo:path=NAME then reads DIR/NAME)"
        )
        assert len(store) == 0

    def test_allowed_model_directories_only(self, tmp_path, store):
        models = tmp_path / "models"
        models.mkdir()
        shutil.copy(MODELS / "ppo_llama_2p.npz", models / "mine.npz")
        outside = tmp_path / "outside.npz"
        shutil.copy(MODELS / "ppo_llama_2p.npz", outside)
        (models / "link.npz").symlink_to(outside)
        client = client_for(create_app(store, model_dirs=[models]))
        ok = client.post("/api/games", json={"seats": [{"person": "Ann"}, {"agent": "ppo:path=mine.npz"}]})
        assert ok.status_code == 201, ok.text
        assert ok.json()["table"]["seats"][1]["name"] == "ppo:path=mine.npz"  # the absolute path is not echoed
        refused = "seat 1 (ppo:path=...): a model path must lie under a directory the server allows"
        for path in ("../outside.npz", str(outside), "link.npz", "/etc/passwd", "sub/../../outside.npz"):
            r = client.post("/api/games", json={"seats": [{"person": "Ann"}, {"agent": f"ppo:path={path}"}]})
            assert r.status_code == 400 and r.json()["error"] == refused, path

    def test_a_tilde_from_the_web_is_a_folder_inside_the_allowed_one(self, tmp_path, store, monkeypatch):
        """The agents read a leading ~ in ppo:path= as the home folder: from the web it is
        still a name inside the folder the server allows, and never reaches the home folder."""
        home, models = tmp_path / "home", tmp_path / "models"
        (models / "~").mkdir(parents=True)
        home.mkdir()
        shutil.copy(MODELS / "ppo_llama_2p.npz", home / "mine.npz")
        monkeypatch.setenv("HOME", str(home))
        client = client_for(create_app(store, model_dirs=[models]))
        for spec in ("ppo:path=~/mine.npz", "search:path=~/mine.npz", "search:networks_path=~/mine.npz"):
            r = client.post("/api/games", json={"seats": [{"person": "Ann"}, {"agent": spec}]})
            assert r.status_code == 400 and "~/mine.npz: the file does not exist" in r.json()["error"], r.text
        shutil.copy(MODELS / "ppo_llama_2p.npz", models / "~" / "mine.npz")
        ok = client.post("/api/games", json={"seats": [{"person": "Ann"}, {"agent": "ppo:path=~/mine.npz"}]})
        assert ok.status_code == 201, ok.text

    def test_a_model_that_does_not_load_is_named_as_the_page_names_it(self, tmp_path, store):
        """Why an allowed model did not load (a run's model overtaken by a checkpoint, a
        run with no model yet, a broken or missing file) reached the page with the
        server's absolute paths, and suggested specs no request could give: each path is
        now relative to the allowed directory, as ppo:path=NAME reads it."""
        from agents.ppo import DEFAULT_MODEL_ZIP

        models = tmp_path / "models"
        for run, checkpoints in (("run", (1024, 2048)), ("training", (1024,))):
            (models / run / "checkpoints").mkdir(parents=True)
            (models / run / "config.json").write_text(json.dumps({"players": 2}))
            for steps in checkpoints:
                shutil.copy(DEFAULT_MODEL_ZIP, models / run / "checkpoints" / f"ppo_{steps}.zip")
        shutil.copy(DEFAULT_MODEL_ZIP, models / "run" / "model.zip")
        (models / "run" / "summary.json").write_text(json.dumps({"num_timesteps": 512}))
        (models / "bad.npz").write_bytes(b"not a model")
        (models / "empty").mkdir()
        client = client_for(create_app(store, model_dirs=[models]))

        def refused(spec: str) -> str:
            r = client.post("/api/games", json={"seats": [{"person": "Ann"}, {"agent": spec}]})
            assert r.status_code == 400, r.text
            error = r.json()["error"]
            assert str(tmp_path) not in error and str(tmp_path.resolve()) not in error, error
            return error

        assert refused("ppo:path=run").endswith(
            "name the one you mean: ppo:path=run/model.zip or ppo:path=run/checkpoints/ppo_2048.zip"
        )
        assert refused("search:path=run").endswith(
            "search:path=run/model.zip or search:path=run/checkpoints/ppo_2048.zip"
        )
        assert refused("ppo:path=training").endswith("instead: ppo:path=training/checkpoints/ppo_1024.zip")
        assert "no PPO model in .: it is not a run directory" in refused("ppo:path=.")  # the directory itself
        assert "bad.npz" in refused("ppo:path=bad.npz")
        assert "no PPO model at missing.npz" in refused("ppo:path=missing.npz")
        assert "no PPO model in empty" in refused("ppo:path=empty")
        for named in ("run/model.zip", "training/checkpoints/ppo_1024.zip"):  # what they suggest is taken
            ok = client.post("/api/games", json={"seats": [{"person": "Ann"}, {"agent": f"ppo:path={named}"}]})
            assert ok.status_code == 201, ok.text
        root = models.resolve()  # and a path outside the directory is not shown at all
        said = f"{root}2/x.npz, '/etc/passwd' or C:\\x.npz beside {root}/a.npz (1/2, run/a.npz)"
        assert AgentPolicy((root,)).on_the_page(said) == (
            "(a path on the server), '(a path on the server)' or (a path on the server) beside a.npz (1/2, run/a.npz)"
        )

    def test_a_path_on_the_page_is_named_whole_as_a_request_reaches_it_or_hidden_whole(self, tmp_path):
        """The page's names were garbled: a second pass hid what followed a bracket in a
        name (``run (2)(a path on the server)``), the directory matched inside a path
        (``oldmodel.zip``) and at its end (nothing), a path with a space was hidden up to
        the space only, and a model under a second directory was named as the first reads
        the name, another file."""
        root = tmp_path / "runs"
        for folder in ("run (2)", "exp[1]", "a+", "old" + str(root), "my models"):
            (root / folder).mkdir(parents=True)
        policy = AgentPolicy((root,))
        for name in ("run (2)/model.zip", "exp[1]/model.zip", "a+/model.zip", f"old{root}/model.zip"):
            said = f"no PPO model at {root}/{name}: the file does not exist"
            assert policy.on_the_page(said) == f"no PPO model at {name}: the file does not exist", name
        assert policy.on_the_page(f"no PPO model in {root}/: it is not a run directory") == (
            "no PPO model in .: it is not a run directory"
        )
        elsewhere = tmp_path / "home" / "my models"
        elsewhere.mkdir(parents=True)
        for said in (f"{elsewhere}/x.npz", f"{elsewhere}/x.npz is not written", f"(see {tmp_path}/x.npz)."):
            assert policy.on_the_page(said) == said.replace(
                said[said.index("/") : said.index(".npz") + 4], ("(a path on the server)")
            ), said
        first, second = tmp_path / "first", tmp_path / "second"
        for directory in (first, second):
            directory.mkdir()
        (second / "only.npz").write_bytes(b"")
        both = AgentPolicy((first, second))
        said = f"cannot load a PPO model from {second}/only.npz or {first}/a.npz"
        assert both.on_the_page(said) == "cannot load a PPO model from (a path on the server) or a.npz"
        assert both._under_root("only.npz") == str(first / "only.npz")  # the name reaches another file

    def test_a_name_that_reaches_nothing_says_where_it_is_read_and_a_run_as_train_names_it_is_fixed(
        self, tmp_path, store
    ):
        """``ppo:path=runs/beat-heuristic``, as ``llama-rl train`` names a run, under
        ``--allow-models runs`` was answered that nothing is at ``runs/beat-heuristic`` (read as
        runs/runs/beat-heuristic), though that run exists: the page is told where a name is
        read, and that ``ppo:path=beat-heuristic`` is the run; the folder's path is not told,
        and a name outside the folder still reaches nothing."""
        runs, other = tmp_path / "runs", tmp_path / "other"
        (runs / "beat-heuristic").mkdir(parents=True)
        shutil.copy(MODELS / "ppo_llama_2p.npz", runs / "beat-heuristic" / "model.npz")
        (other / "runs").mkdir(parents=True)
        (tmp_path / "first").mkdir()
        (runs / "away").symlink_to(other)  # runs/away/runs/x is refused; runs/x must not be suggested for it

        def answer(spec: str, *folders: Path) -> str:
            client = client_for(create_app(store, model_dirs=list(folders or (runs,))))
            r = client.post("/api/games", json={"seats": [{"person": "Ann"}, {"agent": spec}]})
            assert str(tmp_path) not in r.text and str(tmp_path.resolve()) not in r.text, r.text
            return r.json()["error"] if r.status_code == 400 else f"{r.status_code}"

        read = "ppo:path=NAME is read inside the folder the server allows (--allow-models DIR reads DIR/NAME)"
        assert answer("ppo:path=runs/beat-heuristic") == (
            "seat 1, agent 'ppo:path=runs/beat-heuristic': no PPO model at runs/beat-heuristic: the file does not "
            f"exist; {read}, and runs is that folder: try ppo:path=beat-heuristic"
        )
        assert answer("ppo:path=beat-heuristic") == "201"
        assert answer("ppo:path=./runs/beat-heuristic/model.npz").endswith("try ppo:path=beat-heuristic/model.npz")
        for spec in ("ppo:path=runs/nothing", "ppo:path=nothing", "search:path=runs/nothing"):
            assert answer(spec).endswith(f"; {read.replace('ppo:', spec.split(':')[0] + ':', 1)}"), spec
        assert answer("ppo:path=away/runs/beat-heuristic") == (
            "seat 1 (ppo:path=...): a model path must lie under a directory the server allows"
        )
        assert answer("ppo:path=runs/beat-heuristic", tmp_path / "first", runs).endswith(
            "is read inside the first folder the server allows (--allow-models DIR reads DIR/NAME)"
        )  # (a second folder's run has no name of its own: the first one takes it)


class TestNoRequestCanStallTheServer:
    def test_the_app_shortens_the_lock_switch_interval_and_never_lengthens_it(self):
        before = sys.getswitchinterval()
        try:
            sys.setswitchinterval(0.005)
            create_app()
            assert sys.getswitchinterval() == pytest.approx(SWITCH_INTERVAL)
            sys.setswitchinterval(0.0001)
            create_app()
            assert sys.getswitchinterval() == pytest.approx(0.0001)
        finally:
            sys.setswitchinterval(before)

    @pytest.mark.parametrize(
        ("spec", "fragment"),
        [
            ("search:worlds=100000", "worlds must be within 1..96"),
            ("perturbed:size=1000000", "size must be within 1..256"),
            ("heuristic:go_out_bonus=1e300", "within"),
            ("cautious:threshold=" + "9" * 60, "within"),
        ],
    )
    def test_costly_agent_parameters_are_bounded(self, client, store, spec, fragment):
        r = client.post("/api/games", json={"seats": [{"person": "Ann"}, {"agent": spec}]})
        assert r.status_code == 400 and fragment in r.json()["error"], r.json()
        assert len(store) == 0

    def test_one_request_asks_for_a_bounded_amount_of_work(self, client):
        game = new(client, WATCH)
        r = client.post(f"/api/games/{game['id']}/step", json={"moves": 201}, headers={"X-Llama-Token": game["token"]})
        assert r.status_code == 400 and "1..200" in r.json()["error"]
        assert client.post("/api/games", content=b"[" * 3_000_000, headers={"content-type": "application/json"})
        r = client.post("/api/replays", content=b" " * 2_000_001, headers={"content-type": "application/json"})
        assert r.status_code == 413

    def test_a_busy_game_refuses_a_second_change_instead_of_queueing(self, client, store):
        game = new(client, WATCH)
        session = store.get(game["id"])
        with session.lock:  # as if another request were computing its moves
            r = client.post(f"/api/games/{game['id']}/step", json={}, headers={"X-Llama-Token": game["token"]})
        assert r.status_code == 409 and "busy" in r.json()["error"]

    def test_a_slow_game_leaves_other_requests_fast(self):
        """A server in its own process with an agent that burns 0.4 s of pure-Python CPU a
        move; while one request steps that game for seconds, another client's requests
        stay fast (p99 < 100 ms)."""
        busy = """
            from llama_env.agent import register

            @register("busy")
            class Busy:
                def act(self, observation, mask):
                    end = time.perf_counter() + 0.4
                    while time.perf_counter() < end:
                        sum(range(1000))
                    return int(mask.nonzero()[0][0])
            """
        with _server(busy) as call:
            _, slow = call("POST", "/api/games", {"seats": [{"agent": "busy"}, {"agent": "busy"}]})
            p99, steps = _latencies_while_stepping(call, [slow], moves=8)
            assert steps[0][0] == 200 and len(steps[0][1]["events"]) >= 8
            assert p99 < 100, f"p99 {p99:.0f} ms while a slow game computes"

    def test_games_of_costly_agents_leave_other_requests_fast(self):
        """Search agents compute in the child process of costly agents, where the server's
        thread clock cannot see their time: five such games stepped at once held every
        worker of the other games (a person's move waited a minute). They take turns in
        the slow games' lane instead, and another client's requests stay fast."""
        with _server("") as call:
            seats = [{"agent": "search:below=1:worlds=16"}] * 4
            games = [call("POST", "/api/games", {"seats": seats})[1] for _ in range(5)]
            p99, steps = _latencies_while_stepping(call, games, moves=12)
            # each step moved at least once (in this lane, as many moves as a quarter second allows)
            assert all(status == 200 and len(state["events"]) >= 1 for status, state in steps)
            assert p99 < 100, f"p99 {p99:.0f} ms while five search games compute"


@contextlib.contextmanager
def _server(setup: str):
    """A server in a process of its own (``setup``: code it runs first), and a function
    that calls it: ``call(method, path, body=None, token=None) -> (status, data)``."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    script = (
        "import time, uvicorn\n"
        + textwrap.dedent(setup)
        + textwrap.dedent(
            f"""
        from train.play.web import create_app
        uvicorn.run(create_app(), host="127.0.0.1", port={port}, log_level="warning")
        """
        )
    )
    server = subprocess.Popen([sys.executable, "-c", script], stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.time() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                assert time.time() < deadline and server.poll() is None, "the server did not start"
                time.sleep(0.1)

        def call(method, path, body=None, token=None):
            # long: on a loaded machine the costly agents' process, at the lowest priority, waits its turn
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
            headers = {"Content-Type": "application/json"}
            if token:
                headers["X-Llama-Token"] = token
            conn.request(method, path, body=None if body is None else json.dumps(body), headers=headers)
            response = conn.getresponse()
            data = json.loads(response.read())
            conn.close()
            return response.status, data

        yield call
    finally:
        server.terminate()
        server.wait(timeout=20)


def _latencies_while_stepping(call, slow_games, moves):
    """Steps every game of ``slow_games`` by ``moves`` at once, each from a thread of its
    own, while a person plays against ``random`` and asks for the agents: the p99 of
    those requests in milliseconds, and each step's (status, state)."""
    _, mine = call("POST", "/api/games", {"seats": [{"person": "Ann"}, {"agent": "random"}]})
    steps: list = [None] * len(slow_games)

    def step(k, game):
        steps[k] = call("POST", f"/api/games/{game['id']}/step", {"moves": moves}, game["token"])

    steppers = [threading.Thread(target=step, args=(k, g)) for k, g in enumerate(slow_games)]
    for t in steppers:
        t.start()
    time.sleep(0.3)
    latencies = []
    while any(t.is_alive() for t in steppers) and len(latencies) < 60:
        t0 = time.perf_counter()
        status, state = call("GET", f"/api/games/{mine['id']}", token=mine["token"])
        latencies.append(time.perf_counter() - t0)
        assert status == 200
        if state["your_turn"]:
            t0 = time.perf_counter()
            status, _ = call("POST", f"/api/games/{mine['id']}/move", {"action": state["legal"][0]}, mine["token"])
            latencies.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        status, _ = call("GET", "/api/agents")
        latencies.append(time.perf_counter() - t0)
    during = any(t.is_alive() for t in steppers)
    for t in steppers:
        t.join(timeout=600)
    assert during and len(latencies) >= 20, "the slow games ended before the others were measured"
    return float(np.percentile(np.array(latencies) * 1000, 99)), steps


class TestNoAmplification:
    def test_a_response_carries_bounded_events_and_says_when_it_cut(self, client, store):
        game = new(client, [{"agent": "random"}] * 6, end_score=1000)
        token = {"X-Llama-Token": game["token"]}
        for _ in range(3):
            state = client.post(f"/api/games/{game['id']}/step", json={"moves": 200}, headers=token).json()
        everything = client.get(f"/api/games/{game['id']}", headers=token)
        assert len(everything.json()["events"]) == MAX_EVENTS and everything.json()["truncated"] is True
        assert len(everything.content) < 1_000_000
        latest = client.get(f"/api/games/{game['id']}", params={"since": state["seq"] - 1}, headers=token).json()
        assert latest["truncated"] is False and 1 <= len(latest["events"]) <= 3
        behind = client.get(f"/api/games/{game['id']}", params={"since": state["seq"] - 250}, headers=token).json()
        assert behind["truncated"] is True and len(behind["events"]) == MAX_EVENTS  # the latest, as ever
        assert behind["events"] == everything.json()["events"]
        # the game keeps no more frames than a response can carry: a long game's memory is bounded
        assert len(store.get(game["id"])._frames) <= MAX_EVENTS

    def test_names_and_specs_have_a_length_limit(self, client):
        r = client.post("/api/games", json={"seats": [{"person": "x" * 41}, {"agent": "random"}]})
        assert r.status_code == 400 and "longer than 40" in r.json()["error"]
        r = client.post("/api/games", json={"seats": [{"person": "x"}, {"agent": "random:" + "a=1:" * 40}]})
        assert r.status_code == 400 and "at most 100 characters" in r.json()["error"]
        # a record is shown, not run: its long strings come back shortened to the same limits
        # (an evaluation's records name agents as ppo:path=<a deep path>, and could not be replayed)
        record = finished_record(names=("y" * 1000, "z"))
        record["agents"][1] = "ppo:path=" + "deep/" * 40 + "model.zip"
        r = client.post("/api/replays", json=record)
        assert r.status_code == 201
        seats = r.json()["table"]["seats"]
        assert seats[0]["name"] == "y" * 39 + "…" and len(r.content) < 100_000
        assert seats[1]["agent"].startswith("ppo:path=deep/") and len(seats[1]["agent"]) == 100

    def test_a_replay_refuses_the_names_a_new_game_refuses(self, client):
        """A right-to-left override or a NUL in a record's names came back to the page, which
        refuses them in a new game's names."""
        for names in (("\u0000a", "b"), ("a", "b\u202e")):
            r = client.post("/api/games", json={"seats": [{"person": names[0]}, {"person": names[1]}]})
            assert r.status_code == 400 and "control character" in r.json()["error"]
            r = client.post("/api/replays", json=finished_record(names=names))
            assert r.status_code == 400 and "'names' hold a control character" in r.json()["error"], r.json()
        record = finished_record()
        record["agents"][1] = "random\u202e"
        r = client.post("/api/replays", json=record)
        assert r.status_code == 400 and "'agents' hold a control character" in r.json()["error"]
        assert client.post("/api/replays", json=finished_record(names=("Ann  Lee", "Bo"))).status_code == 201


class TestMarkupStaysText:
    def test_names_come_back_as_plain_json_strings(self, client):
        evil = '<img src=x onerror="alert(1)">'
        record = finished_record(names=(evil, "<b>b</b>"))
        state = client.post("/api/replays", json=record).json()
        assert state["table"]["seats"][0]["name"] == evil  # data, for the page to write as text
        assert client.get("/").headers["content-security-policy"].startswith("default-src 'self'")


class TestRunningGamesKeepTheirSecrets:
    def test_a_watched_game_gives_no_record_until_it_ends(self, client):
        game = new(client, WATCH)
        token = {"X-Llama-Token": game["token"]}
        client.post(f"/api/games/{game['id']}/step", json={"moves": 3}, headers=token)
        r = client.get(f"/api/games/{game['id']}/record", headers=token)
        assert r.status_code == 409 and "when the game is over" in r.json()["error"]
        text = client.get(f"/api/games/{game['id']}", headers=token).text
        assert "rng" not in text and 'draw_pile": [' not in text

    def test_a_chosen_seed_does_not_reveal_the_deal(self, client, store):
        game = new(client, PLAY, seed=123)
        session = store.get(game["id"])
        plain = LlamaGame(2, rng=123)  # what the person could compute from the seed alone
        assert plain.to_dict()["hands"] != session.recording.start["hands"]


# ------------------------------------------------------------------ the fuzz


def endpoints(client) -> list[tuple[str, str, dict]]:
    play = new(client, PLAY)
    watch = new(client, WATCH)
    p, w = {"X-Llama-Token": play["token"]}, {"X-Llama-Token": watch["token"]}
    return [
        ("POST", "/api/games", {}),
        ("GET", f"/api/games/{play['id']}", p),
        ("POST", f"/api/games/{play['id']}/move", p),
        ("POST", f"/api/games/{play['id']}/hand-over", p),
        ("POST", f"/api/games/{watch['id']}/step", w),
        ("GET", f"/api/games/{watch['id']}/record", w),
        ("POST", "/api/replays", {}),
        ("GET", "/api/history", {}),
        ("GET", "/api/history/1", {}),
        ("POST", "/api/history/1/replay", {}),
        ("GET", "/api/agents", {}),
        ("GET", "/api/rules", {}),
        ("GET", "/", {}),
    ]


def test_the_fuzz_covers_every_route_of_the_api(client):
    """A new endpoint is fuzzed once it is listed in :func:`endpoints`: this fails, naming
    it, until it is."""
    listed = endpoints(client)
    routes = [r for r in create_app(SessionStore(entropy=0)).app.routes if getattr(r, "path", "").startswith("/api/")]
    missing = [
        (method, route.path)
        for route in routes
        for method in sorted(route.methods - {"HEAD"})
        if not any(m == method and route.path_regex.fullmatch(path) for m, path, _ in listed)
    ]
    assert routes and not missing, f"add these to endpoints(): {missing}"


HOSTILE_BODIES = [
    b"",
    b"null",
    b"true",
    b"[]",
    b'"x"',
    b"1e999",
    b"-1e999",
    b"NaN",
    b'{"action": Infinity}',
    b'{"action": 1e999}',
    b'{"action": ' + b"9" * 5000 + b"}",
    b"[" * 100_000 + b"]" * 100_000,
    b'{"a":' * 50_000 + b"1" + b"}" * 50_000,
    b'{"action": 7, "since": true}',
    b'{"moves": 1e308}',
    b'{"seat": true}',
    b'{"seat": 1e999, "agent": "random"}',
    b'{"seat": 0, "agent": ["heuristic"]}',
    b'{"moves": -1}',
    b'{"seats": [{"person": "\\ud800"}, {"agent": "random"}]}',
    b'{"seats": [{"person": "a\\u0000b"}, {"agent": "random"}]}',
    b'{"seats": [{"person": "Ann"}, {"agent": "cautious:threshold=1e999"}]}',
    b'{"seats": [{"person": "Ann"}, {"agent": "heuristic:x=' + b"9" * 400 + b'"}]}',
    b'{"seats": [{"person": "Ann"}, {"agent": "search:worlds=1e999"}]}',
    b'{"seats": [{"person": "Ann"}, {"agent": "ppo:deterministic=nan"}]}',
    b'{"seats": [{"person": "Ann"}, {"agent": ":::"}]}',
    b'{"seats": [{"person": "Ann"}, {"agent": "random"}], "seed": 1e400}',
    b"\xff\xfe\x00garbage",
    b'{"format": "llama-rl-game", "version": true}',
]


def hostile_records() -> list[dict]:
    good = finished_record()
    out = []
    for key, value in [
        ("moves", [[True, 7]]),
        ("moves", [[0, 1.0]]),
        ("moves", [[0, 10**30]]),
        ("moves", "x"),
        ("names", [1, 2]),
        ("agents", None),
        ("start", []),
    ]:
        out.append(dict(good, **{key: value}))
    start = good["start"]
    for key in start:
        for value in (True, 1.5, -1, 10**30, "x", None, [], {}, [[True]]):
            # the format allows these (no rng_state: fresh entropy deals the later rounds)
            optional = value is None and key in ("history", "last_player", "rng_state")
            if json.dumps(value) != json.dumps(start[key]) and not optional:
                out.append(dict(good, start=dict(start, **{key: value})))
    deep_history = dict(start)
    if "history" in start:
        deep_history["history"] = [[0, 0]] * 50_000
        out.append(dict(good, start=deep_history))
    rng_state = start.get("rng_state")
    if isinstance(rng_state, dict):
        for value in (True, 1.5, "x", None):
            broken = json.loads(json.dumps(rng_state))
            broken["state"] = {k: value for k in broken.get("state", {"state": 0})}
            out.append(dict(good, start=dict(start, rng_state=broken)))
    return out


def test_hostile_bodies_never_get_a_5xx(client):
    for method, path, headers in endpoints(client):
        for body in HOSTILE_BODIES:
            r = client.request(
                method,
                path,
                content=body if method == "POST" else None,
                headers={**headers, "content-type": "application/json"},
            )
            assert r.status_code < 500, (method, path, body[:60], r.text)


def test_replaying_a_saved_game_takes_an_empty_body_only(tmp_path):
    """POST /api/history/{n}/replay never read its body: text that is not JSON, or fields
    it does not take, got a 201 where every other POST refuses them with a 400."""
    from train.play.history import History

    with History(tmp_path / "h.sqlite3") as history:
        number = history.save(finished_record(), people=[False, False])
        client = client_for(create_app(SessionStore(entropy=0), history=history))
        path = f"/api/history/{number}/replay"
        for body, fragment in [
            (b"not json at all", "the request body is not JSON"),
            (b'{"moves": "garbage", "x": [1, 2]}', "unknown field 'moves' (known: none)"),
            (b"[]", "the request body must be {}"),
            (b"null", "the request body must be {}"),
        ]:
            r = client.post(path, content=body, headers={"content-type": "application/json"})
            assert r.status_code == 400 and fragment in r.json()["error"], (body, r.text)
        assert client.post(path, json={}).status_code == 201  # what the page sends
        assert client.post(path, headers={"content-type": "application/json"}).status_code == 201  # no body: {}


def test_a_field_given_twice_is_a_400_naming_it(client):
    """Python's JSON reader keeps the last of two equal keys: ``{"action": 0, "action": 7}``
    played 7 (a draw) where another reader of the same body would have played 0."""
    game = new(client, PLAY, seed=3)
    token = {"X-Llama-Token": game["token"], "content-type": "application/json"}
    before = client.get(f"/api/games/{game['id']}", headers=token).json()["table"]
    for path, body, field in [
        (f"/api/games/{game['id']}/move", b'{"action": 0, "action": 7}', "action"),
        ("/api/games", b'{"seats": [{"person": "Ann", "person": "Bob"}, {"agent": "random"}]}', "person"),
    ]:
        r = client.post(path, content=body, headers=token)
        assert r.status_code == 400, (path, r.text)
        assert r.json()["error"] == f"field '{field}' is given twice in the request body"
    assert client.get(f"/api/games/{game['id']}", headers=token).json()["table"] == before


def test_hostile_records_are_a_400(client):
    good = finished_record()
    failures = []
    for record in hostile_records():
        r = client.post("/api/replays", json=record)
        if r.status_code == 400:
            continue
        changed = {k: v for k, v in record.items() if json.dumps(v) != json.dumps(good[k])}
        if isinstance(changed.get("start"), dict):
            changed["start"] = {
                k: v for k, v in record["start"].items() if json.dumps(v) != json.dumps(good["start"].get(k))
            }
        failures.append((str(changed)[:150], r.status_code))
    assert not failures, failures


def test_hostile_queries_and_paths_never_get_a_5xx(client):
    game = new(client, PLAY)
    token = {"X-Llama-Token": game["token"]}
    for path in [
        f"/api/games/{game['id']}?since=-5",
        f"/api/games/{game['id']}?since=99999999999999999999",
        f"/api/games/{game['id']}?since=1e3",
        f"/api/games/{game['id']}?since=%00",
        "/api/games/" + "a" * 10_000,
        "/api/history?limit=-1",
        "/api/history?limit=1&offset=" + "9" * 50,
        "/api/history/" + "9" * 40,
        "/static/../pyproject.toml",
        "/static/%2e%2e/%2e%2e/pyproject.toml",
        "/api/nothing",
        # digits that str.isdigit takes and int refuses or reads: a 500 in plain text
        f"/api/games/{game['id']}?since=--5",
        f"/api/games/{game['id']}?since=%C2%B2",
        f"/api/games/{game['id']}?since=%D9%A3",
        "/api/history?limit=--1",
        "/api/history?offset=%C2%B2",
        "/api/history/%C2%B2",
        "/api/history/%D9%A1",
    ]:
        r = client.get(path, headers=token)
        assert r.status_code < 500, (path, r.text)
        assert "[project]" not in r.text
        if path.startswith("/api/"):  # every refusal of the API is JSON, Starlette's own included
            assert r.status_code == 200 or "error" in r.json(), (path, r.text)
    assert client.get(f"/api/games/{game['id']}?since=%D9%A3", headers=token).status_code == 400
    assert client.post("/api/history/%C2%B2/replay", json={}).status_code == 404
    assert client.get("/api/nothing").json() == {"error": "not found"}
    for path in ("/nothing", "/static/nothing.js"):  # a mistyped page leads back to the table
        r = client.get(path)
        assert r.status_code == 404 and r.headers["content-type"].startswith("text/html"), (path, r.text)
        assert '<a href="/">' in r.text
    for r in (client.delete(f"/api/games/{game['id']}", headers=token), client.put("/api/games", json={})):
        assert r.status_code == 405 and r.json() == {"error": "method not allowed"}


def test_a_request_the_app_fails_on_is_a_json_500_logged_once(client, monkeypatch, caplog):
    """Starlette answered a failure with its own plain-text 500 before the guard's JSON one
    could be sent."""
    import train.play.web as web

    def broken():
        raise RuntimeError("the registry is gone")

    monkeypatch.setattr(web, "describe", broken)
    with caplog.at_level("ERROR"):
        r = client.get("/api/agents")
    assert r.status_code == 500 and r.json() == {"error": "the server failed on this request"}
    assert "the registry is gone" not in r.text
    logged = [rec.getMessage() for rec in caplog.records]
    assert logged == ["GET /api/agents failed: RuntimeError: the registry is gone"]


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=10), children, max_size=4),
    max_leaves=12,
)
FIELDS = st.dictionaries(
    st.sampled_from(
        ["seats", "seed", *(f.name for f in rule_option_fields()), "action", "since", "moves", "format", "version"]
    ),
    JSON,
    max_size=4,
)


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(body=FIELDS | JSON, which=st.integers(0, 11))
def test_fuzzed_json_never_gets_a_5xx(body, which):
    client = client_for(create_app(SessionStore(entropy=0, max_games=1000)))
    method, path, headers = endpoints(client)[which]
    r = client.request(method, path, json=body if method == "POST" else None, headers=headers)
    assert r.status_code < 500, (method, path, body, r.text)


def test_nothing_in_the_log_on_bad_input(client, caplog):
    with caplog.at_level("WARNING"):
        test_hostile_bodies_never_get_a_5xx(client)
    assert not [r for r in caplog.records if r.levelno >= 30], [r.getMessage() for r in caplog.records]


def test_the_pages_script_is_served_as_javascript_whatever_the_machines_types_say():
    """On Windows mimetypes reads the types from the registry, which often calls .js
    text/plain: with nosniff a browser then ran no script, and the page did nothing."""
    script = (
        "import mimetypes\n"
        "mimetypes.add_type('text/plain', '.js')\n"  # what such a registry says
        "mimetypes.add_type('text/plain', '.css')\n"
        "import train.play.web\n"
        "print(mimetypes.guess_type('app.js')[0], mimetypes.guess_type('style.css')[0])\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["text/javascript", "text/css"]


def test_a_large_body_is_parsed_off_the_event_loop(monkeypatch):
    """A 2 MB body was parsed (and checked) on the event loop: one client posting such
    bodies made every other request wait, 62 ms at the median against 2 ms."""
    import asyncio

    import train.play.web as web

    where: list[bool] = []
    parse = web._parse

    def spy(raw):
        try:
            asyncio.get_running_loop()
            where.append(True)  # on the event loop
        except RuntimeError:
            where.append(False)
        return parse(raw)

    monkeypatch.setattr(web, "_parse", spy)
    client = client_for(create_app(SessionStore(entropy=0)))
    small = {"seats": [{"person": "Ann"}, {"agent": "random"}]}
    large = {**small, "padding": "x" * 100_000}
    assert client.post("/api/games", json=small).status_code == 201
    refused = client.post("/api/games", json=large)
    assert refused.status_code == 400 and "padding" in refused.json()["error"]  # checked as ever
    assert where == [True, False]


def test_too_many_seats_are_refused_before_any_is_read(monkeypatch):
    """A 2 MB body of 95,000 seats had every seat's spec parsed on the event loop (0.3 s
    that every other request waited) before the 2..6 check refused it."""
    import train.play.web as web

    parsed: list[str] = []
    parse = web.parse_agent_spec

    def spy(text, **kwargs):
        parsed.append(text)
        return parse(text, **kwargs)

    monkeypatch.setattr(web, "parse_agent_spec", spy)
    client = client_for(create_app(SessionStore(entropy=0)))
    r = client.post("/api/games", json={"seats": [{"agent": "random"}] * 95_000})
    assert r.status_code == 400 and "'seats' must list 2..6 seats" in r.json()["error"]
    assert parsed == []
    assert client.post("/api/games", json={"seats": [{"agent": "random"}] * 6}).status_code == 201
    assert len(parsed) == 6  # a table's seats are read as ever


def test_a_connection_that_sends_no_request_is_closed(monkeypatch):
    """uvicorn waited for ever on a connection that sent nothing, and 512 of them (its
    limit) made every request of every player a 503: such a connection is now closed
    after REQUEST_SECONDS, while one that asks is answered as ever."""
    from test_server_timeouts import serving

    import train.play.web as web

    monkeypatch.setattr(web, "REQUEST_SECONDS", 0.5)
    with serving() as port:
        silent, half = socket.create_connection(("127.0.0.1", port)), socket.create_connection(("127.0.0.1", port))
        half.sendall(b"GET /api/agents HTT")  # half a request line
        for conn in (silent, half):
            conn.settimeout(5)
            assert conn.recv(100) == b""  # closed by the server, within a second
            conn.close()
        asking = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
        asking.request("GET", "/api/agents", headers={"Host": f"127.0.0.1:{port}"})
        assert asking.getresponse().status == 200
        asking.close()
