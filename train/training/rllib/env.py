"""L.L.A.M.A. as an RLlib ``MultiAgentEnv`` for self-play training on Ray.

One episode is one game, driven by the table driver (:mod:`llama_env.table`). Each game's
seating is drawn by :class:`train.training.seats.OpponentMix`, the routine both training
backends use: a table size from ``players``, the learner's seat, and for every other
seat a kind from the ``opponents`` mix. The learner's seat, and every seat whose kind is
``"self"``, is a *learning seat*: an RLlib agent (``player_<seat>``), and all learning seats map to one
shared policy (self-play). Every other seat is a fixed opponent played inside the env by
the driver: a registered agent (``"heuristic"``...) or a ``"past"`` snapshot of the
policy (numpy actors that the trainer sends to the env runners; ``"self"`` until there
is one).

Observations are PettingZoo's ``{"observation": (52,) float32, "action_mask": (9,) int8}``
for the learning seat that must act; rewards come from :func:`llama_env.rewards.rewards_for`
and are paid to each learning seat with its next observation (and at the end of the
game, when every learning seat that acted gets its final observation and reward).

With ``privileged_critic`` the observation dict has a third entry, ``"critic"``: the
observation followed by :func:`hidden_state` (the others' hands, the draw pile), what the
value network reads in training (:mod:`train.training.rllib.module`). The policy, and so
the exported agent, still reads ``"observation"`` alone.

An action the rules forbid (the masked module never sends one) ends the game with a
penalty for that seat, and is counted in ``illegal_actions`` (reported per episode in the
infos). The penalty makes the seat's game add up to less than any finished game, as in
the other envs (:func:`llama_env.rewards.illegal_action_return`): -1 with ``"game"`` and
``"shaped"``, ``-(end_score + 31)`` with ``"round"``.
"""

from __future__ import annotations

import pickle
from collections.abc import Mapping, Sequence
from typing import Any

import gymnasium as gym
import numpy as np
from ray.rllib.env.multi_agent_env import MultiAgentEnv

from agents.ppo import RLLIB_POLICY, Actor, PPOAgent
from llama_env.agent import Agent, adopt, resolve, seat_member
from llama_env.engine import (
    MAX_PLAYERS,
    NUM_ACTIONS,
    IllegalActionError,
    LlamaGame,
    RoundResult,
    Rules,
    seeded_generator,
)
from llama_env.observation import (
    HIDDEN_SIZE,
    check_obs_version,
    encoder,
    hidden_state,
    obs_size,
    observation_bounds,
    unchecked_action_mask,
)
from llama_env.rewards import illegal_action_reward, rewards_for, validate_reward_mode
from llama_env.table import Table, TableListener
from train.training.seats import POLICY_KINDS, OpponentMix, past_index

__all__ = ["LlamaMultiAgentEnv", "SHARED_POLICY", "agent_id", "policy_mapping", "hidden_state", "HIDDEN_SIZE"]

SHARED_POLICY = RLLIB_POLICY  # where agents.ppo finds it in a checkpoint


def agent_id(seat: int) -> str:
    return f"player_{seat}"


def policy_mapping(agent: Any, episode: Any = None, **kwargs: Any) -> str:
    """Every learning seat plays (and trains) the one shared policy."""
    return SHARED_POLICY


class LlamaMultiAgentEnv(MultiAgentEnv):
    """Self-play L.L.A.M.A. for RLlib; ``config`` keys: ``players`` (table sizes),
    ``opponents`` (kind -> weight), ``reward``, ``rules`` (the rule options by name, as
    :meth:`Rules.options` gives them), ``seed`` (with an ``EnvContext``'s runner and vector
    index: each env's deals and opponents its own), ``obs_version`` (0 or 1),
    ``privileged_critic`` (bool: add the ``"critic"`` entry), ``registered`` (the pickled
    :func:`~llama_env.agent.registrations` of agents the driver registered at run time)."""

    def __init__(self, config: Mapping[str, Any] | None = None) -> None:
        super().__init__()
        # RLlib's EnvContext carries the runner's and the vector's index as attributes,
        # which a plain dict of its keys drops: read them first
        worker, vector = (int(getattr(config, key, None) or 0) for key in ("worker_index", "vector_index"))
        config = dict(config or {})
        if config.get("registered"):
            adopt(pickle.loads(config["registered"]))
        players: Sequence[int] = tuple(config.get("players", (2, 3, 4, 5, 6)))
        self.players = [int(p) for p in players]
        mix: Mapping[str, float] = config.get("opponents", {"self": 1.0})
        self.mix = OpponentMix(mix, self.players)
        self.reward_mode = validate_reward_mode(config.get("reward", "game"))
        # the rules' checks, once per table size: reset() starts games unchecked
        self.rules = Rules.options_at(self.players, **dict(config.get("rules", {})))
        self.obs_version = check_obs_version(config.get("obs_version", 0))
        self._encode = encoder(self.obs_version)[0]
        self._rng = np.random.default_rng([int(config.get("seed", 0)), worker, vector])
        self._baselines: dict[str, Agent] = {}
        self._seat_baselines()
        self._past: list[Actor] = []

        self.possible_agents = [agent_id(s) for s in range(MAX_PLAYERS)]
        self.agents = []
        low, high = observation_bounds(max(r.end_score for r in self.rules.values()), self.obs_version)
        spaces: dict[str, gym.Space[Any]] = {
            "observation": gym.spaces.Box(low, high, (obs_size(self.obs_version),), np.float32),
            "action_mask": gym.spaces.Box(0, 1, (NUM_ACTIONS,), np.int8),
        }
        self.privileged_critic = bool(config.get("privileged_critic", False))
        if self.privileged_critic:
            low = np.concatenate([low, np.zeros(HIDDEN_SIZE, np.float32)])
            high = np.concatenate([high, np.ones(HIDDEN_SIZE, np.float32)])
            spaces["critic"] = gym.spaces.Box(low, high, (low.size,), np.float32)
        space = gym.spaces.Dict(spaces)
        self.observation_spaces = {a: space for a in self.possible_agents}
        self.action_spaces = {a: gym.spaces.Discrete(NUM_ACTIONS) for a in self.possible_agents}
        self.table: Table | None = None
        self.learning: set[int] = set()
        self._pending: dict[int, float] = {}
        self._paid: dict[int, float] = {}  # each learning seat's rewards in this game, the pending ones included
        self._acted: set[int] = set()
        self.illegal_actions = 0
        """Actions the rules forbid that this env received in this episode (the masked module sends none)."""
        self.illegal_total = 0
        """The same, over the env's whole life."""
        self._counter = _MoveCounter()

    def _seat_baselines(self) -> None:
        """The registered opponents, seeded from the env's generator: each env's own
        players, whose random choices no other env shares."""
        self._baselines = {k: resolve(k, seed=int(self._rng.integers(2**31))) for k in self.mix.baselines}

    def set_past_policies(self, actors: Sequence[Actor]) -> None:
        """The snapshots ``"past"`` opponents are drawn from (new games only)."""
        self._past = list(actors)

    # ------------------------------------------------------------------ MultiAgentEnv API

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[dict, dict]:
        if seed is not None:  # all the env's randomness from the seed: the deals and the opponents' play
            self._rng = np.random.default_rng(seed)
            self._seat_baselines()
        rng = self._rng
        seating = self.mix.draw(rng, len(self._past))
        n, trainee = seating.num_players, seating.learner
        seats: list[Agent | None] = [None] * n
        names = [f"player_{s}" for s in range(n)]  # the learning seats keep their ids
        self.learning = {trainee}
        for j in range(1, n):  # in turn order from the learner's left
            seat = (trainee + j) % n
            kind = seating.kinds[seat] or ""
            i = past_index(kind)
            if i is not None:
                actor = self._past[i]
                seats[seat] = PPOAgent.from_actor(actor, deterministic=False, seed=int(rng.integers(2**31)))
                names[seat] = "past"
            elif kind in POLICY_KINDS:  # "self": another learning seat of the shared policy
                self.learning.add(seat)
            else:
                seats[seat] = seat_member(self._baselines[kind], rng)
                names[seat] = kind
        game = LlamaGame.unchecked(self.rules[n], seeded_generator(int(rng.integers(2**63))), False)
        self.table = Table(game, seats, names=names, listener=self._counter)
        self.agents = [agent_id(s) for s in sorted(self.learning)]
        self._pending = dict.fromkeys(self.learning, 0.0)
        self._paid = dict.fromkeys(self.learning, 0.0)
        self._acted = set()
        self.illegal_actions = 0
        self._collect(self.table.advance())
        if game.game_over:  # possible with hand_size=1: every seat gets the result, no move is asked
            return self._end(), {}
        return self._observe(), {}

    def step(self, action_dict: dict[Any, Any]) -> tuple[dict, dict, dict, dict, dict]:  # type: ignore[override]
        table = self._table()
        seat = table.game.current_player
        me = agent_id(seat)
        if me not in action_dict:
            raise ValueError(f"step expects an action for {me}, the seat to act; got actions for {sorted(action_dict)}")
        self._acted.add(seat)
        try:
            result = table.apply(action_dict[me])
        except IllegalActionError:
            self.illegal_actions += 1
            self.illegal_total += 1
            obs = {agent_id(s): self._obs(s) for s in self._acted}
            rewards = {agent_id(s): self._pending.pop(s, 0.0) for s in self._acted}
            rewards[me] += illegal_action_reward(self.reward_mode, table.game.rules.end_score, self._paid[seat])
            return obs, rewards, {"__all__": True}, {"__all__": False}, self._infos()
        if result is not None:
            self._collect([result])
        self._collect(table.advance())
        if table.game.game_over:
            obs = self._end()
            rewards = {a: self._pending.pop(int(a.rsplit("_", 1)[1]), 0.0) for a in obs}
            return obs, rewards, {"__all__": True}, {"__all__": False}, self._infos()
        obs = self._observe()
        nxt = table.game.current_player
        return obs, {agent_id(nxt): self._pending.pop(nxt, 0.0)}, {"__all__": False}, {"__all__": False}, {}

    # ------------------------------------------------------------------ internals

    def _table(self) -> Table:
        if self.table is None:
            raise RuntimeError("call reset() before step()")
        return self.table

    def _obs(self, seat: int) -> dict[str, np.ndarray]:
        game = self._table().game
        legal = game.legal_actions() if game.current_player == seat and not game.game_over else []
        observation = self._encode(game, seat)  # the engine's legal actions: the mask's check is for other callers
        obs = {"observation": observation, "action_mask": unchecked_action_mask(legal).copy()}
        if self.privileged_critic:
            obs["critic"] = np.concatenate([observation, hidden_state(game, seat)])
        return obs

    def _observe(self) -> dict[str, dict[str, np.ndarray]]:
        seat = self._table().game.current_player
        return {agent_id(seat): self._obs(seat)}

    def _end(self) -> dict[str, dict[str, np.ndarray]]:
        """Final observations for the learning seats that acted (they get the result)."""
        return {agent_id(s): self._obs(s) for s in sorted(self._acted)}

    def _collect(self, results: list[RoundResult]) -> None:
        for result in results:
            values = rewards_for(result, self.reward_mode)
            for s in self.learning:
                self._pending[s] = self._pending.get(s, 0.0) + values[s]
                self._paid[s] += values[s]

    def _infos(self) -> dict[str, Any]:
        return {"__common__": {"illegal_actions": self.illegal_actions}}

    @property
    def decisions(self) -> int:
        """Moves applied so far at every seat, learning and fixed (for throughput figures)."""
        return self._counter.moves


class _MoveCounter(TableListener):
    def __init__(self) -> None:
        self.moves = 0

    def on_move(self, table: Table, seat: int, action: int, drawn: int | None) -> None:
        self.moves += 1
