"""Check the memory of a workspace against its working tree (``reverie check``,
``reverie.server.checkMemory``): each fact's status, reason and anchors. Read only."""

from __future__ import annotations

from datetime import UTC, date, datetime
from pathlib import Path

from reverie.anchors.memory import MemoryCheck, check_memory
from reverie.config import ProjectPaths, Settings


def check_workspace(settings: Settings, workspace: Path,
                    today: date | None = None) -> MemoryCheck:
    """Every live fact of the workspace's memory, checked now."""
    paths = ProjectPaths(settings, workspace)
    return check_memory(paths.memory_dir, paths.workspace,
                        today or datetime.now(UTC).date(), settings.fact_aging_days)
