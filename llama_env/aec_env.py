"""PettingZoo AEC environment for L.L.A.M.A.

A thin adapter over :class:`llama_env.engine.LlamaGame`: it translates actions and
observations and keeps PettingZoo's books; every rule lives in the engine, every move
goes through the table driver (:class:`llama_env.table.Table`) and every reward comes
from :mod:`llama_env.rewards`.

Speed: the loop PettingZoo documents (``agent_iter()``, ``last()``, pick from the mask,
``step()``) crosses three wrappers per call in a plain ``env()``. :func:`env` keeps the
three standard wrappers and their behaviour, but its outer wrapper answers the calls
made at every decision (``agent_iter``, ``last``, ``step`` of a legal action, the masked
``action_space(agent).sample(mask)``) straight from the raw env, and leaves everything
else, every illegal or odd action included, to the wrapper chain. That needs PettingZoo's
private fields, so it lives in :mod:`llama_env._pettingzoo`, with the checks of what it
assumes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from gymnasium import spaces
from pettingzoo import AECEnv

from llama_env._pettingzoo import wrap
from llama_env.engine import (
    DEFAULT_END_SCORE,
    DEFAULT_HAND_SIZE,
    DEFAULT_NUM_PLAYERS,
    NUM_ACTIONS,
    IllegalActionError,
    LlamaGame,
    RoundResult,
    Rules,
    check_flag,
    check_seed,
    seeded_generator,
)
from llama_env.observation import (
    action_mask,
    check_obs_version,
    encoder,
    is_shared_mask,
    obs_size,
    observation_bounds,
    unchecked_action_mask,
)
from llama_env.render import render_round_summary, render_table
from llama_env.render_svg import RENDER_MODES, check_render_mode, rasterize, table_svg
from llama_env.rewards import (
    DEFAULT_REWARD,
    ILLEGAL_ACTION_REWARD,  # noqa: F401 - importable from here as before, no longer exported
    illegal_action_reward,
    rewards_for,
    validate_reward_mode,
)
from llama_env.table import Table

__all__ = ["env", "raw_env", "LlamaAECEnv", "MaskedDiscrete"]

_ZERO_MASK = action_mask(())  # shared and read-only, like every mask the env returns
_ALL_OUT = "the game is over and every agent has stepped out: call reset() to start a new game"
_MASK_BITS = bytes([0, 1])


class MaskedDiscrete(spaces.Discrete):
    """``Discrete(n)`` whose masked ``sample(mask)`` is fast.

    PettingZoo's documented loop picks actions with ``env.action_space(agent).sample(mask)``;
    Gymnasium's implementation of it costs more than a whole game step here. This one
    checks the mask as Gymnasium does (an ``int8`` array of shape ``(n,)`` holding only 0s
    and 1s; all zeros gives ``start``) and picks uniformly among the 1s, using uniform
    floats that it draws from ``self.np_random`` in blocks. A seeded space (``seed()``,
    which drops the block drawn from the generator it replaces) therefore samples
    reproducibly, though not the same numbers as Gymnasium's own ``sample``; anything but
    such a mask goes to Gymnasium's ``sample``. A boolean mask (what agents get) is
    taken as its ``int8`` copy.
    """

    _BLOCK = 512

    def __init__(self, n: int, seed: int | np.random.Generator | None = None, start: int = 0) -> None:
        super().__init__(n, seed=seed, start=start)
        self._legal_by_mask: dict[bytes, tuple[np.int64, ...]] = {}
        self._legal_by_id: dict[int, tuple[np.ndarray, tuple[np.int64, ...]]] = {}
        self._floats: list[float] = []
        self._next = self._BLOCK

    def seed(self, seed: int | None = None) -> Any:
        """Seed the space's generator; the block of floats drawn from the one it replaces
        is dropped, so a seeded space samples reproducibly."""
        # Gymnasium replaces the generator only here (and in __init__, before any block):
        # the floats drawn from the old one go with it
        self._next = self._BLOCK
        return super().seed(seed)

    def sample(self, mask: Any = None, probability: Any = None) -> Any:
        """A uniform pick among the 1s of ``mask`` (an ``int8`` or boolean mask), from the
        block of floats; anything else goes to Gymnasium's ``sample``."""
        if isinstance(mask, np.ndarray) and mask.dtype == np.bool_:  # an agent's mask: the same numbers
            mask = mask.astype(np.int8)
        if probability is None:
            # The env's own masks are shared, read-only and never freed
            # (llama_env.observation.action_mask): the same object always holds the same
            # legal set, so it is looked up by identity first.
            known = self._legal_by_id.get(id(mask))
            legal = known[1] if known is not None and known[0] is mask else self._legal_of(mask)
            if legal is not None:
                if not legal:
                    return self.start
                i = self._next
                if i >= self._BLOCK:
                    self._floats = self.np_random.random(self._BLOCK).tolist()  # seeded on first use
                    i = 0
                self._next = i + 1
                return legal[int(self._floats[i] * len(legal))]
        return super().sample(mask, probability)

    def _legal_of(self, mask: Any) -> tuple[np.int64, ...] | None:
        """The legal actions (``np.int64``, as Gymnasium samples them) of a valid mask,
        or ``None`` for anything that is not an ``int8`` mask of 0s and 1s."""
        if type(mask) is not np.ndarray or mask.dtype != np.int8 or mask.shape != (self.n,):
            return None
        key = mask.tobytes()
        legal = self._legal_by_mask.get(key)
        if legal is None:
            if key.translate(None, _MASK_BITS):  # not a mask of 0s and 1s
                return None
            legal = self._legal_by_mask[key] = tuple(self.start + np.flatnonzero(mask).astype(self.dtype))
        if is_shared_mask(mask):
            self._legal_by_id[id(mask)] = (mask, legal)
        return legal


class LlamaAECEnv(AECEnv):
    """L.L.A.M.A. as a PettingZoo AEC environment (one episode = one whole game).

    ## Agents
    ``player_0`` .. ``player_{n-1}`` in seat order; play passes from seat i to i + 1.

    ## Action space
    ``Discrete(9)``: 0..5 play a card of value 1..6, 6 play a llama, 7 draw, 8 quit.

    ## Observation space
    ``Dict(observation=Box(float32, (OBS_SIZE,)), action_mask=Box(int8, (9,)))``; the
    layout of ``observation`` is :data:`llama_env.observation.FIELDS`. With
    ``obs_version=1`` the observation has :data:`~llama_env.observation.OBS_SIZE_V1`
    entries laid out as :data:`~llama_env.observation.FIELDS_V1` (the public history
    of the round follows the same 52 entries). The mask is all
    zeros for an agent that is not to act. Masks are shared and read-only (writing into
    one raises ``ValueError``); copy one to modify it.

    ## Rewards
    ``reward="game"`` (default): 1/k to each of the k winners when the game ends.
    ``reward="round"``: minus the points taken plus the marker returned, every round.
    ``reward="shaped"``: the game reward plus the change of each agent's lead over the
    table every round; a game's rewards sum to the game reward (:mod:`llama_env.rewards`).

    ## Episode end
    When a round ends with a score of at least ``end_score``: every agent terminates.

    ## Illegal actions
    The raw env raises :class:`llama_env.engine.IllegalActionError` and leaves the game
    untouched. :func:`env` wraps it the PettingZoo classic way, where an illegal action
    instead ends the game with a penalty for the offender and 0 for the others. The
    penalty makes the offender's game add up to less than any finished game: -1 with
    ``reward="game"`` or ``"shaped"`` (as in PettingZoo's classic games) and ``-(end_score +
    31)`` with ``"round"`` (:func:`llama_env.rewards.illegal_action_return`), so it is that
    total minus what the agent was paid before (:meth:`illegal_action_reward`).

    ## Arguments
    ``num_players`` (2..6, default 4), ``render_mode`` (``None``, ``"ansi"``,
    ``"human"``, ``"rgb_array"``: the picture of :mod:`llama_env.render_svg` as the acting
    seat sees it, an ``(H, W, 3)`` uint8 array; needs the ``web`` extra, checked when the
    env is made), ``reward``
    (``"game"``, ``"round"`` or ``"shaped"``), ``end_score`` (default 40), ``hand_size``
    (default 6), ``rules`` (a :class:`~llama_env.engine.Rules` instead of ``num_players``,
    ``end_score`` and ``hand_size``; giving both is a ``ValueError``; the env's
    :attr:`rules` holds them either way), ``random_first_player`` (default ``False``: seat 0 starts the first round),
    ``obs_version`` (0, default, or 1; see Observation space).

    ## Version history
    * v0: first release. ``obs_version=1`` adds the public history to the observation.
    * v0, since 0.3.0: through :func:`env`, an illegal move makes the offender's game add
      up to :func:`~llama_env.rewards.illegal_action_return` (it paid -1 on top of what
      the game had paid); ``render_mode="rgb_array"`` without the ``web`` extra is a
      ``ModuleNotFoundError`` with the command that installs the ``web`` extra into this
      Python, when the env is made (it was said at the first ``render()``). The
      name stays ``llama_v0``, as ``Llama-v0``'s id stays (see its card), and the raw
      env's games are unchanged.
    """

    metadata = {"name": "llama_v0", "render_modes": list(RENDER_MODES), "is_parallelizable": False, "render_fps": 2}

    def __init__(
        self,
        num_players: int = DEFAULT_NUM_PLAYERS,
        render_mode: str | None = None,
        *,
        reward: str = DEFAULT_REWARD,
        end_score: int = DEFAULT_END_SCORE,
        hand_size: int = DEFAULT_HAND_SIZE,
        rules: Rules | None = None,
        random_first_player: bool = False,
        obs_version: int = 0,
    ) -> None:
        super().__init__()
        self.rules = Rules.given(rules, num_players=num_players, end_score=end_score, hand_size=hand_size)
        """The table size and rule options of every game."""
        self.obs_version = check_obs_version(obs_version)
        self._encode = encoder(self.obs_version)[0]
        self.render_mode = check_render_mode(render_mode)
        self.reward_mode = validate_reward_mode(reward)
        self.random_first_player = check_flag("random_first_player", random_first_player)

        self.possible_agents = [f"player_{i}" for i in range(self.rules.num_players)]
        self._seat = {a: i for i, a in enumerate(self.possible_agents)}
        low, high = observation_bounds(self.rules.end_score, self.obs_version)
        obs_space = spaces.Dict(
            {
                "observation": spaces.Box(low=low, high=high, shape=(obs_size(self.obs_version),), dtype=np.float32),
                "action_mask": spaces.Box(low=0, high=1, shape=(NUM_ACTIONS,), dtype=np.int8),
            }
        )
        self.observation_spaces = {a: obs_space for a in self.possible_agents}
        self.action_spaces = {a: MaskedDiscrete(NUM_ACTIONS) for a in self.possible_agents}
        self._rng: np.random.Generator | None = None
        self.table: Table | None = None
        self.last_round: RoundResult | None = None
        self._round_just_ended = False  # the rewards and infos are the last round's
        self.on_begin: Callable[[], None] | None = None
        """Called when a game begins (``reset``, or a game set): the wrappers of
        :func:`llama_env.env` clear their own per-game state there."""

    @property
    def num_players(self) -> int:
        """Players at the table (``rules.num_players``)."""
        return self.rules.num_players

    @property
    def game(self) -> LlamaGame:
        """The engine (``env.unwrapped.game``; see docs/env.md, the two environments)."""
        return self._table().game

    @game.setter
    def game(self, game: LlamaGame) -> None:
        """Play ``game`` from here on, a game of this env's table size and end score (a
        position may be dealt other hands): its current player has the turn, every agent
        is back with no reward (all terminated if it is over)."""
        if not isinstance(game, LlamaGame):
            raise TypeError(f"env.unwrapped.game must be a llama_env.LlamaGame, got {type(game).__name__}")
        mine, theirs = self.rules, game.rules
        if (theirs.num_players, theirs.end_score) != (mine.num_players, mine.end_score):
            # what the observation space is made of (a position's hand size may differ)
            raise ValueError(
                f"the game's rules ({theirs.brief()}) are not this env's ({mine.brief()}): its "
                "observations would leave the observation space; make an env of its table size and end score"
            )
        self._begin(game)

    def _begin(self, game: LlamaGame) -> None:
        """Every seat is played by the env's user, through the table driver; the per-game
        state of PettingZoo's API starts afresh."""
        if self.table is None:
            self.table = Table(game, names=self.possible_agents)
        else:
            self.table.game = game  # the same seats, a new game
        self.agents = list(self.possible_agents)
        self.rewards = dict.fromkeys(self.agents, 0.0)
        self._cumulative_rewards = dict.fromkeys(self.agents, 0.0)
        self._paid = dict.fromkeys(self.agents, 0.0)  # every reward of this game, reported by last() or not
        self.terminations = dict.fromkeys(self.agents, game.game_over)
        self.truncations = dict.fromkeys(self.agents, False)
        self.infos: dict[str, dict[str, Any]] = {a: {} for a in self.agents}
        self.agent_selection = self.possible_agents[game.current_player]
        self.last_round = None
        self._round_just_ended = False
        if self.on_begin is not None:
            self.on_begin()

    def _table(self) -> Table:
        if self.table is None:
            raise RuntimeError("the env has no game yet: call reset() first")
        return self.table

    def observation_space(self, agent: str) -> spaces.Space:
        """The observation space of ``agent`` (``player_0`` ...); a ``KeyError`` naming the
        agents for any other name."""
        try:
            return self.observation_spaces[agent]
        except (KeyError, TypeError):
            raise self._no_agent(agent) from None

    def action_space(self, agent: str) -> spaces.Space:
        """The action space of ``agent``, a :class:`MaskedDiscrete` of 9 actions; a
        ``KeyError`` naming the agents for any other name."""
        try:
            return self.action_spaces[agent]
        except (KeyError, TypeError):
            raise self._no_agent(agent) from None

    def _no_agent(self, agent: object) -> KeyError:
        """The error for an agent of no seat at this table (``observe``, the spaces)."""
        return KeyError(f"no agent {agent!r} at this table; its agents are {', '.join(self.possible_agents)}")

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> None:
        """Start a new game. ``seed`` gives the deals a new generator,
        :func:`llama_env.engine.seeded_generator` ``(seed)``; without it the generator
        carries on from the previous game. ``options`` are taken and unused, as
        PettingZoo's API test requires (the table size and the rules are arguments of
        :func:`llama_env.env`)."""
        if isinstance(seed, (bool, np.bool_)):  # numpy reads True as a seed
            raise TypeError(f"seed must be an integer or None, got {seed!r}")
        if seed is not None:
            seed = check_seed(seed)
        if self._rng is None or seed is not None:
            self._rng = seeded_generator(seed)
        # the options were checked in __init__
        self._begin(LlamaGame.unchecked(self.rules, self._rng, self.random_first_player))

    def observe(self, agent: str) -> dict[str, np.ndarray]:
        """``agent``'s ``{"observation", "action_mask"}``: the mask is all zero unless it is
        that agent's turn, so one loop reads every agent the same way."""
        table = self.table
        if table is None:
            raise RuntimeError("the env has no game yet: call reset() first")
        game = table.game
        seat = self._seat.get(agent) if isinstance(agent, str) else None
        if seat is None:
            raise self._no_agent(agent)
        obs = self._encode(game, seat)
        if (
            seat != game.current_player
            or game.game_over
            # (the cheap checks first: this runs at every decision) an agent out after an illegal move
            or self.terminations.get(agent, True)
            or self.truncations.get(agent, True)
        ):
            return {"observation": obs, "action_mask": _ZERO_MASK}
        return {"observation": obs, "action_mask": unchecked_action_mask(game.legal_actions())}

    def step(self, action: Any) -> None:
        """Play ``action`` for :attr:`agent_selection`; the rewards of a round that ends are in
        ``rewards``. An illegal action raises :class:`~llama_env.engine.IllegalActionError`,
        the game untouched (:func:`env`'s wrappers end the game with a penalty instead)."""
        table = self.table
        if table is None:
            raise RuntimeError("the env has no game yet: call reset() first")
        if not self.agents:
            raise RuntimeError(_ALL_OUT)
        agent = self.agent_selection
        if self.terminations[agent] or self.truncations[agent]:
            self._was_dead_step(action)
            return
        self._step_live(agent, table.apply(action))  # apply raises IllegalActionError, the game untouched

    def step_legal(self, agent: str, action: int) -> bool:
        """``step(action)`` for the live agent to act if ``action`` (an index) is legal, and
        ``True``; ``False``, the game untouched, if it is not. The wrappers' fast path
        (:mod:`llama_env._pettingzoo`)."""
        try:
            result = self.table.apply(action)  # type: ignore[union-attr]  # reset() was called
        except IllegalActionError:
            return False
        self._step_live(agent, result)
        return True

    def _step_live(self, agent: str, result: RoundResult | None) -> None:
        """The bookkeeping after a live agent's move was applied (``result``: the round's
        result if the move ended one)."""
        self._cumulative_rewards[agent] = 0.0
        if self._round_just_ended:  # the last round's rewards and infos were seen: clear them
            self.rewards = dict.fromkeys(self.agents, 0.0)
            self.infos = {a: {} for a in self.agents}
            self._round_just_ended = False
        if result is not None:
            self._on_round_end(result)
        self.agent_selection = self.possible_agents[self.table.game.current_player]  # type: ignore[union-attr]
        if self.render_mode == "human":
            self.render()

    def illegal_action_reward(self, agent: str) -> float:
        """What an illegal move by ``agent`` now pays it when it ends the game (the
        wrappers of :func:`llama_env.env`): what the rule wants its game to add up to
        (:func:`llama_env.rewards.illegal_action_return`) minus the rewards the game gave
        it so far."""
        return illegal_action_reward(self.reward_mode, self.rules.end_score, self._paid[agent])

    def last(self, observe: bool = True) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        """PettingZoo's ``last()`` for the agent to act, with a clear error before
        ``reset()`` and once every agent has stepped out."""
        if self.table is None:
            raise RuntimeError("the env has no game yet: call reset() first")
        if not self.agents:  # the last agent stepped out: no agent is selected
            raise RuntimeError(_ALL_OUT)
        return super().last(observe)

    def _on_round_end(self, result: RoundResult) -> None:
        self.last_round = result
        self._round_just_ended = True
        values = rewards_for(result, self.reward_mode)
        agents = self.agents
        if any(values):  # else the rewards stay as they are: all 0 (cleared by the step before)
            self.rewards = dict(zip(agents, values, strict=True))
            cumulative, paid = self._cumulative_rewards, self._paid
            for agent, value in zip(agents, values, strict=True):
                cumulative[agent] += value
                paid[agent] += value
        self.infos = {a: {"round_result": result} for a in agents}
        if result.game_over:
            self.terminations = dict.fromkeys(agents, True)

    def render(self) -> Any:
        """The table from the seat to act: text (returned for ``"ansi"``, printed for
        ``"human"``), with the result of a round that just ended, or a picture for
        ``"rgb_array"`` (the ``web`` extra)."""
        if self.render_mode is None:
            from gymnasium.logger import warn

            warn("render() called without a render_mode; pass render_mode='ansi', 'human' or 'rgb_array' to the env")
            return None
        if self.render_mode == "rgb_array":
            game = self._table().game
            return rasterize(table_svg(game, game.current_player, names=self.possible_agents, reveal=game.game_over))
        text = "The table is empty: call reset() first." if self.table is None else self._render_text()
        if self.render_mode == "human":
            print(text)
            return None
        return text

    def _render_text(self) -> str:
        game = self._table().game
        parts = []
        if self._round_just_ended and self.last_round is not None:
            parts.append(render_round_summary(self.last_round, self.possible_agents))
        if not game.game_over:
            parts.append(render_table(game, game.current_player, self.possible_agents))
        return "\n".join(parts)

    def close(self) -> None:
        """Nothing to release: the env holds no window or file (PettingZoo's API asks for
        it)."""
        pass


def raw_env(num_players: int = DEFAULT_NUM_PLAYERS, render_mode: str | None = None, **kwargs: Any) -> LlamaAECEnv:
    """The unwrapped AEC env: an illegal action raises ``IllegalActionError``."""
    return LlamaAECEnv(num_players, render_mode, **kwargs)


def env(num_players: int = DEFAULT_NUM_PLAYERS, render_mode: str | None = None, **kwargs: Any) -> AECEnv:
    """The AEC env in PettingZoo's standard classic wrappers (illegal action: the game
    ends with a penalty for the offender, see :class:`LlamaAECEnv`; out-of-bounds action:
    assertion; calls out of order: error)."""
    return wrap(raw_env(num_players, render_mode, **kwargs))
