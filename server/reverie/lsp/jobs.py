"""The job registry: every background job (extraction, dream, sleep) has an id, a task, a
progress reporter, an event stream and an outcome.

Jobs report through ``reverie.events``; the registry tags each event with the job's id, keeps the
last outcome per kind and the model usage of the day, and hands every event to the server, which
turns them into notifications.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

from reverie.config import ModelPrice
from reverie.errors import UserError
from reverie.events import JobEvent
from reverie.llm.usage import cost_of
from reverie.lsp.progress import JobProgress
from reverie.lsp.protocol import JobInfo, JobKindName, JobOutcome, OutcomeType, UsageToday
from reverie.transcripts.model import Usage

logger = logging.getLogger(__name__)

TERMINAL_TYPES = frozenset({"complete", "skipped", "cancelled", "error"})


@dataclass
class JobResult:
    """What a job body returns: how it ended and a sentence for the user."""

    type: OutcomeType = "complete"
    message: str = ""
    payload: dict[str, Any] = field(default_factory=dict)


class ExpectedJobError(UserError):
    """A failure the user can act on (no API key, lock busy): one line, no traceback."""


@dataclass
class Job:
    id: str
    kind: JobKindName
    title: str
    workspace: Path | None
    session_id: str | None
    key: str | None  # jobs with the same key never run at once (e.g. one dream per memory dir)
    started_at: datetime = field(default_factory=lambda: datetime.now(UTC))
    task: asyncio.Task[None] | None = None
    progress: JobProgress | None = None
    last_message: str = ""
    terminal_seen: bool = False
    outcome: JobOutcome | None = None
    cancel_requested: bool = False
    adopted: bool = False
    #: tasks started by the core on this job's behalf (cancelled with it)
    linked_tasks: list[asyncio.Task[Any]] = field(default_factory=list)

    def info(self) -> JobInfo:
        return JobInfo(
            job_id=self.id,
            kind=self.kind,
            workspace=str(self.workspace) if self.workspace else None,
            session_id=self.session_id,
            title=self.title,
            started_at=self.started_at,
            last_message=self.last_message,
        )

    def emit(
        self, sink: Callable[[JobEvent], None], type_: str, message: str, **payload: Any
    ) -> None:
        sink(
            JobEvent(
                job=self.kind,
                type=type_,  # type: ignore[arg-type]
                job_id=self.id,
                session_id=self.session_id,
                message=message,
                payload=payload,
            )
        )


JobBody = Callable[[Job], Awaitable[JobResult]]
Spawn = Callable[[Coroutine[Any, Any, None], str], asyncio.Task[None]]
ProgressFactory = Callable[[Job], JobProgress | None]


class JobRegistry:
    """Starts, tracks, cancels and drains jobs; remembers the last outcome of each kind."""

    def __init__(
        self,
        spawn: Spawn,
        on_event: Callable[[JobEvent], None],
        make_progress: ProgressFactory,
        on_expected_error: Callable[[Job, str], None],
        price_for: Callable[[str], ModelPrice | None] = lambda kind: None,
    ) -> None:
        self._spawn = spawn
        self._price_for = price_for
        self._on_event = on_event
        self._make_progress = make_progress
        self._on_expected_error = on_expected_error
        self._counter = itertools.count(1)
        self.jobs: dict[str, Job] = {}
        self.last_results: dict[str, JobOutcome] = {}
        self._usage_day: date = datetime.now(UTC).date()
        self._usage = UsageToday()
        self._cost: float | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    # --- queries ---------------------------------------------------------------------------

    def running(self) -> list[Job]:
        return list(self.jobs.values())

    def running_with_key(self, key: str) -> Job | None:
        return next((j for j in self.jobs.values() if j.key == key), None)

    def usage_today(self) -> tuple[UsageToday, float | None]:
        self._roll_day()
        return self._usage.model_copy(), self._cost

    # --- lifecycle -------------------------------------------------------------------------

    def start(
        self,
        kind: JobKindName,
        title: str,
        body: JobBody,
        *,
        workspace: Path | None = None,
        session_id: str | None = None,
        key: str | None = None,
    ) -> Job:
        self._loop = asyncio.get_running_loop()
        job = Job(
            id=f"{kind}-{next(self._counter)}",
            kind=kind,
            title=title,
            workspace=workspace,
            session_id=session_id,
            key=key,
        )
        self.jobs[job.id] = job
        job.progress = self._make_progress(job)
        job.task = self._spawn(self._run(job, body), job.id)
        return job

    def adopt(
        self,
        kind: JobKindName,
        title: str,
        task: asyncio.Task[Any] | None,
        *,
        workspace: Path | None = None,
        session_id: str | None = None,
        key: str | None = None,
    ) -> Job:
        """Track work a core component started in its own task (e.g. a session-memory chain).

        The job ends at its first terminal event, or when the task ends without one.
        """
        job = Job(
            id=f"{kind}-{next(self._counter)}",
            kind=kind,
            title=title,
            workspace=workspace,
            session_id=session_id,
            key=key,
            adopted=True,
        )
        job.task = task
        self._loop = asyncio.get_running_loop()
        self.jobs[job.id] = job
        job.progress = self._make_progress(job)
        if job.progress is not None:
            self._spawn(job.progress.begin(title), f"progress {job.id}")
        if task is not None:
            task.add_done_callback(lambda t: self._adopted_task_done(job, t))
        return job

    def active_for(self, kind: str, session_id: str | None) -> Job | None:
        """The running job of ``kind`` for a session (events of that session belong to it)."""
        return next(
            (j for j in self.jobs.values() if j.kind == kind and j.session_id == session_id),
            None,
        )

    def cancel(self, job_id: str) -> bool:
        job = self.jobs.get(job_id)
        if job is None:
            return False
        tasks = [t for t in (job.task, *job.linked_tasks) if t is not None and not t.done()]
        if not tasks:
            return False
        job.cancel_requested = True
        for task in tasks:
            task.cancel()
        return True

    async def drain(self, timeout: float) -> None:
        """Wait up to ``timeout`` seconds for running jobs, then cancel and await the rest."""
        tasks = [j.task for j in self.jobs.values() if j.task is not None]
        if not tasks:
            return
        _done, pending = await asyncio.wait(tasks, timeout=timeout)
        for task in pending:
            task.cancel()
        if pending:
            logger.info("shutdown: cancelled %d job(s) still running", len(pending))
            await asyncio.wait(pending, timeout=max(timeout, 1.0))

    # --- events ----------------------------------------------------------------------------

    def sink_for(self, job: Job) -> Callable[[JobEvent], None]:
        """The ``EventSink`` a job body passes to the core.

        Events are re-tagged with the job's id (a core id, such as the dream's history run id,
        moves to ``payload.run_id``), and events emitted from worker threads are handed to the
        event loop, since notifications must be sent from the loop's thread.
        """
        loop = self._loop or asyncio.get_running_loop()

        def tag(event: JobEvent) -> JobEvent:
            update: dict[str, Any] = {}
            if event.job_id != job.id:
                update["job_id"] = job.id
                if event.job_id is not None and "run_id" not in event.payload:
                    update["payload"] = {**event.payload, "run_id": event.job_id}
            if event.session_id is None and job.session_id is not None:
                update["session_id"] = job.session_id
            return event.model_copy(update=update) if update else event

        def sink(event: JobEvent) -> None:
            if _on_loop(loop):
                self.record(tag(event), job)
            elif not loop.is_closed():
                loop.call_soon_threadsafe(self.record, tag(event), job)

        return sink

    def record(self, event: JobEvent, job: Job | None = None) -> None:
        """Account for one event (usage, progress, outcome) and pass it to the server."""
        job = job or (self.jobs.get(event.job_id) if event.job_id else None)
        self._count_usage(event)
        if job is not None:
            if event.message:
                job.last_message = event.message
            if event.type in TERMINAL_TYPES and event.job in ("session_memory", "dream", "sleep"):
                job.terminal_seen = True
                job.outcome = JobOutcome(
                    job_id=job.id,
                    kind=job.kind,
                    type=event.type,  # type: ignore[arg-type]
                    message=event.message,
                    finished_at=event.at,
                    payload=dict(event.payload),
                )
            elif event.type in ("progress", "start") and job.progress is not None:
                job.progress.report(progress_text(event))
        self._on_event(event)
        if job is not None and job.adopted and job.terminal_seen:
            self._finish(job)

    async def _run(self, job: Job, body: JobBody) -> None:
        sink = self.sink_for(job)
        try:
            if job.progress is not None:
                await job.progress.begin(job.title)
            result = await body(job)
            if not job.terminal_seen:
                job.emit(sink, result.type, result.message, **result.payload)
        except asyncio.CancelledError:
            if job.outcome is None or job.outcome.type != "cancelled":
                job.emit(sink, "cancelled", f"{job.title} cancelled")
            raise
        except ExpectedJobError as exc:
            job.emit(sink, "error", str(exc), error=str(exc))
            self._on_expected_error(job, str(exc))
        except Exception as exc:
            if _is_expected(exc):
                job.emit(sink, "error", str(exc), error=str(exc))
                self._on_expected_error(job, str(exc))
            else:
                logger.exception("%s failed", job.title)
                job.emit(sink, "error", f"{job.title} failed: {exc}", error=repr(exc))
        finally:
            self._finish(job)

    def _finish(self, job: Job) -> None:
        if self.jobs.pop(job.id, None) is None:
            return
        outcome = job.outcome or JobOutcome(
            job_id=job.id, kind=job.kind, type="complete", finished_at=datetime.now(UTC)
        )
        self.last_results[job.kind] = outcome
        if job.progress is not None:
            job.progress.end(outcome.message or outcome.type)

    def _adopted_task_done(self, job: Job, task: asyncio.Task[Any]) -> None:
        if job.id not in self.jobs:
            return
        sink = self.sink_for(job)
        if task.cancelled():
            job.emit(sink, "cancelled", f"{job.title} cancelled")
        elif task.exception() is not None:
            exc = task.exception()
            job.emit(sink, "error", f"{job.title} failed: {exc}", error=repr(exc))
        self._finish(job)

    def _count_usage(self, event: JobEvent) -> None:
        if event.type != "complete":
            return
        usage = event.payload.get("usage")
        if not isinstance(usage, dict):
            usage = {
                k: event.payload[k]
                for k in ("input_tokens", "output_tokens", "tokens_in", "tokens_out")
                if isinstance(event.payload.get(k), int)
            }
        if not usage:
            return
        self._roll_day()
        u = self._usage
        u.input_tokens += int(usage.get("input_tokens", usage.get("tokens_in", 0)) or 0)
        u.output_tokens += int(usage.get("output_tokens", usage.get("tokens_out", 0)) or 0)
        u.cache_read_tokens += int(usage.get("cache_read_tokens", 0) or 0)
        u.cache_write_tokens += int(usage.get("cache_write_tokens", 0) or 0)
        u.calls += 1
        cost = event.payload.get("cost_usd", usage.get("cost_usd"))
        if not isinstance(cost, int | float):
            price = self._price_for(event.job)
            if price is not None:
                cost = cost_of(
                    Usage(
                        input_tokens=int(usage.get("input_tokens", usage.get("tokens_in", 0)) or 0),
                        output_tokens=int(
                            usage.get("output_tokens", usage.get("tokens_out", 0)) or 0
                        ),
                        cache_read_tokens=int(usage.get("cache_read_tokens", 0) or 0),
                        cache_write_tokens=int(usage.get("cache_write_tokens", 0) or 0),
                    ),
                    price,
                )
        if isinstance(cost, int | float):
            self._cost = round((self._cost or 0.0) + float(cost), 6)

    def _roll_day(self) -> None:
        today = datetime.now(UTC).date()
        if today != self._usage_day:
            self._usage_day = today
            self._usage = UsageToday()
            self._cost = None


def _is_expected(exc: BaseException) -> bool:
    """LLM errors (no key, 401, rate limit) carry a human sentence and need no traceback."""
    try:
        from reverie.llm.errors import LLMError
    except ImportError:  # the LLM part is not there yet
        return False
    return isinstance(exc, LLMError)


def _on_loop(loop: asyncio.AbstractEventLoop) -> bool:
    try:
        return asyncio.get_running_loop() is loop
    except RuntimeError:
        return False


def progress_text(event: JobEvent) -> str:
    """A short line for ``$/progress`` reports: phase or message, turn and files touched."""
    payload = event.payload
    message = event.message.strip().splitlines()[0] if event.message.strip() else ""
    parts = [message] if message else []
    phase = payload.get("phase")
    if isinstance(phase, str) and not message:
        parts.append(phase)
    turn = payload.get("turn")
    if isinstance(turn, int) and not isinstance(turn, bool) and "turn" not in message:
        parts.append(f"turn {turn}")
    files = payload.get("files_touched", payload.get("files_written"))
    count = len(files) if isinstance(files, list) else files
    if isinstance(count, int) and count:
        parts.append(f"{count} file{'s' if count != 1 else ''} touched")
    return " · ".join(parts)[:200] or event.type
