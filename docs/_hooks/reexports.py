"""A Griffe extension for the API reference: each object is shown once, under the module
that defines it (docs/api/index.md). A package's ``__all__`` often names what it imports
from a module of its own (``from train.training import TrainConfig``), and
``filters: public`` would show that name on the package's entry too. This marks such an
import private where a page of the reference shows the object it imports (a ``:::``
block for it or for its module), so no page lists its members by hand. What a package
imports from a module no page shows (``train.training.TrainResult``, from
``train.training.result``) stays public: the package is where the reference shows it."""

from __future__ import annotations

import functools
import re
from pathlib import Path
from typing import Any

import griffe

_PROJECT = ("llama_env.", "agents.", "train.")
"""The packages the reference shows."""

_PAGES = Path(__file__).resolve().parents[1] / "api"
"""The reference's pages, each ``::: name`` line an object (or module) it shows."""


@functools.cache
def _blocks() -> frozenset[str]:
    """What the reference's pages show a block for."""
    pages = (page.read_text(encoding="utf-8") for page in _PAGES.glob("*.md"))
    return frozenset(name for text in pages for name in re.findall(r"^::: ([\w.]+)", text, flags=re.M))


def _shown_elsewhere(alias: griffe.Alias) -> bool:
    """Whether a page shows what ``alias`` imports: a block for it or for its module."""
    try:
        path = alias.final_target.path
    except griffe.AliasResolutionError:  # into a package not loaded yet
        path = alias.target_path
    return path in _blocks() or path.rpartition(".")[0] in _blocks()


class ProjectReexports(griffe.Extension):
    """A module's import that a page shows where it is defined is private there."""

    def on_alias(self, *, alias: griffe.Alias, **_: Any) -> None:
        # asking an alias is_module would resolve it: its parent is no alias
        module_level = alias.parent is not None and alias.parent.is_module
        if module_level and alias.target_path.startswith(_PROJECT) and _shown_elsewhere(alias):
            alias.public = False
