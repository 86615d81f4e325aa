"""The "extraction running" marker: the spec's waiter across processes.

While a ``SessionMemoryManager`` (language server or CLI) extracts a session's notes, the file
``extraction.running`` beside the notes holds its PID and start time. A compaction hook (another
process, with no socket to find) waits on it: until it is gone, for at most 15 seconds, and not
at all when it is older than 60 seconds or its process is dead (a kill leaves the file behind;
such a marker is stale, never an obstacle).
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from pathlib import Path

from reverie.fsutil import ensure_private_dir
from reverie.memory.lock import pid_alive

MARKER_NAME = "extraction.running"
WAIT_TIMEOUT_SECONDS = 15.0
STALE_AFTER_SECONDS = 60.0
POLL_SECONDS = 0.05


def marker_path(session_dir: Path) -> Path:
    return session_dir / MARKER_NAME


def write_marker(path: Path) -> None:
    """Claim the session's extraction for this process (plain write: no fsync needed, a lost
    marker only means a hook does not wait)."""
    ensure_private_dir(path.parent)
    payload = json.dumps({"pid": os.getpid(), "started_at": time.time()})
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(payload)


def clear_marker(path: Path) -> None:
    """Remove the marker if this process wrote it."""
    owner = _read(path)
    if owner is not None and owner[0] == os.getpid():
        with contextlib.suppress(FileNotFoundError):
            path.unlink()


def _read(path: Path) -> tuple[int, float] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return int(data["pid"]), float(data["started_at"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def running_since(path: Path, stale_after: float = STALE_AFTER_SECONDS) -> float | None:
    """When another process's extraction behind the marker started, or None (no marker, this
    process's own, stale or dead)."""
    owner = _read(path)
    if owner is None:
        return None
    pid, started = owner
    if pid == os.getpid() or time.time() - started > stale_after or not pid_alive(pid):
        return None
    return started


async def wait_for_marker(
    path: Path,
    timeout: float = WAIT_TIMEOUT_SECONDS,
    stale_after: float = STALE_AFTER_SECONDS,
    poll: float = POLL_SECONDS,
) -> bool:
    """Wait while another process extracts; True when nothing runs (any more), False when
    ``timeout`` ran out first."""
    import asyncio  # not at the top: the session-start hook imports this module, never waits
    deadline = time.monotonic() + max(0.0, timeout)
    while running_since(path, stale_after) is not None:
        if time.monotonic() >= deadline:
            return False
        await asyncio.sleep(poll)
    return True
