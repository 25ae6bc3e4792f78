"""A batched, single-process SB3 ``VecEnv`` of many L.L.A.M.A. games.

Why not ``DummyVecEnv`` over ``Llama-v0``: there every opponent move of every game is
one Python call into an agent, and self-play opponents would run one network forward
pass per move. Here the ``num_envs`` games are advanced together: after the learner's
actions are applied, all games whose current seat belongs to a *policy* opponent (the
current policy, or a past checkpoint) are answered with ONE batched forward pass per
policy, round after round, until every game is back at its learner seat. Baseline
opponents (``"heuristic"``, ``"random"``, ...) answer through their ordinary
``act(observation, action_mask)``.

The rules are applied by :class:`llama_env.engine.LlamaGame`, observations come from
:func:`llama_env.observation.encode` and rewards from :func:`llama_env.rewards.rewards_for`
-- exactly as in the Gymnasium env, whose bookkeeping this mirrors (one learner seat
per game, one episode per game, rewards of rounds that end during the opponents' moves
credited to the learner's last step, auto-reset with ``info["terminal_observation"]``).

Each game draws its table size from ``players`` and, for every opponent seat, an
opponent kind from the ``opponents`` mix (a dict of name -> weight). The kind
``"self"`` is the policy registered with :meth:`BatchedLlamaVecEnv.set_policy`;
``"past"`` picks one of the past policies registered with
:meth:`BatchedLlamaVecEnv.set_past_policies` (falling back to ``"self"`` while there is none).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
from gymnasium import spaces
from stable_baselines3.common.vec_env.base_vec_env import VecEnv, VecEnvIndices, VecEnvStepReturn

from llama_env.engine import DEFAULT_END_SCORE, DEFAULT_HAND_SIZE, NUM_ACTIONS, LlamaGame, validate_rule_options
from llama_env.observation import OBS_SIZE, encode, observation_bounds
from llama_env.rewards import rewards_for, validate_reward_mode

__all__ = ["BatchedLlamaVecEnv", "PolicyFn", "POLICY_KINDS"]

PolicyFn = Callable[[np.ndarray, np.ndarray], np.ndarray]
"""A batched policy: ``(observations (B, OBS_SIZE) float32, masks (B, 9) bool) -> actions (B,)``."""

POLICY_KINDS = ("self", "past")
"""Opponent kinds played by a network rather than a registered agent."""


class BatchedLlamaVecEnv(VecEnv):
    """``num_envs`` L.L.A.M.A. games stepped together, one learner seat in each.

    Args:
        num_envs: games played side by side.
        players: table sizes to draw from (uniformly) for each new game, e.g. ``[2, 3, 4, 5, 6]``.
        opponents: opponent kind -> weight; each opponent seat of a new game draws its kind
            independently. Kinds are registered agent names, ``"self"`` or ``"past"``.
        reward: ``"game"`` or ``"round"`` (see :mod:`llama_env.rewards`).
        seed: seeds every game's deal generator and the draws of table size, seat and opponents.
        seat: the learner's seat, ``"random"`` (default) or a fixed int (for tests).
        end_score, hand_size: rule options.
        agents: optional prebuilt agent objects by name (else built with :func:`agents.resolve`).
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
        end_score: int = DEFAULT_END_SCORE,
        hand_size: int = DEFAULT_HAND_SIZE,
        agents: Mapping[str, Any] | None = None,
    ) -> None:
        if isinstance(num_envs, bool) or not isinstance(num_envs, int) or num_envs < 1:
            raise ValueError(f"num_envs must be a positive int, got {num_envs!r}")
        self.players = [players] if isinstance(players, int) else [int(p) for p in players]
        if not self.players:
            raise ValueError("players must name at least one table size 2..6")
        for p in self.players:
            validate_rule_options(p, end_score, hand_size)
        if isinstance(opponents, str):
            opponents = {opponents: 1.0}
        if not opponents or any(w < 0 for w in opponents.values()) or sum(opponents.values()) <= 0:
            raise ValueError(f"opponents must map kinds to non-negative weights with a positive sum, got {opponents!r}")
        self.reward_mode = validate_reward_mode(reward)
        if not (seat == "random" or (isinstance(seat, int) and 0 <= seat < min(self.players))):
            raise ValueError(f"seat must be 'random' or a seat valid at every table size, got {seat!r}")
        self.fixed_seat = None if seat == "random" else int(seat)
        self.end_score, self.hand_size = int(end_score), int(hand_size)
        self.kinds = [k for k, w in opponents.items() if w > 0]
        weights = np.array([opponents[k] for k in self.kinds], dtype=np.float64)
        self.kind_p = weights / weights.sum()
        self._agents: dict[str, Any] = dict(agents or {})
        from agents import resolve

        for i, k in enumerate(self.kinds):
            if k not in POLICY_KINDS and k not in self._agents:
                self._agents[k] = resolve(k, seed=seed + 1000 + i)
        self._policies: dict[str, PolicyFn] = {}
        self._past: list[PolicyFn] = []

        low, high = observation_bounds(self.end_score)
        super().__init__(
            num_envs,
            spaces.Box(low=low, high=high, shape=(OBS_SIZE,), dtype=np.float32),
            spaces.Discrete(NUM_ACTIONS),
        )
        ss = np.random.SeedSequence(seed)
        self._meta_rng = np.random.default_rng(ss.spawn(1)[0])
        self.game_rngs = [np.random.default_rng(s) for s in ss.spawn(num_envs)]
        self.games: list[LlamaGame] = [None] * num_envs  # type: ignore[list-item]
        self.seats = np.zeros(num_envs, dtype=np.int64)
        self.seat_kinds: list[list[str | None]] = [[] for _ in range(num_envs)]
        self._obs = np.zeros((num_envs, OBS_SIZE), dtype=np.float32)
        self._masks = np.zeros((num_envs, NUM_ACTIONS), dtype=bool)
        self._pending = np.zeros(num_envs, dtype=np.float64)
        self._ep_ret = np.zeros(num_envs, dtype=np.float64)
        self._ep_len = np.zeros(num_envs, dtype=np.int64)
        self._ep_start = time.time()
        self._actions: np.ndarray | None = None
        self.opponent_moves = 0
        """Opponent moves applied so far (for throughput accounting)."""
        self.env_time = 0.0
        """Seconds spent inside :meth:`step_wait` and :meth:`reset` (rules, encoding, opponents)."""

    # ------------------------------------------------------------------ policies

    def set_policy(self, name: str, fn: PolicyFn) -> None:
        """Register the batched policy that plays opponent kind ``name`` (e.g. ``"self"``)."""
        self._policies[name] = fn

    def set_past_policies(self, fns: Sequence[PolicyFn]) -> None:
        """The pool that ``"past"`` opponents draw from (each new game draws one per seat)."""
        self._past = list(fns)
        for i, fn in enumerate(self._past):
            self._policies[f"past#{i}"] = fn

    # ------------------------------------------------------------------ VecEnv API

    def reset(self) -> np.ndarray:
        t0 = time.perf_counter()
        for i in range(self.num_envs):
            self._new_game(i)
        self._ep_ret[:] = 0
        self._ep_len[:] = 0
        self._pending[:] = 0
        self._advance(list(range(self.num_envs)), self._pending)
        for i in range(self.num_envs):
            self._observe(i)
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
        for i in range(n):
            g = self.games[i]
            if g.game_over:  # ended before the learner's first turn (hand_size=1): nothing to apply
                continue
            seat = int(self.seats[i])
            result = g.step(int(actions[i]))  # raises IllegalActionError on a masked action
            if result is not None:
                self._pending[i] += rewards_for(result, mode)[seat]
        rews, self._pending = self._pending, np.zeros(n, dtype=np.float64)
        self._advance(list(range(n)), rews)
        dones = np.zeros(n, dtype=bool)
        infos: list[dict[str, Any]] = [{} for _ in range(n)]
        self._ep_ret += rews
        self._ep_len += 1
        for i in range(n):
            g = self.games[i]
            if g.game_over:
                dones[i] = True
                seat = int(self.seats[i])
                info = infos[i]
                info["terminal_observation"] = encode(g, seat)
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
                self._new_game(i)
        restarted = [i for i in range(n) if dones[i]]
        if restarted:
            # the opponents before the learner's first turn of a new game; as in the gym
            # env, a round ending there (only possible with hand_size=1) pays the next step
            self._advance(restarted, self._pending)
        for i in range(n):
            self._observe(i)
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

    def env_method(self, method_name: str, *method_args: Any, indices: VecEnvIndices = None, **method_kwargs: Any):
        idx = list(self._get_indices(indices))
        if method_name == "action_masks":
            return [self._masks[i].copy() for i in idx]
        result = getattr(self, method_name)(*method_args, **method_kwargs)
        return [result for _ in idx]

    def env_is_wrapped(self, wrapper_class: type, indices: VecEnvIndices = None) -> list[bool]:
        return [False for _ in self._get_indices(indices)]

    def seed(self, seed: int | None = None) -> list[int | None]:
        if seed is not None:
            ss = np.random.SeedSequence(seed)
            self._meta_rng = np.random.default_rng(ss.spawn(1)[0])
            self.game_rngs = [np.random.default_rng(s) for s in ss.spawn(self.num_envs)]
        return [seed] * self.num_envs

    # ------------------------------------------------------------------ internals

    def _new_game(self, i: int) -> None:
        rng = self._meta_rng
        n = self.players[int(rng.integers(len(self.players)))] if len(self.players) > 1 else self.players[0]
        seat = self.fixed_seat if self.fixed_seat is not None else int(rng.integers(n))
        kinds: list[str | None] = [None] * n
        picks = rng.choice(len(self.kinds), size=n - 1, p=self.kind_p) if len(self.kinds) > 1 else [0] * (n - 1)
        for j, k in enumerate(picks):
            kind = self.kinds[int(k)]
            if kind == "past":
                kind = f"past#{int(rng.integers(len(self._past)))}" if self._past else "self"
            kinds[(seat + 1 + j) % n] = kind
        self.seats[i] = seat
        self.seat_kinds[i] = kinds
        game_rng = self.game_rngs[i]
        for _ in range(n - 1):
            # the gym env reseeds each opponent from its generator before the deal; drawing
            # the same numbers keeps the deals of both envs identical on the same seed
            game_rng.integers(2**31)
        self.games[i] = LlamaGame(n, end_score=self.end_score, hand_size=self.hand_size, rng=game_rng)

    def _observe(self, i: int) -> None:
        g = self.games[i]
        self._obs[i] = encode(g, int(self.seats[i]))
        m = self._masks[i]
        m[:] = False
        m[g.legal_actions()] = True

    def _advance(self, pending: list[int], rews: np.ndarray) -> None:
        """Play the opponents of the ``pending`` games until each is at its learner's turn
        or over; rewards of rounds ending meanwhile are added to ``rews`` (learner's seat)."""
        mode = self.reward_mode
        games, seats, seat_kinds = self.games, self.seats, self.seat_kinds
        while pending:
            groups: dict[str, list[int]] = {}
            for i in pending:
                g = games[i]
                if g.game_over or g.current_player == seats[i]:
                    continue
                groups.setdefault(seat_kinds[i][g.current_player], []).append(i)  # type: ignore[arg-type]
            if not groups:
                return
            nxt: list[int] = []
            for kind, idx in groups.items():
                k = len(idx)
                obs = np.empty((k, OBS_SIZE), dtype=np.float32)
                masks = np.zeros((k, NUM_ACTIONS), dtype=bool)
                for r, i in enumerate(idx):
                    g = games[i]
                    p = g.current_player
                    obs[r] = encode(g, p)
                    masks[r, g.legal_actions()] = True
                fn = self._policies.get(kind)
                if fn is not None:
                    acts = np.asarray(fn(obs, masks)).reshape(k)
                elif kind in POLICY_KINDS or kind.startswith("past#"):
                    raise RuntimeError(f"opponent kind {kind!r} needs a policy: call set_policy({kind!r}, fn) first")
                else:
                    agent = self._agents[kind]
                    m8 = masks.astype(np.int8)
                    acts = np.array([agent.act(obs[r], m8[r]) for r in range(k)], dtype=np.int64)
                self.opponent_moves += k
                for r, i in enumerate(idx):
                    a = int(acts[r])
                    if not (0 <= a < NUM_ACTIONS and masks[r, a]):
                        raise ValueError(
                            f"opponent {kind!r} chose action {a}, which is not legal "
                            f"(legal: {np.flatnonzero(masks[r]).tolist()})"
                        )
                    result = games[i].step(a)
                    if result is not None:
                        rews[i] += rewards_for(result, mode)[int(seats[i])]
                    nxt.append(i)
            pending = nxt
