"""The memory dir's use cases: lock status, history, undo / redo, recovery at start-up.

The CLI (``reverie lock / history / undo``) and the language server (``lockStatus``,
``history``, ``undo``, start-up) call these same functions, so the two can no longer drift.

Undo has one meaning everywhere: without a run id it undoes the latest dream or sleep run still
in effect (what a person means by "undo the last dream"; a second undo goes one dream further
back instead of undoing the first undo), and ``redo`` undoes the latest undo still in effect.
A run id undoes exactly that run, whatever it was.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from reverie.config import Settings
from reverie.dream.gates import ScanThrottle
from reverie.errors import UserError
from reverie.memory.history import FileChange, MemoryHistory, RunRecord
from reverie.memory.lock import ConsolidationLock, LockBusy, LockStatus, lock_status
from reverie.memory.transaction import TransactionError
from reverie.memory.undo import hand_edits_lost, undo_run, undo_target, undone_runs
from reverie.memory.write import MemoryWriter, WriteResult
from reverie.transcripts.discovery import sessions_touched_since
from reverie.transcripts.editor_places import EditorPlaces


class LockUnreadable(UserError):
    """The consolidation lock cannot be read (a symlink, a directory, no permission)."""


class UndoRefused(UserError):
    """An undo that cannot run now, or failed with memory unchanged; the message says why."""


# --- lock status -------------------------------------------------------------------------------


def memory_lock_status(
    settings: Settings,
    workspace: Path,
    memory_dir: Path,
    *,
    current_session_id: str | None,
    throttle: ScanThrottle | None = None,
    editor: EditorPlaces | None = None,
) -> LockStatus:
    """The lock and the gate an automatic dream would stop at next (``reverie lock --json``,
    ``lockStatus``). ``current_session_id`` is not counted (the dream never reviews the
    session that is running); ``throttle``: the running server's dream scan throttle (the
    CLI has none, so it never reports ``scan_throttle``). Blocking: call via a thread."""
    try:
        last = ConsolidationLock(memory_dir).last_consolidated_at()
    except OSError as exc:
        raise LockUnreadable(f"cannot read the lock of {memory_dir}: {exc}") from None
    try:
        count: int | None = len(sessions_touched_since(
            workspace, settings.agent_home, last or datetime.fromtimestamp(0, UTC),
            current_session_id, editor,
        ))
    except OSError:
        count = None
    return lock_status(
        memory_dir,
        sessions_since=count,
        min_hours=settings.dream_min_hours,
        min_sessions=settings.dream_min_sessions,
        enabled=settings.dream_enabled,
        remote_mode=settings.remote_mode,
        auto_memory=settings.auto_memory_enabled,
        throttled=throttle is not None
        and throttle.blocked(memory_dir, settings.dream_scan_interval_seconds),
    )


# --- history -----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RunEntry:
    """One run of the history, as the front ends show it."""

    record: RunRecord
    #: undone by an undo that is itself in effect
    undone: bool
    #: each file's bytes before and after (only when asked for)
    changes: list[FileChange] | None = None


def memory_runs(memory_dir: Path, *, run_id: str | None = None,
                with_contents: bool = False) -> list[RunEntry]:
    """The runs, newest first; with ``run_id`` only that run (``with_contents``: its files
    before and after). ``HistoryError`` (a ``UserError``) for an unknown id or an unreadable
    history. Blocking: call via a thread."""
    history = MemoryHistory(memory_dir)
    records = history.runs()
    cancelled = undone_runs(records)
    if run_id is None:
        return [RunEntry(r, r.run_id in cancelled) for r in records]
    record = history.find(run_id)
    changes = history.changes(record.run_id) if with_contents else None
    return [RunEntry(record, record.run_id in cancelled, changes)]


def memory_run_diff(memory_dir: Path, run_id: str | None) -> str:
    """The unified diff a run made (default: the latest run). Blocking."""
    return MemoryHistory(memory_dir).diff(run_id)


# --- undo / redo -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class UndoOutcome:
    memory_dir: Path
    #: the run that was undone (for a redo: the undo that was cancelled)
    target: RunRecord
    result: WriteResult
    #: the files the undo changed (relative names; empty when memory already matched)
    touched: list[str]

    @property
    def is_redo(self) -> bool:
        return self.target.source == "undo"

    @property
    def message(self) -> str:
        """One sentence for a person: what was undone or redone and which files came back."""
        if self.is_redo:
            verb, what = "Redid", f"run {self.target.undoes or self.target.run_id}"
        else:
            verb, what = "Undid", f"{self.target.source} run {self.target.run_id}"
        if self.touched:
            count = len(self.touched)
            return (f"{verb} the {what}: {count} file{'s' if count != 1 else ''} restored "
                    f"({', '.join(self.touched)}).")
        return f"Nothing changed: memory already matches the state before the {what}."


def undo_target_run(memory_dir: Path, run_id: str | None, *, redo: bool = False) -> RunRecord:
    """The run an undo would undo (see the module docstring). Blocking."""
    history = MemoryHistory(memory_dir)
    if run_id is not None:
        return history.find(run_id)
    return undo_target(history.runs(), redo=redo)


class HandEditsAtRisk(UndoRefused):
    """The undo would discard hand edits made after the run; asked again with
    ``discard_edits`` it goes ahead (the edits stay in the history)."""

    def __init__(self, target: RunRecord, files: list[str]) -> None:
        self.files = files
        super().__init__(
            f"undoing run {target.run_id} would also discard the hand edits made since to "
            f"{', '.join(files)}. They stay in the history (`reverie history` lists them as an "
            "'edit' run) and undoing this undo brings them back. To go ahead: `reverie undo "
            f"{target.run_id} --discard-edits` (in the editor: Undo Anyway)")


async def undo(writer: MemoryWriter, memory_dir: Path, run_id: str | None = None, *,
               redo: bool = False, discard_edits: bool = False) -> UndoOutcome:
    """Undo a run (recorded as a run of its own, so it can be redone). Every failure is a
    ``UserError`` with memory unchanged: an unknown id, nothing to undo, a busy lock, a memory
    dir Reverie cannot write, and (unless ``discard_edits``) hand edits made after the run
    that the undo would discard (``HandEditsAtRisk``, which says how to get them back)."""
    import asyncio

    if run_id is not None and redo:
        raise UndoRefused("give either runId or redo, not both")
    try:
        target = await asyncio.to_thread(undo_target_run, memory_dir, run_id, redo=redo)
        if not discard_edits:
            lost = await asyncio.to_thread(hand_edits_lost, memory_dir, target)
            if lost:
                raise HandEditsAtRisk(target, lost)
        result = await undo_run(writer, memory_dir, target.run_id)
    except LockBusy:
        raise UndoRefused(
            "another process is consolidating this memory dir (lock_busy); try again"
        ) from None
    except (OSError, TransactionError) as exc:
        raise UndoRefused(f"undo failed, memory unchanged: {exc}") from None
    record = result.record
    touched = record.files_touched if record is not None and not result.changes.empty else []
    return UndoOutcome(memory_dir=memory_dir, target=target, result=result, touched=touched)


# --- recovery at start-up ----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class StartRecovery:
    """A lock a dead process left, and what was done about it."""

    pid: int
    action: str


def recover_at_start(writer: MemoryWriter, memory_dir: Path) -> StartRecovery | None:
    """Finish or roll back a run a killed process left (the writer's hooks run when an
    interrupted apply is completed); None when no dead holder was found. Blocking."""
    if not memory_dir.is_dir():
        return None
    lock = ConsolidationLock(memory_dir)
    pid, _ = lock.read()
    if pid is None or lock.holder_alive(pid):
        return None
    recovery = writer.recover(memory_dir)
    with lock.guard():
        restored = lock.recover_dead_holder()
    if recovery.completed_apply:
        action = "Reverie completed its interrupted run and kept the new consolidation time"
    elif recovery.restored_lock or restored:
        action = "Reverie rolled it back and restored the previous consolidation time"
    else:
        action = "the next dream will take it over"
    return StartRecovery(pid=pid, action=action)
