"""The agent API as the audits of the tenth stop met it: a subclass of a built-in agent
named as the built-in, spec typos passed over, a numpy warning out of the finite check,
and plugin warnings pointing inside llama-rl."""

from __future__ import annotations

import os
import subprocess
import sys
import warnings

import gymnasium as gym
import numpy as np
import pytest
from conftest import broken_plugin

import agents
from agents.base import BaseAgent, check_finite
from agents.heuristic import HeuristicAgent
from llama_env.agent import agent_label, parse_agent_list, parse_agent_spec
from train.evaluation import agent_display_names, evaluate


class Bolder(HeuristicAgent):
    def __init__(self) -> None:
        super().__init__(quit_base=-5)


class Named(HeuristicAgent):
    name = "named"


class Mine(BaseAgent):
    def act(self, observation, action_mask):
        return int(self.rng.choice(np.flatnonzero(action_mask)))


def test_a_subclass_of_a_built_in_agent_is_named_by_its_own_class():
    """``class Bolder(HeuristicAgent)`` inherited the name "heuristic": result tables read
    heuristic#1, heuristic#2 for it and the real heuristic."""
    assert agent_label(Bolder()) == "Bolder" and agent_label(Named()) == "named"
    assert agent_display_names([Bolder(), "heuristic", Mine()]) == ["Bolder", "heuristic", "Mine"]
    result = evaluate([Bolder(), "heuristic", Mine()], 3, seed=0, workers=1)
    assert [a.name for a in result.agents] == ["Bolder", "heuristic", "Mine"]
    # the built-in agents and a spec's label (set on the object) keep their names
    assert [agent_label(agents.make(n)) for n in ("heuristic", "random", "ppo")] == ["heuristic", "random", "ppo"]
    assert agent_label(agents.make("cautious:threshold=2")) == "cautious:threshold=2"


class Tuned(BaseAgent):
    def __init__(self, depth: int = 3) -> None:
        super().__init__()
        self.depth = depth

    @property
    def name(self) -> str:
        return f"tuned-{self.depth}"

    def act(self, observation, action_mask):
        return int(np.flatnonzero(action_mask)[0])


class Tuned3(Tuned):
    pass


class MyBase(BaseAgent):
    name = "mine"

    def act(self, observation, action_mask):
        return int(np.flatnonzero(action_mask)[0])


class MyDebug(MyBase):
    pass


class BolderStill(Bolder):
    pass


def test_a_name_a_users_base_class_sets_is_kept():
    """Since af4fb7c set aside every inherited ``name`` (it meant a built-in agent's), a
    user's own base class lost its own: ``Tuned3(Tuned)`` with ``Tuned.name`` a property
    (``tuned-3``) read ``Tuned3``, and ``MyDebug(MyBase)`` with ``MyBase.name = "mine"``
    read ``MyDebug``."""
    assert agent_label(Tuned3()) == "tuned-3" and agent_label(Tuned(4)) == "tuned-4"
    assert agent_label(MyDebug()) == "mine" and agent_label(MyBase()) == "mine"
    # a built-in agent's name stays set aside, however far down the user's classes go
    assert agent_label(BolderStill()) == "BolderStill" and agent_label(Bolder()) == "Bolder"
    named = Bolder()
    named.name = "bolder-5"  # set on the object
    assert agent_label(named) == "bolder-5"


@pytest.mark.parametrize(
    ("spec", "given"),
    [
        ("cautious:threshold=4:", "threshold=4"),
        ("cautious:threshold=4: ", "threshold=4"),
        ("cautious:threshold=4::seed=1", "threshold=4"),
        ("ppo:path=m.npz:", "path=m.npz"),
    ],
)
def test_a_colon_with_no_parameter_after_a_parameter_is_refused(spec, given):
    """The colon was glued to the value: 'must be an integer, got '4:'', or a model file
    named 'm.npz:' looked for."""
    with pytest.raises(ValueError, match=f"has an empty parameter after '{given}': a ':' with no key=value"):
        parse_agent_spec(spec, check=False)
    assert parse_agent_spec("ppo:path=C:\\models\\m.npz", check=False).params == {"path": "C:\\models\\m.npz"}


def test_an_agent_list_entry_that_is_no_text_is_named():
    """It was called an "empty entry in the agent list"; then counted from 0, so the
    first entry was "entry 0" and the second "entry 1"."""
    with pytest.raises(TypeError, match="entry 2 of the agent list must be a spec string .*, got 3"):
        parse_agent_list(["random", 3])
    with pytest.raises(TypeError, match="entry 1 of the agent list must be a spec string .*, got None"):
        parse_agent_list([None, "random"])
    with pytest.raises(ValueError, match="empty entry in the agent list"):
        parse_agent_list(["random", " "])


def test_a_large_finite_observation_entry_gives_no_numpy_warning():
    """An entry above about 1e19 overflowed the sum of squares: "RuntimeWarning: overflow
    encountered in dot" escaped from ppo.act."""
    env = gym.make("Llama-v0", num_players=4, opponents="heuristic")
    obs, info = env.reset(seed=0)
    obs = obs.copy()
    obs[40] = 1e30
    ppo = agents.make("ppo")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_finite(obs)
        check_finite(np.stack([obs, obs]))
        ppo.act(obs, info["action_mask"])
        ppo.act_batch(np.stack([obs, obs]), np.stack([info["action_mask"]] * 2))
    obs[41] = np.inf
    with pytest.raises(ValueError, match="must hold finite numbers, got inf at entry 41"):
        check_finite(obs)


@pytest.mark.parametrize(
    "call",
    [
        "from llama_env.agent import names; names()",
        "from llama_env.agent import make; make('heuristic')",
        "from train.evaluation import evaluate; evaluate(['heuristic', 'random'], 2, workers=1)",
        "import gymnasium as gym, llama_env; gym.make('Llama-v0', opponents='heuristic')",
    ],
)
def test_a_broken_plugin_warning_points_at_the_programs_line(tmp_path, call):
    """It pointed at a line of llama_env/agent.py (names() at agent.py:291), a fixed
    stacklevel one short of the caller on one path and wrong on the others."""
    env = broken_plugin(tmp_path)
    done = subprocess.run(
        [sys.executable, "-W", "always", "-c", call], capture_output=True, text=True, env=env, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert "<string>:1: RuntimeWarning: the agents of entry point 'broken'" in done.stderr, done.stderr


@pytest.mark.parametrize("package", ["train", "agents_of_mine"])
def test_a_broken_plugin_warning_points_into_a_program_s_own_package(tmp_path, package):
    """The warning skipped every frame of a package named ``llama_env``, ``agents`` or
    ``train``, so the module ``run`` of a program's own package ``train`` (a common name)
    was passed over and the warning pointed at whatever imported it; llama-rl's packages
    are known by where they are installed, not by name."""
    env = broken_plugin(tmp_path)
    (tmp_path / package).mkdir()
    (tmp_path / package / "__init__.py").write_text("")
    (tmp_path / package / "run.py").write_text("from llama_env.agent import names\n\nnames()\n")
    done = subprocess.run(
        [sys.executable, "-W", "always", "-c", f"import {package}.run"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    where = os.path.join(package, "run.py")
    assert f"{where}:3: RuntimeWarning: the agents of entry point 'broken'" in done.stderr, done.stderr


def test_an_agent_made_with_keywords_is_labelled_by_its_spec():
    """``make("cautious", threshold=2)`` and ``make("cautious", threshold=4)`` were both
    labelled ``cautious``, so a result table showed ``cautious#1`` and ``cautious#2`` where
    the same agents given as specs showed their values."""
    import agents
    from llama_env.agent import agent_label

    two, four = agents.make("cautious", threshold=2), agents.make("cautious", threshold=4)
    assert agent_display_names([two, four]) == ["cautious:threshold=2", "cautious:threshold=4"]
    assert agent_label(two) == agent_label(agents.make("cautious:threshold=2"))
    assert agent_label(agents.make("heuristic", seed=3)) == "heuristic"  # a seed is no parameter of the spec
    assert agent_label(agents.make("random", seed=3)) == "random"
    result = evaluate([two, four], num_games=4, seed=0, workers=1)
    assert set(result.names) == {"cautious:threshold=2", "cautious:threshold=4"}
