"""Thin adapters between a ``WorkspaceTracker`` and the core jobs: session memory, dream and
the lock status. Each core job reports through an ``EventSink`` that the job registry tags.
"""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from reverie.dream.gates import ScanThrottle
from reverie.events import JobEvent
from reverie.lsp.jobs import Job, JobResult

if TYPE_CHECKING:
    from reverie.background import Runner
    from reverie.lsp.server import ReverieLanguageServer
    from reverie.lsp.tracking import WorkspaceTracker
    from reverie.memory.lock import LockStatus
    from reverie.session_memory.source import TranscriptConversation
    from reverie.transcripts.digest import MessageDigest
    from reverie.transcripts.discovery import SessionRef
    from reverie.transcripts.model import Session

logger = logging.getLogger(__name__)

#: sessions whose digests are kept (a digest is a few hundred bytes per message)
MAX_TRACKED_SESSIONS = 16


@dataclass
class _Tracked:
    session: Session
    digests: list[MessageDigest]
    ids: set[str] = field(default_factory=set)


class ConversationDigests:
    """Message digests of recently active sessions: all the server keeps of a conversation.

    Filled from the transcript (read and parsed in the parse worker process) on a session's first
    append, then extended by appended digests (cost proportional to the append); least recently
    used sessions are dropped and read again if they become active again. The messages
    themselves are read from the transcript only when an extraction runs
    (``session_memory.source.TranscriptConversation``).
    """

    def __init__(
        self, run: Runner, job_run: Runner | None = None, size: int = MAX_TRACKED_SESSIONS
    ) -> None:
        self._run = run
        self._job_run = job_run
        self._size = size
        self._sessions: OrderedDict[str, _Tracked] = OrderedDict()

    async def extend(
        self, ref: SessionRef, session: Session, appended: list[MessageDigest]
    ) -> tuple[TranscriptConversation, bool]:
        """The whole conversation, and whether ``appended`` brought anything not seen before
        (the same messages can be reported twice, e.g. a pushed chat and then its transcript)."""
        key = _key(ref)
        tracked = self._sessions.get(key)
        fresh = tracked is None
        if tracked is None:
            try:
                _session, digests, ids = await self._read(ref)
            except Exception as exc:  # unreadable now: start from what was appended
                logger.warning("cannot read %s: %s", ref.path, exc)
                digests, ids = [], set()
            tracked = _Tracked(session, digests, ids)
            self._put(key, tracked)
        tracked.session = session
        new = [d for d in appended if d.id not in tracked.ids]
        tracked.digests.extend(new)
        tracked.ids.update(d.id for d in new)
        self._sessions.move_to_end(key)
        return self._conversation(ref, tracked), fresh or bool(new)

    async def get(self, ref: SessionRef) -> tuple[Session, TranscriptConversation]:
        key = _key(ref)
        tracked = self._sessions.get(key)
        if tracked is None:
            session, digests, ids = await self._read(ref)
            tracked = _Tracked(session, digests, ids)
            self._put(key, tracked)
        self._sessions.move_to_end(key)
        return tracked.session, self._conversation(ref, tracked)

    def _conversation(self, ref: SessionRef, tracked: _Tracked) -> TranscriptConversation:
        from reverie.session_memory.source import TranscriptConversation

        return TranscriptConversation(
            ref.path, ref.session_id, tracked.digests, self._run, self._job_run
        )

    async def _read(self, ref: SessionRef) -> tuple[Session, list[MessageDigest], set[str]]:
        """The session's digests, read in the worker process, unpacked in a background thread
        (``digest.pack_digests``: nothing long-running on the event loop)."""
        from reverie.background import run_in_background
        from reverie.session_memory.source import load_packed_digests

        session, packed = await self._run(load_packed_digests, ref.path, ref.session_id)
        digests, ids = await run_in_background(_unpack, packed)
        return session, digests, ids

    def _put(self, key: str, tracked: _Tracked) -> None:
        self._sessions[key] = tracked
        while len(self._sessions) > self._size:
            self._sessions.popitem(last=False)


def _unpack(packed: list[bytes]) -> tuple[list[MessageDigest], set[str]]:
    from reverie.transcripts.digest import unpack_digests

    digests = unpack_digests(packed)
    return digests, {d.id for d in digests}


def _key(ref: SessionRef) -> str:
    return f"{ref.path}::{ref.session_id}"


# --- session memory ------------------------------------------------------------------------------


def session_memory_sink(
    server: ReverieLanguageServer, tracker: WorkspaceTracker | None = None
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


def _tracker_of(server: ReverieLanguageServer, event: JobEvent) -> WorkspaceTracker | None:
    path = event.payload.get("notes_path") or event.payload.get("path")
    return server.tracker_for_path(Path(path)) if path else None


async def feed_session_memory(
    tracker: WorkspaceTracker, ref: SessionRef, session: Session, appended: list[MessageDigest]
) -> None:
    """Appended messages: the manager applies the thresholds and starts an extraction if due."""
    server = tracker.server
    conversation, fresh = await server.conversations.extend(ref, session, appended)
    if fresh:
        await server.session_memory().on_conversation(session, conversation, tracker.folder)


def forced_extraction(tracker: WorkspaceTracker, ref: SessionRef) -> Job:
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


# --- lock status ---------------------------------------------------------------------------------


async def compute_lock_status(tracker: WorkspaceTracker) -> LockStatus:
    """Exactly what ``reverie lock --json`` reports for this workspace (same computation)."""
    from reverie.memory.lock import ConsolidationLock, lock_status
    from reverie.transcripts.discovery import sessions_touched_since

    s = tracker.settings
    memory_dir = tracker.memory_dir
    exclude = tracker.current.session_id if tracker.current else None

    def compute() -> LockStatus:
        last = ConsolidationLock(memory_dir).last_consolidated_at()
        since = last or datetime.fromtimestamp(0, UTC)
        try:
            count: int | None = len(
                sessions_touched_since(tracker.folder, s.agent_home, since, exclude,
                                       tracker.server.editor_places())
            )
        except OSError:
            count = None
        return lock_status(
            memory_dir,
            sessions_since=count,
            min_hours=s.dream_min_hours,
            min_sessions=s.dream_min_sessions,
            enabled=s.dream_enabled,
            remote_mode=s.remote_mode,
            auto_memory=s.auto_memory_enabled,
            throttled=tracker.server.dream_throttle.blocked(memory_dir,
                                                            s.dream_scan_interval_seconds),
        )

    return await asyncio.to_thread(compute)


async def recover_lock(tracker: WorkspaceTracker) -> None:
    """At start-up: finish or roll back a run a killed process left, and say what was done."""
    from reverie.memory.lock import ConsolidationLock
    from reverie.memory.session import recover_memory_dir

    memory_dir = tracker.memory_dir

    def recover() -> tuple[int | None, str | None]:
        if not memory_dir.is_dir():
            return None, None
        lock = ConsolidationLock(memory_dir)
        pid, _ = lock.read()
        if pid is None or lock.holder_alive(pid):
            return None, None
        finished = recover_memory_dir(memory_dir)
        with lock.guard():
            restored = lock.recover_dead_holder()
        if finished:
            return pid, "Reverie completed its interrupted run and kept the new consolidation time"
        if restored:
            return pid, "Reverie rolled it back and restored the previous consolidation time"
        return pid, "the next dream will take it over"

    pid, action = await asyncio.to_thread(recover)
    if pid is not None:
        tracker.lock_recovery_pid = pid
        tracker.lock_recovery = action
        logger.warning("lock in %s left by dead PID %s: %s", memory_dir, pid, action)


# --- dream ---------------------------------------------------------------------------------------


async def auto_dream_if_due(tracker: WorkspaceTracker) -> Job | None:
    """The dream gates, cheapest first; a dream job starts only when every gate passes.

    Settings gates and the lock file's mtime (one ``stat``) run on the loop; the session scan,
    at most once per ``dreamScanIntervalSeconds`` per memory dir, runs in a worker thread.
    """
    from reverie.dream.gates import cheap_gate, time_gate
    from reverie.memory.lock import ConsolidationLock

    server = tracker.server
    s = tracker.settings
    if cheap_gate(s, manual=False, is_subagent=False) is not None:
        return None
    if server.jobs.running_with_key(tracker.dream_key()) is not None:
        return None
    memory_dir = tracker.memory_dir
    last = ConsolidationLock(memory_dir).last_consolidated_at()
    hours = (datetime.now(UTC) - last).total_seconds() / 3600 if last else None
    if not time_gate(hours, s):
        return None
    throttle = server.dream_throttle
    if throttle.blocked(memory_dir, s.dream_scan_interval_seconds):
        return None
    throttle.mark(memory_dir)
    status = await compute_lock_status(tracker)
    sessions = status.sessions_since or 0
    if sessions < s.dream_min_sessions:
        server.on_job_event(
            JobEvent(
                job="dream",
                type="skipped",
                message=f"dream skipped: session_gate ({sessions} of {s.dream_min_sessions})",
                payload={
                    "reason": "session_gate",
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
    tracker: WorkspaceTracker, *, manual: bool, extra_context: str | None, logs_mode: bool
) -> Job:
    """A dream job (manual: no scheduling gates) through the shared ``DreamRunner`` logic."""
    server = tracker.server
    current = tracker.current

    async def body(job: Job) -> JobResult:
        from reverie.dream.runner import DreamRequest, DreamRunner

        runner = DreamRunner(
            tracker.settings,
            events=server.jobs.sink_for(job),
            throttle=_RunnerThrottle(),
            run=server.dream_job_call,
            abort=server.abort_dream_job,
        )
        request = DreamRequest(
            workspace=tracker.folder,
            manual=manual,
            extra=extra_context or "",
            logs=logs_mode,
            # the session gate leaves the live session out; a manual dream reviews it too
            current_session_id=current.session_id if current and not manual else None,
        )
        try:
            result = await runner.run(request)
        finally:
            tracker.lock_changed()
        payload = result.as_json()
        if result.skipped_reason:
            return JobResult(
                "skipped",
                f"dream skipped: {result.skipped_reason}",
                {"reason": result.skipped_reason, **payload},
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
