"""Search distilled into a policy: a PPO specialist trained to play the search agent's moves.

The search agent (:mod:`agents.search`) is stronger than the specialist it searches on,
and slower. ``llama-rl distill`` moves what its search finds into the policy itself, one
step of expert iteration, in two steps:

1. **Data**: ``games`` games of ``search`` (with ``worlds``, ``below`` and ``horizon``,
   searching with the shipped networks of the table size or ``networks``) at one seat
   (rotated from game to game) against ``heuristic`` at every other, played thousands at
   once on the batched engine (:class:`llama_env.table.BatchTable`), on deals no
   evaluation uses. At each of its decisions with more than one legal move: its
   version-1 observation, the legal moves, the specialist's probabilities of them, and,
   where it searched (:meth:`agents.search.SearchAgent.decide`), the move the search
   chose.
2. **The policy**: the specialist's actor (its weights, as the start) trained with Adam
   on the cross-entropy against a target per decision: the searched move where the
   search ran (or, with a ``temperature``, its moves weighted by their values; the
   decision weighted by ``searched_weight``), the specialist's own probabilities
   elsewhere (so the policy keeps what the search did not look at). One game in
   ``held_out`` is held out, at every seat in turn (:func:`train.fit.held_out_games`);
   after each epoch the agreement of its searched decisions with the search is reported,
   beside the specialist's.

The result is an actor file (``.npz``, :func:`agents.ppo.save_actor`) that ``ppo:path=``
plays and ``search`` can search on. Fitting needs PyTorch (the ``train`` extra).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from agents.base import agent_path
from agents.heuristic import HeuristicAgent
from agents.ppo import SHIPPED, Actor, load_actor, model_file, save_actor
from agents.search import BELOW_RANGE, MAX_WORLDS, NETWORKS, SearchAgent, check_mirror, networks_table_size
from llama_env.agent import Agent
from llama_env.batch import BatchGame
from llama_env.engine import DEFAULT_RULES, MAX_PLAYERS, MIN_PLAYERS, NUM_ACTIONS
from llama_env.table import BatchTable, BatchTableListener
from train._program import game_bar
from train._torch import torch_threads
from train.fit import agent_spec, check_field_types, check_held_out, held_out_games, out_file, save_or_rescue
from train.fit.search_nets import DATA_DEALS, check_specialist

__all__ = ["DistillConfig", "DistillData", "DistillResult", "collect_searched", "fit_policy", "distill"]


@dataclass(frozen=True)
class DistillConfig:
    """What the policy is distilled from and how."""

    players: int = 4
    """The table size: one with shipped search networks (2, 4 or 6), or that of
    :attr:`networks`."""
    games: int = 20_000
    """Games of the search agent."""
    seed: int = 0
    """Seeds the data's deals, the search and the fitting."""
    model: str | None = None
    """The specialist searched on and trained: a model file or run directory with
    observation version 1, trained at :attr:`players` and the standard rules if it says
    where it was trained; ``None`` = the shipped ``ppo`` specialist of :attr:`players`."""
    networks: str | None = None
    """The search's value and belief networks: a file ``llama-rl fit-search`` wrote for
    :attr:`players` (best fitted on :attr:`model`'s games); ``None`` = the shipped ones
    (:data:`agents.search.NETWORKS`, fitted on ``ppo_v3``'s specialists' games)."""
    worlds: int | None = None
    below: float | None = None
    horizon: int | None = None
    """The search agent's settings (:class:`agents.search.Settings`; ``None``: its default
    of :data:`agents.search.SETTINGS` at the table size, or at 3 and 5 players at that of
    2 and 4, :func:`agents.search.settings_size`)."""
    mirror: float = 0.0
    """The share of the search's worlds in which the others play as the specialist
    (:attr:`agents.search.Settings.mirror`): 0 here, whatever the search agent's default,
    as every shipped specialist was distilled (the data are games against ``heuristic``)."""
    slots: int = 8192
    """Games played at once: the more, the more searches share each step of the play-outs."""
    epochs: int = 4
    batch_size: int = 1024
    learning_rate: float = 1e-3
    searched_weight: float = 4.0
    """The weight of a searched decision's loss against a decision the search left alone."""
    temperature: float = 0.0
    """A searched decision's target: 0, the searched move alone; above 0, every legal
    move in proportion to ``exp(value / temperature)`` (its mean value over the worlds)."""
    held_out: int = 20
    """One game in this many is held out of the fitting, to report the agreement with the
    search on its searched decisions: at every seat in turn (:func:`train.fit.held_out_games`),
    so at least :attr:`players`."""

    def validate(self) -> DistillConfig:
        """Raise ``ValueError`` naming the first bad field and what is allowed; return self."""
        check_field_types(self)
        if not MIN_PLAYERS <= self.players <= MAX_PLAYERS:
            raise ValueError(f"players must be {MIN_PLAYERS}..{MAX_PLAYERS}, got {self.players}")
        if self.networks is None and self.players not in NETWORKS:
            raise ValueError(
                f"players must be a table size with search networks ({', '.join(map(str, sorted(NETWORKS)))}), "
                f"got {self.players} (--players), or give --networks (a file fit-search wrote at {self.players} "
                "players) and --model"
            )
        if self.model is None and self.players not in SHIPPED["ppo"]:
            raise ValueError(
                f"no ppo specialist is shipped at {self.players} players (only at "
                f"{', '.join(map(str, sorted(SHIPPED['ppo'])))}): give the one to search on and train (--model)"
            )
        for key in ("games", "worlds", "slots", "epochs", "batch_size"):
            value = getattr(self, key)
            if value is not None and value < 1:
                raise ValueError(f"{key} must be >= 1, got {value}")
        if self.worlds is not None and self.worlds > MAX_WORLDS:  # the search agent's bound, said here by the field
            raise ValueError(
                f"worlds must be 1..{MAX_WORLDS} (the most a searched decision imagines), got {self.worlds}"
            )
        if (self.horizon is not None and self.horizon < 0) or self.seed < 0:
            raise ValueError(f"horizon and seed must be >= 0, got {self.horizon} and {self.seed}")
        low, high = BELOW_RANGE
        if self.below is not None and not low < self.below <= high:
            raise ValueError(
                f"below must be in ({low:g}, {high:g}] (at {low:g} no decision is searched: nothing to distil), "
                f"got {self.below}"
            )
        check_mirror(self.mirror)
        check_held_out(self.held_out, self.players)
        if not self.temperature >= 0:
            raise ValueError(f"temperature must be >= 0, got {self.temperature}")
        if not self.learning_rate > 0 or not self.searched_weight > 0:
            raise ValueError(
                f"learning_rate and searched_weight must be > 0, got {self.learning_rate} and {self.searched_weight}"
            )
        return self

    def model_path(self) -> Path:
        """The specialist's file (a leading ``~`` the home folder, as the agents read it)."""
        return agent_path(self.model) if self.model is not None else SHIPPED["ppo"][self.players]

    def networks_path(self) -> Path | None:
        """The networks' file (a leading ``~`` the home folder, as the agents read it);
        ``None``: the shipped ones."""
        return None if self.networks is None else agent_path(self.networks)


@dataclass(frozen=True)
class DistillData:
    """One row per decision of the search agent with more than one legal move."""

    obs: np.ndarray
    """Version-1 observations, ``(N, obs size)`` float32."""
    masks: np.ndarray
    """Legal moves, ``(N, 9)`` bool."""
    prior: np.ndarray
    """The specialist's probabilities of the moves, ``(N, 9)`` float32 (0 where illegal)."""
    searched: np.ndarray
    """``(N,)`` bool: the decisions the search made."""
    move: np.ndarray
    """``(N,)`` int64: the move played (the search's where it searched)."""
    values: np.ndarray
    """``(N, 9)`` float32: where it searched, each legal move's mean value over the
    worlds (:attr:`agents.search.SearchedMoves.values`); NaN elsewhere."""
    game: np.ndarray
    """``(N,)`` int64: the game each decision was made in (``0..games - 1``; the search
    sat at seat ``game % players``), by which whole games are held out of the fitting."""


@dataclass(frozen=True)
class DistillResult:
    """What :func:`distill` made, and what it cost."""

    path: Path
    decisions: int
    searched: int
    agreement: list[float]
    """The held-out searched decisions' share on which the policy plays the search's
    move, after each epoch (NaN when no searched decision was held out)."""
    prior_agreement: float
    """The same share for the specialist it started from."""
    data_s: float
    fit_s: float


def _probabilities(actor: Actor, obs: np.ndarray, masks: np.ndarray) -> np.ndarray:
    logits = actor.logits(obs, masks)
    p = np.exp(logits - logits.max(axis=1, keepdims=True))
    return (p / p.sum(axis=1, keepdims=True)).astype(np.float32)


class _DecisionGames(BatchTableListener):
    """Hears the data's table: the game of each move the teacher makes, in the order it
    is asked for them (each step, one call of :meth:`_Teacher.act_batch`); which of them
    it records is the teacher's to say (:attr:`_Teacher.choices`)."""

    def __init__(self, seating: np.ndarray) -> None:
        self.seating = seating
        self.games: list[np.ndarray] = []

    def on_step(self, table: BatchTable, games: np.ndarray, seats: np.ndarray, actions: np.ndarray) -> None:
        numbers = table.game_numbers(games)
        self.games.append(numbers[self.seating[numbers, seats] == 0])


class _Teacher:
    """The search agent at the data's table: answers every batch (``batch_from`` 1) and
    keeps what it saw and decided."""

    obs_version = 1
    batch_from = 1
    name = "search (the teacher)"
    """How an error in its games names it."""

    def __init__(self, search: SearchAgent, actor: Actor) -> None:
        self.search = search
        self.actor = actor
        self.rows: list[tuple[np.ndarray, ...]] = []
        self.choices: list[np.ndarray] = []
        """Each call's decisions, whether it recorded them (those with a choice of move)."""

    def act(self, observation: np.ndarray, action_mask: np.ndarray) -> int:
        mask = np.zeros((1, NUM_ACTIONS), dtype=bool)
        mask[0, np.flatnonzero(np.asarray(action_mask))] = True
        return int(self.act_batch(np.asarray(observation, dtype=np.float32)[None], mask)[0])

    def act_batch(self, observations: np.ndarray, action_masks: np.ndarray) -> np.ndarray:
        masks = np.asarray(action_masks, dtype=bool)
        out = self.search.decide(observations, masks)
        choice = masks.sum(axis=1) > 1
        self.choices.append(choice)
        if choice.any():
            obs, legal = np.asarray(observations, dtype=np.float32)[choice], masks[choice]
            prior = _probabilities(self.actor, obs, legal)
            values = out.values[choice].astype(np.float32)
            self.rows.append((obs, legal, prior, out.searched[choice], out.moves[choice], values))
        return out.moves

    def __repr__(self) -> str:
        return repr(self.search)


def collect_searched(
    search: SearchAgent,
    actor: Actor,
    players: int,
    games: int,
    seed: int = 0,
    slots: int = 8192,
    progress: bool | str = False,
) -> DistillData:
    """Step 1: the decisions of ``search`` (searching on ``actor``) in ``games`` games
    against ``heuristic``, ``slots`` at once; its seat rotates from game to game. A bar
    of the games ended on stderr if ``progress`` (:func:`train._program.game_bar`)."""
    gen = np.random.default_rng(np.random.SeedSequence(DATA_DEALS + seed))
    teacher = _Teacher(search, actor)
    players_at: list[Agent] = [teacher, HeuristicAgent()]
    seating = np.ones((games, players), dtype=np.int64)
    seating[np.arange(games), np.arange(games) % players] = 0
    slots = min(slots, games)
    batch = BatchGame(slots, players, seed=gen, auto_reset=False)
    heard = _DecisionGames(seating)
    table = BatchTable(batch, players_at, seating[:slots], listener=heard)
    with game_bar(progress, games) as bar:
        table.play_games(seating, lambda done, rows: bar.update(len(rows)))
    if not teacher.rows:
        raise ValueError(f"{games} game(s) gave the search no decision with a choice: play more games")
    obs, masks, prior, searched, move, values = (np.concatenate(p) for p in zip(*teacher.rows, strict=True))
    heard_games, recorded = np.concatenate(heard.games).astype(np.int64), np.concatenate(teacher.choices)
    if len(heard_games) != len(recorded):  # the table asked the teacher otherwise than it told
        raise RuntimeError(
            f"distill: the teacher's choices ({len(recorded)} moves) and the games heard ({len(heard_games)}) disagree"
        )
    game = heard_games[recorded]
    return DistillData(obs, masks, prior, searched, move, values, game)


@torch_threads(1)
def fit_policy(
    data: DistillData, actor: Actor, config: DistillConfig, log: Callable[[str], None] = print
) -> tuple[Actor, list[float], float]:
    """Step 2: ``actor`` trained towards the data's targets; the new actor, the held-out
    searched decisions' agreement with the search after each epoch, and the starting
    actor's agreement. It fits on one torch thread (:func:`train._torch.torch_threads`), so
    the same data and ``config.seed`` give the same weights whatever the machine's cores."""
    import torch  # the training extra: only the fitting needs it

    torch.manual_seed(config.seed)
    held = held_out_games(data.game, config.held_out, config.players)
    target = data.prior.copy()
    rows = np.flatnonzero(data.searched)
    if config.temperature > 0:  # (in float64, the best move's 0 before dividing: no tiny T overflows to NaN)
        v = np.where(data.masks[rows], data.values[rows].astype(np.float64), -np.inf)
        e = np.exp((v - v.max(axis=1, keepdims=True)) / config.temperature)
        target[rows] = e / e.sum(axis=1, keepdims=True)
    else:
        target[rows] = 0.0
        target[rows, data.move[rows]] = 1.0
    weight = np.where(data.searched, config.searched_weight, 1.0).astype(np.float32)
    act = torch.nn.Tanh if actor.activation == "tanh" else torch.nn.ReLU
    modules: list[Any] = []
    for k, (wt, b) in enumerate(actor.layers):
        layer = torch.nn.Linear(*wt.shape)
        with torch.no_grad():
            layer.weight.copy_(torch.from_numpy(wt.T.copy()))
            layer.bias.copy_(torch.from_numpy(b.copy()))
        modules.append(layer)
        if k < len(actor.layers) - 1:
            modules.append(act())
    net = torch.nn.Sequential(*modules)
    x, y = torch.from_numpy(data.obs), torch.from_numpy(target)
    m, w = torch.from_numpy(data.masks), torch.from_numpy(weight)
    train = torch.from_numpy(np.flatnonzero(~held))
    check = np.flatnonzero(held & data.searched)

    def loss_of(idx: Any) -> Any:
        logits = net(x[idx]).masked_fill(~m[idx], -1e9)
        per_row = -(y[idx] * torch.log_softmax(logits, dim=1)).sum(dim=1)
        return (per_row * w[idx]).sum() / w[idx].sum()

    def agreement() -> float:
        if not check.size:
            return float("nan")
        with torch.no_grad():
            logits = net(x[check]).masked_fill(~m[check], -1e9)
        return float((logits.argmax(dim=1).numpy() == data.move[check]).mean())

    prior_agreement = agreement()
    if check.size:
        log(
            f"  held-out searched decisions: {check.size}; the specialist plays the search's move in "
            f"{prior_agreement:.3f}"
        )
    else:  # the agreements are NaN: nothing to measure them on
        log(
            f"  no searched decision held out (one game in {config.held_out} is held out, "
            f"{int(data.searched.sum())} searched in all): play more games to measure the agreement with the search"
        )
    steps = config.epochs * (len(train) // config.batch_size + 1)
    opt = torch.optim.Adam(net.parameters(), lr=config.learning_rate)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=steps)
    agreements: list[float] = []
    for epoch in range(config.epochs):
        for idx in train[torch.randperm(len(train))].split(config.batch_size):
            loss = loss_of(idx)
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
        agreements.append(agreement())
        log(
            f"  epoch {epoch + 1}: held-out agreement with the search {agreements[-1]:.3f}"
            if check.size
            else f"  epoch {epoch + 1} fitted"
        )
    linear = [mod for mod in net if isinstance(mod, torch.nn.Linear)]
    layers = [(mod.weight.detach().numpy().copy(), mod.bias.detach().numpy().copy()) for mod in linear]
    return Actor(layers, actor.activation), agreements, prior_agreement


def distill(
    config: DistillConfig,
    out: str | Path,
    log: Callable[[str], None] = print,
    progress: bool = False,
    label: str = "",
) -> DistillResult:
    """Both steps, then the new actor written to ``out`` (:func:`agents.ppo.save_actor`),
    saying it was trained at the table sizes its start says (nothing where it says none),
    and at the rule options its start says with the standard ones (the searched games'). With
    ``progress``, a bar of the searched games on stderr: their minutes, up to an hour,
    said nothing else until they ended.
    Raises ``ValueError`` for a bad config, an ``out`` that cannot take it
    (:func:`train.fit.out_file`: in a folder that cannot be written, among the shipped
    models, which the search reads, a networks file) or that is a file it reads (the
    specialist's, the networks'), or a specialist that cannot serve
    (:func:`train.fit.search_nets.check_specialist`), all before any game (those of
    ``out`` after ``label``: ``"--out "`` from the command line); ``ModuleNotFoundError``
    without torch, found after ``out``'s check."""
    config.validate()
    model = model_file(config.model_path(), "--model ")
    networks = config.networks_path()
    reads = {"the specialist's": model}
    if networks is not None:
        reads["the networks'"] = networks
    path = out_file(out, "actor", label, reads=reads)
    play = agent_spec("ppo", path=path)
    search_on = agent_spec("search", path=path, **({} if networks is None else {"networks_path": networks}))
    import torch  # noqa: F401 - fail before minutes of games, not after them

    actor = load_actor(model)
    check_specialist(actor, config.model_path(), config.players)
    if networks is not None:
        fitted_for = networks_table_size(networks)  # a ValueError naming the file if it is none
        if fitted_for != config.players:
            raise ValueError(
                f"the networks of {networks} are for {fitted_for} players, not {config.players} (--players)"
            )
    search = SearchAgent(
        worlds=config.worlds,
        below=config.below,
        seed=config.seed,
        horizon=config.horizon,
        mirror=config.mirror,
        path=config.model_path(),
        networks_path=networks,
    )
    used = search.settings[config.players]
    nets = "" if networks is None else f" with the networks of {networks}"
    log(
        f"searching on {config.model_path()}{nets}: {used.worlds} worlds, below {used.below}, "
        f"horizon {used.horizon}, mirror {used.mirror:g}"
    )
    t = time.perf_counter()
    bar = progress and "games of search"
    data = collect_searched(search, actor, config.players, config.games, config.seed, config.slots, bar)
    data_s = time.perf_counter() - t
    searched = int(data.searched.sum())
    log(
        f"{len(data.obs)} decisions of {config.games} games in {data_s:.0f} s, {searched} searched "
        f"({search.changed} changed by the search)"
    )
    if not searched:
        raise ValueError(
            f"the search ran at none of the {len(data.obs)} decisions (below {used.below}): nothing to distil, "
            f"and {out} is not written; raise below or play more games"
        )
    t = time.perf_counter()
    new, agreements, prior_agreement = fit_policy(data, actor, config, log)
    # the sizes its start was trained at, players among them (check_specialist): it has seen
    # those tables, and evaluation warns at the others. Of a start that says nothing, nothing
    # is known: (players,) stamped on a 4-player specialist distilled at 2 hid its own size.
    new.table_sizes = actor.table_sizes
    # the rule options likewise: its start's, with the standard rules this fit played
    played = DEFAULT_RULES.options()
    new.trained_rules = {k: tuple(sorted({*(actor.trained_rules or {}).get(k, ()), v})) for k, v in played.items()}
    fit_s = time.perf_counter() - t
    save_or_rescue(lambda p: save_actor(new, p), path, "distilled policy's weights")
    log(f"policy fitted in {fit_s:.0f} s and written to {path}; play it with {play}, search on it with {search_on}")
    return DistillResult(path, len(data.obs), searched, agreements, prior_agreement, data_s, fit_s)
