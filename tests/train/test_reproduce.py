"""Every shipped agent is made by the product, as docs/training.md's
"Reproduce every shipped agent" says.

* Every file of ``agents/models/`` is named by exactly one row of the section's table,
  and each row names the ``llama-rl`` command that makes it.
* Each specialist preset holds exactly the values of the commands that made the shipped
  file, shown in the section's console blocks: both are built into configs by the
  command line's own config builder (:func:`train.cli.train.config_from_args`), each
  replayed in a folder of its own as the trainer starts a run (the config recorded in
  its run directory, so that a second phase resumes the first), and the configs are
  equal but for where the run lies.
"""

from __future__ import annotations

import re
import shlex
import shutil
from pathlib import Path
from typing import Any

import pytest

from train.cli import build_parser
from train.cli.train import config_from_args
from train.training.presets import PRESETS
from train.training.resume import session_run
from train.training.run_dir import write_json_atomic

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "training.md"
HEADING = "## Reproduce every shipped agent"
WHERE_THE_RUN_LIES = ("run_dir", "run_name", "resume")


def _section() -> str:
    text = DOC.read_text(encoding="utf-8")
    assert HEADING in text, f"docs/training.md has no section {HEADING!r}"
    return text.split(HEADING, 1)[1].split("\n## ", 1)[0]


def _table() -> list[list[str]]:
    """The section's first table: one list of cells per row, the header and rule left out."""
    table = re.search(r"^\|.*?(?=\n[^|])", _section(), flags=re.S | re.M)
    assert table, "the section has no table"
    return [[c.strip() for c in row.strip("|").split("|")] for row in table.group(0).splitlines()[2:]]


def _recipes() -> list[tuple[list[str], list[list[str]]]]:
    """Each console block of the section that the paragraph before it says the presets
    hold: (those presets in order, the block's commands as words, continuation lines
    joined and comments dropped)."""
    found = []
    for m in re.finditer(r"([^\n]*(?:\n[^\n]+)*)\n\n```console\n(.*?)```", _section(), flags=re.S):
        presets = re.findall(r"--preset\s+([\w-]+)", m.group(1))
        if not presets:  # a block of other commands (a measurement, the general model's presets)
            continue
        body = m.group(2).replace("\\\n", " ")
        commands = [shlex.split(line[2:], comments=True) for line in body.splitlines() if line.startswith("$ ")]
        found.append((presets, commands))
    return found


def test_every_model_file_is_made_by_one_row_of_the_table():
    rows = _table()
    assert len(rows) >= 6, "the reader no longer finds the table's rows"
    models = sorted(p.name for p in (ROOT / "agents" / "models").iterdir() if p.is_file())
    assert models, "agents/models/ holds no files: the check would pass vacuously"
    for name in models:
        naming = [row for row in rows if f"`agents/models/{name}`" in row[0]]
        assert len(naming) == 1, f"agents/models/{name} is named by {len(naming)} rows of the table, not one"
    for row in rows:
        assert "`llama-rl " in row[2], f"the row of {row[0]} does not name the llama-rl command that makes it"
        for path in re.findall(r"`agents/models/([^`]+)`", row[0]):
            assert path in models, f"the table names agents/models/{path}, which the repository lacks"


def test_the_console_blocks_name_every_specialist_preset():
    recipes = _recipes()
    for presets, commands in recipes:
        trains = [c for c in commands if c[:2] == ["llama-rl", "train"]]
        assert len(presets) == len(trains), f"{presets} named before a block of {len(trains)} train commands"
    shown = sorted(p for presets, _ in recipes for p in presets)
    assert shown == sorted(p for p in PRESETS if p.startswith("specialist-"))


def _config(words: list[str]) -> dict[str, Any]:
    """What ``llama-rl train <words>`` would train, recorded in its run directory as the
    trainer does first (so that a later ``--resume`` of that run, or of a copy, finds it),
    with an empty stand-in of its model: a run that saved nothing cannot be resumed."""
    config = config_from_args(build_parser().parse_args(["train", *words]))
    run, fresh = session_run(config)
    run.path.mkdir(parents=True, exist_ok=True)
    write_json_atomic(run.config_path if fresh else run.next_resume_config_path(), config.to_dict())
    (run.path / "model.zip").touch()
    return {k: v for k, v in config.to_dict().items() if k not in WHERE_THE_RUN_LIES}


@pytest.mark.parametrize("recipe", _recipes(), ids=lambda r: "+".join(r[0]))
def test_the_presets_hold_the_documented_commands(recipe, tmp_path, monkeypatch):
    presets, commands = recipe
    (tmp_path / "commands").mkdir()
    monkeypatch.chdir(tmp_path / "commands")
    documented = []
    for words in commands:
        if words[:2] == ["llama-rl", "train"]:
            documented.append(_config(words[2:]))
        elif words[:2] == ["cp", "-r"]:  # a run copied to be resumed
            shutil.copytree(words[2], words[3])
        else:
            pytest.fail(f"a specialist's block shows `{shlex.join(words)}`: only train and cp -r are replayed")
    (tmp_path / "presets").mkdir()
    monkeypatch.chdir(tmp_path / "presets")
    from_presets = [_config(["--preset", name]) for name in presets]
    for name, preset, command in zip(presets, from_presets, documented, strict=True):
        differ = {k: (preset[k], command[k]) for k in preset if preset[k] != command[k]}
        assert differ == {}, f"--preset {name} differs from its command (preset, command): {differ}"


@pytest.mark.parametrize("second", ["ship-finetune", "specialist-4p-more"])
def test_a_second_phase_preset_resumes_its_first_phase_in_the_run_dir_given(second, tmp_path, monkeypatch):
    """The second phase resumed ``runs/<name>`` under the current folder whatever --run-dir
    said: the first phase's run was not found there (or another one was)."""
    first = {"ship-finetune": "ship", "specialist-4p-more": "specialist-4p"}[second]
    monkeypatch.chdir(tmp_path)
    runs = tmp_path / "elsewhere"
    _config(["--preset", first, "--run-dir", str(runs)])
    config = config_from_args(build_parser().parse_args(["train", "--preset", second, "--run-dir", str(runs)]))
    assert Path(config.resume) == runs / first and Path(config.run_path()) == runs / first
    assert not (tmp_path / "runs").exists()
    # a run continues where it lies: another place asked for is refused, not dropped
    with pytest.raises(ValueError, match=f"name {runs / 'fork'}, but resuming .* continues its run in {runs / first}"):
        config_from_args(
            build_parser().parse_args(
                ["train", "--resume", str(runs / first), "--run-dir", str(runs), "--run-name", "fork"]
            )
        )
