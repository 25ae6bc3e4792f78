"""The layers hold: the engine knows nothing about RL, arrows point down, and benchmarks only measure.

* The engine knows nothing about RL: the engine-level modules of ``llama_env`` import
  only the standard library, numpy and each other, and work with gymnasium and
  pettingzoo blocked.
* Arrows point down: no module of ``llama_env`` imports ``agents`` or ``train``;
  ``agents`` imports only ``llama_env``; there is no import circle anywhere (the graph:
  tests/import_graph.py).
* ``benchmarks/`` only measures: nothing outside it imports or loads it.
* The bottom layer still builds agents by name: the ``agents`` package fills the
  registry through an entry point, so ``gym.make("Llama-v0", opponents="heuristic")``
  works after ``import llama_env`` alone.
"""

from __future__ import annotations

import ast
import subprocess
import sys
import textwrap
from pathlib import Path

import import_graph
import pytest
from import_graph import BENCHMARKS, benchmark_uses, find_cycles, graph_of, python_sources, upward_arrows

ROOT = Path(__file__).resolve().parent.parent
ENGINE_MODULES = ("engine", "observation", "rewards", "render", "agent", "table", "worlds", "batch")
ALLOWED_THIRD_PARTY = {"numpy"}
ENV_THIRD_PARTY = {"numpy", "gymnasium", "pettingzoo", "resvg_py", "PIL"}  # the last two: the web extra, lazily
LLAMA_ENV_MODULES = sorted(p.stem for p in (ROOT / "llama_env").glob("*.py"))


def imported_modules(path: Path) -> set[str]:
    """Every module an import statement in ``path`` names (absolute form)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: resolve against the llama_env package
                base = "llama_env" if node.level == 1 else ""
                out.add(f"{base}.{node.module}" if node.module else base)
            else:
                out.add(node.module)
    return out


def is_allowed(module: str) -> bool:
    top = module.split(".")[0]
    if top in sys.stdlib_module_names or top in ALLOWED_THIRD_PARTY:
        return True
    return module in {f"llama_env.{m}" for m in ENGINE_MODULES}


@pytest.mark.parametrize("name", ENGINE_MODULES)
def test_engine_modules_import_only_stdlib_numpy_and_each_other(name):
    mods = imported_modules(ROOT / "llama_env" / f"{name}.py")
    assert mods, "the parser found no imports at all"
    bad = sorted(m for m in mods if not is_allowed(m))
    assert bad == [], f"llama_env/{name}.py imports {bad}"


def test_the_import_check_catches_rl_imports(tmp_path):
    """Guard: the checker does flag what it must."""
    p = tmp_path / "m.py"
    p.write_text("import os\nimport numpy as np\nfrom gymnasium import spaces\nfrom .aec_env import env\n")
    mods = imported_modules(p)
    assert sorted(m for m in mods if not is_allowed(m)) == ["gymnasium", "llama_env.aec_env"]


BLOCKED_IMPORT_SCRIPT = textwrap.dedent(
    """
    import importlib, importlib.util, sys, types
    for blocked in ("gymnasium", "pettingzoo", "torch", "stable_baselines3", "sb3_contrib"):
        sys.modules[blocked] = None  # any import of these now raises ImportError
    root = sys.argv[1]
    # engine.py alone, loaded from its file
    spec = importlib.util.spec_from_file_location("llama_engine_alone", f"{root}/llama_env/engine.py")
    engine = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = engine  # dataclasses look their module up there
    spec.loader.exec_module(engine)
    g = engine.LlamaGame(4, rng=0)
    while not g.game_over:
        g.step(g.legal_actions()[0])
    # the other engine modules, through a bare package that skips llama_env/__init__.py
    pkg = types.ModuleType("llama_env")
    pkg.__path__ = [f"{root}/llama_env"]
    sys.modules["llama_env"] = pkg
    for name in ("engine", "observation", "rewards", "render", "agent", "table"):
        importlib.import_module(f"llama_env.{name}")
    from llama_env.engine import LlamaGame
    from llama_env.observation import encode, decode
    from llama_env.rewards import game_rewards
    from llama_env.render import render_table
    from llama_env.table import Table
    g = LlamaGame(3, rng=1)
    assert decode(encode(g, 0)).hand_size == 6
    assert "top card" in render_table(g, 0)
    assert game_rewards([1, 2, 1]) == [0.5, 0.0, 0.5]
    class First:
        def act(self, observation, action_mask):
            return int(action_mask.nonzero()[0][0])
    Table(g, [First(), First(), First()]).play()
    assert g.game_over
    loaded = sorted(m for m in ("gymnasium", "pettingzoo", "torch") if sys.modules.get(m) is not None)
    print("OK", loaded)
    """
)


def test_engine_imports_with_rl_libraries_blocked():
    proc = subprocess.run(
        [sys.executable, "-c", BLOCKED_IMPORT_SCRIPT, str(ROOT)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "OK []"


def test_blocking_really_blocks():
    """Guard: with gymnasium blocked the env modules cannot be imported."""
    script = "import sys; sys.modules['gymnasium'] = None\nimport llama_env.gym_env\n"
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert proc.returncode != 0 and "gymnasium" in proc.stderr


# --------------------------------------------------------------------------- arrows point down


def _project_imports(path: Path) -> set[str]:
    return {m for m in imported_modules(path) if m.split(".")[0] in ("llama_env", "agents", "train")}


@pytest.mark.parametrize("name", LLAMA_ENV_MODULES)
def test_llama_env_imports_nothing_from_the_layers_above(name):
    path = ROOT / "llama_env" / f"{name}.py"
    mods = imported_modules(path)
    up = sorted(m for m in mods if m.split(".")[0] in ("agents", "train"))
    assert up == [], f"llama_env/{name}.py imports {up}"
    foreign = sorted(
        m for m in mods if m.split(".")[0] not in sys.stdlib_module_names | ENV_THIRD_PARTY | {"llama_env"}
    )
    assert foreign == [], f"llama_env/{name}.py imports {foreign}"


def test_no_module_imports_a_private_name_of_the_engine():
    """The observation encoder imported the engine's private ``_hand_penalty``; a module
    that needs the engine uses what it offers the others (``LlamaGame.penalty``)."""
    private = []
    for part in ("llama_env", "agents", "train"):
        for path in sorted((ROOT / part).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
                if isinstance(node, ast.ImportFrom) and node.module == "llama_env.engine":
                    private += [f"{path.relative_to(ROOT)}: {a.name}" for a in node.names if a.name.startswith("_")]
    assert private == []


@pytest.mark.parametrize("path", sorted((ROOT / "agents").glob("*.py")), ids=lambda p: p.name)
def test_agents_import_only_llama_env(path):
    up = sorted(m for m in _project_imports(path) if m.split(".")[0] == "train")
    assert up == [], f"agents/{path.name} imports {up}"


def test_no_import_circle_and_no_upward_arrow():
    graph = graph_of(ROOT)
    assert find_cycles(graph) == []
    assert upward_arrows(graph) == []
    # guard: the checker sees an upward arrow and a circle when there is one
    graph["llama_env.engine"] = {"agents.base"}
    graph["agents.base"] = {"llama_env.engine"}
    assert find_cycles(graph) == [["agents.base", "llama_env.engine"]]
    assert upward_arrows(graph) == [("llama_env.engine", "agents.base")]


# --------------------------------------------------------------------------- benchmarks/ only measures

BENCHMARK_SCRIPTS = {p.stem for p in (ROOT / BENCHMARKS).glob("*.py")}


def test_nothing_outside_benchmarks_imports_or_loads_a_benchmark():
    """benchmarks/ measures, and the product, the tests and the
    notebooks use none of it (a shipped artifact made by a benchmark script, or a test
    that passes only while a benchmark keeps its internals, is the failure this prevents)."""
    assert BENCHMARK_SCRIPTS, "no benchmark scripts found: the check would pass vacuously"
    checker = Path(import_graph.__file__).resolve()
    sources = [(p, text) for p, text in python_sources(ROOT) if p.resolve() != checker]
    assert any(p.suffix == ".ipynb" for p, _ in sources) and len(sources) > 100
    uses = {
        str(p.relative_to(ROOT)): found
        for p, text in sources
        if (found := benchmark_uses(text, BENCHMARK_SCRIPTS, str(p)))
    }
    assert uses == {}, f"benchmarks/ is imported or loaded from outside it: {uses}"


@pytest.mark.parametrize(
    "source",
    [
        "import benchmarks.env_speed",
        "from env_speed import main",
        "from benchmarks import env_speed",
        'import sys\nsys.path.insert(0, str(ROOT / "benchmarks"))',
        'spec = importlib.util.spec_from_file_location("arch", ROOT / "benchmarks" / "architecture.py")',
        'runpy.run_path("benchmarks/env_speed.py")',
        'exec(open("../benchmarks/env_speed.py").read())',
        'BENCH = ROOT / "benchmarks"\nsys.path.append(str(BENCH))',
        'code = (ROOT / "benchmarks" / "env_speed.py").read_text()',
    ],
)
def test_the_benchmark_check_catches_an_import_or_a_load(source):
    """Guard: each way of reaching a benchmark script is caught."""
    assert benchmark_uses(source, {"env_speed", "architecture"}) != []


def test_the_benchmark_check_lets_prose_cite_a_benchmark_and_a_program_run_one():
    """A docstring or a message may cite the script that measures a number, and a docs
    test may run a documented benchmark command as the user would (its ``--help``)."""
    source = (
        '"""Measured by benchmarks/env_speed.py."""\n'
        'HELP = "python benchmarks/env_speed.py measures it"\n'
        'subprocess.run([sys.executable, str(ROOT / "benchmarks/env_speed.py"), "--help"])\n'
    )
    assert benchmark_uses(source, {"env_speed"}) == []


def test_llama_env_alone_builds_agents_by_name():
    script = textwrap.dedent(
        """
        import sys
        import gymnasium as gym
        import llama_env
        assert "agents" not in sys.modules, "import llama_env imported agents"
        env = gym.make("Llama-v0", num_players=3, opponents="heuristic")
        env.reset(seed=0)
        print(type(env.unwrapped.opponents[0]).__name__)
        """
    )
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "HeuristicAgent"
