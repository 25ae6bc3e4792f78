"""The web server against clients that stop partway through a request: each request of a
connection must arrive whole in time (uvicorn waited for ever on a request's rest, and
512 such connections made every request a 503), a body that stops or trickles is a 408
while one that keeps arriving at the floor rate has the time it needs, a client that
leaves mid-body is no failure of the app's, and Ctrl-C stops the server within seconds
whatever its connections are doing."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import signal
import socket
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator

import pytest
import uvicorn
from test_game_history import play_record

import train.play.web as web
from train.play._uvicorn import broken_assumptions
from train.play.session import SessionStore
from train.play.web import create_app


@contextlib.contextmanager
def serving(app=None) -> Iterator[int]:
    """``app`` (the web app by default) served by :func:`train.play.web.server_config`'s
    uvicorn on a thread: its port."""
    sock = web.bind("127.0.0.1", 0)
    port = sock.getsockname()[1]
    server = uvicorn.Server(web.server_config(app or create_app(SessionStore(entropy=0))))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 10
        while not server.started and time.monotonic() < deadline:
            time.sleep(0.05)
        assert server.started, "the server did not start"
        yield port
    finally:
        server.should_exit = True
        thread.join(timeout=10)


def connect(port: int) -> socket.socket:
    conn = socket.create_connection(("127.0.0.1", port))
    conn.settimeout(5)
    return conn


def read_response(conn: socket.socket) -> bytes:
    """One response's head and body (its Content-Length); an AssertionError if the server
    closes the connection first."""

    def more() -> bytes:
        data = conn.recv(65536)
        assert data, "the server closed the connection without a whole response"
        return data

    data = b""
    while b"\r\n\r\n" not in data:
        data += more()
    head, _, body = data.partition(b"\r\n\r\n")
    lengths = [line.split(b":")[1] for line in head.split(b"\r\n") if line.lower().startswith(b"content-length:")]
    length = int(lengths[0])
    while len(body) < length:
        body += more()
    return head + b"\r\n\r\n" + body


def closed_by_server(conn: socket.socket) -> bool:
    """Whether the server closes ``conn`` (reading what it still sends) within its timeout."""
    try:
        while conn.recv(65536):
            pass
    except TimeoutError:
        return False
    except ConnectionResetError:
        pass
    return True


def request(port: int, head: str, body: bytes = b"") -> bytes:
    return (head.replace("\n", "\r\n").format(port=port) + "\r\n").encode() + body


AGENTS = "GET /api/agents HTTP/1.1\nHost: 127.0.0.1:{port}\n"
POST_HEAD = "POST /api/games HTTP/1.1\nHost: 127.0.0.1:{port}\nContent-Type: application/json\nContent-Length: 100\n"


def test_a_second_request_that_stops_partway_is_closed(monkeypatch):
    """Only a connection's first request was timed: one whole request, then half of a
    second one's headers, held the connection for ever."""
    monkeypatch.setattr(web, "REQUEST_SECONDS", 0.5)
    with serving() as port:
        conn = connect(port)
        conn.sendall(request(port, AGENTS))
        assert read_response(conn).startswith(b"HTTP/1.1 200")
        conn.sendall(b"GET / HTTP/1.1\r\nHost: 127")
        assert closed_by_server(conn), "a second request's half header held its connection"
        conn.close()


def test_a_body_that_stops_partway_closes_the_connection(monkeypatch):
    """Whole headers and one byte of a 100-byte body held the connection (and a handler)
    for ever."""
    monkeypatch.setattr(web, "REQUEST_SECONDS", 0.5)
    monkeypatch.setattr(web, "BODY_SECONDS", 60.0)  # the connection's timer, not the app's
    with serving() as port:
        conn = connect(port)
        conn.sendall(request(port, POST_HEAD, b"{"))
        assert closed_by_server(conn), "a body that stopped held its connection"
        conn.close()


def test_a_body_that_stops_partway_is_a_408_that_closes_the_connection(monkeypatch):
    monkeypatch.setattr(web, "BODY_SECONDS", 0.3)
    with serving() as port:
        conn = connect(port)
        conn.sendall(request(port, POST_HEAD, b"{"))
        try:
            response = read_response(conn)
        except TimeoutError:
            pytest.fail("no answer to a body that stopped")
        head, _, body = response.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 408") and b"connection: close" in head.lower()
        assert json.loads(body) == {
            "error": "the request body did not arrive within 0.3 s "
            "(0.3 s, and 1 s more for each 16000 bytes of it that arrive, 60 s at most)"
        }
        assert closed_by_server(conn)
        conn.close()


def send_steadily(conn: socket.socket, data: bytes, rate: int) -> float:
    """``data`` sent at ``rate`` bytes a second, in tenths of a second: how long it took."""
    started = time.monotonic()
    for sent in range(0, len(data), rate // 10):
        conn.sendall(data[sent : sent + rate // 10])
        time.sleep(max(0.0, started + (sent + rate // 10) / rate - time.monotonic()))
    return time.monotonic() - started


def slow_limits(monkeypatch) -> None:
    """The server's limits at a tenth of a second's scale: headers in 0.5 s, a body in
    0.3 s and 1 s more for each 100 KB, 4 s at most."""
    monkeypatch.setattr(web, "REQUEST_SECONDS", 0.5)
    monkeypatch.setattr(web, "BODY_SECONDS", 0.3)
    monkeypatch.setattr(web, "BODY_RATE", 100_000)
    monkeypatch.setattr(web, "BODY_MOST_SECONDS", 4.0)


def replay_body(size: int) -> bytes:
    """A replay record of ``size`` bytes, as long as one of a long game (its JSON spaced out)."""
    record, _ = play_record(0, ["random", "random"])
    return json.dumps(record).encode().ljust(size)


REPLAY_HEAD = POST_HEAD.replace("/api/games", "/api/replays").replace("Length: 100", "Length: {length}")


def test_a_body_that_keeps_arriving_has_the_time_it_needs(monkeypatch):
    """Both timers were total: a 31 KB replay record sent at 5 KB/s was a 408 after 5 s,
    and its connection closed after 10 s, however steadily it came. Each byte of a body
    now buys time at the floor rate: here 300 KB at 150 KB/s (the floor is 100 KB/s)
    take 2 s, four times the connection's 0.5 s and more than six times the body's 0.3 s."""
    slow_limits(monkeypatch)
    body = replay_body(300_000)
    with serving() as port:
        conn = connect(port)
        conn.sendall(request(port, REPLAY_HEAD.replace("{length}", str(len(body)))))
        took = send_steadily(conn, body, 150_000)
        assert took > 1.5
        response = read_response(conn)
        assert response.startswith(b"HTTP/1.1 201"), response[:300]
        conn.close()


@pytest.mark.parametrize("which", ["app", "connection"])
def test_a_body_that_trickles_is_still_refused_in_time(monkeypatch, which):
    """A body that sends a few bytes now and then gains almost nothing: a 408 at about
    the body's limit (the app's timer), or the connection closed at about its own
    (where the app waits longer, or reads no body)."""
    slow_limits(monkeypatch)
    if which == "connection":
        monkeypatch.setattr(web, "BODY_SECONDS", 60.0)
        monkeypatch.setattr(web, "BODY_MOST_SECONDS", 60.0)
    with serving() as port:
        conn = connect(port)
        conn.sendall(request(port, REPLAY_HEAD.replace("{length}", "300000")))
        started = time.monotonic()
        conn.settimeout(0.05)
        response = b""
        with contextlib.suppress(OSError):
            while time.monotonic() < started + 5:
                conn.sendall(b"x" * 100)  # 2 KB/s: a fiftieth of the floor
                try:
                    data = conn.recv(65536)
                except TimeoutError:
                    continue
                if not data:
                    break
                response += data
        took = time.monotonic() - started
        if which == "app":
            assert response.startswith(b"HTTP/1.1 408"), response[:300]
            assert b'"the request body did not arrive within 0.3 s (' in response
            assert took < 1.0
        else:
            assert response == b"", response[:300]
            assert 0.4 < took < 1.0, f"the connection was closed after {took:.1f} s"
        conn.close()


def test_a_body_has_a_limit_however_fast_it_comes(monkeypatch):
    """The time a body buys has a ceiling (BODY_MOST_SECONDS): 2 MB sent at the floor
    rate would take 20 s here, and is a 408 naming the 4 s it had."""
    slow_limits(monkeypatch)
    with serving() as port:
        conn = connect(port)
        conn.sendall(request(port, REPLAY_HEAD.replace("{length}", "1999000")))
        started = time.monotonic()
        with contextlib.suppress(OSError):
            send_steadily(conn, b"x" * 1_000_000, 100_000)
        response = read_response(conn)
        assert time.monotonic() - started < 6
        head, _, body = response.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 408"), response[:300]
        assert json.loads(body)["error"].startswith("the request body did not arrive within 4 s (")
        conn.close()


def test_a_connection_asking_in_time_is_served_however_long_it_lasts(monkeypatch):
    """The timer counts each request apart, and not while the app answers: a connection
    whose requests each come in time lasts as long as it likes, and a slow answer is sent."""
    monkeypatch.setattr(web, "REQUEST_SECONDS", 0.5)
    inner = create_app(SessionStore(entropy=0))

    async def slow_agents(scope, receive, send):
        if scope["type"] == "http" and scope["path"] == "/api/agents":
            await asyncio.sleep(0.8)  # longer than the timer
        await inner(scope, receive, send)

    with serving(slow_agents) as port:
        conn = connect(port)
        for _ in range(3):  # 3 x (0.3 s + 0.8 s) on one connection
            time.sleep(0.3)
            conn.sendall(request(port, AGENTS))
            assert read_response(conn).startswith(b"HTTP/1.1 200")
        head = request(port, POST_HEAD.replace("100", "60"))
        conn.sendall(head)
        time.sleep(0.2)  # a body a little behind its headers
        conn.sendall(json.dumps({"seats": [{"person": "Ann"}, {"agent": "random"}]}).encode().ljust(60))
        assert read_response(conn).startswith(b"HTTP/1.1 201")
        conn.close()


def test_a_client_that_leaves_mid_body_is_a_warning_not_a_failure(caplog):
    """A client that left partway through its body was logged as the app failing
    (``POST /api/games failed: ClientDisconnect:``)."""
    app = create_app(SessionStore(entropy=0))
    messages = iter([{"type": "http.request", "body": b"{", "more_body": True}, {"type": "http.disconnect"}])
    sent: list[dict] = []

    async def receive():
        return next(messages)

    async def send(message):
        sent.append(message)

    scope = {
        "type": "http",
        "method": "POST",
        "path": "/api/games",
        "raw_path": b"/api/games",
        "query_string": b"",
        "root_path": "",
        "scheme": "http",
        "server": ("127.0.0.1", 8000),
        "client": ("127.0.0.1", 5000),
        "http_version": "1.1",
        "headers": [(b"host", b"127.0.0.1:8000"), (b"content-type", b"application/json"), (b"content-length", b"100")],
    }
    with caplog.at_level(logging.WARNING, logger="llama_rl.serve"):
        asyncio.run(app(scope, receive, send))
    lines = [(r.levelno, r.getMessage()) for r in caplog.records if r.name == "llama_rl.serve"]
    assert lines == [(logging.WARNING, "POST /api/games: the connection closed before the whole request arrived")]


ENDLESS_ANSWER = """
async def endless(self, request):
    await anyio.sleep(600)
web._App.agents = endless
"""


@pytest.mark.parametrize(
    ("setup", "head", "body", "seconds"),
    [
        ("", POST_HEAD, b"{", 2),  # a request still arriving is closed at once
        (ENDLESS_ANSWER, AGENTS, b"", 2 + web.SHUTDOWN_SECONDS),  # one being answered gets SHUTDOWN_SECONDS
    ],
    ids=["body-stalled", "answer-endless"],
)
def test_ctrl_c_stops_the_server_within_seconds(setup, head, body, seconds):
    """uvicorn waited for every open connection on Ctrl-C: one client holding an
    unfinished request kept the server up for more than 30 s, and so would an answer
    that never ends."""
    sock = web.bind("127.0.0.1", 0)
    port = sock.getsockname()[1]
    sock.close()
    script = (
        "import anyio\n"
        "import train.play.web as web\n"
        "web.REQUEST_SECONDS = web.BODY_SECONDS = 600.0  # only Ctrl-C ends the request\n"
        + textwrap.dedent(setup)
        + f"web.serve(web.bind('127.0.0.1', {port}))\n"
    )
    server = subprocess.Popen([sys.executable, "-c", script], stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                conn = socket.create_connection(("127.0.0.1", port), timeout=0.2)
                break
            except OSError:
                assert time.monotonic() < deadline and server.poll() is None, "the server did not start"
                time.sleep(0.1)
        conn.sendall(request(port, head, body))
        time.sleep(0.5)  # the handler waits for the body, or for ever
        started = time.monotonic()
        server.send_signal(signal.SIGINT)
        try:
            server.wait(timeout=seconds + 10)
        except subprocess.TimeoutExpired:
            pytest.fail(f"the server was still running {seconds + 10} s after Ctrl-C")
        assert time.monotonic() - started < seconds
        conn.close()
    finally:
        if server.poll() is None:
            server.kill()
        server.wait()
        server.stderr.close()  # type: ignore[union-attr]


def test_uvicorn_behaves_as_the_timer_assumes():
    from uvicorn.protocols.http.h11_impl import H11Protocol

    problems = broken_assumptions(H11Protocol)
    assert not problems, (
        f"uvicorn {uvicorn.__version__} no longer behaves as train/play/_uvicorn.py assumes: " + "; ".join(problems)
    )


def test_the_timers_check_names_what_is_gone():
    class Other:  # an uvicorn whose protocol is nothing like today's
        def __init__(self):
            self.request = None

    assert broken_assumptions(Other) == [
        "1: H11Protocol.__init__ does not set 'cycle'",
        "2: H11Protocol has no method data_received",
        "2: H11Protocol.handle_events does not pass on_response_complete to a request",
        "3: RequestResponseCycle.__init__ does not set ['more_body', 'response_complete']",
        "4: H11Protocol has no method shutdown",
    ]


def test_the_server_times_requests_with_the_timer():
    config = web.server_config(create_app(SessionStore(entropy=0)))
    assert config.http.__name__ == "TimelyH11"
    assert config.timeout_graceful_shutdown == web.SHUTDOWN_SECONDS


def test_a_body_that_came_with_its_headers_buys_its_time_too(monkeypatch):
    """The connection's timer counted only the body bytes of reads after the headers': a
    body sent with its headers in one write, then stopped, had its connection closed at
    the headers' limit, with no answer, before the app's 408 (whose limit those bytes had
    raised)."""
    slow_limits(monkeypatch)
    with serving() as port:
        conn = connect(port)
        head = request(port, REPLAY_HEAD.replace("{length}", "1000000"))
        conn.sendall(head + b"x" * 60_000)  # then nothing: the app's limit is 0.3 + 0.6 s
        response = read_response(conn)
        assert response.startswith(b"HTTP/1.1 408"), response[:300]
        assert b"did not arrive within 0.9 s" in response, response[:300]
        conn.close()
