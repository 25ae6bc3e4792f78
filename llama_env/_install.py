"""How to install an extra, for the messages of a missing optional package.

``llama-rl`` is not on PyPI under that name (another project holds it), so a message
must not send anyone to ``pip install 'llama-rl[web]'`` there: from a checkout (the
package installed editable, ``pip install -e``), the hint names that checkout and the
interpreter running now, so that it installs into the same environment whatever is on
the PATH. From a wheel, the hint pins the version installed here: pip then keeps that
install and adds the extra's packages, and run where this version is not installed it
fails instead of fetching the other project's package. In an environment without pip (made
by uv, or ``python -m venv --without-pip``), ``python -m pip`` would fail: the hint names
what to install and leaves the installer to the environment's own.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import shlex
import subprocess
import sys
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from llama_env._version import __version__

__all__ = [
    "EXTRAS",
    "MissingExtra",
    "extra_named",
    "find_missing",
    "install_hint",
    "missing_from",
]

_TRAIN = {
    "torch": "torch",
    "stable-baselines3": "stable_baselines3",
    "sb3-contrib": "sb3_contrib",
    "tensorboard": "tensorboard",
    "rich": "rich",
    "openskill": "openskill",
    "threadpoolctl": "threadpoolctl",
}

EXTRAS: dict[str, dict[str, str]] = {
    "train": _TRAIN,
    "rllib": {**_TRAIN, "ray": "ray"},
    "web": {
        "starlette": "starlette",
        "anyio": "anyio",
        "uvicorn": "uvicorn",
        "resvg-py": "resvg_py",
        "pillow": "PIL",
        "openskill": "openskill",
    },
    "notebooks": {
        **_TRAIN,
        "matplotlib": "matplotlib",
        "pandas": "pandas",
        "nbclient": "nbclient",
        "nbformat": "nbformat",
        "ipykernel": "ipykernel",
    },
}
"""Each extra's packages, as pyproject.toml's extras list them (an extra it includes spelled
out), each with the module it installs: distribution -> import name. A module missing
is put down to an extra only when the extra brings it (:func:`missing_from`)."""


def missing_from(extra: str, exc: ModuleNotFoundError) -> str | None:
    """The package of the extra ``extra`` that ``exc`` finds missing (its top-level module),
    or ``None`` when ``exc`` is about a module the extra does not bring: a user's own
    agent importing what is not installed, a module of numpy's when unpickling, the
    project's own packages (a broken install). Those are no extra's to name."""
    package = (exc.name or "").partition(".")[0]
    return package if package in EXTRAS.get(extra, {}).values() else None


def find_missing(modules: Iterable[str]) -> str | None:
    """The first of ``modules`` (import names, :data:`EXTRAS`' values) that is not installed,
    or ``None``: found without importing any, so a check made early (when an env is made,
    before a benchmark runs) imports no torch or ray. A module in ``sys.modules`` counts as
    found (``None`` there: missing, as the import would find it)."""
    for module in modules:
        try:
            if importlib.util.find_spec(module) is None:
                return module
        except ValueError:  # in sys.modules without a spec: imported already
            pass
    return None


@contextlib.contextmanager
def extra_named(extra: str, why: Callable[[str], str]) -> Iterator[None]:
    """A package of the extra ``extra`` missing in the block (:func:`missing_from`), as a
    :class:`MissingExtra` saying ``why(package)`` and how to install the extra (a plain
    ``No module named 'torch'`` named none), the import's error its cause. Any other
    module missing goes through as it is: a user's agent's own import, a module of numpy's,
    the project's own (a broken install); so does a :class:`MissingExtra` raised in the
    block, which names its extra already."""
    try:
        yield
    except ModuleNotFoundError as exc:
        package = missing_from(extra, exc)
        if isinstance(exc, MissingExtra) or package is None:
            raise
        raise MissingExtra(why(package), extra, name=package) from exc


def install_hint(extra: str) -> str:
    """The command that installs the extra ``extra`` (``"web"``, ``"train"``...) into
    the environment running now, quoted for this system's shell; where that environment
    has no pip, what to install with its own installer."""
    root = Path(__file__).resolve().parents[1]
    checkout = (root / "pyproject.toml").is_file()
    requirement = ["-e", f"{root}[{extra}]"] if checkout else [f"llama-rl[{extra}]=={__version__}"]
    note = "" if checkout else " (the llama-rl installed here: the llama-rl on PyPI is another project)"
    if find_missing(["pip"]) is not None:
        return f"install {_command(requirement)}{note} with the installer of this environment (it has no pip)"
    return _command([sys.executable or "python", "-m", "pip", "install", *requirement]) + note


def _command(words: list[str]) -> str:
    if os.name == "nt":
        return subprocess.list2cmdline(words)
    return shlex.join(words)


class MissingExtra(ModuleNotFoundError):
    """An optional package of the extra :attr:`extra` is missing: the message is
    :attr:`why` and the command that installs the extra (:func:`install_hint`), for whoever
    runs this Python; :meth:`for_others` says the same without this machine's paths, for
    someone who cannot run it (the web page of ``llama-rl serve``). Every missing optional
    package the project reports is one: ``llama-rl`` and the benchmarks print it in one
    line and tell it from a broken install (any other ``ModuleNotFoundError``) by its class."""

    def __init__(self, why: str, extra: str, name: str) -> None:
        super().__init__(f"{why}: {install_hint(extra)}", name=name)
        self.why = why
        self.extra = extra

    def for_others(self) -> str:
        """The message without the install command (it names this machine's Python and
        checkout): the extra the machine lacks, for its operator to install."""
        return f"{self.why}: this server lacks the {self.extra} extra; its operator installs it"

    def __reduce__(self) -> tuple[Any, ...]:  # pickled across a process: by its parts, not its message
        return (type(self), (self.why, self.extra, self.name))
