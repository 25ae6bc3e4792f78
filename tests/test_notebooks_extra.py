"""Each notebook says which extra it runs on, and the notebooks' runner without that
extra says so in one line, as the benchmarks do (it was a traceback at its import)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from llama_env._install import install_hint

ROOT = Path(__file__).resolve().parents[1]


def test_every_notebook_names_the_extra_it_needs_in_its_first_cell() -> None:
    notebooks = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    assert notebooks
    for path in notebooks:
        first = json.loads(path.read_text(encoding="utf-8"))["cells"][0]
        assert first["cell_type"] == "markdown", path.name
        said = " ".join("".join(first["source"]).split())
        # '.' is the checkout: from notebooks/, where docs/notebooks.md opens them, it is not
        wanted = 'needs the `notebooks` extra (`pip install -e ".[notebooks]"`, run from the repository root'
        assert wanted in said, path.name


def _runner(blocked: str | None) -> subprocess.CompletedProcess[str]:
    """``run_notebooks.py --help`` with the package ``blocked`` as if not installed (None:
    all there); its stdout ends with the heavy packages it imported, sorted."""
    script = (
        "import runpy, sys\n"
        + (f"sys.modules[{blocked!r}] = None  # as if not installed\n" if blocked else "")
        + "sys.argv = ['run_notebooks.py', '--help']\n"
        "try:\n"
        "    runpy.run_path('notebooks/run_notebooks.py', run_name='__main__')\n"
        "finally:\n"
        "    print(sorted({'torch', 'matplotlib', 'sb3_contrib'} & set(sys.modules)))\n"
    )
    return subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, cwd=ROOT)


def _needs(package: str) -> str:
    return (
        f"run_notebooks.py: error: running the notebooks needs the package '{package}', which is not installed; "
        f"install the 'notebooks' extra: {install_hint('notebooks')}\n"
    )


def test_the_runner_without_nbclient_is_one_line_naming_the_extra() -> None:
    proc = _runner("nbclient")
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr == _needs("nbclient")


def test_the_runner_finds_every_package_of_the_extra_without_importing_them() -> None:
    """With Jupyter installed but not the extra, every notebook failed at its first cell
    with "No module named 'pandas'", naming no extra: the runner checked only nbclient and
    nbformat. It now finds each package the extra brings, importing none of them."""
    proc = _runner("pandas")
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr == _needs("pandas")
    assert proc.stdout == "[]\n"  # nothing heavy imported to find them
    installed = _runner(None)
    assert installed.returncode == 0 and installed.stdout.endswith("\n[]\n"), installed.stderr
