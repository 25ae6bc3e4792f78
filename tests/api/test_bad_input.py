"""Bad input everywhere: actions, options and snapshots fail loudly, naming the problem,
and never change the game."""

from __future__ import annotations

import copy
import json

import numpy as np
import pytest
from conftest import make_game, make_state

import llama_env
from llama_env.engine import Action, IllegalActionError, LlamaGame, Rules
from llama_env.gym_env import LlamaEnv

BAD_ACTIONS = [-1, 9, 100, "3", 3.0, None, True, False, [3], np.float32(3), np.array([1, 2])]


def test_illegal_action_error_is_a_value_error():
    assert issubclass(IllegalActionError, ValueError)


def _game() -> LlamaGame:
    # top 5; seat 0 holds 1, 2 and 6: playing 6 is legal, 1 and 2 are not
    return make_game(num_players=3, hands=[[1, 2, 6], [3], [4]], top=5)


def test_illegal_action_names_the_action_and_the_legal_ones():
    g = _game()
    before = g.to_dict()
    with pytest.raises(IllegalActionError) as info:
        g.step(Action.PLAY_1)
    msg = str(info.value)
    assert "seat 0: action 0 (PLAY_1) is illegal" in msg
    assert "5 (PLAY_6)" in msg and "7 (DRAW)" in msg and "8 (QUIT)" in msg
    assert info.value.action == 0 and info.value.legal == [5, 7, 8]
    assert g.to_dict() == before


@pytest.mark.parametrize("action", BAD_ACTIONS, ids=repr)
def test_out_of_range_and_ill_typed_actions_raise_and_change_nothing(action):
    g = _game()
    before = g.to_dict()
    with pytest.raises(IllegalActionError) as info:
        g.step(action)
    msg = str(info.value)
    assert "legal now" in msg
    assert "out of range" in msg or "an action must be an integer" in msg
    assert g.to_dict() == before
    assert g.is_legal(5)  # and the game still works
    g.step(5)
    assert g.current_player == 1


@pytest.mark.parametrize("action", [np.int64(5), np.int8(5), np.array(5), np.array([5]), Action.PLAY_6])
def test_integer_like_actions_are_accepted(action):
    g = _game()
    g.step(action)
    assert g.top_card == 6 and g.current_player == 1


def _finished_game() -> LlamaGame:
    g = make_game(num_players=2, hands=[[3], [7]], top=3, scores=[0, 35])
    assert g.step(Action.PLAY_3).game_over
    return g


@pytest.mark.parametrize("action", [0, 7, 8, -1, "x"])
def test_step_after_game_over_raises(action):
    g = _finished_game()
    before = g.to_dict()
    with pytest.raises(IllegalActionError):
        g.step(action)
    assert g.to_dict() == before


def test_step_after_game_over_message():
    with pytest.raises(IllegalActionError, match="the game is over"):
        _finished_game().step(8)


@pytest.mark.parametrize("action", BAD_ACTIONS[:8], ids=repr)
def test_raw_aec_env_rejects_bad_actions_unchanged(action):
    e = llama_env.raw_env(num_players=3)
    e.reset(seed=4)
    before = e.game.to_dict()
    agent = e.agent_selection
    with pytest.raises(IllegalActionError):
        e.step(action)
    assert e.game.to_dict() == before and e.agent_selection == agent


@pytest.mark.parametrize("action", [-1, 9, "3", 3.0], ids=repr)
def test_wrapped_aec_env_rejects_out_of_space_actions_unchanged(action):
    """env() uses PettingZoo's AssertOutOfBoundsWrapper (documented in llama_env.env)."""
    e = llama_env.env(num_players=3)
    e.reset(seed=4)
    before = e.unwrapped.game.to_dict()
    with pytest.raises(AssertionError):
        e.step(action)
    assert e.unwrapped.game.to_dict() == before
    assert not any(e.terminations.values())


def test_aec_env_step_after_game_over_only_accepts_none():
    e = llama_env.raw_env(num_players=2, end_score=1)
    e.reset(seed=0)
    while not e.game.game_over:
        e.step(Action.QUIT)
    assert all(e.terminations.values())
    with pytest.raises(ValueError):
        e.step(Action.QUIT)
    while e.agents:
        e.step(None)


@pytest.mark.parametrize("action", BAD_ACTIONS[:8], ids=repr)
def test_gym_env_rejects_bad_actions_unchanged(action):
    env = LlamaEnv(num_players=3)
    env.reset(seed=4)
    before = env.game.to_dict()
    with pytest.raises(IllegalActionError):
        env.step(action)
    assert env.game.to_dict() == before


# ----------------------------------------------------------------- options

BAD_OPTIONS = [
    ({"num_players": 1}, "num_players must be between 2 and 6, got 1"),
    ({"num_players": 7}, "num_players must be between 2 and 6, got 7"),
    ({"num_players": "4"}, "num_players must be an integer"),
    ({"num_players": 4.0}, "num_players must be an integer"),
    ({"num_players": True}, "num_players must be an integer"),
    ({"num_players": None}, "num_players must be an integer"),
    ({"end_score": 0}, "end_score must be between 1 and"),
    ({"end_score": -40}, "end_score must be between 1 and"),
    ({"end_score": 10**9}, "end_score must be between 1 and"),
    ({"end_score": "40"}, "end_score must be an integer"),
    ({"end_score": 40.0}, "end_score must be an integer"),
    ({"hand_size": 0}, "hand_size must be between 1 and 13 for 4 players"),
    ({"hand_size": 14}, "hand_size must be between 1 and 13 for 4 players"),
    ({"num_players": 6, "hand_size": 10}, "hand_size must be between 1 and 9 for 6 players"),
    ({"num_players": 2, "hand_size": 28}, "hand_size must be between 1 and 27 for 2 players"),
    ({"hand_size": "6"}, "hand_size must be an integer"),
    ({"hand_size": 6.5}, "hand_size must be an integer"),
]


def _call(factory, kwargs):
    kwargs = dict(kwargs)
    n = kwargs.pop("num_players", 4)
    return factory(n, **kwargs)


@pytest.mark.parametrize(("kwargs", "match"), BAD_OPTIONS)
@pytest.mark.parametrize(
    "factory", [Rules, LlamaGame, llama_env.raw_env, llama_env.env, LlamaEnv], ids=lambda f: f.__name__
)
def test_bad_rule_options_raise_value_error_naming_the_option(factory, kwargs, match):
    with pytest.raises(ValueError, match=match):
        _call(factory, kwargs)


@pytest.mark.parametrize(
    ("kwargs", "said"),
    [
        ({"num_players": np.int64(9)}, "num_players must be between 2 and 6, got 9"),
        ({"num_players": 2, "hand_size": np.int32(30)}, "hand_size must be between 1 and 27 for 2 players (the deal "),
        ({"end_score": np.uint16(0)}, "end_score must be between 1 and 1000, got 0"),
    ],
    ids=repr,
)
def test_a_numpy_integer_out_of_range_is_named_as_its_number(kwargs, said):
    """The messages named ``np.int64(9)`` and ``np.int32(30)``; they said 9 and 30 before."""
    with pytest.raises(ValueError) as refused:
        _call(Rules, kwargs)
    assert str(refused.value).startswith(said) and "np." not in str(refused.value), str(refused.value)


@pytest.mark.parametrize(("n", "hand_size"), [(2, 27), (3, 18), (4, 13), (5, 11), (6, 9)])
def test_largest_hand_size_for_the_table_is_accepted(n, hand_size):
    g = LlamaGame(n, hand_size=hand_size, rng=0)
    assert len(g.draw_pile) == 56 - n * hand_size - 1 >= 0


def test_bad_reward_mode_and_rng():
    with pytest.raises(ValueError, match="reward must be one of 'game', 'round'"):
        llama_env.raw_env(3, reward="win")
    with pytest.raises(TypeError, match="rng"):
        LlamaGame(3, rng="seed")
    with pytest.raises(ValueError, match="rng: a seed must be a non-negative integer, got -1"):
        LlamaGame(3, rng=-1)


@pytest.mark.parametrize(
    "method", ["hand", "hand_counts", "hand_size_of", "played_counts", "drew_on_counts", "may_draw", "penalty"]
)
def test_a_seat_off_the_table_is_refused_not_read_as_another(method):
    """A negative seat read the last seat's data, one past the table an empty list or an
    IndexError from deep inside."""
    g = LlamaGame(4, rng=0)
    for seat in (-1, 4, 9):
        with pytest.raises(ValueError, match=rf"seat must be 0..3 at a 4-player table, got {seat}"):
            getattr(g, method)(seat)
    assert getattr(g, method)(3) == getattr(g, method)(np.int64(3))  # every seat of the table reads


@pytest.mark.parametrize("make", [llama_env.env, llama_env.raw_env])
def test_observe_and_the_spaces_name_the_agents_of_the_table(make):
    """action_space("player_7") and observation_space("x") were bare KeyErrors."""
    e = make(num_players=3)
    e.reset(seed=0)
    agents = "at this table; its agents are player_0, player_1, player_2"
    with pytest.raises(KeyError, match=f"no agent 'player_9' {agents}"):
        e.observe("player_9")
    with pytest.raises(KeyError, match=f"no agent 'player_7' {agents}"):
        e.action_space("player_7")
    with pytest.raises(KeyError, match=f"no agent 'x' {agents}"):
        e.observation_space("x")
    with pytest.raises(KeyError, match=rf"no agent \['player_0'\] {agents}"):
        e.action_space(["player_0"])
    assert e.action_space("player_2") is e.unwrapped.action_spaces["player_2"]


# ----------------------------------------------------------------- snapshots


def _corrupt(**changes):
    d = make_state(num_players=3, hands=[[1, 2], [3, 4], [5, 6]], top=3)
    d.update(changes)
    return d


def _without(key):
    d = make_state(num_players=3)
    del d[key]
    return d


REQUIRED = [
    "num_players",
    "scores",
    "hands",
    "draw_pile",
    "discard_pile",
    "quit",
    "current_player",
    "round",
    "game_over",
]


@pytest.mark.parametrize("key", REQUIRED)
def test_snapshot_missing_key(key):
    with pytest.raises(ValueError, match=f"missing required keys: {key}"):
        LlamaGame.from_dict(_without(key))


@pytest.mark.parametrize("key", ["endscore", "End_Score", "hand_sise", "starterr"])
def test_a_snapshot_key_that_misspells_one_the_engine_reads_is_refused(key):
    """A misspelt rule option played the standard rules without a word."""
    d = LlamaGame(4, rng=0).to_dict()
    d[key] = 3
    with pytest.raises(ValueError, match=f"snapshot key '{key}' is not one the engine reads: did you mean"):
        LlamaGame.from_dict(d)


def test_other_extra_snapshot_keys_are_allowed():
    d = LlamaGame(4, rng=0).to_dict()
    assert LlamaGame.from_dict({**d, "comment": "from a notebook", "version": 1}).to_dict() == d


def _extra_card():
    d = _corrupt()
    d["hands"][0].append(7)
    return d


def _missing_card():
    d = _corrupt()
    d["draw_pile"].remove(7)
    return d


def _swapped_card():
    d = _corrupt()
    d["draw_pile"].remove(7)
    d["draw_pile"].append(1)
    return d


CORRUPT = [
    (lambda: [1, 2, 3], "snapshot must be a dict"),
    (_extra_card, r"56-card deck.*llama: 9"),
    (_missing_card, r"56-card deck.*llama: 7"),
    (_swapped_card, r"56-card deck.*one: 9, llama: 7"),
    (lambda: _corrupt(num_players=7), "num_players must be between 2 and 6"),
    (lambda: _corrupt(num_players="3"), "num_players must be an integer"),
    (lambda: _corrupt(current_player=3), "current_player must be a seat 0..2, got 3"),
    (lambda: _corrupt(current_player=-1), "current_player must be a seat 0..2, got -1"),
    (lambda: _corrupt(current_player=1.0), "current_player must be an integer"),
    (lambda: _corrupt(scores=[0, 0]), "scores must be a list of 3 integers"),
    (lambda: _corrupt(scores=[0, 0, "1"]), "scores must be a list of 3 integers"),
    (lambda: _corrupt(scores=[0, -1, 0]), "scores must be non-negative"),
    (lambda: _corrupt(hands=[[1, 2], [3, 4]]), "'hands' must be a list of 3 hands"),
    (lambda: _corrupt(hands=[[1, 2], [3, 4], 5]), r"hands\[2\] must be a list of card codes"),
    (lambda: _corrupt(quit=[False, False]), "'quit' must be a list of 3 booleans"),
    (lambda: _corrupt(quit=[0, 0, 0]), "'quit' must be a list of 3 booleans"),
    (lambda: _corrupt(quit=[True, False, False]), "current_player 0 has quit the round"),
    (lambda: _corrupt(quit=[True, True, True]), "every player quit but the round not scored"),
    (lambda: _corrupt(round=0), "round must be at least 1"),
    (lambda: _corrupt(game_over="no"), "game_over must be a bool"),
    (lambda: _corrupt(game_over=True), "game_over=True contradicts scores"),
    (lambda: _corrupt(scores=[45, 0, 0], game_over=False, round=3), "game_over=False contradicts scores"),
    (lambda: _corrupt(scores=[71, 0, 3], game_over=True, round=3), r"71, 0, 3\] cannot come from end_score 40.*to 70"),
    (lambda: _corrupt(scores=[10**7, 0, 3], game_over=True, round=3), "cannot come from end_score 40"),
    (lambda: _corrupt(scores=[45, 0, 3], game_over=True, round=3), "game_over=True but its last round did not end"),
    (lambda: _corrupt(end_score=0), "end_score must be between"),
    (lambda: _corrupt(hand_size=30), "hand_size must be between 1 and 18 for 3 players"),
    (lambda: _corrupt(starter=3), "starter must be a seat 0..2"),
    (lambda: _corrupt(last_player=5), "last_player must be a seat 0..2 or None"),
    (lambda: _corrupt(rng_state={"bit_generator": "NoSuchBitGen"}), "names bit generator 'NoSuchBitGen'; allowed"),
    (lambda: _corrupt(rng_state={"state": 1}), "names bit generator None; allowed"),
    (lambda: _corrupt(rng_state={"bit_generator": "BitGenerator"}), "names bit generator 'BitGenerator'; allowed"),
    (lambda: _corrupt(rng_state={"bit_generator": "seed"}), "names bit generator 'seed'; allowed"),
    (lambda: _corrupt(rng_state="PCG64"), "rng_state must be a numpy bit generator state"),
    (lambda: _corrupt(rng_state=_rng_state(state=-1)), "rng_state.state.state must be an integer >= 0"),
    (lambda: _corrupt(rng_state=_rng_state(inc=2**200)), "not a valid PCG64 state"),
    (lambda: _corrupt(rng_state=_rng_state(uinteger=-5)), "not a valid PCG64 state"),
    (lambda: _corrupt(rng_state={**_rng_state(), "bit_generator": "SFC64"}), "not a valid SFC64 state"),
    # impossible states
    (lambda: _pile([7, 5]), r"discard_pile breaks the play rule at position 1: a 5 cannot lie on a llama"),
    (lambda: _pile([3, 4, 6]), r"discard_pile breaks the play rule at position 2: a 6 cannot lie on a 4"),
    (lambda: _pile([3, 3], last_player=None), r"1 card\(s\) played this round but no last_player"),
    (lambda: _corrupt(last_player=1), "names last_player 1 but no card was played"),
    (lambda: _corrupt(hand_size=9), r"hand_size=9 is contradicted by the draw pile"),
    (lambda: _corrupt(scores=[0, 3, 0], round=1), r"round 1 but holds scores \[0, 3, 0\]"),
    (lambda: _corrupt(round=2), r"1 scored round\(s\) \(round 2\) but every score is 0"),
]


def _rng_state(**state):
    """A PCG64 state with some of its numbers replaced."""
    d = LlamaGame(3, rng=0).to_dict()["rng_state"]
    for key, value in state.items():
        if key in d["state"]:
            d["state"][key] = value
        else:
            d[key] = value
    return d


def _pile(discard, **changes):
    """A snapshot with this discard pile (the other cards in the draw pile)."""
    d = make_state(num_players=3, hands=[[1, 2], [3, 4], [5, 6]], discard_pile=discard, last_player=2)
    d.update(changes)
    return d


def _with_code(where, code):
    def build():
        d = _corrupt()
        if where == "hand":
            d["hands"][1][0] = code
        elif where == "draw":
            d["draw_pile"][0] = code
        else:
            d["discard_pile"][0] = code
        return d

    return build


for _where, _what in [("hand", r"hands\[1\]"), ("draw", "draw_pile"), ("discard", "discard_pile")]:
    for _code in (0, 8, -1, "3", 3.0, True, None):
        CORRUPT.append((_with_code(_where, _code), f"{_what} holds .*, which is not a card code 1..7"))


def _empty_discard():
    d = make_state(num_players=2, hands=[[1], [2]], discard_pile=[], draw_pile=None)
    return d


def _empty_hand_mid_round():
    d = make_state(num_players=3, hands=[[1, 2], [], [5, 6]], top=3)
    return d


def _pile_not_a_list():
    d = _corrupt()
    d["draw_pile"] = tuple(d["draw_pile"])
    return d


CORRUPT += [
    (_empty_discard, "discard_pile is empty"),
    (_empty_hand_mid_round, "seat 1 has no cards but the round was not scored"),
    (_pile_not_a_list, "draw_pile must be a list of card codes"),
]


@pytest.mark.parametrize(("build", "match"), CORRUPT, ids=[m for _, m in CORRUPT])
def test_corrupt_snapshot_raises_value_error_naming_the_problem(build, match):
    d = build()
    frozen = copy.deepcopy(d)
    with pytest.raises(ValueError, match=match):
        LlamaGame.from_dict(d)
    assert d == frozen  # the caller's dict is left alone


def test_the_uncorrupted_snapshot_is_accepted():
    """Guard: the corruptions above are all that is wrong with their snapshots."""
    g = LlamaGame.from_dict(_corrupt())
    assert g.hand(0) == [1, 2] and g.top_card == 3
    d = g.to_dict()
    assert LlamaGame.from_dict(d).to_dict() == d
    finished = _finished_game().to_dict()
    assert LlamaGame.from_dict(finished).game_over  # a finished game (possibly with empty hands) is fine
    highest = _corrupt(scores=[70, 0, 3], game_over=True, round=3, quit=[True] * 3)  # 39, then a round of 31
    assert LlamaGame.from_dict(highest).scores == [70, 0, 3]


def _nested(depth):
    """A list nested ``depth`` deep: ``[[[...]]]``."""
    inner: list = []
    for _ in range(depth):
        inner = [inner]
    return inner


def _with_history(**changes):
    d = LlamaGame(3, rng=0).to_dict()
    d["history"] = {**d["history"], **changes}
    return d


HOSTILE = {
    "history 50,000 deep": lambda: {**_corrupt(), "history": _nested(50_000)},
    "history moves 50,000 deep": lambda: _with_history(moves=_nested(50_000)),
    "history played 50,000 deep": lambda: _with_history(played=_nested(50_000)),
    "history quit_at seat 50,000 deep": lambda: _with_history(quit_at=[0, 0, _nested(50_000)]),
    "history played a million long": lambda: _with_history(played=[0] * 1_000_000),
    "history drew_on rows a million long": lambda: _with_history(drew_on=[[0] * 1_000_000] * 3),
    "history moves of 20,000 digits": lambda: _with_history(moves=10**20_000),
    "history with 200,000 keys": lambda: _with_history(**{str(k): 0 for k in range(200_000)}),
    "history keys that do not sort": lambda: {**_corrupt(), "history": {1: 0, "moves": 0, 2: 0, 3: 0, 4: 0}},
    "hands 50,000 deep": lambda: _corrupt(hands=_nested(50_000)),
    "a card 50,000 deep": lambda: _corrupt(hands=[[1, _nested(50_000)], [3, 4], [5, 6]]),
    "a hand of a million cards": lambda: _corrupt(hands=[[1] * 1_000_000, [3, 4], [5, 6]]),
    "scores 50,000 deep": lambda: _corrupt(scores=_nested(50_000)),
    "rng_state 50,000 deep": lambda: _corrupt(rng_state=_nested(50_000)),
    "rng_state.state 50,000 deep": lambda: _corrupt(rng_state=_rng_state(state=_nested(50_000))),
}


@pytest.mark.parametrize("case", list(HOSTILE))
def test_deep_or_long_snapshot_fields_are_a_value_error_in_a_line(case):
    """The history of a snapshot is two levels deep (seats, then counts per value) and
    every list in it has a fixed length; a snapshot nested 50,000 deep once raised
    ``RecursionError`` while its error message took the ``repr`` of it, and a long one
    spent its time writing a message megabytes long."""
    import time

    d = HOSTILE[case]()
    start = time.perf_counter()
    with pytest.raises(ValueError, match="snapshot") as info:
        LlamaGame.from_dict(d)
    assert time.perf_counter() - start < 1.0
    assert len(str(info.value)) < 400 and "\n" not in str(info.value)


BAD_INTEGERS = [True, False, 1.0, 2.5, "3", None, [1]]


@pytest.mark.parametrize("value", BAD_INTEGERS, ids=repr)
@pytest.mark.parametrize(
    ("bit_generator", "field"),
    [
        ("PCG64", ("state", "state")),
        ("PCG64", ("state", "inc")),
        ("PCG64", ("has_uint32",)),
        ("PCG64", ("uinteger",)),
        ("PCG64DXSM", ("uinteger",)),
        ("Philox", ("buffer_pos",)),
        ("Philox", ("state", "counter", 0)),
        ("SFC64", ("state", "state", 3)),
        ("MT19937", ("state", "pos")),
        ("MT19937", ("state", "key", 5)),
    ],
    ids=str,
)
def test_a_generator_field_that_is_no_integer_is_refused(bit_generator, field, value):
    """numpy takes ``True`` as 1 and ``2.5`` as 2 in a bit generator's state; a snapshot
    that holds them was restored as if it were whole."""
    g = LlamaGame(3, rng=np.random.Generator(getattr(np.random, bit_generator)(0)))
    d = g.to_dict()
    assert LlamaGame.from_dict(copy.deepcopy(d)).to_dict() == d  # guard: the state as saved is accepted
    *path, last = field
    place = d["rng_state"]
    for key in path:
        place = place[key]
    place[last] = value
    name = ".".join(str(k) for k in field if isinstance(k, str))
    with pytest.raises(ValueError, match=rf"not a valid {bit_generator} state: rng_state\.{name} must be"):
        LlamaGame.from_dict(d)


@pytest.mark.parametrize("version", [True, 1.0, "1", [1], _nested(50_000)], ids=["true", "1.0", "'1'", "[1]", "deep"])
def test_a_game_record_version_that_is_no_integer_is_refused(version):
    """``True == 1 == 1.0``: a record with ``"version": true`` once passed as version 1."""
    from llama_env.record import GameRecording

    record = GameRecording(["a", "b", "c"], ["random"] * 3, LlamaGame(3, rng=0).to_dict()).to_json()
    assert GameRecording.from_json(record).start == record["start"]  # guard: the record is accepted as written
    with pytest.raises(ValueError, match="game record version .* is not supported"):
        GameRecording.from_json({**record, "version": version})


def test_a_game_records_context_is_kept_and_must_be_an_object():
    """A record may say where it came from (``context``); a reader keeps it, leaves it
    out when empty, and refuses one that is not a JSON object."""
    from llama_env.record import GameRecording

    record = GameRecording(["a", "b"], ["random"] * 2, LlamaGame(2, rng=0).to_dict())
    assert "context" not in record.to_json()
    with_context = {**record.to_json(), "context": {"seed": 3, "game": 7}}
    assert GameRecording.from_json(with_context).to_json() == with_context
    with pytest.raises(ValueError, match="game record 'context' must be an object"):
        GameRecording.from_json({**record.to_json(), "context": [1]})


@pytest.mark.parametrize(
    ("bit_generator", "path", "value", "bound"),
    [
        ("MT19937", ("state", "pos"), 10**8, 624),
        ("MT19937", ("state", "pos"), 700, 624),
        ("Philox", ("buffer_pos",), 5, 4),
        ("PCG64", ("has_uint32",), 2, 1),
        ("SFC64", ("uinteger",), 2**32, 2**32 - 1),
    ],
)
def test_a_generator_state_that_points_outside_its_buffer_is_refused(bit_generator, path, value, bound):
    """numpy does not check MT19937's ``pos`` or Philox's ``buffer_pos``: a snapshot or a
    record (the web app replays records sent to it) with ``pos`` 10**8 passed the checks
    and crashed the process with a segmentation fault at the next deal, and with ``pos``
    700 dealt from stray memory, differently each run."""
    start = json.loads(
        json.dumps(LlamaGame(2, rng=np.random.Generator(getattr(np.random, bit_generator)(0))).to_dict())
    )
    assert LlamaGame.from_dict(json.loads(json.dumps(start))).to_dict() == start  # guard: the state as written loads
    field = start["rng_state"]
    for key in path[:-1]:
        field = field[key]
    field[path[-1]] = value
    with pytest.raises(
        ValueError, match=rf"not a valid {bit_generator} state: .*{path[-1]} must be an integer 0\.\.{bound}"
    ):
        LlamaGame.from_dict(start)


def test_a_game_record_without_the_generators_state_is_refused():
    """Without ``rng_state`` every replay dealt the later rounds afresh: the record was
    accepted, then replayed differently each time (or failed at a move of round 2)."""
    from llama_env.record import GameRecording

    record = GameRecording(["a", "b"], ["random"] * 2, LlamaGame(2, rng=0).to_dict()).to_json()
    for start in (
        {k: v for k, v in record["start"].items() if k != "rng_state"},
        {**record["start"], "rng_state": None},
    ):
        with pytest.raises(ValueError, match="game record 'start' has no rng_state"):
            GameRecording.from_json({**record, "start": start})


def test_a_record_that_goes_on_after_the_game_ended_says_so():
    """It said "seat 1 moves when seat 0 is to act" of a game that was over."""
    from llama_env.record import GameRecording

    game = LlamaGame(2, rng=0, end_score=1)
    start = game.to_dict()
    moves = []
    while not game.game_over:
        seat, action = (
            game.current_player,
            Action.QUIT if Action.QUIT in game.legal_actions() else game.legal_actions()[0],
        )
        game.step(action)
        moves.append((seat, int(action)))
    record = GameRecording(["a", "b"], ["random"] * 2, start, [*moves, (1, int(Action.QUIT))])
    with pytest.raises(ValueError, match=rf"^move {len(moves)}: the game is already over"):
        record.replay()


# --------------------------------------------------------------------------- one rule everywhere

EVERY_INPUT = [
    *range(-2, 11),
    True,
    False,
    np.bool_(True),
    "3",
    3.0,
    np.float32(3),
    None,
    [3],
    np.array([1, 2]),
    np.int64(5),
    np.array(5),
    np.array([5]),
    Action.PLAY_6,
]


@pytest.mark.parametrize("action", EVERY_INPUT, ids=repr)
def test_is_legal_and_step_agree_on_every_input(action):
    g = _game()
    legal = g.is_legal(action)
    before = g.to_dict()
    try:
        g.step(action)
        accepted = True
    except IllegalActionError:
        accepted = False
        assert g.to_dict() == before
    assert legal == accepted


@pytest.mark.parametrize("action", [True, False, np.bool_(False)], ids=repr)
def test_wrapped_env_refuses_bools_with_an_assertion_naming_the_space(action):
    e = llama_env.env(num_players=3)
    e.reset(seed=4)
    before = e.unwrapped.game.to_dict()
    with pytest.raises(AssertionError, match=r"not in the action space Discrete\(9\): an action is an integer"):
        e.step(action)
    assert e.unwrapped.game.to_dict() == before


@pytest.mark.parametrize("value", ["no", "yes", 2, None, 1.0])
def test_random_first_player_must_be_a_bool(value):
    for make in (
        lambda: LlamaGame(3, rng=0, random_first_player=value),
        lambda: llama_env.raw_env(3, random_first_player=value),
        lambda: LlamaEnv(num_players=3, random_first_player=value),
    ):
        with pytest.raises(TypeError, match="random_first_player must be True or False"):
            make()


def test_raw_env_before_reset_and_after_the_end_says_what_to_do():
    e = llama_env.raw_env(num_players=3)
    for call in (lambda: e.step(8), lambda: e.last(), lambda: e.observe("player_0")):
        with pytest.raises(RuntimeError, match=r"call reset\(\) first"):
            call()
    e.reset(seed=0)
    while e.agents:
        _, _, term, trunc, _ = e.last()
        e.step(None if term or trunc else 8)
    with pytest.raises(RuntimeError, match=r"every agent has stepped out: call reset\(\)"):
        e.step(8)


@pytest.mark.parametrize("make", [llama_env.env, llama_env.raw_env])
def test_last_after_every_agent_stepped_out_says_what_to_do(make):
    """It was a bare KeyError 'player_0' (step said what to do)."""
    e = make(num_players=3)
    e.reset(seed=0)
    for _ in e.agent_iter():
        _, _, term, trunc, _ = e.last()
        e.step(None if term or trunc else 8)
    assert e.agents == []
    with pytest.raises(RuntimeError, match=r"^the game is over and every agent has stepped out: call reset\(\)"):
        e.last()
    e.reset(seed=0)
    assert e.last()[2] is False


def test_gym_env_illegal_action_points_to_the_mask_and_terminate_mode():
    env = LlamaEnv(num_players=3)
    env.reset(seed=1)
    illegal = next(a for a in range(9) if not env.action_masks()[a])
    with pytest.raises(IllegalActionError, match="illegal_action='terminate'") as info:
        env.step(illegal)
    assert "MaskablePPO" in str(info.value) and info.value.action == illegal


def test_a_recorded_move_the_rules_refuse_names_its_place_in_the_record():
    """A record whose later deal had been changed failed its replay with "seat 0: action 4
    (PLAY_5) is illegal" and no word of which of its moves."""
    from llama_env.record import GameRecording

    game = LlamaGame(3, rng=0)
    moves = []
    for _ in range(4):
        seat, action = game.current_player, sorted(game.legal_actions())[-1]
        game.step(action)
        moves.append((seat, int(action)))
    start = LlamaGame(3, rng=0).to_dict()
    legal_then = LlamaGame.from_dict(start)
    for _, action in moves[:2]:
        legal_then.step(action)
    illegal = next(a for a in range(7) if a not in legal_then.legal_actions())
    bad = GameRecording(["a", "b", "c"], ["random"] * 3, start, [*moves[:2], (moves[2][0], illegal)])
    with pytest.raises(ValueError, match=rf"^move 2: seat {moves[2][0]}: action {illegal} \(\w+\) is illegal"):
        bad.replay()


# --------------------------------------------------------------------------- small inputs, checked


def test_table_sizes_that_are_not_integers_are_refused_not_truncated():
    """``Rules.options_at([2.7])`` gave the rules of a 2-player table."""
    with pytest.raises(ValueError, match="num_players must be an integer, got 2.7"):
        Rules.options_at([2.7])
    with pytest.raises(ValueError, match="num_players must be an integer"):
        Rules.options_at(["3"])
    assert list(Rules.options_at([4, 2, 4, np.int64(3)])) == [2, 3, 4]


@pytest.mark.parametrize("card", [0, 8, 9, -1, 1.9, True, "3", None])
def test_action_play_takes_only_card_codes(card):
    """``Action.play(8)`` was the draw, ``Action.play(9)`` quitting, ``Action.play(1.9)``
    a one."""
    with pytest.raises(ValueError, match="a card code is an integer 1..7"):
        Action.play(card)


def test_action_play_of_each_card_code():
    assert [Action.play(c) for c in range(1, 8)] == list(Action)[:7]
    assert Action.play(np.int64(7)) == Action.PLAY_LLAMA


@pytest.mark.parametrize("seat", [True, 1.0, "1", None, -1, 4])
def test_a_seat_must_be_an_integer_of_the_table(seat):
    """``hand(True)`` was seat 1's hand, ``hand(1.0)`` a TypeError from a list."""
    game = LlamaGame(4, rng=0)
    with pytest.raises(ValueError, match="seat must be 0..3 at a 4-player table"):
        game.hand(seat)
    assert game.hand(np.int64(1)) == game.hand(1)


@pytest.mark.parametrize("seat", [-1, 2, True, 0.0])
def test_deal_table_refuses_a_seat_the_table_does_not_have(seat):
    """``deal_table(seat=-1)`` seated the outside player at seat 1 of a 2-player table."""
    from agents.random_agent import RandomAgent
    from llama_env.table import deal_table

    with pytest.raises(ValueError, match="seat must be 0..1 at a 2-player table"):
        deal_table(np.random.default_rng(0), seat, [RandomAgent()], rules=Rules(2))


def test_numpy_integers_count_in_a_snapshots_history():
    """``scores`` took numpy integers, the history's counts refused them."""
    d = LlamaGame(3, rng=0).to_dict()
    h = d["history"]
    h["moves"] = np.int64(h["moves"])
    h["played"] = [[np.int64(x) for x in row] for row in h["played"]]
    h["quit_on"] = [np.int64(x) for x in h["quit_on"]]
    assert LlamaGame.from_dict(d).to_dict() == LlamaGame(3, rng=0).to_dict()


@pytest.mark.parametrize("mode", ["Round", "shaped ", "", None])
def test_an_unknown_reward_mode_is_refused_not_taken_for_the_game_reward(mode):
    from llama_env.engine import RoundResult
    from llama_env.rewards import batch_rewards, rewards_for

    game = LlamaGame(2, rng=0)
    result = None
    while result is None:
        result = game.step(game.legal_actions()[-1])
    assert isinstance(result, RoundResult)
    with pytest.raises(ValueError, match="reward must be one of"):
        rewards_for(result, mode)
    with pytest.raises(ValueError, match="reward must be one of"):
        batch_rewards(mode, np.zeros((1, 2)), np.ones((1, 2)), np.zeros(1, dtype=bool))


def test_a_huge_integer_action_is_an_illegal_action_error():
    """``step(10**5000)`` raised Python's own ValueError (too many digits to print), which
    ``except IllegalActionError`` did not catch."""
    with pytest.raises(IllegalActionError, match="out of range"):
        LlamaGame(2, rng=0).step(10**5000)


def test_a_snapshot_with_thousands_of_unknown_keys_is_refused_and_a_misspelling_is_found_among_many():
    """Each unknown key is compared with every known one for a misspelling: a 2 MB body of
    20,000 keys took seconds of the server's time. Up to 1,000 other keys are read, every
    one looked at (a cap on the keys looked at let a misspelt end_score after 64 others
    play the standard rules); more are refused."""
    d = LlamaGame(3, rng=0).to_dict()
    with pytest.raises(ValueError, match="at most 1000 others, got 20000 others"):
        LlamaGame.from_dict({**d, **{f"note_{i}": 0 for i in range(20_000)}})
    many = {f"note_{i}": 0 for i in range(999)}
    assert LlamaGame.from_dict({**d, **many, "x" * 10_000: 0}).to_dict() == d
    with pytest.raises(ValueError, match="'endscore' is not one the engine reads: did you mean 'end_score'"):
        LlamaGame.from_dict({**d, **many, "endscore": 20})
