"""The benchmark scripts refuse bad options as usage errors (one ``error:`` line, exit 2)
before a game is played or a server started, and a missing extra is one line naming it
(exit 1). Every script is run as a program, as a user runs it; none of these reaches the
measuring."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from conftest import needs_rllib

from llama_env._install import install_hint
from train.evaluation.runner import usable_cores
from train.training.config import config_from_dict
from train.training.presets import PRESETS, preset_values

ROOT = Path(__file__).resolve().parents[1]

SITECUSTOMIZE = textwrap.dedent(
    """
    import os, sys
    for name in filter(None, os.environ.get("BENCH_TEST_BLOCK", "").split(",")):
        sys.modules[name] = None  # as if not installed
    if os.environ.get("BENCH_TEST_SERVER_FAILS") and sys.argv[:2] == ["-m", "serve"]:
        sys.stderr.write("llama-rl: error: the test's server cannot start\\n")
        sys.stderr.flush()
        os._exit(2)
    if os.environ.get("BENCH_TEST_SERVER_BUSY") and sys.argv[:2] == ["-m", "serve"]:
        from http.server import BaseHTTPRequestHandler, HTTPServer

        class Busy(BaseHTTPRequestHandler):  # what uvicorn answers past its connections
            def do_POST(self):
                self.rfile.read(int(self.headers.get("Content-Length", 0)))
                self.send_response(503)
                self.send_header("Content-Type", "text/plain; charset=utf-8")
                self.send_header("Content-Length", "19")
                self.end_headers()
                self.wfile.write(b"Service Unavailable")

            def log_message(self, *args):
                pass

        HTTPServer(("127.0.0.1", int(sys.argv[sys.argv.index("--port") + 1])), Busy).serve_forever()
    if os.environ.get("BENCH_TEST_EVAL_SECONDS"):  # each evaluate call takes the (wall, CPU) seconds given
        import json, time
        import train.evaluation

        given, clock, play = json.loads(os.environ["BENCH_TEST_EVAL_SECONDS"]), [0.0, 0.0], train.evaluation.evaluate

        def evaluate(*args, **kwargs):
            result = play(*args, **kwargs)
            wall, cpu = given["batched" if kwargs.get("batched", True) else "game by game"].pop(0)
            clock[0] += wall
            clock[1] += cpu
            return result

        train.evaluation.evaluate = evaluate
        time.perf_counter = lambda: clock[0]
        time.process_time = lambda: clock[1]
    """
)


def bench(script: str, *args: str, tmp_path: Path | None = None, **env: str) -> subprocess.CompletedProcess[str]:
    """``python benchmarks/<script>.py args``; with ``env``, a ``sitecustomize`` in
    ``tmp_path`` blocks the modules of ``BENCH_TEST_BLOCK`` (or fails the server child, or
    makes it answer every request 503 in plain text, or gives each ``evaluate`` call the
    wall and CPU seconds of ``BENCH_TEST_EVAL_SECONDS``)."""
    environ = dict(os.environ)
    if env:
        assert tmp_path is not None
        (tmp_path / "sitecustomize.py").write_text(SITECUSTOMIZE)
        environ.update(env, PYTHONPATH=os.pathsep.join([str(tmp_path), environ.get("PYTHONPATH", "")]))
    return subprocess.run(
        [sys.executable, f"benchmarks/{script}.py", *args],
        cwd=ROOT,
        env=environ,
        capture_output=True,
        text=True,
        timeout=60,
    )


def one_error(out: subprocess.CompletedProcess[str], script: str, code: int) -> str:
    """The one error line of a refused run (exit ``code``, nothing measured)."""
    assert out.returncode == code, out.stdout + out.stderr
    assert "Traceback" not in out.stderr
    assert out.stdout == ""
    errors = [line for line in out.stderr.splitlines() if "error:" in line]
    assert len(errors) == 1, out.stderr
    assert errors[0].startswith(f"{script}.py: error: ")
    return errors[0]


USAGE_ERRORS = [
    ("serve_load", ["--games", "1", "--seconds", "1", "--opponents", "bogus"], "--opponents: unknown agent 'bogus'"),
    ("serve_load", ["--games", "1", "--seconds", "1", "--costly", "bogus"], "--costly: unknown agent 'bogus'"),
    ("serve_load", ["--games", "1", "--seconds", "1", "--opponents", "search:worlds=0"], "--opponents: "),
    ("serve_load", ["--games", "1", "--seconds", "1e10"], "--seconds must be between 1 and 86400, got 1e10"),
    ("ppo_strength", ["--games", "1", "--players", "7"], "the number of players must be between 2 and 6, got 7"),
    ("ppo_strength", ["--games", "1", "--players", "2,x"], "players must be an integer (digits 0-9), got 'x'"),
    ("ppo_strength", ["--games", "1", "--players", "2", "--model", "bogus"], "--model 'bogus': unknown agent"),
    ("ppo_strength", ["--games", "1", "--players", "2", "--opponents", "bogus"], "--opponents: unknown agent"),
    ("ppo_strength", ["--players", "2", "--model", "no_such_dir/m.zip"], "'no_such_dir/m.zip': no such model file or"),
    ("ppo_strength", ["--players", "2", "--model", "no_such.npz"], "--model 'no_such.npz': no such model file or"),
    # a spec with parameters keeps its own error, whatever its values hold
    ("ppo_strength", ["--players", "2", "--model", "ppo:paht=/tmp/x.zip"], "agent 'ppo' has no parameter 'paht'"),
    ("ppo_strength", ["--players", "2", "--model", "serach:networks_path=/tmp/x.npz"], "unknown agent 'serach'"),
    ("ppo_strength", ["--players", "2", "--model", "search:worlds=0/1"], "SearchAgent worlds must be an integer"),
    ("search_speed", ["--games", "0", "--batched-games", "0"], "--games must be between 1 and"),
    ("search_speed", ["--games", "1", "--rounds", "2", "--batched-games", "0"], "a multiple of 2 (2)"),
    ("search_speed", ["--games", "5", "--rounds", "2"], "--games 5 cannot be split evenly over --rounds 2: give a"),
    # no multiple past --games' cap is offered, and --rounds has the same cap
    ("search_speed", ["--games", "1000000000", "--rounds", "3"], "give a multiple of 3 (999999999)"),
    ("search_speed", ["--games", "1", "--rounds", "100000000000"], "--rounds must be between 1 and 1000000000, got"),
    ("search_speed", ["--games", "1", "--mirror", "1.5"], "--mirror must be"),
    ("search_speed", ["--games", "1", "--players", "3"], "argument --players: invalid choice: 3 (choose from 2, 4, 6)"),
    ("eval_speed", ["--games", "10", "--repeats", "1", "--agents", "heuristic"], "--agents names 1 agent;"),
    ("eval_speed", ["--games", "10", "--repeats", "1", "--agents", ",".join(["random"] * 7)], "names 7 agents;"),
    ("train_speed", ["--steps", "10", "--n-envs", "8"], "n_envs (256): at n_steps 32, n_envs must be at least 64"),
    ("train_speed", ["--preset", "smoke", "--n-envs", "1"], "n_envs (32): at n_steps 32, n_envs must be at least 8"),
    ("train_speed", ["--steps", "10", "--players", "7"], "argument --players: config key 'players' must be ints 2..6"),
    ("train_speed", ["--opponents", "heuristic:x"], "argument --opponents: config key 'opponents': weight of"),
    ("train_speed", ["--steps", "10", "--opponents", "bogus"], "config key 'opponents' names unknown agent 'bogus'"),
    ("batch_speed", ["--games", "100000000"], "--games must be at most 1,000,000"),
    ("batch_speed", ["--games", "1000001", "--seconds", "0.01", "--repeats", "1"], "--games must be at most"),
]


@pytest.mark.parametrize(
    ("script", "args", "message"), USAGE_ERRORS, ids=lambda x: " ".join(x) if isinstance(x, list) else x
)
def test_a_bad_option_is_a_usage_error(script: str, args: list[str], message: str) -> None:
    assert message in one_error(bench(script, *args), script, 2)


PINNED = {"batch_speed", "env_speed", "search_speed"}
"""The scripts that pin themselves to one core (where the system lets a process do so)."""


def first_line(out: subprocess.CompletedProcess[str], script: str, args: list[str]) -> None:
    """The run's first line names the machine (its CPU, the cores this process may use: one
    for a script that pins itself to one) and the command that reproduces it."""
    first = out.stdout.splitlines()[0]
    cores = 1 if script in PINNED and hasattr(os, "sched_setaffinity") else usable_cores()
    assert first.startswith("machine: ") and f", {cores} usable core{'s' if cores != 1 else ''} of " in first
    assert f" of {os.cpu_count()}, " in first
    assert first.endswith("; command: " + shlex.join(["python", f"benchmarks/{script}.py", *args])), first


QUICK_RUNS = [
    ("architecture", []),
    ("batch_speed", ["--games", "4", "--seconds", "0.01", "--repeats", "1"]),
    ("env_speed", ["--seconds", "0.01", "--repeats", "1", "--players", "2", "--no-openspiel"]),
    ("eval_speed", ["--games", "10", "--repeats", "1", "--workers", "1"]),
    ("results_table", ["--games", "1", "--tournament-games", "1", "--workers", "1"]),
    ("search_speed", ["--games", "1", "--rounds", "1", "--batched-games", "0", "--worlds", "1"]),
    ("ppo_strength", ["--games", "1", "--players", "2", "--opponents", "random", "--workers", "1"]),
]


@pytest.mark.parametrize(("script", "args"), QUICK_RUNS, ids=[s for s, _ in QUICK_RUNS])
def test_a_run_first_says_on_what_machine_and_by_what_command(script: str, args: list[str]) -> None:
    """No script said what machine it ran on or how to run it again, and the docs compare
    figures between machines (train_speed and rllib_speed: in their own tests)."""
    out = bench(script, *args)
    assert "Traceback" not in out.stderr, out.stderr
    first_line(out, script, args)


def test_ppo_strength_checks_the_json_folder_before_the_first_row(tmp_path: Path) -> None:
    """The JSON's folder was found missing after every row had played, the rows lost."""
    missing = tmp_path / "missing" / "x.json"
    args = ["--games", "1", "--players", "2", "--opponents", "random", "--workers", "1", "--json", str(missing)]
    line = one_error(bench("ppo_strength", *args), "ppo_strength", 2)
    assert f"the folder {str(missing.parent)!r} does not exist" in line
    line = one_error(bench("ppo_strength", *args[:-1], str(tmp_path)), "ppo_strength", 2)
    assert "is a folder, not a file" in line


@pytest.mark.parametrize(
    ("script", "args", "blocked", "extra"),
    [
        ("train_speed", ["--steps", "10"], "torch", "train"),
        ("train_speed", ["--steps", "10"], "sb3_contrib", "train"),  # imported only as training starts
        ("rllib_speed", ["--steps", "10"], "ray", "rllib"),
        ("rllib_speed", ["--steps", "10"], "torch", "rllib"),
        ("rllib_speed", ["--steps", "10"], "sb3_contrib", "rllib"),
        ("serve_load", ["--games", "1", "--seconds", "1"], "starlette,uvicorn", "web"),
    ],
)
def test_a_missing_extra_is_one_line_naming_it(
    tmp_path: Path, script: str, args: list[str], blocked: str, extra: str
) -> None:
    line = one_error(bench(script, *args, tmp_path=tmp_path, BENCH_TEST_BLOCK=blocked), script, 1)
    assert f"install the {extra!r} extra: {install_hint(extra)}" in line


ZIP_MODEL = "ppo:path=agents/models/ppo_llama.zip"
"""An agent whose model is read with torch (the ``train`` extra)."""

NEEDS_TORCH = ": the ppo agent reads its model with torch, which is not installed: "
"""What an agent's ``MissingExtra`` says, before the install hint."""


@pytest.mark.parametrize(
    ("script", "args", "option", "said"),
    [
        (
            "eval_speed",
            ["--games", "2", "--repeats", "1", "--workers", "1", "--agents", f"{ZIP_MODEL},random"],
            "--agents",
            NEEDS_TORCH,
        ),
        ("ppo_strength", ["--games", "1", "--players", "2", "--opponents", ZIP_MODEL], "--opponents", NEEDS_TORCH),
        (
            "ppo_strength",
            ["--games", "1", "--players", "2", "--model", "agents/models/ppo_llama.zip"],
            "--model",
            NEEDS_TORCH,
        ),
        ("serve_load", ["--games", "1", "--seconds", "1", "--costly", ZIP_MODEL], "--costly", NEEDS_TORCH),
        # the config builds its opponents: the script's extra is found missing before
        (
            "train_speed",
            ["--steps", "10", "--opponents", ZIP_MODEL],
            "this benchmark",
            " needs the package 'torch', which is not installed; install the 'train' extra: ",
        ),
    ],
)
def test_an_agent_that_needs_a_missing_extra_is_one_line_naming_it(
    tmp_path: Path, script: str, args: list[str], option: str, said: str
) -> None:
    """A ``.zip`` model without torch was a traceback ending in MissingExtra: the agents'
    check caught only a ValueError (``--model`` alone said it in one line); train_speed's
    config built its opponents before the script looked for its extra."""
    line = one_error(bench(script, *args, tmp_path=tmp_path, BENCH_TEST_BLOCK="torch"), script, 1)
    assert line.startswith(f"{script}.py: error: {option}")
    assert line.endswith(f"{said}{install_hint('train')}")


def test_ppo_strength_names_the_column_by_the_model() -> None:
    """The column said "PPO win share" whatever --model played."""
    args = ["--games", "1", "--players", "2", "--opponents", "random", "--workers", "1", "--model", "ppo_v3"]
    out = bench("ppo_strength", *args)
    assert out.returncode == 0, out.stderr
    assert "| players | opponents | ppo_v3 win share | 95% CI |" in out.stdout


def test_serve_load_shows_why_its_server_did_not_start(tmp_path: Path) -> None:
    """The server's stderr went to DEVNULL: its reason was lost, and the script waited
    30 s and died with a ConnectionRefusedError."""
    out = bench("serve_load", "--games", "1", "--seconds", "1", tmp_path=tmp_path, BENCH_TEST_SERVER_FAILS="1")
    assert out.returncode == 1, out.stderr
    assert "Traceback" not in out.stderr
    assert "serve_load.py: error: the server exited with code 2; the server said:" in out.stderr
    assert "the test's server cannot start" in out.stderr


def test_serve_load_stops_at_a_request_the_server_refuses(tmp_path: Path) -> None:
    """A game the server refuses ran the whole load, then died in np.percentile of no
    moves, the server's reason never shown."""
    model = tmp_path / "m.npz"
    model.write_bytes((ROOT / "agents" / "models" / "ppo_llama_4p.npz").read_bytes())
    out = bench("serve_load", "--games", "1", "--seconds", "1", "--opponents", f"ppo:path={model}")
    line = one_error(out, "serve_load", 1)
    assert "the server refused a game against ppo:path=" in line
    assert "load no files by path" in line


def test_serve_load_refuses_more_games_than_the_server_takes_connections() -> None:
    """--games took up to 10**9, the server answered the connections past 512 with a 503,
    and the script stopped with "lost the server: JSONDecodeError"."""
    from train.play.web import MAX_CONNECTIONS

    line = one_error(bench("serve_load", "--games", str(MAX_CONNECTIONS - 1), "--seconds", "1"), "serve_load", 2)
    assert f"--games must be at most {MAX_CONNECTIONS - 2} (the server takes {MAX_CONNECTIONS} connections)" in line


def test_serve_load_reports_a_refusal_in_plain_text_as_a_refusal(tmp_path: Path) -> None:
    """A 503 in plain text was read as JSON: "lost the server: JSONDecodeError"."""
    out = bench("serve_load", "--games", "1", "--seconds", "1", tmp_path=tmp_path, BENCH_TEST_SERVER_BUSY="1")
    line = one_error(out, "serve_load", 1)
    assert line == "serve_load.py: error: the server refused a game against heuristic: 503 Service Unavailable"


def test_eval_speed_says_where_each_path_played() -> None:
    """The header said "2 workers" for a batch of up to 50,000 games, which plays in one
    process."""
    out = bench("eval_speed", "--games", "40", "--scalar-games", "10", "--workers", "2", "--repeats", "1")
    assert out.returncode == 0, out.stderr
    batched, scalar = [line for line in out.stdout.splitlines() if ", run 1:" in line]
    assert "40 games, this process" in batched
    assert "10 games, 2 worker processes" in scalar


def test_eval_speed_compares_each_path_by_the_games_a_second_of_its_own_calls(tmp_path: Path) -> None:
    """--scalar-games scaled the game-by-game time to --games: the speed-up grew as the
    option shrank (62x from 20 games of 4,000, 15x unscaled), and with the start-up taken
    off first a run read -281 s and the summary "-444.1x (best)". Each call's own seconds
    (stubbed here) are now printed as measured, and the paths compared by games per
    second and per CPU second."""
    seconds = {
        "batched": [[0.5, 0.5], [0.25, 0.25], [1.0, 0.0625]],  # 40 games a call
        "game by game": [[1.0, 1.0], [2.0, 1.25], [0.625, 0.5]],  # 10 games a call
    }
    args = ["--games", "40", "--scalar-games", "10", "--workers", "1", "--repeats", "3"]
    out = bench("eval_speed", *args, tmp_path=tmp_path, BENCH_TEST_EVAL_SECONDS=json.dumps(seconds))
    assert out.returncode == 0, out.stderr
    runs = [line.split(":", 1)[1] for line in out.stdout.splitlines() if ", run " in line]
    assert [r.split(", ")[:3] for r in runs] == [
        ["   0.50 s", "  0.50 CPU s", "40 games"],
        ["   1.00 s", "  1.00 CPU s", "10 games"],
        ["   0.25 s", "  0.25 CPU s", "40 games"],
        ["   2.00 s", "  1.25 CPU s", "10 games"],
        ["   1.00 s", "  0.06 CPU s", "40 games"],
        ["   0.62 s", "  0.50 CPU s", "10 games"],
    ]
    assert "best 0.25 s, median 0.50 s for 40 games (160 games/s, " in out.stdout  # 40 / 0.25, 40 / 0.5
    assert "CPU best 0.06 s, median 0.25 s;" in out.stdout
    assert "best 0.62 s, median 1.00 s for 10 games (16 games/s, " in out.stdout  # 10 / 0.625, 10 / 1
    assert "CPU best 0.50 s, median 1.00 s;" in out.stdout
    # 160 / 16 and 80 / 10 games/s; 640 / 20 and 160 / 10 games a CPU second
    ratio = "games per second: 10.0x (best), 8.0x (median); games per CPU second: 32.0x (best), 16.0x (median)"
    assert out.stdout.splitlines()[-1] == f"batched / game by game, {ratio}"
    assert "(fewer: a call's start-up weighs more a game, so the ratio reads high)" in out.stdout.splitlines()[1]


def test_batch_speed_prints_the_ratio_to_two_significant_figures() -> None:
    """--games 1 printed "batch / scalar: 0.0x": one decimal place of a ratio of 0.03."""
    out = bench("batch_speed", "--games", "1", "--seconds", "0.01", "--repeats", "1")
    assert out.returncode == 0, out.stderr
    line = next(line for line in out.stdout.splitlines() if "batch / scalar: " in line)
    ratio = line.split(": ")[1].removesuffix("x")
    assert len(ratio.replace(".", "").lstrip("0")) == 2, line


def test_results_table_heads_each_column_with_the_games_played_and_describes_itself_whole() -> None:
    """--games 1 printed "1 games per cell" where duplicate deals played 2, 4 and 6 games
    (a multiple of the table size), and --help cut its description off mid-sentence."""
    out = bench("results_table", "--games", "1", "--tournament-games", "1", "--workers", "1")
    assert out.returncode == 0, out.stderr
    heads = "| 2 players (fair 0.50, 2 games) | 4 players (fair 0.25, 4 games) | 6 players (fair 0.17, 6 games) |"
    assert heads in out.stdout
    usage = " ".join(bench("results_table", "--help").stdout.split())
    assert "each other, plus a four-player tournament of the built-in agents. options:" in usage


def test_train_speed_times_each_preset_it_offers_as_that_preset() -> None:
    """beat-heuristic (a top-level tensorboard key, a stop rule that reads evaluations)
    failed in a TypeError, and the presets that resume another run were offered though
    they hold only what they change: they timed the defaults."""
    out = bench("train_speed", "--preset", "beat-heuristic", "--steps", "300", "--engine", "batch")
    assert out.returncode == 0, out.stderr
    first_line(out, "train_speed", ["--preset", "beat-heuristic", "--steps", "300", "--engine", "batch"])
    assert "n_envs=1024 n_steps=16 batch=4096" in out.stdout and "players=(2,)" in out.stdout
    line = one_error(bench("train_speed", "--preset", "specialist-2p-more"), "train_speed", 2)
    assert "invalid choice: 'specialist-2p-more'" in line


def test_train_speed_times_what_llama_rl_train_trains_with_a_preset() -> None:
    """--preset smoke timed 4 players against heuristic alone: where a preset set no table
    sizes or opponents the script put in its own, where ``llama-rl train --preset smoke``
    trains at the config's defaults."""
    out = bench("train_speed", "--preset", "smoke", "--steps", "1", "--engine", "batch")
    assert out.returncode == 0, out.stderr
    trained = config_from_dict(preset_values("smoke"))
    assert f"n_envs={trained.n_envs} n_steps={trained.n_steps} batch={trained.batch_size} " in out.stdout
    assert f" players={trained.players} opponents={trained.opponents}\n" in out.stdout


@needs_rllib
def test_rllib_speed_refuses_more_env_runners_than_cores_before_training() -> None:
    """The SB3 baseline trained first (14 s), then the RLlib trainer's own check failed in
    a traceback that said to pass --address, which the script has not; the rows done were
    lost."""
    cores = usable_cores()
    line = one_error(bench("rllib_speed", "--steps", "1", "--runners", "0", str(cores + 1)), "rllib_speed", 2)
    assert f"--runners must be at most {cores} on a local Ray, which has {cores} cores" in line
    assert f"got {cores + 1}" in line and "--address" not in line


@needs_rllib
@pytest.mark.slow
def test_rllib_speed_prints_the_learner_decisions_each_trainer_played() -> None:
    """The header said "1 learner decisions per trainer" for --steps 1, where each trainer
    played a whole rollout."""
    out = bench("rllib_speed", "--steps", "1", "--runners", "0")
    assert out.returncode == 0, out.stderr
    first_line(out, "rllib_speed", ["--steps", "1", "--runners", "0"])
    rollout = PRESETS["ship"]["n_envs"] * PRESETS["ship"]["n_steps"]
    rows = [line for line in out.stdout.splitlines() if line.startswith(("SB3 ", "RLlib "))]
    assert len(rows) == 2, out.stdout
    for row in rows:
        assert row[34:].split()[0] == f"{rollout:,}", out.stdout
