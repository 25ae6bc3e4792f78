"""Making the shipped artifacts that are not trained by :mod:`train.training`: the search
agent's networks, policies distilled from its search and the heuristic's tuned parameters.

* :mod:`train.fit.search_nets`: games of a PPO specialist, then the value and belief
  networks of ``agents.make("search")`` (``llama-rl fit-search``);
* :mod:`train.fit.distill`: games of the search agent, then a PPO specialist trained to
  play its searched moves (``llama-rl distill``);
* :mod:`train.fit.heuristic`: coordinate descent over ``heuristic``'s parameters by
  playing games (``llama-rl tune-heuristic``).

docs/training.md ("Reproduce every shipped agent") lists the command behind every file
of ``agents/models/`` and what it cost.
"""
