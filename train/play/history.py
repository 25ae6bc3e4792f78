"""The web app's game history: finished games kept in one SQLite file, listed newest
first, replayable, and rated with openskill.

``llama-rl serve`` saves every finished game here (:meth:`History.save`); the page lists
them (:meth:`History.games`), replays one (:meth:`History.record`) and shows who is
strongest (:meth:`History.ratings`). Plain Python and the standard library's
``sqlite3``; ratings need ``openskill`` (the ``web`` and ``train`` extras).

The file (:func:`default_path` unless the user names one) is a SQLite database:

* ``games``: ``id``, ``finished`` (UTC unix seconds), ``players``, ``end_score``,
  ``record``, the game record as JSON (:class:`llama_env.record.GameRecording`), and
  ``options``, the game's rule options as one JSON object by name (``{"end_score": 40,
  "hand_size": 6}``, every option of :class:`llama_env.engine.Rules`; schema 3, filled in
  from each game's record when a file of schema 2 is opened). An option a game's
  ``options`` lacks (one added to the rules after the game was saved) reads as its
  standard value, the rule the game was played by, so a new option needs no change
  here. ``end_score`` is from schemas 1 and 2: it is still written, and ``options`` is
  what is read (SQLite drops a column only from version 3.35, and rebuilding ``games``
  would delete the seats that refer to it); ``digest``, the SHA-256 of the game as rated
  (:func:`_digest`: its record and who sat where as a person, and who left), by which a game
  saved again (the same seeded game watched twice) is found and not stored twice (schema 4,
  filled in for each game when a file of schema 3 is opened);
* ``seats``: per game and seat, the participant's ``name``, its ``kind`` (``person``,
  rated by the name the person typed, whoever else sat at the table, or ``agent``,
  rated by its agent label), the final ``score`` and ``winner`` (lowest score wins;
  ties share the win), and ``forfeit``: the person left the game and an agent finished
  it for them (the person is rated last and wins nothing; schema 2, added to a file of
  schema 1 when it is opened).

Safety: the schema version is ``PRAGMA user_version`` (and ``application_id`` marks the
file as ours); opening runs ``PRAGMA quick_check`` and refuses, in one line naming the
file and what to do, a file that is not a database, is damaged, belongs to another
program or was written by a newer llama-rl (:class:`HistoryError`). The journal is
write-ahead (WAL) with ``synchronous=FULL``, and each save is one transaction: a process
killed at any moment leaves every game it saved whole and none half saved.

Threads: one connection is shared (``check_same_thread=False``) and every call holds
the history's lock while it uses it, so the server's worker threads may call one
``History`` freely; their calls run one at a time, each short. :meth:`History.ratings`
rates outside that lock (the first call after a restart rates every game), so a game
saved meanwhile waits only for its rows to be read. Several processes may open one file: SQLite
locks it, and a writer waits up to :data:`BUSY_TIMEOUT_S` for another.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import logging
import math
import os
import sqlite3
import sys
import threading
import time
from collections.abc import Callable, Collection, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from types import TracebackType
from typing import Any

from llama_env.engine import DEFAULT_RULES, error_line, rule_option_fields, winners
from llama_env.record import GameRecording

log = logging.getLogger("llama_rl.serve")

__all__ = [
    "History",
    "HistoryError",
    "DamagedGameError",
    "UnknownGameError",
    "default_path",
    "SCHEMA_VERSION",
    "MAX_NAME",
    "MAX_LABEL",
    "MAX_RECORD_BYTES",
    "MAX_LIMIT",
    "stayed_winners",
]

SCHEMA_VERSION = 4
"""``PRAGMA user_version`` of the files this module writes."""
APPLICATION_ID = 0x4C4C4D41  # "LLMA": PRAGMA application_id of a LLAMA-RL history
MAX_NAME = 40
"""Longest player name stored, in characters."""
MAX_LABEL = 100
"""Longest agent label stored, in characters."""
MAX_RECORD_BYTES = 1_000_000
"""Largest game record stored (its JSON, UTF-8); a real game needs a few kilobytes."""
MAX_LIMIT = 200
"""Most games one :meth:`History.games` call returns."""
BUSY_TIMEOUT_S = 10.0
"""How long a write waits for another process that holds the file."""
_LAST_TIME = 253402300799.0  # 9999-12-31T23:59:59Z, the last moment datetime can show
_ADVICE = "move it away or start with --history PATH"

_SCHEMA = """
CREATE TABLE games (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    finished REAL NOT NULL,
    players INTEGER NOT NULL,
    end_score INTEGER NOT NULL,
    record TEXT NOT NULL,
    options TEXT NOT NULL DEFAULT '{}',
    digest TEXT
);
CREATE INDEX games_by_finished ON games (finished, id);
CREATE INDEX games_by_digest ON games (digest);
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


def _readable_records(conn: sqlite3.Connection) -> Iterator[tuple[int, Any]]:
    """Each game's id and record read from JSON, one game at a time (SQLite without its
    JSON functions, in older builds, upgrades too, and no history is read whole); a record
    that cannot be read is left out (an upgrade then leaves its game as it was)."""
    for (game_id,) in conn.execute("SELECT id FROM games").fetchall():
        (record,) = conn.execute("SELECT record FROM games WHERE id = ?", (game_id,)).fetchone()
        try:
            data = json.loads(record) if isinstance(record, str) else None
        except (ValueError, RecursionError):
            continue
        yield game_id, data


def _options_from_records(conn: sqlite3.Connection) -> None:
    """Each game's ``options`` as its record's start holds them (a game of schema 2 may
    have been played at another hand size through the API); none, so the standard rules,
    where the record does not say or cannot be read (:func:`_readable_records`)."""
    names = {f.name for f in rule_option_fields()}
    for game_id, data in _readable_records(conn):
        start = data.get("start") if isinstance(data, dict) else None
        if isinstance(start, dict):
            options = {key: value for key, value in start.items() if key in names and type(value) is int}
            conn.execute(
                "UPDATE games SET options = ? WHERE id = ?", (json.dumps(options, separators=(",", ":")), game_id)
            )


def _digest(record: object, people: Sequence[object], forfeit: Sequence[object]) -> str:
    """What tells one saved game from another (``digest``): the SHA-256 of its record
    (JSON data, keys sorted: its deal and rules, moves, names, agents and context) and,
    per seat, whether a person sat there and left. Its finishing time is not in it: the
    same game saved again is the same game."""
    seats = "".join(f"{int(bool(p))}{int(bool(f))}" for p, f in zip(people, forfeit, strict=True))
    text = json.dumps(record, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(f"{seats}\n{text}".encode()).hexdigest()


def _digests_of_records(conn: sqlite3.Connection) -> None:
    """Each game's ``digest`` from its record and seats (:func:`_readable_records`); none
    where the record cannot be read. Games saved twice before schema 4 keep both copies
    (nothing saved is deleted): a later copy finds the first."""
    for game_id, data in _readable_records(conn):
        seats = conn.execute("SELECT kind, forfeit FROM seats WHERE game = ? ORDER BY seat", (game_id,)).fetchall()
        if isinstance(data, dict) and seats:
            digest = _digest(data, [kind == "person" for kind, _ in seats], [f == 1 for _, f in seats])
            conn.execute("UPDATE games SET digest = ? WHERE id = ?", (digest, game_id))


_UPGRADES: dict[int, tuple[str | Callable[[sqlite3.Connection], None], ...]] = {
    1: ("ALTER TABLE seats ADD COLUMN forfeit INTEGER NOT NULL DEFAULT 0 CHECK (forfeit IN (0, 1))",),
    2: ("ALTER TABLE games ADD COLUMN options TEXT NOT NULL DEFAULT '{}'", _options_from_records),
    3: (
        "ALTER TABLE games ADD COLUMN digest TEXT",
        "CREATE INDEX games_by_digest ON games (digest)",
        _digests_of_records,
    ),
}
"""Schema version -> the statements (SQL, or a function of the connection) that bring a
file of it to the next one."""


class HistoryError(ValueError):
    """The history file cannot be used (not a database, damaged, another program's,
    newer than this llama-rl, or a disk error): the message is one line that names the
    file and what to do."""


class DamagedGameError(HistoryError):
    """One saved game cannot be read (its row was damaged outside this module: by hand, a
    broken disk), where the rest of the history can: the message names the file and the
    game for the server's log, and :attr:`game_id` says which game it is."""

    def __init__(self, message: str, game_id: int) -> None:
        super().__init__(message)
        self.game_id = game_id


class UnknownGameError(KeyError):
    """No saved game has this id (a ``KeyError`` whose message reads as a sentence)."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else "unknown game"


def default_path() -> Path:
    """Where the history lives unless the user names a file: ``llama-rl/history.sqlite3``
    in the user's data directory, ``$XDG_DATA_HOME`` (if set to an absolute path, on any
    system), else ``%LOCALAPPDATA%`` on Windows, ``~/Library/Application Support`` on
    macOS and ``~/.local/share`` elsewhere. Nothing is created here; :class:`History`
    creates the folders when it opens the file."""
    xdg = os.environ.get("XDG_DATA_HOME", "")
    if xdg and os.path.isabs(xdg):
        base = Path(xdg)
    elif sys.platform == "win32":
        local = os.environ.get("LOCALAPPDATA", "")
        base = Path(local) if local else Path.home() / "AppData" / "Local"
    elif sys.platform == "darwin":
        base = Path.home() / "Library" / "Application Support"
    else:
        base = Path.home() / ".local" / "share"
    return base / "llama-rl" / "history.sqlite3"


def _one_line(text: object, limit: int = 200) -> str:
    line = " ".join(str(text).split())
    return line if len(line) <= limit else line[: limit - 3] + "..."


def _check_text(value: str, what: str, longest: int | None) -> None:
    if not value.strip() or not value.isprintable():
        raise ValueError(f"{what} must be printable text that is not blank, got {value!r}")
    if longest is not None and len(value) > longest:
        raise ValueError(f"{what} is {len(value)} characters long; at most {longest} are stored: {value[:20]!r}...")


def _iso(t: float) -> str:
    return datetime.fromtimestamp(t, timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")


def context_seat(key: object, n: int) -> int | None:
    """The seat a key of a record's context names (``"0"`` .. ``str(n - 1)``), or None:
    the record comes from a file, so any other key is ignored ("²" passes
    ``str.isdigit()`` and fails ``int()``)."""
    return int(key) if key in {str(p) for p in range(n)} else None


def _names_given(context: dict[str, Any], n: int) -> dict[int, str]:
    """The names people typed, by seat, from a record's ``context["names_given"]`` (the
    web app writes it): the record's own names are the table's display names, which
    tell two seats of one name apart (``Ann#1``, ``Ann#2``) and so depend on who else
    sat there. A person is rated by the name typed; entries that are not a seat and a
    text are ignored."""
    given = context.get("names_given")
    if not isinstance(given, dict):
        return {}
    out = {}
    for key, name in given.items():
        seat = context_seat(key, n)
        if seat is not None and isinstance(name, str) and name.strip():
            _check_text(name, f"seat {key}'s name", MAX_NAME)
            out[seat] = name
    return out


def _whole(finished: object, seats: Sequence[tuple[Any, ...]]) -> bool:
    """Whether a saved game's row holds what this module writes: a finishing time it can
    show, and for each seat a text name and kind, an integer score and 0/1 winner and
    forfeit flags.
    A row damaged outside it (edited by hand, a broken disk) is left out of the lists and
    the ratings, with a warning, instead of failing the whole page."""
    try:
        _iso(finished)  # type: ignore[arg-type]
    except (TypeError, ValueError, OverflowError, OSError):
        return False
    return len(seats) >= 2 and all(
        isinstance(name, str) and isinstance(kind, str) and type(score) is int and {winner, forfeit} <= {0, 1}
        for name, kind, score, winner, forfeit in seats
    )


def _options(stored: object) -> dict[str, int] | None:
    """A saved game's rule options by name from its ``options`` column: each option as
    stored, and the standard value for one it lacks (a game saved before the option
    existed was played by the standard rule); ``None`` where the column is not a JSON
    object of integers (a row damaged outside this module: :meth:`History.games` leaves
    the game out, and the ratings, which read no options, keep it)."""
    try:
        options = json.loads(stored) if isinstance(stored, str) else None
    except (ValueError, RecursionError):
        return None
    if not isinstance(options, dict) or not all(type(value) is int for value in options.values()):
        return None
    return {**DEFAULT_RULES.options(), **options}


def stayed_winners(scores: Sequence[int], forfeit: Collection[int]) -> list[int]:
    """The seats that won as the history counts it: the lowest score among the seats not
    in ``forfeit`` (a person who left ranks last and wins nothing); none where every seat
    is forfeit."""
    stayed = [seat for seat in range(len(scores)) if seat not in forfeit]
    return [stayed[k] for k in winners([scores[seat] for seat in stayed])] if stayed else []


def _seat_flags(value: object, n: int, what: str, question: str) -> list[bool]:
    """``value`` as ``n`` booleans, one per seat, or a ``ValueError`` naming ``what``."""
    if (
        isinstance(value, (str, bytes))
        or not isinstance(value, Sequence)
        or len(value) != n
        or not all(type(x) is bool for x in value)
    ):
        raise ValueError(f"{what} must list {n} booleans (one per seat: {question}), got {value!r}")
    return list(value)


def _warn_damaged(path: Path, game_ids: Sequence[int]) -> None:
    if game_ids:
        log.warning("%s: saved game(s) %s are damaged and left out", path, ", ".join(map(str, game_ids)))


class History:
    """The saved games in the SQLite file at ``path`` (created with its folders if
    missing; see the module docstring for the file's layout and guarantees).

    Raises :class:`HistoryError` when the file cannot serve as a history. Use it as a
    context manager, or call :meth:`close`.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None
        self._rated: _Rated | None = None
        """The ratings of the games read so far, taken on by the next games saved."""
        self._rating = threading.Lock()
        """Held by :meth:`ratings` while it reads and rates (one call at a time, with
        :attr:`_rated`); the file's lock is held only while it reads."""
        if self.path.is_dir():
            raise HistoryError(f"the game history {self.path} is a folder: name a file, or start with --history PATH")
        above = next((p for p in self.path.parents if p.exists()), None)
        if above is not None and not above.is_dir():
            raise HistoryError(
                f"cannot create the folder for the game history {self.path}: {above} is a file, not a folder"
            )
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise HistoryError(
                f"cannot create the folder for the game history {self.path} ({_one_line(exc.strerror or exc)}): "
                "check the path or start with --history PATH"
            ) from None
        try:
            conn = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False)
        except sqlite3.Error as exc:
            raise HistoryError(
                f"cannot open {self.path} as a game history ({_one_line(exc)}): check the path or start with "
                "--history PATH"
            ) from None
        try:
            self._prepare(conn)
        except sqlite3.Error as exc:
            conn.close()
            raise self._open_error(exc) from None
        except BaseException:
            conn.close()
            raise
        self._conn = conn

    # ------------------------------------------------------------------ opening

    def _open_error(self, exc: sqlite3.Error) -> HistoryError:
        message = _one_line(exc)
        if "not a database" in message:
            return HistoryError(f"{self.path} is not a LLAMA-RL game history ({message}): {_ADVICE}")
        if isinstance(exc, sqlite3.DatabaseError) and not isinstance(exc, sqlite3.OperationalError):
            return HistoryError(f"{self.path} is damaged ({message}): {_ADVICE}")
        return HistoryError(
            f"cannot open {self.path} as a game history ({message}): check the path or start with --history PATH"
        )

    def _prepare(self, conn: sqlite3.Connection) -> None:
        """Check the file and bring it to the current schema (see the module docstring)."""
        problems = [row[0] for row in conn.execute("PRAGMA quick_check").fetchall()]
        if problems != ["ok"]:
            raise HistoryError(f"{self.path} is damaged ({_one_line(problems[0] if problems else '?')}): {_ADVICE}")
        conn.execute("PRAGMA trusted_schema = OFF")  # a planted trigger or view cannot call functions
        conn.execute("PRAGMA foreign_keys = ON")
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = FULL")
        with self._transaction(conn):
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            owner = conn.execute("PRAGMA application_id").fetchone()[0]
            if version == 0 and owner == 0:
                if conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]:
                    raise HistoryError(
                        f"{self.path} is not a LLAMA-RL game history (a database of another program): {_ADVICE}"
                    )
                for statement in _SCHEMA.split(";"):  # not executescript: that would commit first
                    if statement.strip():
                        conn.execute(statement)
                conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
                conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
            elif owner != APPLICATION_ID:
                raise HistoryError(
                    f"{self.path} is not a LLAMA-RL game history (a database of another program): {_ADVICE}"
                )
            elif version > SCHEMA_VERSION:
                raise HistoryError(
                    f"{self.path} was written by a newer llama-rl (history schema {version}; this one reads "
                    f"{SCHEMA_VERSION}): upgrade llama-rl or start with --history PATH"
                )
            elif version < 1:
                raise HistoryError(f"{self.path} has no history schema (user_version {version}): {_ADVICE}")
            else:
                for old in range(version, SCHEMA_VERSION):  # in the same transaction: whole or not at all
                    for step in _UPGRADES[old]:
                        if callable(step):
                            step(conn)
                        else:
                            conn.execute(step)
                    conn.execute(f"PRAGMA user_version = {old + 1}")

    @staticmethod
    @contextmanager
    def _transaction(conn: sqlite3.Connection) -> Iterator[None]:
        """One write transaction: taken at once (``BEGIN IMMEDIATE``, so a reader never
        has to upgrade its lock), committed whole or rolled back."""
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")

    @contextmanager
    def _connection(self, doing: str) -> Iterator[sqlite3.Connection]:
        """The connection, held under the lock; a SQLite failure becomes a one-line
        :class:`HistoryError`."""
        with self._lock:
            conn = self._conn
            if conn is None:
                raise HistoryError(f"the game history {self.path} is closed")
            try:
                yield conn
            except sqlite3.Error as exc:
                raise HistoryError(f"cannot {doing} {self.path} ({_one_line(exc)})") from None

    # ------------------------------------------------------------------ writing

    def save(
        self,
        record: dict[str, Any],
        *,
        people: Sequence[bool],
        forfeit: Sequence[bool] | None = None,
        finished: float | None = None,
    ) -> int:
        """Store one finished game; return its id. A game the history holds already (the
        same record, people and forfeits: the same seeded game watched again) is not
        stored or rated twice: the id is the one it was saved under.

        Args:
            record: a game record (:meth:`GameRecording.to_json`) of a game that is over;
                it is checked and replayed, and refused (``ValueError``) if it does not
                replay to the end, or is larger than :data:`MAX_RECORD_BYTES`.
            people: per seat, whether a person sat there (rated by the name typed,
                ``record["context"]["names_given"][str(seat)]``, else the seat's name, at
                most :data:`MAX_NAME` characters) or an agent (rated by its label,
                ``record["agents"][seat]``, at most :data:`MAX_LABEL`). Only what is
                stored is held to these limits: a seat's name in the record is the
                table's, which may be longer (an agent's long spec, ``Ann#2``).
            forfeit: per seat, whether its person left and an agent finished the game
                for them (default: none did); only a person's seat. That person is
                rated last and wins nothing, whatever the seat scored: the seats'
                ``winner`` flags are those of the lowest score among the others.
            finished: when the game ended, UTC unix seconds (default: now).
        """
        try:
            text = json.dumps(record, ensure_ascii=False, allow_nan=False)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"a game record must be JSON data: {exc}") from None
        if len(text.encode()) > MAX_RECORD_BYTES:
            raise ValueError(f"the game record is larger than {MAX_RECORD_BYTES} bytes of JSON")
        rec = GameRecording.from_json(json.loads(text))  # a copy the caller cannot change
        n = len(rec.names)
        people = _seat_flags(people, n, "people", "a person sat there?")
        forfeit = _seat_flags([False] * n if forfeit is None else forfeit, n, "forfeit", "its person left?")
        if any(f and not p for f, p in zip(forfeit, people, strict=True)):
            raise ValueError(f"only a person's seat can be forfeit: people {list(people)}, forfeit {list(forfeit)}")
        given = _names_given(rec.context, n)
        for seat in range(n):
            kept = people[seat] and seat not in given  # (a name typed is checked as it is read)
            _check_text(rec.names[seat], f"seat {seat}'s name", MAX_NAME if kept else None)
            _check_text(rec.agents[seat], f"seat {seat}'s agent label", MAX_LABEL)
        if finished is None:
            finished = time.time()
        elif isinstance(finished, bool) or not isinstance(finished, (int, float)):
            raise ValueError(f"finished must be UTC unix seconds (a number), got {finished!r}")
        finished = float(finished)
        if not (math.isfinite(finished) and 0.0 <= finished <= _LAST_TIME):
            raise ValueError(f"finished must be UTC unix seconds from 0 to {_LAST_TIME:.0f}, got {finished!r}")
        game = rec.replay()
        if not game.game_over:
            raise ValueError(
                f"the game is not over (round {game.round}, scores {game.scores}, {game.rules.brief()}): "
                "only finished games are saved"
            )
        won = set(stayed_winners(game.scores, {seat for seat in range(n) if forfeit[seat]}))
        seats = [
            (
                seat,
                (given.get(seat) or rec.names[seat]) if people[seat] else rec.agents[seat],
                "person" if people[seat] else "agent",
                int(game.scores[seat]),
                int(seat in won),
                int(forfeit[seat]),
            )
            for seat in range(n)
        ]
        data = rec.to_json()
        stored = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
        options = json.dumps(game.rules.options(), separators=(",", ":"))
        digest = _digest(data, people, forfeit)
        with self._connection("save a game to") as conn, self._transaction(conn):
            held = conn.execute("SELECT min(id) FROM games WHERE digest = ?", (digest,)).fetchone()[0]
            if held is not None:
                return int(held)
            cursor = conn.execute(
                "INSERT INTO games (finished, players, end_score, record, options, digest) VALUES (?, ?, ?, ?, ?, ?)",
                (finished, n, game.rules.end_score, stored, options, digest),
            )
            game_id = cursor.lastrowid
            if game_id is None:  # pragma: no cover - sqlite always sets it after an INSERT
                raise HistoryError(f"cannot save a game to {self.path} (no id given)")
            conn.executemany(
                "INSERT INTO seats (game, seat, name, kind, score, winner, forfeit) VALUES (?, ?, ?, ?, ?, ?, ?)",
                [(game_id, *row) for row in seats],
            )
        return game_id

    # ------------------------------------------------------------------ reading

    def count(self) -> int:
        """How many games are saved."""
        with self._connection("read") as conn:
            return int(conn.execute("SELECT count(*) FROM games").fetchone()[0])

    def games(self, limit: int = 50, offset: int = 0) -> list[dict[str, Any]]:
        """The saved games, newest first (by finishing time, then id): ``limit`` of them
        (1..:data:`MAX_LIMIT`) after skipping ``offset``. Each is ``{"id", "finished"``
        (ISO 8601, UTC), ``"players", "options", "seats"}``, ``options`` the game's rule
        options by name (every option of :class:`llama_env.engine.Rules`:
        ``{"end_score": 40, "hand_size": 6}`` for the standard rules), the seats in order
        as ``{"name", "kind", "score", "winner", "forfeit"}``."""
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
            raise ValueError(f"limit must be an integer from 1 to {MAX_LIMIT}, got {limit!r}")
        if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
            raise ValueError(f"offset must be an integer >= 0, got {offset!r}")
        with self._connection("read") as conn:
            conn.execute("BEGIN")  # one snapshot for both queries
            try:
                rows = conn.execute(
                    "SELECT id, finished, players, options FROM games ORDER BY finished DESC, id DESC LIMIT ? OFFSET ?",
                    (limit, offset),
                ).fetchall()
                ids = [row[0] for row in rows]
                seat_rows = conn.execute(
                    "SELECT game, name, kind, score, winner, forfeit FROM seats "
                    f"WHERE game IN ({','.join('?' * len(ids))}) ORDER BY game, seat",
                    ids,
                ).fetchall()
            finally:
                conn.execute("COMMIT")
        raw: dict[int, list[tuple[Any, ...]]] = {i: [] for i in ids}
        for game_id, *seat in seat_rows:
            raw[game_id].append(tuple(seat))
        options = {row[0]: _options(row[3]) for row in rows}
        whole = [row for row in rows if _whole(row[1], raw[row[0]]) and options[row[0]] is not None]
        _warn_damaged(self.path, [row[0] for row in rows if row not in whole])
        return [
            {
                "id": i,
                "finished": _iso(t),
                "players": players,
                "options": options[i],
                "seats": [
                    {"name": n, "kind": k, "score": sc, "winner": bool(w), "forfeit": bool(f)}
                    for n, k, sc, w, f in raw[i]
                ],
            }
            for i, t, players, _ in whole
        ]

    def record(self, game_id: int) -> dict[str, Any]:
        """The record of saved game ``game_id``, as saved (replay it with
        :meth:`GameRecording.from_json`, or read it with :meth:`recording`);
        :class:`UnknownGameError` if there is none, :class:`DamagedGameError` if it is not a
        record of a finished game, as :meth:`save` stores only (it is read and replayed:
        ``{}``, a move the rules refuse)."""
        return self._read(game_id)[0]

    def recording(self, game_id: int) -> GameRecording:
        """Saved game ``game_id`` read, checked as :meth:`record` checks it (its moves replay
        to the game's end; the same errors): :func:`train.play.session.replay` takes it
        without replaying it again."""
        return self._read(game_id)[1]

    def _read(self, game_id: int) -> tuple[dict[str, Any], GameRecording]:
        """Saved game ``game_id``'s record as saved and as read, replayed once to check it."""
        if isinstance(game_id, bool) or not isinstance(game_id, int):
            raise ValueError(f"a game id is an integer, got {game_id!r}")
        with self._connection("read") as conn:
            row = conn.execute("SELECT record FROM games WHERE id = ?", (game_id,)).fetchone()
        if row is None:
            raise UnknownGameError(f"no saved game has id {game_id}")
        try:
            data = json.loads(row[0])
        except (TypeError, ValueError, RecursionError) as exc:
            raise DamagedGameError(
                f"{self.path}: saved game {game_id} is damaged ({error_line(exc, 120)})", game_id
            ) from None
        if not isinstance(data, dict):
            raise DamagedGameError(
                f"{self.path}: saved game {game_id} is damaged (its record is not a JSON object)", game_id
            )
        try:
            rec = GameRecording.from_json(data)
            game = rec.replay()
            if not game.game_over:
                raise ValueError(f"the record stops in round {game.round}, before the game's end")
        except (TypeError, ValueError) as exc:  # (an IllegalActionError is a ValueError)
            raise DamagedGameError(
                f"{self.path}: saved game {game_id} is damaged ({error_line(exc, 120)})", game_id
            ) from None
        return data, rec

    def ratings(self) -> list[dict[str, Any]]:
        """Every participant of the saved games, strongest first: ``{"kind", "name",
        "version", "games", "seats", "wins", "win_share", "mu", "sigma", "ordinal"}``.

        A participant is a kind and a name (the person "heuristic" is not the agent
        "heuristic"), and for an agent the llama-rl version that played it (its record's
        ``context["llama_rl_version"]``, ``None`` where the record does not say): an
        upgrade may change what ``ppo`` plays, so each version of an agent is rated
        apart. A person's ``version`` is ``None``. ``games`` counts the games it played
        and ``seats`` the seats it held in them (an agent may hold several seats of one
        game); ``wins`` counts the games it won or shared; ``win_share`` is its mean share
        of the win per seat held (1/k for k tied winners), so a player as strong as the
        others has 1 / the number of players whatever its seats. A person whose seat is ``forfeit`` ranks
        below every other seat of that game and wins nothing (:meth:`save` gives the win
        to the best of the others).
        The rating is openskill's Plackett-Luce (``ordinal`` = mu - 3 sigma) over all
        games in finishing order, ranked by final score (lower is better, ties equal),
        games of every rule option together (:meth:`games` says each game's options); see
        :class:`train.evaluation.ratings.Rater` for a participant at several seats. The
        games already rated are kept: a call rates only the games saved since (all of them
        again when a game that finished earlier was saved meanwhile). Saving does not wait
        for the rating, only for the rows to be read.
        """
        with self._rating:  # one rating at a time; the file's lock only while the rows are read
            with self._connection("read") as conn:
                conn.execute("BEGIN")  # one snapshot for the count and the rows
                try:
                    total = int(conn.execute("SELECT count(*) FROM games").fetchone()[0])
                    rated, self._rated = self._rated or _Rated(), None  # None until rated whole
                    rows = self._seats_after(conn, rated.last)
                    if rated.games_read + len({row[0] for row in rows}) != total:
                        # a game that finished earlier was saved since (or one was removed): start over
                        rated = _Rated()
                        rows = self._seats_after(conn, rated.last)
                finally:
                    conn.execute("COMMIT")
            # rated outside the file's lock: after a restart the first call rates every
            # game (0.44 s at 6,000 games), and a game finishing meanwhile is saved at once
            _warn_damaged(self.path, rated.take(rows))
            self._rated = rated
            return rated.table()

    @staticmethod
    def _seats_after(conn: sqlite3.Connection, last: tuple[float, int]) -> list[Any]:
        """The seats of the games that finished after ``last`` (finishing time, id), in
        finishing order, each with the version that played the game (``None``: unknown;
        read once a game, in SQLite, from records that are JSON)."""
        versions = dict(
            conn.execute(
                "SELECT id, CASE WHEN json_valid(record) THEN json_extract(record, '$.context.llama_rl_version') END "
                "FROM games WHERE (finished, id) > (?, ?)",
                last,
            ).fetchall()
        )
        rows = conn.execute(
            "SELECT s.game, s.kind, s.name, s.score, s.winner, s.forfeit, g.finished FROM seats AS s "
            "JOIN games AS g ON g.id = s.game WHERE (g.finished, g.id) > (?, ?) ORDER BY g.finished, g.id, s.seat",
            last,
        ).fetchall()
        return [(*row, versions.get(row[0])) for row in rows]

    # ------------------------------------------------------------------ closing

    def close(self) -> None:
        """Close the file (a second call does nothing)."""
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def __enter__(self) -> History:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"History({str(self.path)!r}{', closed' if self._conn is None else ''})"


_Key = tuple[str, str, "str | None"]
"""A rated participant: its kind, its name, and for an agent the version that played it."""


class _Rated:
    """The ratings of a history's games up to one game (``last``: its finishing time and
    id), with each participant's games, wins and win share."""

    def __init__(self) -> None:
        from train.evaluation.ratings import Rater

        self.rater: Rater[_Key] = Rater()
        self.games: dict[_Key, int] = {}
        self.seats: dict[_Key, int] = {}
        self.wins: dict[_Key, int] = {}
        self.shares: dict[_Key, float] = {}
        self.last: tuple[Any, int] = (-1.0, -1)
        self.games_read = 0

    def take(self, rows: Sequence[tuple[int, str, str, int, int, int, float, Any]]) -> list[int]:
        """Rate the games of ``rows`` (their seats, in finishing order); returns the ids
        of the damaged ones, counted as read but not rated. A forfeit seat ranks below
        every other (forfeit seats tie) and its win counts for nobody."""
        damaged = []
        for game_id, group in itertools.groupby(rows, key=lambda row: row[0]):
            game_rows = list(group)
            self.games_read += 1
            self.last = (game_rows[-1][6], game_id)  # (a damaged time still sorts: SQLite orders any value)
            if not _whole(game_rows[-1][6], [(name, kind, *rest) for _, kind, name, *rest, _, _ in game_rows]):
                damaged.append(game_id)
                continue
            version = game_rows[0][7] if isinstance(game_rows[0][7], str) else None
            last = max(row[3] for row in game_rows) + 1
            seats = [
                ((kind, name, version if kind == "agent" else None), last if forfeit else score, winner, bool(forfeit))
                for _, kind, name, score, winner, forfeit, _, _ in game_rows
            ]
            self.rater.rate([key for key, _, _, _ in seats], [rank for _, rank, _, _ in seats])
            k = sum(won for _, _, won, _ in seats)
            for key in {key for key, _, _, _ in seats}:  # one game, even at several seats
                self.games[key] = self.games.get(key, 0) + 1
                self.wins[key] = self.wins.get(key, 0) + any(
                    won and not gone for other, _, won, gone in seats if other == key
                )
            for key, _, won, gone in seats:
                self.seats[key] = self.seats.get(key, 0) + 1
                self.shares[key] = self.shares.get(key, 0.0) + (1.0 / k if won and not gone else 0.0)
        return damaged

    def table(self) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = [
            {
                "kind": key[0],
                "name": key[1],
                "version": key[2],
                "games": self.games[key],
                "seats": self.seats[key],
                "wins": self.wins[key],
                "win_share": self.shares[key] / self.seats[key],
                "mu": r.mu,
                "sigma": r.sigma,
                "ordinal": r.ordinal,
            }
            for key, r in self.rater.ratings().items()
        ]
        out.sort(key=lambda row: (-row["ordinal"], row["kind"], row["name"], row["version"] or ""))
        return out
