"""Every path that drives a game goes through the table driver, so that a rule is checked in one place.

The engine's ``LlamaGame.step``, the batched engine's ``BatchGame.step`` (and its
unchecked ``step_checked``) and every
agent's ``act`` / ``act_batch`` are wrapped by spies that record which module called
them; each product path then plays games, and the only caller allowed is
:mod:`llama_env.table`. A second game loop anywhere
(asking an agent or applying a move itself) shows up here as another caller.
"""

from __future__ import annotations

import io
import sys
from collections import Counter
from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

import agents
import llama_env
from agents.heuristic import CautiousAgent, GreedyAgent, HeuristicAgent, PerturbedHeuristic
from agents.ppo import PPOAgent
from agents.random_agent import RandomAgent
from llama_env.batch import BatchGame
from llama_env.engine import LlamaGame, Rules
from train.evaluation import evaluate, tournament
from train.play.terminal import PlayConfig, play
from train.training.sb3.vec_env import BatchedLlamaVecEnv, LlamaVecEnv, PolicyAgent, ScalarLlamaVecEnv

DRIVER = "llama_env.table"


@pytest.fixture
def callers(monkeypatch: pytest.MonkeyPatch) -> Counter:
    """Counts (what, calling module) for the engine's step and every agent method."""
    seen: Counter = Counter()

    def spy(cls: type, name: str, seen_as: str | None = None, inside: str | None = None) -> None:
        """Wraps ``cls.name``; calls made from the module ``inside`` are the method's own and not counted."""
        real = getattr(cls, name)

        def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
            caller = sys._getframe(1).f_globals["__name__"]
            if caller != inside:
                seen[(seen_as or name, caller)] += 1
            return real(self, *args, **kwargs)

        monkeypatch.setattr(cls, name, wrapper)

    spy(LlamaGame, "step")
    spy(BatchGame, "step")
    # The driver steps a batch whose answers it has checked through the unchecked
    # step_checked; BatchGame.step's own call of it is not a second caller.
    spy(BatchGame, "step_checked", seen_as="step", inside="llama_env.batch")
    for cls in (RandomAgent, GreedyAgent, CautiousAgent, HeuristicAgent, PerturbedHeuristic, PPOAgent):
        spy(cls, "act")
        spy(cls, "act_batch")
    spy(PolicyAgent, "act_batch")
    return seen


def _only_the_driver(seen: Counter, *expected: str) -> None:
    assert seen, "the path drove no game"
    modules = {module for (_, module) in seen}
    assert modules == {DRIVER}, f"called from outside the table driver: {sorted(seen.items())}"
    for what in expected:
        assert any(name == what for (name, _) in seen), f"no {what} call was seen: {dict(seen)}"


def _gym(_: Counter) -> None:
    env = gym.make("Llama-v0", num_players=4, opponents=["heuristic", "random", "greedy"], seat="random")
    _, info = env.reset(seed=0)
    done = False
    while not done:
        _, _, done, _, info = env.step(int(np.flatnonzero(info["action_mask"])[0]))


def _aec(_: Counter) -> None:
    env = llama_env.env(num_players=3)
    env.reset(seed=0)
    for agent in env.agent_iter():
        obs, _, term, trunc, _ = env.last()
        env.step(None if term or trunc else env.action_space(agent).sample(obs["action_mask"]))


def _vec_env(_: Counter, cls: type[LlamaVecEnv] = BatchedLlamaVecEnv) -> None:
    env = cls(8, players=[2, 4], opponents={"heuristic": 1, "self": 1, "past": 1, "ppo": 1}, seed=0)
    env.set_policy("self", lambda obs, masks: np.array([np.flatnonzero(m)[0] for m in masks]))
    env.set_past_policies([lambda obs, masks: np.array([np.flatnonzero(m)[-1] for m in masks])])
    env.reset()
    for _ in range(60):
        env.step(np.array([np.flatnonzero(m)[0] for m in env.action_masks()]))


def _evaluate(_: Counter) -> None:  # games enough that the agents' batch_from is reached
    assert evaluate(["heuristic", "random", agents.make("cautious")], 96, seed=0, workers=1).batched


def _evaluate_game_by_game(_: Counter) -> None:
    evaluate(["heuristic", "random", agents.make("cautious")], 6, seed=0, workers=1, batched=False)


def _tournament(_: Counter) -> None:
    assert tournament(["heuristic", "greedy", "random", "ppo", "perturbed"], 2, 6, seed=0, workers=1).batched


def _tournament_game_by_game(_: Counter) -> None:
    tournament(["heuristic", "greedy", "random", "ppo"], 2, 6, seed=0, workers=1, batched=False)


def _terminal(_: Counter) -> None:
    moves = io.StringIO("\n".join(["q"] * 400) + "\n")
    out = io.StringIO()
    play(PlayConfig(rules=Rules(3), opponents=("heuristic", "random"), seed=1), moves, out)
    assert "Game over" in out.getvalue()


PATHS: dict[str, tuple[Callable[[Counter], None], tuple[str, ...]]] = {
    "Llama-v0": (_gym, ("step", "act")),
    "AEC env": (_aec, ("step",)),
    "batched VecEnv": (_vec_env, ("step", "act_batch")),
    "scalar VecEnv": (lambda seen: _vec_env(seen, ScalarLlamaVecEnv), ("step", "act_batch")),
    "evaluate (batched)": (_evaluate, ("step", "act_batch")),
    "evaluate (game by game)": (_evaluate_game_by_game, ("step", "act")),
    "tournament (batched)": (_tournament, ("step", "act_batch")),
    "tournament (game by game)": (_tournament_game_by_game, ("step", "act")),
    "terminal play": (_terminal, ("step", "act")),
}


@pytest.mark.parametrize("path", list(PATHS))
def test_every_game_driving_path_goes_through_the_driver(path: str, callers: Counter) -> None:
    run, expected = PATHS[path]
    run(callers)
    _only_the_driver(callers, *expected)


def test_the_spy_catches_a_second_batched_loop(callers: Counter) -> None:
    """Guard: a batch stepped outside the driver is reported too."""
    from llama_env.batch import BatchGame

    batch = BatchGame(8, 3, seed=0)
    bot = RandomAgent(seed=0)
    for _ in range(5):
        batch.step(bot.act_batch(batch.observation(0), batch.legal_action_mask))
    with pytest.raises(AssertionError, match="called from outside the table driver"):
        _only_the_driver(callers, "step")


def test_the_spy_catches_a_second_loop(callers: Counter) -> None:
    """Guard: a loop written outside the driver is reported."""
    game = LlamaGame(2, rng=0)
    bot = RandomAgent(seed=0)
    while not game.game_over:
        from llama_env.observation import action_mask, encode

        game.step(bot.act(encode(game, game.current_player), action_mask(game.legal_actions())))
    with pytest.raises(AssertionError, match="called from outside the table driver"):
        _only_the_driver(callers, "step")
