"""docs/cli.md shows what the commands really print, and its synopses are the parsers'.

Its samples (```console blocks of ``$ llama-rl ...`` lines, each followed by the output
that command prints) run in tests/test_docs_snippets.py with every other doc's: each
output must equal the real one exactly, and a ``play`` sample's typed moves are its
input. This file checks that the doc has its samples, each showing its output, and
the synopses (plain ``` blocks starting with ``llama-rl COMMAND``) against the command's
parser: the same options, the same required ones, and where the parser has a default,
the synopsis shows it (``[--games 1000]``, not ``[--games N]``).

A synopsis this file cannot read fails with the reason; none is skipped.
"""

from __future__ import annotations

import re

import pytest
from docs_blocks import ROOT, fenced_blocks, run_cli, samples

from train.cli import build_parser
from train.cli.common import PROG

BLOCKS = fenced_blocks(ROOT / "docs" / "cli.md")
SAMPLES = [s for b in BLOCKS if b.info == "console" for s in samples(b)]
SYNOPSES = [(b.line, b.body) for b in BLOCKS if not b.info and b.body.startswith(f"{PROG} ")]


def test_the_doc_has_its_samples_and_synopses() -> None:
    """Guards the parsing: a change of the doc's markup must not leave samples unchecked."""
    assert len(SAMPLES) >= 10
    assert len(SYNOPSES) >= 5
    for sample in SAMPLES:
        assert sample.output, f"{sample.where}: a sample of docs/cli.md shows what `{sample.command}` prints"


_OPTION = r"--[a-z][\w-]*"


def _options(usage: str) -> tuple[set[str], set[str]]:
    """All options of a usage text, and those outside brackets (the required ones)."""
    return set(re.findall(_OPTION, usage)), set(re.findall(_OPTION, re.sub(r"\[[^\]]*\]", "", usage)))


@pytest.mark.parametrize("synopsis", SYNOPSES, ids=[body.split()[1] for _, body in SYNOPSES])
def test_synopsis_matches_the_parser(synopsis: tuple[int, str]) -> None:
    line, body = synopsis
    command = body.split()[1]
    code, help_text = run_cli([command, "--help"])
    assert code == 0, f"docs/cli.md:{line}: `{PROG} {command} --help` failed:\n{help_text}"
    usage = help_text.split("\n\n")[0]
    assert _options(body) == _options(usage), f"docs/cli.md:{line}: the synopsis of {command} is not\n{usage}"

    pairs = re.findall(rf"({_OPTION}) ([^\s\]|]+)", body)
    required = re.findall(rf"({_OPTION}) ([^\s\]|]+)", re.sub(r"\[[^\]]*\]", "", body))
    args = build_parser().parse_args([command, *(word for pair in required for word in pair)])
    for option, shown in pairs:
        if (option, shown) in required:
            continue
        default = getattr(args, option[2:].replace("-", "_"))
        # None: the parser leaves it to the command (`[--players 4]` for watch); []: a repeatable option
        if default is not None and default != []:
            assert str(default) == shown, f"docs/cli.md:{line}: {option} defaults to {default!r}, not {shown}"
