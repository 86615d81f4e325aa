"""History retention: old runs go, the memory and every kept run (ids, diffs, undo) stay."""

from __future__ import annotations

import os
import secrets
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from reverie.memory.history import HistoryError, MemoryHistory, RunRecord, RunSource, new_run_id
from reverie.memory.lock import ConsolidationLock
from reverie.memory.paths import state_dir
from reverie.memory.store import visible_files
from reverie.memory.transaction import MemoryTransaction
from reverie.memory.undo import undo_run
from reverie.memory.write import MemoryWriter

NOW = datetime.now(UTC).replace(microsecond=0)
EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
TOPIC = "---\nname: {n}\ndescription: about {n}\ntype: project\n---\n\n# {n}\n\n- {fact}\n"


def _state(memory_dir: Path) -> dict[str, bytes]:
    return {n: (memory_dir / n).read_bytes() for n in visible_files(memory_dir)}


def _run(memory_dir: Path, days_ago: float, source: RunSource = "auto",
         **files: str | None) -> tuple[RunRecord, dict[str, bytes]]:
    """Apply one run through the real lock + transaction + history, dated ``days_ago``.

    Returns the applied record and the live files as they were just before it."""
    memory_dir.mkdir(parents=True, exist_ok=True)
    before = _state(memory_dir)
    lock = ConsolidationLock(memory_dir)
    assert lock.try_acquire(lambda: False)
    try:
        tx = MemoryTransaction(memory_dir)
        staging = tx.begin()
        for name, text in files.items():
            target = staging / name.replace("__", ".")
            if text is None:
                target.unlink()
            else:
                target.write_text(text)
        at = NOW - timedelta(days=days_ago)
        record = RunRecord(run_id=new_run_id(at), at=at, source=source, sessions=["s-1"],
                           summary=f"run {days_ago} days ago")
        _changes, applied = tx.commit(MemoryHistory(memory_dir), record)
    finally:
        lock.release()
    assert applied is not None
    return applied, before


def _loose_objects(history: MemoryHistory) -> dict[str, int]:
    objects = history.git_dir / "objects"
    return {f"{d.name}{f.name}": f.stat().st_size for d in objects.iterdir()
            if len(d.name) == 2 for f in d.iterdir()}


def _public(record: RunRecord) -> dict[str, object]:
    return record.model_dump(exclude={"commit", "parent"})


def _fsck(history: MemoryHistory) -> None:
    """Real git agrees the rewritten history is complete and well formed."""
    subprocess.run(["git", "--git-dir", str(history.git_dir), "fsck", "--strict", "--no-dangling"],
                   check=True, capture_output=True, timeout=30)


def _four_runs(memory_dir: Path) -> list[tuple[RunRecord, dict[str, bytes]]]:
    big = secrets.token_hex(4096)  # a blob only the oldest run has: freed once it is dropped
    return [
        _run(memory_dir, 400, MEMORY__md="# Memory\n", a__md=TOPIC.format(n="A", fact="v1"),
             b__md=TOPIC.format(n="B", fact=big)),
        _run(memory_dir, 300, a__md=TOPIC.format(n="A", fact="v2"), b__md=None),
        _run(memory_dir, 100, "sleep", a__md=TOPIC.format(n="A", fact="v3"),
             c__md=TOPIC.format(n="C", fact="one")),
        _run(memory_dir, 10, "manual", c__md=TOPIC.format(n="C", fact="two")),
    ]


async def test_prune_drops_old_runs_and_keeps_the_rest_undoable(tmp_path: Path) -> None:
    memory_dir = tmp_path / "memory"
    runs = _four_runs(memory_dir)
    history = MemoryHistory(memory_dir)
    kept_before = [_public(r) for r in history.runs()[:2]]
    diffs_before = {r.run_id: history.diff(r.run_id) for r in history.runs()[:2]}
    live = _state(memory_dir)
    objects_before = _loose_objects(history)

    removed, freed = history.prune(NOW - timedelta(days=180))

    assert removed == 2
    objects_after = _loose_objects(history)
    gone = set(objects_before) - set(objects_after)
    assert gone and freed == sum(objects_before[sha] for sha in gone)
    assert freed > 4096  # the big blob only the dropped runs referenced
    assert _state(memory_dir) == live
    assert [_public(r) for r in history.runs()] == kept_before
    assert [r.run_id for r in history.runs()] == [runs[3][0].run_id, runs[2][0].run_id]
    assert {r.run_id: history.diff(r.run_id) for r in history.runs()} == diffs_before
    for old, _ in runs[:2]:
        with pytest.raises(HistoryError):
            history.find(old.run_id)
    *_, baseline = history.runs(include_edits=True)
    assert baseline.source == "edit" and baseline.parent is None
    assert history.runs()[-1].parent == baseline.commit
    _fsck(history)

    # undoing the oldest kept run restores exactly the memory before it, bytes and all
    oldest_kept, before_it = runs[2]
    result = await undo_run(MemoryWriter(), memory_dir, oldest_kept.run_id)
    assert result.record is not None and result.record.undoes == oldest_kept.run_id
    assert _state(memory_dir) == before_it
    assert history.runs()[0].source == "undo"


def test_pruning_again_changes_nothing(tmp_path: Path) -> None:
    memory_dir = tmp_path / "memory"
    _four_runs(memory_dir)
    history = MemoryHistory(memory_dir)
    cutoff = NOW - timedelta(days=180)
    assert history.prune(cutoff)[0] == 2
    head = history.head()
    assert history.prune(cutoff) == (0, 0)
    assert history.head() == head
    # a later cutoff drops the next run on top of the existing baseline
    assert history.prune(NOW - timedelta(days=50))[0] == 1
    assert len(history.runs(include_edits=True)) == 2
    _fsck(history)


def test_nothing_older_than_the_cutoff_keeps_history_as_is(tmp_path: Path) -> None:
    memory_dir = tmp_path / "memory"
    _four_runs(memory_dir)
    history = MemoryHistory(memory_dir)
    head, objects = history.head(), _loose_objects(history)
    removed, freed = history.prune(NOW - timedelta(days=1000))
    # only the empty tree the first run snapshotted of the empty dir was garbage
    assert removed == 0 and history.head() == head
    assert set(objects) - set(_loose_objects(history)) == {EMPTY_TREE}
    assert freed == objects[EMPTY_TREE]
    assert history.prune(NOW - timedelta(days=1000)) == (0, 0)
    assert MemoryHistory(tmp_path / "never-written").prune(NOW) == (0, 0)


async def test_all_runs_old_leaves_the_memory_as_a_baseline(tmp_path: Path) -> None:
    memory_dir = tmp_path / "memory"
    _four_runs(memory_dir)
    history = MemoryHistory(memory_dir)
    live = _state(memory_dir)
    assert history.prune(NOW)[0] == 4
    assert history.runs() == [] and _state(memory_dir) == live
    (baseline,) = history.runs(include_edits=True)
    assert history.file_at(baseline.commit, "c.md") == live["c.md"]

    # the next real write starts from the baseline without recording a hand edit, and undoes
    async with MemoryWriter().open(memory_dir, source="manual", repair=False) as staged:
        (staged.path / "c.md").write_text(TOPIC.format(n="C", fact="three"))
    (run,) = history.runs()
    assert run.parent == baseline.commit
    await undo_run(MemoryWriter(), memory_dir, run.run_id)
    assert _state(memory_dir) == live


def test_objects_a_killed_run_left_are_reclaimed(tmp_path: Path) -> None:
    memory_dir = tmp_path / "memory"
    _four_runs(memory_dir)
    history = MemoryHistory(memory_dir)
    orphan = tmp_path / "orphan"
    orphan.mkdir()
    (orphan / "x.md").write_text(secrets.token_hex(2048))
    history.snapshot_tree(orphan)  # written, never published: what a kill before the ref leaves
    head = history.head()
    removed, freed = history.prune(NOW - timedelta(days=1000))
    assert removed == 0 and freed > 2048 and history.head() == head
    _fsck(history)


def test_refuses_while_an_interrupted_apply_is_pending(tmp_path: Path) -> None:
    memory_dir = tmp_path / "memory"
    _four_runs(memory_dir)
    (state_dir(memory_dir) / "journal.json").write_text("{}")
    history = MemoryHistory(memory_dir)
    head = history.head()
    with pytest.raises(HistoryError, match="pending"):
        history.prune(NOW)
    assert history.head() == head


_PRUNE_CHILD = """
import sys
from datetime import datetime
from pathlib import Path
from reverie.memory.history import MemoryHistory
from reverie.memory.lock import ConsolidationLock
from reverie.memory.write import MemoryWriter
memory_dir = Path(sys.argv[1])
history = MemoryHistory(memory_dir)
cutoff = datetime.fromisoformat(sys.argv[2])
print("ready", flush=True)
sys.stdin.readline()
lock = ConsolidationLock(memory_dir)  # as housekeeping does: recovery sweeps what a kill left
assert lock.try_acquire(lambda: MemoryWriter().finish_interrupted(memory_dir))
history.prune(cutoff)
lock.rollback()
print("done", flush=True)
"""


@pytest.mark.slow  # nine real processes killed mid-prune
def test_a_kill_at_any_moment_leaves_a_valid_history(tmp_path: Path) -> None:
    memory_dir = tmp_path / "memory"
    runs = [_run(memory_dir, 400 - i, **{f"t{i % 7}__md": TOPIC.format(n=str(i), fact=str(i))})
            for i in range(40)]
    cutoff = NOW - timedelta(days=370)
    history = MemoryHistory(memory_dir)
    live = _state(memory_dir)
    kept_ids = [r.run_id for r, _ in reversed(runs) if r.at >= cutoff]
    delays = [0.0, 0.003, 0.006, 0.01, 0.015, 0.02, 0.03, 0.05, 0.08]
    finished = 0
    for delay in delays:
        child = subprocess.Popen([sys.executable, "-c", _PRUNE_CHILD, str(memory_dir),
                                  cutoff.isoformat()], stdin=subprocess.PIPE,
                                 stdout=subprocess.PIPE, text=True, env=os.environ.copy())
        assert child.stdout is not None and child.stdin is not None
        assert child.stdout.readline().strip() == "ready"
        child.stdin.write("go\n")
        child.stdin.flush()
        time.sleep(delay)
        os.kill(child.pid, signal.SIGKILL)
        child.wait(timeout=10)
        finished += child.stdout.read().strip() == "done"
        # whatever the moment, the history is whole and the memory untouched
        assert [r.run_id for r in history.runs()][: len(kept_ids)] == kept_ids
        assert len(history.runs()) in (len(kept_ids), len(runs))
        assert _state(memory_dir) == live
        _fsck(history)
    assert finished < len(delays), "no kill landed before the prune finished"
    lock = ConsolidationLock(memory_dir)
    assert lock.try_acquire(lambda: MemoryWriter().finish_interrupted(memory_dir))
    assert history.prune(cutoff)[0] in (0, len(runs) - len(kept_ids))
    lock.rollback()
    assert [r.run_id for r in history.runs()] == kept_ids
    _fsck(history)
