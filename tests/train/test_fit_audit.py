"""fit-search and distill as the seventh stop's audit found them: their result is the file
they write, and what they print on the way is progress."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from agents.ppo import load_actor
from agents.search import load_networks

ROOT = Path(__file__).resolve().parents[2]

SMALL = {
    "distill": ["--players", "2", "--games", "2", "--epochs", "1", "--below", "0.99"],
    "fit-search": ["--players", "2", "--games", "2"],
}


@pytest.mark.parametrize("command", ["distill", "fit-search"])
def test_a_reader_that_leaves_early_does_not_cost_the_file(command, tmp_path):
    """`llama-rl distill ... | head -1`: the next progress line raised BrokenPipeError, and
    the command exited 1 without a word and without the file its games and fitting made."""
    out = tmp_path / "out.npz"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    argv = [sys.executable, "-m", "train.cli", command, *SMALL[command], "--out", str(out)]
    proc = subprocess.Popen(argv, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    first = proc.stdout.readline()
    proc.stdout.close()  # the reader leaves after one line, as `head -1` does
    error = proc.stderr.read().decode()
    code = proc.wait(timeout=300)
    assert first and code == 0 and error == "", (first, code, error)
    if command == "distill":
        assert load_actor(out).obs_size == 175
    else:
        load_networks(out, 2)
