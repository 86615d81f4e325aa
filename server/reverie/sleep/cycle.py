"""The nightly sleep cycle: light -> deep -> REM -> housekeeping, each phase traced.

``SleepCycle(settings).run(workspace, date)`` reviews one workspace's sessions for a review date
(default: today in local time) and returns a ``SleepReport``. With the offline engine (no API
key) deep sleep and REM are deterministic (``reverie.sleep.rule_based``); with a provider, deep
sleep sends one batch and REM one structured request. REM writes the same memory dir as dream,
through its lock, transaction and history (source ``sleep``), so the run can be undone.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from datetime import UTC, datetime
from datetime import date as Date
from pathlib import Path

from reverie.anchors.retire import maintain_memory
from reverie.background import Runner
from reverie.config import ProjectPaths, Settings
from reverie.events import EventSink, JobEvent, discard_events
from reverie.llm.types import ModelClient
from reverie.memory.history import MemoryHistory
from reverie.memory.lock import ConsolidationLock, LockBusy
from reverie.memory.transaction import TransactionError
from reverie.memory.write import MemoryValidationError, MemoryWriter
from reverie.sleep.deep import DeepResult, SessionInput, deep_sleep_offline, deep_sleep_with_model
from reverie.sleep.entries import load_entries
from reverie.sleep.housekeeping import HistoryPruner, run_housekeeping
from reverie.sleep.journal import journal_path, render_journal, write_journal
from reverie.sleep.light import default_review_date, select_sessions
from reverie.sleep.models import MemoryEntry, SleepReport
from reverie.sleep.prompts import REM_OVERRIDE_NAME, SUMMARY_OVERRIDE_NAME, load_instructions
from reverie.sleep.rem import RemError, consolidate_with_model, stage_entries
from reverie.sleep.rule_based import consolidate_facts
from reverie.sleep.schedule import SleepState, save_state
from reverie.sleep.tracing import PhaseSpan, SleepTracer
from reverie.transcripts.discovery import SessionRef, discover_sessions
from reverie.transcripts.editor_places import EditorPlaces

logger = logging.getLogger(__name__)

Clock = Callable[[], datetime]
Sleeper = Callable[[float], Awaitable[None]]


def _cancelled() -> bool:
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0


def local_now() -> datetime:
    return datetime.now().astimezone()


def history_pruner(settings: Settings, memory_dir: Path,
                   writer: MemoryWriter) -> HistoryPruner | None:
    """The memory history's pruner for housekeeping; ``None`` when retention is off
    (``history_retention_days <= 0`` keeps every run) or nothing was recorded yet."""
    history = MemoryHistory(memory_dir)
    if settings.history_retention_days <= 0 or not history.exists():
        return None

    def prune(before: datetime) -> tuple[int, int]:
        # REM has released the lock by now: take it again so a dream cannot interleave, then
        # roll it back, because pruning is not a consolidation and must not reset the time gate.
        lock = ConsolidationLock(memory_dir)
        if not lock.try_acquire(lambda: writer.finish_interrupted(memory_dir)):
            logger.info("memory history not pruned: %s is being consolidated", memory_dir)
            return 0, 0
        try:
            return history.prune(before)
        finally:
            lock.rollback()

    return prune


class SleepCycle:
    """One cycle runner. ``client`` defaults to ``make_client(settings, "sleep")`` (closed after
    the run); ``clock`` (local wall time), ``sleep`` and ``monotonic`` are injectable so the batch
    timeout and backoff are testable without waiting."""

    def __init__(
        self,
        settings: Settings,
        *,
        client: ModelClient | None = None,
        clock: Clock = local_now,
        sleep: Sleeper = asyncio.sleep,
        monotonic: Callable[[], float] = time.monotonic,
        events: EventSink = discard_events,
        tracer: SleepTracer | None = None,
        poll_initial: float = 5.0,
        poll_max: float = 60.0,
        batch_timeout: float = 7200.0,
        lock_wait_seconds: float = 300.0,
        lock_poll_seconds: float = 5.0,
        run: Runner | None = None,
        writer: MemoryWriter | None = None,
        editor: EditorPlaces | None = None,
    ) -> None:
        """``run``: where the offline deep phase reads and digests the sessions (the language
        server passes a worker process's ``call``; default: a thread). ``writer``: how REM
        writes memory (``services.wiring.memory_writer()`` in the front ends; without it, a
        plain ``MemoryWriter()`` with no after-apply hooks). ``editor``: where the editor's own
        agents keep their sessions (the language server knows the running editor's)."""
        self.settings = settings
        self._editor = editor
        self._writer = writer or MemoryWriter()
        self._run_job = run
        self._client = client
        self._clock = clock
        self._sleep = sleep
        self._monotonic = monotonic
        self._events = events
        self._tracer = tracer or SleepTracer()
        self._poll = (poll_initial, poll_max, batch_timeout)
        self._lock_wait = (lock_wait_seconds, lock_poll_seconds)

    def _emit(self, type_: str, message: str, **payload: object) -> None:
        self._events(JobEvent(job="sleep", type=type_, message=message,  # type: ignore[arg-type]
                              payload=dict(payload)))

    async def run(self, workspace: Path, date: Date | None = None) -> SleepReport:
        now = self._clock()
        review_date = date or default_review_date(now)
        paths = ProjectPaths(self.settings, workspace)
        started = time.monotonic()
        report = SleepReport(date=review_date)
        self._emit("start", f"sleep cycle for {review_date.isoformat()}", date=str(review_date))
        error: str | None = None
        try:
            await self._run_with_client(paths, review_date, now, report)
        except Exception as exc:
            error = str(exc) or type(exc).__name__
            self._emit("error", f"sleep cycle failed: {error}", error=error)
            raise
        finally:
            report.duration_seconds = round(time.monotonic() - started, 3)
            # A failed cycle counts as tonight's attempt too: the scheduler retries tomorrow,
            # not every minute. A cancelled one (editor closing) is caught up later.
            if review_date == default_review_date(now) and not _cancelled():
                # the scheduler's "tonight's run is done" is about the run day, not the day
                # reviewed
                state = SleepState(last_run_date=now.date(), last_run_at=now,
                                   last_run_id=report.run_id, last_error=error)
                await asyncio.to_thread(save_state, paths, state)
        if report.skipped_reason:
            self._emit("skipped", report.skipped_reason, reason=report.skipped_reason)
        else:
            self._emit("complete", f"sleep cycle for {review_date.isoformat()} done",
                       **report.to_json_dict())
            if report.run_id:
                self._emit("memory_saved", f"memory consolidated by sleep ({report.run_id})",
                           run_id=report.run_id, files=report.files_touched)
        return report

    async def _run_with_client(
        self, paths: ProjectPaths, review_date: Date, now: datetime, report: SleepReport
    ) -> None:
        client = self._client
        if client is None:
            from reverie.llm.factory import make_client

            client = make_client(self.settings, "sleep")
        report.engine = "offline" if client.is_offline else f"{client.provider} {client.model}"
        try:
            with self._tracer.phase("cycle", date=review_date.isoformat()) as root:
                await self._run_phases(client, paths, review_date, now, report)
                root.set("sessions_found", report.sessions_found)
                root.set("skipped", report.skipped_reason is not None)
        finally:
            if self._client is None:
                await client.aclose()

    async def _run_phases(
        self, client: ModelClient, paths: ProjectPaths, review_date: Date, now: datetime,
        report: SleepReport,
    ) -> None:
        tracer = self._tracer
        with tracer.phase("light", date=review_date.isoformat()) as span:
            refs = await asyncio.to_thread(
                discover_sessions, paths.workspace, self.settings.agent_home, self._editor
            )
            chosen = select_sessions(refs, review_date, now)
            report.sessions_found = len(chosen)
            span.set("sessions_found", len(chosen))
        if not chosen:
            report.skipped_reason = "no sessions changed since the midnight before the review date"
            with tracer.phase("housekeeping") as span:
                await self._housekeeping(paths, now, refs, report, span)
            return

        with tracer.phase("deep", sessions=len(chosen)) as span:
            inputs = [SessionInput(ref=ref, notes_path=paths.notes_path(ref.session_id))
                      for ref in chosen]
            memory_before = await asyncio.to_thread(load_entries, paths.memory_dir)
            report.entries_before = report.entries_after = len(memory_before)
            if client.is_offline:
                if self._run_job is not None:
                    deep = await self._run_job(deep_sleep_offline, inputs)
                else:
                    deep = await asyncio.to_thread(deep_sleep_offline, inputs)
            else:
                initial, maximum, timeout = self._poll
                deep = await deep_sleep_with_model(
                    client, inputs, memory_before, poll_initial=initial, poll_max=maximum,
                    timeout=timeout, sleep=self._sleep, clock=self._monotonic,
                    max_tokens=self.settings.sleep_max_output_tokens,
                    sync_timeout=self.settings.sleep_budget_seconds,
                    instructions=load_instructions(self.settings.config_dir,
                                                   SUMMARY_OVERRIDE_NAME),
                )
            report.summaries_ok = deep.ok
            report.summaries_failed = deep.failed
            report.candidates = len(deep.candidates)
            engine = "offline" if client.is_offline else f"{client.provider} {client.model}"
            text = render_journal(review_date, deep.digests, engine=engine, failed=deep.failed)
            path = journal_path(paths, review_date)
            await asyncio.to_thread(write_journal, path, text)
            report.journal_path = path
            for key in ("summaries_ok", "summaries_failed", "candidates"):
                span.set(key, getattr(report, key))

        with tracer.phase("rem") as span:
            await self._rem(client, paths, review_date, now, deep, text, report)
            span.set("entries_before", report.entries_before)
            span.set("entries_after", report.entries_after)
            if report.rem_error:
                span.set("error", report.rem_error)

        with tracer.phase("housekeeping") as span:
            await self._housekeeping(paths, now, refs, report, span)

    async def _rem(
        self, client: ModelClient, paths: ProjectPaths, review_date: Date, now: datetime,
        deep: DeepResult, journal_text: str, report: SleepReport,
    ) -> None:
        memory_dir = paths.memory_dir
        if deep.ok == 0:
            report.rem_error = "no session was summarised, so memory was left alone"
            return
        wait, poll = self._lock_wait
        # a REM that changes nothing is not a consolidation: the dream's time gate stays put
        write = self._writer.open(
            memory_dir, source="sleep",
            sessions=[d.session_id for d in deep.digests if d.error is None],
            wait_seconds=wait, poll_seconds=poll, sleep=self._sleep,
            consolidates_when_unchanged=False, guard_deletions=True,
        )
        try:
            async with write as staged:
                before = await asyncio.to_thread(load_entries, memory_dir)
                report.entries_before = report.entries_after = len(before)
                after = await self._consolidate(client, review_date, before, journal_text, deep)
                await asyncio.to_thread(stage_entries, staged, before, after,
                                        review_date=review_date)
                # every fact checked against the code before the apply, as a dream does
                kept = await asyncio.to_thread(
                    maintain_memory, staged.path, paths.workspace, datetime.now(UTC).date(),
                    self.settings.fact_aging_days, None, paths.check_cache)
                staged.summary = f"sleep cycle for {review_date.isoformat()}" + (
                    f"; {kept.summary}" if kept.summary else "")
        except LockBusy:
            report.rem_error = "the memory is being consolidated by a running dream"
            return
        except (RemError, TransactionError, MemoryValidationError) as exc:
            logger.warning("REM changed nothing: %s", exc)
            report.rem_error = str(exc)
            return
        written = write.result
        assert written is not None
        report.entries_after = len(after)
        report.run_id = written.record.run_id if written.record else None
        report.files_touched = written.changes.touched

    async def _consolidate(
        self, client: ModelClient, review_date: Date, before: Sequence[MemoryEntry],
        journal_text: str, deep: DeepResult,
    ) -> list[MemoryEntry]:
        cap = self.settings.sleep_max_entries
        if client.is_offline:
            return consolidate_facts(before, deep.facts, review_date, cap)
        budget = self.settings.sleep_budget_seconds
        try:
            async with asyncio.timeout(budget):
                return await consolidate_with_model(
                    client, review_date=review_date, max_entries=cap, memory=before,
                    journal=journal_text, candidates=deep.candidates,
                    max_tokens=self.settings.max_output_tokens,
                    sources=deep.candidate_sessions(),
                    override=load_instructions(self.settings.config_dir, REM_OVERRIDE_NAME),
                    facts=deep.fact_lines,
                )
        except TimeoutError:
            raise RemError(f"the consolidation did not finish within the {budget:.0f} s budget "
                           "(REVERIE_SLEEP_BUDGET_SECONDS); memory unchanged") from None


    async def _housekeeping(
        self, paths: ProjectPaths, now: datetime, refs: Sequence[SessionRef],
        report: SleepReport, span: PhaseSpan,
    ) -> None:
        result = await asyncio.to_thread(
            run_housekeeping, paths, self.settings, now, transcripts=refs,
            prune_history=history_pruner(self.settings, paths.memory_dir, self._writer),
        )
        report.housekeeping = result
        span.set("bytes_reclaimed", result.bytes_reclaimed)
        span.set("files_deleted", result.journals_deleted + result.notes_deleted
                 + result.transcripts_deleted)
