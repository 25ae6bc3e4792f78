"""``llama-rl train``: the command-line face of :func:`train.ppo.train`.

Every field of :class:`train.config.TrainConfig` is a flag (``--n-envs 256``), its help
text the field's doc. Precedence: the dataclass defaults, then ``--preset``, then the
flags given. ``train.cli`` calls :func:`add_parser`; :func:`main` runs it standalone.

    llama-rl train --preset ship --seed 0          # the shipped agent (docs/training.md)
    llama-rl train --players 2 --opponents heuristic:1 --total-timesteps 2000000
    llama-rl train --resume runs/ship               # continue a run, its step count too
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import MISSING, fields
from typing import Any

from train.config import PRESETS, TrainConfig

__all__ = ["add_parser", "config_from_args", "run", "main"]


def _add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--preset",
        choices=sorted(PRESETS),
        default=None,
        help="start from a named preset (flags given override it): " + ", ".join(sorted(PRESETS)),
    )
    for f in fields(TrainConfig):
        flag = "--" + f.name.replace("_", "-")
        default = f.default if f.default is not MISSING else None
        helptext = f"{f.metadata.get('help', '')} (default: {default!r})"
        if str(f.type) == "bool":
            p.add_argument(flag, dest=f.name, action=argparse.BooleanOptionalAction, default=None, help=helptext)
        else:
            typ = {"int": int, "float": float, "str": str}[str(f.type)]
            p.add_argument(flag, dest=f.name, type=typ, default=None, metavar=f.name.upper(), help=helptext)


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add the ``train`` subcommand to ``llama-rl``'s subparsers."""
    p = subparsers.add_parser(
        "train",
        help="train a MaskablePPO agent with self-play (see docs/training.md)",
        description=(
            "Train a MaskablePPO agent on the batched L.L.A.M.A. vec env against a mix of "
            "baselines, itself and past checkpoints. Writes runs/<run>/ with config.json, "
            "TensorBoard logs, checkpoints and model.zip; Ctrl-C saves a checkpoint."
        ),
        epilog=(
            "examples:\n"
            "  llama-rl train --preset ship --seed 0\n"
            "  llama-rl train --players 2-6 --opponents heuristic:0.6,self:0.2,past:0.2 --total-timesteps 5000000\n"
            "  llama-rl train --resume runs/llama__maskableppo__0__1700000000"
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _add_arguments(p)
    p.add_argument(
        "--final-eval-games",
        type=int,
        default=1000,
        metavar="N",
        help="after training, play the new agent and the shipped one against random and heuristic "
        "at 2 and 4 players, N games each, and print the table (0 = skip; default: 1000)",
    )
    p.set_defaults(func=run)
    return p


def config_from_args(args: argparse.Namespace) -> TrainConfig:
    """Defaults, then the preset, then the flags given; validated."""
    values: dict[str, Any] = {}
    if getattr(args, "preset", None):
        values.update(PRESETS[args.preset])
    for f in fields(TrainConfig):
        v = getattr(args, f.name, None)
        if v is not None:
            values[f.name] = v
    return TrainConfig(**values).validate()


def run(args: argparse.Namespace) -> int:
    """Handler of ``llama-rl train``: train, print where the run went, then (unless
    ``--final-eval-games 0``) the new agent's win shares next to the shipped agent's."""
    try:
        config = config_from_args(args)
    except ValueError as exc:
        _usage_error(exc)
    games = getattr(args, "final_eval_games", 0) or 0
    if games < 0:
        _usage_error(ValueError(f"--final-eval-games must be >= 0, got {games}"))
    from train.ppo import train

    try:
        result = train(config)
    except ValueError as exc:
        _usage_error(exc)
    print(
        f"run {result.run_dir}: {result.num_timesteps} steps, model {result.model_path}; "
        f"{result.steps_this_session} steps in {result.wall_s:.1f} s = {result.steps_per_s:.0f} steps/s "
        f"(env {result.env_s:.1f} s, learning {result.learn_s:.1f} s)"
        + (" [interrupted: checkpoint saved]" if result.interrupted else "")
    )
    if result.interrupted:
        return 130
    if games:
        print_final_comparison(result.model_path, games, seed=config.seed)
    return 0


def print_final_comparison(model_path: Any, games: int, seed: int = 0) -> None:
    """The main job's last word: the new agent next to the shipped one."""
    import agents
    from train.report import compare_agents, format_comparison, shipped_model

    contenders: dict[str, object] = {"new agent": agents.make("ppo", path=str(model_path))}
    shipped = shipped_model()
    if shipped is not None:
        contenders["shipped ppo"] = agents.make("ppo", path=str(shipped))
    print(f"\nEvaluating against the baselines ({games} games per row)...", flush=True)
    print(format_comparison(compare_agents(contenders, games=games, seed=seed)))


def _usage_error(exc: Exception) -> None:
    try:
        from train.cli import CommandError
    except ImportError:  # pragma: no cover - standalone use
        raise SystemExit(f"llama-rl train: error: {exc}") from None
    raise CommandError(str(exc)) from None


def main(argv: list[str] | None = None) -> int:
    """Run ``llama-rl train`` standalone."""
    parser = argparse.ArgumentParser(prog="llama-rl train")
    _add_arguments(parser)
    args = parser.parse_args(argv)
    return run(args)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
