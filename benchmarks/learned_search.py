"""Issue 12's search route with learned parts: a one-move search on top of the shipped
PPO specialist, its leaves valued by a value network, its worlds drawn from a belief
network.

    python benchmarks/learned_search.py [--players 4] [--games 4000] [--info record]
                                        [--worlds 16] [--below 0.9] [--seed 0]
                                        [--deals script|eval] [--opponent heuristic]
                                        [--train-games 48000] [--cache runs/learned_search]
                                        [--export agents/models/search_4p.npz]

One seat (rotated from game to game) is the searcher, every other seat ``heuristic`` (or
``--opponent``, an agent spec such as ``perturbed:seed=12345``, reset each game as
``llama-rl eval`` resets it; the search still models the others as ``heuristic``).

1. **Data** (cached in ``--cache``): ``--train-games`` games of the shipped ``ppo`` agent
   at one seat against ``heuristic``, on deals no evaluation uses. At each of its
   decisions: its version-1 observation, the others' true hands, and its win share at
   the game's end.
2. **Two networks** (cached; 256-256, ReLU, Adam, 1,024 per batch, learning rate 1e-3
   decaying to 0): a *value network* from the observation to the chance to win (binary
   cross-entropy, 2 epochs: more overfits, every game gives about 45 correlated
   observations), and a *belief network* from the observation to what each other seat
   holds, as the share of each value in its hand (cross-entropy, 3 epochs).
3. **The search.** The searcher plays the specialist's move, except where the
   specialist's top probability is below ``--below`` (``--below 1.01``: every move with
   a choice). There it draws ``--worlds`` worlds (the others' hands, the draw pile's
   order) and tries every legal move in each: the rest of the round is played (the
   specialist for itself, ``heuristic`` for the others), then the others until its next
   decision, where the value network values the world (the actual win share if the
   game ended). It plays the move of the highest mean value, the same worlds for every
   move.

``--info`` says where the worlds come from:

* ``record``: the version-1 record, as ``search_experiment.py`` draws them (a seat that
  drew or quit on top ``t`` is taken to lack ``t`` and ``t + 1``);
* ``belief``: the belief network, card by card (each card's value in proportion to the
  network's share for that seat, among the values still unseen);
* ``hands``: the others' true hands, the draw pile reshuffled: the bound for this search;
* ``none``: no search, the specialist alone (the baseline, same deals).

Except with ``hands``, a world keeps only what the searcher's seat observes: the public
state, its own hand and the round's record; every hidden card is drawn again
(tests/property/test_search_worlds.py holds the worlds to that). The script reads that
public state from the game itself. ``agents.make("search")`` is the ``belief`` search as
an agent: it rebuilds the public state from its observation (:mod:`llama_env.worlds`)
and plays the networks that ``--export`` writes (its shipped
``agents/models/search_4p.npz``: ``--games 0 --export agents/models/search_4p.npz``, with
the networks of the default ``--train-games`` and ``--seed``).

Prints the win share with its 95% interval, how often the search changed the
specialist's move, and, with ``--hand-error``, how many cards of each other hand a world
from the record, the belief network or the unseen cards drawn uniformly gets wrong.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

import numpy as np
from search_experiment import hand_error, sample_from_record, world_with_hands

from agents.heuristic import HeuristicAgent
from agents.ppo import SHIPPED, Actor, PPOAgent, load_actor
from agents.search import belief_hands, policy_move, save_networks, searched_move
from llama_env.agent import reset_agent, resolve
from llama_env.engine import NUM_CARD_VALUES, LlamaGame
from llama_env.observation import encode_v1
from llama_env.rewards import game_rewards
from llama_env.table import Table, TableListener
from llama_env.worlds import public_state
from train.evaluation.runner import KEY_AGENT, KEY_DEAL, seed_int
from train.evaluation.stats import mean_ci

_NV = NUM_CARD_VALUES
_TRAIN_SEED = 20_000_000  # deals of the training data: far from every evaluation's
_INFOS = ("none", "record", "belief", "hands")


class Recorder(TableListener):
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


def collect(actor: Actor, players: int, games: int) -> dict[str, np.ndarray]:
    """Step 1: observations, the others' hands and the final win share, per decision."""
    heuristic = HeuristicAgent()
    ppo = PPOAgent.from_actor(actor)
    obs: list[np.ndarray] = []
    hands: list[np.ndarray] = []
    wins: list[float] = []
    game_of: list[int] = []
    for g in range(games):
        seat = g % players
        game = LlamaGame(players, rng=_TRAIN_SEED + g)
        seats: list[Any] = [heuristic] * players
        seats[seat] = ppo
        recorder = Recorder(seat)
        Table(game, seats, listener=recorder).play()
        obs += recorder.obs
        hands += recorder.hands
        wins += [game_rewards(game.scores)[seat]] * len(recorder.obs)
        game_of += [g] * len(recorder.obs)
    return {
        "obs": np.stack(obs),
        "hands": np.stack(hands),
        "win": np.array(wins, dtype=np.float32),
        "game": np.array(game_of, dtype=np.int32),
    }


def fit(data: dict[str, np.ndarray], kind: str, seed: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """Step 2: the value (``kind="value"``) or belief network, as (weight, bias) layers
    for ``x @ w + b``. One game in 20 is held out and its loss printed."""
    import torch  # the training extra; only this step needs it

    torch.manual_seed(seed)
    x = torch.from_numpy(data["obs"])
    held = torch.from_numpy(data["game"] % 20 == 0)
    others = data["hands"].shape[1]
    if kind == "value":
        y = torch.from_numpy(data["win"])
        out, epochs = 1, 2

        def loss_of(logits: Any, target: Any) -> Any:
            return torch.nn.functional.binary_cross_entropy_with_logits(logits[:, 0], target)
    else:
        y = torch.from_numpy(data["hands"].astype(np.float32))
        out, epochs = others * _NV, 3

        def loss_of(logits: Any, target: Any) -> Any:
            logp = torch.log_softmax(logits.view(-1, others, _NV), dim=2)
            return -(target * logp).sum() / target.sum()

    net = torch.nn.Sequential(
        torch.nn.Linear(x.shape[1], 256), torch.nn.ReLU(), torch.nn.Linear(256, 256), torch.nn.ReLU(),
        torch.nn.Linear(256, out),
    )  # fmt: skip
    xt, yt = x[~held], y[~held]
    steps = epochs * (len(xt) // 1024 + 1)
    opt = torch.optim.Adam(net.parameters(), lr=1e-3)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=steps)
    for epoch in range(epochs):
        for idx in torch.randperm(len(xt)).split(1024):
            loss = loss_of(net(xt[idx]), yt[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
        with torch.no_grad():
            print(f"  {kind} network, epoch {epoch + 1}: held-out loss {loss_of(net(x[held]), y[held]).item():.4f}")
    linear = [m for m in net if isinstance(m, torch.nn.Linear)]
    return [(m.weight.detach().numpy().T.copy(), m.bias.detach().numpy().copy()) for m in linear]


def networks(args: argparse.Namespace, actor: Actor) -> dict[str, list[tuple[np.ndarray, np.ndarray]]]:
    """Steps 1 and 2, or their results from ``--cache``."""
    cache = Path(args.cache) / f"{args.players}p_{args.train_games}"
    nets: dict[str, list[tuple[np.ndarray, np.ndarray]]] = {}
    for kind in ("value", "belief"):
        file = cache / f"{kind}.npz"
        if file.exists():
            with np.load(file) as d:
                nets[kind] = [(d[f"w{k}"], d[f"b{k}"]) for k in range(len(d.files) // 2)]
    if len(nets) == 2:
        print(f"networks from {cache}")
        return nets
    t = time.perf_counter()
    data = collect(actor, args.players, args.train_games)
    print(f"{len(data['obs'])} decisions of {args.train_games} games collected in {time.perf_counter() - t:.0f} s")
    cache.mkdir(parents=True, exist_ok=True)
    for kind in ("value", "belief"):
        t = time.perf_counter()
        nets[kind] = fit(data, kind, args.seed)
        arrays = {f"{p}{k}": a for k, (w, b) in enumerate(nets[kind]) for p, a in (("w", w), ("b", b))}
        np.savez(cache / f"{kind}.npz", **arrays)  # type: ignore[arg-type]
        print(f"  {kind} network fitted in {time.perf_counter() - t:.0f} s, saved to {cache}")
    return nets


def sample_from_belief(
    game: LlamaGame, seat: int, belief: list[tuple[np.ndarray, np.ndarray]], rng: np.random.Generator
) -> LlamaGame:
    """A world whose other hands are drawn card by card from the belief network's shares
    (as the ``search`` agent draws them), the seats as in ``game``."""
    obs = encode_v1(game, seat)
    state = public_state(obs)
    hands = belief_hands(obs, state, belief, rng)
    pool = list(state.unseen)
    for card in (c for hand in hands for c in hand):
        pool[card - 1] -= 1
    return world_with_hands(game, seat, hands, pool, rng, keep_history=True)


class Searcher:
    """Step 3: the specialist's move, or where it is unsure, the searched one."""

    def __init__(
        self,
        actor: Actor,
        nets: dict[str, list[tuple[np.ndarray, np.ndarray]]],
        info: str,
        worlds: int,
        below: float,
        rng: np.random.Generator,
    ) -> None:
        self.actor, self.nets, self.info, self.worlds, self.below, self.rng = actor, nets, info, worlds, below, rng
        self.heuristic = HeuristicAgent()
        self.searched = self.changed = 0

    def policy(self, game: LlamaGame, seat: int) -> tuple[int, float]:
        return policy_move(self.actor, encode_v1(game, seat), game.legal_actions())

    def world(self, game: LlamaGame, seat: int) -> LlamaGame:
        if self.info == "record":
            return sample_from_record(game, seat, self.rng, 0.25, True, keep_history=True)
        if self.info == "belief":
            return sample_from_belief(game, seat, self.nets["belief"], self.rng)
        world = game.to_dict()  # "hands": the truth but the pile's order and the next deals
        self.rng.shuffle(world["draw_pile"])
        return LlamaGame.from_dict({**world, "rng_state": None}, rng=self.rng)

    def move(self, game: LlamaGame, seat: int) -> int:
        best, confidence = self.policy(game, seat)
        legal = game.legal_actions()
        if self.info == "none" or len(legal) == 1 or confidence >= self.below:
            return best
        self.searched += 1
        worlds = (  # each with its own next deals, the same after every move
            LlamaGame.from_dict(
                {**self.world(game, seat).to_dict(), "rng_state": None}, rng=int(self.rng.integers(2**31))
            )
            for _ in range(self.worlds)
        )
        pick = searched_move(worlds, seat, legal, self.actor, self.heuristic, self.nets["value"])
        self.changed += pick != best
        return pick


def hand_errors(game: LlamaGame, seat: int, searcher: Searcher, rng: np.random.Generator) -> dict[str, float]:
    """Cards per other hand that one world of each kind gets wrong."""
    return {
        "uniform": hand_error(sample_from_record(game, seat, rng, 1.0, False), game, seat),
        "record": hand_error(sample_from_record(game, seat, rng, 0.25, True), game, seat),
        "belief": hand_error(sample_from_belief(game, seat, searcher.nets["belief"], rng), game, seat),
    }


def deal(deals: str, seed: int, g: int) -> np.random.Generator | int:
    """Game ``g``'s generator: this script's own deals, or those of ``llama-rl eval`` (which
    seats its first agent at ``g % players``, as here)."""
    if deals == "eval":
        return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(KEY_DEAL, g)))
    return seed * 1_000_003 + g


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--players", type=int, default=4)
    ap.add_argument("--games", type=int, default=4000)
    ap.add_argument("--info", choices=_INFOS, default="record")
    ap.add_argument("--worlds", type=int, default=16)
    ap.add_argument("--below", type=float, default=0.9, help="search where the policy's top probability is below this")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--train-games", type=int, default=48_000)
    ap.add_argument("--cache", default="runs/learned_search")
    ap.add_argument("--export", metavar="FILE", help="also write the networks to FILE, as the search agent reads them")
    ap.add_argument("--hand-error", action="store_true", help="also measure the worlds' hand errors")
    ap.add_argument("--opponent", default="heuristic", help="the agent at every other seat (an agent spec)")
    ap.add_argument(
        "--deals",
        choices=("script", "eval"),
        default="script",
        help="eval: the deals and seats of `llama-rl eval --agents ppo,heuristic,... --seed <seed>`",
    )
    args = ap.parse_args()
    if args.players not in SHIPPED["ppo"]:
        ap.error(f"--players must be a table size with a shipped specialist: {sorted(SHIPPED['ppo'])}")
    actor = load_actor(SHIPPED["ppo"][args.players])
    nets = networks(args, actor)
    if args.export:
        save_networks(args.export, nets["value"], nets["belief"])
        print(f"networks written to {args.export}")
    if not args.games:
        return
    rng = np.random.default_rng(args.seed + 1)
    searcher = Searcher(actor, nets, args.info, args.worlds, args.below, rng)
    opponents = [resolve(args.opponent) for _ in range(args.players - 1)]
    shares: list[float] = []
    errors: dict[str, list[float]] = {"uniform": [], "record": [], "belief": []}
    t = time.perf_counter()
    for g in range(args.games):
        me = g % args.players
        game = LlamaGame(args.players, rng=deal(args.deals, args.seed, g))
        seats: list[Any] = [None] * args.players
        for i, opponent in enumerate(opponents, start=1):  # agent i of llama-rl eval's list
            reset_agent(opponent, seed_int(args.seed, KEY_AGENT, g, i))
            seats[(me + i) % args.players] = opponent
        table = Table(game, seats)
        table.advance()
        while not game.game_over:
            if args.hand_error:
                for k, e in hand_errors(game, me, searcher, rng).items():
                    errors[k].append(e)
            table.apply(searcher.move(game, me))
            table.advance()
        shares.append(game_rewards(game.scores)[me])
    mean, lo, hi = mean_ci(np.array(shares))
    print(
        f"{args.players} players against {args.opponent}, info={args.info}, "
        f"{args.worlds} worlds where the policy is below {args.below}, "
        f"{args.games} games, seed {args.seed} ({args.deals} deals): win share {mean:.3f} [{lo:.3f}, {hi:.3f}] (fair "
        f"{1 / args.players:.3f}); searched {searcher.searched} moves, changed {searcher.changed}; "
        f"{time.perf_counter() - t:.0f} s"
    )
    if args.hand_error:
        print(
            "cards per other hand that a world gets wrong, at the searcher's decisions: "
            + ", ".join(f"{k} {np.mean(v):.2f}" for k, v in errors.items())
        )


if __name__ == "__main__":
    main()
