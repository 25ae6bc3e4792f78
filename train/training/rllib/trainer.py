"""Training on Ray RLlib: ``llama-rl train --backend rllib`` (the rllib backend's ``run``).

Multi-agent PPO on RLlib's current API stack (RLModule, Learner, EnvRunner) over
:class:`train.training.rllib.env.LlamaMultiAgentEnv`: one shared policy learns from every
learning seat (self-play), fixed opponents (registered agents and ``"past"`` snapshots)
play inside the env through the table driver, table sizes mix as ``players`` says, and
the module (:class:`train.training.rllib.module.MaskedPPOModule`) masks illegal actions.
Sampling goes through :class:`train.training.rllib.runner.LlamaEnvRunner` and the train
batch through :class:`train.training.rllib.batch.EpisodesToTrainBatch`, which drop
RLlib's per-step bookkeeping (on two cores it made sampling four times slower).

By default the command starts a local Ray itself and shuts it down at the end: one
torch thread per process, Ray's temporary files inside the run directory (reached through
a short link in the system's temporary directory, because Ray's socket paths must stay
short), nothing written to the home directory. ``address`` (or ``RAY_ADDRESS``) joins an
existing cluster instead; see docs/training.md.

The run directory is every backend's (:mod:`train.training.run_dir`): ``config.json``,
``progress.jsonl`` (one line of RLlib's metrics per iteration), ``eval.jsonl``,
``checkpoints/rllib_<steps>/`` (RLlib checkpoints, each written to a temporary folder
and renamed into place), ``summary.json``, ``sessions.jsonl``, and ``model.npz``: the
policy exported as a numpy actor, which ``agents.make("ppo", path=<run dir>)`` plays
with no Ray or torch installed, saying the table sizes and rule options the run trained
at (:func:`agents.ppo.with_run_trained_at`), as ``llama-rl export`` of the run does.

Ctrl-C and SIGTERM save a checkpoint and the model, as on sb3 (a new run stopped before
it learned a step is removed instead). So does an opponent or the evaluation's agent
failing in a game, or an env runner failing or dying (RLlib is set not to restart one),
before :class:`~train.training.result.TrainingStopped` names it.
"""

from __future__ import annotations

import contextlib
import copy
import functools
import hashlib
import os
import shutil
import signal
import socket
import sys
import tempfile
import threading
import time
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import cloudpickle

from agents.ppo import RLLIB_MODULE_STATE, Actor, save_actor, with_run_trained_at
from llama_env.agent import registrations
from llama_env.engine import IllegalActionError, error_line
from llama_env.table import AgentError
from train._torch import torch_threads
from train.evaluation.runner import usable_cores
from train.training.config import TrainConfig
from train.training.evaluation import evaluation_message, evaluation_row, next_multiple, stops_early
from train.training.result import (
    ProcessStopped,
    TrainResult,
    leave_out,
    raise_unless_learned,
    removed_if_new,
    result_or_stopped,
    say_interrupted,
    step_bar,
)
from train.training.resume import check_steps_left, refuse_newer, session_run
from train.training.rllib import RllibOptions
from train.training.run_dir import (
    RunDir,
    RunDirError,
    forgotten_unless_saved,
    rllib_checkpoint_problem,
    saving_despite_ctrl_c,
    write_json_atomic,
)
from train.training.seats import past_never_plays

__all__ = [
    "train_rllib",
    "RLLIB_CHECKPOINT_PREFIX",
    "ray_session",
    "build_algorithm_config",
    "check_local_cores",
]

RLLIB_CHECKPOINT_PREFIX = "rllib_"
PROGRESS_FILE = "progress.jsonl"
"""RLlib's metrics in the run directory, one line an iteration (written by this trainer)."""
ENV_NAME = "llama_rl_multi_agent"
# Deprecation notices RLlib prints about its own internals, which a user cannot act on.
_KNOWN_NOTICES = (
    r".*has been deprecated.*",
    r".*You are running PPO on the new API stack.*",
    r".*Install gputil.*",
    r".*RLModule.*inference_only.*",
)


def _quiet_ray() -> None:
    # only warnings raised from Ray's own modules: the filters stay for the process, and a
    # notebook's other libraries (and the user's code) keep their deprecation warnings
    for pattern in _KNOWN_NOTICES:
        warnings.filterwarnings("ignore", message=pattern, module=r"ray(\.|$)")
    import logging

    for name in ("ray", "ray.rllib", "ray.tune", "ray.util"):
        logging.getLogger(name).setLevel(logging.ERROR)


_RUNNER_FAILURE_LOGGERS = ("ray.rllib.utils.actor_manager", "ray.rllib.env.env_runner_group")
"""RLlib's loggers of a failed env runner's traceback ("taking actor 1 out of service",
"Failed to stop workers!"): a run stops on it and says what failed in a line (_loop)."""


@contextlib.contextmanager
def _runner_failures_unlogged() -> Iterator[None]:
    """RLlib's tracebacks of failed env runners unlogged for a session, the levels of
    their loggers put back after it: they stayed silenced for the process (a notebook's
    own RLlib work after a run)."""
    import logging

    loggers = [logging.getLogger(name) for name in _RUNNER_FAILURE_LOGGERS]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        for logger, level in zip(loggers, levels, strict=True):
            logger.setLevel(level)


def cluster_address(address: str) -> tuple[str, str]:
    """The cluster a session joins, from ``address`` (the ``address`` option), else
    ``RAY_ADDRESS``, and the name of what gave it (``"--address"`` or ``"RAY_ADDRESS"``,
    for the messages); ``""`` for a local Ray of the trainer's own, which ``local`` (Ray's
    word for a new local Ray) asks for too."""
    given, name = (address, "--address") if address else (os.environ.get("RAY_ADDRESS", ""), "RAY_ADDRESS")
    return ("" if given.strip() == "local" else given), name


def check_reachable(address: str, timeout: float = 5.0, given_by: str = "--address") -> None:
    """A ``ValueError`` when nothing answers at a cluster's ``address`` (``host:port``, the
    head's GCS port 6379 by default, or ``ray://host:port``, 10001 by default): Ray itself
    retries for minutes before it says so. ``auto`` is Ray's to resolve. ``given_by``:
    ``--address`` or ``RAY_ADDRESS``, which the message names."""
    if address in ("auto", "local"):
        return
    rest, port = address, 6379
    if "://" in address:
        scheme, rest = address.split("://", 1)
        port = 10001 if scheme == "ray" else port
    host, _, given = rest.rstrip("/").rpartition(":") if ":" in rest else (rest, "", "")
    if given.isdigit():
        port = int(given)
    else:
        host = rest.rstrip("/")
    try:
        socket.create_connection((host.strip("[]"), port), timeout=timeout).close()
    except OSError as exc:
        flag = given_by == "--address"
        key, instead = ("config key 'address'", "leave --address out") if flag else (given_by, f"unset {given_by}")
        raise ValueError(
            f"{key}: nothing answers at {address} ({host}:{port}: {exc.strerror or exc}); start the cluster's head "
            f"(ray start --head) or {instead} to train on a local Ray"
        ) from None


STOPPING_RAY = "still stopping Ray (a few seconds); Ctrl-C again stops at once"
"""Said at a Ctrl-C (or SIGTERM) while RLlib's runners and Ray stop, which takes seconds
after the final save: one is held back, so the run's result is still reported."""


class _StoppingRay:
    """One Ctrl-C (or SIGTERM) held back, saying :data:`STOPPING_RAY`, from :meth:`start`
    (before RLlib's runners stop) until the block ends (after Ray's shutdown), the next
    stopping at once: RLlib's ``algo.stop()`` and Ray's shutdown each held one back on a
    count of its own, and it took up to five presses to stop."""

    def __init__(self) -> None:
        self._stack = contextlib.ExitStack()
        self._held = False

    def start(self) -> None:
        if not self._held:
            self._stack.enter_context(saving_despite_ctrl_c(STOPPING_RAY))
            self._held = True

    def __enter__(self) -> _StoppingRay:
        return self

    def close(self) -> None:
        self._stack.close()

    def __exit__(self, *exc_info: object) -> None:
        self.close()


RAY_SOCKET_TAIL = len("/session_2026-12-05_23-59-59_123456_1234567/sockets/plasma_store")
"""What Ray puts after its temporary folder in its longest socket path (a session
folder named by the date, time and process id, then the socket)."""
SOCKET_PATH_LIMIT = 103
"""The longest socket path macOS takes (Linux takes 107)."""


def ray_link(target: Path) -> Path:
    """The short link to a run's Ray folder ``target``, which Ray is given as its
    temporary folder: its sockets are made under it, and a socket path must fit
    :data:`SOCKET_PATH_LIMIT` bytes, which a run folder rarely does. It goes under
    ``/tmp`` on macOS, whose own temporary folder (``/var/folders/...``) is too long
    already, as Ray itself does, and under the temporary folder elsewhere. A
    ``ValueError`` says what to do when even that is too long."""
    digest = hashlib.sha1(str(target).encode()).hexdigest()[:10]
    folder = Path("/tmp") if sys.platform == "darwin" else Path(tempfile.gettempdir())
    link = folder / f"llama-rl-ray-{digest}"
    if len(os.fsencode(link)) + RAY_SOCKET_TAIL > SOCKET_PATH_LIMIT:
        raise ValueError(
            f"the temporary folder {folder} is too long a path for Ray's sockets (at most "
            f"{SOCKET_PATH_LIMIT - RAY_SOCKET_TAIL - len(link.name) - 1} characters): set TMPDIR to a shorter "
            "folder, such as /tmp, for the run"
        )
    return link


@contextlib.contextmanager
def ray_session(
    run: RunDir, address: str, num_cpus: int | None = None, stopping: _StoppingRay | None = None
) -> Iterator[None]:
    """Ray for one training session: the given cluster, or a local Ray started here and
    shut down at the end, its temporary files under ``<run>/ray``. The process's
    ``RAY_AUTH_MODE``, which a local Ray is started with, is put back at the end. One
    Ctrl-C is held back while Ray shuts down, on the count of ``stopping``, which the
    trainer starts before RLlib's runners stop."""
    auth = os.environ.get("RAY_AUTH_MODE")
    try:
        with _ray_session(run, address, num_cpus, stopping or _StoppingRay()):
            yield
    finally:
        if auth is None:
            os.environ.pop("RAY_AUTH_MODE", None)
        else:
            os.environ["RAY_AUTH_MODE"] = auth


@contextlib.contextmanager
def _ray_session(run: RunDir, address: str, num_cpus: int | None, stopping: _StoppingRay) -> Iterator[None]:
    import ray

    env_vars = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    address, given_by = cluster_address(address)
    if not address:
        # a local Ray of our own: no token file in ~/.ray (a cluster keeps its own auth settings)
        os.environ.setdefault("RAY_AUTH_MODE", "disabled")
        env_vars["RAY_AUTH_MODE"] = os.environ["RAY_AUTH_MODE"]
    if ray.is_initialized():  # a caller's own Ray: use it as it is
        try:
            yield
        finally:
            stopping.close()
        return
    link: Path | None = None
    # ray.init replaces SIGTERM's handler with its own (it logs and dies), so a handler the
    # caller installed (``llama-rl train`` stops on SIGTERM as on Ctrl-C) is put back after it
    main = threading.current_thread() is threading.main_thread()
    on_term = signal.getsignal(signal.SIGTERM) if main else None
    try:
        if address:
            check_reachable(address, given_by=given_by)
            ray.init(address=address, log_to_driver=False, configure_logging=False, runtime_env={"env_vars": env_vars})
        else:
            target = (run.path / "ray").resolve()
            target.mkdir(parents=True, exist_ok=True)
            if os.name == "nt":  # Ray talks over TCP there: no socket path to keep short (and no link without rights)
                temp_dir = target
            else:
                link = ray_link(target)
                if link.is_symlink() or link.exists():
                    link.unlink()
                link.symlink_to(target, target_is_directory=True)
                temp_dir = link
            ray.init(
                address="local",  # a new Ray, though RAY_ADDRESS names a cluster (--address local)
                num_cpus=num_cpus or usable_cores(),
                include_dashboard=False,
                log_to_driver=False,
                configure_logging=False,
                _temp_dir=str(temp_dir),
                runtime_env={"env_vars": env_vars},
            )
        if callable(on_term):
            signal.signal(signal.SIGTERM, on_term)
        yield
    finally:
        try:
            stopping.start()  # the run's result is still to be reported
            if ray.is_initialized():
                ray.shutdown()
        finally:
            stopping.close()  # before SIGTERM's handler is put back, which the hold's would replace
            # ray.shutdown sets SIGTERM back to the system's default beneath Python (signal.getsignal still
            # names the handler before it): after a run SIGTERM killed the process at once, a caller's
            # handler (llama-rl train's, during its final evaluation) never called. What it was is put back.
            if on_term is not None:
                signal.signal(signal.SIGTERM, on_term)
            if link is not None:
                with contextlib.suppress(OSError):
                    link.unlink()


def check_local_cores(
    options: RllibOptions,
    *,
    flag: str = "config key 'num_env_runners'",
    remedy: str = "pass --address to train on a cluster with more",
) -> None:
    """A ``ValueError`` when a local Ray would get more env runners than it has cores,
    before it starts: it is started with one CPU a core (:func:`usable_cores`), each
    remote env runner takes one (the learner and the local runner run in this process
    and take none), and RLlib waits for every runner with no time limit, so the run hung
    without a word. The error names ``flag`` (what set the count: a script's own flag),
    the cores and ``remedy`` ("": none). A cluster's CPUs (``options.address``, or a Ray
    already running) are that Ray's to count."""
    import ray

    runners = options.num_env_runners
    if not runners:
        return
    cores = None if cluster_address(options.address)[0] or ray.is_initialized() else usable_cores()
    if cores is not None and runners > cores:
        raise ValueError(
            f"{flag} must be at most {cores} on a local Ray, which has {cores} cores and gives each env runner "
            f"one, got {runners}{f'; {remedy}' if remedy else ''}"
        )


def _warn_short_of_cpus(runners: int) -> None:
    """A warning, before RLlib asks for its env runners, when the running Ray has fewer
    CPUs than ``runners`` (each takes one): RLlib then waits, with no time limit, until the
    cluster grows (as one that scales up does), and Ray's own word on it is hidden."""
    import ray

    if not runners or not ray.is_initialized():
        return
    cpus = int(ray.cluster_resources().get("CPU", 0))
    if runners > cpus:
        warnings.warn(
            f"num_env_runners {runners}: the Ray cluster has {cpus} CPUs and each env runner takes one; training "
            f"waits until it has {runners} (Ctrl-C stops it; give at most {cpus} env runners, or add machines)",
            RuntimeWarning,
            stacklevel=2,
        )


def build_algorithm_config(config: TrainConfig, env_seed: int) -> Any:
    """The RLlib ``PPOConfig`` of a run: the env, the masked module, PPO's settings."""
    from ray.rllib.algorithms.ppo import PPOConfig
    from ray.rllib.core.rl_module.multi_rl_module import MultiRLModuleSpec
    from ray.rllib.core.rl_module.rl_module import RLModuleSpec

    from llama_env.observation import obs_size
    from train.training.rllib.env import HIDDEN_SIZE, SHARED_POLICY, policy_mapping
    from train.training.rllib.module import MaskedPPOModule
    from train.training.rllib.runner import LlamaEnvRunner

    options: RllibOptions = config.options
    batch = config.n_steps * config.n_envs
    share = config.n_envs // max(1, options.num_env_runners)  # RLlib gives every env runner as many games
    if share * max(1, options.num_env_runners) != config.n_envs:
        warnings.warn(
            f"n_envs {config.n_envs} is no multiple of num_env_runners {options.num_env_runners}: each env runner "
            f"plays {share} games, {share * options.num_env_runners} in all (the train batch is still n_steps x "
            "n_envs steps); give a multiple to play them all",
            RuntimeWarning,
            stacklevel=2,
        )
    module = RLModuleSpec(
        module_class=MaskedPPOModule,
        model_config={
            "fcnet_hiddens": list(config.net_arch),
            "fcnet_activation": config.activation,
            "head_fcnet_hiddens": [],
            "vf_share_layers": False,
            **({"critic_input_size": obs_size(config.obs_version) + HIDDEN_SIZE} if options.privileged_critic else {}),
        },
    )
    return (
        PPOConfig()
        .environment(
            ENV_NAME,
            env_config={
                "players": list(config.players),
                "opponents": dict(config.opponents),
                "reward": config.reward,
                "seed": env_seed,
                "obs_version": config.obs_version,
                "rules": config.rule_options(),
                "privileged_critic": options.privileged_critic,
                # the opponents registered at run time, which Ray's runners never import
                "registered": cloudpickle.dumps(registrations(config.opponents)),
            },
            disable_env_checking=True,  # its checker sends random, unmasked actions
        )
        .env_runners(
            num_env_runners=options.num_env_runners,
            num_envs_per_env_runner=share,
            rollout_fragment_length="auto",
            num_cpus_per_env_runner=1,
            env_runner_cls=LlamaEnvRunner,
            # a sample waits for its runners however long their games take: after RLlib's 60 s it dropped
            # theirs, and an iteration that learned no step is taken for a failure (_loop)
            sample_timeout_s=None,
        )
        .learners(
            num_learners=0,
            # the runner's episode chunks go to PPO's batch in one piece (rllib_batch)
            learner_connector=functools.partial(_train_batch_connector, config.gamma, config.gae_lambda),
            add_default_connectors_to_learner_pipeline=False,
        )
        .multi_agent(policies={SHARED_POLICY}, policy_mapping_fn=policy_mapping, policies_to_train=[SHARED_POLICY])
        .rl_module(rl_module_spec=MultiRLModuleSpec(rl_module_specs={SHARED_POLICY: module}))
        .training(
            # the SB3 trainer's decay: lr x max(1 - steps / total_timesteps, 0.05), piecewise linear
            lr=(
                [[0, config.learning_rate], [int(0.95 * config.total_timesteps), 0.05 * config.learning_rate]]
                if config.anneal_lr
                else config.learning_rate
            ),
            gamma=config.gamma,
            lambda_=config.gae_lambda,
            clip_param=config.clip_range,
            entropy_coeff=config.ent_coef,
            vf_loss_coeff=config.vf_coef,
            grad_clip=config.max_grad_norm,
            train_batch_size_per_learner=batch,
            minibatch_size=min(config.batch_size, batch),
            num_epochs=config.n_epochs,
            use_kl_loss=bool(config.target_kl),
            kl_target=config.target_kl or 0.01,
        )
        # a failed env runner (an opponent raising in its games) stops the run, saying why (_loop): RLlib's
        # default restarted it a minute later, up to 1000 times, and the run hung on iterations of no step
        .fault_tolerance(restart_failed_env_runners=False, ignore_env_runner_failures=False)
        .debugging(seed=config.seed, log_level="ERROR")
        .reporting(metrics_num_episodes_for_smoothing=100)
    )


def _train_batch_connector(gamma: float, lambda_: float, observation_space: Any, action_space: Any) -> Any:
    from train.training.rllib.batch import EpisodesToTrainBatch

    return EpisodesToTrainBatch(observation_space, action_space, gamma=gamma, lambda_=lambda_)


def _module(algo: Any) -> Any:
    from train.training.rllib.env import SHARED_POLICY

    return algo.get_module(SHARED_POLICY)


def export_actor(algo: Any, config: TrainConfig) -> Actor:
    from train.training.rllib.module import actor_from_module

    return actor_from_module(_module(algo), config.activation)


def _trained_steps(checkpoint: Path) -> int:
    """The steps an RLlib checkpoint of a run holds, from its name (``rllib_<steps>``)."""
    return int(checkpoint.name[len(RLLIB_CHECKPOINT_PREFIX) :])


def _checkpoints(run: RunDir) -> list[Path]:
    found = []
    for p in run.checkpoints_dir.glob(f"{RLLIB_CHECKPOINT_PREFIX}*"):
        try:
            found.append((_trained_steps(p), p))
        except ValueError:
            continue
    return [p for _, p in sorted(found)]


def newest_whole_checkpoint(checkpoints: list[Path], run: RunDir) -> Path:
    """The newest of ``checkpoints`` (oldest first) that is whole
    (:func:`~train.training.run_dir.rllib_checkpoint_problem`); the newer ones are skipped
    with a warning naming each, as the sb3 backend skips its broken checkpoints. A
    ``ValueError`` when none is whole."""
    for checkpoint in reversed(checkpoints):
        problem = rllib_checkpoint_problem(checkpoint)
        if problem is None:
            return checkpoint
        warnings.warn(f"resume: skipping {checkpoint} ({problem})", RuntimeWarning, stacklevel=2)
    raise ValueError(
        f"config key 'resume': no usable RLlib checkpoint in {run.path}: every one in {run.checkpoints_dir} is "
        "damaged (see the warnings)"
    )


def _resumed_checkpoint(given: Path, found: list[Path], run: RunDir) -> Path:
    """The checkpoint a ``--resume`` of the run ``given`` goes on from: the run's newest
    whole one (:func:`newest_whole_checkpoint`), or the folder of one of its ``found``
    checkpoints when ``given`` is one, as the sb3 backend takes one of its zips: refused
    when it is not whole, or when newer ones follow it (training on from it would
    overwrite them)."""
    if not given.is_dir() or given.parent.resolve() != run.checkpoints_dir.resolve():
        return newest_whole_checkpoint(found, run)
    if given.resolve() not in {c.resolve() for c in found}:
        raise ValueError(
            f"config key 'resume': {given} is no checkpoint of the run {run.path} (those are "
            f"{RLLIB_CHECKPOINT_PREFIX}<steps> folders): resume the run's directory, which continues from its newest"
        )
    problem = rllib_checkpoint_problem(given)
    if problem is not None:
        raise ValueError(f"config key 'resume': {given} is not a usable checkpoint ({problem})")
    refuse_newer(given, _trained_steps(given), run)
    return given


def _save_checkpoint(algo: Any, run: RunDir, steps: int) -> Path:
    """``algo.save_to_path`` into a temporary folder, then renamed into place."""
    final = run.checkpoints_dir / f"{RLLIB_CHECKPOINT_PREFIX}{steps}"
    tmp = run.checkpoints_dir / f".{final.name}.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        algo.save_to_path(str(tmp.resolve()))
        if final.exists():
            shutil.rmtree(final)
        tmp.rename(final)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return final


def _metrics_state(algo: Any) -> dict[str, Any]:
    """A copy of RLlib's metrics (``algo.metrics``), taken before an iteration and put back
    when a stop lands inside it: the steps an iteration sampled wait in them until it ends,
    so a stop during the learner's update left them in the final checkpoint, and the
    resumed session's first iteration counted them with its own (its steps, checkpoint
    names and ``progress.jsonl`` one batch ahead). The batch of a stopped update is left
    out of the count whole, though the learner steps its optimizer per minibatch: the
    weights saved may have learned from part of it (sb3 counts such a rollout whole)."""
    return copy.deepcopy(algo.metrics.get_state())


def _learner_steps(result: dict[str, Any]) -> int:
    """The learning seats' decisions the runners returned in this iteration: what the policy trains on."""
    from train.training.rllib.env import SHARED_POLICY

    steps = result.get("env_runners", {}).get("num_module_steps_sampled", {})
    return int(steps.get(SHARED_POLICY, 0)) if isinstance(steps, dict) else 0


def train_rllib(config: TrainConfig) -> TrainResult:
    """Run (or resume) a training run on RLlib; see the module docstring.

    Raises ``ValueError`` for a bad config and :class:`RunDirError` when the run
    directory cannot be written or is in use."""
    import ray.rllib  # noqa: F401 - imported first, so that its loggers exist to be quieted

    _quiet_ray()
    config.validate()
    check_local_cores(config.options)
    run, fresh = session_run(config)
    resume_from: Path | None = None
    if config.resume:
        found = [] if fresh else _checkpoints(run)
        if not found:
            raise ValueError(
                f"config key 'resume': no RLlib checkpoint in {config.resume if fresh else run.path} (the rllib "
                "backend continues a run directory it wrote, or a checkpoint in one)"
            )
        resume_from = _resumed_checkpoint(Path(config.resume), found, run)
        check_steps_left(resume_from, _trained_steps(resume_from), config)
        _warn_cluster_left(run, config.options.address)
    run.create(fresh=fresh)
    # RLlib's runners and Ray take seconds to stop after the final save: one Ctrl-C is held back
    # from the first's stop until the second's is done, so that the run's result is still reported
    with (
        _runner_failures_unlogged(),
        run.lock(),
        removed_if_new(run, fresh),
        _StoppingRay() as stopping,
        ray_session(run, config.options.address, stopping=stopping),
    ):
        _warn_short_of_cpus(config.options.num_env_runners)
        return _train_rllib_locked(config, run, resume_from, stopping)


def _warn_cluster_left(run: RunDir, address: str) -> None:
    """A warning when the run's last session trained on a cluster (the ``address`` its
    config records) and this one, given no address (nor ``RAY_ADDRESS``), starts a local
    Ray: the address is a session's own, not carried over on resume, so the run would
    otherwise move off its cluster without a word."""
    with contextlib.suppress(RunDirError):  # an unreadable config is the resume's to report, not this hint's
        then = (run.recorded_config() or {}).get("address")
        if isinstance(then, str) and then not in ("", "local") and not address and not os.environ.get("RAY_ADDRESS"):
            warnings.warn(
                f"resume: the run trained on {then}; this session trains on a local Ray: give --address to resume "
                "there",
                RuntimeWarning,
                stacklevel=2,
            )


def _train_rllib_locked(
    config: TrainConfig, run: RunDir, resume_from: Path | None, stopping: _StoppingRay
) -> TrainResult:
    with torch_threads(config.torch_threads):  # the caller's put back when the run ends
        return _train_rllib_threads_set(config, run, resume_from, stopping)


def _train_rllib_threads_set(
    config: TrainConfig, run: RunDir, resume_from: Path | None, stopping: _StoppingRay
) -> TrainResult:
    import numpy as np
    from ray.tune.registry import register_env

    from train.training.rllib._internals import tune_logdir_aside
    from train.training.rllib.env import LlamaMultiAgentEnv

    register_env(ENV_NAME, lambda env_config: LlamaMultiAgentEnv(env_config))
    config_file = run.next_resume_config_path() if resume_from is not None else run.config_path
    write_json_atomic(config_file, config.to_dict())
    start_steps = _trained_steps(resume_from) if resume_from is not None else 0
    env_seed = int(np.random.SeedSequence([config.seed, start_steps]).generate_state(1)[0])
    never = past_never_plays(config.opponents, config.past_every, config.total_timesteps, start_steps, 0)
    if never:  # the pool starts empty: it is filled by this session's snapshots alone
        warnings.warn(never, RuntimeWarning, stacklevel=2)
    saved: list[Path] = []
    with forgotten_unless_saved(config_file, saved), tune_logdir_aside():
        algo = _build_algo(config, env_seed)
        try:
            if resume_from is not None:
                _restore(algo, resume_from, run)
                # the rows a killed session wrote past the step this one goes on from
                run.drop_rows_after(run.path / PROGRESS_FILE, "learner_steps", start_steps)
                run.drop_rows_after(run.eval_path, "timesteps", start_steps)
            return _loop(config, run, algo, resume_from, start_steps, config_file, saved)
        finally:
            stopping.start()  # a Ctrl-C after the save lost the result: one is held back until Ray is down
            algo.stop()


def _build_algo(config: TrainConfig, env_seed: int) -> Any:
    """RLlib's algorithm for the run. An env runner that cannot start (its games cannot be
    built on its machine: an opponent's file only on this one, say) is a ``ValueError`` in
    a line naming the runner's error: RLlib raises that error, of any type, after Ray's
    traceback of the runner (with restarts on it was an ``IndexError`` of RLlib's), with
    Ray's ``RayActorError`` as its ``__context__`` (assumption 8 of
    :mod:`train.training.rllib._internals`)."""
    from ray.exceptions import RayError

    try:
        return build_algorithm_config(config, env_seed).build_algo()
    except Exception as exc:  # noqa: BLE001 - a runner's own error may be of any type
        if not isinstance(exc, RayError) and not isinstance(exc.__context__, RayError):
            raise
        raise ValueError(f"an env runner failed to start ({error_line(_runner_error(exc))})") from exc


def _restore(algo: Any, checkpoint: Path, run: RunDir) -> None:
    """``algo.restore_from_path(checkpoint)``; a checkpoint whole to the eye that RLlib
    still cannot read is a ``ValueError`` naming it, not RLlib's traceback."""
    try:
        algo.restore_from_path(str(checkpoint.resolve()))
    except Exception as exc:  # noqa: BLE001 - a damaged pickle or state raises many types
        raise ValueError(
            f"config key 'resume': cannot restore {checkpoint} ({error_line(exc)}): move it out of "
            f"{run.checkpoints_dir} to resume from the one before"
        ) from None


class EnvRunnerStopped(ProcessStopped):
    """An env runner failed (its process killed, an error of its own) or RLlib's iteration
    sampled no step: the run cannot go on. The message says which."""


def _runner_error(exc: BaseException) -> BaseException:
    """A runner's own error in Ray's ``RayTaskError`` (its ``cause``), else ``exc``."""
    return getattr(exc, "cause", None) or exc


def _failure(exc: BaseException) -> BaseException:
    """What stopped a run, as it is said: an opponent's ``AgentError`` or
    ``IllegalActionError`` itself (a remote runner's comes wrapped in Ray's error, its
    traceback the message), anything else of a runner an :class:`EnvRunnerStopped`."""
    cause = _runner_error(exc)
    if isinstance(cause, (AgentError, IllegalActionError, EnvRunnerStopped)):
        return cause
    return EnvRunnerStopped(f"an env runner stopped ({_died_line(cause)})")


_DEAD_BECAUSE = "The actor is dead because"
"""How the line of Ray's ``ActorDiedError`` that gives the reason begins, after the lines
naming the actor (its class, id, process, machine)."""


def _died_line(exc: BaseException) -> str:
    """``error_line(exc)``, and for a runner's process that died (Ray's ``RayActorError``)
    the reason Ray gives, its first sentence of detail: the exit type (``NODE_OUT_OF_MEMORY``,
    ``SYSTEM_ERROR``, ``INTENDED_USER_EXIT``) or ``ray.kill``. The first line alone only
    said that the actor died."""
    from ray.exceptions import RayActorError

    line = error_line(exc)
    if not isinstance(exc, RayActorError):
        return line
    for text in str(exc).splitlines()[1:]:
        text = text.strip()
        if text.startswith(_DEAD_BECAUSE):
            head, sep, detail = text.partition("Worker exit detail: ")
            if sep:  # its first sentence: the rest is the node's memory figures and the like
                text = f"{head}{sep}{detail.split('. ')[0].rstrip('.')}."
            return f"{line} {text[:240]}"
    return line


def _loop(
    config: TrainConfig,
    run: RunDir,
    algo: Any,
    resume_from: Path | None,
    start_steps: int,
    config_file: Path,
    saved: list[Path],
) -> TrainResult:
    """Train until the step budget, the target or Ctrl-C, then write the final files;
    ``saved`` gathers the checkpoints written. An opponent or the evaluation's agent failing
    in a game, or an env runner stopping, saves them as Ctrl-C does, then raises
    :class:`TrainingStopped` naming it (or its own error when nothing was learned yet)."""
    from ray.exceptions import RayError

    steps = start_steps
    evals: list[dict[str, Any]] = []
    past: list[Actor] = []
    next_ckpt = next_multiple(steps, config.checkpoint_every)
    next_eval = next_multiple(steps, config.eval_every)
    next_past = next_multiple(steps, config.past_every)
    bar = None
    budget = config.total_timesteps - steps
    if config.progress_bar and budget > 0:
        print(f"training {budget:,} steps on RLlib (to {config.total_timesteps:,}) in {run.path}", flush=True)
        bar = step_bar(budget)
    interrupted = False
    failure: BaseException | None = None
    stopped_early = False
    aside = 0.0  # seconds of checkpoints and evaluations: no part of training's time
    t0 = time.perf_counter()
    before: dict[str, Any] | None = None  # RLlib's metrics before the iteration under way
    try:
        while steps < config.total_timesteps and not stopped_early:
            before = _metrics_state(algo)
            result = algo.train()
            before = None
            done = _learner_steps(result)
            if done == 0:  # RLlib returns an iteration without samples when its runners fail
                raise EnvRunnerStopped("an RLlib iteration sampled no step (its env runners returned no games)")
            if bar is not None:
                bar.update(done)
            steps += done
            run.append_jsonl(run.path / PROGRESS_FILE, _progress_row(result, steps))
            if config.past_every and steps >= next_past and steps < config.total_timesteps:
                # a snapshot joins the league before more sampling only: none follows the budget's last
                # update, and a runner dead by then could abort a finished run
                past.append(export_actor(algo, config))
                del past[: -config.past_pool]
                snapshots = list(past)
                _foreach_env(algo, lambda env, s=snapshots: env.set_past_policies(s))
                next_past = next_multiple(steps, config.past_every)
            started = time.perf_counter()
            if config.checkpoint_every and steps >= next_ckpt:
                saved.append(_save_checkpoint(algo, run, steps))
                next_ckpt = next_multiple(steps, config.checkpoint_every)
            if config.eval_every and steps >= next_eval:
                evals.append(_evaluate(algo, config, run, steps, bar))
                next_eval = next_multiple(steps, config.eval_every)
                stopped_early = stops_early(config, evals[-1])
            spent = time.perf_counter() - started
            aside += spent
            if bar is not None:
                leave_out(bar, spent)
    except KeyboardInterrupt:  # in an iteration, or in the checkpoint or evaluation after it (the last too)
        interrupted = True
    except (AgentError, IllegalActionError, RayError, EnvRunnerStopped) as exc:
        interrupted, failure = True, _failure(exc)
    except OSError as exc:
        raise RunDirError(
            f"cannot write to the run directory {run.path} ({exc}); training stopped at {steps} steps: "
            f"checkpoints saved before are kept{_rescued(algo, config, run, steps)}"
        ) from None
    finally:
        if bar is not None:
            bar.close()
    if before is not None:  # stopped inside an iteration: what it sampled was not learned from
        algo.metrics.set_state(before)
    raise_unless_learned(failure, steps > start_steps)
    if interrupted and failure is None:
        say_interrupted(steps, steps > start_steps, run.path, resume_from)
    wall = time.perf_counter() - t0 - aside
    try:
        with saving_despite_ctrl_c():
            saved.append(_save_checkpoint(algo, run, steps))
            save_actor(_run_policy(algo, config, run, steps), run.path / "model.npz")
            decisions, illegal, not_counted = _runner_counts(algo)
            summary = {
                "backend": "rllib",
                "num_timesteps": steps,
                "steps_this_session": steps - start_steps,
                "all_seats_decisions_sampled": decisions,
                "illegal_actions": illegal,
                "env_runners_not_counted": not_counted,
                "wall_s": wall,
                "eval_save_s": aside,
                "interrupted": interrupted,
                "stopped_early": stopped_early,
            }
            write_json_atomic(run.summary_path, summary)
            run.append_session(start_steps, steps, config_file.name, resume_from, interrupted)
    except OSError as exc:
        raise RunDirError(
            f"cannot write the final files of {run.path} ({exc}){_rescued(algo, config, run, steps)}"
        ) from None
    trained = TrainResult(
        run_dir=run.path,
        model_path=run.path / "model.npz",
        num_timesteps=steps,
        steps_this_session=steps - start_steps,
        wall_s=wall,
        env_s=0.0,
        learn_s=wall,
        interrupted=interrupted,
        evals=evals,
        backend="rllib",
        stopped_early=stopped_early,
        eval_save_s=aside,
    )
    return result_or_stopped(trained, failure)


def _run_policy(algo: Any, config: TrainConfig, run: RunDir, steps: int) -> Actor:
    """The policy at ``steps``, saying the table sizes and rules the run trained at up to
    then, as ``llama-rl export`` of its checkpoint at ``steps`` writes them (a copy of the
    file alone keeps them): read from the run's configs and sessions
    (:func:`agents.ppo.with_run_trained_at`), so that they are said whether that checkpoint
    was saved (``model.npz``) or not (a rescue)."""
    checkpoint = run.checkpoints_dir / f"{RLLIB_CHECKPOINT_PREFIX}{steps}" / RLLIB_MODULE_STATE
    return with_run_trained_at(export_actor(algo, config), checkpoint)


def _rescued(algo: Any, config: TrainConfig, run: RunDir, steps: int) -> str:
    """Export the policy somewhere writable when the run directory is not; says where."""
    return run.rescue(lambda path: save_actor(_run_policy(algo, config, run, steps), path), steps, ".npz", "policy")


def _evaluate(algo: Any, config: TrainConfig, run: RunDir, steps: int, bar: Any) -> dict[str, Any]:
    row = evaluation_row(export_actor(algo, config), config, steps)
    run.append_eval(row)
    if bar is not None:
        bar.write(evaluation_message(config, row))
    else:  # progress_bar off: the line alone (every evaluation runs in the loop, while a bar is open)
        print(evaluation_message(config, row), flush=True)
    return row


def _progress_row(result: dict[str, Any], steps: int) -> dict[str, Any]:
    runners = result.get("env_runners", {})
    learner = result.get("learners", {}).get("shared", {})
    row: dict[str, Any] = {"learner_steps": steps, "iteration_s": result.get("time_this_iter_s")}
    for key in ("num_env_steps_sampled_lifetime", "episode_return_mean", "episode_len_mean", "illegal_actions"):
        value = runners.get(key)
        if isinstance(value, (int, float)):
            row[key] = float(value)
    for key in ("policy_loss", "vf_loss", "entropy", "mean_kl_loss"):
        value = learner.get(key)
        if isinstance(value, (int, float)):
            row[key] = float(value)
    return row


def _sub_envs(runner: Any) -> list[Any]:
    """The :class:`LlamaMultiAgentEnv` objects inside an env runner's vector env (none
    for the local runner when remote runners do the sampling: it holds no env)."""
    if getattr(runner, "env", None) is None:
        return []
    env = getattr(runner.env, "unwrapped", runner.env)
    return [e for e in (getattr(e, "unwrapped", e) for e in getattr(env, "envs", [env])) if e is not None]


def _runner_counts(algo: Any) -> tuple[int, int, int]:
    """The decisions sampled (every seat's) and the illegal actions received on the env
    runners that answer, and how many remote runners do not (dead by the run's end, a
    ``timeout``'s SIGTERM to the process group, say): the summary's counts leave theirs
    out, and say how many. A runner out of service after failing is asked too, as it is
    alive. RLlib's own call raised the first runner's error, after the final save, and
    the run ended without its summary; so each runner's answer is fetched on its own."""
    import ray
    from ray.exceptions import RayError

    def counts(runner: Any) -> tuple[int, int]:
        envs = _sub_envs(runner)
        return sum(int(e.decisions) for e in envs), sum(int(e.illegal_total) for e in envs)

    group = algo.env_runner_group
    answers = [] if group.local_env_runner is None else [counts(group.local_env_runner)]
    not_counted = 0
    if group.num_remote_env_runners():
        refs = group.foreach_env_runner(counts, local_env_runner=False, healthy_only=False, return_obj_refs=True)
        not_counted = group.num_remote_env_runners() - len(refs)
        for ref in refs:
            try:
                answers.append(ray.get(ref))
            except RayError:
                not_counted += 1
    return sum(d for d, _ in answers), sum(i for _, i in answers), not_counted


def _foreach_env(algo: Any, fn: Any) -> list[Any]:
    """``fn(env)`` on every sub-env of every env runner, local and remote; the results."""
    per_runner = algo.env_runner_group.foreach_env_runner(lambda runner: [fn(e) for e in _sub_envs(runner)])
    return [x for results in per_runner for x in results]
