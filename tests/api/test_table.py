"""The table driver: asking agents, one validation rule, listeners, batching, and the
shared start of a game with an outside seat."""

from __future__ import annotations

import copy

import numpy as np
import pytest
from conftest import make_game

from llama_env.engine import Action, IllegalActionError, LlamaGame, Rules
from llama_env.observation import OBS_SIZE, encode
from llama_env.table import AgentError, Table, TableListener, advance_all, deal_table


class FirstLegal:
    """Deterministic: the lowest legal action. Counts its calls."""

    name = "first"

    def __init__(self) -> None:
        self.calls = 0

    def act(self, observation: np.ndarray, action_mask: np.ndarray) -> int:
        self.calls += 1
        assert observation.shape == (OBS_SIZE,) and action_mask.shape == (9,)
        return int(np.flatnonzero(action_mask)[0])


class Answer:
    """Always answers the same thing, whatever it is."""

    def __init__(self, answer: object) -> None:
        self.answer = answer

    def act(self, observation: np.ndarray, action_mask: np.ndarray) -> object:
        return self.answer


class Recorder(TableListener):
    def __init__(self) -> None:
        self.moves: list[tuple[int, int, int | None, int]] = []
        self.rounds = 0

    def on_move(self, table: Table, seat: int, action: int, drawn: int | None) -> None:
        # the listener sees the state the mover saw: the mover is still to act
        assert table.game.current_player == seat
        self.moves.append((seat, action, drawn, table.game.penalty(seat)))

    def on_round_end(self, table: Table, result) -> None:
        self.rounds += 1


def test_play_runs_a_whole_game_among_agents_and_the_listener_hears_every_move():
    game = LlamaGame(3, rng=4)
    rec = Recorder()
    agents = [FirstLegal() for _ in range(3)]
    results = Table(game, agents, listener=rec).play()
    assert game.game_over and results and results[-1].game_over
    assert rec.rounds == len(results) == game.round
    assert len(rec.moves) == sum(a.calls for a in agents)
    replay = LlamaGame(3, rng=4)  # the same moves replayed on the engine give the same game
    for seat, action, drawn, _ in rec.moves:
        assert replay.current_player == seat
        if action == Action.DRAW:
            assert drawn == replay.draw_pile[-1]
        replay.step(action)
    assert replay.to_dict() == game.to_dict()


def test_quit_is_heard_with_the_hand_it_quits_with():
    game = make_game(num_players=2, hands=[[6, 7], [1]], top=3, draw_pile=[5])
    rec = Recorder()
    Table(game, [Answer(8), Answer(8)], listener=rec).advance()
    assert rec.moves[0] == (0, 8, None, 16) and rec.moves[1] == (1, 8, None, 1)


def test_advance_stops_at_an_outside_seat_and_apply_moves_it():
    game = LlamaGame(3, rng=0)
    bots = [None, FirstLegal(), FirstLegal()]
    table = Table(game, bots)
    assert table.waiting_for_outside and table.to_act == 0
    assert table.advance() == []  # seat 0 starts: nothing to do
    table.apply(game.legal_actions()[0])
    table.advance()
    assert game.game_over or game.current_player == 0
    with pytest.raises(ValueError, match="seat 0 has no agent"):
        table.ask()
    with pytest.raises(ValueError, match=r"needs an agent at every seat; seats \[0\]"):
        table.play()


@pytest.mark.parametrize(
    ("answer", "reason"),
    [
        (True, "is not an action"),
        (2.0, "is not an action"),
        ("8", "is not an action"),
        (None, "is not an action"),
        (np.float32(8.5), "is not an action"),
        (9, "out of range"),
        (-1, "out of range"),
        (Action.PLAY_1, "is illegal"),
    ],
    ids=repr,
)
def test_one_rule_refuses_bad_answers_naming_agent_seat_and_legal_set(answer, reason):
    game = make_game(num_players=2, hands=[[6], [1]], top=3)  # seat 0 can only draw or quit
    before = game.to_dict()
    table = Table(game, [Answer(answer), FirstLegal()], names=["cheater", "first"])
    for drive in (table.advance, table.play_turn, lambda: advance_all([table])):
        with pytest.raises(IllegalActionError, match=reason) as info:
            drive()
        msg = str(info.value)
        assert "agent 'cheater' at seat 0" in msg and "legal now: 7 (DRAW), 8 (QUIT)" in msg
        assert info.value.seat == 0 and info.value.agent == "cheater" and info.value.legal == [7, 8]
        assert game.to_dict() == before
    with pytest.raises(IllegalActionError, match=reason):  # an outside seat: the same rule
        Table(game).apply(answer)
    assert game.to_dict() == before


@pytest.mark.parametrize("answer", [np.int64(7), np.int8(7), np.array([7]), Action.DRAW, 7])
def test_integer_answers_are_accepted(answer):
    game = make_game(num_players=2, hands=[[6], [1]], top=3)
    Table(game, [Answer(answer), None]).advance()
    assert game.hand_counts(0)[6] == 1 and game.hand_size_of(0) == 2


def test_listener_sees_the_same_validation():
    game = make_game(num_players=2, hands=[[6], [1]], top=3)
    rec = Recorder()
    with pytest.raises(IllegalActionError, match="is not an action"):
        Table(game, [Answer("7"), None], listener=rec).advance()
    assert rec.moves == []


class Batched(FirstLegal):
    def __init__(self) -> None:
        super().__init__()
        self.batches: list[int] = []

    def act_batch(self, observations: np.ndarray, action_masks: np.ndarray) -> np.ndarray:
        assert observations.dtype == np.float32 and action_masks.dtype == bool
        self.batches.append(len(observations))
        return np.array([int(np.flatnonzero(m)[0]) for m in action_masks])


def _drive_beside_twins(policy: Batched) -> list[tuple[int, object]]:
    """Eight 3-player games with ``policy`` in two seats, advanced with ``advance_all``
    beside twins with ``FirstLegal`` advanced one by one: every state must match.
    Returns every round that ``advance_all`` reported ended."""
    tables = [Table(LlamaGame(3, rng=s), [None, policy, policy]) for s in range(8)]
    twins = [Table(LlamaGame(3, rng=s), [None, FirstLegal(), FirstLegal()]) for s in range(8)]
    ended = []
    for _ in range(20):
        for t, u in zip(tables, twins, strict=True):
            if not t.game.game_over:
                a = t.game.legal_actions()[0]
                t.apply(a)
                u.apply(a)
        ended += advance_all(tables)
        for u in twins:
            u.advance()
        assert [t.game.to_dict() for t in tables] == [u.game.to_dict() for u in twins]
    return ended


def test_advance_all_answers_a_batch_agent_once_per_pass_and_matches_one_by_one():
    policy = Batched()
    ended = _drive_beside_twins(policy)
    assert all(i in range(8) and r is not None for i, r in ended)
    assert policy.calls == 0 and max(policy.batches) > 1  # act_batch, never act


def test_advance_all_asks_groups_smaller_than_batch_from_through_act():
    policy = Batched()
    policy.batch_from = 5
    _drive_beside_twins(policy)
    assert policy.calls > 0 and policy.batches and min(policy.batches) >= 5


def test_act_batch_must_answer_every_decision():
    class Short(Batched):
        def act_batch(self, observations, action_masks):
            return np.zeros(len(observations) + 1, dtype=np.int64)

    tables = [Table(LlamaGame(2, rng=s), [None, Short()]) for s in range(2)]
    for t in tables:
        t.apply(8)
    with pytest.raises(AgentError, match=r"one action per observation, shape \(\d+,\)"):
        advance_all(tables)


def test_deal_table_reseeds_opponents_then_deals_from_the_same_generator():
    class Seeded(FirstLegal):
        def reset(self, seed: int | None = None) -> None:
            self.seed = seed

    a, b = [Seeded(), Seeded()], [Seeded(), Seeded()]
    rng = np.random.default_rng(3)
    t1 = deal_table(copy.deepcopy(rng), 1, a, rules=Rules(3))
    t2 = deal_table(copy.deepcopy(rng), 1, b, rules=Rules(3))
    assert t1.game.to_dict() == t2.game.to_dict()
    assert [x.seed for x in a] == [x.seed for x in b] and a[0].seed != a[1].seed
    assert t1.agents == [a[1], None, a[0]]  # opponents in turn order from the outside seat's left
    with pytest.raises(ValueError, match="needs 2 opponents, got 1"):
        deal_table(rng, 0, a[:1], rules=Rules(3))


def test_deal_table_seats_a_member_of_a_population_at_each_seat_drawn_as_its_reset_draws():
    """deal_table seated the population itself, whose own act the drivers never call; one
    population object at several seats then played one member at all of them."""
    import agents

    population = agents.make("perturbed", seed=1, size=16)
    rng = np.random.default_rng(5)
    drawn = copy.deepcopy(rng).integers(2**31, size=3).tolist()
    table = deal_table(rng, 0, [population] * 3, rules=Rules(4))
    for seat, seed in zip((1, 2, 3), drawn, strict=True):
        population.reset(seed)  # the member a population at one seat played, as before
        assert table.agents[seat] is population.current and table.names[seat] == "perturbed:size=16"
    assert len({id(a) for a in table.agents[1:]}) > 1
    with pytest.raises(ValueError, match="names must label all 4 seats, got 2"):
        deal_table(rng, 0, [population] * 3, rules=Rules(4), names=["a", "b"])


@pytest.mark.parametrize(
    ("agents", "names", "error", "match"),
    [
        ([None], None, ValueError, "needs 3 seats"),
        ([None, None, object()], None, TypeError, "seat 2: an agent must have act"),
        # a class has a callable act too: it failed at its first move, missing an argument
        (
            [None, FirstLegal, None],
            None,
            TypeError,
            r"seat 1: got the class FirstLegal: pass an instance, FirstLegal\(\)",
        ),
        (None, ["a"], ValueError, "names must label all 3 seats"),
        # a name was read letter by letter ("seat 0: an agent must have act(...), got 'a'")
        ("abc", None, TypeError, r"agents must be a list of agents .*got the name 'abc'.*make\('abc'\)"),
    ],
)
def test_bad_tables_are_refused(agents, names, error, match):
    with pytest.raises(error, match=match):
        Table(LlamaGame(3, rng=0), agents, names=names)


def test_encode_of_a_table_seat_is_the_agents_view():
    game = LlamaGame(4, rng=1)
    seen = []

    class Spy(FirstLegal):
        def act(self, observation, action_mask):
            seen.append((observation.copy(), encode(game, game.current_player)))
            return super().act(observation, action_mask)

    Table(game, [Spy() for _ in range(4)]).advance()
    assert seen and all(np.array_equal(a, b) for a, b in seen)


# --------------------------------------------------------------------------- an agent that raises


class Fails:
    """Raises ``error`` from ``act``, ``act_batch`` or ``reset`` (``where``)."""

    name = "fails"

    def __init__(self, error: BaseException, where: str = "act") -> None:
        self.error = error
        self.where = where

    def act(self, observation: np.ndarray, action_mask: np.ndarray) -> int:
        if self.where == "act":
            raise self.error
        return int(np.flatnonzero(action_mask)[0])

    def act_batch(self, observations: np.ndarray, action_masks: np.ndarray) -> np.ndarray:
        if self.where == "act_batch":
            raise self.error
        return np.argmax(action_masks, axis=1)

    def reset(self, seed: int | None = None) -> None:
        if self.where == "reset":
            raise self.error


def _drive(how: str, agent: Fails) -> None:
    """A 3-player table with ``agent`` at seat 2, driven by ``how`` until it raises."""
    if how == "deal_table":
        deal_table(np.random.default_rng(0), 0, [FirstLegal(), agent], rules=Rules(3))
        raise AssertionError("deal_table did not raise")
    table = Table(LlamaGame(3, rng=4), [FirstLegal(), FirstLegal(), agent])
    if how == "play":
        table.play()
    elif how == "ask":
        while table.to_act != 2:
            table.play_turn()
        table.ask()
    else:  # advance_all: two tables, the failing agent answering both
        other = Table(LlamaGame(3, rng=5), [FirstLegal(), FirstLegal(), agent])
        advance_all([table, other])


@pytest.mark.parametrize(
    ("how", "where", "seat"),
    [
        ("play", "act", 2),
        ("ask", "act", 2),
        ("advance_all", "act_batch", 2),
        ("deal_table", "reset", 2),
    ],
)
def test_an_agent_that_raises_is_named_with_its_seat(how, where, seat):
    """An agent's own error came out bare from deep in its code: the evaluation and play
    commands could not say which agent failed (a traceback, or a ValueError taken for a
    usage error). The driver now names the agent and its seat, the error as the cause."""
    error = RuntimeError("the model file vanished")
    with pytest.raises(AgentError) as info:
        _drive(how, Fails(error, where))
    err = info.value
    where_text = "" if where == "act" else f" in {where}"
    assert str(err) == f"agent 'fails' at seat {seat}{where_text}: RuntimeError: the model file vanished"
    assert (err.agent, err.seat) == ("fails", seat)
    assert err.__cause__ is error


def test_the_game_is_untouched_when_an_agent_raises():
    agent = Fails(ValueError("bad shape"))
    table = Table(LlamaGame(3, rng=4), [FirstLegal(), FirstLegal(), agent])
    while table.to_act != 2:
        table.play_turn()
    before = table.game.to_dict()
    with pytest.raises(AgentError, match="agent 'fails' at seat 2: ValueError: bad shape"):
        table.advance()
    assert table.game.to_dict() == before
    agent.where = "nowhere"  # it recovers: the game goes on from where it stood
    assert table.play() is not None and table.game.game_over


@pytest.mark.parametrize(
    "error", [KeyboardInterrupt(), MemoryError(), ModuleNotFoundError("No module named 'torch'", name="torch")]
)
def test_what_is_no_agents_fault_goes_through_as_it_is(error):
    """Ctrl-C, memory and a missing package are reported as they are, not blamed on an agent."""
    table = Table(LlamaGame(2, rng=0), [FirstLegal(), Fails(error)])
    with pytest.raises(type(error)) as info:
        table.play()
    assert info.value is error


def test_an_illegal_answer_is_still_an_illegal_action_error():
    table = Table(LlamaGame(2, rng=0), [Answer(99), FirstLegal()])
    with pytest.raises(IllegalActionError):
        table.play()


def test_an_agent_error_crosses_a_process_boundary_whole():
    """Evaluation workers send their errors back pickled: an AgentError with keyword
    fields could not be unpickled, and the pool broke instead of naming the agent."""
    import pickle

    err = AgentError("agent 'x' at seat 1: RuntimeError: boom", agent="x", seat=1)
    back = pickle.loads(pickle.dumps(err))
    assert (type(back), str(back), back.agent, back.seat) == (AgentError, str(err), "x", 1)


def test_an_error_from_a_table_inside_an_agent_names_the_agent_at_this_table():
    """A search plays its worlds at tables of its own: when an agent there failed, the
    error named that inner agent (or an internal wrapper), not the agent the user seated."""

    class Searcher:
        name = "searcher"

        def act(self, observation: np.ndarray, action_mask: np.ndarray) -> int:
            Table(LlamaGame(2, rng=1), [Fails(RuntimeError("inner boom")), FirstLegal()]).play()
            raise AssertionError("the inner table did not raise")

    with pytest.raises(AgentError) as info:
        Table(LlamaGame(2, rng=0), [Searcher(), FirstLegal()]).play()
    assert str(info.value).startswith("agent 'searcher' at seat 0: AgentError: agent 'fails' at seat 0: RuntimeError")
    assert info.value.agent == "searcher" and isinstance(info.value.__cause__, AgentError)

    class Stepper:  # its own engine refuses what it tries: its failure, not an illegal answer of its
        name = "stepper"

        def act(self, observation: np.ndarray, action_mask: np.ndarray) -> int:
            LlamaGame(2, rng=0).step(99)
            return 0

    with pytest.raises(AgentError, match="agent 'stepper' at seat 0: IllegalActionError: .*out of range"):
        Table(LlamaGame(2, rng=0), [Stepper(), FirstLegal()]).play()
