"""Shared helpers for the LLAMA-RL tests.

:func:`make_state` writes a valid engine snapshot by hand: name the parts a test cares
about (hands, top card, draw pile, scores, ...) and it puts every remaining card of the
56-card deck somewhere harmless, so ``LlamaGame.from_dict`` accepts it.
"""

from __future__ import annotations

import os
import re
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

import numpy as np
import pytest

from llama_env.engine import (
    COPIES_PER_VALUE,
    DECK_SIZE,
    NUM_CARD_VALUES,
    LlamaGame,
    _check_hands_without_history,
    rule_option_fields,
)

ALL_CODES = tuple(range(1, NUM_CARD_VALUES + 1))

needs_rllib = pytest.mark.skipif(
    os.environ.get("LLAMA_RL_NO_RLLIB") == "1", reason="LLAMA_RL_NO_RLLIB=1: the rllib extra is knowingly absent"
)
"""A test that needs the ``rllib`` extra, skipped only where it is knowingly absent (a
missing extra otherwise fails the test, as ``tests/train/test_rllib.py`` does)."""


def card_counts(d: dict[str, Any]) -> Counter:
    """How many cards of each code a snapshot holds across hands and piles."""
    c: Counter = Counter()
    for h in d["hands"]:
        c.update(h)
    c.update(d["draw_pile"])
    c.update(d["discard_pile"])
    return c


def other_rule_options() -> dict[str, int]:
    """A value for every rule option (:func:`rule_option_fields`) other than its default,
    in its range at every table size: what tests give to see an option reach a game."""
    return {f.name: f.default - 1 if f.default > f.metadata["low"] else f.default + 1 for f in rule_option_fields()}


def full_deck_counts() -> Counter:
    return Counter({code: COPIES_PER_VALUE for code in ALL_CODES})


def make_state(
    *,
    num_players: int = 3,
    hands: list[list[int]] | None = None,
    top: int = 3,
    discard_pile: list[int] | None = None,
    draw_pile: list[int] | None = None,
    scores: list[int] | None = None,
    quit: list[bool] | None = None,  # noqa: A002 - the snapshot key
    current_player: int = 0,
    round: int | None = None,  # noqa: A002 - the snapshot key
    game_over: bool | None = None,
    end_score: int = 40,
    **extra: Any,
) -> dict[str, Any]:
    """A valid snapshot dict for ``LlamaGame.from_dict`` with all 56 cards accounted for.

    ``discard_pile`` defaults to ``[top]``. Cards not placed by the caller go to the
    draw pile when ``draw_pile`` is not given (sorted, so the next card drawn is the
    highest one left), otherwise into the discard pile under the top card, in an order
    the play rule allows (``make_state`` refuses placements that have none).
    ``game_over`` defaults to what the scores imply, ``round`` to 1 for all-zero scores
    and 2 otherwise, ``hand_size`` to the largest deal (at most 6) that leaves at least
    the draw pile undealt and that the hands can come from (:func:`_fitting_hand_size`),
    and ``last_player`` (when cards were played this round) to
    the seat before ``current_player``. ``extra`` keys (``starter``, ``last_player``,
    ``hand_size``, ``rng_state``...) are copied in as they are.
    """
    if hands is None:
        hands = [[1, 2, 5], [2, 3, 4], [4, 5, 6], [1, 6, 7], [2, 2, 2], [5, 5, 5]][:num_players]
    discard = list(discard_pile) if discard_pile is not None else [top]
    placed = Counter()
    for h in hands:
        placed.update(h)
    placed.update(discard)
    if draw_pile is not None:
        placed.update(draw_pile)
    rest = []
    for code in ALL_CODES:
        left = COPIES_PER_VALUE - placed[code]
        if left < 0:
            raise ValueError(f"make_state: {placed[code]} cards of code {code} placed, only 8 exist")
        rest.extend([code] * left)
    if draw_pile is None:
        draw = rest
    else:
        draw = list(draw_pile)
        discard = legal_discard_order(rest + discard[:-1], discard[-1])
    scores = list(scores) if scores is not None else [0] * num_players
    if round is None:
        round = 2 if any(scores) else 1  # noqa: A001
    if len(discard) > 1:
        extra.setdefault("last_player", (current_player - 1) % num_players)
    d: dict[str, Any] = {
        "num_players": num_players,
        "scores": scores,
        "hands": [list(h) for h in hands],
        "draw_pile": draw,
        "discard_pile": discard,
        "quit": list(quit) if quit is not None else [False] * num_players,
        "current_player": current_player,
        "round": round,
        "game_over": game_over if game_over is not None else max(scores) >= end_score,
        "end_score": end_score,
    }
    d.update(extra)
    if "hand_size" not in extra:
        d["hand_size"] = _fitting_hand_size(d)
    return d


def _fitting_hand_size(d: dict[str, Any]) -> int:
    """The largest deal (at most 6, leaving at least the draw pile undealt) that the hands
    of the snapshot ``d`` can come from: a deal is skipped where ``LlamaGame.from_dict``
    refuses the hands (:data:`_HANDS_VERSUS_DEAL`); where it refuses ``d`` for another
    reason first (a test's starter broken on purpose), the engine's check of hands without
    a history decides, so that the test meets that reason, not a deal its hands cannot
    come from. The largest deal when none fits."""
    largest = max(1, min(6, (DECK_SIZE - 1 - len(d["draw_pile"])) // len(d["hands"])))
    for h in range(largest, 0, -1):
        try:
            LlamaGame.from_dict({**d, "hand_size": h})
        except ValueError as exc:
            if _HANDS_VERSUS_DEAL.search(str(exc)) or not _hands_fit(d, h):
                continue
        return h
    return largest


_HANDS_VERSUS_DEAL = re.compile(r"which a deal of \d+ each cannot become|played no card this round")
"""``LlamaGame.from_dict``'s refusals of hands that a deal cannot become."""


def _hands_fit(d: dict[str, Any], hand_size: int) -> bool:
    """Whether the engine's check of hands without a history takes ``d``'s hands after a
    deal of ``hand_size`` (``True`` where ``d`` is too broken for it to tell)."""
    hands = d["hands"]
    drawn = DECK_SIZE - len(hands) * hand_size - 1 - len(d["draw_pile"])
    try:
        _check_hands_without_history(hand_size, hands, drawn, d.get("last_player"))
    except ValueError:
        return False
    except (TypeError, IndexError):  # a last_player broken on purpose
        pass
    return True


def legal_discard_order(cards: list[int], top: int) -> list[int]:
    """``cards`` and then ``top`` as a discard pile the play rule allows (each card the
    same value as the one below or one more, cyclically), ending with ``top``."""
    present = set(cards) | {top}
    run = [top]
    while len(run) < len(present):
        below = (run[0] - 2) % 7 + 1  # the value one less, cyclically (1 below is the llama)
        if below not in present:
            raise ValueError(f"make_state: cards {sorted(cards)} cannot lie in a legal discard pile under {top}")
        run.insert(0, below)
    pile: list[int] = []
    for value in run:
        pile.extend(c for c in cards if c == value)
    return [*pile, top]


def make_game(seed: int = 0, **overrides: Any) -> LlamaGame:
    """``LlamaGame.from_dict(make_state(**overrides))`` with a seeded generator for later deals."""
    return LlamaGame.from_dict(make_state(**overrides), rng=np.random.default_rng(seed))


def random_playout(game: LlamaGame, seed: int, max_steps: int = 100_000) -> int:
    """Play uniformly random legal actions until the game ends; return the step count."""
    rng = np.random.default_rng(seed)
    steps = 0
    while not game.game_over:
        legal = game.legal_actions()
        game.step(legal[int(rng.integers(len(legal)))])
        steps += 1
        if steps > max_steps:
            raise AssertionError(f"game did not end within {max_steps} steps")
    return steps


def random_decisions(count: int, seed: int = 0, players: int | None = None) -> Iterator[tuple[LlamaGame, list[int]]]:
    """``count`` decisions of uniformly random play: each yields the game (live: read it
    before the next one) and its legal actions. Each new game draws its table size from
    2..6 unless ``players`` fixes it."""
    rng = np.random.default_rng(seed)
    made = 0
    while made < count:
        n = players if players is not None else int(rng.integers(2, 7))
        game = LlamaGame(n, rng=int(rng.integers(2**31)))
        while not game.game_over and made < count:
            legal = game.legal_actions()
            yield game, legal
            made += 1
            game.step(legal[int(rng.integers(len(legal)))])


def installed_plugin(folder: Any, module: str, entry: str, source: str, *, package: bool = False) -> None:
    """A plugin ``module`` installed in ``folder`` as pip installs one: its code ``source``
    (a module file, or a package's init file for a ``package``) and a dist-info declaring
    the agents' entry point ``entry`` on it."""
    folder.mkdir(parents=True, exist_ok=True)
    if package:
        (folder / module).mkdir()
    (folder / module / "__init__.py" if package else folder / f"{module}.py").write_text(source)
    info = folder / f"{module}-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {module}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[llama_rl.agents]\n{entry} = {module}\n")


def finding(*folders: Any) -> dict[str, str]:
    """This process's environment, its Python finding what ``folders`` hold first."""
    return {**os.environ, "PYTHONPATH": os.pathsep.join([*map(str, folders), os.environ.get("PYTHONPATH", "")])}


def broken_plugin(folder: Any) -> dict[str, str]:
    """An environment whose Python finds, in ``folder``, an installed plugin ``brokenplug``
    declaring the agents' entry point ``broken`` and failing to import: what tests of the
    warning about a plugin that cannot load run a program in."""
    installed_plugin(folder, "brokenplug", "broken", "raise ImportError('brokenplug needs torch>=9')\n", package=True)
    return finding(folder)


@pytest.fixture
def state_builder():
    """The :func:`make_state` builder as a fixture, for tests that prefer fixtures."""
    return make_state


# --------------------------------------------------------------------------- the agent registry


@pytest.fixture
def agent_registry() -> Iterator[None]:
    """Agents a test registers are gone afterwards (they would show in ``llama-rl agents``
    and refuse the name to the next test): the registry's tables are copies until then."""
    import agents
    import llama_env.agent as registry

    agents.names()  # the entry points are loaded before the registry is copied
    with pytest.MonkeyPatch.context() as mp:
        for table in ("_REGISTRY", "_DOCS", "_GROUPS"):
            mp.setattr(registry, table, dict(getattr(registry, table)))
        yield


class LeagueMember:
    """A member of :class:`League`: plays its first legal move, counts its moves and
    remembers the seeds it is reset with."""

    def __init__(self) -> None:
        self.moves = 0
        self.resets: list[int | None] = []

    def reset(self, seed: int | None = None) -> None:
        self.resets.append(seed)

    def act(self, observation: np.ndarray, action_mask: np.ndarray) -> int:
        self.moves += 1
        return int(np.flatnonzero(action_mask)[0])


class League:
    """A population whose own ``act`` must never be called (docs/agents.md: the drivers
    seat one of its members per game in its place); ``name``, where given, is its name in
    tables, else its class name."""

    population = True

    def __init__(self, size: int = 4, name: str | None = None) -> None:
        self.members = [LeagueMember() for _ in range(size)]
        if name is not None:
            self.name = name

    def act(self, observation: np.ndarray, action_mask: np.ndarray) -> int:
        raise NotImplementedError("a population plays through its members")


class Leagues(list[League]):
    """The populations a registered :class:`League` built, in the order it built them."""

    @property
    def members(self) -> list[LeagueMember]:
        return [m for league in self for m in league.members]

    @property
    def moves(self) -> int:
        """The moves their members made."""
        return sum(m.moves for m in self.members)


@pytest.fixture
def register_league(agent_registry: None) -> Callable[[str], Leagues]:
    """``register_league(name)`` registers :class:`League` as ``name`` for the test only
    (:func:`agent_registry`) and gives the populations that name builds."""
    from llama_env.agent import register

    def registered(name: str) -> Leagues:
        built = Leagues()

        def league() -> League:
            built.append(League())
            return built[-1]

        register(name)(league)
        return built

    return registered


# --------------------------------------------------------------------------- the web app


@pytest.fixture
def store() -> Any:
    """A fresh store of live web games, dealing the same games on every run (games of
    several people take no seed)."""
    from train.play.session import SessionStore

    return SessionStore(max_games=50, idle_seconds=600, entropy=0)


@pytest.fixture
def client(store: Any) -> Any:
    """A client of a web app over ``store``, at an address the app serves."""
    from webclient import client_for

    from train.play.web import create_app

    return client_for(create_app(store))


@pytest.fixture
def enough_cores(monkeypatch: pytest.MonkeyPatch) -> None:
    """The evaluation runner sees at least 4 cores this process may use, for a test that
    plays with ``workers=2`` and counts the warnings: on a machine (or ``taskset -c 0``)
    with one core, more workers than cores is a warning of its own."""
    from train.evaluation import runner

    cores = runner.usable_cores()
    monkeypatch.setattr(runner, "usable_cores", lambda: max(cores, 4))


class LookedMembers(list):
    """A population's members (``population.members = LookedMembers(population.members)``)
    that count the times they are looked through, as checking them does."""

    looks = 0

    def __iter__(self) -> Iterator[Any]:
        self.looks += 1
        return super().__iter__()


class ScriptedExecutor:
    """An evaluation executor (``executor=``, a :class:`train.evaluation.runner.ChunkExecutor`)
    that plays the jobs in this process and yields the results of ``order`` in that order:
    job places, or a function of the places of all the jobs (``reversed``), so results
    may come out of turn, be left out or repeat; then, with ``stop``, it stops as Ctrl-C
    does. It keeps its iterator, so only the caller's ``close()`` (not the garbage
    collector) can tell it to stop (``closed``); ``jobs`` counts the jobs it was given,
    and what it set up as a worker here is cleared as it ends."""

    def __init__(self, order: Sequence[int] | Callable[[range], Iterable[int]], *, stop: bool = False) -> None:
        self.order, self.stop = order, stop
        self.jobs, self.closed = 0, False

    def run(self, payload: bytes, jobs: list[Any], workers: int) -> Iterator[Any]:
        from train.evaluation import runner

        def results() -> Iterator[Any]:
            try:
                runner.setup_worker(payload)
                for k in self.order(range(len(jobs))) if callable(self.order) else self.order:
                    yield runner.run_job(jobs[k])
                if self.stop:
                    raise KeyboardInterrupt
            except GeneratorExit:
                self.closed = True
                raise
            finally:
                runner._WORKER.clear()

        self.jobs += len(jobs)
        self.iterator = results()
        return self.iterator


@pytest.fixture(autouse=True, scope="session")
def _sb3_logs_under_pytests_temp(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """SB3's own logger, which a model made outside ``llama-rl train`` builds in ``learn``,
    writes its folder under pytest's temporary directory: it made an empty
    ``SB3-<time>`` folder in the system's for each such test, hundreds a run."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("SB3_LOGDIR", str(tmp_path_factory.mktemp("sb3-logs")))
        yield
