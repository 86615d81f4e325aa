"""Session notes in the editor: the manager's events as jobs, appended messages fed to it, and
"Update Notes Now" (a forced extraction)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from reverie.events import JobEvent
from reverie.lsp.jobs import Job, JobResult

if TYPE_CHECKING:
    from reverie.lsp.context import ServerContext, WorkspaceContext
    from reverie.transcripts.digest import MessageDigest
    from reverie.transcripts.discovery import SessionRef
    from reverie.transcripts.model import Session

logger = logging.getLogger(__name__)


def session_memory_sink(
    server: ServerContext, tracker: WorkspaceContext | None = None
) -> Callable[[JobEvent], None]:
    """The manager's ``EventSink``: a session's events belong to its running extraction job.

    An extraction the manager starts on its own (thresholds met) becomes an adopted job when its
    chain task emits ``start``; a forced extraction's job links the chain its request started.
    Events are attributed by the task that emits them: a skip or coalesce reported for a *new*
    request while a run is going on is not that run's outcome.
    """
    loop = asyncio.get_running_loop()

    def handle(event: JobEvent, task: asyncio.Task[object] | None) -> None:
        jobs = server.jobs
        sid = event.session_id
        job = jobs.active_for("session_memory", sid) if sid else None
        if event.type in ("start", "trailing_start") and sid:
            if job is None:
                owner = tracker or _tracker_of(server, event)
                job = jobs.adopt(
                    "session_memory",
                    "Session notes",
                    task,
                    workspace=owner.folder if owner else None,
                    session_id=sid,
                )
            elif not job.adopted and task is not None and task is not job.task:
                if task not in job.linked_tasks:  # the chain a forced extraction started
                    job.linked_tasks.append(task)
        if (
            job is not None
            and task is not None
            and task is not job.task
            and task not in job.linked_tasks
        ):
            job = None
        if job is not None:
            jobs.sink_for(job)(event)
        else:
            jobs.record(event)

    def sink(event: JobEvent) -> None:
        if _on_loop(loop):
            handle(event, asyncio.current_task())
        else:  # from a worker thread: part of whatever run is going on
            loop.call_soon_threadsafe(handle, event, None)

    return sink


def _on_loop(loop: asyncio.AbstractEventLoop) -> bool:
    try:
        return asyncio.get_running_loop() is loop
    except RuntimeError:
        return False


def _tracker_of(server: ServerContext, event: JobEvent) -> WorkspaceContext | None:
    path = event.payload.get("notes_path") or event.payload.get("path")
    return server.tracker_for_path(Path(path)) if path else None


async def feed_session_memory(
    tracker: WorkspaceContext, ref: SessionRef, session: Session, appended: list[MessageDigest]
) -> None:
    """Appended messages: the manager applies the thresholds and starts an extraction if due."""
    server = tracker.server
    conversation, fresh = await server.conversations.extend(ref, session, appended)
    if fresh:
        await server.session_memory().on_conversation(session, conversation, tracker.folder)


def forced_extraction(tracker: WorkspaceContext, ref: SessionRef) -> Job:
    """``reverie.server.updateNotes``: an extraction now, whatever the thresholds say."""
    server = tracker.server
    running = server.jobs.active_for("session_memory", ref.session_id)
    if running is not None:
        return running

    async def body(job: Job) -> JobResult:
        session, conversation = await server.conversations.get(ref)
        result = await server.session_memory().extract_conversation(
            session, conversation, tracker.folder, force=True
        )
        if result.skipped_reason:
            return JobResult(
                "skipped",
                f"extraction skipped: {result.skipped_reason}",
                {"reason": result.skipped_reason},
            )
        if result.error:
            return JobResult("error", result.error, {"error": result.error})
        return JobResult(
            "complete",
            "session memory updated" if result.edited else "session memory checked",
            result.as_json(),
        )

    return server.jobs.start(
        "session_memory", "Session notes", body, workspace=tracker.folder, session_id=ref.session_id
    )
