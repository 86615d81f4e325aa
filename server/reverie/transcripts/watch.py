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
every change is read with ``TranscriptTail`` off the event loop (``asyncio.to_thread``) and
reported when it produced messages.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import watchfiles
from pydantic import BaseModel

from reverie.background import lower_thread_priority
from reverie.transcripts.discovery import (
    SessionRef,
    aider_history_files,
    discover_sessions,
    generic_sessions_dir,
    session_ref,
)
from reverie.transcripts.model import Message, Session
from reverie.transcripts.tail import TailState, TranscriptTail

logger = logging.getLogger(__name__)

_SESSION_SUFFIXES = (".jsonl", ".json", ".messages")
#: a file whose head was read without finding its project is checked again while it is this small
_RECHECK_BELOW = 1024 * 1024


class SessionAppended(BaseModel):
    """New messages of one session, in file order."""

    ref: SessionRef
    session: Session
    messages: list[Message]


def _is_session_file(change: watchfiles.Change, path: str) -> bool:
    return path.endswith(_SESSION_SUFFIXES) or path.endswith(".aider.chat.history.md")


class SessionWatcher:
    """Async iterator of ``SessionAppended`` for one workspace; ``stop()`` ends the iteration."""

    def __init__(
        self,
        workspace: Path,
        agent_home: Path | None = None,
        debounce_ms: int | None = None,
        *,
        tail_states: Mapping[str, TailState | dict[str, Any]] | None = None,
        prime: bool = True,
    ) -> None:
        if agent_home is None or debounce_ms is None:
            from reverie.config import Settings

            settings = Settings()
            agent_home = agent_home if agent_home is not None else settings.agent_home
            debounce_ms = debounce_ms if debounce_ms is not None else settings.watch_debounce_ms
        self.workspace = Path(workspace)
        self.agent_home = Path(agent_home).expanduser()
        self.debounce_ms = max(1, int(debounce_ms))
        self._prime = prime
        self._stop = asyncio.Event()
        self._roots_changed = asyncio.Event()
        self._tails: dict[Path, TranscriptTail] = {}
        self._membership: dict[Path, tuple[bool, int]] = {}
        self._resumed: set[Path] = set()
        for key, state in (tail_states or {}).items():
            tail = TranscriptTail.restore(state)
            self._tails[Path(key)] = tail
            self._membership[Path(key)] = (True, 0)
            self._resumed.add(Path(key))

    # -- public --------------------------------------------------------------------------------
    def stop(self) -> None:
        """End the iteration (also from another task); pending changes are dropped."""
        self._stop.set()

    def states(self) -> dict[str, TailState]:
        """Tail states to pass back as ``tail_states`` after a restart."""
        return {str(path): tail.state() for path, tail in self._tails.items()}

    def agent_roots(self) -> list[Path]:
        home = self.agent_home
        return [home / ".claude" / "projects", home / ".codex" / "sessions",
                home / ".gemini" / "tmp", generic_sessions_dir(home)]

    def __aiter__(self) -> AsyncIterator[SessionAppended]:
        return self._run()

    # -- internals -----------------------------------------------------------------------------
    async def _run(self) -> AsyncIterator[SessionAppended]:
        # parsing gets a thread of its own at background priority: a big append keeps it busy
        # for seconds, and the event loop thread must win the CPU whenever it has work
        parser = ThreadPoolExecutor(1, "reverie-parse", initializer=lower_thread_priority)
        loop = asyncio.get_running_loop()
        try:
            async for event in self._run_with(parser, loop):
                yield event
        finally:
            parser.shutdown(wait=False, cancel_futures=True)

    async def _run_with(
        self, parser: ThreadPoolExecutor, loop: asyncio.AbstractEventLoop
    ) -> AsyncIterator[SessionAppended]:
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
            for event in await loop.run_in_executor(parser, self._scan, not self._prime,
                                                    started_ns):
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
                    events = await loop.run_in_executor(parser, self._scan, True, None)
                else:
                    events = await loop.run_in_executor(parser, self._apply, changes)
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
            missing = [r for r in self.agent_roots() if not r.is_dir()]
            for root in missing:
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
                sessionish = {c for c in changes if _is_session_file(*c)}
                if sessionish:
                    await queue.put(sessionish)
                if missing and any(r.is_dir() for r in missing):
                    self._roots_changed.set()
                    restart.set()

    async def _wait_any(self, event: asyncio.Event) -> None:
        waiters = {asyncio.create_task(self._stop.wait()), asyncio.create_task(event.wait())}
        try:
            await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for waiter in waiters:
                waiter.cancel()

    def _scan(self, report: bool, watched_since_ns: int | None) -> list[SessionAppended]:
        """Read every discovered session; report what it produced only when ``report``.

        Otherwise a session is primed (its tail advanced, its messages not kept) unless it was
        resumed from a saved state (what was appended while we were not running is reported) or
        modified after ``watched_since_ns`` (created or grown once the watches were running).
        """
        events: list[SessionAppended] = []
        refs = discover_sessions(self.workspace, self.agent_home)
        for path in dict.fromkeys(ref.path for ref in refs):
            self._membership[path] = (True, 0)
            resumed = path in self._resumed
            self._resumed.discard(path)
            if report or resumed or self._modified_since(path, watched_since_ns):
                event = self._read(path)
                if event is not None:
                    events.append(event)
            else:
                self._skip(path)
        return events

    @staticmethod
    def _modified_since(path: Path, since_ns: int | None) -> bool:
        if since_ns is None:
            return False
        try:
            return path.stat().st_mtime_ns > since_ns
        except OSError:
            return False

    def _skip(self, path: Path) -> None:
        """Advance the tail to the end of ``path`` without keeping what it says."""
        tail = self._tails.get(path)
        if tail is None:
            tail = self._tails[path] = TranscriptTail(path)
        try:
            tail.skip_to_end()
        except OSError as exc:
            logger.warning("cannot read transcript %s: %s", path, exc.strerror or exc)

    def _apply(self, changes: set[tuple[watchfiles.Change, str]]) -> list[SessionAppended]:
        events: list[SessionAppended] = []
        for path in sorted({Path(p) for change, p in changes if p}):
            if not path.is_file():
                self._tails.pop(path, None)
                self._membership.pop(path, None)
                continue
            if not self._belongs(path):
                continue
            event = self._read(path)
            if event is not None:
                events.append(event)
        return events

    def _belongs(self, path: Path) -> bool:
        try:
            size = path.stat().st_size
        except OSError:
            return False
        known = self._membership.get(path)
        if known is not None and (known[0] or known[1] == size or size >= _RECHECK_BELOW):
            return known[0]
        ok = session_ref(path, self.workspace, self.agent_home) is not None
        self._membership[path] = (ok, size)
        return ok

    def _read(self, path: Path) -> SessionAppended | None:
        tail = self._tails.get(path)
        if tail is None:
            tail = self._tails[path] = TranscriptTail(path)
        try:
            messages = tail.read_new()
        except OSError as exc:
            logger.warning("cannot read transcript %s: %s", path, exc.strerror or exc)
            return None
        if not messages:
            return None
        session = tail.session.model_copy(deep=True)
        try:
            updated = datetime.fromtimestamp(path.stat().st_mtime, UTC)
        except OSError:
            updated = datetime.now(UTC)
        ref = SessionRef(agent=session.agent, session_id=session.id, path=path,
                         updated_at=updated, parent_session_id=session.parent_session_id,
                         cwd=session.cwd)
        return SessionAppended(ref=ref, session=session, messages=messages)


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
