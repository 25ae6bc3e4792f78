"""How to install an extra, for the messages of a missing optional package.

``llama-rl`` is not on PyPI under that name (another project holds it), so a message
must not send anyone to ``pip install 'llama-rl[web]'`` there: from a checkout (the
package installed editable, ``pip install -e``), the hint names that checkout and the
interpreter running now, so that it installs into the same environment whatever is on
the PATH. From a wheel, the hint pins the version installed here: pip then keeps that
install and adds the extra's packages, and run where this version is not installed it
fails instead of fetching the other project's package.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

from llama_env._version import __version__

__all__ = ["MissingExtra", "install_hint"]


def install_hint(extra: str) -> str:
    """The command that installs the extra ``extra`` (``"web"``, ``"train"``...) into
    the environment running now, quoted for this system's shell."""
    root = Path(__file__).resolve().parents[1]
    if (root / "pyproject.toml").is_file():  # a checkout
        return _command([sys.executable or "python", "-m", "pip", "install", "-e", f"{root}[{extra}]"])
    command = _command([sys.executable or "python", "-m", "pip", "install", f"llama-rl[{extra}]=={__version__}"])
    return f"{command} (the llama-rl installed here: the llama-rl on PyPI is another project)"


def _command(words: list[str]) -> str:
    if os.name == "nt":
        return subprocess.list2cmdline(words)
    return shlex.join(words)


class MissingExtra(ModuleNotFoundError):
    """An optional package of the extra :attr:`extra` is missing: the message is
    :attr:`why` and the command that installs the extra (:func:`install_hint`), for whoever
    runs this Python; :meth:`for_others` says the same without this machine's paths, for
    someone who cannot run it (the web page of ``llama-rl serve``)."""

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
