"""The base class of the built-in agents, and the agent interface they implement.

An agent sees exactly what a learner sees: the observation vector (read through
:class:`llama_env.observation.ObsView`) and the action mask. It never touches the engine.
That keeps baselines honest and lets the same table driver run any agent.

The interface (:class:`~llama_env.agent.Agent`) and the registry of agents by name live
in :mod:`llama_env.agent`, at the bottom of the stack, so that the envs can build agents
by name without importing this package; this package fills the registry.
"""

from __future__ import annotations

import math
import zipfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np

from llama_env._atomic import user_path
from llama_env.agent import Agent, AgentLike, BatchAgent
from llama_env.observation import VERSION_OF_SIZE, sizes_text

__all__ = [
    "Agent",
    "AgentLike",
    "BatchAgent",
    "BaseAgent",
    "legal_actions",
    "mask_list",
    "check_observation",
    "check_batch",
    "check_finite",
    "number",
    "load_arrays",
    "agent_path",
    "ARCHIVE_KINDS",
    "held_instead",
    "layer_keys",
]


class BaseAgent:
    """Convenience base: a seeded ``np.random.Generator`` in ``self.rng`` and a
    ``reset(seed)`` that reseeds it. ``reset`` is called at the start of each game.

    Result tables and messages name a subclass by its ``name`` attribute where it sets
    one (``name = "greedy"``), else by the registered name or spec it was built from
    (``agents.make("greedy")``), else by its class name (:func:`llama_env.agent.agent_label`);
    evaluation names an agent it was given as a registered name or spec by that text."""

    def __init__(self, seed: int | None = None) -> None:
        self.seed = _check_seed(seed)
        self.rng = np.random.default_rng(seed)

    def reset(self, seed: int | None = None) -> None:
        """Start of a game; a seed makes the agent's choices reproducible from here."""
        if seed is not None:
            self.rng = np.random.default_rng(_check_seed(seed))

    def act(self, observation: np.ndarray, action_mask: np.ndarray) -> int:  # pragma: no cover - abstract
        """The subclass's choice among the legal actions (:class:`llama_env.agent.Agent`)."""
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


def _check_seed(seed: object) -> int | None:
    if seed is None:
        return None
    if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"an agent's seed must be a non-negative integer or None, got {seed!r}")
    return int(seed)


def check_observation(observation: Any) -> None:
    """Raise ``ValueError`` unless ``observation`` is one flat observation vector of
    any version (the rule-based agents read the first 52 entries, which all share).

    Only the shape: it runs at every decision, and looking at each entry would cost the
    cheap agents a tenth of their time. What reads the values checks them where it is
    cheap (:func:`check_finite`): ``ppo``, ``search`` and every ``act_batch`` before
    reading; the rule-based agents read through ``ObsView``, which names such an entry as
    it reads it."""
    shape = observation.shape if type(observation) is np.ndarray else np.shape(observation)
    if len(shape) != 1 or shape[0] not in VERSION_OF_SIZE:  # every version extends version 0
        raise ValueError(f"an observation is a flat vector of {sizes_text()} values, got shape {shape}")


def check_finite(observations: Any) -> None:
    """Raise ``ValueError`` naming the first entry of ``observations`` (one vector, or
    ``(B, size)`` rows) that is NaN or infinite: such a value read as a count or fed to a
    network gave "cannot convert float NaN to integer" or a move from nonsense.

    One BLAS pass where all are finite (their sum of squares is; an entry beyond about
    1e19 overflows it, and then each entry is looked at). ``np.vdot``, not ``dot``: it
    reports no floating-point errors, where ``dot`` warned "overflow encountered in dot"
    of such a finite entry (``np.errstate`` would cost a per-step microsecond)."""
    values = observations if type(observations) is np.ndarray else np.asarray(observations)
    if values.dtype.kind != "f":
        return  # integers and booleans are finite; other kinds fail on their own
    if math.isfinite(np.vdot(values, values)):  # vdot reads (B, size) rows flat
        return
    bad = ~np.isfinite(values)
    if bad.any():
        at = np.unravel_index(int(np.argmax(bad)), values.shape)
        where = f"row {at[0]}, entry {at[1]}" if values.ndim == 2 else f"entry {at[0]}"
        what = "the observations" if values.ndim == 2 else "an observation"
        raise ValueError(f"{what} must hold finite numbers, got {values[at]} at {where}") from None


def check_batch(observations: Any, action_masks: Any) -> tuple[np.ndarray, np.ndarray]:
    """The arguments of an ``act_batch`` checked: ``observations`` a ``(B, 52)`` or ``(B,
    175)`` array of finite numbers, ``action_masks`` ``(B, 9)`` with at least one legal
    action in every row. Returns the observations and the masks as booleans; raises
    ``ValueError`` naming the shape, the first row without a legal action, or the first
    entry that is not finite."""
    obs = np.asarray(observations)
    masks = np.asarray(action_masks)
    if obs.ndim != 2 or obs.shape[1] not in VERSION_OF_SIZE:
        shapes = " or ".join(f"(B, {n})" for n in VERSION_OF_SIZE)
        raise ValueError(f"act_batch takes observations of shape {shapes}, got shape {obs.shape}")
    if masks.shape != (len(obs), 9):
        raise ValueError(
            f"act_batch takes action masks of shape ({len(obs)}, 9), one per observation, got {masks.shape}"
        )
    legal = masks if masks.dtype == bool else masks != 0
    empty = ~legal.any(axis=1)
    if empty.any():
        raise ValueError(f"the action mask of row {int(np.argmax(empty))} has no legal action")
    check_finite(obs)
    return obs, legal


def number(
    owner: str,
    name: str,
    value: object,
    *,
    integer: bool = False,
    minimum: float | None = None,
    maximum: float | None = None,
) -> float:
    """A parameter checked at construction: a finite real number (an integer when
    ``integer``), at least ``minimum`` and at most ``maximum``; otherwise a ``ValueError``
    naming it."""
    ok_type = (
        isinstance(value, (int, np.integer)) if integer else isinstance(value, (int, float, np.integer, np.floating))
    )
    if isinstance(value, (bool, np.bool_)) or not ok_type:
        kind = "an integer" if integer else "a finite number"
        raise ValueError(f"{owner} {name} must be {kind}, got {_short(value)}")
    try:
        as_float = float(value)  # type: ignore[arg-type]
    except OverflowError:  # an int beyond float range: no parameter means it
        raise ValueError(f"{owner} {name} must be a number within float range, got {_short(value)}") from None
    if not np.isfinite(as_float):
        raise ValueError(f"{owner} {name} must be a finite number, got {value!r}")
    if minimum is not None and value < minimum:  # type: ignore[operator]
        raise ValueError(f"{owner} {name} must be >= {minimum:g}, got {_short(value)}")
    if maximum is not None and value > maximum:  # type: ignore[operator]
        raise ValueError(f"{owner} {name} must be <= {maximum:g}, got {_short(value)}")
    return as_float


def _short(value: object) -> str:
    """``repr(value)`` for an error message, an integer of many digits by its size and
    anything else cut to 60 characters (a spec's value of pages was echoed whole)."""
    if isinstance(value, int) and abs(value).bit_length() > 128:
        return f"an integer of about {int(abs(value).bit_length() * 0.30103) + 1} digits"
    text = repr(value)
    return text if len(text) <= 60 else text[:60] + "..."


def mask_list(action_mask: np.ndarray | list[int]) -> list[int]:
    """An action mask as a plain list of its 9 entries.

    Raises ``ValueError`` for a mask of another shape: an agent never guesses an action
    outside ``Discrete(9)``; ``TypeError`` for something that is no sequence of entries
    (``None``, a number, a string).
    """
    if type(action_mask) is np.ndarray:
        m = action_mask.tolist()
    elif isinstance(action_mask, (list, tuple)):
        m = list(action_mask)
    elif isinstance(action_mask, (str, bytes, dict)) or not hasattr(action_mask, "__len__"):
        raise TypeError(
            "an action mask is a sequence of 9 entries (the env's 'action_mask'), got "
            f"{action_mask!r:.60} ({type(action_mask).__name__})"
        )
    else:
        m = list(action_mask)
    if type(m) is not list or len(m) != 9 or type(m[0]) is list:
        raise ValueError(f"an action mask has 9 entries, got shape {np.shape(action_mask)}")
    return m


def legal_actions(action_mask: np.ndarray | list[int]) -> list[int]:
    """The legal actions of a mask of length 9 (any truthy entries), ascending.

    Raises ``ValueError`` for a mask of another length or with no legal action.
    """
    m = mask_list(action_mask)
    out = [a for a in _ACTIONS if m[a]]
    if not out:
        raise ValueError("the action mask has no legal action")
    return out


_ACTIONS = range(9)


def agent_path(value: str | Path, what: str = "the path", hint: str = "") -> Path:
    """A file parameter's value as the built-in agents read it (``ppo``'s and ``search``'s
    ``path``, ``networks_path``; ``llama-rl train`` records their specs so): a leading ``~``
    or ``~user`` is that home folder, which the shell does not expand inside
    ``'ppo:path=~/m.npz'``; a ``Path`` is returned as it is. Read as every path a person
    writes is (``--record=~/games`` too). A plugin's parameters reach it as written.

    An empty string (or blanks alone) is a ``ValueError`` in one line, ``"{what} is
    empty: {hint}"`` (``what``: the caller's name for it, ``"SearchAgent networks_path"``;
    ``hint``, if given, what to name instead, ``"name a file that llama-rl fit-search
    wrote"``): as a path it is the current folder, and ``ppo:path=`` said "no PPO model in
    .", as if one were looked for there."""
    if isinstance(value, str) and not value.strip():
        blanks = f" (blanks alone: {value!r})" if value else ""
        raise ValueError(f"{what} is empty{blanks}" + (f": {hint}" if hint else ""))
    return user_path(value)


def layer_keys(k: int, net: str = "") -> tuple[str, str]:
    """The names of layer ``k``'s weights and bias in an ``.npz`` the built-in agents write:
    ``w0``, ``b0`` in a PPO policy (:func:`agents.ppo.save_actor`), ``value_w0``,
    ``belief_b1`` in the search's networks (``net`` ``"value"`` or ``"belief"``,
    :func:`agents.search.save_networks`). The writers, the readers and
    :data:`ARCHIVE_KINDS` take them from here, so the kinds stay told apart."""
    prefix = f"{net}_" if net else ""
    return f"{prefix}w{k}", f"{prefix}b{k}"


ARCHIVE_KINDS: dict[str, tuple[str, str, str]] = {
    "actor": (layer_keys(0)[0], "a PPO policy", "ppo:path=..., search:path=... or --model"),
    "networks": (layer_keys(0, "value")[0], "the search's value and belief networks", "search:networks_path=..."),
}
"""The two kinds of ``.npz`` the built-in agents read, each by an array only it holds, what
it is and how it is given: a PPO policy (:func:`agents.ppo.save_actor`; a search plays
one as ``search:path=``) and the search's value and belief networks
(:func:`agents.search.save_networks`)."""


def held_instead(names: Iterable[str], wanted: str) -> str | None:
    """Why an ``.npz`` archive whose arrays are ``names`` is not of the kind ``wanted`` (a
    key of :data:`ARCHIVE_KINDS`) where it is of the other: ``"it holds the search's
    value and belief networks (give it as search:networks_path=...)"``; ``None`` where it
    is of neither. Each reader says so of a file it refuses, where "no w0" named no way on."""
    held = set(names)
    for kind, (array, what, given) in ARCHIVE_KINDS.items():
        if kind != wanted and array in held:
            return f"it holds {what} (give it as {given})"
    return None


def load_arrays(path: str | Path) -> Any:
    """``np.load`` of an ``.npz`` file of arrays, with no pickle: a file that is no zip
    archive is a ``ValueError`` saying so (numpy would read it as a pickle, refuse, and
    suggest loading it unsafely). Use it as a context manager, as ``np.load``'s result."""
    path = Path(path)
    if not path.exists():
        raise ValueError("the file does not exist")
    if path.is_dir():
        raise ValueError("it is a folder, not an .npz file")
    if not zipfile.is_zipfile(path):
        raise ValueError("it is not an .npz archive of arrays (not a zip file)")
    declared = _declared_bytes(path)
    if declared > MAX_ARRAY_BYTES:
        raise too_large(f"it declares {declared / 2**20:,.0f} MiB of arrays,", MAX_ARRAY_BYTES)
    return np.load(path, allow_pickle=False)


MAX_ARRAY_BYTES = 256 * 2**20
"""The most an ``.npz`` that :func:`load_arrays` reads may hold once unpacked: a small
file can declare gigabytes of zeros, which were unpacked before any check."""


def too_large(what: str, limit: int, verb: str = "loaded") -> ValueError:
    """The refusal of a file over ``limit`` bytes (:data:`MAX_ARRAY_BYTES`, as the caller
    reads it): ``what`` it holds (``"it is 1,234 bytes,"``), then the bound, and that it
    is not ``verb``."""
    return ValueError(f"{what} more than {limit // 2**20} MiB (a model of this game is well under 10 MiB): not {verb}")


_HEADER_READERS = {(1, 0): np.lib.format.read_array_header_1_0, (2, 0): np.lib.format.read_array_header_2_0}
"""numpy's public readers of an ``.npy`` header, by format version (``np.savez`` writes
1.0, and 2.0 for a header too long for it; 3.0 only for fields named beyond Latin-1)."""


def _declared_bytes(path: Path) -> int:
    """What the archive holds unpacked, known before anything is unpacked: the sizes its
    zip directory gives (zipfile never unpacks a member past its size), and where an
    ``.npy`` header declares more than that (numpy allocates the whole array before it
    reads the data), the header's. Every member must be an ``.npy`` array with a header
    numpy's readers read: ``np.load`` hands any other member over whole, as bytes, and a
    header those readers cannot read was counted as nothing (a 1 MB file unpacked 1 GiB).
    A member damaged further in is left to ``np.load`` to name."""
    with zipfile.ZipFile(path) as zf:
        members = zf.infolist()
        for info in members:
            if not info.filename.endswith(".npy"):
                raise ValueError(f"its member {info.filename[:80]!r} is not an .npy array: not loaded")
        total = sum(info.file_size for info in members)
        if total > MAX_ARRAY_BYTES:
            return total
        for info in members:
            try:
                with zf.open(info) as fh:
                    version = np.lib.format.read_magic(fh)
                    if version not in _HEADER_READERS:
                        raise ValueError(f"its header is of .npy version {version[0]}.{version[1]}")
                    shape, _, dtype = _HEADER_READERS[version](fh)
            except ValueError as exc:  # numpy's reasons, their first line: the rest advises pickle
                why = (str(exc).strip().splitlines() or [""])[0][:160]
                name = info.filename[:80]
                raise ValueError(f"its member {name!r} is not an .npy array numpy reads ({why})") from None
            except Exception:  # noqa: BLE001 - a damaged zip member: np.load names it
                continue
            total += max(0, int(np.prod(shape, dtype=object)) * dtype.itemsize - info.file_size)
    return total
