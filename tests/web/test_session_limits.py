"""What one request may make the server keep or do: a replayed record's bulky parts are
refused and the record is kept compactly; a body's unknown fields are found without
sorting them all."""

from __future__ import annotations

import gc
import json
import tracemalloc

import pytest
from test_game_history import play_record

from train.play.session import RECORD_PART_BYTES, SessionError, known_fields, replay


def record_with(**parts) -> dict:
    record, _ = play_record(0, ["random", "random"])
    return {**record, **parts}


def test_a_replay_refuses_a_bulky_part_of_its_record_naming_it(client, store):
    """A record of 1.9 MB (under the body limit) whose context held 640,000 empty lists
    was kept parsed: 45 MB of the server's memory per replay, and it stayed."""
    for key, bulky in (
        ("context", {"pad": [[] for _ in range(640_000)]}),
        ("start", {**record_with()["start"], "pad": "x" * RECORD_PART_BYTES}),
        ("names", ["Ann", "x" * RECORD_PART_BYTES]),
    ):
        r = client.post("/api/replays", json=record_with(**{key: bulky}))
        assert r.status_code == 400, (key, r.text)
        assert r.json()["error"].startswith(f"cannot replay this record: its '{key}' is "), r.json()
        assert f"at most {RECORD_PART_BYTES:,}" in r.json()["error"]
    assert len(store) == 0
    fits = record_with(context={"pad": "x" * (RECORD_PART_BYTES - 20)})
    r = client.post("/api/replays", json=fits)
    assert r.status_code == 201, r.text
    again = client.get(f"/api/games/{r.json()['id']}/record", headers={"X-Llama-Token": r.json()["token"]})
    assert again.json() == fits  # the whole record, as it came


def test_a_replay_keeps_its_record_as_compact_text_not_parsed():
    """A context just under the limit, 21,000 empty lists, is 1.4 MB once parsed: a
    replay keeps the record as the text it is (tens of kilobytes)."""
    record = record_with(context={"pad": [[] for _ in range(21_000)]})
    assert len(json.dumps(record["context"], separators=(",", ":"))) < RECORD_PART_BYTES
    text = json.dumps(record)
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        session = replay(json.loads(text))
        gc.collect()
        kept = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert kept < 300_000, f"a replay keeps {kept:,} bytes"
    assert session.recording.to_json() == record
    session.step(None, 5)
    assert session.view(None)["moves_left"] == len(record["moves"]) - 5


def test_a_body_s_first_unknown_field_is_named_without_sorting_them_all(client, monkeypatch):
    """Every key of a body was sorted to name the first unknown one: 150,000 of them held
    the event loop 0.2 s. The first in the body's order is named, and no more are read."""
    body = {"zzz": 1, "aaa": 2, "seats": []}
    r = client.post("/api/games", json=body)
    assert r.status_code == 400 and r.json()["error"].startswith("unknown field 'zzz' (known: seats, seed, ")
    read = []

    class Keys(dict):
        def __iter__(self):
            for key in super().__iter__():
                read.append(key)
                yield key

    many = Keys({"action": 0, **{f"k{i}": 0 for i in range(150_000)}})
    with pytest.raises(SessionError, match=r"^unknown field 'k0' \(known: action, since\)$"):
        known_fields(many, ("action", "since"))
    assert read == ["action", "k0"]
