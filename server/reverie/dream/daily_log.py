"""Daily-log mode: an append-only stream of notes consolidated into memory, then marked.

Files live at ``<project data>/logs/YYYY/MM/YYYY-MM-DD.md``. Each top-level bullet (``- ``, with
indented continuation lines) is one entry. A consolidated entry carries a trailing marker on its
first line: ``<!-- consolidated: topic.md, other.md -->`` or ``<!-- consolidated: dropped -->``.
"""

from __future__ import annotations

import re
from pathlib import Path

from pydantic import BaseModel, Field

from reverie.fsutil import atomic_write_text

_NAME = re.compile(r"^(\d{4})-(\d{2})-(\d{2})\.md$")
_MARK = re.compile(r"\s*<!--\s*consolidated:[^>]*-->\s*$")
#: entries one dream consolidates (and marks); older ones first, the rest wait for the next
DAILY_LOG_BATCH = 200


class LogEntry(BaseModel):
    """One unconsolidated entry."""

    entry_id: str  # "<YYYY-MM-DD>#<line>"
    path: Path
    line: int
    day: str
    text: str


class LogScan(BaseModel):
    entries: list[LogEntry] = Field(default_factory=list)

    @property
    def log_paths(self) -> list[Path]:
        return sorted({e.path for e in self.entries})

    @property
    def entry_ids(self) -> list[str]:
        return [e.entry_id for e in self.entries]

    def batch(self, limit: int) -> LogScan:
        """The oldest ``limit`` entries: what one dream shows the model and then marks."""
        return LogScan(entries=self.entries[:limit])


def _log_files(logs_dir: Path) -> list[Path]:
    if not logs_dir.is_dir():
        return []
    out = []
    for path in logs_dir.glob("*/*/*.md"):
        match = _NAME.match(path.name)
        if match and path.parent.name == match[2] and path.parent.parent.name == match[1]:
            out.append(path)
    return sorted(out)


def scan_unconsolidated(logs_dir: Path) -> LogScan:
    """Every entry without a consolidation marker, oldest first."""
    entries: list[LogEntry] = []
    for path in _log_files(logs_dir):
        lines = path.read_text("utf-8", errors="replace").splitlines()
        number = 0
        while number < len(lines):
            line = lines[number]
            if line.startswith(("- ", "* ")) and not _MARK.search(line):
                start = number
                body = [line[2:].strip()]
                number += 1
                while number < len(lines) and lines[number].startswith(("  ", "\t")):
                    body.append(lines[number].strip())
                    number += 1
                entries.append(LogEntry(
                    entry_id=f"{path.stem}#{start + 1}", path=path, line=start,
                    day=path.stem, text=" ".join(b for b in body if b),
                ))
                continue
            number += 1
    return LogScan(entries=entries)


def mark_consolidated(scan: LogScan, consolidated_to: list[str] | str) -> int:
    """Mark the scanned entries: the files they went into, or ``dropped``."""
    target = consolidated_to if isinstance(consolidated_to, str) else ", ".join(consolidated_to)
    marker = f" <!-- consolidated: {target or 'dropped'} -->"
    marked = 0
    for path in scan.log_paths:
        lines = path.read_text("utf-8", errors="replace").splitlines()
        for entry in scan.entries:
            if entry.path == path and entry.line < len(lines) and not _MARK.search(
                lines[entry.line]
            ):
                lines[entry.line] = lines[entry.line].rstrip() + marker
                marked += 1
        atomic_write_text(path, "\n".join(lines) + "\n")
    return marked
