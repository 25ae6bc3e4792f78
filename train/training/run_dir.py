"""The run directory of a training run: where things are, and writing them safely.

``runs/<name>/`` holds ``config.json`` (the config the run was started with; a resumed
session adds ``config.resume_<k>.json`` with exactly what it ran), ``checkpoints/ppo_<steps>.zip``,
``model.zip`` (the latest policy), ``eval.jsonl`` (one line per periodic evaluation),
``summary.json`` (the last session's numbers; marked ``"running": true`` while a session
runs, which one killed leaves: :func:`out_of_date_summary`), ``sessions.jsonl`` (one line per session)
and ``tb/`` (TensorBoard logs). The names a run's readers share (its config, sessions and
checkpoints) are declared in :mod:`agents.ppo`, which reads runs too (agents never import
the trainers).

Nothing saved is ever lost:

* every file is written to a temporary file in the same directory and moved into place
  with ``os.replace``, so a file is either the old one or the new one, never half
  written (a crash, a full disk or a second Ctrl-C leaves the previous version); the
  temporary files a killed trainer leaves (``.<name>.<random>.tmp``) are removed by
  the next one to take the lock. Files are made as ``open`` makes them: mode 0666 less
  the umask;
* a trainer holds ``.lock`` while it writes, so two trainers never write one run; a
  lock appears whole at once (a hard link to a written file), and one left by a process
  that no longer exists is taken over with a warning;
* resuming checks each checkpoint before using it and falls back to the newest one
  that is whole (:meth:`RunDir.newest_valid_checkpoint`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import secrets
import shutil
import signal
import socket
import sys
import tempfile
import time
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from agents.ppo import (  # a run directory's layout (the ppo agent reads runs too), and checks of its saves
    MODEL_NAMES,
    RLLIB_CHECKPOINT_FILES,
    RUN_CHECKPOINTS,
    RUN_CONFIG,
    RUN_SESSIONS,
    checkpoint_problem,
    is_run_directory,
    named_checkpoints,
    resume_config_name,
    resumed_configs,
    rllib_checkpoint_problem,
    saved_steps,
    sb3_checkpoint_name,
    whole_checkpoints,
)
from llama_env._atomic import atomic_write, atomic_write_text, new_file
from llama_env.engine import error_line
from train._program import (  # they stop a command as Ctrl-C does: a trainer saves its checkpoint
    STOP_SIGNALS,
    signal_handler,
)

__all__ = [
    "RunDir",
    "RunDirError",
    "atomic_write",
    "write_json_atomic",
    "checkpoint_problem",
    "rllib_checkpoint_problem",
    "RLLIB_CHECKPOINT_FILES",
    "forgotten_unless_saved",
    "saved_steps",
    "out_of_date_summary",
    "signal_handler",
    "saving_despite_ctrl_c",
]

TEMP_GLOB = ".*.tmp"
"""Temporary files (and the RLlib backend's temporary checkpoint folders) of writes in progress."""
RUN_FILES = (
    *(RUN_CONFIG, "eval.jsonl", "progress.jsonl", "summary.json", RUN_SESSIONS),
    *("tb", "ray"),
)
"""What the trainers write in a run directory besides checkpoints, models and the lock
(``tb``: the sb3 backend's TensorBoard logs; ``ray``: the rllib backend's Ray files)."""
_LOCK_BEING_WRITTEN_S = 10.0
"""An unreadable lock younger than this is taken to be a starting trainer's (the fallback
for file systems without hard links writes it in place); an older one as left behind."""


class RunDirError(OSError):
    """The run directory cannot be written, or is in use: the message says what, where,
    and what was kept."""


@contextlib.contextmanager
def saving_despite_ctrl_c(
    saying: str = "still saving the checkpoint (a few seconds); Ctrl-C again stops without it",
) -> Iterator[None]:
    """While a trainer writes its final files, hold back one more Ctrl-C or SIGTERM (which
    stops a run as Ctrl-C does), ``saying`` so; a further one stops at once (the atomic
    writes leave the previous files whole). The rllib trainer holds one back so too while
    Ray stops, after the save, so that the run's result is still reported."""
    presses = [0]

    def handler(signum: int, frame: Any) -> None:
        presses[0] += 1
        if presses[0] > 1:
            raise KeyboardInterrupt
        print(f"\n{saying}", file=sys.stderr)

    with contextlib.ExitStack() as stack:
        for signum in (signal.SIGINT, *STOP_SIGNALS):
            stack.enter_context(signal_handler(signum, handler))
        yield


def save_aside(save: Callable[[Path], object], name: str) -> Path | None:
    """``save(path)`` to a new file of the temporary directory, for a result that could not
    be written where it belongs: ``llama-rl-rescue-<stem>-<random>.<suffix>`` of ``name``,
    made afresh (:func:`llama_env._atomic.new_file`), so that a second rescue of the same
    name keeps the first, and a link planted under a fixed name in a shared directory
    redirects nothing. The path, or ``None`` when that fails too; a save that fails or is
    stopped (Ctrl-C) leaves no empty file behind."""
    stem, suffix = Path(name).stem, Path(name).suffix
    try:
        target = new_file(Path(tempfile.gettempdir()), f"llama-rl-rescue-{stem}-", suffix)
    except OSError:
        return None
    try:
        save(target)
    except OSError:
        target.unlink(missing_ok=True)
        return None
    except BaseException:
        target.unlink(missing_ok=True)
        raise
    return target


def write_json_atomic(path: Path, data: Any) -> None:
    """``json.dump(data)`` to ``path``, atomically."""
    atomic_write_text(path, json.dumps(data, indent=2) + "\n")


def out_of_date_summary(summary: dict[str, Any]) -> dict[str, Any]:
    """What ``summary.json`` says while a session runs, and after one killed before it wrote
    its own: ``"running": true``, a note, and of the last finished session's figures the
    step count of the model it saved (``num_timesteps``; :mod:`agents.ppo` reads it) and
    its backend."""
    kept: dict[str, Any] = {key: summary[key] for key in ("backend", "num_timesteps") if key in summary}
    return {
        "running": True,
        "note": (
            "a session started after the one that wrote the run's model (model.zip; model.npz on rllib) of "
            "num_timesteps steps and has not ended: it trains still, or was killed; its checkpoints may be newer "
            "than the model"
        ),
        **kept,
    }


@contextlib.contextmanager
def forgotten_unless_saved(config_file: Path, saved: list[Path]) -> Iterator[None]:
    """Remove ``config_file``, the config a training session recorded as it started, when
    what runs inside fails before ``saved`` holds a checkpoint: its settings never
    trained the run, so neither the next resume nor the model's table sizes may read them
    (:meth:`RunDir.recorded_config_path` passes over what a ``kill -9`` leaves)."""
    try:
        yield
    except BaseException:
        if not saved:
            with contextlib.suppress(OSError):
                config_file.unlink()
        raise


def _pid_alive(pid: int) -> bool:
    if sys.platform == "win32":  # there os.kill(pid, 0) sends CTRL_C_EVENT: ask the kernel instead
        return _windows_pid_alive(pid)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # it exists, under another user
        return True
    return True


def _windows_pid_alive(pid: int) -> bool:  # pragma: no cover - Windows only
    import ctypes

    kernel = ctypes.windll.kernel32  # type: ignore[attr-defined]
    handle = kernel.OpenProcess(0x1000, False, pid)  # PROCESS_QUERY_LIMITED_INFORMATION
    if not handle:
        return kernel.GetLastError() == 5  # ERROR_ACCESS_DENIED: it exists, under another user
    try:
        code = ctypes.c_ulong()
        return not kernel.GetExitCodeProcess(handle, ctypes.byref(code)) or code.value == 259  # STILL_ACTIVE
    finally:
        kernel.CloseHandle(handle)


class RunDir:
    """The files of one run, under ``path``."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)

    # ------------------------------------------------------------------ places

    @property
    def checkpoints_dir(self) -> Path:
        return self.path / RUN_CHECKPOINTS

    @property
    def config_path(self) -> Path:
        return self.path / RUN_CONFIG

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
    def sessions_path(self) -> Path:
        return self.path / RUN_SESSIONS

    @property
    def tensorboard_dir(self) -> Path:
        return self.path / "tb"

    @property
    def lock_path(self) -> Path:
        return self.path / ".lock"

    def checkpoint_path(self, steps: int) -> Path:
        return self.checkpoints_dir / sb3_checkpoint_name(steps)

    def rescue(self, save: Callable[[Path], object], steps: int, suffix: str, what: str) -> str:
        """Save a trainer's ``what`` (``save(path)``, a ``suffix`` file) to the temporary
        directory, named by run and steps, when this run directory cannot be written; the
        clause that ends its error message and says where (empty when that fails too)."""
        target = save_aside(save, f"{self.path.name}-{steps}{suffix}")
        return "" if target is None else f"; the current {what} was saved to {target} instead"

    # ------------------------------------------------------------------ reading

    def checkpoints(self) -> list[Path]:
        """The checkpoints, oldest (fewest steps) first."""
        return [p for _, p, rllib in named_checkpoints(self.path) if not rllib]  # not ours (ppo_final.zip...)

    def whole_checkpoints(self) -> list[tuple[int, Path]]:
        """The checkpoints of either backend that look whole, with their step counts,
        fewest steps first (:func:`agents.ppo.whole_checkpoints`)."""
        return whole_checkpoints(self.path)

    def newest_valid_checkpoint(self) -> tuple[Path | None, list[tuple[Path, str]]]:
        """The whole save with the most steps, the newest checkpoint or ``model.zip``
        (the checkpoint on a tie), and the newer checkpoints skipped with the reason."""
        skipped: list[tuple[Path, str]] = []
        found: Path | None = None
        for candidate in reversed(self.checkpoints()):
            problem = checkpoint_problem(candidate)
            if problem is None:
                found = candidate
                break
            skipped.append((candidate, problem))
        model = self.model_path
        if model.exists():
            problem = checkpoint_problem(model)
            if problem is None and (found is None or saved_steps(model) > saved_steps(found)):
                found = model  # the newest checkpoints broken, the final save newer than the rest
            elif problem is not None and found is None:
                skipped.append((model, problem))
        return found, skipped

    def is_run(self) -> bool:
        """Whether a trainer wrote here: a recorded config, a session or a checkpoint
        (:func:`agents.ppo.is_run_directory`)."""
        return is_run_directory(self.path)

    def saved_anything(self) -> bool:
        """Whether a trainer saved a checkpoint (of either backend, whole or not) or a model here."""
        return bool(self._saved_paths())

    def nothing_saved(self) -> str | None:
        """What this folder is when a trainer wrote here and saved no checkpoint and no
        model (:meth:`saved_anything`): a run stopped before its first save (a ``kill -9``
        or a crash leaves its config, ``tb/``, the lock and an empty ``checkpoints/``),
        which holds nothing to resume, or one still training towards it; with what to do,
        as the refusals of a new run in it and of ``--resume`` of it end. ``None`` for a
        folder that is no run or a run that saved something."""
        if not self.is_run() or self.saved_anything():
            return None
        lock = self._read_lock()
        if lock is not None and lock.held:  # what the next trainer would not take over
            who = "another trainer (its lock is being written)" if lock.being_written else lock.holder
            return f"a run before its first save, in use by {who}: wait for it to end, or give another --run-name"
        return (
            "a run stopped before its first save (it holds no checkpoint or model to go on from): delete it, "
            "or give another --run-name"
        )

    def config_files(self) -> list[Path]:
        """``config.json`` then each ``config.resume_<k>.json``, oldest first."""
        first = [self.config_path] if self.config_path.exists() else []
        return first + [p for _, p in resumed_configs(self.path)]

    def session_rows(self) -> list[dict[str, Any]] | None:
        """The lines of ``sessions.jsonl`` (empty when there is none yet); ``None`` when it
        cannot be read."""
        try:
            text = self.sessions_path.read_text(encoding="utf-8") if self.sessions_path.exists() else ""
            rows = [json.loads(line) for line in text.splitlines() if line.strip()]
        except (OSError, ValueError, RecursionError):
            return None
        return rows if all(isinstance(row, dict) for row in rows) else None

    def checkpoint_step_counts(self) -> list[int]:
        """The step counts of the run's checkpoints, of every backend (``ppo_<steps>.zip``,
        ``rllib_<steps>/``), whole or not."""
        return [steps for steps, _, _ in named_checkpoints(self.path)]

    def recorded_config_path(self) -> Path | None:
        """The config file of the run's last session that trained (``None`` for a run
        without one): ``config.json``, or the newest ``config.resume_<k>.json`` whose
        session ``sessions.jsonl`` records, or whose session saved a checkpoint before it
        was killed (one with more steps than every recorded session ended at). A session
        that failed, crashed or was stopped before it saved anything never trained the
        run: its settings are passed over (a trainer removes that file when it can; a
        ``kill -9`` leaves it). Every file counts where the record cannot be read."""
        files = self.config_files()
        if not files:
            return None
        rows = self.session_rows()
        if rows is None:
            return files[-1]
        named = {row.get("config") for row in rows}
        ends = [row.get("ended_at_step") for row in rows]
        ended = max((e for e in ends if isinstance(e, int) and not isinstance(e, bool)), default=0)
        saved_since = any(steps > ended for steps in self.checkpoint_step_counts())
        for path in reversed(files):
            if path == self.config_path or path.name in named or saved_since:
                return path
        return files[0]  # pragma: no cover - config.json is taken above, and files[0] is it or a resume

    def recorded_config(self) -> dict[str, Any] | None:
        """The config the run's last session that trained ran with
        (:meth:`recorded_config_path`; ``None`` for a run without one)."""
        path = self.recorded_config_path()
        if path is None:
            return None
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError, RecursionError) as exc:  # RecursionError: JSON nested too deep
            raise RunDirError(f"cannot read the run's config {path}: {error_line(exc)}") from None
        if not isinstance(data, dict):
            raise RunDirError(f"the run's config {path} is not a JSON object")
        return data

    # ------------------------------------------------------------------ writing

    def create(self, *, fresh: bool) -> None:
        """Make the directory (and ``checkpoints/``); ``fresh`` refuses a non-empty one.

        Raises :class:`RunDirError` naming the path and the reason when it cannot be
        made (a file in the way, a read-only parent...) and ``ValueError`` when a fresh
        run would overwrite an existing one."""
        if fresh and self.path.is_dir() and any(self.path.iterdir()):
            unsaved = self.nothing_saved()
            if unsaved is not None:  # nothing to continue: --resume would refuse it too
                raise ValueError(f"run directory {self.path} is {unsaved}")
            if self.is_run():
                raise ValueError(
                    f"run directory {self.path} already exists and is not empty (an earlier run's): give another "
                    f"--run-name, continue it with --resume {self.path}, or delete it"
                )
            raise ValueError(
                f"run directory {self.path} already exists, is not empty and holds no run (no trainer wrote "
                "there): give another --run-name or --run-dir"
            )
        try:
            self.checkpoints_dir.mkdir(parents=True, exist_ok=True)
            # a probe of its own: two trainers starting at once must not remove each other's
            new_file(self.path, ".write_test.", "").unlink(missing_ok=True)
        except OSError as exc:
            raise RunDirError(f"cannot write the run directory {self.path}: {_reason(exc)}") from None

    def remove_new_run(self) -> bool:
        """Remove a new run that failed before it saved a checkpoint or a model: the files
        and folders the trainers write (:data:`RUN_FILES`; the folder was empty or absent
        when the run began), then the directory if nothing else is left, so that its name
        is free for the next try. A run that saved something is left whole. Returns whether
        the run was removed. Only the holder of the lock calls it."""
        if self.saved_anything():
            return False
        for name in RUN_FILES:
            path = self.path / name
            with contextlib.suppress(OSError):
                if path.is_dir() and not path.is_symlink():
                    shutil.rmtree(path)
                elif path.exists() or path.is_symlink():
                    path.unlink()
        self._remove_temp_files()
        self.remove_if_empty()
        return True

    def remove_if_empty(self) -> None:
        """Remove the directory (``checkpoints/`` and the lock included) if nothing else
        was written there: a new run that failed before it trained leaves no folder to
        block the next try. Only the holder of the lock calls it."""
        with contextlib.suppress(OSError):
            self.checkpoints_dir.rmdir()
            if [p.name for p in self.path.iterdir()] == [self.lock_path.name]:
                self.lock_path.unlink()
                self.path.rmdir()

    def next_resume_config_path(self) -> Path:
        """Where a resumed session records its config: the next ``config.resume_<k>.json``
        after every one there (a gap left by a removed file is not filled)."""
        taken = [k for k, _ in resumed_configs(self.path)]
        return self.path / resume_config_name(max(taken, default=0) + 1)

    def append_jsonl(self, path: Path, row: dict[str, Any]) -> None:
        """Add one line to a JSON-lines file (rewritten atomically). The lines there are
        kept byte for byte, whatever they hold: a line that is no UTF-8 failed the end of
        a training session, its checkpoints written but its row in ``sessions.jsonl``
        lost. A last line without its end gets one, so the row is a line of its own."""
        old = path.read_bytes() if path.exists() else b""
        if old and not old.endswith(b"\n"):
            old += b"\n"
        _write_bytes_atomic(path, old + (json.dumps(row) + "\n").encode("utf-8"))

    def drop_rows_after(self, path: Path, key: str, steps: int) -> None:
        """Remove the lines of the JSON-lines file ``path`` whose ``key`` is a step count
        beyond ``steps`` (rewritten atomically; left alone when none is). A resumed session
        goes on from ``steps``: rows that a session killed after it wrote them left past
        that point would stand beside the rows of the same steps it writes again. The other
        lines are kept byte for byte, those that are no UTF-8 or no JSON included."""
        if not path.exists():
            return
        lines = path.read_bytes().splitlines(keepends=True)
        kept = [line for line in lines if not _row_beyond(line, key, steps)]
        if len(kept) != len(lines):
            _write_bytes_atomic(path, b"".join(kept))

    def append_eval(self, row: dict[str, Any]) -> None:
        self.append_jsonl(self.eval_path, row)

    def append_session(
        self, started: int, ended: int, config_file: str, resumed_from: Path | None, interrupted: bool
    ) -> None:
        """One line of ``sessions.jsonl``: the steps a session trained, its config file,
        what it resumed, whether it was interrupted, and the version of the package that
        ran it (a run outlives an upgrade)."""
        from llama_env import __version__

        row = {
            "started_at_step": started,
            "ended_at_step": ended,
            "config": config_file,
            "resumed_from": str(resumed_from) if resumed_from is not None else None,
            "interrupted": interrupted,
            "llama_rl_version": __version__,
        }
        self.append_jsonl(self.sessions_path, row)

    @contextlib.contextmanager
    def lock(self) -> Iterator[None]:
        """Hold ``.lock`` while a trainer writes this run.

        Another live trainer's lock is an error; a lock whose process is gone (killed,
        crashed) on this machine is stale and taken over with a warning. Once it holds
        the lock, the trainer removes the temporary files that killed writes left."""
        me = json.dumps({"pid": os.getpid(), "host": socket.gethostname(), "since": time.time()})
        if self.lock_path.is_dir() and not self.lock_path.is_symlink():
            raise RunDirError(f"cannot lock the run directory {self.path}: {self.lock_path} is a folder; remove it")
        for _ in range(3):
            try:
                if self._create_lock(me):
                    break
            except OSError as exc:
                raise RunDirError(f"cannot lock the run directory {self.path}: {_reason(exc)}") from None
            self._break_stale_lock()
        else:  # pragma: no cover - the stale lock came back between attempts
            raise RunDirError(f"cannot lock the run directory {self.path}: another trainer took it")
        try:
            self._remove_temp_files()
            with self._summary_out_of_date():
                yield
        finally:
            with contextlib.suppress(OSError):
                if self.lock_path.read_bytes() == me.encode("utf-8"):  # bytes: any other content is not ours
                    self.lock_path.unlink()

    @contextlib.contextmanager
    def _summary_out_of_date(self) -> Iterator[None]:
        """``summary.json`` marked out of date while a session holds the lock: its figures
        are the last finished session's, and one killed (``kill -9``, a crash) never writes
        its own, so they read as the run's end while checkpoints went further. The mark
        (:func:`out_of_date_summary`) keeps the step count of ``model.zip``, which readers
        take from it; a session that ends without writing its summary (a failure it
        reports) puts the old one back when it saved nothing, and otherwise keeps the mark:
        its checkpoints went beyond the old figures. A summary that cannot be read is left
        alone."""
        path = self.summary_path
        saves = self._saves()
        try:
            old = path.read_bytes()
            data = json.loads(old)
        except (OSError, ValueError, RecursionError):
            data = None
        marked = None
        if isinstance(data, dict):
            marked = (json.dumps(out_of_date_summary(data), indent=2) + "\n").encode("utf-8")
            try:
                _write_bytes_atomic(path, marked)
            except OSError:  # the session's own writes will say what is wrong with the folder
                marked = None
        try:
            yield
        finally:
            if marked is not None:
                with contextlib.suppress(OSError):
                    if path.read_bytes() == marked and self._saves() == saves:
                        _write_bytes_atomic(path, old)

    def _saves(self) -> set[tuple[str, int]]:
        """The checkpoints and models here, each with the time it was last written: two
        differ when a session saved something between them."""
        found = set()
        for p in self._saved_paths():
            with contextlib.suppress(OSError):
                found.add((p.name, p.stat().st_mtime_ns))
        return found

    def _saved_paths(self) -> list[Path]:
        """The checkpoints here, of either backend and whole or not, then the models."""
        models = [p for p in (self.path / name for name in MODEL_NAMES) if p.exists()]
        return [p for _, p, _ in named_checkpoints(self.path)] + models

    def _read_lock(self) -> _Lock | None:
        """What ``.lock`` holds, and whether its trainer holds it still (:class:`_Lock`);
        ``None`` when there is no lock."""
        try:
            raw = self.lock_path.read_bytes()
            age = time.time() - self.lock_path.stat().st_mtime
        except FileNotFoundError:
            return None
        except OSError:
            raw, age = b"", _LOCK_BEING_WRITTEN_S
        try:
            held = json.loads(raw)
            pid, host = held["pid"], str(held["host"])
            if type(pid) is not int or not 0 < pid < 2**31:  # what a trainer writes; os.kill takes no other
                raise ValueError("not a process id")
        except (ValueError, KeyError, TypeError, RecursionError):
            if age < _LOCK_BEING_WRITTEN_S:
                return _Lock(raw, -1, socket.gethostname(), None, held=True, being_written=True)
            return _Lock(raw, -1, socket.gethostname(), None, held=False)  # unreadable and old: left behind
        here = host == socket.gethostname()
        alive = not here or (pid != os.getpid() and _pid_alive(pid))  # another machine's cannot be checked
        return _Lock(raw, pid, host, held.get("since"), held=alive)

    def _create_lock(self, content: str) -> bool:
        """Make ``.lock`` holding ``content``, whole from the moment it exists (a hard link
        to a file written first), so no other trainer ever reads it half written; False
        if a lock is there."""
        tmp = new_file(self.path, ".lock.", "")  # not .tmp: another trainer's clean-up leaves it alone
        try:
            tmp.write_text(content, encoding="utf-8")
            try:
                os.link(tmp, self.lock_path)
            except FileExistsError:
                return False
            except OSError:  # a file system without hard links: make it in place
                try:
                    fd = os.open(self.lock_path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o666)
                except FileExistsError:
                    return False
                with os.fdopen(fd, "w", encoding="utf-8") as fh:
                    fh.write(content)
            return True
        finally:
            tmp.unlink(missing_ok=True)

    def _break_stale_lock(self) -> None:
        """Take away a lock whose trainer is gone; a ``RunDirError`` when it is alive."""
        lock = self._read_lock()
        if lock is None:
            return  # released meanwhile: try again
        if lock.being_written:
            raise RunDirError(
                f"run directory {self.path} is in use by another trainer (its lock {self.lock_path} is being "
                "written); wait for it to finish, or train into another run"
            )
        pid, host, raw = lock.pid, lock.host, lock.raw
        if host != socket.gethostname():
            raise RunDirError(
                f"run directory {self.path} is locked by process {pid} on {host}; if no trainer runs "
                f"there any more, delete {self.lock_path} and try again"
            )
        if lock.held:
            # The time is only shown: a live process keeps its lock whatever its "since" holds.
            since, when = lock.since, "?"
            if isinstance(since, (int, float)) and not isinstance(since, bool):  # localtime(None) is now
                with contextlib.suppress(OverflowError, OSError, ValueError, TypeError):  # 1e300, nan
                    when = time.strftime("%Y-%m-%d %H:%M", time.localtime(since))
            raise RunDirError(
                f"run directory {self.path} is in use by another trainer (process {pid}, since {when}); "
                f"wait for it to finish, or train into another run (if no trainer runs any more, as after a "
                f"restart that gave its process id to another program, delete {self.lock_path})"
            )
        # Move the lock aside, then make sure it is the one judged stale: another trainer
        # may have broken it and taken a lock of its own since it was read.
        aside = self.path / f".lock.stale.{secrets.token_hex(6)}"
        try:
            os.rename(self.lock_path, aside)
        except FileNotFoundError:
            return  # another trainer took it away first: try again
        try:
            if aside.read_bytes() != raw:
                with contextlib.suppress(OSError):
                    os.link(aside, self.lock_path)  # give it back
                raise RunDirError(
                    f"run directory {self.path} is in use by another trainer (it took over the lock just now); "
                    "wait for it to finish, or train into another run"
                )
        finally:
            aside.unlink(missing_ok=True)
        warnings.warn(
            f"run directory {self.path}: taking over a stale lock left by process {pid}, which no longer runs",
            RuntimeWarning,
            stacklevel=4,
        )

    def _remove_temp_files(self) -> None:
        """Remove what writes killed half way left (only the lock's holder writes here, so
        none of them is in progress)."""
        for d in (self.path, self.checkpoints_dir):
            for p in d.glob(TEMP_GLOB):
                with contextlib.suppress(OSError):
                    if p.is_dir() and not p.is_symlink():
                        shutil.rmtree(p)
                    else:
                        p.unlink()


@dataclasses.dataclass(frozen=True)
class _Lock:
    """What a run's ``.lock`` holds (:meth:`RunDir._read_lock`): the bytes read, the
    trainer's process and machine (-1 and this machine for a lock that cannot be read),
    the time it took the lock, and whether the lock is held: its process runs, it is
    another machine's (whose processes cannot be checked) or it is still being written.
    A lock not held is stale, and the next trainer takes it over."""

    raw: bytes
    pid: int
    host: str
    since: Any
    held: bool
    being_written: bool = False

    @property
    def holder(self) -> str:
        return f"process {self.pid} on {self.host}"


def _row_beyond(line: bytes, key: str, steps: int) -> bool:
    """Whether a JSON line's ``key`` is a step count beyond ``steps`` (a line that is no
    such row, or no UTF-8, is kept: it is not ours to judge)."""
    try:
        row = json.loads(line.decode("utf-8"))
    except (ValueError, RecursionError):  # UnicodeDecodeError is a ValueError
        return False
    value = row.get(key) if isinstance(row, dict) else None
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value > steps


def _write_bytes_atomic(path: Path, data: bytes) -> None:
    """``data`` to ``path``, whole or not at all."""

    def write(tmp: Path) -> None:
        tmp.write_bytes(data)

    atomic_write(path, write)


def _reason(exc: OSError) -> str:
    return f"{exc.strerror} ({type(exc).__name__})" if exc.strerror else f"{type(exc).__name__}: {exc}"
