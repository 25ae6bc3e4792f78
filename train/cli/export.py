"""``llama-rl export``: write a PPO model as a .npz file that plays without torch.

MODEL is what `llama-rl train` made: a MaskablePPO .zip (the sb3 backend's model.zip), a
run directory, or an RLlib checkpoint. The .npz holds the policy network alone (the
weights and the activation, with the table sizes and rule options MODEL was trained at,
where its file or run says), which is all `ppo:path=FILE` needs to play, with numpy
alone: no torch, no Ray. It plays the same moves as MODEL. It cannot resume training:
the value network and the optimiser stay behind in MODEL.

Reading a .zip needs the 'train' extra (PyTorch); the .npz does not.

examples:
  llama-rl export runs/my-run --out my_agent.npz
  llama-rl eval --agents ppo:path=my_agent.npz,heuristic,heuristic,heuristic --games 2000
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from agents.base import agent_path
from agents.ppo import Actor, load_actor, no_model_yet, overtaken_model, save_actor
from llama_env.engine import DEFAULT_RULES
from train.cli.common import (
    CommandError,
    SubParsers,
    add_command,
    file_name,
    missing_dependency,
    npz_out,
    path_named,
    replaced,
)
from train.fit import agent_spec, out_file, save_or_rescue

__all__ = ["add_parser", "run_export"]


def run_export(model: str | Path, out: str | Path) -> Actor:
    """Write ``model``'s policy to ``out`` (a ``.npz`` file in a folder that exists) and
    return it, read back from ``out``; bad input is a :class:`CommandError`."""
    try:
        source = agent_path(model, "MODEL")  # a leading ~ as ppo:path= reads it
    except ValueError as exc:  # an empty name: as a path, the current folder
        raise CommandError(str(exc)) from None
    if not source.exists():
        raise CommandError(f"MODEL {str(model)!r}: no such file or directory")
    _check_run_has_a_model(source, out)
    npz_out(out)
    try:
        path = out_file(out, "actor", "--out ")  # before the model is read: torch takes seconds to start
        play = agent_spec("ppo", path=path)
    except ValueError as exc:
        raise CommandError(str(exc)) from None
    existed = path.exists()
    with missing_dependency("llama-rl export of a .zip model"):
        try:
            actor = load_actor(source)
        except ValueError as exc:
            raise CommandError(str(exc)) from None
    save_or_rescue(lambda p: save_actor(actor, p), path, "exported policy's weights")
    written = load_actor(path)  # what ppo:path= will read: the same weights, to the bit
    same = written.activation == actor.activation and all(
        np.array_equal(w, w2) and np.array_equal(b, b2)
        for (w, b), (w2, b2) in zip(actor.layers, written.layers, strict=True)
    )
    if not same:  # pragma: no cover - save_actor and load_actor disagree
        raise CommandError(f"{path} does not read back as the model it was written from")
    sizes = "-".join(str(b.size) for _, b in written.layers[:-1])
    print(
        f"wrote {path}: a {sizes} {written.activation} policy reading observation version "
        f"{written.obs_version}{_trained_at(written)}; play it with {play}",
        flush=True,
    )
    replaced(path, existed)
    return written


def _trained_at(actor: Actor) -> str:
    """``", trained at 2 players, end_score 20, hand_size 4"``: the table sizes and the
    rule options other than the standard ones that ``actor`` says it was trained at
    (``""`` where it says nothing of them)."""
    said = [] if actor.table_sizes is None else [f"{'/'.join(map(str, actor.table_sizes))} players"]
    defaults = DEFAULT_RULES.options()
    for option, values in (actor.trained_rules or {}).items():
        if values != (defaults[option],):
            said.append(f"{option} {'/'.join(map(str, values))}")
    return f", trained at {', '.join(said)}" if said else ""


def _check_run_has_a_model(path: Path, out: str | Path) -> None:
    """A :class:`CommandError` for a run directory without its model yet (still training,
    or stopped before the end, when the model is written), naming its newest checkpoint
    that can be exported instead (:func:`agents.ppo.no_model_yet`), or whose model a later
    checkpoint has overtaken, naming both (:func:`agents.ppo.overtaken_model`);
    ``ppo:path=`` says both too."""
    import shlex

    def command(file: Path) -> str:
        return f"llama-rl export {shlex.quote(str(file))} --out {shlex.quote(str(out))}"

    unfinished = no_model_yet(path, "export", command)
    if unfinished is not None:
        raise CommandError(f"MODEL {str(path)!r}: {unfinished}")
    if path.is_dir() and (stale := overtaken_model(path, command)) is not None:
        raise CommandError(f"MODEL {str(path)!r}: {stale}")


def _run(args: argparse.Namespace) -> int:
    run_export(args.model, args.out)
    return 0


def add_parser(sub: SubParsers) -> argparse.ArgumentParser:
    p = add_command(sub, "export", _run, __doc__)
    takes = "a model file (.zip or .npz), a run directory or an RLlib checkpoint"
    p.add_argument("model", metavar="MODEL", type=path_named(takes), help=takes)
    p.add_argument(
        "--out",
        required=True,
        metavar="FILE",
        type=file_name,
        help="the .npz file to write (not a networks file that llama-rl fit-search wrote, nor a file in the "
        "package's agents/models/)",
    )
    return p
