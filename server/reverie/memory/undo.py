"""Undo: put the memory dir back to what it was before a run, recorded as a run of its own."""

from __future__ import annotations

from pathlib import Path

from reverie.memory.history import MemoryHistory
from reverie.memory.session import MemoryWriteSession, WriteResult


async def undo_run(memory_dir: Path, run_id: str | None = None) -> WriteResult:
    """Restore the state before ``run_id`` (default: the latest run). Raises ``HistoryError``
    for an unknown id and ``LockBusy`` while another process consolidates."""
    history = MemoryHistory(memory_dir)
    target = history.find(run_id)
    session = MemoryWriteSession(memory_dir, source="undo", repair=False, undoes=target.run_id)
    async with session as staged:
        history.materialize(target.parent, staged.path)
        staged.summary = f"undo of {target.run_id} ({target.source})"
    assert session.result is not None
    return session.result
