"""Undo: put the memory dir back to what it was before a run, recorded as a run of its own."""

from __future__ import annotations

from pathlib import Path

from reverie.memory import nofollow
from reverie.memory.history import HistoryError, MemoryHistory, RunRecord
from reverie.memory.store import visible_files
from reverie.memory.write import MemoryWriter, WriteResult


async def undo_run(writer: MemoryWriter, memory_dir: Path, run_id: str | None = None
                   ) -> WriteResult:
    """Restore the state before ``run_id`` (default: the latest run). Raises ``HistoryError``
    for an unknown id and ``LockBusy`` while another process consolidates."""
    history = MemoryHistory(memory_dir)
    target = history.find(run_id)
    write = writer.open(memory_dir, source="undo", repair=False, undoes=target.run_id)
    async with write as staged:
        history.materialize(target.parent, staged.path)
        staged.summary = f"undo of {target.run_id} ({target.source})"
    assert write.result is not None
    return write.result


def hand_edits_lost(memory_dir: Path, target: RunRecord) -> list[str]:
    """The files edited by hand after ``target`` (recorded as ``edit`` runs, or not recorded
    yet) whose edits undoing ``target`` would discard: they would go back to how they were
    before it. Blocking."""
    history = MemoryHistory(memory_dir)
    edited: set[str] = set()
    head = history.head()
    for name in set(visible_files(memory_dir)) | set(target.files_touched):
        recorded = history.file_at(head.decode(), name) if head else None
        if _live(memory_dir, name) != recorded:
            edited.add(name)  # changed since the last recorded state: a hand edit
    for run in history.runs(include_edits=True):
        if run.run_id == target.run_id:
            break
        if run.source == "edit":
            edited.update(run.files_touched)
    return sorted(name for name in edited if _live(memory_dir, name) != (
        history.file_at(target.parent, name) if target.parent else None))


def _live(memory_dir: Path, name: str) -> bytes | None:
    try:
        return nofollow.read_bytes(memory_dir, name)
    except (FileNotFoundError, nofollow.UnsafePath):
        return None


#: runs a user thinks of as "a dream": what "Undo Last Dream" undoes
DREAM_SOURCES = frozenset({"auto", "manual", "sleep"})


def undone_runs(runs: list[RunRecord]) -> set[str]:
    """Ids of the runs no longer in effect: undone by an undo that is itself in effect.

    ``runs`` newest first; an undo is always newer than its target, so one pass decides (a
    redo is an undo of an undo: it cancels that undo, so the run it had undone counts again).
    """
    cancelled: set[str] = set()
    for run in runs:
        if run.run_id not in cancelled and run.source == "undo" and run.undoes:
            cancelled.add(run.undoes)
    return cancelled


def undo_target(runs: list[RunRecord], *, redo: bool = False) -> RunRecord:
    """The run "Undo Last Dream" undoes: the latest dream or sleep run still in effect; with
    ``redo`` the latest undo still in effect (undoing it redoes its run). Raises
    ``HistoryError`` saying why when there is none."""
    cancelled = undone_runs(runs)
    source = {run.run_id: run.source for run in runs}
    for run in runs:
        if run.run_id in cancelled:
            continue
        # a redo undoes an undo of a dream (not a redo, which would undo the dream again)
        if redo and run.source == "undo" and source.get(run.undoes or "") in DREAM_SOURCES:
            return run
        if not redo and run.source in DREAM_SOURCES:
            return run
    raise HistoryError("nothing to redo: no undo in effect" if redo
                       else "nothing to undo: no dream or sleep run in effect")
