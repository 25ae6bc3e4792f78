"""MaskablePPO self-play training on the batched vec env: ``train_sb3(config) -> TrainResult``
(the sb3 backend's ``run``; call it through :func:`train.training.train`).

The learner holds one seat of every game in
:class:`train.training.sb3.vec_env.BatchedLlamaVecEnv`; the other seats are drawn from the
configured opponent mix: baselines by name, the current policy (``"self"``) and a
league of past snapshots of this run (``"past"``). Policy opponents act through
:class:`agents.ppo.Actor` (numpy) in one forward pass per batch; the ``"self"`` copy is
refreshed at the start of every rollout, which is exactly the policy being collected
with, since PPO only updates between rollouts.

A run directory ``runs/llama__maskableppo__<seed>__<time>/`` holds ``config.json``,
TensorBoard logs (scalars namespaced ``rollout/``, ``train/``, ``eval/``, ``speed/``),
``checkpoints/ppo_<steps>.zip``, ``eval.jsonl`` and the final ``model.zip``
(:mod:`train.training.run_dir`, which also says how nothing saved gets lost).

Ctrl-C (or SIGTERM) saves a checkpoint and the model before returning, in the evaluation
at the end of the budget too (a second Ctrl-C while that is written is held back until the
files are whole; a third stops at once, leaving the previous files); a new run stopped
before it learned a step is removed instead, as a failure then removes it. An env worker
killed (the system out of memory, a ``kill -9``), or an opponent or the evaluation's
agent failing in a game (an ``AgentError`` or ``IllegalActionError`` of the table
driver), saves them so too, then raises :class:`~train.training.result.TrainingStopped`
naming it; an agent failing before the session learned a step raises its own error, as
before (a new run is then left out).
``resume=`` continues a run with its step count: build the config with
:func:`resume_config`, which starts from the run's own recorded config.
"""

from __future__ import annotations

import contextlib
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from agents.ppo import Actor, actor_from_policy, load_actor, torch_load_error
from llama_env.engine import IllegalActionError
from llama_env.observation import VERSION_OF_SIZE
from llama_env.table import AgentError
from train._torch import torch_threads
from train.training.config import TrainConfig
from train.training.result import (
    TrainingStopped,
    TrainResult,
    raise_unless_learned,
    removed_if_new,
    result_or_stopped,
    say_interrupted,
)
from train.training.resume import check_steps_left, find_checkpoint, session_run
from train.training.run_dir import (
    RunDir,
    RunDirError,
    atomic_write,
    forgotten_unless_saved,
    saved_steps,
    saving_despite_ctrl_c,
    write_json_atomic,
)
from train.training.sb3 import Sb3Options
from train.training.sb3._internals import SavedModel, read_model_file, restore
from train.training.sb3.callbacks import TrainingHooks
from train.training.sb3.vec_env import ActorPolicy, LlamaVecEnv, policy_rng
from train.training.sb3.workers import EnvWorkerStopped, SplitVecEnv, make_vec_env
from train.training.seats import past_never_plays

__all__ = ["train_sb3", "save_model"]


def save_model(model: Any, path: Path) -> None:
    """``model.save`` to ``path``, atomically (see :func:`run_dir.atomic_write`)."""

    def write(tmp: Path) -> None:
        with open(tmp, "wb") as fh:
            model.save(fh)

    atomic_write(path, write)


def _quiet_logger(verbose: int) -> Any:
    """The SB3 logger of a run without TensorBoard: the rollout tables on stdout at
    ``verbose`` 1 or more, else nothing. Without it ``learn`` builds its own, which makes
    an empty ``SB3-<time>`` folder in the system's temporary directory on every run."""
    from stable_baselines3.common.logger import HumanOutputFormat, Logger

    return Logger(folder=None, output_formats=[HumanOutputFormat(sys.stdout)] if verbose >= 1 else [])


def _rescue(model: Any, run: RunDir) -> str:
    """Save the model somewhere writable when the run directory is not; says where."""
    return run.rescue(lambda path: save_model(model, path), model.num_timesteps, ".zip", "model")


def train_sb3(config: TrainConfig) -> TrainResult:
    """Run (or resume) a training run as configured; see the module docstring.

    Raises ``ValueError`` for a bad config (naming the key) and
    :class:`train.training.run_dir.RunDirError` when the run directory cannot be
    written or is in use; what was saved before is kept."""
    import torch
    from sb3_contrib import MaskablePPO

    config.validate()
    run, fresh = session_run(config)
    if config.resume:
        find_checkpoint(config.resume)  # a --resume that cannot be used is refused before anything is made
    run.create(fresh=fresh)
    with run.lock(), removed_if_new(run, fresh):
        resume_from = None
        if config.resume:  # again, now that no other trainer writes the run: its newest checkpoint
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # the skipped ones were reported above
                resume_from = find_checkpoint(config.resume)
        return _train_locked(config, run, resume_from, torch, MaskablePPO)


def _new_model(
    env: LlamaVecEnv | SplitVecEnv,
    config: TrainConfig,
    hyper: dict[str, Any],
    torch: Any,
    ppo_cls: Any,
    seed: int | None,
) -> Any:
    """A MaskablePPO of the config's network on ``env``, with this session's ``hyper``
    settings, seeding torch's generator and the games with ``seed`` (``None``: neither)."""
    act_fn = torch.nn.ReLU if config.activation == "relu" else torch.nn.Tanh
    arch = list(config.net_arch)
    return ppo_cls(
        "MlpPolicy",
        env,
        policy_kwargs=dict(net_arch=dict(pi=arch, vf=arch), activation_fn=act_fn),
        seed=seed,
        device="cpu",
        **hyper,
    )


def _resumed_model(
    resume_from: Path,
    env: LlamaVecEnv | SplitVecEnv,
    config: TrainConfig,
    hyper: dict[str, Any],
    torch: Any,
    ppo_cls: Any,
) -> Any:
    """The model a resume trains on: built as a new run builds one, with the network and
    the seed of ``resume_from``, its weights, optimizer state and step counts put back
    (:mod:`train.training.sb3._internals`), and this session's settings (``hyper``).

    No Python object of the file is unpickled, only tensors read: SB3's ``load`` unpickles
    every object of its ``data`` first, which runs any code a model file from elsewhere
    holds."""
    try:
        saved = read_model_file(resume_from)
    except Exception as exc:  # noqa: BLE001 - a zip whole but not SB3's raises many types
        raise _unloadable(resume_from, exc) from None
    _check_spaces(saved, env, config, resume_from)
    _keep_network_of(saved, config, resume_from)
    # seeded as SB3's load seeded it: torch's generator with the file's seed (and the games,
    # which the caller seeds again for the resumed part)
    model = _new_model(env, config, hyper, torch, ppo_cls, saved.seed)
    try:
        restore(model, saved)
    except Exception as exc:  # noqa: BLE001 - torch and SB3 refuse other layers with several types
        raise _unloadable(resume_from, exc) from None
    return model


def _unloadable(resume_from: Path, exc: BaseException) -> ValueError:
    return ValueError(
        f"config key 'resume': cannot load {resume_from} as a MaskablePPO model: {torch_load_error(exc, 200)}"
    )


def _check_spaces(saved: SavedModel, env: LlamaVecEnv | SplitVecEnv, config: TrainConfig, resume_from: Path) -> None:
    """What SB3's ``load`` checked: the file's network reads this run's observations (else
    which version to resume with), bounded as this run's (the bounds follow the end score)."""
    space = env.observation_space
    size = int(space.shape[0]) if space.shape else 0
    if saved.obs_size != size:
        version = VERSION_OF_SIZE.get(saved.obs_size)
        if version is not None and version != config.obs_version:
            raise ValueError(
                f"config key 'resume': {resume_from} reads observation version {version}, and this run is "
                f"set to {config.obs_version}: resume it with --obs-version {version}"
            )
        raise ValueError(
            f"config key 'resume': {resume_from} reads observations of {saved.obs_size} values, and this run's "
            f"have {size}"
        )
    bounds = saved.obs_bounds
    low, high = np.asarray(getattr(space, "low", [])), np.asarray(getattr(space, "high", []))
    if bounds is not None and not (
        bounds[0].shape == low.shape and np.allclose(bounds[0], low) and np.allclose(bounds[1], high)
    ):
        raise ValueError(
            f"config key 'resume': {resume_from} was trained on observations scaled for another end score than "
            f"this run's {config.end_score}: resume it with the --end-score it was trained with"
        )


def _keep_network_of(saved: SavedModel, config: TrainConfig, resume_from: Path) -> None:
    """The network of a resumed model is the one its weights have: ``config`` takes its
    ``net_arch`` and ``activation`` (a note says so where they differ), so that the run's
    config records the network it trains. A run directory's own settings were checked
    against its recorded config before (:func:`~train.training.resume.session_run`); this
    is for a model file from outside a run, which has none."""
    pi, vf = list(saved.policy_layers), list(saved.value_layers)
    activation = {"Tanh": "tanh", "ReLU": "relu"}.get(saved.activation)
    if pi != vf or activation is None:
        raise ValueError(
            f"config key 'resume': {resume_from} has a network this trainer does not make (policy {pi}, "
            f"value {vf}, {saved.activation}); it trains equal layers with tanh or relu"
        )
    if saved.other_policy_kwargs:
        raise ValueError(
            f"config key 'resume': {resume_from} has a policy made with settings this trainer does not make "
            f"({', '.join(saved.other_policy_kwargs)}); it makes the network's layers and activation only"
        )
    kept = (tuple(pi), activation)
    if kept != (config.net_arch, config.activation):
        print(
            f"note: {resume_from} holds a {','.join(map(str, kept[0]))} {kept[1]} network: the run trains it "
            f"(net_arch and activation cannot change the weights it has)",
            flush=True,
        )
        config.net_arch, config.activation = kept


def _train_locked(config: TrainConfig, run: RunDir, resume_from: Path | None, torch: Any, ppo_cls: Any) -> TrainResult:
    from threadpoolctl import threadpool_limits

    # torch on the run's threads, the caller's put back when the run ends; numpy's BLAS (the
    # opponents' forward passes, a few hundred rows) to one thread: more make such a small
    # matrix product ten times slower on a busy machine, and with env workers the other
    # cores are theirs while the games move
    with torch_threads(config.torch_threads), threadpool_limits(limits=1, user_api="blas"):
        return _train_limited(config, run, resume_from, torch, ppo_cls)


def _train_limited(config: TrainConfig, run: RunDir, resume_from: Path | None, torch: Any, ppo_cls: Any) -> TrainResult:
    torch.manual_seed(config.seed)
    env_seed = config.seed
    if resume_from is not None:
        # fresh games for the resumed part, still determined by (seed, step count)
        start = saved_steps(resume_from)
        check_steps_left(resume_from, start, config)
        env_seed = int(np.random.SeedSequence([config.seed, start]).generate_state(1)[0])
    options: Sb3Options = config.options
    try:
        env = make_vec_env(
            options.engine,
            options.env_workers,
            config.n_envs,
            players=config.players,
            opponents=config.opponents,
            reward=config.reward,
            seed=env_seed,
            obs_version=config.obs_version,
            rules=config.rules_at(min(config.players)),
        )
        opp_rng = policy_rng(env_seed)
        try:
            return _train_on(env, env_seed, opp_rng, config, run, resume_from, torch, ppo_cls)
        finally:
            env.close()  # stops the env workers, if any
    except EnvWorkerStopped as exc:  # before learning began (once it has, _learn saves and says so)
        raise TrainingStopped(f"{exc} before training began") from None


def _train_on(
    env: LlamaVecEnv | SplitVecEnv,
    env_seed: int,
    opp_rng: np.random.Generator,
    config: TrainConfig,
    run: RunDir,
    resume_from: Path | None,
    torch: Any,
    ppo_cls: Any,
) -> TrainResult:
    options: Sb3Options = config.options
    lr: Any = config.learning_rate
    if config.anneal_lr:
        base = config.learning_rate
        lr = lambda frac: base * max(frac, 0.05)  # noqa: E731 - SB3 takes a schedule callable
    tb_dir = str(run.tensorboard_dir) if options.tensorboard else None
    hyper: dict[str, Any] = dict(
        learning_rate=lr,
        n_steps=config.n_steps,
        batch_size=config.batch_size,
        n_epochs=config.n_epochs,
        gamma=config.gamma,
        gae_lambda=config.gae_lambda,
        clip_range=config.clip_range,
        ent_coef=config.ent_coef,
        vf_coef=config.vf_coef,
        max_grad_norm=config.max_grad_norm,
        target_kl=config.target_kl or None,
        tensorboard_log=tb_dir,
        verbose=options.verbose,
    )
    if resume_from is not None:
        model = _resumed_model(resume_from, env, config, hyper, torch, ppo_cls)
        # building it seeded the games with the file's seed, as SB3's load did: the resumed
        # part replayed the deals its run began with. Its own games, as documented:
        env.seed(env_seed)
    else:
        model = _new_model(env, config, hyper, torch, ppo_cls, config.seed)
    if tb_dir is None:
        model.set_logger(_quiet_logger(options.verbose))
    env.set_policy("self", ActorPolicy(actor_from_policy(model.policy), opp_rng))
    # recorded once the model is there: a session that could not start leaves no config
    config_file = run.next_resume_config_path() if run.config_files() else run.config_path
    try:
        write_json_atomic(config_file, config.to_dict())  # exactly what this session runs
    except OSError as exc:
        raise RunDirError(f"cannot write {config_file}: {exc}") from None
    saved: list[Path] = []
    with forgotten_unless_saved(config_file, saved):
        return _learn(model, env, opp_rng, config, run, resume_from, config_file, saved)


def _learn(
    model: Any,
    env: LlamaVecEnv | SplitVecEnv,
    opp_rng: np.random.Generator,
    config: TrainConfig,
    run: RunDir,
    resume_from: Path | None,
    config_file: Path,
    saved: list[Path],
) -> TrainResult:
    """Train the session's ``model`` and write its final files; ``saved`` gathers the
    checkpoints it writes."""
    # the past league: snapshots of earlier checkpoints of this run
    past: list[Actor] = []
    if resume_from is not None:
        for path in run.checkpoints()[-config.past_pool :]:
            with contextlib.suppress(ValueError):  # a broken checkpoint was already reported
                past.append(load_actor(path))
        env.set_past_policies([ActorPolicy(a, opp_rng) for a in past])
    if resume_from is not None:  # the evaluations a killed session made past the step it goes on from
        run.drop_rows_after(run.eval_path, "timesteps", model.num_timesteps)
    never = past_never_plays(
        config.opponents, config.past_every, config.total_timesteps, model.num_timesteps, len(past)
    )
    if never:
        warnings.warn(never, RuntimeWarning, stacklevel=2)

    def save_checkpoint() -> Path:
        path = run.checkpoint_path(model.num_timesteps)
        save_model(model, path)
        saved.append(path)
        return path

    evals: list[dict[str, Any]] = []
    start_steps = model.num_timesteps
    hooks = TrainingHooks(config, env, run, past, opp_rng, save_checkpoint, evals, start_steps)
    remaining = max(config.total_timesteps - start_steps, 0)
    interrupted = False
    write_error: OSError | None = None
    worker_stopped: EnvWorkerStopped | None = None
    agent_failed: AgentError | IllegalActionError | None = None
    t0 = time.perf_counter()
    env_t0 = env.env_time
    try:
        if remaining > 0:
            model.learn(
                total_timesteps=remaining,
                callback=hooks,
                reset_num_timesteps=resume_from is None,
                tb_log_name="ppo",
                progress_bar=False,
            )
    except KeyboardInterrupt:
        interrupted = True
    except EnvWorkerStopped as exc:  # saved as Ctrl-C saves (the policy is whole between updates), then raised
        interrupted, worker_stopped = True, exc
    except (AgentError, IllegalActionError) as exc:  # in a game (a rollout's step, an evaluation): likewise
        interrupted, agent_failed = True, exc
    except OSError as exc:  # TensorBoard or another writer lost the run directory
        write_error = exc
    finally:
        hooks.close()
    # a rollout cut short was never learned from: the policy is saved at the steps it learned
    model.num_timesteps = hooks.steps_learned()
    learned = model.num_timesteps > start_steps
    raise_unless_learned(agent_failed or worker_stopped, learned)
    if write_error is None and not interrupted and not hooks.halt and remaining > 0:
        try:
            hooks.after_learn()  # asks the games nothing: a worker dead by now stops no finished run
        except KeyboardInterrupt:  # in the checkpoint or evaluation at the end: saved as during learning
            interrupted = True
        except (AgentError, IllegalActionError) as exc:  # in the evaluation at the end: the budget is learned
            agent_failed = exc
    if worker_stopped is None and agent_failed is None and interrupted:
        say_interrupted(model.num_timesteps, learned, run.path, resume_from)
    write_error = write_error or hooks.write_error
    wall = hooks.learn_seconds or (time.perf_counter() - t0)
    if write_error is not None:
        kept = f"the last checkpoint kept is {saved[-1]}" if saved else "checkpoints saved before are kept"
        where = _rescue(model, run)
        raise RunDirError(
            f"cannot write to the run directory {run.path} ({write_error}); training stopped at "
            f"{model.num_timesteps} steps: {kept}{where}"
        ) from None
    try:
        with saving_despite_ctrl_c():
            if not saved or saved[-1] != run.checkpoint_path(model.num_timesteps):
                save_checkpoint()
            save_model(model, run.model_path)
            env_s = env.env_time - env_t0
            summary = {
                "num_timesteps": model.num_timesteps,
                "steps_this_session": model.num_timesteps - start_steps,
                "wall_s": wall,
                "env_s": env_s,
                "learn_s": wall - env_s,
                "eval_save_s": hooks.aside_s,
                "interrupted": interrupted,
                "stopped_early": hooks.stopped_early,
            }
            write_json_atomic(run.summary_path, summary)
            run.append_session(start_steps, model.num_timesteps, config_file.name, resume_from, interrupted)
    except OSError as exc:
        raise RunDirError(f"cannot write the final files of {run.path} ({exc}){_rescue(model, run)}") from None
    result = TrainResult(
        run_dir=run.path,
        model_path=run.model_path,
        num_timesteps=model.num_timesteps,
        steps_this_session=model.num_timesteps - start_steps,
        wall_s=wall,
        env_s=env_s,
        learn_s=wall - env_s,
        interrupted=interrupted,
        evals=evals,
        backend="sb3",
        stopped_early=hooks.stopped_early,
        eval_save_s=hooks.aside_s,
    )
    return result_or_stopped(result, worker_stopped or agent_failed)
