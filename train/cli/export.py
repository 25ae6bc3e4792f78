"""``llama-rl export``: write a PPO model as a .npz file that plays without torch.

MODEL is what `llama-rl train` made: a MaskablePPO .zip (the sb3 backend's model.zip), a
run directory, or an RLlib checkpoint. The .npz holds the policy network alone (the
weights and the activation), which is all `ppo:path=FILE` needs to play, with numpy
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

from agents.ppo import MODEL_NAMES, RLLIB_MODULE_STATE, Actor, load_actor, save_actor
from train.cli.common import CommandError, SubParsers, add_command, missing_dependency, npz_out, replaced

__all__ = ["add_parser", "run_export"]


def run_export(model: str | Path, out: str | Path) -> Actor:
    """Write ``model``'s policy to ``out`` (a ``.npz`` file in a folder that exists) and
    return it, read back from ``out``; bad input is a :class:`CommandError`."""
    if not Path(model).exists():
        raise CommandError(f"MODEL {str(model)!r}: no such file or directory")
    _check_run_has_a_model(Path(model), out)
    with missing_dependency("llama-rl export of a .zip model"):
        try:
            actor = load_actor(model)
        except ValueError as exc:
            raise CommandError(str(exc)) from None
    path = npz_out(out)
    existed = path.exists()
    save_actor(actor, path)
    written = load_actor(path)  # what ppo:path= will read: the same weights, to the bit
    same = written.activation == actor.activation and all(
        np.array_equal(w, w2) and np.array_equal(b, b2)
        for (w, b), (w2, b2) in zip(actor.layers, written.layers, strict=True)
    )
    if not same:  # pragma: no cover - save_actor and load_actor disagree
        raise CommandError(f"{path} does not read back as the model it was written from")
    sizes = "-".join(str(b.size) for _, b in written.layers[:-1])
    tables = "" if written.table_sizes is None else f", trained at {'/'.join(map(str, written.table_sizes))} players"
    print(
        f"wrote {path}: a {sizes} {written.activation} policy reading observation version "
        f"{written.obs_version}{tables}; play it with ppo:path={path}",
        flush=True,
    )
    replaced(path, existed)
    return written


def _check_run_has_a_model(path: Path, out: str | Path) -> None:
    """A :class:`CommandError` for a run directory without its model yet (still training,
    or stopped before the end, when the model is written), naming its newest checkpoint
    that can be exported instead."""
    import shlex

    from train.training.run_dir import RunDir

    run = RunDir(path)
    if not path.is_dir() or any((path / name).is_file() for name in MODEL_NAMES) or not run.is_run():
        return
    if (path / RLLIB_MODULE_STATE).is_file():  # an RLlib checkpoint itself
        return
    found = run.whole_checkpoints()
    whole = "model yet (it is still training, or it stopped before its end, when the model is written)"
    if not found:
        raise CommandError(f"MODEL {str(path)!r}: the run has no {whole}, and no checkpoint to export either")
    _, newest = found[-1]  # (fewest steps first)
    raise CommandError(
        f"MODEL {str(path)!r}: the run has no {whole}; export its newest checkpoint instead: "
        f"llama-rl export {shlex.quote(str(newest))} --out {shlex.quote(str(out))}"
    )


def _run(args: argparse.Namespace) -> int:
    run_export(args.model, args.out)
    return 0


def add_parser(sub: SubParsers) -> argparse.ArgumentParser:
    p = add_command(sub, "export", _run, __doc__)
    p.add_argument("model", metavar="MODEL", help="a model file (.zip or .npz), a run directory or an RLlib checkpoint")
    p.add_argument("--out", required=True, metavar="FILE", help="the .npz file to write")
    return p
