"""Broken history refs and tampered / garbage / stale apply journals: a clear message, nothing
touched outside the memory dir, and a way forward (issue 17.11 / 17.12)."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from reverie.memory.history import REF, HistoryError, MemoryHistory
from reverie.memory.transaction import Journal, JournalOp, MemoryTransaction, TransactionError
from reverie.memory.write import MemoryWriter

TOPIC = "---\nname: Build\ndescription: how to build\ntype: project\n---\n\nBuild with make.\n"


def reverie(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "reverie", *args], capture_output=True,
                          text=True, timeout=60, env=env, check=False)


def _one_run(memory: Path) -> None:
    memory.mkdir(parents=True, exist_ok=True)
    (memory / "MEMORY.md").write_text("# Memory\n\n- [Build](build.md) - how to build\n")
    (memory / "build.md").write_text(TOPIC)

    async def run() -> None:
        async with MemoryWriter().open(memory, source="manual", repair=False) as staged:
            (staged.path / "build.md").write_text(TOPIC + "\nAlso: make test.\n")

    asyncio.run(run())


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    out = os.environ.copy()
    out["REVERIE_MEMORY_DIR"] = str(tmp_path / "memory")
    return out


def _break_ref(memory: Path) -> None:
    ref = memory / ".reverie" / "history.git" / REF.decode()
    os.chmod(ref, 0o600)
    ref.write_text("0123456789abcdef0123456789abcdef01234567\n")


def test_history_ref_to_a_missing_commit_is_a_clear_error(tmp_path: Path,
                                                          env: dict[str, str]) -> None:
    memory = tmp_path / "memory"
    _one_run(memory)
    _break_ref(memory)
    with pytest.raises(HistoryError, match="missing or damaged"):
        MemoryHistory(memory).runs()
    for args in (("history",), ("history", "--json"), ("history", "--diff"), ("undo",)):
        done = reverie(*args, "--workspace", str(tmp_path), env=env)
        assert done.returncode != 0, args
        assert "Traceback" not in done.stderr and "KeyError" not in done.stderr, done.stderr
        assert "missing or damaged" in done.stderr, done.stderr
    assert (memory / "build.md").read_text().endswith("make test.\n")


def test_a_missing_blob_is_a_clear_error_too(tmp_path: Path) -> None:
    memory = tmp_path / "memory"
    _one_run(memory)
    history = MemoryHistory(memory)
    run = history.runs()[0]
    objects = memory / ".reverie" / "history.git" / "objects"
    for path in objects.glob("??/*"):
        os.chmod(path, 0o600)
        path.unlink()
    with pytest.raises(HistoryError):
        history.diff(run.run_id)


def _write_journal(memory: Path, journal: dict[str, object]) -> Path:
    path = memory / ".reverie" / "journal.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(journal))
    return path


@pytest.mark.parametrize("bad_path", [
    "../outside.md", "/tmp/x.md", "a/../../outside.md", ".reverie/lock.guard", "sub//x.md", "",
])
def test_a_tampered_journal_never_touches_anything_outside(tmp_path: Path, bad_path: str) -> None:
    memory = tmp_path / "memory"
    _one_run(memory)
    victim = tmp_path / "outside.md"
    victim.write_text("keep me\n")
    journal = _write_journal(memory, {"txid": "abcdef012345", "ops": [
        {"path": bad_path, "action": "delete"},
        {"path": bad_path, "action": "write", "sha256": "0" * 64},
    ]})
    with pytest.raises(TransactionError) as info:
        MemoryWriter().recover(memory)
    message = str(info.value)
    assert "moved to" in message and "reverie undo" in message
    assert victim.read_text() == "keep me\n"
    assert not journal.exists(), "the bad journal is set aside so the next run can proceed"
    assert list((memory / ".reverie").glob("journal.broken-*.json"))
    assert MemoryWriter().recover(memory).anything in (False, True)  # the next start is clean


def test_a_journal_with_a_traversing_txid_is_refused(tmp_path: Path) -> None:
    memory = tmp_path / "memory"
    _one_run(memory)
    outside = tmp_path / "staged"
    outside.mkdir()
    (outside / "build.md").write_text("from outside\n")
    _write_journal(memory, {"txid": "../../../staged", "ops": [
        {"path": "build.md", "action": "write", "sha256": "0" * 64}]})
    with pytest.raises(TransactionError, match="invalid transaction"):
        MemoryWriter().recover(memory)
    assert (memory / "build.md").read_text().endswith("make test.\n")


def test_garbage_journal_says_how_to_recover_and_runs_continue(tmp_path: Path,
                                                               env: dict[str, str]) -> None:
    memory = tmp_path / "memory"
    _one_run(memory)
    _write_journal(memory, {})
    (memory / ".reverie" / "journal.json").write_bytes(b"\x00garbage{")
    first = reverie("dream", "--workspace", str(tmp_path), "--json", env=env)
    assert "Traceback" not in first.stderr
    assert "apply journal" in (first.stdout + first.stderr), first.stdout + first.stderr
    second = reverie("dream", "--workspace", str(tmp_path), "--json", env=env)
    assert "Traceback" not in second.stderr
    assert "apply journal" not in second.stdout + second.stderr
    assert second.returncode == 0, second.stderr


def test_a_stale_journal_completes_from_history_when_staging_is_gone(tmp_path: Path) -> None:
    """Staging deleted after the commit point: the prepared history commit still holds the new
    bytes (checked against the journal's hashes), so recovery completes the apply."""
    memory = tmp_path / "memory"
    _one_run(memory)
    tx = MemoryTransaction(memory)
    staging = tx.begin()
    (staging / "build.md").write_text(TOPIC + "\nStale but recoverable.\n")
    history = MemoryHistory(memory)
    from datetime import UTC, datetime

    from reverie.memory.history import RunRecord, new_run_id
    changes = tx.changes()
    parent = history.baseline(memory)
    prepared = history.prepare(parent, staging, RunRecord(run_id=new_run_id(),
                                                          at=datetime.now(UTC), source="manual"))
    import hashlib
    data = (staging / "build.md").read_bytes()
    journal = Journal(txid=tx.txid, record=prepared, ops=[
        JournalOp(path="build.md", action="write", sha256=hashlib.sha256(data).hexdigest())])
    assert changes.changed == ["build.md"]
    tx.journal_path.write_text(journal.model_dump_json())
    import shutil
    shutil.rmtree(staging)
    assert MemoryWriter().recover(memory).anything
    assert (memory / "build.md").read_text().endswith("Stale but recoverable.\n")
    assert history.runs()[0].run_id == prepared.run_id
