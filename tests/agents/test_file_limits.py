"""Model files are refused, naming the file, before they can make the reader allocate
more than a model of this game holds: crafted files of a few bytes declare gigabytes. The
files here are built by hand and small; nothing large is ever allocated."""

from __future__ import annotations

import io
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
