"""Model files are refused, naming the file, before they can make the reader allocate
more than a model of this game holds: crafted files of a few bytes declare gigabytes. The
files here are built by hand and small; nothing large is ever allocated."""

from __future__ import annotations

import io
import pickle
import re
import struct
import zipfile

import numpy as np
import pytest

import agents
from agents.search import load_networks


def _npy(array: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.lib.format.write_array(buf, array)
    return buf.getvalue()


def _npz(path, members: dict[str, bytes]) -> None:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as zf:
        for name, data in members.items():
            zf.writestr(name, data)


def _model_members() -> dict[str, bytes]:
    """The members of a (tiny) exported actor, every one an ``.npy``."""
    return {
        "activation.npy": _npy(np.array("tanh")),
        "w0.npy": _npy(np.zeros((4, 9), np.float32)),
        "b0.npy": _npy(np.zeros(9, np.float32)),
    }


def _refused_by_both_readers(path, fragment: str) -> None:
    """Both readers of ``.npz`` arrays (a PPO model, the search networks) refuse ``path``
    in one line naming it."""
    for load, what in ((lambda: agents.make("ppo", path=str(path)), "a PPO model"),
                       (lambda: load_networks(path, 4), "the search networks")):  # fmt: skip
        with pytest.raises(ValueError, match=f"cannot load {what} from {path}") as info:
            load()
        assert fragment in str(info.value) and "\n" not in str(info.value), str(info.value)


def test_an_npz_member_that_is_no_npy_array_is_refused(tmp_path):
    """np.load hands a member not named .npy over whole, as bytes, and it was counted as
    nothing: 1 GiB of deflated zeros named ``activation`` in a 1 MB file took 5 GB."""
    path = tmp_path / "model.npz"
    members = _model_members()
    members["activation"] = members.pop("activation.npy")
    _npz(path, members)
    _refused_by_both_readers(path, "its member 'activation' is not an .npy array")


def test_an_npz_whose_zip_directory_declares_too_much_is_refused_before_it_is_read(tmp_path):
    """The sizes the zip directory gives count, whatever the members' headers say: a
    member zipfile would unpack to 2 GiB is refused before a byte of it is read."""
    path = tmp_path / "model.npz"
    _npz(path, _model_members())
    data = bytearray(path.read_bytes())
    entry = data.index(b"PK\x01\x02", data.index(b"PK\x01\x02") + 1)  # the second member's directory entry
    data[entry + 24 : entry + 28] = struct.pack("<I", 2**31 - 1)  # its size unpacked
    path.write_bytes(bytes(data))
    _refused_by_both_readers(path, "it declares 2,048 MiB of arrays, more than 256 MiB")


_HEADER = b"{'descr': '<f4', 'fortran_order': False, 'shape': (134217728,), }".ljust(79) + b"\n"
_V3_HEADER = b"\x93NUMPY\x03\x00" + struct.pack("<I", len(_HEADER)) + _HEADER
"""An ``.npy`` header of version 3.0 declaring 512 MiB of float32 (and no data after it)."""


@pytest.mark.parametrize(
    ("member", "fragment"),
    [
        # a header that is not numpy's was counted as nothing
        (b"not an array at all", "its member 'w0.npy' is not an .npy array numpy reads (the magic string"),
        # version 3.0, which the header readers did not know: 512 MiB declared, counted as nothing
        (
            _V3_HEADER,
            "its member 'w0.npy' is not an .npy array numpy reads (its header is of .npy version 3.0)",
        ),
    ],
)  # fmt: skip
def test_an_npz_member_whose_header_numpy_cannot_read_is_refused(member, fragment, tmp_path):
    path = tmp_path / "model.npz"
    _npz(path, {**_model_members(), "w0.npy": member})
    _refused_by_both_readers(path, fragment)


# ---------------------------------------------------------------- an RLlib module state


def _module_state_file(tmp_path, data: bytes):
    """An RLlib checkpoint inside a run, its module state ``data``; the path to load."""
    from agents.ppo import RLLIB_MODULE_STATE

    run = tmp_path / "run"
    checkpoint = run / "checkpoints" / "rllib_4096"
    (checkpoint / RLLIB_MODULE_STATE).parent.mkdir(parents=True)
    (run / "config.json").write_text('{"activation": "tanh"}')
    (checkpoint / RLLIB_MODULE_STATE).write_bytes(data)
    return checkpoint / RLLIB_MODULE_STATE


def _global(module: str, name: str) -> bytes:
    return b"c" + module.encode() + b"\n" + name.encode() + b"\n"


def _ndarray_call(*dims: int) -> bytes:
    """The opcodes of ``numpy.ndarray(dims, "f4")``: an array numpy allocates and never
    fills (numpy pickles its arrays otherwise; the allow-list let this through)."""
    shape = b"(" + b"".join(b"J" + struct.pack("<i", n) for n in dims) + b"t"
    return _global("numpy", "ndarray") + b"(" + shape + b"X\x02\x00\x00\x00f4tR"


def _dict_of(*values: bytes) -> bytes:
    """A protocol-2 pickle of a dict of ``values`` (keys "a", "b", ...)."""
    items = b"".join(b"X\x01\x00\x00\x00" + bytes([97 + k]) + v for k, v in enumerate(values))
    return b"\x80\x02}(" + items + b"u."


def _refused(path, fragment: str) -> None:
    with pytest.raises(ValueError, match=f"cannot load a PPO model from {path}") as info:
        agents.make("ppo", path=str(path))
    assert fragment in str(info.value) and "\n" not in str(info.value), str(info.value)


_HUGE_MODULE_STATES = {
    # 9 bytes that made CPython grow the unpickler's memo to 400 million entries (6.3 GB)
    "memo 400M": (b"\x80\x02}r" + struct.pack("<I", 400_000_000) + b".", "memoizes entry 400,000,000 after 2"),
    "memo 1000": (b"\x80\x02}r" + struct.pack("<I", 1000) + b".", "its pickle memoizes entry 1,000 after 2 opcodes"),
    # a frame that the unpickler reads in one go, longer than the file
    "frame": (b"\x80\x04\x95" + struct.pack("<Q", 2**40) + b"}.", "declares a frame of 1,099,511,627,776 bytes"),
    # an array over the bound (1.5 GB, never filled, played a game), and two whose sum is over
    "1.5 GB array": (_dict_of(_ndarray_call(2**21, 175)), "its arrays hold more than 256 MiB"),
    "256 MiB + 4": (_dict_of(_ndarray_call(2**26 + 1)), "its arrays hold more than 256 MiB"),
    "2 x 128 MiB + 4": (_dict_of(_ndarray_call(2**25 + 1), _ndarray_call(2**25 + 1)), "hold more than 256 MiB"),
    # an array of Python objects is no weight (nor are its dtype's flags the file's to set)
    "objects": (pickle.dumps({"a": np.array([1, None], object)}, protocol=3), "holds an array of '|O', not of numbers"),
    "void": (pickle.dumps({"a": np.zeros(2, "V8")}, protocol=5), "it holds an array of '|V8', not of numbers"),
}


@pytest.mark.parametrize("case", list(_HUGE_MODULE_STATES))
def test_an_rllib_module_state_that_would_allocate_beyond_the_bound_is_refused(case, tmp_path):
    """The unpickler allowed only what rebuilds arrays but set no bound on memory: the
    opcodes are walked first, and the arrays count against MAX_ARRAY_BYTES as they are
    made (each of these files is under 300 bytes; nothing large is allocated)."""
    data, fragment = _HUGE_MODULE_STATES[case]
    _refused(_module_state_file(tmp_path, data), fragment)


def test_an_rllib_module_state_of_too_many_opcodes_or_bytes_is_refused(tmp_path, monkeypatch):
    import agents.ppo

    path = _module_state_file(tmp_path, b"\x80\x02}" + b"N0" * 200 + b".")
    monkeypatch.setattr(agents.ppo, "MAX_PICKLE_OPS", 100)
    _refused(path, "its pickle holds more than 100 opcodes")
    monkeypatch.setattr(agents.ppo, "MAX_ARRAY_BYTES", 100)
    _refused(path, "it is 404 bytes, more than 0 MiB")


@pytest.mark.parametrize("protocol", [3, 4, 5])
def test_an_rllib_module_state_of_every_pickle_protocol_still_loads(protocol, tmp_path):
    """numpy pickles arrays by ``_reconstruct`` (protocols 3 and 4) or ``_frombuffer`` (5):
    both pass the bounds and load the same weights."""
    from collections import OrderedDict

    from agents.ppo import FOUR_PLAYER_MODEL, load_actor

    actor = load_actor(FOUR_PLAYER_MODEL)
    *hidden, (w_pi, b_pi) = [(wt.T.copy(), b) for wt, b in actor.layers]
    state = OrderedDict()
    for i, (w, b) in enumerate(hidden):
        state[f"encoder.actor_encoder.net.mlp.{2 * i}.weight"], state[f"encoder.actor_encoder.net.mlp.{2 * i}.bias"] = (
            w,
            b,
        )
    state["pi.net.mlp.0.weight"], state["pi.net.mlp.0.bias"] = w_pi, b_pi
    state["pi.log_std_clip_param_const"] = np.float32(20.0)  # a numpy scalar: numpy.core.multiarray.scalar
    loaded = load_actor(_module_state_file(tmp_path, pickle.dumps(state, protocol=protocol)))
    for (w, b), (w0, b0) in zip(loaded.layers, actor.layers, strict=True):
        assert np.array_equal(w, w0) and np.array_equal(b, b0) and type(w) is np.ndarray


def test_a_pickle_in_an_rllib_checkpoint_declaring_a_huge_length_is_reported_not_allocated(tmp_path):
    """Checking a checkpoint walks its pickles' opcodes: a bytes8 declaring 2**60 bytes
    was read in one call, a MemoryError out of ``ppo:path=<run>`` and ``--resume``."""
    from agents.ppo import RLLIB_CHECKPOINT_FILES, rllib_checkpoint_problem

    path = _module_state_file(tmp_path, b"\x80\x04N.")
    checkpoint = tmp_path / "run" / "checkpoints" / "rllib_4096"
    for name in RLLIB_CHECKPOINT_FILES:
        (checkpoint / name).parent.mkdir(parents=True, exist_ok=True)
        (checkpoint / name).write_bytes(b"{}" if name.endswith(".json") else b"\x80\x04N.")
    assert path.exists() and rllib_checkpoint_problem(checkpoint) is None
    (checkpoint / "algorithm_state.pkl").write_bytes(b"\x80\x04\x8e" + struct.pack("<Q", 2**60) + b"x" * 10)
    assert rllib_checkpoint_problem(checkpoint) == (
        "its algorithm_state.pkl is cut short or unreadable (ValueError: expected 1152921504606846976 bytes in a "
        "bytes8, but only 10 remain)"
    )


# ---------------------------------------------------------------- a MaskablePPO save


def _declare(path, member: str, size: int) -> None:
    """Rewrite the zip directory of ``path`` to say that ``member`` unpacks to ``size``
    bytes (zipfile believes it, and stops there): a deflated bomb in a few bytes."""
    data = bytearray(path.read_bytes())
    end = data.rindex(b"PK\x05\x06")
    count, _, offset = struct.unpack("<HII", data[end + 10 : end + 20])
    for _ in range(count):
        assert data[offset : offset + 4] == b"PK\x01\x02"
        n, m, k = struct.unpack("<HHH", data[offset + 28 : offset + 34])
        if data[offset + 46 : offset + 46 + n].decode() == member:
            data[offset + 24 : offset + 28] = struct.pack("<I", size)
            path.write_bytes(bytes(data))
            return
        offset += 46 + n + m + k
    raise AssertionError(f"no {member} in {path}")


def test_a_save_that_unpacks_beyond_the_bound_is_refused_before_it_is_unpacked(tmp_path):
    """A 1 MB save of 1 GiB of zeros as its policy.pth was unpacked whole (testzip, then
    read and handed to torch: 2.3 GB); the zip directory's sizes are checked first."""
    from agents.ppo import DEFAULT_MODEL_ZIP, checkpoint_problem

    path = tmp_path / "ppo_4096.zip"
    path.write_bytes(DEFAULT_MODEL_ZIP.read_bytes())
    assert checkpoint_problem(path) is None
    _declare(path, "policy.pth", 2**31 - 1)
    fragment = "it unpacks to 2,048 MiB, more than 256 MiB (a model of this game is well under 10 MiB): not read"
    assert checkpoint_problem(path) == fragment
    pytest.importorskip("torch")
    _refused(path, fragment)
    _refused_on_resume(path, fragment)


def test_a_save_whose_data_unpacks_beyond_its_bound_is_refused_before_it_is_read(tmp_path):
    from agents.ppo import DEFAULT_MODEL_ZIP, checkpoint_problem
    from train.training.run_dir import saved_steps

    path = tmp_path / "ppo_4096.zip"
    path.write_bytes(DEFAULT_MODEL_ZIP.read_bytes())
    assert saved_steps(path) > 0
    _declare(path, "data", 20 * 2**20)
    fragment = "its data unpacks to more than 16 MiB (it is some 100 KB)"
    with pytest.raises(ValueError, match=re.escape(fragment)):
        saved_steps(path)
    assert checkpoint_problem(path) == fragment
    pytest.importorskip("torch")
    _refused(path, fragment)
    _refused_on_resume(path, fragment)


def _refused_on_resume(path, fragment: str) -> None:
    """The resume's reader of a save refuses ``path`` as the ``ppo`` agent does."""
    pytest.importorskip("sb3_contrib")
    from train.training.sb3._internals import read_model_file

    with pytest.raises(ValueError, match=re.escape(fragment)):
        read_model_file(path)


def test_a_save_whose_data_is_a_deflated_bomb_is_refused_by_every_reader(tmp_path):
    """A 600 KB save whose data deflates from 40 MiB of padded JSON: the checkpoint check
    and the ppo agent refused it, and a resume read it whole (its reader skipped their
    bounds)."""
    from agents.ppo import DEFAULT_MODEL_ZIP, checkpoint_problem

    path = tmp_path / "model.zip"
    with zipfile.ZipFile(DEFAULT_MODEL_ZIP) as src, zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            content = src.read(info)
            if info.filename == "data":
                content = content.rstrip()[:-1] + b', "padding": "' + b" " * 40 * 2**20 + b'"}'
            dst.writestr(info.filename, content)
    assert path.stat().st_size < 1_000_000
    fragment = "its data unpacks to more than 16 MiB (it is some 100 KB)"
    assert checkpoint_problem(path) == fragment
    pytest.importorskip("torch")
    _refused(path, fragment)
    _refused_on_resume(path, fragment)
