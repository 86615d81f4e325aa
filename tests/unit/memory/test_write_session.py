"""Staged writes: apply, abort, cancel, validation, history, undo, crash recovery."""

from __future__ import annotations

import asyncio
import os
import subprocess
from pathlib import Path

import pytest

from reverie.memory.history import HistoryError, MemoryHistory
from reverie.memory.lock import ConsolidationLock, LockBusy
from reverie.memory.store import visible_files
from reverie.memory.transaction import Journal, MemoryTransaction, TransactionError
from reverie.memory.undo import undo_run
from reverie.memory.write import MemoryValidationError, MemoryWriter

TOPIC = "---\nname: {n}\ndescription: about {n}\ntype: project\n---\n\n# {n}\n\n- fact\n"


def _state(memory_dir: Path) -> dict[str, bytes]:
    return {n: (memory_dir / n).read_bytes() for n in visible_files(memory_dir)}


def _seed(memory_dir: Path) -> None:
    memory_dir.mkdir(parents=True, exist_ok=True)
    (memory_dir / "MEMORY.md").write_text("# Memory\n\n- [Build](build.md) - about build\n")
    (memory_dir / "build.md").write_text(TOPIC.format(n="Build"))


async def _write(memory_dir: Path, source: str = "manual", **files: str | None) -> object:
    session = MemoryWriter().open(memory_dir, source=source, sessions=["s-1"])  # type: ignore[arg-type]
    async with session as staged:
        for name, text in files.items():
            path = staged.path / name.replace("__", ".")
            if text is None:
                path.unlink()
            else:
                path.write_text(text)
        staged.usage(10, 5)
    return session.result


async def test_apply_changes_records_history_and_fills_front_matter(tmp_path: Path) -> None:
    mem = tmp_path / "mem"
    _seed(mem)
    result = await _write(
        mem, MEMORY__md="# Memory\n\n- [Build](build.md) - about build\n- [Test](test.md) - t\n",
        test__md="# Test\n\nrun pytest\n")
    assert result.changes.added == ["test.md"] and result.changes.changed == ["MEMORY.md"]
    text = (mem / "test.md").read_text()
    assert text.startswith("---\nname: Test\n") and "sources:\n- s-1" in text
    assert "updated:" in text
    runs = MemoryHistory(mem).runs()
    assert [r.source for r in runs] == ["manual"]
    assert runs[0].added == ["test.md"] and runs[0].tokens_in == 10 and runs[0].tokens_out == 5
    assert ConsolidationLock(mem).read()[0] is None
    assert not any((mem / ".reverie" / "staging").iterdir())
    assert oct((mem / "test.md").stat().st_mode & 0o777) == "0o600"


async def test_error_inside_block_leaves_live_dir_byte_identical(tmp_path: Path) -> None:
    mem = tmp_path / "mem"
    _seed(mem)
    before = _state(mem)
    with pytest.raises(RuntimeError):
        async with MemoryWriter().open(mem, source="manual") as staged:
            (staged.path / "build.md").write_text("clobbered")
            (staged.path / "new.md").write_text("new")
            raise RuntimeError("model returned nonsense")
    assert _state(mem) == before
    assert not ConsolidationLock(mem).path.exists()  # no lock before: removed again
    assert MemoryHistory(mem).runs() == []


async def test_cancellation_leaves_live_dir_unchanged(tmp_path: Path) -> None:
    mem = tmp_path / "mem"
    _seed(mem)
    before = _state(mem)
    entered = asyncio.Event()

    async def body() -> None:
        async with MemoryWriter().open(mem, source="auto") as staged:
            (staged.path / "build.md").write_text("half-written")
            entered.set()
            await asyncio.sleep(30)

    task = asyncio.create_task(body())
    await entered.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert _state(mem) == before


async def test_invalid_result_fails_cleanly(tmp_path: Path) -> None:
    mem = tmp_path / "mem"
    _seed(mem)
    before = _state(mem)
    with pytest.raises(MemoryValidationError):
        # broken front matter in a new topic file cannot be repaired
        await _write(mem, bad__md="---\nname: [oops\n---\nx\n")
    assert _state(mem) == before


async def test_preexisting_broken_file_does_not_block_runs(tmp_path: Path) -> None:
    mem = tmp_path / "mem"
    _seed(mem)
    (mem / "broken.md").write_text("---\nname: [oops\n---\nx\n")
    result = await _write(mem, build__md=TOPIC.format(n="Build") + "- another fact\n")
    assert "build.md" in result.changes.changed
    assert (mem / "broken.md").read_text() == "---\nname: [oops\n---\nx\n"


async def test_busy_lock_raises_lock_busy(tmp_path: Path) -> None:
    mem = tmp_path / "mem"
    _seed(mem)
    holder = ConsolidationLock(mem)
    assert holder.try_acquire(lambda: False)
    with pytest.raises(LockBusy):
        await _write(mem, x__md="x")
    holder.rollback()


async def test_no_change_records_nothing(tmp_path: Path) -> None:
    mem = tmp_path / "mem"
    _seed(mem)
    result = await _write(mem)
    assert result.changes.empty and result.record is None
    assert MemoryHistory(mem).runs() == []


async def test_undo_restores_deleted_topic_and_is_recorded(tmp_path: Path) -> None:
    mem = tmp_path / "mem"
    _seed(mem)
    original = _state(mem)
    first = await _write(mem, MEMORY__md="# Memory\n", build__md=None)
    assert not (mem / "build.md").exists()
    assert first.record.removed == ["build.md"]
    undo = await undo_run(MemoryWriter(), mem)
    assert _state(mem) == original
    runs = MemoryHistory(mem).runs()
    assert [r.source for r in runs] == ["undo", "manual"]
    assert runs[0].undoes == first.run_id and runs[0].added == ["build.md"]
    assert undo.record is not None
    # undoing the undo brings the deletion back: undo is a run like any other
    await undo_run(MemoryWriter(), mem)
    assert not (mem / "build.md").exists()


async def test_undo_of_an_older_run_by_prefix_and_unknown_id(tmp_path: Path) -> None:
    mem = tmp_path / "mem"
    _seed(mem)
    original = _state(mem)
    first = await _write(mem, a__md=TOPIC.format(n="A"),
                         MEMORY__md="# Memory\n\n- [Build](build.md) - b\n- [A](a.md) - a\n")
    await _write(mem, b__md=TOPIC.format(n="B"), MEMORY__md=(
        "# Memory\n\n- [Build](build.md) - b\n- [A](a.md) - a\n- [B](b.md) - b\n"))
    await undo_run(MemoryWriter(), mem, first.run_id[:18])
    assert _state(mem) == original
    with pytest.raises(HistoryError):
        await undo_run(MemoryWriter(), mem, "nope")


async def test_hand_edits_between_runs_are_kept_in_history(tmp_path: Path) -> None:
    mem = tmp_path / "mem"
    _seed(mem)
    await _write(mem, build__md=TOPIC.format(n="Build") + "- two\n")
    (mem / "build.md").write_text(TOPIC.format(n="Build") + "- edited by hand\n")
    hand = _state(mem)
    await _write(mem, build__md=TOPIC.format(n="Build") + "- three\n")
    await undo_run(MemoryWriter(), mem)
    assert _state(mem) == hand  # "before that run" includes the hand edit
    sources = [r.source for r in MemoryHistory(mem).runs(include_edits=True)]
    assert sources == ["undo", "manual", "edit", "manual", "edit"]
    diff = MemoryHistory(mem).diff(MemoryHistory(mem).runs()[1].run_id)
    assert "+- three" in diff and "-- edited by hand" in diff


async def test_history_is_a_real_git_repository(tmp_path: Path) -> None:
    mem = tmp_path / "mem"
    _seed(mem)
    await _write(mem, build__md=TOPIC.format(n="Build") + "- two\n")
    git_dir = mem / ".reverie" / "history.git"
    out = subprocess.run(["git", "--git-dir", str(git_dir), "log", "--oneline",
                          "refs/heads/memory"], capture_output=True, text=True)
    if out.returncode != 0 and "not found" in out.stderr:
        pytest.skip("git not installed")
    assert "manual: +0 ~1 -0" in out.stdout


def test_interrupted_apply_is_completed_by_recovery(tmp_path: Path) -> None:
    """Simulate a crash right after the commit point: journal written, nothing applied."""
    mem = tmp_path / "mem"
    _seed(mem)
    session = MemoryWriter().open(mem, source="manual")
    staged = session.enter()
    (staged.path / "build.md").write_text(TOPIC.format(n="Build") + "- new\n")
    tx = session.transaction
    changes = tx.changes()
    history = MemoryHistory(mem)
    from datetime import UTC, datetime

    from reverie.memory.history import RunRecord
    from reverie.memory.transaction import JournalOp, _sha

    parent = history.baseline(mem)
    record = history.prepare(parent, staged.path, RunRecord(
        run_id="r1", at=datetime.now(UTC), source="manual"))
    ops = [JournalOp(path=n, action="write", sha256=_sha((staged.path / n).read_bytes()))
           for n in changes.changed]
    tx.journal_path.write_text(Journal(txid=tx.txid, ops=ops, record=record).model_dump_json())
    # the process "dies" here: pretend our pid is gone by rewriting the lock with a dead pid
    dead = subprocess.Popen(["true"])
    dead.wait()
    lock = ConsolidationLock(mem)
    lock.path.write_text(str(dead.pid))
    prior = lock.prior_path.read_text().replace(str(os.getpid()), str(dead.pid))
    lock.prior_path.write_text(prior)
    detail = MemoryWriter().recover(mem)
    assert detail.completed_apply and not detail.restored_lock
    assert (mem / "build.md").read_text().endswith("- new\n")
    assert MemoryHistory(mem).runs()[0].run_id == "r1"
    assert not tx.journal_path.exists() and not lock.prior_path.exists()
    assert lock.read()[0] == dead.pid  # fresh time kept: that run did consolidate


def test_symlinked_or_file_memory_dir_is_refused(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "link").symlink_to(real)
    with pytest.raises(TransactionError, match="symlink"):
        MemoryWriter().open(tmp_path / "link", source="manual").enter()
    (tmp_path / "file").write_text("x")
    with pytest.raises(TransactionError, match="not a directory"):
        MemoryWriter().open(tmp_path / "file", source="manual").enter()


def test_transaction_changes_and_abort(tmp_path: Path) -> None:
    mem = tmp_path / "mem"
    _seed(mem)
    tx = MemoryTransaction(mem)
    staged = tx.begin()
    (staged / "build.md").unlink()
    (staged / "sub").mkdir()
    (staged / "sub" / "n.md").write_text("n")
    changes = tx.changes()
    assert changes.removed == ["build.md"] and changes.added == ["sub/n.md"]
    tx.abort()
    assert not staged.exists() and (mem / "build.md").exists()


async def test_run_changes_give_each_files_bytes_before_and_after(tmp_path: Path) -> None:
    mem = tmp_path / "mem"
    _seed(mem)
    before_build = (mem / "build.md").read_bytes()
    await _write(mem, MEMORY__md="# Memory\n\n- [Build](build.md) - about build\n")  # baseline
    new_topic = "---\nname: Test\ndescription: t\ntype: project\n---\n\n# Test\n\nrun pytest\n"
    await _write(
        mem,
        MEMORY__md="# Memory\n\n- [Test](test.md) - t\n",
        test__md=new_topic,
        build__md=None,
    )
    history = MemoryHistory(mem)
    latest = history.runs()[0]
    changes = {c.path: c for c in history.changes(latest.run_id[:10])}
    assert set(changes) == {"MEMORY.md", "test.md", "build.md"}
    assert changes["build.md"].before == before_build and changes["build.md"].after is None
    assert changes["test.md"].before is None
    assert changes["test.md"].after == (mem / "test.md").read_bytes()
    assert changes["MEMORY.md"].after == (mem / "MEMORY.md").read_bytes()
    assert changes["MEMORY.md"].before != changes["MEMORY.md"].after
    with pytest.raises(HistoryError):
        history.changes("no-such-run")
