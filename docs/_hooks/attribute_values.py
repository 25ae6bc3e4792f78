"""A Griffe extension for the API reference: an attribute's entry shows its value where a
reader looks it up for the value, and leaves out the source of an expression that only
says how the value is made.

Shown: a literal (``MAX_PLAYERS = 6``, a table of parameters such as
``HEURISTIC_DEFAULTS``), arithmetic of literals as written (``MAX_GAMES = 10 ** 9``), a
type alias as written (``SeedKey = tuple[int, ...]``), and, for a module's or a class's
attribute made from other values, the short ``repr`` of the value it gets: worked out
from the literals and the values the expression names (``SIGMA = MU / 3``,
``SHARED_POLICY = RLLIB_POLICY``, a dataclass field's ``field(default=...)``), else, in
the bottom layers, read from the imported module where it is numbers
(``DECK_SIZE = NUM_CARD_VALUES * COPIES_PER_VALUE``; ``DEFAULT_NUM_PLAYERS =
_StandardValue(4)`` is shown as ``4``, its value, not the private call). Left out: a value
an instance gets in ``__init__`` (the code that computes it), the source of an expression
that names private code, a value read from the imported module that is not numbers (a
string made at import may be a path or a setting of the machine that built the site; an
object), and anything long (the whole ``FIELDS`` table, a call that builds a record class):
there the docstring says what it is."""

from __future__ import annotations

import ast
import contextlib
import importlib
import operator
import re
from collections.abc import Callable
from typing import Any

import griffe

LONGEST = 60
"""The longest expression, or ``repr`` of a value, in characters, that an entry shows."""

LONGEST_LITERAL = 600
"""The longest literal an entry shows: a table of a dozen parameters is what a reader
looks up, a page of them is not."""

RUNTIME_PACKAGES = ("llama_env", "agents")
"""The packages whose modules are imported to read a value: they import in under a
second. ``train``'s pull in PyTorch or Ray (seconds each, and an extra may be missing)."""

_PRIVATE = re.compile(r"(?<![\w.])_[A-Za-z]\w*|\._[A-Za-z]")
"""A private name in an expression (``_StandardValue``, ``x._cache``); ``__slots__``,
``__version__`` are no private code."""

_GENERICS = frozenset({"tuple", "list", "dict", "set", "frozenset", "type"})
"""The builtins a type alias subscripts; any other base must come from ``typing`` or
``collections.abc``."""

_OPERATORS: dict[type, Callable[..., Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
    ast.USub: operator.neg,
    ast.UAdd: operator.pos,
}


def _parse(value: str) -> ast.expr | None:
    try:
        return ast.parse(value, mode="eval").body
    except SyntaxError:
        return None


def _literal(value: str) -> bool:
    """Whether ``value`` is a literal, or arithmetic of number literals (``16 * 2**20``)."""
    tree = _parse(value)
    if tree is None:
        return False
    try:
        ast.literal_eval(tree)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return _arithmetic(tree)
    return True


def _arithmetic(node: ast.expr) -> bool:
    """Whether ``node`` combines number literals with operators only."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, (int, float)) and not isinstance(node.value, bool)
    if isinstance(node, ast.UnaryOp):
        return type(node.op) in _OPERATORS and _arithmetic(node.operand)
    if isinstance(node, ast.BinOp):
        return type(node.op) in _OPERATORS and _arithmetic(node.left) and _arithmetic(node.right)
    return False


def _type_alias(attr: griffe.Attribute, value: str) -> bool:
    """Whether ``value``, a module attribute's, is a type (``tuple[int, ...]``,
    ``Callable[[X], Y]``, ``int | None``): what a type alias is."""
    if str(attr.annotation) == "TypeAlias":
        return True

    def is_type(node: ast.expr) -> bool:
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
            return is_type(node.left) and is_type(node.right)
        if not isinstance(node, ast.Subscript):
            return False
        base = ast.unparse(node.value)
        if base in _GENERICS:
            return True
        try:
            return attr.parent is not None and attr.parent.resolve(base).startswith(
                ("typing.", "collections.abc.", "typing_extensions.")
            )
        except griffe.NameResolutionError:
            return False

    tree = _parse(value)
    return tree is not None and is_type(tree)


def _evaluated(node: ast.expr, scope: griffe.Object, depth: int = 0) -> Any:
    """The value of ``node``, a literal or arithmetic of literals and of other attributes'
    values (followed by name, in ``scope``); ``ValueError`` where it is something else."""
    if depth > 8:
        raise ValueError("too deep")
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, (ast.Tuple, ast.List)):
        items = [_evaluated(e, scope, depth + 1) for e in node.elts]
        return tuple(items) if isinstance(node, ast.Tuple) else items
    if isinstance(node, ast.Dict):
        keys = [k for k in node.keys if k is not None]  # None: a ``**mapping`` unpacked
        if len(keys) != len(node.values):
            raise ValueError("a dict with ** in it")
        return {
            _evaluated(k, scope, depth + 1): _evaluated(v, scope, depth + 1)
            for k, v in zip(keys, node.values, strict=True)
        }
    if isinstance(node, ast.UnaryOp) and type(node.op) in _OPERATORS:
        return _OPERATORS[type(node.op)](_evaluated(node.operand, scope, depth + 1))
    if isinstance(node, ast.BinOp) and type(node.op) in _OPERATORS:
        left, right = (_evaluated(n, scope, depth + 1) for n in (node.left, node.right))
        if not all(isinstance(v, (int, float)) for v in (left, right)):
            raise ValueError("arithmetic of numbers only")
        return _OPERATORS[type(node.op)](left, right)
    if isinstance(node, ast.Call) and ast.unparse(node.func) in ("field", "dataclasses.field"):
        defaults = [k.value for k in node.keywords if k.arg == "default"]
        if not defaults:
            raise ValueError("no default: a factory's, or a field without one")
        return _evaluated(defaults[0], scope, depth + 1)
    if isinstance(node, ast.Name) and not node.id.startswith("_"):
        try:
            named = scope.modules_collection.get_member(scope.resolve(node.id))
            named = named.final_target if named.is_alias else named
        except Exception as error:  # noqa: BLE001 - not a name Griffe sees, or an import not loaded
            raise ValueError(node.id) from error
        if not isinstance(named, griffe.Attribute) or named.value is None:
            raise ValueError(node.id)
        tree = _parse(str(named.value))
        if tree is None or named.parent is None:
            raise ValueError(node.id)
        return _evaluated(tree, named.parent, depth + 1)
    raise ValueError(ast.unparse(node))


def _plain(value: Any) -> str | None:
    """``repr(value)`` where it is a short literal."""
    text = repr(value)
    return text if len(text) <= LONGEST and _literal(text) else None


def _worked_out(attr: griffe.Attribute, written: str) -> str | None:
    """The value of ``attr``'s expression worked out from the values it names."""
    tree = _parse(written)
    if tree is None or attr.parent is None:
        return None
    try:
        return _plain(_evaluated(tree, attr.parent))
    except (ValueError, TypeError, ArithmeticError, RecursionError):
        return None


def _numbers(value: Any) -> bool:
    """Whether ``value`` is a number or a boolean, or a tuple, list or dict of them (keys
    too): what a value read at import may be shown as. A string made at import may hold
    the building machine's path or environment (``str(SOME_PATH)``, ``os.environ.get``)."""
    if isinstance(value, (bool, int, float)):
        return True
    if isinstance(value, (tuple, list)):
        return all(_numbers(v) for v in value)
    if isinstance(value, dict):
        return all(_numbers(k) and _numbers(v) for k, v in value.items())
    return False


def _imported(attr: griffe.Attribute) -> str | None:
    """The value Python gives ``attr`` (a module's or a class's attribute), read from its
    imported module in :data:`RUNTIME_PACKAGES` where it is :func:`numbers <_numbers>`;
    ``None`` where it is anything else, where a class holds none (a dataclass field made
    by a factory) or the module does not import."""
    parent = attr.parent
    if parent is None or not attr.module.path.startswith(tuple(p + "." for p in RUNTIME_PACKAGES)):
        return None
    if not (parent.is_module or (parent.is_class and parent.parent is attr.module)):
        return None
    try:
        owner: Any = importlib.import_module(attr.module.path)
        if parent.is_class:
            owner = getattr(owner, parent.name)
        value = getattr(owner, attr.name)
    except Exception:  # noqa: BLE001 - a value only instances get, or a module that fails to import
        return None
    with contextlib.suppress(Exception):
        return _plain(value) if _numbers(value) else None
    return None


def shown(attr: griffe.Attribute) -> str | None:
    """What the reference shows as ``attr``'s value, or ``None`` to show none."""
    if attr.value is None:
        return None
    written = str(attr.value)
    if _literal(written):
        return written if len(written) <= LONGEST_LITERAL else None
    if "class-attribute" not in attr.labels and "module-attribute" not in attr.labels:
        return None  # the code of __init__ that computes it
    short = len(written) <= LONGEST and not _PRIVATE.search(written)
    if short and attr.parent is attr.module and _type_alias(attr, written):
        return written
    return _worked_out(attr, written) or _imported(attr)


class ShownValues(griffe.Extension):
    """Each attribute keeps the value :func:`shown` gives it, or none."""

    def on_attribute(self, *, attr: griffe.Attribute, **_: Any) -> None:
        attr.value = shown(attr)
