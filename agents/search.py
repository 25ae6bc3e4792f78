"""The search agent: the shipped PPO specialist, with a one-move search where it is unsure.

``agents.make("search")`` plays the ``ppo`` agent's move, except where its specialist's
top probability is below ``below`` (about 3 moves a game at 4 players). There it imagines
``worlds`` games that its observation cannot tell from the real one
(:mod:`llama_env.worlds`), the other hands drawn card by card from a *belief network*
(observation -> the share of each value in each other hand), and tries every legal move
in each: the rest of the round is played out (the specialist for itself, ``heuristic``
for the others), then the others move until its next decision, which a *value network*
(observation -> the chance to win the game) values (the actual result if the game
ended). It plays the move with the highest mean value over the same worlds.

The two networks (``agents/models/search_<n>p.npz``, :data:`NETWORKS`) were fitted on
48,000 games of the specialist against ``heuristic`` by ``llama-rl fit-search``
(:mod:`train.fit.search_nets`; docs/training.md, "Reproduce every shipped agent"). At
table sizes without them, at rule options they were not fitted on (``end_score`` other
than 40) and for observations that do not fit a round dealt 6 cards a hand (and given a
version-0 observation), the agent plays exactly as ``ppo``.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import ClassVar

import numpy as np

from agents.base import BaseAgent, check_observation, legal_actions, number
from agents.heuristic import HeuristicAgent
from agents.ppo import MODELS_DIR, Actor, PPOAgent
from llama_env.agent import Agent, register
from llama_env.engine import DEFAULT_END_SCORE, NUM_CARD_VALUES, LlamaGame
from llama_env.observation import OBS_SIZE_V1, ObsView, action_mask, encode_many_v1
from llama_env.rewards import game_rewards
from llama_env.table import Table
from llama_env.worlds import PublicState, deal_world, public_state

__all__ = [
    "SearchAgent",
    "NETWORKS",
    "Layers",
    "load_networks",
    "save_networks",
    "mlp",
    "belief_hands",
    "belief_world",
    "policy_move",
    "searched_move",
]

Layers = list[tuple[np.ndarray, np.ndarray]]
"""A ReLU network as ``(weight, bias)`` layers for ``x @ weight + bias``."""

NETWORKS: dict[int, Path] = {4: MODELS_DIR / "search_4p.npz"}
"""Table size -> the file of the value and belief networks the search uses there."""

_NV = NUM_CARD_VALUES


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
    ``belief_w0``, ...), through a temporary file so it is never half written."""
    path = Path(path)
    arrays = {f"{kind}_{p}{k}": a for kind, layers in (("value", value), ("belief", belief))
              for k, (w, b) in enumerate(layers) for p, a in (("w", w), ("b", b))}  # fmt: skip
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        with open(tmp, "wb") as fh:
            np.savez(fh, **arrays)  # type: ignore[arg-type]
        tmp.replace(path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def load_networks(path: str | Path, players: int) -> tuple[Layers, Layers]:
    """The value and belief networks of a ``players``-seat table from ``path``, checked:
    they read version-1 observations, and give 1 value and 7 shares per other seat.
    Raises ``ValueError`` naming the file for anything else."""
    path = Path(path)
    try:
        with np.load(path, allow_pickle=False) as z:
            nets: dict[str, Layers] = {}
            for kind in ("value", "belief"):
                layers, k = [], 0
                while f"{kind}_w{k}" in z.files:
                    layers.append((z[f"{kind}_w{k}"].astype(np.float32), z[f"{kind}_b{k}"].astype(np.float32)))
                    k += 1
                nets[kind] = layers
    except Exception as exc:  # noqa: BLE001 - a bad archive raises many types
        first_line = (str(exc).strip().splitlines() or [""])[0][:160]
        raise ValueError(f"cannot load the search networks from {path}: {type(exc).__name__}: {first_line}") from None
    for kind, out in (("value", 1), ("belief", (players - 1) * _NV)):
        width = OBS_SIZE_V1
        layers = nets[kind]
        if not layers:
            raise ValueError(f"cannot load the search networks from {path}: it has no {kind} network")
        for w, b in layers:
            if w.ndim != 2 or w.shape[0] != width or b.shape != (w.shape[1],) or not np.isfinite(w).all():
                raise ValueError(
                    f"cannot load the search networks from {path}: a {kind} layer of shape {w.shape} "
                    f"does not follow one of width {width} (or holds NaN)"
                )
            width = w.shape[1]
        if width != out:
            raise ValueError(
                f"cannot load the search networks from {path}: the {kind} network gives {width} outputs, "
                f"a {players}-player table needs {out}"
            )
    return nets["value"], nets["belief"]


def belief_hands(
    observation: np.ndarray, state: PublicState, belief: Layers, rng: np.random.Generator
) -> list[list[int]]:
    """The other hands of one world, card by card: each card's value drawn in proportion
    to the belief network's share of that value in that hand, among the unseen cards
    left (the hands in a random order, so none always gets first pick)."""
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
    (:func:`llama_env.worlds.deal_world`). The observer is seat 0 and to act."""
    return deal_world(state, belief_hands(observation, state, belief, rng), rng)


@register("search", group="strongest")
class SearchAgent(BaseAgent):
    """ppo with a one-move search at 4 players where its specialist is unsure, ppo at the
    other sizes: the strongest at every size, about 0.28 s a 4-player game on one core.

    The search draws worlds from a belief network, plays them out to the round's end and
    values them with a value network; at other table sizes it plays as ppo."""

    name = "search"
    obs_version = 1
    request_limits: ClassVar[dict[str, tuple[float, float]]] = {"worlds": (1, 96), "below": (0.0, 1.0)}
    """What a web page may ask for (:func:`llama_env.agent.request_limits`): the cost of a
    move grows with the worlds and with ``below``."""
    costly = True
    """Its searched moves take tenths of a second (:func:`llama_env.agent.costly`)."""

    def __init__(self, worlds: int = 48, below: float = 0.95, seed: int | None = None) -> None:
        super().__init__(seed)
        self.worlds = int(number("SearchAgent", "worlds", worlds, integer=True, minimum=1))
        self.below = number("SearchAgent", "below", below, minimum=0.0)
        self.ppo = PPOAgent()
        """The policy it plays where it does not search, and in its rollouts."""
        self.networks = {n: load_networks(f, n) for n, f in NETWORKS.items()}
        """Table size -> (value network, belief network)."""
        self.opponent = HeuristicAgent()
        """How it expects the others to play, in its rollouts."""
        self.searched = 0
        """Moves searched so far (with :attr:`changed`: how often the search overruled the policy)."""
        self.changed = 0

    def act(self, observation: np.ndarray, action_mask: np.ndarray) -> int:
        check_observation(observation)
        legal = legal_actions(action_mask)
        if np.shape(observation) != (OBS_SIZE_V1,):  # version 0: no history to search with
            return self.ppo.act(observation, action_mask)
        o = ObsView(observation, 1)
        actor = self.ppo.specialists.get(o.num_players)
        if actor is None or o.num_players not in self.networks or len(legal) == 1:
            return self.ppo.act(observation, action_mask)
        obs = np.asarray(observation, dtype=np.float32)
        best, confidence = policy_move(actor, obs, legal)
        if confidence >= self.below or o.end_score != DEFAULT_END_SCORE:
            return best
        try:
            state = public_state(obs)
        except ValueError:  # not a round dealt with the default hand size: no world to search in
            return best
        self.searched += 1
        pick = self._search(obs, state, legal, actor)
        self.changed += pick != best
        return pick

    def _search(self, observation: np.ndarray, state: PublicState, legal: list[int], actor: Actor) -> int:
        value_net, belief_net = self.networks[len(state.hand_sizes) + 1]
        worlds = (belief_world(observation, state, belief_net, self.rng) for _ in range(self.worlds))
        return searched_move(worlds, 0, legal, actor, self.opponent, value_net)

    def __repr__(self) -> str:
        return f"SearchAgent(worlds={self.worlds}, below={self.below:g})"


def policy_move(actor: Actor, observation: np.ndarray, legal: list[int]) -> tuple[int, float]:
    """The actor's move among ``legal`` and its probability under the actor's softmax."""
    logits = actor.logits(observation[None], action_mask(legal)[None].astype(bool))[0][legal]
    p = np.exp(logits - logits.max())
    return legal[int(np.argmax(p))], float(p.max() / p.sum())


def searched_move(
    worlds: Iterable[LlamaGame], seat: int, legal: list[int], actor: Actor, opponent: Agent, value_net: Layers
) -> int:
    """The move of ``legal`` with the highest mean value over ``worlds`` (games where
    ``seat`` is to act): in each world every move is tried, the rest of the round played
    (``actor`` for ``seat``, ``opponent`` for the others), then the others until ``seat``'s
    next decision, which ``value_net`` values (the win share itself if the game ended).
    Every move is tried on a copy of the same world, so they meet the same cards and the
    same later deals."""
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
        masks = np.stack([action_mask(s[2].legal_actions()) for s in live])
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
    return legal[int(np.argmax(values.mean(axis=0)))]
