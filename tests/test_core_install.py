"""A core install (numpy, gymnasium, pettingzoo, tqdm; no training extra) runs the envs,
the baselines, the shipped ppo and search agents and the evaluation with its progress
bar; a model only torch can read, and a results table without pandas, say what to
install."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from llama_env._install import install_hint

SCRIPT = textwrap.dedent(
    """
    import sys
    for name in ("torch", "stable_baselines3", "sb3_contrib", "openskill", "pandas"):
        sys.modules[name] = None          # as if not installed
    import gymnasium as gym
    import llama_env, agents
    from train.evaluation import evaluate

    env = gym.make("Llama-v0", num_players=3, opponents="heuristic")
    obs, info = env.reset(seed=0)
    assert obs.shape == (llama_env.OBS_SIZE,)
    assert "heuristic" in agents.names() and "ppo" in agents.names()
    r = evaluate(["heuristic", "random"], 10, seed=0, workers=1)
    assert abs(sum(r.win_shares) - 1.0) < 1e-9
    try:
        r.to_dataframe()
    except ModuleNotFoundError as exc:
        print("table:", exc)
    # the shipped models are numpy archives: every table size, the search agent too
    for agents_ in (["ppo"] * 3, ["ppo", "random", "random", "random", "random"], ["search", "heuristic"] * 2):
        r = evaluate(agents_, 4, seed=0, workers=1, batched=False)
        assert abs(sum(r.win_shares) - 1.0) < 1e-9
    from agents.ppo import DEFAULT_MODEL_ZIP
    try:
        agents.make("ppo", path=str(DEFAULT_MODEL_ZIP))
    except ModuleNotFoundError as exc:
        print("PPO zip:", exc)
    from train.cli import main
    print("exit", main(["eval", "--agents", f"ppo:path={DEFAULT_MODEL_ZIP},random", "--games", "2"]))
    """
)


def test_core_install_plays_the_shipped_agents_and_a_zip_names_the_missing_extra():
    out = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert "PPO zip: the ppo agent reads its model with torch" in out.stdout
    assert install_hint("train") in out.stdout  # this checkout, this interpreter
    assert "table: the results' tables (to_dataframe and train.evaluation.analysis) need pandas, " in out.stdout
    assert install_hint("notebooks") in out.stdout
    # the command line: one error line and exit 1, no traceback
    assert "exit 1" in out.stdout
    assert "llama-rl: error: the ppo agent reads its model with torch" in out.stderr
    assert "Traceback" not in out.stderr


def test_the_install_hint_names_this_checkout_and_this_interpreter(monkeypatch, tmp_path):
    """The hints said pip install 'llama-rl[web]', a name PyPI gives another project."""
    import shlex

    import llama_env
    import llama_env._install as hint

    root = Path(hint.__file__).resolve().parents[1]
    assert shlex.split(hint.install_hint("web")) == [sys.executable, "-m", "pip", "install", "-e", f"{root}[web]"]
    monkeypatch.setattr(hint, "__file__", str(tmp_path / "it's $HOME" / "llama_env" / "_install.py"))
    outside = hint.install_hint("web")
    assert outside.endswith(" (the llama-rl installed here: the llama-rl on PyPI is another project)")
    # pinned: pip keeps the llama-rl installed here and adds the extra's packages; where this
    # version is not installed it fails, where 'llama-rl[web]' fetched PyPI's llama-rl 0.0.1
    pinned = f"llama-rl[web]=={llama_env.__version__}"
    assert shlex.split(outside)[:5] == [sys.executable, "-m", "pip", "install", pinned]
    (tmp_path / "it's $HOME" / "pyproject.toml").parent.mkdir(parents=True)
    (tmp_path / "it's $HOME" / "pyproject.toml").write_text("")  # a checkout at an awkward path
    assert shlex.split(hint.install_hint("web"))[-1] == f"{tmp_path}/it's $HOME[web]"  # quoted for the shell


def _without_pip(monkeypatch):
    """The environment as one made by uv or ``python -m venv --without-pip``: no pip."""
    import importlib.util

    find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "pip" else find_spec(name, *a))


def test_without_pip_the_install_hint_names_the_requirement_not_pip(monkeypatch, tmp_path):
    """In a venv without pip (uv, --without-pip) the hint said '<python> -m pip install ...',
    which fails there with 'No module named pip': it names what to install instead."""
    import llama_env
    import llama_env._install as hint

    _without_pip(monkeypatch)
    root = Path(hint.__file__).resolve().parents[1]
    assert hint.install_hint("web") == (
        f"install -e {shlex.quote(f'{root}[web]')} with the installer of this environment (it has no pip)"
    )
    monkeypatch.setattr(hint, "__file__", str(tmp_path / "llama_env" / "_install.py"))  # a wheel's install
    assert hint.install_hint("web") == (
        f"install 'llama-rl[web]=={llama_env.__version__}' (the llama-rl installed here: the llama-rl on PyPI"
        " is another project) with the installer of this environment (it has no pip)"
    )


def test_without_pip_a_missing_extra_is_still_one_error_line(monkeypatch, capsys):
    """The command line told a missing extra's message from a broken install by its
    ' -m pip install ': without pip the message has none, and it was a traceback."""
    from agents.ppo import DEFAULT_MODEL_ZIP
    from llama_env._install import install_hint
    from train.cli import main

    _without_pip(monkeypatch)
    monkeypatch.setitem(sys.modules, "torch", None)  # as if not installed
    agents_ = f"ppo:path={DEFAULT_MODEL_ZIP},random"
    assert main(["eval", "--agents", agents_, "--games", "2", "--workers", "1", "--no-progress"]) == 1
    err = capsys.readouterr().err
    why = "the ppo agent reads its model with torch, which is not installed"
    assert err == f"llama-rl: error: {why}: {install_hint('train')}\n" and "it has no pip" in err


def test_tune_heuristic_runs_on_the_core_install_and_its_help_says_so():
    """Its --help said it needs the 'train' extra; it plays its games on the core install."""
    script = textwrap.dedent(
        """
        import sys
        for name in ("torch", "stable_baselines3", "sb3_contrib", "openskill", "pandas", "rich"):
            sys.modules[name] = None          # as if not installed
        from train.cli import main
        main(["tune-heuristic", "--help"])
        sys.exit(main(["tune-heuristic", "--games", "1", "--passes", "1", "--validate-games", "1", "--workers", "1"]))
        """
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert "usage: llama-rl tune-heuristic" in out.stdout and "extra" not in out.stdout
    assert "HEURISTIC_DEFAULTS of agents/heuristic.py" in out.stdout


def test_the_progress_bar_comes_with_the_core_install():
    """``--progress``, and the bar shown by default at a terminal, did nothing on the core
    install: tqdm came only with the train extra, and a missing tqdm was no bar, without a
    word. It is a core dependency; an install without it says there is no bar."""
    pyproject = (Path(__file__).resolve().parents[1] / "pyproject.toml").read_text()
    core = re.search(r"^dependencies = \[\n(.*?)^\]", pyproject, flags=re.S | re.M)  # no tomllib on 3.10
    assert core and re.search(r'^\s*"tqdm\b', core.group(1), flags=re.M), "tqdm is no core dependency"
    script = textwrap.dedent(
        """
        import sys
        for name in ("torch", "stable_baselines3", "sb3_contrib", "openskill", "pandas", "rich"):
            sys.modules[name] = None          # as if not installed
        from train.cli import main
        main(["eval", "--agents", "heuristic,random", "--games", "4", "--workers", "1", "--progress"])
        sys.modules["tqdm"] = sys.modules["tqdm.auto"] = None
        sys.exit(main(["eval", "--agents", "heuristic,random", "--games", "4", "--workers", "1", "--progress"]))
        """
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    bar, missing = out.stderr.split("llama-rl: warning: ")
    assert "4/4 [" in bar
    assert missing == "no progress bar: the package 'tqdm' is not installed (pip install tqdm)\n"
    assert out.stdout.count("4 games, 2 players") == 2


def test_the_extras_packages_are_pyprojects():
    """``EXTRAS`` (which extra a missing module is put down to) lists each extra's
    distributions as pyproject.toml does, an extra it includes spelled out."""
    from llama_env._install import EXTRAS

    pyproject = (Path(__file__).resolve().parents[1] / "pyproject.toml").read_text()
    section = pyproject.split("[project.optional-dependencies]\n")[1].split("\n[")[0]  # no tomllib on 3.10
    listed = {
        extra: re.findall(r'^\s*"([A-Za-z0-9_.\-]+(?:\[[a-z,]+\])?)', body, flags=re.M)
        for extra, body in re.findall(r"^(\w+) = \[\n(.*?)^\]", section, flags=re.S | re.M)
    }

    def distributions(extra: str) -> set[str]:
        names: set[str] = set()
        for requirement in listed[extra]:
            name, _, included = requirement.partition("[")
            names |= distributions(included.rstrip("]")) if name == "llama-rl" else {name}
        return names

    assert set(listed) - {"dev"} == set(EXTRAS)
    for extra, modules in EXTRAS.items():
        assert set(modules) == distributions(extra), extra


def test_pandas_missing_is_a_missing_extra(monkeypatch):
    """The results' tables without pandas raised a plain ModuleNotFoundError holding the
    install hint, which the command line alone told from a broken install, by its words."""
    from llama_env._install import MissingExtra
    from train.evaluation.stats import pandas

    monkeypatch.setitem(sys.modules, "pandas", None)  # as if not installed
    with pytest.raises(MissingExtra, match="need pandas, which is not installed") as caught:
        pandas()
    assert caught.value.extra == "notebooks" and str(caught.value).endswith(install_hint("notebooks"))


def test_only_a_module_the_extra_brings_is_put_down_to_it():
    """A user's agent importing a module that is not installed was 'the sb3 backend trains
    with foo_not_installed, which is not installed: pip install ...[train]'."""
    from llama_env._install import missing_from

    assert missing_from("train", ModuleNotFoundError("", name="sb3_contrib.common")) == "sb3_contrib"
    assert missing_from("web", ModuleNotFoundError("", name="PIL")) == "PIL"
    for name in ("foo_not_installed", "numpy._core", "agents", None):
        assert missing_from("train", ModuleNotFoundError("", name=name)) is None
    assert missing_from("train", ModuleNotFoundError("", name="ray")) is None
    assert missing_from("rllib", ModuleNotFoundError("", name="ray")) == "ray"
