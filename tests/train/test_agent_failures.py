"""An agent that fails during ``llama-rl eval`` or ``tournament`` is named in one line,
exit 1, however the games are played (here, in worker processes, on the batched engine)."""

from __future__ import annotations

import threading
import warnings
from collections.abc import Iterator

import numpy as np
import pytest

import agents  # noqa: F401 - the built-in agents, registered
from llama_env import agent as registry
from llama_env.batch import BatchGame
from llama_env.table import AgentError, BatchTable
from train.cli import main
from train.evaluation import evaluate


class Breaks:
    """Fails on its third decision, the way ``kind`` says; a batch agent too."""

    name = "breaks"

    def __init__(self, kind: str = "runtime") -> None:
        self.kind = kind
        self.calls = 0

    def _answer(self, mask: np.ndarray) -> int:
        self.calls += 1
        if self.calls >= 3:
            if self.kind == "runtime":
                raise RuntimeError("the model file vanished")
            if self.kind == "value":
                raise ValueError("operands could not be broadcast")
            if self.kind == "illegal":
                return 99
        return int(np.flatnonzero(mask)[0])

    def _answers(self, masks: np.ndarray) -> np.ndarray:
        answers = np.array([self._answer(m) for m in masks])
        return answers[:-1] if self.kind == "short" and self.calls >= 3 else answers

    def act(self, observation: np.ndarray, action_mask: np.ndarray) -> int:
        return self._answer(action_mask)

    def act_batch(self, observations: np.ndarray, action_masks: np.ndarray) -> np.ndarray:
        return self._answers(action_masks)


@pytest.fixture
def breaks() -> Iterator[None]:
    registry.register("tf_breaks")(Breaks)
    try:
        yield
    finally:
        for table in (registry._REGISTRY, registry._DOCS, registry._GROUPS):
            table.pop("tf_breaks", None)


EVAL = ["eval", "--agents", "tf_breaks:kind={kind},random", "--games", "4"]
TOURNAMENT = ["tournament", "--players", "2", "--agents", "tf_breaks:kind={kind},random", "--games", "4"]
WAYS = {
    "eval game by game": [*EVAL, "--no-batch"],
    "eval in workers": [*EVAL, "--no-batch", "--workers", "2"],
    "eval batched": [*EVAL, "--batch"],
    "tournament game by game": [*TOURNAMENT, "--no-batch"],
    "tournament batched": [*TOURNAMENT, "--batch"],
}
FAILURES = {
    "runtime": "RuntimeError: the model file vanished",
    "value": "ValueError: operands could not be broadcast",
    "illegal": "99",
    "short": "act_batch must return one action per observation",
}


def _one_line_exit_1(argv: list[str], kind: str, capsys: pytest.CaptureFixture[str], prefix: str = "") -> str:
    """The one error line of ``argv`` run with ``--seed 1``, checked: exit 1, no traceback,
    ``prefix`` then the agent named first, and its failure in it."""
    code = main([a.format(kind=kind) for a in argv] + ["--seed", "1"])
    err = capsys.readouterr().err
    assert code == 1, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    assert lines[0].startswith(f"llama-rl: error: {prefix}agent 'tf_breaks:kind={kind}'"), err
    assert FAILURES[kind] in lines[0], err
    return lines[0]


@pytest.mark.parametrize("kind", ["runtime", "value", "illegal"])
@pytest.mark.parametrize("way", list(WAYS))
def test_an_agent_failing_in_a_game_is_named_in_one_line_exit_1(breaks, capsys, way, kind):
    """A RuntimeError from an agent ended `llama-rl eval` in a traceback; a ValueError,
    and an illegal answer, were reported as usage errors (exit 2), as if the command
    line were wrong."""
    _one_line_exit_1(WAYS[way], kind, capsys)


@pytest.mark.parametrize("way", [w for w in WAYS if w.endswith("batched")])
def test_an_act_batch_of_the_wrong_shape_is_the_agents_failure(breaks, capsys, way):
    _one_line_exit_1(WAYS[way], "short", capsys)


def test_a_configuration_error_is_still_a_usage_error(breaks, capsys):
    code = main(["eval", "--agents", "tf_breaks:kind=runtime:nope=1,random", "--games", "2"])
    assert code == 2
    assert "nope" in capsys.readouterr().err


def test_a_batch_table_names_the_agent_seat_and_game_of_an_act_that_raises():
    """One ``act`` per game (fewer games than its batch_from): the seat and game are known."""
    agent = Breaks("runtime")
    agent.batch_from = 100  # type: ignore[attr-defined]
    table = BatchTable(BatchGame(4, 2, seed=0), [agent, agent])
    with pytest.raises(AgentError, match=r"agent 'breaks' at seat [01] of game [0-3]: RuntimeError") as info:
        for _ in range(8):
            table.advance(steps=1)
    assert info.value.agent == "breaks" and info.value.seat in (0, 1)
    assert isinstance(info.value.__cause__, RuntimeError)


@pytest.mark.parametrize("kind", ["runtime", "illegal"])
def test_an_opponent_failing_in_training_is_named_in_one_line_exit_1(breaks, capsys, tmp_path, kind):
    """An opponent whose act raised ended `llama-rl train` in a traceback; one answering an
    illegal move was reported as a usage error (exit 2)."""
    argv = ["train", "--preset", "smoke", "--run-dir", str(tmp_path), "--opponents", "tf_breaks:kind={kind}"]
    line = _one_line_exit_1([*argv, "--final-eval-games", "0", "--no-progress"], kind, capsys, "training stopped: ")
    assert line.startswith(f"llama-rl: error: training stopped: agent 'tf_breaks:kind={kind}' at seat "), line


def test_an_agent_failing_in_fit_search_or_distill_is_one_line_exit_1(capsys, tmp_path, monkeypatch):
    """The search's heuristic opponents failing in the games of distill or fit-search ended
    in a traceback once the driver named them (an AgentError got past their ValueError
    rule), and named an internal wrapper."""
    import agents.heuristic as heuristic

    def boom(self, *args, **kwargs):
        raise ValueError("operands could not be broadcast together")

    monkeypatch.setattr(heuristic.HeuristicAgent, "act", boom)
    monkeypatch.setattr(heuristic.HeuristicAgent, "act_batch", boom)
    for argv in (
        [
            "distill",
            "--players",
            "2",
            "--games",
            "2",
            "--epochs",
            "1",
            "--below",
            "0.99",
            "--out",
            str(tmp_path / "d.npz"),
        ],
        ["fit-search", "--players", "2", "--games", "2", "--out", str(tmp_path / "n.npz")],
    ):
        code = main(argv)
        err = capsys.readouterr().err
        assert code == 1, err
        lines = err.strip().splitlines()
        assert len(lines) == 1 and "Traceback" not in err, err
        assert "agent 'heuristic'" in lines[0] and "ValueError: operands could not be broadcast" in lines[0], err
        assert "_ReadsVersion1" not in err and "_Teacher" not in err, err


class ResetBreaks(Breaks):
    def reset(self, seed: int | None = None) -> None:
        raise RuntimeError("no such file")


def test_an_agent_whose_reset_fails_is_named_with_the_game(capsys):
    registry.register("tf_reset_breaks")(ResetBreaks)
    try:
        code = main(["eval", "--agents", "random,tf_reset_breaks", "--games", "3", "--no-batch", "--workers", "1"])
    finally:
        for table in (registry._REGISTRY, registry._DOCS, registry._GROUPS):
            table.pop("tf_reset_breaks", None)
    err = capsys.readouterr().err
    assert code == 1, err
    assert err.strip() == (
        "llama-rl: error: agent 'tf_reset_breaks' at seat 1 in reset: RuntimeError: no such file (evaluation game 0)"
    )


class RaisesInAct:
    """Raises ``kind(message)`` on its first decision."""

    def __init__(self, kind: type[Exception], message: str) -> None:
        self.kind, self.message = kind, message

    def act(self, observation: np.ndarray, action_mask: np.ndarray) -> int:
        raise self.kind(self.message)


class Unsendable(ValueError):
    """An exception that cannot be pickled (it holds a lock)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.lock = threading.Lock()


@pytest.mark.parametrize("workers", [1, 2])
def test_the_agents_own_exception_is_the_cause_in_worker_processes_too(workers):
    """With workers the cause was concurrent.futures' _RemoteTraceback, not the KeyError
    the agent raised (pickling drops an exception's __cause__)."""
    with pytest.raises(AgentError) as info:
        evaluate([RaisesInAct(KeyError, "boom"), "random"], 20, workers=workers, batched=False)
    cause = info.value.__cause__
    assert type(cause) is KeyError and cause.args == ("boom",), repr(cause)
    assert info.value.agent == "RaisesInAct" and info.value.seat == 0
    if workers > 1:  # the worker's traceback is kept, behind the agent's exception
        assert "KeyError: 'boom'" in str(cause.__cause__)


def test_an_exception_that_cannot_be_pickled_comes_back_as_a_stand_in_of_its_name(enough_cores):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # played in the workers, not in this process
        with pytest.raises(AgentError) as info:
            evaluate([RaisesInAct(Unsendable, "bad weights"), "random"], 20, workers=2, batched=False)
    cause = info.value.__cause__
    assert type(cause).__name__ == "Unsendable" and type(cause).__module__ == Unsendable.__module__
    assert isinstance(cause, ValueError) and str(cause) == "bad weights"
