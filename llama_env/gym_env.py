"""Gymnasium single-agent environment ``Llama-v0``: one learning seat against opponents.

A thin adapter: the engine applies every rule, :mod:`llama_env.rewards` computes the
reward, and the opponents are ordinary agents (``act(observation, action_mask)``)
that see only their own observation.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import fields
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from llama_env.agent import (
    Agent,
    AgentLike,
    AgentSpec,
    SeedKey,
    agent_label,
    resolve,
    seed_keys,
)
from llama_env.engine import (
    DEFAULT_END_SCORE,
    DEFAULT_HAND_SIZE,
    DEFAULT_NUM_PLAYERS,
    NUM_ACTIONS,
    IllegalActionError,
    LlamaGame,
    RoundResult,
    Rules,
    action_index,
    brief,
    check_flag,
    check_seed,
    is_int,
)
from llama_env.observation import check_obs_version, encoder, obs_size, observation_bounds
from llama_env.render import render_round_summary, render_table
from llama_env.render_svg import RENDER_MODES, check_render_mode, rasterize, table_svg
from llama_env.rewards import (
    DEFAULT_REWARD,
    ILLEGAL_ACTION_REWARD,  # noqa: F401 - importable from here as before, no longer exported
    illegal_action_reward,
    rewards_for,
    validate_reward_mode,
)
from llama_env.table import Table, TableListener, deal_table

__all__ = ["LlamaEnv", "ActionSpace", "ILLEGAL_ACTION_MODES", "make_v1"]

ILLEGAL_ACTION_MODES = ("raise", "terminate")
"""What ``illegal_action=`` may say an illegal action does: raise, or end the episode with a
penalty (for generic checkers and learners that do not read the mask)."""


class ActionSpace(spaces.Discrete):
    """``Discrete(9)`` whose ``sample(mask=...)`` also takes the env's own action mask:
    ``info["action_mask"]`` and :meth:`LlamaEnv.action_masks` are booleans (as MaskablePPO
    reads them), and Gymnasium's ``sample`` refused them with an assertion about the
    ``int8`` it wants. A boolean mask is sampled as its ``int8`` copy, the same numbers."""

    def sample(self, mask: Any = None, *args: Any, **kwargs: Any) -> np.int64:
        """Gymnasium's ``sample``, with a boolean ``mask`` (the env's own) taken as its
        ``int8`` copy."""
        if isinstance(mask, np.ndarray) and mask.dtype == np.bool_:
            mask = mask.astype(np.int8)
        return super().sample(mask, *args, **kwargs)


class LlamaEnv(gym.Env):
    """L.L.A.M.A. with one learning seat; the other seats are played by opponent agents.

    ## Action space
    ``Discrete(9)``: 0..5 play a card of value 1..6, 6 play a llama, 7 draw, 8 quit.
    The legal ones are in :meth:`action_masks` (for sb3-contrib's ``MaskablePPO``) and in
    ``info["action_mask"]``. An illegal action raises ``IllegalActionError`` (game
    untouched) by default; with ``illegal_action="terminate"`` it instead ends the episode
    with a penalty, which is what generic checkers that sample unmasked actions
    (Gymnasium's and SB3's ``check_env``) need: its reward makes the episode add up to
    less than any finished game, -1 with ``reward="game"`` or ``"shaped"`` (as PettingZoo's
    classic wrapper pays) and ``-(end_score + 31)`` with ``"round"``
    (:func:`llama_env.rewards.illegal_action_return`). Something that
    is no action of the space (a float, ``None``, 9) raises in both modes: it is a bug in
    the caller, not a move to learn from.

    ## Observation space
    ``Box(float32, (OBS_SIZE,))`` laid out as :data:`llama_env.observation.FIELDS`,
    from the learner's seat. Same size at every table size. ``Llama-v1``
    (``obs_version=1``): ``Box(float32, (OBS_SIZE_V1,))`` laid out as
    :data:`llama_env.observation.FIELDS_V1`, the same 52 entries followed by the public
    history of the round.

    ## Rewards
    ``reward="game"`` (default): at the end of the game 1/k if the learner is one of k
    winners, else 0, so the expected return is the learner's win share.
    ``reward="round"``: minus the points taken plus the marker returned, every round.
    ``reward="shaped"``: the game reward plus the change of the learner's lead over the
    table every round; a game's rewards sum to the game reward (:mod:`llama_env.rewards`).

    ## Episode end
    One episode is one whole game: it terminates when a round ends with a score of at
    least ``end_score``. There is no truncation. Rewards earned by rounds that end
    during the opponents' turns before the learner's first turn (possible only with
    ``hand_size=1``) are paid with the first step; if such a round already ends the
    game, the mask is all False and the first step, whatever its action, only returns
    that reward with ``terminated=True``.

    ## Arguments
    * ``num_players``: 2..6 (default 4).
    * ``opponents``: an agent object or a registered agent name (``"random"``,
      ``"heuristic"``, ...) used for every other seat, or a sequence (a list, a tuple, a 1-D
      array) of ``num_players - 1`` of them, for the other seats in turn order from the
      learner's left. Names are built once per seat. Default ``"random"``.
    * ``seat``: the learner's seat, an int, or ``"random"`` to draw it each episode
      (default 0).
    * ``reward``: ``"game"``, ``"round"`` or ``"shaped"``.
    * ``end_score`` (default 40), ``hand_size`` (default 6): rule options.
    * ``rules``: a :class:`~llama_env.engine.Rules`, the table size and rule options in one
      value, instead of ``num_players``, ``end_score`` and ``hand_size`` (giving both is a
      ``ValueError``). The env's :attr:`rules` holds them either way.
    * ``random_first_player``: the first round's starter drawn at random (default seat 0).
    * ``render_mode``: ``None``, ``"ansi"``, ``"human"`` or ``"rgb_array"`` (the picture of
      :mod:`llama_env.render_svg` from the learner's seat, an ``(H, W, 3)`` uint8 array;
      needs the ``web`` extra, checked when the env is made).
    * ``illegal_action``: ``"raise"`` (default) or ``"terminate"`` (see Action space).
    * ``obs_version``: 0 (``Llama-v0``) or 1 (``Llama-v1``), see Observation space.

    ## Version history
    * v0: first release.
    * v1: the observation with the public history of the round (``obs_version=1``);
      actions, rewards, arguments and dynamics as v0.
    * v0 and v1, since 0.3.0: with ``illegal_action="terminate"`` an illegal move makes the
      episode add up to :func:`~llama_env.rewards.illegal_action_return` (it paid -1 on top
      of what the episode had paid); an opponent spec's own ``seed=`` (``random:seed=5``)
      is mixed into each episode's seed (which replaced it); a population opponent
      (``perturbed``) plays a member of its own at each of its seats (it was seated
      itself); ``render_mode="rgb_array"`` without the ``web`` extra is a
      ``ModuleNotFoundError`` with the command that installs the ``web`` extra into this
      Python, when the env is made (it was said at the first ``render()``); with
      ``illegal_action="terminate"``, ``info["illegal_action"]`` is the action as a plain
      int (it was the object given: an array stayed an array). The ids stay: their number
      is the observation's version, the contract trained models depend on, and the
      observation, the actions and the games of the defaults (``illegal_action="raise"``,
      opponents without ``seed=``) are unchanged.
    """

    metadata = {"render_modes": list(RENDER_MODES), "render_fps": 4}

    def __init__(
        self,
        num_players: int = DEFAULT_NUM_PLAYERS,
        opponents: AgentLike | Sequence[AgentLike] | np.ndarray = "random",
        seat: int | str = 0,
        reward: str = DEFAULT_REWARD,
        *,
        end_score: int = DEFAULT_END_SCORE,
        hand_size: int = DEFAULT_HAND_SIZE,
        rules: Rules | None = None,
        random_first_player: bool = False,
        render_mode: str | None = None,
        illegal_action: str = "raise",
        obs_version: int = 0,
    ) -> None:
        rules = _rules_from_json(rules)
        self.rules = Rules.given(rules, num_players=num_players, end_score=end_score, hand_size=hand_size)
        """The table size and rule options of every game."""
        self.obs_version = check_obs_version(obs_version)
        self._encode = encoder(self.obs_version)[0]
        self.random_first_player = check_flag("random_first_player", random_first_player)
        self.reward_mode = validate_reward_mode(reward)
        self.render_mode = check_render_mode(render_mode)
        if illegal_action not in ILLEGAL_ACTION_MODES:
            raise ValueError(f"illegal_action must be 'raise' or 'terminate', got {illegal_action!r}")
        self.illegal_action = illegal_action
        n = self.rules.num_players
        if seat == "random":
            self.fixed_seat: int | None = None
        elif is_int(seat) and 0 <= seat < n:
            self.fixed_seat = int(seat)
        else:
            raise ValueError(f"seat must be 'random' or a seat 0..{n - 1}, got {seat!r}")
        self.opponents, self._opponent_keys = _build_opponents(opponents, n)

        low, high = observation_bounds(self.rules.end_score, self.obs_version)
        self.observation_space = spaces.Box(low=low, high=high, shape=(obs_size(self.obs_version),), dtype=np.float32)
        self.action_space = ActionSpace(NUM_ACTIONS)
        self.table: Table | None = None
        self.seat = self.fixed_seat if self.fixed_seat is not None else 0
        self._log = _RoundLog() if render_mode is not None else None
        self._pending_reward = 0.0
        self._paid = 0.0  # the learner's rewards in this episode, the pending one included
        self._ended = False
        self._stopped = False  # an opponent's move failed: the table is not at the learner's turn

    @property
    def num_players(self) -> int:
        """Players at the table (``rules.num_players``)."""
        return self.rules.num_players

    @property
    def game(self) -> LlamaGame | None:
        """The engine of the current episode (``None`` before the first reset, and after a
        reset that an opponent's ``reset`` failed)."""
        return self.table.game if self.table is not None else None

    # ------------------------------------------------------------------ gym API

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict]:
        """Deal a new game, draw the learner's seat (unless ``seat`` fixed it) and play the
        opponents up to its first turn. ``seed`` seeds the episode's generator (the deals,
        the seat, the opponents' seeds); ``options`` are refused, as the seat, the
        opponents and the rules are arguments of ``gym.make``."""
        if options:  # silently ignored, reset(options={"seat": 2}) looked as if it worked
            raise ValueError(
                f"Llama-v0 takes no reset options, got {sorted(map(str, options))}: the seat, the opponents "
                "and the rules are arguments of gym.make"
            )
        super().reset(seed=None if seed is None else check_seed(seed))  # gymnasium takes True for 1
        self._stopped = True  # until the table is dealt and at the learner's turn (an opponent's reset may raise)
        # Should an opponent's reset raise in deal_table, no game is left: the last one,
        # read from the newly drawn seat, showed an opponent's hand as the learner's.
        self.table = None
        rng = self.np_random
        seat = self.fixed_seat if self.fixed_seat is not None else int(rng.integers(self.rules.num_players))
        if self._log is not None:  # its summaries mark the learner's seat, as the table does
            self._log.you = seat
        table = deal_table(
            rng,
            seat,
            self.opponents,
            rules=self.rules,
            random_first_player=self.random_first_player,
            listener=self._log,
            keys=self._opponent_keys,
        )
        self.seat, self.table = seat, table
        self._ended = False
        self._paid = 0.0
        if self._log is not None:
            self._log.lines.clear()
        # With hand_size=1 an opponent can go out before the learner's first turn: that
        # round's reward is owed to the learner and paid with its first step.
        self._pending_reward = self._reward(self._opponents_move())
        if self.render_mode == "human":
            self.render()
        return self._encode(self.table.game, self.seat), self._info()

    def step(self, action: int) -> tuple[np.ndarray, float, bool, bool, dict]:
        """Play the learner's ``action``, then the opponents up to its next turn; the reward is
        what the rounds that ended pay it (:mod:`llama_env.rewards`). An illegal action
        raises :class:`~llama_env.engine.IllegalActionError`, the game untouched, or with
        ``illegal_action="terminate"`` ends the episode with a penalty."""
        table = self.table
        if table is None:
            raise RuntimeError("call reset() before step()")
        game = table.game
        if self._ended:
            raise RuntimeError("the game is over: call reset() to start a new one")
        if self._stopped:
            raise RuntimeError(
                "the episode stopped where an opponent raised (in its move or its reset): the table is not at "
                "the learner's turn, call reset() to start a new one"
            )
        reward, self._pending_reward = self._pending_reward, 0.0
        if game.game_over:  # it ended before the learner's first turn: nothing to apply
            self._ended = True
            return self._encode(game, self.seat), reward, True, False, self._info()
        log = self._log
        shown = log.lines if log is not None else []
        if log is not None:
            log.lines = []  # the rounds that end from here on
        try:
            result = table.apply(action)  # raises IllegalActionError, nothing changed
        except IllegalActionError as exc:
            if log is not None:
                log.lines = shown  # render() still shows what it showed: nothing happened
            index = action_index(exc.action)
            in_space = index is not None and 0 <= index < NUM_ACTIONS
            if self.illegal_action == "raise" or not in_space:
                self._pending_reward = reward
                if in_space:  # in "raise" mode
                    hint = (
                        ", or make the env with illegal_action='terminate' to end the episode with a penalty "
                        "instead (what check_env and plain PPO need)"
                    )
                elif self.illegal_action == "terminate":
                    hint = "; illegal_action='terminate' ends the episode only for an action of Discrete(9)"
                else:
                    hint = ""
                raise IllegalActionError(
                    f"{exc}. Pick from info['action_mask'] or env.action_masks() (sb3-contrib's MaskablePPO "
                    f"does){hint}",
                    exc.action,
                    exc.legal,
                    seat=exc.seat,
                ) from None
            self._ended = True
            info = self._info()
            info["illegal_action"] = index  # an int however it was passed (np.int64, np.array([3]))
            penalty = illegal_action_reward(self.reward_mode, self.rules.end_score, self._paid)
            return self._encode(game, self.seat), reward + penalty, True, False, info
        if result is not None:
            reward += self._reward([result])
        reward += self._reward(self._opponents_move())
        self._ended = game.game_over
        info = self._info()
        if self.render_mode == "human":
            self.render()
        return self._encode(game, self.seat), reward, game.game_over, False, info

    def _info(self) -> dict[str, Any]:
        info: dict[str, Any] = {"action_mask": self.action_masks(), "seat": self.seat}
        game = self.game
        if game is not None and game.game_over:
            info["scores"] = list(game.scores)
        return info

    def action_masks(self) -> np.ndarray:
        """Boolean mask of the learner's legal actions (all False once the game is over)."""
        mask = np.zeros(NUM_ACTIONS, dtype=bool)
        game = self.game
        if game is not None and not game.game_over and not self._ended and not self._stopped:
            mask[game.legal_actions()] = True
        return mask

    def _opponents_move(self) -> list[RoundResult]:
        """The opponents' moves up to the learner's turn, and the rounds they end. Should
        one of them raise (an illegal answer, a Ctrl-C in a slow search), the table stays
        at that opponent's turn: the episode stops there, or the learner's next step would
        be played at the opponent's seat and its mask would show the opponent's moves."""
        self._stopped = True
        results = self.table.advance() if self.table is not None else []
        self._stopped = False
        return results

    def render(self) -> Any:  # str for 'ansi', an array for 'rgb_array', None for 'human'
        """The table as the learner sees it: text with the results of the rounds that ended
        in the last step (returned for ``"ansi"``, printed for ``"human"``), or a picture
        for ``"rgb_array"`` (the ``web`` extra; every hand shows once the game is over)."""
        if self.render_mode is None:
            gym.logger.warn("render() called without a render_mode; pass render_mode='ansi', 'human' or 'rgb_array'")
            return None
        if self.render_mode == "rgb_array":
            game = self.game
            if game is None:
                raise RuntimeError("call reset() before render()")
            return rasterize(table_svg(game, self.seat, reveal=game.game_over))
        game = self.game
        if game is None:
            text = "The table is empty: call reset() first."
        else:
            parts = list(self._log.lines) if self._log is not None else []
            if not game.game_over:
                parts.append(render_table(game, self.seat))
            text = "\n".join(parts)
        if self.render_mode == "human":
            print(text)
            return None
        return text

    # ------------------------------------------------------------------ books

    def _reward(self, results: list[RoundResult]) -> float:
        """The learner's reward from the rounds that ended (:mod:`llama_env.rewards`),
        counted in what the episode paid."""
        seat, mode = self.seat, self.reward_mode
        reward = float(sum(rewards_for(r, mode)[seat] for r in results))
        self._paid += reward
        return reward


class _RoundLog(TableListener):
    """Collects the round summaries shown by ``render()`` since the learner's last move,
    with the learner's seat (``you``, set at each reset) marked."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.you: int | None = None

    def on_round_end(self, table: Table, result: RoundResult) -> None:
        self.lines.append(render_round_summary(result, you=self.you))


def _rules_from_json(rules: Any) -> Any:
    """``rules`` as a :class:`Rules` where it is a mapping of its fields: the form
    gymnasium's ``EnvSpec.to_json`` writes, so that a spec logged as JSON makes the env
    again (anything else is left to :meth:`Rules.given` to take or refuse)."""
    if not isinstance(rules, Mapping):
        return rules
    names = {f.name for f in fields(Rules)}
    unknown = sorted(str(k) for k in set(rules) - names)
    if unknown or "num_players" not in rules:
        problem = f"unknown field {unknown[0]!r}" if unknown else "num_players is missing"
        raise TypeError(
            f"rules as a mapping has the fields of llama_env.Rules ({', '.join(sorted(names))}), num_players "
            f"among them: {problem} in {dict(rules)!r}"
        )
    return Rules(**rules)


def _build_opponents(opponents: Any, num_players: int) -> tuple[list[Agent], list[SeedKey]]:
    """One agent per other seat from an agent, a name or spec, or a sequence of them,
    and each one's own seed (:func:`~llama_env.agent.seed_keys`: a spec's ``seed=``,
    which :func:`deal_table` mixes into the seed of each episode's reset, but for a
    population's member: :func:`~llama_env.agent.seat_for_game`).

    A name builds one agent per seat; an agent object is seated as it is, at every seat
    it is given for (a policy updated in place plays its newest weights), so the seats,
    and every env made with it, share its random state (docs/env.md says so); a
    population seats a member of its own at each seat of each game (:func:`deal_table`).
    A 1-D array is the list of its entries; bytes are refused (``b"random"`` was a
    sequence of six opponents, one per byte)."""
    k = num_players - 1
    if isinstance(opponents, np.ndarray):
        if opponents.ndim > 1:
            raise ValueError(
                f"opponents: an array of them must be 1-D, one per other seat, got shape {opponents.shape}"
            )
        opponents = opponents.tolist()  # numpy's strings as str, its objects as they are
    if isinstance(opponents, (bytes, bytearray, memoryview)):
        raise ValueError(
            "opponents must be an agent, a registered name or spec (a str), or an AgentSpec (or its JSON form "
            f'{{"name": ..., "params": {{...}}}}), or a list (or 1-D array) of {"one" if k == 1 else k} of them; '
            f"got {brief(opponents)} ({type(opponents).__name__})"
        )
    if isinstance(opponents, str) or not isinstance(opponents, Sequence):
        spec = [opponents] * k
    else:
        spec = list(opponents)
        if len(spec) != k:
            raise ValueError(f"opponents: {num_players} players need {k} opponents, got {len(spec)}")
    try:
        given = [_spec_from_json(o) for o in spec]
    except TypeError as exc:  # a config error: name the option, as for the others
        raise ValueError(f"opponents: {exc}") from exc
    agents = []
    for i, opponent in enumerate(given):  # else the table refuses it only at the first reset
        where = f"{i + 1} seat{'s' if i else ''} to the learner's left"
        try:
            agent = resolve(opponent)
        except (TypeError, ValueError) as exc:  # a name's or spec's error names the agent, an object's its seat
            seat = "" if isinstance(opponent, (str, AgentSpec)) else f"{where}: "
            raise ValueError(f"opponents: {seat}{exc}") from exc
        try:
            check_obs_version(getattr(agent, "obs_version", 0))
        except ValueError as exc:
            raise ValueError(f"opponents: {agent_label(agent)!r}, {where}: {exc}") from None
        agents.append(agent)
    return agents, seed_keys(given)


def _spec_from_json(opponent: Any) -> Any:
    """An :class:`AgentSpec` where ``opponent`` is a mapping without ``act``: the form
    gymnasium's ``EnvSpec.to_json`` writes an AgentSpec in (``{"name": ..., "params":
    {...}}``), so that a spec logged as JSON makes the env again."""
    if not isinstance(opponent, Mapping) or callable(getattr(opponent, "act", None)):
        return opponent
    name, params = opponent.get("name"), opponent.get("params", {})
    if set(opponent) - {"name", "params"} or not isinstance(name, str) or not isinstance(params, Mapping):
        raise TypeError(
            'an opponent given as a mapping is an AgentSpec\'s JSON form, {"name": str, "params": {...}}; '
            f"got {dict(opponent)!r}"
        )
    return AgentSpec(name, dict(params))


def make_v1(**kwargs: Any) -> LlamaEnv:
    """``Llama-v1``: ``Llama-v0`` with observation version 1. An ``obs_version`` other
    than 1 is refused: ``gym.make("Llama-v1", obs_version=0)`` played version 0."""
    if check_obs_version(kwargs.get("obs_version", 1)) != 1:  # True and 1.0 compare equal to 1
        raise ValueError(
            f"Llama-v1 is observation version 1, got obs_version={kwargs['obs_version']!r}: for version 0 "
            'make "Llama-v0"'
        )
    kwargs["obs_version"] = 1
    return LlamaEnv(**kwargs)
