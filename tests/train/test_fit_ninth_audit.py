"""What the ninth stop's audit of fit-search, distill and export found: a result saved
aside when its file cannot be written."""

from __future__ import annotations

import tempfile
from pathlib import Path

from train.training.run_dir import save_aside


def test_a_second_rescue_keeps_the_first_and_follows_no_planted_link(tmp_path, monkeypatch):
    """Both went to /tmp/llama-rl-rescue-<name>: a second rescue of the same name
    replaced the first without a word, and a link planted there by another user of the
    machine sent the write where it pointed."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    victim = tmp_path / "victim.txt"
    victim.write_text("not yours")
    (tmp_path / "llama-rl-rescue-out.npz").symlink_to(victim)

    def save(text: str):
        return lambda path: Path(path).write_text(text)

    first = save_aside(save("first"), "out.npz")
    second = save_aside(save("second"), "out.npz")
    assert first is not None and second is not None and first != second
    assert first.read_text() == "first" and second.read_text() == "second"
    assert victim.read_text() == "not yours"
    for rescued in (first, second):
        assert rescued.parent == tmp_path and not rescued.is_symlink()
        assert rescued.name.startswith("llama-rl-rescue-out-") and rescued.suffix == ".npz"


def test_a_rescue_that_fails_too_leaves_no_empty_file(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))

    def fail(path: Path) -> None:
        raise OSError(28, "No space left on device")

    assert save_aside(fail, "out.npz") is None
    assert list(tmp_path.iterdir()) == []
