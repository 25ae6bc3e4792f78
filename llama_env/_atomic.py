"""Files written whole or not at all: game records, models, networks and a run's files.
The content goes to a temporary file beside the target, which is then moved over it with
``os.replace``. Also the paths a user names for them: ``~`` expanded, a folder checked
writable before the work that fills it."""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

__all__ = [
    "atomic_write",
    "atomic_write_text",
    "atomic_savez",
    "new_file",
    "check_writable_folder",
    "write_target",
    "user_path",
]


def user_path(value: str | os.PathLike[str]) -> Path:
    """A file or folder as a person wrote it: a leading ``~`` or ``~user`` is that home
    folder, which the shell does not expand inside ``'ppo:path=~/m.npz'`` or
    ``--record=~/games``. Where there is no such folder (a folder named ``~old``, no user
    ``old``), the value is read as written, relative to the current folder
    (:func:`os.path.expanduser`: ``Path.expanduser`` raised there). A ``Path`` is a
    location already decided and is returned as it is: ``Path("./~/m.npz")`` prints as
    ``~/m.npz``, and expanding it again read the home folder's file in place of the one
    in a folder named ``~`` (so the edges turn a string into a path once, here, and hand
    the ``Path`` on)."""
    if isinstance(value, Path):
        return value
    return Path(os.path.expanduser(value))


def atomic_write(path: str | os.PathLike[str], write: Callable[[Path], None]) -> None:
    """Call ``write(tmp)`` on a temporary path beside ``path``, then move it over ``path``.

    A crash, an error or Ctrl-C while writing leaves ``path`` as it was, never a partial
    file; two writers at once each get a temporary file of their own. A file that is
    there keeps its permissions, and a symbolic link its place: the file it points to is
    the one replaced, as ``open(path, "w")`` would write it."""
    path = write_target(path)
    tmp = new_file(path.parent, f".{path.name}.", ".tmp")
    try:
        write(tmp)
        with contextlib.suppress(FileNotFoundError):  # a 0600 file stays 0600
            os.chmod(tmp, stat.S_IMODE(os.stat(path).st_mode))
        _replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def write_target(path: str | os.PathLike[str]) -> Path:
    """The file :func:`atomic_write` replaces for ``path``, in whose folder it writes
    first: the one a symbolic link there points to (a dangling link's too), else ``path``
    itself. A command checks that folder before its work (:func:`check_writable_folder`)."""
    path = Path(path)
    return Path(os.path.realpath(path)) if path.is_symlink() else path


_WINDOWS = os.name == "nt"


def _replace(tmp: Path, path: Path) -> None:
    """``os.replace``, tried again for a second on Windows, where a file that another
    program holds open for a moment (a virus scanner, the search indexer, often on a
    file just written) cannot be replaced: a ``PermissionError`` that passes."""
    for wait in (0.05, 0.1, 0.2, 0.3, 0.4) if _WINDOWS else ():
        try:
            os.replace(tmp, path)
            return
        except PermissionError:
            time.sleep(wait)
    os.replace(tmp, path)


def atomic_write_text(path: str | os.PathLike[str], text: str) -> None:
    """``text`` (UTF-8) to ``path``, whole or not at all."""

    def write(tmp: Path) -> None:
        tmp.write_text(text, encoding="utf-8")

    atomic_write(path, write)


def atomic_savez(path: str | os.PathLike[str], arrays: dict[str, Any]) -> None:
    """``arrays`` as a numpy archive (``np.savez``) at ``path``, whole or not at all."""

    def write(tmp: Path) -> None:
        with open(tmp, "wb") as fh:
            np.savez(fh, **arrays)

    atomic_write(path, write)


def new_file(directory: Path, prefix: str, suffix: str) -> Path:
    """A new empty file of a random name in ``directory``, made as ``open`` makes files
    (mode 0666 less the umask; ``tempfile.mkstemp`` would make every file 0600)."""
    for _ in range(100):
        path = directory / f"{prefix}{secrets.token_hex(6)}{suffix}"
        try:
            fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o666)
        except FileExistsError:
            continue
        os.close(fd)
        return path
    raise FileExistsError(f"no free temporary name {prefix}*{suffix} in {directory}")  # pragma: no cover


def check_writable_folder(folder: Path) -> None:
    """A ``ValueError`` unless ``folder`` is a folder this process can write a file in
    (tried with a file made and removed at once), saying which: a file in its place or
    above it, a folder that does not exist, or why it cannot be written. Checked before
    a command's work, not when its result is saved."""
    if not folder.is_dir():
        above = next((p for p in (folder, *folder.parents) if p.exists()), None)
        if above is not None and not above.is_dir():
            raise ValueError(f"{str(above)!r} is a file, not a folder")
        raise ValueError(f"the folder {str(folder)!r} does not exist")
    try:
        new_file(folder, ".llama-rl-write-test.", "").unlink()
    except OSError as exc:
        raise ValueError(f"cannot write in {str(folder)!r} ({exc.strerror or exc})") from None
