"""``eval`` and ``tournament`` stopped by Ctrl-C or SIGTERM mid-run: they ended their
workers and exited 130 but printed nothing of the games already finished, so hours of
``search`` games were lost. Now the table of the first games that had finished is printed,
headed as partial, and from Python the ``KeyboardInterrupt`` carries that result."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import ScriptedExecutor

from train.evaluation import GamesInterrupted, evaluate, tournament

SCRIPT = "import sys\nfrom train.cli import main\nsys.exit(main(sys.argv[1:]))\n"
HEAD = re.compile(
    r"interrupted: the first ([\d,]+) of ([\d,]+) games, in order \(later ones finished early are left out\)"
)


@pytest.mark.skipif(os.name == "nt", reason="sends SIGINT and SIGTERM")
@pytest.mark.parametrize(
    ("command", "signum"),
    [
        (["eval", "--agents", "heuristic,random", "--games", "100000", "--seed", "3"], "SIGINT"),
        (["tournament", "--players", "2", "--agents", "heuristic,random,greedy", "--games", "30000"], "SIGTERM"),
    ],
)
def test_an_interrupted_run_prints_the_games_it_finished(tmp_path: Path, command: list[str], signum: str) -> None:
    """One worker plays chunks of 256 games in order: once game 256 is written (the first
    of the second chunk) the first chunk is finished, and the table printed is that of the
    first games in order, the very table asking for that many games prints."""
    record = tmp_path / "rec"
    args = [*command, "--workers", "1", "--record", str(record)]
    proc = subprocess.Popen(
        [sys.executable, "-c", SCRIPT, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        deadline = time.monotonic() + 120
        while not (record / "game_000256.json").exists():
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
            time.sleep(0.05)
        proc.send_signal(getattr(signal, signum))
        out, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    stopped = "llama-rl: interrupted" + (" (SIGTERM)" if signum == "SIGTERM" else "")
    assert proc.returncode == 130 and err == f"\n{stopped}\n", err
    head, _, table = out.partition("\n")
    match = HEAD.fullmatch(head)
    assert match, out
    games, planned = (int(g.replace(",", "")) for g in match.groups())
    assert planned == int(command[command.index("--games") + 1]) and games >= 256 and games % 256 == 0, head
    if command[0] == "eval":
        same = evaluate(["heuristic", "random"], games, seed=3, workers=1, batched=False)
    else:
        same = tournament(["heuristic", "random", "greedy"], 2, games, workers=1, batched=False)
    assert table == f"{same}\n"


def test_a_chunk_finished_out_of_turn_is_left_out() -> None:
    """64 games in chunks of 4 (two workers): chunks 0, 1 and 3 finished, 2 under way.
    The result is of games 0..7, as evaluating 8 games gives, not of 12 with a gap."""
    finished = ScriptedExecutor([0, 1, 3], stop=True)
    with pytest.raises(GamesInterrupted) as stopped:
        evaluate(["heuristic", "random"], 64, seed=5, workers=2, batched=False, executor=finished)
    stop = stopped.value
    assert isinstance(stop, KeyboardInterrupt)
    assert (stop.games, stop.planned) == (8, 64)
    assert stop.partial.to_table() == evaluate(["heuristic", "random"], 8, seed=5, workers=1, batched=False).to_table()
    assert str(stop).startswith("interrupted: the first 8 of 64 games, in order")


def test_an_interrupted_duplicate_evaluation_keeps_whole_deals() -> None:
    """66 games of 3-seat deals in chunks of 5: 10 finished, whose 9 make whole deals (the
    intervals are over deals)."""
    agents = ["heuristic", "random", "greedy"]
    with pytest.raises(GamesInterrupted) as stopped:
        evaluate(agents, 64, seed=1, workers=2, duplicate=True, executor=ScriptedExecutor([0, 1], stop=True))
    stop = stopped.value
    assert (stop.games, stop.planned) == (9, 66)
    assert stop.partial.to_table() == evaluate(agents, 9, seed=1, workers=1, duplicate=True).to_table()


def test_an_interrupted_tournament_carries_the_tournament_of_its_first_games() -> None:
    agents = ["heuristic", "random", "greedy"]
    with pytest.raises(GamesInterrupted) as stopped:
        tournament(agents, 2, 64, seed=2, workers=2, batched=False, executor=ScriptedExecutor([0, 2], stop=True))
    stop = stopped.value
    assert (stop.games, stop.planned) == (4, 64)
    assert str(stop.partial) == str(tournament(agents, 2, 4, seed=2, workers=1, batched=False))


def test_interrupted_before_any_game_finished_carries_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    """No table then: ``llama-rl`` prints nothing but its interrupted line, as before."""
    from train.cli.common import games_kept

    with pytest.raises(GamesInterrupted) as stopped:
        evaluate(["heuristic", "random"], 64, workers=2, batched=False, executor=ScriptedExecutor([1, 2], stop=True))
    assert stopped.value.partial is None and stopped.value.games == 0
    assert str(stopped.value) == "interrupted before any of 64 games had finished"
    with pytest.raises(KeyboardInterrupt), games_kept(sys.stdout):
        raise stopped.value
    assert capsys.readouterr().out == ""
