"""The search agent: the ppo agent's moves wherever it does not search, a search that
overrules them where the specialist is unsure, reproducible from its seed, and network
files that are refused with a message when they are not whole."""

from __future__ import annotations

import numpy as np
import pytest

import agents
from agents.heuristic import HeuristicAgent
from agents.ppo import DEFAULT_MODEL, SHIPPED, Actor, PPOAgent, load_actor, save_actor
from agents.search import (
    FITTED_ON,
    NETWORKS,
    SEARCHED_ON,
    SETTINGS,
    SearchAgent,
    Worlds,
    batch_values,
    belief_deals,
    engine_values,
    load_networks,
    mirrored_worlds,
    policy_moves,
    save_networks,
    searched_move,
    world_snapshots,
)
from llama_env.engine import LlamaGame
from llama_env.observation import action_mask, encode, encode_v1
from llama_env.table import Table
from llama_env.worlds import public_state


@pytest.fixture(scope="module")
def ppo():
    """The policy the search plays where it does not search: ppo's distilled specialist
    heads-up, ppo_v4's at 4 players (two rounds of distillation), ppo_v3's at 6 (the one its
    networks were fitted on)."""
    policy = agents.make("ppo_v3")
    policy.specialists[2] = agents.make("ppo").specialists[2]
    policy.specialists[4] = agents.make("ppo_v4").specialists[4]
    return policy


def test_it_plays_the_declared_specialist_at_each_size_and_the_networks_name_theirs():
    search = SearchAgent()
    assert set(SEARCHED_ON) == set(FITTED_ON) == set(NETWORKS)
    for n, file in SEARCHED_ON.items():
        played, on_file = search.ppo.specialists[n].layers, load_actor(file).layers
        assert all(np.array_equal(w, w2) for (w, _), (w2, _) in zip(played, on_file, strict=True))
    assert SEARCHED_ON[2] == SHIPPED["ppo"][2] != FITTED_ON[2]
    assert SEARCHED_ON[4] == SHIPPED["ppo_v4"][4] != FITTED_ON[4]
    assert SEARCHED_ON[4] != SHIPPED["ppo"][4]  # not ppo's third round, which searched weaker
    assert SEARCHED_ON[6] == FITTED_ON[6] == SHIPPED["ppo_v3"][6]


def _moves(agent, players: int, games: int, seed: int = 0) -> list[int]:
    """The moves of ``agent`` at seat 0 against ``heuristic``."""
    recorder = _Recorder(agent)
    for g in range(games):
        agent.reset(seed + g)
        Table(LlamaGame(players, rng=100 + g), [recorder] + [HeuristicAgent()] * (players - 1)).play()
    return recorder.moves


class _Recorder:
    def __init__(self, agent) -> None:
        self.agent, self.moves = agent, []
        self.obs_version = agent.obs_version

    def act(self, observation, mask):
        move = self.agent.act(observation, mask)
        self.moves.append(move)
        return move


def test_where_it_never_searches_it_plays_as_its_policy(ppo):
    never = SearchAgent(below=0.0)
    assert _moves(never, 4, 3) == _moves(ppo, 4, 3)
    assert _moves(never, 2, 3) == _moves(ppo, 2, 3)
    assert _moves(never, 2, 3) != _moves(agents.make("ppo_v3"), 2, 3)  # heads-up the distilled one
    assert _moves(never, 4, 3) != _moves(agents.make("ppo_v3"), 4, 3)  # and at 4 players
    assert _moves(never, 4, 3) != _moves(agents.make("ppo"), 4, 3)  # ppo_v4's there, not ppo's
    assert never.searched == 0


@pytest.mark.parametrize("players", [3, 5])
def test_without_networks_for_the_table_size_it_plays_as_ppo(ppo, players):
    search = SearchAgent(below=1.0)
    assert players not in NETWORKS
    assert _moves(search, players, 2) == _moves(ppo, players, 2)
    assert search.searched == 0


def test_a_version_0_observation_gets_the_ppo_agents_move(ppo):
    game = LlamaGame(4, rng=3)
    obs, mask = encode(game, game.current_player), action_mask(game.legal_actions())
    assert SearchAgent(below=1.0).act(obs, mask) == ppo.act(obs, mask)


@pytest.mark.parametrize("players", sorted(NETWORKS))
def test_it_searches_where_the_specialist_is_unsure_and_sometimes_overrules_it(players):
    assert sorted(NETWORKS) == [2, 4, 6]
    search = SearchAgent(worlds=4, below=1.0)  # every move with a choice
    _moves(search, players, 2)
    assert search.searched > 10
    assert 0 < search.changed < search.searched


def test_it_searches_with_numpy_on_one_blas_thread(monkeypatch):
    """A BLAS spreading the search's small matrices over busy cores made a game of
    opponents="search" up to 5 times slower; the limit holds for the search alone."""

    import agents.search as search_module

    limits: list[dict[str, object]] = []
    lifted: list[int] = []

    class Controller:
        def limit(self, **kwargs: object) -> Controller:
            limits.append(kwargs)
            return self

        def restore_original_limits(self) -> None:
            lifted.append(len(limits))

    monkeypatch.setattr(search_module, "_BLAS", (None, Controller()))  # a BLAS whose threads are the process's
    search = SearchAgent(worlds=4, below=1.0)
    _moves(search, 4, 1)
    assert search.searched > 0 and limits == [{"limits": 1, "user_api": "blas"}] * len(limits) and limits
    assert lifted == list(range(1, len(limits) + 1))  # each lifted before the next search


def _blas_threads() -> list[int]:
    from threadpoolctl import threadpool_info

    return [i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"]


def test_searches_in_two_threads_at_once_leave_numpy_s_blas_as_they_found_it():
    """Each search limited the BLAS for itself: a second one that began while the first ran
    took the first one's 1 as the number to go back to, and numpy stayed on one thread for
    the rest of the process. One limit is now set by the first search to start and lifted
    by the last to end, whichever thread that is: the one that set it still alive, as a
    thread pool's worker is (threadpoolctl 3.8 let only that thread lift it)."""
    import threading

    from agents.search import one_blas_thread

    before = _blas_threads()
    if not before or min(before) < 2:
        pytest.skip("numpy's BLAS runs on one thread here")
    steps = {name: threading.Event() for name in ("first in", "second in", "first out", "second out")}
    seen: dict[str, list[int]] = {}

    def first() -> None:
        with one_blas_thread():
            steps["first in"].set()
            steps["second in"].wait(10)
        steps["first out"].set()
        steps["second out"].wait(10)  # alive while the second lifts the limit

    def second() -> None:
        steps["first in"].wait(10)
        with one_blas_thread():
            steps["second in"].set()
            steps["first out"].wait(10)
            seen["second alone"] = _blas_threads()
        steps["second out"].set()

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(20)
    assert seen == {"second alone": [1] * len(before)}  # the limit holds for the last one
    assert _blas_threads() == before


def test_a_blas_with_a_thread_count_per_thread_is_limited_by_each_search_for_its_own_thread(monkeypatch):
    """OpenBLAS built with OpenMP keeps a thread count per thread (threadpoolctl sets it
    with omp_set_num_threads): the one limit that all searches shared left a second
    thread's search on all its threads, and the first thread on one for good once the last
    search ended in another thread. There each search limits its own thread and puts it
    back, as before the shared limit."""
    import threading

    from threadpoolctl import OpenBLASController, threadpool_info

    import agents.search as search_module

    if not any(i["internal_api"] == "openblas" for i in threadpool_info()):
        pytest.skip("numpy's BLAS is no OpenBLAS here")
    own = threading.local()  # a stand-in of OpenMP's thread count: each thread's own

    def count(self: object = None) -> int:
        return getattr(own, "threads", 4)

    monkeypatch.setattr(OpenBLASController, "get_num_threads", count)
    monkeypatch.setattr(OpenBLASController, "set_num_threads", lambda self, n: setattr(own, "threads", n))
    monkeypatch.setattr(
        OpenBLASController, "set_additional_attributes", lambda self: setattr(self, "threading_layer", "openmp")
    )
    monkeypatch.setattr(search_module, "_BLAS", None)  # made again, finding these
    steps = {name: threading.Event() for name in ("first in", "second in", "first out")}
    seen: dict[str, int] = {}

    def first() -> None:
        with search_module.one_blas_thread():
            seen["first, searching"] = count()
            steps["first in"].set()
            steps["second in"].wait(10)
        seen["first, after"] = count()
        steps["first out"].set()

    def second() -> None:
        steps["first in"].wait(10)
        with search_module.one_blas_thread():
            seen["second, searching"] = count()
            steps["second in"].set()
            steps["first out"].wait(10)
        seen["second, after"] = count()

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(20)
    assert seen == {"first, searching": 1, "second, searching": 1, "first, after": 4, "second, after": 4}


def test_a_search_inside_a_blas_limit_of_its_own_thread_leaves_that_limit_holding():
    """The sb3 trainer holds numpy's BLAS at one thread with threadpool_limits(1) around
    its games, where search may play: a search ended by giving up threadpoolctl's say over
    OpenBLAS's threads, the trainer's with it, and another thread could then set them
    while the trainer ran. The search now gives up only the say it took."""
    import threading

    import threadpoolctl
    from threadpoolctl import threadpool_info, threadpool_limits

    from agents.search import one_blas_thread

    blas = [i for i in threadpool_info() if i["user_api"] == "blas"]
    if not blas or min(i["num_threads"] for i in blas) < 2:
        pytest.skip("numpy's BLAS runs on one thread here")
    if any(i["internal_api"] != "openblas" or i["threading_layer"] != "pthreads" for i in blas):
        pytest.skip("numpy's BLAS is no OpenBLAS built with pthreads here")
    if not hasattr(threadpoolctl.OpenBLASController, "clear_controlling_thread"):
        pytest.skip("this threadpoolctl gives no thread a say over OpenBLAS's threads")
    before = _blas_threads()
    with threadpool_limits(limits=1, user_api="blas"):  # the trainer's
        with one_blas_thread():
            pass
        other = threading.Thread(target=lambda: threadpool_limits(limits=2, user_api="blas"))
        other.start()
        other.join(10)
        assert _blas_threads() == [1] * len(before)
    assert _blas_threads() == before


def test_the_same_seed_plays_the_same_moves():
    a, b = SearchAgent(worlds=4, below=1.0), SearchAgent(worlds=4, below=1.0)
    assert _moves(a, 4, 2, seed=7) == _moves(b, 4, 2, seed=7)
    assert a.searched == b.searched > 0


def test_the_settings_default_to_the_table_sizes_and_given_ones_hold_at_every_size():
    assert sorted(SETTINGS) == sorted(NETWORKS)
    assert SETTINGS[4].horizon == 25 and SETTINGS[2].horizon == SETTINGS[6].horizon == 0
    for players, settings in SETTINGS.items():
        default = SearchAgent(below=1.0, seed=4, worlds=3)
        fixed = SearchAgent(below=1.0, seed=4, worlds=3, horizon=settings.horizon)
        assert _moves(default, players, 1, seed=5) == _moves(fixed, players, 1, seed=5)
    agent = SearchAgent(worlds=5, horizon=0)
    assert {s.worlds for s in agent.settings.values()} == {5} and {s.horizon for s in agent.settings.values()} == {0}
    assert [s.below for s in agent.settings.values()] == [s.below for s in SETTINGS.values()]
    assert repr(agent) == "SearchAgent(worlds=5, horizon=0)" and repr(SearchAgent()) == "SearchAgent()"
    short = SearchAgent(worlds=3, below=1.0, seed=4, horizon=1)
    full = SearchAgent(worlds=3, below=1.0, seed=4, horizon=0)
    assert _moves(short, 4, 2, seed=5) != _moves(full, 4, 2, seed=5)


def test_a_search_without_worlds_is_refused():
    search = SearchAgent()
    actor, value_net = search.ppo.specialists[4], search.networks[4][0]
    with pytest.raises(ValueError, match="at least one world"):
        searched_move([], 0, [0, 7], actor, HeuristicAgent(), value_net)
    with pytest.raises(ValueError, match="at least one world"):
        batch_values([], [], agents.make("ppo"), HeuristicAgent(), value_net, 0)


def _final_round_decisions(count: int):
    """Seat 0's decisions with a choice in real 4-player games against ``heuristic``,
    every score then set to 39: whatever happens, the round that is being played ends the
    game (any penalty reaches 40), so a search's worlds need no later deal."""
    search = SearchAgent(below=0.0)
    for g in range(100):
        game = LlamaGame(4, rng=500 + g)
        table = Table(game, [None] + [HeuristicAgent()] * 3)
        table.advance()
        while not game.game_over:
            if len(game.legal_actions()) > 1 and game.round_moves > 3:
                d = game.to_dict()
                final = LlamaGame.from_dict({**d, "scores": [39] * 4, "round": max(2, d["round"])})
                yield final, encode_v1(final, 0)
                count -= 1
                if not count:
                    return
            table.apply(search.act(encode_v1(game, 0), action_mask(game.legal_actions())))
            table.advance()


@pytest.mark.parametrize("keyed", [False, True])
def test_the_batched_search_values_every_world_as_the_engine_search_where_no_deal_follows(keyed):
    """Where the searched round ends the game, the batch and the engine play the same
    moves in the same worlds (the specialist's, the heuristic's, the round's end): the
    values of every move in every world, and so the searched move, are the same. ``keyed``:
    each world deals from a key of its own (``deal_keys``), as the search agent plays out."""
    search = SearchAgent()
    actor, (value_net, belief_net) = search.ppo.specialists[4], search.networks[4]
    rng = np.random.default_rng(0)
    checked = changed = 0
    for game, obs in _final_round_decisions(12):
        legal = game.legal_actions()
        state = public_state(obs)
        worlds = Worlds(state, *belief_deals(obs, state, belief_net, rng, 16))
        engine = engine_values(
            [LlamaGame.from_dict(w) for w in world_snapshots(state, worlds.hands, worlds.piles)],
            0,
            legal,
            actor,
            HeuristicAgent(),
            value_net,
        )
        keys = [rng.integers(2**63, size=len(worlds.hands))] if keyed else None
        (batched,) = batch_values(
            [worlds], [legal], search._players[4], search._opponent, value_net, rng, deal_keys=keys
        )
        np.testing.assert_allclose(batched, engine, rtol=1e-6)
        assert np.isin(engine, [0.0, 1 / 3, 1 / 2, 1.0]).all()  # the games ended: no value network
        checked += 1
        changed += len(set(engine.mean(axis=0).round(6))) > 1  # the moves differ in value
    assert checked == 12 and changed > 3


@pytest.mark.parametrize("keyed", [False, True])
def test_the_batched_search_finds_the_engine_searchs_values_where_later_deals_differ(keyed):
    """In the middle of a game the batch deals the round after the searched one its own
    way, so a world's values differ from the engine's, but not on average: over many
    worlds the two searches' mean values of each move agree within their noise. ``keyed``:
    each world deals from a key of its own (``deal_keys``), as the search agent plays out."""
    search = SearchAgent()
    actor, (value_net, belief_net) = search.ppo.specialists[4], search.networks[4]
    rng = np.random.default_rng(1)
    game = LlamaGame(4, rng=7)
    table = Table(game, [None] + [HeuristicAgent()] * 3)
    table.advance()
    while len(game.legal_actions()) < 2 or game.round_moves < 4:
        table.apply(max(game.legal_actions()[:-1], default=game.legal_actions()[0]))
        table.advance()
    obs, legal = encode_v1(game, 0), game.legal_actions()
    state = public_state(obs)
    worlds = Worlds(state, *belief_deals(obs, state, belief_net, rng, 200))
    engine = engine_values(
        [LlamaGame.from_dict(w, rng=k) for k, w in enumerate(world_snapshots(state, worlds.hands, worlds.piles))],
        0,
        legal,
        actor,
        HeuristicAgent(),
        value_net,
    )
    keys = [rng.integers(2**63, size=len(worlds.hands))] if keyed else None
    (batched,) = batch_values([worlds], [legal], search._players[4], search._opponent, value_net, rng, deal_keys=keys)
    assert not np.allclose(batched, engine)  # the later deals differ
    difference = (batched - engine).mean(axis=0)
    noise = (batched - engine).std(axis=0) / np.sqrt(len(engine))
    assert (np.abs(difference) < 4 * noise + 1e-3).all(), (difference, noise)


def test_a_batch_of_decisions_is_answered_as_the_ppo_agent_where_none_is_searched(ppo):
    rng = np.random.default_rng(3)
    obs, masks = [], []
    for g in range(6):
        game = LlamaGame(4, rng=g)
        table = Table(game, [None] + [HeuristicAgent()] * 3)
        table.advance()
        while not game.game_over:
            obs.append(encode_v1(game, 0))
            masks.append(action_mask(game.legal_actions()).astype(bool))
            table.apply(int(rng.choice(game.legal_actions())))
            table.advance()
    obs, masks = np.stack(obs), np.stack(masks)
    never = SearchAgent(below=0.0)
    np.testing.assert_array_equal(never.act_batch(obs, masks), ppo.act_batch(obs, masks))
    assert never.searched == 0
    every = SearchAgent(worlds=2, below=1.0, seed=0)
    picks = every.act_batch(obs[:40], masks[:40])
    assert masks[np.arange(40), picks].all()
    assert every.searched == int((masks[:40].sum(axis=1) > 1).sum())


def test_below_1_searches_every_decision_with_a_choice_even_where_the_policy_is_certain(tmp_path):
    """A policy sure enough that its top probability rounds to 1 in float32 is never
    below 1.0 itself; ``below=1`` still searches all of its decisions with a choice."""
    actor = load_actor(SHIPPED["ppo"][4])
    w, b = actor.layers[-1]
    sure = tmp_path / "sure.npz"
    save_actor(Actor([*[(wt.T, bias) for wt, bias in actor.layers[:-1]], (w.T * 1000, b * 1000)]), sure)
    obs, masks = [], []
    game = LlamaGame(4, rng=8)
    table = Table(game, [None] + [HeuristicAgent()] * 3)
    table.advance()
    while not game.game_over and len(obs) < 30:
        obs.append(encode_v1(game, 0))
        masks.append(action_mask(game.legal_actions()).astype(bool))
        table.apply(int(np.flatnonzero(masks[-1])[-1]))
        table.advance()
    obs, masks = np.stack(obs), np.stack(masks)
    choice = masks.sum(axis=1) > 1
    _, confidence = policy_moves(load_actor(sure), obs, masks)
    assert (confidence[choice] == 1.0).any()  # the case: never below 1.0 itself
    out = SearchAgent(worlds=2, below=1.0, seed=0, path=str(sure)).decide(obs, masks)
    np.testing.assert_array_equal(out.searched, choice)
    almost = SearchAgent(worlds=2, below=0.999, seed=0, path=str(sure)).decide(obs, masks)
    assert almost.searched.sum() < choice.sum()


def test_below_1_plays_on_where_every_move_ends_the_round():
    """Searching every decision reached positions where each legal move ends the round
    (one playable card, everyone else out): no imagined game was left to play out, and
    the search failed on an empty seating (3 heads-up games in 12 did)."""
    search = SearchAgent(worlds=4, below=1.0, seed=0)
    for g in range(12):
        game = LlamaGame(2, rng=g)
        search.reset(g)
        Table(game, [search, HeuristicAgent()]).play()
        assert game.game_over


def test_decide_says_which_rows_it_searched_and_the_values_behind_each_move(ppo):
    obs, masks = [], []
    for g in range(3):
        game = LlamaGame(4, rng=40 + g)
        table = Table(game, [None] + [HeuristicAgent()] * 3)
        table.advance()
        while not game.game_over:
            obs.append(encode_v1(game, 0))
            masks.append(action_mask(game.legal_actions()).astype(bool))
            table.apply(ppo.act(obs[-1], masks[-1]))
            table.advance()
    obs, masks = np.stack(obs), np.stack(masks)
    out = SearchAgent(worlds=3, below=0.99, seed=1).decide(obs, masks)
    np.testing.assert_array_equal(out.moves, SearchAgent(worlds=3, below=0.99, seed=1).act_batch(obs, masks))
    assert 0 < out.searched.sum() < len(obs)
    rest = ~out.searched
    np.testing.assert_array_equal(out.moves[rest], ppo.act_batch(obs[rest], masks[rest]))
    assert np.isnan(out.values[rest]).all()
    searched = out.values[out.searched]
    assert (np.isfinite(searched) == masks[out.searched]).all()  # a value for each legal move, NaN elsewhere
    assert ((searched[np.isfinite(searched)] >= 0) & (searched[np.isfinite(searched)] <= 1)).all()
    np.testing.assert_array_equal(out.moves[out.searched], np.nanargmax(searched, axis=1))


def test_path_searches_on_another_model_and_refuses_one_that_cannot_search(tmp_path):
    four = SEARCHED_ON[4]
    on_file = SearchAgent(worlds=3, below=1.0, seed=2, path=str(four))
    assert "ppo_llama_4p_v4.npz" in repr(on_file)
    assert all(on_file.ppo.specialists[n].layers[0][0].shape == (175, 256) for n in NETWORKS)
    assert _moves(on_file, 4, 1, seed=3) == _moves(SearchAgent(worlds=3, below=1.0, seed=2), 4, 1, seed=3)
    with pytest.raises(ValueError, match="reads version-0 observations"):
        SearchAgent(path=str(DEFAULT_MODEL))
    with pytest.raises(ValueError, match="no PPO model at .*nowhere.npz"):
        SearchAgent(path=str(tmp_path / "nowhere.npz"))


def test_a_model_trained_at_some_sizes_says_so_and_evaluation_warns_at_others(tmp_path):
    """`search:path=` a heads-up model played at 6 players without a word, where
    `ppo:path=` warned: it searched on that model as the 6-player specialist."""
    from llama_env.agent import unmade_for

    heads_up = load_actor(SHIPPED["ppo"][2])
    heads_up.table_sizes = (2,)
    save_actor(heads_up, tmp_path / "two.npz")
    search = SearchAgent(path=str(tmp_path / "two.npz"))
    assert search.table_sizes == (2,) and unmade_for([search, "heuristic"], 2) == []
    (line,) = unmade_for([search, *["heuristic"] * 5], 6)
    assert "was trained at 2 players only; it plays this 6-player table" in line
    assert SearchAgent().table_sizes is None
    # at 3 players, where it has no networks, it plays the model given (it played the shipped one)
    game = LlamaGame(3, rng=4)
    obs, mask = encode_v1(game, game.current_player), action_mask(game.legal_actions())
    mine = PPOAgent(path=str(tmp_path / "two.npz"))
    assert search.ppo.specialists[3] is search.ppo.specialists[2]
    assert search.act(obs, mask) == mine.act(obs, mask) and len(unmade_for([search, "heuristic", "heuristic"], 3)) == 1


def test_an_end_score_the_networks_were_not_fitted_on_plays_as_ppo(ppo):
    game = LlamaGame(4, rng=5, end_score=20)
    search = SearchAgent(below=1.0)
    table = Table(game, [None] + [HeuristicAgent()] * 3)
    table.advance()
    while not game.game_over:
        obs, mask = encode_v1(game, 0), action_mask(game.legal_actions())
        move = search.act(obs, mask)
        assert move == ppo.act(obs, mask)
        table.apply(move)
        table.advance()
    assert search.searched == 0


@pytest.mark.parametrize(
    ("params", "fragment"),
    [
        ({"worlds": 0}, "worlds must be >= 1"),
        ({"worlds": 2.5}, "worlds must be an integer"),
        ({"below": "high"}, "below must be a finite number"),
        ({"below": 1.01}, "below must be <= 1, got 1.01"),
        ({"below": -0.1}, "below must be >= 0, got -0.1"),
        ({"seed": -1}, "seed must be a non-negative integer"),
    ],
)
def test_bad_parameters_name_the_parameter(params, fragment):
    with pytest.raises(ValueError, match=fragment):
        agents.make("search", **params)


def test_network_files_that_are_not_whole_are_refused_naming_the_file(tmp_path):
    value, belief = load_networks(NETWORKS[4], 4)
    truncated = tmp_path / "truncated.npz"
    truncated.write_bytes(NETWORKS[4].read_bytes()[:1000])
    with pytest.raises(ValueError, match="cannot load the search networks from .*truncated.npz"):
        load_networks(truncated, 4)
    no_belief = tmp_path / "no_belief.npz"
    save_networks(no_belief, value, [])
    with pytest.raises(ValueError, match="it has no belief network"):
        load_networks(no_belief, 4)
    with pytest.raises(ValueError, match="the belief network gives 21 outputs, a 6-player table needs 35"):
        load_networks(NETWORKS[4], 6)
    nan = tmp_path / "nan.npz"
    save_networks(nan, [(np.full_like(w, np.nan), b) for w, b in value], belief)
    with pytest.raises(ValueError, match="holds NaN"):
        load_networks(nan, 4)
    nan_bias = tmp_path / "nan_bias.npz"  # was accepted: the agent played on NaN values
    save_networks(nan_bias, [(w, np.full_like(b, np.nan)) for w, b in value], belief)
    with pytest.raises(ValueError, match="a value layer holds NaN or infinity"):
        load_networks(nan_bias, 4)
    integers = tmp_path / "int.npz"  # was read as weights, truncated, playing other moves
    save_networks(integers, value, [(w.astype(np.int8), b) for w, b in belief])
    with pytest.raises(ValueError, match="its belief layer 0 holds int8 weights and a float32 bias: they must be"):
        load_networks(integers, 4)
    assert not list(tmp_path.glob(".*.tmp"))  # nothing half written left behind
    # a missing file or a folder read as "not an .npz archive of arrays (not a zip file)"
    with pytest.raises(ValueError, match=r"from .*none\.npz: the file does not exist$"):
        load_networks(tmp_path / "none.npz", 4)
    with pytest.raises(ValueError, match=r": it is a folder, not an \.npz file$"):
        load_networks(tmp_path, 4)


def _one_lucky_world(moves: int) -> np.ndarray:
    """Values of 3 worlds x ``moves``: move 0 is worth 1 in one world and 0 in the
    others (best single world), move 1 0.6 in each (best mean)."""
    v = np.zeros((3, moves))
    v[0, 0] = 1.0
    v[:, 1] = 0.6
    return v


def test_the_search_plays_the_best_mean_over_its_worlds_not_the_best_single_world(monkeypatch):
    """A mutation audit: picking by the best single world, or the worst mean, passed."""
    import agents.search as search_module

    monkeypatch.setattr(
        search_module, "batch_values", lambda searches, legals, *a, **k: [_one_lucky_world(len(m)) for m in legals]
    )
    game = LlamaGame(4, rng=8)
    obs, mask = encode_v1(game, 0), action_mask(game.legal_actions()).astype(bool)
    assert mask.sum() >= 2
    out = SearchAgent(worlds=3, below=1.0, seed=0).decide(obs[None], mask[None])
    legal = np.flatnonzero(mask)
    assert out.searched[0] and out.moves[0] == legal[1]
    np.testing.assert_allclose(out.values[0, legal], _one_lucky_world(legal.size).mean(axis=0))
    monkeypatch.setattr(search_module, "engine_values", lambda worlds, seat, legal, *a: _one_lucky_world(len(legal)))
    assert search_module.searched_move([], 0, [4, 7, 8], None, None, []) == 7


def _draw_or_quit(players: int) -> LlamaGame:
    """A heuristic game at its first decision with only a draw and a quit."""
    game, heuristic = LlamaGame(players, rng=3), HeuristicAgent()
    while game.legal_actions() != [7, 8]:
        seat = game.current_player
        game.step(heuristic.act(encode(game, seat), action_mask(game.legal_actions())))
    return game


def test_a_mask_that_does_not_fit_the_observation_is_refused_before_a_world_is_played():
    """All nine allowed at a draw-or-quit decision: the search tried them in its worlds and
    failed with "IllegalActionError game 0, seat 0: action 0 (PLAY_1) is illegal ... (and 335
    more game(s) ...)", naming games the user never played. A mask that leaves a legal move
    out still fits: the search tries the moves it allows."""
    game = _draw_or_quit(4)
    obs, mask = encode_v1(game, game.current_player), action_mask([7, 8])
    search = SearchAgent(worlds=2, below=1.0, seed=0)
    plays = r"0 \(PLAY_1\), 1 \(PLAY_2\), 2 \(PLAY_3\), 3 \(PLAY_4\), 4 \(PLAY_5\), 5 \(PLAY_6\), 6 \(PLAY_LLAMA\)"
    with pytest.raises(
        ValueError,
        match=rf"^the action mask does not fit the observation: it allows {plays}, which the rules do not; "
        r"legal there: 7 \(DRAW\), 8 \(QUIT\)$",
    ):
        search.act(obs, np.ones(9, dtype=bool))
    with pytest.raises(ValueError, match=r"^action mask 1 does not fit observation 1: it allows 0 \(PLAY_1\),"):
        search.act_batch(np.stack([obs, obs]), np.stack([mask, action_mask([0, 7, 8])]))
    assert search.act(obs, mask) in (7, 8) and search.searched == 1
    # where it does not search (one move allowed), the mask goes unchecked, as the docstring says
    assert search.act(obs, action_mask([0])) == 0 and search.searched == 1


@pytest.mark.parametrize("players", [2, 4, 6])
def test_the_mask_check_reads_the_observers_legal_moves_as_the_engine_has_them(players):
    """The check reads the observer's moves from the public state by the engine's rules
    (a world dealt to ask them cost about 115 us a searched decision): on a llama, with
    the draw pile empty and with the observer alone in the round they are the game's
    (players who draw most of the time empty the pile)."""
    from agents.search import _unfit_mask
    from llama_env.engine import Action

    for seed in range(10):
        game, rng = LlamaGame(players, rng=seed), np.random.default_rng(seed)
        while not game.game_over:
            legal = game.legal_actions()
            state = public_state(encode_v1(game, game.current_player))
            assert _unfit_mask(legal, state) == ""
            named = ", ".join(f"{a} ({Action(a).name})" for a in legal)
            assert _unfit_mask(list(range(9)), state).endswith(f"legal there: {named}")
            game.step(Action.DRAW if Action.DRAW in legal and rng.random() < 0.7 else int(rng.choice(legal)))


def test_mirrored_worlds_play_the_others_as_the_searchers_own_policy():
    """``mirror``: in the last share of each search's worlds the others play as the searcher's
    specialist, as if it were seated there, and in the rest as ``heuristic``; each world's
    values are those it has alone at its setting (the deals keyed world by world)."""
    search = SearchAgent()
    player, (value_net, belief_net) = search._players[4], search.networks[4]
    rng = np.random.default_rng(5)
    searches, legal = [], []
    for game, obs in _final_round_decisions(8):
        state = public_state(obs)
        searches.append(Worlds(state, *belief_deals(obs, state, belief_net, rng, 10)))
        legal.append(game.legal_actions())
    keys = [rng.integers(2**63, size=10) for _ in searches]
    heuristic = batch_values(searches, legal, player, search._opponent, value_net, 0, deal_keys=keys)
    as_itself = batch_values(searches, legal, player, player, value_net, 0, deal_keys=keys)
    mirrored = batch_values(searches, legal, player, search._opponent, value_net, 0, deal_keys=keys, mirror=1.0)
    half = batch_values(searches, legal, player, search._opponent, value_net, 0, deal_keys=keys, mirror=0.5)
    for h, a, m, x in zip(heuristic, as_itself, mirrored, half, strict=True):
        np.testing.assert_array_equal(m, a)
        np.testing.assert_array_equal(x[:5], h[:5])
        np.testing.assert_array_equal(x[5:], a[5:])
    assert any(not np.array_equal(h, a) for h, a in zip(heuristic, as_itself, strict=True))  # it plays otherwise


@pytest.mark.parametrize("share", [0.0, 0.26, 0.5, 1.0])
def test_mirrored_worlds_are_the_last_share_rounded(share):
    flags = mirrored_worlds(48, share)
    assert flags.sum() == round(48 * share) and not flags[: 48 - flags.sum()].any()


@pytest.mark.parametrize("mirror", [-0.1, 1.5, float("nan"), "half"])
def test_a_mirror_outside_zero_to_one_is_refused_by_name(mirror):
    with pytest.raises(ValueError, match="mirror"):
        SearchAgent(mirror=mirror)


def test_a_mirror_given_holds_at_every_size_and_names_the_agent():
    search = agents.make("search:mirror=0.5")
    assert {s.mirror for s in search.settings.values()} == {0.5} and repr(search) == "SearchAgent(mirror=0.5)"
    assert SearchAgent().settings == SETTINGS  # nothing given: each size's own
