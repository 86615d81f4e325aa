"""The memory store never reads or writes through a symlink below the memory dir, even when a
directory is swapped for one while writes happen (issue 17.1 / 17.13)."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

import pytest

from hostile.swap import Swapper
from reverie.memory import nofollow
from reverie.memory.history import MemoryHistory
from reverie.memory.undo import undo_run
from reverie.memory.write import MemoryWriter, TransactionError

INDEX = "# Memory\n\n- [Build](build.md) - how to build\n"
TOPIC = "---\nname: Build\ndescription: how to build\ntype: project\n---\n\nBuild with make.\n"


def _outside_entries(outside: Path) -> list[str]:
    return sorted(str(p.relative_to(outside)) for p in outside.rglob("*"))


def _memory(tmp_path: Path) -> tuple[Path, Path]:
    memory = tmp_path / "memory"
    outside = tmp_path / "elsewhere"
    memory.mkdir()
    outside.mkdir()
    (memory / "MEMORY.md").write_text(INDEX)
    (memory / "build.md").write_text(TOPIC)
    (outside / "x.md").write_text("precious\n")
    return memory, outside


def test_plain_names_only() -> None:
    for bad in ("", "/etc/passwd", "../x", "a/../x", "a//b", "./a", "a/", "a\x00b", "a\\b"):
        with pytest.raises(nofollow.UnsafePath):
            nofollow.split_name(bad)
    assert nofollow.split_name("a/b.md") == ["a", "b.md"]


def test_symlinked_parent_and_file_are_refused(tmp_path: Path) -> None:
    memory, outside = _memory(tmp_path)
    (memory / "sub").symlink_to(outside)
    (memory / "leak.md").symlink_to(outside / "x.md")
    with pytest.raises(nofollow.UnsafePath):
        nofollow.write_bytes(memory, "sub/x.md", b"evil")
    with pytest.raises(nofollow.UnsafePath):
        nofollow.read_bytes(memory, "sub/x.md")
    with pytest.raises(nofollow.UnsafePath):
        nofollow.read_bytes(memory, "leak.md")
    with pytest.raises(nofollow.UnsafePath):
        nofollow.write_bytes(memory, "leak.md", b"evil")
    assert (outside / "x.md").read_text() == "precious\n"
    assert nofollow.unlink(memory, "leak.md")  # removes the link, never its target
    assert (outside / "x.md").read_text() == "precious\n"
    assert nofollow.kind(memory, "sub/x.md") == "symlink"


def test_fifo_in_the_memory_dir_is_not_read(tmp_path: Path) -> None:
    memory, _ = _memory(tmp_path)
    os.mkfifo(memory / "pipe.md")
    started = time.monotonic()
    with pytest.raises(nofollow.UnsafePath):
        nofollow.read_bytes(memory, "pipe.md")
    assert time.monotonic() - started < 2


def test_apply_refuses_a_live_symlinked_dir_before_the_commit_point(tmp_path: Path) -> None:
    """Issue 17.1: the staging copy has no symlink, the live dir has one: nothing lands outside,
    no journal is left, and the live dir is as before."""
    memory, outside = _memory(tmp_path)
    (memory / "sub").symlink_to(outside)

    async def run() -> None:
        async with MemoryWriter().open(memory, source="manual", repair=False) as staged:
            (staged.path / "sub").mkdir()
            (staged.path / "sub" / "x.md").write_text("overwritten\n")
            (staged.path / "sub" / "new.md").write_text("created\n")

    with pytest.raises(TransactionError, match="symlink"):
        asyncio.run(run())
    assert _outside_entries(outside) == ["x.md"]
    assert (outside / "x.md").read_text() == "precious\n"
    assert not (memory / ".reverie" / "journal.json").exists()
    assert (memory / "build.md").read_text() == TOPIC


def test_undo_restores_what_an_apply_overwrote(tmp_path: Path) -> None:
    memory, _ = _memory(tmp_path)
    (memory / "notes").mkdir()
    (memory / "notes" / "deep.md").write_text("hand written\n")

    async def run() -> None:
        async with MemoryWriter().open(memory, source="manual", repair=False) as staged:
            (staged.path / "notes" / "deep.md").write_text("rewritten\n")
            (staged.path / "build.md").unlink()

    asyncio.run(run())
    assert (memory / "notes" / "deep.md").read_text() == "rewritten\n"
    result = asyncio.run(undo_run(MemoryWriter(), memory))
    assert result.changes.touched == ["build.md", "notes/deep.md"]
    assert (memory / "notes" / "deep.md").read_text() == "hand written\n"
    assert (memory / "build.md").read_text() == TOPIC
    assert [r.source for r in MemoryHistory(memory).runs()] == ["undo", "manual"]


def test_concurrent_symlink_swap_never_redirects_a_write(tmp_path: Path) -> None:
    """Issue 17.13: a thread swaps a directory for a symlink while writes happen; 0 land
    outside (the old code let 22 of 815 through)."""
    memory, outside = _memory(tmp_path)
    (memory / "sub").mkdir()
    written = refused = 0
    with Swapper(memory / "sub", outside) as swapper:
        deadline = time.monotonic() + 1.5
        i = 0
        while time.monotonic() < deadline or i < 800:
            i += 1
            try:
                nofollow.write_bytes(memory, f"sub/w{i}.md", b"data\n")
                written += 1
            except (nofollow.UnsafePath, FileNotFoundError):
                refused += 1
    assert swapper.swaps > 50, swapper.swaps
    assert written > 0 and refused > 0, (written, refused)
    assert _outside_entries(outside) == ["x.md"], "a write followed the swapped-in symlink"
    assert (outside / "x.md").read_text() == "precious\n"


def test_the_swap_does_redirect_a_plain_path_write(tmp_path: Path) -> None:
    """Control for the test above: the same swapper makes a write by path land outside, so a
    pass there is the store's doing, not a swapper that never wins the race."""
    from reverie.fsutil import atomic_write_bytes

    memory, outside = _memory(tmp_path)
    (memory / "sub").mkdir()
    with Swapper(memory / "sub", outside):
        for i in range(5000):
            try:
                atomic_write_bytes(memory / "sub" / f"w{i}.md", b"data\n")
            except OSError:
                continue
            if len(_outside_entries(outside)) > 1:
                break
    assert len(_outside_entries(outside)) > 1


def test_the_lstat_fallback_refuses_the_same(tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """Where ``dir_fd`` is missing (Windows) the same symlinks are refused by an ``lstat`` walk
    (not race-free there; docs/security.md), and plain writes still work."""
    monkeypatch.setattr(nofollow, "HAS_DIR_FD", False)
    memory, outside = _memory(tmp_path)
    (memory / "sub").symlink_to(outside)
    (memory / "leak.md").symlink_to(outside / "x.md")
    for name in ("sub/x.md", "leak.md"):
        with pytest.raises(nofollow.UnsafePath):
            nofollow.write_bytes(memory, name, b"evil")
        with pytest.raises(nofollow.UnsafePath):
            nofollow.read_bytes(memory, name)
    nofollow.write_bytes(memory, "deep/er/new.md", b"ok\n")
    assert nofollow.read_bytes(memory, "deep/er/new.md") == b"ok\n"
    assert nofollow.unlink(memory, "deep/er/new.md")
    assert not (memory / "deep").exists()  # emptied parents go too, as with dir_fd
    assert (outside / "x.md").read_text() == "precious\n"
