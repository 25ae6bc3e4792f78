"""A batched, single-process SB3 ``VecEnv`` of many L.L.A.M.A. games.

Why not ``DummyVecEnv`` over ``Llama-v0``: there every opponent move of every game is
one Python call into an agent, and self-play opponents would run one network forward
pass per move. Here the ``num_envs`` games are advanced together by the batched table
driver (:func:`llama_env.table.advance_all`): after the learner's actions are applied,
all games whose seat to act belongs to one *policy* opponent (the current policy, or
a past checkpoint) are answered with ONE batched forward pass, round after round,
until every game is back at its learner seat. Baseline opponents (``"heuristic"``,
``"random"``, ...) answer through their ordinary ``act(observation, action_mask)``.

Every game starts as ``Llama-v0``'s do (:func:`llama_env.table.deal_table`), its moves
go through the same driver, and its rewards come from
:func:`llama_env.rewards.rewards_for`; the bookkeeping is ``Llama-v0``'s too (one learner
seat per game, one episode per game, rewards of rounds that end during the opponents'
moves credited to the learner's next step, auto-reset with
``info["terminal_observation"]``). A test checks that both envs give the same games.

Each game's seating (its table size, the learner's seat, every other seat's opponent
kind) is drawn by :class:`train.training.seats.OpponentMix`, the routine both training
backends use. The kind ``"self"`` is the policy registered with
:meth:`BatchedLlamaVecEnv.set_policy`; ``"past"`` one of the past policies registered
with :meth:`BatchedLlamaVecEnv.set_past_policies` (``"self"`` while there is none).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
from gymnasium import spaces
from stable_baselines3.common.vec_env.base_vec_env import VecEnv, VecEnvIndices, VecEnvStepReturn

from llama_env.agent import Agent, resolve, seat_member
from llama_env.engine import NUM_ACTIONS, Rules
from llama_env.observation import check_obs_version, encoder, obs_size, observation_bounds
from llama_env.rewards import rewards_for, validate_reward_mode
from llama_env.table import Table, advance_all, deal_table
from train.training.seats import POLICY_KINDS, OpponentMix, past_index

__all__ = ["BatchedLlamaVecEnv", "PolicyFn", "PolicyAgent", "POLICY_KINDS"]

PolicyFn = Callable[[np.ndarray, np.ndarray], np.ndarray]
"""A batched policy: ``(observations (B, OBS_SIZE) float32, masks (B, 9) bool) -> actions (B,)``."""


class PolicyAgent:
    """A batched policy seated at a table: the driver sends it every decision waiting on
    it in one ``act_batch`` call. Its function can be swapped (``"self"`` is refreshed
    at every rollout) without touching the games it sits in."""

    def __init__(self, name: str, fn: PolicyFn | None = None, obs_version: int = 0) -> None:
        self.name = name
        self.fn = fn
        self.obs_version = obs_version  # the learner's observations: the table driver encodes them so

    def act_batch(self, observations: np.ndarray, action_masks: np.ndarray) -> np.ndarray:
        if self.fn is None:
            raise RuntimeError(f"opponent kind {self.name!r} needs a policy: call set_policy({self.name!r}, fn) first")
        return np.asarray(self.fn(observations, action_masks)).reshape(len(observations))

    def act(self, observation: np.ndarray, action_mask: np.ndarray) -> int:
        mask = np.asarray(action_mask, dtype=bool).reshape(1, -1)
        return int(self.act_batch(np.asarray(observation, dtype=np.float32).reshape(1, -1), mask)[0])

    def __repr__(self) -> str:
        return f"PolicyAgent({self.name!r})"


class BatchedLlamaVecEnv(VecEnv):
    """``num_envs`` L.L.A.M.A. games stepped together, one learner seat in each.

    Args:
        num_envs: games played side by side.
        players: table sizes to draw from (uniformly) for each new game, e.g. ``(2, 3, 4, 5, 6)``.
        opponents: opponent kind -> weight; each opponent seat of a new game draws its kind
            independently. Kinds are registered agent names, ``"self"`` or ``"past"``.
        reward: ``"game"``, ``"round"`` or ``"shaped"`` (see :mod:`llama_env.rewards`).
        seed: seeds every game's deal generator and the draws of table size, seat and opponents.
        seat: the learner's seat, ``"random"`` (default) or a fixed int (for tests).
        rules: the rule options of every game (default: the game's own); its table size
            is replaced by each game's, from ``players``.
        agents: optional prebuilt agent objects by name (else built by name from the registry).
        obs_version: the learner's observations (and its ``self``/``past`` copies'): 0
            (``Llama-v0``'s 52 entries) or 1 (with the public history, ``Llama-v1``).
            Registered agents read the version they ask for (``obs_version`` attribute).
    """

    render_mode = None

    def __init__(
        self,
        num_envs: int,
        players: Sequence[int] | int = 4,
        opponents: Mapping[str, float] | str = "heuristic",
        reward: str = "game",
        seed: int = 0,
        *,
        seat: int | str = "random",
        rules: Rules | None = None,
        agents: Mapping[str, Agent] | None = None,
        obs_version: int = 0,
    ) -> None:
        if isinstance(num_envs, bool) or not isinstance(num_envs, int) or num_envs < 1:
            raise ValueError(f"num_envs must be a positive int, got {num_envs!r}")
        self.players = [players] if isinstance(players, int) else [int(p) for p in players]
        if not self.players:
            raise ValueError("players must name at least one table size 2..6")
        if rules is not None and not isinstance(rules, Rules):
            raise ValueError(f"rules must be a llama_env.engine.Rules, got {rules!r}")
        self.rules = Rules.options_at(self.players, **(rules or Rules()).options())
        """The rules of each table size's games."""
        if isinstance(opponents, str):
            opponents = {opponents: 1.0}
        self.reward_mode = validate_reward_mode(reward)
        if not (seat == "random" or (isinstance(seat, int) and 0 <= seat < min(self.players))):
            raise ValueError(f"seat must be 'random' or a seat valid at every table size, got {seat!r}")
        self.fixed_seat = None if seat == "random" else int(seat)
        self.mix = OpponentMix(opponents, self.players, self.fixed_seat)
        self._agents: dict[str, Agent] = dict(agents or {})
        for i, k in enumerate(self.mix.kinds):
            if k not in POLICY_KINDS and k not in self._agents:
                self._agents[k] = resolve(k, seed=seed + 1000 + i)
        self.obs_version = check_obs_version(obs_version)
        self._encode, self._encode_many = encoder(self.obs_version)
        self._self = PolicyAgent("self", obs_version=self.obs_version)
        self._past: list[PolicyAgent] = []

        low, high = observation_bounds(max(r.end_score for r in self.rules.values()), self.obs_version)
        size = obs_size(self.obs_version)
        super().__init__(
            num_envs,
            spaces.Box(low=low, high=high, shape=(size,), dtype=np.float32),
            spaces.Discrete(NUM_ACTIONS),
        )
        self._seed_generators(seed)
        self.tables: list[Table] = []
        self.seats = np.zeros(num_envs, dtype=np.int64)
        self.seat_kinds: list[list[str | None]] = [[] for _ in range(num_envs)]
        self._obs = np.zeros((num_envs, size), dtype=np.float32)
        self._masks = np.zeros((num_envs, NUM_ACTIONS), dtype=bool)
        self._pending = np.zeros(num_envs, dtype=np.float64)
        self._ep_ret = np.zeros(num_envs, dtype=np.float64)
        self._ep_len = np.zeros(num_envs, dtype=np.int64)
        self._ep_start = time.time()
        self._actions: np.ndarray | None = None
        self.env_time = 0.0
        """Seconds spent inside :meth:`step_wait` and :meth:`reset` (rules, encoding, opponents)."""

    @property
    def games(self) -> list[Any]:
        """The engine of every slot's current game."""
        return [t.game for t in self.tables]

    # ------------------------------------------------------------------ policies

    def set_policy(self, name: str, fn: PolicyFn) -> None:
        """Register the batched policy that plays opponent kind ``name`` (``"self"``)."""
        if name != "self":
            raise ValueError(f"set_policy sets the 'self' policy; use set_past_policies for 'past', got {name!r}")
        self._self.fn = fn

    def set_past_policies(self, fns: Sequence[PolicyFn]) -> None:
        """The pool that ``"past"`` opponents draw from (each new game draws one per seat;
        games under way keep the opponents they started with)."""
        self._past = [PolicyAgent(f"past#{i}", fn, self.obs_version) for i, fn in enumerate(fns)]

    def _agent(self, kind: str) -> Agent:
        if kind == "self":
            return self._self
        i = past_index(kind)
        return self._agents[kind] if i is None else self._past[i]

    # ------------------------------------------------------------------ VecEnv API

    def reset(self) -> np.ndarray:
        t0 = time.perf_counter()
        self.tables = [self._new_table(i) for i in range(self.num_envs)]
        self._ep_ret[:] = 0
        self._ep_len[:] = 0
        self._pending[:] = 0
        self._advance(self.tables, list(range(self.num_envs)), self._pending)
        self._observe()
        self.env_time += time.perf_counter() - t0
        return self._obs.copy()

    def step_async(self, actions: np.ndarray) -> None:
        self._actions = np.asarray(actions).reshape(self.num_envs)

    def step_wait(self) -> VecEnvStepReturn:
        t0 = time.perf_counter()
        actions = self._actions
        if actions is None:
            raise RuntimeError("step_wait() called without step_async()")
        self._actions = None
        n = self.num_envs
        mode = self.reward_mode
        for i, table in enumerate(self.tables):
            if table.game.game_over:  # ended before the learner's first turn (hand_size=1): nothing to apply
                continue
            result = table.apply(actions[i])  # raises IllegalActionError on a masked action
            if result is not None:
                self._pending[i] += rewards_for(result, mode)[int(self.seats[i])]
        rews, self._pending = self._pending, np.zeros(n, dtype=np.float64)
        self._advance(self.tables, list(range(n)), rews)
        dones = np.zeros(n, dtype=bool)
        infos: list[dict[str, Any]] = [{} for _ in range(n)]
        self._ep_ret += rews
        self._ep_len += 1
        restarted = []
        for i in range(n):
            g = self.tables[i].game
            if g.game_over:
                dones[i] = True
                seat = int(self.seats[i])
                info = infos[i]
                info["terminal_observation"] = self._encode(g, seat)
                info["scores"] = list(g.scores)
                info["seat"] = seat
                info["num_players"] = g.num_players
                info["win_share"] = rewards_for(g.last_result, "game")[seat] if g.last_result else 0.0
                info["episode"] = {
                    "r": float(self._ep_ret[i]),
                    "l": int(self._ep_len[i]),
                    "t": round(time.time() - self._ep_start, 6),
                }
                self._ep_ret[i] = 0.0
                self._ep_len[i] = 0
                self.tables[i] = self._new_table(i)
                restarted.append(i)
        if restarted:
            # the opponents before the learner's first turn of a new game; as in the gym
            # env, a round ending there (only possible with hand_size=1) pays the next step
            self._advance(self.tables, restarted, self._pending)
        self._observe()
        self.env_time += time.perf_counter() - t0
        return self._obs.copy(), rews.astype(np.float32), dones, infos

    def action_masks(self) -> np.ndarray:
        """The learners' legal actions, shape ``(num_envs, 9)`` bool."""
        return self._masks.copy()

    def close(self) -> None:
        pass

    def has_attr(self, attr_name: str) -> bool:
        return hasattr(self, attr_name)

    def get_attr(self, attr_name: str, indices: VecEnvIndices = None) -> list[Any]:
        return [getattr(self, attr_name) for _ in self._get_indices(indices)]

    def set_attr(self, attr_name: str, value: Any, indices: VecEnvIndices = None) -> None:
        setattr(self, attr_name, value)

    def env_method(
        self, method_name: str, *method_args: Any, indices: VecEnvIndices = None, **method_kwargs: Any
    ) -> list[Any]:
        idx = list(self._get_indices(indices))
        if method_name == "action_masks":
            return [self._masks[i].copy() for i in idx]
        result = getattr(self, method_name)(*method_args, **method_kwargs)
        return [result for _ in idx]

    def env_is_wrapped(self, wrapper_class: type, indices: VecEnvIndices = None) -> list[bool]:
        return [False for _ in self._get_indices(indices)]

    def seed(self, seed: int | None = None) -> list[int | None]:
        if seed is not None:
            self._seed_generators(seed)
        return [seed] * self.num_envs

    # ------------------------------------------------------------------ internals

    def _seed_generators(self, seed: int) -> None:
        ss = np.random.SeedSequence(seed)
        self._meta_rng = np.random.default_rng(ss.spawn(1)[0])
        self.game_rngs = [np.random.default_rng(s) for s in ss.spawn(self.num_envs)]

    def _new_table(self, i: int) -> Table:
        """Slot ``i``'s next game: its seating drawn from the env's own generator
        (:meth:`OpponentMix.draw`), then dealt as ``Llama-v0`` deals (deal_table)."""
        rng = self._meta_rng
        seating = self.mix.draw(rng, len(self._past))
        self.seats[i] = seating.learner
        self.seat_kinds[i] = list(seating.kinds)
        opponents = [seat_member(self._agent(kind), rng) for kind in seating.opponents()]
        names = [kind or "learner" for kind in seating.kinds]
        return deal_table(
            self.game_rngs[i], seating.learner, opponents, rules=self.rules[seating.num_players], names=names
        )

    def _observe(self) -> None:
        games = [t.game for t in self.tables]
        self._obs[:] = self._encode_many(games, self.seats.tolist())
        masks = self._masks
        masks[:] = False
        for i, g in enumerate(games):
            masks[i, g.legal_actions()] = True

    def _advance(self, tables: list[Table], slots: list[int], rews: np.ndarray) -> None:
        """Play the opponents of the ``slots`` games until each is at its learner's turn
        or over; rewards of rounds ending meanwhile are added to ``rews`` (learner's seat)."""
        mode = self.reward_mode
        for k, result in advance_all([tables[i] for i in slots]):
            i = slots[k]
            rews[i] += rewards_for(result, mode)[int(self.seats[i])]
