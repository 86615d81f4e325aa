"""Per-workspace-folder tracking: sessions, session memory, dream gates, the sleep schedule,
memory-dir diagnostics and the commands that read them.

A ``WorkspaceTracker`` adapts the core (transcripts, session memory, dream, sleep, memory) to the
server. Anything that touches many files or parses transcripts runs off the event loop.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import logging
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from reverie.config import ProjectPaths, Settings
from reverie.events import JobEvent
from reverie.fsutil import atomic_write_text, ensure_private_dir
from reverie.lsp.features import diagnostics as diag
from reverie.lsp.features import staleness
from reverie.lsp.features.dream import auto_dream_if_due, start_dream
from reverie.lsp.features.notes import feed_session_memory, forced_extraction
from reverie.lsp.jobs import Job, JobResult
from reverie.lsp.protocol import (
    AppendMessagesParams,
    HistoryResult,
    JobStarted,
    SessionNotesResult,
    SessionsResult,
    SessionSummary,
    UndoResult,
)
from reverie.services.sessions import NoSession

if TYPE_CHECKING:
    from reverie.lsp.context import ServerContext
    from reverie.memory.lock import LockStatus
    from reverie.transcripts.digest import MessageDigest
    from reverie.transcripts.discovery import SessionRef
    from reverie.transcripts.model import Session

logger = logging.getLogger(__name__)

#: how long the watcher waits before restarting after an unexpected failure
WATCH_RESTART_SECONDS = 5.0
#: settings whose change means the watcher / memory dir must be set up again
_PLACE_FIELDS = ("agent_home", "data_dir", "memory_dir", "memory_dir_preset", "watch_debounce_ms")


class WorkspaceTracker:
    """Everything Reverie follows for one workspace folder."""

    def __init__(self, server: ServerContext, folder: Path) -> None:
        self.server = server
        self.folder = folder
        self.sessions: dict[str, SessionRef] = {}
        self.current: SessionRef | None = None
        self.last_activity = time.monotonic()
        self._watch_task: asyncio.Task[None] | None = None
        self._sleep_task: asyncio.Task[None] | None = None
        self._watcher: Any = None
        self._stopping = False
        self._last_dream_scan = 0.0
        self._dream_check_pending = False
        self._lock_snapshot: dict[str, Any] | None = None
        #: uris of memory files that currently carry diagnostics
        self.memory_uris: set[str] = set()
        #: the folder's agent connections as last read (monotonic time, the core's result):
        #: ``status`` answers from it instead of reading config files on every call
        self.connections_cache: tuple[float, Any] | None = None
        #: what Reverie did about a lock a dead process left (shown on MEMORY.md)
        self.lock_recovery: str | None = None
        self.lock_recovery_pid: int | None = None

    # --- places --------------------------------------------------------------------------------

    @property
    def settings(self) -> Settings:
        return self.server.settings

    @property
    def paths(self) -> ProjectPaths:
        return ProjectPaths(self.settings, self.folder)

    @property
    def memory_dir(self) -> Path:
        return self.paths.memory_dir.expanduser().resolve()

    def owns(self, path: Path) -> bool:
        """True for files of this folder, its Reverie data and its memory dir."""
        path = path.expanduser().resolve()
        roots = (self.folder, self.paths.root.resolve(), self.memory_dir)
        return any(path == root or path.is_relative_to(root) for root in roots)

    # --- lifecycle -----------------------------------------------------------------------------

    async def start(self) -> None:
        self._stopping = False
        await self._recover_lock()
        await self.rediscover()
        logger.info(
            "tracking %s: %d session(s), memory in %s",
            self.folder,
            len(self.sessions),
            self.memory_dir,
        )
        self._watch_task = self.server.run_task(self._watch_loop(), f"watch {self.folder.name}")
        self._sleep_task = self.server.run_task(self._sleep_loop(), f"sleep {self.folder.name}")
        self.refresh_memory_diagnostics()
        self.server.run_task(self._check_dream(), f"dream gates {self.folder.name}")

    async def _recover_lock(self) -> None:
        """At start-up: finish or roll back a run a killed process left, and say what was done
        (on ``MEMORY.md``; ``services.memory.recover_at_start``)."""
        from reverie.services.memory import recover_at_start

        found = await asyncio.to_thread(recover_at_start, self.server.memory_writer,
                                        self.memory_dir)
        if found is not None:
            self.lock_recovery_pid = found.pid
            self.lock_recovery = found.action
            logger.warning("lock in %s left by dead PID %s: %s", self.memory_dir, found.pid,
                           found.action)

    async def stop(self) -> None:
        """Stop the watcher (letting it end its iteration and save its state), then the rest."""
        self._stopping = True
        if self._watcher is not None:
            try:
                self._watcher.stop()
            except Exception:
                logger.debug("watcher stop failed", exc_info=True)
        if self._watch_task is not None and not self._watch_task.done():
            await asyncio.wait([self._watch_task], timeout=2.0)
        tasks = [t for t in (self._watch_task, self._sleep_task) if t is not None]
        for task in tasks:
            if not task.done():
                task.cancel()
        if tasks:
            await asyncio.wait(tasks, timeout=2.0)

    def settings_changed(self, previous: Settings) -> None:
        now = self.settings
        if any(getattr(previous, f) != getattr(now, f) for f in _PLACE_FIELDS):
            logger.info("places changed for %s: restarting the watcher", self.folder)
            self.server.run_task(self._restart(), f"restart {self.folder.name}")
        elif (previous.sleep_time, previous.sleep_enabled) != (now.sleep_time, now.sleep_enabled):
            if self._sleep_task is not None:
                self._sleep_task.cancel()
            self._sleep_task = self.server.run_task(self._sleep_loop(), f"sleep {self.folder.name}")

    async def _restart(self) -> None:
        await self.stop()
        await self.start()

    # --- sessions ------------------------------------------------------------------------------

    async def rediscover(self) -> None:
        from reverie.transcripts.discovery import discover_sessions

        try:
            refs = await asyncio.to_thread(discover_sessions, self.folder, self.settings.agent_home,
                                           self.server.editor_places())
        except Exception:
            logger.exception("session discovery failed for %s", self.folder)
            return
        for ref in refs:
            self._remember(ref)

    def _remember(self, ref: SessionRef) -> None:
        self.sessions[ref.session_id] = ref
        if ref.parent_session_id is not None:
            return
        current = self.current
        if (
            current is None
            or current.session_id == ref.session_id
            or _ts(ref.updated_at) >= _ts(current.updated_at)
        ):
            self.current = ref

    def sessions_tracked(self) -> int:
        return len(self.sessions)

    def current_summary(self) -> SessionSummary | None:
        ref = self.current
        if ref is None:
            return None
        return SessionSummary(
            session_id=ref.session_id,
            agent=ref.agent,
            path=str(ref.path),
            cwd=ref.cwd,
            updated_at=ref.updated_at,
            parent_session_id=ref.parent_session_id,
        )

    def _session_id(self, session_id: str | None) -> str:
        if session_id:
            return session_id
        if self.current is None:
            raise NoSession(f"no session found for workspace {self.folder}")
        return self.current.session_id

    @property
    def _watch_state_path(self) -> Path:
        return self.paths.root / "watch-state.json"

    def _load_watch_state(self) -> dict[str, Any]:
        try:
            data = json.loads(self._watch_state_path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as exc:
            logger.warning("ignoring unreadable %s: %s", self._watch_state_path, exc)
            return {}
        return data if isinstance(data, dict) else {}

    def _save_watch_state(self, watcher: Any) -> None:
        """Tail positions, so what agents append while the editor is closed is caught up."""
        try:
            states = {k: v.model_dump(mode="json") for k, v in watcher.states().items()}
            ensure_private_dir(self.paths.root)
            atomic_write_text(self._watch_state_path, json.dumps(states))
        except Exception:
            logger.warning("could not save watcher state for %s", self.folder, exc_info=True)

    async def _watch_loop(self) -> None:
        from reverie.transcripts.discovery import generic_sessions_dir
        from reverie.transcripts.watch import SessionWatcher

        states = await asyncio.to_thread(self._load_watch_state)
        # where pushed chats (reverie/appendMessages) go: watched from the start
        await asyncio.to_thread(ensure_private_dir, generic_sessions_dir(self.settings.agent_home))
        while not self._stopping:
            s = self.settings
            try:
                watcher = SessionWatcher(
                    self.folder, s.agent_home, s.watch_debounce_ms, tail_states=states or None,
                    worker=self.server.workers.parse, editor=self.server.editor_places(),
                )
            except Exception:  # a corrupt saved state must not stop tracking
                logger.warning("discarding saved watcher state", exc_info=True)
                watcher = SessionWatcher(
                    self.folder, s.agent_home, s.watch_debounce_ms,
                    worker=self.server.workers.parse, editor=self.server.editor_places(),
                )
            states = {}
            self._watcher = watcher
            try:
                async for appended in watcher:
                    await self.on_appended(appended.ref, appended.session, appended.digests)
                return
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                logger.exception("watching %s failed; restarting", self.folder)
                self.server.on_job_event(
                    JobEvent(
                        job="watch",
                        type="error",
                        message=f"watching sessions failed: {exc}",
                        payload={"workspace": str(self.folder)},
                    )
                )
                await asyncio.sleep(WATCH_RESTART_SECONDS)
            finally:
                watcher.stop()
                await asyncio.to_thread(self._save_watch_state, watcher)

    async def on_appended(
        self, ref: SessionRef, session: Session, digests: list[MessageDigest]
    ) -> None:
        """New messages of a session: remember it, feed session memory, check the dream gates."""
        self._remember(ref)
        self.last_activity = time.monotonic()
        if digests:
            await self._feed_session_memory(ref, session, digests)
        self.schedule_dream_check()

    async def append_pushed(self, pushed: AppendMessagesParams) -> None:
        """Messages pushed by a client (``reverie/appendMessages``) take the watcher's path."""
        from reverie.lsp.features.pushed import append_pushed
        from reverie.transcripts.digest import pushed_session_digests

        # kept as a generic transcript: the watcher and discovery see it like any other session;
        # it is also fed at once (the conversation digests drop the watcher's repeat of it)
        path = await asyncio.to_thread(append_pushed, self.settings.agent_home, pushed)
        read = await self.server.workers.load.call(pushed_session_digests, path)
        if read is not None:
            await self.on_appended(*read)

    async def list_sessions(self) -> SessionsResult:
        """``reverie sessions --json`` rows for this folder, with titles and notes (off the
        loop; ``services.sessions.list_sessions``)."""
        from reverie.lsp.protocol import SessionRow
        from reverie.services.sessions import list_sessions

        def skipped(path: Path, exc: Exception) -> None:
            logger.warning("skipping %s: %s", path, exc)

        rows = await asyncio.to_thread(list_sessions, self.folder, self.settings.agent_home,
                                       skipped, paths=self.paths,
                                       editor=self.server.editor_places())
        return SessionsResult(sessions=[SessionRow.model_validate(r) for r in rows])

    async def session_notes(self, session_id: str | None) -> SessionNotesResult:
        from reverie.services.sessions import read_session_notes

        notes = await asyncio.to_thread(read_session_notes, self.paths,
                                        self._session_id(session_id))
        return SessionNotesResult(session_id=notes.session_id, path=str(notes.path),
                                  content=notes.content, exists=notes.exists)

    # --- session memory ------------------------------------------------------------------------

    async def _feed_session_memory(
        self, ref: SessionRef, session: Session, digests: list[MessageDigest]
    ) -> None:
        try:
            await feed_session_memory(self, ref, session, digests)
        except Exception:
            logger.exception("session memory failed for %s", ref.session_id)

    async def update_notes(self, session_id: str | None) -> JobStarted:
        sid = self._session_id(session_id)
        ref = self.sessions.get(sid)
        if ref is None:
            await self.rediscover()
            ref = self.sessions.get(sid)
        if ref is None:
            raise NoSession(f"unknown session {sid}")
        job = forced_extraction(self, ref)
        return JobStarted(job_id=job.id, title=job.title)

    # --- dream ---------------------------------------------------------------------------------

    def dream_key(self) -> str:
        return f"dream:{self.memory_dir}"

    def schedule_dream_check(self) -> None:
        """Check the gates soon (once per burst of appended messages)."""
        if self._dream_check_pending:
            return
        self._dream_check_pending = True
        self.server.run_task(self._check_dream(), f"dream gates {self.folder.name}")

    async def _check_dream(self) -> None:
        self._dream_check_pending = False
        if self.server.shutting_down:
            return
        try:
            await auto_dream_if_due(self)
        except Exception:
            logger.exception("dream gate check failed for %s", self.folder)

    async def manual_dream(self, extra_context: str | None, logs_mode: bool) -> JobStarted:
        running = self.server.jobs.running_with_key(self.dream_key())
        if running is not None:
            return JobStarted(job_id=running.id, title=running.title, already_running=True)
        job = start_dream(self, manual=True, extra_context=extra_context, logs_mode=logs_mode)
        return JobStarted(job_id=job.id, title=job.title)

    # --- sleep ---------------------------------------------------------------------------------

    async def run_sleep(self, date: dt.date | None) -> JobStarted:
        key = f"sleep:{self.paths.root}"
        running = self.server.jobs.running_with_key(key)
        if running is not None:
            return JobStarted(job_id=running.id, title=running.title, already_running=True)
        job = self._start_sleep(date)
        return JobStarted(job_id=job.id, title=job.title)

    def _start_sleep(self, date: dt.date | None) -> Job:
        folder = self.folder

        async def body(job: Job) -> JobResult:
            from reverie.sleep.cycle import SleepCycle

            cycle = SleepCycle(
                self.settings, events=self.server.jobs.sink_for(job),
                run=self.server.workers.dream_call,
                writer=self.server.memory_writer, editor=self.server.editor_places(),
            )
            report = await cycle.run(folder, date)
            if report.skipped_reason:
                return JobResult(
                    "skipped", report.skipped_reason, {"reason": report.skipped_reason}
                )
            return JobResult("complete", "sleep cycle done", report.to_json_dict())

        title = f"Sleep cycle{f' for {date.isoformat()}' if date else ''}"
        return self.server.jobs.start(
            "sleep", title, body, workspace=folder, key=f"sleep:{self.paths.root}"
        )

    async def _sleep_loop(self) -> None:
        from reverie.sleep.schedule import load_state, seconds_until_next_run

        while not self._stopping:
            s = self.settings
            if not s.sleep_enabled:
                return
            state = await asyncio.to_thread(load_state, self.paths)
            now = dt.datetime.now().astimezone()
            delay = seconds_until_next_run(now, s.sleep_time, state.last_run_date)
            # wake at least hourly: clock changes and suspended laptops shift the schedule
            await asyncio.sleep(min(delay, 3600.0))
            if delay > 3600.0:
                continue
            if self.server.jobs.running_with_key(f"sleep:{self.paths.root}") is None:
                job = self._start_sleep(None)
                if job.task is not None:
                    await asyncio.wait([job.task])
            # never run twice for the same slot, even if the cycle did not record its run
            await asyncio.sleep(60.0)

    # --- memory dir: lock, history, undo, diagnostics -------------------------------------------

    async def lock_status(self) -> LockStatus:
        """What ``reverie lock --json`` reports for this folder, with the server's scan
        throttle (``services.memory.memory_lock_status``)."""
        from reverie.services.memory import memory_lock_status

        return await asyncio.to_thread(
            memory_lock_status, self.settings, self.folder, self.memory_dir,
            current_session_id=self.current.session_id if self.current else None,
            throttle=self.server.dream_throttle, editor=self.server.editor_places(),
        )

    async def lock_status_json(self) -> dict[str, Any]:
        """``lockStatus`` / ``reverie/lockChanged`` for this folder (camelCase)."""
        from reverie.lsp.protocol import LockStatusResult

        status = await self.lock_status()
        return LockStatusResult.model_validate(status.model_dump()).wire()

    async def history(
        self, limit: int | None, *, run_id: str | None = None, with_contents: bool = False
    ) -> HistoryResult:
        """The memory runs of this folder, newest first (``services.memory.memory_runs``).

        With ``run_id`` only that run; ``with_contents`` adds its files' before/after texts so
        the editor can show a real diff.
        """
        from reverie.lsp.protocol import HistoryResult, HistoryRun, RunFile
        from reverie.services.memory import memory_runs

        memory_dir = self.memory_dir

        def text(data: bytes | None) -> str | None:
            return None if data is None else data.decode("utf-8", "replace")

        entries = await asyncio.to_thread(memory_runs, memory_dir, run_id=run_id,
                                          with_contents=with_contents)
        runs = []
        for entry in entries:
            run = HistoryRun.of(entry.record, undone=entry.undone)
            if entry.changes is not None:
                run.changes = [RunFile(path=c.path, before=text(c.before), after=text(c.after))
                               for c in entry.changes]
            runs.append(run)
        return HistoryResult(memory_dir=str(memory_dir), runs=runs[:limit] if limit else runs)

    async def undo(self, run_id: str | None, *, redo: bool = False) -> UndoResult:
        """Undo a run (default: the latest dream or sleep run in effect; ``redo``: the latest
        undo in effect), recorded as a run of its own; the result says what changed."""
        from reverie.lsp.protocol import HistoryRun, UndoResult
        from reverie.services.memory import UndoRefused, undo

        memory_dir = self.memory_dir
        if self.server.jobs.running_with_key(self.dream_key()) is not None:
            raise UndoRefused("a dream is running for this memory directory; try again after it")
        outcome = await undo(self.server.memory_writer, memory_dir, run_id, redo=redo)
        touched = outcome.touched
        self.memory_written([memory_dir / name for name in touched])
        self.lock_changed()
        record = outcome.result.record
        return UndoResult(
            memory_dir=str(memory_dir),
            undone_run_id=outcome.target.run_id,
            run=HistoryRun.of(record) if record and touched else None,
            changed=bool(touched),
            files=touched,
            message=outcome.message,
        )

    def memory_written(self, paths: list[Path]) -> None:
        """A job or undo changed memory files: refresh their diagnostics (and the index's)."""
        self.refresh_memory_diagnostics()

    def lock_changed(self) -> None:
        self.server.run_task(self._publish_lock(), f"lock {self.folder.name}")

    async def _publish_lock(self) -> None:
        from reverie.lsp.protocol import Notifications

        try:
            status = await self.lock_status_json()
        except Exception:
            logger.exception("lock status failed for %s", self.folder)
            return
        if status != self._lock_snapshot:
            self._lock_snapshot = status
            self.server.notify(Notifications.LOCK_CHANGED, status)
        self.refresh_memory_diagnostics()

    def refresh_memory_diagnostics(self) -> None:
        self.server.run_task(self._refresh_memory(), f"memory diagnostics {self.folder.name}")

    async def _refresh_memory(self) -> None:
        try:
            await diag.publish_memory_dir(self.server, self)
            await staleness.publish(self.server, self)
        except Exception:
            logger.exception("memory diagnostics failed for %s", self.memory_dir)

    def refresh_diagnostics(self, path: Path) -> None:
        """Diagnostics of one file this tracker owns (memory file or session notes)."""
        path = path.expanduser().resolve()
        if path.is_relative_to(self.memory_dir):
            self.refresh_memory_diagnostics()
        elif path.name == "session_memory.md" and path.is_relative_to(self.paths.root.resolve()):
            diag.publish_notes(self.server, self, path)


def _ts(value: dt.datetime | None) -> float:
    if value is None:
        return 0.0
    if value.tzinfo is None:
        value = value.replace(tzinfo=dt.UTC)
    return value.timestamp()
