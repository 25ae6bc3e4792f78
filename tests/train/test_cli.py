"""The ``llama-rl`` command line, end to end through ``main([...])``.

Small game counts keep the file fast; the evaluation numbers themselves are tested
with ``train.evaluation``. ``play`` is driven through scripted input streams.
"""

from __future__ import annotations

import io
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import make_game, other_rule_options

import llama_env
from llama_env._install import install_hint
from llama_env.agent import AgentSpec, parse_agent_list, parse_agent_spec
from llama_env.engine import Action, Rules, rule_option_fields
from train.cli import main
from train.cli.common import CommandError, rule_flag
from train.play.terminal import EXIT_FINISHED, EXIT_LEFT, MoveError, PlayConfig, parse_move, play


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


# --------------------------------------------------------------------------- help and agents


def test_help_lists_the_commands(capsys):
    code, out, _ = run(capsys, "--help")
    assert code == 0
    for command in ("eval", "tournament", "play", "agents"):
        assert command in out
    assert "examples:" in out


@pytest.mark.parametrize("command", ["eval", "tournament", "play", "agents"])
def test_every_command_has_help_with_examples(capsys, command):
    code, out, _ = run(capsys, command, "--help")
    assert code == 0
    assert f"llama-rl {command}" in out
    assert "examples:" in out or "example:" in out


def test_train_command_is_always_listed(capsys):
    code, out, _ = run(capsys, "--help")
    assert code == 0
    assert "train" in out
    code, out, _ = run(capsys, "train", "--help")
    assert code == 0
    assert "llama-rl train" in out


def test_train_help_gives_each_flag_one_default(capsys, monkeypatch):
    """``--run-name``'s help said "(default llama__<algorithm>...) (default: '')", and
    ``--resume`` and ``--address`` ended on "(default: '')": a second default, or an empty
    one, where the flag's help says what it does without it."""
    monkeypatch.setenv("COLUMNS", "1000")  # one line a flag
    code, out, _ = run(capsys, "train", "--help")
    assert code == 0
    flags = {line.split()[0]: line for line in out.splitlines() if line.startswith("  --")}
    assert "(default: '')" not in out
    assert all(line.count("(default") <= 1 for line in flags.values()), [
        f for f, li in flags.items() if li.count("(default") > 1
    ]
    assert "(default llama__<algorithm>__<seed>__<unix time>" in flags["--run-name"]
    assert "(default: 'runs')" in flags["--run-dir"] and "(default: 0)" in flags["--seed"]


def test_train_config_errors_exit_2_without_traceback(capsys):
    code, out, err = run(capsys, "train", "--n-envs", "0")
    assert code == 2
    assert err.startswith("llama-rl: error:") and "n_envs" in err
    assert "Traceback" not in err


def test_agents_lists_the_registered_agents_with_descriptions(capsys):
    code, out, err = run(capsys, "agents")
    assert code == 0 and err == ""
    lines = {line.split()[0]: line for line in out.splitlines() if line.strip()}
    assert "random" in lines and "heuristic" in lines
    assert "Uniform over the legal actions" in lines["random"]


def test_console_script_help_runs():
    script = Path(sys.executable).parent / ("llama-rl.exe" if os.name == "nt" else "llama-rl")
    assert script.exists(), f"the console script is not installed at {script} (pip install -e .)"
    proc = subprocess.run([str(script), "--help"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "usage: llama-rl" in proc.stdout
    assert "tournament" in proc.stdout


# --------------------------------------------------------------------------- eval and tournament


def test_eval_prints_a_table_with_agents_and_win_shares(capsys):
    code, out, err = run(
        capsys,
        "eval",
        "--players",
        "3",
        "--agents",
        "heuristic,random,random",
        "--games",
        "12",
        "--seed",
        "0",
        "--workers",
        "1",
        "--no-progress",
        "--end-score",
        "15",
    )
    assert code == 0, err
    assert "heuristic" in out and "random" in out
    assert "win" in out.lower()
    assert "Traceback" not in err


def test_eval_seeds_reproduce_the_table(capsys):
    argv = (
        "eval",
        "--agents",
        "greedy,random",
        "--games",
        "8",
        "--seed",
        "3",
        "--workers",
        "1",
        "--no-progress",
        "--end-score",
        "10",
    )
    first = run(capsys, *argv)
    second = run(capsys, *argv)
    assert first[0] == second[0] == 0
    assert first[1] == second[1]


def test_eval_accepts_one_agent_for_every_seat_and_agent_parameters(capsys):
    code, out, err = run(
        capsys,
        "eval",
        "--players",
        "2",
        "--agents",
        "cautious:threshold=4",
        "--games",
        "4",
        "--workers",
        "1",
        "--no-progress",
        "--end-score",
        "10",
    )
    assert code == 0, err
    assert "cautious" in out


def test_tournament_prints_ratings(capsys):
    code, out, err = run(
        capsys,
        "tournament",
        "--players",
        "2",
        "--agents",
        "random,greedy,heuristic",
        "--games",
        "12",
        "--seed",
        "0",
        "--workers",
        "1",
        "--no-progress",
        "--end-score",
        "10",
    )
    assert code == 0, err
    for name in ("random", "greedy", "heuristic"):
        assert name in out
    assert "rating" in out.lower() or "mu" in out.lower()


def test_a_missing_optional_package_is_named_with_exit_1(capsys, monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "sb3_contrib", None)  # makes `import sb3_contrib` fail
    code, out, err = run(capsys, "train", "--preset", "smoke", "--run-dir", str(tmp_path))
    assert code == 1
    assert "llama-rl: error:" in err and "'sb3_contrib'" in err and "pip install" in err
    assert "Traceback" not in err


def test_a_module_no_extra_brings_is_not_put_down_to_one():
    """An agent's own import of a module that is not installed was 'llama-rl eval needs the
    package 'foo_not_installed', which is not installed; install the 'train' extra'."""
    from train.cli.common import missing_dependency

    plain = pytest.raises(ModuleNotFoundError, match="^No module named 'foo_not_installed'$")
    with plain, missing_dependency("llama-rl eval"):
        import foo_not_installed  # noqa: F401
    named = pytest.raises(CommandError, match="^llama-rl serve needs the package 'PIL', which is not installed; ")
    with named, missing_dependency("llama-rl serve", extra="web"):
        raise ModuleNotFoundError("No module named 'PIL'", name="PIL")


def test_extra_or_exit_finds_a_module_imported_without_a_spec(monkeypatch):
    """A package of the extra in sys.modules without a ``__spec__`` (a module made by hand,
    a test's stand-in) was a ValueError traceback from find_spec, where the envs' check
    found it; a package not installed is still the one line naming it and the extra."""
    import types

    from llama_env._install import EXTRAS
    from train.cli.common import extra_or_exit

    monkeypatch.setitem(sys.modules, "llama_stand_in", types.ModuleType("llama_stand_in"))
    monkeypatch.setitem(EXTRAS, "stand-in", {"llama-stand-in": "llama_stand_in"})
    extra_or_exit("bench", "stand-in", "this benchmark")
    monkeypatch.setitem(EXTRAS, "stand-in", {"llama-stand-in": "llama_stand_in", "gone": "llama_not_installed"})
    with pytest.raises(SystemExit, match="^bench: error: this benchmark needs the package 'llama_not_installed', "):
        extra_or_exit("bench", "stand-in", "this benchmark")


@pytest.mark.parametrize(("flag", "expected"), [("--progress", True), ("--no-progress", False), (None, False)])
def test_progress_bars_follow_the_flag_else_whether_stderr_is_a_terminal(capsys, monkeypatch, flag, expected):
    import train.cli.evaluate

    seen = {}
    real = train.cli.evaluate.evaluate

    def spy(*args, **kwargs):
        seen.update(kwargs)
        return real(*args, **{**kwargs, "progress": False})

    monkeypatch.setattr(train.cli.evaluate, "evaluate", spy)
    argv = ["eval", "--agents", "random,random", "--games", "2", "--workers", "1"] + ([flag] if flag else [])
    code, _, err = run(capsys, *argv)  # capsys: stderr is not a terminal
    assert code == 0, err
    assert seen["progress"] is expected


def test_a_progress_bar_in_a_notebook_is_the_bar_alone(tmp_path, monkeypatch):
    """In a Jupyter kernel without ipywidgets (the ``notebooks`` extra installs none),
    ``tournament(progress=True)`` printed tqdm's "TqdmWarning: IProgress not found. Please
    update jupyter and ipywidgets" with a file path above the bar; the text bar, which
    redraws itself there, is all it shows now."""
    pytest.importorskip("nbclient")
    import importlib.util

    import nbformat
    from nbclient import NotebookClient

    if importlib.util.find_spec("ipywidgets") is not None:
        pytest.skip("with ipywidgets tqdm draws a widget and gives no advice")
    monkeypatch.chdir(tmp_path)
    nb = nbformat.v4.new_notebook()
    code = f"import sys; sys.path.insert(0, {str(Path(__file__).resolve().parents[2])!r})\n"
    code += "from train._program import game_bar\nwith game_bar(True, 5) as bar:\n    bar.update(5)"
    nb.cells = [nbformat.v4.new_code_cell(code)]
    NotebookClient(nb, timeout=120, kernel_name="python3").execute()
    shown = "".join(o.get("text", "") for o in nb.cells[0].outputs)
    assert "games: 100%" in shown and "Warning" not in shown, shown


# --------------------------------------------------------------------------- errors


@pytest.mark.parametrize(
    ("argv", "fragment"),
    [
        (["eval", "--agents", "nosuchagent,random"], "unknown agent 'nosuchagent'"),
        (["eval", "--agents", "random,random", "--players", "4"], "2 agents for 4 players"),
        (["eval", "--agents", "random"], "one per seat"),
        (["eval", "--agents", "random,random,random,random,random,random,random"], "at most 6"),
        (["eval", "--agents", "random", "--players", "7"], "between 2 and 6"),
        (["eval", "--agents", "random", "--players", "two"], "must be an integer"),
        (["eval", "--agents", "random,random", "--games", "0"], "between 1 and 1000000000"),
        # a bare MemoryError traceback (74.5 GiB of arrays) before any game
        (["eval", "--agents", "random,random", "--games", "10000000000"], "between 1 and 1000000000"),
        (["tournament", "--agents", "random,greedy", "--games", "10000000000"], "between 1 and 1000000000"),
        (["tune-heuristic", "--games", "10000000000"], "between 1 and 1000000000"),
        (["watch", "--seed", str(2**63)], "the seed must be between 0 and 9223372036854775807"),
        # the current folder, unasked: game records landed in a checkout
        (["eval", "--agents", "random,random", "--record", ""], "--record: needs a folder's name"),
        (["tournament", "--agents", "random,greedy", "--record", " "], "--record: needs a folder's name"),
        # "no PPO model in ."
        (["eval", "--agents", "ppo:path=,random"], "the model path is empty: name a model file or run directory"),
        (["eval", "--agents", "random,random", "--workers", "0"], "at least 1"),
        (["eval", "--agents", "random,,random"], "empty entry"),
        (["eval", "--agents", "cautious:threshold", "--players", "2"], "key=value"),
        (["eval", "--agents", "random:colour=red", "--players", "2"], "no parameter 'colour'"),
        (["eval", "--agents", "cautious:threshold=-1,random"], "threshold must be"),
        (["eval", "--agents", "random,random", "--hand-size", "40"], "--hand-size must be between 1 and 27"),
        (["eval", "--agents", "random,random", "--end-score", "0"], "between 1 and"),
        (["eval"], "--agents"),
        (["tournament", "--agents", "random"], "at least 2 agents"),
        (["tournament", "--agents", "random,greedy", "--players", "3"], "at least 3 agents"),
        (["tournament", "--agents", "random,nope"], "unknown agent 'nope'"),
        (["tournament", "--agents", "random,greedy", "--players", "1"], "between 2 and 6"),
        (["play", "--opponents", "nope"], "unknown agent 'nope'"),
        (["play", "--players", "4", "--opponents", "random,random"], "2 agents for the 3 other seats"),
        (["play", "--players", "2", "--opponents", "random,greedy"], "for the 1 other seat of a 2-player game; give a"),
        (["play", "--players", "3", "--seat", "3", "--opponents", "random"], "--seat must be between 0 and 2"),
        (["play", "--players", "9"], "between 2 and 6"),
        (["frobnicate"], "invalid choice"),
        ([], "a command is required"),
    ],
)
def test_usage_errors_exit_2_with_a_message_and_no_traceback(capsys, argv, fragment):
    code, out, err = run(capsys, *argv)
    assert code == 2
    assert "error:" in err and fragment in err
    assert "Traceback" not in err and "Traceback" not in out


def test_running_out_of_memory_is_one_line_not_a_traceback(capsys, monkeypatch):
    import train.cli.evaluate

    def hungry(*args, **kwargs):
        raise MemoryError("Unable to allocate 74.5 GiB for an array with shape (10000000000,)")

    monkeypatch.setattr(train.cli.evaluate, "evaluate", hungry)
    code, out, err = run(capsys, "eval", "--agents", "random,random", "--games", "20")
    assert code == 1 and err == "llama-rl: error: out of memory: ask for less (fewer --games, say)\n"


# --------------------------------------------------------------------------- rule options

# Each command that plays games, with the arguments it needs besides the rule options;
# the table it sets is of RULE_TABLE players.
RULE_TABLE = 3
GAME_COMMANDS = {
    "eval": ["eval", "--agents", "random", "--players", "3", "--games", "2", "--workers", "1"],
    "tournament": [
        "tournament",
        "--agents",
        "random,greedy,cautious",
        "--players",
        "3",
        "--games",
        "2",
        "--workers",
        "1",
    ],
    "play": ["play", "--players", "3", "--opponents", "random", "--seed", "1"],
    "watch": ["watch", "--agents", "random", "--players", "3", "--seed", "1", "--delay", "0"],
}


def test_every_rule_option_has_a_test_value():
    for n in range(2, 7):
        rules = Rules(n, **other_rule_options())
        assert all(getattr(rules, f.name) != f.default for f in rule_option_fields())


@pytest.mark.parametrize("command", GAME_COMMANDS)
def test_every_rule_option_is_a_flag_of_every_game_command(capsys, command):
    code, out, _ = run(capsys, command, "--help")
    assert code == 0
    for f in rule_option_fields():
        assert rule_flag(f.name) in out, f"llama-rl {command} has no flag for the rule option {f.name}"
        assert " ".join(f.metadata["flag_help"].split()) in " ".join(out.split())


@pytest.mark.parametrize("command", GAME_COMMANDS)
def test_every_rule_option_given_as_a_flag_reaches_the_games(capsys, monkeypatch, command):
    import llama_env.table

    seen: list[Rules] = []
    init = llama_env.table.Table.__init__
    init_batch = llama_env.table.BatchTable.__init__

    def spy(self, game, *args, **kwargs):
        seen.append(game.rules)
        init(self, game, *args, **kwargs)

    def spy_batch(self, batch, *args, **kwargs):  # eval and tournament play on the batched engine
        seen.append(batch.rules)
        init_batch(self, batch, *args, **kwargs)

    monkeypatch.setattr(llama_env.table.Table, "__init__", spy)
    monkeypatch.setattr(llama_env.table.BatchTable, "__init__", spy_batch)
    monkeypatch.setattr(sys, "stdin", _script(*(["q"] * 500)))
    options = other_rule_options()
    flags = [word for name, value in options.items() for word in (rule_flag(name), str(value))]
    code, _, err = run(capsys, *GAME_COMMANDS[command], *flags)
    assert code == 0, err
    assert seen and set(seen) == {Rules(RULE_TABLE, **options)}


@pytest.mark.parametrize("command", GAME_COMMANDS)
def test_a_rule_option_the_table_refuses_is_a_usage_error(capsys, command):
    code, _, err = run(capsys, *GAME_COMMANDS[command], "--hand-size", "19")
    assert code == 2
    assert "error: --hand-size must be between 1 and 18 for 3 players" in err and "Traceback" not in err


# --------------------------------------------------------------------------- play


def _script(*lines: str) -> io.StringIO:
    return io.StringIO("".join(line + "\n" for line in lines))


def test_play_reprompts_on_bad_input_and_reaches_round_and_game_summaries():
    moves = ["banana", "play 9", "a12", "4", "draw", "L", "1", "2", "3", "5", "6", "quit"] * 400
    out = io.StringIO()
    code = play(PlayConfig(rules=Rules(3, end_score=15), opponents=("random",), seed=5), _script(*moves), out)
    text = out.getvalue()
    assert code == EXIT_FINISHED
    assert "I don't understand 'banana'" in text
    assert "There is no card 9" in text
    assert "There is no action 12" in text
    assert text.count("Your move> banana") >= 1
    assert "Round 1 over:" in text
    assert "Game over:" in text
    assert "player_1 " in text and ("draws" in text or "plays" in text or "quits the round" in text)
    assert "Your moves: " in text and "[q] quit the round" in text


def test_play_shows_the_table_as_the_person_sees_it():
    out = io.StringIO()
    play(PlayConfig(rules=Rules(4), opponents=("random",), seed=1), _script("exit"), out)
    text = out.getvalue()
    assert "Round 1 | top card:" in text and "draw pile:" in text
    assert "player_0 (you)" in text
    assert "6 cards" in text  # the others' hands show only their sizes
    assert "score" in text and " in " in text


def test_play_is_reproducible_with_a_seed():
    moves = ["d", "q"] * 300
    runs = []
    for _ in range(2):
        out = io.StringIO()
        play(PlayConfig(rules=Rules(3, end_score=12), opponents=("greedy", "random"), seed=11), _script(*moves), out)
        runs.append(out.getvalue())
    assert runs[0] == runs[1]


def test_play_ends_cleanly_at_end_of_input():
    out = io.StringIO()
    code = play(PlayConfig(rules=Rules(2), opponents=("random",), seed=0), io.StringIO("banana\n"), out)
    assert code == EXIT_LEFT
    assert "End of input" in out.getvalue()


def test_play_exit_leaves_the_game():
    out = io.StringIO()
    code = play(PlayConfig(rules=Rules(2), opponents=("random",), seed=0), _script("exit"), out)
    assert code == EXIT_LEFT
    assert "You left the game" in out.getvalue()


def test_play_other_seat_and_announced_opponents():
    out = io.StringIO()
    play(PlayConfig(rules=Rules(3), opponents=("random", "greedy"), seat=2, seed=4), _script("exit"), out)
    text = out.getvalue()
    assert "you are player_2" in text
    assert "player_0: random" in text and "player_1: greedy" in text
    assert "player_2 (you)" in text


def test_play_through_main_reads_stdin(capsys, monkeypatch):
    monkeypatch.setattr(sys, "stdin", _script(*(["q"] * 300)))
    code = main(["play", "--players", "2", "--opponents", "random", "--seed", "2", "--end-score", "10"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert "You quit the round." in captured.out
    assert "Round 1 over:" in captured.out and "Game over:" in captured.out


def test_play_through_main_at_end_of_input_exits_1(capsys, monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))
    code = main(["play", "--opponents", "random", "--seed", "2"])
    captured = capsys.readouterr()
    assert code == 1
    assert "End of input" in captured.out
    assert "Traceback" not in captured.err


# --------------------------------------------------------------------------- move parsing


def _game_top_3():
    # seat 0 holds 1 2 3 4 5 6 L... pick hands so both plays and refusals are visible
    return make_game(num_players=3, hands=[[3, 4, 7], [2, 3, 4], [4, 5, 6]], top=3)


@pytest.mark.parametrize(
    ("text", "action"),
    [
        ("4", Action.PLAY_4),
        ("play 4", Action.PLAY_4),
        ("  PLAY   4 ", Action.PLAY_4),
        ("p3", Action.PLAY_3),
        ("d", Action.DRAW),
        ("draw", Action.DRAW),
        ("q", Action.QUIT),
        ("quit", Action.QUIT),
        ("a7", Action.DRAW),
        ("action 3", Action.PLAY_4),
    ],
)
def test_parse_move_accepts_keys_words_and_action_numbers(text, action):
    assert parse_move(text, _game_top_3()) == action


def test_parse_move_llama_words():
    game = make_game(num_players=2, hands=[[7, 1], [2, 3]], top=7)
    for text in ("l", "L", "llama", "play llama", "7", "a6"):
        assert parse_move(text, game) == Action.PLAY_LLAMA


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("5", "you have no 5 in your hand"),
        ("llama", "a llama can't go on a 3: only a 3 or a 4 can"),
        ("a0", "you have no 1 in your hand"),
        ("play 0", "there is no card 0"),
        ("a9", "there is no action 9"),
        ("dance", "I don't understand 'dance'"),
        # a number of thousands of digits was a ValueError from int() and a traceback
        ("a" + "9" * 5000, r"there is no action 999999999999\.\.\.: action numbers are 0\.\.8"),
        ("9" * 5000, r"there is no card 999999999999\.\.\.:"),
        # digits of other scripts: \d took "a٦" as action 6, "٣" was called a card
        ("a\u0666", "I don't understand"),
        ("\u0663", "I don't understand"),
    ],
)
def test_parse_move_refusals_say_why(text, reason):
    with pytest.raises(MoveError, match=reason):
        parse_move(text, _game_top_3())


def test_parse_move_refuses_draws_the_rules_forbid():
    alone = make_game(num_players=2, hands=[[1], [2]], top=5, quit=[False, True])
    with pytest.raises(MoveError, match="everyone else has quit"):
        parse_move("draw", alone)
    empty = make_game(num_players=2, hands=[[1], [2]], top=5, draw_pile=[])
    with pytest.raises(MoveError, match="draw pile is empty"):
        parse_move("d", empty)


# --------------------------------------------------------------------------- agent specs


def test_agent_specs_parse_names_and_typed_parameters():
    assert parse_agent_spec("random") == AgentSpec("random")
    spec = parse_agent_spec("cautious:threshold=4")
    assert spec.params == {"threshold": 4}
    assert spec.label == "cautious:threshold=4"
    assert spec.build(seed=1).threshold == 4
    raw = parse_agent_spec("x:a=1.5:b=true:c=none:d=word", check=False)
    assert raw.params == {"a": 1.5, "b": True, "c": None, "d": "word"}
    assert [s.name for s in parse_agent_list("heuristic, random ,greedy")] == ["heuristic", "random", "greedy"]


def test_a_value_may_hold_a_colon_as_a_windows_path_does():
    """The spec was split at every colon, so ``path=C:\\models\\m.npz`` was refused as
    a parameter '\\models\\m.npz' not of the form key=value: only relative paths worked on Windows."""
    assert parse_agent_spec(r"ppo:path=C:\models\m.npz", check=False).params == {"path": r"C:\models\m.npz"}
    spec = parse_agent_spec(r"ppo:path=D:\m.npz: seed = 3", check=False)
    assert spec.params == {"path": r"D:\m.npz", "seed": 3}
    assert parse_agent_spec(spec.label, check=False) == spec
    with pytest.raises(ValueError, match="agent parameter 'threshold' in 'cautious:threshold' is not of the form"):
        parse_agent_spec("cautious:threshold")


def test_a_path_parameter_is_text_whatever_it_reads_as():
    """``ppo:path=none`` read as None and quietly played the shipped model under the label
    of a file called none; ``path=1`` would be the integer 1."""
    assert parse_agent_spec("ppo:path=none", check=False).params == {"path": "none"}
    assert parse_agent_spec("search:networks_path=1:worlds=8", check=False).params == {
        "networks_path": "1",
        "worlds": 8,
    }
    with pytest.raises(ValueError, match="no PPO model at none"):
        parse_agent_spec("ppo:path=none")


def test_every_command_name_is_a_subcommand(capsys):
    from train.cli import COMMAND_NAMES

    code, out, _ = run(capsys, "--help")
    assert code == 0
    section = out.split("commands:")[1].split("examples:")[0].splitlines()
    listed = [line.split()[0] for line in section if line.startswith("    ") and not line.startswith("     ")]
    assert listed == list(COMMAND_NAMES)
    for name in COMMAND_NAMES:
        assert main([name, "--help"]) == 0
    capsys.readouterr()


def test_train_without_the_training_extra_names_the_extra():
    script = (
        "import sys\n"
        "for name in ('torch', 'stable_baselines3', 'sb3_contrib'):\n"
        "    sys.modules[name] = None\n"
        "from train.cli import main\n"
        "sys.exit(main(['train', '--preset', 'smoke', '--run-dir', sys.argv[1]]))\n"
    )
    proc = subprocess.run([sys.executable, "-c", script, "unused-runs"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr.startswith("llama-rl: error: llama-rl train needs the package")
    assert install_hint("train") in proc.stderr and "Traceback" not in proc.stderr


def test_version(capsys):
    import llama_env

    assert main(["--version"]) == 0
    assert capsys.readouterr().out.strip() == f"llama-rl {llama_env.__version__}"


def test_an_unknown_flag_shows_the_usage_of_its_command(capsys):
    code = main(["eval", "--agents", "random,random", "--bogus", "3"])
    err = capsys.readouterr().err
    assert code == 2
    assert err.startswith("usage: llama-rl eval") and "llama-rl eval: error: unrecognized arguments: --bogus 3" in err


def test_agents_listing_has_no_markup(capsys):
    main(["agents"])
    out = capsys.readouterr().out
    assert "``" not in out and ":class:" not in out
    assert "at most threshold" in out


def test_one_card_is_one_card():
    from llama_env.render import render_table

    g = make_game(num_players=3, hands=[[1, 2], [3], [4, 5]], top=3)
    text = render_table(g, 0)
    assert "1 card\n" in text + "\n" and "1 cards" not in text and "2 cards" in text


def test_eval_and_tournament_record_games_that_replay_exactly(tmp_path, capsys):
    import json

    from llama_env.record import GameRecording
    from train.evaluation import evaluate

    out = tmp_path / "records"
    assert (
        main(
            [
                "eval",
                "--agents",
                "heuristic,random,cautious",
                "--games",
                "3",
                "--workers",
                "2",
                "--record",
                str(out),
                "--no-progress",
            ]
        )
        == 0
    )
    result = evaluate(["heuristic", "random", "cautious"], 3, seed=0, workers=1, batched=False)  # as recorded
    files = sorted(out.glob("game_*.json"))
    assert len(files) == 3
    for k, path in enumerate(files):
        recording = GameRecording.from_json(json.loads(path.read_text()))
        end = recording.replay()
        assert end.game_over and sorted(end.scores) == sorted(result.scores[k].astype(int).tolist())
        # where it came from: the evaluation's seed, its game number, who sat where, the version
        context = recording.context
        assert context == {"llama_rl_version": llama_env.__version__, "seed": 0, "game": k, "seats": context["seats"]}
        assert sorted(context["seats"]) == [0, 1, 2] and [result.names[i] for i in context["seats"]] == recording.agents
    assert (
        main(
            [
                "tournament",
                "--agents",
                "heuristic,random,greedy",
                "--players",
                "2",
                "--games",
                "2",
                "--workers",
                "1",
                "--record",
                str(tmp_path / "t"),
                "--no-progress",
            ]
        )
        == 0
    )
    assert len(list((tmp_path / "t").glob("game_*.json"))) == 2
    (tmp_path / "file").write_text("x")
    code = main(["eval", "--agents", "random,random", "--games", "2", "--record", str(tmp_path / "file" / "sub")])
    err = capsys.readouterr().err
    assert code == 2 and "game records: " in err and "is a file, not a folder" in err and "Traceback" not in err
    code = main(["eval", "--agents", "random,random", "--games", "2", "--record", str(tmp_path / "file")])
    err = capsys.readouterr().err
    assert code == 2 and "game records: " in err and "is a file, not a folder" in err
    # a second run into the same folder would leave its games mixed with the first's
    before = {p.name: p.read_text() for p in out.glob("game_*.json")}
    code = main(["eval", "--agents", "greedy,random", "--games", "2", "--record", str(out), "--no-progress"])
    err = capsys.readouterr().err
    assert code == 2 and "already holds 3 from an earlier run (game_000000.json, ...)" in err, err
    assert {p.name: p.read_text() for p in out.glob("game_*.json")} == before


def test_duplicate_with_no_rotate_is_refused_naming_both(capsys):
    code = main(["eval", "--agents", "heuristic,random", "--games", "4", "--duplicate", "--no-rotate"])
    err = capsys.readouterr().err
    assert code == 2 and "(--duplicate) plays every deal from every seat" in err and "(--no-rotate)" in err, err
    assert "Traceback" not in err


def test_the_projects_warnings_print_as_one_line_like_its_errors(tmp_path):
    """A warning such as resume's "skipping a broken checkpoint" printed a file name, a line
    number and the source line that raised it; other packages' warnings keep Python's form."""
    import warnings
    from pathlib import Path

    import train.cli as cli

    ours = str(Path(cli.__file__).resolve().parents[1] / "training" / "resume.py")
    line = cli._format_warning(warnings.formatwarning, "resume: skipping x.zip", RuntimeWarning, ours, 77)
    assert line == "llama-rl: warning: resume: skipping x.zip\n"
    theirs = cli._format_warning(warnings.formatwarning, "old API", DeprecationWarning, "/elsewhere/pkg.py", 3)
    assert theirs.startswith("/elsewhere/pkg.py:3: DeprecationWarning: old API")
    # llama-rl's warnings pointed past its packages, at the program's line: the launcher's
    launcher = "/venv/bin/llama-rl"
    line = cli._format_warning(
        warnings.formatwarning, "plugin not loaded", RuntimeWarning, launcher, 6, program=(launcher, 6)
    )
    assert line == "llama-rl: warning: plugin not loaded\n"
    program = (launcher, 6)
    theirs = cli._format_warning(warnings.formatwarning, "old", DeprecationWarning, "/e/pkg.py", 3, program=program)
    assert theirs.startswith("/e/pkg.py:3: DeprecationWarning: old")
    own = cli._format_warning(warnings.formatwarning, "mine", UserWarning, launcher, 2, program=program)
    assert own.startswith("/venv/bin/llama-rl:2: UserWarning: mine")  # another line of the program's file
    before = warnings.formatwarning
    assert main(["agents"]) == 0 and warnings.formatwarning is before  # main sets it for its command only


def test_a_warning_of_the_program_that_calls_main_keeps_its_file_and_line(agent_registry, capsys):
    """A script or notebook calling main() had its own warnings (its agent's, as it plays)
    printed as llama-rl's one line, without their file and line: every warning of the
    file main() was called from counted as llama-rl's, not only those at the calling line."""
    import warnings

    import numpy as np

    from llama_env.agent import register

    class Noisy:
        def act(self, observation, action_mask):
            warnings.warn("noisy: my own deprecation", DeprecationWarning, stacklevel=1)
            return int(np.flatnonzero(action_mask)[0])

    register("noisy")(Noisy)
    with warnings.catch_warnings():
        warnings.simplefilter("default")
        warnings.showwarning = lambda message, category, filename, lineno, file=None, line=None: sys.stderr.write(
            warnings.formatwarning(message, category, filename, lineno, line)
        )  # on stderr, as at the command line (pytest records them)
        code, _, err = run(
            capsys, "eval", "--agents", "noisy,random", "--games", "2", "--workers", "1", "--no-progress"
        )
    assert code == 0 and f"{__file__}:" in err and ": DeprecationWarning: noisy: my own deprecation\n" in err, err
    assert "llama-rl: warning: noisy" not in err


# ------------------------------------------------------------------ export


def test_export_writes_the_shipped_general_model_from_its_training_run(capsys, tmp_path):
    """agents/models/ppo_llama.npz is what `llama-rl export` makes of ppo_llama.zip: the
    same policy, to the bit, and it plays the same moves with numpy alone."""
    import numpy as np

    import agents
    from agents.ppo import DEFAULT_MODEL, DEFAULT_MODEL_ZIP, load_actor

    out = tmp_path / "general.npz"
    code, stdout, err = run(capsys, "export", str(DEFAULT_MODEL_ZIP), "--out", str(out))
    assert code == 0, err
    assert "a 128-128 tanh policy reading observation version 0" in stdout
    made, shipped = load_actor(out), load_actor(DEFAULT_MODEL)
    assert made.activation == shipped.activation
    for (w, b), (w2, b2) in zip(made.layers, shipped.layers, strict=True):
        assert np.array_equal(w, w2) and np.array_equal(b, b2)
    from_zip = agents.make("ppo", path=str(DEFAULT_MODEL_ZIP))
    from_npz = agents.make("ppo", path=str(out))
    from llama_env.engine import LlamaGame
    from llama_env.observation import action_mask, encode

    game = LlamaGame(3, rng=4)
    for _ in range(60):
        if game.game_over:
            break
        obs, mask = encode(game, game.current_player), action_mask(game.legal_actions())
        move = from_npz.act(obs, mask)
        assert from_zip.act(obs, mask) == move
        game.step(move)


def test_export_refuses_what_it_cannot_write_or_read(capsys, tmp_path):
    from agents.ppo import DEFAULT_MODEL

    cases = [
        (("export", str(tmp_path / "none.zip"), "--out", str(tmp_path / "a.npz")), "no such file or directory"),
        (("export", str(DEFAULT_MODEL), "--out", str(tmp_path / "a.zip")), "--out must name a .npz file"),
        (("export", str(DEFAULT_MODEL), "--out", str(tmp_path / "no" / "a.npz")), "does not exist"),
        (("export", __file__, "--out", str(tmp_path / "a.npz")), "cannot load a PPO model"),
        (("export", str(DEFAULT_MODEL), "--out", f"{__file__}/sub/a.npz"), f"{__file__!r} is a file, not a folder"),
    ]
    for argv, message in cases:
        code, _, err = run(capsys, *argv)
        assert code == 2 and message in err, (argv, err)
        assert "Traceback" not in err
    assert not (tmp_path / "a.npz").exists()


def test_an_output_folder_that_takes_no_file_is_refused_before_the_work(capsys, tmp_path, monkeypatch):
    """A read-only folder was found only when the result was saved: fit-search and distill
    played and fitted for minutes, then ended in an OSError traceback with nothing saved."""
    from agents.ppo import DEFAULT_MODEL

    def read_only(directory, prefix, suffix):
        raise PermissionError(30, "Read-only file system", str(directory))

    monkeypatch.setattr("llama_env._atomic.new_file", read_only)
    for argv in (("export", str(DEFAULT_MODEL)), ("fit-search", "--games", "8"), ("distill", "--games", "8")):
        code, _, err = run(capsys, *argv, "--out", str(tmp_path / "a.npz"))
        assert code == 2 and f"cannot write in {str(tmp_path)!r} (Read-only file system)" in err, (argv, err)
    monkeypatch.undo()

    def full(*args, **kwargs):  # a disk that fills while the result is written
        raise OSError(28, "No space left on device", str(tmp_path / "a.npz"))

    monkeypatch.setattr("agents.ppo.atomic_savez", full)
    code, _, err = run(capsys, "export", str(DEFAULT_MODEL), "--out", str(tmp_path / "a.npz"))
    assert code == 1 and f"llama-rl: error: cannot write {tmp_path / 'a.npz'} (No space left on device)\n" == err, err
    assert "Traceback" not in err


def test_serve_without_the_web_extra_names_the_extras_package():
    """It named 'anyio', a package of starlette's that the user never asked for."""
    script = (
        "import sys\n"
        "for name in ('anyio', 'starlette', 'uvicorn'):\n"
        "    sys.modules[name] = None\n"
        "from train.cli import main\n"
        "sys.exit(main(['serve', '--port', '8765']))\n"
    )
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1, proc.stderr
    assert "llama-rl serve needs the package 'starlette'" in proc.stderr
    assert install_hint("web") in proc.stderr and "Traceback" not in proc.stderr


def test_serve_without_openskill_names_the_web_extra(tmp_path):
    """It started without openskill, which the web extra brings, and the History page then
    failed ('the server failed on this request', a ModuleNotFoundError in the console)."""
    script = (
        "import sys\n"
        "sys.modules['openskill'] = None\n"
        "from train.cli import main\n"
        f"sys.exit(main(['serve', '--port', '8765', '--history', {str(tmp_path / 'h.sqlite3')!r}]))\n"
    )
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr.startswith(
        "llama-rl: error: llama-rl serve needs the package 'openskill', which is not installed"
    )
    assert install_hint("web") in proc.stderr and "Traceback" not in proc.stderr
    assert proc.stdout == ""  # refused before it served


def test_no_help_sends_a_wheel_install_to_a_docs_file_it_lacks():
    """'llama-rl --help' listed 'train a PPO agent with self-play (see docs/training.md)', and a
    wheel ships no docs/: a help that points to a guide says it is in the source."""
    import argparse
    import re

    from train.cli import build_parser

    parser = build_parser()
    (commands,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    for name, p in {"llama-rl": parser, **commands.choices}.items():
        text = p.format_help()
        for m in re.finditer(r"docs/\S+\.md", text):
            assert re.match(r"\s+in\s+the\s+source\b", text[m.end() :]), (name, text[m.start() - 40 : m.end() + 20])
    assert "train a PPO agent with self-play\n" in parser.format_help()
    assert "training guide (docs/training.md in the source)" in " ".join(
        commands.choices["train"].format_help().split()
    )


def test_a_console_that_is_not_utf8_gets_escapes_not_a_failed_command(monkeypatch, capsys):
    """Windows' redirected streams are cp1252: a run named ``σ-run`` trained, then its
    summary raised UnicodeEncodeError (exit 1, the final comparison never printed), and
    piped input that was not cp1252 raised UnicodeDecodeError."""
    import train.cli

    raw_out, raw_in = io.BytesIO(), io.BytesIO("heuristic ā\n".encode())
    out = io.TextIOWrapper(raw_out, encoding="cp1252")
    monkeypatch.setattr(sys, "stdout", out)
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(raw_in, encoding="cp1252"))
    train.cli._tolerant_streams()
    print("run σ-run saved")
    out.flush()
    assert raw_out.getvalue() == b"run \\u03c3-run saved" + os.linesep.encode()
    assert sys.stdin.readline() == "heuristic \u0101\n".encode().decode("cp1252", "replace")
    utf8 = io.TextIOWrapper(io.BytesIO(), encoding="utf-8")
    monkeypatch.setattr(sys, "stdout", utf8)
    train.cli._tolerant_streams()
    assert utf8.errors == "strict"  # a UTF-8 console is left as it is


def test_a_stray_byte_under_the_c_locale_reads_as_the_replacement_character(monkeypatch):
    """Under the C and C.UTF-8 locales Python reads stdin with ``surrogateescape``: a
    stray byte in ``play``'s input was echoed as "I don't understand '\\udcff'", not
    the replacement character that a UTF-8 console gives. Standard output keeps its mode."""
    import train.cli

    stdin = io.TextIOWrapper(io.BytesIO(b"\xff\n"), encoding="utf-8", errors="surrogateescape")
    stdout = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", errors="surrogateescape")
    monkeypatch.setattr(sys, "stdin", stdin)
    monkeypatch.setattr(sys, "stdout", stdout)
    train.cli._tolerant_streams()
    assert sys.stdin.readline() == "\ufffd\n"
    assert stdout.errors == "surrogateescape"


@pytest.mark.skipif(not hasattr(signal, "SIGUSR1"), reason="needs SIGUSR1 to stand in for SIGBREAK")
def test_every_stop_signal_stops_a_command_as_ctrl_c_does(monkeypatch):
    """Windows sends no SIGTERM: there Ctrl-Break and a closed console (SIGBREAK) must
    stop a run as Ctrl-C does, checkpoint and all. SIGUSR1 stands in for it here."""
    import train.cli
    from train import _program
    from train.training import run_dir

    assert (signal.SIGTERM, *([signal.SIGBREAK] if hasattr(signal, "SIGBREAK") else [])) == _program.STOP_SIGNALS
    assert run_dir.STOP_SIGNALS is _program.STOP_SIGNALS  # a trainer's save holds back the same ones
    monkeypatch.setattr(_program, "STOP_SIGNALS", (signal.SIGTERM, signal.SIGUSR1))
    before = signal.getsignal(signal.SIGUSR1)
    stopped_by: list[str] = []
    with pytest.raises(KeyboardInterrupt), train.cli._terminate_as_ctrl_c(stopped_by):
        os.kill(os.getpid(), signal.SIGUSR1)
        time.sleep(1)  # the handler runs at the next bytecode of the main thread
    assert stopped_by == ["SIGUSR1"]  # main's one line names it: "llama-rl: interrupted (SIGUSR1)"
    assert signal.getsignal(signal.SIGUSR1) == before


def test_a_file_named_agents_beside_the_script_is_named_in_one_line(tmp_path):
    """``python -m train.cli``, or a script calling ``main``, beside a user's agents.py
    died at import in a traceback ending "'agents' is not a package"; the README promises
    that the error names the file, as agents.make's does."""
    (tmp_path / "agents.py").write_text("MINE = True\n")
    (tmp_path / "script.py").write_text("import sys\nfrom train.cli import main\nsys.exit(main(['agents']))\n")
    expected = (
        f"llama-rl: error: the built-in agents are not registered: 'import agents' found "
        f"{tmp_path / 'agents.py'}, not llama-rl's package; rename that file or folder (or run from another folder)\n"
    )
    for argv in (["-m", "train.cli", "agents"], ["script.py"]):
        run = subprocess.run([sys.executable, *argv], cwd=tmp_path, capture_output=True, text=True, timeout=120)
        assert (run.returncode, run.stderr, run.stdout) == (1, expected, ""), argv
