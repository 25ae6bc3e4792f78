"""``llama-rl serve``: play and watch games in the browser."""

from __future__ import annotations

import argparse

from train.cli.common import CommandError, HelpFormatter, SubParsers, int_in, missing_dependency

__all__ = ["add_parser"]


def _run(args: argparse.Namespace) -> int:
    if args.host not in ("127.0.0.1", "localhost", "::1") and not args.yes_public:
        print(
            f"note: serving on {args.host} makes the page reachable from other machines on that network",
            flush=True,
        )
    with missing_dependency("llama-rl serve", extra="web"):
        from train.play.web import serve

        try:
            serve(args.host, args.port, max_games=args.max_games, idle_minutes=args.idle_minutes)
        except OSError as exc:
            raise CommandError(f"cannot serve on {args.host}:{args.port}: {exc.strerror or exc}", code=1) from None
    return 0


def add_parser(sub: SubParsers) -> argparse.ArgumentParser:
    p: argparse.ArgumentParser = sub.add_parser(
        "serve",
        help="play and watch games in the browser (a local web app)",
        description=(
            "Start a local web app: play against agents by clicking, watch agents play each other, or replay a "
            "game record (saved by the page, or by eval/tournament --record). It listens on 127.0.0.1 only "
            "unless --host says otherwise. Needs the 'web' extra (pip install 'llama-rl[web]')."
        ),
        epilog="examples:\n  llama-rl serve\n  llama-rl serve --port 8080",
        formatter_class=HelpFormatter,
    )
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1: this machine only)")
    p.add_argument("--port", type=int_in(1, 65535, "the port"), default=8000, help="port (default 8000)")
    p.add_argument(
        "--max-games",
        type=int_in(1, 100_000, "the number of games"),
        default=200,
        help="live games at most (default 200)",
    )
    p.add_argument(
        "--idle-minutes",
        type=int_in(1, 10_000, "the idle time"),
        default=30,
        help="forget a game idle this long (default 30)",
    )
    p.add_argument("--yes-public", action="store_true", help=argparse.SUPPRESS)
    p.set_defaults(func=_run, command_parser=p)
    return p
