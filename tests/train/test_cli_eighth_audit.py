"""The terminal commands as the eighth audit found them: stopped, fed bad bytes, with a
closed or full stderr, and a game left early."""

from __future__ import annotations

import io
import os
import signal
import subprocess
import sys
import time

import pytest

SCRIPT = "import sys\nfrom train.cli import main\nsys.exit(main(sys.argv[1:]))\n"


@pytest.mark.skipif(os.name == "nt", reason="sends SIGTERM")
def test_sigterm_says_so_in_one_line():
    """``timeout`` stopping ``play`` printed two messages ("terminated (SIGTERM): stopping
    as on Ctrl-C", then "llama-rl: interrupted"); now one names the signal."""
    proc = subprocess.Popen(
        [sys.executable, "-c", SCRIPT, "play", "--seed", "7"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        while not proc.stdout.readline().startswith("Your moves:"):  # then the game waits for a move
            assert proc.poll() is None
        time.sleep(0.3)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 130
    assert err == "\nllama-rl: interrupted (SIGTERM)\n"


def test_a_stray_byte_in_plays_input_is_a_refused_move(monkeypatch, capsys):
    """A UTF-8 console reads stdin strictly: one byte that is not UTF-8 ended the game with
    exit 2 and the codec's message, and the moves read with it (a pipe is decoded in
    chunks) were never played. Now that line is refused like any other and the game goes on."""
    from train.cli import main

    stdin = io.TextIOWrapper(io.BytesIO(b"q\nexit # caf\xe9\nexit\n"), encoding="utf-8", errors="strict")
    monkeypatch.setattr(sys, "stdin", stdin)
    code = main(["play", "--seed", "7"])
    out = capsys.readouterr().out
    assert code == 1, out
    assert "You quit the round." in out
    assert "I don't understand 'exit # caf\ufffd'" in out
    assert out.rstrip().endswith("You left the game unfinished.")
