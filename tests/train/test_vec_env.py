"""The training vec envs apply the rules, observations and rewards of the Gymnasium env,
and give MaskablePPO correct masks.

Both vec envs (the batched one on ``llama_env.batch`` and the scalar one on the engine)
are held to what can fail in either: the masks are the learner's legal actions and the
observations its encoding, every seat kind and table size is played, episodes end and
their rewards add up in every reward mode, a seed replays the same games, bad moves and
bad arguments are refused. The scalar env deals as ``Llama-v0`` deals, so it must replay
the gym env exactly on the same generator; the batched env deals from its batch's own
generator, so it is held to the scalar env's statistics instead.
"""

from __future__ import annotations

import copy

import numpy as np
import pytest
from conftest import LookedMembers
from sb3_contrib.common.maskable.utils import get_action_masks, is_masking_supported

import agents
from llama_env.engine import NUM_ACTIONS, IllegalActionError, Rules
from llama_env.gym_env import LlamaEnv
from llama_env.observation import OBS_SIZE, decode, encode
from llama_env.rewards import game_rewards
from train.training.sb3.vec_env import (
    BatchedLlamaVecEnv,
    LlamaVecEnv,
    ScalarLlamaVecEnv,
    table_shares,
    vec_env_class,
)

ENVS = [BatchedLlamaVecEnv, ScalarLlamaVecEnv]


class FirstLegal:
    """A deterministic opponent: the lowest legal action."""

    def act(self, observation: np.ndarray, action_mask: np.ndarray) -> int:
        return int(np.flatnonzero(action_mask)[0])


def random_policy(seed: int):
    rng = np.random.default_rng(seed)

    def fn(obs: np.ndarray, masks: np.ndarray) -> np.ndarray:
        assert obs.shape == (len(masks), OBS_SIZE) and obs.dtype == np.float32
        return np.array([rng.choice(np.flatnonzero(m)) for m in masks])

    return fn


def pick(rng: np.random.Generator, masks: np.ndarray) -> np.ndarray:
    return np.array([rng.choice(np.flatnonzero(m)) for m in masks])


def make_env(cls: type[LlamaVecEnv], **kw) -> LlamaVecEnv:
    args = dict(num_envs=12, players=[2, 3, 4, 5, 6], opponents={"random": 1, "self": 1, "past": 1}, seed=3)
    args.update(kw)
    env = cls(**args)
    env.set_policy("self", random_policy(1))
    env.set_past_policies([random_policy(2), random_policy(3)])
    return env


@pytest.mark.parametrize("cls", ENVS)
def test_masks_are_the_learners_legal_actions_and_obs_its_encoding(cls):
    env = make_env(cls)
    assert is_masking_supported(env)
    obs = env.reset()
    rng = np.random.default_rng(0)
    for _ in range(300):
        masks = get_action_masks(env)
        assert masks.shape == (env.num_envs, NUM_ACTIONS) and masks.dtype == bool
        for i, g in enumerate(env.games):
            seat = int(env.seats[i])
            assert not g.game_over and g.current_player == seat
            assert np.flatnonzero(masks[i]).tolist() == g.legal_actions()
            np.testing.assert_array_equal(obs[i], encode(g, seat))
        obs, rews, dones, infos = env.step(pick(rng, masks))
        assert obs.shape == (env.num_envs, OBS_SIZE) and rews.shape == dones.shape == (env.num_envs,)


@pytest.mark.parametrize("cls", ENVS)
def test_every_seat_kind_and_table_size_gets_played(cls):
    env = make_env(cls, num_envs=40)
    env.reset()
    sizes = {g.num_players for g in env.games}
    kinds = {k for ks in env.seat_kinds for k in ks if k is not None}
    assert sizes == {2, 3, 4, 5, 6}
    assert {"random", "self", "past#0", "past#1"} <= kinds
    for i in range(env.num_envs):
        assert env.seat_kinds[i][int(env.seats[i])] is None  # the learner's own seat
        assert len(env.seat_kinds[i]) == env.games[i].num_players


@pytest.mark.parametrize("cls", ENVS)
@pytest.mark.parametrize("reward", ["game", "round", "shaped"])
@pytest.mark.parametrize("hand_size", [6, 1])
def test_episodes_end_and_rewards_add_up(cls, reward, hand_size):
    """With one card a hand a round can end before the learner's first turn of a new
    game: its reward is paid at the next step, in the new episode (dropping it, or
    paying a game's end twice, passed at six cards)."""
    env = make_env(cls, reward=reward, num_envs=8, rules=Rules(hand_size=hand_size))
    env.reset()
    rng = np.random.default_rng(1)
    totals = np.zeros(env.num_envs)
    finished = 0
    for _ in range(5000):
        _, rews, dones, infos = env.step(pick(rng, env.action_masks()))
        totals += rews
        for i in np.flatnonzero(dones):
            info = infos[i]
            seat = info["seat"]
            final = decode(info["terminal_observation"])
            assert info["terminal_observation"].shape == (OBS_SIZE,)
            assert final.my_score == info["scores"][seat] and final.num_players == info["num_players"]
            assert max(info["scores"]) >= 40
            assert info["episode"]["r"] == pytest.approx(totals[i], abs=1e-4)
            assert info["win_share"] == game_rewards(info["scores"])[seat]
            if reward == "round":  # minus the points taken plus the markers returned = minus the final score
                assert totals[i] == pytest.approx(-info["scores"][seat])
            else:  # the shaping adds up to nothing over a game
                assert totals[i] == pytest.approx(info["win_share"], abs=1e-5)
            totals[i] = 0.0
            finished += 1
        if finished >= 20:
            break
    assert finished >= 20


@pytest.mark.parametrize("cls", ENVS)
def test_games_that_end_before_the_learners_first_turn(cls):
    """With one card each a round, even a game, can end before the learner moves: the
    step after it reports the end (the learner's action ignored), as Llama-v0 does."""
    env = cls(16, players=[2, 3], opponents="random", seed=5, rules=Rules(end_score=1, hand_size=1))
    env.reset()
    rng = np.random.default_rng(2)
    ended = 0
    for _ in range(200):
        _, rews, dones, infos = env.step(pick_or_any(rng, env.action_masks()))
        for i in np.flatnonzero(dones):
            assert rews[i] == pytest.approx(infos[i]["win_share"])
            ended += 1
    assert ended > 100


def pick_or_any(rng: np.random.Generator, masks: np.ndarray) -> np.ndarray:
    """A legal action, or 0 where a game is over (no legal action: the env ignores it)."""
    return np.array([rng.choice(np.flatnonzero(m)) if m.any() else 0 for m in masks])


@pytest.mark.parametrize("reward", ["game", "round"])
def test_the_scalar_env_matches_the_gym_env_on_the_same_seed(reward):
    """One slot, a fixed seat and a deterministic opponent: the gym env dealt from an
    identically seeded generator gives the same observations, masks, rewards and ends."""
    vec = ScalarLlamaVecEnv(
        1, players=3, opponents={"first": 1.0}, reward=reward, seed=11, seat=1, agents={"first": FirstLegal()}
    )
    gym_env = LlamaEnv(num_players=3, opponents=FirstLegal(), seat=1, reward=reward)
    gym_env._np_random = copy.deepcopy(vec.game_rngs[0])  # same deals; reset(seed=None) keeps it
    obs_v = vec.reset()
    obs_g, info_g = gym_env.reset()
    rng = np.random.default_rng(5)
    episodes = 0
    for _ in range(3000):
        np.testing.assert_array_equal(obs_v[0], obs_g)
        np.testing.assert_array_equal(vec.action_masks()[0], gym_env.action_masks())
        a = int(pick(rng, vec.action_masks())[0])
        obs_v, r_v, d_v, infos = vec.step(np.array([a]))
        obs_g, r_g, term, trunc, info_g = gym_env.step(a)
        assert r_v[0] == pytest.approx(r_g)
        assert bool(d_v[0]) == term and not trunc
        if term:
            np.testing.assert_array_equal(infos[0]["terminal_observation"], obs_g)
            assert infos[0]["scores"] == info_g["scores"]
            episodes += 1
            if episodes == 3:
                break
            obs_g, info_g = gym_env.reset()
    assert episodes == 3


def test_the_scalar_env_seats_a_populations_members_as_the_gym_env_does():
    """Both deal through deal_table, which seats a population's members: the scalar env
    drew them from its own generator as well, so a seeded gym env met other players."""
    vec = ScalarLlamaVecEnv(
        1, players=3, opponents={"pop": 1.0}, seed=11, seat=1, agents={"pop": agents.make("perturbed", size=8)}
    )
    gym_env = LlamaEnv(num_players=3, opponents=agents.make("perturbed", size=8), seat=1)
    gym_env._np_random = copy.deepcopy(vec.game_rngs[0])  # same deals; reset(seed=None) keeps it
    vec.reset()
    gym_env.reset()
    rng = np.random.default_rng(5)
    for _ in range(6):  # games
        members = [[m.params() for m in t.agents if m is not None] for t in (vec.tables[0], gym_env.table)]
        assert members[0] == members[1]
        while not gym_env.game.game_over:
            a = int(pick(rng, vec.action_masks())[0])
            vec.step(np.array([a]))
            gym_env.step(a)
        gym_env.reset()


def _scalar_seen(opponents: str, steps: int = 300) -> list[list[float]]:
    """What the learner of a one-slot scalar env saw (so what its opponent chose) over
    ``steps`` steps, the learner playing its first legal action."""
    vec = ScalarLlamaVecEnv(1, players=2, opponents=opponents, seed=0, seat=0)
    seen = [vec.reset()[0].tolist()]
    for _ in range(steps):
        seen.append(vec.step(np.array([int(np.flatnonzero(vec.action_masks()[0])[0])]))[0][0].tolist())
    return seen


def test_a_specs_own_seed_plays_differently_in_the_scalar_env_as_in_llama_v0():
    """The scalar env's deal_table replaced a spec's own seed with each game's reset seed:
    ``random:seed=1``, ``random:seed=2`` and ``random`` played the very same games, where
    Llama-v0 and evaluation mix it in (and the batched env, which never resets its
    baselines, plays it)."""
    plain, one, two = (_scalar_seen(o) for o in ("random", "random:seed=1", "random:seed=2"))
    assert one != plain and two != plain and one != two
    assert _scalar_seen("random:seed=1") == one  # each repeatably


def _statistics(cls: type[LlamaVecEnv], players: int, steps: int) -> tuple[np.ndarray, np.ndarray]:
    """The win shares and the lengths (learner steps) of the games a fixed learner
    (``greedy``) finishes against the heuristic."""
    import agents

    env = cls(200, players=players, opponents="heuristic", seed=17)
    learner = agents.make("greedy")
    obs = env.reset()
    wins, lengths = [], []
    for _ in range(steps):
        obs, _, dones, infos = env.step(learner.act_batch(obs, env.action_masks()))
        for i in np.flatnonzero(dones):
            wins.append(infos[i]["win_share"])
            lengths.append(infos[i]["episode"]["l"])
    return np.array(wins), np.array(lengths, dtype=np.float64)


@pytest.mark.parametrize("players", [2, 4])
def test_the_batched_env_plays_the_scalar_envs_games(players):
    """Other deals, the same game: a fixed learner's win share and game length agree
    between the two envs within their sampling error."""
    batched, scalar = (_statistics(cls, players, 400) for cls in ENVS)
    for b, s in zip(batched, scalar, strict=True):  # win shares, then lengths
        assert min(b.size, s.size) > 800
        error = np.sqrt(b.var() / b.size + s.var() / s.size)
        assert abs(b.mean() - s.mean()) < 4 * error, (b.mean(), s.mean(), error)


@pytest.mark.parametrize("cls", ENVS)
def test_same_seed_same_games(cls):
    a, b = make_env(cls, seed=9), make_env(cls, seed=9)
    oa, ob = a.reset(), b.reset()
    np.testing.assert_array_equal(oa, ob)
    assert [g.to_dict() for g in a.games] == [g.to_dict() for g in b.games]
    rng_a, rng_b = np.random.default_rng(0), np.random.default_rng(0)
    for _ in range(50):
        sa, sb = a.step(pick(rng_a, a.action_masks())), b.step(pick(rng_b, b.action_masks()))
        for x, y in zip(sa[:3], sb[:3], strict=True):
            np.testing.assert_array_equal(x, y)
    assert [g.to_dict() for g in a.games] == [g.to_dict() for g in b.games]
    c = make_env(cls, seed=10)
    c.reset()
    assert [g.to_dict() for g in a.games] != [g.to_dict() for g in c.games]


def test_a_new_past_pool_leaves_the_games_under_way_their_opponents():
    """The batched env renumbers its players when the pool changes: a game that drew a
    snapshot keeps playing that one; new games draw from the new pool."""
    calls: list[str] = []

    def policy(name: str):
        def fn(obs: np.ndarray, masks: np.ndarray) -> np.ndarray:
            calls.append(name)
            return masks.argmax(axis=1)

        return fn

    env = BatchedLlamaVecEnv(24, players=[2, 4], opponents={"past": 1}, seed=1)
    env.set_policy("self", policy("self"))
    env.set_past_policies([policy("old")])
    env.reset()
    env.set_past_policies([policy("new0"), policy("new1")])
    calls.clear()
    ended = np.zeros(env.num_envs, dtype=bool)
    for _ in range(400):
        _, _, dones, _ = env.step(env.action_masks().argmax(axis=1))
        ended |= dones
        if ended.all():
            break
    assert ended.all()
    assert {"old", "new0", "new1"} <= set(calls)
    assert {k for ks in env.seat_kinds for k in ks if k} <= {"past#0", "past#1"}


@pytest.mark.parametrize("cls", ENVS)
def test_illegal_learner_action_raises(cls):
    env = make_env(cls, num_envs=5)
    env.reset()
    masks = env.action_masks()
    assert (~masks).any(axis=1).all()  # a fresh deal never makes all 9 actions legal
    bad = np.array([int(np.flatnonzero(~m)[0]) for m in masks])
    with pytest.raises(IllegalActionError):
        env.step(bad)


@pytest.mark.parametrize("cls", ENVS)
def test_an_illegal_action_is_refused_before_any_game_moves(cls):
    """The scalar env applied the slots before the illegal one (their opponents never
    moved: the next step played the learner's action at an opponent's seat), the batched
    env the table sizes before it (their rewards lost); the error named no slot, or a
    game of a size group."""
    env = make_env(cls, num_envs=6, players=[2, 3], reward="round")
    env.reset()
    rng = np.random.default_rng(0)
    for _ in range(5):
        env.step(pick(rng, env.action_masks()))
    masks = env.action_masks()
    games, pending = [g.to_dict() for g in env.games], env._pending.copy()
    actions = pick(rng, masks)
    actions[4] = int(np.flatnonzero(~masks[4])[0])  # slot 4: a 3-player game in the batched env
    seat = int(env.seats[4])
    with pytest.raises(IllegalActionError, match=rf"^env 4, seat {seat}: action {actions[4]} \(.*\) is illegal") as err:
        env.step(actions)
    assert err.value.seat == seat
    assert [g.to_dict() for g in env.games] == games
    np.testing.assert_array_equal(env._pending, pending)
    np.testing.assert_array_equal(env.action_masks(), masks)
    actions[3] = actions[5] = 9
    with pytest.raises(IllegalActionError, match=r"^env 3, .* out of range .* \(and 2 more env\(s\)"):
        env.step(actions)
    env.step(pick(rng, masks))  # the env goes on from where it was


@pytest.mark.parametrize("cls", ENVS)
def test_illegal_opponent_action_is_an_error(cls):
    class Cheat:
        def act(self, observation, action_mask):
            return int(np.flatnonzero(np.asarray(action_mask) == 0)[0])

    env = cls(4, players=2, opponents="cheat", agents={"cheat": Cheat()}, seed=0, seat=1)
    with pytest.raises(IllegalActionError, match="agent 'cheat' at seat 0.*: action .* is illegal"):
        env.reset()


@pytest.mark.parametrize("cls", ENVS)
def test_a_population_opponent_is_checked_once_not_at_every_new_game(cls):
    """Seating a member checked all of them at each new game (perturbed's 32: 1.2 -> 4.9 us)."""
    population = agents.make("perturbed", seed=0, size=4)
    population.members = looked = LookedMembers(population.members)
    env = cls(4, players=2, opponents="pop", agents={"pop": population}, seed=0, seat=1)
    env.reset()
    checked, games, rng = looked.looks, 0, np.random.default_rng(0)
    for _ in range(300):
        games += int(env.step(pick(rng, env.action_masks()))[2].sum())
    assert checked > 0 and games > 4 and looked.looks == checked


@pytest.mark.parametrize("cls", ENVS)
@pytest.mark.parametrize("members", [[], ["heuristic"], 7], ids=["empty", "a name", "no list"])
def test_a_population_opponent_with_bad_members_is_refused_at_construction(cls, members):
    """Members are checked once, where the env takes the agent: a population of no agents
    is a ValueError naming it before any game, not an IndexError or a failing act later."""
    population = agents.make("perturbed", seed=0, size=2)
    population.members = members
    with pytest.raises(ValueError, match=r"agent 'perturbed:size=2' is a population \(population = True\): "):
        cls(4, players=2, opponents="pop", agents={"pop": population}, seed=0, seat=1)


@pytest.mark.parametrize("cls", ENVS)
def test_policy_opponent_needs_a_policy(cls):
    env = cls(4, players=2, opponents="self", seed=0, seat=1)
    with pytest.raises(RuntimeError, match="set_policy"):
        env.reset()


@pytest.mark.parametrize("cls", ENVS)
@pytest.mark.parametrize(
    "kw, match",
    [
        ({"num_envs": 0}, "num_envs must be a positive integer, got 0"),
        ({"num_envs": 2.0}, "num_envs must be a positive integer, got 2.0"),
        ({"players": [7]}, r"players must be a table size 2\.\.6 or a sequence of them, got \[7\]"),
        # a float was truncated to another table, a string read digit by digit
        ({"players": (2.7,)}, r"players must be a table size 2\.\.6 or a sequence of them, got \(2\.7,\)"),
        ({"players": "24"}, "players must be a table size 2..6 or a sequence of them, got '24'"),
        ({"players": True}, "players must be a table size 2..6 or a sequence of them, got True"),
        ({"players": []}, r"players must be a table size 2\.\.6 or a sequence of them, got \[\]"),
        ({"opponents": {"random": -1}}, "opponents"),
        ({"reward": "points"}, "reward"),
        (
            {"seat": 3, "players": [2, 4]},
            r"seat must be 'random' or a seat valid at every table size \(0\.\.1\), got 3",
        ),
        ({"seat": True}, "seat must be 'random' or a seat valid at every table size .*, got True"),  # was seat 1
        ({"seed": None}, "seed must be a non-negative integer, got None"),
        ({"seed": 1.5}, "seed must be a non-negative integer, got 1.5"),
        ({"seed": -1}, "seed must be a non-negative integer, got -1"),
    ],
)
def test_bad_arguments_name_the_problem(cls, kw, match):
    args = dict(num_envs=2, players=2, opponents="random")
    args.update(kw)
    with pytest.raises(ValueError, match=match):
        cls(**args)


@pytest.mark.parametrize("cls", ENVS)
def test_numpy_integers_are_arguments_as_ints_are(cls):
    """``num_envs=np.int64(4)`` and ``seat=np.int64(1)`` were refused, ``players=np.int64(3)``
    was a TypeError (not iterable)."""
    env = cls(np.int64(4), players=np.int64(3), opponents="random", seed=np.int64(2), seat=np.int64(1))
    assert (env.num_envs, env.players, env.fixed_seat) == (4, [3], 1)
    assert type(env.num_envs) is int and type(env.fixed_seat) is int
    env.reset()
    assert (env.seats == 1).all()


@pytest.mark.parametrize("cls", ENVS)
def test_steps_out_of_order_or_of_another_shape_name_the_problem(cls):
    """A step before reset was an IndexError in the scalar env; actions of another shape
    numpy's reshape message; a seed of 1.5 numpy's."""
    env = cls(4, players=3, opponents="random", seed=0)
    with pytest.raises(RuntimeError, match=r"call reset\(\) before stepping the vec env"):
        env.step(np.zeros(4, dtype=np.int64))
    env.reset()
    legal = env.action_masks().argmax(axis=1)
    with pytest.raises(
        ValueError, match=r"actions must be an integer array of shape \(4,\), one per env, .*shape \(3,\)"
    ):
        env.step(legal[:3])
    with pytest.raises(ValueError, match=r"actions must be an integer array of shape \(4,\), .*\(float64\)"):
        env.step(legal.astype(float))
    with pytest.raises(ValueError, match="seed must be a non-negative integer, got 1.5"):
        env.seed(1.5)
    env.step(legal[:, None])  # a column of actions is one per env too


def test_the_batched_env_needs_a_game_per_table_size():
    with pytest.raises(ValueError, match=r"num_envs \(2\) must be at least the number of table sizes \(3"):
        BatchedLlamaVecEnv(2, players=[2, 4, 6], opponents="random")


def test_table_shares_follow_the_weights():
    assert table_shares([2, 2, 3, 4, 4, 5, 6], 256) == {2: 73, 3: 37, 4: 73, 5: 37, 6: 36}
    assert table_shares([2, 3, 4, 5, 6], 5) == {2: 1, 3: 1, 4: 1, 5: 1, 6: 1}
    assert table_shares([2, 2, 2, 2, 2, 2, 6], 2) == {2: 1, 6: 1}
    assert table_shares([4], 7) == {4: 7}
    for n in range(5, 60):
        assert sum(table_shares([2, 2, 3, 4, 4, 5, 6], n).values()) == n


def test_auto_picks_the_batch_with_many_games_per_table_size():
    assert vec_env_class("auto", (2,), 256) is BatchedLlamaVecEnv
    assert vec_env_class("auto", (2,), 128) is ScalarLlamaVecEnv
    assert vec_env_class("auto", (2, 2, 3, 4, 4, 5, 6), 256) is ScalarLlamaVecEnv  # the ship preset
    assert vec_env_class("auto", (2, 3, 4, 5, 6), 1280) is BatchedLlamaVecEnv
    assert vec_env_class("scalar", (2,), 4096) is ScalarLlamaVecEnv
    assert vec_env_class("auto", 2, 256) is BatchedLlamaVecEnv  # one size, as the vec envs take it (was a TypeError)
    with pytest.raises(ValueError, match="config key 'engine' must be auto or one of batch, scalar"):
        vec_env_class("fast", (2,), 4)
