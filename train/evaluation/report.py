"""The table ``llama-rl train`` prints at the end: the new agent next to the shipped one.

Each agent plays against ``players - 1`` copies of each baseline, seats rotated, through
:func:`train.evaluation.evaluate`, game by game: the same seed gives both agents the same
deals (the batched engine's deals would depend on how the agents play).
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from llama_env.agent import AgentLike, UnseenTableSize, agent_label, parse_agent_spec
from llama_env.engine import DEFAULT_RULES, MAX_PLAYERS, MIN_PLAYERS, Rules, brief, check_num_players
from train.evaluation.evaluate import evaluate, rules_text
from train.evaluation.runner import agent_list

__all__ = ["ComparisonRow", "compare_agents", "format_comparison", "has_shipped_models"]


@dataclass(frozen=True)
class ComparisonRow:
    agent: str
    players: int
    opponent: str
    win_share: float
    ci_low: float
    ci_high: float
    games: int
    rules: Rules | None = None
    """The rules the row was played by (at its table size); ``None``: the standard ones."""


def compare_agents(
    contenders: Mapping[str, AgentLike],
    *,
    opponents: str | Sequence[str] = ("random", "heuristic"),
    players: int | Sequence[int] = (2, 4),
    games: int = 1000,
    seed: int = 0,
    workers: int | None = None,
    rules: Rules | None = None,
) -> list[ComparisonRow]:
    """Win share (95% CI) of each contender against ``n - 1`` copies of each opponent at
    each table size ``n``, on ``rules`` (the standard rules by default; the table size is
    each row's). ``opponents`` may be one string of comma-separated names and specs, read
    as :func:`train.evaluation.evaluate` reads its agents (``"random"``,
    ``"random,cautious:threshold=4"``), and one table size may stand alone
    (``players=4``). Empty ``contenders``, ``opponents`` or ``players`` are a
    ``ValueError``: there would be nothing to compare. So, before any game is played, are
    ``contenders`` that are no mapping of label to agent, an unknown agent name or spec
    and a table size that is not 2..6."""
    if not isinstance(contenders, Mapping):  # a list failed at .items(), after nothing was checked
        raise ValueError(
            f"compare_agents needs contenders as a mapping of label to agent ({{'new': 'heuristic'}}), "
            f"got a {type(contenders).__name__}"
        )
    opps: Sequence[AgentLike] = opponents
    if isinstance(opponents, str):  # not one per letter ("unknown agent 'r'"), nor "random,greedy" as one
        opps = agent_list(opponents) if opponents.strip() else ()
    if isinstance(players, (int, np.integer)):  # len() of an int failed
        players = (int(players),)
    for what, given in (("contenders", contenders), ("opponents", opps), ("players", players)):
        if len(given) == 0:  # (not `not given`: a numpy array of table sizes has no truth value)
            raise ValueError(f"compare_agents needs at least one of {what}, got {given!r}")
    sizes = []
    for n in players:  # 1 was "evaluate needs 2..6 agents (one per seat)"
        try:
            sizes.append(check_num_players(n))  # a numpy integer as the plain int a row holds
        except ValueError:
            raise ValueError(
                f"compare_agents needs table sizes {MIN_PLAYERS}..{MAX_PLAYERS} in players, got {brief(n)}"
            ) from None
    # every name checked (and built once) now: an unknown one was found after the other rows' games
    contenders = {label: _checked(agent) for label, agent in contenders.items()}
    opps = [_checked(opp) for opp in opps]
    rows = []
    for label, agent in contenders.items():
        for n in sizes:
            for opp in opps:
                with warnings.catch_warnings():  # the sizes are this table's choice, not the user's
                    warnings.simplefilter("ignore", UnseenTableSize)
                    r = evaluate(
                        [agent] + [opp] * (n - 1),
                        games,
                        seed=seed,
                        workers=workers,
                        rules=rules.at(n) if rules else None,
                        batched=False,
                    )
                a = r.agents[0]
                name = agent_label(opp)
                rows.append(ComparisonRow(label, n, name, a.win_share, a.ci_low, a.ci_high, r.num_games, r.rules))
    return rows


def _checked(agent: AgentLike) -> AgentLike:
    """An agent given by name or spec as its checked spec (an unknown name, a bad
    parameter: a ``ValueError`` naming it); any other agent as it is."""
    return parse_agent_spec(agent) if isinstance(agent, str) else agent


def format_comparison(rows: Sequence[ComparisonRow]) -> str:
    """A plain-text table: one line per table size and opponent, one column per agent
    (rows from :func:`compare_agents`, at least one: a ``ValueError`` otherwise). Rules
    other than the standard ones are named in its first line, as an evaluation's are."""
    if not rows:
        raise ValueError("format_comparison needs at least one row, as compare_agents gives")
    labels = list(dict.fromkeys(r.agent for r in rows))
    keys = list(dict.fromkeys((r.players, r.opponent) for r in rows))
    cell = {(r.agent, r.players, r.opponent): r for r in rows}
    w = max(22, *(len(s) + 2 for s in labels))
    games = rows[0].games
    standard = DEFAULT_RULES.options()
    played = (r.rules for r in rows if r.rules is not None and r.rules.options() != standard)
    rules = "".join(f", {text}" for text in dict.fromkeys(rules_text(p) for p in played))
    lines = [
        f"win share against players - 1 copies of the opponent, {games} games each, seats rotated{rules} (95% CI)",
        f"{'players':>7}  {'opponent':<10}  {'fair':>5}" + "".join(f"  {s:>{w}}" for s in labels),
    ]
    for n, opp in keys:
        line = f"{n:>7}  {opp:<10}  {1 / n:>5.2f}"
        for s in labels:
            r = cell.get((s, n, opp))
            text = f"{r.win_share:.3f} [{r.ci_low:.3f}, {r.ci_high:.3f}]" if r else "-"
            line += f"  {text:>{w}}"
        lines.append(line)
    return "\n".join(lines)


def has_shipped_models() -> bool:
    """Whether this checkout has the models ``agents.make("ppo")`` plays."""
    from agents.ppo import DEFAULT_MODEL, SHIPPED

    return DEFAULT_MODEL.exists() and all(f.exists() for f in SHIPPED["ppo"].values())
