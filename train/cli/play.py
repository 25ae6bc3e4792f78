"""``llama-rl play``: play a game yourself against agents in the terminal."""

from __future__ import annotations

import argparse
import sys
from typing import TextIO

from train.cli.common import (
    AGENT_SYNTAX,
    PROG,
    CommandError,
    HelpFormatter,
    SubParsers,
    add_rule_options,
    agent_specs,
    game_errors,
    int_in,
    is_terminal,
    players_type,
    rules_from_args,
    say_on_stderr,
    seed_type,
    standard_output,
)
from train.play.terminal import EXIT_LEFT, PlayConfig, play

__all__ = ["run_play", "add_parser"]


def run_play(config: PlayConfig, stdin: TextIO | None = None, stdout: TextIO | None = None) -> int:
    """``llama-rl play``: one game against agents on the terminal (see :func:`train.play.terminal.play`).

    A game left unfinished (``exit``, end of input) is exit code 1 with one line on stderr
    saying so (``llama-rl: game left unfinished (end of input)``), for a script that
    captures stdout apart; not when both stdout and stderr are terminals, where the person
    has just read it in the game (``You left the game unfinished.``). A closed standard input or output,
    and an agent that fails during the game (named with its seat), are a
    :class:`CommandError` with exit code 1: the game is left unfinished, as when the
    person leaves it; a bad configuration one with exit code 2."""
    stdin = stdin if stdin is not None else sys.stdin
    if stdin is None:  # `llama-rl play <&-`: Python sets sys.stdin to None
        raise CommandError("standard input is closed: play reads your moves from it", code=EXIT_LEFT)
    out = stdout if stdout is not None else standard_output("play shows the game on it")
    with game_errors():
        config.validate()
        return play(config, stdin, out, on_leave=lambda why: _left(why, out))


def _left(why: str, stdout: TextIO) -> None:
    """Say on stderr that the game was left unfinished, and ``why``, unless the game's
    ``stdout`` and stderr are both terminals: the person there has just read it in the game,
    and a second line repeated it. With stdout in a file (``> out.txt``) the terminal
    showed nothing of the game, so the line is said."""
    if not (is_terminal(stdout) and is_terminal(sys.stderr)):
        say_on_stderr(f"{PROG}: game left unfinished ({why})")


def _run(args: argparse.Namespace) -> int:
    opponents = agent_specs(args.opponents, "--opponents")
    rules = rules_from_args(args, args.players)
    others = args.players - 1
    if len(opponents) not in (1, others):
        seats, fix = (
            ("seat", "give a single agent")
            if others == 1
            else ("seats", f"give exactly {others} or a single agent to fill them all")
        )
        raise CommandError(
            f"--opponents names {len(opponents)} agents for the {others} other {seats} of a "
            f"{args.players}-player game; {fix}"
        )
    if not 0 <= args.seat < args.players:
        raise CommandError(f"--seat must be between 0 and {others} for {args.players} players, got {args.seat}")
    config = PlayConfig(rules=rules, opponents=tuple(opponents), seat=args.seat, seed=args.seed)
    return run_play(config)


def add_parser(sub: SubParsers) -> argparse.ArgumentParser:
    p: argparse.ArgumentParser = sub.add_parser(
        "play",
        help="play a game yourself against agents in the terminal",
        description=(
            "Play one game against agents. At each of your turns you see your hand, the top card, "
            "the draw pile, the other players' hand sizes, scores and who has quit, and your legal "
            "moves.\n\n"
            "Type a move by its key, shown in brackets (q or [q]), or in the words beside it: the card "
            "value to play it (4, 'play 4' or 'play a 4'), L or 'play a llama', d or 'draw', q or 'quit "
            "the round' (not the program). 'a7' or 'action 7' names an action by its index 0..8; 'a 7', "
            "with a space, is refused, as it reads as 'play a 7' too. 'help' lists the moves; 'exit' or "
            "end of input (Ctrl-D) "
            "leaves the game (exit code 1; 0 when the game is played to the end).\n\n" + AGENT_SYNTAX
        ),
        epilog=(
            "examples:\n"
            "  llama-rl play\n"
            "  llama-rl play --players 4 --opponents heuristic --seed 7 --seat 2\n"
            "  llama-rl play --players 3 --opponents random,heuristic --end-score 20"
        ),
        formatter_class=HelpFormatter,
    )
    p.add_argument(
        "--players", type=players_type, default=3, metavar="N", help="players, you included, 2..6 (default 3)"
    )
    p.add_argument(
        "--opponents",
        default="heuristic",
        metavar="A,B,...",
        help="one agent for every other seat, or one per other seat in seat order (default heuristic)",
    )
    p.add_argument("--seed", type=seed_type, default=None, help="seed for a reproducible game (default: a new game)")
    p.add_argument(
        "--seat", type=int_in(0, None, "the seat"), default=0, help="your seat; seat 0 starts round 1 (default 0)"
    )
    add_rule_options(p)
    p.set_defaults(func=_run, command_parser=p)
    return p
