"""The agent protocol, the registry of agents by name, and agent specs (``name:key=value``).

This module is the bottom of the agent stack: the envs, the table driver and every upper
layer talk to agents through it, and it imports nothing from them. The registry is
owned here and filled from above: the ``agents`` package registers the built-in agents
when it is imported, and any installed package can add its own through the entry-point
group ``llama_rl.agents`` (an entry point names a module or callable; loading it
registers its agents). So ``gym.make("Llama-v0", opponents="heuristic")`` works after
``import llama_env`` alone, while ``llama_env`` never imports ``agents``.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import math
import operator
import os
import re
import sys
import warnings
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import FrameType
from typing import Any, Protocol, TypeAlias, runtime_checkable

import numpy as np

from llama_env.engine import (
    DECIMAL,
    INTEGER,
    Rules,
    brief,
    brief_line,
    check_seed,
    check_table_sizes,
    error_line,
    is_int,
    read_int,
)

__all__ = [
    "Agent",
    "BatchAgent",
    "AgentLike",
    "AgentSpec",
    "ENTRY_POINT_GROUP",
    "RESERVED_NAMES",
    "builtins_hidden",
    "register",
    "make",
    "names",
    "describe",
    "grouped",
    "GROUPS",
    "resolve",
    "reset_agent",
    "seat_member",
    "seat_for_game",
    "SeedKey",
    "seed_int",
    "seed_keys",
    "own_keys",
    "is_population",
    "population_members",
    "agent_label",
    "check_agent",
    "parse_agent_spec",
    "parse_agent_list",
    "request_limits",
    "costly",
    "batch_from",
    "table_sizes",
    "unmade_for",
    "UnseenTableSize",
    "forewarn",
    "table_warnings",
    "warn_of_table",
    "Registration",
    "registrations",
    "adopt",
    "is_builtin_agent",
]

ENTRY_POINT_GROUP = "llama_rl.agents"
"""The entry-point group a package names its agents' module in, so that llama_env finds
them by name without importing it (the built-in agents come this way too)."""


@runtime_checkable
class Agent(Protocol):
    """What the envs, the table driver, evaluation and play need from an agent.

    ``act`` gets the observation vector (laid out as :data:`llama_env.observation.FIELDS`;
    read it with :class:`llama_env.observation.ObsView`) and the boolean action mask of
    length 9 (as the Gym env's ``info["action_mask"]``: one policy reads it the same as a
    learner and as an opponent), and returns a legal action, an integer 0..8. Optionally an agent has
    ``reset(seed)``, called at the start of each game with a seed that makes its choices
    reproducible, ``act_batch`` (see :class:`BatchAgent`), and ``obs_version``: the
    observation version it reads (0, the default: the 52 entries of ``Llama-v0``; 1: with
    the public history of the round, :data:`llama_env.observation.FIELDS_V1`). The table
    driver encodes for every agent the version it asks for. An agent made for some table
    sizes only may say which in ``table_sizes`` (:func:`table_sizes`); evaluation and
    terminal play warn when it sits at another. An agent that warns while it plays at some
    tables (what it was given goes unused there) may give that warning beforehand, from the
    rules alone, in ``forewarn(rules)`` (:func:`forewarn`): evaluation and terminal play
    then say it once, before any game (:func:`warn_of_table`), instead of each worker
    process saying it as it plays, or the agent in the middle of the game. A population of players
    (``perturbed``) says ``population = True`` and holds them in ``members``
    (:func:`population_members`): a member plays each game in its place.
    """

    def act(self, observation: np.ndarray, action_mask: np.ndarray) -> int:
        """A legal action (0..8) for the player who sees ``observation``, whose legal
        actions are the true entries of ``action_mask``."""


@runtime_checkable
class BatchAgent(Agent, Protocol):
    """An agent that also answers many decisions in one call: the batched table drivers
    (:func:`llama_env.table.advance_all`, :class:`llama_env.table.BatchTable`) send it
    every waiting decision of its kind at once, as ``(B, OBS_SIZE)`` float32 observations
    and ``(B, 9)`` boolean masks.

    Optionally it has ``batch_from``, an integer (default 1): the fewest decisions worth
    one ``act_batch`` call. The drivers ask fewer decisions one by one through ``act``,
    which is quicker where a batched call has a large fixed cost (the heuristic's array
    code takes about 0.25 ms however few its rows, its ``act`` 20 us a row). An agent that
    sets it must decide each row in ``act_batch`` as ``act`` would (every built-in agent
    does, and its tests hold it so); see :func:`batch_from`."""

    def act_batch(self, observations: np.ndarray, action_masks: np.ndarray) -> np.ndarray:
        """One legal action per row, ``(B,)`` integers: row ``i`` answers
        ``observations[i]`` with its mask ``action_masks[i]``, as :meth:`Agent.act` would."""


AgentLike: TypeAlias = "Agent | str | AgentSpec"
"""An agent object, a registered name (``"heuristic"``) or an :class:`AgentSpec`."""


# --------------------------------------------------------------------------- registry

Factory = Callable[..., Agent]
_REGISTRY: dict[str, Factory] = {}
_DOCS: dict[str, str] = {}
_GROUPS: dict[str, str] = {}
_plugins_loaded = False


RESERVED_NAMES = ("self", "past")
"""Names no agent may be registered under: a training run's opponent mix (``--opponents``)
reads ``self`` as the policy being trained and ``past`` as its past snapshots, so an agent
of either name could never be chosen there. Declared here, the trainers read it."""


GROUPS = {
    "strongest": "The strongest agent",
    "policy": "The trained policy alone, at a policy's speed",
    "baseline": "Baselines",
    "history": "Earlier trained agents, kept for comparison",
    "other": "Other agents",
}
"""How ``llama-rl agents`` sorts the registered agents, in this order, with these titles."""


def register(name: str, doc: str = "", group: str = "other") -> Callable[[Factory], Factory]:
    """Class decorator (or factory wrapper) that makes ``make(name)`` build it.

    ``doc`` is the one-line description ``llama-rl agents`` shows; by default the first
    paragraph of the factory's own docstring (none where it has none, not its base
    class's). ``group`` is one of :data:`GROUPS`: ``"strongest"`` and ``"policy"`` for
    the agents a user should reach for first, ``"baseline"``, ``"history"`` for earlier
    models kept loadable, ``"other"`` (the default, e.g. a plugin's agents).
    """
    if not isinstance(name, str) or not name or ":" in name or "," in name or "=" in name:
        raise ValueError(f"an agent name must be a non-empty string without ':', ',' or '=', got {name!r}")
    if name != name.strip() or not name.isprintable() or "#" in name:
        # a spec is read stripped, and evaluation labels a repeated agent name#2: such a
        # name could never be reached from a spec, or would be mistaken for another's label
        raise ValueError(
            "an agent name must not start or end with whitespace, hold control or other unprintable "
            f"characters, or hold '#' (evaluation labels repeated agents name#2), got {name!r}"
        )
    if name in RESERVED_NAMES:
        raise ValueError(
            f"an agent cannot be named {name!r}: training's --opponents reads 'self' as the policy being trained "
            "and 'past' as its past snapshots, so it could never be chosen there; register yours under another name"
        )
    if group not in GROUPS:
        raise ValueError(f"an agent's group must be one of {', '.join(GROUPS)}, got {group!r}")

    def deco(factory: Factory) -> Factory:
        if not callable(factory):  # else accepted, listed with its type's docstring, and failing at make
            raise TypeError(f"agent {name!r}: register a class or function that builds the agent, got {brief(factory)}")
        if not is_builtin_agent(factory):
            _load_builtins()  # so that a name of theirs is refused here, not when they load
        if name in _REGISTRY and _REGISTRY[name] is not factory and not _same_definition(_REGISTRY[name], factory):
            whose = " (a built-in agent of llama-rl)" if is_builtin_agent(_REGISTRY[name]) else ""
            raise ValueError(f"an agent named {name!r} is already registered{whose}: register yours under another name")
        _REGISTRY[name] = factory
        _DOCS[name] = _plain(doc or _own_doc(factory))
        _GROUPS[name] = group
        return factory

    return deco


def _own_doc(factory: Factory) -> str:
    """The first paragraph of ``factory``'s own docstring, in one line; empty where it has
    none: ``inspect.getdoc`` gives a class without one its base's, and a plugin's agent
    was listed with ``BaseAgent``'s words."""
    doc = getattr(factory, "__doc__", None)
    return " ".join(inspect.cleandoc(doc).split("\n\n")[0].split()) if isinstance(doc, str) else ""


def _same_definition(old: Factory, new: Factory) -> bool:
    """Whether ``new`` is ``old`` defined again, as a notebook cell run twice defines it:
    the same name in the same module (it then replaces the old one)."""
    key = lambda f: (getattr(f, "__module__", None), getattr(f, "__qualname__", None))  # noqa: E731
    return key(old) == key(new) and key(new)[1] is not None


def _plain(text: str) -> str:
    """A docstring line without reStructuredText markup: ``x`` and :role:`x` become x."""
    text = re.sub(r":[a-z]+:`~?([^`]+)`", r"\1", text)
    return text.replace("``", "")


BUILTIN_ENTRY_POINT = "builtin"
"""The name of the entry point (of group :data:`ENTRY_POINT_GROUP`) whose module, the
package ``agents``, registers the built-in agents when imported."""
_builtins_loaded = False


@functools.cache
def _entry_points() -> tuple[Any, ...]:
    """The ``llama_rl.agents`` entry points, the built-in agents' first."""
    from importlib.metadata import entry_points

    return tuple(sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda ep: ep.name != BUILTIN_ENTRY_POINT))


def is_builtin_agent(factory: object) -> bool:
    """Whether ``factory`` (a registered factory, or an agent's class) is one of llama-rl's
    built-in agents: defined in the package that the built-in agents' entry point names
    (``agents``), where a plugin's is defined in its own package. A registry entry's
    factory is the second item of each :func:`registrations` entry."""
    module = getattr(factory, "__module__", None) or ""
    return any(
        ep.name == BUILTIN_ENTRY_POINT and (module == ep.value or module.startswith(ep.value + "."))
        for ep in _entry_points()
    )


_OURS = ("llama_env", "agents", "train")
"""llama-rl's packages, installed side by side (this module's package among them)."""
_ENV_MAKERS = ("gymnasium", "pettingzoo")
"""The packages whose ``make`` reaches the loading of agents (``gym.make("Llama-v0",
opponents=...)``)."""


def _our_folders() -> tuple[str, ...]:
    """llama-rl's packages (:data:`_OURS`) where they are installed, beside this module's
    (real paths). By location, not by name: a program's own package called ``agents`` or
    ``train`` is the program's."""
    root = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
    return tuple(os.path.join(root, name) for name in _OURS)


def _called_through() -> tuple[str, ...]:
    """The folders a program reaches the loading of agents through: llama-rl's packages
    (:func:`_our_folders`) and those of :data:`_ENV_MAKERS` imported."""
    makers = [getattr(sys.modules.get(name), "__file__", None) for name in _ENV_MAKERS]
    return (*_our_folders(), *(os.path.dirname(os.path.realpath(f)) for f in makers if isinstance(f, str)))


def in_places(path: str, places: Sequence[str] | None = None) -> bool:
    """Whether the file ``path`` (a module's, as its frame or a warning names it) is one of
    ``places`` or under one of them (files, or folders with all under them: real paths); by
    default llama-rl's own packages (:func:`_our_folders`), not the env makers'. A name
    that is no path (``<string>`` of ``python -c``, an interactive prompt's) is in none."""
    if not os.path.isabs(path):
        return False
    path = os.path.realpath(path)
    places = _our_folders() if places is None else places
    return any(path == place or path.startswith(place + os.sep) for place in places)


def program_frame(places: Sequence[str] | None = None) -> tuple[FrameType, int]:
    """The frame of the program's line that led to this function's caller, and the
    ``stacklevel`` of a warning given by that caller that points at it: the first caller
    whose module's file is in none of ``places`` (:func:`in_places`; by default llama-rl's
    packages and the env makers', :func:`_called_through`), past importlib's frames, which
    warnings skip too. A warning given at many depths below the call that led to it (agents
    load below ``names()``, ``make()``, ``evaluate()``, ``gym.make`` or a plugin's
    ``@register``; ``make``, ``AgentSpec.build`` and ``resolve`` build through one
    another) pointed inside llama-rl with a fixed level; the command line prints a warning
    pointed at the line that called it as llama-rl's own."""
    places = _called_through() if places is None else places

    def passed(frame: FrameType) -> bool:
        file = frame.f_globals.get("__file__")  # none (python -c, an interactive prompt): the program's
        return isinstance(file, str) and in_places(file, places)

    def internal(frame: FrameType) -> bool:  # as warnings tells importlib's frames
        return "importlib" in frame.f_code.co_filename and "_bootstrap" in frame.f_code.co_filename

    level, frame = 1, sys._getframe(1)
    while frame.f_back is not None and (passed(frame) or internal(frame)):
        frame = frame.f_back
        level += not internal(frame)
    return frame, level


def _load(ep: Any) -> None:
    """Load one entry point; a failure is a warning naming it (one broken plugin must not
    take the others' agents with it), and the agents its modules registered before it
    failed are dropped: none of a plugin that is not loaded plays, half made. Those of
    another module it imported are kept (another plugin's, which stays imported and would
    not register them again)."""
    tables: tuple[dict[str, Any], ...] = (_REGISTRY, _DOCS, _GROUPS)
    before = [dict(table) for table in tables]
    try:
        loaded = ep.load()
        if callable(loaded) and not inspect.isclass(loaded) and not inspect.ismodule(loaded):
            loaded()
    except Exception as exc:  # noqa: BLE001 - a plugin's import can raise anything
        for name in [n for n, f in _REGISTRY.items() if before[0].get(n) is not f and _made_by(f, ep.module)]:
            for table, was in zip(tables, before, strict=True):
                if name in was:
                    table[name] = was[name]
                else:
                    del table[name]
        warnings.warn(
            f"the agents of entry point {ep.name!r} ({ep.value}, group {ENTRY_POINT_GROUP}) are not loaded: "
            f"{error_line(exc, 200)}",
            RuntimeWarning,
            stacklevel=program_frame()[1],
        )


def _made_by(factory: Factory, module: str) -> bool:
    """Whether ``factory`` is defined in ``module`` or a module under it, or in a module
    that is not imported (one whose import failed)."""
    made_in = getattr(factory, "__module__", None)
    if not isinstance(made_in, str):
        return True
    return made_in == module or made_in.startswith(module + ".") or made_in not in sys.modules


def _load_builtins(*, warn: bool = True) -> None:
    """Import the built-in agents (their entry point) once, before any other agent is
    registered or loaded: their names are then taken first, whatever the order in which
    a program imports its plugins or the entry points are listed, and a plugin that
    reuses one is refused with a message instead of making ``import agents`` fail.
    ``warn``: a warning when another module took their package's name."""
    global _builtins_loaded, _hidden
    if not _builtins_loaded:
        _builtins_loaded = True
        for ep in _entry_points():
            if ep.name == BUILTIN_ENTRY_POINT:
                _load(ep)
                _hidden = _hiding(ep.value)
                if _hidden and warn:
                    warnings.warn(_hidden, RuntimeWarning, stacklevel=program_frame()[1])


_hidden = ""
"""Why the built-in agents did not register, when another module took their package's name."""


def builtins_hidden() -> str:
    """Why the built-in agents cannot register, as :func:`make` says it: a file or folder
    of their package's name (``agents``) beside the script, or in the current folder,
    imported in its place; empty when they can. A program that imports the package's
    modules itself (the command line imports ``agents.ppo``) asks first, to name that file
    instead of failing with Python's "'agents' is not a package"."""
    _load_builtins(warn=False)  # the asker reports it
    return _hidden


def _hiding(package: str) -> str:
    """A sentence naming what hides the package of the built-in agents, ``package``
    (``agents``): a file or folder of that name in a script's folder or the current one
    is imported in its place, and registers nothing. Empty when the package is llama-rl's."""
    import sys
    from pathlib import Path

    module = sys.modules.get(package)
    where = getattr(module, "__file__", None)
    ours = Path(__file__).resolve().parent.parent / package
    if module is None or where is None or Path(where).resolve().is_relative_to(ours):
        return ""
    return (
        f"the built-in agents are not registered: 'import {package}' found {where}, not llama-rl's "
        f"package; rename that file or folder (or run from another folder)"
    )


def _load_plugins() -> None:
    """Load every ``llama_rl.agents`` entry point once, the built-in agents first."""
    global _plugins_loaded
    if _plugins_loaded:
        return
    _plugins_loaded = True
    _load_builtins()
    for ep in _entry_points():
        if ep.name != BUILTIN_ENTRY_POINT:
            _load(ep)


def _known() -> list[str]:
    _load_plugins()
    return sorted(_REGISTRY)


def names() -> list[str]:
    """The registered agent names, sorted."""
    return _known()


def describe() -> dict[str, str]:
    """Each registered name with its one-line description."""
    return {n: _DOCS[n] for n in _known()}


def grouped() -> dict[str, dict[str, str]]:
    """The registered agents by group (:data:`GROUPS`, in its order; empty groups left
    out), each name with its one-line description."""
    described = describe()
    out = {g: {n: d for n, d in described.items() if _GROUPS.get(n, "other") == g} for g in GROUPS}
    return {g: agents for g, agents in out.items() if agents}


def _unknown(name: object) -> ValueError:
    known = _known()
    why = _hidden or "install the package llama-rl, so that its agents register"
    hint = ", ".join(known) if known else f"none ({why})"
    return ValueError(f"unknown agent {brief(name)}; known agents: {hint}")


def make(name: str, **params: Any) -> Agent:
    """Build the agent registered as ``name`` with keyword ``params``; ``name`` may also
    be an agent spec with its parameters (``"cautious:threshold=2"``), as ``--agents``
    takes it; a keyword, ``seed`` included, overrides the spec's parameter of that name.
    A ``seed`` reaches the agent as :meth:`AgentSpec.build` gives it, name or spec: as its
    constructor's ``seed`` where it has one, else through its ``reset(seed)``; an agent
    with neither cannot be seeded, and a ``RuntimeWarning`` says so (once per name), where
    a spec's own ``seed=`` (``"fixed:seed=1"``) is a ``ValueError`` naming the agent.

    An agent given parameters other than ``seed`` is labelled in tables and messages by the
    spec they make (``make("cautious", threshold=2)`` as ``cautious:threshold=2``), as the
    spec is, so that two of them with other values are told apart by their values.

    Unknown names and parameters raise ``ValueError`` listing what exists; the agent's
    own constructor checks the values, and whatever else it raises, or a factory that
    returns no agent, is a ``ValueError`` naming the agent (:func:`_built`).
    """
    if not isinstance(name, str):
        raise TypeError(f"an agent name must be a string, got {name!r} ({type(name).__name__})")
    if ":" in name and name not in _REGISTRY:  # a spec, as everywhere else takes one; keywords add to it
        spec = parse_agent_spec(name, check=False)
        if "seed" in params and "seed" in spec.params:  # the keyword overrides the spec's, as every keyword does
            return AgentSpec(spec.name, {**spec.params, **params}).build()
        seed = params.pop("seed", None)  # build() gives it to an agent without a seed parameter through reset
        return AgentSpec(spec.name, {**spec.params, **params}).build(seed)
    label = AgentSpec(name, params).label
    seed = params.pop("seed") if "seed" in params and not _takes_seed(_factory(name)) else None
    agent = _seeded(name, params, seed, label)  # a seed the constructor takes stays in params, None included
    named = {k: v for k, v in params.items() if k != "seed"}
    if named:  # labelled as its spec would be: make("cautious", threshold=2) as "cautious:threshold=2"
        _give_name(agent, AgentSpec(name, named).label)
    return agent


def _built(name: str, params: dict[str, Any], label: str) -> Agent:
    """The agent registered as ``name`` built with ``params``, refused in one line
    naming it by ``label`` (its spec): an unknown name or parameter, or a factory that
    raises or returns no agent (a plugin's that forgot ``return`` gave ``None``, which a
    Gym env then seated as an outside seat). What the constructor raises is a
    ``ValueError`` (its own, a missing extra's ``ModuleNotFoundError`` and a
    ``MemoryError`` go through as they are): the command line reports it as the agent's,
    and a Python caller catches one type for any bad value."""
    if name not in _REGISTRY:
        _load_plugins()
        if name not in _REGISTRY:
            raise _unknown(name)
    factory = _REGISTRY[name]
    sig = inspect.signature(factory)
    if not any(p.kind is inspect.Parameter.VAR_KEYWORD for p in sig.parameters.values()):
        allowed = [p for p in sig.parameters if p != "self"]
        bad = [k for k in params if k not in allowed]
        if bad:
            raise ValueError(
                f"agent {name!r} has no parameter {', '.join(map(repr, bad))}; "
                f"its parameters: {', '.join(allowed) or '(none)'}"
            )
    try:
        agent = factory(**params)
    except (ValueError, ModuleNotFoundError, MemoryError):  # ours, a missing extra: reported as they are
        raise
    except (OSError, TypeError, ArithmeticError) as exc:  # OverflowError: a number beyond float range
        raise ValueError(f"cannot build agent {label!r}: {exc}") from exc
    except Exception as exc:  # noqa: BLE001 - a plugin's constructor can raise anything
        raise ValueError(f"cannot build agent {label!r}: {error_line(exc, 200)}") from exc
    try:
        check_agent(agent, f"agent {label!r}: its factory returned no agent")
    except TypeError as exc:
        raise ValueError(str(exc)) from None
    return agent


def request_limits(name: str) -> dict[str, tuple[float, float]]:
    """The bounds that the agent registered as ``name`` sets on its numeric parameters
    when they come from an untrusted request (a web page): the ``request_limits``
    mapping of its class or factory, ``{parameter: (low, high)}``, empty if it declares
    none. Parameters that make an agent slower or larger (a search's worlds, a
    population's size) declare them. An unknown name is a ``ValueError``, and so is a
    ``request_limits`` that is no such mapping, naming the agent and the parameter (a
    plugin's ``{"x": ("1", "5")}`` failed in the middle of a request)."""
    limits = getattr(_factory(name), "request_limits", None)
    if limits is None:
        return {}
    where = f"agent {name!r}: request_limits"
    if not isinstance(limits, Mapping):
        raise ValueError(f"{where} must be a mapping {{parameter: (low, high)}}, got {brief_line(limits)}")
    out: dict[str, tuple[float, float]] = {}
    for key, bounds in limits.items():
        pair = tuple(bounds) if isinstance(bounds, (tuple, list)) else ()
        if not isinstance(key, str) or len(pair) != 2 or not all(map(_real, pair)) or not pair[0] <= pair[1]:
            raise ValueError(
                f"{where}[{brief_line(key)}] must be a pair (low, high) of numbers, low <= high, "
                f"got {brief_line(bounds)}"
            )
        out[key] = (pair[0], pair[1])
    return out


def _real(value: object) -> bool:
    """Whether ``value`` is a real number, not a boolean nor NaN (a bound compares with it)."""
    numeric = isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, (bool, np.bool_))
    return numeric and not math.isnan(value)  # type: ignore[arg-type]


def costly(name: str) -> bool:
    """Whether the agent registered as ``name`` says its moves are costly (its class or
    factory has ``costly = True``: tenths of a second a move, as a search): a server runs
    such agents apart from its other games. An unknown name is a ``ValueError``."""
    return getattr(_factory(name), "costly", False) is True


def _factory(name: str) -> Factory:
    if name not in _REGISTRY:
        _load_plugins()
        if name not in _REGISTRY:
            raise _unknown(name)
    return _REGISTRY[name]


Registration = tuple[str, Factory, str, str]
"""A registry entry as :func:`registrations` gives it: name, factory, description, group."""


def registrations(agents: Iterable[object] | str) -> list[Registration]:
    """The registry entries behind the names in ``agents`` (names, specs written as text,
    :class:`AgentSpec` values, or one spec as text, as an env's ``opponents`` may be;
    agent objects and unknown names are skipped), for :func:`adopt` in another process.

    A worker process started by spawn (the default on macOS and Windows, and for a
    notebook's workers everywhere but Linux) imports the package afresh: it knows the
    agents that entry points register, not one registered at run time in a notebook or
    a script. Sent with ``cloudpickle``, an entry carries its factory, by value where it
    was defined in ``__main__``."""
    out: dict[str, Registration] = {}
    for agent in [agents] if isinstance(agents, str) else agents:
        if isinstance(agent, AgentSpec):
            name = agent.name
        elif isinstance(agent, str):
            try:
                name = parse_agent_spec(agent, check=False).name
            except ValueError:  # not a spec: the caller's own check names it
                continue
        else:
            continue
        if name not in _REGISTRY:
            _load_plugins()
        if name in _REGISTRY and name not in out:
            out[name] = (name, _REGISTRY[name], _DOCS[name], _GROUPS[name])
    return list(out.values())


def adopt(entries: Iterable[Registration]) -> None:
    """Register the entries of :func:`registrations` whose names this process does not
    know yet (the ones it knows stay as they are)."""
    _load_plugins()
    for name, factory, doc, group in entries:
        if name not in _REGISTRY:
            register(name, doc, group)(factory)


_RESET_SEED_BY: dict[object, str] = {}
"""Per reset function, how :func:`reset_agent` gives it the seed: ``"position"``,
``"keyword"`` or ``"none"``."""


def is_population(agent: object) -> bool:
    """Whether ``agent`` says it is a population (``population = True``, as ``perturbed``):
    :func:`population_members` checks what it holds."""
    return getattr(agent, "population", False) is True


def population_members(agent: Agent) -> Sequence[Agent] | None:
    """The members of a population, ``None`` for any other agent.

    A population (``perturbed``) is an agent that says so, ``population = True``, and
    holds its players in ``members``, a non-empty list or tuple of agents: evaluation and
    the trainers seat one of them per game in its place (:func:`seat_member`), and never
    call the population's own ``act``. An agent with a ``members`` attribute of its own
    (an ensemble's, say) and no ``population = True`` plays as itself. A population whose
    ``members`` are not such a list is a ``ValueError`` naming the agent, as the other
    checks of what an agent declares are: :func:`resolve` checks so, once, each agent a
    driver takes."""
    if not is_population(agent):
        return None
    members = getattr(agent, "members", None)
    where = f"agent {agent_label(agent)!r} is a population (population = True)"
    if not isinstance(members, (list, tuple)) or not members:
        raise ValueError(f"{where}: its members must be a non-empty list of agents, got {brief(members)}")
    for k, member in enumerate(members):
        if isinstance(member, type) or not callable(getattr(member, "act", None)):
            raise ValueError(
                f"{where}: members[{k}] must be an agent (an object with act(observation, action_mask) -> int), "
                f"got {brief(member)}"
            )
    return members


def seat_member(agent: Agent, rng: np.random.Generator) -> Agent:
    """The agent to seat for one game: ``agent`` itself, or, for a population
    (:func:`is_population`, e.g. ``perturbed``), one member drawn with ``rng``.
    Trainers that share one agent object across many games seat members this way, so
    that each game meets one consistent player.

    Unchecked: it does not check the members, at every game again (some microseconds for
    ``perturbed``'s 32). Callers resolve the agent (:func:`resolve`) or call
    :func:`population_members` on it first, once; given an unchecked population whose
    ``members`` is no non-empty list of agents, it fails with whatever indexing raises or
    seats what is no agent."""
    if is_population(agent):
        members: Sequence[Agent] = agent.members  # type: ignore[attr-defined]
        return members[int(rng.integers(len(members)))]
    return agent


SeedKey: TypeAlias = tuple[int, ...]
"""What an agent's own seed adds to the key of the seeds a driver derives for it
(:func:`seed_keys`): ``(s,)``, or ``()`` for none."""


def seed_int(seed: int, *key: int) -> int:
    """A 63-bit integer seed derived from ``(seed, *key)`` (independent of any order)."""
    ss = np.random.SeedSequence(seed, spawn_key=key)
    return int(ss.generate_state(2, np.uint64)[0] >> np.uint64(1))


def seed_keys(agents: Sequence[AgentLike]) -> list[SeedKey]:
    """Per agent, its own seed as a key to add to those of the seeds a driver derives for
    it: ``(s,)`` for a name or spec given ``seed=s`` (``random:seed=5``), else ``()``.
    Each game (or batched chunk) of an evaluation, and each episode of ``Llama-v0``, resets
    its agents with a seed of its own, which replaced the spec's: ``random:seed=5`` and
    ``random:seed=6`` played the very same games. Mixed in (:func:`seed_int`), they play
    differently, each repeatably, and an agent without ``seed=`` gets the seeds it always
    got. An agent object's own seed is replaced, as before, and a population's picks which
    population plays (:func:`seat_for_game`, :func:`own_keys`)."""
    out: list[SeedKey] = []
    for agent in agents:
        seed = None
        with contextlib.suppress(ValueError):  # a spec that does not parse: its build names it, as before
            spec = parse_agent_spec(agent, check=False) if isinstance(agent, str) else agent
            seed = spec.params.get("seed") if isinstance(spec, AgentSpec) else None
        own = None
        if seed is not None and not isinstance(seed, (bool, np.bool_)):
            with contextlib.suppress(TypeError):  # a bad seed: refused by the agent's build
                own = operator.index(seed)
        out.append(() if own is None or own < 0 else (own,))
    return out


def own_keys(agents: Sequence[Agent], keys: Sequence[SeedKey]) -> list[SeedKey]:
    """``keys`` (:func:`seed_keys`) for the built ``agents``, ``()`` for a population:
    its ``seed=`` picked which population plays, and its members are drawn and reset
    from the seeds of the game (:func:`seat_member`) as without it. For the drivers that
    draw and reset members themselves (evaluation); :func:`seat_for_game` does so itself."""
    pairs = zip(agents, keys, strict=True)
    return [() if population_members(agent) is not None else tuple(key) for agent, key in pairs]


def seat_for_game(agent: Agent, seed: int | None, key: SeedKey = ()) -> Agent:
    """The player ``agent`` seats for one game, reset for it: ``agent`` itself, or, for a
    population (:func:`is_population`, as ``perturbed``), a member of its own drawn from
    ``seed`` (:func:`seat_member`), the member the population's own ``reset(seed)`` would
    pick; the population's own ``act`` is never called. The player is reset with
    ``seed``, ``key`` (:func:`seed_keys`: a spec's own ``seed=``) mixed in
    (:func:`seed_int`), but for a population's member: the population's ``seed=`` picked
    which population plays, and its member is drawn and reset from ``seed`` as without
    it (as :func:`own_keys` gives the drivers that reset members themselves). A ``None``
    seed draws the member from fresh randomness and lets the player keep its own random
    state.

    The drivers that seat an agent per game, ``Llama-v0`` (through
    :func:`~llama_env.table.deal_table`), terminal play and the web app, all seat through
    here, so a population plays alike in each. Unchecked, as :func:`seat_member` (callers
    :func:`resolve` the agent once); what the player's ``reset`` raises goes through as it
    is, for the caller to name the seat."""
    if is_population(agent):
        agent, key = seat_member(agent, np.random.default_rng(seed)), ()
    reset_agent(agent, seed_int(seed, *key) if key and seed is not None else seed)
    return agent


def reset_agent(agent: object, seed: int | None) -> None:
    """Call ``agent.reset(seed)`` if the agent has a ``reset``: with the seed as its first
    argument (``reset(self, seed=None)``), by keyword where the reset takes it only so
    (Gymnasium's ``reset(self, *, seed=None)``, ``reset(self, **kwargs)``), and with no
    argument where it takes none (``reset(self)``, or only keywords other than ``seed``)."""
    reset = getattr(agent, "reset", None)
    if not callable(reset):
        return
    key = getattr(reset, "__func__", reset)  # one signature look-up per reset function
    by = _RESET_SEED_BY.get(key)
    if by is None:
        by = _seed_by(reset)
        if len(_RESET_SEED_BY) < 10_000:
            _RESET_SEED_BY[key] = by
    if by == "position":
        reset(seed)
    elif by == "keyword":
        reset(seed=seed)
    else:
        reset()


def _seed_by(reset: Callable[..., object]) -> str:
    """How ``reset`` takes a seed: ``"position"``, ``"keyword"`` or ``"none"``."""
    try:
        params = list(inspect.signature(reset).parameters.values())
    except (TypeError, ValueError):  # a builtin without a signature: pass the seed
        return "position"
    kinds = inspect.Parameter
    positional = (kinds.POSITIONAL_ONLY, kinds.POSITIONAL_OR_KEYWORD)
    if params and params[0].kind in positional and params[0].name == "seed":
        return "position"
    if any(p.name == "seed" and p.kind in (kinds.POSITIONAL_OR_KEYWORD, kinds.KEYWORD_ONLY) for p in params):
        return "keyword"
    if params and params[0].kind in (*positional, kinds.VAR_POSITIONAL):  # reset(self, s): the seed, by any name
        return "position"
    if any(p.kind is kinds.VAR_KEYWORD for p in params):
        return "keyword"
    return "none"


def resolve(agent: AgentLike, seed: int | None = None) -> Agent:
    """An agent object from an agent, a registered name or an :class:`AgentSpec`.

    A name or spec is built as :meth:`AgentSpec.build` builds it, and seeded with ``seed``
    when given, but silent where the agent cannot be seeded: the drivers that resolve
    agents seed each game so, as evaluation does through ``reset``. An object is returned
    as it is. Anything else is a ``TypeError`` naming what an agent must be, and so is an
    agent's class (its ``act`` is callable too, and it failed at its first ``reset``,
    missing ``self``); a population whose members are no list of agents is a
    ``ValueError`` (:func:`population_members`): checked here once, where a driver takes
    the agent, not at each game it seats a member.
    """
    if isinstance(agent, str):
        out = parse_agent_spec(agent, check=False)._build(seed, say=False)  # checks name and parameters
    elif isinstance(agent, AgentSpec):
        out = agent._build(seed, say=False)
    elif not callable(getattr(agent, "act", None)):
        raise TypeError(
            f"an agent must have act(observation, action_mask) -> int, or be a registered name "
            f"or an AgentSpec; got {brief_line(agent)} ({type(agent).__name__})"
        )
    elif isinstance(agent, type):
        raise TypeError(_pass_an_instance(agent))
    else:
        out = agent
    population_members(out)
    return out


def batch_from(agent: Agent) -> int:
    """The fewest decisions that ``agent`` answers with one ``act_batch`` call (its
    ``batch_from`` attribute, 1 without one; see :class:`BatchAgent`). Anything but a
    positive integer is a ``ValueError`` naming the agent."""
    n = getattr(agent, "batch_from", 1)
    if not is_int(n) or n < 1:
        raise ValueError(f"agent {agent_label(agent)!r}: batch_from must be a positive integer, got {n!r}")
    return int(n)


def table_sizes(agent: Agent) -> tuple[int, ...] | None:
    """The table sizes ``agent`` says it was made for: its ``table_sizes`` attribute (a
    ``ppo`` agent playing one model trained at some sizes only), sorted; ``None`` where it
    says nothing, as most agents, which play any size. Anything but table sizes, integers
    2..6, at least one (:func:`~llama_env.engine.check_table_sizes`), is a ``ValueError``
    naming the agent (``[]`` said it was made for no table, and ``[1, 7]`` for tables that
    cannot be)."""
    sizes = getattr(agent, "table_sizes", None)
    if sizes is None:
        return None
    try:
        return check_table_sizes(sizes, "table_sizes")
    except ValueError as exc:
        raise ValueError(f"agent {agent_label(agent)!r}: {exc}") from None


class UnseenTableSize(UserWarning):
    """An agent made for some table sizes sits at another (:func:`unmade_for`)."""


def unmade_for(agents: Sequence[AgentLike], num_players: int) -> list[str]:
    """A line for each agent of ``agents`` that says it was made for other table sizes
    than ``num_players`` (:func:`table_sizes`), named as result tables name it (``ppo#2``
    when two share a label): such an agent plays on, but at a table size it never saw,
    which is rarely what a comparison means to measure. A name or spec given more than
    once is built and named once (as its label); an object once per object."""
    return [_unmade_line(name, agent, num_players) for name, agent in _distinct(agents) if _unmade(agent, num_players)]


def _distinct(agents: Sequence[AgentLike], built: Sequence[Agent] | None = None) -> list[tuple[str, Agent]]:
    """Each agent of ``agents`` once, built, with its name as result tables name it
    (``ppo#2`` when two objects share a label): a name or spec given more than once is
    built and named once (as its label), an object once per object; ``built`` holds the
    agents built from ``agents`` already, in their places, and none is built again."""
    labels = [agent_label(a) for a in agents]
    repeated = Counter(labels)
    seen: set[object] = set()
    out = []
    for k, (agent, label) in enumerate(zip(agents, labels, strict=True)):
        by_text = isinstance(agent, (str, AgentSpec))
        key: object = label if by_text else id(agent)
        if key in seen:
            continue
        seen.add(key)
        name = label if by_text or repeated[label] == 1 else f"{label}#{labels[: k + 1].count(label)}"
        out.append((name, built[k] if built is not None else resolve(agent)))
    return out


def _unmade(agent: Agent, num_players: int) -> bool:
    sizes = table_sizes(agent)
    return sizes is not None and num_players not in sizes


def _unmade_line(name: str, agent: Agent, num_players: int) -> str:
    sizes = table_sizes(agent) or ()
    return (
        f"agent {name!r} was trained at {and_list(sizes)} players only; it plays this {num_players}-player "
        "table as a table size it never saw"
    )


def forewarn(agent: Agent, rules: Rules) -> Warning | None:
    """The warning ``agent`` would give while playing a table of ``rules``, given now
    instead, from the rules alone, by its ``forewarn(rules)`` (``None`` where it has none,
    or nothing to say there): it then does not give it at the table. A ``search`` given
    ``worlds=16`` says so at 3 players, where it does not search. Anything but a
    ``Warning`` or ``None`` is a ``ValueError`` naming the agent, and so is what the hook
    raises (the error its cause; a missing extra's ``ModuleNotFoundError`` and a
    ``MemoryError`` go through as they are), as the commands report a ``ValueError`` in a line."""
    hook = getattr(agent, "forewarn", None)
    if not callable(hook):
        return None
    try:
        warning = hook(rules)
    except (ModuleNotFoundError, MemoryError):
        raise
    except Exception as exc:  # noqa: BLE001 - a plugin's forewarn can raise anything
        said = f"agent {agent_label(agent)!r}: "
        if isinstance(exc, ValueError) and str(exc).startswith(said):  # named already (a proxy's, as serve's)
            raise
        raise ValueError(f"{said}forewarn(rules) raised {error_line(exc, 200)}") from exc
    if warning is not None and not isinstance(warning, Warning):
        raise ValueError(
            f"agent {agent_label(agent)!r}: forewarn(rules) must return a Warning or None, got {brief(warning)}"
        )
    return warning


def table_warnings(agents: Sequence[AgentLike], rules: Rules, built: Sequence[Agent] | None = None) -> list[Warning]:
    """What evaluation says of ``agents`` at a table of ``rules`` before any game, each
    agent once: an :class:`UnseenTableSize` for each agent made for other table sizes
    (:func:`unmade_for`), and what an agent forewarns of (:func:`forewarn`). ``built``:
    the agents built from ``agents`` already, one for each in its place (a population
    itself, not the member it seats), asked instead of building them again."""
    out: list[Warning] = []
    for name, agent in _distinct(agents, built):
        if _unmade(agent, rules.num_players):
            out.append(UnseenTableSize(_unmade_line(name, agent, rules.num_players)))
        warning = forewarn(agent, rules)
        if warning is not None:
            out.append(warning)
    return out


def warn_of_table(
    agents: Sequence[AgentLike],
    rules: Rules,
    *,
    built: Sequence[Agent] | None = None,
    seated: Iterable[Agent] = (),
    stacklevel: int | None = 1,
) -> None:
    """Say :func:`table_warnings` of ``agents`` (``built``: as built already) at a table
    of ``rules`` as Python warnings, attributed as ``warnings.warn(..., stacklevel)``
    called here would attribute them (``None``: to the program's line, the first caller
    past llama-rl's packages, however deep below it this is called), and tell each of
    ``seated`` (the players that sit there, a population's members among them) that it
    has been said (:func:`forewarn`), so none says it again in the middle of the game.
    Evaluation, terminal play and ``watch`` say them so, once, before any game."""
    level = program_frame()[1] if stacklevel is None else stacklevel + 1
    for warning in table_warnings(agents, rules, built):
        warnings.warn(warning, stacklevel=level)
    for agent in seated:
        forewarn(agent, rules)


def and_list(values: Sequence[int]) -> str:
    """``2``, ``2 and 4``, ``2, 4 and 6``: ``values``, at least one, in words."""
    head, last = [str(v) for v in values[:-1]], str(values[-1])
    return f"{', '.join(head)} and {last}" if head else last


def check_agent(agent: object, where: str) -> None:
    """Raise a ``TypeError`` that starts with ``where`` (``seat 2``) unless ``agent`` can
    sit at a table: an object with ``act(observation, action_mask) -> int``. A class is
    refused by name, though its ``act`` is callable too: it would fail at its first move,
    missing an argument (``HeuristicAgent`` for ``HeuristicAgent()``). The table driver
    checks its seats with it, and :func:`make` what a factory returns."""
    if not callable(getattr(agent, "act", None)):
        raise TypeError(f"{where}: an agent must have act(observation, action_mask) -> int, got {brief_line(agent)}")
    if isinstance(agent, type):
        raise TypeError(f"{where}: {_pass_an_instance(agent)}")


def _pass_an_instance(cls: type) -> str:
    """What :func:`check_agent` and :func:`resolve` say of an agent's class given as the agent."""
    return f"got the class {cls.__name__}: pass an instance, {cls.__name__}()"


def agent_label(agent: AgentLike) -> str:
    """How an agent is named in tables and messages: a spec's label, else the object's
    ``name``, else its class name. A built-in agent's ``name`` inherited by a class of
    yours is not yours: ``class Bolder(HeuristicAgent)`` is ``Bolder``, not a second
    ``heuristic``; a ``name`` your own base class sets (an attribute or a property) is
    kept. An agent built from a registered name (:func:`make`, a spec) without a name of
    its own is given that name: ``bolder``, as it was asked for."""
    if isinstance(agent, str):
        return agent
    if isinstance(agent, AgentSpec):
        return agent.label
    n = getattr(agent, "name", None)
    return str(n) if isinstance(n, str) and n and not _builtin_name(agent) else type(agent).__name__


def _builtin_name(agent: object) -> bool:
    """Whether the ``name`` of ``agent`` is a built-in agent's, inherited by a class that
    is not one: the class nearest in its class's order that holds ``name`` sets it as a
    plain string, and is defined in the built-in agents' package (:func:`is_builtin_agent`),
    while the agent's own class is not."""
    if "name" in getattr(agent, "__dict__", ()):  # set on the object: a spec's label, or the user's
        return False
    own = type(agent)
    for cls in own.__mro__:
        if "name" in cls.__dict__:
            return (
                cls is not own
                and isinstance(cls.__dict__["name"], str)
                and is_builtin_agent(cls)
                and not is_builtin_agent(own)
            )
    return False


# --------------------------------------------------------------------------- specs


@dataclass(frozen=True)
class AgentSpec:
    """A registered agent name and the keyword parameters to build it with.

    Written on a command line as ``name`` or ``name:key=value[:key=value...]``, e.g.
    ``cautious:threshold=4``; see :func:`parse_agent_spec`.
    """

    name: str
    params: Mapping[str, Any] = field(default_factory=dict)

    @property
    def label(self) -> str:
        """The spec as written on a command line (``cautious:threshold=4``)."""
        return ":".join([self.name, *(f"{k}={_fmt(v)}" for k, v in self.params.items())])

    def build(self, seed: int | None = None) -> Agent:
        """A new agent; ``seed`` makes its choices reproducible. An agent built from a
        spec with parameters is named by the spec's label, so result tables tell
        ``cautious:threshold=2`` from ``cautious``; one without, by its registered name
        where it names itself no other way (:func:`_seeded`).

        Raises ``ValueError`` for an unknown name or parameter or a bad value, and for a
        factory that raises or returns no agent, naming the spec (:func:`make`). An agent
        that takes a seed neither as a parameter nor through its ``reset`` cannot be
        seeded: a ``RuntimeWarning`` says so, once per agent name, and a ``seed`` among the
        spec's parameters is a ``ValueError`` naming it.
        """
        return self._build(seed, say=True)

    def _build(self, seed: int | None, say: bool) -> Agent:
        """:meth:`build`, saying (``say``) that a seed goes unused or not."""
        agent = _seeded(self.name, dict(self.params), seed, self.label, say)
        if self.params:
            _give_name(agent, self.label)
        return agent


def _takes_seed(factory: Factory) -> bool:
    """Whether ``factory`` names a ``seed`` parameter (an agent without one is seeded
    through its ``reset``)."""
    return "seed" in inspect.signature(factory).parameters


_UNSEEDABLE_SAID: set[str] = set()
"""The agents whose seed :func:`_seeded` said it could not give, by registered name."""


def _seeded(name: str, params: dict[str, Any], seed: int | None, label: str, say: bool = True) -> Agent:
    """The agent registered as ``name`` built with ``params`` (:func:`_built`, refused
    naming it by ``label``) and seeded with ``seed``: as its constructor's ``seed`` where
    it has one and ``params`` set none, else through its ``reset(seed)``
    (:func:`reset_agent`). An agent with neither cannot be seeded: with ``say``, a
    ``RuntimeWarning`` says so, once per agent name, as the seed goes unused (not where a
    driver seeds each game, as :func:`resolve` or evaluation through ``reset``). A
    ``seed`` in ``params`` (``mine:seed=5``) of an agent without the parameter is given
    through its ``reset`` too, in place of ``seed``, as a spec's own seed overrides the
    one a constructor would get; where that ``reset`` takes no seed either, the spec is
    refused, naming the agent, said or not: a seed written into a spec is not dropped."""
    factory = _factory(name)
    takes_seed = _takes_seed(factory)
    own = not takes_seed and "seed" in params  # _built would refuse it as no parameter of the agent
    if own:
        params = dict(params)
        seed = params.pop("seed")
        if seed is not None:  # else its reset would fail on it, naming no agent
            check_seed(seed, f"agent {label!r}: seed")
    if takes_seed and "seed" not in params and seed is not None:
        params = {**params, "seed": seed}
    agent = _built(name, params, label)
    if not _names_itself(agent, factory):  # messages and tables name it as it was asked for
        _give_name(agent, name)
    if own and _unseedable(agent):
        allowed = [p for p in inspect.signature(factory).parameters if p not in ("self", "seed")]
        raise ValueError(
            f"agent {name!r} has no parameter 'seed' and no reset that takes a seed, so {label!r} cannot be "
            f"seeded; its parameters: {', '.join(allowed) or '(none)'}"
        )
    if seed is not None and not takes_seed:
        if say and _unseedable(agent) and name not in _UNSEEDABLE_SAID:
            _UNSEEDABLE_SAID.add(name)
            warnings.warn(
                f"agent {name!r} cannot be seeded: it has no seed parameter and no reset that takes a seed, "
                f"so seed={seed} goes unused (said once)",
                RuntimeWarning,
                stacklevel=program_frame([os.path.realpath(__file__)])[1],  # the line that called make or build
            )
        reset_agent(agent, seed)
    return agent


class _AskedFor(str):
    """A name that :func:`make` gave an agent, the registered name or spec it was asked
    for (:func:`_give_name`): the agent's own ``name`` is never replaced, this one is, by
    the name of a later ``make`` that returns the same object (a plugin's factory that
    returns one object, or ``make("heuristic:quit_base=2")``, under its own name)."""

    __slots__ = ()


def _give_name(agent: object, name: str) -> None:
    """Name ``agent`` ``name`` as it was asked for (:class:`_AskedFor`), where its ``name``
    is a string or missing: a ``name()`` method that its ``act`` calls is left as it is, and
    a read-only ``name`` too."""
    if not callable(getattr(agent, "name", None)):
        with contextlib.suppress(AttributeError):
            agent.name = _AskedFor(name)  # type: ignore[attr-defined]


def _names_itself(agent: object, factory: Factory) -> bool:
    """Whether ``agent``, built by the registered ``factory``, has a ``name`` of its own
    (:func:`agent_label`), which is kept: any ``name`` attribute (a method, ``None``) but
    an empty string, one :func:`make` gave it (:class:`_AskedFor`), and a built-in agent's
    that a plugin's agent carries (a subclass of ``HeuristicAgent``, or a factory of a
    plugin that returns one). An agent without is named by its registered name, where
    messages and tables named it by its class (``NpFloat`` for ``np_float``)."""
    n = getattr(agent, "name", None)
    if not isinstance(n, str):
        return hasattr(agent, "name")  # a name() method, None: kept
    if not n or isinstance(n, _AskedFor):
        return False
    if "name" in getattr(agent, "__dict__", ()):  # set on the object
        return True
    holder = next((cls for cls in type(agent).__mro__ if "name" in cls.__dict__), None)
    return is_builtin_agent(factory) or holder is None or not is_builtin_agent(holder)


def _unseedable(agent: object) -> bool:
    """Whether ``agent`` has no ``reset`` that takes a seed (:func:`reset_agent` then calls
    it with none, or calls nothing)."""
    reset = getattr(agent, "reset", None)
    return not callable(reset) or _seed_by(reset) == "none"


def is_path_parameter(key: str) -> bool:
    """Whether an agent parameter names a file or folder (``path``, ``networks_path``,
    ``*_dir``, ``*_file``): its value is kept as text (``path=none`` is a file called
    none, not the default), and the web app allows it only under its model folders."""
    return key == "path" or key.endswith(("_path", "_dir", "_file"))


def _fmt(value: Any) -> str:
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _parse_value(text: str) -> Any:
    low = text.lower()
    if low in ("true", "false"):
        return low == "true"
    if low == "none":
        return None
    if INTEGER.fullmatch(text):  # ASCII only: int also reads other scripts' digits (٣) and 1_0
        return read_int(text, "its value")
    if not DECIMAL.fullmatch(text):
        return text
    value = float(text)
    if not math.isfinite(value):
        return text  # "1e999" stays a string, as "nan" and "inf" do: no parameter means them
    return value


_PARAMETER_COLON = re.compile(r":(?=\s*[A-Za-z_]\w*\s*=)")


def parse_agent_spec(text: str, *, check: bool = True) -> AgentSpec:
    """Parse ``name`` or ``name:key=value[:key=value...]``.

    A value may hold a colon where no ``key=`` follows it, as a Windows path does
    (``ppo:path=C:\\models\\m.npz``).

    Values are read as ``int``, ``float`` (written in the ASCII digits 0-9),
    ``true``/``false``/``none``, or else left as strings; ``name:`` with no parameters
    after its colon is refused, and so is a ``:`` with none after a parameter
    (``cautious:threshold=4:``, which read the value ``4:``). With ``check`` (the
    default) the name must be registered and the parameters must be the agent's; the
    agent is built once (unseeded) so that bad values or a missing model file are found
    before any game is played. A problem raises ``ValueError`` naming it and what exists.
    """
    if not isinstance(text, str):
        raise TypeError(f"an agent spec must be a string like 'cautious:threshold=4', got {text!r}")
    name, colon, rest = text.strip().partition(":")
    name = name.strip()
    if not name:
        raise ValueError(f"empty agent name in {brief(text)}; known agents: {', '.join(_known())}")
    if colon and not rest.strip():  # "cautious:" was read as "cautious", a typo passed over
        raise ValueError(f"agent spec {brief(text)} has no parameters after ':'; write {name!r}, or {name}:key=value")
    params: dict[str, Any] = {}
    # a colon starts a parameter only where a key= follows it: a value may hold one (C:\models\m.npz)
    for part in _PARAMETER_COLON.split(rest) if rest else []:
        key, sep, value = part.partition("=")
        key = key.strip()
        if not sep or not key:
            raise ValueError(f"agent parameter {brief(part)} in {brief(text)} is not of the form key=value")
        if key in params:
            raise ValueError(f"agent parameter {brief(key)} is given twice in {brief(text)}")
        if value.rstrip().endswith(":"):  # "threshold=4:" was read as the value "4:", a typo passed over
            given = f"{key}={value.strip()[:-1].rstrip()}"
            raise ValueError(
                f"agent spec {brief(text)} has an empty parameter after {given!r}: a ':' with no key=value after it"
            )
        try:
            params[key] = value.strip() if is_path_parameter(key) else _parse_value(value.strip())
        except ValueError as exc:
            raise ValueError(f"agent parameter {key!r} in {brief(text)}: {exc}") from None
    spec = AgentSpec(name, params)
    if check:
        if name not in _known():
            raise _unknown(name)
        spec.build()  # what fails is a ValueError naming the spec (or a missing extra's error)
    return spec


def parse_agent_list(text: str | Iterable[str], *, check: bool = True) -> list[AgentSpec]:
    """Parse a comma-separated list of specs (or an iterable of spec strings); empty
    entries are a ``ValueError``, an entry that is no string a ``TypeError`` naming it
    (counted from 1: the first is entry 1)."""
    items = text.split(",") if isinstance(text, str) else list(text)
    for k, item in enumerate(items):
        if not isinstance(item, str):
            raise TypeError(
                f"entry {k + 1} of the agent list must be a spec string like 'cautious:threshold=4', "
                f"got {brief_line(item)}"
            )
    if not items or any(not item.strip() for item in items):
        raise ValueError(f"empty entry in the agent list {brief(text)}; separate agent names with single commas")
    return [parse_agent_spec(item, check=check) for item in items]
