"""Tables for comparing agents, built from tournament records (used by the notebooks).

Everything here is derived from the :class:`train.evaluation.GameRecord` lists that a
:class:`~train.evaluation.TournamentResult` keeps (``result.records``; an evaluation
keeps none). Needs pandas (the ``notebooks`` extra).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from train.evaluation.evaluate import EvalResult
from train.evaluation.runner import GameRecord
from train.evaluation.stats import mean_ci, pandas
from train.evaluation.tournament import TournamentResult

__all__ = ["games_frame", "win_share_frame", "behaviour_frame"]


def games_frame(records: Sequence[GameRecord], names: Sequence[str]) -> Any:
    """One row per (game, seat): the agent, its final score, points per round, share of
    the win (1/k for each of k tied winners, 0 for a loss), rounds it went out, and how
    it played (plays, draws, quits, summed penalty held when quitting). ``records`` are
    game records, as a :class:`~train.evaluation.TournamentResult` keeps them
    (``result.records``), and ``names`` the agents they seat (``result.names``); no
    records give no rows, with the columns and their types."""
    return _games_frame(records, names, "games_frame")


def _games_frame(records: object, names: Sequence[str], caller: str) -> Any:
    """:func:`games_frame`, whose errors name ``caller``, the function the user called."""
    pd = pandas()

    rows = []
    for r in _game_records(records, names, caller):
        shares = r.win_shares
        for seat, i in enumerate(r.seat_agents):
            plays, draws, quits = r.actions[seat] if r.actions else (0, 0, 0)
            rows.append(
                {
                    "game": r.index,
                    "seat": seat,
                    "agent": names[i],
                    "players": len(r.seat_agents),
                    "score": r.scores[seat],
                    "rounds": r.rounds,
                    "points_per_round": r.scores[seat] / r.rounds,
                    "win_share": shares[seat],
                    "went_out": r.went_out[seat],
                    "plays": plays,
                    "draws": draws,
                    "quits": quits,
                    "quit_penalty": r.quit_penalty[seat] if r.quit_penalty else 0,
                }
            )
    if rows and rows[0].keys() != _COLUMNS.keys():  # a column left out of _COLUMNS would be dropped
        raise RuntimeError(f"games_frame's rows have the columns {list(rows[0])}, _COLUMNS declares {list(_COLUMNS)}")
    return pd.DataFrame(rows, columns=list(_COLUMNS)).astype(_COLUMNS)


_COLUMNS = {
    "game": "int64",
    "seat": "int64",
    "agent": "object",
    "players": "int64",
    "score": "int64",
    "rounds": "int64",
    "points_per_round": "float64",
    "win_share": "float64",
    "went_out": "int64",
    "plays": "int64",
    "draws": "int64",
    "quits": "int64",
    "quit_penalty": "int64",
}
"""The columns of :func:`games_frame` and their types, declared once: an empty table has
them too (no object columns, which :func:`~train.evaluation.mean_ci` could not read)."""


def _game_records(records: object, names: Sequence[str], caller: str) -> list[GameRecord]:
    """``records`` if they are game records whose agents ``names`` name, else a
    ``TypeError`` (or ``ValueError``) that says what ``caller`` needs: a result's
    attribute was read deep inside ('AgentStats' object has no attribute 'win_shares')."""
    needs = f"{caller} needs game records, a tournament's (result.records, result.names)"
    if isinstance(records, (EvalResult, TournamentResult)):
        kept = "pass its .records" if isinstance(records, TournamentResult) else "an evaluation keeps none"
        raise TypeError(f"{needs}, got the {type(records).__name__}: {kept}")
    try:
        listed = list(records)  # type: ignore[call-overload]
    except TypeError:
        raise TypeError(f"{needs}, got {type(records).__name__}") from None
    for k, r in enumerate(listed):
        if not isinstance(r, GameRecord):
            raise TypeError(f"{needs}, got {type(r).__name__} at records[{k}]")
        if max(r.seat_agents) >= len(names):
            raise ValueError(f"{needs}: records[{k}] seats agent {max(r.seat_agents)}, names has {len(names)}")
    return listed


def win_share_frame(result: TournamentResult) -> Any:
    """Per agent: mean share of the win over the games it played with a 95% interval
    (over games, as :func:`train.evaluation.mean_ci` computes it), its rating
    (:attr:`TournamentResult.ratings`) and the number of games, best rating first.
    ``result`` is a :class:`~train.evaluation.TournamentResult`: an evaluation keeps no
    game records, and has its own win shares and intervals in ``to_dataframe()``."""
    result = _tournament_result(result)
    pd = pandas()

    df = _games_frame(result.records, result.names, "win_share_frame")
    rows = []
    for i, name in enumerate(result.names):
        shares = df.loc[df.agent == name, "win_share"].to_numpy()
        mean, lo, hi = mean_ci(shares)
        rating = result.ratings[i]
        rows.append(
            {
                "agent": name,
                "win_share": mean,
                "ci_low": lo,
                "ci_high": hi,
                "fair_share": 1.0 / result.num_players,
                "mu": rating.mu,
                "sigma": rating.sigma,
                "ordinal": rating.ordinal,
                "games": len(shares),
            }
        )
    return pd.DataFrame(rows).set_index("agent").sort_values("ordinal", ascending=False)


def _tournament_result(result: object) -> TournamentResult:
    """``result`` if it is a :class:`~train.evaluation.TournamentResult`, else a
    ``TypeError`` that says so ('EvalResult' object has no attribute 'records')."""
    if isinstance(result, TournamentResult):
        return result
    hint = ": an EvalResult has its win shares in result.to_dataframe()" if isinstance(result, EvalResult) else ""
    raise TypeError(f"win_share_frame needs a TournamentResult (its game records), got {type(result).__name__}{hint}")


def behaviour_frame(records: Sequence[GameRecord], names: Sequence[str]) -> Any:
    """Per agent: the share of its decisions that play, draw and quit, the mean hand
    penalty it held when quitting, the share of rounds it went out, and its mean points
    per round. One row per agent that played, in the order of ``names``."""
    df = _games_frame(records, names, "behaviour_frame")
    g = df.groupby("agent", sort=False)
    sums = g[["plays", "draws", "quits", "quit_penalty", "went_out", "rounds", "score"]].sum()
    decisions = sums[["plays", "draws", "quits"]].sum(axis=1)
    out = sums[[]].copy()
    out["play_rate"] = sums.plays / decisions
    out["draw_rate"] = sums.draws / decisions
    out["quit_rate"] = sums.quits / decisions
    out["penalty_at_quit"] = (sums.quit_penalty / sums.quits.where(sums.quits > 0)).astype(float)
    out["go_out_rate"] = sums.went_out / sums.rounds
    out["points_per_round"] = sums.score / sums.rounds
    # grouping keeps the order the agents first sat down in; the reader asked in this one
    return out.reindex([n for n in dict.fromkeys(names) if n in out.index])
