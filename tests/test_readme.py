"""The README is part of the product: its examples run. (The contract's tables, which it
links to, are checked against the code in tests/test_docs.py.)"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

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
