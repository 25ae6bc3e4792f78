"""Game records: the state a game started from and every move, enough to replay it
exactly (the snapshot holds the generator's state, so every later deal is the same).

Written by the web app (``llama-rl serve``) and by ``llama-rl eval/tournament --record
DIR``; replayed by the web app. A record is JSON::

    {"format": "llama-rl-game", "version": 1, "names": [...], "agents": [...],
     "start": <LlamaGame.to_dict()>, "moves": [[seat, action], ...], "context": {...}}

``context`` (optional) says where the game came from; readers of version 1 without it
ignore it.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any

from llama_env._atomic import atomic_write_text
from llama_env.engine import LlamaGame, brief

__all__ = ["GameRecording", "RECORD_FORMAT", "RECORD_VERSION"]

RECORD_FORMAT = "llama-rl-game"
"""The ``"format"`` of a game record's JSON, so that a file of another kind is refused by name."""
RECORD_VERSION = 1
"""The ``"version"`` of the records this code writes and reads; another is refused."""


@dataclass
class GameRecording:
    """A game as a record: the state it started from (with the generator's state, so
    every later deal replays exactly) and every move."""

    names: list[str]
    agents: list[str]
    start: dict[str, Any]
    moves: list[tuple[int, int]] = field(default_factory=list)
    """(seat, action) in order."""
    context: dict[str, Any] = field(default_factory=dict)
    """Where the game came from, for people and tools (JSON data; empty: left out). An
    evaluation writes ``llama_rl_version``, ``seed``, ``game`` (its index) and ``seats``
    (the position in the evaluation's agent list of the agent at each seat): with the
    same agents and seed, ``game`` is that evaluation's game ``game``. Replaying ignores it."""

    def to_json(self) -> dict[str, Any]:
        """The record as the JSON object that :meth:`save` writes and :meth:`from_json`
        reads back (``format`` and ``version`` first; ``context`` only where there is one)."""
        data = {
            "format": RECORD_FORMAT,
            "version": RECORD_VERSION,
            "names": list(self.names),
            "agents": list(self.agents),
            "start": self.start,
            "moves": [list(m) for m in self.moves],
        }
        if self.context:
            data["context"] = dict(self.context)
        return data

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the record as JSON to ``path``, whole or not at all (a run stopped while
        it writes leaves no cut-off file)."""
        atomic_write_text(path, json.dumps(self.to_json()))

    @classmethod
    def from_json(cls, data: Any) -> GameRecording:
        """A record read back; a ``ValueError`` names what is wrong with it."""
        if not isinstance(data, dict) or data.get("format") != RECORD_FORMAT:
            raise ValueError(f'not a game record: expected an object with "format": "{RECORD_FORMAT}"')
        version = data.get("version")
        if type(version) is not int or version != RECORD_VERSION:  # not true or 1.0, which equal 1
            raise ValueError(f"game record version {brief(version)} is not supported (this is {RECORD_VERSION})")
        start = data.get("start")
        if not isinstance(start, dict):
            raise ValueError("game record 'start' must be a game snapshot (an object)")
        if start.get("rng_state") is None:  # the later rounds would be dealt anew each replay
            raise ValueError(
                "game record 'start' has no rng_state: a record keeps the generator's state, so that "
                "replaying it deals every later round as it was dealt"
            )
        game = LlamaGame.from_dict(start)  # refuses an impossible start with the reason
        n = game.num_players
        names, agents, moves = data.get("names"), data.get("agents"), data.get("moves")
        if not isinstance(names, list) or not isinstance(agents, list):
            raise ValueError(f"game record 'names' and 'agents' must list {n} strings")
        for key, value in (("names", names), ("agents", agents)):
            if len(value) != n or not all(isinstance(x, str) for x in value):
                raise ValueError(f"game record '{key}' must list {n} strings")
        if not isinstance(moves, list) or not all(
            isinstance(m, list) and len(m) == 2 and all(type(x) is int for x in m) for m in moves
        ):
            raise ValueError("game record 'moves' must be a list of [seat, action] pairs of integers")
        context = data.get("context", {})
        if not isinstance(context, dict):
            raise ValueError(f"game record 'context' must be an object, got {brief(context)}")
        return cls(list(names), list(agents), start, [(m[0], m[1]) for m in moves], dict(context))

    def replay(self) -> LlamaGame:
        """The game at its end, every recorded move applied (a ``ValueError`` names a
        move the rules refuse or a seat that was not to act)."""
        import copy

        game = LlamaGame.from_dict(copy.deepcopy(self.start))
        for k, (seat, action) in enumerate(self.moves):
            if game.game_over:
                raise ValueError(f"move {k}: the game is already over, and the record goes on")
            if seat != game.current_player:
                raise ValueError(f"move {k}: seat {seat} moves when seat {game.current_player} is to act")
            try:
                game.step(action)
            except ValueError as exc:  # an illegal action: say which move of the record it is
                raise ValueError(f"move {k}: {exc}") from None
        return game
