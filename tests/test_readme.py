"""The README is part of the product: its examples run and its commands are checked in
tests/test_docs_snippets.py, with every doc's. (The contract's tables, which it links
to, are checked against the code in tests/test_docs.py.)"""

from __future__ import annotations

from docs_blocks import ROOT, fenced_blocks, samples

BLOCKS = fenced_blocks(ROOT / "README.md")


def test_readme_has_python_examples() -> None:
    assert len([b for b in BLOCKS if b.info == "python"]) >= 4


def test_readme_shows_every_command() -> None:
    """The command-line section names every `llama-rl` command a user starts with."""
    shown = {s.command.split()[1] for b in BLOCKS if b.info == "console" for s in samples(b)}
    assert {"agents", "eval", "tournament", "play", "watch", "serve", "train"} <= shown
