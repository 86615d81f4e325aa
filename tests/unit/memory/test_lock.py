"""The PID lock: staleness, verify, rollback, dead-holder recovery, status."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from reverie.memory.lock import ConsolidationLock, PriorRecord, lock_status, pid_alive
from reverie.memory.write import MemoryWriter


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def _live_process() -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])


def test_acquire_writes_pid_and_release_keeps_fresh_time(tmp_path: Path) -> None:
    lock = ConsolidationLock(tmp_path)
    assert lock.try_acquire(lambda: False)
    assert lock.read()[0] == os.getpid()
    assert lock.prior_path.exists()
    lock.release()
    pid, mtime = lock.read()
    assert pid is None and mtime is not None and time.time() - mtime < 5
    assert not lock.prior_path.exists()


def test_rollback_restores_previous_mtime_or_removes(tmp_path: Path) -> None:
    lock = ConsolidationLock(tmp_path)
    assert lock.try_acquire(lambda: False)
    lock.rollback()
    assert not lock.path.exists()
    old = time.time() - 30 * 3600
    lock.path.write_text("")
    os.utime(lock.path, (old, old))
    again = ConsolidationLock(tmp_path)
    assert again.try_acquire(lambda: False)
    again.rollback()
    assert abs(lock.path.stat().st_mtime - old) < 1e-3


def test_fresh_lock_of_live_process_blocks_and_stale_one_is_taken(tmp_path: Path) -> None:
    proc = _live_process()
    try:
        lock = ConsolidationLock(tmp_path)
        lock.path.write_text(str(proc.pid))
        assert not lock.try_acquire(lambda: False)
        old = time.time() - 2 * 3600  # older than an hour: taken over even though alive
        os.utime(lock.path, (old, old))
        assert lock.try_acquire(lambda: False)
        assert lock.read()[0] == os.getpid()
    finally:
        proc.kill()
        proc.wait()


def test_a_second_run_in_the_same_process_is_busy(tmp_path: Path) -> None:
    first = ConsolidationLock(tmp_path)
    assert first.try_acquire(lambda: False)
    assert not ConsolidationLock(tmp_path).try_acquire(lambda: False)
    first.release()
    assert ConsolidationLock(tmp_path).try_acquire(lambda: False)


@pytest.mark.parametrize("content", ["garbage", "", "-5", "99999999999999999999"])
def test_garbage_lock_is_taken_over(tmp_path: Path, content: str) -> None:
    lock = ConsolidationLock(tmp_path)
    lock.path.write_text(content)
    assert lock.try_acquire(lambda: False)


def test_dead_holder_gets_previous_time_back(tmp_path: Path) -> None:
    """A run killed while holding the lock: next start restores the prior last-consolidated."""
    dead = _dead_pid()
    lock = ConsolidationLock(tmp_path)
    prior = time.time() - 50 * 3600
    (tmp_path / ".reverie").mkdir()
    lock.prior_path.write_text(PriorRecord(pid=dead, prior_mtime=prior,
                                           acquired_at=time.time()).model_dump_json())
    lock.path.write_text(str(dead))  # fresh mtime: the time gate would be closed for 24 h
    detail = MemoryWriter().recover(tmp_path)
    assert detail.restored_lock and not detail.completed_apply
    assert abs(lock.path.stat().st_mtime - prior) < 1e-3
    assert lock.read()[0] is None and not lock.prior_path.exists()


def test_dead_holder_without_earlier_lock_removes_it(tmp_path: Path) -> None:
    dead = _dead_pid()
    lock = ConsolidationLock(tmp_path)
    (tmp_path / ".reverie").mkdir()
    lock.prior_path.write_text(PriorRecord(pid=dead, prior_mtime=None,
                                           acquired_at=time.time()).model_dump_json())
    lock.path.write_text(str(dead))
    assert ConsolidationLock(tmp_path).try_acquire(
        lambda: MemoryWriter().finish_interrupted(tmp_path))  # recovery happens on acquire too
    assert not lock.prior_path.exists() or lock.read()[0] == os.getpid()


def test_live_holder_is_not_recovered(tmp_path: Path) -> None:
    proc = _live_process()
    try:
        lock = ConsolidationLock(tmp_path)
        (tmp_path / ".reverie").mkdir()
        lock.prior_path.write_text(PriorRecord(pid=proc.pid, prior_mtime=1.0,
                                               acquired_at=time.time()).model_dump_json())
        lock.path.write_text(str(proc.pid))
        assert not MemoryWriter().recover(tmp_path).anything
        assert lock.read()[0] == proc.pid and lock.prior_path.exists()
    finally:
        proc.kill()
        proc.wait()


def test_symlinked_lock_is_refused(tmp_path: Path) -> None:
    target = tmp_path / "elsewhere"
    target.write_text("")
    (tmp_path / "mem").mkdir()
    (tmp_path / "mem" / ".consolidate-lock").symlink_to(target)
    with pytest.raises(OSError, match="symlink"):
        ConsolidationLock(tmp_path / "mem").try_acquire(lambda: False)


def test_pid_alive() -> None:
    assert pid_alive(os.getpid())
    assert not pid_alive(_dead_pid())
    assert not pid_alive(None) and not pid_alive(0) and not pid_alive(-5)
    assert not pid_alive(2**40)


def test_a_zombie_is_dead() -> None:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    deadline = time.time() + 10
    import psutil
    while psutil.Process(proc.pid).status() != psutil.STATUS_ZOMBIE and time.time() < deadline:
        time.sleep(0.02)
    try:
        assert not pid_alive(proc.pid)  # exited, not yet reaped
    finally:
        proc.wait()


def test_a_reused_pid_does_not_block(tmp_path: Path) -> None:
    """Issue 17.16 / 19: a live unrelated process has the recorded PID but another start time
    (the PID was reused after the holder died): the lock is taken over at once."""
    proc = _live_process()
    try:
        lock = ConsolidationLock(tmp_path)
        (tmp_path / ".reverie").mkdir()
        from reverie.process import start_time
        real_start = start_time(proc.pid)
        assert real_start is not None
        lock.prior_path.write_text(PriorRecord(
            pid=proc.pid, prior_mtime=None, acquired_at=time.time(),
            start_time=real_start - 3600).model_dump_json())
        lock.path.write_text(str(proc.pid))
        assert not lock.holder_alive(proc.pid)
        status = lock_status(tmp_path, sessions_since=9, min_hours=0, min_sessions=1)
        assert status.holder_pid == proc.pid and not status.holder_alive
        assert status.next_gate == "open"
        assert ConsolidationLock(tmp_path).try_acquire(lambda: False)
        # the same record with the right start time: that process really holds it
        lock.path.write_text(str(proc.pid))
        lock.prior_path.write_text(PriorRecord(
            pid=proc.pid, prior_mtime=None, acquired_at=time.time(),
            start_time=real_start).model_dump_json())
        assert lock.holder_alive(proc.pid)
        assert not ConsolidationLock(tmp_path).try_acquire(lambda: False)
    finally:
        proc.kill()
        proc.wait()


def test_taking_the_lock_records_our_start_time_beside_the_pid(tmp_path: Path) -> None:
    from reverie.process import current_start_time
    lock = ConsolidationLock(tmp_path)
    assert lock.try_acquire(lambda: False)
    assert lock.path.read_text() == str(os.getpid())  # the protocol: the PID and nothing else
    record = PriorRecord.model_validate_json(lock.prior_path.read_text())
    assert record.pid == os.getpid() and record.start_time == current_start_time()
    lock.release()


def test_lock_status_reports_gates(tmp_path: Path) -> None:
    status = lock_status(tmp_path, sessions_since=2, min_hours=24, min_sessions=5)
    assert status.model_dump().keys() == {
        "memory_dir", "lock_path", "holder_pid", "holder_alive", "last_consolidated_at",
        "hours_since", "sessions_since", "next_gate"}
    assert status.next_gate == "session_gate" and status.last_consolidated_at is None
    lock = ConsolidationLock(tmp_path)
    lock.path.write_text("")
    assert lock_status(tmp_path, sessions_since=9, min_hours=24,
                       min_sessions=5).next_gate == "time_gate"
    old = time.time() - 30 * 3600
    os.utime(lock.path, (old, old))
    status = lock_status(tmp_path, sessions_since=9, min_hours=24, min_sessions=5)
    assert status.next_gate == "open" and 29.9 < (status.hours_since or 0) < 30.1
    assert lock_status(tmp_path, sessions_since=9, min_hours=24, min_sessions=5,
                       enabled=False).next_gate == "disabled"


def test_lock_status_follows_the_dreams_gate_order(tmp_path: Path) -> None:
    """disabled, remote mode, auto-memory off, time, scan throttle, sessions, a live holder."""
    def gate(**kw: object) -> str:
        args: dict[str, object] = {"sessions_since": 9, "min_hours": 0, "min_sessions": 5}
        args.update(kw)
        return lock_status(tmp_path, **args).next_gate  # type: ignore[arg-type]

    assert gate() == "open"
    assert gate(enabled=False, remote_mode=True) == "disabled"
    assert gate(remote_mode=True, auto_memory=False) == "remote_mode"
    assert gate(auto_memory=False, throttled=True) == "auto_memory_disabled"
    assert gate(throttled=True, sessions_since=1) == "scan_throttle"
    assert gate(sessions_since=1) == "session_gate"
    lock = ConsolidationLock(tmp_path)
    assert lock.try_acquire(lambda: False)
    try:
        assert gate() == "lock_busy"
        assert gate(min_hours=24, throttled=True) == "time_gate"  # time before the throttle
    finally:
        lock.release()
