"""Evaluation: play many games among agents on the table driver and measure them.

* :func:`evaluate`: one table, win shares with 95% intervals, scores, behaviour;
* :func:`tournament`: a pool of agents, ratings on openskill's scale and a pairwise matrix;
* :mod:`train.evaluation.ratings`: those ratings from any finished games, fitted at once
  for agents (:func:`~train.evaluation.ratings.fit_ratings`) or kept up to date game by
  game for people (:class:`~train.evaluation.ratings.Rater`);
* :mod:`train.evaluation.batched`: thousands of games at once on the batched engine, where
  both play whenever every agent can act on a batch;
* :mod:`train.evaluation.analysis`: tables for notebooks from game records;
* :mod:`train.evaluation.report`: the new-agent-vs-shipped-agent table of ``llama-rl train``;
* :class:`ChunkExecutor`: where the chunks of games are played (default
  :class:`LocalProcesses`, a process pool on this machine), for spreading them further;
* :class:`GamesInterrupted`: the ``KeyboardInterrupt`` of games stopped by Ctrl-C, which
  carries the result of the games that had finished.
"""

from train.evaluation.evaluate import EvalResult, evaluate, seatings
from train.evaluation.runner import (
    ChunkExecutor,
    GameColumns,
    GameRecord,
    GamesInterrupted,
    GameTask,
    LocalProcesses,
    agent_display_names,
    play_games,
)
from train.evaluation.stats import Z95, AgentStats, mean_ci
from train.evaluation.tournament import Rating, TournamentResult, tournament

__all__ = [
    "AgentStats",
    "ChunkExecutor",
    "EvalResult",
    "GameColumns",
    "GameRecord",
    "GamesInterrupted",
    "GameTask",
    "LocalProcesses",
    "Rating",
    "TournamentResult",
    "Z95",
    "agent_display_names",
    "evaluate",
    "mean_ci",
    "play_games",
    "seatings",
    "tournament",
]
