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

from collections.abc import Callable
from pathlib import Path

from train.training.run_dir import save_aside


def save_or_rescue(save: Callable[[Path], None], path: Path, what: str) -> None:
    """``save(path)``; when that fails (a disk that filled while the games were played),
    save to the temporary directory instead (:func:`train.training.run_dir.save_aside`)
    and raise an ``OSError`` that says where, so that minutes of games and fitting are not
    lost to the last write."""
    try:
        save(path)
    except OSError as exc:
        target = save_aside(save, path.name)
        if target is None:
            raise
        raise OSError(
            exc.errno, f"cannot write {path} ({exc.strerror or exc}); the {what} were saved to {target} instead"
        ) from None


def refuse_own_file(out: str | Path, source: str | Path, message: str) -> None:
    """A ``ValueError`` saying ``message`` when ``out``, the file to write, is ``source``,
    a file the command reads (the same file by another name too), so that one is not
    written over the other."""
    if Path(out).exists() and Path(source).exists() and Path(out).samefile(source):
        raise ValueError(message)
