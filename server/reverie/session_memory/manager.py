"""``SessionMemoryManager``: thresholds, one extraction per session at a time, coalescing, the
waiter and drain. One instance per language server or CLI run.

Flow of one extraction: create the notes file from the template if it does not exist, pick the
writer (offline engine or LLM), let it produce the new text, run the validity guard, check that
nobody edited the file meanwhile, write atomically (0600 in 0700 directories), then advance and
save the cursors. Any failure leaves the notes file byte-identical and emits an ``error`` event.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel

from reverie.background import run_in_background
from reverie.config import ProjectPaths, Settings
from reverie.events import EventSink, EventType, JobEvent
from reverie.fsutil import atomic_write_text, ensure_private_dir
from reverie.llm.errors import LLMError
from reverie.llm.types import ModelClient
from reverie.session_memory.marker import (
    clear_marker,
    marker_path,
    running_since,
    wait_for_marker,
    write_marker,
)
from reverie.session_memory.source import Conversation, InMemoryConversation
from reverie.session_memory.state import (
    ExtractionState,
    load_state,
    save_state,
    text_sha256,
)
from reverie.session_memory.template import (
    NotesTemplate,
    guard_update,
    load_template,
)
from reverie.session_memory.thresholds import ThresholdConfig, ThresholdCounter, ThresholdDecision
from reverie.session_memory.writers import NotesWriter, OfflineWriter, WriteOutcome, WriteRequest
from reverie.transcripts.digest import MessageDigest
from reverie.transcripts.model import Message, Session

logger = logging.getLogger(__name__)

WAIT_TIMEOUT_SECONDS = 15.0
#: digests a threshold check folds in on the event loop (about 0.25 us each); more go to a thread
INLINE_FOLD_LIMIT = 2_000
STALE_AFTER_SECONDS = 60.0

SkipReason = Literal[
    "disabled", "subagent", "threshold", "coalesced", "missing_llm", "missing_tools",
    "over_budget",
]
ClientFactory = Callable[[Settings, Literal["session_memory"]], ModelClient]
SubmitStatus = Literal[
    "scheduled", "coalesced", "disabled", "subagent", "threshold"
]


class ExtractionResult(BaseModel):
    """The outcome of one extraction request. ``as_json()`` is the CLI's ``--json`` contract."""

    notes_path: str | None = None
    ran: bool = False
    skipped_reason: str | None = None
    edited: bool = False
    tokens_in: int = 0
    tokens_out: int = 0
    redactions: int = 0
    error: str | None = None
    turns: int = 0
    duration_ms: int = 0
    writer: str | None = None

    def as_json(self) -> dict[str, Any]:
        return {
            "notes_path": self.notes_path,
            "ran": self.ran,
            "skipped_reason": self.skipped_reason,
            "edited": self.edited,
            "tokens_in": self.tokens_in,
            "tokens_out": self.tokens_out,
            "redactions": self.redactions,
        }


@dataclass(slots=True)
class _Request:
    session: Session
    conversation: Conversation
    workspace: Path


@dataclass(slots=True)
class _Chain:
    """The extraction running for one session, plus what the waiter needs."""

    started_at: float
    idle: asyncio.Event = field(default_factory=asyncio.Event)
    task: asyncio.Task[None] | None = None


class SessionMemoryManager:
    """Keeps every session's notes up to date. See the module docstring for the flow."""

    def __init__(
        self,
        settings: Settings,
        events: EventSink,
        client_factory: ClientFactory | None = None,
    ) -> None:
        self.settings = settings
        self.events = events
        if client_factory is None:
            from reverie.llm.factory import make_client

            client_factory = make_client
        self.client_factory = client_factory
        self._chains: dict[str, _Chain] = {}
        self._pending: dict[str, _Request] = {}
        self._states: dict[str, ExtractionState] = {}
        self._counters: dict[str, tuple[ThresholdCounter, asyncio.Lock]] = {}
        self._keys: dict[tuple[str, Path, Path], str] = {}
        self._tasks: set[asyncio.Task[None]] = set()

    # -- public API -------------------------------------------------------------------------

    def notes_path(self, session_id: str, workspace: Path) -> Path:
        return ProjectPaths(self.settings, workspace).notes_path(session_id)

    def state_for(self, session_id: str, workspace: Path) -> ExtractionState:
        """The session's extraction state (loaded from beside the notes on first use)."""
        key = self._key(session_id, workspace)
        state = self._states.get(key)
        if state is None:
            path = ProjectPaths(self.settings, workspace).notes_state_path(session_id)
            state = load_state(path, session_id)
            self._states[key] = state
        return state

    async def on_messages(
        self, session: Session, messages: Sequence[Message], workspace: Path
    ) -> SubmitStatus:
        """Called when a session grew: start an extraction in the background if one is due."""
        return await self.on_conversation(session, InMemoryConversation(messages), workspace)

    async def on_conversation(
        self, session: Session, conversation: Conversation, workspace: Path
    ) -> SubmitStatus:
        """``on_messages`` for a conversation held elsewhere (the language server's)."""
        reason = self._disabled_reason(session)
        if reason is not None:
            self._skip(session.id, reason)
            return reason
        decision = await self._check_threshold(session, conversation.digests(), workspace)
        if not decision.due:
            self._skip(session.id, "threshold", **decision.describe())
            return "threshold"
        if self._coalesce(_Request(session, conversation.snapshot(), workspace)):
            return "coalesced"
        self._start_chain(_Request(session, conversation.snapshot(), workspace), None)
        return "scheduled"

    async def extract(
        self,
        session: Session,
        messages: Sequence[Message],
        workspace: Path,
        force: bool = False,
    ) -> ExtractionResult:
        """Run an extraction now (``force`` ignores the thresholds) and return its result."""
        conversation = InMemoryConversation(messages)
        return await self.extract_conversation(session, conversation, workspace, force)

    async def extract_conversation(
        self,
        session: Session,
        conversation: Conversation,
        workspace: Path,
        force: bool = False,
    ) -> ExtractionResult:
        """``extract`` for a conversation held elsewhere (the language server's)."""
        notes_path = str(self.notes_path(session.id, workspace))
        reason = self._disabled_reason(session)
        if reason is not None:
            self._skip(session.id, reason)
            return ExtractionResult(notes_path=notes_path, skipped_reason=reason)
        if not force:
            decision = await self._check_threshold(session, conversation.digests(), workspace)
            if not decision.due:
                self._skip(session.id, "threshold", **decision.describe())
                return ExtractionResult(notes_path=notes_path, skipped_reason="threshold")
        request = _Request(session, conversation.snapshot(), workspace)
        if self._coalesce(request):
            return ExtractionResult(notes_path=notes_path, skipped_reason="coalesced")
        future: asyncio.Future[ExtractionResult] = asyncio.get_running_loop().create_future()
        self._start_chain(request, future)
        return await future

    def is_running(self, session_id: str) -> bool:
        return session_id in self._chains

    async def wait_for_extraction(
        self, session_id: str, timeout: float = WAIT_TIMEOUT_SECONDS
    ) -> bool:
        """Let compaction wait for an in-flight extraction of ``session_id``.

        Returns True when nothing is running (any more). Gives up (False) after ``timeout``
        seconds, and does not wait at all for a run older than 60 seconds (considered stale).
        """
        chain = self._chains.get(session_id)
        if chain is None:
            return True
        if time.monotonic() - chain.started_at > STALE_AFTER_SECONDS:
            return False
        try:
            await asyncio.wait_for(chain.idle.wait(), timeout=max(0.0, timeout))
        except TimeoutError:
            return False
        return True

    async def drain(self, timeout: float) -> int:
        """Wait up to ``timeout`` seconds for background extractions; return how many remain."""
        tasks = [t for t in self._tasks if not t.done()]
        if not tasks:
            return 0
        _done, pending = await asyncio.wait(tasks, timeout=max(0.0, timeout))
        return len(pending)

    # -- gating -----------------------------------------------------------------------------

    def _disabled_reason(self, session: Session) -> Literal["disabled", "subagent"] | None:
        if not self.settings.session_memory_enabled or self.settings.remote_mode:
            return "disabled"
        if session.parent_session_id is not None:
            return "subagent"
        return None

    async def _check_threshold(
        self, session: Session, digests: Sequence[MessageDigest], workspace: Path
    ) -> ThresholdDecision:
        state = self.state_for(session.id, workspace)
        config = ThresholdConfig.from_settings(self.settings)
        key = self._key(session.id, workspace)
        if key not in self._counters:
            self._counters[key] = (ThresholdCounter(), asyncio.Lock())
        counter, lock = self._counters[key]
        async with lock:  # one thread at a time folds messages into a counter
            # incremental: the cost follows what was appended, not the conversation. A usual
            # append is folded in at once (a fraction of a millisecond, less than handing it
            # to a thread); a rescan of a long conversation goes to a background thread
            if counter.pending(digests, state) <= INLINE_FOLD_LIMIT:
                decision, last_cursor = counter.evaluate(digests, state, config)
            else:
                decision, last_cursor = await run_in_background(
                    counter.evaluate, digests, state, config
                )
            if decision.due:
                counter.mark_due(state, last_cursor)
        return decision

    def _coalesce(self, request: _Request) -> bool:
        """Remember ``request`` for the trailing run when its session is already extracting."""
        if request.session.id not in self._chains:
            return False
        self._pending[request.session.id] = request
        self._emit("coalesced", request.session.id, "extraction coalesced into a trailing run")
        self._skip(request.session.id, "coalesced")
        return True

    # -- running ----------------------------------------------------------------------------

    def _start_chain(
        self, request: _Request, future: asyncio.Future[ExtractionResult] | None
    ) -> None:
        session_id = request.session.id
        chain = _Chain(started_at=time.monotonic())
        self._chains[session_id] = chain
        task = asyncio.create_task(
            self._run_chain(chain, request, future), name=f"session-memory:{session_id}"
        )
        chain.task = task
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _run_chain(
        self,
        chain: _Chain,
        request: _Request,
        future: asyncio.Future[ExtractionResult] | None,
    ) -> None:
        session_id = request.session.id
        marker = marker_path(self.notes_path(session_id, request.workspace).parent)
        try:
            try:
                # another process extracting this session (a compaction hook) goes first: its
                # notes land, then this run starts from them (no two writers at once)
                if await asyncio.to_thread(running_since, marker) is not None:
                    await wait_for_marker(marker)
                # another process (a compaction hook) waits on this file, not on this object
                with contextlib.suppress(OSError):  # without it a hook just does not wait
                    await asyncio.to_thread(write_marker, marker)
                result = await self._run_once(request, chain)
            except BaseException as exc:
                if future is not None and not future.done():
                    future.set_exception(exc)
                raise
            if future is not None and not future.done():
                future.set_result(result)
            while (trailing := self._pending.pop(session_id, None)) is not None:
                self._emit("trailing_start", session_id, "running the coalesced extraction")
                await self._run_once(trailing, chain)
        except asyncio.CancelledError:
            raise
        except Exception:
            logger.exception("session memory extraction of %s crashed", session_id)
        finally:
            self._pending.pop(session_id, None)
            self._chains.pop(session_id, None)
            with contextlib.suppress(OSError):
                clear_marker(marker)
            chain.idle.set()

    async def _run_once(self, request: _Request, chain: _Chain) -> ExtractionResult:
        started = time.monotonic()
        chain.started_at = started
        session, workspace = request.session, request.workspace
        paths = ProjectPaths(self.settings, workspace)
        notes_path = paths.notes_path(session.id)
        result = ExtractionResult(notes_path=str(notes_path))
        state = self.state_for(session.id, workspace)
        template = load_template(self.settings.config_dir)

        try:
            current = await asyncio.to_thread(self._prepare_notes, notes_path, template)
        except (OSError, UnicodeDecodeError) as exc:
            return self._fail(result, session.id, started, f"cannot read the notes file: {exc}")

        try:
            client = self.client_factory(self.settings, "session_memory")
        except LLMError as exc:
            from reverie.llm.budget import BudgetExceeded

            # over the cost governor's cap: its own reason, so nobody is told to set a key
            reason = "over_budget" if isinstance(exc, BudgetExceeded) else "missing_llm"
            self._skip(session.id, reason, error=str(exc), notes_path=str(notes_path))
            result.skipped_reason = reason
            return result

        try:
            writer = self._writer_for(client)
            if writer is None:
                self._skip(session.id, "missing_tools", notes_path=str(notes_path))
                result.skipped_reason = "missing_tools"
                return result
            result.ran = True
            result.writer = writer.name
            self._emit(
                "start", session.id, f"updating session notes ({writer.name})",
                notes_path=str(notes_path), writer=writer.name,
            )
            write_request = WriteRequest(
                session=session,
                workspace=workspace,
                notes_path=notes_path,
                current_notes=current,
                template=template,
                conversation=request.conversation,
                state=state,
                settings=self.settings,
                events=self.events,
            )
            try:
                outcome = await writer.write(write_request)
            except LLMError as exc:
                outcome = WriteOutcome(text=None, error=str(exc))
            except (OSError, ValueError, RuntimeError) as exc:  # a bug must not cost the notes
                logger.exception("the %s notes writer failed", writer.name)
                outcome = WriteOutcome(text=None, error=f"{type(exc).__name__}: {exc}")
        finally:
            try:
                await client.aclose()
            except Exception:  # closing must never hide the result
                logger.debug("closing the model client failed", exc_info=True)

        result.turns = outcome.turns
        result.tokens_in = outcome.tokens_in
        result.tokens_out = outcome.tokens_out
        result.redactions = outcome.redactions
        if outcome.error is not None or outcome.text is None:
            return self._fail(result, session.id, started, outcome.error or "no notes produced")

        new_text = outcome.text
        rejection = guard_update(current, new_text, template)
        if rejection is not None:
            return self._fail(result, session.id, started, f"update rejected: {rejection}")

        edited = new_text != current
        try:
            written = await asyncio.to_thread(
                self._commit, notes_path, current, new_text if edited else None
            )
        except OSError as exc:
            return self._fail(result, session.id, started, f"cannot write the notes: {exc}")
        if not written:
            return self._fail(
                result, session.id, started,
                "the notes file changed during the update; the hand edit is kept",
            )

        point = outcome.point
        state.initialized = True
        if point is not None:
            state.tokens_at_last_extraction = point.tokens
            if point.cursor is not None:
                state.last_extracted_cursor = point.cursor
                if not point.mid_tool_loop:
                    state.last_summarized_cursor = point.cursor
        state.extractions += 1
        state.last_extraction_at = datetime.now(UTC)
        if outcome.generated is not None:
            state.generated = outcome.generated
        state.notes_sha256 = text_sha256(new_text)
        try:
            await asyncio.to_thread(save_state, paths.notes_state_path(session.id), state)
        except OSError as exc:
            logger.warning("cannot save the session memory state: %s", exc)

        result.edited = edited
        result.duration_ms = int((time.monotonic() - started) * 1000)
        self._emit(
            "complete", session.id,
            "session memory updated" if edited else "session memory checked",
            turns=result.turns, edited=edited, tokens_in=result.tokens_in,
            tokens_out=result.tokens_out, duration_ms=result.duration_ms,
            redactions=result.redactions, notes_path=str(notes_path), writer=result.writer,
            **({"cost_usd": outcome.cost_usd} if outcome.cost_usd is not None else {}),
        )
        self._emit(
            "notes_updated", session.id,
            f"Session memory {'updated' if edited else 'checked'}: {notes_path}",
            session_id=session.id, path=str(notes_path), edited=edited,
        )
        return result

    def _writer_for(self, client: ModelClient) -> NotesWriter | None:
        if client.is_offline:
            return OfflineWriter()
        try:
            from reverie.session_memory.llm_writer import LLMWriter
        except ImportError:
            logger.warning("the tool loop is not available; cannot run the LLM notes writer")
            return None
        return LLMWriter(client)

    # -- files ------------------------------------------------------------------------------

    @staticmethod
    def _prepare_notes(notes_path: Path, template: NotesTemplate) -> str:
        """The notes text; the file is created from the template only when it does not exist."""
        ensure_private_dir(notes_path.parent)
        try:
            return notes_path.read_text(encoding="utf-8")
        except FileNotFoundError:
            atomic_write_text(notes_path, template.text)
            return template.text

    @staticmethod
    def _commit(notes_path: Path, expected: str, new_text: str | None) -> bool:
        """Write ``new_text`` unless the file no longer holds ``expected`` (a hand edit)."""
        try:
            on_disk = notes_path.read_text(encoding="utf-8")
        except FileNotFoundError:
            on_disk = None
        if on_disk is not None and on_disk != expected:
            return False
        if new_text is not None:
            atomic_write_text(notes_path, new_text)
        return True

    # -- events -----------------------------------------------------------------------------

    def _key(self, session_id: str, workspace: Path) -> str:
        """The session's key (its project's data dir plus its id), remembered: working it out
        resolves the workspace path, a few syscalls, and every append needs it."""
        memo = (session_id, workspace, self.settings.data_dir)
        key = self._keys.get(memo)
        if key is None:
            key = self._keys[memo] = f"{ProjectPaths(self.settings, workspace).root}::{session_id}"
        return key

    def _fail(
        self, result: ExtractionResult, session_id: str, started: float, error: str
    ) -> ExtractionResult:
        result.error = error
        result.edited = False
        result.duration_ms = int((time.monotonic() - started) * 1000)
        logger.warning("session memory for %s: %s", session_id, error)
        self._emit(
            "error", session_id, f"Session memory update failed: {error}",
            error=error, notes_path=result.notes_path, duration_ms=result.duration_ms,
            turns=result.turns, tokens_in=result.tokens_in, tokens_out=result.tokens_out,
        )
        return result

    def _skip(self, session_id: str, reason: str, **payload: Any) -> None:
        self._emit("skipped", session_id, f"extraction skipped: {reason}", reason=reason, **payload)

    def _emit(self, type_: EventType, sid: str, message: str, /, **payload: Any) -> None:
        try:
            self.events(
                JobEvent(
                    job="session_memory", type=type_, session_id=sid,
                    message=message, payload=payload,
                )
            )
        except Exception:  # a broken sink must not stop the job
            logger.exception("event sink failed")
