"""docs/cli.md shows what the commands really print: every sample runs here.

A sample is a ```console block of ``$ llama-rl ...`` lines, each followed by the output
that command prints (stdout and stderr together, as a terminal shows them). Each command
runs in this process through :func:`train.cli.main` and its output must equal the
sample's exactly: these commands print no timings, paths or progress bars (progress is
off when stderr is not a terminal), so nothing is normalised. In a ``play`` sample the
text after each ``Your move> `` prompt is what the person typed; it becomes the
command's input, echoed back as the command does with input that is not a terminal.

The synopses (plain ``` blocks starting with ``llama-rl COMMAND``) are checked against
the command's parser: the same options, the same required ones, and where the parser has
a default, the synopsis shows it (``[--games 1000]``, not ``[--games N]``).

A sample or synopsis this file cannot run or read fails with the reason; none is skipped.
"""

from __future__ import annotations

import contextlib
import io
import re
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from train.cli import build_parser, main
from train.cli.common import EXIT_USAGE, PROG
from train.play.terminal import EXIT_FINISHED, EXIT_LEFT

DOC = Path(__file__).resolve().parents[1] / "docs" / "cli.md"
TEXT = DOC.read_text(encoding="utf-8")
PROMPT = "Your move> "
"""The ``play`` prompt; what follows it on a sample's line was typed."""


@dataclass(frozen=True)
class Sample:
    """One ``$ command`` of a console block and the output shown under it."""

    line: int
    command: str
    output: str

    @property
    def typed(self) -> list[str]:
        return [s[len(PROMPT) :] for s in self.output.splitlines() if s.startswith(PROMPT)]


def _fenced_blocks() -> list[tuple[int, str, str]]:
    """Every fenced block of the doc as (line of its first content line, info string, body)."""
    return [
        (TEXT.count("\n", 0, m.start(2)) + 1, m.group(1), m.group(2))
        for m in re.finditer(r"^```(\w*)\n(.*?)^```$", TEXT, flags=re.S | re.M)
    ]


def _samples() -> list[Sample]:
    samples: list[Sample] = []
    for line, info, body in _fenced_blocks():
        if info != "console":
            continue
        start, command, output = line, "", ""  # text before a first `$ ` line is a sample without a command
        for offset, text in enumerate(body.splitlines(keepends=True)):
            if text.startswith("$ "):
                if command or output:
                    samples.append(Sample(start, command, output))
                start, command, output = line + offset, text[2:].rstrip("\n"), ""
            else:
                output += text
        samples.append(Sample(start, command, output))
    return samples


def _synopses() -> list[tuple[int, str]]:
    return [(line, body) for line, info, body in _fenced_blocks() if not info and body.startswith(f"{PROG} ")]


SAMPLES = _samples()
SYNOPSES = _synopses()


def _run(argv: list[str], stdin: str = "") -> tuple[int, str]:
    """``llama-rl argv`` in this process: the exit code and stdout and stderr as one text."""
    out = io.StringIO()
    saved_stdin = sys.stdin
    sys.stdin = io.StringIO(stdin)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
            code = main(argv)
    finally:
        sys.stdin = saved_stdin
    return code, out.getvalue()


def test_the_doc_has_its_samples_and_synopses() -> None:
    """Guards the parsing: a change of the doc's markup must not leave samples unchecked."""
    assert len(SAMPLES) >= 10
    assert len(SYNOPSES) >= 5
    for line, info, body in _fenced_blocks():
        if re.search(rf"^\$ {PROG}\b", body, flags=re.M):
            assert info == "console", (
                f"docs/cli.md:{line}: a `$ {PROG}` sample must be a ```console block to be checked"
            )


@pytest.mark.parametrize("sample", SAMPLES, ids=[s.command or f"line {s.line}" for s in SAMPLES])
def test_console_sample_is_the_real_output(sample: Sample) -> None:
    where = f"docs/cli.md:{sample.line}"
    if not sample.command:
        pytest.fail(f"{where}: a console block must start with a `$ {PROG} ...` line, found {sample.output!r}")
    words = shlex.split(sample.command, comments=True)
    if words[0] != PROG:
        pytest.fail(f"{where}: this test runs only `{PROG}` commands, not {sample.command!r}")
    code, output = _run(words[1:], "".join(f"{t}\n" for t in sample.typed))
    assert output == sample.output, f"{where}: `{sample.command}` now prints:\n{output}"
    if sample.output.startswith(f"{PROG}: error:"):
        expected_code = EXIT_USAGE
    elif sample.typed and sample.typed[-1] == "exit":
        expected_code = EXIT_LEFT
    else:
        expected_code = EXIT_FINISHED
    assert code == expected_code, f"{where}: `{sample.command}` exited with {code}"


_OPTION = r"--[a-z][\w-]*"


def _options(usage: str) -> tuple[set[str], set[str]]:
    """All options of a usage text, and those outside brackets (the required ones)."""
    return set(re.findall(_OPTION, usage)), set(re.findall(_OPTION, re.sub(r"\[[^\]]*\]", "", usage)))


@pytest.mark.parametrize("synopsis", SYNOPSES, ids=[body.split()[1] for _, body in SYNOPSES])
def test_synopsis_matches_the_parser(synopsis: tuple[int, str]) -> None:
    line, body = synopsis
    command = body.split()[1]
    code, help_text = _run([command, "--help"])
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
