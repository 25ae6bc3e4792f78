"""Reading the docs' fenced blocks, and running ``llama-rl`` the way a sample shows it.

The one Markdown reader of the tests: tests/test_docs_snippets.py runs every block it
finds, tests/test_docs_cli.py checks docs/cli.md's synopses, tests/test_docs.py and
tests/test_readme.py read single blocks. A block is a fenced block at the start of a
line (```` ```info ```` ... ```` ``` ````); ``line`` is the line of its first content line,
so a failure names the place in the doc.

A ```console block holds samples: a ``$ command`` line (continued onto the next lines by
a trailing backslash, as in a shell), then the output the command prints, until the
next ``$`` line. In a ``play`` sample the text after each ``Your move> `` prompt is what
the person typed.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PROMPT = "Your move> "
"""The ``play`` prompt; what follows it on a sample's line was typed."""


def doc_files() -> list[Path]:
    """Every Markdown file a user reads: README.md and everything under docs/."""
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def doc_name(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


@dataclass(frozen=True)
class Block:
    """One fenced block of a Markdown file."""

    doc: str
    """The file, relative to the repository root (``docs/cli.md``)."""
    line: int
    """The line of the block's first content line."""
    info: str
    """The info string: ``python``, ``console``, ``""``..."""
    body: str
    end: int
    """The line of the closing fence."""

    @property
    def where(self) -> str:
        return f"{self.doc}:{self.line}"


def fenced_blocks(path: Path) -> list[Block]:
    """Every fenced block of the file, in order."""
    text = path.read_text(encoding="utf-8")
    return [
        Block(
            doc_name(path),
            text.count("\n", 0, m.start(2)) + 1,
            m.group(1),
            m.group(2),
            text.count("\n", 0, m.end()) + 1,
        )
        for m in re.finditer(r"^```(\w*)\n(.*?)^```$", text, flags=re.S | re.M)
    ]


def python_blocks(path: Path) -> list[Block]:
    return [b for b in fenced_blocks(path) if b.info == "python"]


@dataclass(frozen=True)
class Sample:
    """One ``$ command`` of a console block and the output shown under it."""

    doc: str
    line: int
    command: str
    """The command line, continuation lines joined, without the ``$ ``."""
    output: str

    @property
    def where(self) -> str:
        return f"{self.doc}:{self.line}"

    @property
    def typed(self) -> list[str]:
        return [s[len(PROMPT) :] for s in self.output.splitlines() if s.startswith(PROMPT)]


def samples(block: Block) -> list[Sample]:
    """The samples of a console block; text before its first ``$`` line is a sample without a command."""
    found: list[Sample] = []
    start, command, output, continued = block.line, "", "", False
    for offset, text in enumerate(block.body.splitlines(keepends=True)):
        if continued:
            command += " " + text.strip()
        elif text.startswith("$ "):
            if command or output:
                found.append(Sample(block.doc, start, command, output))
            start, command, output = block.line + offset, text[2:].rstrip("\n"), ""
        else:
            output += text
            continue
        continued = command.endswith("\\")
        command = command.removesuffix("\\").rstrip() if continued else command
    found.append(Sample(block.doc, start, command, output))
    return found


TERMINAL_COLUMNS = 100
"""The width of the terminal a typed sample runs at (what wraps to a terminal's width,
the table of ``play``, wraps the same on every machine)."""


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def run_cli(argv: list[str], stdin: str = "", *, terminal: bool = False) -> tuple[int, str]:
    """``llama-rl argv`` in this process: the exit code and stdout and stderr as one text,
    written to a terminal when ``terminal`` (a session a person typed: what a command says
    only off a terminal is left out, as the person would not see it), a terminal
    :data:`TERMINAL_COLUMNS` wide whatever the width of the one running the tests."""
    from train.cli import main

    out = _Terminal() if terminal else io.StringIO()
    saved_stdin, saved_columns = sys.stdin, os.environ.get("COLUMNS")
    sys.stdin = io.StringIO(stdin)
    os.environ["COLUMNS"] = str(TERMINAL_COLUMNS)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
            code = main(argv)
    finally:
        sys.stdin = saved_stdin
        if saved_columns is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = saved_columns
    return code, out.getvalue()
