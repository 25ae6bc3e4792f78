"""A Griffe extension for the API reference: an attribute's entry shows its value where
the value is a short literal (``MAX_PLAYERS = 6``, ``DEFAULT_OBS_VERSION = 1``), which is
what a reader looks it up for. Any other value is the source of the expression that makes
it (a whole table of fields, a call that builds a record class, ``_StandardValue(4)``,
which names a class of no page): that is left out, and the docstring says what it is."""

from __future__ import annotations

import ast
from typing import Any

import griffe

LONGEST = 60
"""The longest value, in characters, that an entry shows."""


def shown(value: str) -> bool:
    """Whether the reference shows ``value`` (an attribute's value as written)."""
    if len(value) > LONGEST:
        return False
    try:
        ast.literal_eval(value)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return False
    return True


class LiteralValues(griffe.Extension):
    """Each attribute of the package keeps its value only where :func:`shown` says so."""

    def on_package(self, *, pkg: griffe.Module, **_: Any) -> None:
        objects: list[griffe.Object] = [pkg]
        while objects:
            obj = objects.pop()
            objects += [m for m in obj.members.values() if not m.is_alias]
            if obj.is_attribute and obj.value is not None and not shown(str(obj.value)):
                obj.value = None
