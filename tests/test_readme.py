"""The README is part of the product: its examples run and its tables match the code."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from llama_env.observation import FIELDS, OBS_SIZE, SLICES

README = Path(__file__).resolve().parents[1] / "README.md"
TEXT = README.read_text(encoding="utf-8")


def _python_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", TEXT, flags=re.S)


def test_readme_has_python_examples() -> None:
    assert len(_python_blocks()) >= 4


@pytest.mark.parametrize("index", range(len(_python_blocks())))
def test_readme_example_runs(index: int) -> None:
    code = _python_blocks()[index]
    exec(compile(code, f"README.md example {index}", "exec"), {"__name__": "__readme__"})


def test_observation_table_matches_fields() -> None:
    rows = re.findall(r"^\| `(\w+)` \| (\d+)\.\.(\d+) \| (\d+) \| (.+?) \|$", TEXT, flags=re.M)
    table = {name: (int(a), int(b), int(size), doc) for name, a, b, size, doc in rows if name in SLICES}
    assert list(table) == [f.name for f in FIELDS]
    for f in FIELDS:
        start, stop, size, doc = table[f.name]
        assert (start, stop + 1, size) == (SLICES[f.name].start, SLICES[f.name].stop, f.size), f.name
        assert doc == f.doc, f.name
    assert f"one float32 vector of {OBS_SIZE} entries" in TEXT


def test_history_table_matches_the_version_1_fields() -> None:
    from llama_env.observation import HISTORY_FIELDS, OBS_SIZE_V1, SLICES_V1

    section = TEXT.split("### Observation, version 1")[1].split("\n### ")[0]
    rows = re.findall(r"^\| `(\w+)` \| (\d+)\.\.(\d+) \| (\d+) \| (.+?) \|$", section, flags=re.M)
    assert [r[0] for r in rows] == [f.name for f in HISTORY_FIELDS]
    for (name, a, b, size, doc), f in zip(rows, HISTORY_FIELDS, strict=True):
        assert (int(a), int(b) + 1, int(size)) == (SLICES_V1[name].start, SLICES_V1[name].stop, f.size), name
        assert doc == f.doc, name
    assert f"{OBS_SIZE_V1} entries in all" in section


def test_docs_own_agent_example_registers_an_agent() -> None:
    text = (README.parent / "docs" / "agents.md").read_text(encoding="utf-8")
    block = next(b for b in re.findall(r"```python\n(.*?)```", text, flags=re.S) if '@register("lowest")' in b)
    exec(compile(block, "docs/agents.md example", "exec"), {"__name__": "__docs__"})
    import gymnasium as gym

    import agents

    assert "lowest" in agents.names()
    env = gym.make("Llama-v0", num_players=3, opponents="lowest")
    _, info = env.reset(seed=0)
    env.step(int(info["action_mask"].nonzero()[0][0]))


def test_llama_v0_arguments_table_matches_the_env() -> None:
    import inspect

    from llama_env.gym_env import LlamaEnv

    section = TEXT.split('`gym.make("Llama-v0", ...)` takes these keyword arguments')[1].split("\n\n")[1]
    rows = re.findall(r"^\| (`[^|]+`) \| (`[^|]+`) \|", section, flags=re.M)
    params = inspect.signature(LlamaEnv).parameters
    documented = {}
    for names, defaults in rows:
        for name, default in zip(re.findall(r"`(\w+)`", names), re.findall(r"`([^`]+)`", defaults), strict=True):
            documented[name] = default
    assert set(documented) == set(params)
    for name, default in documented.items():
        assert repr(params[name].default) == default.replace('"', "'"), name
