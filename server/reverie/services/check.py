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


def delivered_index(memory_dir: Path, workspace: Path) -> str | None:
    """``MEMORY.md`` as agents get it: index-hook parts stating a stale fact left out."""
    from reverie.anchors.delivery import delivered_index as live

    return live(memory_dir, workspace, datetime.now(UTC).date())


def refresh_agent_copies(memory_dir: Path) -> list[Path]:
    """The after-apply hook for the agents' copies of the index: only live facts are copied
    (checked once per workspace, and only when some agent holds a copy)."""
    from reverie.agents.refresh import refresh_copies

    checked: dict[tuple[Path, Path], str | None] = {}

    def index_for(memory: Path, workspace: Path) -> str | None:
        if (memory, workspace) not in checked:
            checked[(memory, workspace)] = delivered_index(memory, workspace)
        return checked[(memory, workspace)]

    return refresh_copies(memory_dir, index_for=index_for)
