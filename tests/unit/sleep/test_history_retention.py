"""The sleep cycle's housekeeping prunes the memory history past ``history_retention_days``."""

from __future__ import annotations

import os
from datetime import datetime, timedelta
from pathlib import Path

from reverie.config import ProjectPaths, Settings
from reverie.memory.history import MemoryHistory
from reverie.memory.lock import ConsolidationLock
from reverie.memory.paths import LOCK_NAME
from reverie.memory.store import visible_files
from reverie.memory.undo import undo_run
from reverie.memory.write import MemoryWriter
from reverie.sleep.cycle import SleepCycle, history_pruner
from reverie.sleep.tracing import SleepTracer

# only the history counts towards bytes reclaimed in these tests
KEEP_FILES = {"journal_retention_days": 100_000, "notes_retention_days": 100_000}


def _loose_objects(history: MemoryHistory) -> dict[str, int]:
    objects = history.git_dir / "objects"
    return {f"{d.name}{f.name}": f.stat().st_size for d in objects.iterdir()
            if len(d.name) == 2 for f in d.iterdir()}


def _state(memory_dir: Path) -> dict[str, bytes]:
    return {n: (memory_dir / n).read_bytes() for n in visible_files(memory_dir)}


async def _three_runs_tonight(settings: Settings, workspace: Path) -> MemoryHistory:
    """A real offline sleep run, an undo of it and an undo of that: three runs recorded now,
    and the memory as the sleep run left it."""
    report = await SleepCycle(settings, tracer=SleepTracer(use_otel=False)).run(workspace)
    assert report.run_id is not None
    memory_dir = ProjectPaths(settings, workspace).memory_dir
    slept = _state(memory_dir)
    undone = await undo_run(MemoryWriter(), memory_dir, report.run_id)
    await undo_run(MemoryWriter(), memory_dir, undone.run_id)
    history = MemoryHistory(memory_dir)
    assert [r.source for r in history.runs()] == ["undo", "undo", "sleep"]
    assert _state(memory_dir) == slept and "MEMORY.md" in slept
    return history


def _later(days: int) -> SleepCycle:
    """A cycle whose clock says ``days`` from now (nothing new to review by then)."""
    moment = datetime.now().astimezone() + timedelta(days=days)
    settings = Settings(history_retention_days=180, **KEEP_FILES)
    return SleepCycle(settings, clock=lambda: moment, tracer=SleepTracer(use_otel=False))


async def test_cycle_prunes_runs_past_retention_and_reports_them(workspace) -> None:
    history = await _three_runs_tonight(Settings(), workspace.root)
    memory_dir = history.memory_dir
    live = _state(memory_dir)
    lock_mtime = (memory_dir / LOCK_NAME).stat().st_mtime

    soon = await _later(100).run(workspace.root)
    assert soon.housekeeping is not None and soon.housekeeping.history_runs_pruned == 0
    assert len(history.runs()) == 3
    objects = _loose_objects(history)

    report = await _later(200).run(workspace.root)

    assert report.skipped_reason is not None  # nothing to review: housekeeping still ran
    assert report.housekeeping is not None and report.housekeeping.errors == []
    assert report.housekeeping.history_runs_pruned == 3
    gone = set(objects) - set(_loose_objects(history))
    assert report.housekeeping.bytes_reclaimed == sum(objects[sha] for sha in gone) > 0
    assert history.runs() == [] and _state(memory_dir) == live
    (baseline,) = history.runs(include_edits=True)
    assert baseline.source == "edit" and baseline.parent is None
    # pruning is not a consolidation: the lock the time gate reads is as it was
    assert (memory_dir / LOCK_NAME).stat().st_mtime == lock_mtime
    assert (memory_dir / LOCK_NAME).read_text() == ""


async def test_retention_of_zero_or_less_keeps_every_run(workspace) -> None:
    history = await _three_runs_tonight(Settings(), workspace.root)
    runs = history.runs()
    for days in (0, -1):
        settings = Settings(history_retention_days=days, **KEEP_FILES)
        assert history_pruner(settings, history.memory_dir, MemoryWriter()) is None
        moment = datetime.now().astimezone() + timedelta(days=5000)
        report = await SleepCycle(settings, clock=lambda m=moment: m,
                                  tracer=SleepTracer(use_otel=False)).run(workspace.root)
        assert report.housekeeping is not None
        assert report.housekeeping.history_runs_pruned == 0
        assert report.housekeeping.bytes_reclaimed == 0
    assert history.runs() == runs


async def test_pruning_waits_for_no_one_while_a_dream_holds_the_lock(workspace) -> None:
    history = await _three_runs_tonight(Settings(), workspace.root)
    runs = history.runs()
    dream = ConsolidationLock(history.memory_dir)
    assert dream.try_acquire(lambda: False)  # a live holder (this process) with a fresh lock
    try:
        report = await _later(200).run(workspace.root)
        assert report.housekeeping is not None
        assert report.housekeeping.history_runs_pruned == 0
        assert report.housekeeping.errors == []
        assert history.runs() == runs
        assert (history.memory_dir / LOCK_NAME).read_text().strip() == str(os.getpid())
    finally:
        dream.rollback()
    report = await _later(200).run(workspace.root)
    assert report.housekeeping is not None and report.housekeeping.history_runs_pruned == 3


def test_no_pruner_before_anything_was_recorded(tmp_path: Path) -> None:
    assert history_pruner(Settings(), tmp_path / "memory", MemoryWriter()) is None
