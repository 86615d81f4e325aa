"""Thin adapters between a workspace folder and the core jobs: session memory and dream. Each
core job reports through an ``EventSink`` that the job registry tags. They depend on the narrow
contexts of ``reverie.lsp.context``, never on the server or tracker classes.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from reverie.dream.gates import ScanThrottle
from reverie.events import JobEvent
from reverie.lsp.jobs import Job, JobResult

if TYPE_CHECKING:
    from reverie.lsp.context import ServerContext, WorkspaceContext
    from reverie.transcripts.digest import MessageDigest
    from reverie.transcripts.discovery import SessionRef
    from reverie.transcripts.model import Session

logger = logging.getLogger(__name__)

# --- session memory ------------------------------------------------------------------------------


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


# --- dream ---------------------------------------------------------------------------------------


async def auto_dream_if_due(tracker: WorkspaceContext) -> Job | None:
    """The dream gates, cheapest first; a dream job starts only when every gate passes.

    Settings gates and the lock file's mtime (one ``stat``) run on the loop; the session scan,
    at most once per ``dreamScanIntervalSeconds`` per memory dir, runs in a worker thread.
    """
    from reverie.dream.gates import cheap_gate, time_gate
    from reverie.dream.skips import describe_skip
    from reverie.memory.lock import ConsolidationLock

    server = tracker.server
    s = tracker.settings
    if cheap_gate(s, manual=False, is_subagent=False) is not None:
        return None
    if server.jobs.running_with_key(tracker.dream_key()) is not None:
        return None
    memory_dir = tracker.memory_dir
    from reverie.services.review import has_pending_review

    if await asyncio.to_thread(has_pending_review, memory_dir):
        return None  # a staged change set waits for a person: no second one on top of it
    last = ConsolidationLock(memory_dir).last_consolidated_at()
    hours = (datetime.now(UTC) - last).total_seconds() / 3600 if last else None
    if not time_gate(hours, s):
        return None
    throttle = server.dream_throttle
    if throttle.blocked(memory_dir, s.dream_scan_interval_seconds):
        return None
    throttle.mark(memory_dir)
    status = await tracker.lock_status()
    sessions = status.sessions_since or 0
    if sessions < s.dream_min_sessions:
        server.on_job_event(
            JobEvent(
                job="dream",
                type="skipped",
                message=f"dream skipped: session_gate ({sessions} of {s.dream_min_sessions})",
                payload={
                    "reason": "session_gate",
                    "reason_text": describe_skip(
                        "session_gate", {"sessions": sessions, "needed": s.dream_min_sessions}
                    ),
                    "sessions": sessions,
                    "needed": s.dream_min_sessions,
                    "memory_dir": str(memory_dir),
                },
            )
        )
        tracker.refresh_memory_diagnostics()
        return None
    return start_dream(tracker, manual=False, extra_context=None, logs_mode=False)


def start_dream(
    tracker: WorkspaceContext, *, manual: bool, extra_context: str | None, logs_mode: bool
) -> Job:
    """A dream job (manual: no scheduling gates) through the shared ``DreamRunner`` logic."""
    server = tracker.server
    current = tracker.current

    async def body(job: Job) -> JobResult:
        from reverie.dream.runner import DreamRequest, DreamRunner
        from reverie.dream.skips import describe_skip

        runner = DreamRunner(
            tracker.settings,
            events=server.jobs.sink_for(job),
            throttle=_RunnerThrottle(),
            run=server.dream_job_call,
            abort=server.abort_dream_job,
            writer=server.memory_writer,
        )
        request = DreamRequest(
            workspace=tracker.folder,
            manual=manual,
            extra=extra_context or "",
            logs=logs_mode,
            # the session gate leaves the live session out; a manual dream reviews it too
            current_session_id=current.session_id if current and not manual else None,
        )
        from reverie.services.review import stage_dream, wants_review

        if wants_review(tracker.settings) and not logs_mode:
            # review before apply: the dream writes a shadow copy; memory changes on accept
            review, staged = await stage_dream(
                tracker.settings, tracker.folder, manual=manual, extra=extra_context or "",
                events=server.jobs.sink_for(job), current_session_id=request.current_session_id,
                runner_options={"throttle": _RunnerThrottle(), "run": server.dream_job_call,
                                "abort": server.abort_dream_job})
            if review is not None:
                files = [c.path for c in review.changes]
                return JobResult(
                    "complete",
                    f"staged {len(files)} change{'s' if len(files) != 1 else ''} for review",
                    {**staged.as_json(), "review_id": review.review_id, "review_files": files,
                     "files_touched": []},  # nothing applied yet
                )
            result = staged
        else:
            try:
                result = await runner.run(request)
            finally:
                tracker.lock_changed()
        payload = result.as_json()
        if result.skipped_reason:
            reason_text = describe_skip(result.skipped_reason, payload)
            return JobResult(
                "skipped",
                f"dream skipped: {result.skipped_reason}",
                {"reason": result.skipped_reason, "reason_text": reason_text, **payload},
            )
        if result.error:
            return JobResult(
                "error", f"dream failed: {result.error}", {"error": result.error, **payload}
            )
        return JobResult("complete", result.summary or "dream complete", payload)

    return server.jobs.start(
        "dream",
        "Manual dream" if manual else "Dream",
        body,
        workspace=tracker.folder,
        key=tracker.dream_key(),
    )


class _RunnerThrottle(ScanThrottle):
    """The server applies the scan throttle before it starts a job; the runner must not again."""

    def blocked(self, memory_dir: Path, interval_seconds: float, now: float | None = None) -> bool:
        return False

    def mark(self, memory_dir: Path, now: float | None = None) -> None:
        return None

    def seconds_since(self, memory_dir: Path, now: float | None = None) -> float | None:
        return None
