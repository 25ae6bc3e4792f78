"""Issue 12's search route, measured: a determinized rollout search at the draw-or-quit
decision, with a round-end value learned from heuristic self-play.

    python benchmarks/search_experiment.py [--players 4] [--games 400] [--info record]
                                           [--samples 24] [--value-games 6000] [--seed 0]

One seat (rotated from game to game) is the searcher; every other seat is ``heuristic``.
The searcher plays like ``heuristic`` except when nothing is playable and it may draw:
there it samples ``--samples`` determinizations of what it cannot see, plays each one
out to the end of the round twice (after a draw and after a quit; everybody, itself
included, then plays ``heuristic``) and picks the move with the higher mean value.
``--base ppo`` makes the searcher's unsearched moves PPO's; ``--rollout-base`` its moves
in the rollouts too.

The value of a round's end is the searcher's chance to win the game from the scores:
looked up in a table of (my score - the best other score, the highest score) fitted on
``--value-games`` games of heuristic self-play, or the actual win share when the round
ended the game.

``--info`` says what the searcher knows:

* ``record``: only its own observation (version 1, with the round's public record).
  The others' hands are sampled from the unseen cards, weighting down the values the
  record suggests they lack: a heuristic player draws or quits only when it holds
  neither the top card's value nor the next (hard for a seat that quit, since its hand
  is frozen; weight ``--draw-weight`` for a seat that drew, which may have drawn one
  since);
* ``uniform``: the same, the record ignored (plain determinization);
* ``hands``: the others' true hands (the draw pile's order stays unknown): a bound on
  what belief tracking can give this search;
* ``all``: the hands and the draw pile's order;
* ``none``: no search at all, the seat plays ``heuristic`` (the baseline, same deals).

Prints the searcher's win share with its 95% interval (fair share ``1 / players``).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import numpy as np

from agents.heuristic import HeuristicAgent
from llama_env.agent import Agent, resolve
from llama_env.engine import COPIES_PER_VALUE, NUM_CARD_VALUES, Action, LlamaGame, RoundResult
from llama_env.observation import ObsView, encode_v1
from llama_env.rewards import game_rewards
from llama_env.table import Table, TableListener
from train.evaluation.stats import mean_ci

_DRAW, _QUIT = int(Action.DRAW), int(Action.QUIT)
_NV = NUM_CARD_VALUES
_D_MAX, _D_STEP, _M_STEP, _M_BINS = 30, 3, 5, 9


def draw_or_quit(legal: list[int]) -> bool:
    """Whether the choice is the one the heuristic's tuning is about: nothing playable, a draw allowed."""
    return _DRAW in legal and all(a >= _DRAW for a in legal)


def play_round(agents: list[Agent], game: LlamaGame, first: int) -> RoundResult:
    """Apply ``first`` for the player to act, then let ``agents`` (one per seat) play
    until the round ends."""
    table = Table(game, agents)
    result = table.apply(first)
    while result is None:
        result = table.play_turn()
    return result


class ValueTable:
    """P(win) from (my score - the best other score, the highest score), fitted on
    heuristic self-play at every round's start (bins smoothed towards ``1 / players``)."""

    def __init__(self, players: int, games: int, policy: HeuristicAgent, prior: float = 20.0) -> None:
        wins = np.zeros((2 * _D_MAX // _D_STEP + 1, _M_BINS))
        seen = np.zeros_like(wins)
        for g in range(games):
            game = LlamaGame(players, rng=10_000_000 + g)  # deals no evaluation below uses
            starts = [list(game.scores)]
            starts += [list(r.scores) for r in Table(game, [policy] * players).play() if not r.game_over]
            share = game_rewards(game.scores)
            for scores in starts:
                for seat in range(players):
                    i, j = self._bin(scores, seat)
                    wins[i, j] += share[seat]
                    seen[i, j] += 1
        self.table = ((wins + prior / players) / (seen + prior)).tolist()

    @staticmethod
    def _bin(scores: list[int] | tuple[int, ...], seat: int) -> tuple[int, int]:
        others = min(s for i, s in enumerate(scores) if i != seat)
        d = max(-_D_MAX, min(_D_MAX, scores[seat] - others))
        return (d + _D_MAX) // _D_STEP, min(max(scores), _M_STEP * _M_BINS - 1) // _M_STEP

    def __call__(self, result: RoundResult, seat: int) -> float:
        if result.game_over:
            return game_rewards(result.scores)[seat]
        i, j = self._bin(result.scores, seat)
        return float(self.table[i][j])


def sample_from_record(
    game: LlamaGame,
    seat: int,
    rng: np.random.Generator,
    draw_weight: float,
    use_record: bool,
    keep_history: bool = False,
) -> LlamaGame:
    """A game consistent with what ``seat`` observes (its version-1 observation only).
    ``keep_history`` keeps the round's public record in the world (for a version-1
    policy playing in it); without it the world's record starts empty."""
    o = ObsView(encode_v1(game, seat))
    n = o.num_players
    pool = unseen_cards(o)
    hands: list[list[int]] = [[] for _ in range(n - 1)]
    quit_on = o.opp_quit_on
    order = sorted(range(n - 1), key=lambda i: 0 if quit_on[i] else 1)  # hard constraints first
    for i in order:
        lacks: set[int] = set()
        weight = 1.0
        if use_record and quit_on[i]:
            lacks, weight = {quit_on[i], quit_on[i] % _NV + 1}, 0.0
        elif use_record:
            for v, times in enumerate(o.opp_drew_on[i]):
                if times:
                    lacks |= {v + 1, (v + 1) % _NV + 1}
            weight = draw_weight
        for _ in range(o.opp_hand_size[i]):
            w = np.array([pool[v] * (weight if v + 1 in lacks else 1.0) for v in range(_NV)])
            if w.sum() <= 0:
                w = np.array(pool, dtype=np.float64)
            v = int(rng.choice(_NV, p=w / w.sum()))
            pool[v] -= 1
            hands[i].append(v + 1)
    return world_with_hands(game, seat, hands, pool, rng, keep_history)


def unseen_cards(o: ObsView) -> list[int]:
    """Cards of each value (index 0 for 1) that the observer cannot see: in the others'
    hands or the draw pile."""
    return [COPIES_PER_VALUE - o.hand[v] - o.discarded[v] for v in range(_NV)]


def world_with_hands(
    game: LlamaGame,
    seat: int,
    hands: list[list[int]],
    pool: list[int],
    rng: np.random.Generator,
    keep_history: bool = False,
) -> LlamaGame:
    """``game`` with the others' hands replaced by ``hands`` (in seat order after
    ``seat``) and the draw pile by the rest of ``pool`` (cards per value), shuffled; its
    public fields (the discard pile, scores, who quit...) stay, and the next deals come
    from ``rng``."""
    deck = [v + 1 for v in range(_NV) for _ in range(pool[v])]
    rng.shuffle(deck)
    snapshot = game.to_dict()
    n = game.num_players
    all_hands: list[list[int]] = [[] for _ in range(n)]
    all_hands[seat] = game.hand(seat)
    for i, hand in enumerate(hands):
        all_hands[(seat + 1 + i) % n] = hand
    snapshot.update(hands=all_hands, draw_pile=deck, rng_state=None)
    if not keep_history:
        snapshot.update(history=None)
    return LlamaGame.from_dict(snapshot, rng=rng)


class BeliefTracker(TableListener):
    """Particles of what one seat cannot see (the others' hands, the draw pile's order),
    kept consistent with every public move of the round: each particle is a whole game,
    stepped with the real moves, and weighted by how likely each other seat's move is
    under ``heuristic`` holding the particle's hand (1 if it is the heuristic's move,
    ``mismatch`` if not, 0 if the move is impossible with that hand). When the seat
    itself draws, the card it saw is moved to the top of each particle's draw pile
    (weighted by that card's share of the pile): the pile's order is exchangeable.

    It hears the moves as the real table's listener. A move is taken in once the table
    has applied it (at the next move, or when a world is sampled), so that a restart
    samples from the state after it; the move that ends a round is dropped with the
    round's particles."""

    def __init__(
        self,
        seat: int,
        particles: int,
        mismatch: float,
        repair: float,
        policy: HeuristicAgent,
        rng: np.random.Generator,
    ) -> None:
        self.seat, self.n, self.mismatch, self.repair, self.policy, self.rng = (
            seat,
            particles,
            mismatch,
            repair,
            policy,
            rng,
        )
        self.worlds: list[LlamaGame] = []
        self.weights = np.zeros(0)
        self.resets = 0
        self._pending: tuple[Table, int, int, int | None] | None = None

    def on_move(self, table: Table, seat: int, action: int, drawn: int | None) -> None:
        self._take_in()
        self._pending = (table, seat, action, drawn if seat == self.seat else None)  # others' draws are private

    def on_round_end(self, table: Table, result: RoundResult) -> None:
        self._pending = None
        if not result.game_over:
            self.new_round(table.game)

    def _take_in(self) -> None:
        if self._pending is not None:
            table, seat, action, drawn = self._pending
            self._pending = None
            self.observe(table.game, seat, action, drawn)

    def new_round(self, game: LlamaGame) -> None:
        """At a deal: the others' hands and the pile drawn uniformly from the unseen cards."""
        self.worlds = [sample_from_record(game, self.seat, self.rng, 1.0, False) for _ in range(self.n)]
        self.weights = np.ones(self.n)

    def observe(self, game: LlamaGame, seat: int, action: int, drawn: int | None) -> None:
        """Apply the real move of ``seat`` (``drawn``: the card this tracker's seat drew)."""
        w = self.weights
        for i, world in enumerate(self.worlds):
            if w[i] == 0.0:
                continue
            if seat == self.seat:
                if drawn is not None:
                    pile = world.draw_pile
                    where = [j for j, c in enumerate(pile) if c == drawn]
                    if not where:
                        w[i] = 0.0
                        continue
                    w[i] *= len(where) / len(pile)
                    j = where[0]
                    pile[j], pile[-1] = pile[-1], pile[j]
            else:
                if not world.is_legal(action):
                    if not self._repair(world, seat, action):
                        w[i] = 0.0
                        continue
                    w[i] *= self.repair
                if Table(world, [self.policy] * world.num_players).ask() != action:  # what heuristic would play
                    w[i] *= self.mismatch
            world.step(action)
        total = w.sum()
        if total <= 0.0:  # every particle ruled out: start again from the record alone
            self.resets += 1
            self.worlds = [sample_from_record(game, self.seat, self.rng, 0.25, True) for _ in range(self.n)]
            self.weights = np.ones(self.n)
            return
        w /= total
        if 1.0 / float(np.sum(w * w)) < self.n / 2:  # few effective particles: resample
            picks = self.rng.choice(self.n, size=self.n, p=w)
            self.worlds = [self.worlds[k].copy() for k in picks]
            self.weights = np.ones(self.n)

    def _repair(self, world: LlamaGame, seat: int, action: int) -> bool:
        """The particle's ``seat`` lacks the card it really played: swap one in from the
        particle's draw pile for a random card of that hand (the particle's earlier
        moves are not re-checked: an approximation that keeps particles alive)."""
        card = action + 1
        if action >= _DRAW or card not in world.draw_pile:
            return False
        hand = world._hands[seat]  # noqa: SLF001 (an experiment's particle, not a real game)
        held = [c for c in range(1, _NV + 1) for _ in range(hand[c])]
        out = held[int(self.rng.integers(len(held)))]
        j = world.draw_pile.index(card)
        world.draw_pile[j] = out
        hand[out] -= 1
        hand[card] += 1
        return True

    def sample(self) -> LlamaGame:
        """One world drawn by weight, its draw pile reshuffled (the order is exchangeable)."""
        self._take_in()
        k = int(self.rng.choice(len(self.worlds), p=self.weights / self.weights.sum()))
        world = self.worlds[k].copy()
        self.rng.shuffle(world.draw_pile)
        return world


def searcher(
    info: str,
    samples: int,
    draw_weight: float,
    value: ValueTable,
    policy: HeuristicAgent,
    rng: np.random.Generator,
    tracker: BeliefTracker | None,
    me: Agent | None = None,
) -> Callable[[LlamaGame], int]:
    """The search: ``search(game)`` is the move of the player to act with the highest
    mean value over ``samples`` worlds. In the rollouts every seat plays ``policy``, the
    searcher itself ``me`` when given."""

    def determinize(game: LlamaGame, seat: int) -> LlamaGame:
        if tracker is not None:
            return tracker.sample()
        if info in ("record", "uniform"):
            return sample_from_record(game, seat, rng, draw_weight, info == "record")
        g = game.copy()
        g._rng = rng  # noqa: SLF001 (an experiment: the next round's deal is not the real one)
        if info == "hands":
            rng.shuffle(g.draw_pile)
        return g

    def search(game: LlamaGame) -> int:
        seat = game.current_player
        everyone: list[Agent] = [policy] * game.num_players
        if me is not None:
            everyone[seat] = me
        total = dict.fromkeys(game.legal_actions(), 0.0)
        for _ in range(samples):
            world = determinize(game, seat)
            for a in total:
                total[a] += value(play_round(everyone, world.copy(), a), seat)
        return max(sorted(total, reverse=True), key=total.__getitem__)  # a tie goes to the higher action: quit

    return search


def hand_error(world: LlamaGame, game: LlamaGame, seat: int) -> float:
    """Cards per other seat by which ``world``'s hands differ from the real ones (L1 over values)."""
    others = [p for p in range(game.num_players) if p != seat]
    return sum(
        sum(abs(a - b) for a, b in zip(world.hand_counts(p), game.hand_counts(p), strict=True)) for p in others
    ) / len(others)


def belief_errors(
    game: LlamaGame, tracker: BeliefTracker, rng: np.random.Generator, draws: int = 8
) -> dict[str, float]:
    """Mean :func:`hand_error` of worlds from the tracker, from the record, and uniform."""
    seat = tracker.seat
    return {
        "track": float(np.mean([hand_error(tracker.sample(), game, seat) for _ in range(draws)])),
        "record": float(
            np.mean([hand_error(sample_from_record(game, seat, rng, 0.25, True), game, seat) for _ in range(draws)])
        ),
        "uniform": float(
            np.mean([hand_error(sample_from_record(game, seat, rng, 1.0, False), game, seat) for _ in range(draws)])
        ),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--players", type=int, default=4)
    ap.add_argument("--games", type=int, default=400)
    ap.add_argument("--info", choices=("track", "record", "uniform", "hands", "all", "none"), default="track")
    ap.add_argument("--particles", type=int, default=100)
    ap.add_argument("--mismatch", type=float, default=0.05)
    ap.add_argument("--repair", type=float, default=0.2)
    ap.add_argument("--samples", type=int, default=24)
    ap.add_argument("--draw-weight", type=float, default=0.25)
    ap.add_argument("--value-games", type=int, default=6000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--every", action="store_true", help="search every move with a choice, not only draw-or-quit")
    ap.add_argument("--base", default="heuristic", help="the agent that makes the searcher's other moves (`ppo`...)")
    ap.add_argument("--rollout-base", action="store_true", help="the searcher's rollout moves are --base's")
    args = ap.parse_args()

    policy = HeuristicAgent()
    base = resolve(args.base, seed=args.seed)
    t0 = time.perf_counter()
    value = ValueTable(args.players, args.value_games, policy)
    t1 = time.perf_counter()
    rng = np.random.default_rng(args.seed + 1)
    shares = []
    resets = 0
    errors: dict[str, list[float]] = {"track": [], "record": [], "uniform": []}
    for g in range(args.games):
        game = LlamaGame(args.players, rng=args.seed * 1_000_003 + g)
        me = g % args.players
        tracker = (
            BeliefTracker(me, args.particles, args.mismatch, args.repair, policy, rng) if args.info == "track" else None
        )
        search = searcher(
            args.info, args.samples, args.draw_weight, value, policy, rng, tracker, base if args.rollout_base else None
        )
        agents: list[Agent] = [policy] * args.players
        agents[me] = base  # the searcher's moves that are not searched
        table = Table(game, agents, listener=tracker)
        if tracker is not None:
            tracker.new_round(game)
        while not game.game_over:
            legal = game.legal_actions()
            mine = args.info != "none" and game.current_player == me
            if not (mine and (draw_or_quit(legal) or (args.every and len(legal) > 1))):
                table.play_turn()
                continue
            if tracker is not None and draw_or_quit(legal):
                for k, e in belief_errors(game, tracker, rng).items():
                    errors[k].append(e)
            table.apply(search(game))
        resets += tracker.resets if tracker is not None else 0
        shares.append(game_rewards(game.scores)[me])
    mean, lo, hi = mean_ci(np.array(shares))
    print(
        f"{args.players} players, base {args.base}"
        + (" (also in the rollouts)" if args.rollout_base else "")
        + f", info={args.info}, {args.samples} samples, "
        + ("every move searched, " if args.every else "")
        + f"{args.games} games, seed {args.seed}: "
        f"win share {mean:.3f} [{lo:.3f}, {hi:.3f}] (fair {1 / args.players:.3f}); "
        f"value table {t1 - t0:.0f} s, games {time.perf_counter() - t1:.0f} s"
        + (f"; {resets} tracker restarts" if args.info == "track" else "")
    )
    if args.info == "track":
        print(
            "cards per other hand that a sampled world gets wrong, at the searched decisions: "
            + ", ".join(f"{k} {np.mean(v):.2f}" for k, v in errors.items())
        )


if __name__ == "__main__":
    main()
