"""Running test support in a child process.

``tests/`` is on ``sys.path`` only inside pytest (``pythonpath`` in ``pyproject.toml``): a child
(the fake LLM as a process, a fake agent CLI run by the server or by an editor) finds
``support`` through ``PYTHONPATH``. The package itself is never put on the path, so its
``secrets`` module cannot shadow the standard library's.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from .paths import TESTS_DIR


def pythonpath_with(*dirs: Path, env: Mapping[str, str] | None = None) -> str:
    """``PYTHONPATH`` with ``tests/`` (and ``dirs``) before what ``env`` already had."""
    base = (os.environ if env is None else env).get("PYTHONPATH")
    return os.pathsep.join([str(TESTS_DIR), *map(str, dirs), *([base] if base else [])])


def support_env(*dirs: Path, env: Mapping[str, str] | None = None) -> dict[str, str]:
    """A copy of ``env`` (default: this process's) in which ``python -m support.…`` runs."""
    merged = dict(os.environ if env is None else env)
    merged["PYTHONPATH"] = pythonpath_with(*dirs, env=merged)
    return merged
