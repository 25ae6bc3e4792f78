"""Terminal play and watch with agents that misbehave, populations, odd configurations and
closed streams: every failure is one line that names the agent and its seat, never a
traceback, and a population plays a member of its own drawing every game."""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from conftest import League

import agents
from llama_env import agent as registry
from llama_env.engine import IllegalActionError, LlamaGame, Rules
from train.cli import main
from train.play import terminal
from train.play.terminal import MoveError, PlayConfig, WatchConfig, parse_move, play, watch


def _first_legal(mask: np.ndarray) -> int:
    return int(np.flatnonzero(mask)[0])


class Boom:
    def act(self, observation, action_mask):
        raise RuntimeError("boom in act")


class ValErr:
    def act(self, observation, action_mask):
        raise ValueError("value error in act")


class Illegal:
    def act(self, observation, action_mask):
        return int(np.flatnonzero(~np.asarray(action_mask, bool))[0])


class Floaty:
    def act(self, observation, action_mask):
        return float(_first_legal(action_mask))


class BadReset:
    def reset(self, seed=None):
        raise ValueError("bad reset")

    def act(self, observation, action_mask):
        return _first_legal(action_mask)


class CtorBoom:
    def __init__(self, x: int = 1) -> None:
        raise RuntimeError("boom in ctor")

    def act(self, observation, action_mask):  # pragma: no cover - never built
        return 0


TEST_AGENTS = {
    "tp_boom": Boom,
    "tp_valerr": ValErr,
    "tp_illegal": Illegal,
    "tp_floaty": Floaty,
    "tp_badreset": BadReset,
    "tp_ctorboom": CtorBoom,
}


@pytest.fixture
def misbehaving() -> Iterator[None]:
    """The agents above, registered for the test only."""
    for name, cls in TEST_AGENTS.items():
        registry.register(name)(cls)
    try:
        yield
    finally:
        for name in TEST_AGENTS:
            for table in (registry._REGISTRY, registry._DOCS, registry._GROUPS):
                table.pop(name, None)


def _moves(*lines: str) -> io.StringIO:
    return io.StringIO("".join(line + "\n" for line in lines))


def _one_error_line(err: str) -> str:
    assert "Traceback" not in err, err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    return lines[0]


# --------------------------------------------------------------------------- populations and resets


class Recorder:
    """Remembers the seeds it is reset with."""

    name = "recorder"

    def __init__(self) -> None:
        self.resets: list[int | None] = []

    def reset(self, seed=None):
        self.resets.append(seed)

    def act(self, observation, action_mask):
        return _first_legal(action_mask)


def test_every_agent_is_reset_for_each_game_with_or_without_a_seed():
    """Without --seed an agent was never reset, so a population (perturbed) played the
    member its constructor seated, members[0], in every game."""
    rec = Recorder()
    play(PlayConfig(rules=Rules(3), opponents=(rec,)), _moves("exit"), io.StringIO())
    assert rec.resets == [None, None]  # one seat each, its own random state draws
    rec.resets.clear()
    watch(WatchConfig((rec, "heuristic"), rules=Rules(2, end_score=5), delay=0), io.StringIO())
    assert rec.resets == [None]
    rec.resets.clear()
    play(PlayConfig(rules=Rules(2), opponents=(rec,), seed=4), _moves("exit"), io.StringIO())
    assert len(rec.resets) == 1 and isinstance(rec.resets[0], int)


@pytest.mark.parametrize("seed", [None, 3])
def test_a_registered_population_whose_own_act_raises_plays_through_its_members(register_league, seed):
    """play and watch seated the population itself, so one that keeps docs/agents.md's
    contract (no driver calls its own ``act``) failed at its first move: "agent
    'tp_league' at seat 1: NotImplementedError: a population plays through its members"."""
    leagues = register_league("tp_league")
    rules = Rules(3, end_score=10)
    code = play(PlayConfig(rules=rules, opponents="tp_league", seed=seed), _moves(*["d", "q"] * 300), io.StringIO())
    assert code == terminal.EXIT_FINISHED
    assert watch(WatchConfig(("tp_league", "random", "tp_league"), seed=seed, delay=0), io.StringIO()) == 0
    assert len(leagues) == 4 and leagues.moves > 0
    assert sum(len(m.resets) for m in leagues.members) == 4  # one member reset at each of the population's seats


def test_a_population_plays_a_member_of_its_drawing_each_unseeded_game():
    population = League(size=8)
    for _ in range(8):
        play(PlayConfig(rules=Rules(2), opponents=(population,)), _moves("exit"), io.StringIO())
    assert sum(len(m.resets) for m in population.members) == 8
    assert sum(bool(m.resets) for m in population.members) > 1


# --------------------------------------------------------------------------- agent failures


@pytest.mark.parametrize(
    ("agent", "fragment"),
    [
        ("tp_boom", "agent 'tp_boom' at seat 1: RuntimeError: boom in act"),
        ("tp_valerr", "agent 'tp_valerr' at seat 1: ValueError: value error in act"),
        ("tp_illegal", "agent 'tp_illegal' at seat 1: action "),
        ("tp_floaty", "agent 'tp_floaty' at seat 1: "),
        ("tp_badreset", "agent 'tp_badreset' at seat 1: ValueError: bad reset"),
    ],
)
@pytest.mark.parametrize("seed", [None, "1"])
def test_an_agent_failing_in_play_is_one_line_naming_it_and_its_seat(
    misbehaving, capsys, monkeypatch, agent, fragment, seed
):
    monkeypatch.setattr(sys, "stdin", _moves(*["d", "q"] * 50))
    argv = ["play", "--players", "2", "--opponents", agent] + (["--seed", seed] if seed else [])
    code = main(argv)
    line = _one_error_line(capsys.readouterr().err)
    assert code == 1  # the game is left unfinished; not a usage error (2)
    assert line.startswith("llama-rl: error: ") and fragment in line


@pytest.mark.parametrize(
    ("agent", "fragment"),
    [
        ("tp_boom", "agent 'tp_boom' at seat 0: RuntimeError: boom in act"),
        ("tp_valerr", "agent 'tp_valerr' at seat 0: ValueError: value error in act"),
        ("tp_illegal", "agent 'tp_illegal' at seat 0: action "),
        ("tp_badreset", "agent 'tp_badreset' at seat 0: ValueError: bad reset"),
    ],
)
def test_an_agent_failing_in_watch_is_one_line_naming_it_not_a_usage_error(misbehaving, capsys, agent, fragment):
    code = main(["watch", "--seed", "1", "--delay", "0", "--agents", f"{agent},heuristic"])
    line = _one_error_line(capsys.readouterr().err)
    assert code == 1
    assert fragment in line


def test_a_failing_agent_raises_an_agent_error_from_the_python_api():
    with pytest.raises(terminal.AgentError, match="agent 'Boom' at seat 2: RuntimeError: boom in act") as info:
        play(PlayConfig(rules=Rules(3), opponents=("random", Boom())), _moves(*["d"] * 200), io.StringIO())
    assert info.value.agent == "Boom" and info.value.seat == 2
    assert isinstance(info.value.__cause__, RuntimeError)


def test_an_illegal_answer_names_the_agent_not_the_seat_label(misbehaving):
    """The table was built with the seat labels as names: "agent 'player_1' at seat 1"."""
    with pytest.raises(IllegalActionError, match=r"^agent 'tp_illegal' at seat 1: action \d"):
        play(PlayConfig(rules=Rules(2), opponents="tp_illegal", seed=1), _moves(*["d"] * 50), io.StringIO())
    with pytest.raises(IllegalActionError, match=r"^agent 'Illegal' at seat 1: action \d"):
        watch(WatchConfig(("random", Illegal()), seed=1, delay=0), io.StringIO())


def test_a_constructor_failing_is_named_by_its_spec(misbehaving, capsys):
    code = main(["watch", "--delay", "0", "--agents", "tp_ctorboom:x=2,heuristic"])
    line = _one_error_line(capsys.readouterr().err)
    assert code == 2
    assert "cannot build agent 'tp_ctorboom:x=2': RuntimeError: boom in ctor" in line
    # from Python as from evaluation and the Gym env: the registry names the spec, a ValueError
    with pytest.raises(ValueError, match="^cannot build agent 'tp_ctorboom': RuntimeError: boom in ctor$"):
        play(PlayConfig(rules=Rules(2), opponents="tp_ctorboom"), _moves("exit"), io.StringIO())


# --------------------------------------------------------------------------- configurations


def test_a_single_spec_string_fills_every_other_seat_as_llama_v0_reads_it():
    out = io.StringIO()
    play(PlayConfig(rules=Rules(4), opponents="cautious:threshold=2", seed=0), _moves("exit"), out)
    text = out.getvalue()
    assert all(f"player_{p}: cautious:threshold=2" in text for p in (1, 2, 3))
    PlayConfig(rules=Rules(4), opponents="heuristic").validate()
    PlayConfig(rules=Rules(3), opponents=agents.make("random")).validate()


def test_a_numpy_seat_and_seed_are_accepted():
    out = io.StringIO()
    play(PlayConfig(rules=Rules(3), seat=np.int64(1), seed=np.int64(3)), _moves("exit"), out)
    assert "you are player_1" in out.getvalue()


@pytest.mark.parametrize("seed", [-1, 1.5, True, "7"])
def test_a_bad_seed_is_refused_naming_the_seed(seed):
    with pytest.raises(ValueError, match="seed must be a non-negative integer"):
        PlayConfig(seed=seed).validate()
    with pytest.raises(ValueError, match="seed must be a non-negative integer"):
        WatchConfig(seed=seed).validate()


def test_a_specs_own_seed_is_mixed_into_the_seed_of_the_game_as_elsewhere():
    """With --seed, an agent's own ``seed=`` was replaced: ``random:seed=1`` and
    ``random:seed=2`` played the very same game in watch and play, where Llama-v0 and
    evaluation mix it in. A game without ``seed=`` in any spec is the game it was."""

    def watched(*specs: str) -> str:
        out = io.StringIO()
        watch(WatchConfig(specs, seed=1, delay=0), out)
        return out.getvalue().split("\n", 1)[1]  # the game, after the line naming the agents

    def played(spec: str) -> str:
        out = io.StringIO()
        play(PlayConfig(Rules(2), opponents=spec, seat=1, seed=1), io.StringIO("d\n" * 300), out)
        return out.getvalue().split("\n", 2)[2]

    assert watched("random:seed=1", "random") != watched("random:seed=2", "random")
    assert watched("random:seed=1", "random") == watched("random:seed=1", "random")  # each repeatably
    assert played("random:seed=1") != played("random:seed=2")
    assert played("random:seed=1") == played("random:seed=1")
    assert watched("random", "random") == watched(registry.make("random"), "random")  # no seed=: as before
    moves = [re.sub(" draws.*", " draws", line) for line in watched("random", "random").splitlines()]
    assert [m for m in moves if m.startswith("player_")] == [  # the game it was
        "player_0 plays a llama",
        "player_1 draws",
        "player_0 quits the round",
        "player_1 plays 1",
        "player_1 quits the round",
        "player_1 plays 1",
        "player_0 quits the round",
        "player_1 quits the round",
    ]


def test_watch_refuses_a_single_agent_saying_how_to_seat_it():
    for single in ("heuristic", agents.make("random")):
        with pytest.raises(ValueError, match=r"agents must be one agent per seat.*give it once per seat"):
            watch(WatchConfig(single), io.StringIO())  # type: ignore[arg-type]


def test_watch_config_names_agents_and_takes_any_real_delay():
    """``agents=None`` was "the single agent 'NoneType' ... e.g. agents=('NoneType',) * 4",
    one agent was "num_players must be between 2 and 6, got 1", naming no option, and a
    numpy integer delay was refused where a numpy float was taken."""
    with pytest.raises(TypeError, match=r"^agents must be a sequence of agents, one per seat, got None$"):
        WatchConfig(agents=None).validate()  # type: ignore[arg-type]
    for seats in (["random"], ["random"] * 7):
        with pytest.raises(ValueError, match=rf"^agents must be one agent per seat, 2 to 6 of them, got {len(seats)}$"):
            WatchConfig(agents=seats).validate()
    for delay in (np.int64(0), np.float64(0.5), np.float32(1), 2):
        WatchConfig(delay=delay).validate()  # type: ignore[arg-type]
    for delay in (True, np.bool_(False), "1", float("nan"), -1, 61):
        with pytest.raises(ValueError, match="delay must be 0..60 seconds or None"):
            WatchConfig(delay=delay).validate()  # type: ignore[arg-type]
    watch(WatchConfig(("random", "random"), rules=Rules(2, end_score=5), delay=np.int64(0)), io.StringIO())


def test_a_delay_too_large_for_a_float_is_the_delay_error():
    """``WatchConfig(delay=10**400).validate()`` raised OverflowError from float(delay),
    where a delay out of range is the ValueError naming the range."""
    for delay in (10**400, -(10**400)):
        with pytest.raises(ValueError, match=r"^delay must be 0..60 seconds or None, got -?1000"):
            WatchConfig(delay=delay).validate()  # type: ignore[arg-type]


def test_an_agent_class_is_refused_naming_the_instance_to_pass():
    """A class has a callable act too: resolve took it, and the game failed at its first
    reset ("agent 'random' at seat 1: TypeError: BaseAgent.reset() missing 1 required
    positional argument: 'self'")."""
    from agents.random_agent import RandomAgent

    match = r"^got the class RandomAgent: pass an instance, RandomAgent\(\)$"
    with pytest.raises(TypeError, match=match):
        play(PlayConfig(opponents=RandomAgent, seed=1), io.StringIO(), io.StringIO())
    with pytest.raises(TypeError, match=match):
        watch(WatchConfig(("random", RandomAgent), seed=1), io.StringIO())


def test_names_given_as_one_string_are_refused():
    with pytest.raises(ValueError, match="names must name all 3 seats"):
        PlayConfig(names="abc").validate()


# --------------------------------------------------------------------------- the transcript


def test_watch_heads_each_round_once_with_its_top_card():
    out = io.StringIO()
    watch(WatchConfig(("heuristic", "heuristic"), seed=1, delay=0), out)
    text = out.getvalue()
    assert "Round 2: " in text
    for r in range(2, 10):
        assert text.count(f"Round {r}: ") <= 1, text
        assert f"Round {r}: player_0 starts." not in text and f"Round {r}: player_1 starts." not in text


def test_watch_names_the_card_drawn_where_play_keeps_it_hidden():
    """watch shows every hand at the top of a round, then said only "player_1 draws", so
    the hands it showed were soon out of date; a player at the table still sees only
    that an opponent drew."""
    out = io.StringIO()
    watch(WatchConfig(("heuristic", "heuristic"), seed=1, delay=0), out)
    draws = [line for line in out.getvalue().splitlines() if " draws" in line]
    assert draws and all(re.fullmatch(r"player_[01] draws a ([1-6]|llama)", line) for line in draws), draws
    out = io.StringIO()
    play(PlayConfig(Rules(2), opponents=("heuristic",), seat=1, seed=1), io.StringIO("q\n" * 500), out)
    draws = [line for line in out.getvalue().splitlines() if line.startswith("player_0 draws")]
    assert draws and set(draws) == {"player_0 draws"}


def test_play_heads_each_round_with_the_card_it_opens_on():
    """An opponent who starts a round covers its opening card before the person's first
    turn; play said only who starts, so the person never saw a card that watch shows and
    every agent's observation holds."""
    out = io.StringIO()
    config = PlayConfig(Rules(2), opponents=("heuristic",), seat=1, seed=1)
    assert play(config, io.StringIO("q\n" * 500), out) == terminal.EXIT_FINISHED
    heads = [line for line in out.getvalue().splitlines() if line.startswith("Round ") and " starts" in line]
    assert heads[0] == "Round 1: player_0 starts; top card L."
    assert len(heads) >= 2 and all(re.fullmatch(r"Round \d+: player_[01] starts; top card [1-6L]\.", h) for h in heads)


class _Terminal(io.StringIO):
    """What a person types at a terminal, which shows it on the screen itself."""

    def isatty(self) -> bool:
        return True


def test_ctrl_d_at_a_terminal_ends_the_prompt_line_before_leaving():
    """A terminal shows nothing for Ctrl-D, so the goodbye was printed on the prompt's
    line ("Your move> End of input: ...")."""
    out = _Terminal()  # the person's screen: it shows what is typed
    assert play(PlayConfig(Rules(2), opponents=("random",), seed=0), _Terminal(""), out) == terminal.EXIT_LEFT
    assert out.getvalue().endswith("\nYour move> \nEnd of input: leaving the game unfinished.\n")


def test_ctrl_d_after_part_of_a_move_ends_the_line_it_was_typed_on():
    """Ctrl-D after typing ``xyz`` hands over ``xyz`` with no newline: the refusal was
    printed on the typed line ("Your move> xyzI don't understand ...")."""
    out = _Terminal()
    assert play(PlayConfig(Rules(2), opponents=("random",), seed=0), _Terminal("xyz"), out) == terminal.EXIT_LEFT
    prompts = out.getvalue().split("Your move> ")[1:]
    assert len(prompts) == 2 and all(p.startswith("\n") for p in prompts), prompts


def test_a_long_unparseable_move_is_cut_in_its_refusal():
    with pytest.raises(MoveError) as info:
        parse_move("x" * 100_000, LlamaGame(3, rng=0))
    msg = str(info.value)
    assert len(msg) < 130 and msg.startswith("I don't understand 'xxx") and "x'...: type a move's key" in msg


# --------------------------------------------------------------------------- closed streams


@pytest.mark.parametrize(
    ("argv", "stream", "fragment"),
    [
        (["play", "--seed", "1"], "stdin", "standard input is closed"),
        (["play", "--seed", "1"], "stdout", "standard output is closed"),
        (["watch", "--seed", "1", "--delay", "0"], "stdout", "standard output is closed"),
        # these two printed into nothing and exited 0: tune-heuristic after minutes of games
        (["agents"], "stdout", "standard output is closed: agents lists"),
        (
            ["tune-heuristic", "--games", "1", "--passes", "1", "--validate-games", "0", "--workers", "1"],
            "stdout",
            "standard output is closed: tune-heuristic prints",
        ),
        # so did eval and tournament, whose printed table is their result
        (["eval", "--agents", "random,random", "--games", "2"], "stdout", "standard output is closed: eval prints"),
        (
            ["tournament", "--agents", "random,greedy", "--games", "2", "--workers", "1"],
            "stdout",
            "standard output is closed: tournament prints",
        ),
    ],
)
def test_a_closed_stream_is_one_line_and_a_failure(capsys, monkeypatch, argv, stream, fragment):
    """Python sets sys.stdin / sys.stdout to None when the descriptor is closed."""
    if stream == "stdin":
        monkeypatch.setattr(sys, "stdin", None)
    else:
        monkeypatch.setattr(sys, "stdout", None)
    code = main(argv)
    line = _one_error_line(capsys.readouterr().err)
    assert code == 1 and fragment in line


def test_eval_with_its_games_recorded_runs_with_stdout_closed(monkeypatch, tmp_path):
    """--record keeps the games, so the table printed into nothing is not all that is lost."""
    monkeypatch.setattr(sys, "stdout", None)
    assert main(["eval", "--agents", "random,random", "--games", "2", "--record", str(tmp_path / "games")]) == 0
    assert len(list((tmp_path / "games").iterdir())) == 2


@pytest.mark.skipif(os.name == "nt", reason="closes a descriptor with a POSIX shell")
def test_the_console_script_with_closed_stdin_says_so():
    script = Path(sys.executable).parent / "llama-rl"
    proc = subprocess.run(
        ["sh", "-c", f"'{script}' play --seed 1 <&-"], capture_output=True, text=True, timeout=120, check=False
    )
    assert proc.returncode == 1
    assert _one_error_line(proc.stderr) == "llama-rl: error: standard input is closed: play reads your moves from it"
