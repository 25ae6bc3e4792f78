"""The checks of a plugin's agent as the audits of the twelfth stop met them: what an
agent declares of itself (``forewarn``, ``table_sizes``) refused in a line naming the
agent, where the commands printed a traceback."""

from __future__ import annotations

import contextlib
import io
import math

import numpy as np
import pytest

from llama_env.agent import forewarn, register, request_limits, table_sizes
from llama_env.engine import Rules
from train.cli import main


class First:
    """Plays its first legal move."""

    def act(self, observation, action_mask):
        return int(np.flatnonzero(action_mask)[0])


def run(argv: list[str]) -> tuple[int, str]:
    """``llama-rl argv``: its exit code and what it printed."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        code = main(argv)
    return code, out.getvalue()


class ForewarnRaises(First):
    name = "fw_raise"

    def forewarn(self, rules):
        raise RuntimeError("forewarn boom")


def test_a_forewarn_that_raises_is_a_value_error_naming_the_agent():
    """What a plugin's ``forewarn`` raised went through as it was: a traceback ending in
    RuntimeError in eval, tournament, watch and play (a 500 in serve)."""
    with pytest.raises(ValueError, match=r"^agent 'fw_raise': forewarn\(rules\) raised RuntimeError: forewarn boom$"):
        forewarn(ForewarnRaises(), Rules(2))
    try:
        forewarn(ForewarnRaises(), Rules(2))
    except ValueError as exc:
        assert isinstance(exc.__cause__, RuntimeError)


def test_eval_reports_a_forewarn_that_raises_in_one_line(agent_registry):
    register("fw_raise")(ForewarnRaises)
    code, out = run(["eval", "--agents", "fw_raise,random", "--games", "2", "--workers", "1"])
    assert code != 0 and "Traceback" not in out
    assert "llama-rl: error: agent 'fw_raise': forewarn(rules) raised RuntimeError: forewarn boom" in out


@pytest.mark.parametrize("sizes", [[], (), [1, 7, 100], [2, 7], [0], [True], "24", 2, [2, "4"]], ids=repr)
def test_table_sizes_that_are_no_table_sizes_are_refused_naming_the_agent(sizes):
    """``table_sizes = []`` was an IndexError in the warning's words, and ``[1, 7, 100]``
    was taken without a word (and never warned of at any table)."""

    class Sizes(First):
        name = "sizes"
        table_sizes = sizes

    with pytest.raises(
        ValueError,
        match=r"^agent 'sizes': table_sizes must be integers 2\.\.6, got ",
    ):
        table_sizes(Sizes())


def test_an_agents_table_sizes_are_checked_as_a_models_in_one_line():
    """An agent's ``table_sizes`` had a check of its own beside a model's, in other words,
    and a 2-D array was named over two lines."""
    from agents.ppo import Actor
    from llama_env.engine import check_table_sizes

    class Sizes(First):
        name = "sizes"
        table_sizes = np.array([[2, 3], [4, 5]])

    with pytest.raises(ValueError) as refused:
        table_sizes(Sizes())
    assert str(refused.value) == "agent 'sizes': table_sizes must be integers 2..6, got array([[2, 3], [4, 5]])"
    for sizes in ([2, True], [2.0], []):
        with pytest.raises(ValueError, match=r"^table sizes must be integers 2\.\.6, got "):
            check_table_sizes(sizes)
        with pytest.raises(ValueError, match=r"^table sizes must be integers 2\.\.6, got "):
            Actor([(np.zeros((4, 9)), np.zeros(9))], table_sizes=sizes)
        Sizes.table_sizes = sizes
        with pytest.raises(ValueError, match=r"^agent 'sizes': table_sizes must be integers 2\.\.6, got "):
            table_sizes(Sizes())


def test_table_sizes_are_sorted_and_each_once():
    class Sizes(First):
        table_sizes = [6, 2, 2, np.int64(4)]

    assert table_sizes(Sizes()) == (2, 4, 6)


def test_eval_reports_empty_table_sizes_in_one_line(agent_registry):
    class Empty(First):
        name = "sizes_empty"
        table_sizes: list[int] = []

    register("sizes_empty")(Empty)
    code, out = run(["eval", "--agents", "sizes_empty,random", "--games", "2", "--workers", "1"])
    assert code != 0 and "Traceback" not in out
    assert "llama-rl: error: agent 'sizes_empty': table_sizes must be integers 2..6, got []" in out


class BadPopulation(First):
    name = "badpop"
    population = True
    members = "abc"


@pytest.mark.parametrize(
    "argv",
    [
        ["eval", "--agents", "badpop,random", "--games", "2", "--workers", "1"],
        ["watch", "--agents", "badpop,random", "--delay", "0"],
    ],
    ids=["eval", "watch"],
)
def test_a_population_whose_members_are_no_agents_is_one_line_at_the_command_line(agent_registry, argv):
    """A plugin's population with ``members = "abc"`` was a TypeError the commands did
    not report: a traceback in eval, tournament, watch, play and train --opponents."""
    register("badpop")(BadPopulation)
    code, out = run(argv)
    assert code != 0 and "Traceback" not in out
    assert (
        "llama-rl: error: agent 'badpop' is a population (population = True): its members must be a non-empty "
        "list of agents, got 'abc'" in out
    )


@pytest.mark.parametrize(
    "limits, found",
    [
        (
            {"x": ("1", "5")},
            r"request_limits\['x'\] must be a pair \(low, high\) of numbers, low <= high, got \('1', '5'\)",
        ),
        ({"x": (1,)}, r"request_limits\['x'\] must be a pair .*, got \(1,\)"),
        ({"x": (5, 1)}, r"request_limits\['x'\] must be a pair .*low <= high, got \(5, 1\)"),
        ({"x": (float("nan"), 1)}, r"request_limits\['x'\] must be a pair"),
        ({"x": (True, 5)}, r"request_limits\['x'\] must be a pair"),
        ({"x": 5}, r"request_limits\['x'\] must be a pair .*, got 5$"),
        ({3: (1, 5)}, r"request_limits\[3\] must be a pair"),
        ([("x", (1, 5))], r"request_limits must be a mapping \{parameter: \(low, high\)\}, got \[\('x', \(1, 5\)\)\]"),
    ],
)
def test_request_limits_that_are_no_bounds_are_refused_naming_the_agent(agent_registry, limits, found):
    """A plugin's malformed ``request_limits`` was returned as it was, and ``serve`` failed
    comparing a parameter with it: a 500 for a request naming the agent."""
    from train.play.session import AgentPolicy, SessionError

    class Bounded(First):
        request_limits = limits

        def __init__(self, x: int = 1) -> None:
            self.x = x

    register("bounded")(Bounded)
    with pytest.raises(ValueError, match=f"^agent 'bounded': {found}"):
        request_limits("bounded")
    with pytest.raises(SessionError, match=f"^seat 1: agent 'bounded': {found}") as refused:
        AgentPolicy().spec("bounded:x=3", "seat 1")
    assert refused.value.status == 400


def test_request_limits_in_numbers_of_any_kind_are_read(agent_registry):
    class Bounded(First):
        request_limits = {"x": [np.int64(1), 5.5], "y": (-math.inf, math.inf)}

    register("bounded_ok")(Bounded)
    assert request_limits("bounded_ok") == {"x": (1, 5.5), "y": (-math.inf, math.inf)}


class Unnamed(First):
    """No name of its own."""


class SelfNamed(First):
    name = "my bot"


def test_an_agent_built_from_a_registered_name_is_named_by_it(agent_registry):
    """A plugin's agent was named by its class in messages and tables where the user typed
    its registered name: "agent 'NpFloat' at seat 1" for ``opponents="np_float"``, while
    a spec with parameters was named by the spec."""
    import agents
    from agents.heuristic import HeuristicAgent
    from llama_env.agent import AgentSpec, agent_label, parse_agent_spec, resolve

    register("unnamed")(Unnamed)
    register("self_named")(SelfNamed)
    register("bolder2")(type("Bolder2", (HeuristicAgent,), {}))
    register("strong")(lambda: HeuristicAgent(quit_base=2))  # a plugin's factory of a built-in agent
    for build in (agents.make, resolve, lambda n: AgentSpec(n).build(), lambda n: parse_agent_spec(n).build()):
        assert agent_label(build("unnamed")) == "unnamed"
        assert agent_label(build("bolder2")) == "bolder2"  # the built-in's name is not its own
        assert agent_label(build("strong")) == "strong"
        assert agent_label(build("self_named")) == "my bot"  # a name of its own is kept
    assert agent_label(Unnamed()) == "Unnamed"  # an object made by hand: its class, as before
    assert agent_label(resolve("bolder2:quit_base=1")) == "bolder2:quit_base=1"


def test_the_shipped_agents_keep_their_names():
    import agents
    from llama_env.agent import agent_label, names

    for name in names():
        if name != "search":  # (slow to build: its name is its class's, as the others')
            assert agent_label(agents.make(name)) == name


def test_a_plugins_agent_is_named_as_typed_in_the_tables_errors(agent_registry):
    import gymnasium as gym

    class FloatAnswer(First):
        def act(self, observation, action_mask):
            return float(np.flatnonzero(action_mask)[0])

    register("float_answer")(FloatAnswer)
    env = gym.make("Llama-v0", opponents="float_answer", seat=0, num_players=2)
    _, info = env.reset(seed=0)
    with pytest.raises(ValueError, match=r"^agent 'float_answer' at seat 1: "):
        for _ in range(100):
            _, _, done, _, info = env.step(int(np.flatnonzero(info["action_mask"])[-1]))
            if done:
                _, info = env.reset()


def test_an_agent_is_described_by_its_own_docstring_not_its_base_classs(agent_registry):
    """A ``BaseAgent`` subclass without a docstring was listed by ``llama-rl agents`` and
    ``/api/agents`` with BaseAgent's words."""
    from agents.base import BaseAgent
    from llama_env.agent import describe

    class Silent(BaseAgent):
        def act(self, observation, action_mask):
            return int(np.flatnonzero(action_mask)[0])

    class Told(Silent):
        """First line of its own,
        still the first paragraph.

        Not this one."""

    def factory():
        """Indented oddly."""
        return Silent()

    register("silent")(Silent)
    register("told")(Told)
    register("told_by_factory")(factory)
    described = describe()
    assert described["silent"] == ""
    assert described["told"] == "First line of its own, still the first paragraph."
    assert described["told_by_factory"] == "Indented oddly."


class AnswersNone(First):
    name = "none_batch"

    def act_batch(self, observations, action_masks):
        return None


def test_an_act_batch_answering_none_is_said_to_answer_none():
    """It was reported as "got shape ()", which no one returned."""
    from llama_env.batch import BatchGame
    from llama_env.engine import LlamaGame
    from llama_env.table import AgentError, BatchTable, Table, advance_all

    found = r"^agent 'none_batch': act_batch must return one action per observation, shape \(\d+,\), got None$"
    tables = [Table(LlamaGame(2, rng=s), [None, AnswersNone()]) for s in range(2)]
    for t in tables:
        t.apply(8)
    with pytest.raises(AgentError, match=found):
        advance_all(tables)
    with pytest.raises(AgentError, match=found):
        BatchTable(BatchGame(4, 2, seed=0), [AnswersNone(), AnswersNone()]).advance()


@pytest.mark.parametrize("name", ["self", "past"])
def test_the_opponent_mixs_own_kinds_cannot_be_registered(agent_registry, name):
    """An agent registered as ``self`` or ``past`` was listed, and never chosen in a
    training run's ``--opponents``, which reads those names as the policy and its past."""
    from llama_env.agent import names

    with pytest.raises(ValueError, match=rf"^an agent cannot be named '{name}': training's --opponents reads 'self'"):
        register(name)(First)
    assert name not in names()


def test_the_opponent_mixs_kinds_are_declared_once():
    from llama_env.agent import RESERVED_NAMES
    from train.training.seats import POLICY_KINDS

    assert POLICY_KINDS is RESERVED_NAMES == ("self", "past")


class CallsItsName(First):
    """A ``name()`` method of its own, which its ``act`` calls."""

    def __init__(self, level: int = 1) -> None:
        self.level = level

    def name(self):
        return "namer v2"

    def act(self, observation, action_mask):
        assert self.name() == "namer v2"
        return super().act(observation, action_mask)


def test_an_agent_whose_name_is_a_method_keeps_it(agent_registry):
    """Naming an agent by its registered name wrote ``name`` over its own method: an
    ``act`` that called ``self.name()`` failed with "'str' object is not callable"."""
    import agents
    from llama_env.agent import agent_label
    from train.evaluation.evaluate import evaluate

    register("namer")(CallsItsName)
    for spec in ("namer", "namer:level=2"):
        agent = agents.make(spec)
        assert agent.name() == "namer v2"
        assert agent_label(agent) == "CallsItsName"  # a name that is no string is none: its class, as before
    assert evaluate([agents.make("namer"), "random"], 2, workers=1).names == ["CallsItsName", "random"]


_SHARED = First()


def test_one_object_registered_under_two_names_is_named_as_asked_for(agent_registry):
    """A factory that returns one object registered as ``one`` and ``two``: the name
    ``make("one")`` gave it was taken for its own, and ``make("two")`` was labelled ``one``;
    a plugin's factory that returns ``make("heuristic:quit_base=2")`` was labelled by that
    spec, where one returning ``make("heuristic", quit_base=2)`` had its registered name."""
    import agents
    from llama_env.agent import agent_label

    register("one")(lambda: _SHARED)
    register("two")(lambda: _SHARED)
    assert agent_label(agents.make("one")) == "one"
    assert agent_label(agents.make("two")) == "two"
    assert agent_label(agents.make("one")) == "one"
    register("by_spec")(lambda: agents.make("heuristic:quit_base=2"))
    register("by_keyword")(lambda: agents.make("heuristic", quit_base=2))
    assert agent_label(agents.make("by_spec")) == "by_spec"
    assert agent_label(agents.make("by_keyword")) == "by_keyword"
    assert agent_label(agents.make("by_spec:seed=1")) == "by_spec:seed=1"
