"""Reading an observation as a given version: a vector of that version or a later one.

A version-1 vector starts with the version-0 vector, so each reader told version 0 reads
a version-1 vector by its first 52 entries; a vector too short for the version it is told
is refused, never read as empty or cut fields.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from llama_env.engine import LlamaGame
from llama_env.observation import OBS_V0, OBS_V1, BatchView, ObsView, decode, encode, encode_v1, view


def _vectors() -> tuple[np.ndarray, np.ndarray]:
    game = LlamaGame(3, rng=5)
    for action in (7, 7, 8):  # some history, so that version 1 differs from its prefix's zeros
        game.step(action if action in game.legal_actions() else game.legal_actions()[0])
    return encode(game, 0), encode_v1(game, 0)


@pytest.mark.parametrize(
    ("size", "version"),
    [(OBS_V0.size, 1), (10, 0), (OBS_V1.size - 1, 1), (OBS_V0.size + 1, 0)],
)
def test_view_refuses_a_vector_too_short_or_of_no_version_for_the_version_it_is_told(size, version):
    """view(obs_v0, 1) returned empty arrays for every history field; a 10-entry vector
    read as version 0 gave a cut hand and an empty end_score."""
    for obs in (np.zeros(size, dtype=np.float32), np.zeros((3, size), dtype=np.float32)):
        with pytest.raises(ValueError, match=f"version {version} reads a vector of .*got shape"):
            view(obs, version)


def test_every_reader_told_version_0_reads_a_version_1_vector_by_its_first_52_entries():
    """ObsView, decode and BatchView refused what view read, against the promise that
    every reader of version 0 reads version 1 too."""
    v0, v1 = _vectors()
    assert not np.array_equal(v1[OBS_V0.size :], np.zeros(OBS_V1.size - OBS_V0.size))
    assert {k: a.tolist() for k, a in view(v1, 0).items()} == {k: a.tolist() for k, a in view(v0, 0).items()}
    one = ObsView(v1, 0)
    assert one.version == 0 and decode(one) == decode(v0) == decode(v1, 0)
    with pytest.raises(ValueError, match="'opp_played' is a field of version-1 observations"):
        _ = one.opp_played
    batch, rows = BatchView(np.stack([v1, v1]), 0), BatchView(np.stack([v0, v0]))
    assert batch.version == 0 and len(batch) == 2
    for f in OBS_V0.fields:
        np.testing.assert_array_equal(getattr(batch, f.name), getattr(rows, f.name))


def test_view_reads_a_list_as_decode_does():
    """view(list) was a TypeError (list indices must be integers) where decode(list) read it."""
    v0, v1 = _vectors()
    for obs, version in ((v0, None), (v1, None), (v1, 0), (v1, 1)):
        got = view(obs.tolist(), version)
        assert {k: a.tolist() for k, a in got.items()} == {k: a.tolist() for k, a in view(obs, version).items()}
    assert view([v0.tolist(), v0.tolist()])["hand"].shape == (2, 7)


def test_each_reader_told_version_1_refuses_a_version_0_vector():
    v0, _ = _vectors()
    for read in (lambda: ObsView(v0, 1), lambda: decode(v0, 1)):
        with pytest.raises(ValueError, match=r"version 1 reads a flat vector of 175 \(version 1\) values"):
            read()
    with pytest.raises(ValueError, match=r"version 1 reads a \(B, size\) array of rows of 175 \(version 1\)"):
        BatchView(np.stack([v0]), 1)


@pytest.mark.parametrize("name", ["top_card", "num_players", "last_player"])
def test_one_hot_reader_reads_and_refuses_a_block_as_obs_view_does(name):
    """The agents' act checks the one-hot blocks its act_batch reads unchecked with
    one_hot_reader: one rule with ObsView's, not a copy of it."""
    from llama_env.observation import SLICES_V1, one_hot_reader

    read = one_hot_reader(name)
    block = SLICES_V1[name]
    width = block.stop - block.start
    _, v1 = _vectors()
    cases = [v1[block].tolist(), [0.0] * width, [0.5, 0.5] + [0.0] * (width - 2), [1.0, 1.0] + [0.0] * (width - 2)]
    for entries in [*cases, [np.nan] + [0.0] * (width - 1), [0.0] * (width - 1) + [np.inf]]:
        obs = v1.copy()
        obs[block] = entries
        try:
            expected: object = getattr(ObsView(obs), name)
        except ValueError as exc:
            with pytest.raises(ValueError, match=f"^{re.escape(str(exc))}$"):
                read(obs)
            with pytest.raises(ValueError, match=f"^{re.escape(str(exc))}$"):
                read(obs.tolist())
        else:
            assert read(obs) == read(obs.tolist()) == expected
    assert read(v1) == getattr(ObsView(v1), name)


def test_one_hot_reader_names_a_field_of_a_later_version_and_a_field_that_is_no_one_hot_block():
    from llama_env.observation import one_hot_reader

    v0, _ = _vectors()
    with pytest.raises(ValueError, match=r"^'last_player' is a field of version-1 observations \(Llama-v1\); this one"):
        one_hot_reader("last_player")(v0)
    with pytest.raises(ValueError, match="^one_hot_reader reads the one-hot fields top_card, num_players, last_player"):
        one_hot_reader("hand")
