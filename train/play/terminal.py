"""Play L.L.A.M.A. against agents in a terminal.

:func:`play` runs one whole game with a person at one seat, reading moves from an input
stream and writing the table to an output stream, so tests drive it with
``io.StringIO`` exactly as ``llama-rl play`` drives it with stdin and stdout.

The person sees only what their seat may know (their own hand, the top card, the draw
pile size, the others' hand sizes, scores and quit status) and the agents see only their
observation and action mask, as everywhere else in LLAMA-RL.

How moves are typed: by the key the move list shows in brackets, or in its words. A
play is numbered by the card's value, so ``4``, ``play 4`` and ``play a 4`` always mean
"play a 4" whatever else is legal; ``l``, ``llama`` or ``play a llama`` plays a llama;
``d``/``draw`` and ``q``/``quit``/``quit the round`` draw and quit the round; a key
may keep the brackets it is shown in (``[q]``). ``a7`` or ``action 7`` names the
``Discrete(9)`` action index (here: draw) for those who think in actions; ``a 7`` is
refused, since it reads as "play a 7" too.
``help`` shows the moves again, ``exit`` leaves the game. Anything else, or an illegal
move, is refused with the reason and the moves' keys, and the prompt comes back.

At a terminal the table, the move list and each round's summary wrap to its width
between cards and moves, and every other line between words; the width is read again as
each is shown, so a resized terminal is followed. Into a file or a pipe lines stay whole.
"""

from __future__ import annotations

import contextlib
import numbers
import re
import textwrap
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TextIO, cast

import numpy as np

from llama_env.agent import (
    Agent,
    AgentLike,
    AgentSpec,
    agent_label,
    reset_agent,
    resolve,
    seat_for_game,
    seed_keys,
    warn_of_table,
)
from llama_env.engine import (
    MAX_PLAYERS,
    MIN_PLAYERS,
    NUM_ACTIONS,
    Action,
    IllegalActionError,
    LlamaGame,
    RoundResult,
    Rules,
    brief,
    can_play_on,
    check_seed,
    playable_on,
)
from llama_env.render import card_str, plural, render_round_summary, render_table, wrap_row
from llama_env.table import AgentError, Table, TableListener, agent_failed
from train._program import is_terminal, terminal_columns

__all__ = [
    "PlayConfig",
    "AgentError",
    "MoveError",
    "parse_move",
    "move_key",
    "format_moves",
    "describe_move",
    "play",
    "EXIT_FINISHED",
    "EXIT_LEFT",
    "WatchConfig",
    "WATCH_DELAY",
    "watch",
]

EXIT_FINISHED = 0
"""Exit code of :func:`play` when the game was played to its end."""
EXIT_LEFT = 1
"""Exit code of :func:`play` when the person left early (``exit`` or end of input)."""

_HELP, _EXIT = -1, -2  # parse_move's answers that are not actions


@dataclass(frozen=True)
class PlayConfig:
    """One terminal game: a person at ``seat`` against ``opponents``."""

    rules: Rules = Rules(3)
    """The rules of the game: the players at the table (the person included) and the
    rule options. Default: three players, standard options."""
    opponents: Sequence[AgentLike] = ("heuristic",)
    """One agent for every other seat in seat order, or a single one that fills them
    all: agent objects, :class:`AgentSpec` or spec strings (``"cautious:threshold=4"``).
    A single one may also be given alone (``opponents="ppo"``), as ``Llama-v0`` takes it."""
    seat: int = 0
    """The person's seat, 0..num_players-1 (seat 0 starts the first round)."""
    seed: int | None = None
    """Seed of the deals and the agents' choices: each agent is reset with a seed drawn
    from it, a spec's own ``seed=`` mixed in as evaluation and ``Llama-v0`` mix it
    (``random:seed=5`` and ``random:seed=6`` play differently, each repeatably; an agent
    object's own seed is replaced); ``None`` for a fresh game each time, each agent
    keeping its own seed."""
    names: Sequence[str] | None = field(default=None)
    """Seat names shown on the table; ``player_0``.. by default."""

    @property
    def num_players(self) -> int:
        return self.rules.num_players

    def opponent_list(self) -> list[AgentLike]:
        """The opponents as given: a single agent (an object, an :class:`AgentSpec` or a
        spec string, as ``Llama-v0``'s ``opponents`` takes one) is a list of one."""
        return list(self.opponents) if _is_list(self.opponents) else [self.opponents]  # type: ignore[list-item]

    def validate(self) -> None:
        """Raise ``ValueError`` naming the bad option (``TypeError`` for rules that are
        not a :class:`Rules`)."""
        if not isinstance(self.rules, Rules):
            raise TypeError(f"rules must be a llama_env.Rules, got {self.rules!r}")
        if (
            isinstance(self.seat, (bool, np.bool_))
            or not isinstance(self.seat, (int, np.integer))
            or not 0 <= self.seat < self.num_players
        ):
            raise ValueError(
                f"seat must be between 0 and {self.num_players - 1} for {self.num_players} players, got {self.seat!r}"
            )
        others = self.num_players - 1
        opponents = self.opponent_list()
        if len(opponents) not in (1, others):
            want = (
                "one opponent for the other seat"
                if others == 1
                else f"one opponent for all {others} other seats or exactly {others} opponents"
            )
            raise ValueError(f"give {want}, got {len(opponents)}")
        if self.seed is not None:
            check_seed(self.seed)
        if self.names is not None and (isinstance(self.names, str) or len(self.names) != self.num_players):
            got = f"the string {self.names!r}" if isinstance(self.names, str) else str(len(self.names))
            raise ValueError(f"names must name all {self.num_players} seats, one name each, got {got}")


def _is_list(agents: object) -> bool:
    """Whether ``agents`` is a sequence of agents rather than one agent (a spec string
    is one, as ``Llama-v0`` reads it)."""
    return isinstance(agents, Sequence) and not isinstance(agents, str)


class MoveError(ValueError):
    """Typed input that is not a legal move now; the message says why."""


def move_key(action: int) -> str:
    """The short key a move is listed under: the card value, ``L``, ``d`` or ``q``."""
    a = Action(action)
    if a == Action.DRAW:
        return "d"
    if a == Action.QUIT:
        return "q"
    return card_str(int(a) + 1)


def _move_label(action: int) -> str:
    a = Action(action)
    if a == Action.DRAW:
        return "draw"
    if a == Action.QUIT:
        return "quit the round"
    return "play a llama" if a == Action.PLAY_LLAMA else f"play a {int(a) + 1}"


def format_moves(legal: Sequence[int]) -> str:
    """The legal moves as ``[4] play a 4   [d] draw   [q] quit the round``; each is
    typed by its key or its words."""
    return "   ".join(_listed_moves(legal))


def _listed_moves(legal: Sequence[int]) -> list[str]:
    return [f"[{move_key(a)}] {_move_label(a)}" for a in legal]


def _say_moves(lead: str, legal: Sequence[int], width: int | None) -> str:
    """``lead`` (a refusal) and the legal moves, wrapped between moves to ``width``
    columns; a ``lead`` too long to share a line with them goes on lines of its own,
    broken between words."""
    moves = _listed_moves(legal)
    lines = wrap_row(lead + "Your moves: ", moves, width, sep="   ")
    if lead and width is not None and len(lines) > 1:
        lines = [*textwrap.wrap(lead, width), *wrap_row("Your moves: ", moves, width, sep="   ")]
    return "\n".join(lines)


def _sayer(stdout: TextIO) -> Callable[[str], None]:
    """The one way a line reaches the person: ``say(text)`` writes ``text`` and a newline
    to ``stdout`` and flushes it. At a terminal each of its lines wider than the terminal
    of the moment is broken between words, an indented line's later lines indented 2
    more; lines laid out already (the table, the moves, a summary, wrapped between cards)
    fit and are left as they are. Into a file or a pipe lines stay whole."""

    def say(text: str = "") -> None:
        width = terminal_columns(stdout)
        if width is not None:
            text = "\n".join(_fill(line, width) for line in text.split("\n"))
        stdout.write(text + "\n")
        stdout.flush()

    return say


def _fill(line: str, width: int) -> str:
    """``line`` broken between words to ``width`` columns, later lines indented 2 more
    than an indented first one; unchanged where it fits."""
    if len(line) <= width:
        return line
    lead = line[: len(line) - len(line.lstrip())]
    return textwrap.fill(line, width, subsequent_indent=lead + "  " if lead else "")


_PLAY = r"^(?:(?:play|p)\s*(?:an?\s+)?)?"  # "play a 4", as the move list words it; "a 4" alone is no move
_PLAY_RE = re.compile(_PLAY + r"([1-7]|l|llama)$")
# "a6" or "action 6"; "a 6" is refused: it reads as "play a 6" as well (ASCII digits: \d takes other scripts' too)
_ACTION_RE = re.compile(r"^(?:a|action\s*)([0-9]+)$")
_A_SPACE_RE = re.compile(r"^a\s+([0-9]+)$")


def parse_move(text: str, game: LlamaGame) -> int:
    """The action meant by ``text`` for the current player of ``game``.

    Returns an action index 0..8, or a negative code for ``help`` (-1) and ``exit``
    (-2). Raises :class:`MoveError` saying what is wrong for input that is not
    understood or not legal now.
    """
    t = " ".join(text.strip().lower().split())
    if len(t) > 2 and t[0] == "[" and t[-1] == "]":  # the key as the list shows it: "[q]"
        t = t[1:-1].strip()
    if t in ("", "?", "h", "help", "moves"):
        return _HELP
    if t in ("exit", "resign", "leave"):
        return _EXIT
    if t in ("d", "draw", "draw a card"):
        action = int(Action.DRAW)
    elif t in ("q", "quit", "quit round", "quit the round"):
        action = int(Action.QUIT)
    elif m := _PLAY_RE.match(t):
        card = m.group(1)
        action = int(Action.PLAY_LLAMA) if card in ("7", "l", "llama") else int(card) - 1
    elif m := re.match(_PLAY + r"([0-9]+)$", t):
        raise MoveError(f"there is no card {_short(m.group(1))}: {_CARDS}")
    elif m := _A_SPACE_RE.match(t):
        n, k = _short(m.group(1)), _action_number(m.group(1))
        if k is None:
            raise MoveError(f"there is no card {n} and no action {n}: {_CARDS}, actions 0..{NUM_ACTIONS - 1}")
        if not 1 <= k <= 7:  # a0, a8: an action, but no card
            raise MoveError(f"there is no card {n}: {_CARDS}; a{k} is action {k}")
        both = f"could mean play a {k} or action {k}: type {k} to play the card, a{k} for the action"
        raise MoveError(f"{_quoted(text.strip())} {both}")
    elif m := _ACTION_RE.match(t):
        if (number := _action_number(m.group(1))) is None:
            raise MoveError(f"there is no action {_short(m.group(1))}: action numbers are 0..{NUM_ACTIONS - 1}")
        action = number
    else:
        raise MoveError(
            f"I don't understand {_quoted(text.strip())}: type a move's key (shown in brackets) or its words"
        )
    _check_legal(action, game)
    return action


_CARDS = "the cards are 1 to 6 and the llama (L)"


def _action_number(digits: str) -> int | None:
    """The action index ASCII ``digits`` name (leading zeros allowed), ``None`` past
    the last one (no ``int()`` of a thousand digits)."""
    digits = digits.lstrip("0") or "0"
    return int(digits) if len(digits) == 1 and int(digits) < NUM_ACTIONS else None


def _short(digits: str) -> str:
    return digits if len(digits) <= 12 else digits[:12] + "..."


def _quoted(text: str, limit: int = 40) -> str:
    """``text`` quoted, cut to ``limit`` characters with an ellipsis (a pasted page is
    not echoed back whole)."""
    return repr(text) if len(text) <= limit else repr(text[:limit]) + "..."


def _check_legal(action: int, game: LlamaGame) -> None:
    """Raise :class:`MoveError` with the rule that forbids ``action``, if one does."""
    if game.is_legal(action):
        return
    seat = game.current_player
    if action == Action.DRAW:
        if not game.draw_pile:
            raise MoveError("you can't draw: the draw pile is empty")
        raise MoveError("you can't draw: everyone else has quit the round")
    card = action + 1
    top = game.top_card
    if not game.hand_counts(seat)[card]:
        raise MoveError(f"you have no {_card_name(card)} in your hand")
    if not can_play_on(card, top):
        same, nxt = playable_on(top)
        raise MoveError(
            f"a {_card_name(card)} can't go on a {_card_name(top)}: "
            f"only a {_card_name(same)} or a {_card_name(nxt)} can"
        )
    raise MoveError(f"{_move_label(action)} is not legal now")  # pragma: no cover - the cases above are exhaustive


def _card_name(card: int) -> str:
    return "llama" if card == 7 else str(card)


def describe_move(name: str, action: int, drawn: int | None = None) -> str:
    """An opponent's move as shown to the person: ``"player_2 plays 5"``; ``drawn``, the
    card a draw took, is said where given (``"player_2 draws a 5"``: to a spectator, who
    sees every hand)."""
    a = Action(action)
    if a == Action.DRAW:
        return f"{name} draws" if drawn is None else f"{name} draws a {_card_name(drawn)}"
    if a == Action.QUIT:
        return f"{name} quits the round"
    return f"{name} plays a llama" if a == Action.PLAY_LLAMA else f"{name} plays {int(a) + 1}"


def _describe_own(action: int) -> str:
    a = Action(action)
    if a == Action.QUIT:
        return "You quit the round."
    return "You play a llama." if a == Action.PLAY_LLAMA else f"You play {int(a) + 1}."


def _agent_seeds(seed: int | None, n: int) -> list[int | None]:
    if seed is None:
        return [None] * n
    return [int(s.generate_state(1)[0]) for s in np.random.SeedSequence(check_seed(seed)).spawn(n)]


@contextlib.contextmanager
def _blamed(labels: Sequence[str], seat: int) -> Iterator[None]:
    """Turn what the first ``reset`` of the agent at ``seat`` raises into an
    :class:`AgentError` naming it (``labels[seat]``) and its seat, as the table driver
    names an agent that fails during the game. A ``ValueError`` or ``TypeError`` is the
    configuration's (an unknown name, a bad parameter, a constructor that fails, which
    the registry names by its spec), unless the agent's ``reset`` raised it (a spec built
    with a seed is reset); a missing package or memory is no agent's, which the command
    line reports as they are."""
    try:
        yield
    except (IllegalActionError, AgentError, ModuleNotFoundError, MemoryError):
        raise
    except Exception as exc:
        if isinstance(exc, (ValueError, TypeError)) and not _passed_through(exc, reset_agent):
            raise
        raise agent_failed(exc, labels[seat], seat) from exc


def _passed_through(exc: BaseException, function: Callable[..., object]) -> bool:
    """Whether ``exc`` was raised in a call of ``function`` (a frame of its traceback runs it)."""
    tb = exc.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code is getattr(function, "__code__", None):
            return True
        tb = tb.tb_next
    return False


def _seat_agents(
    specs: Sequence[tuple[int, AgentLike]], rules: Rules, seeds: Sequence[int | None]
) -> tuple[list[Agent | None], list[str]]:
    """The agents at their seats, each reset for a new game with ``seeds[seat + 1]``, a
    spec's own ``seed=`` mixed in as ``Llama-v0`` and evaluation mix it
    (:func:`~llama_env.agent.seed_keys`; ``None``: as the agent's own seed, or none, has
    it), and how messages name each seat: the agent's label, as the command line wrote it. A population (``perturbed``)
    seats a member of its own at each of its seats, drawn from that seed, as ``Llama-v0``
    seats it (:func:`~llama_env.agent.seat_for_game`): its own ``act`` is never called.

    What the agents warn of at a table of ``rules`` (a model trained at other table sizes
    or rules, a ``search`` whose ``worlds`` go unused) is said here, before the game's
    first line, as evaluation says it (:func:`~llama_env.agent.warn_of_table`), attributed
    to the caller of :func:`play` or :func:`watch`; no agent says it again as it plays."""
    n = rules.num_players
    seats: list[Agent | None] = [None] * n
    labels = [f"player_{p}" for p in range(n)]
    built = []
    given = [spec for _, spec in specs]
    for (p, spec), key in zip(specs, seed_keys(given), strict=True):
        labels[p] = agent_label(spec)
        with _blamed(labels, p):  # every game: its own seed, else one of its own drawing
            built.append(resolve(spec, seed=seeds[p + 1]))
            seats[p] = seat_for_game(built[-1], seeds[p + 1], key)
    players = [a for a in seats if a is not None]
    warn_of_table(given, rules, built=built, seated=players, stacklevel=3)
    return seats, labels


def _round_opening(game: LlamaGame, names: Sequence[str]) -> str:
    """The line that heads a round: who starts it and the card it opens on. The card is
    public and every agent's observation holds it; a person whose opponents move first
    would otherwise see only the card that lies on it by their own turn."""
    return f"Round {game.round}: {names[game.current_player]} starts; top card {card_str(game.top_card)}."


class _Transcript(TableListener):
    """Tells the person every move and round result, as the table driver reports them
    (``me=None``: a spectator of agents, with ``pause`` seconds after each move); the
    round's summary wraps to the ``columns()`` of the moment it is shown (``None``: it
    does not), so that a resized terminal is followed."""

    def __init__(
        self,
        say: Callable[[str], None],
        me: int | None,
        names: Sequence[str],
        columns: Callable[[], int | None],
        pause: float = 0.0,
    ) -> None:
        self.say = say
        self.me = me
        self.names = names
        self.pause = pause
        self.columns = columns

    def on_move(self, table: Table, seat: int, action: int, drawn: int | None) -> None:
        if self.pause:
            time.sleep(self.pause)
        if self.me is None:  # a spectator sees every hand, so the card drawn too
            self.say(describe_move(self.names[seat], action, drawn))
        elif seat != self.me:
            self.say(describe_move(self.names[seat], action))
        elif action == Action.DRAW:
            self.say(f"You draw a {_card_name(drawn or 0)}.")
        else:
            self.say(_describe_own(action))

    def on_round_end(self, table: Table, result: RoundResult) -> None:
        self.say("")
        self.say(render_round_summary(result, list(self.names), you=self.me, width=self.columns()))
        if not table.game.game_over and self.me is not None:  # watch heads a round with every hand itself
            self.say("")
            self.say(_round_opening(table.game, self.names))


def play(config: PlayConfig, stdin: TextIO, stdout: TextIO, on_leave: Callable[[str], None] | None = None) -> int:
    """Play one game with a person at ``config.seat``; return an exit code.

    The game runs on the table driver: the agents' seats are answered by their agents,
    the person's by what they type. Returns :data:`EXIT_FINISHED` (0) when the game ends
    normally and :data:`EXIT_LEFT` (1) when the person types ``exit`` or the input ends
    (EOF) before that; ``on_leave`` is then called with why (``"exit"``, ``"end of
    input"``), for the command line's line on stderr. Raises ``ValueError`` for a bad configuration (before anything
    is printed), :class:`AgentError` when an agent's ``reset`` or ``act`` raises and
    ``IllegalActionError`` when it answers an illegal move, both naming the agent and
    its seat.
    """
    config.validate()
    n, me = config.num_players, int(config.seat)
    names = list(config.names) if config.names is not None else [f"player_{p}" for p in range(n)]
    others = [p for p in range(n) if p != me]
    given = config.opponent_list()
    opp_specs = given * len(others) if len(given) == 1 else given
    seeds = _agent_seeds(config.seed, n + 1)
    seats, labels = _seat_agents(list(zip(others, opp_specs, strict=True)), config.rules, seeds)
    labels[me] = names[me]
    game = LlamaGame(rules=config.rules, rng=seeds[0])

    say = _sayer(stdout)
    transcript = _Transcript(say, me, names, lambda: terminal_columns(stdout))
    table = Table(game, seats, names=labels, listener=transcript)  # messages name the agents
    say(f"L.L.A.M.A. with {n} players: you are {names[me]}.")
    for p, spec in zip(others, opp_specs, strict=True):
        say(f"  {names[p]}: {agent_label(spec)}")
    ends = f"The game ends after a round in which someone reaches {plural(game.end_score, 'point')}"
    say(f"{ends}; the lowest score wins.")
    say("Type the key of a move (e.g. 4, L, d, q), 'help' for the moves, 'exit' to leave.")
    say("")
    say(_round_opening(game, names))

    while True:
        table.advance()  # an agent that fails is an AgentError naming it (the table driver)
        if game.game_over:
            break
        action = _ask(game, me, names, stdin, stdout, say)
        if isinstance(action, str):
            if on_leave is not None:
                on_leave(action)
            return EXIT_LEFT
        table.apply(action)
    say("Thanks for playing.")
    return EXIT_FINISHED


WATCH_DELAY = 0.5
"""The seconds :func:`watch` waits before each move by default, at a terminal only."""


@dataclass(frozen=True)
class WatchConfig:
    """A game among agents, shown in the terminal move by move."""

    agents: Sequence[AgentLike] = ("heuristic", "heuristic", "heuristic")
    """One agent per seat, in seat order (2..6 of them): a single one would not say how
    many seats there are, so write it once per seat (``("heuristic",) * 4``)."""
    rules: Rules | None = None
    """The rules of the game, for ``len(agents)`` players; ``None``: the standard rules."""
    seed: int | None = None
    """Seed of the deals and the agents' choices, as :attr:`PlayConfig.seed`; ``None``
    for a fresh game each time."""
    delay: float | None = None
    """Seconds to wait before each move is shown (0 shows the game at once); ``None``:
    :data:`WATCH_DELAY` when the output is a terminal, none into a file or a pipe."""

    def table_rules(self) -> Rules:
        """The rules of the game: :attr:`rules`, or the standard rules at ``len(agents)``
        players (a ``ValueError`` when ``rules`` are for another table size)."""
        return Rules.for_table(len(self.agents), self.rules)

    def validate(self) -> None:
        """Raise ``ValueError`` naming the bad option (``TypeError`` for ``agents`` that
        are no sequence and no agent, and for rules that are not a :class:`Rules`), as
        :meth:`PlayConfig.validate` does."""
        agents = self.agents
        if not _is_list(agents):
            if not isinstance(agents, (str, AgentSpec)) and not callable(getattr(agents, "act", None)):
                raise TypeError(f"agents must be a sequence of agents, one per seat, got {brief(agents)}")
            one = agent_label(agents)  # type: ignore[arg-type]
            raise ValueError(
                f"agents must be one agent per seat, got the single agent {one!r}, which does not say how many "
                f"seats there are: give it once per seat, e.g. agents=({one!r},) * 4"
            )
        if not MIN_PLAYERS <= len(agents) <= MAX_PLAYERS:
            raise ValueError(
                f"agents must be one agent per seat, {MIN_PLAYERS} to {MAX_PLAYERS} of them, got {len(agents)}"
            )
        self.table_rules()
        if self.seed is not None:
            check_seed(self.seed)
        delay: object = self.delay  # a numpy number too, compared as it is: float(10**400) overflows
        if delay is not None and (
            isinstance(delay, (bool, np.bool_))
            or not isinstance(delay, numbers.Real)
            or not 0 <= cast(float, delay) <= 60
        ):
            raise ValueError(f"delay must be 0..60 seconds or None, got {delay!r}")


def watch(config: WatchConfig, stdout: TextIO) -> int:
    """Show one game among agents, move by move, with every hand at the top of each round;
    return :data:`EXIT_FINISHED`. The transcript is :func:`play`'s. Raises as
    :func:`play` does."""
    config.validate()
    n = len(config.agents)
    names = [f"player_{p}" for p in range(n)]
    seeds = _agent_seeds(config.seed, n + 1)
    rules = config.table_rules()
    seats, labels = _seat_agents(list(enumerate(config.agents)), rules, seeds)
    game = LlamaGame(rules=rules, rng=seeds[0])

    say = _sayer(stdout)
    delay = config.delay if config.delay is not None else WATCH_DELAY if is_terminal(stdout) else 0.0
    transcript = _Transcript(say, None, names, lambda: terminal_columns(stdout), delay)
    table = Table(game, seats, names=labels, listener=transcript)  # messages name the agents
    say(
        f"L.L.A.M.A. with {n} players: "
        + ", ".join(f"{names[p]} = {agent_label(a)}" for p, a in enumerate(config.agents))
    )
    last_round = 0
    while not game.game_over:
        if game.round != last_round:
            last_round = game.round
            say("")
            say(_round_opening(game, names))
            width = terminal_columns(stdout)  # each round's: a resized terminal is followed
            for p in range(n):
                say("\n".join(wrap_row(f"  {names[p]:<10} ", [card_str(c) for c in game.hand(p)], width)))
        table.play_turn()
    return EXIT_FINISHED


def _ask(
    game: LlamaGame, me: int, names: list[str], stdin: TextIO, stdout: TextIO, say: Callable[[str], None]
) -> int | str:
    """Show the table and read moves until a legal one, with ``say`` (:func:`_sayer`'s);
    why the person left (``"exit"``, ``"end of input"``) when they leave. The table and the
    moves wrap between cards and moves to the terminal's width of the moment (read again at
    each prompt, so that a resized terminal is followed); into a file or a pipe their lines
    stay whole.

    Each line read is echoed after the prompt, so the transcript reads like a session,
    unless both the input and the output are the terminal, which shows what is typed
    itself: read from a pipe or a file, the screen showed no move; written into a pipe
    or a file (``| tee game.log``), the log showed none (on a screen through ``tee`` the
    move then shows twice: as typed, and on the next line from the log). At a terminal
    end of input (Ctrl-D) ends the prompt's line, which the terminal does not.
    """
    echo = not (is_terminal(stdin) and is_terminal(stdout))
    legal = game.legal_actions()
    width = terminal_columns(stdout)
    say("")
    say(render_table(game, me, names, width))
    say(_say_moves("", legal, width))
    while True:
        stdout.write("Your move> ")
        stdout.flush()
        line = stdin.readline()
        if echo:
            stdout.write(line if line.endswith("\n") else line + "\n")
        elif not line.endswith("\n"):  # a terminal shows what is typed, but Ctrl-D there ends no line
            stdout.write("\n")
        if line == "":
            say("End of input: leaving the game unfinished.")
            return "end of input"
        width = terminal_columns(stdout)
        try:
            action = parse_move(line, game)
        except MoveError as exc:
            msg = str(exc)
            say(_say_moves(f"{msg[:1].upper()}{msg[1:]}. ", legal, width))
            continue
        if action == _HELP:
            say(_say_moves("", legal, width))
            say("Type 'exit' to leave the game; q quits only the round.")
            continue
        if action == _EXIT:
            say("You left the game unfinished.")
            return "exit"
        return action
