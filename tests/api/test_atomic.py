"""Files written whole or not at all (llama_env._atomic)."""

from __future__ import annotations

import os

import pytest

from llama_env import _atomic


def test_a_write_that_fails_leaves_the_old_file_and_no_temporary_one(tmp_path):
    target = tmp_path / "f.json"
    _atomic.atomic_write_text(target, "old")

    def fail(tmp):
        tmp.write_text("half")
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        _atomic.atomic_write(target, fail)
    assert target.read_text() == "old" and [p.name for p in tmp_path.iterdir()] == ["f.json"]


def test_on_windows_a_file_held_open_for_a_moment_is_replaced_once_let_go(tmp_path, monkeypatch):
    """A virus scanner or the search indexer holds a new file open for a moment on
    Windows, where it cannot be replaced then: a checkpoint's save failed the run."""
    real, tries = os.replace, []

    def held_twice(src, dst):
        tries.append(dst)
        if len(tries) <= 2:
            raise PermissionError(13, "The process cannot access the file", str(dst))
        real(src, dst)

    monkeypatch.setattr(_atomic.os, "replace", held_twice)
    monkeypatch.setattr(_atomic, "_WINDOWS", True)
    _atomic.atomic_write_text(tmp_path / "m.json", "new")
    assert (tmp_path / "m.json").read_text() == "new" and len(tries) == 3
    monkeypatch.setattr(_atomic, "_WINDOWS", False)  # elsewhere a refusal is final at once
    tries.clear()
    with pytest.raises(PermissionError):
        _atomic.atomic_write_text(tmp_path / "n.json", "new")
    assert len(tries) == 1 and [p.name for p in tmp_path.iterdir()] == ["m.json"]


@pytest.mark.skipif(os.name == "nt", reason="POSIX permissions and symbolic links")
def test_a_file_written_again_keeps_its_permissions_and_a_link_its_target(tmp_path):
    """A record or a model saved as 0600 came back 0644 after a save, readable by others;
    a symbolic link was replaced by a file, and the file it pointed to went stale."""
    private = tmp_path / "private.json"
    private.write_text("old")
    os.chmod(private, 0o600)
    _atomic.atomic_write_text(private, "new")
    assert private.read_text() == "new" and (os.stat(private).st_mode & 0o777) == 0o600

    target = tmp_path / "models" / "real.json"
    target.parent.mkdir()
    target.write_text("old")
    link = tmp_path / "latest.json"
    link.symlink_to(target)
    _atomic.atomic_write_text(link, "new")
    assert link.is_symlink() and target.read_text() == "new"
    assert sorted(p.name for p in target.parent.iterdir()) == ["real.json"]  # no temporary file left
