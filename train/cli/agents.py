"""``llama-rl agents``: list the registered agents."""

from __future__ import annotations

import argparse
import sys
from typing import TextIO

from llama_env.agent import describe
from train.cli.common import HelpFormatter, SubParsers

__all__ = ["list_agents", "add_parser"]


def list_agents(out: TextIO | None = None) -> dict[str, str]:
    """Print every registered agent with its one-line description; return them."""
    out = out if out is not None else sys.stdout
    described = describe()
    width = max((len(n) for n in described), default=0)
    for name, doc in described.items():
        print(f"{name:<{width}}  {doc}".rstrip(), file=out)
    return described


def _run(args: argparse.Namespace) -> int:
    list_agents()
    return 0


def add_parser(sub: SubParsers) -> argparse.ArgumentParser:
    p: argparse.ArgumentParser = sub.add_parser(
        "agents",
        help="list the registered agents",
        description="List every registered agent with its one-line description.",
        epilog="example:\n  llama-rl agents",
        formatter_class=HelpFormatter,
    )
    p.set_defaults(func=_run, command_parser=p)
    return p
