"""How to install an extra, for the messages of a missing optional package.

``llama-rl`` is not on PyPI under that name (another project holds it), so a message
must not send anyone to ``pip install 'llama-rl[web]'`` there: from a checkout (the
package installed editable, ``pip install -e``), the hint names that checkout and the
interpreter running now, so that it installs into the same environment whatever is on
the PATH.
"""

from __future__ import annotations

import sys
from pathlib import Path

__all__ = ["install_hint"]


def install_hint(extra: str) -> str:
    """The command that installs the extra ``extra`` (``"web"``, ``"train"``...) into
    the environment running now."""
    python = sys.executable or "python"
    if " " in python:
        python = f'"{python}"'
    root = Path(__file__).resolve().parents[1]
    if (root / "pyproject.toml").is_file():  # a checkout
        return f'{python} -m pip install -e "{root}[{extra}]"'
    return f'{python} -m pip install "llama-rl[{extra}]" (from the checkout or wheel llama-rl came from)'
