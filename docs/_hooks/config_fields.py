"""A Griffe extension for the API reference: the fields of ``TrainConfig`` are declared as
``name: type = _f(default, help)`` (or ``_rule(name)``, for a rule option), so that
``llama-rl train --help`` is made from them. Read as written, the reference would show
each call as the field's value, in the class's signature too. This shows the default
instead, and the help that ``--help`` prints as the field's docstring."""

from __future__ import annotations

import dataclasses
import html
import importlib
import re
from typing import Any

import griffe

_HELPERS = ("_f", "_rule")
"""The functions of ``train.training.config`` that declare a field with its help."""


class ConfigFields(griffe.Extension):
    """Each field declared through :data:`_HELPERS` gets its default and its help."""

    def on_class_members(self, *, cls: griffe.Class, **_: Any) -> None:
        declared = [
            a
            for a in cls.attributes.values()
            if isinstance(a.value, griffe.ExprCall) and str(a.value.function) in _HELPERS
        ]
        if not declared:
            return
        runtime = getattr(importlib.import_module(cls.module.path), cls.name)
        fields = {f.name: f for f in dataclasses.fields(runtime)}
        for attr in declared:
            f = fields[attr.name]
            default = f.default if f.default_factory is dataclasses.MISSING else f.default_factory()
            attr.value = repr(default)
            attr.docstring = griffe.Docstring(_plain(f.metadata["help"]), parent=attr)


def _plain(text: str) -> str:
    """``text`` as Markdown that shows it as written: the help is plain text (``--help``
    prints it), and in ``llama__<algorithm>__<seed>`` Markdown would see a tag and bold."""
    return re.sub(r"([\\`*_\[\]])", r"\\\1", html.escape(text, quote=False))
