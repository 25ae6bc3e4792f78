"""Every snippet of the docs runs, and every output they show is the real one.

For README.md and every Markdown file under docs/ (blocks read by tests/docs_blocks.py):

* **```python blocks** run, each in a fresh namespace, in a temporary working directory
  (so what they write lands there), with the agent registry restored afterwards. A block
  that would train for minutes runs with smaller budgets, by the textual substitutions
  of :data:`SUBSTITUTIONS`, listed per file with the reason; each must still match the
  doc. A plain ``` block right under a python block shows what it prints: it must be
  exactly what the block prints.
* **```console blocks** are samples (``$ command``, then the output shown). Their
  commands replay in order in a temporary directory, one per block:

  - ``$ llama-rl ...`` runs through :func:`train.cli.main` in this process; where the
    sample shows output it must equal the real output exactly (stdout and stderr
    together; the text typed at ``play``'s prompts is its input) and the exit code must
    match. The commands that cannot run here are **parse-only** by the explicit rules
    :data:`PARSE_ONLY_COMMANDS` (a whole subcommand) and :data:`PARSE_ONLY_LINES` (one
    command line, which must still be in a doc): the real parser reads them, the agents
    they name must exist, and a ``train`` command becomes a validated config through
    :func:`train.cli.train.config_from_args`, so a removed flag or preset or an invalid
    value fails. A train command records its config in a run directory of the temporary
    directory, as the trainer does first, so that a later ``--resume`` in the block
    resolves the run and its fixed settings are checked. ``fit-search`` and ``distill``
    run for minutes to an hour: a sample of either must show the error it stops at
    (:data:`LONG_COMMANDS`).
  - ``$ python benchmarks/<script>.py ...`` (or ``.venv/bin/python``): the script exists and
    every flag the command uses is in its ``--help``. Benchmarks run for minutes and
    print timings; their outputs are not compared.
  - any other command is in :data:`NOT_RUN`, with the reason; ``cp -r runs/A runs/B``
    (copying a run to resume the copy) is replayed inside the temporary directory.
* every fenced block has an info string this module knows (:data:`NOT_RUN_BLOCKS` says
  why the others do not run), and no ``$ llama-rl`` sample hides outside a console block.

Nothing is skipped: a block or command this module cannot place fails with the reason.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import functools
import io
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from docs_blocks import ROOT, Block, Sample, doc_files, fenced_blocks, run_cli, samples

from train.cli.common import EXIT_USAGE, PROG
from train.play.terminal import EXIT_FINISHED, EXIT_LEFT

BLOCKS = [b for path in doc_files() for b in fenced_blocks(path)]
PYTHON = [b for b in BLOCKS if b.info == "python"]
CONSOLE = [b for b in BLOCKS if b.info == "console"]

NOT_RUN_BLOCKS = {
    "": "output listings, formulas, layouts and command synopses (docs/cli.md checks the synopses)",
    "bash": "the setup commands of README.md (make, pip): they build the environment these tests run in",
    "toml": "a file's contents (a package's entry point), not a program",
    "json": "a file's contents (a game record), not a program",
}

# ------------------------------------------------------------------ python blocks

SHIPPED_ZIP = repr(str(ROOT / "agents" / "models" / "ppo_llama.zip"))

SUBSTITUTIONS: dict[str, list[tuple[str, str, str]]] = {
    # doc: [(text of a python block, what it becomes, why)]
    "docs/agents.md": [
        (
            'agents.make("heuristic", bogus=1)',
            'import pytest\nwith pytest.raises(ValueError, match="parameters"):\n    agents.make("heuristic", bogus=1)',
            "the line shows the error an unknown parameter raises: the error is expected",
        ),
    ],
    "docs/training.md": [
        (
            "total_timesteps=2_000_000)",
            "total_timesteps=2_048, n_envs=16, n_steps=32, batch_size=256, n_epochs=1, "
            "eval_every=1_024, eval_games=16, checkpoint_every=1_024, past_every=1_024, net_arch=(32, 32))",
            "2M steps take minutes: the smoke preset's budget trains the same config for seconds",
        ),
        (
            '"runs/ship/model.zip"',
            SHIPPED_ZIP,
            "a run's model.zip; the shipped general model is one (it came from runs/ship)",
        ),
    ],
}


def _code(block: Block) -> str:
    """The block's code after its substitutions, padded so that line numbers are the doc's."""
    code = block.body
    for old, new, _why in SUBSTITUTIONS.get(block.doc, []):
        code = code.replace(old, new)
    return "\n" * (block.line - 1) + code


def _shown_output(block: Block) -> str | None:
    """The plain block right under a python block (only blank lines between): what it prints."""
    following = [b for b in BLOCKS if b.doc == block.doc and b.line > block.end]
    if not following:
        return None
    nxt = min(following, key=lambda b: b.line)
    text = (ROOT / block.doc).read_text(encoding="utf-8").splitlines()
    between = text[block.end : nxt.line - 2]  # the lines after the closing fence, before the next opening one
    return nxt.body if nxt.info == "" and not any(s.strip() for s in between) else None


@pytest.fixture
def one_torch_thread() -> Iterator[None]:
    """Blocks that train run torch on one thread, as the trainer does: on two cores shared
    with other jobs, torch's threads stall every small call (the research log's
    2026-12-05-training-speed-and-timings.md, on the trainer's throughput)."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


def _exec(block: Block) -> str:
    """Run a python block as the doc shows it (after its substitutions); what it printed."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(_code(block), block.doc, "exec"), {"__name__": "__docs__"})
    return out.getvalue()


@pytest.mark.parametrize("block", PYTHON, ids=[b.where for b in PYTHON])
@pytest.mark.usefixtures("agent_registry", "one_torch_thread")
def test_python_block_runs(block: Block, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SB3_LOGDIR", str(tmp_path))  # plain SB3 (docs/env.md) logs there, not to a new /tmp folder
    printed = _exec(block)
    shown = _shown_output(block)
    if shown is not None:
        assert printed == shown, f"{block.where}: the block now prints:\n{printed}"


def test_every_substitution_matches_its_doc() -> None:
    """A substitution whose text left the doc would silently stop shrinking anything."""
    for doc, subs in SUBSTITUTIONS.items():
        code = "".join(b.body for b in PYTHON if b.doc == doc)
        for old, _new, _why in subs:
            assert old in code, f"{doc}: no python block holds {old!r} any more; update SUBSTITUTIONS"


def _unused_imports(code: str) -> list[str]:
    """The names ``code`` imports by name (``from x import y``) and never uses. (A bare
    ``import x`` may be there for what importing does: ``import llama_env`` registers
    the Gymnasium envs.)"""
    tree = ast.parse(code)
    imported = [
        (alias.asname or alias.name)
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module != "__future__"
        for alias in node.names
        if alias.name != "*"
    ]
    used = {node.id for node in ast.walk(tree) if isinstance(node, ast.Name)}
    return [name for name in imported if name not in used]


def test_every_python_block_uses_what_it_imports() -> None:
    """README.md's engine example imported ``Action`` and never used it: a reader looks
    for what it is for."""
    unused = {b.where: _unused_imports(b.body) for b in PYTHON}
    assert not {where: names for where, names in unused.items() if names}
    assert _unused_imports("from llama_env import Action, LlamaGame\nLlamaGame()\n") == ["Action"]
    assert _unused_imports("from __future__ import annotations\nx: int = 1\n") == []


@pytest.mark.usefixtures("agent_registry")
def test_agents_md_own_agent_is_a_name_everywhere(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """docs/agents.md's own agent: once its block ran, the name builds it and an env seats it."""
    import gymnasium as gym

    import agents

    monkeypatch.chdir(tmp_path)
    _exec(next(b for b in PYTHON if b.doc == "docs/agents.md" and '@register("lowest")' in b.body))
    assert "lowest" in agents.names()
    env = gym.make("Llama-v0", num_players=3, opponents="lowest")
    _, info = env.reset(seed=0)
    env.step(int(info["action_mask"].nonzero()[0][0]))


# ------------------------------------------------------------------ console blocks

PARSE_ONLY_COMMANDS = {
    "train": "trains for minutes to hours (2M steps by default, tens of millions for the shipped agents)",
    "serve": "serves the web app until it is stopped",
}
"""Subcommands that are parsed, never run, wherever a doc shows them."""

PARSE_ONLY_LINES = {
    "llama-rl play --players 3 --opponents heuristic": "waits for a person's moves (docs/cli.md's play sample runs)",
    "llama-rl watch --players 4 --agents ppo,heuristic,cautious,random": (
        "shows a game at half a second a move, minutes (docs/cli.md's watch sample runs, with --delay 0)"
    ),
    "llama-rl tournament --players 4 --agents random,greedy,cautious,heuristic,ppo --games 2000": (
        "2,000 games with ppo at the table take half a minute (docs/cli.md's tournament sample runs)"
    ),
    "llama-rl eval --agents ppo:path=runs/ship/model.zip,heuristic --games 4000": (
        "plays the model of a training run that the tests do not make"
    ),
    "llama-rl eval --agents ppo:path=runs/rllib-headsup,heuristic --games 4000 --seed 0 --no-batch": (
        "plays the model of a training run that the tests do not make"
    ),
    "llama-rl eval --agents ppo:path=runs/beat-heuristic,heuristic --games 2000": (
        "plays the model of a training run that the tests do not make"
    ),
    **{
        f"llama-rl eval --agents ppo:path=runs/bh-0,heuristic --games 2000 --seed {seed} --workers 1": (
            "plays the model of a training run that the tests do not make"
        )
        for seed in (20261207, 20261208)
    },
}
"""Single command lines (as written, comments dropped) that are parsed, not run."""

NOT_RUN = {
    "cp": "copies a run's model over a shipped one in agents/models/ (a `cp -r runs/A runs/B` is replayed)",
    "make": "builds the environment these tests run in",
    "pip": "installs packages",
    "tensorboard": "a server that runs until stopped",
    "ray": "starts or stops a Ray cluster",
}
"""Other programs a console sample may show, and why they do not run."""

BENCHMARK_PYTHONS = ("python", "python3", ".venv/bin/python")


def _words(sample: Sample) -> list[str]:
    return shlex.split(sample.command, comments=True)


def _parse_only_reason(words: list[str]) -> str | None:
    if len(words) > 1 and words[1] in PARSE_ONLY_COMMANDS:
        return PARSE_ONLY_COMMANDS[words[1]]
    return PARSE_ONLY_LINES.get(shlex.join(words))


LONG_COMMANDS = {
    "fit-search": "plays 48,000 games and fits two networks by default (minutes to an hour)",
    "distill": "plays 20,000 searched games by default (half an hour to an hour)",
}
"""Subcommands a sample may show only where it shows the error they stop at first (the
docs' samples of a refused option): a sample of one that would run ran it in full in the
tests (a research note's console block of the commands that made the shipped files ran
for 15 minutes). Their commands that work go in the text, in backticks."""


def _run_sample(sample: Sample) -> None:
    """Run a ``llama-rl`` sample and compare what it prints with what the doc shows."""
    words = _words(sample)
    if len(words) > 1 and words[1] in LONG_COMMANDS and not sample.output.startswith(f"{PROG}: error:"):
        pytest.fail(
            f"{sample.where}: `{sample.command}` {LONG_COMMANDS[words[1]]}: show the error it stops at, "
            "or give the command in the text"
        )
    code, output = run_cli(words[1:], "".join(f"{t}\n" for t in sample.typed), terminal=bool(sample.typed))
    if sample.output:
        assert output == sample.output, f"{sample.where}: `{sample.command}` now prints:\n{output}"
    if sample.output.startswith(f"{PROG}: error:"):
        expected_code = EXIT_USAGE
    elif sample.typed and sample.typed[-1] == "exit":
        expected_code = EXIT_LEFT
    else:
        expected_code = EXIT_FINISHED
    assert code == expected_code, f"{sample.where}: `{sample.command}` exited with {code}:\n{output}"


def _parse(sample: Sample) -> argparse.Namespace:
    """The real parser's reading of a sample, and the agents it names built as specs."""
    from llama_env.agent import names, parse_agent_list
    from train.cli import build_parser

    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err):
            args = build_parser().parse_args(_words(sample)[1:])
    except SystemExit:
        pytest.fail(f"{sample.where}: `{sample.command}` does not parse:\n{err.getvalue()}")
    for option in ("agents", "opponents"):
        value = getattr(args, option, None)
        if isinstance(value, str):
            try:  # the names, not the agents: building one may need a model the tests do not make
                unknown = [s.name for s in parse_agent_list(value, check=False) if s.name not in names()]
            except ValueError as exc:
                pytest.fail(f"{sample.where}: `{sample.command}`: --{option}: {exc}")
            assert not unknown, f"{sample.where}: `{sample.command}`: --{option}: no agent named {unknown}"
    return args


def _check_train(sample: Sample, args: argparse.Namespace) -> None:
    """A train sample's validated config, recorded in its run directory as the trainer does
    first, and an empty stand-in of its model: a run that saved nothing cannot be resumed."""
    from train.cli.train import config_from_args
    from train.training.resume import session_run
    from train.training.run_dir import write_json_atomic

    try:
        config = config_from_args(args)
        run, fresh = session_run(config)
    except ValueError as exc:
        pytest.fail(f"{sample.where}: `{sample.command}` is not a valid config: {exc}")
    run.path.mkdir(parents=True, exist_ok=True)
    write_json_atomic(run.config_path if fresh else run.next_resume_config_path(), config.to_dict())
    (run.path / "model.zip").touch()


def _copy_run(sample: Sample) -> bool:
    """Replay ``cp -r runs/A runs/B`` inside the temporary directory; whether it was one."""
    words = _words(sample)
    if words[:2] != ["cp", "-r"] or len(words) != 4 or not all(w.startswith("runs/") for w in words[2:]):
        return False
    shutil.copytree(words[2], words[3])
    return True


@functools.cache
def _benchmark_help(script: str) -> str:
    done = subprocess.run(
        [sys.executable, script, "--help"], cwd=ROOT, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, f"`python {script} --help` failed:\n{done.stderr}"
    return done.stdout


def _check_benchmark(sample: Sample) -> None:
    script = _words(sample)[1]
    assert (ROOT / script).is_file(), f"{sample.where}: {script} does not exist"
    usage = _benchmark_help(script)
    for flag in (w.split("=")[0] for w in _words(sample)[2:] if w.startswith("--")):
        assert re.search(rf"{re.escape(flag)}(?![\w-])", usage), f"{sample.where}: {script} has no {flag}:\n{usage}"


@pytest.mark.parametrize("block", CONSOLE, ids=[b.where for b in CONSOLE])
def test_console_block(block: Block, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    for sample in samples(block):
        if not sample.command:
            pytest.fail(f"{sample.where}: a console block must start with a `$ command` line, found {sample.output!r}")
        words = _words(sample)
        if words[0] == PROG:
            reason = _parse_only_reason(words)
            if reason is None:
                _run_sample(sample)
                continue
            assert not sample.output, f"{sample.where}: `{sample.command}` shows output but is parse-only ({reason})"
            args = _parse(sample)
            if args.command == "train":
                _check_train(sample, args)
        elif words[0] in BENCHMARK_PYTHONS and len(words) > 1 and words[1].startswith("benchmarks/"):
            _check_benchmark(sample)
        elif not _copy_run(sample) and words[0] not in NOT_RUN:
            pytest.fail(f"{sample.where}: `{sample.command}`: this test does not know how to check it (see NOT_RUN)")


def test_every_parse_only_line_is_in_a_doc() -> None:
    shown = {shlex.join(_words(s)) for b in CONSOLE for s in samples(b) if s.command}
    stale = set(PARSE_ONLY_LINES) - shown
    assert not stale, f"PARSE_ONLY_LINES names commands no doc shows any more: {sorted(stale)}"


def test_every_block_is_known() -> None:
    """Every fenced block is run or has a reason not to be; a `$ llama-rl` sample is a console block."""
    assert len(PYTHON) >= 12 and len(CONSOLE) >= 15, "the Markdown reader no longer finds the blocks"
    for block in BLOCKS:
        assert block.info in {"python", "console", *NOT_RUN_BLOCKS}, f"{block.where}: a ```{block.info} block"
        if block.info != "console":
            assert not re.search(rf"^\$ {PROG}\b", block.body, flags=re.M), (
                f"{block.where}: a `$ {PROG}` sample must be a ```console block to be checked"
            )


def test_a_sample_of_a_long_command_that_would_run_is_refused_before_it_runs(monkeypatch):
    """A sample of `llama-rl fit-search` showing no error ran the whole fit in the tests."""
    import docs_blocks

    ran = []
    monkeypatch.setattr(sys.modules[__name__], "run_cli", lambda *a, **k: ran.append(a) or (0, ""))
    long = docs_blocks.Sample("<a note>", 3, "llama-rl fit-search --players 2 --out search_2p.npz", "")
    with pytest.raises(
        pytest.fail.Exception, match=r"<a note>:3: .* plays 48,000 games .*give the command in the text"
    ):
        _run_sample(long)
    assert ran == []
    refused = docs_blocks.Sample("<a note>", 5, "llama-rl distill --players 3 --out p.npz", f"{PROG}: error: x\n")
    with pytest.raises(AssertionError):  # run (here a stand-in that prints nothing), its output compared
        _run_sample(refused)
    assert len(ran) == 1
