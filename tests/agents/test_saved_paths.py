"""The writers of the built-in agents' files read a path as their readers do
(:func:`agents.base.agent_path`): ``~`` is the home folder, an empty path is refused."""

from __future__ import annotations

import numpy as np
import pytest

from agents.ppo import Actor, load_actor, save_actor
from agents.search import save_networks


def _actor() -> Actor:
    rng = np.random.default_rng(0)
    layers = [(rng.normal(size=(4, 52)), np.zeros(4)), (rng.normal(size=(9, 4)), np.zeros(9))]  # (out, in), as torch
    return Actor(layers, "tanh")


def test_save_actor_writes_under_the_home_folder_for_a_tilde(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    save_actor(_actor(), "~/policy.npz")
    assert (tmp_path / "policy.npz").is_file() and not (tmp_path / "~").exists()
    assert len(load_actor("~/policy.npz").layers) == 2


def test_save_networks_writes_under_the_home_folder_for_a_tilde(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    layers = [(np.zeros((175, 3), dtype=np.float32), np.zeros(3, dtype=np.float32))]
    save_networks("~/nets.npz", layers, layers)
    assert (tmp_path / "nets.npz").is_file() and not (tmp_path / "~").exists()
    with np.load(tmp_path / "nets.npz") as z:
        assert sorted(z.files) == ["belief_b0", "belief_w0", "value_b0", "value_w0"]


@pytest.mark.parametrize("save", ["actor", "networks"])
def test_an_empty_path_to_write_is_refused(save, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ValueError, match="is empty"):
        if save == "actor":
            save_actor(_actor(), "")
        else:
            save_networks("", [], [])
    assert list(tmp_path.iterdir()) == []
