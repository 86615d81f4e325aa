"""Watching a workspace's agent transcripts and reporting what each session appended.

``SessionWatcher`` is an async iterator of ``SessionAppended`` events built on
``watchfiles.awatch`` (inotify / FSEvents / ReadDirectoryChangesW: no polling loop). One
recursive watcher covers the agents' session roots under the agent home; a second,
non-recursive one covers the workspace folder (Aider's history) and the nearest existing parents
of roots that do not exist yet, so that an agent run for the first time is picked up: when a
missing root appears, the recursive watcher restarts with it and a catch-up scan reads any
session files created meanwhile.

At start the watches are set up first and the sessions already on disk are scanned afterwards,
so that a session created meanwhile is not missed: the scan reads each file once without being
reported (``prime``: only the tail positions advance, nothing is kept), or resumes it from a saved
tail state; a file modified after the watches started is reported instead of primed. Afterwards
every change is read by a ``SessionReader`` (``reading.py``) and reported when it produced
messages.

Where the reading happens: by default in a background-priority thread of this process (events
carry messages and their digests). Given a ``ParseWorker``, the reader lives in the worker
process and events carry digests only: the parsing then never holds this process's GIL. The
watcher keeps a copy of the tail states the worker reports after each step, so ``states()``
works after the iteration ended and a reader lost with a dead worker process is re-created from
them (what the lost step was reading is read again, nothing is skipped).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
import uuid
from collections.abc import AsyncIterator, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Protocol

import watchfiles

from reverie.agent_roots import AgentRoots
from reverie.background import lower_thread_priority
from reverie.transcripts import kilo_db
from reverie.transcripts.discovery import aider_history_files
from reverie.transcripts.editor_discovery import editor_watch_roots
from reverie.transcripts.editor_places import EditorPlaces
from reverie.transcripts.reading import SessionAppended, SessionReader
from reverie.transcripts.tail import TailState, TranscriptTail
from reverie.transcripts.worker import ParseWorker, UnknownReader, WorkerDied

__all__ = ["SessionAppended", "SessionWatcher"]

logger = logging.getLogger(__name__)

_SESSION_SUFFIXES = (".jsonl", ".json", ".messages")
#: how many times in a row one step re-creates its reader in a fresh worker before giving up
#: (a transcript that kills the worker every time must end the watch, not loop for ever)
_MAX_RECOVERIES = 2


def _is_session_file(change: watchfiles.Change, path: str) -> bool:
    return (path.endswith(_SESSION_SUFFIXES) or path.endswith(".aider.chat.history.md")
            # Kilo Code's database, or its WAL (where Kilo's writes land first)
            or kilo_db.is_db_name(kilo_db.db_of(Path(path)).name)
            # a new task folder of Cline / Roo / Kilo (Cline 4: a session folder): its first
            # file can be written before the recursive watch covers the folder, so the folder
            # itself is looked into
            or os.path.basename(os.path.dirname(path)) in ("tasks", "sessions"))


class SessionWatcher:
    """Async iterator of ``SessionAppended`` for one workspace; ``stop()`` ends the iteration."""

    def __init__(
        self,
        workspace: Path,
        agent_home: Path,
        debounce_ms: int,
        *,
        tail_states: Mapping[str, TailState | dict[str, Any]] | None = None,
        prime: bool = True,
        worker: ParseWorker | None = None,
        editor: EditorPlaces | None = None,
    ) -> None:
        self.workspace = Path(workspace)
        self.agent_home = Path(agent_home).expanduser()
        self.debounce_ms = max(1, int(debounce_ms))
        self._prime = prime
        #: where the editor's agents keep their sessions, and this workspace's folders there
        self.editor = editor if editor is not None else EditorPlaces.detect(self.agent_home)
        self._editor_roots: list[Path] = []  # found off the loop when the iteration starts
        self._stop = asyncio.Event()
        self._roots_changed = asyncio.Event()
        # a corrupt saved state raises here, in both modes (the caller can start afresh)
        self._reading: _Reading
        if worker is None:
            self._reading = _ThreadReading(self._new_reader(tail_states))
        else:
            states = {str(Path(k)): _checked_state(v).model_dump_json().encode()
                      for k, v in (tail_states or {}).items()}
            self._reading = _WorkerReading(worker, self.workspace, self.agent_home, states,
                                           self.editor)

    # -- public --------------------------------------------------------------------------------
    def stop(self) -> None:
        """End the iteration (also from another task); pending changes are dropped."""
        self._stop.set()

    def states(self) -> dict[str, TailState]:
        """Tail states to pass back as ``tail_states`` after a restart (also once ended)."""
        return self._reading.states()

    def agent_roots(self) -> list[Path]:
        """The folders watched recursively: the terminal agents' session roots under the agent
        home and this workspace's folders of the editor's agents (never a whole user-data dir)."""
        return [*AgentRoots.for_home(self.agent_home).watched(), *self._editor_roots]

    def __aiter__(self) -> AsyncIterator[SessionAppended]:
        return self._run()

    # -- internals -----------------------------------------------------------------------------
    def _new_reader(
        self, tail_states: Mapping[str, TailState | dict[str, Any]] | None
    ) -> SessionReader:
        """The in-process reader (a hook for tests that race the start-up scan)."""
        return SessionReader(self.workspace, self.agent_home, tail_states=tail_states,
                             editor=self.editor)

    async def _run(self) -> AsyncIterator[SessionAppended]:
        self._editor_roots = await asyncio.to_thread(editor_watch_roots, self.workspace,
                                                     self.editor)
        reading = self._reading
        reading.start()
        try:
            async for event in self._run_with(reading):
                yield event
        finally:
            reading.close()

    async def _run_with(self, reading: _Reading) -> AsyncIterator[SessionAppended]:
        queue: asyncio.Queue[set[tuple[watchfiles.Change, str]]] = asyncio.Queue()
        # watch first, scan second: a session created in between is seen by one or the other
        started_ns = time.time_ns()
        readies = [asyncio.Event(), asyncio.Event()]
        tasks = [
            asyncio.create_task(self._watch_roots(queue, readies[0]), name="reverie-watch-roots"),
            asyncio.create_task(self._watch_shallow(queue, readies[1]),
                                name="reverie-watch-shallow"),
        ]
        stop_wait = asyncio.create_task(self._stop.wait())
        try:
            await self._until_ready(readies, tasks)
            if self._stop.is_set():  # stopped while starting: no start-up scan to wait for
                return
            # the start-up scan (in the worker: its start, then every session's head) can take
            # seconds; a stop does not wait for it where its tail states are kept only once it
            # ends (what it read is read again by the next watcher, not lost)
            scan = asyncio.create_task(reading.scan(not self._prime, started_ns))
            await asyncio.wait({scan, stop_wait} if reading.stops_mid_scan else {scan},
                               return_when=asyncio.FIRST_COMPLETED)
            if not scan.done():
                scan.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await scan
                return
            for event in scan.result():
                yield event
            while not self._stop.is_set():
                getter = asyncio.create_task(queue.get())
                done, _ = await asyncio.wait({getter, stop_wait},
                                             return_when=asyncio.FIRST_COMPLETED)
                if getter not in done:
                    getter.cancel()
                    break
                changes = getter.result()
                if changes and next(iter(changes))[1] == "":  # catch-up marker
                    events = await reading.scan(True, None)
                else:
                    events = await reading.apply(path for _, path in changes)
                for event in events:
                    yield event
        finally:
            self._stop.set()
            stop_wait.cancel()
            for task in tasks:
                task.cancel()
            for task in tasks:
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task

    async def _until_ready(
        self, readies: list[asyncio.Event], tasks: list[asyncio.Task[None]]
    ) -> None:
        """Wait until every watch is set up (or one of them ended early, e.g. failed)."""
        waiters: list[asyncio.Future[Any]] = [asyncio.create_task(r.wait()) for r in readies]
        try:
            pending: set[asyncio.Future[Any]] = set(waiters)
            while pending and not any(t.done() for t in tasks):
                _, pending = await asyncio.wait({*pending, *tasks},
                                                return_when=asyncio.FIRST_COMPLETED)
                pending -= set(tasks)
        finally:
            for waiter in waiters:
                waiter.cancel()
        for task in tasks:  # a watch that failed before it started fails the iteration
            if task.done() and not task.cancelled() and task.exception() is not None:
                task.result()

    async def _watch_roots(
        self, queue: asyncio.Queue[set[tuple[watchfiles.Change, str]]], ready: asyncio.Event
    ) -> None:
        """Recursive watch of the existing agent roots; restarts when a missing root appears."""
        first = True
        while not self._stop.is_set():
            roots = [r for r in self.agent_roots() if r.is_dir()]
            self._roots_changed.clear()
            if not first:
                await queue.put({(watchfiles.Change.added, "")})  # catch up after a restart
            first = False
            if not roots:
                ready.set()
                await self._wait_any(self._roots_changed)
                continue
            stop = _AnyEvent(self._stop, self._roots_changed)
            async for changes in _awatch(
                roots, ready, watch_filter=_is_session_file, debounce=self.debounce_ms,
                step=min(50, self.debounce_ms), stop_event=stop, recursive=True,
                ignore_permission_denied=True,
            ):
                await queue.put(changes)

    async def _watch_shallow(
        self, queue: asyncio.Queue[set[tuple[watchfiles.Change, str]]], ready: asyncio.Event
    ) -> None:
        """Non-recursive watch: the workspace (Aider) and parents of agent roots not there yet."""
        while not self._stop.is_set():
            folders = {self.workspace, *(p.parent for p in aider_history_files(self.workspace))}
            # Kilo Code's data folder, not recursively: snapshots and logs churn beside the db
            kilo_dirs = self.editor.kilo_watch_dirs()
            folders.update(d for d in kilo_dirs if d.is_dir())
            kilo_missing = [d for d in kilo_dirs if not d.is_dir()]
            missing = [r for r in self.agent_roots() if not r.is_dir()]
            for root in [*missing, *kilo_missing]:
                parent = root.parent
                while not parent.is_dir() and parent != self.agent_home and parent != parent.parent:
                    parent = parent.parent
                if parent.is_dir():
                    folders.add(parent)
            watched = sorted(str(f) for f in folders if f.is_dir())
            if not watched:
                ready.set()
                await self._wait_any(self._stop)
                return
            restart = asyncio.Event()
            stop = _AnyEvent(self._stop, restart)
            async for changes in _awatch(
                watched, ready, debounce=self.debounce_ms, step=min(50, self.debounce_ms),
                stop_event=stop, recursive=False, ignore_permission_denied=True,
            ):
                sessionish = {c for c in changes if _is_session_file(*c)
                              or self._is_named_kilo_db(c[1])}
                if sessionish:
                    await queue.put(sessionish)
                if missing and any(r.is_dir() for r in missing):
                    self._roots_changed.set()
                    restart.set()
                if kilo_missing and any(d.is_dir() for d in kilo_missing):
                    await queue.put({(watchfiles.Change.added, "")})  # catch up: a db in it
                    restart.set()

    def _is_named_kilo_db(self, path: str) -> bool:
        """The database ``KILO_DB`` names (any file name), or its WAL."""
        named = self.editor.kilo_db
        return named is not None and kilo_db.db_of(Path(path)) == named

    async def _wait_any(self, event: asyncio.Event) -> None:
        waiters = {asyncio.create_task(self._stop.wait()), asyncio.create_task(event.wait())}
        try:
            await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for waiter in waiters:
                waiter.cancel()


async def _awatch(
    paths: list[Path] | list[str], ready: asyncio.Event, **options: Any
) -> AsyncIterator[set[tuple[watchfiles.Change, str]]]:
    """``watchfiles.awatch`` that sets ``ready`` once its OS watches exist.

    ``awatch`` installs them (``RustNotify``) synchronously on its first step, before it first
    waits: once that step has run in a task of its own, changes can no longer slip through.
    """
    changes_of = watchfiles.awatch(*paths, **options)
    async with contextlib.aclosing(changes_of):
        first = asyncio.ensure_future(anext(changes_of))
        try:
            await asyncio.sleep(0)  # let ``first`` run its first step
            ready.set()
            changes = await first
        except StopAsyncIteration:
            return
        finally:
            first.cancel()
        yield changes
        async for changes in changes_of:
            yield changes


class _AnyEvent:
    """Set when any of the given events is set (``watchfiles`` takes one stop event).

    ``awatch`` calls ``set()`` when it is cancelled, to stop its watching thread: that stops this
    one watch only, not the events it combines.
    """

    def __init__(self, *events: asyncio.Event) -> None:
        self._events = events
        self._own = False

    def set(self) -> None:
        self._own = True

    def is_set(self) -> bool:
        return self._own or any(e.is_set() for e in self._events)


def _checked_state(state: TailState | dict[str, Any]) -> TailState:
    """A saved state, validated as ``TranscriptTail.restore`` would (raises when corrupt)."""
    checked = state if isinstance(state, TailState) else TailState.model_validate(state)
    TranscriptTail.restore(checked)
    return checked


class _Reading(Protocol):
    """Where a watcher's ``SessionReader`` runs: a thread here, or the worker process."""

    #: a scan can be abandoned: the tail states move only when it returns
    stops_mid_scan: bool

    def start(self) -> None: ...
    async def scan(self, report: bool, watched_since_ns: int | None) -> list[SessionAppended]: ...
    async def apply(self, paths: Iterable[str]) -> list[SessionAppended]: ...
    def states(self) -> dict[str, TailState]: ...
    def close(self) -> None: ...


class _ThreadReading:
    """The reader in a thread of its own at background priority, in this process.

    A big append keeps it busy for seconds, and the event loop thread must win the CPU
    whenever it has work.
    """

    #: the thread cannot be stopped, and the reader's tail states move as it reads
    stops_mid_scan = False

    def __init__(self, reader: SessionReader) -> None:
        self._reader = reader
        self._parser: ThreadPoolExecutor | None = None

    def start(self) -> None:
        self._parser = ThreadPoolExecutor(1, "reverie-parse", initializer=lower_thread_priority)

    async def scan(self, report: bool, watched_since_ns: int | None) -> list[SessionAppended]:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._parser, self._reader.scan, report,
                                          watched_since_ns)

    async def apply(self, paths: Iterable[str]) -> list[SessionAppended]:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._parser, self._reader.apply, list(paths))

    def states(self) -> dict[str, TailState]:
        return self._reader.states()

    def close(self) -> None:
        if self._parser is not None:
            self._parser.shutdown(wait=False, cancel_futures=True)
            self._parser = None


class _WorkerReading:
    """The reader inside the shared worker process, under a key of its own.

    Each step returns the tail states it changed (as JSON); the copy kept here is what
    ``states()`` decodes and what a fresh reader resumes from when the worker process was lost.
    """

    stops_mid_scan = True

    def __init__(
        self, worker: ParseWorker, workspace: Path, agent_home: Path, states: dict[str, bytes],
        editor: EditorPlaces | None = None,
    ) -> None:
        self._worker = worker
        self._editor = editor
        self._workspace = workspace
        self._agent_home = agent_home
        self._states = states
        self._key = f"watch-{uuid.uuid4().hex}"
        self._opened = False

    def start(self) -> None:
        return None

    async def scan(self, report: bool, watched_since_ns: int | None) -> list[SessionAppended]:
        return await self._step(None, report, watched_since_ns)

    async def apply(self, paths: Iterable[str]) -> list[SessionAppended]:
        return await self._step(sorted({p for p in paths if p}), True, None)

    def states(self) -> dict[str, TailState]:
        return {path: TailState.model_validate_json(raw) for path, raw in self._states.items()}

    def close(self) -> None:
        if self._opened:
            self._opened = False
            self._worker.drop_reader(self._key)

    async def _step(
        self, paths: list[str] | None, report: bool, watched_since_ns: int | None
    ) -> list[SessionAppended]:
        recoveries = 0
        while True:
            try:
                if not self._opened:
                    await self._worker.open_reader(self._key, self._workspace,
                                                   self._agent_home, self._states, self._editor)
                    self._opened = True
                result = await self._worker.read_step(self._key, paths, report,
                                                      watched_since_ns)
            except (WorkerDied, UnknownReader) as exc:
                self._opened = False
                if recoveries >= _MAX_RECOVERIES:
                    raise
                recoveries += 1
                # a fresh reader resumes every known session from its last reported state,
                # so the lost step's appends are read (and reported) again, not skipped
                logger.warning("transcript reader lost (%s); re-creating it from %d states",
                               exc, len(self._states))
                continue
            self._states.update(result.states)
            for path in result.dropped:
                self._states.pop(path, None)
            return result.events
