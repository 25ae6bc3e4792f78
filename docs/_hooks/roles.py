"""Sphinx roles in the API reference: the docstrings name other objects with them
(:class:`LlamaGame`, :func:`~llama_env.table.seat_positions`), which the Markdown of
mkdocstrings shows as they are written. Each becomes the object's name in code, linked to
its entry where the reference has one, as the role means.

A role's name is written as Python reads it where the docstring stands (``LlamaGame`` in
``llama_env.table`` is the ``llama_env.engine.LlamaGame`` it imports), and the reference's
links know objects by their full names: so, as Griffe reads the code,
:class:`QualifiedRoles` (a Griffe extension, in mkdocs.yml's ``extensions``) replaces each
role with an optional link of mkdocs-autorefs to its object's full name, which links the
code where autorefs knows the name (a private helper or a module no page shows stays
plain code)."""

from __future__ import annotations

import re
from typing import Any

import griffe

_KINDS = r":(?:py:)?(?:class|func|meth|mod|attr|data|exc|obj|const):"

# In a docstring: :class:`X`, :func:`~a.b.c()`, :meth:`title <X.y>`.
_SOURCE_ROLE = re.compile(
    rf"(?P<kind>{_KINDS})`(?:(?P<title>[^`<]+?) <(?P<target>[\w.]+)>|(?P<short>~?)(?P<name>[\w.]+)(?P<call>\(\))?)`"
)


def _name_and_shown(match: re.Match[str]) -> tuple[str, str]:
    """The object a role names, and what it shows: its title, else the name as written
    (its last part after ``~``), with the ``()`` written after a callable's name."""
    if match["target"]:
        return match["target"], match["title"]
    name = match["name"]
    return name, (name.rsplit(".", 1)[-1] if match["short"] else name) + (match["call"] or "")


def _full_name(name: str, kind: str, scope: griffe.Object) -> str:
    """The full name of the object ``name`` names in a docstring of ``scope``: ``name``
    as Python reads it there (its first part looked up in the object's members, then its
    parents', then what its module imports), else ``name`` itself where it is a full name
    (``llama_env.table.Table``), an import followed to the object it imports. A name
    neither finds is left as written.

    A package whose ``__init__`` imports a function of the same name from its module
    (``from .evaluate import evaluate``) shows Griffe that module under the name, where
    Python sees the function: a role that names no module takes the function."""
    first, dot, rest = name.partition(".")
    try:
        path = scope.resolve(first) + dot + rest
    except griffe.NameResolutionError:  # not a name of this scope: a full name, or a library's
        path = name
    found = None
    for candidate in dict.fromkeys((path, name)):
        try:
            found = scope.modules_collection.get_member(candidate)
            break
        except Exception:  # noqa: BLE001 - a member Griffe does not see, or in an import not loaded yet
            continue
    if found is None:
        return path
    try:
        found = found.final_target if found.is_alias else found
        if found.is_module and "mod" not in kind and found.name in found.members:
            found = found.members[found.name]
            found = found.final_target if found.is_alias else found
    except (griffe.AliasResolutionError, griffe.CyclicAliasError):
        return found.target_path
    return found.path


class QualifiedRoles(griffe.Extension):
    """Each role in a docstring of the package names its object by its full name. Griffe
    calls these once the package's tree is complete, so a name resolves wherever it is."""

    def on_package(self, *, pkg: griffe.Module, **_: Any) -> None:
        _qualify(pkg)  # on_object is called for the package's members only

    def on_object(self, *, obj: griffe.Object, **_: Any) -> None:
        _qualify(obj)  # not called for an alias, whose docstring is its target's


def _qualify(obj: griffe.Object) -> None:
    """The roles in ``obj``'s docstring, each with its object's full name."""
    if obj.docstring is not None:
        obj.docstring.value = _SOURCE_ROLE.sub(lambda m: _qualified(m, obj), obj.docstring.value)


def _qualified(match: re.Match[str], scope: griffe.Object) -> str:
    """The role ``match`` as code linked to its object's full name where autorefs knows it,
    showing what it showed. The backticks stay inside the tag, for Markdown to make the
    code: a ``<code>`` written here would have Markdown applied inside it (``__setstate__``
    turned bold)."""
    name, shown = _name_and_shown(match)
    return f'<autoref identifier="{_full_name(name, match["kind"], scope)}" optional>`{shown}`</autoref>'
