"""Batched, single-process SB3 ``VecEnv`` s of many L.L.A.M.A. games.

Why not ``DummyVecEnv`` over ``Llama-v0``: there every opponent move of every game is
one Python call into an agent, and self-play opponents would run one network forward
pass per move. Here the ``num_envs`` games are advanced together, and every agent
answers all the games waiting on it at once (``act_batch``): the current policy and its
past snapshots with one numpy forward pass, the baselines (``"heuristic"``,
``"random"``, ...) with their array versions. The learner holds one seat per game.

Two vec envs with one interface (:data:`VEC_ENVS`, the sb3 backend's ``engine`` option;
``"auto"``, the default, picks by :func:`vec_env_class`):

* :class:`BatchedLlamaVecEnv` (``"batch"``, the faster with many games per table size) holds the games in
  :class:`llama_env.batch.BatchGame` s, one per table size, and drives them with the
  table driver's :class:`llama_env.table.BatchTable`: no Python loop over games or moves
  in a step. Its deals come from the batch's own generator (rule 2), so its games are as
  random as ``Llama-v0`` 's but not the same cards.
* :class:`ScalarLlamaVecEnv` (``"scalar"``, the previous vec env, the faster with few) holds one
  :class:`~llama_env.engine.LlamaGame` per slot, dealt as ``Llama-v0`` deals
  (:func:`llama_env.table.deal_table`) and driven by :func:`llama_env.table.advance_all`;
  on the same seed it replays the gym env exactly (a test checks it). It plays any rule
  option the engine plays, and serves as the reference the batched one is measured
  against.

The bookkeeping is ``Llama-v0``'s in both: one learner seat per game, one episode per
game, rewards of rounds that end during the opponents' moves credited to the learner's
next step, auto-reset with ``info["terminal_observation"]`` (and ``"scores"``,
``"seat"``, ``"num_players"``, ``"win_share"``, ``"episode"``), rewards from
:mod:`llama_env.rewards` (every mode), masks from :meth:`action_masks` (a step with an
action they rule out raises :class:`~llama_env.engine.IllegalActionError` naming the env
and its seat, before any game moves).

Each game's seating (the learner's seat, every other seat's opponent kind; and its table
size in the scalar env) is drawn by :class:`train.training.seats.OpponentMix`, the routine
both training backends use. The kind ``"self"`` is the policy registered with
:meth:`set_policy <LlamaVecEnv.set_policy>`; ``"past"`` one of the past policies
registered with :meth:`set_past_policies <LlamaVecEnv.set_past_policies>` (``"self"``
while there is none).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from gymnasium import spaces
from stable_baselines3.common.vec_env.base_vec_env import VecEnv, VecEnvIndices, VecEnvStepReturn

from llama_env.agent import Agent, SeedKey, population_members, resolve, seat_member, seed_keys
from llama_env.batch import BatchGame
from llama_env.engine import (
    MAX_PLAYERS,
    MIN_PLAYERS,
    NUM_ACTIONS,
    IllegalActionError,
    LlamaGame,
    Rules,
    brief,
    check_num_players,
    check_seed,
    is_int,
)
from llama_env.observation import check_obs_version, encoder, obs_size, observation_bounds
from llama_env.rewards import batch_rewards, game_rewards, rewards_for, validate_reward_mode
from llama_env.table import BatchTable, Table, advance_all, deal_table, illegal_rows
from train.training.seats import POLICY_KINDS, OpponentMix, past_index

if TYPE_CHECKING:
    from agents.ppo import Actor

__all__ = [
    "OneVecEnv",
    "LlamaVecEnv",
    "BatchedLlamaVecEnv",
    "ScalarLlamaVecEnv",
    "VEC_ENVS",
    "vec_env_class",
    "PolicyFn",
    "ActorPolicy",
    "policy_rng",
    "PolicyAgent",
    "POLICY_KINDS",
    "table_shares",
]

PolicyFn = Callable[[np.ndarray, np.ndarray], np.ndarray]
"""A batched policy: ``(observations (B, OBS_SIZE) float32, masks (B, 9) bool) -> actions (B,)``."""


@dataclass(frozen=True)
class ActorPolicy:
    """The policy of a ``"self"`` or ``"past"`` opponent: ``actor``'s moves, sampled from
    ``rng``. A :data:`PolicyFn` that pickles, so that env workers
    (:mod:`train.training.sb3.workers`) can play it, each from its own generator."""

    actor: Actor
    rng: np.random.Generator

    def __call__(self, observations: np.ndarray, masks: np.ndarray) -> np.ndarray:
        return self.actor.act_batch(observations, masks, deterministic=False, rng=self.rng)


def policy_rng(seed: int) -> np.random.Generator:
    """The generator that the ``"self"`` and ``"past"`` opponents of games seeded ``seed``
    sample their moves from (:class:`ActorPolicy`)."""
    return np.random.default_rng([seed, 7])


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


class OneVecEnv(VecEnv):
    """SB3's ``VecEnv`` plumbing for a vec env that is one object, not a list of envs:
    attributes and methods are its own for every index, and the learners' masks
    (``self._masks``, ``(num_envs, 9)`` bool) answer ``action_masks``."""

    _masks: np.ndarray
    _actions: np.ndarray | None
    _started = False  # reset() has dealt the games: the masks are theirs

    @property
    def games(self) -> list[LlamaGame]:
        """Every slot's current game as an engine game (for inspection)."""
        raise NotImplementedError

    def step_async(self, actions: np.ndarray) -> None:
        self._actions = self._checked_actions(actions)

    def _checked_actions(self, actions: object) -> np.ndarray:
        """``actions``, one per slot, as an int64 ``(num_envs,)`` array, each legal by its
        slot's row of the masks (a game over before its learner's first turn, a row of
        ``False``, ignores its action). Checked before any game moves: a step refused
        changes nothing. Raises ``RuntimeError`` before :meth:`reset`, ``ValueError`` for
        another shape or dtype, and :class:`~llama_env.engine.IllegalActionError` naming
        the first slot (``env i``) whose action is illegal, its seat and the legal actions."""
        if not self._started:
            raise RuntimeError("call reset() before stepping the vec env")
        n = self.num_envs
        a = actions if isinstance(actions, np.ndarray) else np.asarray(actions)
        if a.size != n or (a.ndim > 1 and a.shape != (n, 1)) or a.dtype.kind not in "iu":
            raise ValueError(
                f"actions must be an integer array of shape ({n},), one per env, got {brief(actions)} "
                f"of shape {a.shape} ({a.dtype})"
            )
        a = a.reshape(n)
        try:  # one look-up at every step: a negative action, read unsigned, is out of range too
            legal = self._masks[np.arange(n), a.view(f"u{a.itemsize}")]
        except IndexError:
            legal = None
        if legal is None or not legal.all():
            self._check_each(a)
        return a.astype(np.int64, copy=False)

    def _check_each(self, a: np.ndarray) -> None:
        """The slow path of :meth:`_checked_actions`: the first illegal action raised
        (a slot whose game is over takes any)."""
        bad = illegal_rows(a, self._masks)
        bad = bad[self._masks[bad].any(axis=1)]
        if bad.size:
            raise self._illegal(int(bad[0]), a[bad[0]].item(), bad.size - 1)

    def _illegal(self, slot: int, action: int, others: int) -> IllegalActionError:
        """The engine's error for ``action`` in slot ``slot``'s game, naming the slot and the seat."""
        game = self._game(slot)
        error = game.illegal_action_error(action, who=f"env {slot}, seat {game.current_player}")
        if others:
            error.args = (f"{error.args[0]} (and {others} more env(s) with an illegal action)",)
        return error

    def _game(self, slot: int) -> LlamaGame:
        """Slot ``slot``'s current game as an engine game."""
        return self.games[slot]

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


class LlamaVecEnv(OneVecEnv):
    """The interface of both vec envs, and what they share: the arguments, the opponents, the policies, the spaces,
    the episode books and SB3's ``VecEnv`` plumbing.

    Args:
        num_envs: games played side by side.
        players: table sizes to draw from (uniformly; repeat a size to weight it), e.g.
            ``(2, 3, 4, 5, 6)``.
        opponents: opponent kind -> weight; each opponent seat of a new game draws its kind
            independently. Kinds are registered agent names, ``"self"`` or ``"past"``.
        reward: ``"game"``, ``"round"`` or ``"shaped"`` (see :mod:`llama_env.rewards`).
        seed: seeds every deal and the draws of seats and opponents (and table sizes),
            and the agents built by name.
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
        num_envs = _check_num_envs(num_envs)
        self.players = _table_sizes(players)
        seed = check_seed(seed)
        if rules is not None and not isinstance(rules, Rules):
            raise ValueError(f"rules must be a llama_env.engine.Rules, got {rules!r}")
        self.rules = Rules.options_at(self.players, **(rules or Rules()).options())
        """The rules of each table size's games."""
        if isinstance(opponents, str):
            opponents = {opponents: 1.0}
        self.reward_mode = validate_reward_mode(reward)
        if isinstance(seat, str) and seat == "random":
            self.fixed_seat: int | None = None
        elif is_int(seat) and 0 <= seat < min(self.players):
            self.fixed_seat = int(seat)
        else:
            raise ValueError(
                f"seat must be 'random' or a seat valid at every table size (0..{min(self.players) - 1}), "
                f"got {brief(seat)}"
            )
        self.mix = OpponentMix(opponents, self.players, self.fixed_seat)
        self._agents: dict[str, Agent] = dict(agents or {})
        for agent in self._agents.values():  # a population's members checked once, not as each game seats one
            population_members(agent)
        self._keys: dict[str, SeedKey] = {}
        """Per kind built by name, its spec's own ``seed=`` (:func:`~llama_env.agent.seed_keys`),
        which the scalar env mixes into each game's reset seed, as ``Llama-v0`` does (but
        for a population's member: :func:`~llama_env.agent.seat_for_game`)."""
        for i, k in enumerate(self.mix.kinds):
            if k not in POLICY_KINDS and k not in self._agents:
                self._agents[k] = resolve(k, seed=seed + 1000 + i)
                self._keys[k] = seed_keys([k])[0]
        self.obs_version = check_obs_version(obs_version)
        self._self = PolicyAgent("self", obs_version=self.obs_version)
        self._past: list[PolicyAgent] = []

        low, high = observation_bounds(max(r.end_score for r in self.rules.values()), self.obs_version)
        size = obs_size(self.obs_version)
        super().__init__(
            num_envs,
            spaces.Box(low=low, high=high, shape=(size,), dtype=np.float32),
            spaces.Discrete(NUM_ACTIONS),
        )
        self.seats = np.zeros(num_envs, dtype=np.int64)
        """The learner's seat in each slot's game."""
        self.seat_kinds: list[list[str | None]] = [[] for _ in range(num_envs)]
        """Each slot's seating: the kind at every seat (``None`` at the learner's)."""
        self._obs = np.zeros((num_envs, size), dtype=np.float32)
        self._masks = np.zeros((num_envs, NUM_ACTIONS), dtype=bool)
        self._pending = np.zeros(num_envs, dtype=np.float64)
        self._ep_ret = np.zeros(num_envs, dtype=np.float64)
        self._ep_len = np.zeros(num_envs, dtype=np.int64)
        self._ep_start = time.time()
        self._actions: np.ndarray | None = None
        self.env_time = 0.0
        """Seconds spent inside :meth:`step_wait` and :meth:`reset` (rules, encoding, opponents)."""
        self._seed_generators(seed)

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
        """New games in every slot, advanced to the learners' seats (rewards of rounds that
        end before a learner's first move wait in the pending books)."""
        t0 = time.perf_counter()
        self._ep_ret[:] = 0
        self._ep_len[:] = 0
        self._pending[:] = 0
        self._deal_all()
        self._observe()
        self._started = True
        self.env_time += time.perf_counter() - t0
        return self._obs.copy()

    def _deal_all(self) -> None:  # pragma: no cover - each env deals its own
        raise NotImplementedError

    def _observe(self) -> None:  # pragma: no cover - each env observes its own
        raise NotImplementedError

    def _take_actions(self) -> np.ndarray:
        actions = self._actions
        if actions is None:
            raise RuntimeError("step_wait() called without step_async()")
        self._actions = None
        return actions

    def _finish(self, i: int, info: dict[str, Any], terminal_obs: np.ndarray, scores: list[int]) -> None:
        """The ``info`` of slot ``i``'s game, just over, and its episode books closed."""
        seat = int(self.seats[i])
        info["terminal_observation"] = terminal_obs
        info["scores"] = scores
        info["seat"] = seat
        info["num_players"] = len(scores)
        info["win_share"] = game_rewards(scores)[seat]
        info["episode"] = {
            "r": float(self._ep_ret[i]),
            "l": int(self._ep_len[i]),
            "t": round(time.time() - self._ep_start, 6),
        }
        self._ep_ret[i] = 0.0
        self._ep_len[i] = 0

    def seed(self, seed: int | None = None) -> list[int | None]:
        if seed is not None:
            seed = check_seed(seed)
            self._seed_generators(seed)
        return [seed] * self.num_envs

    def _seed_generators(self, seed: int) -> None:  # pragma: no cover - each env seeds its own
        raise NotImplementedError


def _check_num_envs(num_envs: object) -> int:
    """``num_envs`` as a Python ``int`` if it is a positive integer (numpy's too, never a
    bool), else a ``ValueError``."""
    if not is_int(num_envs) or num_envs < 1:
        raise ValueError(f"num_envs must be a positive integer, got {brief(num_envs)}")
    return int(num_envs)


def _table_sizes(players: object) -> list[int]:
    """``players`` as a vec env reads it: one table size (an integer, numpy's too) or a
    sequence of them, a repeat weighing a size; anything else (a float, which would be
    truncated to another table, a string, a bool) is a ``ValueError``."""
    sizes = [players] if is_int(players) else players
    what = f"players must be a table size {MIN_PLAYERS}..{MAX_PLAYERS} or a sequence of them, got {brief(players)}"
    if isinstance(sizes, (str, bytes)) or not isinstance(sizes, (Sequence, np.ndarray)):
        raise ValueError(what)
    try:
        out = [check_num_players(n) for n in sizes]
    except ValueError:
        raise ValueError(what) from None
    if not out:
        raise ValueError(what)
    return out


# --------------------------------------------------------------------------- the batched engine


def table_shares(players: Sequence[int], num_envs: int) -> dict[int, int]:
    """How many of ``num_envs`` slots each table size of ``players`` gets: in proportion
    to its weight (how often it is listed), by largest remainders (ties to the size
    listed first). Raises ``ValueError`` when there are fewer slots than sizes."""
    sizes = list(dict.fromkeys(players))
    if num_envs < len(sizes):
        raise ValueError(
            f"num_envs ({num_envs}) must be at least the number of table sizes ({len(sizes)}: "
            f"{', '.join(map(str, sizes))}): the games of each size are one batch"
        )
    weights = np.array([players.count(n) for n in sizes], dtype=np.float64)
    exact = num_envs * weights / weights.sum()
    share = np.maximum(np.floor(exact).astype(np.int64), 1)
    while share.sum() > num_envs:  # the floor of one each took slots from the large shares
        share[int(np.argmax(share - exact))] -= 1
    order = np.argsort(-(exact - share), kind="stable")
    for k in order[: num_envs - int(share.sum())]:
        share[k] += 1
    return dict(zip(sizes, share.tolist(), strict=True))


class _SizeGroup:
    """The games of one table size: slots ``lo:hi`` of the vec env, a :class:`BatchGame`
    of them and the :class:`BatchTable` that drives it."""

    __slots__ = ("num_players", "lo", "hi", "batch", "table")

    def __init__(self, num_players: int, lo: int, hi: int) -> None:
        self.num_players = num_players
        self.lo = lo
        self.hi = hi
        self.batch: BatchGame | None = None
        self.table: BatchTable | None = None


class BatchedLlamaVecEnv(LlamaVecEnv):
    """``num_envs`` L.L.A.M.A. games in numpy arrays, one learner seat in each (the
    arguments are :class:`LlamaVecEnv`'s).

    The slots are shared out among the table sizes of ``players`` in proportion to their
    weights (:func:`table_shares`: the slots ``0..k2-1`` hold 2-player games, the next the
    next size...), and a slot keeps its size from game to game: so ``players`` weighs the
    sizes by the learner's steps, where the scalar env weighs them by games (the two
    differ as far as the learner's decisions per game differ from size to size). Each
    size's games are one
    :class:`~llama_env.batch.BatchGame` without auto-reset, driven by a
    :class:`~llama_env.table.BatchTable` in which the learner is the outside player: a
    step applies the learners' actions in all games of a size at once, then lets the
    opponents move, a step of the batch per turn, each agent answering all the games
    waiting on it with one ``act_batch`` call. A game that ends gets a new seating and a
    new deal from the batch's generator.

    Agents built by name are seeded once (from ``seed``), not reset per game as in the
    scalar env: a batched agent answers many games with one generator.
    """

    def __init__(self, num_envs: int, *args: Any, **kwargs: Any) -> None:
        super().__init__(num_envs, *args, **kwargs)
        shares = table_shares(self.players, num_envs)
        self._groups: list[_SizeGroup] = []
        lo = 0
        for n, k in shares.items():
            self._groups.append(_SizeGroup(n, lo, lo + k))
            lo += k
        # who can sit at a table: the learner (outside), "self", each baseline (a
        # population's members one by one) and the past pool (plus retired snapshots
        # still seated in games under way), by position in one list
        self._fixed: list[Agent | None] = [None, self._self]
        self._names = ["learner", "self"]
        self._position: dict[int, int] = {id(self._self): 1}
        for kind in self.mix.baselines:
            agent = self._agents[kind]
            for member in population_members(agent) or [agent]:
                self._position.setdefault(id(member), len(self._fixed))
                self._fixed.append(member)
                self._names.append(kind)
        self._players: list[Agent | None] = list(self._fixed)
        self._player_names = list(self._names)

    @property
    def games(self) -> list[LlamaGame]:
        """Every slot's current game as an engine game (a copy, made from its snapshot)."""
        out = []
        for grp in self._groups:
            batch = self._batch(grp)
            out += [LlamaGame.from_dict(batch.snapshot(j)) for j in range(grp.hi - grp.lo)]
        return out

    def set_past_policies(self, fns: Sequence[PolicyFn]) -> None:
        super().set_past_policies(fns)
        self._reseat_players()

    def _game(self, slot: int) -> LlamaGame:
        grp = next(grp for grp in self._groups if grp.lo <= slot < grp.hi)
        return LlamaGame.from_dict(self._batch(grp).snapshot(slot - grp.lo))

    def _deal_all(self) -> None:
        for grp, rng in zip(self._groups, self._deal_rngs, strict=True):
            count = grp.hi - grp.lo
            grp.batch = BatchGame(count, rules=self.rules[grp.num_players], seed=rng, auto_reset=False)
            grp.table = self._make_table(grp.batch, self._new_seatings(grp, np.arange(count)))
        self._advance()

    def step_wait(self) -> VecEnvStepReturn:
        t0 = time.perf_counter()
        actions = self._take_actions()
        n = self.num_envs
        rews, self._pending = self._pending, np.zeros(n, dtype=np.float64)
        for grp in self._groups:
            # the learners' moves (games already over ignore theirs), then the opponents'
            before, was_over = self._books(grp)
            table = self._table(grp)
            table.apply(actions[grp.lo : grp.hi])  # checked against the masks in step_async
            table.advance()
            rews[grp.lo : grp.hi] += self._learner_rewards(grp, before, was_over)
        self._ep_ret += rews
        self._ep_len += 1
        dones = np.zeros(n, dtype=bool)
        infos: list[dict[str, Any]] = [{} for _ in range(n)]
        restarted = False
        for grp in self._groups:
            batch = self._batch(grp)
            over = np.flatnonzero(batch.game_over)
            if not over.size:
                continue
            seats = self.seats[grp.lo : grp.hi]
            final = batch.observation(self.obs_version, seats=seats)[over]
            scores = batch.scores[over].tolist()
            for k, j in enumerate(over.tolist()):
                dones[grp.lo + j] = True
                self._finish(grp.lo + j, infos[grp.lo + j], final[k], scores[k])
            self._table(grp).reset(over, self._new_seatings(grp, over))
            restarted = True
        if restarted:
            # the opponents before the learners' first turns of the new games (as in the gym
            # env, a round ending there, only possible with hand_size=1, pays the next step)
            self._advance()
        self._observe()
        self.env_time += time.perf_counter() - t0
        return self._obs.copy(), rews.astype(np.float32), dones, infos

    def _advance(self) -> None:
        """Let the opponents move until every game is at its learner's turn or over; the
        learners' rewards meanwhile pay their next step."""
        for grp in self._groups:
            before, was_over = self._books(grp)
            self._table(grp).advance()
            self._pending[grp.lo : grp.hi] += self._learner_rewards(grp, before, was_over)

    # ------------------------------------------------------------------ internals

    def _seed_generators(self, seed: int) -> None:
        ss = np.random.SeedSequence(seed)
        meta, *deals = ss.spawn(1 + len(dict.fromkeys(self.players)))  # one deal generator per table size
        self._meta_rng = np.random.default_rng(meta)
        self._deal_rngs = [np.random.default_rng(s) for s in deals]

    def _batch(self, grp: _SizeGroup) -> BatchGame:
        if grp.batch is None:
            raise RuntimeError("call reset() before stepping the vec env")
        return grp.batch

    def _table(self, grp: _SizeGroup) -> BatchTable:
        if grp.table is None:
            raise RuntimeError("call reset() before stepping the vec env")
        return grp.table

    def _make_table(self, batch: BatchGame, seating: np.ndarray) -> BatchTable:
        """The driver of one size's games: the learner outside, everybody else by position."""
        return BatchTable(batch, self._players, seating, names=self._player_names)

    def _new_seatings(self, grp: _SizeGroup, games: np.ndarray) -> np.ndarray:
        """Draw the seating of new games ``games`` of a size (positions in the players'
        list, a row per game) and note the learner's seat and the kinds."""
        rng = self._meta_rng
        n = grp.num_players
        rows = np.zeros((games.size, n), dtype=np.int64)
        for r, j in enumerate(games.tolist()):
            seating = self.mix.draw(rng, len(self._past), n)
            slot = grp.lo + j
            self.seats[slot] = seating.learner
            self.seat_kinds[slot] = list(seating.kinds)
            for s, kind in enumerate(seating.kinds):
                if kind is not None:
                    rows[r, s] = self._position[id(seat_member(self._agent(kind), rng))]
        return rows

    def _reseat_players(self) -> None:
        """After the past pool changed: a players' list with the new pool, keeping the
        snapshots still seated in games under way, and every table's seating renumbered."""
        tables = [grp.table for grp in self._groups if grp.table is not None]
        seated = set(np.concatenate([t.seating.reshape(-1) for t in tables]).tolist()) if tables else set()
        fixed = len(self._fixed)
        players: list[Agent | None] = [*self._fixed, *self._past]
        names = [*self._names, *(p.name for p in self._past)]
        renumber = np.arange(len(self._players))
        for k in range(fixed, len(self._players)):
            if k in seated:  # a retired snapshot some game still plays against
                renumber[k] = len(players)
                players.append(self._players[k])
                names.append(self._player_names[k])
        self._players, self._player_names = players, names
        self._position = {id(a): k for k, a in enumerate(players) if a is not None and k < fixed + len(self._past)}
        for grp in self._groups:
            if grp.table is not None:
                grp.table = self._make_table(self._batch(grp), renumber[grp.table.seating])

    def _books(self, grp: _SizeGroup) -> tuple[np.ndarray, np.ndarray]:
        """What the rewards of the next moves are measured from: the scores, and the games over."""
        batch = self._batch(grp)
        return batch.scores, batch.game_over

    def _learner_rewards(self, grp: _SizeGroup, before: np.ndarray, was_over: np.ndarray) -> np.ndarray:
        """The learners' rewards in the moves since :meth:`_books` (by the reward mode)."""
        batch = self._batch(grp)
        ended = batch.game_over & ~was_over
        rewards = batch_rewards(self.reward_mode, before, batch.scores, ended)
        return rewards[np.arange(grp.hi - grp.lo), self.seats[grp.lo : grp.hi]]

    def _observe(self) -> None:
        for grp in self._groups:
            batch = self._batch(grp)
            self._obs[grp.lo : grp.hi] = batch.observation(self.obs_version, seats=self.seats[grp.lo : grp.hi])
            self._masks[grp.lo : grp.hi] = batch.legal_action_mask


# --------------------------------------------------------------------------- the scalar engine


class ScalarLlamaVecEnv(LlamaVecEnv):
    """``num_envs`` L.L.A.M.A. engines, one learner seat in each (the arguments are
    :class:`LlamaVecEnv`'s): the previous vec env.

    Every game starts as ``Llama-v0``'s do (:func:`llama_env.table.deal_table`: its table
    size drawn per game, its opponents reset with seeds from the slot's generator), its
    moves go through the same driver, and its rewards come from
    :func:`llama_env.rewards.rewards_for`: on the same generator it gives the gym env's
    games exactly (a test checks it). After the learners' actions, all games waiting on
    one agent are answered with one ``act_batch`` call, round after round, until every
    game is back at its learner seat (:func:`llama_env.table.advance_all`).
    """

    def __init__(self, num_envs: int, *args: Any, **kwargs: Any) -> None:
        super().__init__(num_envs, *args, **kwargs)
        self._encode, self._encode_many = encoder(self.obs_version)
        self.tables: list[Table] = []

    @property
    def games(self) -> list[LlamaGame]:
        """The engine of every slot's current game."""
        return [t.game for t in self.tables]

    def _deal_all(self) -> None:
        self.tables = [self._new_table(i) for i in range(self.num_envs)]
        self._advance(self.tables, list(range(self.num_envs)), self._pending)

    def step_wait(self) -> VecEnvStepReturn:
        t0 = time.perf_counter()
        actions = self._take_actions()
        n = self.num_envs
        mode = self.reward_mode
        for i, table in enumerate(self.tables):
            if table.game.game_over:  # ended before the learner's first turn (hand_size=1): nothing to apply
                continue
            result = table.apply(int(actions[i]))  # legal: checked against the masks in step_async
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
                self._finish(i, infos[i], self._encode(g, int(self.seats[i])), list(g.scores))
                self.tables[i] = self._new_table(i)
                restarted.append(i)
        if restarted:
            # the opponents before the learner's first turn of a new game; as in the gym
            # env, a round ending there (only possible with hand_size=1) pays the next step
            self._advance(self.tables, restarted, self._pending)
        self._observe()
        self.env_time += time.perf_counter() - t0
        return self._obs.copy(), rews.astype(np.float32), dones, infos

    # ------------------------------------------------------------------ internals

    def _seed_generators(self, seed: int) -> None:
        ss = np.random.SeedSequence(seed)
        self._meta_rng = np.random.default_rng(ss.spawn(1)[0])
        self.game_rngs = [np.random.default_rng(s) for s in ss.spawn(self.num_envs)]

    def _new_table(self, i: int) -> Table:
        """Slot ``i``'s next game: its seating drawn from the env's own generator
        (:meth:`OpponentMix.draw`), then dealt as ``Llama-v0`` deals (deal_table, which
        seats a population's members from the slot's generator as the gym env does, and
        mixes a spec's own ``seed=`` into its opponent's reset seed: ``random:seed=1`` and
        ``random:seed=2`` play differently, as in ``Llama-v0`` and evaluation)."""
        seating = self.mix.draw(self._meta_rng, len(self._past))
        self.seats[i] = seating.learner
        self.seat_kinds[i] = list(seating.kinds)
        kinds = seating.opponents()
        opponents = [self._agent(kind) for kind in kinds]
        names = [kind or "learner" for kind in seating.kinds]
        keys = [self._keys.get(kind, ()) for kind in kinds]
        return deal_table(
            self.game_rngs[i], seating.learner, opponents, rules=self.rules[seating.num_players], names=names, keys=keys
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


VEC_ENVS: dict[str, type[LlamaVecEnv]] = {"batch": BatchedLlamaVecEnv, "scalar": ScalarLlamaVecEnv}
"""The vec envs by the name the sb3 backend's ``engine`` option gives them."""

BATCH_GAMES_PER_SIZE = 256
"""``"auto"`` picks the batched engine when the table sizes hold this many games each on
average: below it a step of a batch, a fixed cost of some hundred microseconds however few
games move in it, outweighs what it saves (docs/research/2026-12-03-batched-vec-env-and-beat-heuristic.md)."""


def vec_env_class(engine: str, players: Sequence[int] | int, num_envs: int) -> type[LlamaVecEnv]:
    """The vec env that ``engine`` names; ``"auto"``: the batched one when ``num_envs``
    games give every table size of ``players`` (one size, or a sequence of them, as the
    vec envs take it) :data:`BATCH_GAMES_PER_SIZE` games on average, else the scalar one."""
    if engine == "auto":
        engine = "batch" if num_envs >= BATCH_GAMES_PER_SIZE * len(set(_table_sizes(players))) else "scalar"
    if engine not in VEC_ENVS:
        raise ValueError(f"config key 'engine' must be auto or one of {', '.join(VEC_ENVS)}, got {engine!r}")
    return VEC_ENVS[engine]
