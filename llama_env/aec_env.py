"""PettingZoo AEC environment for L.L.A.M.A.

A thin adapter over :class:`llama_env.engine.LlamaGame`: it translates actions and
observations and keeps PettingZoo's books; every rule lives in the engine and every
reward in :mod:`llama_env.rewards`.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium import spaces
from pettingzoo import AECEnv
from pettingzoo.utils import wrappers

from llama_env.engine import (
    DEFAULT_END_SCORE,
    DEFAULT_HAND_SIZE,
    NUM_ACTIONS,
    LlamaGame,
    RoundResult,
    validate_rule_options,
)
from llama_env.observation import OBS_SIZE, action_mask, encode, observation_bounds
from llama_env.render import render_round_summary, render_table
from llama_env.rewards import DEFAULT_REWARD, rewards_for, validate_reward_mode

__all__ = ["env", "raw_env", "LlamaAECEnv", "ILLEGAL_ACTION_REWARD"]

ILLEGAL_ACTION_REWARD = -1.0
RENDER_MODES = ("ansi", "human")

_ZERO_MASK = np.zeros(NUM_ACTIONS, dtype=np.int8)


class LlamaAECEnv(AECEnv):
    """L.L.A.M.A. as a PettingZoo AEC environment (one episode = one whole game).

    ## Agents
    ``player_0`` .. ``player_{n-1}`` in seat order; play passes from seat i to i + 1.

    ## Action space
    ``Discrete(9)``: 0..5 play a card of value 1..6, 6 play a llama, 7 draw, 8 quit.

    ## Observation space
    ``Dict(observation=Box(float32, (OBS_SIZE,)), action_mask=Box(int8, (9,)))``; the
    layout of ``observation`` is :data:`llama_env.observation.FIELDS`. The mask is all
    zeros for an agent that is not to act.

    ## Rewards
    ``reward="game"`` (default): 1/k to each of the k winners when the game ends.
    ``reward="round"``: minus the points taken plus the marker returned, every round.

    ## Episode end
    When a round ends with a score of at least ``end_score``: every agent terminates.

    ## Illegal actions
    The raw env raises :class:`llama_env.engine.IllegalActionError` and leaves the game
    untouched. :func:`env` wraps it the PettingZoo classic way, where an illegal action
    instead ends the game with reward -1 for the offender and 0 for the others.

    ## Arguments
    ``num_players`` (2..6, default 4), ``render_mode`` (``None``, ``"ansi"``,
    ``"human"``), ``reward`` (``"game"`` or ``"round"``), ``end_score`` (default 40),
    ``hand_size`` (default 6), ``random_first_player`` (default ``False``: seat 0
    starts the first round).

    ## Version history
    * v0: first release.
    """

    metadata = {"name": "llama_v0", "render_modes": list(RENDER_MODES), "is_parallelizable": False}

    def __init__(
        self,
        num_players: int = 4,
        render_mode: str | None = None,
        *,
        reward: str = DEFAULT_REWARD,
        end_score: int = DEFAULT_END_SCORE,
        hand_size: int = DEFAULT_HAND_SIZE,
        random_first_player: bool = False,
    ) -> None:
        super().__init__()
        validate_rule_options(num_players, end_score, hand_size)
        if render_mode is not None and render_mode not in RENDER_MODES:
            raise ValueError(f"render_mode must be None, 'ansi' or 'human', got {render_mode!r}")
        self.reward_mode = validate_reward_mode(reward)
        self.num_players = int(num_players)
        self.end_score = int(end_score)
        self.hand_size = int(hand_size)
        self.random_first_player = bool(random_first_player)
        self.render_mode = render_mode

        self.possible_agents = [f"player_{i}" for i in range(self.num_players)]
        self._seat = {a: i for i, a in enumerate(self.possible_agents)}
        low, high = observation_bounds(self.end_score)
        obs_space = spaces.Dict(
            {
                "observation": spaces.Box(low=low, high=high, shape=(OBS_SIZE,), dtype=np.float32),
                "action_mask": spaces.Box(low=0, high=1, shape=(NUM_ACTIONS,), dtype=np.int8),
            }
        )
        self.observation_spaces = {a: obs_space for a in self.possible_agents}
        self.action_spaces = {a: spaces.Discrete(NUM_ACTIONS) for a in self.possible_agents}
        self._rng: np.random.Generator | None = None
        self.game: LlamaGame | None = None
        self.last_round: RoundResult | None = None
        self._round_just_ended = False

    def observation_space(self, agent: str) -> spaces.Space:
        return self.observation_spaces[agent]

    def action_space(self, agent: str) -> spaces.Space:
        return self.action_spaces[agent]

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> None:
        """Start a new game. ``seed`` reseeds the generator behind every deal; without it
        the generator carries on from the previous game."""
        if seed is not None or self._rng is None:
            self._rng = np.random.default_rng(seed)
        self.game = LlamaGame(
            self.num_players,
            end_score=self.end_score,
            hand_size=self.hand_size,
            rng=self._rng,
            random_first_player=self.random_first_player,
        )
        self.agents = list(self.possible_agents)
        self.rewards = dict.fromkeys(self.agents, 0.0)
        self._cumulative_rewards = dict.fromkeys(self.agents, 0.0)
        self.terminations = dict.fromkeys(self.agents, False)
        self.truncations = dict.fromkeys(self.agents, False)
        self.infos = {a: {} for a in self.agents}
        self.agent_selection = self.possible_agents[self.game.current_player]
        self.last_round = None
        self._round_just_ended = False
        self._rewards_dirty = False

    def observe(self, agent: str) -> dict[str, np.ndarray]:
        game = self.game
        seat = self._seat[agent]
        obs = encode(game, seat)
        if seat != game.current_player or game.game_over:
            return {"observation": obs, "action_mask": _ZERO_MASK.copy()}
        return {"observation": obs, "action_mask": action_mask(game.legal_actions()).copy()}

    def step(self, action: int) -> None:
        agent = self.agent_selection
        if self.terminations[agent] or self.truncations[agent]:
            self._was_dead_step(action)
            return
        game = self.game
        result = game.step(action)  # raises IllegalActionError with the game untouched
        self._cumulative_rewards[agent] = 0.0
        if self._rewards_dirty:
            self.rewards = dict.fromkeys(self.agents, 0.0)
            self._rewards_dirty = False
        if self._round_just_ended:
            self.infos = {a: {} for a in self.agents}
            self._round_just_ended = False
        if result is not None:
            self._on_round_end(result)
        self.agent_selection = self.possible_agents[game.current_player]
        if self.render_mode == "human":
            self.render()

    def _on_round_end(self, result: RoundResult) -> None:
        self.last_round = result
        self._round_just_ended = True
        values = rewards_for(result, self.reward_mode)
        self.rewards = {a: values[i] for i, a in enumerate(self.agents)}
        self._rewards_dirty = True
        self._accumulate_rewards()
        self.infos = {a: {"round_result": result} for a in self.agents}
        if result.game_over:
            self.terminations = dict.fromkeys(self.agents, True)

    def render(self) -> str | None:
        if self.render_mode is None:
            from gymnasium.logger import warn

            warn("render() called without a render_mode; pass render_mode='ansi' or 'human' to the env")
            return None
        if self.game is None:
            text = "The table is empty: call reset() first."
        else:
            text = self._render_text()
        if self.render_mode == "human":
            print(text)
            return None
        return text

    def _render_text(self) -> str:
        game = self.game
        parts = []
        if self._round_just_ended and self.last_round is not None:
            parts.append(render_round_summary(self.last_round, self.possible_agents))
        if not game.game_over:
            parts.append(render_table(game, game.current_player, self.possible_agents))
        return "\n".join(parts)

    def close(self) -> None:
        pass


def raw_env(num_players: int = 4, render_mode: str | None = None, **kwargs: Any) -> LlamaAECEnv:
    """The unwrapped AEC env: an illegal action raises ``IllegalActionError``."""
    return LlamaAECEnv(num_players, render_mode, **kwargs)


def env(num_players: int = 4, render_mode: str | None = None, **kwargs: Any) -> AECEnv:
    """The AEC env in PettingZoo's standard classic wrappers (illegal action: the game
    ends with reward -1 for the offender; out-of-bounds action: assertion; calls out of
    order: error)."""
    e: AECEnv = raw_env(num_players, render_mode, **kwargs)
    e = _TerminateIllegal(e, illegal_reward=ILLEGAL_ACTION_REWARD)
    e = _AssertOutOfBounds(e)
    e = _OrderEnforcing(e)
    return e


# PettingZoo's wrappers reach every attribute of the wrapped env through a chain of
# ``__getattr__`` calls, which cost more than the game itself (a profile of the random
# AEC loop put 60% of the time there). These subclasses keep the wrappers' behaviour
# and forward the attributes read at every decision straight to the raw env.

_HOT = ("agent_selection", "agents", "rewards", "terminations", "truncations", "infos", "_cumulative_rewards")


def _forward(name: str, guarded: bool) -> property:
    def get(self: Any) -> Any:
        if guarded and not self._has_reset:
            # let OrderEnforcingWrapper.__getattr__ raise its usual error
            raise AttributeError(f"{name} cannot be accessed before reset")
        return getattr(self._raw, name)

    def set_(self: Any, value: Any) -> None:
        setattr(self._raw, name, value)

    return property(get, set_)


class _TerminateIllegal(wrappers.TerminateIllegalWrapper):
    def __init__(self, env: AECEnv, illegal_reward: float) -> None:
        self._raw = env.unwrapped
        super().__init__(env, illegal_reward)


class _AssertOutOfBounds(wrappers.AssertOutOfBoundsWrapper):
    def __init__(self, env: AECEnv) -> None:
        self._raw = env.unwrapped
        super().__init__(env)

    def step(self, action: Any) -> None:
        if type(action) is int and 0 <= action < NUM_ACTIONS:
            self.env.step(action)  # in bounds: skip the generic Space.contains check
        else:
            super().step(action)


class _OrderEnforcing(wrappers.OrderEnforcingWrapper):
    def __init__(self, env: AECEnv) -> None:
        self._raw = env.unwrapped
        super().__init__(env)


for _name in _HOT:
    setattr(_TerminateIllegal, _name, _forward(_name, guarded=False))
    setattr(_AssertOutOfBounds, _name, _forward(_name, guarded=False))
    setattr(_OrderEnforcing, _name, _forward(_name, guarded=_name != "_cumulative_rewards"))
del _name
