"""What the registry does with a factory: it refuses one that is not callable, and
``make``, ``AgentSpec.build`` and everything built on them (evaluation, the Gym env's
opponents, ``--agents``) refuse what a factory returns that is no agent, and name the
agent when its factory raises, in one ``ValueError``."""

from __future__ import annotations

import re
import warnings
from collections.abc import Iterator

import gymnasium as gym
import numpy as np
import pytest

import agents
from llama_env import agent as registry
from train.cli import main
from train.evaluation import evaluate

NAMES = ("tf_noreturn", "tf_fortytwo", "tf_raises", "tf_never")


class _First:
    def act(self, observation: np.ndarray, action_mask: np.ndarray) -> int:
        return int(np.flatnonzero(action_mask)[0])


def _noreturn() -> None:
    """A plugin's factory that builds its agent and forgets ``return``."""
    _First()


def _raises() -> _First:
    raise RuntimeError("kaboom")


@pytest.fixture
def factories() -> Iterator[None]:
    registry.register("tf_noreturn")(_noreturn)
    registry.register("tf_fortytwo")(lambda: 42)
    registry.register("tf_raises")(_raises)
    try:
        yield
    finally:
        for table in (registry._REGISTRY, registry._DOCS, registry._GROUPS):
            for name in NAMES:
                table.pop(name, None)


@pytest.mark.usefixtures("factories")
def test_a_factory_returning_no_agent_is_refused_naming_the_agent():
    """``None`` became an outside seat in the Gym env (the learner then moved for the
    opponent too), and evaluation's error named no agent ("seats [0] have none")."""
    none = re.escape(
        "agent 'tf_noreturn': its factory returned no agent: an agent must have act(observation, action_mask) -> int, "
        "got None"
    )
    with pytest.raises(ValueError, match=none):
        agents.make("tf_noreturn")
    with pytest.raises(ValueError, match=none):
        registry.AgentSpec("tf_noreturn").build(seed=0)
    with pytest.raises(ValueError, match="opponents: " + none):
        gym.make("Llama-v0", opponents="tf_noreturn")
    with pytest.raises(ValueError, match=none):
        evaluate(["tf_noreturn", "random"], 2, workers=1)
    with pytest.raises(ValueError, match=r"agent 'tf_fortytwo': its factory returned no agent: .*, got 42"):
        evaluate(["tf_fortytwo", "random"], 2, workers=1)


@pytest.mark.usefixtures("factories")
def test_the_command_line_names_a_factory_returning_no_agent_in_one_line(capsys):
    """A factory returning 42 ended ``llama-rl eval`` in a 59-line traceback."""
    assert main(["eval", "--agents", "tf_fortytwo,random", "--games", "2", "--workers", "1"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "agent 'tf_fortytwo': its factory returned no agent" in err


@pytest.mark.usefixtures("factories")
def test_a_factory_that_raises_is_named_in_python_as_on_the_command_line():
    """``evaluate(["tf_raises", "random"])`` raised the bare ``RuntimeError: kaboom``;
    ``--agents`` named the agent."""
    with pytest.raises(ValueError, match=r"^cannot build agent 'tf_raises': RuntimeError: kaboom$") as caught:
        evaluate(["tf_raises", "random"], 2, workers=1)
    assert isinstance(caught.value.__cause__, RuntimeError)
    with pytest.raises(ValueError, match=r"^opponents: cannot build agent 'tf_raises': RuntimeError: kaboom$"):
        gym.make("Llama-v0", opponents="tf_raises")


def test_register_refuses_what_is_not_callable():
    """``register("nc")(42)`` was accepted, and ``llama-rl agents`` listed it with the
    docstring of ``int``."""
    with pytest.raises(TypeError, match="agent 'tf_never': register a class or function that builds the agent, got 42"):
        registry.register("tf_never")(42)
    assert "tf_never" not in agents.names()


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        (registry.AgentSpec("ppo", {"deterministic": "yes"}), "PPOAgent deterministic must be True or False"),
        (registry.AgentSpec("ppo_v3", {"deterministic": 0}), "PPOAgent deterministic must be True or False"),
    ],
)
def test_a_bad_value_is_the_value_error_that_build_promises(spec, message):
    """``AgentSpec('ppo', {'deterministic': 'yes'}).build()`` raised ``TypeError``, where
    ``build`` and ``make`` say a bad value is a ``ValueError`` (a Gym opponent's JSON spec
    reaches it)."""
    with pytest.raises(ValueError, match=message):
        spec.build()
    with pytest.raises(ValueError, match=message):
        agents.make(spec.name, **spec.params)


class _ResetSeeded:
    """A plugin's agent seeded through ``reset`` alone, as evaluation seeds it."""

    def __init__(self, depth: int = 2) -> None:
        self.depth = depth
        self.rng = np.random.default_rng()

    def reset(self, seed: int | None = None) -> None:
        self.rng = np.random.default_rng(seed)

    def act(self, observation: np.ndarray, action_mask: np.ndarray) -> int:
        return int(self.rng.choice(np.flatnonzero(action_mask)))


class _Unseeded(_First):
    def __init__(self, depth: int = 2) -> None:
        self.depth = depth


def test_make_seeds_an_agent_through_its_reset_whether_given_a_name_or_a_spec(monkeypatch):
    """``make("bot", seed=1)`` said "agent 'bot' has no parameter 'seed'" while
    ``make("bot:depth=3", seed=1)``, ``AgentSpec.build(seed)`` and ``resolve`` seeded it
    through its ``reset``; an agent with neither was refused by name and not by spec."""
    monkeypatch.setattr(registry, "_UNSEEDABLE_SAID", set(), raising=False)
    registry.register("tf_reset_seeded")(_ResetSeeded)
    registry.register("tf_unseeded")(_Unseeded)
    try:
        obs, mask = np.zeros(52, np.float32), np.ones(9, dtype=bool)
        built = [
            agents.make("tf_reset_seeded", seed=1),
            agents.make("tf_reset_seeded", depth=3, seed=1),
            agents.make("tf_reset_seeded:depth=3", seed=1),
            registry.AgentSpec("tf_reset_seeded").build(seed=1),
            registry.resolve("tf_reset_seeded", seed=1),
        ]
        moves = [[a.act(obs, mask) for _ in range(12)] for a in built]
        assert moves[1:] == moves[:1] * 4
        assert agents.make("tf_reset_seeded", depth=3, seed=1).depth == 3
        with pytest.warns(RuntimeWarning, match="agent 'tf_unseeded' cannot be seeded"):
            assert agents.make("tf_unseeded", seed=1).depth == agents.make("tf_unseeded:depth=2", seed=1).depth == 2
    finally:
        for table in (registry._REGISTRY, registry._DOCS, registry._GROUPS):
            for name in ("tf_reset_seeded", "tf_unseeded"):
                table.pop(name, None)


def test_a_spec_seeds_an_agent_through_its_reset_as_the_keyword_does(monkeypatch):
    """docs/agents.md says an agent without a ``seed`` parameter gets the seed through its
    ``reset``, "by name or by spec"; ``make("bot:seed=5")``, ``--agents bot:seed=5``,
    evaluation and the Gym env's opponents refused it: "agent 'bot' has no parameter
    'seed'; its parameters: depth"."""
    monkeypatch.setattr(registry, "_UNSEEDABLE_SAID", set(), raising=False)
    registry.register("tf_reset_seeded")(_ResetSeeded)
    try:
        obs, mask = np.zeros(52, np.float32), np.ones(9, dtype=bool)
        built = [
            agents.make("tf_reset_seeded", seed=5),
            agents.make("tf_reset_seeded:seed=5"),
            agents.make("tf_reset_seeded:depth=3:seed=5"),
            agents.make("tf_reset_seeded:seed=1", seed=5),  # the keyword overrides the spec's
            registry.parse_agent_spec("tf_reset_seeded:seed=5").build(),
        ]
        moves = [[a.act(obs, mask) for _ in range(12)] for a in built]
        assert moves[1:] == moves[:1] * 4
        assert built[1].name == "tf_reset_seeded:seed=5" and built[2].depth == 3
        evaluate(["tf_reset_seeded:seed=5", "random"], 2, seed=0, workers=1)
        gym.make("Llama-v0", num_players=2, opponents="tf_reset_seeded:seed=5").reset(seed=0)
        with pytest.raises(ValueError, match=r"agent 'tf_reset_seeded:seed=x': seed must be a non-negative integer"):
            agents.make("tf_reset_seeded:seed=x")
    finally:
        for table in (registry._REGISTRY, registry._DOCS, registry._GROUPS):
            table.pop("tf_reset_seeded", None)


class _ResetUnseeded(_Unseeded):
    def reset(self) -> None:
        """A new game, with nothing to seed."""


@pytest.mark.parametrize(
    "build",
    [
        lambda name: agents.make(name, seed=1),
        lambda name: agents.make(f"{name}:depth=3", seed=1),
        lambda name: registry.AgentSpec(name).build(1),
    ],
    ids=["make", "make a spec", "build"],
)
def test_a_seed_that_an_agent_cannot_take_is_said_once(build, monkeypatch):
    """Since 1ef3fdd, ``make("bot", seed=1)`` for an agent with no ``seed`` parameter and no
    ``reset`` taking one dropped the seed without a word (it used to be refused)."""
    monkeypatch.setattr(registry, "_UNSEEDABLE_SAID", set(), raising=False)
    made = {"tf_unseeded": _Unseeded, "tf_reset_unseeded": _ResetUnseeded, "tf_reset_seeded": _ResetSeeded}
    for name, cls in made.items():
        registry.register(name)(cls)
    try:
        for name in ("tf_unseeded", "tf_reset_unseeded"):
            said = rf"agent '{name}' cannot be seeded: .* so seed=1 goes unused \(said once\)"
            with pytest.warns(RuntimeWarning, match=said) as caught:
                build(name)
            assert len(caught) == 1 and caught[0].filename == __file__
            with warnings.catch_warnings():
                warnings.simplefilter("error")
                build(name)  # once
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            registry._UNSEEDABLE_SAID.clear()
            build("tf_reset_seeded")
            agents.make("tf_unseeded")  # no seed, nothing to say
            registry.resolve("tf_reset_unseeded", seed=1)  # a driver seeding each game, as evaluation does:
            evaluate(["tf_unseeded", "tf_reset_unseeded", "random"], 3, seed=0, workers=1)  # through reset
    finally:
        for table in (registry._REGISTRY, registry._DOCS, registry._GROUPS):
            for name in made:
                table.pop(name, None)


def _eval_cli(spec: str) -> None:
    """``llama-rl eval --agents SPEC,random``; what it says on stderr, as a ``ValueError``."""
    import contextlib
    import io

    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        code = main(["eval", "--agents", f"{spec},random", "--games", "2", "--workers", "1"])
    if code != 0:
        raise ValueError(err.getvalue())


@pytest.mark.parametrize(
    "build",
    [
        lambda spec: agents.make(spec),
        lambda spec: agents.make(spec, seed=3),
        lambda spec: registry.parse_agent_spec(spec),
        lambda spec: registry.resolve(spec, seed=7),
        lambda spec: evaluate([spec, "random"], 2, seed=0, workers=1),
        lambda spec: gym.make("Llama-v0", num_players=2, opponents=spec),
        _eval_cli,
    ],
    ids=["make", "make with a seed", "parse", "resolve", "evaluate", "gym.make", "eval"],
)
def test_a_spec_s_seed_that_an_agent_cannot_take_is_refused(build, monkeypatch):
    """Since e48ea52 a spec's ``seed=`` is given through the agent's ``reset``; for an
    agent with no ``seed`` parameter and no ``reset`` taking one, ``fixed:seed=5`` was then
    dropped without a word where a driver resolves it (``evaluate``, the Gym env's
    ``opponents``, ``parse_agent_spec``, ``--agents``): it was refused before, and the
    keyword form (``make("fixed", seed=5)``) says so with a warning."""
    monkeypatch.setattr(registry, "_UNSEEDABLE_SAID", set(), raising=False)
    made = {"tf_unseeded": _Unseeded, "tf_reset_unseeded": _ResetUnseeded}
    for name, cls in made.items():
        registry.register(name)(cls)
    try:
        for name in made:
            for seed in ("5", "none"):
                said = f"agent '{name}' has no parameter 'seed' and no reset that takes a seed, so '{name}:seed="
                with warnings.catch_warnings():
                    warnings.simplefilter("error", RuntimeWarning)
                    with pytest.raises(ValueError, match=re.escape(said)) as caught:
                        build(f"{name}:seed={seed}")
                assert "its parameters: depth" in str(caught.value)
    finally:
        for table in (registry._REGISTRY, registry._DOCS, registry._GROUPS):
            for name in made:
                table.pop(name, None)
