"""The one safe way to change a memory dir: ``MemoryWriter`` and the writes it opens.

Lock, staged copy, post-run repair and validation, atomic apply, history record, then the
after-apply hooks: dream, undo and the sleep cycle's REM all go through here::

    writer = MemoryWriter(after_apply=[refresh_agent_copies])     # services.wiring builds it
    async with writer.open(memory_dir, source="sleep", sessions=ids) as staged:
        write_whatever(staged.path)          # a private copy of the memory dir
        staged.usage(tokens_in, tokens_out)  # optional, shown by ``reverie history``
    write.result                             # ChangeSet + RunRecord

Raising inside the block (or being cancelled) discards the copy and rolls the lock back: the
live dir is byte-identical to before. ``LockBusy`` is raised on entry when another live process
holds the lock (after waiting up to ``wait_seconds`` for it).

The hooks (``after_apply``) run once the live dir holds a run's changes, whether the run itself
applied them or a later recovery finished an apply a killed process had begun. They are how the
layers above (agent copies of ``MEMORY.md``, a search index) follow the memory without this
package importing them; they never turn an applied run into a failed one.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from datetime import UTC, date, datetime
from pathlib import Path
from types import TracebackType

from pydantic import BaseModel, Field

from reverie.errors import ReverieError
from reverie.fsutil import ensure_private_dir
from reverie.memory.guards import refuse_destruction
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

#: what runs after an apply: called with the memory dir; its result is ignored
AfterApply = Callable[[Path], object]


#: runs that must leave pinned entries as they are (a person's own runs and undos may change them)
PIN_GUARDED = frozenset({"auto", "manual", "sleep"})


class MemoryValidationError(ReverieError):
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


class MemoryWriter:
    """Opens writes to memory dirs and recovers abandoned ones, running ``after_apply`` after
    each apply. Holds no state but its hooks: one per process is enough, and a plain
    ``MemoryWriter()`` (no hooks) is what a job gets when nobody wired it (tests, the demo)."""

    def __init__(self, after_apply: Sequence[AfterApply] = ()) -> None:
        self.after_apply = tuple(after_apply)

    def open(
        self,
        memory_dir: Path,
        *,
        source: RunSource,
        sessions: Sequence[str] = (),
        repair: bool = True,
        undoes: str | None = None,
        today: date | None = None,
        stale_seconds: float | None = None,
        wait_seconds: float = 0.0,
        poll_seconds: float = 5.0,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        consolidates_when_unchanged: bool = True,
        guard_deletions: bool = False,
    ) -> MemoryWrite:
        """A write to ``memory_dir`` (use as ``async with``). ``wait_seconds``: how long entry
        waits for a busy lock (polling every ``poll_seconds``) before ``LockBusy``.
        ``consolidates_when_unchanged``: a run that changed nothing still counts as a
        consolidation (the dream's time gate restarts); False puts the lock's time back.
        ``guard_deletions``: the run applies what a model wrote, so it is refused when it would
        delete the index or most topics (``memory.guards``)."""
        return MemoryWrite(
            memory_dir, writer=self, source=source, sessions=sessions, repair=repair,
            undoes=undoes, today=today, stale_seconds=stale_seconds,
            wait_seconds=wait_seconds, poll_seconds=poll_seconds, sleep=sleep,
            consolidates_when_unchanged=consolidates_when_unchanged,
            guard_deletions=guard_deletions,
        )

    def applied(self, memory_dir: Path) -> None:
        """Run the after-apply hooks; a failing hook is logged, never raised."""
        for hook in self.after_apply:
            try:
                hook(memory_dir)
            except Exception:
                logger.exception("after-apply hook %s failed for %s",
                                 getattr(hook, "__qualname__", hook), memory_dir)

    def finish_interrupted(self, memory_dir: Path) -> bool:
        """Finish or discard what a killed writer left (call with no live holder): True when
        an interrupted apply was completed, after which the hooks have run."""
        completed = recover(memory_dir)
        if completed:
            self.applied(memory_dir)
        return completed

    def recover(self, memory_dir: Path) -> Recovery:
        """At any start-up: if the lock's holder is dead, finish its work and restore the lock,
        and say which. Does nothing while a live process holds the lock."""
        return recover_if_abandoned(memory_dir, lambda: self.finish_interrupted(memory_dir))


class MemoryWrite:
    """Lock + staged copy + repair + atomic apply + history + hooks, as an async context
    manager. Made by ``MemoryWriter.open``."""

    def __init__(
        self,
        memory_dir: Path,
        *,
        writer: MemoryWriter,
        source: RunSource,
        sessions: Sequence[str] = (),
        repair: bool = True,
        undoes: str | None = None,
        today: date | None = None,
        stale_seconds: float | None = None,
        wait_seconds: float = 0.0,
        poll_seconds: float = 5.0,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        consolidates_when_unchanged: bool = True,
        guard_deletions: bool = False,
    ) -> None:
        self.memory_dir = memory_dir
        self.guard_deletions = guard_deletions
        self.writer = writer
        self.source = source
        self.sessions = list(sessions)
        self.repair = repair
        self.undoes = undoes
        self.today = today
        self.wait_seconds = wait_seconds
        self.poll_seconds = poll_seconds
        self._sleep = sleep
        self.consolidates_when_unchanged = consolidates_when_unchanged
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
        if not self.lock.try_acquire(lambda: self.writer.finish_interrupted(self.memory_dir)):
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
                today=self.today or datetime.now(UTC).date(), live_dir=self.memory_dir,
            )
        if self.source in PIN_GUARDED and not changes.empty:
            keep_pinned(self.memory_dir, staged.path)  # a person's pin outranks the run
        if self.guard_deletions and not changes.empty:
            refuse_destruction(self.memory_dir, staged.path)  # a model's reply is input
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
        if applied.empty and not self.consolidates_when_unchanged:
            self.lock.rollback()
        else:
            self.lock.release()
        self.result = WriteResult(run_id=self.run_id, changes=applied, record=prepared,
                                  repair=report)
        if not applied.empty:
            self.writer.applied(self.memory_dir)
        return self.result

    def abort(self) -> None:
        if self.transaction.journal_path.exists():
            # past the commit point: the run's changes must land, not vanish
            try:
                self.writer.finish_interrupted(self.memory_dir)
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
        waited = 0.0
        while True:
            try:
                return await asyncio.to_thread(self.enter)
            except LockBusy:
                if waited >= self.wait_seconds:
                    raise
            await self._sleep(self.poll_seconds)
            waited += self.poll_seconds

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
    "AfterApply",
    "LockBusy",
    "MemoryValidationError",
    "MemoryWrite",
    "MemoryWriter",
    "Recovery",
    "StagedMemory",
    "TransactionError",
    "WriteResult",
]
