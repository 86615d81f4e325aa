"""A worker process that reads and parses transcripts, away from the language server's GIL.

Parsing a large append keeps a core busy for seconds. In a thread of the server that work
competes for the server's GIL with the event loop answering the editor; in a process of its own
it only competes for the CPU, where it runs at background priority. The server gets back compact
results (``MessageDigest`` tuples, tail states), never whole conversations.

``ParseWorker`` is one long-lived process (multiprocessing *spawn*: the server has threads, so
it must not fork), started on first use and started again on the next call after it died.
Session readers (``SessionReader``) can live inside it under a key (``open_reader`` /
``read_step`` / ``drop_reader``), so that each append sends only a list of paths one way and
events with digests back.

The process must never write to the server's stdout (the LSP channel): its initializer points
fd 1 at stderr before anything else runs there.
"""

from __future__ import annotations

import asyncio
import logging
import multiprocessing
import os
import sys
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from multiprocessing.process import BaseProcess
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

from reverie.errors import ReverieError
from reverie.priority import lower_process_priority

if TYPE_CHECKING:
    from reverie.transcripts.editor_places import EditorPlaces
    from reverie.transcripts.reading import ReadResult, SessionReader

logger = logging.getLogger(__name__)

T = TypeVar("T")

#: how long the first call waits for a fresh process to answer before giving up
START_TIMEOUT_SECONDS = 60.0


class WorkerDied(BrokenProcessPool):
    """The worker process ended (killed, out of memory) while a call was waiting on it."""


class UnknownReader(ReverieError, LookupError):
    """The worker process has no reader under that key (it was restarted since)."""


class ParseWorker:
    """One long-lived worker process that reads and parses transcripts.

    Shared by everything in the server that parses; safe to call from several tasks (and event
    loops) at once: calls run one after another in the worker, in submission order.
    """

    def __init__(self, idle_seconds: float | None = None) -> None:
        """``idle_seconds``: stop the process once no call has run for that long (its memory
        goes back to the system; the next call starts a new one). ``None``: keep it running,
        as a worker that holds readers must."""
        self._lock = threading.Lock()
        self._executor: ProcessPoolExecutor | None = None
        self._pid: int | None = None
        self._process: BaseProcess | None = None
        self._idle_seconds = idle_seconds
        self._in_flight = 0
        self._last_used = 0.0
        self._idle_timer: asyncio.TimerHandle | None = None

    # -- public --------------------------------------------------------------------------------
    @property
    def pid(self) -> int | None:
        """The worker process's pid, None while no process is running."""
        return self._pid if self._executor is not None else None

    async def call(self, func: Callable[..., T], /, *args: Any) -> T:
        """Run a picklable module-level function in the worker process and return its result.

        Raises what ``func`` raised; ``WorkerDied`` when the process ended during the call (the
        next call starts a new one).
        """
        self._in_flight += 1
        try:
            return await self._call(func, *args)
        finally:
            self._in_flight -= 1
            self._last_used = time.monotonic()
            self._schedule_idle_stop()

    async def _call(self, func: Callable[..., T], /, *args: Any) -> T:
        executor = self._executor
        if executor is not None and not self._alive(executor):
            self._discard(executor)  # died while idle: this call was never in flight
            executor = None
        if executor is None:
            executor = await asyncio.to_thread(self._start)
        try:
            future: Future[T] = executor.submit(func, *args)
        except BrokenProcessPool:  # died just now: one fresh start, then submit again
            self._discard(executor)
            executor = await asyncio.to_thread(self._start)
            future = executor.submit(func, *args)
        try:
            return await asyncio.wrap_future(future)
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if task is not None and task.cancelling() == 0:  # not us: close() dropped the call
                raise WorkerDied("the transcript worker process was closed during a call") from None
            raise
        except BrokenProcessPool as exc:
            pid = self._pid
            self._discard(executor)
            raise WorkerDied(
                f"the transcript worker process (pid {pid}) ended during a call; "
                "the next call starts a new one"
            ) from exc

    def close(self) -> None:
        """Stop the process (idempotent, never hangs); a later call starts a new one."""
        with self._lock:
            executor, self._executor, self._pid, self._process = self._executor, None, None, None
        if executor is not None:
            _stop(executor)

    # -- session readers kept in the worker process ---------------------------------------------
    async def open_reader(
        self,
        key: str,
        workspace: Path,
        agent_home: Path,
        tail_states: Mapping[str, bytes] | None = None,
        editor: EditorPlaces | None = None,
    ) -> None:
        """Create (or replace) reader ``key`` in the worker process, resuming ``tail_states``
        (``TailState`` JSON, as ``ReadResult.states`` carries them)."""
        await self.call(_open_reader, key, workspace, agent_home, dict(tail_states or {}),
                        editor)

    async def read_step(
        self, key: str, paths: Iterable[str] | None, report: bool = True,
        watched_since_ns: int | None = None,
    ) -> ReadResult:
        """Reader ``key`` reads the changed ``paths``; ``paths=None`` scans every session.

        Raises ``UnknownReader`` when the process no longer has that reader.
        """
        return await self.call(_read_step, key, None if paths is None else sorted(paths),
                               report, watched_since_ns)

    def drop_reader(self, key: str) -> None:
        """Forget reader ``key`` in the worker (without waiting; nothing if no process runs)."""
        executor = self._executor
        if executor is None:
            return
        try:
            executor.submit(_drop_reader, key)
        except (BrokenProcessPool, RuntimeError):  # dead or shutting down: nothing to forget
            pass

    # -- internals -----------------------------------------------------------------------------
    def _schedule_idle_stop(self) -> None:
        if self._idle_seconds is None or self._idle_timer is not None:
            return
        loop = asyncio.get_running_loop()
        self._idle_timer = loop.call_later(self._idle_seconds, self._stop_if_idle)

    def _stop_if_idle(self) -> None:
        """On the loop: stop the process when no call ran for ``idle_seconds``."""
        self._idle_timer = None
        if self._executor is None or self._idle_seconds is None:
            return
        idle_for = time.monotonic() - self._last_used
        loop = asyncio.get_running_loop()
        if self._in_flight or idle_for < self._idle_seconds:
            self._idle_timer = loop.call_later(
                max(self._idle_seconds - idle_for, 0.05), self._stop_if_idle
            )
            return
        with self._lock:  # from here on a new call starts a new process
            executor, self._executor, self._pid, self._process = self._executor, None, None, None
        if executor is not None:
            logger.debug("transcript worker process idle for %.0f s: stopping it", idle_for)
            loop.run_in_executor(None, _stop, executor)  # it joins: not on the loop

    def _alive(self, executor: ProcessPoolExecutor) -> bool:
        process = self._process
        if process is None or self._executor is not executor:
            return True
        try:
            return process.is_alive()
        except ValueError:  # closed by the executor: it is gone
            return False

    def _start(self) -> ProcessPoolExecutor:
        """The running executor, or a fresh one whose process has answered (blocking)."""
        with self._lock:
            if self._executor is not None:
                return self._executor
            executor = ProcessPoolExecutor(
                max_workers=1, mp_context=multiprocessing.get_context("spawn"),
                initializer=_init_worker_process,
            )
            try:
                pid = executor.submit(os.getpid).result(timeout=START_TIMEOUT_SECONDS)
            except BaseException:
                _stop(executor)
                raise
            # the process object is not public before Python 3.14; it tells a worker that died
            # while idle (safe to replace before submitting) from one that dies during a call
            processes = getattr(executor, "_processes", None) or {}
            self._executor, self._pid, self._process = executor, pid, processes.get(pid)
            logger.debug("transcript worker process started (pid %d)", pid)
            return executor

    def _discard(self, executor: ProcessPoolExecutor) -> None:
        """Forget ``executor`` if it is still the current one (its process is gone)."""
        with self._lock:
            if self._executor is not executor:
                return
            self._executor, self._pid, self._process = None, None, None
        logger.warning("transcript worker process ended unexpectedly; starting a new one on use")
        # its process is gone (the executor's own thread reaps it): nothing to terminate
        executor.shutdown(wait=False, cancel_futures=True)


def _stop(executor: ProcessPoolExecutor) -> None:
    """Shut ``executor`` down without waiting, and end its process even if it is busy."""
    # the process objects are not public before Python 3.14 (``terminate_workers``); a busy
    # worker would otherwise finish its current parse before it reads the shutdown sentinel
    processes = list((getattr(executor, "_processes", None) or {}).values())
    executor.shutdown(wait=False, cancel_futures=True)
    for process in processes:
        try:
            process.terminate()
            process.join(0.5)
            if process.is_alive():
                process.kill()
        except (OSError, ValueError, AssertionError) as exc:  # already gone or closed
            logger.debug("stopping the worker process: %s", exc)


# ---- what runs in the worker process ---------------------------------------------------------

class _Readers:
    """The session readers of this worker process, by key."""

    readers: ClassVar[dict[str, SessionReader]] = {}


def _init_worker_process() -> None:
    """Runs first in the worker process: quiet stdout, background priority, and an end with
    the server."""
    # fd 1 is inherited from the server, whose stdout carries the LSP stream: anything printed
    # here (by us or a library) must go to stderr instead
    sys.stdout.flush()
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    lower_process_priority()
    # a server that is killed (or crashes) cannot stop its pool: without this the worker would
    # wait on its call queue for ever, since it holds both ends of that pipe itself
    parent = multiprocessing.parent_process()
    if parent is not None:
        threading.Thread(
            target=_exit_with, args=(parent,), name="reverie-parent-watch", daemon=True
        ).start()


def _exit_with(parent: BaseProcess) -> None:
    parent.join()  # returns once the parent's end of its sentinel pipe is closed: it has ended
    os._exit(0)


def _open_reader(
    key: str, workspace: Path, agent_home: Path, tail_states: dict[str, bytes],
    editor: EditorPlaces | None = None,
) -> None:
    from reverie.transcripts.reading import SessionReader
    from reverie.transcripts.tail import TailState

    states = {path: TailState.model_validate_json(raw) for path, raw in tail_states.items()}
    _Readers.readers[key] = SessionReader(
        workspace, agent_home, tail_states=states, keep_messages=False, editor=editor
    )


def _read_step(
    key: str, paths: list[str] | None, report: bool, watched_since_ns: int | None
) -> ReadResult:
    reader = _Readers.readers.get(key)
    if reader is None:
        raise UnknownReader(f"no transcript reader {key!r} in this worker process")
    if paths is None:
        events = reader.scan(report, watched_since_ns)
    else:
        events = reader.apply(paths)
    return reader.step(events)


def _drop_reader(key: str) -> None:
    _Readers.readers.pop(key, None)
