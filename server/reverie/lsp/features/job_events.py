"""Job events to the editor: ``reverie/jobEvent`` for every event, then per event type the
notification, popup or refresh it calls for (memory saved, notes updated, lock changed, an
expected failure shown once)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from reverie.events import JobEvent
from reverie.lsp.protocol import JobEventPayload, MemorySaved, Notifications, SessionNotesUpdated

if TYPE_CHECKING:
    from reverie.lsp.context import ServerContext, WorkspaceContext

logger = logging.getLogger(__name__)


def dispatch(server: ServerContext, event: JobEvent) -> None:
    """Send ``reverie/jobEvent`` for ``event``, then what its type calls for."""
    payload = dict(event.payload)
    payload.setdefault("message", event.message)
    payload["at"] = event.at.isoformat()
    if event.session_id:
        payload.setdefault("sessionId", event.session_id)
    server.notify(
        Notifications.JOB_EVENT,
        JobEventPayload(job_id=event.job_id, kind=event.job, type=event.type, payload=payload),
    )
    handler = _HANDLERS.get(event.type)
    if handler is not None:
        try:
            handler(server, event)
        except Exception:
            logger.exception("handling %s event failed", event.type)


def _on_memory_saved(server: ServerContext, event: JobEvent) -> None:
    p = event.payload
    paths = p.get("memory_paths") or p.get("files_touched") or []
    job = server.jobs.jobs.get(event.job_id or "")
    tracker = server.trackers.get(job.workspace) if job and job.workspace else None
    if job is not None and job.kind == "dream":
        source = "manual" if job.title.startswith("Manual") else "dream"
    else:
        source = str(p.get("source") or event.job)
    saved = MemorySaved(
        memory_paths=[str(x) for x in paths],
        verb=str(p.get("verb") or "saved").lower(),
        source=source,
        run_id=p.get("run_id"),
        message=event.message or "Memory saved",
    )
    if not saved.memory_paths and saved.run_id and tracker is not None:
        # the sleep cycle names only its run: the files come from the history
        server.run_task(_memory_saved_from_history(server, tracker, saved), "memory saved")
        return
    _send_memory_saved(server, saved, tracker)


async def _memory_saved_from_history(
    server: ServerContext, tracker: WorkspaceContext, saved: MemorySaved
) -> None:
    from reverie.memory.history import HistoryError, MemoryHistory

    memory_dir = tracker.memory_dir

    def files() -> list[str]:
        try:
            record = MemoryHistory(memory_dir).find(saved.run_id)
        except HistoryError:
            return []
        return [str(memory_dir / name) for name in record.files_touched]

    saved.memory_paths = await asyncio.to_thread(files)
    verb = "saved" if saved.memory_paths else saved.verb
    saved.verb = verb
    _send_memory_saved(server, saved, tracker)


def _send_memory_saved(server: ServerContext, saved: MemorySaved,
                       tracker: WorkspaceContext | None) -> None:
    server.notify(Notifications.MEMORY_SAVED, saved)
    server.show("info", f"Reverie: {saved.message.splitlines()[0]}")
    for t in [tracker] if tracker is not None else list(server.trackers.values()):
        t.memory_written([Path(x) for x in saved.memory_paths])


def _on_notes_updated(server: ServerContext, event: JobEvent) -> None:
    p = event.payload
    path = p.get("path")
    if not path or not event.session_id:
        return
    server.notify(
        Notifications.SESSION_NOTES_UPDATED,
        SessionNotesUpdated(
            session_id=event.session_id, path=str(path), edited=bool(p.get("edited"))
        ),
    )
    server.refresh_file_diagnostics(Path(path))
    job = server.jobs.jobs.get(event.job_id or "")
    tracker = server.trackers.get(job.workspace) if job and job.workspace else None
    if tracker is None:
        tracker = next((t for t in server.trackers.values()
                        if Path(path).is_relative_to(t.paths.root)), None)
    if tracker is not None:
        server.search_index.update(tracker)


def _on_start(server: ServerContext, event: JobEvent) -> None:
    if event.job in ("dream", "sleep"):
        _lock_may_have_changed(server, event)


def _on_complete(server: ServerContext, event: JobEvent) -> None:
    _on_start(server, event)


def _on_cancelled(server: ServerContext, event: JobEvent) -> None:
    _on_start(server, event)


def _lock_may_have_changed(server: ServerContext, event: JobEvent) -> None:
    job = server.jobs.jobs.get(event.job_id or "")
    tracker = server.trackers.get(job.workspace) if job and job.workspace else None
    if tracker is not None:
        tracker.lock_changed()


def _on_lock_changed(server: ServerContext, event: JobEvent) -> None:
    memory_dir = event.payload.get("memory_dir")
    for tracker in server.trackers.values():
        if memory_dir is None or Path(memory_dir) == tracker.memory_dir:
            tracker.lock_changed()


def _on_error(server: ServerContext, event: JobEvent) -> None:
    if event.job == "watch":
        server.show("warning", f"Reverie: {event.message}")
        return
    _on_start(server, event)
    # expected failures of a job (no API key, 401, rate limit): one line to the user
    server.show("error", f"Reverie: {event.message}")


def _on_skipped(server: ServerContext, event: JobEvent) -> None:
    reason = event.payload.get("reason")
    if reason in ("lock_busy", "missing_llm_client", "missing_llm", "over_budget"):
        text = event.payload.get("reason_text")
        detail = event.payload.get("detail") or event.payload.get("error")
        if reason == "over_budget" and not text:  # a notes update over the cap
            server.show("warning", f"Reverie: {detail}.")
            return
        server.show("warning", f"Reverie: the dream did not run: {text}" if text else
                    f"Reverie: {event.message}" + (f" ({detail})" if detail else ""))


_HANDLERS: dict[str, Callable[[ServerContext, JobEvent], None]] = {
    "memory_saved": _on_memory_saved,
    "notes_updated": _on_notes_updated,
    "start": _on_start,
    "complete": _on_complete,
    "cancelled": _on_cancelled,
    "lock_changed": _on_lock_changed,
    "error": _on_error,
    "skipped": _on_skipped,
}
