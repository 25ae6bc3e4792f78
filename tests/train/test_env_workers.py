"""The vec env split between processes (the sb3 option ``env_workers``) plays exactly the
games its shares would play alone, keeps every promise of the vec envs (masks, rewards,
seeds, refusals), and a training run with it replays on the same seed.

Each share of a :class:`SplitVecEnv` is a vec env of its own class, seeded by
:func:`worker_seed`; so the split env must give, step for step, what those vec envs give
side by side in one process. That one comparison holds the plumbing (actions out,
observations, rewards, ends, infos and masks back, in slot order) to the single-process
envs, which tests/train/test_vec_env.py holds to the rules.
"""

from __future__ import annotations

import os
import signal

import numpy as np
import pytest

from agents.ppo import DEFAULT_MODEL, load_actor
from llama_env.engine import IllegalActionError, Rules
from llama_env.observation import encode
from llama_env.table import AgentError
from train.training import train
from train.training.config import TrainConfig
from train.training.presets import PRESETS
from train.training.sb3.vec_env import ActorPolicy, BatchedLlamaVecEnv, ScalarLlamaVecEnv
from train.training.sb3.workers import SplitVecEnv, make_vec_env, worker_seed

ENVS = [ScalarLlamaVecEnv, BatchedLlamaVecEnv]
ARGS = dict(players=[2, 3, 4, 5, 6], opponents={"heuristic": 1, "random": 1, "self": 1, "past": 1})


@pytest.fixture
def split():
    """Makes split envs and closes them (their workers) after the test."""
    made: list[SplitVecEnv] = []

    def make(cls, num_envs, workers=2, **kw):
        env = SplitVecEnv(cls, num_envs, workers, **kw)
        made.append(env)
        return env

    yield make
    for env in made:
        env.close()
    assert all(not p.is_alive() for env in made for p in env._procs)


def actor():
    return load_actor(DEFAULT_MODEL)


def pick(rng: np.random.Generator, masks: np.ndarray) -> np.ndarray:
    return np.array([rng.choice(np.flatnonzero(m)) for m in masks])


@pytest.mark.parametrize("cls", ENVS)
def test_a_split_env_plays_its_shares_games_exactly(cls, split):
    a = actor()
    env = split(cls, 23, 3, seed=4, **ARGS)
    assert env.shares == [8, 8, 7]
    alone = [cls(n, seed=worker_seed(4, k), **ARGS) for k, n in enumerate(env.shares)]
    env.set_policy("self", ActorPolicy(a, np.random.default_rng(99)))
    env.set_past_policies([ActorPolicy(a, np.random.default_rng(98))])
    for k, e in enumerate(alone):  # each share samples the policies from its own generator
        rng = np.random.default_rng([worker_seed(4, k), 7])
        e.set_policy("self", ActorPolicy(a, rng))
        e.set_past_policies([ActorPolicy(a, rng)])
    obs = env.reset()
    np.testing.assert_array_equal(obs, np.concatenate([e.reset() for e in alone]))
    rng = np.random.default_rng(0)
    ended = 0
    for _ in range(50):  # each of the 23 slots ends several games and deals again
        masks = env.action_masks()
        np.testing.assert_array_equal(masks, np.concatenate([e.action_masks() for e in alone]))
        actions = pick(rng, masks)
        got = env.step(actions)
        b = np.cumsum([0, *env.shares])
        parts = [e.step(actions[b[k] : b[k + 1]]) for k, e in enumerate(alone)]
        for i in range(3):
            np.testing.assert_array_equal(got[i], np.concatenate([p[i] for p in parts]))
        want_infos = [info for p in parts for info in p[3]]
        assert len(got[3]) == len(want_infos) == 23
        for x, y in zip(got[3], want_infos, strict=True):
            assert x.keys() == y.keys()
            for key in x:
                if key == "episode":
                    assert {k: v for k, v in x[key].items() if k != "t"} == {
                        k: v for k, v in y[key].items() if k != "t"
                    }
                else:
                    np.testing.assert_array_equal(x[key], y[key])
        ended += int(got[2].sum())
    assert ended > 20
    assert [g.to_dict() for g in env.games] == [g.to_dict() for e in alone for g in e.games]
    assert env.seats.tolist() == [s for e in alone for s in e.seats.tolist()]
    assert env.seat_kinds == [k for e in alone for k in e.seat_kinds]
    assert env.env_time > 0


@pytest.mark.parametrize("cls", ENVS)
def test_masks_and_observations_are_the_learners(cls, split):
    env = split(cls, 10, **ARGS, seed=2)
    env.set_policy("self", ActorPolicy(actor(), np.random.default_rng(0)))
    obs = env.reset()
    rng = np.random.default_rng(1)
    for _ in range(30):
        masks = np.stack(env.env_method("action_masks"))
        for i, g in enumerate(env.games):
            seat = int(env.seats[i])
            assert g.current_player == seat and np.flatnonzero(masks[i]).tolist() == g.legal_actions()
            np.testing.assert_array_equal(obs[i], encode(g, seat))
        obs, *_ = env.step(pick(rng, masks))


def test_the_same_seed_replays_and_reseeding_restarts(split):
    a, b = (split(ScalarLlamaVecEnv, 9, seed=5, players=[2, 4], opponents="heuristic") for _ in range(2))
    oa, ob = a.reset(), b.reset()
    np.testing.assert_array_equal(oa, ob)
    for _ in range(20):
        actions = pick(np.random.default_rng(0), a.action_masks())
        for x, y in zip(a.step(actions)[:3], b.step(actions)[:3], strict=True):
            np.testing.assert_array_equal(x, y)
    c = split(ScalarLlamaVecEnv, 9, seed=6, players=[2, 4], opponents="heuristic")
    c.reset()
    assert [g.to_dict() for g in a.games] != [g.to_dict() for g in c.games]
    c.seed(5)
    np.testing.assert_array_equal(c.reset(), oa)


class FailingPolicy:
    """A ``"self"`` policy that fails in the workers (not in the trainer's process ``pid``)."""

    def __init__(self, pid: int) -> None:
        self.pid = pid

    def __call__(self, observations: np.ndarray, masks: np.ndarray) -> np.ndarray:
        if os.getpid() != self.pid:
            raise ValueError("the policy failed")
        return masks.argmax(axis=1)


def test_errors_in_a_worker_reach_the_trainer_and_the_env_goes_on(split):
    env = split(ScalarLlamaVecEnv, 6, 3, seed=0, players=2, opponents="self", seat=1)
    env.set_policy("self", FailingPolicy(os.getpid()))
    with pytest.raises(AgentError, match="agent 'self' at seat 0 in act_batch: ValueError: the policy failed"):
        env.reset()
    env.set_policy("self", ActorPolicy(actor(), np.random.default_rng(0)))
    env.reset()  # every worker answered: the pipes are still in step
    env.step(pick(np.random.default_rng(0), env.action_masks()))


def test_an_illegal_action_is_refused_before_any_share_moves(split):
    """The shares before the one holding the illegal action had stepped (their games a
    move further than the masks handed out), and the error named a slot of its share."""
    env = split(ScalarLlamaVecEnv, 6, 3, seed=0, players=2, opponents="random")
    env.reset()
    masks = env.action_masks()
    games = [g.to_dict() for g in env.games]
    bad = pick(np.random.default_rng(0), masks)
    bad[5] = int(np.flatnonzero(~masks[5])[0])  # an illegal move in the last worker's share
    with pytest.raises(IllegalActionError, match=r"^env 5, seat \d: action \d \(.*\) is illegal"):
        env.step(bad)
    assert [g.to_dict() for g in env.games] == games
    env.step(pick(np.random.default_rng(0), masks))


def test_a_policy_opponent_needs_a_policy_that_pickles(split):
    env = split(ScalarLlamaVecEnv, 4, seed=0, players=2, opponents="self", seat=1)
    with pytest.raises(ValueError, match="does not pickle.*ActorPolicy"):
        env.set_policy("self", lambda obs, masks: masks.argmax(axis=1))
    with pytest.raises(RuntimeError, match="set_policy"):
        env.reset()


def test_spawned_workers_know_the_opponents_registered_at_run_time(split, monkeypatch):
    """Off Linux the workers are spawned: they import the package afresh and knew no
    opponent registered in a notebook or a script ("unknown agent")."""
    from llama_env.agent import _REGISTRY, register
    from train.training.sb3 import workers

    class Lowest:  # defined here, as a notebook defines it: it travels by value
        def act(self, observation, action_mask):
            return int(np.flatnonzero(action_mask)[0])

    monkeypatch.setattr(workers.sys, "platform", "darwin")
    register("lowest_at_run_time")(Lowest)
    try:
        env = split(ScalarLlamaVecEnv, 4, seed=0, players=2, opponents={"lowest_at_run_time": 1.0})
        assert [p.__class__.__name__ for p in env._procs] == ["SpawnProcess"]
        env.reset()
        for _ in range(20):
            env.step(pick(np.random.default_rng(0), env.action_masks()))
    finally:
        del _REGISTRY["lowest_at_run_time"]


def test_a_sigterm_to_the_process_group_is_the_trainers_to_handle(split):
    """A forked worker inherited the trainer's SIGTERM handler: a SIGTERM to the whole
    group (a job scheduler) printed a traceback from every worker."""
    import time

    env = split(ScalarLlamaVecEnv, 4, seed=0, players=2, opponents="random")
    env.reset()
    os.kill(env._procs[0].pid, signal.SIGTERM)
    time.sleep(0.2)
    assert env._procs[0].is_alive()
    env.step(pick(np.random.default_rng(0), env.action_masks()))  # still in step


def test_a_dead_worker_is_named_with_how_it_ended(split):
    """Killed as the system kills a process out of memory, and not yet reaped when its
    pipe closes: the message waits for the exit and names the signal."""
    env = split(ScalarLlamaVecEnv, 4, seed=0, players=2, opponents="random")
    env.reset()
    os.kill(env._procs[0].pid, signal.SIGKILL)
    ended = r"env worker 1 stopped \(killed by SIGKILL, most often the system out of memory\)"
    with pytest.raises(RuntimeError, match=ended):
        env.step(pick(np.random.default_rng(0), env.action_masks()))


@pytest.mark.parametrize(
    "kw, match",
    [
        ({"num_envs": 1}, r"num_envs \(1\) must be at least the number of env workers \(2\)"),
        ({"workers": 1}, "at least 2 workers"),
        ({"players": [7]}, "players must be a table size 2..6"),
        ({"reward": "points"}, "reward"),
        ({"seed": None}, "seed must be a non-negative integer, got None"),
        ({"workers": True}, "at least 2 workers, got True"),
        ({"num_envs": 4.0}, r"num_envs \(4.0\) must be at least"),
    ],
)
def test_bad_arguments_name_the_problem(kw, match):
    args = dict(num_envs=4, workers=2, players=2, opponents="random")
    args.update(kw)
    with pytest.raises(ValueError, match=match):
        SplitVecEnv(ScalarLlamaVecEnv, args.pop("num_envs"), args.pop("workers"), **args)


def test_numpy_integers_size_a_split_env(split):
    env = split(ScalarLlamaVecEnv, np.int64(5), np.int64(2), seed=np.int64(0), players=2, opponents="random")
    assert env.num_envs == 5 and env.shares == [3, 2]


def test_a_closed_split_env_says_so(split):
    """A step or reset after close() was zip()'s 'argument 2 is longer' ValueError."""
    env = split(ScalarLlamaVecEnv, 4, 2, seed=0, players=2, opponents="random")
    env.reset()
    masks = env.action_masks()
    env.close()
    closed = r"the vec env is closed \(its env workers stopped\): make a new one"
    with pytest.raises(RuntimeError, match=closed):
        env.step(masks.argmax(axis=1))
    with pytest.raises(RuntimeError, match=closed):
        env.reset()


def test_make_vec_env_picks_the_engine_per_worker():
    env = make_vec_env("auto", 2, 512, players=(2,), opponents="random", rules=Rules())
    try:
        assert isinstance(env, SplitVecEnv) and env.env_class is BatchedLlamaVecEnv  # 256 games a worker
    finally:
        env.close()
    env = make_vec_env("auto", 4, 512, players=(2,), opponents="random")
    try:
        assert env.env_class is ScalarLlamaVecEnv  # 128 a worker: below the batch's break-even
    finally:
        env.close()
    assert isinstance(make_vec_env("scalar", 1, 8, players=(2,), opponents="random"), ScalarLlamaVecEnv)
    for bad in (0, 257, True, 2.0):
        with pytest.raises(ValueError, match="config key 'env_workers' must be an int from 1 to 256"):
            TrainConfig(**{**PRESETS["smoke"], "options": {"env_workers": bad}})


def test_a_run_with_env_workers_replays_on_the_same_seed(tmp_path):
    base = {**PRESETS["smoke"], "run_dir": str(tmp_path), "eval_every": 0}
    base["opponents"] = "heuristic:1,self:1,past:1"
    base["options"] = {"tensorboard": False, "env_workers": 2}
    results = [train(TrainConfig(**{**base, "run_name": name})) for name in ("a", "b")]
    assert all(r.num_timesteps >= base["total_timesteps"] for r in results)
    a, b = (load_actor(r.model_path) for r in results)
    for (wa, ba), (wb, bb) in zip(a.layers, b.layers, strict=True):
        np.testing.assert_array_equal(wa, wb)
        np.testing.assert_array_equal(ba, bb)
