"""Rule-based baselines: ``greedy``, ``cautious`` and the tuned ``heuristic``.

Every agent here sees only what a learner sees -- the observation vector and the action
mask -- and never returns a masked action.

Three facts of the rules shape all of them:

* Playing a card never raises my penalty (rule 9 counts distinct values), so when a
  play is legal it is always at least as good for me as quitting: I can still quit next
  turn with a hand that costs no more. Only the LAST copy of a value lowers the penalty.
* Drawing is the only way my penalty can grow. Whether to draw or quit, when nothing is
  playable, is the real decision of the game.
* On the top card ``t`` one may play ``t`` or ``t + 1``. Playing ``t`` leaves every card
  of my hand reachable; playing ``t + 1`` strands my other copies of ``t`` until the
  discard pile wraps round through the llama.

Every agent reads the observation through :class:`llama_env.observation.ObsView`, in
natural units (card counts, points), and only the fields its decision needs.

Each also decides for many observations at once (``act_batch``, read through
:class:`~llama_env.observation.BatchView`): the same rules written as array operations
over the rows, making on every row the decision ``act`` makes on it (the float
arithmetic in the same order, so even the ties break alike; ``tests/agents`` holds them
equal on thousands of observations from real games at 2 to 6 players). None of them
draws a random number.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np

from agents.base import BaseAgent, check_batch, check_observation, legal_actions, mask_list, number
from llama_env.agent import register
from llama_env.engine import CARD_POINTS, COPIES_PER_VALUE, NUM_CARD_VALUES, Action
from llama_env.observation import MAX_OTHERS, BatchView, ObsView

__all__ = [
    "GreedyAgent",
    "CautiousAgent",
    "HeuristicAgent",
    "HEURISTIC_DEFAULTS",
    "PerturbedHeuristic",
    "perturbed_params",
    "MAX_SPREAD",
    "MAX_SIZE",
]

_DRAW = int(Action.DRAW)
_QUIT = int(Action.QUIT)
_NV = NUM_CARD_VALUES  # 7 card codes, 1..6 and 7 = llama
_CODES = range(1, _NV + 1)
_PLAYS = range(_DRAW)
_PTS_BY_VALUE = np.array(CARD_POINTS[1:], dtype=np.int64)  # rule 9 by value index 0..6 (code - 1)
_VALUE_CODES = np.arange(1, _NV + 1)
_NONE = np.iinfo(np.int64).max  # the minimum over no seat: larger than any count or score
_OTHER_SEATS = np.arange(MAX_OTHERS)


def _batch_inputs(observations: np.ndarray, action_masks: np.ndarray) -> tuple[BatchView, np.ndarray, np.ndarray]:
    """The checked arguments of an ``act_batch``: the observations' view, the legal
    actions ``(B, 9)`` bool and the legal plays ``(B, 7)``."""
    obs, legal = check_batch(observations, action_masks)
    return BatchView(obs), legal, legal[:, :_DRAW]


def _first_best(score: np.ndarray, plays: np.ndarray) -> np.ndarray:
    """Per row, the first legal play of the highest score: what the scalar loops over
    the plays in ascending order keep with their strict ``>``."""
    return np.argmax(np.where(plays, score, -np.inf), axis=1)


def _best_points_plays(plays: np.ndarray, hand: np.ndarray) -> np.ndarray:
    """:func:`_best_points_play` for every row (``hand`` by value index)."""
    return _first_best(np.where(hand == 1, _PTS_BY_VALUE, 0), plays)


def _draw_else_quit(legal: np.ndarray) -> np.ndarray:
    """Draw where drawing is legal, else quit."""
    return np.where(legal[:, _DRAW], _DRAW, _QUIT)


def _best_points_play(plays: list[int], hand: list[int]) -> int:
    """Among legal play actions, the one whose card lowers the penalty most (a last copy
    of the highest value); ties go to the same-value play (the lower action, except on a
    llama where that is the llama)."""
    best, best_gain = plays[0], -1
    for a in plays:
        card = a + 1
        gain = CARD_POINTS[card] if hand[card] == 1 else 0
        if gain > best_gain:
            best, best_gain = a, gain
    return best


@register("greedy", group="baseline")
class GreedyAgent(BaseAgent):
    """Plays whenever it can, else draws; quits only when it must.

    Style: the optimist who always chases going out. Among two playable cards it plays
    the one that lowers its penalty most (``prefer="points"``) or always the same value
    as the top card, which keeps the rest of the hand reachable (``prefer="same"``).
    """

    name = "greedy"
    batch_from = 8
    """Decisions from which a driver asks ``act_batch``
    (:func:`llama_env.agent.batch_from`): its array code costs about 50 us a call, its act
    5-10 us a row."""

    def __init__(self, seed: int | None = None, prefer: str = "points") -> None:
        super().__init__(seed)
        if prefer not in ("points", "same"):
            raise ValueError(f"GreedyAgent prefer must be 'points' or 'same', got {prefer!r}")
        self.prefer = prefer

    def act(self, observation: np.ndarray, action_mask: np.ndarray) -> int:
        """A play where one is legal (as ``prefer`` says), else a draw, else quitting."""
        legal = legal_actions(action_mask)
        o = ObsView(observation)  # checks the shape
        plays = [a for a in legal if a < _DRAW]
        if plays:
            if self.prefer == "same" or len(plays) == 1:
                return _same_first(plays, o.top_card)
            return _best_points_play(plays, o.hand_counts())
        return _DRAW if _DRAW in legal else _QUIT

    def act_batch(self, observations: np.ndarray, action_masks: np.ndarray) -> np.ndarray:
        """``act`` for every row: ``(B,)`` int64."""
        v, legal, plays = _batch_inputs(observations, action_masks)
        if self.prefer == "same":
            same = v.top_card - 1  # the play of the top card's value, when it is legal
            play = np.where(plays[np.arange(len(plays)), same], same, np.argmax(plays, axis=1))
        else:  # the best points; a lone play is its own best
            play = _best_points_plays(plays, v.hand)
        return np.where(plays.any(axis=1), play, _draw_else_quit(legal)).astype(np.int64)

    def __repr__(self) -> str:
        return f"GreedyAgent(prefer={self.prefer!r})"


def _same_first(plays: list[int], top: int) -> int:
    """The play of the top card's own value (``top``, a card code) when legal, else the other one."""
    if len(plays) == 1:
        return plays[0]
    return top - 1 if (top - 1) in plays else plays[0]


@register("cautious", group="baseline")
class CautiousAgent(BaseAgent):
    """Quits as soon as its hand penalty is at most ``threshold``, else plays or draws.

    Otherwise it plays (the card that lowers the penalty most) or draws, and quits when
    it can do neither.

    Style: the banker who takes a small certain loss rather than risk a bigger one --
    even when it could still play. ``threshold=0`` never quits early (like greedy).
    """

    name = "cautious"
    batch_from = 8
    """Decisions from which a driver asks ``act_batch``
    (:func:`llama_env.agent.batch_from`): its array code costs about 50 us a call, its act
    5-10 us a row."""

    def __init__(self, seed: int | None = None, threshold: int = 6) -> None:
        super().__init__(seed)
        self.threshold = int(number("CautiousAgent", "threshold", threshold, integer=True, minimum=0))

    def act(self, observation: np.ndarray, action_mask: np.ndarray) -> int:
        """Quitting where the hand's penalty is at most ``threshold``, else the play that
        lowers it most, else a draw, else quitting."""
        legal = legal_actions(action_mask)
        o = ObsView(observation)  # checks the shape
        if o.hand_penalty <= self.threshold and _QUIT in legal:
            return _QUIT
        plays = [a for a in legal if a < _DRAW]
        if plays:
            return _best_points_play(plays, o.hand_counts())
        return _DRAW if _DRAW in legal else _QUIT

    def act_batch(self, observations: np.ndarray, action_masks: np.ndarray) -> np.ndarray:
        """``act`` for every row: ``(B,)`` int64."""
        v, legal, plays = _batch_inputs(observations, action_masks)
        move = np.where(plays.any(axis=1), _best_points_plays(plays, v.hand), _draw_else_quit(legal))
        early = (v.hand_penalty <= self.threshold) & legal[:, _QUIT]
        return np.where(early, _QUIT, move).astype(np.int64)

    def __repr__(self) -> str:
        return f"CautiousAgent(threshold={self.threshold})"


HEURISTIC_DEFAULTS: dict[str, float] = {
    "quit_base": 1.0,
    "quit_per_draw_cost": 1.0,
    "quit_danger": 4.0,
    "danger_hand": 1,
    "quit_marker": 8.0,
    "quit_per_card": 1.0,
    "quit_per_pile": 0.0,
    "quit_playable": 0.0,
    "quit_per_quitter": 0.0,
    "lead_margin": 10.0,
    "strand_cost": 16.0,
    "urgency_points": 1.0,
    "chain_bonus": 0.0,
}
"""The tuned parameters of :class:`HeuristicAgent`, as ``llama-rl tune-heuristic``
(:mod:`train.fit.heuristic`) prints them; the research log has the evidence
(``docs/research/2026-12-05-agents-measurement-details.md``)."""


@register("heuristic", group="baseline")
class HeuristicAgent(BaseAgent):
    """The strongest rule-based baseline: card counting, danger reading, tuned thresholds.

    When a card is playable it plays (a play never raises the penalty). It chooses
    between the top card's value ``t`` and ``t + 1`` by scoring each play::

        score = urgency * urgency_points * (points saved if it is my last copy)
                - strand_cost * (copies of t left behind when playing t + 1)
                + chain_bonus * (cards I could play after it, in a row, from my hand)

    where ``urgency`` is 1, or 2 when an opponent still in the round holds at most
    ``danger_hand`` cards (the round may end any moment, so lowering the penalty now
    matters more than keeping the hand connected). Tuned, ``strand_cost`` outweighs the
    rest: it plays the top card's own value whenever it can, then moves on.

    When nothing is playable it draws or quits. It quits when its penalty is at most::

        quit_base
        + quit_per_draw_cost * E[points a draw adds]        (card counting)
        + quit_danger        if an opponent in the round holds <= danger_hand cards
        - quit_marker        if my score >= 10 (going out then returns a 10 marker)
        + quit_per_card * (my hand size - 1)
        + quit_per_pile * (draw pile size / 10)
        - quit_playable * 10 * P(a draw is playable on the current top)
        + quit_per_quitter * (opponents who have quit this round)

    and also whenever quitting leaves my score at least ``lead_margin`` points below
    every opponent's (protecting a lead; a large margin turns this off).

    The expected cost of a draw counts the unseen cards: for each value I do not hold,
    ``unseen = 8 - mine - discarded`` copies are in the draw pile or other hands, and
    drawing one adds its points. A draw that cannot be made (empty pile or everyone else
    out) leaves only quitting.
    """

    name = "heuristic"
    batch_from = 32
    """Decisions from which a driver asks ``act_batch``
    (:func:`llama_env.agent.batch_from`): its array code costs about 250 us a call however
    few the rows, its act 20 us a row."""

    def __init__(
        self,
        seed: int | None = None,
        quit_base: float = HEURISTIC_DEFAULTS["quit_base"],
        quit_per_draw_cost: float = HEURISTIC_DEFAULTS["quit_per_draw_cost"],
        quit_danger: float = HEURISTIC_DEFAULTS["quit_danger"],
        danger_hand: int = int(HEURISTIC_DEFAULTS["danger_hand"]),
        quit_marker: float = HEURISTIC_DEFAULTS["quit_marker"],
        quit_per_card: float = HEURISTIC_DEFAULTS["quit_per_card"],
        quit_per_pile: float = HEURISTIC_DEFAULTS["quit_per_pile"],
        quit_playable: float = HEURISTIC_DEFAULTS["quit_playable"],
        quit_per_quitter: float = HEURISTIC_DEFAULTS["quit_per_quitter"],
        lead_margin: float = HEURISTIC_DEFAULTS["lead_margin"],
        strand_cost: float = HEURISTIC_DEFAULTS["strand_cost"],
        urgency_points: float = HEURISTIC_DEFAULTS["urgency_points"],
        chain_bonus: float = HEURISTIC_DEFAULTS["chain_bonus"],
    ) -> None:
        super().__init__(seed)
        h = "HeuristicAgent"
        self.quit_base = number(h, "quit_base", quit_base)
        self.quit_per_draw_cost = number(h, "quit_per_draw_cost", quit_per_draw_cost)
        self.quit_danger = number(h, "quit_danger", quit_danger)
        self.danger_hand = int(number(h, "danger_hand", danger_hand, integer=True, minimum=0))
        self.quit_marker = number(h, "quit_marker", quit_marker)
        self.quit_per_card = number(h, "quit_per_card", quit_per_card)
        self.quit_per_pile = number(h, "quit_per_pile", quit_per_pile)
        self.quit_playable = number(h, "quit_playable", quit_playable)
        self.quit_per_quitter = number(h, "quit_per_quitter", quit_per_quitter)
        self.lead_margin = number(h, "lead_margin", lead_margin)
        self.strand_cost = number(h, "strand_cost", strand_cost)
        self.urgency_points = number(h, "urgency_points", urgency_points)
        self.chain_bonus = number(h, "chain_bonus", chain_bonus)

    def params(self) -> dict[str, float]:
        """The agent's parameters by name."""
        return {k: getattr(self, k) for k in HEURISTIC_DEFAULTS}

    def act(self, observation: np.ndarray, action_mask: np.ndarray) -> int:
        """The best-scoring play where one is legal, else a draw or quitting by the quit
        rule the class describes."""
        check_observation(observation)
        m = mask_list(action_mask)
        plays = [a for a in _PLAYS if m[a]]
        if len(plays) == 1:
            return plays[0]  # the only play: always at least as good as drawing or quitting
        if not plays and not m[_DRAW]:
            if not m[_QUIT]:
                raise ValueError("the action mask has no legal action")
            return _QUIT
        o = ObsView(observation)
        hand = o.hand_counts()
        danger = self._danger(o)
        if plays:
            return self._choose_play(plays, hand, o.top_card, danger)
        return _QUIT if self._should_quit(o, hand, danger) else _DRAW

    def _danger(self, o: ObsView) -> bool:
        """Whether an opponent still in the round holds at most ``danger_hand`` cards."""
        fewest = o.min_opp_hand_in_round
        return fewest is not None and fewest <= self.danger_hand

    def _choose_play(self, plays: list[int], hand: list[int], top: int, danger: bool) -> int:
        urgency = 2.0 if danger else 1.0
        best, best_score = plays[0], -math.inf
        for a in plays:
            card = a + 1
            saved = CARD_POINTS[card] if hand[card] == 1 else 0
            score = urgency * self.urgency_points * saved
            if card != top:
                score -= self.strand_cost * hand[top]
            if self.chain_bonus:
                score += self.chain_bonus * _run_after(hand, card)
            if score > best_score:
                best, best_score = a, score
        return best

    def _should_quit(self, o: ObsView, hand: list[int], danger: bool) -> bool:
        penalty = o.hand_penalty
        disc = o.discard_counts()
        top = o.top_card
        nxt = top % _NV + 1
        total = 0
        cost = 0.0
        playable = 0
        for c in _CODES:
            unseen = COPIES_PER_VALUE - hand[c] - disc[c]
            total += unseen
            if not hand[c]:
                cost += unseen * CARD_POINTS[c]
            if c in (top, nxt):
                playable += unseen
        if total:
            cost /= total
            p_play = playable / total
        else:
            p_play = 0.0
        threshold = self.quit_base + self.quit_per_draw_cost * cost - self.quit_playable * 10.0 * p_play
        if danger:
            threshold += self.quit_danger
        my_score = o.my_score
        if my_score >= 10:
            threshold -= self.quit_marker
        threshold += self.quit_per_card * (o.hand_size - 1)
        if self.quit_per_pile:
            threshold += self.quit_per_pile * o.draw_pile / 10.0
        if self.quit_per_quitter:
            threshold += self.quit_per_quitter * o.opp_in_round.count(False)
        if my_score + penalty + self.lead_margin < min(o.opp_score) + 0.5:
            return True
        return penalty <= threshold + 1e-9

    def act_batch(self, observations: np.ndarray, action_masks: np.ndarray) -> np.ndarray:
        """``act`` for every row, ``(B,)`` int64. As ``act``, a lone play is played and a
        row that can neither play nor draw quits; for the rows with a choice to make (two
        plays, or draw or quit) both of its decisions are computed, each with the scalar
        code's operations in its order, and each row takes the one its mask calls for."""
        obs, legal = check_batch(observations, action_masks)
        plays = legal[:, :_DRAW]
        count = plays.sum(axis=1)
        out = np.where(count > 0, np.argmax(plays, axis=1), _QUIT)
        choice = np.flatnonzero((count > 1) | ((count == 0) & legal[:, _DRAW]))
        if choice.size:
            out[choice] = self._decide(BatchView(obs[choice]), legal[choice], plays[choice])
        return out.astype(np.int64)

    def _decide(self, v: BatchView, legal: np.ndarray, plays: np.ndarray) -> np.ndarray:
        """The card to play, or whether to draw or quit, for rows that have that choice."""
        rows = np.arange(len(plays))
        hand = v.hand  # (B, 7) by value index: hand[:, c - 1] is the scalar hand[c]
        top = v.top_card
        seated = (v.num_players - 1)[:, None] > _OTHER_SEATS  # the others at each row's table
        in_round = v.opp_in_round & seated
        fewest = np.where(in_round, v.opp_hand_size, _NONE).min(axis=1)
        danger = in_round.any(axis=1) & (fewest <= self.danger_hand)
        # which card: _choose_play for every legal play at once
        urgency = np.where(danger, 2.0, 1.0)
        score = (urgency * self.urgency_points)[:, None] * np.where(hand == 1, _PTS_BY_VALUE, 0)
        strand = (self.strand_cost * hand[rows, top - 1])[:, None]
        score = score - np.where(top[:, None] != _VALUE_CODES, strand, 0.0)
        if self.chain_bonus:
            score = score + self.chain_bonus * _runs_after(hand)
        play = _first_best(score, plays)
        # draw or quit: _should_quit
        penalty = v.hand_penalty
        unseen = COPIES_PER_VALUE - hand - v.discarded
        total = unseen.sum(axis=1)
        cost = np.where(hand == 0, unseen * _PTS_BY_VALUE, 0).sum(axis=1)
        playable = unseen[rows, top - 1] + unseen[rows, top % _NV]  # the top card's value and the next
        some = total != 0
        per = np.where(some, total, 1)
        cost = cost / per  # left as it is (a float) where nothing is unseen, as the scalar code
        p_play = np.where(some, playable / per, 0.0)
        threshold = self.quit_base + self.quit_per_draw_cost * cost - self.quit_playable * 10.0 * p_play
        threshold = threshold + np.where(danger, self.quit_danger, 0.0)
        my_score = v.my_score
        threshold = threshold - np.where(my_score >= 10, self.quit_marker, 0.0)
        threshold = threshold + self.quit_per_card * (v.hand_size - 1)
        if self.quit_per_pile:
            threshold = threshold + self.quit_per_pile * v.draw_pile / 10.0
        if self.quit_per_quitter:
            threshold = threshold + self.quit_per_quitter * (seated & ~v.opp_in_round).sum(axis=1)
        lowest = np.where(seated, v.opp_score, _NONE).min(axis=1)
        quit = (my_score + penalty + self.lead_margin < lowest + 0.5) | (penalty <= threshold + 1e-9)
        no_play = np.where(legal[:, _DRAW], np.where(quit, _QUIT, _DRAW), _QUIT)
        return np.where(plays.any(axis=1), play, no_play)

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v:g}" for k, v in self.params().items())
        return f"HeuristicAgent({args})"


def _run_after(hand: list[int], card: int) -> int:
    """Cards I could play in a row after playing one ``card`` (no one else moving): the
    rest of its copies, then every copy of each following value while I hold it."""
    run = hand[card] - 1
    c = card % _NV + 1
    seen = 1
    while hand[c] and seen < _NV:
        run += hand[c]
        c = c % _NV + 1
        seen += 1
    return run


def _runs_after(hand: np.ndarray) -> np.ndarray:
    """:func:`_run_after` of every card for every row, ``(B, 7)`` by value index (``hand``
    by value index too): the rest of its copies, then the following values while held."""
    run = hand - 1
    going = np.ones(hand.shape, dtype=bool)
    for k in range(1, _NV):  # the value k after each card (column j holds hand[j + k])
        after = np.roll(hand, -k, axis=1)
        going &= after != 0
        run = run + np.where(going, after, 0)
    return run


def perturbed_params(rng: np.random.Generator, spread: float = 1.0) -> dict[str, Any]:
    """Parameters of a :class:`HeuristicAgent` drawn around :data:`HEURISTIC_DEFAULTS`:
    thresholds shifted, weights scaled, the danger hand size moved by one; ``spread``
    scales every change (0 gives the defaults)."""
    d = HEURISTIC_DEFAULTS
    z = lambda: float(rng.normal()) * spread  # noqa: E731
    return {
        "quit_base": d["quit_base"] + 2.0 * z(),
        "quit_per_draw_cost": d["quit_per_draw_cost"] * math.exp(0.3 * z()),
        "quit_danger": d["quit_danger"] + 2.0 * z(),
        "danger_hand": int(min(max(d["danger_hand"] + round(0.7 * z()), 0), 3)),
        "quit_marker": d["quit_marker"] + 3.0 * z(),
        "quit_per_card": d["quit_per_card"] + 0.5 * z(),
        "quit_per_pile": 0.5 * z(),
        "quit_playable": abs(0.5 * z()),
        "quit_per_quitter": z(),
        "lead_margin": d["lead_margin"] + 5.0 * z(),
        "strand_cost": d["strand_cost"] * math.exp(0.8 * z()),
        "urgency_points": d["urgency_points"] * math.exp(0.3 * z()),
        "chain_bonus": abs(2.0 * z()),
    }


MAX_SPREAD = 100.0
"""The widest ``spread`` a population takes: its weights are scaled by ``exp`` of the draws,
which beyond this can overflow (at 10 its members already stray by tens of points)."""
MAX_SIZE = 10_000
"""The most heuristics a population builds at once."""


@register("perturbed", group="baseline")
class PerturbedHeuristic(BaseAgent):
    """The heuristic with perturbed parameters, a different player each game: a population.

    ``size`` heuristics are drawn at construction (:func:`perturbed_params`, seeded by
    ``seed``; ``spread`` scales how far they stray from the tuned defaults). Each game
    (``reset``) seats one of them, drawn with the game's seed; trainers that share one
    object across games seat a member per game (``population = True`` and ``members``,
    :func:`llama_env.agent.seat_member`). Two populations with different seeds hold
    different players: train against one, evaluate against another.
    """

    name = "perturbed"
    population = True
    """A population (:func:`llama_env.agent.population_members`): a driver that plays
    many games seats one of ``members`` per game in its place."""
    batch_from = 32
    """Decisions from which a driver asks ``act_batch``
    (:func:`llama_env.agent.batch_from`): as its members, heuristics."""
    request_limits: ClassVar[dict[str, tuple[float, float]]] = {"size": (1, 256), "spread": (0.0, 10.0)}
    """What a web page may ask for (:func:`llama_env.agent.request_limits`): ``size``
    heuristics are built at once."""

    def __init__(self, seed: int | None = None, spread: float = 1.0, size: int = 32) -> None:
        super().__init__(seed)
        self.spread = number("PerturbedHeuristic", "spread", spread, minimum=0, maximum=MAX_SPREAD)
        self.size = int(number("PerturbedHeuristic", "size", size, integer=True, minimum=1, maximum=MAX_SIZE))
        draw = np.random.default_rng([0 if seed is None else seed + 1, 20261130])
        self.members: list[HeuristicAgent] = [
            HeuristicAgent(**perturbed_params(draw, self.spread)) for _ in range(self.size)
        ]
        self.current = self.members[0]

    def reset(self, seed: int | None = None) -> None:
        """Start of a game: seats one of ``members``, drawn with the game's seed."""
        super().reset(seed)
        self.current = self.members[int(self.rng.integers(len(self.members)))]

    def act(self, observation: np.ndarray, action_mask: np.ndarray) -> int:
        """The move of the member seated for this game (:meth:`reset` draws it)."""
        return self.current.act(observation, action_mask)

    def act_batch(self, observations: np.ndarray, action_masks: np.ndarray) -> np.ndarray:
        """The seated member's ``act_batch``: every row is this game's player. (A driver
        that plays many games seats a member per game, :func:`llama_env.agent.seat_member`.)"""
        return self.current.act_batch(observations, action_masks)

    def __repr__(self) -> str:
        return f"PerturbedHeuristic(seed={self.seed}, spread={self.spread:g}, size={self.size})"
