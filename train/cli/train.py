"""``llama-rl train``: the command-line face of :func:`train.training.train`.

Every config key is a flag (``--n-envs 256``): the fields of
:class:`train.training.TrainConfig` and each backend's own options
(:func:`train.training.config.flag_fields`), built from the field's type and doc:
``bool`` fields get ``--x/--no-x``, numbers their type,
and the structured fields (``--players 2-6``, ``--opponents heuristic:0.6,self:0.4``,
``--net-arch 128,128``) the parser of :data:`train.training.config.PARSERS`, so a
string is parsed once, here. Precedence: the dataclass defaults, then ``--preset``, then
the flags given.

    llama-rl train --preset ship --seed 0          # the shipped agent (docs/training.md in the source)
    llama-rl train --players 2 --opponents heuristic:1 --total-timesteps 2000000
    llama-rl train --resume runs/ship               # continue a run, its step count too
    llama-rl train --backend rllib --num-env-runners 2   # on Ray RLlib (the rllib extra)
"""

from __future__ import annotations

import argparse
import shlex
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from llama_env.engine import Rules, read_int, read_number, table_sizes_allowing
from train.cli.common import (
    EXIT_INTERRUPTED,
    CommandError,
    HelpFormatter,
    SubParsers,
    add_games,
    folder_name,
    game_errors,
    missing_dependency,
    path_named,
)
from train.training.config import (
    PARSERS,
    TrainConfig,
    comparison_sizes,
    config_from_dict,
    flag_fields,
    option_owner,
)
from train.training.presets import PRESETS, preset_values

if TYPE_CHECKING:
    from train.training import TrainResult

__all__ = ["add_parser", "add_arguments", "config_from_args", "comparison_sizes", "flag_type", "print_final_comparison"]


PATH_TYPES: dict[str, Callable[[str], str]] = {
    "resume": path_named("a checkpoint .zip or run directory"),
    "run_dir": folder_name,
}
"""The config keys that name a path, and their argparse types: an empty value is refused
as the command line is read (``--resume "$RUN"`` with RUN unset trained a new run from
scratch, ``--run-dir ''`` wrote the run into the current folder)."""


def flag_type(name: str, typ: Any = str) -> Callable[[str], Any]:
    """The argparse type of the config key ``name``: its parser (``PARSERS``, else the
    field's type ``typ``, an ``int`` or ``float`` read in the ASCII digits by
    :func:`~llama_env.engine.read_int` or :func:`~llama_env.engine.read_number`; a path's,
    :data:`PATH_TYPES`), its errors usage errors that name the flag (``argument
    --players: config key 'players' must be ints 2..6 ...``). A script that takes a config
    key as a flag of its own parses it so."""
    what = f"config key {name!r}"
    readers: dict[Any, Callable[[str], Any]] = {
        int: lambda text: read_int(text, what),  # the digits 0-9: int also reads ١٢ and 1_000
        float: lambda text: read_number(text, what),
    }
    parse: Callable[[str], Any] = PARSERS.get(name) or PATH_TYPES.get(name) or readers.get(typ, typ)

    def convert(text: str) -> Any:
        try:
            return parse(text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    convert.__name__ = name
    return convert


def _show_default(value: Any) -> str:
    if isinstance(value, tuple):
        return ",".join(map(str, value))
    if isinstance(value, dict):
        return ",".join(f"{k}:{v:g}" for k, v in value.items())
    return repr(value)


def _says_its_default(help_text: str, default: Any) -> bool:
    """Whether a flag's help needs no ``(default: ...)`` after it: it says its default
    itself (``--run-name``'s name made from the run), or the default is nothing to show
    (``''``: no run resumed; ``()``), where ``(default: '')`` read as a second default."""
    return "(default" in help_text or default in ("", ())


def add_arguments(p: argparse.ArgumentParser) -> None:
    """One flag per config key (core fields, then each backend's options), plus ``--preset``."""
    p.add_argument(
        "--preset",
        choices=sorted(PRESETS),
        default=None,
        help="start from a named preset (flags given override it): " + ", ".join(sorted(PRESETS)),
    )
    for f in flag_fields():
        flag = "--" + f.name.replace("_", "-")
        helptext = f.help if _says_its_default(f.help, f.default) else f"{f.help} (default: {_show_default(f.default)})"
        if f.type is bool:
            p.add_argument(flag, dest=f.name, action=argparse.BooleanOptionalAction, default=None, help=helptext)
        else:
            metavar = f.metavar or f.name.upper()
            p.add_argument(
                flag, dest=f.name, type=flag_type(f.name, f.type), default=None, metavar=metavar, help=helptext
            )


def config_from_args(args: argparse.Namespace) -> TrainConfig:
    """Defaults, then the preset, then the flags given; validated. The preset's values
    are :func:`~train.training.presets.preset_values`' (what Python gets too): its values
    for one backend's own options apply on that backend only, and its evaluation is
    fitted to the table sizes given.

    With ``--resume`` (given, or from a second-phase preset) the run's own recorded
    config takes the place of the defaults: only the second-phase preset's values and the
    flags given change it (see :func:`train.training.resume.resume_config`). Any other
    preset describes a new run: with the ``--resume`` of a run it is refused."""
    given = {f.name: getattr(args, f.name) for f in flag_fields() if getattr(args, f.name, None) is not None}
    preset = getattr(args, "preset", None)
    values = preset_values(preset, given) if preset else dict(given)
    if values.get("resume"):
        from train.training.resume import resume_config

        config = resume_config(values["resume"], values)
    else:
        config = config_from_dict(values)
    for name in sorted(given):  # a config drops another backend's option at its default: a flag is not dropped
        owner = option_owner(name)
        if owner is not None and owner != config.backend:
            raise ValueError(
                f"--{name.replace('_', '-')} is an option of backend {owner!r}; this run uses {config.backend!r}"
            )
    return config


def _run(args: argparse.Namespace) -> int:
    """Train, print where the run went, then (unless ``--final-eval-games 0``) the new
    agent's win shares next to the shipped agent's."""
    try:
        config = config_from_args(args)
    except ValueError as exc:
        raise CommandError(str(exc)) from None
    except OSError as exc:  # the run to resume cannot be read
        raise CommandError(str(exc), code=1) from None
    games = args.final_eval_games
    backend = config.backend_spec()
    command = "llama-rl train" + ("" if backend.name == "sb3" else f" --backend {backend.name}")
    with missing_dependency(command, extra=backend.extra):
        from train.training import train
        from train.training.result import TrainingStopped
        from train.training.run_dir import RunDirError

        try:
            with game_errors("training stopped: "):  # an opponent, or the evaluation's agent, failed in a game
                result = train(config)  # SIGTERM stops it as Ctrl-C does (main)
        except RunDirError as exc:
            raise CommandError(str(exc), code=1) from None
        except TrainingStopped as exc:  # an env worker killed: what was learned is saved
            saved = exc.result
            more = f": {stopped_note(saved, config)}" if saved else ""
            raise CommandError(f"training stopped: {exc}{more}", code=1) from None
    split = f" (env {result.env_s:.1f} s, learning {result.learn_s:.1f} s)" if result.env_s else ""
    aside = f", evaluations and checkpoints {result.eval_save_s:.1f} s more" if result.eval_save_s >= 0.05 else ""
    print(
        f"run {result.run_dir}: {result.num_timesteps} steps, model {result.model_path}; "
        f"{result.steps_this_session} steps in {result.wall_s:.1f} s = {result.steps_per_s:.0f} steps/s{split}{aside}"
        + (" [interrupted: checkpoint saved]" if result.interrupted else "")
        + (f" [stopped early: the evaluation beat {config.stop_win_share:g}]" if result.stopped_early else "")
    )
    if result.interrupted:
        print(stopped_note(result, config, sep=": ", then_next=True))
        return EXIT_INTERRUPTED
    if result.stopped_early:
        from train.training.evaluation import win_share_reading  # loaded with the trainer

        last = result.evals[-1]
        shares = ", ".join(
            f"{n}p {win_share_reading(last, n)}, on fresh deals {win_share_reading(last, n, 'confirm_')}"
            for n in config.eval_players
        )
        print(
            f"the evaluation that stopped it, {config.eval_games} games against {config.eval_opponent} "
            f"and {config.eval_games} more to confirm: {shares}"
        )
    if games is None:  # a run that stopped on its target has measured itself
        games = 0 if result.stopped_early else 1000
    if games:
        sizes = comparison_sizes(config.players)
        print_final_comparison(
            str(result.model_path), games, seed=config.seed, rules=config.rules_at(sizes[0]), players=sizes
        )
    print(f"\nnext:\n{next_commands_of(result, config)}")
    return 0


def stopped_note(result: TrainResult, config: TrainConfig, sep: str = " ", then_next: bool = False) -> str:
    """What to do with a run stopped and saved: continue it (``--resume`` of its
    directory, pasted into a shell, after "continue it with" and ``sep``), or, where it
    had learned its whole budget (stopped in the evaluation at the end), nothing: it is
    done, and ``then_next`` adds the commands that come next (:func:`next_commands_of`)."""
    if result.num_timesteps < config.total_timesteps:
        return f"continue it with{sep}llama-rl train --resume {shlex.quote(str(result.run_dir))}"
    done = f"its budget of {config.total_timesteps} steps is learned and the model saved"
    return f"{done}\n\nnext:\n{next_commands_of(result, config)}" if then_next else done


def next_commands_of(result: TrainResult, config: TrainConfig) -> str:
    """:func:`next_commands` of a finished run."""
    return next_commands(
        str(result.run_dir), config.players, result.num_timesteps, rule_flags(config), result.stopped_early
    )


def rule_flags(config: TrainConfig) -> str:
    """The flags of the rule options a run changed (``" --end-score 30"``), so that the
    commands that measure and play it use its rules; empty for the standard rules."""
    from llama_env.engine import DEFAULT_RULES

    standard = DEFAULT_RULES.options()
    changed = {name: value for name, value in config.rule_options().items() if value != standard[name]}
    return "".join(f" --{name.replace('_', '-')} {value}" for name, value in changed.items())


def next_commands(run: str, players: Sequence[int], steps: int, rules: str = "", stopped_early: bool = False) -> str:
    """What to do with a finished run: measure it, play it, train it on, at table sizes
    it trained at. It is measured heads-up if it trained heads-up, else at its smallest
    size; it is played at 3 players if it trained there, else at its smallest size with
    opponents to spare (a specialist at its one size). ``rules``: the run's rule flags
    (:func:`rule_flags`). A run that stopped at its ``stop_win_share`` would stop again at
    its next evaluation when resumed: training it further turns the stop off."""
    sizes = sorted(set(players))
    n_eval = sizes[0]
    n_play = 3 if 3 in sizes else next((n for n in sizes if n > 2), sizes[0])
    agents = shlex.quote(",".join([f"ppo:path={run}", *["heuristic"] * (n_eval - 1)]))  # pasted into a shell
    table = "heads-up" if n_eval == 2 else f"{n_eval} players"
    return (
        f"  llama-rl eval --agents {agents} --games 2000 --duplicate{rules}   # {table}, deals replayed\n"
        f"  llama-rl play --players {n_play} --opponents {shlex.quote(f'ppo:path={run}')}{rules}   # play against it\n"
        f"  llama-rl train --resume {shlex.quote(run)} --total-timesteps {2 * steps}"
        + (" --stop-win-share 0" if stopped_early else "")
        + "   # train it further"
    )


def print_final_comparison(
    model_path: str, games: int, seed: int = 0, rules: Rules | None = None, players: Sequence[int] = (2, 4)
) -> None:
    """The main job's last word: the new agent next to the shipped one at the table sizes
    ``players`` (:func:`comparison_sizes` picks them from a run's), on the run's ``rules``
    (their table size is each row's)."""
    from llama_env.agent import AgentLike, make
    from train.evaluation.report import compare_agents, format_comparison, has_shipped_models

    contenders: dict[str, AgentLike] = {"new agent": make("ppo", path=model_path)}
    if has_shipped_models():
        contenders["shipped ppo"] = make("ppo")
    allowed = table_sizes_allowing(**rules.options()) if rules is not None else players
    sizes = [n for n in players if n in allowed]
    if not sizes:
        shown = " or ".join(map(str, players))
        print(f"\nno comparison: the run's rules ({rules.brief() if rules else ''}) do not allow {shown} players")
        return
    print(f"\nEvaluating against the baselines ({games} games per row)...", flush=True)
    print(format_comparison(compare_agents(contenders, players=sizes, games=games, seed=seed, rules=rules)))


def add_parser(sub: SubParsers) -> argparse.ArgumentParser:
    """Add the ``train`` subcommand to ``llama-rl``'s subparsers."""
    from train.training.backend import backends

    listed = "; ".join(f"{b.name}: {b.summary}" for b in backends().values())
    p: argparse.ArgumentParser = sub.add_parser(
        "train",
        help="train a PPO agent with self-play",
        description=(
            "Train a PPO agent against a mix of baselines, itself and past checkpoints, on a "
            f"backend ({listed}). Writes runs/<run>/ with config.json, checkpoints, eval.jsonl "
            "and the model; Ctrl-C saves a checkpoint. Needs the backend's extra "
            "(from a checkout: pip install -e '.[train]', or '.[rllib]'; without it the command prints the line "
            "that installs it here)."
        ),
        epilog=(
            "examples:\n"
            "  llama-rl train --preset ship --seed 0\n"
            "  llama-rl train --players 2-6 --opponents heuristic:0.6,self:0.2,past:0.2 --total-timesteps 5000000\n"
            "  llama-rl train --resume runs/llama__maskableppo__0__1700000000\n"
            "  llama-rl train --backend rllib --players 2 --opponents heuristic --total-timesteps 3000000\n"
            "  llama-rl train --backend rllib --address 10.0.0.1:6379 --num-env-runners 32\n"
            "\n"
            "The presets, resuming, RLlib on a cluster and the shipped models' recipes: the training\n"
            "guide (docs/training.md in the source)."
        ),
        formatter_class=HelpFormatter,
    )
    add_arguments(p)
    add_games(
        p,
        "--final-eval-games",  # checked before training, not after it
        None,
        "after training, play the new agent and the shipped one against random and heuristic "
        "at 2 and 4 players (or, where the run skipped them, at sizes it trained at, two at most), N games each, "
        "and print the table (0 = skip; default: 1000, or 0 for a run "
        "that stopped early on --stop-win-share, whose last evaluation is its measurement)",
        low=0,
    )
    p.set_defaults(func=_run, command_parser=p)
    return p
