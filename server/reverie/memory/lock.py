"""The consolidation lock: ``.consolidate-lock`` in the memory dir.

The file holds the PID of the process consolidating (nothing else: that is the protocol other
implementations read); its mtime is "last consolidated at", which the time gate reads. A lock
younger than an hour whose holder is alive blocks; anything else is taken over. "Alive" means
the same process: the holder's start time is recorded beside the PID, in
``.reverie/lock-prior.json``, and a live process with that PID but another start time (the PID
was reused) counts as dead. A lock without that record (an older Reverie, another tool) falls
back to plain liveness. Liveness and identity come from psutil (``reverie.process``).

Taking the lock writes our PID and re-reads it to verify ownership; an advisory
``flock`` on a guard file makes check-and-write atomic between processes, so two editor windows
can never both win.

Before taking the lock its previous mtime is saved in ``.reverie/lock-prior.json``. A failed or
cancelled run puts that mtime back (or removes the lock if there was none). A run killed outright
cannot do so, so the next process to look at the lock notices the dead holder and restores it
from the record: the time gate is not falsely closed for a day. A successful run empties the
file (no holder) and keeps the fresh mtime.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import stat
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from pydantic import BaseModel

from reverie import process
from reverie.errors import UserError
from reverie.fsutil import atomic_write_text, ensure_private_dir
from reverie.memory.paths import LOCK_NAME, state_dir

logger = logging.getLogger(__name__)

HOLDER_STALE_SECONDS = 3600.0


def pid_alive(pid: int | None, started_at: float | None = None) -> bool:
    """True when ``pid`` is a running (non-zombie) process (started at ``started_at``, if
    given). Never signals it."""
    return process.is_alive(pid, started_at)


def _read_regular(path: Path) -> tuple[str, float] | None:
    """(text, mtime) of a regular file, never blocking: a FIFO, device or symlink there is
    refused (``OSError``), a missing file is None."""
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise OSError(errno.ELOOP, f"{path} is a symlink; refusing to use it") from None
        raise
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise OSError(errno.EINVAL, f"{path} is not a regular file (remove it)")
        return os.read(fd, 4096).decode("utf-8", "replace"), info.st_mtime
    finally:
        os.close(fd)


def _lock_fd(fd: int) -> None:
    """An exclusive advisory lock on ``fd``, waiting for it (released when ``fd`` is closed or
    the process dies): ``flock`` on POSIX, ``LockFileEx`` / ``msvcrt.locking`` on Windows,
    through portalocker rather than two hand-kept platform branches."""
    import portalocker

    portalocker.lock(fd, portalocker.LockFlags.EXCLUSIVE)


class PriorRecord(BaseModel):
    """What the lock looked like before a run took it: enough to roll back after a kill."""

    pid: int
    prior_mtime: float | None
    acquired_at: float
    #: the holder's process start time: with the PID, its identity (None in older records)
    start_time: float | None = None


class LockBusy(UserError):
    """Another live process holds a fresh lock."""


class ConsolidationLock:
    """The PID lock of one memory dir. Create one per run attempt."""

    def __init__(self, memory_dir: Path, *, stale_seconds: float = HOLDER_STALE_SECONDS) -> None:
        self.memory_dir = memory_dir
        self.path = memory_dir / LOCK_NAME
        self.prior_path = state_dir(memory_dir) / "lock-prior.json"
        self.guard_path = state_dir(memory_dir) / "lock.guard"
        self.stale_seconds = stale_seconds
        self._held: PriorRecord | None = None

    # --- reading ---------------------------------------------------------------------------
    def read(self) -> tuple[int | None, float | None]:
        """(holder pid or None, mtime or None). Garbage content reads as no holder; a lock that
        is not a regular file (a FIFO, a device, a symlink) reads as no lock, never blocks."""
        try:
            found = _read_regular(self.path)
        except OSError as exc:
            logger.warning("ignoring the lock %s: %s", self.path, exc.strerror or exc)
            return None, None
        if found is None:
            return None, None
        raw, mtime = found[0].strip(), found[1]
        try:
            pid = int(raw) if raw else None
        except ValueError:
            logger.warning("ignoring unreadable lock content in %s", self.path)
            pid = None
        return pid, mtime

    def last_consolidated_at(self) -> datetime | None:
        _pid, mtime = self.read()
        return datetime.fromtimestamp(mtime, UTC) if mtime is not None else None

    @property
    def held(self) -> bool:
        return self._held is not None

    def holder_alive(self, pid: int | None) -> bool:
        """Whether the lock's holder ``pid`` still runs *as the process that took the lock*
        (its recorded start time must match when there is a record for that PID)."""
        if pid is None:
            return False
        record = self._peek_prior()
        started = record.start_time if record is not None and record.pid == pid else None
        return pid_alive(pid, started)

    def _peek_prior(self) -> PriorRecord | None:
        try:
            found = _read_regular(self.prior_path)
            return PriorRecord.model_validate_json(found[0]) if found else None
        except (OSError, ValueError):
            return None

    # --- guard -----------------------------------------------------------------------------
    @contextlib.contextmanager
    def guard(self) -> Iterator[None]:
        """Serialise lock bookkeeping between processes (released by the kernel on death)."""
        ensure_private_dir(state_dir(self.memory_dir))
        flags = os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
        fd = os.open(self.guard_path, flags, 0o600)
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise OSError(errno.EINVAL, f"{self.guard_path} is not a regular file (remove it)")
            _lock_fd(fd)
            yield
        finally:
            os.close(fd)  # closing the descriptor releases the lock

    # --- recovery --------------------------------------------------------------------------
    def _read_prior(self) -> PriorRecord | None:
        try:
            found = _read_regular(self.prior_path)
            return PriorRecord.model_validate_json(found[0]) if found else None
        except (OSError, ValueError):
            logger.warning("discarding unreadable %s", self.prior_path)
            self.prior_path.unlink(missing_ok=True)
            return None

    def recover_dead_holder(self) -> bool:
        """If a killed run left the lock, restore the last-consolidated time it replaced.

        Call with the guard held and after any interrupted transaction has been completed
        (a completed transaction discards the record: that run did consolidate).
        """
        record = self._read_prior()
        if record is None:
            return False
        pid, _mtime = self.read()
        if pid_alive(record.pid, record.start_time) and record.pid != os.getpid():
            return False
        if record.pid == os.getpid() and self._held is not None:
            return False
        if pid == record.pid:
            logger.info("restoring lock of dead holder %s in %s", record.pid, self.memory_dir)
            self._restore(record.prior_mtime)
        self.prior_path.unlink(missing_ok=True)
        return True

    def _restore(self, prior_mtime: float | None) -> None:
        if prior_mtime is None:
            self.path.unlink(missing_ok=True)
            return
        atomic_write_text(self.path, "")
        os.utime(self.path, (prior_mtime, prior_mtime))

    # --- acquire / release -----------------------------------------------------------------
    def _busy(self) -> bool:
        pid, mtime = self.read()
        return (
            mtime is not None
            and time.time() - mtime < self.stale_seconds
            and pid is not None
            and self.holder_alive(pid)
        )

    def try_acquire(self, recover: Callable[[], bool]) -> bool:
        """Take the lock. False when another live process holds a fresh one.

        ``recover`` (``MemoryWriter.finish_interrupted``, in practice) runs once no live holder
        is left (under the guard, before taking over): it finishes what a killed holder left and
        returns True if that run had reached its commit point, in which case its fresh
        last-consolidated time is kept.
        """
        if self.path.is_symlink():
            raise OSError(f"{self.path} is a symlink; refusing to use it as a lock")
        if self.path.exists() and not self.path.is_file():
            raise OSError(f"{self.path} is not a regular file; refusing to use it as a lock "
                          "(remove it)")
        with self.guard():
            if self._busy():
                logger.debug("lock %s held by a live process", self.path)
                return False
            if recover():
                self.forget_prior()
            self.recover_dead_holder()
            _pid, mtime = self.read()
            record = PriorRecord(pid=os.getpid(), prior_mtime=mtime, acquired_at=time.time(),
                                 start_time=process.current_start_time())
            atomic_write_text(self.prior_path, record.model_dump_json())
            atomic_write_text(self.path, str(os.getpid()))
            verify, _ = self.read()
            if verify != os.getpid():
                self.prior_path.unlink(missing_ok=True)
                return False
            self._held = record
            return True

    def release(self) -> None:
        """Success: the mtime stays "now" (last consolidated); the file no longer names a holder."""
        if self._held is None:
            return
        with self.guard():
            atomic_write_text(self.path, "")
            self.prior_path.unlink(missing_ok=True)
        self._held = None

    def rollback(self) -> None:
        """Failure or cancellation: put the previous last-consolidated time back."""
        if self._held is None:
            return
        with self.guard():
            pid, _ = self.read()
            if pid == os.getpid():
                self._restore(self._held.prior_mtime)
            self.prior_path.unlink(missing_ok=True)
        self._held = None

    def forget_prior(self) -> None:
        """An interrupted run was completed by recovery: its fresh mtime is the truth."""
        self.prior_path.unlink(missing_ok=True)


NextGate = Literal[
    "disabled", "time_gate", "session_gate", "lock_busy", "open",
]


class LockStatus(BaseModel):
    """What ``reverie lock --json`` prints."""

    memory_dir: str
    lock_path: str
    holder_pid: int | None
    holder_alive: bool
    last_consolidated_at: str | None
    hours_since: float | None
    sessions_since: int | None
    next_gate: str


def lock_status(
    memory_dir: Path,
    *,
    sessions_since: int | None,
    min_hours: float,
    min_sessions: int,
    enabled: bool = True,
    remote_mode: bool = False,
    auto_memory: bool = True,
    throttled: bool = False,
    now: float | None = None,
) -> LockStatus:
    """The lock's state and which gate an automatic dream would stop at next, in the dream's
    own order (``dream.gates``): disabled, remote mode, auto-memory off, time, the scan
    throttle (only a running server has one), sessions, a live holder. Only reads: a lock a
    dead run left is reported, never recovered, here."""
    lock = ConsolidationLock(memory_dir)
    pid, mtime = lock.read()
    alive = lock.holder_alive(pid)
    current = time.time() if now is None else now
    hours = (current - mtime) / 3600 if mtime is not None else None
    if not enabled:
        gate = "disabled"
    elif remote_mode:
        gate = "remote_mode"
    elif not auto_memory:
        gate = "auto_memory_disabled"
    elif hours is not None and hours < min_hours:
        gate = "time_gate"
    elif throttled:
        gate = "scan_throttle"
    elif sessions_since is not None and sessions_since < min_sessions:
        gate = "session_gate"
    elif alive and mtime is not None and current - mtime < HOLDER_STALE_SECONDS:
        gate = "lock_busy"
    else:
        gate = "open"
    return LockStatus(
        memory_dir=str(memory_dir),
        lock_path=str(lock.path),
        holder_pid=pid,
        holder_alive=alive,
        last_consolidated_at=(
            datetime.fromtimestamp(mtime, UTC).isoformat() if mtime is not None else None
        ),
        hours_since=round(hours, 3) if hours is not None else None,
        sessions_since=sessions_since,
        next_gate=gate,
    )


class Recovery(BaseModel):
    """What start-up recovery did: finished an interrupted apply (the run counts, its fresh
    last-consolidated time stays) and/or restored the lock a killed run had taken."""

    completed_apply: bool = False
    restored_lock: bool = False

    @property
    def anything(self) -> bool:
        return self.completed_apply or self.restored_lock


def recover_if_abandoned(memory_dir: Path, recover: Callable[[], bool]) -> Recovery:
    """On start-up: if the lock's holder is dead, finish its work and restore the lock.

    Does nothing while a live process holds it.
    """
    if not memory_dir.is_dir() or memory_dir.is_symlink():
        return Recovery()
    lock = ConsolidationLock(memory_dir)
    if not state_dir(memory_dir).is_dir():
        return Recovery()  # Reverie never wrote here: nothing to recover
    with lock.guard():
        if lock._busy():
            return Recovery()
        completed = recover()
        if completed:
            lock.forget_prior()
        restored = lock.recover_dead_holder()
        return Recovery(completed_apply=completed, restored_lock=restored and not completed)
