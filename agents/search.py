"""The search agent: a PPO specialist, with a one-move search where it is unsure.

``agents.make("search")`` plays its specialist's move (:data:`SEARCHED_ON`: the ``ppo``
agent's heads-up, the ``ppo_v4`` agent's at 4 players, the ``ppo_v3`` agent's at 6), except where that
specialist's top probability is below ``below`` (about 4 moves a game at 4 players). There it imagines
``worlds`` games that its observation cannot tell from the real one
(:mod:`llama_env.worlds`), the other hands drawn card by card from a *belief network*
(observation -> the share of each value in each other hand), and tries every legal move
in each: the rest of the round is played out (the specialist for itself, ``heuristic``
for the others, or in a share of the worlds, ``mirror``, the specialist for them too),
then the others move until its next decision, which a *value network*
(observation -> the chance to win the game) values (the actual result if the game
ended). It plays the move with the highest mean value over the same worlds.

The worlds are played out together, every world and every move (and, in
:meth:`SearchAgent.act_batch`, every searched decision of the call, up to
:data:`MAX_WORLDS_AT_ONCE` worlds a batch) as one game of a
:class:`llama_env.batch.BatchGame`, driven by :class:`llama_env.table.BatchTable`: one
forward pass of the specialist and one array-wise ``heuristic`` decision per step for all
of them. :func:`belief_world` and :func:`searched_move` are the same search one engine game
at a time, the reference the batched one is tested against (and what the agent played
before). The two differ in one thing: the batch deals the rounds after the searched one
from a key each world draws, not from the world's own generator, so the moves of a world
meet the same next deal, but not the one the engine search would deal.

The two networks (``agents/models/search_<n>p.npz``, :data:`NETWORKS`) were fitted on
48,000 games of the PPO specialist (``ppo_v3``'s) against ``heuristic`` by ``llama-rl fit-search``
(:mod:`train.fit.search_nets`; docs/training.md, "Reproduce every shipped agent"). At
table sizes without them, at rule options they were not fitted on (``end_score`` other
than 40) and in rounds dealt other than 6 cards a hand, it does not search: at 3 and 5
players it plays exactly as ``ppo`` (the general model), elsewhere its specialist's move
unsearched, which is ``ppo``'s heads-up, ``ppo_v4``'s at 4 players and ``ppo_v3``'s at 6
(so at 4 and 6 players ``below=0`` plays exactly as ``ppo_v4`` and ``ppo_v3``, not as ``ppo``). Given a version-0
observation it plays the general model at every size, exactly as ``ppo`` (settings given,
it says once that they go unused there, as wherever it does not search). An observation it
would search that fits no round at any hand size (a vector of no game) is a ``ValueError``
saying why, not read as another hand size, and so, where it searches, is an
action mask that allows a move the rules do not allow in the game behind it (its worlds
would play it). Where it does not search (a table size, rules or a round it does not
search, a specialist sure enough, one move allowed) such a mask goes unchecked, as
``ppo``'s does: checking every decision would cost each about a fifth of a millisecond.
"""

from __future__ import annotations

import contextlib
import threading
import warnings
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from agents._threadpoolctl_internals import say_given_up
from agents.base import (
    BaseAgent,
    agent_path,
    check_batch,
    check_finite,
    check_observation,
    held_instead,
    layer_keys,
    legal_actions,
    load_arrays,
    number,
)
from agents.heuristic import HeuristicAgent
from agents.ppo import (
    DEFAULT_MODEL,
    MODELS_DIR,
    SHIPPED,
    Actor,
    PPOAgent,
    PPOv3Agent,
    PPOv4Agent,
    load_actor,
    model_file,
    read_table_size,
    read_top_card,
    shipped_actor,
    unseen_rules,
)
from llama_env._atomic import atomic_savez
from llama_env.agent import Agent, UnseenTableSize, agent_label, and_list, batch_from, register
from llama_env.batch import BatchGame
from llama_env.engine import (
    DEFAULT_END_SCORE,
    DEFAULT_HAND_SIZE,
    MAX_PLAYERS,
    MIN_PLAYERS,
    NUM_ACTIONS,
    NUM_CARD_VALUES,
    Action,
    LlamaGame,
    Rules,
    brief,
    can_draw,
    error_line,
    playable_on,
)
from llama_env.observation import (
    OBS_SIZE_V1,
    BatchView,
    action_mask,
    encode_many_v1,
    unchecked_action_mask,
)
from llama_env.rewards import game_rewards
from llama_env.table import BatchTable, Table
from llama_env.worlds import PublicState, deal_world, dealt_hand_size, public_state

__all__ = [
    "SearchAgent",
    "SearchedMoves",
    "NETWORKS",
    "SEARCHED_ON",
    "FITTED_ON",
    "SETTINGS",
    "Settings",
    "settings_size",
    "BELOW_RANGE",
    "MIRROR_RANGE",
    "check_mirror",
    "MAX_WORLDS",
    "Layers",
    "load_networks",
    "networks_table_size",
    "save_networks",
    "mlp",
    "Worlds",
    "belief_deals",
    "world_snapshots",
    "batch_values",
    "mirrored_worlds",
    "policy_moves",
    "belief_hands",
    "belief_world",
    "policy_move",
    "searched_move",
    "engine_values",
]

Layers = list[tuple[np.ndarray, np.ndarray]]
"""A ReLU network as ``(weight, bias)`` layers for ``x @ weight + bias``."""

NETWORKS: dict[int, Path] = {n: MODELS_DIR / f"search_{n}p.npz" for n in (2, 4, 6)}
"""Table size -> the file of the value and belief networks the search uses there."""
FITTED_ON: dict[int, Path] = SHIPPED[PPOv3Agent.name]
"""Table size -> the specialist whose games the networks of :data:`NETWORKS` were fitted on
(``ppo_v3``'s: PPO's, before ``llama-rl distill``); ``llama-rl fit-search`` plays it by
default, so its plain command made each shipped network file (made again on 2026-12-07, when
the games it holds out changed: docs/research/2026-12-07-shipped-search-files-remade.md)."""
SEARCHED_ON: dict[int, Path] = {**SHIPPED[PPOAgent.name], 4: SHIPPED[PPOv4Agent.name][4], 6: FITTED_ON[6]}
"""Table size -> the specialist the search plays and searches on there: ``ppo``'s distilled
specialist heads-up, ``ppo_v4``'s at 4 players (two rounds of distillation: searched on,
``ppo``'s third round read 0.318 against 0.322 on average over three batched sets,
docs/research/2026-12-07-soft-third-round-at-4-players.md), the PPO one its networks were
fitted on at 6.
Heads-up, searched below 0.9 (:data:`SETTINGS`), the distilled one read 0.739 against
0.713 on the target's deals at 1.1 to 1.4 times the cost a game
(docs/research/2026-12-03-heads-up-search-on-the-distilled-policy.md); less sure of
itself than the PPO one, below 0.99 it was searched 17 times a game instead of 6, 2.5
times the cost for no gain. At 4 players, searched below 0.7, it reads 0.322 against
0.312 on the target's deals and 0.320 and 0.319 against 0.308 and 0.318 on two other sets
(docs/research/2026-12-04-4p-search-on-the-distilled-specialist.md); below the PPO
one's 0.95 it had read 0.296. At 6 players below 0.8 it read what the PPO one reads.
Heads-up the specialist of a second round reads 0.743 against 0.722 for the first's on the
target's deals (docs/research/2026-12-07-second-distillation-round-and-6p-search.md)."""


@dataclass(frozen=True)
class Settings:
    """How the agent searches at one table size; each field is also a parameter of
    :class:`SearchAgent`, which, given, holds at every size."""

    worlds: int
    """Worlds imagined per searched decision."""
    below: float
    """It searches where its specialist's top probability is below this, within
    :data:`BELOW_RANGE`; at 1, every decision with more than one legal move (a top
    probability can round to 1 in float32)."""
    horizon: int
    """Steps of the batch after which a world's play-out stops and the value network
    values it where it stands (0: none, the play-out runs to seat 0's next decision)."""
    mirror: float = 0.0
    """The share of a searched decision's worlds (within :data:`MIRROR_RANGE`) in which
    the others play as its own policy does (its specialist, from their seats); in the rest
    they play as ``heuristic``. 0: everyone at the table is expected to play as
    ``heuristic``, which is what the belief and value networks were fitted against."""


MAX_WORLDS = 4096
"""The most worlds a searched decision may imagine: every world and every legal move is one
game of a batch, so a searched decision's memory and time grow in proportion to its worlds
times its legal moves (the defaults are 48 and 96 worlds; the memory at 4,096 is measured
in docs/research/2026-12-07-search-random-stream.md). Many decisions searched at once are
played out in batches of at most :data:`MAX_WORLDS_AT_ONCE` worlds, so the memory does
not grow with their number."""

MAX_WORLDS_AT_ONCE = 8192
"""The most worlds, over all the decisions searched in one call, that one batch plays out:
a call with more (a batched evaluation hands the agent thousands of decisions) plays
them out batch after batch, each decision's worlds whole, with the same moves and values
as one batch of them all. A batch holds every world and legal move as one game, so a
search's memory is bounded by that of this many worlds (times their legal moves),
however many decisions it is handed, where one batch of them all grew with their number
(the figures, before and after: docs/research/2026-12-07-search-random-stream.md). At
least :data:`MAX_WORLDS`, so a decision's worlds fit in one batch."""

MIRROR_RANGE: tuple[float, float] = (0.0, 1.0)
"""The values :attr:`Settings.mirror` may take."""

BELOW_RANGE: tuple[float, float] = (0.0, 1.0)
"""The values :attr:`Settings.below` may take, wherever it is given: the agent,
``llama-rl distill --below`` and a web page's request."""

SETTINGS: dict[int, Settings] = {
    2: Settings(worlds=96, below=0.9, horizon=0, mirror=0.5),
    4: Settings(worlds=48, below=0.7, horizon=25, mirror=0.5),
    6: Settings(worlds=96, below=0.99, horizon=0),
}
"""Table size -> the search's defaults there (4,000 games against ``heuristic``, seed 0;
docs/research/2026-12-03-distilled-search-and-horizon-by-table-size.md). Heads-up 96
worlds read 0.727 against 0.703 with 48 (batched deals); the threshold 0.9 fits the
distilled specialist of :data:`SEARCHED_ON`, which it searches about as often (8 moves a
game) as 0.99 searched the PPO one (0.744 and 0.743 on the batched deals of seeds 1 and
2, against 0.728 and 0.752 for the PPO one below 0.99;
docs/research/2026-12-03-heads-up-search-on-the-distilled-policy.md). At 4 players the
threshold 0.7 does the same for the distilled specialist there
(docs/research/2026-12-04-4p-search-on-the-distilled-specialist.md), and a horizon of 25
steps keeps the strength of 40 (0.317 against 0.322 on the target's deals, 0.320 and
0.322 against 0.320 and 0.319 on two batched sets, level against `greedy` and `cautious`;
15 steps read 0.300, 20 lower against `greedy`) at 0.7 of its cost a searched move
(docs/research/2026-12-05-search-horizon.md); a horizon at all bounds that time (p99
77 ms against 109 without, searching the PPO specialist).
At 2 and 6 players 40 steps read 0.713 against 0.718 and 0.227 against 0.231, so there
the play-outs run to their end. At 6 players 96 worlds below 0.99 read 0.227 against
0.222 for 48 below 0.95 on the target's deals, and 0.232 and 0.233 against 0.215 and 0.232
on two batched sets, at about three times the cost a game
(docs/research/2026-12-07-second-distillation-round-and-6p-search.md). Heads-up, half the
worlds mirrored (the others played as its own specialist) read 0.534 against ``ppo``
where none read 0.499, and 0.738 against 0.739 against ``heuristic``, on the same 4,000
batched deals; every world mirrored read 0.538 and 0.688. At 4 and 6 players half read
within the noise of none against ``heuristic`` (6 players: 0.230 against 0.227 on the
target's deals), and notebook 02 put ``ppo`` ahead of it at 6 by win share, so 6 stays
at 0 (docs/research/2026-12-07-mirrored-worlds-heads-up.md). At 4 players half mirrored
read 0.321 against 0.320 over ten batched sets of deals against ``heuristic``, and 0.364
against 0.357 over four seeds of notebook 02's 4-player tournament (``ppo`` 0.349 and
0.351 there), at 1.2 times the cost a game, a searched move's p99 30 ms against 25
(docs/research/2026-12-07-mirrored-worlds-at-4-players.md)."""


def settings_size(players: int) -> int:
    """The table size of :data:`SETTINGS` whose settings the search takes at ``players``
    (where networks of its own let it search there): its own, else the nearest, the
    smaller of two as near (2 at 3 players, 4 at 5)."""
    return min(SETTINGS, key=lambda m: (abs(m - players), m))


_NV = NUM_CARD_VALUES
_NETWORKS_HINT = "name a file that llama-rl fit-search wrote"
"""What an empty networks path should have named (:func:`agents.base.agent_path`)."""


def mlp(layers: Layers, x: np.ndarray) -> np.ndarray:
    """A ReLU network's output for a batch ``x`` (no activation after the last layer)."""
    last = len(layers) - 1
    for k, (w, b) in enumerate(layers):
        x = x @ w + b
        if k < last:
            x = np.maximum(x, 0.0)
    return x


def save_networks(path: str | Path, value: Layers, belief: Layers) -> None:
    """Write the value and belief networks to one ``.npz`` (``value_w0``, ``value_b0``, ...,
    ``belief_w0``, ...), through a temporary file so it is never half written; ``path``
    is read as :func:`load_networks` reads it (a leading ``~`` the home folder, an empty
    one refused)."""
    path = agent_path(path, "the search networks' path")
    arrays = {}
    for kind, layers in (("value", value), ("belief", belief)):
        for k, (w, b) in enumerate(layers):
            w_key, b_key = layer_keys(k, kind)
            arrays[w_key], arrays[b_key] = w, b
    atomic_savez(path, arrays)


def load_networks(path: str | Path, players: int | None = None) -> tuple[Layers, Layers]:
    """The value and belief networks of a ``players``-seat table from ``path``, checked:
    they read version-1 observations, and give 1 value and 7 shares per other seat
    (``players`` ``None``: the table size the belief network's outputs name, see
    :func:`networks_table_size`). ``path`` is read as :func:`agents.ppo.load_actor` reads
    its own (:func:`agents.base.agent_path`: a leading ``~`` the home folder, an empty one
    refused). Raises ``ValueError`` naming the file for anything else."""
    # "" was the current folder: "cannot load the search networks from ."
    path = agent_path(path, "the search networks' path", _NETWORKS_HINT)
    try:
        with load_arrays(path) as z:
            names = z.files
            nets: dict[str, Layers] = {}
            for kind in ("value", "belief"):
                layers, k = [], 0
                while (keys := layer_keys(k, kind))[0] in z.files:
                    w, b = z[keys[0]], z[keys[1]]
                    if w.dtype.kind != "f" or b.dtype.kind != "f":
                        raise ValueError(
                            f"its {kind} layer {k} holds {w.dtype} weights and a {b.dtype} bias: they must be "
                            "floating-point numbers"
                        )
                    layers.append((w.astype(np.float32), b.astype(np.float32)))
                    k += 1
                nets[kind] = layers
    except Exception as exc:  # noqa: BLE001 - a bad archive raises many types
        why = str(exc) if type(exc) is ValueError else error_line(exc)  # our own reasons as they are
        raise ValueError(f"cannot load the search networks from {path}: {why}") from None
    for kind, layers in nets.items():
        if not layers:  # a policy given as networks is named as one
            why = held_instead(names, "networks") or f"it has no {kind} network"
            raise ValueError(f"cannot load the search networks from {path}: {why}")
    if players is None:
        players = _table_size(nets["belief"], path)
    for kind, out in (("value", 1), ("belief", (players - 1) * _NV)):
        width = OBS_SIZE_V1
        layers = nets[kind]
        for w, b in layers:
            if w.ndim != 2 or w.shape[0] != width or b.shape != (w.shape[1],):
                raise ValueError(
                    f"cannot load the search networks from {path}: a {kind} layer of shape {w.shape} "
                    f"does not follow one of width {width}"
                )
            if not (np.isfinite(w).all() and np.isfinite(b).all()):
                raise ValueError(f"cannot load the search networks from {path}: a {kind} layer holds NaN or infinity")
            width = w.shape[1]
        if width != out:
            raise ValueError(
                f"cannot load the search networks from {path}: the {kind} network gives {width} outputs, "
                f"a {players}-player table needs {out}"
            )
    return nets["value"], nets["belief"]


def _table_size(belief: Layers, path: str | Path) -> int:
    """The table size a belief network's outputs name (7 shares for each other seat); a
    ``ValueError`` naming ``path`` when they name none."""
    width = belief[-1][1].size if belief else 0
    players = width // _NV + 1
    if not width or width % _NV or not MIN_PLAYERS <= players <= MAX_PLAYERS:
        raise ValueError(f"cannot load the search networks from {path}: it holds no belief network of a table")
    return players


def networks_table_size(path: str | Path) -> int:
    """The table size a networks file (:func:`save_networks`) was fitted for; a
    ``ValueError`` naming the file when it is not such a file."""
    return _table_size(load_networks(path)[1], path)


def belief_hands(
    observation: np.ndarray, state: PublicState, belief: Layers, rng: np.random.Generator
) -> list[list[int]]:
    """The other hands of one world, card by card: each card's value drawn in proportion
    to the belief network's share of that value in that hand, among the unseen cards
    left (the hands in a random order, so none always gets first pick). The agent draws
    its worlds by :func:`belief_deals`, all at once and from the same distribution; this
    one-world draw is the reference it is tested against."""
    others = len(state.hand_sizes)
    logits = mlp(belief, np.asarray(observation, dtype=np.float32)[None]).reshape(others, _NV)
    share = np.exp(logits - logits.max(axis=1, keepdims=True)).astype(np.float64)
    pool = np.array(state.unseen, dtype=np.float64)
    hands: list[list[int]] = [[] for _ in range(others)]
    for i in rng.permutation(others):
        for _ in range(state.hand_sizes[i]):
            w = share[i] * (pool > 0)
            if w.sum() <= 0:
                w = pool.copy()
            # what rng.choice(p=w / w.sum()) draws, from the same uniform, without its checks
            cdf = np.cumsum(w / w.sum())
            v = int(np.searchsorted(cdf / cdf[-1], rng.random(), side="right"))
            pool[v] -= 1
            hands[i].append(v + 1)
    return hands


def belief_world(observation: np.ndarray, state: PublicState, belief: Layers, rng: np.random.Generator) -> LlamaGame:
    """One world the search looks ahead in: ``state`` (the public game behind
    ``observation``, :func:`llama_env.worlds.public_state`) with the other hands drawn
    by :func:`belief_hands` and the rest of the unseen cards shuffled into the draw pile
    (:func:`llama_env.worlds.deal_world`). The observer is seat 0 and to act. The engine
    search's world (:func:`searched_move`); the agent deals its worlds by
    :func:`belief_deals` and :func:`world_snapshots`."""
    return deal_world(state, belief_hands(observation, state, belief, rng), rng)


@register("search", group="strongest")
class SearchAgent(BaseAgent):
    """A one-move search at 2, 4 and 6 players where its specialist is unsure (ppo's; at 4
    players ppo_v4's, at 6 ppo_v3's), ppo at 3 and 5: clearly stronger than ppo heads-up, ahead within
    noise at 4 and 6; a game costs it many times what it costs ppo (a batched evaluation
    narrows the gap).

    The search draws worlds from a belief network, plays them out to the round's end (or
    for ``horizon`` steps) and values them with a value network; at 3 and 5 players (no
    specialist to search with) it plays as ppo; where it does not search at 2, 4 and 6
    players it plays its specialist (:data:`SEARCHED_ON`): ppo's heads-up, ppo_v4's at 4,
    ppo_v3's at 6. ``act`` searches one decision;
    ``act_batch`` searches all the unsure decisions of its batch together, their worlds
    played out in one :class:`~llama_env.batch.BatchGame`, which is where batching pays:
    a single search takes as many steps of the batch as its longest world, whatever the
    number of worlds. ``worlds``, ``below``, ``horizon`` and ``mirror`` (:class:`Settings`)
    default to the table size's (:data:`SETTINGS`); given, they hold at every size.
    ``path`` (a model file or run directory, observation version 1) is played instead of
    the shipped models at every table size, and searched on where there are networks: give
    one trained at the table size you play (``llama-rl distill`` makes such models;
    evaluation warns at a size the model says it was not trained at).
    ``networks_path`` (a file ``llama-rl fit-search`` wrote) replaces the shipped networks
    at the table size it was fitted for; at 3 or 5 players, where nothing is shipped, give
    ``path`` too (the specialist it was fitted on), and the search uses the nearest
    size's settings there. At other sizes the file goes unused, which it says once
    (:meth:`forewarn`)."""

    name = "search"
    obs_version = 1
    request_limits: ClassVar[dict[str, tuple[float, float]]] = {"worlds": (1, 96), "below": BELOW_RANGE}
    """What a web page may ask for (:func:`llama_env.agent.request_limits`): the cost of a
    move grows with the worlds and with ``below``."""
    costly = True
    """Its searched moves take tens of milliseconds each, a network pass a fraction of one
    (:func:`llama_env.agent.costly`)."""

    def __init__(
        self,
        worlds: int | None = None,
        below: float | None = None,
        seed: int | None = None,
        horizon: int | None = None,
        mirror: float | None = None,
        path: str | Path | None = None,
        networks_path: str | Path | None = None,
    ) -> None:
        super().__init__(seed)
        for key, value, what in (
            ("path", path, "a model file or a run directory"),
            ("networks_path", networks_path, "a file that llama-rl fit-search wrote"),
        ):
            if value is not None and not isinstance(value, (str, Path)):  # 3 gave os.fspath's words, naming nothing
                raise ValueError(f"SearchAgent {key} must be {what}, got {brief(value)}")
        given: dict[str, Any] = {}
        if worlds is not None:
            given["worlds"] = int(number("SearchAgent", "worlds", worlds, integer=True, minimum=1, maximum=MAX_WORLDS))
        if below is not None:
            given["below"] = number("SearchAgent", "below", below, minimum=BELOW_RANGE[0], maximum=BELOW_RANGE[1])
        if horizon is not None:
            given["horizon"] = int(number("SearchAgent", "horizon", horizon, integer=True, minimum=0))
        if mirror is not None:
            given["mirror"] = number("SearchAgent", "mirror", mirror, minimum=MIRROR_RANGE[0], maximum=MIRROR_RANGE[1])
        self.given = given
        """The settings given, which hold at every table size over :data:`SETTINGS`."""
        self.settings = {n: replace(d, **given) for n, d in SETTINGS.items()}
        """Table size -> how it searches there."""
        self.ppo: PPOAgent = PPOAgent.from_actor(shipped_actor(DEFAULT_MODEL))
        """The policy it plays where it does not search, and in its rollouts: the
        specialists of :data:`SEARCHED_ON`, the general model at other table sizes."""
        self.ppo.specialists = {n: shipped_actor(f) for n, f in SEARCHED_ON.items()}
        self.networks = {n: load_networks(f, n) for n, f in NETWORKS.items()}
        """Table size -> (value network, belief network)."""
        self.networks_path = (
            None if networks_path is None else agent_path(networks_path, "SearchAgent networks_path", _NETWORKS_HINT)
        )
        """The networks used instead of the shipped ones at their table size (``None``: none);
        a leading ``~`` is the home folder, as in ``path`` (:func:`agents.base.agent_path`)."""
        if self.networks_path is not None:
            own = load_networks(self.networks_path)  # read once: its table size comes with it
            n = _table_size(own[1], self.networks_path)
            if n not in SEARCHED_ON and path is None:
                raise ValueError(
                    f"SearchAgent networks_path {str(networks_path)!r}: its networks are for {n} players, where no "
                    "specialist is shipped to search with: give the model they were fitted on too (path=...)"
                )
            self.networks[n] = own
            self.settings.setdefault(n, self.settings[settings_size(n)])
        self.path = None if path is None else model_file(path, "search:path=")
        """The model searched on instead of the shipped specialists (``None``: those)."""
        if self.path is not None:
            actor = load_actor(self.path)
            if actor.obs_version != 1:
                raise ValueError(
                    f"SearchAgent path {str(path)!r}: the model reads version-{actor.obs_version} observations; "
                    "the search needs a model trained with obs_version 1"
                )
            # at every size, not only where it searches (the networks' sizes are among them)
            self.ppo.specialists = {n: actor for n in range(MIN_PLAYERS, MAX_PLAYERS + 1)}
        sizes = None if self.path is None else actor.table_sizes
        if self.networks_path is not None and sizes is not None and n not in sizes:
            raise ValueError(
                f"SearchAgent networks_path {str(networks_path)!r}: its networks are for {n} players, and the "
                f"model path={str(path)!r} was trained at {', '.join(map(str, sizes))} players only"
            )
        self._sizes = sizes
        self._trained_rules = None if self.path is None else actor.trained_rules
        self._said: set[tuple[tuple[str, int], ...]] = set()  # the unseen rules forewarn has named
        self._networks_size = None if self.networks_path is None else n
        """The table size the networks of :attr:`networks_path` were fitted for (``None``: none given)."""
        given_what = [f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}" for k, v in given.items()]
        if self.networks_path is not None:
            given_what.append(f"the networks of networks_path={str(self.networks_path)!r}")
        self._unused = ", ".join(given_what)
        """What was given that holds only where it searches, until a table where it does not
        search has been warned about once (``""``: nothing given, or warned)."""
        self.opponent = HeuristicAgent()
        """How it expects the others to play, in its rollouts (as its own specialist in the
        share :attr:`Settings.mirror` of its worlds)."""
        self._opponent = _ReadsVersion1(self.opponent)
        self.searched = 0
        """Moves searched so far (with :attr:`changed`: how often the search overruled the policy)."""
        self.changed = 0
        self._players = {n: PPOAgent.from_actor(a) for n, a in self.ppo.specialists.items()}

    @property
    def table_sizes(self) -> tuple[int, ...] | None:
        """The table sizes it was made for, where what it was given says: those its ``path``
        model was trained at (the model plays at every size). Evaluation warns when it sits
        at another, as for ``ppo``. ``None`` for the shipped models and a ``path`` that does
        not say. Networks given (``networks_path``) do not narrow them: at another size it
        plays as it would without them (with the shipped networks where there are some),
        and says once that they go unused there (:meth:`forewarn`)."""
        return self._sizes

    def forewarn(self, rules: Rules) -> Warning | None:
        """The warning it would give once while playing a table of ``rules``, given now, and
        no more at the table (:func:`llama_env.agent.forewarn`): where it does not search
        (a table size without networks, an end score or a hand size its networks were not
        fitted on), what it was given goes unused; where it searches with the shipped
        networks, the networks of ``networks_path`` do; and where the rules use a value its
        ``path`` model was never trained at, that (:func:`agents.ppo.unseen_rules`, as
        ``ppo`` says it). ``None`` where everything given is used, nothing was given, or it
        was said already. Evaluation asks it before any game."""
        warning = self._unused_warning(rules.num_players, rules.end_score, dealt=rules.hand_size == DEFAULT_HAND_SIZE)
        if warning is not None:
            self._unused = ""
        unseen = unseen_rules(f"{self!r}'s model", self._trained_rules, rules, self._said)
        if warning is not None and unseen is not None:  # both, in one warning said once
            return type(warning)(f"{warning}; and {unseen}")
        return warning if warning is not None else unseen

    def _searches_at(self) -> list[int]:
        """The table sizes where it searches: those with networks and a specialist."""
        return sorted(n for n in self.networks if n in self.ppo.specialists)

    def _unused_warning(
        self, players: int | None, end_score: int = DEFAULT_END_SCORE, *, dealt: bool = True
    ) -> Warning | None:
        """The warning that what it was given goes unused at a ``players``-player table to
        ``end_score`` (``dealt``: a round dealt the hand size its networks were fitted on)
        or, ``players`` ``None``, on a version-0 observation (which it never searches), or
        ``None`` where all of it is used (or it was said already)."""
        if not self._unused:
            return None
        where = ""
        category: type[Warning] = UserWarning
        searches_at = self._searches_at()
        if players is None:
            where = "on a version-0 observation (it searches on version 1's history: obs_version=1)"
        elif players not in searches_at:
            where = f"at a {players}-player table (it has search networks at {and_list(searches_at)} players only)"
            category = UnseenTableSize
        elif end_score != DEFAULT_END_SCORE:
            where = f"at end_score {end_score} (its networks were fitted on {DEFAULT_END_SCORE})"
        elif not dealt:
            where = f"in a round not dealt {DEFAULT_HAND_SIZE} cards a hand"
        if where:
            return category(
                f"{self!r} does not search {where}: what it was given ({self._unused}) goes unused there, and it "
                "plays its policy's moves (said once)"
            )
        if self.networks_path is not None and players != self._networks_size:
            plain = ", as plain search does" if self.path is None else ""
            return UnseenTableSize(
                f"{self!r} searches a {players}-player table with the shipped {players}-player networks{plain}: "
                f"the networks of networks_path={str(self.networks_path)!r}, fitted for {self._networks_size} "
                "players, go unused there (said once)"
            )
        return None

    def _warn_unused(self, players: int | None, end_score: int = DEFAULT_END_SCORE, *, dealt: bool = True) -> None:
        """Say once what it was given that goes unused at such a table (:meth:`_unused_warning`)."""
        warning = self._unused_warning(players, end_score, dealt=dealt)
        if warning is not None:
            self._unused = ""
            warnings.warn(warning, stacklevel=4)

    def act(self, observation: np.ndarray, action_mask: np.ndarray) -> int:
        """The move a search picks where it searches (at 2, 4 and 6 players, when its
        specialist is unsure), else its policy's move (:attr:`ppo`)."""
        check_observation(observation)
        check_finite(observation)
        obs = np.asarray(observation)
        read_top_card(obs)  # as ppo's act: act_batch reads the one-hot blocks unchecked
        read_table_size(obs)
        mask = np.zeros((1, NUM_ACTIONS), dtype=bool)
        mask[0, legal_actions(action_mask)] = True
        return int(self.act_batch(obs[None], mask)[0])

    def act_batch(self, observations: np.ndarray, action_masks: np.ndarray) -> np.ndarray:
        """:meth:`act` for every row, ``(B,)`` int64: its policy's moves (:attr:`ppo`), and one search
        for all the rows where it searches (their worlds played out together, in batches of
        at most :data:`MAX_WORLDS_AT_ONCE` worlds)."""
        return self.decide(observations, action_masks).moves

    def decide(self, observations: np.ndarray, action_masks: np.ndarray) -> SearchedMoves:
        """What :meth:`act_batch` plays, with which rows it searched and each searched
        row's mean value of every legal move over its worlds: a search's output whole, as
        ``llama-rl distill`` (:mod:`train.fit.distill`) trains a policy on it."""
        obs, masks = check_batch(observations, action_masks)
        obs = np.asarray(obs, dtype=np.float32)
        values = np.full((len(obs), NUM_ACTIONS), np.nan)
        if obs.shape[1] != OBS_SIZE_V1:  # version 0: no history to search with
            self._warn_unused(None)  # settings given go unused here (said once)
            return SearchedMoves(self.ppo.act_batch(obs, masks), np.zeros(len(obs), dtype=bool), values)
        view = BatchView(obs, 1)
        players = view.num_players
        searches_at = np.zeros(MAX_PLAYERS + 1, dtype=bool)  # a lookup table: np.isin costs a row as much as ppo
        searches_at[self._searches_at()] = True
        mine = searches_at[players]
        moves = np.empty(len(obs), dtype=np.int64)
        if not mine.all():
            moves[~mine] = self.ppo.act_batch(obs[~mine], masks[~mine])
        choice = (masks.sum(axis=1) > 1) & (view.end_score == DEFAULT_END_SCORE)
        if self._unused:  # until said once: a table where what it was given goes unused
            odd = ~mine | (view.end_score != DEFAULT_END_SCORE)
            if self.networks_path is not None:
                odd |= players != self._networks_size
            if odd.any():
                r = int(np.argmax(odd))
                self._warn_unused(int(players[r]), int(view.end_score[r]))
        decisions: list[_Decision] = []
        for n in np.unique(players[mine]).tolist():
            rows = np.flatnonzero(players == n)
            moves[rows], confidence = policy_moves(self.ppo.specialists[n], obs[rows], masks[rows])
            below = self.settings[n].below
            unsure = (confidence < below) | (below >= BELOW_RANGE[1])
            for r in rows[unsure & choice[rows]].tolist():
                try:
                    state = public_state(obs[r])
                except ValueError as exc:
                    if dealt_hand_size(obs[r]) in (None, DEFAULT_HAND_SIZE):  # no round of any hand size fits it
                        where = "the observation" if len(obs) == 1 else f"observation {r}"
                        raise ValueError(f"{where} fits no round of the game at any hand size: {exc}") from None
                    self._warn_unused(n, DEFAULT_END_SCORE, dealt=False)  # dealt another hand size: no world to search
                    continue
                legal = np.flatnonzero(masks[r]).tolist()
                unfit = _unfit_mask(legal, state)
                if unfit:
                    mask = "the action mask" if len(obs) == 1 else f"action mask {r}"
                    where = "the observation" if len(obs) == 1 else f"observation {r}"
                    raise ValueError(f"{mask} does not fit {where}: {unfit}")
                decisions.append(_Decision(r, n, legal, obs[r], state))
        searched = np.zeros(len(obs), dtype=bool)
        found: list[np.ndarray] = []
        if decisions:
            with one_blas_thread():
                found = self._search(decisions)
        for d, mean in zip(decisions, found, strict=True):
            pick = d.legal[int(np.argmax(mean))]
            self.searched += 1
            self.changed += pick != moves[d.row]
            moves[d.row] = pick
            searched[d.row] = True
            values[d.row, d.legal] = mean
        return SearchedMoves(moves, searched, values)

    def _search(self, decisions: list[_Decision]) -> list[np.ndarray]:
        """Each decision's mean value of each of its legal moves over its worlds: the worlds
        drawn, then those of the decisions at one table size played out together, in
        batches of at most :data:`MAX_WORLDS_AT_ONCE` worlds. Each decision draws its worlds
        and their later deals from a generator of its own, seeded from :attr:`rng` in the
        order of the decisions, so the batches find what one batch of them all would."""
        means: dict[int, np.ndarray] = {}
        for n in sorted({d.players for d in decisions}):
            mine = [d for d in decisions if d.players == n]
            value_net, belief_net = self.networks[n]
            settings = self.settings[n]
            own = [np.random.default_rng(s) for s in self.rng.integers(2**63, size=len(mine)).tolist()]
            per_batch = max(1, MAX_WORLDS_AT_ONCE // settings.worlds)
            for at in range(0, len(mine), per_batch):
                group, gens = mine[at : at + per_batch], own[at : at + per_batch]
                searches = [
                    Worlds(d.state, *belief_deals(d.observation, d.state, belief_net, gen, settings.worlds))
                    for d, gen in zip(group, gens, strict=True)
                ]
                values = batch_values(
                    searches,
                    [d.legal for d in group],
                    self._players[n],
                    self._opponent,
                    value_net,
                    0,  # the deals come from deal_keys; the seed names the snapshots' generators alone
                    max_steps=settings.horizon or None,
                    deal_keys=[gen.integers(2**63, size=settings.worlds) for gen in gens],
                    mirror=settings.mirror,
                )
                for d, v in zip(group, values, strict=True):
                    means[d.row] = v.mean(axis=0)
        return [means[d.row] for d in decisions]

    def __repr__(self) -> str:
        given = [f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}" for k, v in self.given.items()]
        if self.path is not None:
            given.append(f"path={str(self.path)!r}")
        if self.networks_path is not None:
            given.append(f"networks_path={str(self.networks_path)!r}")
        return f"SearchAgent({', '.join(given)})"


_BLAS: Any = None
"""numpy's BLAS libraries, made on first use: those whose threads are each thread's own,
and those whose threads are the whole process's (:func:`_blas`)."""
_BLAS_LOCK = threading.Lock()
_BLAS_USERS = 0
_BLAS_LIMIT: Any = None


def _blas() -> tuple[Any, Any]:
    """numpy's BLAS libraries (threadpoolctl looks through the loaded libraries once), as
    two controllers, ``None`` where there are none: OpenBLAS built with OpenMP, whose
    thread count threadpoolctl sets for the calling thread alone (``omp_set_num_threads``),
    and the rest, whose threads are the whole process's (OpenBLAS built with pthreads, as
    numpy's wheels ship it)."""
    global _BLAS
    if _BLAS is None:
        from threadpoolctl import ThreadpoolController

        blas = ThreadpoolController().select(user_api="blas")  # about 8 us a limit, against 200 for threadpool_limits
        own = blas.select(internal_api="openblas").select(threading_layer="openmp")  # select: any of, so chained
        shared = blas.select(filepath=[c.filepath for c in blas.lib_controllers if c not in own.lib_controllers])
        _BLAS = (own if own.lib_controllers else None, shared if shared.lib_controllers else None)
    return _BLAS


@contextlib.contextmanager
def one_blas_thread() -> Iterator[None]:
    """numpy's BLAS on one thread, for a search's forward passes: its matrices are small, and
    a BLAS that spreads them over busy cores made a game of ``opponents="search"`` two to
    seven times slower on a loaded 2-core machine.

    A BLAS whose threads are each thread's own (OpenBLAS built with OpenMP) is limited by
    each search for its own thread, and put back by it. One whose threads are the whole
    process's is limited once for all the searches under way in any thread: set by the
    first to start and lifted by the last to end. Each limiting for itself, a second search
    took the first one's 1 as the number to go back to, and left numpy on one thread for
    good. A limit the searching thread set around the search (the sb3 trainer's) stays its
    own (:func:`agents._threadpoolctl_internals.say_given_up`)."""
    own, shared = _blas()
    with contextlib.ExitStack() as stack:
        if own is not None:
            stack.enter_context(own.limit(limits=1, user_api="blas"))
        if shared is not None:
            stack.enter_context(_one_shared_limit(shared))
        yield


@contextlib.contextmanager
def _one_shared_limit(blas: Any) -> Iterator[None]:
    """``blas`` (whose threads are the whole process's) on one thread while any thread
    searches: the first to start sets it, the last to end lifts it, and each gives up the
    say over them that threadpoolctl 3.8 gives the thread that set them, so that the
    other may."""
    global _BLAS_USERS, _BLAS_LIMIT
    with _BLAS_LOCK:
        if not _BLAS_USERS:
            with say_given_up():
                _BLAS_LIMIT = blas.limit(limits=1, user_api="blas")
        _BLAS_USERS += 1
    try:
        yield
    finally:
        with _BLAS_LOCK:
            _BLAS_USERS -= 1
            if not _BLAS_USERS:
                with say_given_up():
                    _BLAS_LIMIT.restore_original_limits()
                _BLAS_LIMIT = None


class _ReadsVersion1:
    """An agent that reads the first part of a version-1 observation (the version-0 vector
    it starts with) as it is: at the rollouts' table, the others then see the observation
    the specialist sees, and the batch writes one version a step instead of two."""

    obs_version = 1

    def __init__(self, agent: Agent) -> None:
        self.agent = agent
        self.batch_from = batch_from(agent)
        """The wrapped agent's (:func:`llama_env.agent.batch_from`): a world's last steps,
        when few games still move, ask the heuristic through ``act``."""

    def act(self, observation: np.ndarray, action_mask: np.ndarray) -> int:
        return self.agent.act(observation, action_mask)

    def act_batch(self, observations: np.ndarray, action_masks: np.ndarray) -> np.ndarray:
        return np.asarray(self.agent.act_batch(observations, action_masks))  # type: ignore[attr-defined]

    @property
    def name(self) -> str:
        """The wrapped agent's label: the rollouts' errors name it."""
        return agent_label(self.agent)

    def __repr__(self) -> str:
        return repr(self.agent)


@dataclass(frozen=True)
class SearchedMoves:
    """:meth:`SearchAgent.decide`'s answer for a batch of ``B`` decisions."""

    moves: np.ndarray
    """``(B,)`` int64: the moves played (what :meth:`SearchAgent.act_batch` returns)."""
    searched: np.ndarray
    """``(B,)`` bool: the rows searched (the others play its policy's move,
    :attr:`SearchAgent.ppo`'s: by default :data:`SEARCHED_ON`'s specialist at 2, 4 and 6
    players, so ``ppo_v4``'s at 4 and ``ppo_v3``'s at 6, and the general model at 3 and 5)."""
    values: np.ndarray
    """``(B, 9)`` float64: in a searched row, each legal move's mean value over the
    worlds (the chance to win the game); NaN for the illegal moves and the rows not
    searched. The move played is the legal move of the highest value."""


def _unfit_mask(legal: list[int], state: PublicState) -> str:
    """Why the moves ``legal`` of a mask do not fit the game behind ``state`` (``""``: they
    do). Its worlds would try a move the rules do not allow there, and the search would
    fail with the illegal moves of hundreds of imagined games, which the user never
    played. A mask that leaves a legal move out fits (the search tries only those it
    allows). The observer's legal moves are the same in every world: its own hand and the
    top card decide its plays (rule 4), the unseen cards beyond the other hands (the draw
    pile) and who is still in whether it may draw (rule 5), and it may always quit; they
    are read from ``state`` by the engine's rules, where dealing a world to ask it cost
    about 115 us a searched decision."""
    hand, top = state.snapshot["hands"][0], state.snapshot["discard_pile"][-1]
    allowed = sorted(card - 1 for card in playable_on(top) if card in hand)
    if can_draw(sum(state.unseen) - sum(state.hand_sizes), state.snapshot["quit"].count(False)):
        allowed.append(Action.DRAW)
    allowed.append(Action.QUIT)
    if set(legal) <= set(allowed):
        return ""

    def names(actions: Iterable[int]) -> str:
        return ", ".join(f"{a} ({Action(a).name})" for a in actions)

    extra = names(a for a in legal if a not in allowed)
    return f"it allows {extra}, which the rules do not; legal there: {names(allowed)}"


@dataclass(frozen=True)
class _Decision:
    """A decision to search: its row in the batch, table size, legal moves, observation
    and the public state behind it."""

    row: int
    players: int
    legal: list[int]
    observation: np.ndarray
    state: PublicState


def belief_deals(
    observation: np.ndarray, state: PublicState, belief: Layers, rng: np.random.Generator, worlds: int
) -> tuple[np.ndarray, np.ndarray]:
    """The hidden cards of ``worlds`` worlds at once: the other hands as card counts
    ``(worlds, others, 7)``, drawn card by card as :func:`belief_hands` draws them (each
    card's value in proportion to the belief network's share of that value in that hand,
    among the unseen cards left; each world's hands in its own random order), and the rest
    of the unseen cards, shuffled, as each world's draw pile ``(worlds, cards)`` of card
    codes (its last card drawn first)."""
    others = len(state.hand_sizes)
    logits = mlp(belief, np.asarray(observation, dtype=np.float32)[None]).reshape(others, _NV)
    share = np.exp(logits - logits.max(axis=1, keepdims=True)).astype(np.float64)
    sizes = np.asarray(state.hand_sizes, dtype=np.int64)
    pool = np.tile(np.asarray(state.unseen, dtype=np.int64), (worlds, 1))
    hands = np.zeros((worlds, others, _NV), dtype=np.int64)
    order = np.argsort(rng.random((worlds, others)), axis=1)  # who draws first, in each world
    at = np.arange(worlds)
    for turn in range(others):
        seat = order[:, turn]
        wanted = sizes[seat]
        for card in range(int(wanted.max(initial=0))):
            w = share[seat] * (pool > 0)
            w = np.where(w.sum(axis=1, keepdims=True) > 0, w, pool)
            cdf = np.cumsum(w, axis=1)
            u = rng.random(worlds) * cdf[:, -1]
            value = np.minimum((cdf <= u[:, None]).sum(axis=1), _last_positive(w))
            draw = at[card < wanted]
            pool[draw, value[draw]] -= 1
            hands[draw, seat[draw], value[draw]] += 1
    rest = np.asarray(state.unseen, dtype=np.int64) - hands.sum(axis=1)
    cards = int(rest[0].sum())
    ends = np.cumsum(rest, axis=1)
    deck = (ends[:, None, :] <= np.arange(cards)[None, :, None]).sum(axis=2) + 1  # the codes in order
    piles = np.take_along_axis(deck, np.argsort(rng.random((worlds, cards)), axis=1), axis=1)
    return hands, piles


def _last_positive(w: np.ndarray) -> np.ndarray:
    """Per row, the last column with a positive entry (where a draw at the cumulative
    sum's very top, by rounding, must land)."""
    return w.shape[1] - 1 - np.argmax(w[:, ::-1] > 0, axis=1)


def world_snapshots(state: PublicState, hands: np.ndarray, piles: np.ndarray) -> list[dict[str, Any]]:
    """The worlds of :func:`belief_deals`' hidden cards dealt into ``state``, as snapshots
    (:meth:`LlamaGame.to_dict` format): the observer at seat 0 and to act, the other seats
    holding ``hands`` in turn order from its left."""
    codes = np.arange(1, _NV + 1)
    mine = state.snapshot["hands"][0]
    return [
        {**state.snapshot, "hands": [mine, *(np.repeat(codes, h).tolist() for h in world)], "draw_pile": pile}
        for world, pile in zip(hands, piles.tolist(), strict=True)
    ]


@dataclass(frozen=True)
class Worlds:
    """The worlds of one search: the public state behind the searcher's observation and
    the hidden cards of each world (:func:`belief_deals`)."""

    state: PublicState
    hands: np.ndarray
    """The other hands, ``(worlds, others, 7)`` card counts, in turn order from seat 0's left."""
    piles: np.ndarray
    """The draw piles, ``(worlds, cards)`` card codes, the last drawn first."""


_OUTSIDE, _ME, _THEM = 0, 1, 2
"""The players of :func:`batch_values`' table: seat 0 waiting (its move comes from the
search), seat 0 played by the specialist, the others."""


def batch_values(
    searches: Sequence[Worlds],
    legal: Sequence[list[int]],
    player: Agent,
    opponent: Agent,
    value_net: Layers,
    seed: int | np.random.Generator | None,
    max_steps: int | None = None,
    deal_keys: Sequence[np.ndarray] | None = None,
    mirror: float = 0.0,
) -> list[np.ndarray]:
    """Each move's value in each world, ``(worlds, moves)`` per search: for every search
    ``i``, every world of ``searches[i]`` and every move of ``legal[i]``, one game of one
    :class:`~llama_env.batch.BatchGame` (:meth:`~llama_env.batch.BatchGame.from_worlds`);
    each plays the move, then the rest of the round (``player`` for seat 0, ``opponent``
    for the others), then the others until seat 0's next decision, which ``value_net``
    values (the win share itself if the game ended). All of them are stepped together
    through one :class:`~llama_env.table.BatchTable`; ``seed`` seeds the batch's deals of
    the rounds after the searched one, unless ``deal_keys`` (one array per search, a
    non-negative integer per world) gives each world deals of its own
    (:meth:`~llama_env.batch.BatchGame.from_worlds`): every move of a world then meets its
    next deal, and a search's values do not depend on the others sharing the batch.
    ``max_steps`` (``None``: no limit) stops the play-out after that many steps of the
    batch; a world cut short is valued by ``value_net`` from seat 0's observation where it
    stands. ``mirror`` (:attr:`Settings.mirror`) is the share of each search's worlds, its
    last ones (:func:`mirrored_worlds`), in which ``player`` plays the others' seats too."""
    if not searches or any(not len(w.hands) for w in searches) or any(not m for m in legal):
        raise ValueError("batch_values needs at least one world and one legal move per search")
    snapshots, of, hands, piles, first, mirrored = [], [], [], [], [], []
    for i, (worlds, moves) in enumerate(zip(searches, legal, strict=True)):
        mirrored.append(np.repeat(mirrored_worlds(len(worlds.hands), mirror), len(moves)))
        snapshots += world_snapshots(worlds.state, worlds.hands[:1], worlds.piles[:1])
        mine = np.bincount(worlds.state.snapshot["hands"][0], minlength=_NV + 1)[1:]
        every = np.concatenate([np.broadcast_to(mine, (len(worlds.hands), 1, _NV)), worlds.hands], axis=1)
        of.append(np.full(len(every) * len(moves), i))
        hands.append(np.repeat(every, len(moves), axis=0))  # world by world, each move in turn
        piles += [pile for pile in worlds.piles for _ in moves]
        first.append(np.tile(moves, len(every)))
    keys = None
    if deal_keys is not None:
        keys = np.concatenate([np.repeat(k, len(m)) for k, m in zip(deal_keys, legal, strict=True)])
    batch = BatchGame.from_worlds(
        snapshots, np.concatenate(of), np.concatenate(hands), piles, seed=seed, auto_reset=False, deal_keys=keys
    )
    p = batch.num_players
    them = np.where(np.concatenate(mirrored), _ME, _THEM)[:, None]
    outside, playing = np.repeat(them, p, axis=1), np.repeat(them, p, axis=1)
    outside[:, 0], playing[:, 0] = _OUTSIDE, _ME
    table = BatchTable(batch, [None, player, opponent], outside)
    first_round = batch.round
    won = table.apply(np.concatenate(first)).rewards[:, 0]
    rolling = ~batch.game_over & (batch.round == first_round)  # seat 0 plays the round out
    table.seat(np.flatnonzero(rolling), playing[rolling])
    taken = 0
    while max_steps is None or taken < max_steps:
        result = table.advance(steps=1)
        if not result.steps:
            break
        taken += 1
        won += result.rewards[:, 0]
        ended = rolling & (batch.game_over | (batch.round != first_round))
        if ended.any():  # from here the others move until seat 0's next decision
            table.seat(np.flatnonzero(ended), outside[ended])
            rolling &= ~ended
    values = won.astype(np.float64)
    leaves = np.flatnonzero(~batch.game_over)
    if leaves.size:  # seat 0's next decision, or where max_steps cut the world short
        obs = batch.observation(1, seats=np.zeros(leaves.size, dtype=np.int64), games=leaves)
        values[leaves] = 1.0 / (1.0 + np.exp(-mlp(value_net, obs)[:, 0]))
    out, at = [], 0
    for worlds, moves in zip(searches, legal, strict=True):
        size = len(worlds.hands) * len(moves)
        out.append(values[at : at + size].reshape(len(worlds.hands), len(moves)))
        at += size
    return out


def check_mirror(mirror: float) -> None:
    """A ``ValueError`` naming ``mirror`` unless it is within :data:`MIRROR_RANGE` (the one
    wording for every caller that takes a share of mirrored worlds)."""
    low, high = MIRROR_RANGE
    if not low <= mirror <= high:
        raise ValueError(f"mirror must be within {low:g}..{high:g}, got {mirror!r}")


def mirrored_worlds(worlds: int, mirror: float) -> np.ndarray:
    """``(worlds,)`` bool: the worlds of a search in which the others play as the searcher's
    own policy, the last ``round(worlds * mirror)`` of them (its worlds are drawn alike,
    so which ones does not matter)."""
    check_mirror(mirror)
    out = np.zeros(worlds, dtype=bool)
    out[worlds - int(round(worlds * mirror)) :] = True
    return out


def policy_moves(actor: Actor, observations: np.ndarray, masks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The actor's move in each row (the ``ppo`` agent's: the legal move of the highest
    logit) and its probability under the actor's softmax over the legal moves, ``(B,)``
    each: where that is below ``below`` the agent searches."""
    logits = actor.logits(observations, masks)
    p = np.exp(logits - logits.max(axis=1, keepdims=True))
    return logits.argmax(axis=1), p.max(axis=1) / p.sum(axis=1)


def policy_move(actor: Actor, observation: np.ndarray, legal: list[int]) -> tuple[int, float]:
    """The actor's move among ``legal`` and its probability under the actor's softmax."""
    logits = actor.logits(observation[None], action_mask(legal)[None].astype(bool))[0][legal]
    p = np.exp(logits - logits.max())
    return legal[int(np.argmax(p))], float(p.max() / p.sum())


def searched_move(
    worlds: Iterable[LlamaGame], seat: int, legal: list[int], actor: Actor, opponent: Agent, value_net: Layers
) -> int:
    """The move of ``legal`` with the highest mean value over ``worlds`` by
    :func:`engine_values`: the search one engine game at a time."""
    values = engine_values(worlds, seat, legal, actor, opponent, value_net)
    return legal[int(np.argmax(values.mean(axis=0)))]


def engine_values(
    worlds: Iterable[LlamaGame], seat: int, legal: list[int], actor: Actor, opponent: Agent, value_net: Layers
) -> np.ndarray:
    """Each move's value in each world, ``(worlds, moves)``, one engine game at a time
    (games where ``seat`` is to act): in each world every move is tried, the rest of the
    round played (``actor`` for ``seat``, ``opponent`` for the others), then the others
    until ``seat``'s next decision, which ``value_net`` values (the win share itself if
    the game ended). Every move is tried on a copy of the same world, so they meet the
    same cards and the same later deals. What :func:`batch_values` computes in one batch
    (which deals the later rounds its own way), and the reference it is tested against."""
    sims: list[tuple[int, int, LlamaGame, Table]] = []
    round_ = 0
    for k, world in enumerate(worlds):
        round_ = world.round
        seats: list[Agent | None] = [opponent] * world.num_players
        seats[seat] = None
        for j, action in enumerate(legal):
            sim = world.copy()
            table = Table(sim, seats)
            table.apply(action)
            table.advance()
            sims.append((k, j, sim, table))
    if not sims:
        raise ValueError("searched_move needs at least one world and one legal move")
    values = np.zeros((len(sims) // len(legal), len(legal)))
    live = sims
    while live := [s for s in live if not s[2].game_over and s[2].round == round_]:  # the rest of the round
        # the actor's moves in every world at once: one forward pass
        masks = np.stack([unchecked_action_mask(s[2].legal_actions()) for s in live])
        moves = actor.act_batch(encode_many_v1([s[2] for s in live], [seat] * len(live)), masks)
        for (_, _, _, table), move in zip(live, moves.tolist(), strict=True):
            table.apply(move)
            table.advance()
    leaves = [s for s in sims if not s[2].game_over]
    for k, j, sim, _ in sims:
        if sim.game_over:
            values[k, j] = game_rewards(sim.scores)[seat]
    if leaves:
        obs = encode_many_v1([s[2] for s in leaves], [seat] * len(leaves))
        win = 1.0 / (1.0 + np.exp(-mlp(value_net, obs)[:, 0]))
        values[[s[0] for s in leaves], [s[1] for s in leaves]] = win
    return values
