"""The web app's game history: finished games are saved whole and read back in order,
ratings rank who wins, bad input is refused, and a damaged, foreign or killed-mid-write
file either recovers or is refused in one clear line."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from openskill.models import PlackettLuce

import llama_env.agent as agent_registry
from llama_env.engine import DEFAULT_RULES, LlamaGame, Rules, rule_option_fields
from llama_env.record import GameRecording
from llama_env.table import Table, TableListener
from train.evaluation.ratings import Rater
from train.play import history as history_module
from train.play.history import (
    MAX_LABEL,
    MAX_NAME,
    MAX_RECORD_BYTES,
    SCHEMA_VERSION,
    DamagedGameError,
    History,
    HistoryError,
    UnknownGameError,
    default_path,
)

ROOT = Path(__file__).resolve().parents[2]
T0 = 1_700_000_000.0
SCHEMA_2 = """
CREATE TABLE games (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    finished REAL NOT NULL,
    players INTEGER NOT NULL,
    end_score INTEGER NOT NULL,
    record TEXT NOT NULL
);
CREATE INDEX games_by_finished ON games (finished, id);
CREATE TABLE seats (
    game INTEGER NOT NULL REFERENCES games (id) ON DELETE CASCADE,
    seat INTEGER NOT NULL,
    name TEXT NOT NULL,
    kind TEXT NOT NULL CHECK (kind IN ('person', 'agent')),
    score INTEGER NOT NULL,
    winner INTEGER NOT NULL CHECK (winner IN (0, 1)),
    forfeit INTEGER NOT NULL DEFAULT 0 CHECK (forfeit IN (0, 1)),
    PRIMARY KEY (game, seat)
) WITHOUT ROWID;
CREATE INDEX seats_by_participant ON seats (kind, name);
"""
"""The tables of a history file of schema 2, as llama-rl wrote them (written out: the
module's own schema moves on, and an old file does not)."""
SCHEMA_3 = SCHEMA_2.replace("record TEXT NOT NULL\n", "record TEXT NOT NULL,\n    options TEXT NOT NULL DEFAULT '{}'\n")
"""Schema 3: schema 2 and each game's rule options."""


class _Moves(TableListener):
    def __init__(self) -> None:
        self.moves: list[tuple[int, int]] = []

    def on_move(self, table: Table, seat: int, action: int, drawn: int | None) -> None:
        self.moves.append((seat, action))


def play_record(
    seed: int, players: list[str], *, names: list[str] | None = None, labels: list[str] | None = None, **options: int
):
    """A real finished game among the agents ``players`` (registered names), at the rule
    ``options`` (default: the standard rules), recorded as the web app records it:
    returns (record JSON, final scores)."""
    agents = [agent_registry.make(p) for p in players]
    for seat, a in enumerate(agents):
        agent_registry.reset_agent(a, seed * 10 + seat)
    game = LlamaGame(len(players), rng=seed, **options)
    start = game.to_dict()
    moves = _Moves()
    Table(game, agents, listener=moves).play()
    assert game.game_over
    rec = GameRecording(
        names or [f"player_{p}" for p in range(len(players))], labels or list(players), start, moves.moves
    )
    return rec.to_json(), list(game.scores)


@pytest.fixture(scope="module")
def games():
    """Six finished games, 2 to 4 players; seat 0 is "Ann", a person (played by the
    heuristic), the others are agents."""
    out = []
    for seed in range(6):
        n = 2 + seed % 3
        players = ["heuristic"] + ["random" if p % 2 else "heuristic" for p in range(1, n)]
        labels = ["person"] + players[1:]
        names = ["Ann"] + [f"player_{p}" for p in range(1, n)]
        out.append(play_record(seed, players, names=names, labels=labels))
    return out


@pytest.fixture
def hist(tmp_path):
    with History(tmp_path / "data" / "history.sqlite3") as h:
        yield h


def person_first(record: dict) -> list[bool]:
    return [p == 0 for p in range(len(record["names"]))]


def copy_of(record: dict, k: int) -> dict:
    """``record`` told apart as game ``k`` (its context says so): the history stores a game
    it holds already only once."""
    return dict(record, context={"copy": k})


# --------------------------------------------------------------------------- where it lives


def test_default_path_follows_the_platform(monkeypatch, tmp_path):
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    assert default_path() == tmp_path / "xdg" / "llama-rl" / "history.sqlite3"
    monkeypatch.setenv("XDG_DATA_HOME", "relative/dir")  # not absolute: ignored, as the XDG spec says
    monkeypatch.setattr(history_module.sys, "platform", "linux")
    assert default_path() == tmp_path / ".local" / "share" / "llama-rl" / "history.sqlite3"
    monkeypatch.delenv("XDG_DATA_HOME")
    assert default_path() == tmp_path / ".local" / "share" / "llama-rl" / "history.sqlite3"
    monkeypatch.setattr(history_module.sys, "platform", "darwin")
    assert default_path() == tmp_path / "Library" / "Application Support" / "llama-rl" / "history.sqlite3"
    monkeypatch.setattr(history_module.sys, "platform", "win32")
    monkeypatch.setenv("LOCALAPPDATA", str(tmp_path / "Local"))
    assert default_path() == tmp_path / "Local" / "llama-rl" / "history.sqlite3"
    assert not (tmp_path / "Local").exists(), "default_path creates nothing"


def test_opening_creates_the_folders_and_a_versioned_wal_file(tmp_path):
    path = tmp_path / "a" / "b" / "history.sqlite3"
    with History(path) as h:
        assert h.count() == 0 and h.games() == [] and h.ratings() == []
    con = sqlite3.connect(path)
    try:
        assert con.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        assert con.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    finally:
        con.close()


# --------------------------------------------------------------------------- saving and reading


def test_saved_games_read_back_newest_first_with_scores_and_winners(hist, games):
    ids = [hist.save(record, people=person_first(record), finished=T0 + 60 * k) for k, (record, _) in enumerate(games)]
    assert ids == sorted(ids) and len(set(ids)) == len(games)
    assert hist.count() == len(games)
    listed = hist.games()
    assert [g["id"] for g in listed] == ids[::-1]
    for g, (record, scores) in zip(listed, games[::-1], strict=True):
        assert g["players"] == len(scores) == len(g["seats"])
        assert g["options"] == {f.name: record["start"][f.name] for f in rule_option_fields()}
        best = min(scores)
        assert [s["score"] for s in g["seats"]] == scores
        assert [s["winner"] for s in g["seats"]] == [s == best for s in scores]
        ann = {"name": "Ann", "kind": "person", "score": scores[0], "winner": scores[0] == best, "forfeit": False}
        assert g["seats"][0] == ann
        assert [s["name"] for s in g["seats"][1:]] == record["agents"][1:]
        assert {s["kind"] for s in g["seats"][1:]} == {"agent"}
        # the record comes back as saved and replays to the same end
        back = hist.record(g["id"])
        assert back == record
        assert GameRecording.from_json(back).replay().scores == scores
    assert listed[-1]["finished"] == "2023-11-14T22:13:20Z"  # T0, in UTC


def test_finishing_time_orders_the_list_not_the_id(hist, games):
    late = hist.save(games[0][0], people=person_first(games[0][0]), finished=T0 + 100)
    early = hist.save(games[1][0], people=person_first(games[1][0]), finished=T0)
    assert [g["id"] for g in hist.games()] == [late, early]


def test_paging_is_bounded(hist, games):
    record = games[0][0]
    ids = [hist.save(copy_of(record, k), people=person_first(record), finished=T0 + k) for k in range(7)]
    assert [g["id"] for g in hist.games(limit=3)] == ids[::-1][:3]
    assert [g["id"] for g in hist.games(limit=3, offset=3)] == ids[::-1][3:6]
    assert [g["id"] for g in hist.games(limit=200, offset=6)] == [ids[0]]
    assert hist.games(offset=7) == []
    for bad in ({"limit": 0}, {"limit": 201}, {"limit": True}, {"offset": -1}, {"limit": "5"}):
        with pytest.raises(ValueError):
            hist.games(**bad)


def test_a_missing_game_is_a_key_error_that_names_it(hist):
    with pytest.raises(UnknownGameError) as info:
        hist.record(42)
    assert isinstance(info.value, KeyError) and str(info.value) == "no saved game has id 42"
    with pytest.raises(ValueError, match="integer"):
        hist.record("42")  # type: ignore[arg-type]


def test_the_saved_record_is_a_copy_of_what_was_given(hist, games):
    record = json.loads(json.dumps(games[0][0]))
    game_id = hist.save(record, people=person_first(record), finished=T0)
    record["names"][0] = "Bob"
    assert hist.record(game_id)["names"][0] == "Ann"


def _bad_inputs(record: dict) -> list[tuple[dict, dict, str]]:
    n = len(record["names"])
    unfinished = dict(record, moves=record["moves"][:5])
    long_name = dict(record, names=["x" * (MAX_NAME + 1)] + record["names"][1:])
    long_label = dict(record, agents=record["agents"][:-1] + ["y" * (MAX_LABEL + 1)])
    blank = dict(record, names=["  "] + record["names"][1:])
    newline = dict(record, names=["Ann\nBob"] + record["names"][1:])
    huge = dict(record, padding="z" * MAX_RECORD_BYTES)
    illegal = dict(record, moves=[[1 - record["moves"][0][0], 0]] + record["moves"][1:])
    people = [True] + [False] * (n - 1)
    return [
        (unfinished, {"people": people}, "not over"),
        (long_name, {"people": people}, f"at most {MAX_NAME}"),
        (long_label, {"people": people}, f"at most {MAX_LABEL}"),
        (blank, {"people": people}, "not blank"),
        (newline, {"people": people}, "printable"),
        (huge, {"people": people}, "larger than"),
        (illegal, {"people": people}, "seat"),
        ({"format": "something else"}, {"people": people}, "not a game record"),
        (dict(record, moves=float("nan")), {"people": people}, "JSON"),
        (record, {"people": people[:-1]}, f"list {n} booleans"),
        (record, {"people": [1] + people[1:]}, "booleans"),
        (record, {"people": people, "finished": -1.0}, "unix seconds"),
        (record, {"people": people, "finished": float("inf")}, "unix seconds"),
        (record, {"people": people, "finished": True}, "unix seconds"),
    ]


def test_bad_input_is_refused_and_stores_nothing(hist, games):
    record = games[2][0]
    for bad, kwargs, message in _bad_inputs(record):
        with pytest.raises(ValueError, match=message) as info:
            hist.save(bad, **kwargs)
        assert not isinstance(info.value, HistoryError), "bad input is not a bad file"
    assert hist.count() == 0
    hist.save(record, people=person_first(record))  # and the good one still goes in


def test_threads_share_one_history(hist, games):
    record = games[0][0]
    errors: list[BaseException] = []

    def work(k: int) -> None:
        try:
            for j in range(5):
                hist.save(copy_of(record, k * 10 + j), people=person_first(record), finished=T0 + k * 10 + j)
                hist.games(limit=5)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert hist.count() == 20
    assert len({g["id"] for g in hist.games(limit=200)}) == 20


def test_a_closed_history_says_so(tmp_path):
    h = History(tmp_path / "h.sqlite3")
    h.close()
    h.close()
    with pytest.raises(HistoryError, match="closed"):
        h.count()


# --------------------------------------------------------------------------- ratings


def two_player_results(count: int) -> list[tuple[dict, list[int]]]:
    """Real 2-player games between random agents, without ties."""
    out = []
    seed = 100
    while len(out) < count:
        record, scores = play_record(seed, ["random", "random"])
        seed += 1
        if scores[0] != scores[1]:
            out.append((record, scores))
    return out


def test_an_agent_that_always_wins_is_rated_above_one_that_always_loses(hist):
    for k, (record, scores) in enumerate(two_player_results(6)):
        winner = 0 if scores[0] < scores[1] else 1
        labels = ["champ", "chump"] if winner == 0 else ["chump", "champ"]
        hist.save(dict(record, agents=labels), people=[False, False], finished=T0 + k)
    champ, chump = hist.ratings()
    assert (champ["name"], chump["name"]) == ("champ", "chump")
    assert champ["ordinal"] > chump["ordinal"] and champ["mu"] > 25 > chump["mu"]
    assert champ["ordinal"] == pytest.approx(champ["mu"] - 3 * champ["sigma"])
    assert (champ["games"], champ["wins"], champ["win_share"]) == (6, 6, 1.0)
    assert (chump["games"], chump["wins"], chump["win_share"]) == (6, 0, 0.0)


def test_ratings_are_openskill_over_the_games_in_finishing_order(hist, games):
    # saved out of order: the ratings follow the finishing time
    order = [3, 0, 5, 1, 4, 2]
    for k in order:
        record = games[k][0]
        hist.save(record, people=person_first(record), finished=T0 + k)
    model = PlackettLuce()
    current: dict[tuple[str, str], Any] = {}
    played: dict[tuple[str, str], int] = {}
    for record, scores in games:  # finishing order is the fixture's order
        seated = [("person", "Ann")] + [("agent", label) for label in record["agents"][1:]]
        for key in set(seated):
            played[key] = played.get(key, 0) + 1
        # every seat rated from the rating its participant came with; then the mean
        teams = [
            [model.rating(mu=current[k].mu, sigma=current[k].sigma) if k in current else model.rating()] for k in seated
        ]
        new = model.rate(teams, ranks=[float(s) for s in scores])
        for key in set(seated):
            mine = [team[0] for k, team in zip(seated, new, strict=True) if k == key]
            current[key] = model.rating(
                mu=sum(r.mu for r in mine) / len(mine), sigma=sum(r.sigma for r in mine) / len(mine)
            )
    rows = hist.ratings()
    assert [r["ordinal"] for r in rows] == sorted((r["ordinal"] for r in rows), reverse=True)
    assert {(r["kind"], r["name"]) for r in rows} == set(current)
    for r in rows:
        want = current[(r["kind"], r["name"])]
        assert r["mu"] == pytest.approx(want.mu) and r["sigma"] == pytest.approx(want.sigma)
        assert r["games"] == played[(r["kind"], r["name"])]
    # the shares of the win add up to one per game; wins count shared wins
    assert sum(r["win_share"] * r["seats"] for r in rows) == pytest.approx(len(games))
    assert sum(r["wins"] for r in rows) >= len(games)


def test_ratings_read_only_the_games_saved_since_and_start_over_when_an_earlier_one_comes(hist, games, tmp_path):
    """The ratings of the games read are kept (every look at the history rated every game:
    half a second at 9,500 games); after each save they are those of a fresh reading of
    the file, also when a game that finished before the others is saved, or when another
    process (a second History on the file) saves."""
    other = History(hist.path)
    try:
        for step, (k, writer) in enumerate([(0, hist), (2, hist), (1, other), (5, hist), (3, other), (4, hist)]):
            record = games[k][0]
            writer.save(record, people=person_first(record), finished=T0 + k)  # 1 and 3 finish before the last
            fresh = History(hist.path)
            try:
                assert hist.ratings() == fresh.ratings(), f"after save {step}"
            finally:
                fresh.close()
        assert hist._rated is not None and hist._rated.games_read == len(games)
    finally:
        other.close()


def test_a_game_is_saved_while_the_ratings_are_computed(hist, games, monkeypatch):
    """The first ratings after a restart rate every game (0.44 s at 6,000 games); a game
    finishing meanwhile waited for all of it under the file's lock. It waits only for
    the rows to be read: here a save completes while the rating is held up."""
    record = games[0][0]
    hist.save(record, people=person_first(record), finished=T0)
    rating, saved = threading.Event(), threading.Event()
    take = history_module._Rated.take

    def slow_take(self, rows):
        rating.set()
        saved.wait(10)  # the old code: the save below waited for this, 10 s
        return take(self, rows)

    monkeypatch.setattr(history_module._Rated, "take", slow_take)
    rows: list = []
    reader = threading.Thread(target=lambda: rows.extend(hist.ratings()))
    reader.start()
    assert rating.wait(10)
    hist.save(copy_of(record, 1), people=person_first(record), finished=T0 + 1)
    held_up = reader.is_alive()
    saved.set()
    reader.join()
    assert held_up, "the save waited for the rating"
    assert {r["games"] for r in rows} == {1}  # the snapshot read before the save
    assert {r["games"] for r in hist.ratings()} == {2}


def test_a_person_and_an_agent_with_one_name_are_two_participants(hist):
    record, scores = two_player_results(1)[0]
    record = dict(record, names=["heuristic", "player_1"], agents=["person", "heuristic"])
    hist.save(record, people=[True, False], finished=T0)
    rows = hist.ratings()
    assert sorted((r["kind"], r["name"]) for r in rows) == [("agent", "heuristic"), ("person", "heuristic")]
    assert all(r["games"] == 1 for r in rows)
    assert sorted(r["wins"] for r in rows) == [0, 1]


def test_one_agent_at_several_seats_plays_one_game_and_ties_share_the_win(hist):
    # the first real 3-player game whose lowest score is shared; seats 1 and 2 are
    # both the agent "random"
    for seed in range(1000):  # pragma: no branch - about one game in a hundred ties
        names, labels = ["Ann", "player_1", "player_2"], ["person", "random", "random"]
        record, scores = play_record(seed, ["heuristic", "random", "random"], names=names, labels=labels)
        if scores.count(min(scores)) > 1:
            break
    won = [s == min(scores) for s in scores]
    k = sum(won)
    hist.save(record, people=[True, False, False], finished=T0)
    (game,) = hist.games()
    assert [s["winner"] for s in game["seats"]] == won
    rows = {(r["kind"], r["name"]): r for r in hist.ratings()}
    assert set(rows) == {("person", "Ann"), ("agent", "random")}
    ann, agent = rows["person", "Ann"], rows["agent", "random"]
    assert ann["games"] == agent["games"] == 1 and (ann["seats"], agent["seats"]) == (1, 2)
    assert (ann["wins"], agent["wins"]) == (int(won[0]), int(won[1] or won[2]))
    assert ann["win_share"] == pytest.approx(won[0] / k)
    assert agent["win_share"] == pytest.approx((won[1] + won[2]) / k / 2)  # per seat: an even player's is 1/3
    assert ann["win_share"] + 2 * agent["win_share"] == pytest.approx(1.0)


def test_the_rater_rates_as_openskill_when_every_seat_is_someone_else():
    rater: Rater[str] = Rater(["a", "b", "c"])
    rater.rate(["b", "a"], [10, 3])
    model = PlackettLuce()
    (b,), (a,) = model.rate([[model.rating()], [model.rating()]], ranks=[10.0, 3.0])
    got = rater.ratings()
    assert list(got) == ["a", "b", "c"]
    assert (got["a"].mu, got["b"].mu, got["c"].mu) == (a.mu, b.mu, 25.0)
    with pytest.raises(ValueError, match="one score per seat"):
        rater.rate(["a"], [1, 2])


def test_a_participant_at_several_seats_takes_the_mean_of_its_seats_ratings():
    """What the Rater's docstring says, against openskill itself: each seat rated from the
    same rating, then the mean of the seats' mu and sigma (a mutation audit: the
    smallest sigma instead passed)."""
    rater: Rater[str] = Rater()
    rater.rate(["a", "b", "a"], [3, 10, 20])
    model = PlackettLuce()
    (a1,), (b,), (a2,) = model.rate([[model.rating()], [model.rating()], [model.rating()]], ranks=[3.0, 10.0, 20.0])
    got = rater.ratings()
    assert got["a"].mu == pytest.approx((a1.mu + a2.mu) / 2) and got["b"].mu == pytest.approx(b.mu)
    assert got["a"].sigma == pytest.approx((a1.sigma + a2.sigma) / 2)
    assert a1.sigma != pytest.approx(a2.sigma)  # so the mean is not either seat's


# --------------------------------------------------------------------------- bad files


def check_one_line(exc: HistoryError, path: Path, *words: str) -> None:
    text = str(exc)
    assert "\n" not in text and str(path) in text
    for word in words:
        assert word in text, text
    # no sqlite traceback chained under it
    assert exc.__cause__ is None and (exc.__context__ is None or exc.__suppress_context__)


def test_a_file_of_garbage_is_refused_in_one_line(tmp_path):
    path = tmp_path / "history.sqlite3"
    path.write_bytes(bytes(range(256)) * 40)
    with pytest.raises(HistoryError) as info:
        History(path)
    check_one_line(info.value, path, "is not a LLAMA-RL game history", "not a database", "--history PATH")
    assert isinstance(info.value, ValueError)


def test_a_truncated_database_is_refused_in_one_line(tmp_path, games):
    path = tmp_path / "history.sqlite3"
    with History(path) as h:
        for k in range(30):
            record = games[k % len(games)][0]
            h.save(record, people=person_first(record), finished=T0 + k)
    size = path.stat().st_size
    assert size >= 8 * 4096 and not Path(f"{path}-wal").exists()
    with open(path, "r+b") as f:
        f.truncate(size // 2)
    with pytest.raises(HistoryError) as info:
        History(path)
    check_one_line(info.value, path, "damaged", "move it away")


def test_a_newer_schema_and_another_programs_database_are_refused(tmp_path, games):
    newer = tmp_path / "newer.sqlite3"
    History(newer).close()
    con = sqlite3.connect(newer)
    con.execute("PRAGMA user_version = 99")
    con.close()
    with pytest.raises(HistoryError) as info:
        History(newer)
    check_one_line(info.value, newer, "newer llama-rl", "schema 99", "upgrade")

    other = tmp_path / "other.sqlite3"
    con = sqlite3.connect(other)
    con.execute("CREATE TABLE notes (text TEXT)")
    con.commit()
    con.close()
    with pytest.raises(HistoryError) as info:
        History(other)
    check_one_line(info.value, other, "not a LLAMA-RL game history", "another program")


def test_a_path_that_cannot_be_a_file_is_refused_in_one_line(tmp_path):
    folder = tmp_path / "a folder"
    folder.mkdir()
    with pytest.raises(HistoryError) as info:
        History(folder)
    check_one_line(info.value, folder, "is a folder: name a file")  # it read "unable to open database file"
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(HistoryError) as info:
        History(blocker / "history.sqlite3")
    check_one_line(info.value, blocker / "history.sqlite3", "cannot create the folder", "is a file, not a folder")


SAVER = """
import json, sys
from train.play.history import History
record = json.loads(open(sys.argv[2]).read())
people = [p == 0 for p in range(len(record["names"]))]
with History(sys.argv[1]) as h:
    k = 0
    while True:
        print(h.save(dict(record, context={"copy": k}), people=people, finished=1.7e9 + k), flush=True)
        k += 1
"""


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL (POSIX)")
def test_a_process_killed_while_saving_loses_no_saved_game(tmp_path, games):
    path = tmp_path / "history.sqlite3"
    record = games[4][0]
    (tmp_path / "record.json").write_text(json.dumps(record))
    proc = subprocess.Popen(
        [sys.executable, "-c", SAVER, str(path), str(tmp_path / "record.json")],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    saved = []
    try:
        assert proc.stdout is not None
        while len(saved) < 25:
            line = proc.stdout.readline()
            assert line, f"the saver stopped: {proc.stderr.read() if proc.stderr else ''}"
            saved.append(int(line))
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        assert proc.stdout is not None and proc.stderr is not None
        proc.stdout.close()
        proc.stderr.close()
    assert proc.returncode == -signal.SIGKILL
    con = sqlite3.connect(path)
    try:
        assert con.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    finally:
        con.close()
    with History(path) as h:
        count = h.count()
        assert count >= len(saved)
        listed = h.games(limit=200)
        assert len(listed) == count
        assert set(saved) <= {g["id"] for g in listed}
        for g in listed:  # every game whole: all its seats and its record
            assert len(g["seats"]) == g["players"] == len(record["names"])
            assert h.record(g["id"]) == dict(record, context={"copy": g["id"] - 1})
        new = h.save(copy_of(record, -1), people=person_first(record))
        assert new > max(saved) and h.count() == count + 1


def test_a_damaged_row_is_left_out_with_a_warning_and_its_record_is_named(hist, games, caplog):
    """A row damaged outside the module (by hand, a broken disk) failed the whole list and
    the ratings with a bare 500, and its record with a JSON traceback."""
    ids = [hist.save(record, people=person_first(record), finished=T0 + 60 * k) for k, (record, _) in enumerate(games)]
    with sqlite3.connect(hist.path) as conn:
        conn.execute("UPDATE seats SET score = 'abc' WHERE game = ?", (ids[1],))
        conn.execute("UPDATE games SET finished = 'yesterday' WHERE id = ?", (ids[2],))
        conn.execute("UPDATE games SET finished = 1e300 WHERE id = ?", (ids[3],))
        conn.execute("UPDATE games SET record = '{\"start\": ' WHERE id = ?", (ids[4],))
        conn.execute("DELETE FROM seats WHERE game = ? AND seat > 0", (ids[5],))  # a table of one: rated, a 500
    caplog.set_level("WARNING", logger="llama_rl.serve")
    assert [g["id"] for g in hist.games()] == [ids[4], ids[0]]
    rated = hist.ratings()
    assert next(r for r in rated if r["name"] == "Ann")["games"] == 2  # the two whole games
    assert hist.ratings() == rated  # counted as read: not rated again and again
    assert "are damaged and left out" in caplog.text and str(ids[1]) in caplog.text
    with pytest.raises(HistoryError, match=rf"saved game {ids[4]} is damaged \("):
        hist.record(ids[4])


def test_a_saved_record_that_is_no_finished_game_is_damaged(hist, games):
    """A row whose record was a JSON object but no game record (``{}``) was handed out as
    saved: GET /api/history/N answered it, and its replay said "cannot replay this record:
    not a game record", as if the page had sent it. A record is read as :meth:`save` stores
    it only, a record of a finished game; else it is a DamagedGameError naming the game."""
    record = games[0][0]
    whole = hist.save(record, people=person_first(record), finished=T0)
    moves = record["moves"]
    broken = {
        "{}": "not a game record",
        json.dumps(dict(record, names=["Ann"])): "'names' must list",
        json.dumps(dict(record, moves=moves[:-1])): "before the game's end",
        json.dumps(dict(record, moves=[[(moves[0][0] + 1) % len(record["names"]), moves[0][1]], *moves[1:]])): "move 0",
    }
    for k, (text, why) in enumerate(broken.items()):
        game_id = hist.save(dict(record, context={"copy": k}), people=person_first(record), finished=T0)
        with sqlite3.connect(hist.path) as conn:
            conn.execute("UPDATE games SET record = ? WHERE id = ?", (text, game_id))
        with pytest.raises(DamagedGameError) as info:
            hist.record(game_id)
        assert info.value.game_id == game_id and str(info.value).startswith(
            f"{hist.path}: saved game {game_id} is damaged ("
        ), str(info.value)
        assert why in str(info.value), (why, str(info.value))
    assert hist.record(whole) == record


def _without_json_functions(connect):  # type: ignore[no-untyped-def]
    """``sqlite3.connect`` for a SQLite built without its JSON functions (before 3.38 they
    were an option): each of them fails."""

    def missing(*args):  # type: ignore[no-untyped-def]
        raise sqlite3.OperationalError("no such function")

    def connecting(*args, **kwargs):  # type: ignore[no-untyped-def]
        conn = connect(*args, **kwargs)
        for name, arity in (("json_valid", 1), ("json_extract", 2), ("json", 1)):
            conn.create_function(name, arity, missing)
        return conn

    return connecting


def test_a_history_of_schema_2_takes_each_games_rule_options_from_its_record_when_opened(tmp_path):
    """Schema 2 kept a game's end score and no other option: a game played at another hand
    size (the API took one) was listed as a standard one. Opening the file fills in each
    game's options from its record; a record that does not say (not JSON) reads as the
    standard rules. Games of every option are rated together."""
    small = Rules(2, end_score=15, hand_size=3)
    played = [
        play_record(0, ["heuristic", "random"]),
        play_record(1, ["heuristic", "random"], **small.options()),
        play_record(2, ["heuristic", "random"]),
    ]
    assert [len(hand) for hand in played[1][0]["start"]["hands"]] == [3, 3]
    path = tmp_path / "old.sqlite3"
    con = sqlite3.connect(path)
    con.executescript(SCHEMA_2)
    con.execute(f"PRAGMA application_id = {history_module.APPLICATION_ID}")
    con.execute("PRAGMA user_version = 2")
    for game_id, (record, scores) in enumerate(played, 1):
        text = "not JSON" if game_id == 3 else json.dumps(record)
        con.execute("INSERT INTO games VALUES (?, ?, 2, ?, ?)", (game_id, T0 + game_id, 40, text))
        for seat, (name, score) in enumerate(zip(record["agents"], scores, strict=True)):
            won = int(score == min(scores))
            con.execute("INSERT INTO seats VALUES (?, ?, ?, 'agent', ?, ?, 0)", (game_id, seat, name, score, won))
    con.commit()
    con.close()
    with pytest.MonkeyPatch.context() as patch:  # the upgrade needs none of SQLite's JSON functions
        patch.setattr(history_module.sqlite3, "connect", _without_json_functions(sqlite3.connect))
        with History(path) as hist:
            listed = {g["id"]: g["options"] for g in hist.games()}
    assert listed == {1: DEFAULT_RULES.options(), 2: small.options(), 3: DEFAULT_RULES.options()}
    with History(path) as hist:
        new = hist.save(copy_of(played[1][0], 1), people=[False, False], finished=T0 + 10)
        (latest,) = hist.games(limit=1)
        assert (latest["id"], latest["options"]) == (new, small.options())
        assert [r["games"] for r in hist.ratings() if r["name"] == "random"] == [4]
    con = sqlite3.connect(path)
    assert con.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 4
    assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    con.close()


def test_a_game_saved_again_is_stored_and_rated_once(hist, games):
    """The same seeded game watched twice in the web app was saved, listed and rated twice.
    A game the history holds (the same record, people and forfeits; whenever it finished)
    is not stored again: its save returns the id it was saved under. A game that differs in
    any of them is a game of its own."""
    record = games[0][0]
    first = hist.save(record, people=person_first(record), finished=T0)
    assert hist.save(json.loads(json.dumps(record)), people=person_first(record), finished=T0 + 60) == first
    assert hist.count() == 1 and [g["id"] for g in hist.games()] == [first]
    assert {r["games"] for r in hist.ratings()} == {1}
    n = len(record["names"])
    others = [
        hist.save(record, people=[False] * n, finished=T0 + 1),  # Ann's seat an agent's
        hist.save(record, people=person_first(record), forfeit=person_first(record), finished=T0 + 2),  # Ann left
        hist.save(copy_of(record, 1), people=person_first(record), finished=T0 + 3),  # another context
    ]
    assert len({first, *others}) == 4 and hist.count() == 4


def test_a_history_of_schema_3_finds_the_games_it_holds_when_opened(tmp_path):
    """Opening a file of schema 3 gives each of its games a digest, so that a game it holds
    is not saved again; games saved twice before keep both copies (nothing saved is
    deleted), and a record that cannot be read gets none."""
    played = [play_record(seed, ["heuristic", "random"]) for seed in range(2)]
    path = tmp_path / "old.sqlite3"
    con = sqlite3.connect(path)
    con.executescript(SCHEMA_3)
    con.execute(f"PRAGMA application_id = {history_module.APPLICATION_ID}")
    con.execute("PRAGMA user_version = 3")
    options = json.dumps(DEFAULT_RULES.options())
    for game_id, (record, scores) in enumerate([played[0], played[0], played[1]], 1):
        text = "not JSON" if game_id == 3 else json.dumps(record)
        con.execute("INSERT INTO games VALUES (?, ?, 2, 40, ?, ?)", (game_id, T0 + game_id, text, options))
        for seat, (name, score) in enumerate(zip(record["agents"], scores, strict=True)):
            won = int(score == min(scores))
            con.execute("INSERT INTO seats VALUES (?, ?, ?, 'agent', ?, ?, 0)", (game_id, seat, name, score, won))
    con.commit()
    con.close()
    with History(path) as hist:
        assert hist.save(played[0][0], people=[False, False], finished=T0 + 10) == 1
        assert hist.count() == 3
        assert hist.save(played[1][0], people=[False, False], finished=T0 + 11) == 4  # game 3 cannot be read
    con = sqlite3.connect(path)
    assert con.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 4
    unfound = [digest is None for (digest,) in con.execute("SELECT digest FROM games ORDER BY id")]
    assert unfound == [False, False, True, False]
    assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    con.close()


def test_an_option_a_saved_game_lacks_reads_as_the_standard_rule_and_damaged_options_are_left_out(hist, games, caplog):
    """A game saved before an option existed was played by its standard rule (so a new
    option needs no new schema); options damaged outside the module leave the game out of
    the list, with a warning, as any damaged row."""
    ids = [hist.save(record, people=person_first(record), finished=T0 + k) for k, (record, _) in enumerate(games[:5])]
    with sqlite3.connect(hist.path) as conn:
        for game_id, options in zip(ids, ["{}", '{"hand_size": 4}', "x", '{"hand_size": "4"}', "[4]"], strict=True):
            conn.execute("UPDATE games SET options = ? WHERE id = ?", (options, game_id))
    caplog.set_level("WARNING", logger="llama_rl.serve")
    listed = {g["id"]: g["options"] for g in hist.games()}
    assert listed == {ids[0]: DEFAULT_RULES.options(), ids[1]: {**DEFAULT_RULES.options(), "hand_size": 4}}
    assert "are damaged and left out" in caplog.text and ", ".join(map(str, ids[:1:-1])) in caplog.text


def test_a_person_is_rated_by_the_name_typed_whoever_else_sits_at_the_table(hist):
    """The table's display names tell two seats of one name apart, so a person called
    "ppo" facing the agent ppo was "ppo#1" there and "ppo" elsewhere: two ratings for one
    person. The web app now writes the typed names into the record's context."""
    from train.play.session import AgentPolicy, new_game

    session = new_game({"seats": [{"person": "ppo"}, {"agent": "ppo"}]}, policy=AgentPolicy())
    assert session.names == ["ppo#1", "ppo#2"] and session.context["names_given"] == {"0": "ppo"}
    for seed in range(2):
        record, _ = play_record(seed, ["heuristic", "random"], names=["ppo#1", "random"], labels=["person", "random"])
        record["context"] = {"names_given": {"0": "ppo"}}
        hist.save(record, people=[True, False], finished=T0 + seed)
    record, _ = play_record(2, ["heuristic", "random"], names=["ppo", "random"], labels=["person", "random"])
    hist.save(record, people=[True, False], finished=T0 + 2)
    people = [r for r in hist.ratings() if r["kind"] == "person"]
    assert [(r["name"], r["games"]) for r in people] == [("ppo", 3)]
    assert {s["name"] for g in hist.games() for s in g["seats"] if s["kind"] == "person"} == {"ppo"}


def test_the_ratings_table_counts_a_shared_win_once_and_ranks_by_ordinal():
    """A mutation audit: an agent winning at two tied seats was credited two wins in one
    game, and a table sorted by mu instead of the ordinal (mu - 3 sigma) passed."""
    from train.play.history import _Rated

    tied = _Rated()
    tied.take(
        [
            (1, "agent", "random", 5, 1, 0, T0, "v"),
            (1, "agent", "random", 5, 1, 0, T0, "v"),
            (1, "person", "Ann", 9, 0, 0, T0, "v"),
        ]
    )
    row = next(r for r in tied.table() if r["name"] == "random")
    assert (row["games"], row["seats"], row["wins"], row["win_share"]) == (1, 2, 1, 0.5)  # half the seats won
    rows = []
    for k in range(30):  # Y wins four games in five against Z: well measured
        win = k % 5 != 0
        rows += [(k, "agent", "Y", 10 * (not win), int(win), 0, T0 + k, None)]
        rows += [(k, "agent", "Z", 10 * win, int(not win), 0, T0 + k, None)]
    for j in range(2):  # X beats Y twice: a higher mu, but less sure
        rows += [
            (30 + j, "agent", "X", 0, 1, 0, T0 + 100 + j, None),
            (30 + j, "agent", "Y", 10, 0, 0, T0 + 100 + j, None),
        ]
    ranked = _Rated()
    ranked.take(rows)
    table = ranked.table()
    by_name = {r["name"]: r for r in table}
    assert by_name["X"]["mu"] > by_name["Y"]["mu"] and by_name["X"]["ordinal"] < by_name["Y"]["ordinal"]
    assert [r["name"] for r in table] == ["Y", "X", "Z"]


def test_each_version_of_an_agent_is_rated_apart_and_people_across_versions_together(hist):
    """An upgrade may change what an agent plays: the history rated "random" of every
    version as one participant. The version comes from the record's context (the web
    app writes it); a record that does not say is its own, unknown version."""
    versions = ["0.2.0", "0.2.0", "0.3.0", None]
    for seed, version in enumerate(versions):
        record, _ = play_record(seed, ["heuristic", "random"], names=["Ann", "random"], labels=["person", "random"])
        if version is not None:
            record["context"] = {"llama_rl_version": version}
        hist.save(record, people=[True, False], finished=T0 + seed)
    rows = hist.ratings()
    agents = sorted((r["version"] or "", r["games"]) for r in rows if r["kind"] == "agent")
    assert agents == [("", 1), ("0.2.0", 2), ("0.3.0", 1)]
    (ann,) = [r for r in rows if r["kind"] == "person"]
    assert ann["games"] == 4 and ann["version"] is None
    with sqlite3.connect(hist.path) as conn:  # a record that is not JSON names no version, and fails nothing
        conn.execute("UPDATE games SET record = 'not json' WHERE finished = ?", (T0 + 3,))
    with History(hist.path) as fresh:  # read from the file again
        assert sum(r["games"] for r in fresh.ratings() if r["kind"] == "agent") == 4
