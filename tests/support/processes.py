"""Running test support in a child process.

``tests/`` is on ``sys.path`` only inside pytest (``pythonpath`` in ``pyproject.toml``): a child
(the fake LLM as a process, a fake agent CLI run by the server or by an editor) finds
``support`` through ``PYTHONPATH``. The package itself is never put on the path, so its
``secrets`` module cannot shadow the standard library's.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TypeVar

from .paths import TESTS_DIR

T = TypeVar("T")


def pythonpath_with(*dirs: Path, env: Mapping[str, str] | None = None) -> str:
    """``PYTHONPATH`` with ``tests/`` (and ``dirs``) before what ``env`` already had."""
    base = (os.environ if env is None else env).get("PYTHONPATH")
    return os.pathsep.join([str(TESTS_DIR), *map(str, dirs), *([base] if base else [])])


def support_env(*dirs: Path, env: Mapping[str, str] | None = None) -> dict[str, str]:
    """A copy of ``env`` (default: this process's) in which ``python -m support.…`` runs."""
    merged = dict(os.environ if env is None else env)
    merged["PYTHONPATH"] = pythonpath_with(*dirs, env=merged)
    return merged


def children_cpu_seconds(run: Callable[[], T]) -> tuple[T, float]:
    """``run()`` (which starts child processes and waits for them) and the CPU seconds those
    children used: a speed bound on it holds on a busy machine, where the wall clock also counts
    the neighbours. Where the OS keeps no such count (Windows), the wall-clock seconds."""
    try:
        import resource
    except ImportError:  # Windows
        started = time.monotonic()
        return run(), time.monotonic() - started
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    result = run()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return result, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
