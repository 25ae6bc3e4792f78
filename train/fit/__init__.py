"""Making the shipped artifacts that are not trained by :mod:`train.training`: the search
agent's networks, policies distilled from its search and the heuristic's tuned parameters.

* :mod:`train.fit.search_nets`: games of a PPO specialist, then the value and belief
  networks of ``agents.make("search")`` (``llama-rl fit-search``);
* :mod:`train.fit.distill`: games of the search agent, then a PPO specialist trained to
  play its searched moves (``llama-rl distill``);
* :mod:`train.fit.heuristic`: coordinate descent over ``heuristic``'s parameters by
  playing games (``llama-rl tune-heuristic``).

docs/training.md ("Reproduce every shipped agent") lists the command behind every file
of ``agents/models/`` and what it cost.
"""

from __future__ import annotations

import os
import types
import typing
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Literal

import numpy as np

from agents.base import ARCHIVE_KINDS, agent_path, number
from agents.ppo import MODELS_DIR, load_actor
from agents.search import networks_table_size
from llama_env._atomic import check_writable_folder, write_target
from llama_env.agent import AgentSpec, parse_agent_list
from llama_env.engine import brief
from train.training.run_dir import save_aside

WRITES = {kind: what for kind, (_, what, _) in ARCHIVE_KINDS.items()}
"""What a command writes to its ``out`` file, by kind (:func:`out_file`): an actor
(``llama-rl export`` and ``distill``: ``ppo:path=`` plays it), or the search's networks
(``llama-rl fit-search``: ``search:networks_path=`` reads them); the kinds and their
descriptions are :data:`agents.base.ARCHIVE_KINDS`'s, as the readers name them."""

Writes = Literal["actor", "networks"]
"""A key of :data:`WRITES`."""


def out_file(out: str | Path, writes: Writes, label: str = "", reads: Mapping[str, Path] | None = None) -> Path:
    """``out`` as the file a command is about to write ``writes`` to (a key of
    :data:`WRITES`), checked before any work; a ``ValueError`` in one line naming it
    (``label`` first: ``"--out "`` from the command line) otherwise. It names a ``.npz``
    file (the only kind the agents read a written file as); it is not in
    :data:`agents.ppo.MODELS_DIR`, whose files the package's agents play (write to another
    file, and copy it there to ship it); the folder written in exists and can be written
    (that of the file a link points to, where :func:`llama_env._atomic.atomic_write`
    writes); it is no folder; it is none of the files the command ``reads``, by whose
    they are (``{"the specialist's": Path("mine.npz")}``: the same file by another name
    too), said as such before what it holds; and a file already there is not of the
    other kind (a policy where networks are written, or networks where a policy is),
    which every agent reading it would then refuse. A file of the same kind is replaced.
    A leading ``~`` is the home folder, as the agents read their paths
    (:func:`agents.base.agent_path`): write to the path returned."""
    if writes not in WRITES:
        raise ValueError(f"writes must be one of {', '.join(map(repr, WRITES))}, got {writes!r}")
    path = agent_path(out, (label or "out ").rstrip())
    if path.suffix != ".npz":
        raise ValueError(f"{label or 'out '}must name a .npz file, got {str(out)!r}")
    named = f"{label}{str(out)!r}"
    if path.resolve().parent == MODELS_DIR:  # resolved: a link to a shipped file, or to their folder, too
        raise ValueError(
            f"{named} is in {MODELS_DIR}, the models the package's agents play: write to another "
            "file (and copy it there yourself to ship it)"
        )
    target = write_target(path)
    try:
        check_writable_folder(target.parent)
    except ValueError as exc:
        linked = f" (a link to {str(target)!r})" if target != path else ""
        raise ValueError(f"{named}{linked}: {exc}") from None
    if path.exists() and not path.is_file():
        raise ValueError(f"{named} is a folder, not a file")
    for whose, source in (reads or {}).items():
        if path.exists() and source.exists() and path.samefile(source):
            raise ValueError(
                f"{named} is {whose} own file ({source}): {WRITES[writes]} would be written over it; write to "
                "another file"
            )
    held = _holds(path) if path.exists() else None
    if held is not None and held != writes:
        raise ValueError(
            f"{named} holds {WRITES[held]}: {WRITES[writes]} would be written over it; write to "
            "another file, or delete it first"
        )
    return path


def _holds(path: Path) -> Writes | None:
    """The kind of :data:`WRITES` the file ``path`` holds, as the agents that read it
    read it; ``None`` for a file of neither kind (damaged, or of something else)."""
    try:
        networks_table_size(path)
        return "networks"
    except ValueError:
        pass
    try:
        load_actor(path)
        return "actor"
    except (ValueError, ImportError):  # ImportError: a .zip without torch to read it
        return None


def check_held_out(held_out: int, players: int) -> None:
    """A ``ValueError`` in one line unless ``held_out`` (one game in this many is held out
    of a fit) is at least ``players``: a run of fewer games than seats cannot hold out
    every seat in turn (``held_out`` 2 at 4 players held out seats 0 and 3 alone, a share
    of 1/4). Each fit's config checks it in ``validate``, and :func:`held_out_games` too."""
    if held_out < players:
        raise ValueError(
            f"held_out must be >= {players} at {players} players (one game in held_out is held out, at every seat "
            f"in turn), got {held_out}"
        )


def held_out_games(games: np.ndarray, held_out: int, players: int) -> np.ndarray:
    """Which of ``games`` (game indices; the one fitted on sits at seat ``g % players`` in
    game ``g``) a fit holds out, as a bool array: one in each run of ``held_out`` games
    (``k * held_out`` to ``(k + 1) * held_out - 1``), the one there at seat
    ``k % players``, so that the held-out games sit at every seat in turn, game 0 among
    them, and exactly one game in ``held_out`` of each seat's is held out. Every
    ``held_out``-th game had sat at seat 0 alone at 2, 4 and 5 players, and its figures
    said nothing of the other seats. ``held_out`` below ``players`` is a ``ValueError``
    (:func:`check_held_out`)."""
    check_held_out(held_out, players)
    g = np.asarray(games, dtype=np.int64)
    return (g % held_out < players) & (g % players == (g // held_out) % players)


def agent_spec(name: str, **files: str | Path) -> str:
    """The agent spec a command prints for the files it wrote or read
    (``search:path=m.npz:networks_path=n.npz``), made here alone and checked, before any
    work, to read back as those very files (:func:`llama_env.agent.parse_agent_list`,
    then :func:`agents.base.agent_path`): a comma cuts it in two, a ``:key=`` in a path
    starts a parameter (``runs/x:seed=1.npz``), a folder named ``~`` prints as the home
    folder. A ``ValueError`` in one line naming the spec otherwise."""
    spec = AgentSpec(name, dict(files)).label
    try:
        (parsed,) = parse_agent_list(spec, check=False)
    except ValueError:
        parsed = None
    if (
        parsed is None
        or parsed.name != name
        or set(parsed.params) != set(files)
        or not all(
            isinstance(parsed.params[key], str) and agent_path(parsed.params[key]) == agent_path(value)
            for key, value in files.items()
        )
    ):
        raise ValueError(
            f"the agent spec {spec!r} would not read back as these files (a comma, a ':key=' or a leading '~' "
            "in a path cuts or changes it): name them otherwise"
        )
    return spec


def save_or_rescue(save: Callable[[Path], None], path: Path, what: str) -> None:
    """``save(path)``; when that fails (a disk that filled while the games were played),
    save to the temporary directory instead (:func:`train.training.run_dir.save_aside`)
    and raise an ``OSError`` that names ``path`` and says where, so that minutes of games
    and fitting are not lost to the last write (where that fails too, it names ``path``:
    a full disk's error named no file)."""
    try:
        save(path)
    except OSError as exc:
        target = save_aside(save, path.name)
        aside = "" if target is None else f"; the {what} were saved to {target} instead"
        raise OSError(exc.errno, f"cannot write {path} ({exc.strerror or exc}){aside}") from None


def check_field_types(config: Any) -> None:
    """A ``ValueError`` naming the first field of ``config`` (a fit's config dataclass)
    whose value is not of the type its annotation gives (:func:`agents.base.number`): an
    ``int`` an integer, a ``float`` a finite number, a ``str`` a file's path (a ``str`` or
    a path, not empty: ``Path("")`` is the current folder), and ``None`` only where the
    annotation allows it (``int | None``). Read from the annotations
    (``typing.get_type_hints``, as the training config's are), never from a list kept
    beside them; a field of another type (``hidden``'s tuple) is left to the
    config's ``validate``. A string of digits was met as a ``TypeError`` of a comparison,
    an infinity as NaN weights after all the games, and a ``None`` as a ``TypeError`` in
    numpy."""
    owner = type(config).__name__
    for key, hint in typing.get_type_hints(type(config)).items():
        value = getattr(config, key)
        allowed = set(typing.get_args(hint)) if typing.get_origin(hint) in (typing.Union, types.UnionType) else {hint}
        if value is None and type(None) in allowed:
            continue
        allowed.discard(type(None))
        if allowed == {int}:
            number(owner, key, value, integer=True)
        elif allowed == {float}:
            number(owner, key, value)
        elif allowed == {str} and not isinstance(value, (str, os.PathLike)):
            raise ValueError(f"{owner} {key} must be a file's path (a str or a Path), got {brief(value)}")
        elif allowed == {str}:  # not empty: as a path, "" is the current folder
            agent_path(value, f"{owner} {key}", "name a file, or leave it None for the default")
