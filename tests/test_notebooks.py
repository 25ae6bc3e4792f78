"""Every notebook runs top to bottom in a real kernel (with LLAMA_RL_QUICK=1 budgets),
and the committed copies carry their outputs so a reader sees the plots unexecuted."""

from __future__ import annotations

import sys
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "notebooks"))
from run_notebooks import NOTEBOOKS, execute  # noqa: E402

EXPECTED = {"01_environment_tour.ipynb", "02_compare_agents.ipynb", "03_training.ipynb"}


def test_all_notebooks_present() -> None:
    assert {p.name for p in NOTEBOOKS} >= EXPECTED


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_executes(path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TMPDIR", str(tmp_path))  # the kernel's temporary files (notebook 03's run) go with the test
    out = tmp_path / path.name
    execute(path, out, quick=True, timeout=600)
    nb = nbformat.read(out, as_version=4)
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"]
    assert not errors
    assert any("image/png" in o.get("data", {}) for c in nb.cells if c.cell_type == "code" for o in c.outputs), (
        "the notebook should draw at least one plot"
    )


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_committed_notebook_has_outputs(path: Path) -> None:
    nb = nbformat.read(path, as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert code and all(c.execution_count is not None for c in code), "commit the notebook executed"
    assert any("image/png" in o.get("data", {}) for c in code for o in c.outputs), "committed without its plots"
    assert not any(o.output_type == "error" for c in code for o in c.outputs)
