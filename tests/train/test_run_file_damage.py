"""A run directory's own files, damaged by hand or by a disk, never stop a trainer with a
traceback, and never after it trained: JSON-lines files with bytes that are no UTF-8,
locks whose numbers are out of every range."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time

import pytest

from train.training.run_dir import RunDir, RunDirError


def _run(tmp_path) -> RunDir:
    run = RunDir(tmp_path / "run")
    run.create(fresh=True)
    return run


def test_a_session_row_is_added_after_lines_that_are_no_utf8(tmp_path):
    """One byte 0xff in sessions.jsonl failed the end of a resumed session ("'utf-8' codec
    can't decode byte 0xff", naming no file) after its checkpoints were written: its row
    was lost and its config.resume_1.json left without one. The lines there are kept."""
    run = _run(tmp_path)
    old = b'{"started_at_step": 0, "ended_at_step": 2048, "config": "config.json"}\n\xff\xfe not text\n{"cut'
    run.sessions_path.write_bytes(old)
    run.append_session(2048, 4096, "config.resume_1.json", None, False)
    data = run.sessions_path.read_bytes()
    assert data.startswith(old + b"\n")
    row = json.loads(data.splitlines()[-1])
    assert (row["started_at_step"], row["ended_at_step"], row["config"]) == (2048, 4096, "config.resume_1.json")


def test_rows_past_a_resume_are_dropped_beside_lines_that_are_no_utf8(tmp_path):
    """A resume drops the evaluations a killed session wrote past its step (before it
    trains); a line of eval.jsonl that is no UTF-8 failed it. Such a line is not ours to
    judge: it is kept, byte for byte."""
    run = _run(tmp_path)
    rows = [b'{"timesteps": 1024}\n', b"\xff bad\n", b'{"timesteps": 4096}\n', b'{"timesteps": 2048}\n']
    run.eval_path.write_bytes(b"".join(rows))
    run.drop_rows_after(run.eval_path, "timesteps", 2048)
    assert run.eval_path.read_bytes() == rows[0] + rows[1] + rows[3]
    run.append_eval({"timesteps": 3072})
    assert run.eval_path.read_bytes().endswith(b'\xff bad\n{"timesteps": 2048}\n{"timesteps": 3072}\n')


@pytest.mark.parametrize(
    "held",
    [
        {"pid": 10**20, "since": 0},  # OverflowError in os.kill
        {"pid": 0, "since": 0},
        {"pid": -5, "since": 0},
        {"pid": True, "since": 0},
        {"pid": "1", "since": 0},
        {"since": 0},
    ],
    ids=repr,
)
def test_a_lock_whose_pid_is_out_of_range_is_unreadable_not_a_traceback(held, tmp_path):
    """A lock holds a process id (1..2**31-1); any other is damage, handled as an
    unreadable lock is: in use while it is young (it may be being written), taken over
    with a warning once old."""
    run = _run(tmp_path)
    run.lock_path.write_text(json.dumps({**held, "host": socket.gethostname()}))
    with (
        pytest.raises(RunDirError, match="is in use by another trainer \\(its lock .* is being written\\)"),
        run.lock(),
    ):
        pass
    os.utime(run.lock_path, (time.time() - 60, time.time() - 60))
    with pytest.warns(RuntimeWarning, match="taking over a stale lock"), run.lock():
        assert json.loads(run.lock_path.read_text())["pid"] == os.getpid()
    assert not run.lock_path.exists()


_SINCE_NO_CLOCK_SHOWS = [1e300, -1e300, float("nan"), "yesterday", None, True, [1], "missing"]


@pytest.mark.parametrize("since", _SINCE_NO_CLOCK_SHOWS, ids=repr)
def test_a_live_trainers_lock_is_kept_whatever_its_since_holds(since, tmp_path):
    """The time is only shown: a lock whose process runs is refused, young or old, with
    "since ?" where no clock shows its time (1e300 was an OverflowError traceback; taking
    it over put two trainers in one run directory)."""
    run = _run(tmp_path)
    live = os.getppid()  # alive while this test runs, and not this process
    held = {"pid": live, "host": socket.gethostname()} | ({} if since == "missing" else {"since": since})
    run.lock_path.write_text(json.dumps(held))
    kept = run.lock_path.read_bytes()
    for age in (0, 60):
        os.utime(run.lock_path, (time.time() - age, time.time() - age))
        with (
            pytest.raises(RunDirError, match=f"in use by another trainer \\(process {live}, since \\?\\)"),
            run.lock(),
        ):
            pass
    assert run.lock_path.read_bytes() == kept


def test_a_dead_trainers_lock_with_a_since_no_clock_shows_is_taken_over_naming_its_process(tmp_path):
    """Left by a process that is gone, the lock is stale whatever its time, and the warning
    names that process (it said "process -1")."""
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    run = _run(tmp_path)
    run.lock_path.write_text(json.dumps({"pid": gone.pid, "host": socket.gethostname(), "since": 1e300}))
    with pytest.warns(RuntimeWarning, match=f"stale lock left by process {gone.pid},"), run.lock():
        assert json.loads(run.lock_path.read_text())["pid"] == os.getpid()


def test_a_lock_made_unreadable_while_it_is_held_is_left_in_place(tmp_path):
    """On release the lock is removed only if it is still this trainer's: one overwritten
    with bytes that are no UTF-8 raised UnicodeDecodeError at the end of training."""
    run = _run(tmp_path)
    with run.lock():
        run.lock_path.write_bytes(b"\xff\xfe")
    assert run.lock_path.read_bytes() == b"\xff\xfe"
