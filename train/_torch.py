"""Torch's thread count, set for a while and put back, written once: the fits
(:mod:`train.fit`) run on one thread so a seed gives the same weights on any machine, and
the trainers (:mod:`train.training`) on their config's ``torch_threads``; each put back
the caller's count after, where a caller's torch went on with theirs. Torch is imported
only when the block is entered (the training extra)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

__all__ = ["torch_threads"]


@contextlib.contextmanager
def torch_threads(n: int) -> Iterator[None]:
    """Torch on ``n`` threads inside the block (a ``with`` block, or a decorator), the
    caller's thread count set back after, however the block ends."""
    import torch  # the training extra: only what runs inside needs it

    threads = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(threads)
