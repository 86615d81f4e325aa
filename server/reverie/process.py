"""Is a process alive, and is it still the process we think it is?

A PID alone does not identify a process: PIDs are reused, so a lock naming a PID that now
belongs to an unrelated live program would block for as long as that program runs. A process
is identified by its PID *and* its start time (psutil's ``create_time``), recorded when the
lock is taken. Liveness goes through psutil too, which works the same on Linux, macOS and
Windows, treats a zombie as dead, and never signals the process (a signal-0 probe would
*terminate* it on Windows).
"""

from __future__ import annotations

import psutil

#: start times are compared with this tolerance (seconds): platforms round them differently
START_TIME_TOLERANCE = 1.0


def start_time(pid: int) -> float | None:
    """When process ``pid`` started (seconds since the epoch), or None if it is not running."""
    if pid <= 0:
        return None
    try:
        return float(psutil.Process(pid).create_time())
    except (psutil.Error, OSError, OverflowError, ValueError):
        return None


def is_alive(pid: int | None, started_at: float | None = None) -> bool:
    """True when ``pid`` runs, is not a zombie and (when ``started_at`` is given) started at
    that time, i.e. is the same process and not a later one that reused the PID."""
    if pid is None or pid <= 0:
        return False
    try:
        process = psutil.Process(pid)
        if process.status() in (psutil.STATUS_ZOMBIE, psutil.STATUS_DEAD):
            return False
        if started_at is not None:
            return bool(abs(process.create_time() - started_at) <= START_TIME_TOLERANCE)
        return True
    except psutil.AccessDenied:
        return True  # it exists; we may not look at it
    except (psutil.Error, OSError, OverflowError, ValueError):
        return False


def current_start_time() -> float:
    """This process's start time (what a lock records beside our PID)."""
    return float(psutil.Process().create_time())
