"""Housekeeping: retention for what Reverie itself keeps, and (only on request) old transcripts.

- journals: ``journals/YYYY-MM-DD.md`` older than ``journal_retention_days`` (by the date in the
  name; other files are left alone);
- session notes: a session's notes directory whose newest file is older than
  ``notes_retention_days``;
- memory history: runs older than ``history_retention_days``, through the history part's pruner;
- agents' own transcripts: never, unless ``delete_agent_transcripts`` is on, and then only this
  workspace's session files older than ``transcript_retention_days``. Aider's history lives in
  the user's repository and holds many sessions, so it is never deleted.

A file that cannot be removed is reported in ``errors`` and counted nowhere else.
"""

from __future__ import annotations

import logging
import re
import shutil
from collections.abc import Callable, Iterable
from datetime import date as Date
from datetime import datetime, timedelta
from pathlib import Path
from typing import Protocol

from reverie.config import ProjectPaths, Settings
from reverie.sleep.models import HousekeepingReport
from reverie.transcripts.reader import holds_many_sessions

logger = logging.getLogger(__name__)

_JOURNAL_NAME = re.compile(r"^(\d{4}-\d{2}-\d{2})\.md$")

#: prunes memory history older than the given moment; returns (runs pruned, bytes reclaimed).
HistoryPruner = Callable[[datetime], tuple[int, int]]


class TranscriptRef(Protocol):
    @property
    def path(self) -> Path: ...

    @property
    def agent(self) -> str: ...


def _tree_size(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file() and not p.is_symlink())


def _newest_mtime(path: Path) -> float:
    """The newest file's mtime (the directory's own when it holds no files)."""
    times = [p.stat().st_mtime for p in path.rglob("*") if p.is_file() and not p.is_symlink()]
    return max(times) if times else path.stat().st_mtime


def _remove(path: Path, report: HousekeepingReport) -> int | None:
    """Delete a file or directory tree; the bytes freed, or ``None`` when it failed."""
    try:
        size = _tree_size(path)
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        else:
            path.unlink()
    except OSError as exc:
        report.errors.append(f"{path}: {exc.strerror or exc}")
        return None
    report.bytes_reclaimed += size
    return size


def prune_journals(
    journals_dir: Path, today: Date, keep_days: int, report: HousekeepingReport
) -> None:
    if not journals_dir.is_dir():
        return
    cutoff = today - timedelta(days=keep_days)
    for path in sorted(journals_dir.iterdir()):
        match = _JOURNAL_NAME.match(path.name)
        if not match or not path.is_file():
            continue
        try:
            day = Date.fromisoformat(match.group(1))
        except ValueError:
            continue
        if day < cutoff and _remove(path, report) is not None:
            report.journals_deleted += 1


def prune_notes(
    sessions_dir: Path, now: datetime, keep_days: int, report: HousekeepingReport
) -> None:
    if not sessions_dir.is_dir():
        return
    cutoff = (now - timedelta(days=keep_days)).timestamp()
    for session_dir in sorted(sessions_dir.iterdir()):
        if not session_dir.is_dir() or session_dir.is_symlink():
            continue
        try:
            newest = _newest_mtime(session_dir)
        except OSError:
            continue
        if newest < cutoff and _remove(session_dir, report) is not None:
            report.notes_deleted += 1


def prune_transcripts(
    refs: Iterable[TranscriptRef], now: datetime, keep_days: int, report: HousekeepingReport
) -> None:
    cutoff = (now - timedelta(days=keep_days)).timestamp()
    seen: set[Path] = set()
    for ref in refs:
        path = ref.path
        # never a file that holds other sessions too: an Aider history, Kilo's database
        # (every project's sessions in one file)
        if holds_many_sessions(ref.agent, path) or path in seen or not path.is_file():  # type: ignore[arg-type]
            continue
        seen.add(path)
        try:
            if path.stat().st_mtime >= cutoff:
                continue
        except OSError:
            continue
        if _remove(path, report) is None:
            continue
        report.transcripts_deleted += 1
        # Claude Code keeps a session's sub-agents in a directory named after the session.
        companion = path.with_suffix("")
        if ref.agent == "claude-code" and companion.is_dir() and not companion.is_symlink():
            _remove(companion, report)


def run_housekeeping(
    paths: ProjectPaths,
    settings: Settings,
    now: datetime,
    *,
    transcripts: Iterable[TranscriptRef] = (),
    prune_history: HistoryPruner | None = None,
) -> HousekeepingReport:
    """Apply every retention rule once; never raises for a single file's failure."""
    report = HousekeepingReport()
    prune_journals(paths.journals_dir, now.date(), settings.journal_retention_days, report)
    prune_notes(paths.sessions_dir, now, settings.notes_retention_days, report)
    if prune_history is not None:
        try:
            runs, freed = prune_history(now - timedelta(days=settings.history_retention_days))
        except Exception as exc:  # the history part's failure must not stop the cycle
            logger.warning("history pruning failed: %s", exc)
            report.errors.append(f"history: {exc}")
        else:
            report.history_runs_pruned += runs
            report.bytes_reclaimed += freed
    if settings.delete_agent_transcripts:
        prune_transcripts(transcripts, now, settings.transcript_retention_days, report)
    return report
