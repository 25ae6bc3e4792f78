"""The run directory of a training run: where things are, and writing them safely.

``runs/<name>/`` holds ``config.json`` (the config the run was started with),
``checkpoints/ppo_<steps>.zip``, ``model.zip`` (the latest policy), ``eval.jsonl``
(one line per periodic evaluation), ``summary.json`` (the last session's numbers) and
``tb/`` (TensorBoard logs). Every file is written to a temporary file in the same
directory and moved into place with ``os.replace``, so a file is either the old one or
the new one, never half written.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["RunDir", "atomic_write", "write_json_atomic"]

CHECKPOINT_GLOB = "ppo_*.zip"


def atomic_write(path: Path, write: Callable[[Path], None]) -> None:
    """Call ``write(tmp)`` on a temporary path beside ``path``, then move it over ``path``.

    A crash (or Ctrl-C) while writing leaves ``path`` as it was, never a partial file."""
    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        write(tmp)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def write_json_atomic(path: Path, data: Any) -> None:
    """``json.dump(data)`` to ``path``, atomically."""
    text = json.dumps(data, indent=2) + "\n"
    atomic_write(path, lambda tmp: _write_text(tmp, text))


def _write_text(path: Path, text: str) -> None:
    path.write_text(text, encoding="utf-8")


class RunDir:
    """The files of one run, under ``path``."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)

    @property
    def checkpoints_dir(self) -> Path:
        return self.path / "checkpoints"

    @property
    def config_path(self) -> Path:
        return self.path / "config.json"

    @property
    def model_path(self) -> Path:
        return self.path / "model.zip"

    @property
    def eval_path(self) -> Path:
        return self.path / "eval.jsonl"

    @property
    def summary_path(self) -> Path:
        return self.path / "summary.json"

    @property
    def tensorboard_dir(self) -> Path:
        return self.path / "tb"

    def checkpoint_path(self, steps: int) -> Path:
        return self.checkpoints_dir / f"ppo_{steps}.zip"

    def checkpoints(self) -> list[Path]:
        """The checkpoints, oldest (fewest steps) first."""
        found = []
        for p in self.checkpoints_dir.glob(CHECKPOINT_GLOB):
            try:
                found.append((int(p.stem.split("_", 1)[1]), p))
            except ValueError:
                continue  # not one of ours (ppo_final.zip...)
        return [p for _, p in sorted(found)]

    def append_eval(self, row: dict[str, Any]) -> None:
        """Add one evaluation line to ``eval.jsonl`` (rewritten atomically)."""
        old = self.eval_path.read_text(encoding="utf-8") if self.eval_path.exists() else ""
        line = json.dumps(row) + "\n"
        atomic_write(self.eval_path, lambda tmp: _write_text(tmp, old + line))
