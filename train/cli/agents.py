"""``llama-rl agents``: list the registered agents."""

from __future__ import annotations

import argparse
import textwrap
from typing import TextIO

from llama_env.agent import GROUPS, describe, grouped
from train._program import terminal_columns
from train.cli.common import HelpFormatter, SubParsers, standard_output

__all__ = ["list_agents", "add_parser"]


def list_agents(out: TextIO | None = None) -> dict[str, str]:
    """Print every registered agent with its one-line description, by group
    (:data:`llama_env.agent.GROUPS`): the strongest agent first, then the policy alone,
    the baselines and the earlier models; return them all. A closed standard output
    (``out`` not given) is a :class:`~train.cli.common.CommandError`."""
    out = out if out is not None else standard_output("agents lists the agents on it")
    groups = grouped()
    width = max((len(n) for agents in groups.values() for n in agents), default=0)
    columns = terminal_columns(out)  # None: a line per agent, whole, for grep
    for k, (group, agents) in enumerate(groups.items()):
        print(("\n" if k else "") + GROUPS[group] + ":", file=out)
        for name, doc in agents.items():
            line = f"  {name:<{width}}  {doc}".rstrip()
            if columns is not None:  # under the name column, not back at the margin
                line = textwrap.fill(
                    line,
                    max(columns, width + 24),
                    subsequent_indent=" " * (width + 4),
                    break_on_hyphens=False,  # "heads-up" stays whole
                    break_long_words=False,
                )
            print(line, file=out)
    return describe()


def _run(args: argparse.Namespace) -> int:
    list_agents()
    return 0


def add_parser(sub: SubParsers) -> argparse.ArgumentParser:
    p: argparse.ArgumentParser = sub.add_parser(
        "agents",
        help="list the registered agents",
        description=(
            "List every registered agent with its one-line description: the strongest agent first, then "
            "the trained policy alone, the baselines, and the earlier models kept for comparison."
        ),
        epilog="example:\n  llama-rl agents",
        formatter_class=HelpFormatter,
    )
    p.set_defaults(func=_run, command_parser=p)
    return p
