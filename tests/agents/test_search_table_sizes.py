"""What the search agent plays where it does not search, at each table size, and the
table sizes it says it was made for."""

from __future__ import annotations

import agents
from agents.heuristic import HeuristicAgent
from agents.search import SearchAgent
from llama_env.engine import LlamaGame
from llama_env.table import Table


class _Recorder:
    def __init__(self, agent) -> None:
        self.agent, self.moves = agent, []
        self.obs_version = agent.obs_version

    def act(self, observation, mask):
        move = self.agent.act(observation, mask)
        self.moves.append(move)
        return move


def _moves(agent, players: int, games: int, **rules) -> list[int]:
    """The moves of ``agent`` at seat 0 against ``heuristic``."""
    recorder = _Recorder(agent)
    for g in range(games):
        Table(LlamaGame(players, rng=200 + g, **rules), [recorder] + [HeuristicAgent()] * (players - 1)).play()
    return recorder.moves


def test_at_6_players_it_plays_ppo_v3s_specialist_where_it_does_not_search():
    """docs/agents.md said it played exactly as ppo wherever it did not search; at 6 players
    its specialist is ppo_v3's (the one its networks were fitted on), not ppo's."""
    never = SearchAgent(below=0.0)
    assert _moves(never, 6, 2) == _moves(agents.make("ppo_v3"), 6, 2) != _moves(agents.make("ppo"), 6, 2)
    other_rules = SearchAgent(below=1.0)
    assert _moves(other_rules, 6, 1, end_score=20) == _moves(agents.make("ppo_v3"), 6, 1, end_score=20)
    assert other_rules.searched == never.searched == 0
