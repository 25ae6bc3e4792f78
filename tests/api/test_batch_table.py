"""The batched table driver (:class:`llama_env.table.BatchTable`): the games of a
``BatchGame`` driven as :class:`~llama_env.table.Table` drives one game: agents asked in
one ``act_batch`` call each per step, one validation rule, outside seats through
``apply``, a listener that hears every step."""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pytest

from agents.heuristic import CautiousAgent, GreedyAgent, HeuristicAgent
from agents.random_agent import RandomAgent
from llama_env.batch import BatchGame
from llama_env.engine import Action, IllegalActionError, LlamaGame
from llama_env.observation import OBS_SIZE, OBS_SIZE_V1, encoder
from llama_env.table import AgentError, BatchTable, BatchTableListener, Table


def _without_rng(d: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in d.items() if k != "rng_state"}


class Counting:
    """Wraps an agent and counts its act / act_batch calls and the rows it was shown."""

    def __init__(self, agent: Any, batched: bool = True, obs_version: int = 0) -> None:
        self.agent = agent
        self.name = f"counting {agent.name}"
        self.obs_version = obs_version
        self.calls = 0
        self.rows: list[int] = []
        self.shapes: set[tuple[int, ...]] = set()
        if batched:
            self.act_batch = self._act_batch

    def act(self, observation: np.ndarray, action_mask: np.ndarray) -> int:
        self.calls += 1
        self.shapes.add(observation.shape)
        return self.agent.act(observation[:OBS_SIZE], action_mask)

    def _act_batch(self, observations: np.ndarray, action_masks: np.ndarray) -> np.ndarray:
        self.rows.append(len(observations))
        self.shapes.add(observations.shape[1:])
        assert action_masks.dtype == bool and action_masks.shape == (len(observations), 9)
        return self.agent.act_batch(observations[:, :OBS_SIZE], action_masks)


class Answer:
    """act_batch answers whatever it is told to (for the validation tests)."""

    name = "answer"

    def __init__(self, make: Any) -> None:
        self.make = make

    def act(self, observation: np.ndarray, action_mask: np.ndarray) -> int:  # pragma: no cover - unused
        raise AssertionError

    def act_batch(self, observations: np.ndarray, action_masks: np.ndarray) -> Any:
        return self.make(action_masks)


class Moves(BatchTableListener):
    def __init__(self) -> None:
        self.steps: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []

    def on_step(self, table: BatchTable, games: np.ndarray, seats: np.ndarray, actions: np.ndarray) -> None:
        assert (table.batch.current_player[games] == seats).all()  # heard before the step
        assert table.batch.legal_action_mask[games, actions].all()
        self.steps.append((games.copy(), seats.copy(), actions.copy()))


def _snapshots(n: int, count: int, seed: int) -> list[dict[str, Any]]:
    """States of random games at ``n`` players, taken at random moments of a round."""
    rng = np.random.default_rng(seed)
    out = []
    while len(out) < count:
        game = LlamaGame(n, rng=int(rng.integers(1 << 30)))
        for _ in range(int(rng.integers(0, 30))):
            legal = game.legal_actions()
            game.step(legal[int(rng.integers(len(legal)))])
            if game.game_over:
                break
        if not game.game_over:
            out.append(game.to_dict())
    return out


@pytest.mark.parametrize("n", [2, 3, 4, 6])
def test_every_game_moves_as_the_scalar_driver_moves_it(n):
    """Loaded from the same states, with deterministic agents, each game of a BatchTable
    passes through the states its own Table passes through, move by move, for the rest
    of the round (the next deal is the batch's own)."""
    snaps = _snapshots(n, 60, seed=n)
    players = [
        HeuristicAgent(),
        GreedyAgent(),
        CautiousAgent(),
        GreedyAgent(prefer="same"),
        HeuristicAgent(quit_base=6.0),
        CautiousAgent(threshold=0),
    ]
    seating = np.array([[(i + s) % 6 for s in range(n)] for i in range(len(snaps))])
    table = BatchTable(BatchGame.from_snapshots(snaps, seed=0, auto_reset=False), players, seating)
    scalar = [Table(LlamaGame.from_dict(d), [players[k] for k in seating[i]]) for i, d in enumerate(snaps)]
    in_round = np.ones(len(snaps), dtype=bool)
    for _ in range(200):
        rounds = [t.game.round for t in scalar]
        table.advance(steps=1)
        for i, t in enumerate(scalar):
            if in_round[i]:
                t.play_turn()
                if t.game.round != rounds[i] or t.game.game_over:
                    in_round[i] = False  # a new deal: the batch's cards differ from here on
                else:
                    assert _without_rng(table.batch.snapshot(i)) == _without_rng(t.game.to_dict()), i
        if not in_round.any():
            break
    assert not in_round.any()


def test_each_agent_is_asked_once_per_step_for_all_its_games():
    """One object seated at several seats and positions answers every game waiting on it in
    one act_batch call; the observation version is the one it asks for."""
    heuristic = Counting(HeuristicAgent(), obs_version=1)
    rand = Counting(RandomAgent(seed=1))
    batch = BatchGame(64, 4, seed=0, auto_reset=False)
    seating = np.where(np.arange(64 * 4).reshape(64, 4) % 3 == 0, 0, np.arange(64 * 4).reshape(64, 4) % 2 + 1)
    moves = Moves()
    table = BatchTable(batch, [heuristic, rand, heuristic], seating, listener=moves)
    result = table.advance()
    assert batch.game_over.all() and result.ended.all() and result.steps > 10
    assert len(heuristic.rows) <= result.steps and len(rand.rows) <= result.steps
    assert sum(heuristic.rows) + sum(rand.rows) == sum(len(games) for games, _, _ in moves.steps)
    assert heuristic.shapes == {(OBS_SIZE_V1,)} and rand.shapes == {(OBS_SIZE,)}
    np.testing.assert_allclose(result.rewards.sum(axis=1), 1.0, rtol=1e-6)  # one win shared per game


def test_the_listener_hears_every_move_and_the_counts_add_up():
    moves = Moves()
    batch = BatchGame(32, 3, seed=1, auto_reset=False)
    table = BatchTable(batch, [HeuristicAgent(), RandomAgent(seed=0), GreedyAgent()], listener=moves)
    result = table.advance()
    assert len(moves.steps) == result.steps
    decisions = np.zeros(32, dtype=np.int64)
    for games, seats, actions in moves.steps:
        assert (np.diff(games) > 0).all() and seats.dtype == actions.dtype == np.int64
        decisions[games] += 1
    assert (decisions > 0).all()
    assert table.advance().steps == 0  # every game is over: nothing moves


def test_agents_without_act_batch_are_asked_game_by_game_with_the_same_answers():
    snaps = _snapshots(4, 40, seed=9)
    one = Counting(HeuristicAgent(), batched=False)
    a = BatchTable(BatchGame.from_snapshots(snaps, seed=3, auto_reset=False), [one] * 4)
    b = BatchTable(BatchGame.from_snapshots(snaps, seed=3, auto_reset=False), [HeuristicAgent()] * 4)
    for _ in range(30):
        a.advance(steps=1)
        b.advance(steps=1)
        assert all(a.batch.snapshot(i) == b.batch.snapshot(i) for i in range(40))
    assert one.calls > 40 * 10


def test_fewer_games_than_batch_from_are_asked_through_act_with_the_same_moves():
    """An agent's batch_from: steps with fewer of its games waiting ask act row by row,
    the others one act_batch call; the games move exactly as with act_batch throughout."""
    snaps = _snapshots(4, 40, seed=5)
    some = Counting(HeuristicAgent())
    some.batch_from = 12
    a = BatchTable(BatchGame.from_snapshots(snaps, seed=3, auto_reset=False), [some] * 4)
    b = BatchTable(BatchGame.from_snapshots(snaps, seed=3, auto_reset=False), [Counting(HeuristicAgent())] * 4)
    while a.advance(steps=1).steps:
        b.advance(steps=1)
        assert all(a.batch.snapshot(i) == b.batch.snapshot(i) for i in range(40))
    assert some.calls > 0 and some.rows and min(some.rows) >= 12


@pytest.mark.parametrize("bad", [0, -3, 2.5, True, "8"])
def test_a_bad_batch_from_is_named(bad):
    agent = Counting(HeuristicAgent())
    agent.batch_from = bad
    table = BatchTable(BatchGame(4, 2, seed=0), [agent, agent])
    with pytest.raises(ValueError, match=r"agent 'counting heuristic': batch_from must be a positive integer"):
        table.advance()


def test_outside_seats_wait_and_apply_moves_them():
    """Seat 0 of every game is played from outside (a learner): advance stops where it is
    to act, apply moves exactly those games, and the rewards of a game's end reach the
    outside seat through whichever call ended it."""
    n = 48
    batch = BatchGame(n, 3, seed=2, auto_reset=False)
    table = BatchTable(batch, [None, HeuristicAgent(), RandomAgent(seed=0)], np.tile([0, 1, 2], (n, 1)))
    rng = np.random.default_rng(0)
    outside_reward = np.zeros(n)
    for _ in range(500):
        result = table.advance()
        outside_reward += result.rewards[:, 0]
        waiting = table.waiting_for_outside
        assert (waiting | batch.game_over).all() and not table.waiting_for_agent.any()
        if not waiting.any():
            break
        before = batch.current_player
        assert (before[waiting] == 0).all()
        actions = np.argmax(rng.random((n, 9)) + batch.legal_action_mask, axis=1)
        actions[~waiting] = -5  # not read
        result = table.apply(actions)
        assert result.steps == 1
        outside_reward += result.rewards[:, 0]
    assert batch.game_over.all()
    wins = batch.scores == batch.scores.min(axis=1, keepdims=True)
    np.testing.assert_allclose(outside_reward, wins[:, 0] / wins.sum(axis=1), rtol=1e-6)


def test_with_auto_reset_a_game_that_ends_waits_for_the_next_advance():
    batch = BatchGame(16, 2, seed=4)  # auto_reset
    table = BatchTable(batch, [RandomAgent(seed=1), GreedyAgent()])
    result = table.advance()  # every game ends once, then waits, already replaced
    assert result.ended.all()
    np.testing.assert_allclose(result.rewards.sum(axis=1), 1.0, rtol=1e-6)
    assert (batch.round == 1).all() and not batch.game_over.any()
    assert table.advance(steps=3).steps == 3


def test_reset_and_seat_start_new_games_with_new_players():
    batch = BatchGame(8, 2, seed=5, auto_reset=False)
    greedy, rand = Counting(GreedyAgent()), Counting(RandomAgent(seed=0))
    table = BatchTable(batch, [greedy, rand], np.zeros((8, 2), dtype=np.int64))
    table.advance()
    assert batch.game_over.all() and rand.rows == []
    table.reset(np.array([1, 6]), np.array([[1, 1], [0, 1]]))
    assert batch.game_over.tolist() == [True, False, True, True, True, True, False, True]
    assert table.seating[1].tolist() == [1, 1] and table.seating[6].tolist() == [0, 1]
    assert table.advance().ended.tolist() == [False, True, False, False, False, False, True, False]
    assert rand.rows


def test_seating_no_games_seats_nobody_and_a_wrong_count_of_rows_is_refused():
    """An empty selection of games (a search whose every world has ended) takes an empty
    seating; it was refused as "an integer array of shape (0, 2)... of shape (0, 2)"."""
    batch = BatchGame(4, 2, seed=5, auto_reset=False)
    table = BatchTable(batch, [GreedyAgent(), RandomAgent(seed=0)], np.zeros((4, 2), dtype=np.int64))
    before = table.seating.copy()
    table.seat(np.array([], dtype=np.int64), np.zeros((0, 2), dtype=np.int64))
    assert np.array_equal(table.seating, before)
    with pytest.raises(ValueError, match=r"shape \(0, 2\).*got .* of shape \(1, 2\)"):
        table.seat(np.array([], dtype=np.int64), np.zeros((1, 2), dtype=np.int64))


def test_illegal_answers_name_the_agent_the_game_and_the_seat_and_move_nothing():
    snaps = _snapshots(3, 12, seed=11)
    for make, error, match in [
        (
            lambda m: np.where(np.arange(len(m)) == 5, 99, np.argmax(m, axis=1)),
            IllegalActionError,
            r"^agent 'answer' at seat \d of game 5: action 99 is out of range",
        ),
        (
            lambda m: np.where(np.arange(len(m)) == 3, np.argmin(m, axis=1), np.argmax(m, axis=1)),
            IllegalActionError,
            r"^agent 'answer' at seat \d of game 3: action \d \(\w+\) is illegal; legal now: .*\d \(\w+\)$",
        ),
        (
            lambda m: np.argmax(m, axis=1).astype(float),
            IllegalActionError,
            r"game 0: \d\.0 \(float\) is not an action.* \(and 11 more game\(s\) with an illegal answer\)$",
        ),
        (lambda m: np.argmax(m, axis=1)[:-1], AgentError, r"agent 'answer': act_batch must return one action per"),
        (  # Python objects, one of them None: an AttributeError from deep inside before
            lambda m: [None if r == 4 else int(a) for r, a in enumerate(np.argmax(m, axis=1))],
            IllegalActionError,
            r"^agent 'answer' at seat \d of game 4: None \(NoneType\) is not an action",
        ),
    ]:
        batch = BatchGame.from_snapshots(snaps, seed=0, auto_reset=False)
        before = [batch.snapshot(i) for i in range(12)]
        table = BatchTable(batch, [Answer(make)] * 3)
        with pytest.raises(error, match=match) as info:
            table.advance()
        if error is IllegalActionError:
            assert info.value.agent == "answer" and info.value.legal
        assert [batch.snapshot(i) for i in range(12)] == before
    # Python ints in an object array are actions like any others
    batch = BatchGame.from_snapshots(snaps, seed=0, auto_reset=False)
    objects = BatchTable(batch, [Answer(lambda m: np.argmax(m, axis=1).astype(object))] * 3)
    assert objects.advance(steps=3).steps == 3


def test_bad_outside_moves_are_refused_by_game_and_seat():
    batch = BatchGame(6, 2, seed=0, auto_reset=False)
    table = BatchTable(batch, [None, None])
    quit_all = np.full(6, int(Action.QUIT))
    with pytest.raises(ValueError, match=r"integer array of shape \(6,\)"):
        table.apply(quit_all[:5])
    with pytest.raises(ValueError, match=r"integer array of shape \(6,\)"):
        table.apply(quit_all.astype(float))
    bad = quit_all.copy()
    bad[4] = np.flatnonzero(~batch.legal_action_mask[4])[0]
    with pytest.raises(IllegalActionError, match=r"^game 4, seat 0: action \d \(\w+\) is illegal"):
        table.apply(bad)
    assert table.apply(quit_all).steps == 1 and table.waiting_for_outside.all()


def test_bad_tables_are_refused():
    batch = BatchGame(4, 3, seed=0)
    with pytest.raises(
        TypeError, match=r"a BatchTable drives a batched engine \(llama_env.batch.BatchEngine, such as BatchGame\)"
    ):
        BatchTable(LlamaGame(3), [None] * 3)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="without a seating, agents are one per seat: a table of 3 players needs 3"):
        BatchTable(batch, [None, None])
    with pytest.raises(TypeError, match="player 1: an agent must have act"):
        BatchTable(batch, [None, object(), None])
    # a name was read letter by letter: "player 0: an agent must have act(...), got 'h'"
    with pytest.raises(
        TypeError, match=r"agents must be a list of agents .*got the name 'heuristic'.*make\('heuristic'\)"
    ):
        BatchTable(batch, "heuristic")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"player 2: got the class GreedyAgent: pass an instance, GreedyAgent\(\)"):
        BatchTable(batch, [None, None, GreedyAgent])
    with pytest.raises(ValueError, match=r"seating must be an integer array of shape \(4, 3\)"):
        BatchTable(batch, [None], np.zeros((4, 2), dtype=int))
    with pytest.raises(ValueError, match="seating row 2, seat 1: 3 is not a player position 0..1"):
        BatchTable(batch, [None, None], np.array([[0, 0, 0], [0, 1, 0], [1, 3, 0], [0, 0, 0]]))
    with pytest.raises(ValueError, match="player 0: .*obs_version must be one of"):
        BatchTable(batch, [Counting(GreedyAgent(), obs_version=7), None, None])
    table = BatchTable(batch, [None] * 3)
    with pytest.raises(ValueError, match=r"games must be game indices 0..3"):
        table.reset([4])
    for bad in (-1, np.int64(-1), True, 1.0):
        with pytest.raises(ValueError, match="steps must be a non-negative integer or None"):
            table.advance(steps=bad)
    assert table.advance(steps=np.int64(0)).steps == 0  # a numpy integer is an integer, as elsewhere


def test_the_observations_agents_see_are_the_engines():
    """What act_batch is shown is encode / encode_v1 of each game's player to act."""
    snaps = _snapshots(5, 30, seed=3)

    class Recorder:
        name = "recorder"

        def __init__(self, version: int) -> None:
            self.obs_version = version
            self.seen: list[np.ndarray] = []

        def act(self, observation: np.ndarray, action_mask: np.ndarray) -> int:  # pragma: no cover - unused
            raise AssertionError

        def act_batch(self, observations: np.ndarray, action_masks: np.ndarray) -> np.ndarray:
            self.seen.append(observations.copy())
            return np.argmax(action_masks, axis=1)

    for version in (0, 1):
        agent = Recorder(version)
        BatchTable(BatchGame.from_snapshots(snaps, seed=0, auto_reset=False), [agent] * 5).advance(steps=1)
        games = [LlamaGame.from_dict(d) for d in snaps]
        np.testing.assert_array_equal(agent.seen[0], encoder(version)[1](games))


# --------------------------------------------------------------------------- play_games


def test_play_games_plays_every_row_once_in_its_seating() -> None:
    """More seatings than slots: each row is played exactly once, to its end, with the
    players of its row; the slots are refilled as games end."""
    rows = np.array([[0, 1, 1], [1, 0, 1], [1, 1, 0]] * 5, dtype=np.int64)  # 15 games, 4 slots
    table = BatchTable(BatchGame(4, 3, seed=3, auto_reset=False), [RandomAgent(), HeuristicAgent()], rows[:4])
    seen: list[int] = []

    def ended(slots: np.ndarray, played: np.ndarray) -> None:
        assert table.batch.game_over[slots].all()
        assert (table.batch.scores[slots] >= 40).any(axis=1).all()  # rule 12: the game ends at 40 points
        np.testing.assert_array_equal(table.seating[slots], rows[played])
        seen.extend(played.tolist())

    table.play_games(rows, ended)
    assert sorted(seen) == list(range(15))
    assert table.batch.game_over.all()


def test_play_games_refuses_what_it_cannot_play() -> None:
    agents = [RandomAgent(), HeuristicAgent()]
    rows = np.array([[0, 1]] * 3, dtype=np.int64)
    auto = BatchTable(BatchGame(2, 2, seed=0), agents, rows[:2])
    with pytest.raises(ValueError, match="auto_reset=False"):
        auto.play_games(rows, lambda s, r: None)
    table = BatchTable(BatchGame(4, 2, seed=0, auto_reset=False), agents, np.zeros((4, 2), dtype=np.int64))
    with pytest.raises(ValueError, match=r"at least a row of seating per game of the batch \(4\), got 3"):
        table.play_games(rows, lambda s, r: None)
    with pytest.raises(ValueError, match="seating row 0, seat 1: 2 is not a player position"):
        table.play_games(np.array([[0, 2]] * 4), lambda s, r: None)
    with pytest.raises(ValueError, match="seating must be an integer array"):
        table.play_games([0, 1, 1], lambda s, r: None)
    assert not table.batch.game_over.any()
    # an outside player's games would wait for step() forever: play_games hung
    outside = BatchTable(BatchGame(2, 2, seed=0, auto_reset=False), [RandomAgent(), None], rows[:2])
    with pytest.raises(ValueError, match=r"player position\(s\) \[1\] are outside players"):
        outside.play_games(rows, lambda s, r: None)
    # games already under way were reported as if played from their first deal
    table.advance(steps=1)
    with pytest.raises(ValueError, match="game 0 has begun"):
        table.play_games(np.zeros((4, 2), dtype=np.int64), lambda s, r: None)


def test_an_agent_cannot_edit_the_masks_its_answers_are_checked_against():
    """An act_batch that set every mask entry and answered a card it did not hold was
    accepted (hands went to -1 cards); the scalar table already refused it."""

    def edit(masks: np.ndarray) -> np.ndarray:
        masks[:, 0] = True
        return np.zeros(len(masks), dtype=np.int64)

    for games, seating in ((8, None), (8, np.array([[0, 1, 1, 1]] * 4 + [[1, 1, 1, 1]] * 4))):
        agents = [Answer(edit)] * 4 if seating is None else [Answer(edit), RandomAgent()]
        table = BatchTable(BatchGame(games, 4, seed=0), agents, seating)
        with pytest.raises(AgentError, match="agent 'answer' in act_batch .*ValueError: .*read-only") as info:
            for _ in range(8):
                table.advance(steps=1)
        assert isinstance(info.value.__cause__, ValueError)


def test_play_games_names_a_bad_answers_game_by_its_row_not_its_slot() -> None:
    """A batched evaluation's error named the batch slot ("game 1") of a game that was the
    evaluation's game 1000 and something: the slots are reused as games end."""
    rows = np.zeros((6, 2), dtype=np.int64)
    state = {"poisoned": False, "playing": [0, 1], "next": 2}

    def answer(masks: np.ndarray) -> np.ndarray:
        return np.full(len(masks), 99) if state["poisoned"] else np.argmax(masks, axis=1)

    def ended(slots: np.ndarray, played: np.ndarray) -> None:
        for slot in slots.tolist():  # the slot starts the next row, as play_games refills it
            if state["next"] < len(rows):
                state["playing"][slot] = state["next"]
                state["next"] += 1
        state["poisoned"] = True

    table = BatchTable(BatchGame(2, 2, seed=3, auto_reset=False), [Answer(answer)], rows[:2])
    with pytest.raises(IllegalActionError) as info:
        table.play_games(rows, ended, first_game=1000)
    named = int(re.search(r"of game (\d+):", str(info.value)).group(1))
    assert named in {1000 + r for r in state["playing"]} and state["next"] > 2, (str(info.value), state)
    # outside play_games a game is named by its index in the batch, as before
    with pytest.raises(IllegalActionError, match=r"of game [01]:"):
        table.advance()


class _OtherEngine:
    """Another batched engine, as a JAX one would be: its own class, holding the
    :class:`llama_env.batch.BatchEngine` interface and nothing of BatchGame's private
    parts (here by passing the interface's members on to one)."""

    def __init__(self, inner: BatchGame) -> None:
        self._inner = inner

    def __getattr__(self, name: str):
        from llama_env.batch import BatchEngine

        interface = set(BatchEngine.__annotations__) | {k for k in vars(BatchEngine) if not k.startswith("_")}
        if name not in interface:
            raise AttributeError(f"{name} is not part of the BatchEngine interface")
        return getattr(self._inner, name)


def _final_scores(batch, rows: np.ndarray) -> list[tuple[int, list[int]]]:
    table = BatchTable(batch, [RandomAgent(seed=1), HeuristicAgent()], rows[: batch.num_games])
    ends: list[tuple[int, list[int]]] = []

    def ended(slots: np.ndarray, played: np.ndarray) -> None:
        ends.extend(zip(played.tolist(), table.batch.scores[slots].tolist(), strict=True))

    table.play_games(rows, ended)
    return sorted(ends)


def test_the_driver_plays_any_batched_engine_through_its_interface_alone() -> None:
    """The driver asked BatchGame's private methods and refused any other class: a second
    engine (JAX) could not be driven. Through the interface alone it plays the same games."""
    from llama_env.batch import BatchEngine

    rows = np.array([[0, 1, 1], [1, 0, 1], [1, 1, 0]] * 3, dtype=np.int64)
    other = _OtherEngine(BatchGame(4, 3, seed=11, auto_reset=False))
    assert isinstance(other, BatchEngine)
    with pytest.raises(AttributeError, match="not part of the BatchEngine interface"):
        other._over  # noqa: B018 - what the driver may no longer reach
    played = _final_scores(other, rows)
    assert played == _final_scores(BatchGame(4, 3, seed=11, auto_reset=False), rows) and len(played) == 9
