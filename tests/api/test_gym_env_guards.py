"""Llama-v0 and Llama-v1 (and the AEC env, for a missing extra) refuse when made what
would fail later, and a failed reset leaves no game read from another seat."""

from __future__ import annotations

import re
import sys
import warnings

import gymnasium as gym
import numpy as np
import pytest

import llama_env  # registers the envs
from llama_env import LlamaEnv
from llama_env.table import AgentError


class _FailsOnSecondReset:
    """An opponent whose ``reset`` raises on its second call, and only then."""

    name = "flaky"

    def __init__(self) -> None:
        self.resets = 0

    def reset(self, seed: int | None = None) -> None:
        self.resets += 1
        if self.resets == 2:
            raise RuntimeError("no second game")

    def act(self, observation: np.ndarray, action_mask: np.ndarray) -> int:
        return int(np.flatnonzero(action_mask)[0])


def test_a_reset_that_an_opponent_fails_leaves_no_game_read_from_the_new_seat():
    """reset() drew the new seat before the table was dealt: when the opponent's reset
    raised, the old game stayed, read from the new seat, and render() showed the
    opponent's hand face up as the learner's."""
    probe = LlamaEnv(num_players=2, seat="random")
    seat_of = {s: probe.reset(seed=s)[1]["seat"] for s in range(20)}
    first = next(s for s in seat_of if seat_of[s] == 1)
    second = next(s for s in seat_of if seat_of[s] == 0)  # a failed reset that draws the other seat
    env = LlamaEnv(num_players=2, opponents=_FailsOnSecondReset(), seat="random", render_mode="ansi")
    env.reset(seed=first)
    assert "(you)" in env.render()
    with pytest.raises(AgentError, match="flaky.*no second game"):
        env.reset(seed=second)
    assert "(you)" not in env.render() and env.game is None
    assert not env.action_masks().any()
    with pytest.raises(RuntimeError, match="call reset"):
        env.step(7)
    _, info = env.reset(seed=second)  # the opponent resets again: a third call
    assert info["action_mask"].any() and env.seat == 0 and env.game.current_player == 0


class _ReadsVersion2:
    obs_version = 2

    def act(self, observation: np.ndarray, action_mask: np.ndarray) -> int:
        return int(np.flatnonzero(action_mask)[0])


@pytest.mark.parametrize("env_id", ["Llama-v0", "Llama-v1"])
def test_make_refuses_an_opponent_that_reads_an_unknown_observation_version(env_id):
    """It was accepted and failed only at the first reset."""
    match = "opponents: '_ReadsVersion2', 2 seats to the learner's left: obs_version must be one of 0, 1, got 2"
    with pytest.raises(ValueError, match=match):
        gym.make(env_id, num_players=3, opponents=["random", _ReadsVersion2()])


@pytest.mark.parametrize("version", [True, 1.0, np.float64(1.0)])
def test_llama_v1_refuses_an_obs_version_that_is_no_integer_as_llama_v0_does(version):
    """make_v1 compared obs_version with 1 only, so True and 1.0 passed."""
    for env_id in ("Llama-v0", "Llama-v1"):
        with pytest.raises(ValueError, match="obs_version must be one of 0, 1"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            gym.make(env_id, obs_version=version)


@pytest.mark.parametrize("opponents", ["class", "in a list"])
def test_make_refuses_an_opponent_class_naming_the_instance_to_pass(opponents):
    """A class has a callable ``act`` too: gym.make took it, and the first reset failed
    with "BaseAgent.reset() missing 1 required positional argument: 'self'"."""
    from agents.random_agent import RandomAgent

    given = RandomAgent if opponents == "class" else ["random", RandomAgent]
    where = "1 seat" if opponents == "class" else "2 seats"
    match = rf"^opponents: {where} to the learner's left: got the class RandomAgent: pass an instance, RandomAgent\(\)$"
    with pytest.raises(ValueError, match=match):
        gym.make("Llama-v0", num_players=3, opponents=given)


def test_make_takes_a_1d_array_of_opponents_as_its_list():
    """np.array(["random"] * 3) was taken as one opponent: "opponents: 1 seat to the
    learner's left: an agent must have act(...), got array([...])"."""
    env = gym.make("Llama-v0", num_players=4, opponents=np.array(["random", "greedy", "random"]))
    assert [type(o).__name__ for o in env.unwrapped.opponents] == ["RandomAgent", "GreedyAgent", "RandomAgent"]
    with pytest.raises(
        ValueError, match=r"^opponents: an array of them must be 1-D, one per other seat, got shape \(1, 3\)$"
    ):
        gym.make("Llama-v0", num_players=4, opponents=np.array([["random"] * 3]))


@pytest.mark.parametrize("given", [b"random", bytearray(b"random")])
@pytest.mark.parametrize(("players", "count"), [(4, "3"), (2, "one")])
def test_make_refuses_bytes_as_opponents_saying_what_they_may_be(given, players, count):
    """b"random" was read byte by byte: "opponents: 4 players need 3 opponents, got 6";
    the refusal then left out the JSON form and the array, and read "a list of 1 of them"."""
    match = re.escape(
        "opponents must be an agent, a registered name or spec (a str), or an AgentSpec (or its JSON form "
        f'{{"name": ..., "params": {{...}}}}), or a list (or 1-D array) of {count} of them; '
    )
    with pytest.raises(ValueError, match="^" + match + rf"got .*b'random'.* \({type(given).__name__}\)$"):
        gym.make("Llama-v0", num_players=players, opponents=given)


@pytest.mark.parametrize("module", ["resvg_py", "PIL"])
@pytest.mark.parametrize(
    "make",
    [
        lambda: gym.make("Llama-v0", render_mode="rgb_array"),
        lambda: gym.make("Llama-v1", render_mode="rgb_array"),
        lambda: llama_env.env(render_mode="rgb_array"),
        lambda: llama_env.raw_env(render_mode="rgb_array"),
    ],
    ids=["Llama-v0", "Llama-v1", "env", "raw_env"],
)
def test_rgb_array_without_the_web_extra_is_refused_when_the_env_is_made(monkeypatch, module, make):
    """make and reset succeeded, and the missing extra was said only at the first
    render(): after training for hours under RecordVideo."""
    from llama_env._install import MissingExtra, install_hint

    monkeypatch.setitem(sys.modules, module, None)  # as if not installed
    match = "^render_mode='rgb_array' draws the table with resvg-py and Pillow, which are not installed: "
    with pytest.raises(MissingExtra, match=match) as raised:
        make()
    assert str(raised.value).endswith(install_hint("web")) and raised.value.name == module
    gym.make("Llama-v0", render_mode="ansi").reset(seed=0)  # the other modes need no extra
    llama_env.env(render_mode="ansi").reset(seed=0)


@pytest.mark.parametrize("module", ["resvg_py", "PIL"])
def test_rasterize_names_the_module_that_is_missing(monkeypatch, module):
    """Pillow missing, rasterize named resvg_py (the env's check at make named PIL)."""
    from llama_env._install import MissingExtra
    from llama_env.render_svg import rasterize

    monkeypatch.setitem(sys.modules, module, None)  # as if not installed
    with pytest.raises(MissingExtra, match="^render_mode='rgb_array' draws the table with ") as raised:
        rasterize('<svg xmlns="http://www.w3.org/2000/svg" width="4" height="4"/>')
    assert raised.value.name == module


def test_rasterize_names_pillow_when_its_import_fails_naming_no_module(monkeypatch, tmp_path):
    """Pillow's own ImportError ("The _imaging extension was built for another version of
    Pillow or PIL") names no module: the error named an empty one."""
    from llama_env._install import MissingExtra
    from llama_env.render_svg import rasterize

    pytest.importorskip("resvg_py")  # tried before Pillow
    (tmp_path / "PIL").mkdir()
    (tmp_path / "PIL" / "__init__.py").write_text("")
    (tmp_path / "PIL" / "Image.py").write_text(
        "raise ImportError('The _imaging extension was built for another version of Pillow or PIL')\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    for module in ("PIL", "PIL.Image"):  # put back as they were afterwards
        monkeypatch.setitem(sys.modules, module, None)
        monkeypatch.delitem(sys.modules, module)
    with pytest.raises(MissingExtra, match="^render_mode='rgb_array' draws the table with ") as raised:
        rasterize('<svg xmlns="http://www.w3.org/2000/svg" width="4" height="4"/>')
    assert raised.value.name == "PIL"


def test_an_unknown_render_mode_is_refused_naming_the_modes():
    from llama_env.render_svg import check_render_mode

    with pytest.raises(ValueError, match=r"^render_mode must be None, 'ansi', 'human' or 'rgb_array', got 'video'$"):
        check_render_mode("video")
