"""The first line every benchmark prints: the machine it ran on and the command that
reproduces it, so that figures from two machines are not compared unawares.

    machine: AMD EPYC 7B13, 2 usable cores of 2, Python 3.11.7 on Linux; command: python benchmarks/eval_speed.py

The usable cores are the ones this process may run on (``train.evaluation.runner.usable_cores``:
its CPU affinity, what the evaluation's workers and a local Ray count), not the machine's.
The benchmarks' own check of the agents their options name (:func:`agents_or_exit`) is
here too, beside them: ``llama-rl`` checks its agents its own way.
"""

from __future__ import annotations

import argparse
import os
import platform
import shlex
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TypeVar

from llama_env._install import MissingExtra
from train.evaluation.runner import usable_cores

T = TypeVar("T")

ROOT = Path(__file__).resolve().parents[1]


def cpu_model() -> str:
    """The processor's name, as the system gives it (``/proc/cpuinfo`` on Linux, ``sysctl``
    on macOS), else Python's word for the architecture."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as fh:
            for line in fh:
                key, _, value = line.partition(":")
                if key.strip() == "model name" and value.strip():
                    return " ".join(value.split())
    except OSError:
        pass
    if sys.platform == "darwin":
        try:
            done = subprocess.run(
                ["sysctl", "-n", "machdep.cpu.brand_string"], capture_output=True, text=True, timeout=5, check=False
            )
            if done.stdout.strip():
                return done.stdout.strip()
        except (OSError, subprocess.SubprocessError):
            pass
    return platform.processor() or platform.machine() or "an unknown processor"


def machine_line(script: str, argv: Sequence[str] | None = None) -> str:
    """``machine: <CPU>, <n> usable cores of <m>, Python <v> on <system>; command: python
    <script> <argv>`` (``argv``: the script's arguments, default ``sys.argv[1:]``). A script
    that pins itself to one core prints it once pinned: "1 usable core of <m>"."""
    path = Path(script).resolve()
    shown = path.relative_to(ROOT).as_posix() if path.is_relative_to(ROOT) else str(path)
    command = shlex.join(["python", shown, *(sys.argv[1:] if argv is None else argv)])
    cores = usable_cores()
    return (
        f"machine: {cpu_model()}, {cores} usable core{'s' if cores != 1 else ''} of {os.cpu_count() or '?'}, "
        f"Python {platform.python_version()} on {platform.system() or sys.platform}; command: {command}"
    )


def pin_to_one_core() -> None:
    """Run this process on one core, the lowest of those it may use, where the system lets
    a process choose (Linux): a script that measures one core, then prints
    :func:`machine_line` saying so. Elsewhere it runs where the system puts it."""
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})


def print_machine(script: str, argv: Sequence[str] | None = None) -> None:
    """Print :func:`machine_line` (call it once the options are checked, before measuring)."""
    print(machine_line(script, argv), flush=True)


def agents_or_exit(parser: argparse.ArgumentParser, option: str, build: Callable[[], T]) -> T:
    """``build()``, which parses and builds the agents of ``option``, before anything is
    measured. A bad spec or a model that cannot be read is a usage error (exit 2); an agent
    that needs an extra that is not installed (``ppo:path=m.zip`` reads its model with
    torch: a :class:`~llama_env._install.MissingExtra`) is one line naming the extra, exit
    1, as ``llama-rl`` says it. Both read ``<prog>: error: <option>: ...``."""
    try:
        return build()
    except (ValueError, OSError) as exc:
        parser.error(f"{option}: {exc}")
    except MissingExtra as exc:
        sys.exit(f"{parser.prog}: error: {option}: {exc}")
