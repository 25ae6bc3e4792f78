"""How to install an extra, for the messages of a missing optional package.

``llama-rl`` is not on PyPI under that name (another project holds it), so a message
must not send anyone to ``pip install 'llama-rl[web]'`` there: from a checkout (the
package installed editable, ``pip install -e``), the hint names that checkout and the
interpreter running now, so that it installs into the same environment whatever is on
the PATH.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

__all__ = ["install_hint"]


def install_hint(extra: str) -> str:
    """The command that installs the extra ``extra`` (``"web"``, ``"train"``...) into
    the environment running now, quoted for this system's shell."""
    root = Path(__file__).resolve().parents[1]
    if (root / "pyproject.toml").is_file():  # a checkout
        return _command([sys.executable or "python", "-m", "pip", "install", "-e", f"{root}[{extra}]"])
    command = _command([sys.executable or "python", "-m", "pip", "install", f"llama-rl[{extra}]"])
    return f"{command} (from the checkout or wheel llama-rl came from)"


def _command(words: list[str]) -> str:
    if os.name == "nt":
        return subprocess.list2cmdline(words)
    return shlex.join(words)
