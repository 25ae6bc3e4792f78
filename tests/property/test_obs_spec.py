"""The observation specs: every version's vectors stay bit for bit what they were.

The golden hashes below were written by the encoder as it stood before the observation
versions became declarative specs (``llama_env.observation.OBS_V0`` / ``OBS_V1``); a model
trained on either version reads exactly the same vectors today. A change of layout is a
new version, never an edit of these numbers.
"""

from __future__ import annotations

import hashlib

import numpy as np

from llama_env.engine import LlamaGame
from llama_env.observation import encoder, observation_bounds

GOLDEN_STATES = 17372
GOLDEN_V0 = "4477f6d12b800094"
GOLDEN_V1 = "50c85c3246dab2fa"
GOLDEN_BOUNDS = "729c51ac9f04b0a5"


def _golden_games() -> list[tuple[LlamaGame, list[LlamaGame]]]:
    """(game, its states along one random game) for 150 seeded games at every table size
    and a mix of rule options."""
    out = []
    for n in range(2, 7):
        for k in range(30):
            g = LlamaGame(n, end_score=(40, 25, 100, 7)[k % 4], hand_size=(6, 4, 8)[k % 3], rng=1000 * n + k)
            rng = np.random.default_rng(k)
            states = [g.copy()]
            while not g.game_over:
                a = g.legal_actions()
                g.step(a[rng.integers(len(a))])
                states.append(g.copy())
            out.append((g, states))
    return out


def test_vectors_and_bounds_are_those_of_the_golden_encoder():
    h0, h1, hb = hashlib.sha256(), hashlib.sha256(), hashlib.sha256()
    (one0, many0), (one1, many1) = encoder(0), encoder(1)
    count = 0
    for g, states in _golden_games():
        n = g.num_players
        for s in states:
            for seat in range(n):
                h0.update(one0(s, seat).tobytes())
                h1.update(one1(s, seat).tobytes())
                count += 1
        h0.update(many0([g] * n, list(range(n))).tobytes())
        h1.update(many1([g] * n, list(range(n))).tobytes())
    for end in (1, 7, 40, 100, 1000):
        for version in (0, 1):
            low, high = observation_bounds(end, version)
            hb.update(low.tobytes())
            hb.update(high.tobytes())
    assert count == GOLDEN_STATES
    assert (h0.hexdigest()[:16], h1.hexdigest()[:16], hb.hexdigest()[:16]) == (GOLDEN_V0, GOLDEN_V1, GOLDEN_BOUNDS)
