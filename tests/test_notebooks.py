"""Every notebook runs top to bottom in a real kernel (with LLAMA_RL_QUICK=1 budgets),
and the committed copies carry their outputs so a reader sees the plots unexecuted."""

from __future__ import annotations

import sys
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "notebooks"))
import run_notebooks  # noqa: E402
from run_notebooks import NOTEBOOKS, execute  # noqa: E402

EXPECTED = {"01_environment_tour.ipynb", "02_compare_agents.ipynb", "03_training.ipynb"}


def test_all_notebooks_present() -> None:
    assert {p.name for p in NOTEBOOKS} >= EXPECTED


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_executes(path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TMPDIR", str(tmp_path))  # the kernel's temporary files (notebook 03's run) go with the test
    out = tmp_path / path.name
    execute(path, out, quick=True, timeout=run_notebooks.QUICK_TIMEOUT)
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


@pytest.fixture
def executed(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """The notebooks run_notebooks.main runs, recorded in place of running them."""
    ran: list[Path] = []

    def record(path: Path, out: Path, **_: object) -> float:
        ran.append(path)
        return 0.0

    monkeypatch.setattr(run_notebooks, "execute", record)
    return ran


def test_quick_needs_an_out_folder_of_its_own(
    executed: list[Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # --quick in place replaced the committed notebooks' outputs with tiny-budget ones
    for argv in (["--quick"], ["--quick", "--out", str(ROOT / "notebooks")], ["--quick", "01_environment_tour"]):
        assert run_notebooks.main(argv) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "error: --quick needs --out DIR" in err, err
    assert executed == []
    assert run_notebooks.main(["--quick", "--out", str(tmp_path), "01_environment_tour"]) == 0
    assert executed == [ROOT / "notebooks" / "01_environment_tour.ipynb"]


def test_names_and_out_are_checked_before_any_notebook_runs(
    executed: list[Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run_notebooks.main(["01_environment_tour.ipynb", "nosuch.ipynb", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "error: no notebook 'nosuch.ipynb'" in err and "03_training" in err, err
    afile = tmp_path / "afile"
    afile.write_text("")
    assert run_notebooks.main(["01_environment_tour", "--out", str(afile)]) == 2
    assert f"error: --out {afile} is a file, not a folder" in capsys.readouterr().err
    assert executed == []


def test_a_notebook_is_named_bare_without_ipynb_or_by_path(
    executed: list[Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(ROOT)
    argv = ["notebooks/01_environment_tour.ipynb", "02_compare_agents", "03_training.ipynb", "--out", str(tmp_path)]
    assert run_notebooks.main(argv) == 0
    assert executed == [ROOT / "notebooks" / name for name in sorted(EXPECTED)]


def test_a_failing_cell_is_one_line_and_the_rest_still_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    bad = new_notebook(
        cells=[
            new_code_cell("print('before')"),
            new_markdown_cell("text"),
            new_code_cell("raise ValueError('boom\\nmore')"),
        ]
    )
    nbformat.write(bad, "bad.ipynb")
    nbformat.write(new_notebook(cells=[new_code_cell("print('fine')")]), "good.ipynb")
    assert run_notebooks.main(["bad", "good", "--out", "out"]) == 1
    captured = capsys.readouterr()
    failure = [line for line in captured.err.splitlines() if line.startswith("bad.ipynb")]
    assert failure == ["bad.ipynb: cell 2 failed: ValueError: boom (as far as it ran: out/bad.ipynb)"], captured.err
    assert "good.ipynb: executed" in captured.out
    partial = nbformat.read("out/bad.ipynb", as_version=4)
    assert partial.cells[0].outputs[0].text == "before\n" and partial.cells[2].outputs[0].ename == "ValueError"
    assert nbformat.read("out/good.ipynb", as_version=4).cells[0].outputs[0].text == "fine\n"
    # in place, the failed run goes beside the notebook, which keeps its committed outputs
    assert run_notebooks.main(["bad.ipynb"]) == 1
    assert "bad.ipynb: cell 2 failed: ValueError: boom (as far as it ran: " in capsys.readouterr().err
    assert nbformat.read("bad.ipynb", as_version=4) == bad
    assert nbformat.read("bad.failed.ipynb", as_version=4).cells[2].outputs[0].evalue == "boom\nmore"


def test_a_failing_cell_is_the_cause_of_the_failure(tmp_path: Path) -> None:
    """``test_notebook_executes`` calls ``execute`` itself: a notebook that failed showed
    only ``NotebookFailed: cell 1 failed: ZeroDivisionError``, without the cell's source and
    traceback, as nbclient's error was dropped. Now it is the cause, which pytest prints."""
    from nbclient.exceptions import CellExecutionError

    nbformat.write(new_notebook(cells=[new_code_cell("x = 1\nx / 0")]), tmp_path / "bad.ipynb")
    with pytest.raises(run_notebooks.NotebookFailed, match=r"^cell 1 failed: ZeroDivisionError") as failed:
        execute(tmp_path / "bad.ipynb", tmp_path / "out.ipynb", quick=True, timeout=120)
    cause = failed.value.__cause__
    assert isinstance(cause, CellExecutionError) and "x / 0" in str(cause), cause


def test_a_progress_bar_is_saved_as_its_last_line(tmp_path: Path) -> None:
    """Notebook 02 shows a bar of its games: each redraw came back as an output of its own
    ('\\rgames: ...' about 150 times on stderr), which a run saved as they came. The runner
    merges a cell's stream outputs and resolves the carriage returns (coalesce_streams)."""
    cell = (
        "import time\n"
        "from train._program import game_bar\n"
        "with game_bar(True, 3) as bar:\n"
        "    for _ in range(3):\n"
        "        time.sleep(0.3)\n"
        "        bar.update(1)\n"
    )
    nbformat.write(new_notebook(cells=[new_code_cell(cell)]), tmp_path / "bar.ipynb")
    execute(tmp_path / "bar.ipynb", tmp_path / "out.ipynb", quick=True, timeout=120)
    outputs = nbformat.read(tmp_path / "out.ipynb", as_version=4).cells[0].outputs
    assert [(o.output_type, o.name) for o in outputs] == [("stream", "stderr")], outputs
    assert outputs[0].text.startswith("games: 100%") and "3/3 [" in outputs[0].text, outputs[0].text
    assert "\r" not in outputs[0].text


@pytest.fixture
def client_limits(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """The per-cell limits ``execute`` gives the kernel's client, recorded in place of
    running any cell."""
    limits: list[object] = []

    class Client:
        def __init__(self, nb: object, **kwargs: object) -> None:
            limits.append(kwargs["timeout"])

        def execute(self) -> None:
            pass

    monkeypatch.setattr(run_notebooks, "NotebookClient", Client)
    return limits


def test_cells_run_without_a_time_limit_unless_one_is_given(
    client_limits: list[object], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Notebook 02's first cell takes up to an hour on two busy cores: the old 1800 s per
    cell stopped it half way. In place, a cell runs as long as it needs; ``--timeout``
    sets a limit, a positive whole number of seconds, refused in one line otherwise."""
    limits = client_limits
    assert run_notebooks.main(["01_environment_tour", "--out", str(tmp_path)]) == 0
    assert run_notebooks.main(["01_environment_tour", "--out", str(tmp_path), "--timeout", "7200"]) == 0
    assert limits == [None, 7200]
    assert run_notebooks.main(["--quick", "--out", str(tmp_path), "01_environment_tour"]) == 0
    assert limits[-1] == run_notebooks.QUICK_TIMEOUT  # the tests' quick run keeps a limit
    for bad in ("0", "-5", "1.5", "soon"):
        with pytest.raises(SystemExit) as exited:
            run_notebooks.main(["01_environment_tour", "--timeout", bad])
        err = capsys.readouterr().err
        assert exited.value.code == 2 and err.count("\n") == 1 and "--timeout" in err and bad in err, err
    assert len(limits) == 3


def test_a_quick_run_keeps_its_limit_from_python_too(client_limits: list[object], tmp_path: Path) -> None:
    """``execute(quick=True)`` called from Python, as the tests do, ran without a limit: the
    quick run's default lived in ``main`` alone. It lives in ``execute`` now."""
    limits = client_limits
    nbformat.write(new_notebook(cells=[new_code_cell("1")]), tmp_path / "nb.ipynb")
    for quick in (True, False):
        execute(tmp_path / "nb.ipynb", tmp_path / "out.ipynb", quick=quick)
    execute(tmp_path / "nb.ipynb", tmp_path / "out.ipynb", quick=True, timeout=None)
    execute(tmp_path / "nb.ipynb", tmp_path / "out.ipynb", quick=False, timeout=30)
    assert limits == [run_notebooks.QUICK_TIMEOUT, None, None, 30]
