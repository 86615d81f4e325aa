"""Diagnostics for Reverie's own files: ``MEMORY.md``, topic files and session notes.

The checks live in the core (``reverie.memory.store.check_index``,
``reverie.session_memory.template.check_notes``); this module positions their findings as LSP
diagnostics and adds the lock / dream-gate status on ``MEMORY.md``'s first line.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsprotocol import types
from pygls.uris import from_fs_path

if TYPE_CHECKING:
    from reverie.lsp.context import ServerContext, WorkspaceContext
    from reverie.memory.store import MemoryProblem

logger = logging.getLogger(__name__)

SOURCE = "reverie"
MEMORY_SOURCE = "reverie.memory"
LOCK_SOURCE = "reverie.lock"
NOTES_SOURCE = "reverie.notes"

_SEVERITY = {
    "error": types.DiagnosticSeverity.Error,
    "warning": types.DiagnosticSeverity.Warning,
    "info": types.DiagnosticSeverity.Information,
    "hint": types.DiagnosticSeverity.Hint,
}


def line_range(lines: Sequence[str], line: int, start: int = 0, end: int = 0) -> types.Range:
    """A range on ``line``; ``end == 0`` (and ``start == 0``) means the whole line."""
    line = max(0, min(line, max(len(lines) - 1, 0)))
    text = lines[line] if line < len(lines) else ""
    if end <= start:
        start, end = 0, len(text.rstrip("\r"))
    return types.Range(
        start=types.Position(line=line, character=start),
        end=types.Position(line=line, character=end),
    )


def memory_diagnostic(problem: MemoryProblem, lines: Sequence[str]) -> types.Diagnostic:
    return types.Diagnostic(
        range=line_range(lines, problem.line, problem.start_col, problem.end_col),
        message=problem.message,
        severity=_SEVERITY.get(problem.severity, types.DiagnosticSeverity.Warning),
        code=problem.code,
        source=SOURCE,
    )


def notes_diagnostics(text: str, config_dir: Path | None) -> list[types.Diagnostic]:
    """``check_notes`` findings (header / italic description / budgets) as diagnostics."""
    from reverie.session_memory.template import check_notes, load_template

    lines = text.splitlines()
    out = []
    for problem in check_notes(text, load_template(config_dir)):
        code = "notes-budget" if problem.severity == "warning" else "notes-structure"
        out.append(
            types.Diagnostic(
                range=line_range(lines, problem.line),
                message=problem.message,
                severity=_SEVERITY.get(problem.severity, types.DiagnosticSeverity.Warning),
                code=code,
                source=SOURCE,
            )
        )
    return out


def _memory_problems(memory_dir: Path, index_text: str | None) -> list[MemoryProblem]:
    """``check_index`` from disk; the index's own findings from the open buffer if there is one;
    and the index lines held back from agents' files until a person approves them."""
    from reverie.memory import store
    from reverie.memory.guards import held_back_problems

    index_path = memory_dir / store.INDEX_NAME
    if index_text is None:
        try:
            on_disk = index_path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            on_disk = ""
        return store.check_index(memory_dir) + held_back_problems(index_path, on_disk)
    problems = store.check_index(memory_dir)
    held = held_back_problems(index_path, index_text)
    try:
        index = store.parse_index(index_text)
        live = [
            *store._index_size_problems(index_path, index, len(index_text.encode("utf-8"))),
            *store._entry_problems(memory_dir, index_path, index),
        ]
    except AttributeError:  # the store no longer offers per-text checks: use the disk view
        return problems + held
    return [p for p in problems if p.file != index_path] + live + held


def lock_diagnostic(
    tracker: WorkspaceContext, status: Any, lines: Sequence[str]
) -> types.Diagnostic | None:
    """The lock / next-gate line on ``MEMORY.md``'s first line (information / warning / hint)."""
    rng = line_range(lines, 0)
    holder = status.holder_pid
    since = _since(status.last_consolidated_at)
    if holder is not None and status.holder_alive:
        job = tracker.server.jobs.running_with_key(tracker.dream_key())
        if holder == os.getpid() and job is not None:
            who = f"this editor's {job.title.lower()} ({job.id})"
        elif holder == os.getpid():
            who = "this Reverie server"
        else:
            who = "another Reverie process"
        return types.Diagnostic(
            range=rng,
            message=(
                f"Memory is being consolidated: lock held by PID {holder} since {since} ({who})."
            ),
            severity=types.DiagnosticSeverity.Information,
            code="lock-held",
            source=SOURCE,
        )
    if holder is not None or tracker.lock_recovery:
        pid = holder if holder is not None else tracker.lock_recovery_pid
        action = tracker.lock_recovery or (
            "the next dream takes it over and restores the previous consolidation time"
        )
        return types.Diagnostic(
            range=rng,
            message=f"A consolidation lock was left behind by PID {pid}, which is no longer "
            f"running: {action}.",
            severity=types.DiagnosticSeverity.Warning,
            code="lock-stale",
            source=SOURCE,
        )
    hint = gate_hint(tracker, status)
    if hint is None:
        return None
    return types.Diagnostic(
        range=rng,
        message=hint,
        severity=types.DiagnosticSeverity.Hint,
        code="dream-gate",
        source=SOURCE,
    )


def gate_hint(tracker: WorkspaceContext, status: Any) -> str | None:
    s = tracker.settings
    gate = status.next_gate
    if gate == "disabled":
        return "Automatic dream is off (reverie.dreamEnabled)."
    if gate == "remote_mode":
        return "Automatic dream is off in remote mode (reverie.remoteMode)."
    if gate == "auto_memory_disabled":
        return "Automatic dream is off: auto-memory is disabled (reverie.autoMemoryEnabled)."
    if gate == "scan_throttle":
        since = tracker.server.dream_throttle.seconds_since(tracker.memory_dir) or 0.0
        left = max(s.dream_scan_interval_seconds - since, 0.0) / 3600
        n, need = status.sessions_since or 0, s.dream_min_sessions
        if n < need:
            return (f"Next dream after more sessions: {n} of {need} sessions since the last one"
                    f" (sessions counted again in {_hours(left)}).")
        return f"Enough sessions for a dream; the next check is in {_hours(left)}."
    if gate == "time_gate" and status.hours_since is not None:
        left = max(s.dream_min_hours - status.hours_since, 0.0)
        return f"Next dream in {_hours(left)} (last consolidated {_hours(status.hours_since)} ago)."
    if gate == "session_gate":
        n = status.sessions_since or 0
        need = s.dream_min_sessions
        return f"Next dream after more sessions: {n} of {need} sessions since the last one."
    if gate == "lock_busy":
        return "Next dream waits for another process's consolidation to finish."
    return None


async def publish_memory_dir(server: ServerContext, tracker: WorkspaceContext) -> None:
    """Recompute and publish the diagnostics of the whole memory dir (off the event loop)."""
    from reverie.memory.store import INDEX_NAME

    memory_dir = tracker.memory_dir
    index_path = memory_dir / INDEX_NAME
    index_text = server.document_text(index_path)
    problems = await asyncio.to_thread(_memory_problems, memory_dir, index_text)
    status = await tracker.lock_status()

    by_file: dict[Path, list[MemoryProblem]] = {}
    for problem in problems:
        by_file.setdefault(Path(problem.file), []).append(problem)
    published: set[str] = set()
    index_lines: list[str] | None = None
    for path, found in by_file.items():
        lines = await _lines(server, path)
        if path == index_path:
            index_lines = lines
        uri = from_fs_path(str(path))
        if uri is None:
            continue
        server.set_diagnostics(uri, MEMORY_SOURCE, [memory_diagnostic(p, lines) for p in found])
        published.add(uri)
    for uri in tracker.memory_uris - published:
        server.set_diagnostics(uri, MEMORY_SOURCE, [])
    tracker.memory_uris = published

    index_uri = from_fs_path(str(index_path))
    if index_uri is None:
        return
    if index_lines is None:
        index_lines = await _lines(server, index_path)
    exists = index_text is not None or index_path.is_file()
    lock = lock_diagnostic(tracker, status, index_lines) if exists else None
    server.set_diagnostics(index_uri, LOCK_SOURCE, [lock] if lock else [])


def publish_notes(server: ServerContext, tracker: WorkspaceContext, path: Path) -> None:
    uri = from_fs_path(str(path))
    if uri is None:
        return
    text = server.document_text(path)
    if text is None:
        try:
            text = path.read_text(encoding="utf-8")
        except OSError:
            server.set_diagnostics(uri, NOTES_SOURCE, [])
            return
    server.set_diagnostics(uri, NOTES_SOURCE, notes_diagnostics(text, tracker.settings.config_dir))


async def _lines(server: ServerContext, path: Path) -> list[str]:
    text = server.document_text(path)
    if text is None:
        try:
            text = await asyncio.to_thread(path.read_text, encoding="utf-8", errors="replace")
        except OSError:
            text = ""
    return text.splitlines()


def _since(iso: str | None) -> str:
    if not iso:
        return "an unknown time"
    try:
        at = datetime.fromisoformat(iso)
    except ValueError:
        return iso
    return (
        at.astimezone().strftime("%Y-%m-%d %H:%M")
        + f" ({_hours((datetime.now(UTC) - at).total_seconds() / 3600)} ago)"
    )


def _hours(hours: float) -> str:
    if hours < 1:
        return f"{max(round(hours * 60), 1)} min"
    if hours < 48:
        return f"{round(hours)} h"
    return f"{round(hours / 24)} days"
