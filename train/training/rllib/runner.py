"""A leaner env runner for the RLlib trainer: the same games, without RLlib's per-step bookkeeping.

RLlib's :class:`MultiAgentEnvRunner` records every step of every game into a
``MultiAgentEpisode`` (its lookback buffers, validation, per-step metrics and its two
connector pipelines), and on two cores that bookkeeping, not the game, took about three
quarters of the sampling time. :class:`LlamaEnvRunner` keeps everything else of it (the
same :class:`~train.training.rllib.env.LlamaMultiAgentEnv` games in its vector env, the
module, its weights' sync, checkpoints, metrics), and replaces only the sampling itself
(RLlib's private ``_sample``, overridden in :mod:`train.training.rllib._internals`, the one place
that knows RLlib's internals):

* every env waits for one action (the env only ever asks the learning seat whose turn
  it is), so one batched forward pass of the module serves all envs, and the action is
  drawn from the masked logits as RLlib's categorical distribution draws it;
* each learning seat's moves are kept in plain lists and become one
  ``SingleAgentEpisode`` per seat and chunk (tagged with the seat's agent id and the
  shared module's id, the layout RLlib's learner connectors split a multi-agent episode
  into), so the learner sees what it would see from RLlib's runner: the same observations,
  actions, rewards, log-probabilities and action-distribution inputs, per seat;
* a chunk that ends mid-game is cut as RLlib cuts one: its last observation bootstraps
  the value. A seat that has moved but not yet seen the outcome keeps that move for the
  next chunk (its reward is not known yet), and so do the moves beyond the steps asked
  for, as far as the games still running hold them: a sample returns that many steps,
  all with known rewards, or a few more when a game that has just ended (whose moves
  all go) brings more than the running games can hold over;
* RLlib builds every env of a vector from one context, so on the first deal the runner
  gives each env its own stream of games and of its opponents' play, from the run's env
  seed and its worker index.

Self-play is unchanged: every learning seat of a game learns. Metrics (steps sampled per
agent and module, episode returns and lengths) are logged under RLlib's names, once per
sample instead of once per step.
"""

from __future__ import annotations

import time
import uuid
from collections import defaultdict
from typing import Any

import numpy as np
import torch
from ray.rllib.core.columns import Columns
from ray.rllib.env.single_agent_episode import SingleAgentEpisode
from ray.rllib.utils.metrics import (
    NUM_AGENT_STEPS_SAMPLED,
    NUM_AGENT_STEPS_SAMPLED_LIFETIME,
    NUM_ENV_STEPS_SAMPLED,
    NUM_ENV_STEPS_SAMPLED_LIFETIME,
    NUM_EPISODES,
    NUM_EPISODES_LIFETIME,
    NUM_MODULE_STEPS_SAMPLED,
    NUM_MODULE_STEPS_SAMPLED_LIFETIME,
)

from train.training.rllib._internals import OwnSampling
from train.training.rllib.env import SHARED_POLICY, LlamaMultiAgentEnv

__all__ = ["LlamaEnvRunner"]


class _Seat:
    """One learning seat's moves since its current chunk began."""

    __slots__ = ("obs", "actions", "rewards", "logp", "logits", "t_started")

    def __init__(self, obs: dict[str, np.ndarray], t_started: int = 0) -> None:
        self.obs = [obs]
        self.actions: list[int] = []
        self.rewards: list[float] = []
        self.logp: list[float] = []
        self.logits: list[np.ndarray] = []
        self.t_started = t_started

    def after(self, n: int) -> _Seat:
        """The same seat from its ``n``-th move on (a chunk's continuation)."""
        rest = _Seat(self.obs[n], self.t_started + n)
        rest.obs = self.obs[n:]
        rest.actions = self.actions[n:]
        rest.rewards = self.rewards[n:]
        rest.logp = self.logp[n:]
        rest.logits = self.logits[n:]
        return rest

    def waiting(self) -> bool:
        """It has moved and not yet seen the outcome (no reward, no next observation)."""
        return len(self.actions) == len(self.obs)


class _Game:
    """One env's game in progress: its learning seats and whose turn it is."""

    __slots__ = ("id_", "seats", "to_act", "started", "returns")

    def __init__(self, obs: dict[str, dict[str, np.ndarray]]) -> None:
        self.id_ = uuid.uuid4().hex
        self.seats: dict[str, _Seat] = {}
        self.to_act = ""
        self.started = time.perf_counter()
        self.returns: dict[str, float] = defaultdict(float)
        self.observe(obs, {})

    def observe(self, obs: dict[str, dict[str, np.ndarray]], rewards: dict[str, float]) -> int:
        """Record the env's answer; the number of moves whose outcome it completed."""
        completed = 0
        for aid, o in obs.items():
            seat = self.seats.get(aid)
            if seat is None:
                self.seats[aid] = _Seat(o)  # a reward before a seat's first move has no move to pay
            else:
                r = float(rewards.get(aid, 0.0))
                seat.rewards.append(r)
                seat.obs.append(o)
                self.returns[aid] += r
                completed += 1
            self.to_act = aid
        return completed


def _deal(env: LlamaMultiAgentEnv, seed: int | None = None) -> _Game:
    """A new game on ``env`` (dealt again if it ended before any learning seat's turn,
    which only a one-card hand can do); ``seed`` reseeds the env's generator first."""
    while True:
        obs, _ = env.reset(seed=seed)
        seed = None
        if obs:
            return _Game(obs)


def _episode(game_id: str, aid: str, seat: _Seat, n: int, terminated: bool) -> SingleAgentEpisode:
    """The seat's first ``n`` moves as an episode chunk of the shared module, in numpy
    arrays from the start (what ``SingleAgentEpisode.to_numpy`` makes of lists, for a
    fifth of the time)."""
    obs = seat.obs[: n + 1]
    fields: dict[str, Any] = {  # Ray's annotations ask for lists; it takes arrays as they are
        "agent_id": aid,
        "module_id": SHARED_POLICY,
        "multi_agent_episode_id": game_id,
        "observations": {key: np.stack([o[key] for o in obs]) for key in obs[0]},
        "infos": [{} for _ in obs],
        "actions": np.asarray(seat.actions[:n]),
        "rewards": np.asarray(seat.rewards[:n]),
        "extra_model_outputs": {
            Columns.ACTION_LOGP: np.asarray(seat.logp[:n]),
            Columns.ACTION_DIST_INPUTS: np.stack(seat.logits[:n]),
        },
        "terminated": terminated,
        "t_started": seat.t_started,
        "len_lookback_buffer": 0,
    }
    return SingleAgentEpisode(f"{game_id}-{aid}", **fields)


class LlamaEnvRunner(OwnSampling):
    """RLlib's multi-agent env runner with a batched sampling for the Llama env (see the module docstring)."""

    def __init__(self, config: Any, **kwargs: Any) -> None:
        super().__init__(config, **kwargs)
        self._games: list[_Game] = []
        self._seeded = False
        self._done_games: list[tuple[int, float, float, dict[str, float], dict[str, int]]] = []
        # the local runner holds no env when remote runners sample
        self._llama_envs: list[LlamaMultiAgentEnv] = [e.unwrapped for e in getattr(self.env, "envs", None) or []]

    # ------------------------------------------------------------------ sampling

    def sample_episodes(
        self,
        *,
        num_timesteps: int | None,
        num_episodes: int | None,
        explore: bool,
        random_actions: bool,
        force_reset: bool,
    ) -> list[SingleAgentEpisode]:
        if not self._llama_envs:
            raise ValueError(f"{self} has no env to sample from")
        if force_reset or num_episodes is not None or self.needs_reset:
            self._reset_games()
        if num_episodes is not None:
            self.needs_reset = True
        module = self.module[SHARED_POLICY]  # type: ignore[index]
        done: list[SingleAgentEpisode] = []
        finished = 0
        ready = sum(len(s.actions) - s.waiting() for g in self._games for s in g.seats.values())
        while (num_timesteps is not None and ready < num_timesteps) or (
            num_episodes is not None and finished < num_episodes
        ):
            games = self._games
            current = [g.seats[g.to_act].obs[-1] for g in games]
            actions, logp, logits = self._act(module, current, explore, random_actions)
            for i, (game, env) in enumerate(zip(games, self._llama_envs, strict=True)):
                aid = game.to_act
                seat = game.seats[aid]
                seat.actions.append(int(actions[i]))
                seat.logp.append(float(logp[i]))
                seat.logits.append(logits[i])
                obs, rewards, terminateds, _, _ = env.step({aid: int(actions[i])})
                ready += game.observe(obs, rewards)
                if terminateds["__all__"]:
                    finished += 1
                    done.extend(self._finish(game))
                    games[i] = _deal(env)
        episodes = done
        if num_timesteps is not None:
            # the steps asked for (PPO's minibatches divide the batch it asked for): the moves
            # over that carry on into the next sample, like unanswered ones, as far as the running
            # games hold them (a game that has just ended goes whole: at times a few more)
            excess = ready - num_timesteps
            for game in self._games:
                chunks, excess = self._cut(game, excess)
                episodes.extend(chunks)
        # with num_episodes, whole games only: the ones still running are dropped (the next call deals anew)
        self._log_steps(episodes, finished)
        return episodes

    def _reset_games(self) -> None:
        seeds: list[int | None] = [None] * len(self._llama_envs)
        if not self._seeded:
            # RLlib builds every env of a vector from one EnvContext, so they would all
            # draw the same games: the first deal gives each env a stream of its own,
            # from the run's env seed (which a resumed session changes) and the runner
            seed = int(self.config.env_config.get("seed", 0))
            state = np.random.SeedSequence([seed, self.worker_index or 0]).generate_state(len(seeds), np.uint64)
            seeds = [int(x) for x in state]
            self._seeded = True
        self._games = [_deal(env, s) for env, s in zip(self._llama_envs, seeds, strict=True)]
        self.needs_reset = False

    def _act(
        self, module: Any, observations: list[dict[str, np.ndarray]], explore: bool, random_actions: bool
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Actions, their log-probabilities and the masked logits for a batch of observations."""
        obs = torch.from_numpy(np.stack([o["observation"] for o in observations]))
        mask = torch.from_numpy(np.stack([o["action_mask"] for o in observations]))
        with torch.no_grad():
            if random_actions:  # uniform over the legal actions
                logits = torch.where(mask > 0, 0.0, float(torch.finfo(torch.float32).min))
            else:
                batch = {Columns.OBS: {"observation": obs, "action_mask": mask}}
                out = module.forward_exploration(batch) if explore else module.forward_inference(batch)
                logits = out[Columns.ACTION_DIST_INPUTS]
            dist = torch.distributions.Categorical(logits=logits)
            actions = dist.sample() if explore or random_actions else torch.argmax(logits, dim=-1)
            logp = dist.log_prob(actions)
        return actions.numpy(), logp.numpy(), logits.numpy()

    def _finish(self, game: _Game) -> list[SingleAgentEpisode]:
        """A finished game: each learning seat's last chunk, ending in the game's end."""
        steps = {aid: s.t_started + len(s.actions) for aid, s in game.seats.items()}  # over all its chunks
        returns = dict(game.returns)
        self._done_games.append(
            (sum(steps.values()), sum(returns.values()), time.perf_counter() - game.started, returns, steps)
        )
        return [
            _episode(game.id_, aid, seat, len(seat.actions), True) for aid, seat in game.seats.items() if seat.actions
        ]

    def _cut(self, game: _Game, excess: int) -> tuple[list[SingleAgentEpisode], int]:
        """A running game's chunks so far, cut as RLlib cuts one: each seat carries on from
        its last observation, keeping a move whose outcome it has not seen, and up to
        ``excess`` more moves; the chunks and the excess left."""
        episodes = []
        for aid, seat in game.seats.items():
            n = len(seat.actions) - seat.waiting()
            extra = min(excess, n)
            n -= extra
            excess -= extra
            if n > 0:
                episodes.append(_episode(game.id_, aid, seat, n, False))
            game.seats[aid] = seat.after(n)
        return episodes, excess

    # ------------------------------------------------------------------ metrics

    def _log_steps(self, episodes: list[SingleAgentEpisode], finished: int) -> None:
        """The steps of the episodes returned, not the moves made in this call: RLlib
        samples again until the runners' step counts reach the train batch, and the moves
        carried over from the last sample make a call return more steps than it makes."""
        per_agent: dict[str, int] = defaultdict(int)
        for e in episodes:
            per_agent[str(e.agent_id)] += len(e)
        total = sum(per_agent.values())
        m = self.metrics
        m.log_value(NUM_ENV_STEPS_SAMPLED, total, reduce="sum")
        m.log_value(NUM_ENV_STEPS_SAMPLED_LIFETIME, total, reduce="lifetime_sum", with_throughput=True)
        m.log_value(NUM_EPISODES, finished, reduce="sum")
        m.log_value(NUM_EPISODES_LIFETIME, finished, reduce="lifetime_sum")
        for aid, n in per_agent.items():
            m.log_value((NUM_AGENT_STEPS_SAMPLED, aid), n, reduce="sum")
            m.log_value((NUM_AGENT_STEPS_SAMPLED_LIFETIME, aid), n, reduce="lifetime_sum")
        m.log_value((NUM_MODULE_STEPS_SAMPLED, SHARED_POLICY), total, reduce="sum")
        m.log_value((NUM_MODULE_STEPS_SAMPLED_LIFETIME, SHARED_POLICY), total, reduce="lifetime_sum")

    def get_metrics(self) -> Any:
        # RLlib smooths episode metrics over a window of the last games, so only the
        # last window's worth of games can change them (logging each costs 0.3 ms)
        window = -(-self.config.metrics_num_episodes_for_smoothing // (self.config.num_env_runners or 1))
        for length, ret, seconds, returns, steps in self._done_games[-window:]:
            self.log_episode(length, ret, seconds, returns, {SHARED_POLICY: ret}, steps)
        self._done_games.clear()
        return self.metrics.reduce()
