"""Dreams from the editor: the automatic gates (cheapest first) and a manual "Dream Now"."""

from __future__ import annotations

import asyncio
import logging
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from reverie.dream.gates import ScanThrottle
from reverie.events import JobEvent
from reverie.lsp.jobs import Job, JobResult

if TYPE_CHECKING:
    from reverie.lsp.context import WorkspaceContext

logger = logging.getLogger(__name__)


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
        from reverie.dream.models import DreamRequest
        from reverie.dream.runner import DreamRunner
        from reverie.dream.skips import describe_skip

        runner = DreamRunner(
            tracker.settings,
            events=server.jobs.sink_for(job),
            throttle=_RunnerThrottle(),
            run=server.workers.dream_call,
            abort=server.workers.abort_dream,
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
                runner_options={"throttle": _RunnerThrottle(), "run": server.workers.dream_call,
                                "abort": server.workers.abort_dream})
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
