"""``MemoryWriteSession``: the one safe way to change a memory dir.

Lock, staged copy, post-run repair and validation, atomic apply, history record: dream, undo and
the sleep cycle's REM phase all go through here::

    async with MemoryWriteSession(memory_dir, source="sleep", sessions=ids) as staged:
        write_whatever(staged.path)          # a private copy of the memory dir
        staged.usage(tokens_in, tokens_out)  # optional, shown by ``reverie history``
    session.result                           # ChangeSet + RunRecord (None when nothing changed)

Raising inside the block (or being cancelled) discards the copy and rolls the lock back: the
live dir is byte-identical to before. ``LockBusy`` is raised on entry when another live process
holds the lock.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from datetime import UTC, date, datetime
from pathlib import Path
from types import TracebackType

from pydantic import BaseModel, Field

from reverie.fsutil import ensure_private_dir
from reverie.memory.history import MemoryHistory, RunRecord, RunSource, new_run_id
from reverie.memory.lock import ConsolidationLock, LockBusy, Recovery, recover_if_abandoned
from reverie.memory.pins import keep_pinned
from reverie.memory.repair import RepairReport, new_blocking_problems, repair_memory
from reverie.memory.store import MemoryProblem, check_index
from reverie.memory.transaction import (
    ChangeSet,
    MemoryTransaction,
    TransactionError,
    check_memory_dir,
    recover,
)

logger = logging.getLogger(__name__)


#: runs that must leave pinned entries as they are (a person's own runs and undos may change them)
PIN_GUARDED = frozenset({"auto", "manual", "sleep"})


class MemoryValidationError(Exception):
    """The staged memory still breaks the index rules after repair; nothing was applied."""

    def __init__(self, problems: list[MemoryProblem]) -> None:
        self.problems = problems
        detail = "; ".join(f"{p.file.name}:{p.line + 1} {p.message}" for p in problems[:5])
        super().__init__(f"memory would be invalid after this run: {detail}")


class StagedMemory:
    """What the block of a ``MemoryWriteSession`` works on."""

    def __init__(self, path: Path, live_dir: Path, run_id: str) -> None:
        self.path = path
        self.live_dir = live_dir
        self.run_id = run_id
        self.tokens_in = 0
        self.tokens_out = 0
        self.summary = ""

    def usage(self, tokens_in: int, tokens_out: int) -> None:
        self.tokens_in += tokens_in
        self.tokens_out += tokens_out

    def to_staged(self, live_path: Path) -> Path:
        """Map a path under the live memory dir to its staged twin."""
        return self.path / live_path.relative_to(self.live_dir)


class WriteResult(BaseModel):
    run_id: str
    changes: ChangeSet = Field(default_factory=ChangeSet)
    record: RunRecord | None = None
    repair: RepairReport = Field(default_factory=RepairReport)


def recover_memory_dir_detail(memory_dir: Path) -> Recovery:
    """Finish or roll back whatever a killed run left, and say which (safe at any start-up)."""
    return recover_if_abandoned(memory_dir, lambda: recover(memory_dir))


def recover_memory_dir(memory_dir: Path) -> bool:
    """``recover_memory_dir_detail`` for callers that only need "was anything recovered"."""
    return recover_memory_dir_detail(memory_dir).anything


class MemoryWriteSession:
    """Lock + staged copy + repair + atomic apply + history, as an async context manager."""

    def __init__(
        self,
        memory_dir: Path,
        *,
        source: RunSource,
        sessions: Sequence[str] = (),
        repair: bool = True,
        undoes: str | None = None,
        today: date | None = None,
        stale_seconds: float | None = None,
    ) -> None:
        self.memory_dir = memory_dir
        self.source = source
        self.sessions = list(sessions)
        self.repair = repair
        self.undoes = undoes
        self.today = today
        self.run_id = new_run_id()
        self.lock = (
            ConsolidationLock(memory_dir) if stale_seconds is None
            else ConsolidationLock(memory_dir, stale_seconds=stale_seconds)
        )
        self.history = MemoryHistory(memory_dir)
        self.transaction = MemoryTransaction(memory_dir)
        self.result: WriteResult | None = None
        self._staged: StagedMemory | None = None
        self._before: list[MemoryProblem] = []

    # --- synchronous halves (run in a worker thread) ----------------------------------------
    def enter(self) -> StagedMemory:
        check_memory_dir(self.memory_dir)
        ensure_private_dir(self.memory_dir)
        if not self.lock.try_acquire(lambda: recover(self.memory_dir)):
            raise LockBusy(f"another process is consolidating {self.memory_dir}")
        try:
            self._before = check_index(self.memory_dir)
            staging = self.transaction.begin()
        except BaseException:
            self.lock.rollback()
            raise
        self._staged = StagedMemory(staging, self.memory_dir, self.run_id)
        return self._staged

    def commit(self) -> WriteResult:
        staged = self._staged
        assert staged is not None
        changes = self.transaction.changes()
        report = RepairReport()
        if self.repair and not changes.empty:
            report = repair_memory(
                staged.path, touched=changes.touched, sources=self.sessions,
                today=self.today or datetime.now(UTC).date(),
            )
        if self.source in PIN_GUARDED and not changes.empty:
            keep_pinned(self.memory_dir, staged.path)  # a person's pin outranks the run
        if self.repair and not changes.empty:
            problems = new_blocking_problems(staged.path, self._before)
            if problems:
                raise MemoryValidationError(problems)
        record = RunRecord(
            run_id=self.run_id, at=datetime.now(UTC), source=self.source,
            tokens_in=staged.tokens_in, tokens_out=staged.tokens_out,
            sessions=self.sessions, summary=staged.summary[:500], undoes=self.undoes,
        )
        applied, prepared = self.transaction.commit(self.history, record)
        self.lock.release()
        self.result = WriteResult(run_id=self.run_id, changes=applied, record=prepared,
                                  repair=report)
        return self.result

    def abort(self) -> None:
        if self.transaction.journal_path.exists():
            # past the commit point: the run's changes must land, not vanish
            try:
                recover(self.memory_dir)
            except Exception:
                logger.exception("apply of %s interrupted; it completes on next start",
                                 self.memory_dir)
                return
            self.lock.release()
            return
        self.transaction.abort()
        self.lock.rollback()

    # --- async context manager -------------------------------------------------------------
    async def __aenter__(self) -> StagedMemory:
        return await asyncio.to_thread(self.enter)

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool:
        if exc_type is not None:
            self.abort()
            return False
        work = asyncio.ensure_future(asyncio.to_thread(self._commit_or_abort))
        try:
            await asyncio.shield(work)
        except asyncio.CancelledError:
            await work  # an apply is never left half-way: let it finish, then honour the cancel
            raise
        return False

    def _commit_or_abort(self) -> WriteResult:
        try:
            return self.commit()
        except BaseException:
            logger.debug("memory write aborted", exc_info=True)
            self.abort()
            raise


__all__ = [
    "LockBusy",
    "MemoryValidationError",
    "MemoryWriteSession",
    "Recovery",
    "StagedMemory",
    "TransactionError",
    "WriteResult",
    "recover_memory_dir",
    "recover_memory_dir_detail",
]
