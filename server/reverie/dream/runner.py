"""``DreamRunner``: gates, lock, staged transaction, consolidation (LLM or offline), post-run
repair, atomic apply, history and events.

One runner per language server or CLI run. ``run`` does one dream and returns its result;
``submit`` starts a background dream (fire-and-forget, at most one per memory dir) and
``drain`` waits for the pending ones on shutdown.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from concurrent.futures import BrokenExecutor
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, Field

from reverie.anchors.confirm import Confirmations
from reverie.anchors.retire import maintain_memory
from reverie.background import Runner, finish_then_cancel, run_in_background
from reverie.config import ProjectPaths, Settings
from reverie.dream.daily_log import (
    DAILY_LOG_BATCH,
    LogScan,
    mark_consolidated,
    scan_unconsolidated,
)
from reverie.dream.gates import ScanThrottle, SkipReason, cheap_gate, time_gate
from reverie.dream.models import DreamRequest, DreamResult
from reverie.dream.prompts import SYSTEM, build_brief
from reverie.dream.rule_based import OfflineResult, SessionSource, consolidate_sources
from reverie.dream.skips import describe_skip
from reverie.events import EventSink, EventType, JobEvent, discard_events
from reverie.llm.errors import LLMConfigError, LLMError, LLMTimeoutError, LLMToolsUnsupportedError
from reverie.llm.types import ChatMessage, ModelClient, ModelReply, ProgressCallback, ToolSpec
from reverie.memory.dates import normalise_dates
from reverie.memory.lock import ConsolidationLock, LockBusy
from reverie.memory.store import visible_files
from reverie.memory.transaction import TransactionError, check_memory_dir
from reverie.memory.write import MemoryValidationError, MemoryWriter, StagedMemory
from reverie.redact import redact
from reverie.transcripts import discovery
from reverie.transcripts.discovery import SessionRef, current_session, sessions_touched_since
from reverie.transcripts.model import Usage

logger = logging.getLogger(__name__)

_T = TypeVar("_T")
ClientFactory = Callable[[Settings, Literal["dream"]], ModelClient]
DREAM_TOOLS = ("read_file", "list_dir", "glob", "grep", "edit_file", "write_file")


class _Outcome(BaseModel):
    turns: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    summary: str = ""
    cost_usd: float | None = None
    confirmed_commands: dict[str, date] = Field(default_factory=dict)  # anchors.confirm
    confirmed_paths: dict[str, date] = Field(default_factory=dict)


#: new text a dream turn redacts on the event loop (about 0.1 ms); more goes to a thread
INLINE_REDACT_CHARS = 4_000


class _RedactingClient:
    """Wraps the dream's model client so nothing unredacted reaches the provider: the brief,
    and every tool result (transcripts, notes and memory the model reads) pass ``redact``."""

    def __init__(self, inner: ModelClient) -> None:
        self.inner = inner
        self.provider = inner.provider
        self.model = inner.model
        #: content -> redacted content: every turn resends the whole history, redact it once
        self._redacted: dict[str, str] = {}

    @property
    def is_offline(self) -> bool:
        return self.inner.is_offline

    @property
    def supports_tools(self) -> bool | None:
        value = getattr(self.inner, "supports_tools", None)
        return value if isinstance(value, bool) else None

    async def complete(
        self,
        messages: Sequence[ChatMessage],
        *,
        system: str | None = None,
        tools: Sequence[ToolSpec] = (),
        output_schema: type[BaseModel] | None = None,
        max_tokens: int | None = None,
        on_progress: ProgressCallback | None = None,
    ) -> ModelReply:
        # each text is redacted once per dream: a turn usually adds a short tool result, done at
        # once; the brief and large tool results (transcripts, notes) go off the event loop
        fresh = sum(len(m.content) for m in messages if m.content not in self._redacted)
        if fresh <= INLINE_REDACT_CHARS:
            clean = self._clean(list(messages))
        else:
            clean = await run_in_background(self._clean, list(messages))
        return await self.inner.complete(clean, system=system, tools=tools,
                                         output_schema=output_schema, max_tokens=max_tokens,
                                         on_progress=on_progress)

    def _clean(self, messages: list[ChatMessage]) -> list[ChatMessage]:
        clean: list[ChatMessage] = []
        for message in messages:
            text = self._redacted.get(message.content)
            if text is None:
                text = self._redacted[message.content] = redact(message.content)[0]
            clean.append(message if text == message.content
                         else message.model_copy(update={"content": text}))
        return clean

    async def aclose(self) -> None:
        await self.inner.aclose()


def _default_client_factory(settings: Settings, job: Literal["dream"]) -> ModelClient:
    from reverie.llm.factory import make_client

    return make_client(settings, job)


class DreamRunner:
    """Runs dreams for any number of workspaces; owns the scan throttle and background tasks.

    ``run`` is where the offline engine's whole consolidation runs (the language server passes
    a worker process's ``call``, so reading every session never takes its interpreter; default:
    a thread). ``abort`` stops that worker when the dream is cancelled, so the staging copy is no
    longer written while it is rolled back (without it the cancellation waits for the engine).
    """

    def __init__(
        self,
        settings: Settings,
        events: EventSink = discard_events,
        client_factory: ClientFactory | None = None,
        throttle: ScanThrottle | None = None,
        run: Runner | None = None,
        abort: Callable[[], Awaitable[None]] | None = None,
        writer: MemoryWriter | None = None,
    ) -> None:
        """``writer``: how memory is written (``services.wiring.memory_writer()`` in the
        front ends; a plain ``MemoryWriter()``, no after-apply hooks, when not given)."""
        self.settings = settings
        self.writer = writer or MemoryWriter()
        self.events = events
        self.client_factory = client_factory or _default_client_factory
        self.throttle = throttle or ScanThrottle()
        self._run_job = run
        self._abort = abort
        self._tasks: dict[str, asyncio.Task[DreamResult]] = {}

    # --- events --------------------------------------------------------------------------
    def _emit(self, type_: EventType, message: str, *, job_id: str | None = None,
              **payload: Any) -> None:
        try:
            self.events(JobEvent(job="dream", type=type_, job_id=job_id, message=message,
                                 payload=payload))
        except Exception:  # a broken sink must not break the run
            logger.exception("dream event sink failed")

    def _skip(self, result: DreamResult, reason: SkipReason, manual: bool,
              **payload: Any) -> DreamResult:
        result.skipped_reason = reason
        self._emit("skipped", f"dream skipped: {reason}", reason=reason, manual=manual,
                   reason_text=describe_skip(reason, payload),
                   duration_ms=result.elapsed_ms(),
                   memory_dir=result.memory_dir, sessions_reviewed=result.sessions_reviewed,
                   **payload)
        return result

    # --- background ----------------------------------------------------------------------
    def submit(self, request: DreamRequest) -> asyncio.Task[DreamResult]:
        """Start a dream in the background; a dream already running for that memory dir wins."""
        key = str(ProjectPaths(self.settings, request.workspace).memory_dir)
        running = self._tasks.get(key)
        if running is not None and not running.done():
            return running
        task = asyncio.create_task(self.run(request), name=f"dream:{key}")
        self._tasks[key] = task

        def _done(done: asyncio.Task[DreamResult]) -> None:
            if self._tasks.get(key) is done:
                del self._tasks[key]
            if not done.cancelled() and done.exception() is not None:
                logger.error("background dream failed", exc_info=done.exception())

        task.add_done_callback(_done)
        return task

    async def drain(self, timeout: float = 60.0) -> int:
        """Wait for background dreams; returns how many were still running at the timeout."""
        tasks = [t for t in self._tasks.values() if not t.done()]
        if not tasks:
            return 0
        _done, pending = await asyncio.wait(tasks, timeout=max(0.0, timeout))
        return len(pending)

    # --- one dream -----------------------------------------------------------------------
    async def run(self, request: DreamRequest) -> DreamResult:
        started = time.monotonic()
        paths = ProjectPaths(self.settings, request.workspace)
        memory_dir = paths.memory_dir
        result = DreamResult(memory_dir=str(memory_dir))
        try:
            return await self._run(request, paths, memory_dir, result)
        finally:
            result.duration_ms = int((time.monotonic() - started) * 1000)

    async def _run(self, request: DreamRequest, paths: ProjectPaths, memory_dir: Path,
                   result: DreamResult) -> DreamResult:
        settings = self.settings
        manual = request.manual
        reason = cheap_gate(settings, manual=manual, is_subagent=request.is_subagent)
        if reason is not None:
            return self._skip(result, reason, manual)
        try:
            check_memory_dir(memory_dir)
            await asyncio.to_thread(self.writer.recover, memory_dir)
        except (OSError, TransactionError) as exc:
            return self._fail(result, f"memory dir unusable: {exc}", manual)
        last = ConsolidationLock(memory_dir).last_consolidated_at()
        hours = (datetime.now(UTC) - last).total_seconds() / 3600 if last else None
        if not manual and not time_gate(hours, settings):
            return self._skip(result, "time_gate", manual, hours_since=hours)
        if not manual:
            interval = settings.dream_scan_interval_seconds
            if self.throttle.blocked(memory_dir, interval):
                return self._skip(result, "scan_throttle", manual,
                                  seconds_since_scan=self.throttle.seconds_since(memory_dir))
            self.throttle.mark(memory_dir)
        try:
            refs = await asyncio.to_thread(self._sessions_since, request, paths, last)
        except OSError as exc:
            return self._fail(result, f"could not list sessions: {exc}", manual)
        result.sessions_reviewed = len(refs)
        if not manual and len(refs) < settings.dream_min_sessions:
            return self._skip(result, "session_gate", manual, sessions=len(refs),
                              needed=settings.dream_min_sessions)
        scan: LogScan | None = None
        if request.logs:
            scan = await asyncio.to_thread(scan_unconsolidated, paths.logs_dir)
            if not scan.entries:
                return self._skip(result, "no_daily_log_entries", manual)
            # one batch per dream: exactly the entries the model is shown get marked; the
            # rest wait for the next dream
            scan = scan.batch(DAILY_LOG_BATCH)
        try:
            client = self.client_factory(settings, "dream")
        except LLMConfigError as exc:
            from reverie.llm.budget import BudgetExceeded

            why: SkipReason = ("over_budget" if isinstance(exc, BudgetExceeded)
                               else "missing_llm_client")
            return self._skip(result, why, manual, detail=str(exc))
        try:
            return await self._consolidate(request, paths, memory_dir, refs, scan, client,
                                           result)
        finally:
            try:
                await client.aclose()
            except Exception:
                logger.debug("closing the dream client failed", exc_info=True)

    def _sessions_since(self, request: DreamRequest, paths: ProjectPaths,
                        last: datetime | None) -> list[SessionRef]:
        workspace = paths.workspace
        agent_home = self.settings.agent_home
        exclude = request.current_session_id
        if exclude is None and not request.manual:
            current = current_session(workspace, agent_home)
            exclude = current.session_id if current else None
        since = last or datetime.fromtimestamp(0, UTC)
        refs = sessions_touched_since(workspace, agent_home, since, exclude_session_id=exclude)
        return sorted(refs, key=lambda r: r.updated_at)

    def _fail(self, result: DreamResult, message: str, manual: bool,
              job_id: str | None = None) -> DreamResult:
        result.error = message
        self._emit("error", f"dream failed: {message}", job_id=job_id, error=message,
                   manual=manual, memory_dir=result.memory_dir, duration_ms=result.elapsed_ms())
        return result

    async def _consolidate(
        self,
        request: DreamRequest,
        paths: ProjectPaths,
        memory_dir: Path,
        refs: list[SessionRef],
        scan: LogScan | None,
        client: ModelClient,
        result: DreamResult,
    ) -> DreamResult:
        manual = request.manual
        session = self.writer.open(
            memory_dir, source="manual" if manual else "auto",
            sessions=[r.session_id for r in refs], guard_deletions=True,
        )
        job_id = session.run_id
        try:
            staged = await session.__aenter__()
        except LockBusy:
            return self._skip(result, "lock_busy", manual)
        except (OSError, TransactionError) as exc:
            return self._fail(result, f"cannot stage the memory dir: {exc}", manual)
        result.ran = True
        result.run_id = job_id
        self._emit("start", f"dreaming over {len(refs)} sessions", job_id=job_id,
                   sessions_reviewing=len(refs), memory_dir=str(memory_dir), manual=manual,
                   engine="offline" if client.is_offline else client.provider)
        try:
            if client.is_offline:
                outcome = await self._offline(request, paths, refs, scan, staged, job_id)
            else:
                outcome = await self._with_model(request, paths, refs, scan, staged, client,
                                                 job_id)
            staged.usage(outcome.tokens_in, outcome.tokens_out)
            staged.summary = outcome.summary
            await finish_then_cancel(
                asyncio.to_thread(_normalise_new_text, staged, refs))
            # every fact checked against the code before anything is applied: stale ones
            # retire in this same run (part of its history, undone with it)
            kept = await self._engine(
                maintain_memory, staged.path, paths.workspace, datetime.now(UTC).date(),
                self.settings.fact_aging_days, Confirmations(outcome.confirmed_commands,
                                                             outcome.confirmed_paths),
                paths.check_cache)
            if kept.summary:
                outcome.summary = "; ".join(p for p in (outcome.summary, kept.summary) if p)
                staged.summary = outcome.summary
            self._emit("progress", "validating and applying", job_id=job_id, phase="applying",
                       files_touched=[])
        except BaseException as exc:
            await session.__aexit__(type(exc), exc, exc.__traceback__)
            return self._failed_run(result, exc, manual, job_id)
        try:
            await session.__aexit__(None, None, None)
        except BaseException as exc:
            return self._failed_run(result, exc, manual, job_id)
        written = session.result
        assert written is not None
        touched = [str(memory_dir / name) for name in written.changes.touched]
        result.files_touched = touched
        result.turns = outcome.turns
        result.tokens_in = outcome.tokens_in
        result.tokens_out = outcome.tokens_out
        result.summary = outcome.summary
        if scan is not None:
            names = written.changes.touched or "dropped"
            await asyncio.to_thread(mark_consolidated, scan, names)
        self._emit("complete", outcome.summary or "dream complete", job_id=job_id,
                   sessions_reviewed=len(refs), files_touched=touched, turns=outcome.turns,
                   tokens_in=outcome.tokens_in, tokens_out=outcome.tokens_out,
                   manual=manual, source="daily_log" if scan else "sessions",
                   **({"cost_usd": outcome.cost_usd} if outcome.cost_usd is not None else {}),
                   repairs=written.repair.actions,
                   log_entry_ids=scan.entry_ids if scan else [],
                   duration_ms=result.elapsed_ms())
        if touched:
            listing = "\n".join(f"- {p}" for p in touched)
            self._emit("memory_saved", f"Memory improved:\n{listing}", job_id=job_id,
                       memory_paths=touched, run_id=job_id, verb="Improved")
        return result

    def _failed_run(self, result: DreamResult, exc: BaseException, manual: bool,
                    job_id: str) -> DreamResult:
        if isinstance(exc, asyncio.CancelledError):
            result.cancelled = True
            self._emit("cancelled", "dream cancelled; memory unchanged", job_id=job_id,
                       manual=manual, duration_ms=result.elapsed_ms())
            raise exc
        if isinstance(exc, LockBusy):
            result.ran = False
            return self._skip(result, "lock_busy", manual)
        if isinstance(exc, LLMError | MemoryValidationError | TransactionError | OSError
                      | ValueError | BrokenExecutor):  # (the engine's worker process was killed)
            return self._fail(result, str(exc), manual, job_id)
        if isinstance(exc, Exception):
            logger.exception("dream failed")
            return self._fail(result, f"{type(exc).__name__}: {exc}", manual, job_id)
        raise exc

    # --- engines -------------------------------------------------------------------------
    async def _offline(self, request: DreamRequest, paths: ProjectPaths, refs: list[SessionRef],
                       scan: LogScan | None, staged: StagedMemory, job_id: str) -> _Outcome:
        self._emit("progress", "gathering recent signal", job_id=job_id, phase="gather",
                   files_touched=[])
        sources = await asyncio.to_thread(_sources, paths, refs)
        extra, _ = redact(request.extra)
        self._emit("progress", "consolidating", job_id=job_id, phase="consolidate",
                   files_touched=[])
        outcome: OfflineResult = await self._engine(
            consolidate_sources, staged.path, sources, extra, list(scan.entries) if scan else []
        )
        touched = [str(staged.live_dir / name) for name in outcome.files_touched]
        self._emit("progress", outcome.summary, job_id=job_id, phase="updating",
                   files_touched=touched)
        return _Outcome(summary=outcome.summary, confirmed_commands=outcome.confirmed_commands,
                        confirmed_paths=outcome.confirmed_paths)

    async def _engine(self, func: Callable[..., _T], *args: Any) -> _T:
        """``func(*args)`` through ``run`` (a worker process) or in a thread. On cancellation
        the engine is stopped (``abort``) or else finished first: either way nothing writes to
        the staging copy once the run is rolled back."""
        if self._run_job is None:
            return await finish_then_cancel(asyncio.to_thread(func, *args))
        future = asyncio.ensure_future(self._run_job(func, *args))
        try:
            result: _T = await asyncio.shield(future)
        except asyncio.CancelledError:
            if self._abort is not None and not future.done():
                await self._abort()
            await asyncio.wait([future])
            if not future.cancelled():
                future.exception()  # retrieved: the cancellation is what is reported
            raise
        return result

    async def _with_model(self, request: DreamRequest, paths: ProjectPaths,
                          refs: list[SessionRef], scan: LogScan | None, staged: StagedMemory,
                          client: ModelClient, job_id: str) -> _Outcome:
        from reverie.tools.gate import PathGate

        memory_dir = staged.live_dir
        notes = [paths.notes_path(r.session_id) for r in refs
                 if paths.notes_path(r.session_id).is_file()]
        # the sessions' own files (and a Claude session's sub-agent folder), not their whole
        # directories: a Codex day folder also holds other projects' rollouts
        read_roots = [memory_dir, *notes]
        for _sid, path in discovery.transcript_files(refs):  # Kilo's database: notes only
            read_roots += [path, *[d for d in (path.with_suffix(""),) if d.is_dir()]]
        if scan is not None:
            read_roots.append(paths.logs_dir)
        gate = PathGate(read_roots, write_dir=memory_dir, base_dir=memory_dir)
        extra, _ = redact(request.extra)
        budget = self.settings.dream_budget_seconds
        try:
            async with asyncio.timeout(budget):
                return await self._model_pass(request, paths, refs, scan, staged, client,
                                              job_id, gate, read_roots, notes, extra)
        except TimeoutError:
            raise LLMTimeoutError(
                f"the dream did not finish within its {budget:.0f} s budget "
                "(REVERIE_DREAM_BUDGET_SECONDS); memory unchanged",
                provider=client.provider) from None

    async def _model_pass(self, request: DreamRequest, paths: ProjectPaths,
                          refs: list[SessionRef], scan: LogScan | None, staged: StagedMemory,
                          client: ModelClient, job_id: str, gate: Any, read_roots: list[Path],
                          notes: list[Path], extra: str) -> _Outcome:
        """The tool loop, or the structured no-tools form when the model cannot call tools."""
        from reverie.llm.capabilities import choose_mode, remember_no_tools
        from reverie.tools.loop import run_tool_loop

        memory_dir = staged.live_dir
        redacting = _RedactingClient(client)
        prior = Usage()
        prior_turns = 0
        if choose_mode(redacting, self.settings) == "tools":
            candidates, index_text = await asyncio.to_thread(_brief_inputs, paths, refs,
                                                             staged.path)
            brief = build_brief(memory_dir=memory_dir,
                                transcripts=discovery.transcript_files(refs), notes=notes,
                                manual=request.manual, extra=extra, daily_log=scan,
                                candidates=candidates, index_text=index_text)
            try:
                loop = await run_tool_loop(
                    redacting, system=SYSTEM,
                    messages=[ChatMessage(role="user", content=brief)],
                    gate=gate, tools=DREAM_TOOLS, max_turns=self.settings.dream_max_turns,
                    events=self.events, job="dream", path_map={memory_dir: staged.path},
                    job_id=job_id, max_tokens=self.settings.dream_max_output_tokens,
                )
            except LLMToolsUnsupportedError as exc:
                self._emit("progress", f"{exc.message}", job_id=job_id, phase="no_tools",
                           files_touched=[])
            else:
                if loop.stop_reason != "text_tool_call" or loop.files_written:
                    self._emit("progress", loop.text[:500], job_id=job_id, phase="updating",
                               turn={"text": loop.text[:2000],
                                     "tool_use_count": loop.tool_calls},
                               files_touched=loop.files_written, stop_reason=loop.stop_reason)
                    return _Outcome(turns=loop.turns, tokens_in=loop.usage.input_tokens,
                                    tokens_out=loop.usage.output_tokens,
                                    summary=loop.text.strip()[:500])
                if self.settings.tool_calling == "auto":
                    await remember_no_tools(client)
                self._emit("progress", "the model wrote a tool call as text; asking for the "
                           "memory changes as JSON instead", job_id=job_id, phase="no_tools",
                           files_touched=[])
                prior, prior_turns = loop.usage, loop.turns
        return await self._without_tools(request, paths, refs, scan, staged, redacting, job_id,
                                         read_roots, extra, prior, prior_turns)

    async def _without_tools(self, request: DreamRequest, paths: ProjectPaths,
                             refs: list[SessionRef], scan: LogScan | None, staged: StagedMemory,
                             client: ModelClient, job_id: str, read_roots: list[Path],
                             extra: str, prior: Usage, prior_turns: int) -> _Outcome:
        from reverie.dream.no_tools import build_brief as build_no_tools_brief
        from reverie.dream.no_tools import consolidate_without_tools
        from reverie.tools.gate import PathGate

        memory_dir = staged.live_dir
        inputs = await asyncio.to_thread(_sources, paths, refs)
        log_lines = [f"- [{e.entry_id}] {e.text}" for e in scan.entries] if scan else []
        brief = await asyncio.to_thread(
            lambda: build_no_tools_brief(memory_dir=memory_dir, staged_dir=staged.path,
                                         sessions=inputs, manual=request.manual, extra=extra,
                                         log_lines=log_lines))
        gate = PathGate(read_roots, write_dir=memory_dir, base_dir=memory_dir).with_path_map(
            {memory_dir: staged.path})
        last = time.monotonic()

        def progress(tokens: int) -> None:
            nonlocal last
            if time.monotonic() - last >= 1.0:
                last = time.monotonic()
                self._emit("progress", f"generating the memory changes, {tokens} tokens so far",
                           job_id=job_id, phase="generating", tokens_generated=tokens,
                           files_touched=[])

        done = await consolidate_without_tools(
            client, gate=gate, brief=brief,
            max_tokens=max(self.settings.dream_max_output_tokens, 4096), events=self.events,
            job_id=job_id, progress=progress)
        usage = prior + done.usage
        self._emit("progress", done.summary, job_id=job_id, phase="updating",
                   files_touched=done.written)
        return _Outcome(turns=prior_turns + done.turns, tokens_in=usage.input_tokens,
                        tokens_out=usage.output_tokens, summary=done.summary,
                        cost_usd=done.cost_usd)


def _brief_inputs(paths: ProjectPaths, refs: list[SessionRef],
                  staged_dir: Path) -> tuple[list[str], str | None]:
    """The candidate facts of the sessions and the current memory, for a model's brief."""
    from reverie.curation.brief import candidate_lines
    from reverie.dream.no_tools import memory_text

    candidates = candidate_lines(_sources(paths, refs))
    current, _ = redact(memory_text(staged_dir))
    return candidates, current


def _sources(paths: ProjectPaths, refs: list[SessionRef]) -> list[SessionSource]:
    """What the offline engine reads of each session (paths only; it reads them itself)."""
    sources = []
    for ref in refs:
        notes_path = paths.notes_path(ref.session_id)
        sources.append(SessionSource(
            session_id=ref.session_id, path=ref.path, cwd=ref.cwd, updated_at=ref.updated_at,
            notes_path=notes_path if notes_path.is_file() else None,
        ))
    return sources


def _normalise_new_text(staged: StagedMemory, refs: list[SessionRef]) -> None:
    """Redact and make dates absolute in lines the run added (whoever wrote them), and drop
    added lines of the never-keep classes (``curation.noise``)."""
    from reverie.curation.noise import noise_class
    from reverie.fsutil import atomic_write_text

    anchor = max((r.updated_at for r in refs), default=datetime.now(UTC))
    for name in visible_files(staged.path):
        if not name.endswith(".md"):
            continue
        new_path = staged.path / name
        old_path = staged.live_dir / name
        new_text = new_path.read_text("utf-8", errors="replace")
        old_lines = set(
            old_path.read_text("utf-8", errors="replace").splitlines()
            if old_path.is_file() else ()
        )
        if new_path.is_file() and old_path.is_file() and new_path.read_bytes() == \
                old_path.read_bytes():
            continue
        lines = new_text.splitlines()
        fixed = []
        for line in lines:
            if line in old_lines:
                fixed.append(line)
                continue
            dropped = noise_class(line)
            if dropped is not None:  # the never-keep classes hold for a model's lines too
                logger.info("dream: dropped a %s line the run wrote to %s", dropped, name)
                continue
            clean, _ = redact(normalise_dates(line, anchor))
            fixed.append(clean)
        result = "\n".join(fixed) + ("\n" if new_text.endswith("\n") else "")
        if result != new_text:
            atomic_write_text(new_path, result)
