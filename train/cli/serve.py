"""``llama-rl serve``: play, watch and replay games in the browser."""

from __future__ import annotations

import argparse
import importlib
import warnings

from agents.base import agent_path
from train.cli.common import (
    CommandError,
    HelpFormatter,
    SubParsers,
    file_name,
    folder_name,
    int_in,
    missing_dependency,
)
from train.play import WEB_REQUIRES
from train.play.hosts import LOCAL_HOSTS, allowed_host, is_loopback, listen_host, requested_name

__all__ = ["add_parser"]

_WILDCARDS = ("0.0.0.0", "::")


def _refused(text: str, also: str = "") -> argparse.ArgumentTypeError:
    return argparse.ArgumentTypeError(
        f"a host name or address without a scheme or port (the page's port is --port{also}), got {text!r}"
    )


def _host_name(text: str) -> str:
    """A name for ``--allow-host``, in the one spelling the server compares the ``Host``
    header's name in (:func:`train.play.hosts.allowed_host`: ``[::1]`` is ``::1``, ``LOCALHOST``
    ``localhost``, ``bücher.local`` ``xn--bcher-kva.local``); a port or a scheme given with
    it would never match."""
    name = allowed_host(text)
    if name is None:
        raise _refused(text)
    return name


def _listen_host(text: str) -> str:
    """The address for ``--host``, in the one spelling of ``--allow-host``'s names
    (:func:`train.play.hosts.listen_host`: ``0:0:0:0:0:0:0:0`` is ``::``), and what the
    server can listen on besides (``fe80::1%eth0``, ``bücher.local``); ``127.0.0.1:8000`` or
    ``http://...`` failed to bind with "Name or service not known". An empty one is refused,
    not taken for every interface: ``--host "$HOST"`` with HOST unset would open the server
    to the network."""
    name = listen_host(text)
    if name is None:
        raise _refused(text, "; 0.0.0.0 listens on every interface")
    return name


def _run(args: argparse.Namespace) -> int:
    with missing_dependency("llama-rl serve", extra="web"):
        for module in WEB_REQUIRES:
            importlib.import_module(module)
        from train.play.history import History, HistoryError, default_path
        from train.play.web import bind, serve

        model_dirs = []
        for d in args.allow_models:
            path = agent_path(d)  # (~ a home folder where there is one: a folder ~old is read as written)
            if not path.is_dir():
                raise CommandError(f"--allow-models {d}: not a directory")
            model_dirs.append(path)
        hosts = [*LOCAL_HOSTS, *args.allow_host]
        if args.host not in _WILDCARDS:
            hosts.append(requested_name(args.host))
        try:
            sock = bind(args.host, args.port)
        except OSError as exc:
            raise CommandError(f"cannot serve on {args.host}:{args.port}: {exc.strerror or exc}") from None
        others = [name for name in args.allow_host if not is_loopback(name)]
        if others and is_loopback(args.host):  # they would be refused a connection, not served
            warnings.warn(
                f"--allow-host {', '.join(others)}: the server listens on {args.host} only, which other machines "
                "cannot reach (add --host 0.0.0.0 to serve them)",
                stacklevel=1,
            )
        history = None
        try:
            if not args.no_history:
                history = History(default_path() if args.history is None else agent_path(args.history))
        except HistoryError as exc:
            sock.close()
            raise CommandError(str(exc)) from None
        if not is_loopback(args.host):
            print(
                f"note: serving on {args.host} makes the page reachable from other machines on that network"
                + (" (add --allow-host NAME for each name they use to reach it)" if args.host in _WILDCARDS else ""),
                flush=True,
            )
        shown = "127.0.0.1" if args.host in _WILDCARDS else args.host
        shown = f"[{shown.replace('%', '%25')}]" if ":" in shown else shown  # (an interface's % written as in a URL)
        saved = f"games are saved in {history.path}" if history is not None else "no history is kept"
        print(f"LLAMA-RL is served at http://{shown}:{args.port}/  ({saved}; Ctrl-C stops it)", flush=True)
        try:
            serve(
                sock,
                hosts=hosts,
                max_games=args.max_games,
                idle_minutes=args.idle_minutes,
                history=history,
                model_dirs=model_dirs,
            )
        finally:  # closing folds the write-ahead log into the file: a copy of the file alone holds every game
            if history is not None:
                history.close()
    return 0


def add_parser(sub: SubParsers) -> argparse.ArgumentParser:
    p: argparse.ArgumentParser = sub.add_parser(
        "serve",
        help="play, watch and replay games in the browser (a local web app)",
        description=(
            "Start a local web app: play against agents by clicking, with friends at one table (one private "
            "link per person), watch agents play each other, replay a game record, and see the history and "
            "ratings of every game played in it. It listens on 127.0.0.1 only unless --host says otherwise. "
            "Needs the 'web' extra (from a checkout: pip install -e '.[web]'; without it the command prints "
            "the line that installs it here)."
        ),
        epilog=(
            "examples:\n  llama-rl serve\n  llama-rl serve --port 8080\n"
            "  llama-rl serve --allow-models runs        # the page seats the run runs/NAME as ppo:path=NAME"
        ),
        formatter_class=HelpFormatter,
    )
    p.add_argument(
        "--host",
        type=_listen_host,
        default="127.0.0.1",
        help="address to listen on, without a port (default 127.0.0.1: this machine only; 0.0.0.0: every interface)",
    )
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
    kept = p.add_mutually_exclusive_group()
    kept.add_argument(
        "--history",
        metavar="FILE",
        type=file_name,
        help="the SQLite file of finished games and ratings (default: history.sqlite3 in your data directory)",
    )
    kept.add_argument("--no-history", action="store_true", help="save no games")
    p.add_argument(
        "--allow-models",
        metavar="DIR",
        type=folder_name,
        action="append",
        default=[],
        help=(
            "let the page name models under DIR (ppo:path=NAME reads DIR/NAME); "
            "by default agents from the page load no files"
        ),
    )
    p.add_argument(
        "--allow-host",
        metavar="NAME",
        action="append",
        type=_host_name,
        default=[],
        help="also answer requests addressed to NAME (a host name or address other machines use to reach it)",
    )
    p.set_defaults(func=_run, command_parser=p)
    return p
