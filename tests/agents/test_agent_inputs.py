"""Agents refuse bad input with errors that name it: wrong masks and observations, bad
parameters, and PPO model files that are not whole models."""

from __future__ import annotations

import io
import json
import os
import pickle
import random
import re
import shutil
import subprocess
import sys
import zipfile
from collections import OrderedDict

import numpy as np
import pytest
from conftest import make_game

import agents
from agents.ppo import DEFAULT_MODEL_ZIP, FOUR_PLAYER_MODEL, RLLIB_MODULE_STATE, load_actor
from llama_env.engine import LlamaGame
from llama_env.observation import FIELDS_V1, SLICES, SLICES_V1, Count, ObsView, Score, action_mask, encode, encode_v1
from train.cli import main

BUILTIN = [
    "random",
    "greedy",
    "cautious",
    "heuristic",
    "perturbed",
    "ppo",
    "ppo_v0",
    "ppo_v1",
    "ppo_v2",
    "ppo_v3",
    "ppo_v4",
    "search",
]
GAME = LlamaGame(3, rng=0)
OBS = encode(GAME, 0)
MASK = action_mask(GAME.legal_actions())


@pytest.mark.parametrize("name", BUILTIN)
@pytest.mark.parametrize("length", [5, 8, 10, 12])
def test_masks_of_the_wrong_length_are_refused(name, length):
    mask = np.zeros(length, dtype=np.int8)
    mask[: min(length, 9)] = MASK[: min(length, 9)]
    with pytest.raises(ValueError, match="an action mask has 9 entries"):
        agents.make(name).act(OBS, mask)


def test_builtin_is_every_registered_agent():
    assert sorted(BUILTIN) == agents.names()


@pytest.mark.parametrize("name", BUILTIN)
@pytest.mark.parametrize("mask", [None, 3, "111111111", {"action_mask": MASK}], ids=repr)
def test_a_mask_that_is_no_sequence_is_a_type_error_naming_the_mask(name, mask):
    """``act(obs, None)`` once died deep in numpy or with "'NoneType' object is not
    iterable"; a string of nine characters passed as nine truthy entries."""
    with pytest.raises(TypeError, match="an action mask is a sequence of 9 entries"):
        agents.make(name).act(OBS, mask)


@pytest.mark.parametrize("name", BUILTIN)
@pytest.mark.parametrize("shape", [(51,), (53,), (174,), (4, 13), (1, 52)])
def test_observations_of_the_wrong_shape_are_refused(name, shape):
    obs = np.zeros(shape, dtype=np.float32)
    with pytest.raises(
        ValueError, match=r"an observation is a flat vector of 52 \(version 0\) or 175 \(version 1\) values, got shape"
    ):
        agents.make(name).act(obs, MASK)


@pytest.mark.parametrize("name", BUILTIN)
@pytest.mark.parametrize("obs", [None, 5, np.float32(0.5)], ids=repr)
def test_an_observation_that_is_no_vector_is_refused_as_every_agent_refuses_it(name, obs):
    """greedy and cautious said "'NoneType' object is not iterable" where the others named
    the shape."""
    with pytest.raises(ValueError, match=r"an observation is a flat vector of 52 \(version 0\) .* got shape \(\)"):
        agents.make(name).act(obs, MASK)


TWO_PLAYS = np.array([1, 1, 0, 0, 0, 0, 0, 1, 1], dtype=bool)
"""Two plays, a draw and a quit: every agent but random reads the observation's values."""


@pytest.mark.parametrize("name", [n for n in BUILTIN if n != "random"])
@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_an_observation_that_is_not_finite_is_refused_naming_the_entry(name, bad):
    """All NaN, greedy, cautious, heuristic and perturbed said "cannot convert float NaN to
    integer"; ppo and search played a move from it without a word."""
    agent = agents.make(name, seed=0)
    obs = (encode_v1(GAME, 0) if getattr(agent, "obs_version", 0) else OBS).copy()
    obs[3] = bad
    with pytest.raises(ValueError, match=rf"an observation must hold finite numbers, got {bad} at entry 3"):
        agent.act(obs, TWO_PLAYS)
    if hasattr(agent, "act_batch"):
        rows = np.stack([np.where(np.isfinite(obs), obs, 0), obs])
        refused = rf"the observations must hold finite numbers, got {bad} at row 1, entry 3"
        with pytest.raises(ValueError, match=refused):
            agent.act_batch(rows, np.stack([TWO_PLAYS, TWO_PLAYS]))


CHOICE = make_game(num_players=3, hands=[[1, 2, 3], [3, 3], [4, 4]], top=2, current_player=0)
"""Two plays on a 2 (the 2 and the 3): the heuristic reads the top card, the table size and
the other seats' flags and hand sizes to choose."""


@pytest.mark.parametrize(
    ("name", "params", "field"),
    [
        *[(n, {}, f) for n in ("heuristic", "perturbed") for f in ("top_card", "num_players", "opp_in_round")],
        *[(n, {}, "opp_hand_size") for n in ("heuristic", "perturbed")],
        ("greedy", {"prefer": "same"}, "top_card"),
    ],
)
@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_a_value_the_rule_agents_read_that_is_not_finite_is_named_as_act_batch_names_it(name, params, field, bad):
    """A NaN in the top card's block (where its 1 was, or beside it) was read as another
    card, and one in a seat's flag or hand size was passed over: heuristic.act played a move
    without a word while act_batch refused the row."""
    agent = agents.make(name, seed=0, **params)
    obs, mask = encode(CHOICE, 0), action_mask(CHOICE.legal_actions())
    block = SLICES[field]
    for entry in range(block.start, block.start + 2) if field.startswith("opp_") else range(block.start, block.stop):
        o = obs.copy()
        o[entry] = bad
        with pytest.raises(ValueError, match=rf"an observation must hold finite numbers, got {bad} at entry {entry}$"):
            agent.act(o, mask)
        with pytest.raises(ValueError, match=rf"got {bad} at row 0, entry {entry}$"):
            agent.act_batch(o[None], mask[None])


@pytest.mark.parametrize("name", ["greedy", "cautious", "heuristic"])
@pytest.mark.parametrize(
    ("obs", "mask", "message"),
    [
        (
            np.full(10, np.nan, np.float32),
            action_mask([0, 7]),
            r"an observation is a flat vector of 52 .* got shape \(10,\)$",
        ),
        (np.full(52, np.nan, np.float32), np.zeros(9), r"^the action mask has no legal action$"),
    ],
    ids=["short vector", "empty mask"],
)
def test_a_nan_does_not_hide_a_wrong_shape_or_an_empty_mask(name, obs, mask, message):
    """Naming a NaN took over every error of act: a 10-entry vector of NaNs was "must hold
    finite numbers, got nan at entry 0" where the shape was wrong, and an empty mask beside
    a NaN lost "the action mask has no legal action"."""
    with pytest.raises(ValueError, match=message):
        agents.make(name).act(obs, mask)


def test_a_top_card_that_is_no_one_hot_block_is_refused_naming_its_entries():
    """Read by its largest entry, a block of 0s was a 1, and 0.5s the first of them. The
    message names the field, not only its entries."""
    start = SLICES["top_card"].start
    for block in ([0.0] * 7, [0.0, 0.5, 0.5, 0.0, 0.0, 0.0, 0.0], [0.0, 1.0, 1.0, 0.0, 0.0, 0.0, 0.0]):
        obs = encode(CHOICE, 0)
        obs[SLICES["top_card"]] = block
        with pytest.raises(
            ValueError, match=rf"^top_card \(entries {start} to {start + 6}\) is a one-hot block, which holds one 1"
        ):
            agents.make("heuristic").act(obs, action_mask(CHOICE.legal_actions()))


def test_a_flag_that_is_not_finite_is_refused_by_the_view():
    """``x > 0.5`` read a NaN as no and an infinity as yes."""
    obs = encode(CHOICE, 0)
    at = SLICES["can_draw"].start
    obs[at] = np.nan
    with pytest.raises(ValueError, match=rf"an observation must hold finite numbers, got nan at entry {at}"):
        _ = ObsView(obs).can_draw
    obs = encode(CHOICE, 0)
    obs[SLICES["opp_in_round"].start + 1] = np.inf
    with pytest.raises(ValueError, match=rf"got inf at entry {SLICES['opp_in_round'].start + 1}"):
        _ = ObsView(obs).opp_in_round


def test_the_rule_based_agents_read_any_declared_observation_version(monkeypatch):
    """They took only the lengths of versions 0 and 1, written out: a version 2 declared in
    llama_env.observation (a longer vector, version 0's entries first) was refused."""
    import agents.base

    longer = np.concatenate([OBS, np.zeros(40, dtype=np.float32)])
    with pytest.raises(ValueError, match="flat vector of 52"):
        agents.make("heuristic").act(longer, MASK)
    monkeypatch.setitem(agents.base.VERSION_OF_SIZE, longer.size, 2)  # as if version 2 were declared
    for name in ("heuristic", "greedy", "cautious", "random"):
        assert agents.make(name, seed=0).act(longer, MASK) == agents.make(name, seed=0).act(OBS, MASK)


@pytest.mark.parametrize(
    ("name", "params", "error", "fragment"),
    [
        ("heuristic", {"danger_hand": None}, ValueError, "danger_hand must be an integer"),
        ("heuristic", {"danger_hand": -1}, ValueError, "danger_hand must be >= 0"),
        ("heuristic", {"quit_base": float("nan")}, ValueError, "quit_base must be a finite number"),
        ("heuristic", {"quit_base": "1"}, ValueError, "quit_base must be a finite number"),
        ("heuristic", {"strand_cost": True}, ValueError, "strand_cost must be a finite number"),
        ("heuristic", {"seed": "x"}, ValueError, "seed must be a non-negative integer"),
        ("random", {"seed": -3}, ValueError, "seed must be a non-negative integer"),
        ("cautious", {"threshold": 2.5}, ValueError, "threshold must be an integer"),
        ("greedy", {"prefer": "most"}, ValueError, "prefer must be 'points' or 'same'"),
        ("ppo", {"deterministic": "yes"}, ValueError, "deterministic must be True or False"),
        ("ppo", {"path": 3}, ValueError, "path must be a model file, a run directory or an RLlib checkpoint"),
        # os.fspath's "expected str, bytes or os.PathLike object, not int" named no parameter, a TypeError
        ("search", {"path": 3}, ValueError, "SearchAgent path must be a model file or a run directory, got 3"),
        ("search", {"networks_path": 3}, ValueError, "networks_path must be a file that llama-rl fit-search wrote"),
        # the costly ones are bounded, not left to run out of memory or overflow mid-game
        ("search", {"worlds": 4097}, ValueError, "worlds must be <= 4096, got 4097"),
        ("perturbed", {"size": 10**12}, ValueError, "size must be <= 10000, got 1000000000000"),
        ("perturbed", {"spread": 1000}, ValueError, "spread must be <= 100, got 1000"),
    ],
)
def test_bad_parameters_name_the_parameter(name, params, error, fragment):
    with pytest.raises(error, match=fragment):
        agents.make(name, **params)


HUGE = 10**400  # an int that float() cannot hold: OverflowError


@pytest.mark.parametrize(
    ("name", "key"),
    [
        ("cautious", "threshold"),
        ("heuristic", "quit_base"),
        ("heuristic", "danger_hand"),
        ("perturbed", "spread"),
        ("perturbed", "size"),
        ("search", "below"),
        ("search", "worlds"),
    ],
)
def test_a_parameter_beyond_float_range_is_a_value_error(name, key):
    """An int too large for a float reached ``float()`` and raised ``OverflowError``."""
    with pytest.raises(ValueError, match=f"{key} must be a number within float range, got an integer of about 401"):
        agents.make(name, **{key: HUGE})
    with pytest.raises(ValueError, match=f"{key} must be a number within float range"):
        agents.parse_agent_spec(f"{name}:{key}={HUGE}")
    with pytest.raises(ValueError, match=rf"{key} must be (a finite number|an integer), got '1e999'"):
        agents.parse_agent_spec(f"{name}:{key}=1e999")


def test_an_overflow_in_any_agents_constructor_is_a_value_error_in_a_spec():
    """The registry's spec check turns an ``OverflowError`` of a third-party agent's own
    number check into the ``ValueError`` the command line reports."""
    from llama_env import agent as registry

    class Overflowing:
        def __init__(self, x: float = 1.0) -> None:
            self.x = float(x)

        def act(self, observation, action_mask):
            return 0

    registry.register("overflowing_test_agent")(Overflowing)
    try:
        with pytest.raises(ValueError, match="cannot build agent 'overflowing_test_agent:x=1"):
            agents.parse_agent_spec(f"overflowing_test_agent:x={HUGE}")
    finally:
        del registry._REGISTRY["overflowing_test_agent"], registry._DOCS["overflowing_test_agent"]


def test_a_constructor_raising_anything_is_a_value_error_naming_the_spec(capsys):
    """Only OSError, TypeError and ArithmeticError were named: a plugin's constructor
    raising RuntimeError ended every command in a traceback."""
    from llama_env import agent as registry

    class CtorBoom:
        def __init__(self, x: int = 1) -> None:
            raise RuntimeError("boom in ctor")

        def act(self, observation, action_mask):  # pragma: no cover - never built
            return 0

    registry.register("ctorboom_test_agent")(CtorBoom)
    try:
        with pytest.raises(
            ValueError, match=r"cannot build agent 'ctorboom_test_agent:x=2': RuntimeError: boom in ctor"
        ):
            agents.parse_agent_spec("ctorboom_test_agent:x=2")
        code = main(["eval", "--agents", "ctorboom_test_agent,random", "--games", "2", "--workers", "1"])
        err = capsys.readouterr().err
        assert code == 2 and err.count("\n") == 1 and "cannot build agent 'ctorboom_test_agent'" in err
    finally:
        for table in (registry._REGISTRY, registry._DOCS, registry._GROUPS):
            table.pop("ctorboom_test_agent", None)


@pytest.mark.parametrize("spec", ["cautious:", "cautious: ", " cautious :  "])
def test_a_colon_with_no_parameters_after_it_is_refused_naming_the_spec(spec):
    """``cautious:`` was read as ``cautious``: parameters left out by mistake passed unseen."""
    with pytest.raises(ValueError, match=r"agent spec '.*' has no parameters after ':'; write 'cautious', or "):
        agents.parse_agent_spec(spec, check=False)


def test_numbers_are_read_in_ascii_only():
    """``int`` and ``float`` read other scripts' digits and underscores: ``threshold=٣``
    (an Arabic-Indic three) played threshold 3."""
    for value in ("٣", "３", "1_0", "٣.٥"):
        assert agents.parse_agent_spec(f"cautious:threshold={value}", check=False).params == {"threshold": value}
        with pytest.raises(ValueError, match="threshold must be an integer, got '"):
            agents.parse_agent_spec(f"cautious:threshold={value}")
    spec = agents.parse_agent_spec("x:a=+3:b=-1.5e3:c=.5:d=7.:e=-0", check=False)
    assert spec.params == {"a": 3, "b": -1500.0, "c": 0.5, "d": 7.0, "e": 0}
    assert [type(v) for v in spec.params.values()] == [int, float, float, float, int]


def test_a_value_of_thousands_of_characters_is_not_echoed_whole():
    """An integer beyond the 4300 digits Python reads fell back to text, and the message
    echoed all 5,000 of them."""
    with pytest.raises(ValueError) as info:
        agents.parse_agent_spec("cautious:threshold=" + "9" * 5000, check=False)
    message = str(info.value)
    assert "agent parameter 'threshold' in 'cautious:thr" in message and len(message) < 250
    assert ": its value must be an integer of at most 1000 digits, got '9999" in message, message
    with pytest.raises(ValueError) as info:
        agents.parse_agent_spec("cautious:threshold=" + "x" * 5000)
    assert "threshold must be an integer, got 'xxx" in str(info.value) and len(str(info.value)) < 200


@pytest.mark.parametrize("name", [" ", " lead", "tail ", "nl\n", "tab\tin", "x#1", "random#2"])
def test_a_name_no_spec_reaches_is_refused_naming_the_rule(name):
    """A spec is read stripped, and evaluation labels a repeated agent random#2."""
    from llama_env.agent import _REGISTRY, register

    with pytest.raises(ValueError, match="an agent name must not start or end with whitespace"):
        register(name)
    assert name not in _REGISTRY


def test_a_keyword_seed_overrides_the_specs_as_every_keyword_does():
    assert agents.make("cautious:threshold=2", threshold=4).threshold == 4
    assert agents.make("random:seed=1", seed=3).seed == 3
    assert agents.make("random:seed=1").seed == 1
    assert agents.make("cautious:threshold=2", seed=3).seed == 3  # a spec without a seed takes the keyword's
    a, b = agents.make("random:seed=1", seed=3), agents.make("random", seed=3)
    mask = np.ones(9, dtype=bool)
    assert [a.act(OBS, mask) for _ in range(20)] == [b.act(OBS, mask) for _ in range(20)]


def test_an_empty_networks_path_says_it_is_empty():
    """Path("") is the current folder: "cannot load the search networks from .: it is a folder"."""
    with pytest.raises(ValueError, match="networks_path is empty: name a file that llama-rl fit-search wrote"):
        agents.make("search", networks_path="")
    with pytest.raises(ValueError, match="networks_path is empty: name a file that llama-rl fit-search wrote"):
        agents.parse_agent_spec("search:networks_path=")


def test_a_parameter_beyond_float_range_on_the_command_line(capsys):
    code = main(["eval", "--agents", f"cautious:threshold={HUGE},random", "--games", "2", "--workers", "1"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "threshold must be a number within float range" in err


def test_make_needs_a_name():
    with pytest.raises(TypeError, match="an agent name must be a string"):
        agents.make(["random"])


def _rewrite(path, change):
    with zipfile.ZipFile(DEFAULT_MODEL_ZIP) as src, zipfile.ZipFile(path, "w") as dst:
        for name in src.namelist():
            data = change(name, src.read(name))
            if data is not None:
                dst.writestr(name, data)


def _bad_crc(path):
    data = bytearray(DEFAULT_MODEL_ZIP.read_bytes())
    with zipfile.ZipFile(io.BytesIO(bytes(data))) as zf:
        info = zf.getinfo("policy.pth")
    data[info.header_offset + 30 + len(info.filename) + len(info.extra) + 64] ^= 0xFF
    path.write_bytes(bytes(data))


def _wrong_shape(path):
    import torch

    def change(name, data):
        if name != "policy.pth":
            return data
        state = torch.load(io.BytesIO(data), weights_only=True)
        state["action_net.weight"] = state["action_net.weight"][:5]
        state["action_net.bias"] = state["action_net.bias"][:5]
        buf = io.BytesIO()
        torch.save(state, buf)
        return buf.getvalue()

    _rewrite(path, change)


def _garbage(seed):
    def change(name, data):
        return random.Random(seed).randbytes(500) if name == "policy.pth" else data

    return change


def _objects(name, data):
    """A policy.pth that pickles more than tensors (here a callable)."""
    import torch

    if name != "policy.pth":
        return data
    buf = io.BytesIO()
    torch.save({"weights": print}, buf)
    return buf.getvalue()


BROKEN = {
    "empty": (lambda p: p.write_bytes(b""), "BadZipFile"),
    "truncated": (lambda p: p.write_bytes(DEFAULT_MODEL_ZIP.read_bytes()[:5000]), ""),
    "random bytes": (lambda p: p.write_bytes(random.Random(1).randbytes(4000)), "BadZipFile"),
    "bad CRC": (_bad_crc, "corrupt (bad CRC)"),
    "no policy.pth": (lambda p: _rewrite(p, lambda n, d: None if n == "policy.pth" else d), "has no policy.pth"),
    # seeded garbage, one seed for each way torch.load fails on it (a UnicodeDecodeError is a
    # ValueError too, and must still be named by its type)
    **{
        f"garbage weights ({kind})": (lambda p, seed=seed: _rewrite(p, _garbage(seed)), kind)
        for kind, seed in [("UnpicklingError", 0), ("IndexError", 2), ("KeyError", 20), ("UnicodeDecodeError", 195)]
    },
    "wrong shapes": (_wrong_shape, "action layer has 5 outputs"),
    # torch's own message advised loading the file with weights_only=False, which runs its code
    "objects, not tensors": (lambda p: _rewrite(p, _objects), "holds more than plain tensors (refused"),
}


@pytest.mark.parametrize("case", list(BROKEN))
def test_broken_model_files_name_the_file(case, tmp_path):
    damage, fragment = BROKEN[case]
    path = tmp_path / "model.zip"
    damage(path)
    with pytest.raises(ValueError, match=f"cannot load a PPO model from {path}") as info:
        agents.make("ppo", path=str(path))
    assert fragment in str(info.value) and "\n" not in str(info.value)


@pytest.mark.parametrize(
    ("dtype", "fragment"), [(np.int8, "of type int8"), (np.complex64, "of type complex64"), ("<U3", "of type <U3")]
)
def test_weights_that_are_not_floating_point_are_refused(dtype, fragment, tmp_path):
    """Integer weights were cast silently (truncated: the model played other moves),
    complex ones cast with a warning, strings failed inside numpy."""
    actor = load_actor(FOUR_PLAYER_MODEL)
    path = tmp_path / "model.npz"
    arrays = {f"w{k}": (wt.T.astype(dtype) if k == 0 else wt.T) for k, (wt, _) in enumerate(actor.layers)}
    np.savez(
        path, activation=np.array(actor.activation), **arrays, **{f"b{k}": b for k, (_, b) in enumerate(actor.layers)}
    )
    with pytest.raises(ValueError, match=f"cannot load a PPO model from {path}: layer 0 holds weights {fragment}"):
        agents.make("ppo", path=str(path))


def test_an_npz_declaring_more_than_a_model_holds_is_refused_before_it_is_unpacked(tmp_path):
    """A 10 MB file of zeros declaring a 24000 x 24000 layer was unpacked (2.3 GB, 11 s)
    before its shape was refused; a larger one would run out of memory."""
    from agents.base import MAX_ARRAY_BYTES
    from agents.search import load_networks

    path = tmp_path / "bomb.npz"
    side = int((MAX_ARRAY_BYTES / 4) ** 0.5) + 64  # float32: just over the bound
    np.savez_compressed(path, activation=np.array("tanh"), w0=np.zeros((side, side), np.float32), b0=np.zeros(side))
    assert path.stat().st_size < 2_000_000
    for load in (lambda: agents.make("ppo", path=str(path)), lambda: load_networks(path, 4)):
        with pytest.raises(ValueError, match=r"it declares 2\d\d MiB of arrays, more than 256 MiB"):
            load()


@pytest.mark.parametrize("content", [b"", b"not arrays at all", random.Random(2).randbytes(300)])
def test_an_npz_that_is_no_archive_says_so_without_suggesting_pickle(content, tmp_path):
    """numpy reads a file that is no zip archive as a pickle, refuses it and suggests
    allow_pickle, an unsafe option, to the user."""
    from agents.search import load_networks

    path = tmp_path / "model.npz"
    path.write_bytes(content)
    loaders = [(lambda: agents.make("ppo", path=str(path)), "a PPO model"), (lambda: load_networks(path, 4), "the")]
    for load, what in loaders:
        with pytest.raises(ValueError, match=f"cannot load {what}") as info:
            load()
        assert "not an .npz archive of arrays (not a zip file)" in str(info.value) and "pickle" not in str(info.value)


@pytest.mark.parametrize("case", ["empty", "bad CRC", "no policy.pth"])
def test_broken_model_files_on_the_command_line(case, tmp_path, capsys):
    path = tmp_path / "model.zip"
    BROKEN[case][0](path)
    code = main(["eval", "--agents", f"ppo:path={path},random", "--games", "2", "--workers", "1"])
    err = capsys.readouterr().err
    assert (
        code == 2
        and err.startswith("llama-rl: error: --agents: cannot load a PPO model from")
        and "Traceback" not in err
    )


def test_a_run_directory_loads_its_model(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    with pytest.raises(ValueError, match="no PPO model in .* not a run directory .* has no model.zip .* nor an RLlib"):
        agents.make("ppo", path=str(run))
    shutil.copy(DEFAULT_MODEL_ZIP, run / "model.zip")
    from_dir = agents.make("ppo", path=str(run))
    shipped = agents.make("ppo")
    assert from_dir.act(OBS, MASK) == shipped.act(OBS, MASK)
    with pytest.raises(ValueError, match="does not exist"):
        agents.make("ppo", path=str(tmp_path / "nope.zip"))


def _rllib_checkpoint(tmp_path, state, activation="tanh"):
    """A run directory with one RLlib checkpoint holding ``state`` as its module state."""
    run = tmp_path / "run"
    checkpoint = run / "checkpoints" / "rllib_4096"
    (checkpoint / RLLIB_MODULE_STATE).parent.mkdir(parents=True)
    (run / "config.json").write_text(json.dumps({"activation": activation}))
    (checkpoint / RLLIB_MODULE_STATE).write_bytes(pickle.dumps(state))
    return run, checkpoint


def _module_state(actor):
    """What RLlib saves for the trainer's module: actor and critic encoders, two heads."""
    state = OrderedDict()
    *hidden, (w_pi, b_pi) = [(wt.T.copy(), b.copy()) for wt, b in actor.layers]
    for i, (w, b) in enumerate(hidden):
        for enc in ("actor", "critic"):
            state[f"encoder.{enc}_encoder.net.mlp.{2 * i}.weight"] = w
            state[f"encoder.{enc}_encoder.net.mlp.{2 * i}.bias"] = b
    state["pi.log_std_clip_param_const"] = np.array([20.0], dtype=np.float32)
    state["pi.net.mlp.0.weight"], state["pi.net.mlp.0.bias"] = w_pi, b_pi
    state["vf.net.mlp.0.weight"] = np.zeros((1, w_pi.shape[1]), dtype=np.float32)
    state["vf.net.mlp.0.bias"] = np.zeros(1, dtype=np.float32)
    return state


def test_an_rllib_checkpoint_loads_its_policy(tmp_path):
    shipped = load_actor(FOUR_PLAYER_MODEL)
    _, checkpoint = _rllib_checkpoint(tmp_path, _module_state(shipped))
    agent = agents.make("ppo", path=str(checkpoint))
    assert agent.actor.activation == "tanh" and len(agent.actor.layers) == len(shipped.layers)
    games = [LlamaGame(4, rng=seed) for seed in range(20)]
    obs = np.stack([encode_v1(g, 0) for g in games])
    masks = np.stack([action_mask(g.legal_actions()) for g in games])
    assert np.array_equal(agent.actor.logits(obs, masks), shipped.logits(obs, masks))


class _Boom:
    def __reduce__(self):
        return (os.system, ("echo pwned",))


@pytest.mark.parametrize(
    ("change", "fragment"),
    [
        (lambda s: s.update(evil=_Boom()), "it holds a posix.system, not only numpy arrays"),
        (lambda s: s.pop("pi.net.mlp.0.bias"), "a weight without its bias"),
        (lambda s: [s.pop(k) for k in list(s) if k.startswith("encoder.actor")], "no actor encoder"),
        (lambda s: s.update({"pi.net.mlp.0.weight": s["pi.net.mlp.0.weight"][:5]}), "layer 2 has weights of shape"),
    ],
)
def test_a_broken_rllib_checkpoint_names_the_problem(change, fragment, tmp_path):
    state = _module_state(load_actor(FOUR_PLAYER_MODEL))
    change(state)
    _, checkpoint = _rllib_checkpoint(tmp_path, state)
    with pytest.raises(ValueError, match=f"cannot load a PPO model from {checkpoint / RLLIB_MODULE_STATE}") as info:
        agents.make("ppo", path=str(checkpoint))
    assert fragment in str(info.value)


@pytest.mark.parametrize(("damage", "fragment"), [(b"", "EOFError"), (b"\x80\x05garbage", "UnpicklingError")])
def test_an_unreadable_rllib_module_state_names_the_file(damage, fragment, tmp_path):
    _, checkpoint = _rllib_checkpoint(tmp_path, {})
    (checkpoint / RLLIB_MODULE_STATE).write_bytes(damage)
    with pytest.raises(ValueError, match=f"cannot load a PPO model from {checkpoint / RLLIB_MODULE_STATE}") as info:
        agents.make("ppo", path=str(checkpoint))
    assert fragment in str(info.value) and "\n" not in str(info.value)


def test_an_rllib_checkpoint_outside_its_run_says_where_the_activation_is(tmp_path):
    run, checkpoint = _rllib_checkpoint(tmp_path, _module_state(load_actor(FOUR_PLAYER_MODEL)))
    (run / "config.json").unlink()
    with pytest.raises(ValueError, match="activation is recorded in its run's config.json"):
        agents.make("ppo", path=str(checkpoint))
    (run / "config.json").write_text(json.dumps({"activation": "gelu"}))
    with pytest.raises(ValueError, match="records the activation 'gelu'"):
        agents.make("ppo", path=str(checkpoint))


@pytest.mark.parametrize("activation, name", [("ReLU", "relu"), ("Tanh", "tanh")])
def test_a_zips_activation_is_read_and_its_moves_are_sb3s(tmp_path, activation, name):
    """SB3 records the activation as text beside a pickle: read as tanh, a relu policy
    played other moves (72% agreement over a run's decisions), and `export` kept them."""
    import gymnasium as gym
    import torch
    from sb3_contrib import MaskablePPO

    import llama_env  # noqa: F401 - registers Llama-v0

    kwargs = {"net_arch": [16, 16], "activation_fn": getattr(torch.nn, activation)}
    model = MaskablePPO("MlpPolicy", gym.make("Llama-v0", num_players=2), policy_kwargs=kwargs, seed=0)
    model.save(tmp_path / "m.zip")
    actor = load_actor(tmp_path / "m.zip")
    assert actor.activation == name
    rng = np.random.default_rng(0)
    obs = rng.uniform(0, 3, (200, actor.obs_size)).astype(np.float32)
    masks = rng.random((200, 9)) < 0.6
    masks[:, 8] = True
    ours = actor.act_batch(obs, masks)
    theirs, _ = model.predict(obs, action_masks=masks, deterministic=True)
    assert (ours == theirs).all()


def test_a_zip_with_an_activation_the_actor_cannot_play_is_refused(tmp_path):
    import gymnasium as gym
    import torch
    from sb3_contrib import MaskablePPO

    import llama_env  # noqa: F401 - registers Llama-v0

    kwargs = {"net_arch": [8], "activation_fn": torch.nn.ELU}
    MaskablePPO("MlpPolicy", gym.make("Llama-v0", num_players=2), policy_kwargs=kwargs).save(tmp_path / "m.zip")
    with pytest.raises(ValueError, match="activation is ELU; the ppo agent plays tanh or relu"):
        load_actor(tmp_path / "m.zip")


def test_a_file_named_agents_beside_a_script_is_named_when_it_hides_the_built_in_agents(tmp_path):
    """A user's own agents.py in the folder of a script (or the current one, for python -c)
    is imported in place of the package: no agent registered, and the error said to
    install llama-rl, which was installed."""
    (tmp_path / "agents.py").write_text("MINE = True\n")
    code = "import llama_env\nllama_env.agent.make('heuristic')\n"
    run = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert run.returncode != 0
    assert f"'import agents' found {tmp_path / 'agents.py'}, not llama-rl's package" in run.stderr
    assert "install the package" not in run.stderr


COUNTED = [f for f in FIELDS_V1 if isinstance(f.unit, (Count, Score)) and f.name != "end_score"]
"""Every field read as a whole number (a count, or points by the end score); ``end_score``
apart, as every score reads it first."""


@pytest.mark.parametrize("field", COUNTED, ids=lambda f: f.name)
@pytest.mark.parametrize("bad", [np.nan, -np.inf, 1e308])
def test_a_count_that_is_not_finite_is_refused_by_the_view_naming_the_entry(field, bad):
    """Read as a count, a NaN was "cannot convert float NaN to integer" and an infinity "cannot
    convert float infinity to integer", naming no entry, from ObsView as from any agent of
    one's own that read it (the built-in rule agents named it only from outside the view)."""
    obs = encode_v1(CHOICE, 0)
    at = SLICES_V1[field.name].start
    obs = obs.astype(np.float64)
    obs[at] = bad
    name = re.escape(f"got {bad} at entry {at}") + "$"
    with pytest.raises(ValueError, match=("far below float range, " if bad == 1e308 else "finite numbers, ") + name):
        _ = getattr(ObsView(obs), field.name)


@pytest.mark.parametrize(
    ("read", "block"),
    [("hand_counts", "hand"), ("discard_counts", "discarded"), ("count", "hand"), ("discarded_count", "discarded")],
)
def test_the_view_s_card_counts_name_an_entry_that_is_not_finite(read, block):
    """``hand_counts`` and its kin read by card code, with the same message as the fields."""
    obs = encode(CHOICE, 0)
    at = SLICES[block].start + 2
    obs[at] = np.nan
    view = ObsView(obs)
    with pytest.raises(ValueError, match=rf"^an observation must hold finite numbers, got nan at entry {at}$"):
        getattr(view, read)(3) if read.endswith("count") else getattr(view, read)()


def _decisions(players: int, count: int) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """``count`` decisions of a heuristic game at ``players``: the observation of each
    version and the mask."""
    game, out, heuristic = LlamaGame(players, rng=5), [], agents.make("heuristic")
    while len(out) < count and not game.game_over:
        seat, mask = game.current_player, action_mask(game.legal_actions())
        out.append((encode(game, seat), encode_v1(game, seat), mask))
        game.step(heuristic.act(out[-1][0], mask))
    return out


@pytest.mark.parametrize("spec", ["ppo_v0", "ppo:path=<general model>"])
def test_a_version_0_ppo_model_reads_a_version_1_observation_by_its_first_entries(spec):
    """ppo_v0 (and ppo:path= a version-0 model) refused what every other agent reads: "this
    PPO agent reads version-0 observations of 52 values, got 175"."""
    from agents.ppo import DEFAULT_MODEL

    agent = agents.make(spec.replace("<general model>", str(DEFAULT_MODEL)))
    rows = _decisions(2, 20) + _decisions(4, 20)
    old, new, masks = (np.stack(x) for x in zip(*rows, strict=True))
    assert [agent.act(o, m) for o, m in zip(new, masks, strict=True)] == [
        agent.act(o, m) for o, m in zip(old, masks, strict=True)
    ]
    np.testing.assert_array_equal(agent.act_batch(new, masks), agent.act_batch(old, masks))


@pytest.mark.parametrize("name", ["ppo", "ppo_v0", "ppo_v3", "search"])
@pytest.mark.parametrize("field", ["top_card", "num_players"])
@pytest.mark.parametrize("version", [0, 1])
def test_ppo_and_search_refuse_a_one_hot_field_that_is_not_one_hot(name, field, version):
    """ppo read the table size by its largest entry: a block of 0s played the heads-up
    specialist at a 4-player table without a word, where heuristic refused it (and search
    too, where it searched), as the docs say every built-in agent's act does."""
    agent = agents.make(name, seed=0)
    game = make_game(num_players=4, hands=[[1, 2, 3], [3, 3], [4, 4], [5]], top=2, current_player=0)
    obs, mask = (encode_v1 if version else encode)(game, 0), action_mask(game.legal_actions())
    block = SLICES[field]
    width = block.stop - block.start
    for entries in ([0.0] * width, [0.5, 0.5] + [0.0] * (width - 2), [1.0, 1.0] + [0.0] * (width - 2)):
        bad = obs.copy()
        bad[block] = entries
        with pytest.raises(ValueError, match=rf"^{field} \(entries {block.start} to {block.stop - 1}\) is a one-hot"):
            agent.act(bad, mask)


def test_a_path_that_starts_with_a_tilde_is_read_in_the_home_folder(tmp_path, monkeypatch):
    """The shell leaves ~ as it is inside 'ppo:path=~/m.npz' (and after = in
    --opponents=...): "no PPO model at ~/m.npz", for ppo:path=, search:path= and
    networks_path=, where llama-rl serve's own paths read ~ as the home folder."""
    from agents.ppo import DEFAULT_MODEL
    from agents.search import NETWORKS

    shutil.copy(DEFAULT_MODEL, tmp_path / "m.npz")
    shutil.copy(FOUR_PLAYER_MODEL, tmp_path / "m4.npz")
    shutil.copy(NETWORKS[4], tmp_path / "n4.npz")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert agents.make("ppo:path=~/m.npz").path == tmp_path / "m.npz"
    search = agents.make("search:path=~/m4.npz:networks_path=~/n4.npz")
    assert (search.path, search.networks_path) == (tmp_path / "m4.npz", tmp_path / "n4.npz")


def test_a_folder_whose_name_starts_with_a_tilde_is_read_where_it_is(tmp_path, monkeypatch):
    """``~old`` names no home folder (no user old): Path.expanduser raised "Could not
    determine home directory" for ppo:path=~old/m.npz, which loaded before, while train's
    record of the spec read it as ./~old/m.npz. The agents and the record now read every
    path alike: ~ as the home folder where there is one, else as written."""
    from agents.ppo import DEFAULT_MODEL
    from agents.search import NETWORKS
    from train.training.config import absolute_agent_paths

    folder = tmp_path / "~no_such_user_of_llama_rl"
    folder.mkdir()
    (tmp_path / "home").mkdir()
    for source, name in ((DEFAULT_MODEL, "m.npz"), (FOUR_PLAYER_MODEL, "m4.npz"), (NETWORKS[4], "n4.npz")):
        shutil.copy(source, folder / name)
        shutil.copy(source, tmp_path / "home" / name)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    for where in (folder.name, "~"):
        ppo = f"ppo:path={where}/m.npz"
        search = f"search:path={where}/m4.npz:networks_path={where}/n4.npz"
        read = tmp_path / ("home" if where == "~" else where)
        assert agents.make(ppo).path.absolute() == agents.make(absolute_agent_paths(ppo)).path == read / "m.npz"
        made, recorded = agents.make(search), agents.make(absolute_agent_paths(search))
        assert (made.path.absolute(), made.networks_path.absolute()) == (read / "m4.npz", read / "n4.npz")
        assert (recorded.path, recorded.networks_path) == (read / "m4.npz", read / "n4.npz")
