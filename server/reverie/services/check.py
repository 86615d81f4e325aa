"""Check the memory of a workspace against its working tree (``reverie check``,
``reverie.server.checkMemory``): each fact's status, reason and anchors. Read only."""

from __future__ import annotations

import asyncio
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Literal

from reverie.anchors.memory import MemoryCheck, check_memory
from reverie.config import ProjectPaths, Settings
from reverie.errors import UserError
from reverie.memory.write import MemoryWriter, WriteResult


def check_workspace(settings: Settings, workspace: Path,
                    today: date | None = None) -> MemoryCheck:
    """Every live fact of the workspace's memory, checked now."""
    paths = ProjectPaths(settings, workspace)
    return check_memory(paths.memory_dir, paths.workspace,
                        today or datetime.now(UTC).date(), settings.fact_aging_days,
                        cache=paths.check_cache)


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


class NoSuchFact(UserError):
    """The fact named is not (or no longer) in the memory."""


def fact_at(memory_dir: Path, topic: str, line: int) -> str:
    """The key of the fact on 0-based ``line`` of ``topic`` (any line of its bullet)."""
    from reverie.anchors.memory import read_topic_facts

    parsed = read_topic_facts(memory_dir, topic)
    for fact in parsed.facts if parsed is not None else []:
        if fact.line <= line < fact.end:
            return fact.key
    raise NoSuchFact(f"no memory fact on line {line + 1} of {topic}")


async def decide_fact(writer: MemoryWriter, settings: Settings, workspace: Path, topic: str,
                      line: int, decision: Literal["retire", "keep"]) -> WriteResult:
    """A person's decision on one fact, as a recorded, undoable run: ``retire`` moves it to
    its topic's retired section now; ``keep`` keeps it and records only the anchors that still
    hold, so the check stops reporting it stale."""
    from reverie.anchors.retire import curate_facts

    paths = ProjectPaths(settings, workspace)
    memory_dir = paths.memory_dir
    key = await asyncio.to_thread(fact_at, memory_dir, topic, line)
    today = datetime.now(UTC).date()
    # a person's edit of memory, listed in History as "retire" / "keep" (not as a dream)
    write = writer.open(memory_dir, source="curate", repair=False)
    async with write as staged:
        done = await asyncio.to_thread(
            curate_facts, staged.path, paths.workspace, today,
            retire=[key] if decision == "retire" else [],
            keep=[key] if decision == "keep" else [])
        if decision == "keep" and topic not in done.files and not (
                staged.path / topic).read_text("utf-8", errors="replace").startswith("---"):
            raise NoSuchFact(f"{topic} has no front matter to record the decision in")
        staged.summary = (f"retire a stale fact of {topic}" if decision == "retire" else
                          f"keep a fact of {topic} (re-verified)")
    assert write.result is not None
    return write.result
