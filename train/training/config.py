"""The training configuration: one typed dataclass whose field docs become ``--help``.

The core settings are fields of :class:`TrainConfig`; a backend's own settings are the
fields of its options dataclass (:attr:`train.training.backend.Backend.options`), held
in ``TrainConfig.options``. Written out (``config.json``, ``to_dict``) and read in
(``config_from_dict``, the command line) both are one flat mapping of keys.

CleanRL style: every knob of a run is a field of :class:`TrainConfig`, with a real type
(``players`` is a tuple of table sizes, ``opponents`` a mapping of kind to weight,
``net_arch`` a tuple of layer sizes). Strings from a command line, lists from a
``config.json`` and ints from Python become these values once, when the config is built
(the parsers of :data:`PARSERS`); nothing inside re-parses a string. :meth:`TrainConfig.validate`
checks the values (a ``ValueError`` naming the bad key and what is allowed). Named
presets (:data:`train.training.presets.PRESETS`) override the defaults, and command-line
flags override presets.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import os
import re
import time
import typing
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from llama_env._atomic import user_path
from llama_env.agent import (
    RESERVED_NAMES,
    AgentSpec,
    and_list,
    is_builtin_agent,
    is_path_parameter,
    parse_agent_spec,
    registrations,
)
from llama_env.agent import names as agent_names
from llama_env.engine import (
    DECIMAL,
    MAX_PLAYERS,
    MIN_PLAYERS,
    Rules,
    brief,
    check_rule_option,
    is_int,
    parse_table_sizes,
    read_int,
    read_number,
    rule_option_fields,
    table_sizes_allowing,
)
from llama_env.observation import OBS_VERSIONS
from llama_env.rewards import REWARD_MODES
from train.training.backend import Backend, backend_named, backends, reserve_option_names

__all__ = [
    "TrainConfig",
    "PARSERS",
    "ACTIVATIONS",
    "parse_players",
    "parse_opponents",
    "parse_net_arch",
    "config_from_dict",
    "option_owner",
    "field_types",
    "field_defaults",
    "flag_fields",
    "FlagField",
    "check_option_types",
    "check_new_run_name",
    "comparison_sizes",
]

ACTIVATIONS = ("tanh", "relu")
"""The hidden activations a policy may have (``activation``): the two the ``ppo`` agent plays without torch."""


def _f(default: Any, help: str, **kw: Any) -> Any:  # noqa: A002 - mirrors argparse
    if isinstance(default, dict):
        frozen = dict(default)
        return field(default_factory=lambda: dict(frozen), metadata={"help": help, **kw})
    return field(default=default, metadata={"help": help, **kw})


def _rule(name: str) -> Any:
    """A config field for the rule option ``name``: its default and help from :class:`Rules`."""
    (option,) = [f for f in rule_option_fields() if f.name == name]
    return _f(option.default, f"rule option: {option.metadata['help']}", metavar="N")


@dataclass
class TrainConfig:
    """A PPO self-play training run: MaskablePPO on the batched L.L.A.M.A. vec env, or
    multi-agent PPO on Ray RLlib (``backend="rllib"``).

    Each field is a config key and a flag of ``llama-rl train`` (``n_envs``: ``--n-envs``);
    docs/training.md, "Configuration", has them in one table, with each backend's own."""

    # --- the trainer
    backend: str = _f(
        "sb3",
        "trainer: sb3 (MaskablePPO on the batched vec env) or rllib (multi-agent PPO on Ray RLlib, "
        "needs the rllib extra); see train.training.backend",
    )
    options: Any = _f(
        None,
        "the backend's own settings: an instance of its options dataclass (a mapping is converted); "
        "each is also a flag and a config key of its own",
    )
    # --- the table and the opponents
    players: tuple[int, ...] = _f(
        (2, 3, 4, 5, 6),
        "table sizes to train on: one int 2..6, a range '2-6' or a list '2,4,6', drawn uniformly per game "
        "(repeat a size to weight it: '2,2,3,4,4,5,6')",
        metavar="SIZES",
    )
    opponents: dict[str, float] = _f(
        {"heuristic": 0.5, "self": 0.3, "past": 0.2},
        "opponent mix 'kind:weight,...'; kinds are registered agent names (heuristic, random, ...) or "
        "agent specs ('cautious:threshold=2:0.5' weighs cautious:threshold=2 by 0.5), "
        "'self' (the current policy) and 'past' (past checkpoints of this run); drawn per seat",
        metavar="MIX",
    )
    past_every: int = _f(200_000, "add a snapshot of the current policy to the 'past' pool every this many steps")
    past_pool: int = _f(8, "how many past snapshots the 'past' pool keeps (the newest)")
    # the rule options, one field each, as llama_env.engine.Rules declares them
    end_score: int = _rule("end_score")
    hand_size: int = _rule("hand_size")
    reward: str = _f("game", f"reward mode: one of {', '.join(REWARD_MODES)} (see llama_env.rewards)")
    obs_version: int = _f(
        0, "the policy's observation: 0 (Llama-v0's 52 entries) or 1 (with the public history of the round, Llama-v1)"
    )
    # --- the run
    total_timesteps: int = _f(2_000_000, "learner env steps to train for (resuming continues the count)")
    n_envs: int = _f(128, "games stepped side by side in the batched vec env")
    seed: int = _f(0, "seeds the games, the opponents' draws and torch (0..2**32-1, numpy's range)")
    torch_threads: int = _f(
        1, "torch.set_num_threads for the PPO updates (1 is fastest for a small MLP on a busy machine)"
    )
    # --- the network and PPO
    net_arch: tuple[int, ...] = _f(
        (128, 128), "hidden layer sizes of the policy and value MLPs, e.g. '128,128'", metavar="SIZES"
    )
    activation: str = _f("tanh", f"hidden activation: {' or '.join(ACTIVATIONS)}")
    learning_rate: float = _f(1e-3, "Adam learning rate")
    anneal_lr: bool = _f(
        True, "decay the learning rate linearly with the step count: lr x max(1 - steps / total_timesteps, 0.05)"
    )
    n_steps: int = _f(64, "steps per env per rollout (rollout size = n_steps * n_envs)")
    batch_size: int = _f(2048, "minibatch size of the PPO update")
    n_epochs: int = _f(8, "passes over each rollout")
    gamma: float = _f(0.995, "discount factor")
    gae_lambda: float = _f(0.95, "GAE lambda")
    clip_range: float = _f(0.2, "PPO clip range")
    ent_coef: float = _f(0.01, "entropy bonus coefficient")
    vf_coef: float = _f(0.5, "value loss coefficient")
    max_grad_norm: float = _f(0.5, "gradient clipping norm")
    target_kl: float = _f(
        0.0, "stop an update's epochs early past this KL (0 = off); on rllib, the target of its KL penalty instead"
    )
    # --- evaluation, checkpoints, output
    eval_every: int = _f(250_000, "evaluate against eval_opponent every this many steps (0 = never)")
    eval_games: int = _f(400, "games per evaluation and table size")
    eval_players: tuple[int, ...] = _f(
        (),
        "table sizes of the periodic evaluation (default: the run's own, as the comparison after training picks "
        "them: 2 and 4 where it trains there, else its smallest, two at most)",
        metavar="SIZES",
    )
    eval_opponent: str = _f("heuristic", "the agent (a name or spec) evaluated against during training")
    stop_win_share: float = _f(
        0.0,
        "stop training early once a periodic evaluation beats this win share: the lower end of its confidence "
        "interval (ci_low in eval.jsonl) at or above it at every size of eval_players, and again on a second set "
        "of fresh deals (confirm_ci_low) (0 = train to total_timesteps)",
    )
    checkpoint_every: int = _f(250_000, "save a checkpoint every this many steps (0 = only at the end)")
    run_dir: str = _f("runs", "parent folder of the run directories")
    run_name: str = _f(
        "",
        "run directory name, without a comma (default llama__<algorithm>__<seed>__<unix time>, the algorithm named by "
        "the backend)",
    )
    resume: str = _f("", "a checkpoint .zip (or a run directory) to continue from; its step count continues")
    progress_bar: bool = _f(True, "show a progress bar")

    def __post_init__(self) -> None:
        # The Python edge: TrainConfig(players=4), players=[2, 4] or players="2-6" all
        # become the typed value here, once.
        derived = isinstance(self.eval_players, (tuple, list)) and not self.eval_players
        for key, parse in PARSERS.items():
            if not (key == "eval_players" and derived):
                setattr(self, key, parse(getattr(self, key)))
        if derived:  # not given: the run is measured at its own sizes
            self.eval_players = tuple(comparison_sizes(self.players))
        if isinstance(self.backend, str):
            self.options = _options_for(self.backend, self.options)

    def backend_spec(self) -> Backend:
        """The :class:`~train.training.backend.Backend` this config trains with."""
        return backend_named(self.backend)

    def default_run_name(self, claim: bool = False) -> str:
        """``llama__<algorithm>__<seed>__<unix time>``, with ``_2``, ``_3``... after it when
        a run of that name is there already (two runs started in the same second with
        the same seed, a sweep over another setting, say: the second was refused).

        With ``claim`` the name is taken by making its folder, which fails for a name
        another process took a moment before, so that two runs started at once get names
        of their own (a folder that cannot be made is left to the run directory to
        report)."""
        base = f"llama__{self.backend_spec().algorithm}__{self.seed}__{int(time.time())}"
        parent = user_path(self.run_dir)
        if claim:
            try:
                parent.mkdir(parents=True, exist_ok=True)
            except OSError:  # read-only, a file in the way...: RunDir.create says so
                claim = False
        for k in range(1, 10_000):
            name = base if k == 1 else f"{base}_{k}"
            if (parent / name).exists():
                continue
            if claim:
                try:
                    (parent / name).mkdir()
                except FileExistsError:  # another process took it a moment ago
                    continue
                except OSError:  # left to RunDir.create to report
                    pass
            return name
        raise ValueError(f"no free run name {base}_<k> in {parent}")  # pragma: no cover - 10,000 runs a second

    def value(self, key: str) -> Any:
        """The typed value of a config key: a core field, or an option of the backend
        (``None`` when the backend has no such option)."""
        return getattr(self, key) if key in field_types() else getattr(self.options, key, None)

    def rules_at(self, num_players: int) -> Rules:
        """The rules of this run's games at one table size."""
        return Rules(num_players, **self.rule_options())

    def rule_options(self) -> dict[str, int]:
        """The rule options of this run's games (every field of :func:`rule_option_fields`)."""
        return {f.name: getattr(self, f.name) for f in rule_option_fields()}

    def validate(self, *, recorded: bool = False) -> TrainConfig:
        """Raise ``ValueError`` naming the first bad field and its allowed values; return self.
        A ``recorded`` config (a run's own file) keeps the name the run already has."""
        for key, typ in field_types().items():
            _check_type(key, getattr(self, key), typ)
        _check_players(self.players, "players")
        _check_players(self.eval_players, "eval_players")
        _check_opponents(self.opponents)
        if not self.net_arch or any(x < 1 for x in self.net_arch):
            raise ValueError(f"config key 'net_arch' must be positive layer sizes, got {self.net_arch!r}")
        backend = self.backend_spec()
        self.options = _options_for(self.backend, self.options)
        check_option_types(self.options)
        for key in backend.ignores:
            if getattr(self, key) != field_defaults()[key]:
                raise ValueError(
                    f"config key {key!r} is not used by backend {self.backend!r}; leave it at its default "
                    f"({field_defaults()[key]!r}) or pick another backend"
                )
        for option in rule_option_fields():  # its own range first: no table size is to blame
            value = getattr(self, option.name)
            if option.metadata["high"] is None and is_int(value) and value >= option.metadata["low"]:
                continue  # a hand's upper bound is its table's: _check_rules_at gives the run's own sizes
            try:
                check_rule_option(option, value)
            except ValueError as exc:
                raise ValueError(f"config key {option.name!r}: {exc}") from None
        self._check_rules_at("players")
        self._check_rules_at("eval_players")
        if self.obs_version not in OBS_VERSIONS:
            raise ValueError(
                f"config key 'obs_version' must be one of {', '.join(map(str, OBS_VERSIONS))}, got {self.obs_version!r}"
            )
        if self.reward not in REWARD_MODES:
            raise ValueError(f"config key 'reward' must be one of {', '.join(REWARD_MODES)}, got {self.reward!r}")
        if self.activation not in ACTIVATIONS:
            raise ValueError(
                f"config key 'activation' must be one of {', '.join(ACTIVATIONS)}, got {self.activation!r}"
            )
        positive = ("total_timesteps", "n_envs", "n_steps", "batch_size", "n_epochs", "torch_threads", "past_pool")
        for key in positive:
            if getattr(self, key) < 1:
                raise ValueError(f"config key {key!r} must be >= 1, got {getattr(self, key)}")
        for key in ("past_every", "eval_every", "eval_games", "checkpoint_every"):
            if getattr(self, key) < 0:
                raise ValueError(f"config key {key!r} must be >= 0, got {getattr(self, key)}")
        for key, most in LARGEST.items():
            if getattr(self, key) > most:
                raise ValueError(
                    f"config key {key!r} must be at most {most:,}, got {getattr(self, key):,} "
                    "(far beyond what a run can hold in memory)"
                )
        if max(self.net_arch) > LARGEST_LAYER:
            raise ValueError(
                f"config key 'net_arch' takes layers of at most {LARGEST_LAYER:,} units, got {self.net_arch}"
            )
        if self.n_steps * self.n_envs > LARGEST_ROLLOUT:
            raise ValueError(
                f"config keys 'n_steps' x 'n_envs' must give a rollout of at most {LARGEST_ROLLOUT:,} steps, got "
                f"{self.n_steps:,} x {self.n_envs:,} (a rollout's observations are held in memory)"
            )
        for key in ("learning_rate", "clip_range", "max_grad_norm"):
            if not getattr(self, key) > 0:
                raise ValueError(f"config key {key!r} must be > 0, got {getattr(self, key)}")
        for key in ("gamma", "gae_lambda"):
            if not 0 < getattr(self, key) <= 1:
                raise ValueError(f"config key {key!r} must be in (0, 1], got {getattr(self, key)}")
        if self.opponents.get("past") and not self.past_every:
            raise ValueError(
                "config key 'past_every' is 0, so the 'past' pool of the opponents' mix would stay empty and play "
                "as 'self': give past_every > 0 or drop 'past' from opponents"
            )
        if self.eval_every and not self.eval_games:
            raise ValueError(
                "config key 'eval_games' must be >= 1 while eval_every is on (eval_every 0 turns the periodic "
                "evaluation off)"
            )
        if not 0 <= self.seed <= LARGEST_SEED:
            raise ValueError(
                f"config key 'seed' must be an integer 0..2**32-1 (the trainers seed numpy's global generator, which "
                f"takes no more), got {self.seed}"
            )
        if not 0 <= self.stop_win_share < 1:
            raise ValueError(f"config key 'stop_win_share' must be in [0, 1), got {self.stop_win_share!r}")
        if self.stop_win_share and not (self.eval_every and self.eval_games):
            raise ValueError(
                "config key 'stop_win_share' needs the periodic evaluation it reads: set eval_every and eval_games"
            )
        for key in ("ent_coef", "vf_coef", "target_kl"):
            if not getattr(self, key) >= 0:
                raise ValueError(f"config key {key!r} must be >= 0, got {getattr(self, key)}")
        if self.batch_size > self.n_steps * self.n_envs:
            raise ValueError(
                f"config key 'batch_size' ({self.batch_size}) must be <= n_steps x n_envs "
                f"({self.n_steps * self.n_envs}): at n_steps {self.n_steps}, n_envs must be at least "
                f"{-(-self.batch_size // self.n_steps)}"
            )
        if self.n_steps * self.n_envs < 2:
            raise ValueError("config keys 'n_steps' x 'n_envs' must give a rollout of at least 2 steps")
        if self.eval_every:
            _check_agent("eval_opponent", self.eval_opponent, agent_names())
        if self.run_name and (
            Path(self.run_name).name != self.run_name or self.run_name in (".", "..") or "\\" in self.run_name
        ):
            raise ValueError(
                f"config key 'run_name' must be one folder's name (the run directory made in run_dir), "
                f"got {self.run_name!r}; put the parent folder in run_dir"
            )
        if self.run_name is not None and (self.run_name != self.run_name.strip() or not self.run_name.isprintable()):
            raise ValueError(
                f"config key 'run_name' must not begin or end with a space nor hold a control character, "
                f"got {self.run_name!r}"
            )
        if not self.resume and not recorded:  # a new run (a resumed one is checked by session_run)
            if not self.run_dir.strip():  # as a path "" is the current folder, unasked
                raise ValueError(
                    f"config key 'run_dir' must name a folder (\".\" for the current one), got {self.run_dir!r}"
                )
            check_new_run_name(self.run_name, self.run_dir)
        backend.check(self)
        return self

    def _check_rules_at(self, key: str) -> None:
        """A ``ValueError`` naming ``key`` (``players`` or ``eval_players``) when the rule
        options, each in its own range, do not hold at one of its table sizes (a hand too
        large to deal there), saying which sizes they allow."""
        sizes: tuple[int, ...] = getattr(self, key)
        for n in sorted(set(sizes)):
            try:
                self.rules_at(n)
            except ValueError as exc:
                allowed = table_sizes_allowing(**self.rule_options())
                fix = f"; give {key} sizes these rules allow: {','.join(map(str, allowed))}" if allowed else ""
                raise ValueError(f"config key {key!r} includes {n}: {exc}{fix}") from None

    def unseen_eval_sizes(self) -> str | None:
        """The warning for a periodic evaluation at table sizes the run does not train at
        (``None`` when every size of ``eval_players`` is one of ``players``): its win shares
        measure tables the policy never saw, and ``stop_win_share`` would stop the run on
        them."""
        unseen = sorted(set(self.eval_players) - set(self.players))
        if not unseen:
            return None
        stop = f", and stop_win_share {self.stop_win_share:g} decides on them" if self.stop_win_share else ""
        return (
            f"eval_players: the periodic evaluation plays at {and_list(unseen)} players, where this run does not "
            f"train (players {and_list(sorted(set(self.players)))}){stop}: give eval_players among the sizes it "
            "trains at (a new run that leaves it out is evaluated at its own)"
        )

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-friendly data, one flat mapping (tuples as lists; the backend's
        options as keys of their own)."""
        out = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "options"}
        out.update(dataclasses.asdict(self.options))
        return {k: list(v) if isinstance(v, tuple) else dict(v) if isinstance(v, dict) else v for k, v in out.items()}

    def with_absolute_paths(self) -> TrainConfig:
        """This config with the files its agent specs name (``ppo:path=``, a search's
        ``networks_path``...: :func:`absolute_agent_paths`) made absolute: what a session
        runs and records, so that the run can be resumed from any folder (a
        ``ppo:path=bare.zip`` recorded as typed was looked for where the resume ran)."""
        opponents: dict[str, float] = {}
        for kind, weight in self.opponents.items():
            name = absolute_agent_paths(kind)
            opponents[name] = opponents.get(name, 0.0) + weight
        eval_opponent = absolute_agent_paths(self.eval_opponent)
        if opponents == self.opponents and eval_opponent == self.eval_opponent:
            return self
        return dataclasses.replace(self, opponents=opponents, eval_opponent=eval_opponent)

    def run_path(self, claim: bool = False) -> Path:
        """The run directory of a new run: ``run_dir``/``run_name``, or a default name,
        claimed (its folder made) with ``claim`` (:meth:`default_run_name`); a leading ``~``
        in ``run_dir`` is the home folder, as ``--run-dir`` and ``record_dir`` read it."""
        return user_path(self.run_dir) / (self.run_name or self.default_run_name(claim))


@functools.cache
def field_defaults() -> dict[str, Any]:
    """Each core config field's default value."""
    return {k: v for k, v in TrainConfig().to_dict().items() if k in field_types()}


@functools.cache
def field_types() -> dict[str, Any]:
    """Each core config field's type (the real types, not their string annotations)."""
    return {k: v for k, v in typing.get_type_hints(TrainConfig).items() if k != "options"}


@dataclass(frozen=True)
class FlagField:
    """A config key as the command line offers it."""

    name: str
    type: Any
    default: Any
    help: str
    metavar: str | None
    backend: str | None
    """The backend whose option it is (``None``: a core key)."""


def flag_fields() -> list[FlagField]:
    """Every config key: the core fields, then each backend's options."""
    out = []
    types = field_types()
    for f in fields(TrainConfig):
        if f.name in types:
            default = f.default if f.default_factory is dataclasses.MISSING else f.default_factory()
            out.append(FlagField(f.name, types[f.name], default, f.metadata["help"], f.metadata.get("metavar"), None))
    for name, backend in backends().items():
        hints = typing.get_type_hints(backend.options)
        for f in fields(backend.options):
            out.append(
                FlagField(
                    f.name, hints[f.name], f.default, f"{name}: {f.metadata['help']}", f.metadata.get("metavar"), name
                )
            )
    return out


def check_option_types(options: Any) -> None:
    """A ``ValueError`` naming the first field of a backend's options whose value has the wrong type."""
    hints = typing.get_type_hints(type(options))
    for f in fields(options):
        _check_type(f.name, getattr(options, f.name), hints[f.name])


LARGEST: dict[str, int] = {
    "n_envs": 1 << 20,
    "n_steps": 1 << 20,
    "batch_size": 1 << 22,
    "n_epochs": 10_000,
    "torch_threads": 4096,
    "past_pool": 1000,
    "eval_games": 10_000_000,
}
"""Upper bounds on the settings whose size is held in memory: a config's number grown by
mistake (``n_envs`` 10**30 in a resumed run's config.json) ran the machine out of memory
instead of being refused."""
LARGEST_ROLLOUT = 1 << 23
"""The most learner steps one rollout holds (``n_steps`` x ``n_envs``): 8,388,608, about
6 GB of version-1 observations."""
LARGEST_LAYER = 1 << 16
"""The widest hidden layer of ``net_arch``."""
LARGEST_SEED = 2**32 - 1
"""The largest ``seed``: SB3 and RLlib seed numpy's global generator with it, which
refuses more (a larger seed passed the checks, then failed as the run started)."""


reserve_option_names([f.name for f in fields(TrainConfig)], "a core setting of llama-rl train")


def _options_for(backend_name: str, given: Any) -> Any:
    """``given`` (``None``, a mapping or the options object) as ``backend_name``'s options."""
    cls = backend_named(backend_name).options
    if given is None:
        return cls()
    if isinstance(given, cls):
        return given
    if isinstance(given, Mapping):
        known = [f.name for f in fields(cls)]
        for key in given:
            if key not in known:
                owner = option_owner(key)
                where = f"an option of backend {owner!r}" if owner else "not an option"
                raise ValueError(
                    f"config key {key!r} is {where} (this run uses {backend_name!r}, whose options are: "
                    f"{', '.join(known) or 'none'})"
                )
        return cls(**given)
    raise ValueError(f"config key 'options' must be a mapping or {cls.__name__}, got {given!r}")


def option_owner(key: str) -> str | None:
    """The backend whose option ``key`` is (``None``: no backend's)."""
    for name, backend in backends().items():
        if key in {f.name for f in fields(backend.options)}:
            return name
    return None


def _check_type(key: str, value: Any, typ: Any) -> None:
    origin = typing.get_origin(typ)
    if origin is tuple:
        ok = isinstance(value, tuple) and all(isinstance(x, int) and not isinstance(x, bool) for x in value)
        want = "a tuple of integers"
    elif origin is dict:
        ok = isinstance(value, dict) and all(
            isinstance(k, str) and isinstance(w, (int, float)) and not isinstance(w, bool) for k, w in value.items()
        )
        want = "a mapping of names to numbers"
    elif typ is bool:
        ok, want = isinstance(value, bool), "a bool"
    elif typ is int:
        ok, want = isinstance(value, int) and not isinstance(value, bool), "an integer"
    elif typ is float:
        ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
        want = "a finite number"
    else:
        ok, want = isinstance(value, str), "a string"
    if not ok:
        raise ValueError(f"config key {key!r} must be {want}, got {value!r}")


def check_new_run_name(name: str | None, run_dir: str | None = None) -> None:
    """A ``ValueError`` for a new run's name, or the folder it is made in, that the
    commands printed after training cannot hold: ``ppo:path=<run>`` ends at a comma
    (agents are listed with commas). A run that already has such a name goes on under it."""
    for key, value in (("run_name", name), ("run_dir", run_dir)):
        if value is not None and "," in str(value):
            raise ValueError(
                f"config key {key!r} must not hold a comma, got {str(value)!r}: the commands that evaluate and play "
                "a run name its model as ppo:path=<run>, which a comma would cut"
            )


def comparison_sizes(players: Sequence[int]) -> list[int]:
    """The table sizes a run is measured at (the periodic evaluation's by default, and the
    comparison printed after training): at most two, all of them sizes the run trains at
    (``players``): 2 and 4 where it trains there, else (or to make up two) its smallest
    others. A 6-player specialist is measured at 6, not at the 2 and 4 it never saw."""
    sizes = sorted(set(players))
    picked: list[int] = [n for n in (2, 4) if n in sizes]
    picked += [n for n in sizes if n not in picked][: 2 - len(picked)]
    return sorted(picked)


def _check_players(value: tuple[int, ...], key: str) -> None:
    if not value or any(not MIN_PLAYERS <= p <= MAX_PLAYERS for p in value):
        raise ValueError(f"config key {key!r} must be table sizes {MIN_PLAYERS}..{MAX_PLAYERS}, got {value!r}")


def _check_agent(key: str, name: str, allowed: list[str]) -> None:
    """``name`` a registered agent or an agent spec of one (``cautious:threshold=2``), with
    parameters it takes; else a ``ValueError`` naming the config key."""
    if name in allowed:
        return
    if ":" in name:
        try:
            parse_agent_spec(name)
        except ValueError as exc:
            raise ValueError(f"config key {key!r}: {exc}") from None
        return
    raise ValueError(f"config key {key!r} names unknown agent {name!r}; allowed: {', '.join(allowed)}")


def _check_opponents(mix: Mapping[str, float]) -> None:
    allowed = list(RESERVED_NAMES) + agent_names()  # "self", "past": the policy and its snapshots
    for name, weight in mix.items():
        _check_agent("opponents", name, allowed)
        if not weight >= 0 or not math.isfinite(weight):
            raise ValueError(f"config key 'opponents': weight of {name!r} must be a number >= 0, got {weight}")
    if not mix or sum(mix.values()) <= 0:
        raise ValueError(f"config key 'opponents' must give a positive total weight, got {dict(mix)!r}")
    if not math.isfinite(sum(mix.values())):  # weights of 1e308 each: the draw's probabilities were NaN
        raise ValueError(f"config key 'opponents' must give a finite total weight, got {dict(mix)!r}")


def absolute_agent_paths(spec: str) -> str:
    """An agent spec with each file parameter (:func:`llama_env.agent.is_path_parameter`)
    made absolute, against the current folder (``ppo:path=m.zip`` ->
    ``ppo:path=/home/me/m.zip``), read as the agent reads it: a built-in agent's leading
    ``~`` as the home folder (:func:`agents.base.agent_path`), a plugin's as written (as
    :func:`llama_env.agent.make` hands it over); a spec without one, or one that cannot be
    read, as it is."""
    if ":" not in spec:
        return spec
    try:
        parsed = parse_agent_spec(spec, check=False)
    except ValueError:  # refused where it is checked
        return spec
    if not any(is_path_parameter(key) for key in parsed.params):
        return spec
    from agents.base import agent_path

    found = registrations([parsed.name])
    read = agent_path if found and is_builtin_agent(found[0][1]) else Path
    params = {
        key: os.path.abspath(read(value))
        if is_path_parameter(key) and isinstance(value, str) and value.strip()
        else value
        for key, value in parsed.params.items()
    }
    return spec if params == dict(parsed.params) else AgentSpec(parsed.name, params).label


# --------------------------------------------------------------------------- parsers (the edge)


def parse_players(spec: str | int | list[int] | tuple[int, ...], key: str = "players") -> tuple[int, ...]:
    """'4' -> (4,), '2-6' -> (2, 3, 4, 5, 6), '2,4,6' -> (2, 4, 6); also an int or a list
    (:func:`llama_env.engine.parse_table_sizes`, naming the config key)."""
    return parse_table_sizes(spec, f"config key {key!r}")


def parse_opponents(spec: str | Mapping[str, float]) -> dict[str, float]:
    """'heuristic:0.5,self:0.3,past:0.2' -> {'heuristic': 0.5, ...}; a bare name has weight 1."""
    if isinstance(spec, Mapping):  # a config.json's or Python's mapping: the same checks as the text
        mix = {str(k): _weight(k, v) for k, v in spec.items()}
        if not mix or sum(mix.values()) <= 0:
            raise ValueError(f"config key 'opponents' must map kinds to weights with a positive total, got {spec!r}")
        return mix
    if not isinstance(spec, str):
        raise ValueError(f"config key 'opponents' must be 'kind:weight,...', got {spec!r}")
    out: dict[str, float] = {}
    for part in re.sub(r"\s*([,:])\s*", r"\1", spec.strip()).split(","):  # a path may hold spaces
        if not part:
            continue
        name, w = _kind_and_weight(part)
        weight = read_number(w, f"config key 'opponents': weight of {brief(name)}", 0) if w else 1.0  # 0-9 only
        out[name] = out.get(name, 0.0) + weight
    if not out or sum(out.values()) <= 0:
        raise ValueError(f"config key 'opponents' must be 'kind:weight,...' with a positive total, got {spec!r}")
    return out


def _kind_and_weight(part: str) -> tuple[str, str]:
    """One entry of the mix split into its kind and its weight's text (empty: none):
    the weight is what follows the last colon where that is no ``key=value`` parameter of
    an agent spec (``cautious:threshold=2:0.5``) and no part of a path given as one
    (``ppo:path=C:\\m.npz``)."""
    head, colon, tail = part.rpartition(":")
    if not colon or "=" in tail:
        return part, ""
    if DECIMAL.fullmatch(tail):
        return head, tail
    if "=" in head and tail[:1] in ("\\", "/"):  # a path's colon: C:\\m.npz
        return part, ""
    if not tail:
        raise ValueError(f"config key 'opponents': {head!r} ends in a colon with no weight after it")
    return head, tail  # a weight that is no number: refused by the caller


def _weight(name: object, weight: object) -> float:
    """A mapping's weight, checked as :func:`parse_opponents` checks one in text."""
    if isinstance(weight, bool) or not isinstance(weight, (int, float)):
        raise ValueError(f"config key 'opponents': weight of {str(name)!r} must be a number, got {weight!r}")
    if not weight >= 0 or not math.isfinite(weight):
        raise ValueError(f"config key 'opponents': weight of {str(name)!r} must be a number >= 0, got {weight!r}")
    return float(weight)


def parse_net_arch(spec: str | list[int] | tuple[int, ...]) -> tuple[int, ...]:
    """'128,128' -> (128, 128); also a list of ints."""
    if isinstance(spec, (list, tuple)):
        if not all(isinstance(x, int) and not isinstance(x, bool) and x >= 1 for x in spec) or not spec:
            raise ValueError(f"config key 'net_arch' must be positive layer sizes, got {spec!r}")
        return tuple(spec)
    try:  # the digits 0-9 (int also reads ١٢ and 1_000), of at most MAX_DIGITS
        out = tuple(read_int(x, "a layer size") for x in str(spec).replace(" ", "").split(",") if x)
    except ValueError:
        raise ValueError(
            f"config key 'net_arch' must be comma-separated layer sizes like '128,128', got {brief(spec)}"
        ) from None
    if not out or any(x < 1 for x in out):
        raise ValueError(f"config key 'net_arch' must be comma-separated positive layer sizes, got {brief(spec)}")
    return out


PARSERS: dict[str, Callable[[Any], Any]] = {
    "players": lambda v: parse_players(v, "players"),
    "eval_players": lambda v: parse_players(v, "eval_players"),
    "opponents": parse_opponents,
    "net_arch": parse_net_arch,
}
"""Field name -> parser of its written form (a command-line string, a JSON list)."""


def config_from_dict(d: Mapping[str, Any], *, recorded: bool = False) -> TrainConfig:
    """A validated config from one flat mapping (a run's ``config.json``, a preset, the
    command line's values): lists and strings become the typed values; the backend's
    options are keys of their own. Another backend's option is refused when it is set,
    dropped when it holds that backend's default; unknown keys are an error. A
    ``recorded`` mapping (a run's own ``config.json``) drops another backend's options
    whatever they hold: files written before the backends had options of their own list
    every backend's, and those never applied to the run."""
    core = set(field_types())
    backend = d.get("backend", field_defaults()["backend"])
    values: dict[str, Any] = {}
    options: dict[str, Any] = {}
    for key, value in d.items():
        if key in core:
            values[key] = value
            continue
        owner = option_owner(key)
        if owner is None:
            allowed = sorted(core | {f.name for b in backends().values() for f in fields(b.options)})
            raise ValueError(f"unknown config key {key!r}; allowed keys: {', '.join(allowed)}")
        if owner == backend:
            options[key] = value
        elif not recorded and value != {f.name: f.default for f in fields(backends()[owner].options)}[key]:
            raise ValueError(f"config key {key!r} is an option of backend {owner!r} (this run uses {backend!r})")
    return TrainConfig(**values, options=options).validate(recorded=recorded)
