"""The thirteenth audit of ``llama-rl`` (eval, tournament, the common options): every
example in every ``--help`` runs as written, ``--record`` reads ``~`` and is checked
before the games, the Python API refuses what the command line refuses, ``--workers``
above the cores is said, numbers are ASCII digits, and one game is "1 game"."""

from __future__ import annotations

import io
import re
import shlex
import shutil
import sys
from pathlib import Path

import pytest

from agents.ppo import DEFAULT_MODEL
from llama_env.agent import AgentSpec, parse_agent_list
from train.cli import COMMAND_NAMES, EvalCommand, TournamentCommand, build_parser, main, run_eval
from train.cli.common import PROG, int_in
from train.evaluation import evaluate, seatings

# ----------------------------------------------------------------------- every example runs


def _help(capsys: pytest.CaptureFixture[str], *command: str) -> str:
    assert main([*command, "--help"]) == 0
    return capsys.readouterr().out


def _examples(text: str) -> list[list[str]]:
    """The commands under ``examples:`` in a help text, each as its words (a ``#`` comment dropped)."""
    assert "examples:" in text
    block = text.split("examples:", 1)[1].split("\n\n", 1)[0]
    lines = [line.strip() for line in block.splitlines() if line.strip()]
    assert lines and all(line.startswith(f"{PROG} ") for line in lines), block
    return [shlex.split(line, comments=True)[1:] for line in lines]


_GAMES = {"eval": "1", "tournament": "1"}
"""Commands played out, with the fewest games that still exercise every option of the example."""
_PARSED_ONLY = {"serve", "train", "export", "fit-search", "distill", "tune-heuristic"}
"""Commands that serve, train or fit for minutes: their examples go through the parser
(and ``train``'s its config) only."""


def _with(argv: list[str], flag: str, value: str) -> list[str]:
    """``argv`` with ``flag``'s value replaced by ``value``, or ``flag value`` appended."""
    if flag in argv:
        at = argv.index(flag) + 1
        return [*argv[:at], value, *argv[at + 1 :]]
    return [*argv, flag, value]


def _stand_in_models(argv: list[str], folder: Path) -> None:
    """A model file an example names that an earlier one writes (``export``'s ``--out``):
    the shipped model takes its place in the example's folder."""
    for word in argv:
        for path in re.findall(r"path=([^,:]+\.npz)", word):
            if not (folder / path).exists():
                shutil.copy(DEFAULT_MODEL, folder / path)


def _every_example(capsys: pytest.CaptureFixture[str]) -> list[tuple[str, list[str]]]:
    found = [(f"{PROG} --help", argv) for argv in _examples(_help(capsys))]
    for command in COMMAND_NAMES:
        text = _help(capsys, command)
        if "examples:" in text:
            found += [(f"{PROG} {command} --help", argv) for argv in _examples(text)]
    return found


def test_every_example_of_every_help_runs_as_written(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))  # play: a game left at once, after its checks
    examples = _every_example(capsys)
    commands = {argv[0] for _, argv in examples}
    assert {"eval", "tournament", "play", "watch", "train"} <= commands  # the parsing found them
    parser = build_parser()
    for where, argv in examples:
        command = argv[0]
        if command in _PARSED_ONLY:
            args, extra = parser.parse_known_args(argv)
            assert not extra, f"{where}: {shlex.join(argv)}: unrecognized {extra}"
            if command == "train" and not args.resume:
                from train.cli.train import config_from_args

                config_from_args(args)  # the preset and the flags together: a ValueError fails the test
            continue
        if command in _GAMES:
            argv = _with(_with(_with(argv, "--games", _GAMES[command]), "--workers", "1"), "--seed", "0")
            argv = [*argv, "--no-progress"] if "--no-progress" not in argv else argv
        _stand_in_models(argv, tmp_path)
        code = main(argv)
        err = capsys.readouterr().err
        assert "error:" not in err and code in (0, 1 if command == "play" else 0), (
            f"{where}: `{PROG} {shlex.join(argv)}` exited {code}: {err}"
        )


def test_the_example_test_catches_a_pool_too_small_for_the_table(capsys):
    """What the test above ran, a pool of 3 agents at a 4-player table, is refused."""
    code = main(["tournament", "--players", "4", "--agents", "random,heuristic,cautious", "--games", "1"])
    assert code == 2 and "needs a pool of at least 4 agents, got 3" in capsys.readouterr().err


# ----------------------------------------------------------------------- --record


def test_record_reads_a_leading_tilde_as_the_home_folder(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    code = main(["eval", "--agents", "random,random", "--games", "2", "--record", "~/games", "--no-progress"])
    assert code == 0, capsys.readouterr().err
    assert sorted(p.name for p in (tmp_path / "games").glob("game_*.json")) == ["game_000000.json", "game_000001.json"]
    assert not (work / "~").exists()


def test_record_tilde_in_the_python_api_too(tmp_path, monkeypatch):
    from train.evaluation.evaluate import evaluate

    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    (tmp_path / "work").mkdir()
    monkeypatch.chdir(tmp_path / "work")
    evaluate(["random", "random"], 1, workers=1, record_dir="~/kept", batched=False)
    assert list((tmp_path / "kept").glob("game_*.json"))
    assert not (tmp_path / "work" / "~").exists()


def test_a_record_folder_that_takes_no_file_is_refused_naming_it_before_any_game(capsys, tmp_path, monkeypatch):
    """A read-only folder (made so by refusing every new file in it: root writes anywhere)."""
    import llama_env._atomic as atomic
    import train.evaluation.runner as runner

    folder = tmp_path / "games"
    folder.mkdir()
    real_new_file, real_run_chunks = atomic.new_file, runner.run_chunks

    def new_file(directory: Path, prefix: str, suffix: str) -> Path:
        if Path(directory) == folder:
            path = Path(directory) / f"{prefix}x{suffix}"
            raise PermissionError(13, "Permission denied", str(path))
        return real_new_file(directory, prefix, suffix)

    played: list[object] = []
    monkeypatch.setattr(atomic, "new_file", new_file)
    monkeypatch.setattr(runner, "run_chunks", lambda *a, **k: played.append(a) or real_run_chunks(*a, **k))
    code = main(["eval", "--agents", "random,random", "--games", "2", "--record", str(folder), "--no-progress"])
    err = capsys.readouterr().err
    assert code == 2 and f"game records: cannot write in {str(folder)!r} (Permission denied)" in err, err
    assert ".tmp" not in err and len(err.strip().splitlines()) == 1, err
    assert not played
    # a folder it made for them is not left behind, nor the folders it made above it
    new = tmp_path / "new" / "games"
    folder = new
    code = main(["eval", "--agents", "random,random", "--games", "2", "--record", str(new), "--no-progress"])
    err = capsys.readouterr().err
    assert code == 2 and f"game records: cannot write in {str(new)!r} (Permission denied)" in err, err
    assert not (tmp_path / "new").exists()


def test_every_record_folder_refusal_is_said_one_way(capsys, tmp_path):
    """A file in its place was "cannot write game records to X: it is a file, not a
    folder", a folder that takes no file "game records: cannot write in 'X' (...)"."""
    (tmp_path / "file").write_text("")
    (tmp_path / "held").mkdir()
    (tmp_path / "held" / "game_000000.json").write_text("{}")
    for folder, why in [
        (tmp_path / "file", f"game records: {str(tmp_path / 'file')!r} is a file, not a folder"),
        (tmp_path / "file" / "below", f"game records: {str(tmp_path / 'file')!r} is a file, not a folder"),
        (tmp_path / "held", f"game records: {str(tmp_path / 'held')!r} already holds 1 from an earlier run"),
    ]:
        code = main(["eval", "--agents", "random,random", "--games", "2", "--record", str(folder), "--no-progress"])
        err = capsys.readouterr().err
        assert code == 2 and err.startswith(f"{PROG}: error: {why}") and len(err.strip().splitlines()) == 1, err


# ----------------------------------------------------------------------- the Python API


@pytest.mark.parametrize("make", [EvalCommand, TournamentCommand])
def test_the_commands_take_the_agents_evaluate_takes(make):
    """A string was read letter by letter ('heuristic' was nine agents), then refused,
    where evaluate('heuristic,random') reads it as --agents does; a set ran with its seats
    in string-hash order, another order in each Python process, where evaluate refuses it."""
    assert make(agents="heuristic,random").agents == (AgentSpec("heuristic"), AgentSpec("random"))  # type: ignore[arg-type]
    assert make(agents=["heuristic", "random"]).agents == ("heuristic", "random")  # type: ignore[arg-type]
    assert make(agents="heuristic").agents == (AgentSpec("heuristic"),)  # type: ignore[arg-type]  # not 9 letters
    with pytest.raises(ValueError, match=r"agents must be an ordered sequence \(a list\), got a set"):
        make(agents={"heuristic", "random"})  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"agents must be a list, one agent per seat, got one agent"):
        make(agents=AgentSpec("heuristic"))  # type: ignore[arg-type]


def test_a_list_of_agents_still_works():
    assert EvalCommand(agents=tuple(parse_agent_list("heuristic,random"))).num_players == 2
    assert EvalCommand(agents=["heuristic", "random"]).num_players == 2  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("flags", "settings", "said"),
    [
        (["--duplicate"], {"duplicate": True}, "duplicate=True (--duplicate) plays every deal from every seat"),
        (["--every-order"], {"every_order": True}, "every_order=True (--every-order) changes the order round"),
    ],
)
def test_what_needs_rotation_is_refused_without_it_in_the_same_words_everywhere(capsys, flags, settings, said):
    """evaluate(duplicate=True, rotate=False) played rotated, saying nothing, where the
    command line refused it; a Python caller who wrote rotate=False was told --no-rotate."""
    agents = ["heuristic", "random", "greedy"]
    with pytest.raises(ValueError) as info:
        evaluate(agents, 3, rotate=False, **settings)
    message = str(info.value)
    assert said in message and "rotate=False (--no-rotate)" in message and "\n" not in message, message
    with pytest.raises(ValueError) as again:
        run_eval(EvalCommand(agents=agents, rotate=False, **settings), out=io.StringIO())  # type: ignore[arg-type]
    assert str(again.value) == message
    if "every_order" in settings:
        with pytest.raises(ValueError) as seated:
            seatings(3, 3, rotate=False, every_order=True)
        assert str(seated.value) == message
    code = main(["eval", "--agents", ",".join(agents), "--games", "3", *flags, "--no-rotate"])
    err = capsys.readouterr().err
    assert code == 2 and err.strip() == f"{PROG}: error: {message}", err


# ----------------------------------------------------------------------- --workers


@pytest.mark.parametrize(
    ("games", "workers", "workers_said"),
    [
        ("4", "2", "2 workers"),
        # --workers 16 for 2 games started a process a chunk, and the warning said "16 workers
        # are more than the 1 core": it counts the processes that take turns now
        ("2", "16", "2 workers (of the 16 asked for, one a chunk of games at most)"),
    ],
)
def test_workers_above_the_cores_are_said_in_one_line(games, workers, workers_said, capsys, monkeypatch, recwarn):
    import train.evaluation.runner as runner

    monkeypatch.setattr(runner, "usable_cores", lambda: 1)
    argv = ["eval", "--agents", "random,random", "--games", games, "--workers", workers, "--no-progress", "--no-batch"]
    assert main(argv) == 0, capsys.readouterr().err
    said = [str(w.message) for w in recwarn if "worker" in str(w.message)]
    assert said == [
        f"{workers_said} are more than the 1 core this process may use: they take turns on it, no faster than 1 worker"
    ], said


def test_workers_within_the_cores_say_nothing(capsys, monkeypatch, recwarn):
    import train.evaluation.runner as runner

    monkeypatch.setattr(runner, "usable_cores", lambda: 2)
    code = main(["eval", "--agents", "random,random", "--games", "4", "--workers", "2", "--no-progress", "--no-batch"])
    assert code == 0, capsys.readouterr().err
    assert not [w for w in recwarn if "workers" in str(w.message)]


# ----------------------------------------------------------------------- numbers


@pytest.mark.parametrize("text", ["١٢", "1_000", " 7", "7 ", "+ 7", "0x10", "٣"])
def test_numbers_are_ascii_digits_only(capsys, text):
    code = main(["eval", "--agents", "random,random", "--games", text])
    err = capsys.readouterr().err
    assert code == 2 and "the number of games must be an integer" in err, err


@pytest.mark.parametrize(("text", "value"), [("12", 12), ("+12", 12), ("007", 7), ("-3", -3)])
def test_ascii_digits_with_a_sign_are_still_read(text, value):
    assert int_in(-5, 20, "a count")(text) == value


def test_a_negative_number_is_out_of_range_not_malformed(capsys):
    code = main(["eval", "--agents", "random,random", "--seed=-3"])
    err = capsys.readouterr().err
    assert code == 2 and "must be between 0 and" in err, err


def test_a_huge_seed_is_echoed_shortened(capsys):
    code = main(["eval", "--agents", "random,random", "--seed", "9" * 5000])
    err = capsys.readouterr().err
    line = err.strip().splitlines()[-1]
    assert code == 2 and "the seed must be between 0 and" in line and len(line) < 200, line[:500]


def test_a_long_unknown_agent_name_is_echoed_shortened(capsys):
    code = main(["eval", "--agents", "x" * 5000 + ",random"])
    err = capsys.readouterr().err
    assert code == 2 and "unknown agent" in err.lower() and len(err) < 600, err[:700]


ENTRY_POINTS = [
    (["eval", "--agents", "random,random", "--games"], "the number of games must be"),  # int_in
    (["eval", "--agents", "random,random", "--workers"], "the number of workers must be"),  # int_in, no upper bound
    (["distill", "--temperature"], "the temperature must be"),  # float_in
    (["watch", "--agents", "random", "--delay"], "the delay"),  # watch's own
    (["train", "--seed"], "config key 'seed' must be"),  # a config key's int
    (["train", "--gamma"], "config key 'gamma' must be"),  # a config key's float
    (["train", "--net-arch"], "config key 'net_arch' must be"),  # a list of ints
    (["train", "--players"], "config key 'players' must be"),  # table sizes
    (["train", "--opponents", "heuristic:{}"], "weight of 'heuristic' must be"),  # a weight
]


@pytest.mark.parametrize("text", ["١٢", "1_000", "9" * 5000])
@pytest.mark.parametrize(("argv", "said"), ENTRY_POINTS, ids=lambda v: " ".join(v) if isinstance(v, list) else None)
def test_every_number_on_the_command_line_is_read_alike(capsys, argv, said, text):
    """int_in alone read only ASCII digits: float_in, watch's --delay, train's config keys,
    --net-arch, --players and the opponents' weights took ١٢ as 12 and 1_000 as 1000 (or
    echoed 5,000 digits), and a 5,000-digit --workers was "at least 1, got 999..."."""
    args = [*argv[:-1], argv[-1].format(text)] if "{}" in argv[-1] else [*argv, text]
    code = main([*args, "--preset", "no-such-preset"])  # a number read as one reaches this refusal, never a run
    line = capsys.readouterr().err.strip().splitlines()[-1]  # under the usage
    assert code == 2 and "error: argument --" in line and said in line and len(line) < 300, line[:400]
    assert "at least 1, got '99" not in line, line


# ----------------------------------------------------------------------- plurals


def test_an_interruption_before_the_one_game_finished_says_game():
    from train.evaluation.runner import GamesInterrupted

    assert str(GamesInterrupted(None, 0, 1)) == "interrupted before the one game had finished"
    assert str(GamesInterrupted(None, 0, 1200)) == "interrupted before any of 1,200 games had finished"


@pytest.mark.parametrize("command", ["eval", "tournament"])
def test_one_game_is_one_game_in_the_header(capsys, command):
    code = main([command, "--agents", "random,random", "--games", "1", "--workers", "1", "--no-progress"])
    out = capsys.readouterr().out
    assert code == 0 and "1 games" not in out and "1 game" in out, out
