"""The terminal commands as the eighth audit found them: stopped, fed bad bytes, with a
closed or full stderr, and a game left early."""

from __future__ import annotations

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
