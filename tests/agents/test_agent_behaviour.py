"""Agents: never a masked action, seeded = reproducible, the registry's errors, and the
heuristic's decisions in scripted states.

States come from real games (random play on the engine, 2..6 players) so they include
the awkward corners: empty draw pile, a player left alone, llama on top, huge hands.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest
from conftest import make_game

import agents
from agents.heuristic import HEURISTIC_DEFAULTS, HeuristicAgent
from llama_env.engine import Action, LlamaGame
from llama_env.observation import ObsView, decode, encode, view

BUILTIN = ["random", "greedy", "cautious", "heuristic", "perturbed"]
VARIANTS = [
    ("greedy", {"prefer": "same"}),
    ("cautious", {"threshold": 0}),
    ("cautious", {"threshold": 12}),
    (
        "heuristic",
        {"lead_margin": 3.0, "quit_per_quitter": 1.0, "danger_hand": 2, "quit_per_pile": -0.5, "chain_bonus": 2.0},
    ),
    ("heuristic", {"quit_base": 40.0}),
    ("heuristic", {"quit_base": -40.0, "strand_cost": 0.0, "urgency_points": 3.0}),
]


def _mask(game: LlamaGame) -> np.ndarray:
    m = np.zeros(9, dtype=np.int8)
    m[game.legal_actions()] = 1
    return m


def _states(num_games: int = 40, seed: int = 0) -> list[tuple[np.ndarray, np.ndarray]]:
    """(observation, mask) pairs of the player to act, from random games of every size."""
    rng = np.random.default_rng(seed)
    out = []
    for g in range(num_games):
        n = 2 + g % 5
        game = LlamaGame(n, end_score=int(rng.choice([15, 40])), rng=int(rng.integers(1 << 30)))
        while not game.game_over:
            out.append((encode(game, game.current_player), _mask(game)))
            legal = game.legal_actions()
            # lean towards draws so hands grow and piles empty
            w = np.array([3.0 if a == Action.DRAW else (0.3 if a == Action.QUIT else 1.0) for a in legal])
            game.step(legal[int(rng.choice(len(legal), p=w / w.sum()))])
    return out


@functools.cache
def _cached_states() -> list[tuple[np.ndarray, np.ndarray]]:
    """The states, made when a test first asks: a broken engine then fails the tests that
    read them, not the module's collection."""
    return _states()


@pytest.mark.parametrize("name", BUILTIN)
def test_builtin_agents_never_choose_a_masked_action(name):
    states = _cached_states()
    agent = agents.make(name, seed=1)
    for obs, mask in states:
        a = agent.act(obs, mask)
        assert isinstance(a, int)
        assert mask[a] == 1, (name, decode(obs), mask, a)


@pytest.mark.parametrize(("name", "params"), VARIANTS)
def test_parameter_variants_never_choose_a_masked_action(name, params):
    states = _cached_states()
    agent = agents.make(name, seed=2, **params)
    for obs, mask in states[::3]:
        assert mask[agent.act(obs, mask)] == 1


@pytest.mark.parametrize("name", ["greedy", "cautious", "heuristic"])
def test_rule_agents_accept_list_masks_and_refuse_an_empty_mask(name):
    states = _cached_states()
    agent = agents.make(name)
    obs, mask = states[5]
    assert mask[agent.act(obs, mask.tolist())] == 1
    with pytest.raises(ValueError, match="no legal action"):
        agent.act(obs, np.zeros(9, dtype=np.int8))


def test_obs_view_agrees_with_the_scaled_fields():
    """ObsView (what every agent reads) against an independent read of the raw fields."""
    states = _cached_states()
    for obs, _ in states[::7]:
        o, raw = ObsView(obs), view(obs)
        n = o.num_players
        assert n == 1 + int(raw["opp_present"].sum())
        assert list(o.hand) == [round(x * 8) for x in raw["hand"]]
        assert [o.count(c) for c in range(1, 8)] == list(o.hand)
        assert [o.discarded_count(c) for c in range(1, 8)] == list(o.discarded)
        assert list(o.discarded) == [round(x * 8) for x in raw["discarded"]]
        assert o.top_card == int(np.argmax(raw["top_card"])) + 1
        assert o.hand_size == round(raw["hand_size"][0] * 10) == sum(o.hand)
        assert o.hand_penalty == round(raw["hand_penalty"][0] * 31)
        assert o.end_score == round(raw["end_score"][0] * 100)
        assert o.my_score == round(raw["my_score"][0] * o.end_score)
        assert list(o.opp_score) == [round(x * o.end_score) for x in raw["opp_score"][: n - 1]]
        assert list(o.opp_hand_size) == [round(x * 10) for x in raw["opp_hand_size"][: n - 1]]
        assert list(o.opp_in_round) == [x > 0.5 for x in raw["opp_in_round"][: n - 1]]
        in_round = [k for k, i in zip(o.opp_hand_size, o.opp_in_round, strict=True) if i]
        assert o.min_opp_hand_in_round == (min(in_round) if in_round else None)
        assert o.can_draw == (raw["can_draw"][0] > 0.5)
        assert o.draw_pile == round(raw["draw_pile"][0] * 56)


def test_obs_view_refuses_a_wrong_shape():
    states = _cached_states()
    obs, _ = states[0]
    for bad in (obs[:-1], np.concatenate([obs, obs]), obs.reshape(4, 13)):
        with pytest.raises(ValueError, match="flat vector of 52"):
            ObsView(bad)


@pytest.mark.parametrize("name", BUILTIN)
def test_seeded_agents_reproduce(name):
    states = _cached_states()

    def run(seed):
        agent = agents.make(name, seed=seed)
        return [agent.act(obs, mask) for obs, mask in states[:400]]

    first = run(3)
    assert run(3) == first
    agent = agents.make(name, seed=99)
    agent.reset(3)
    assert [agent.act(obs, mask) for obs, mask in states[:400]] == first


def test_registry_lists_the_heuristics():
    assert set(BUILTIN) <= set(agents.names())
    described = agents.describe()
    assert all(described[n] for n in BUILTIN)


def test_unknown_agent_name_lists_the_known_ones():
    with pytest.raises(ValueError, match="unknown agent 'nope'") as err:
        agents.make("nope")
    for n in BUILTIN:
        assert n in str(err.value)


def test_unknown_parameter_lists_the_parameters():
    with pytest.raises(ValueError, match="no parameter 'bogus'") as err:
        agents.make("heuristic", bogus=1)
    for p in HEURISTIC_DEFAULTS:
        assert p in str(err.value)
    with pytest.raises(ValueError, match="threshold"):
        agents.make("cautious", thresold=3)


def test_bad_parameter_values_are_refused():
    with pytest.raises(ValueError, match="threshold"):
        agents.make("cautious", threshold=-1)
    with pytest.raises(ValueError, match="prefer"):
        agents.make("greedy", prefer="best")


def test_heuristic_defaults_are_its_constructor_defaults():
    assert HeuristicAgent().params() == {
        k: float(v) if k != "danger_hand" else int(v) for k, v in HEURISTIC_DEFAULTS.items()
    }
    assert "HeuristicAgent(" in repr(HeuristicAgent())


# --------------------------------------------------------------------------- scripted states


def _act(agent, **state):
    game = make_game(**state)
    return agent.act(encode(game, game.current_player), _mask(game))


def test_heuristic_plays_rather_than_quits_or_draws():
    h = HeuristicAgent()
    # top 3, I hold a 4: the only play
    assert _act(h, hands=[[4, 6], [1, 1], [2, 2]], top=3) == Action.PLAY_4
    # even with an opponent about to go out, a play never costs more than quitting
    assert _act(h, hands=[[4, 6], [1], [2, 2]], top=3) == Action.PLAY_4


def test_heuristic_keeps_the_hand_connected_when_nothing_is_at_stake():
    h = HeuristicAgent()
    # top 3; 3,3,4 in hand: playing the 3 keeps the 4 playable, playing the 4 strands a 3
    assert _act(h, hands=[[3, 3, 4, 4], [1, 1, 1], [2, 2, 2]], top=3) == Action.PLAY_3


def test_heuristic_plays_the_top_value_before_moving_on():
    h = HeuristicAgent()
    # top llama: my only llama (its value, and 10 points off) or a 1
    assert _act(h, hands=[[1, 1, 7], [5, 5], [2, 2, 2]], top=7) == Action.PLAY_LLAMA
    # tuned: the top's own value first even when the next one would save more points
    assert _act(h, hands=[[5, 5, 6], [1], [2, 2, 2]], top=5) == Action.PLAY_5
    # with a small strand cost, danger makes it dump the points instead
    assert _act(HeuristicAgent(strand_cost=1.0), hands=[[5, 5, 6], [1], [2, 2, 2]], top=5) == Action.PLAY_6


def test_heuristic_quits_a_cheap_hand_when_an_opponent_holds_one_card():
    h = HeuristicAgent()
    # top 5, I hold 1,1 (penalty 1) and cannot play; the next player holds one card
    assert _act(h, hands=[[1, 1], [3], [2, 2, 2]], top=5) == Action.QUIT


def test_an_opponent_with_one_card_left_makes_the_heuristic_quit_dearer_hands():
    """Danger (an opponent in the round holds at most ``danger_hand`` cards) raises the
    penalty it quits at by ``quit_danger``. The test above quits a hand it would quit
    anyway, so a danger test that never fired (``<`` for ``<=``) passed every test."""
    h = HeuristicAgent()
    hands = [[3], [4], [5], [6], [3, 4], [3, 5], [4, 5], [3, 6], [4, 6], [5, 6], [3, 4, 5]]  # none fits on a 1

    def quits(hand: list[int], theirs: list[int]) -> bool:
        return _act(h, hands=[hand, theirs, [2, 2, 2, 2]], top=1) == Action.QUIT

    in_danger = [quits(hand, [2]) for hand in hands]
    safe = [quits(hand, [2, 2]) for hand in hands]
    assert all(d or not s for d, s in zip(in_danger, safe, strict=True))  # danger never makes it draw
    assert sum(in_danger) > sum(safe), (in_danger, safe)  # and some hand it draws with, it quits


def test_heuristic_draws_with_an_expensive_hand_and_no_danger():
    h = HeuristicAgent()
    # top 1; nothing playable; penalty 3+4+5+6+10 = 28; opponents hold many cards
    assert _act(h, hands=[[3, 4, 5, 6, 7], [3, 3, 3, 3, 3], [2, 2, 2, 2, 2, 4]], top=1) == Action.DRAW


def test_heuristic_quits_when_it_cannot_play_or_draw():
    h = HeuristicAgent()
    # the others have quit: a lone player may not draw
    assert _act(h, hands=[[3, 4, 5, 6, 7], [3, 3], [2, 2]], top=1, quit=[False, True, True]) == Action.QUIT


def test_greedy_draws_and_cautious_quits():
    state = {"hands": [[1, 2], [5, 5, 5], [6, 6, 6]], "top": 4}
    assert _act(agents.make("greedy"), **state) == Action.DRAW
    assert _act(agents.make("cautious", threshold=3), **state) == Action.QUIT
    # cautious quits below its threshold even when it could play
    assert _act(agents.make("cautious", threshold=3), hands=[[1, 2], [5, 5], [6, 6]], top=1) == Action.QUIT
    assert _act(agents.make("cautious", threshold=2), hands=[[1, 2], [5, 5], [6, 6]], top=1) == Action.PLAY_2


def test_greedy_prefers_lowering_its_penalty_unless_told_same():
    state = {"hands": [[3, 3, 4, 5], [1, 1], [2, 2]], "top": 3}
    assert _act(agents.make("greedy"), **state) == Action.PLAY_4
    assert _act(agents.make("greedy", prefer="same"), **state) == Action.PLAY_3


class _KeywordReset:
    """An agent with Gymnasium's ``reset(self, *, seed=None)``."""

    name = "kw"

    def __init__(self) -> None:
        self.seeds: list[int | None] = []

    def reset(self, *, seed=None):
        self.seeds.append(seed)

    def act(self, observation, action_mask):
        return int(np.flatnonzero(action_mask)[0])


def test_reset_agent_passes_the_seed_as_each_reset_takes_it():
    """A keyword-only ``seed`` got it positionally: a bare TypeError in evaluation and play."""
    from llama_env.agent import reset_agent
    from train.evaluation import evaluate

    seen: dict[str, object] = {}

    class Positional:
        def reset(self, seed):
            seen["positional"] = seed

    class OtherName:
        def reset(self, s=None):
            seen["other name"] = s

    class Kwargs:
        def reset(self, **kwargs):
            seen["kwargs"] = kwargs

    class KeywordsButNoSeed:
        def reset(self, *, options=None):
            seen["no seed"] = options

    class NoArguments:
        def reset(self):
            seen["none"] = True

    keyword = _KeywordReset()
    for agent in (Positional(), OtherName(), Kwargs(), KeywordsButNoSeed(), NoArguments(), keyword):
        reset_agent(agent, 5)
    assert seen == {"positional": 5, "other name": 5, "kwargs": {"seed": 5}, "no seed": None, "none": True}
    assert keyword.seeds == [5]
    result = evaluate([_KeywordReset(), "heuristic"], 4, seed=0, workers=1)
    assert result.num_games == 4
