"""The search agent's two networks, made from games of a PPO specialist.

``agents.make("search")`` (:mod:`agents.search`) reads a *value network* (its
version-1 observation -> its chance to win the game) to value the worlds it looks
ahead in, and a *belief network* (the observation -> the share of each card value in
each other hand) to deal those worlds. Both come from here, in two steps:

1. **Data**: ``games`` games of the specialist at one seat (rotated from game to game)
   against ``heuristic`` at every other, on deals no evaluation uses. At each of the
   specialist's decisions: its version-1 observation, the others' true hands and its
   win share at the game's end (about 45 decisions a 4-player game).
2. **Two networks** (256-256, ReLU, Adam, 1,024 per batch, the learning rate 1e-3
   decaying to 0 on a cosine): the value network by binary cross-entropy for 2 epochs
   (more overfits: a game's observations are correlated), the belief network by
   cross-entropy against each hand's shares for 3. One game in 20 is held out and its
   loss reported after each epoch.

The defaults are those of the shipped networks, fitted on the games of the PPO specialists
before distillation (:data:`agents.search.FITTED_ON`, ``ppo_v3``'s): ``llama-rl
fit-search --players 4 --out search_4p.npz`` made ``agents/models/search_4p.npz``, and
``--players 2`` and ``--players 6`` made ``search_2p.npz`` and ``search_6p.npz``
(docs/training.md, "Reproduce every shipped agent"). The fitting runs on one thread, so a
rerun writes the same arrays on any machine.
The fitting needs PyTorch (the ``train`` extra); the data and the search itself do not.
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
from agents.ppo import Actor, PPOAgent, load_actor, model_file, untrained_rules, untrained_rules_said
from agents.search import FITTED_ON, Layers, save_networks
from llama_env.agent import Agent
from llama_env.engine import DEFAULT_RULES, MAX_PLAYERS, MIN_PLAYERS, NUM_CARD_VALUES, LlamaGame, brief, is_int
from llama_env.observation import encode_v1
from llama_env.rewards import game_rewards
from llama_env.table import Table, TableListener
from train._program import game_bar
from train._torch import torch_threads
from train.fit import agent_spec, check_field_types, check_held_out, held_out_games, out_file, save_or_rescue

__all__ = [
    "DATA_DEALS",
    "SearchNetsConfig",
    "SearchData",
    "FitResult",
    "collect",
    "fit_network",
    "fit_search_networks",
    "check_specialist",
]

DATA_DEALS = 20_000_000
"""Game ``g`` of seed ``s`` is dealt from ``DATA_DEALS + s * 1_000_003 + g`` (fit-search,
game by game), and distill's batched games from ``SeedSequence(DATA_DEALS + s)``: apart
from the deals of every evaluation (``llama-rl eval`` and ``tournament``, training's
evaluations, the benchmarks that measure strength: :func:`train.evaluation.evaluate`
and :func:`train.evaluation.tournament`), which come from spawn keys of their seed's
``SeedSequence``, never from a plain integer seed."""

_NV = NUM_CARD_VALUES


@dataclass(frozen=True)
class SearchNetsConfig:
    """What the networks are fitted on and how; the defaults made the shipped file."""

    players: int = 4
    """The table size the networks serve (the search agent uses them at that size only)."""
    games: int = 48_000
    """Games of data."""
    seed: int = 0
    """Seeds the data's deals and the fitting (initial weights, batch order)."""
    model: str | None = None
    """The specialist whose games are the data and whose moves the search plays in its
    rollouts: a model file or run directory with observation version 1, trained at
    :attr:`players` and the standard rules if it says where it was trained; ``None`` = the
    specialist the shipped networks at :attr:`players` were fitted on
    (:data:`agents.search.FITTED_ON`)."""
    hidden: tuple[int, ...] = (256, 256)
    """Hidden layer sizes of both networks."""
    batch_size: int = 1024
    learning_rate: float = 1e-3
    value_epochs: int = 2
    belief_epochs: int = 3
    held_out: int = 20
    """One game in this many is held out of the fitting, to report its loss: game 0 and
    others at every seat in turn (:func:`train.fit.held_out_games`), so at least
    :attr:`players`."""

    def validate(self) -> SearchNetsConfig:
        """Raise ``ValueError`` naming the first bad field and what is allowed; return self."""
        check_field_types(self)
        if (
            not isinstance(self.hidden, (tuple, list))
            or not self.hidden
            or not all(is_int(h) and h >= 1 for h in self.hidden)
        ):
            raise ValueError(f"hidden must be positive layer sizes, got {brief(self.hidden)}")
        if not MIN_PLAYERS <= self.players <= MAX_PLAYERS:
            raise ValueError(f"players must be {MIN_PLAYERS}..{MAX_PLAYERS}, got {self.players}")
        if self.model is None and self.players not in FITTED_ON:
            raise ValueError(
                f"the search agent has no specialist at {self.players} players (it has "
                f"{', '.join(map(str, sorted(FITTED_ON)))}); give the specialist's model file (--model)"
            )
        for key in ("games", "batch_size", "value_epochs", "belief_epochs"):
            if getattr(self, key) < 1:
                raise ValueError(f"{key} must be >= 1, got {getattr(self, key)}")
        check_held_out(self.held_out, self.players)
        if self.games < 2:  # game 0 is held out: one game leaves nothing to fit
            raise ValueError(f"games must be >= 2 (game 0 is held out, the others are fitted), got {self.games}")
        if self.seed < 0:
            raise ValueError(f"seed must be >= 0, got {self.seed}")
        if not self.learning_rate > 0:
            raise ValueError(f"learning_rate must be > 0, got {self.learning_rate}")
        return self

    def model_path(self) -> Path:
        """The specialist's file."""
        return agent_path(self.model) if self.model is not None else FITTED_ON[self.players]


@dataclass(frozen=True)
class SearchData:
    """One row per decision of the specialist."""

    obs: np.ndarray
    """Its version-1 observations, ``(N, obs size)`` float32."""
    hands: np.ndarray
    """The others' hands, ``(N, players - 1, 7)`` int8 card counts, in turn order from its left."""
    win: np.ndarray
    """Its win share at the end of the game, ``(N,)`` float32."""
    game: np.ndarray
    """The game each decision belongs to, ``(N,)`` int32 (a game is held out whole)."""


@dataclass(frozen=True)
class FitResult:
    """What :func:`fit_search_networks` made, and what it cost."""

    path: Path
    decisions: int
    held_out_loss: dict[str, list[float]]
    """Network kind -> the held-out loss after each epoch."""
    data_s: float
    fit_s: dict[str, float]


class _Recorder(TableListener):
    """Hears one seat's moves at a table: what it saw, and what the others held."""

    def __init__(self, seat: int) -> None:
        self.seat = seat
        self.obs: list[np.ndarray] = []
        self.hands: list[np.ndarray] = []

    def on_move(self, table: Table, seat: int, action: int, drawn: int | None) -> None:
        if seat == self.seat:
            game = table.game
            n = game.num_players
            self.obs.append(encode_v1(game, seat))
            others = [game.hand_counts((seat + 1 + i) % n)[1:] for i in range(n - 1)]
            self.hands.append(np.array(others, dtype=np.int8))


def collect(actor: Actor, players: int, games: int, seed: int = 0, progress: bool | str = False) -> SearchData:
    """Step 1: the decisions of ``actor`` in ``games`` games against ``heuristic``, with
    a bar of the games on stderr if ``progress`` (:func:`train._program.game_bar`)."""
    heuristic = HeuristicAgent()
    ppo = PPOAgent.from_actor(actor)
    # one array per game, joined once at the end: a list of millions of one-row arrays
    # held about twice the data's size on top of the joined copy
    obs: list[np.ndarray] = []
    hands: list[np.ndarray] = []
    wins: list[np.ndarray] = []
    game_of: list[np.ndarray] = []
    with game_bar(progress, games) as bar:
        for g in range(games):
            seat = g % players
            game = LlamaGame(players, rng=DATA_DEALS + seed * 1_000_003 + g)
            seats: list[Agent] = [heuristic] * players
            seats[seat] = ppo
            recorder = _Recorder(seat)
            Table(game, seats, listener=recorder).play()
            bar.update(1)
            if not recorder.obs:
                continue
            k = len(recorder.obs)
            obs.append(np.stack(recorder.obs))
            hands.append(np.stack(recorder.hands))
            wins.append(np.full(k, game_rewards(game.scores)[seat], dtype=np.float32))
            game_of.append(np.full(k, g, dtype=np.int32))
    return SearchData(
        obs=np.concatenate(obs),
        hands=np.concatenate(hands),
        win=np.concatenate(wins),
        game=np.concatenate(game_of),
    )


@torch_threads(1)
def fit_network(
    data: SearchData, kind: str, config: SearchNetsConfig, log: Callable[[str], None] = print
) -> tuple[Layers, list[float]]:
    """Step 2: the value (``kind="value"``) or belief (``kind="belief"``) network as
    :data:`agents.search.Layers`, and its held-out loss after each epoch. It fits on one
    torch thread (:func:`train._torch.torch_threads`), so the same data and
    ``config.seed`` give the same weights whatever the machine's cores."""
    import torch  # the training extra: only the fitting needs it

    if kind not in ("value", "belief"):
        raise ValueError(f"kind must be 'value' or 'belief', got {kind!r}")
    torch.manual_seed(config.seed)
    x = torch.from_numpy(data.obs)
    held = torch.from_numpy(held_out_games(data.game, config.held_out, config.players))
    others = data.hands.shape[1]
    if kind == "value":
        y = torch.from_numpy(data.win)
        out, epochs = 1, config.value_epochs

        def loss_of(logits: Any, target: Any) -> Any:
            return torch.nn.functional.binary_cross_entropy_with_logits(logits[:, 0], target)
    else:
        y = torch.from_numpy(data.hands.astype(np.float32))
        out, epochs = others * _NV, config.belief_epochs

        def loss_of(logits: Any, target: Any) -> Any:
            logp = torch.log_softmax(logits.view(-1, others, _NV), dim=2)
            return -(target * logp).sum() / target.sum()

    sizes = [x.shape[1], *config.hidden]
    layers: list[Any] = []
    for a, b in zip(sizes[:-1], sizes[1:], strict=True):
        layers += [torch.nn.Linear(a, b), torch.nn.ReLU()]
    net = torch.nn.Sequential(*layers, torch.nn.Linear(sizes[-1], out))
    train = torch.nonzero(~held)[:, 0]  # the rows fitted on, gathered a minibatch at a time (no copy of the data)
    steps = epochs * (len(train) // config.batch_size + 1)
    opt = torch.optim.Adam(net.parameters(), lr=config.learning_rate)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=steps)
    losses: list[float] = []
    for epoch in range(epochs):
        for batch in torch.randperm(len(train)).split(config.batch_size):
            idx = train[batch]
            loss = loss_of(net(x[idx]), y[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
        with torch.no_grad():
            losses.append(float(loss_of(net(x[held]), y[held]).item()) if bool(held.any()) else float("nan"))
        log(f"  {kind} network, epoch {epoch + 1}: held-out loss {losses[-1]:.4f}")
    linear = [m for m in net if isinstance(m, torch.nn.Linear)]
    return [(m.weight.detach().numpy().T.copy(), m.bias.detach().numpy().copy()) for m in linear], losses


def check_specialist(actor: Actor, path: Path, players: int) -> None:
    """A ``ValueError`` in one line unless ``actor`` (read from ``path``) can be the
    specialist of a ``players``-seat search: it reads version-1 observations, ``players``
    is among the table sizes it says it was trained at, and the standard rules among the
    rule options it says it was trained at (if it says): fit-search and distill play
    standard-rule games alone, and a specialist of other rules was fitted on and
    distilled without a word (evaluation warns of it)."""
    if actor.obs_version != 1:
        raise ValueError(
            f"{path} reads version-{actor.obs_version} observations; the search needs a "
            "specialist trained with obs_version 1"
        )
    if actor.table_sizes is not None and players not in actor.table_sizes:
        raise ValueError(
            f"{path} was trained at {', '.join(map(str, actor.table_sizes))} players only, not at "
            f"{players} (--players): give a specialist trained at that table size"
        )
    unseen = untrained_rules(actor.trained_rules, DEFAULT_RULES)
    if unseen:
        was, plays = untrained_rules_said(actor.trained_rules, unseen)
        raise ValueError(
            f"{path} was trained at {was} only; fit-search and distill play standard-rule games ({plays}), "
            "which it never saw: give a specialist trained at them"
        )


def fit_search_networks(
    config: SearchNetsConfig,
    out: str | Path,
    log: Callable[[str], None] = print,
    progress: bool = False,
    label: str = "",
) -> FitResult:
    """Both steps, then the networks written to ``out`` as the search agent reads them
    (:func:`agents.search.save_networks`), with a bar of the games on stderr if
    ``progress`` (its minutes said nothing else until they ended). Raises ``ValueError`` for a bad config, an
    ``out`` that cannot take them (:func:`train.fit.out_file`: in a folder that cannot be
    written, among the shipped models, a policy's file) or that is the specialist's own
    file, or a specialist that cannot serve (:func:`check_specialist`), all before any
    game (those of ``out`` after ``label``: ``"--out "`` from the command line), and
    ``ModuleNotFoundError`` without torch, found after ``out``'s check."""
    config.validate()
    model = model_file(config.model_path(), "--model ")
    path = out_file(out, "networks", label, reads={"the specialist's": model})
    # search on the specialist they were fitted on (at 3 and 5 players, no other)
    spec = agent_spec("search", **({} if config.model is None else {"path": config.model}), networks_path=path)
    import torch  # noqa: F401 - fail before minutes of games, not after them

    actor = load_actor(model)
    check_specialist(actor, config.model_path(), config.players)
    t = time.perf_counter()
    data = collect(actor, config.players, config.games, config.seed, progress=progress and "games of data")
    data_s = time.perf_counter() - t
    log(f"{len(data.obs)} decisions of {config.games} games collected in {data_s:.0f} s")
    nets: dict[str, Layers] = {}
    losses: dict[str, list[float]] = {}
    fit_s: dict[str, float] = {}
    for kind in ("value", "belief"):
        t = time.perf_counter()
        nets[kind], losses[kind] = fit_network(data, kind, config, log)
        fit_s[kind] = time.perf_counter() - t
        log(f"  {kind} network fitted in {fit_s[kind]:.0f} s")
    save_or_rescue(lambda p: save_networks(p, nets["value"], nets["belief"]), path, "fitted networks")
    log(f"networks written to {path}; search with them at {config.players} players: {spec}")
    return FitResult(path, len(data.obs), losses, data_s, fit_s)
