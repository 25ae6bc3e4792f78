"""The terminal commands as the eighth audit found them: stopped, fed bad bytes, with a
closed or full stderr, and a game left early."""

from __future__ import annotations

import errno
import io
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
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


ENTRY = textwrap.dedent(
    """
    import importlib, importlib.abc, os, re, signal, sys

    how = sys.argv[1]

    class Stop(importlib.abc.MetaPathFinder):
        # Ctrl-C (or SIGTERM) in the middle of the command line's imports
        def find_spec(self, name, path, target=None):
            if name == "train.cli":
                sys.meta_path.remove(self)
                if how == "SIGTERM":
                    os.kill(os.getpid(), signal.SIGTERM)
                    for _ in range(10**6):  # the handler runs between two bytecodes
                        pass
                raise KeyboardInterrupt
            return None

    with open("pyproject.toml", encoding="utf-8") as f:  # [project.scripts]; no tomllib on Python 3.10
        module, function = re.search(r'^llama-rl = "([\\w.]+):(\\w+)"$', f.read(), flags=re.M).groups()
    sys.argv = ["llama-rl", "agents"]
    sys.meta_path.insert(0, Stop())
    getattr(importlib.import_module(module), function)()
    """
)


@pytest.mark.skipif(os.name == "nt", reason="sends SIGTERM")
@pytest.mark.parametrize("how", ["SIGINT", "SIGTERM"])
def test_stopped_while_it_starts_is_one_line_and_exit_130(how):
    """Until main's handlers were in place (its imports, then the parser built) nothing
    caught Ctrl-C: a traceback of 27 lines ending in importlib; SIGTERM killed it with no
    word (exit 143). The entry point of pyproject's [project.scripts] catches both."""
    proc = subprocess.run([sys.executable, "-c", ENTRY, how], capture_output=True, text=True, timeout=120, cwd=ROOT)
    said = " (SIGTERM)" if how == "SIGTERM" else ""
    assert (proc.returncode, proc.stderr) == (130, f"\nllama-rl: interrupted{said}\n"), proc.stderr


def test_the_entry_point_imports_only_the_standard_library():
    """The entry point stands guard before the commands are imported; what it shares with
    them (the stop handler, the stop signals, its one line, the stderr writer) lives in
    train/_program.py, which must stay the standard library alone to be there in time."""
    script = (
        "import sys\nbefore = set(sys.modules)\nimport train.launch\n"
        "print(sorted(m for m in set(sys.modules) - before if m.split('.')[0] not in sys.stdlib_module_names))"
    )
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert run.stdout == "['train', 'train._program', 'train.launch']\n", run.stderr


class _FullDisk(io.StringIO):
    """A stderr on a full disk (``2>/dev/full``): every write fails."""

    def write(self, text: str) -> int:
        raise OSError(errno.ENOSPC, "No space left on device")


EVAL = ["eval", "--agents", "heuristic,random", "--games", "3", "--workers", "1", "--progress"]


@pytest.mark.parametrize("stderr", [None, _FullDisk()], ids=["closed", "full"])
def test_a_progress_bar_that_cannot_be_shown_leaves_the_results(monkeypatch, capsys, stderr):
    """With --progress, a full stderr was exit 1 and no results (the error handler's own
    line raised a second OSError), a closed one exit 1 and nothing anywhere (tqdm wrote to
    None). Now the bar is dropped and the results print."""
    from train.cli import main

    monkeypatch.setattr(sys, "stderr", stderr)
    code = main(EVAL)
    out = capsys.readouterr().out
    assert code == 0
    assert out.startswith("3 games, 2 players") and "heuristic" in out and "random" in out


@pytest.mark.parametrize("stderr", [None, _FullDisk()], ids=["closed", "full"])
def test_a_training_bar_that_cannot_be_shown_leaves_the_run(tmp_path, monkeypatch, stderr):
    """``llama-rl train --progress-bar 2>/dev/full`` (or a trainer under pythonw, where
    stderr is None) ended at the bar's first line, exit 1, and the new run was deleted:
    tqdm's OSError was read as the run directory failing. Now the bar is dropped and the
    run trains and keeps its model."""
    from train.training import TrainConfig, train
    from train.training.presets import PRESETS

    values = {**PRESETS["smoke"], "progress_bar": True}
    monkeypatch.setattr(sys, "stderr", stderr)
    result = train(TrainConfig(**values, run_dir=str(tmp_path), run_name="bar"))
    assert result.num_timesteps == 2048 and (tmp_path / "bar" / "model.zip").is_file()


_REFUSED = {
    "unknown agent": ["eval", "--agents", "heuristc"],  # llama-rl's own error line
    "bad option": ["eval", "--games", "0", "--agents", "random"],  # argparse's usage and error
    "no command": [],  # argparse's usage, then llama-rl's line
}


@pytest.mark.parametrize(
    ("stderr", "argv"),
    [
        *(pytest.param(None, argv, id=f"closed-{why}") for why, argv in _REFUSED.items()),
        # argparse itself drops what it cannot write (it ignores OSError): no "bad option" here
        *(pytest.param(_FullDisk(), _REFUSED[why], id=f"full-{why}") for why in ("unknown agent", "no command")),
    ],
)
def test_errors_go_to_stderr_or_nowhere_never_to_stdout(monkeypatch, capsys, argv, stderr):
    """With stderr closed (``2>&-``), every ``llama-rl: error:`` line, and argparse's usage,
    went to stdout, among a command's results (``print(file=None)``); with it full
    (``2>/dev/full``), the error line's own write failed the command."""
    from train.cli import main

    monkeypatch.setattr(sys, "stderr", stderr)
    assert main(argv) == 2
    assert capsys.readouterr().out == ""


@pytest.mark.parametrize(("typed", "why"), [("q\n", "end of input"), ("q\nexit\n", "exit")])
def test_a_game_left_unfinished_says_so_on_stderr(monkeypatch, capsys, typed, why):
    """Leaving play early was exit 1 with nothing on stderr (what said so went to stdout
    only): a script that kept stdout apart saw a failure without a word."""
    from train.cli import main

    monkeypatch.setattr(sys, "stdin", io.StringIO(typed))
    code = main(["play", "--seed", "7"])
    captured = capsys.readouterr()
    assert code == 1
    assert captured.err == f"llama-rl: game left unfinished ({why})\n"
    assert "You quit the round." in captured.out and "game left unfinished (" not in captured.out


@pytest.mark.parametrize("stdout_at_terminal", [True, False], ids=["terminal", "file"])
def test_a_game_left_at_a_terminal_is_said_once(monkeypatch, stdout_at_terminal):
    """At a terminal, leaving printed "You left the game unfinished." and then
    "llama-rl: game left unfinished (exit)": the person read it twice. The stderr line is
    for a script that keeps stdout apart; at a terminal the game's own line says it. With
    stdout in a file and stderr at the terminal (``llama-rl play < moves.txt > out.txt``)
    the terminal showed nothing at all: the line is said there."""
    from train.cli import main

    stdout = _Terminal() if stdout_at_terminal else io.StringIO()
    stderr = _Terminal()
    monkeypatch.setattr(sys, "stdin", io.StringIO("exit\n"))
    monkeypatch.setattr(sys, "stdout", stdout)
    monkeypatch.setattr(sys, "stderr", stderr)
    assert main(["play", "--seed", "7"]) == 1
    assert stdout.getvalue().rstrip().endswith("You left the game unfinished.")
    assert stderr.getvalue() == ("" if stdout_at_terminal else "llama-rl: game left unfinished (exit)\n")


def test_help_in_the_game_says_how_to_leave_it():
    """``help`` listed the moves but never said that ``exit`` leaves the program (``q``
    quits only the round)."""
    from llama_env import Rules
    from train.play.terminal import PlayConfig, play

    out = io.StringIO()
    play(PlayConfig(rules=Rules(2), opponents=("random",), seed=3), io.StringIO("help\nexit\n"), out)
    after_help = out.getvalue().split("Your move> help\n")[1]
    assert after_help.splitlines()[1] == "Type 'exit' to leave the game; q quits only the round."


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize(("stdout", "pause"), [(None, 0.0), (_Terminal(), 0.5)], ids=["file", "terminal"])
def test_watch_waits_between_moves_only_at_a_terminal(monkeypatch, capsys, stdout, pause):
    """``llama-rl watch > game.txt`` waited half a second a move into the file (80 s for a
    game); without --delay it waits only at a terminal."""
    import train.play.terminal
    from train.cli import main

    pauses: list[float] = []
    monkeypatch.setattr(train.play.terminal.time, "sleep", pauses.append)
    if stdout is not None:
        monkeypatch.setattr(sys, "stdout", stdout)
    assert main(["watch", "--players", "2", "--seed", "1", "--end-score", "10", "--hand-size", "3"]) == 0
    assert pauses == [pause] * len(pauses) and bool(pauses) == bool(pause)  # a delay of 0 never sleeps
    moves = len(pauses)
    assert main(["watch", "--players", "2", "--seed", "1", "--end-score", "10", "--delay", "0.25"]) == 0
    assert pauses[moves:] and set(pauses[moves:]) == {0.25}  # as asked, anywhere


@pytest.mark.parametrize(("stdout", "pause"), [(io.StringIO(), 0.0), (_Terminal(), 0.5)], ids=["file", "terminal"])
def test_watch_from_python_waits_between_moves_only_at_a_terminal(monkeypatch, stdout, pause):
    """Only the command line knew not to wait into a file: ``watch(WatchConfig(...),
    open("g.txt", "w"))`` still waited half a second a move. WatchConfig's delay now
    defaults to None, which watch() reads as the command line did."""
    import train.play.terminal
    from llama_env import Rules
    from train.play.terminal import WatchConfig, watch

    pauses: list[float] = []
    monkeypatch.setattr(train.play.terminal.time, "sleep", pauses.append)
    watch(WatchConfig(("heuristic",) * 2, rules=Rules(2, end_score=10, hand_size=3), seed=1), stdout)
    assert "Round 1" in stdout.getvalue()
    assert pauses == [pause] * len(pauses) and bool(pauses) == bool(pause)  # a delay of 0 never sleeps


def test_agents_wraps_to_the_terminal_under_the_name_column(monkeypatch):
    """``llama-rl agents`` wrote lines of some 260 characters whatever the terminal's width;
    into a file or a pipe it still writes one line per agent (docs/cli.md shows it so)."""
    from llama_env.agent import grouped
    from train.cli.agents import list_agents

    column = 2 + max(len(name) for agents in grouped().values() for name in agents) + 2  # where descriptions start
    monkeypatch.setenv("COLUMNS", "60")
    wrapped, whole = _Terminal(), io.StringIO()
    list_agents(wrapped)
    list_agents(whole)
    lines = wrapped.getvalue().splitlines()
    assert max(map(len, lines)) <= 60 < max(len(s) for s in whole.getvalue().splitlines())
    hanging = [s for s in lines if s.startswith("   ")]
    assert hanging and all(s.startswith(" " * column) and s[column] != " " for s in hanging)  # under the descriptions
    assert " ".join(wrapped.getvalue().split()) == " ".join(whole.getvalue().split())
