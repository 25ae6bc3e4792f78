"""Named training presets: each is a set of config values (``llama-rl train --preset
NAME``) that overrides :class:`train.training.config.TrainConfig`'s defaults; flags given
on the command line override the preset. :func:`preset_values` gives what the command
line runs, for Python too: ``config_from_dict(preset_values("beat-heuristic",
{"players": (2, 3, 4, 5, 6)}))``. A preset that resumes a run (``ship-finetune``, the
``-more`` ones) gives the values that go over that run's recorded config:
``resume_config(values["resume"], values)`` builds what the command line resumes
(``config_from_dict`` would put them over the defaults: ``specialist-4p-more`` would get
the default network, not the run's).

Every shipped model is made by a preset here (docs/training.md, "Reproduce every
shipped agent").
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from llama_env.agent import and_list
from train.training.config import TrainConfig, field_defaults, option_owner, parse_players

__all__ = ["PRESETS", "preset_values"]

PRESETS: dict[str, dict[str, Any]] = {
    "ship": {
        # the shipped general model (agents/models/ppo_llama.zip, exported to ppo_llama.npz to
        # play without torch); see docs/training.md
        "players": (2, 2, 3, 4, 4, 5, 6),
        "opponents": {"heuristic": 0.6, "greedy": 0.05, "cautious": 0.05, "random": 0.05, "self": 0.15, "past": 0.1},
        "total_timesteps": 20_000_000,
        "n_envs": 256,
        "n_steps": 32,
        "batch_size": 2048,
        "n_epochs": 8,
        "learning_rate": 1e-3,
        "net_arch": (128, 128),
        "eval_every": 2_000_000,
        "eval_games": 300,
        "checkpoint_every": 1_000_000,
        "past_every": 1_000_000,
        "run_name": "ship",
    },
    "smoke": {
        # a few thousand steps end to end, for tests
        "total_timesteps": 2048,
        "n_envs": 16,
        "n_steps": 32,
        "batch_size": 256,
        "n_epochs": 1,
        "net_arch": (32, 32),
        "eval_every": 1024,
        "eval_games": 16,
        "checkpoint_every": 1024,
        "past_every": 1024,
        "progress_bar": False,
        "torch_threads": 1,
    },
}
"""Every preset by name, with the config values it sets (``llama-rl train --preset NAME``):
``beat-heuristic``, the quickest win over the heuristic, and each shipped model's recipe."""
# The quickest agent that beats the heuristic heads-up (docs/training.md, "Beat the
# heuristic heads-up"): one table size, thousands of games in the batched engine, a
# small network and a fast schedule, stopped by the periodic evaluation as soon as its
# interval lies above 0.5 and a second set of fresh deals agrees (the cap is a bound, not
# the plan).
PRESETS["beat-heuristic"] = {
    "run_name": "beat-heuristic",
    "players": (2,),
    "opponents": {"heuristic": 1.0},
    "total_timesteps": 1_000_000,
    "n_envs": 1024,
    "n_steps": 16,
    "batch_size": 4096,
    "n_epochs": 4,
    "learning_rate": 3e-3,
    "gamma": 1.0,
    "gae_lambda": 0.8,
    "net_arch": (64, 64),
    "eval_every": 50_000,
    "eval_games": 1000,
    "eval_players": (2,),
    "stop_win_share": 0.5,
    "checkpoint_every": 0,
    "past_every": 0,
    "tensorboard": False,
}
# Phase 2 of the shipped agent: continue runs/ship with the same network and PPO settings,
# the heuristic (the target) at most seats and more 4-player tables; the learning rate
# continues its decay (1e-3 x (1 - steps / 26M), i.e. from 2.3e-4).
PRESETS["ship-finetune"] = {
    **{k: v for k, v in PRESETS["ship"].items() if k != "run_name"},
    "resume": "runs/ship",
    "players": (2, 2, 3, 4, 4, 4, 5, 6),
    "opponents": {"heuristic": 0.85, "greedy": 0.025, "cautious": 0.025, "random": 0.02, "self": 0.04, "past": 0.04},
    "total_timesteps": 26_000_000,
}


def _specialist(name: str, players: int, opponents: dict[str, float], steps: int, **settings: Any) -> dict[str, Any]:
    """Phase 1 of a shipped specialist, trained in ``runs/<name>``: one table size on
    RLlib, observation version 1, the command of docs/training.md ("Reproduce every
    shipped agent") as values."""
    return {
        "run_name": name,
        "backend": "rllib",
        "players": (players,),
        "opponents": opponents,
        "obs_version": 1,
        "total_timesteps": steps,
        "batch_size": 2048,
        "n_epochs": 8,
        "learning_rate": 1e-3,
        "eval_games": 400,
        "eval_players": (players,),
        "past_every": 0,
        **settings,
    }


def _more(name: str, steps: int, **settings: Any) -> dict[str, Any]:
    """Phase 2 of a specialist: its run continued, in place, to ``steps`` steps."""
    return {"resume": f"runs/{name}", "total_timesteps": steps, **settings}


# The PPO specialists (docs/training.md, "Reproduce every shipped agent"): each is made by
# its preset, then the same run continued by its "-more" preset, with exactly the values
# of the two commands that made the shipped file (tests/train/test_reproduce.py holds them
# equal); only the run's folder is named after the preset.
_BIG = {"net_arch": (256, 256), "gamma": 1.0}  # a wider network, no discount
_TABLE = {"n_envs": 256, "n_steps": 32, "eval_every": 2_000_000, "checkpoint_every": 2_000_000}
_HEADS_UP = {"n_envs": 128, "n_steps": 64, "checkpoint_every": 1_000_000}
PRESETS.update(
    {
        # agents/models/ppo_llama_2p_v3.npz, played by ppo_v3 and ppo_v2 at 2 players (ppo's heads-up
        # specialist is this one after a round of llama-rl distill)
        "specialist-2p": _specialist(
            "specialist-2p", 2, {"heuristic": 0.8, "self": 0.2}, 12_000_000, **_BIG, **_HEADS_UP,
            eval_every=3_000_000,
        ),
        "specialist-2p-more": _more("specialist-2p", 18_000_000, eval_every=3_000_000),
        # agents/models/ppo_llama_4p_v3.npz, played by ppo_v3 at 4 players (ppo's 4-player specialist
        # is this one after three rounds of llama-rl distill, ppo_v4's after two)
        "specialist-4p": _specialist(
            "specialist-4p", 4, {"heuristic": 0.5, "perturbed": 0.2, "self": 0.3}, 12_000_000, **_BIG, **_TABLE
        ),
        "specialist-4p-more": _more("specialist-4p", 22_000_000),
        # agents/models/ppo_llama_6p_v3.npz, played by ppo_v3 at 6 players (ppo's 6-player specialist
        # is this one after llama-rl distill)
        "specialist-6p": _specialist(
            "specialist-6p", 6, {"heuristic": 0.6, "perturbed": 0.2, "self": 0.2}, 12_000_000, **_BIG, **_TABLE
        ),
        "specialist-6p-more": _more("specialist-6p", 20_000_000),
        # agents/models/ppo_llama_2p_v1.npz, the first heads-up specialist (ppo_v1): 128-128, discounted
        "specialist-2p-v1": _specialist(
            "specialist-2p-v1", 2, {"heuristic": 0.8, "self": 0.2}, 3_000_000, **_HEADS_UP, eval_every=1_000_000
        ),
        "specialist-2p-v1-more": _more("specialist-2p-v1", 12_000_000),
    }
)  # fmt: skip


def preset_values(name: str, given: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The config values of ``llama-rl train --preset NAME`` with the settings ``given``
    (the flags) over them, as :func:`~train.training.config.config_from_dict` takes them
    (or :func:`~train.training.resume.resume_config`, for a preset that resumes a run).
    ``{**PRESETS[name], ...}`` takes every value of the preset as given, and skips this:

    * a preset's value of one backend's own option applies on that backend only (the one
      given, else the preset's);
    * a preset's periodic evaluation is made for its own table sizes: its
      ``eval_players`` stay where the run trains at all of them (``--preset beat-heuristic
      --players 2-6`` is still measured heads-up), and give way to the run's own sizes
      where it does not (``--preset specialist-2p --players 4`` is measured at 4);
    * its ``stop_win_share`` is a win share at those sizes (``beat-heuristic``'s 0.5 is
      an even share heads-up, three times one at 6 players): a run evaluated at other
      sizes is a ``ValueError`` that names both ways on, unless ``stop_win_share`` is given;
    * a preset that resumes its first phase's run (``ship-finetune``) resumes it in the
      ``run_dir`` given: where there is none, a ``ValueError`` names the first phase's
      preset to train first;
    * a preset that describes a new run with the ``resume`` of a run is a ``ValueError``
      (a run goes on with its own recorded settings).

    The errors name the command line's flags, each a config key (``--stop-win-share`` is
    ``stop_win_share``)."""
    given = dict(given or {})
    if name not in PRESETS:
        raise ValueError(f"unknown preset {name!r}; presets: {', '.join(sorted(PRESETS))}")
    settings = PRESETS[name]
    _check_resume(name, given.get("resume"))
    backend = given.get("backend") or settings.get("backend") or field_defaults()["backend"]
    values = {k: v for k, v in settings.items() if option_owner(k) in (None, backend)}
    values.update(given)
    _fit_evaluation(name, values, given)
    if not given.get("resume") and values.get("resume"):  # a second phase: its first phase's run, in run_dir
        values["resume"] = str(Path(values.get("run_dir") or "runs") / Path(values["resume"]).name)
        _check_first_phase(name, values)
    return values


def _first_phase(name: str) -> str | None:
    """The preset whose run the second-phase preset ``name`` continues: the one that names
    the folder of its ``resume`` (``ship-finetune`` continues ``runs/ship``, the run of
    ``ship``); ``None`` for a preset that starts a run, or whose run no preset makes."""
    resume = PRESETS[name].get("resume")
    if not resume:
        return None
    folder = Path(resume).name
    return next((p for p, s in PRESETS.items() if "resume" not in s and s.get("run_name") == folder), None)


def _check_first_phase(name: str, values: Mapping[str, Any]) -> None:
    """A ``ValueError`` for a second-phase preset whose first phase's run is not there,
    naming that phase's preset and the flags that say where the run lies (the resume's
    own error said only that the path was neither a run nor a checkpoint)."""
    first = _first_phase(name)
    resume = Path(values["resume"])
    if first is None or resume.exists():
        return
    run_dir = f" --run-dir {shlex.quote(str(resume.parent))}" if values.get("run_dir") else ""
    raise ValueError(
        f"--preset {name} continues the run of --preset {first}, and there is no {resume}: train that first "
        f"(llama-rl train --preset {first}{run_dir}), give --run-dir the folder that holds its run, or --resume "
        "the run"
    )


def _fit_evaluation(name: str, values: dict[str, Any], given: Mapping[str, Any]) -> None:
    """The preset's ``eval_players`` and ``stop_win_share`` fitted to the run's table
    sizes, in ``values`` (see :func:`preset_values`)."""
    settings = PRESETS[name]
    if "eval_players" not in settings and "stop_win_share" not in settings:
        return
    made_for = _evaluated_at(settings.get("players", field_defaults()["players"]), settings.get("eval_players"))
    players = parse_players(values.get("players", field_defaults()["players"]))
    if "eval_players" in settings and "eval_players" not in given and not set(made_for) <= set(players):
        del values["eval_players"]  # measured at the run's own sizes
    target = settings.get("stop_win_share")
    evaluated = _evaluated_at(players, values.get("eval_players"))
    if not target or "stop_win_share" in given or set(evaluated) == set(made_for):
        return
    shares = ", ".join(f"1/{n} at {n}" for n in evaluated)
    unseen = set(made_for) - set(players)
    where = f" ({'a size' if len(unseen) == 1 else 'sizes'} this run does not train at)" if unseen else ""
    raise ValueError(
        f"--preset {name} stops at a win share of {target:g} measured at {and_list(made_for)} players, and this run "
        f"is evaluated at {and_list(evaluated)}: give --stop-win-share for those sizes (an even share is {shares} "
        f"players; 0 trains to --total-timesteps), or --eval-players {','.join(map(str, made_for))} to measure it "
        f"as the preset does{where}"
    )


def _evaluated_at(players: Any, eval_players: Any) -> tuple[int, ...]:
    """The table sizes a run of ``players`` is evaluated at, ``eval_players`` given or
    not (``None``): as :class:`~train.training.config.TrainConfig` derives them."""
    sizes: tuple[int, ...] = TrainConfig(players=players, eval_players=eval_players or ()).eval_players
    return tuple(sorted(set(sizes)))


def _check_resume(name: str, resume: str | None) -> None:
    """A ``ValueError`` for ``--preset`` with a ``--resume`` of a run: a preset describes a
    new run, and a run goes on with its own recorded settings. A second-phase preset
    (one that resumes a run itself) may be pointed at another run, and a model file from
    outside any run starts a new run, which a preset may describe."""
    from train.training.resume import bare_model

    if not resume or "resume" in PRESETS[name] or not Path(resume).exists() or bare_model(resume):
        return
    raise ValueError(
        f"--preset {name} describes a new run, and --resume {resume} continues a run with its own recorded "
        "settings: leave out --preset (the flags given change what they name), or leave out --resume to start "
        "a new run with the preset"
    )
