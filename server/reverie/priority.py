"""Background CPU priority for work nobody waits on, on Linux, macOS and Windows.

The language server parses transcripts and builds notes in worker processes and background
threads; the editor's requests must win the CPU whenever they want it. Each OS has its own
means, and each is used where it exists:

- Linux: the worker process runs ``SCHED_IDLE`` and niced; threads are niced one by one (Linux
  schedules threads separately).
- macOS: the worker process is niced; background threads and the worker's main thread get the
  ``utility`` quality-of-service class (``pthread_set_qos_class_self_np``), which is how macOS
  ranks background work (a per-thread ``nice`` would renice the whole process).
- Windows: the worker process gets ``IDLE_PRIORITY_CLASS``; background threads enter
  ``THREAD_MODE_BACKGROUND_BEGIN`` (lower CPU, I/O and memory priority).

Nothing here ever raises a priority, and a failure only logs at debug level: priority is a
courtesy, never a reason for a job to fail.
"""

from __future__ import annotations

import logging
import os
import sys
import threading

logger = logging.getLogger(__name__)

#: ``nice`` value of background work (0 = normal, 19 = lowest); never raises a priority
BACKGROUND_NICE = 10

# macOS <sys/qos.h>
_QOS_CLASS_UTILITY = 0x11
# Windows <processthreadsapi.h> / <winbase.h>
_THREAD_MODE_BACKGROUND_BEGIN = 0x00010000
_IDLE_PRIORITY_CLASS = 0x00000040


def lower_thread_priority() -> None:
    """Lower the calling thread's CPU priority, leaving the rest of the process as it is."""
    try:
        if sys.platform == "linux":
            tid = threading.get_native_id()
            if os.getpriority(os.PRIO_PROCESS, tid) < BACKGROUND_NICE:
                os.setpriority(os.PRIO_PROCESS, tid, BACKGROUND_NICE)
        elif sys.platform == "darwin":
            _macos_thread_qos()
        elif sys.platform == "win32":
            import ctypes

            kernel32 = ctypes.windll.kernel32
            if not kernel32.SetThreadPriority(kernel32.GetCurrentThread(),
                                              _THREAD_MODE_BACKGROUND_BEGIN):
                logger.debug("SetThreadPriority failed: %s", ctypes.GetLastError())
    except (OSError, AttributeError, ValueError) as exc:
        logger.debug("cannot lower a worker thread's priority: %s", exc)


def lower_process_priority() -> None:
    """Lower the whole calling process's CPU priority (a worker process, first thing)."""
    try:
        if sys.platform == "win32":
            import ctypes

            kernel32 = ctypes.windll.kernel32
            if not kernel32.SetPriorityClass(kernel32.GetCurrentProcess(), _IDLE_PRIORITY_CLASS):
                logger.debug("SetPriorityClass failed: %s", ctypes.GetLastError())
            return
        if sys.platform == "linux":
            try:
                os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
            except OSError as exc:
                logger.debug("cannot make the worker process SCHED_IDLE: %s", exc)
        if hasattr(os, "nice"):
            current = os.nice(0)
            if current < BACKGROUND_NICE:
                os.nice(BACKGROUND_NICE - current)
        if sys.platform == "darwin":
            _macos_thread_qos()
    except (OSError, AttributeError, ValueError) as exc:
        logger.debug("cannot lower the worker process's priority: %s", exc)


def _macos_thread_qos() -> None:
    """The calling thread's quality of service becomes ``utility`` (macOS only)."""
    if sys.platform == "darwin":
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        status = libc.pthread_set_qos_class_self_np(_QOS_CLASS_UTILITY, 0)
        if status != 0:
            logger.debug("pthread_set_qos_class_self_np failed: %s", status)
