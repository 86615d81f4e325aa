"""The Reverie language server: one object that owns every piece of server state.

Handlers (``reverie.lsp.handlers``) are thin: they call methods of this class. The domain work
lives in the core packages; ``reverie.lsp.tracking`` adapts them per workspace folder.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import os
import sys
import threading
import time
from collections.abc import Callable, Coroutine, Generator, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, Literal

import attrs
from lsprotocol import types
from lsprotocol.types import ResponseErrorMessage
from pygls.exceptions import (
    JsonRpcException,
    JsonRpcInternalError,
    JsonRpcInvalidParams,
    JsonRpcServerNotInitialized,
)
from pygls.lsp.server import LanguageServer
from pygls.protocol import (
    JsonRPCNotification,
    JsonRPCRequestMessage,
    JsonRPCResponseMessage,
    LanguageServerProtocol,
)
from pygls.protocol.language_server import lsp_method
from pygls.uris import from_fs_path, to_fs_path

from reverie import __version__
from reverie.config import ModelPrice, Settings
from reverie.dream.gates import ScanThrottle
from reverie.errors import UserError
from reverie.events import JobEvent
from reverie.lsp import settings as settings_mod
from reverie.lsp.adapters import session_memory_sink
from reverie.lsp.digests import ConversationDigests
from reverie.lsp.framing import FrameReader, serve_frames
from reverie.lsp.heap import HeapKeeper
from reverie.lsp.jobs import Job, JobRegistry
from reverie.lsp.log import ClientLogHandler, level_number
from reverie.lsp.progress import JobProgress
from reverie.lsp.protocol import (
    SETTINGS_SECTION,
    JobEventPayload,
    MemorySaved,
    Notifications,
    SessionNotesUpdated,
    StatusResult,
    Wire,
)
from reverie.lsp.stdio import BatchingWriter, LoopPipeReader, ThreadReader, can_read_on_loop
from reverie.services.wiring import memory_writer

if TYPE_CHECKING:
    from reverie.lsp.tracking import WorkspaceTracker
    from reverie.session_memory.manager import SessionMemoryManager
    from reverie.transcripts.worker import ParseWorker

logger = logging.getLogger(__name__)

Severity = Literal["error", "warning", "info"]
#: which popups each ``reverie.showNotifications`` value lets through
_POPUP_LEVELS: dict[str, frozenset[str]] = {
    "off": frozenset(),
    "onError": frozenset({"error"}),
    "onWarning": frozenset({"error", "warning"}),
    "always": frozenset({"error", "warning", "info"}),
}
_MESSAGE_TYPES = {
    "error": types.MessageType.Error,
    "warning": types.MessageType.Warning,
    "info": types.MessageType.Info,
}
_LOG_LEVELS = {"error": logging.ERROR, "warning": logging.WARNING, "info": logging.INFO}
SHUTDOWN_DRAIN_SECONDS = 5.0
#: the load worker process stops after this long without a call (see ``load_worker``)
LOAD_WORKER_IDLE_SECONDS = 60.0
POPUP_REPEAT_SECONDS = 600.0
#: the worker processes a server may own (cached properties of ``ReverieLanguageServer``)
_WORKERS = ("parse_worker", "load_worker", "notes_worker", "dream_worker")
_JOB_MODULES = (
    "reverie.lsp.tracking",
    "reverie.transcripts.watch",
    "reverie.transcripts.reader",
    "reverie.session_memory.manager",
    "reverie.session_memory.llm_writer",
    "reverie.llm.factory",
    "reverie.dream.runner",
    "reverie.memory.history",
    "reverie.memory.undo",
    "reverie.sleep.cycle",
    "reverie.transcripts.listing",
    "reverie.session_memory.source",
    # what httpx loads on its first client and first request (~20 ms)
    "httpcore",
    "sniffio",
    "anyio.abc",
    "anyio.lowlevel",
    "anyio.streams.memory",
    "anyio.streams.stapled",
    "anyio.streams.tls",
    "anyio._backends._asyncio",
    "concurrent.futures.thread",
)


def _leaf_errors(exc: BaseException) -> list[str]:
    """The innermost messages of a cattrs error group (what is actually wrong)."""
    inner = getattr(exc, "exceptions", None)
    if not inner:
        return [str(exc).splitlines()[0] if str(exc) else type(exc).__name__]
    out: list[str] = []
    for sub in inner:
        out.extend(_leaf_errors(sub))
    return out


def _quiet_after_exit(stop: threading.Event, loop: asyncio.AbstractEventLoop,
                      context: dict[str, Any]) -> None:
    """Once ``exit`` arrived, handlers still running are cancelled as the loop ends; pygls then
    reports each cancellation as an error in a callback. Those are expected: drop them."""
    if stop.is_set() and isinstance(context.get("exception"), asyncio.CancelledError):
        return
    loop.default_exception_handler(context)


class NoWorkspace(UserError):
    """A command names no open workspace folder (or none is open)."""


@attrs.define
class RawNotification:
    """A client notification whose params we validate ourselves (pydantic), kept as plain JSON."""

    method: str
    jsonrpc: str
    params: Any = None


class ReverieProtocol(LanguageServerProtocol):
    """Keeps the params of our custom client notifications as plain dicts, not namedtuples, and
    enforces the LSP lifecycle pygls leaves open: a request before ``initialize`` is answered
    ``-32002`` at once (notifications then are dropped, ``exit`` excepted), a second
    ``initialize`` is refused, and a request after ``shutdown`` gets ``InvalidRequest``."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._initialize_seen = False

    def handle_message(self, message: Any) -> None:
        method = getattr(message, "method", None)
        msg_id = getattr(message, "id", None)
        is_request = method is not None and msg_id is not None
        if method == types.INITIALIZE and is_request:
            if self._initialize_seen:
                self._refuse(msg_id, -32600, "the server is already initialized")
                return
            self._initialize_seen = True
        elif method is not None and method != types.EXIT and not self._initialize_seen:
            if is_request:
                self._refuse(msg_id, JsonRpcServerNotInitialized.CODE,
                             "the server is not initialized yet (send initialize first)")
            return
        elif is_request and self._shutdown:
            self._refuse(msg_id, -32600, "the server is shutting down")
            return
        super().handle_message(message)

    def structure_message(self, data: dict[str, Any]) -> Any:
        """pygls' message structuring, but a message that does not fit its type is refused with
        one log line (``JsonRpcInvalidParams``), not a logged traceback."""
        if "jsonrpc" not in data:
            return data
        method = data.get("method", "")
        try:
            if "id" in data:
                if "error" in data:
                    return self._converter.structure(data, ResponseErrorMessage)
                if "method" in data:
                    kind = self.get_message_type(method) or JsonRPCRequestMessage
                    return self._converter.structure(data, kind)
                kind = self._result_types.pop(data["id"], None) or JsonRPCResponseMessage
                return self._converter.structure(data, kind)
            kind = self.get_message_type(method) or JsonRPCNotification
            return self._converter.structure(data, kind)
        except Exception as exc:
            detail = "; ".join(_leaf_errors(exc))[:300] or type(exc).__name__
            logger.info("refused %s: %s", method or "a message", detail)
            raise JsonRpcInvalidParams(f"Invalid params for {method or 'message'}: "
                                       f"{detail}") from None

    def _send_handler_result(self, future: Any, *, msg_id: Any) -> None:
        """pygls' version logs a traceback for every refused request (a command's invalid
        arguments are bad input, not a server error) and keeps the traceback, and with it the
        request's arguments, alive as long as anything holds the future. Refusals are logged in
        one line; the traceback is dropped once the error response is sent."""
        if future.cancelled() or future.exception() is None:
            super()._send_handler_result(future, msg_id=msg_id)
            return
        exc = future.exception()
        if not isinstance(exc, JsonRpcException):
            super()._send_handler_result(future, msg_id=msg_id)
            exc.__traceback__ = None
            return
        self._request_futures.pop(msg_id, None)
        logger.info("request %s refused: %s", msg_id, exc)
        self._send_response(msg_id, error=exc.to_response_error())
        exc.__traceback__ = None

    def _refuse(self, msg_id: Any, code: int, text: str) -> None:
        self._send_data({"jsonrpc": "2.0", "id": msg_id,
                         "error": {"code": code, "message": text}})

    @lsp_method(types.EXIT)
    def lsp_exit(self, *args: Any) -> Generator[Any, Any, None]:
        """Stop reading and end the process with 0 after ``shutdown``, else 1. (pygls raises
        ``SystemExit`` from inside a loop callback, which tears the loop down mid-flight.)"""
        if (user_handler := self.fm.features.get(types.EXIT)) is not None:
            yield user_handler, args, None
        server = self._server
        if isinstance(server, ReverieLanguageServer):
            server.request_exit(0 if self._shutdown else 1)
            return None
        raise SystemExit(0 if self._shutdown else 1)

    @lsp_method(types.SHUTDOWN)
    def lsp_shutdown(self, *args: Any) -> Generator[Any, Any, None]:
        """pygls' shutdown, iterating over a copy of the pending requests: cancelling one runs
        its callback at once, which removes it from the dict being iterated."""
        if (user_handler := self.fm.features.get(types.SHUTDOWN)) is not None:
            yield user_handler, args, None
        current_id = self.msg_id
        for msg_id, future in list(self._request_futures.items()):
            if msg_id != current_id and not future.done():
                future.cancel()
        self._shutdown = True
        return None

    def get_message_type(self, method: str) -> type[Any] | None:  # type: ignore[override]
        if method == Notifications.APPEND_MESSAGES:
            return RawNotification
        return super().get_message_type(method)

    def notify(self, method: str, params: Any | None = None) -> None:
        """Notifications may wait a few milliseconds to share a write (``BatchingWriter``)."""
        writer = self.writer
        if isinstance(writer, BatchingWriter):
            with writer.deferring():
                super().notify(method, params)
        else:
            super().notify(method, params)

    @lsp_method(types.WORKSPACE_EXECUTE_COMMAND)
    def lsp_workspace__execute_command(
        self, params: types.ExecuteCommandParams
    ) -> Generator[Any, Any, Any]:
        """Every Reverie command takes ``(ls, *args)`` and validates its one JSON object itself
        (``handlers.parse_args``): the arguments go through as they are. pygls' own version
        resolves the handler's type hints again on every call (``typing.get_type_hints``)."""
        handler = self.fm.commands.get(params.command)
        if handler is None:
            raise JsonRpcInvalidParams.of(
                ValueError(f"Command name {params.command!r} is not defined")
            )
        result = yield handler, tuple(params.arguments or ()), None
        return result


class ReverieLanguageServer(LanguageServer):
    """Owns settings, the task set, the job registry, per-folder trackers and diagnostics."""

    def __init__(self) -> None:
        super().__init__("reverie", __version__, protocol_cls=ReverieProtocol, max_workers=4)
        self.resolved = settings_mod.resolve()
        self._init_options: dict[str, Any] = {}
        self._pulled: dict[str, Any] = {}
        self._last_settings_message: str | None = None
        #: popup text -> when it was last shown
        self._popups: dict[str, float] = {}
        self._tasks: set[asyncio.Task[Any]] = set()
        #: workspaces whose search index is being updated / must be updated again after
        self._indexing: dict[Path, bool] = {}
        self.log_handler = ClientLogHandler(level_number(self.resolved.settings.log_level))
        self.jobs = JobRegistry(
            spawn=self.run_task,
            on_event=self.on_job_event,
            make_progress=self._make_progress,
            # the job's ``error`` event already tells the user (see ``_on_error``)
            on_expected_error=lambda job, msg: logger.info("%s: %s", job.title, msg),
            price_for=self._price_for,
        )
        self.trackers: dict[Path, WorkspaceTracker] = {}
        self.conversations = ConversationDigests(self._load_call, self.notes_job_call)
        #: keeps garbage-collection pauses short (see ``reverie.lsp.heap``)
        self.heap = HeapKeeper()
        #: the dream's session-scan throttle, per memory dir, for the server's lifetime
        self.dream_throttle = ScanThrottle()
        #: how every job of this server writes memory (with the after-apply hooks; this
        #: server's own keeps the workspaces' search indexes current)
        self.memory_writer = memory_writer(self._memory_applied)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._session_memory: SessionMemoryManager | None = None
        #: uri -> source -> diagnostics; published merged per uri
        self._diagnostics: dict[str, dict[str, list[types.Diagnostic]]] = {}
        self.initialized_event = asyncio.Event()
        #: set once every workspace folder is tracked (commands wait for it)
        self.ready = asyncio.Event()
        self.shutting_down = False
        #: level of the stderr handler (set by ``reverie serve`` from ``--log-level``)
        self.stderr_level = logging.WARNING
        #: the process exit code ``start_io`` settled on (see there)
        self.exit_code = 0

    # --- worker processes -----------------------------------------------------------------------

    @functools.cached_property
    def parse_worker(self) -> ParseWorker:
        """The process transcripts are read and parsed in (``reverie.transcripts.worker``);
        made on first use, after ``initialize`` is answered (it imports multiprocessing)."""
        from reverie.transcripts.worker import ParseWorker

        return ParseWorker()

    @functools.cached_property
    def load_worker(self) -> ParseWorker:
        """A second one for whole-conversation reads (an extraction's context, a session's
        digests): reading a long transcript takes seconds, and appends must not queue behind.
        It stops after a minute without work: reading a long transcript leaves it tens of MB."""
        from reverie.transcripts.worker import ParseWorker

        return ParseWorker(idle_seconds=LOAD_WORKER_IDLE_SECONDS)

    @functools.cached_property
    def notes_worker(self) -> ParseWorker:
        """Where offline notes extractions run whole (``session_memory.offline_job``): the
        transcript is read and the notes built there, only the new text comes back. A process
        of its own so a long extraction holds up neither the server's interpreter nor the reads
        other sessions wait for; it stops after a minute without work."""
        from reverie.transcripts.worker import ParseWorker

        return ParseWorker(idle_seconds=LOAD_WORKER_IDLE_SECONDS)

    @functools.cached_property
    def dream_worker(self) -> ParseWorker:
        """Where the offline dream's consolidation and the sleep cycle's offline deep phase run
        (they read every session since the last run); stops after a minute without work."""
        from reverie.transcripts.worker import ParseWorker

        return ParseWorker(idle_seconds=LOAD_WORKER_IDLE_SECONDS)

    async def _load_call(self, func: Callable[..., Any], /, *args: Any) -> Any:
        return await self.load_worker.call(func, *args)

    async def notes_job_call(self, func: Callable[..., Any], /, *args: Any) -> Any:
        return await self.notes_worker.call(func, *args)

    async def dream_job_call(self, func: Callable[..., Any], /, *args: Any) -> Any:
        return await self.dream_worker.call(func, *args)

    async def abort_dream_job(self) -> None:
        """Stop the dream worker (a cancelled dream): the call in flight ends at once."""
        worker = self.__dict__.get("dream_worker")
        if worker is not None:
            await asyncio.to_thread(worker.close)

    def worker_pids(self) -> dict[str, int]:
        """The worker processes running now, by role (none is started to answer this)."""
        pids = {}
        for name in _WORKERS:
            worker = self.__dict__.get(name)
            pid = worker.pid if worker is not None else None
            if pid is not None:
                pids[name.removesuffix("_worker")] = pid
        return pids

    def close_workers(self) -> None:
        for name in _WORKERS:
            worker = self.__dict__.get(name)
            if worker is not None:
                worker.close()

    # --- transport ----------------------------------------------------------------------------

    def start_io(self, stdin: BinaryIO | None = None, stdout: BinaryIO | None = None) -> None:
        """pygls' stdio server with our own frame reading (``reverie.lsp.framing``: bad frames
        are answered or skipped, never wedge the server), reading stdin on the event loop when
        it is a pipe or a socket (``reverie.lsp.stdio``: no thread hand-off per read).

        ``exit_code`` is what the process should exit with: 0 after ``shutdown`` + ``exit``
        or end of input, 1 for ``exit`` without ``shutdown`` (the LSP rule)."""
        stdin = stdin or sys.stdin.buffer
        stop = self._stop_event = threading.Event()
        self.protocol.set_writer(BatchingWriter(stdout or sys.stdout.buffer))
        reader = LoopPipeReader(stdin) if can_read_on_loop(stdin) else ThreadReader(stdin)
        frames = FrameReader(reader.read)

        async def main() -> None:
            self._main_task = asyncio.current_task()
            loop = asyncio.get_running_loop()
            loop.set_exception_handler(functools.partial(_quiet_after_exit, stop))
            await serve_frames(frames, self.protocol, should_stop=stop.is_set,
                               on_error=self._report_loop_error)

        try:
            asyncio.run(main())
        except BrokenPipeError:
            logger.error("Connection to the client is lost! Shutting down the server.")
        except (KeyboardInterrupt, asyncio.CancelledError):
            pass  # ``exit`` (see ``request_exit``) or Ctrl-C
        except SystemExit as exc:
            self.exit_code = exc.code if isinstance(exc.code, int) else 1
        finally:
            writer = self.protocol.writer
            if isinstance(writer, BatchingWriter):
                with contextlib.suppress(OSError, ValueError):
                    writer.flush()
            self.close_workers()
            self.shutdown()  # type: ignore[no-untyped-call]

    def request_exit(self, code: int) -> None:
        """``exit``: stop reading now; ``start_io`` returns and the process ends with ``code``."""
        self.exit_code = code
        if self._stop_event is not None:
            self._stop_event.set()
        task = getattr(self, "_main_task", None)
        if task is not None and not task.done():
            task.get_loop().call_soon(task.cancel)

    def _report_loop_error(self, error: Exception) -> None:
        self.report_server_error(error, JsonRpcInternalError)

    # --- settings ------------------------------------------------------------------------------

    @property
    def settings(self) -> Settings:
        return self.resolved.settings

    def set_initialization_options(self, options: Any) -> None:
        self._init_options = settings_mod.section_of(options)
        self.apply_settings(settings_mod.resolve(self._init_options, self._pulled))

    def apply_settings(self, resolved: settings_mod.ResolvedSettings) -> None:
        """Use new settings; tell the user (once per distinct problem) about invalid values."""
        previous = self.resolved.settings
        self.resolved = resolved
        level = level_number(resolved.settings.log_level)
        self.log_handler.setLevel(level)
        logging.getLogger("reverie").setLevel(min(level, self.stderr_level))
        message = resolved.message()
        if message and message != self._last_settings_message:
            self.show("warning", message, force=True)
        self._last_settings_message = message
        if previous != resolved.settings:
            if self._session_memory is not None:
                self._session_memory.settings = resolved.settings
            for tracker in self.trackers.values():
                tracker.settings_changed(previous)

    def _price_for(self, kind: str) -> ModelPrice | None:
        """``reverie.prices`` entry of the model a job kind uses (None: cost unknown)."""
        s = self.settings
        if s.provider == "offline" or kind not in ("session_memory", "dream", "sleep"):
            return None
        model = s.model_for(kind)  # type: ignore[arg-type]
        return s.prices.get(model) if model else None

    def session_memory(self) -> SessionMemoryManager:
        """The one ``SessionMemoryManager`` of this server (created on first use)."""
        if self._session_memory is None:
            from reverie.session_memory.manager import SessionMemoryManager

            self._session_memory = SessionMemoryManager(
                self.settings, events=session_memory_sink(self)
            )
        return self._session_memory

    async def pull_settings(self) -> None:
        """``workspace/configuration`` for section ``reverie`` (when the client supports it)."""
        workspace_caps = self.client_capabilities.workspace
        if not (workspace_caps and workspace_caps.configuration):
            return
        try:
            result = await self.workspace_configuration_async(
                types.ConfigurationParams(items=[types.ConfigurationItem(section=SETTINGS_SECTION)])
            )
        except Exception as exc:
            logger.warning("workspace/configuration failed: %s", exc)
            return
        pulled = result[0] if result else None
        self._pulled = settings_mod.section_of(_plain(pulled)) if pulled else {}
        self.apply_settings(settings_mod.resolve(self._init_options, self._pulled))

    async def settings_changed(self, params: types.DidChangeConfigurationParams) -> None:
        workspace_caps = self.client_capabilities.workspace
        if workspace_caps and workspace_caps.configuration:
            await self.pull_settings()
            return
        pushed = settings_mod.section_of(_plain(params.settings))
        if pushed:
            self._pulled = pushed
            self.apply_settings(settings_mod.resolve(self._init_options, self._pulled))

    async def register_config_watch(self) -> None:
        """Dynamically register ``workspace/didChangeConfiguration`` when the client allows it."""
        workspace_caps = self.client_capabilities.workspace
        dcc = workspace_caps.did_change_configuration if workspace_caps else None
        if not (dcc and dcc.dynamic_registration):
            logger.debug("client cannot register didChangeConfiguration dynamically")
            return
        try:
            await self.client_register_capability_async(
                types.RegistrationParams(
                    registrations=[
                        types.Registration(
                            id="reverie-config",
                            method=types.WORKSPACE_DID_CHANGE_CONFIGURATION,
                            register_options=types.DidChangeConfigurationRegistrationOptions(
                                section=SETTINGS_SECTION
                            ),
                        )
                    ]
                )
            )
        except Exception as exc:
            logger.info("could not register for configuration changes: %s", exc)

    # --- tasks, messages, notifications --------------------------------------------------------

    def remember_loop(self) -> None:
        """Note the running loop (the memory writer's after-apply hook schedules on it)."""
        self._loop = asyncio.get_running_loop()

    def run_task(
        self, coro: Coroutine[Any, Any, Any], name: str | None = None
    ) -> asyncio.Task[Any]:
        """Start a background task, keep a strong reference, and log how it failed."""
        task = asyncio.get_running_loop().create_task(coro, name=name)
        self._tasks.add(task)
        task.add_done_callback(self._task_done)
        return task

    def _task_done(self, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        if task.cancelled():
            return
        exc = task.exception()
        if exc is not None:
            logger.error(
                "background task %s failed",
                task.get_name(),
                exc_info=(type(exc), exc, exc.__traceback__),
            )

    def show(self, severity: Severity, message: str, *, force: bool = False) -> None:
        """One line to the user, filtered by ``reverie.showNotifications`` (always logged).

        ``force`` bypasses the filter for configuration problems the user must see unless
        notifications are ``off``.
        """
        log_type = _MESSAGE_TYPES[severity]
        logger.log(_LOG_LEVELS[severity], "%s", message)
        policy = self.settings.show_notifications
        allowed = _POPUP_LEVELS.get(policy, _POPUP_LEVELS["onError"])
        if not (severity in allowed or (force and policy != "off")):
            return
        now = time.monotonic()
        if now - self._popups.get(message, -POPUP_REPEAT_SECONDS) < POPUP_REPEAT_SECONDS:
            return  # the same failure every few minutes is one popup, not a stream of them
        self._popups[message] = now
        self.window_show_message(types.ShowMessageParams(type=log_type, message=message))

    def notify(self, method: str, payload: Wire | dict[str, Any]) -> None:
        data = payload.wire() if isinstance(payload, Wire) else payload
        self.protocol.notify(method, data)

    def report_server_error(self, error: Exception, source: Any) -> None:
        """Unexpected errors go to the log with their traceback; the server keeps serving.

        A command's own one-line refusal (invalid arguments, request failed) is not unexpected:
        the client already has it as the error response.
        """
        if isinstance(error, JsonRpcInvalidParams) or getattr(error, "code", None) == -32803:
            logger.info("request refused: %s", error)
            return
        logger.error(
            "unexpected error (%s)",
            getattr(source, "__name__", source),
            exc_info=(type(error), error, error.__traceback__),
        )

    # --- jobs ----------------------------------------------------------------------------------

    def _make_progress(self, job: Job) -> JobProgress | None:
        return JobProgress(
            self, f"reverie/{job.id}", f"Reverie: {job.title}", lambda: self.jobs.cancel(job.id)
        )

    def on_job_event(self, event: JobEvent) -> None:
        """Turn one runtime event into notifications, popups and refreshed diagnostics."""
        payload = dict(event.payload)
        payload.setdefault("message", event.message)
        payload["at"] = event.at.isoformat()
        if event.session_id:
            payload.setdefault("sessionId", event.session_id)
        self.notify(
            Notifications.JOB_EVENT,
            JobEventPayload(job_id=event.job_id, kind=event.job, type=event.type, payload=payload),
        )
        handler = getattr(self, f"_on_{event.type}", None)
        if handler is not None:
            try:
                handler(event)
            except Exception:
                logger.exception("handling %s event failed", event.type)

    def _on_memory_saved(self, event: JobEvent) -> None:
        p = event.payload
        paths = p.get("memory_paths") or p.get("files_touched") or []
        job = self.jobs.jobs.get(event.job_id or "")
        tracker = self.trackers.get(job.workspace) if job and job.workspace else None
        if job is not None and job.kind == "dream":
            source = "manual" if job.title.startswith("Manual") else "dream"
        else:
            source = str(p.get("source") or event.job)
        saved = MemorySaved(
            memory_paths=[str(x) for x in paths],
            verb=str(p.get("verb") or "saved").lower(),
            source=source,
            run_id=p.get("run_id"),
            message=event.message or "Memory saved",
        )
        if not saved.memory_paths and saved.run_id and tracker is not None:
            # the sleep cycle names only its run: the files come from the history
            self.run_task(self._memory_saved_from_history(tracker, saved), "memory saved")
            return
        self._send_memory_saved(saved, tracker)

    async def _memory_saved_from_history(
        self, tracker: WorkspaceTracker, saved: MemorySaved
    ) -> None:
        from reverie.memory.history import HistoryError, MemoryHistory

        memory_dir = tracker.memory_dir

        def files() -> list[str]:
            try:
                record = MemoryHistory(memory_dir).find(saved.run_id)
            except HistoryError:
                return []
            return [str(memory_dir / name) for name in record.files_touched]

        saved.memory_paths = await asyncio.to_thread(files)
        verb = "saved" if saved.memory_paths else saved.verb
        saved.verb = verb
        self._send_memory_saved(saved, tracker)

    def _send_memory_saved(self, saved: MemorySaved, tracker: WorkspaceTracker | None) -> None:
        self.notify(Notifications.MEMORY_SAVED, saved)
        self.show("info", f"Reverie: {saved.message.splitlines()[0]}")
        for t in [tracker] if tracker is not None else list(self.trackers.values()):
            t.memory_written([Path(x) for x in saved.memory_paths])

    def _memory_applied(self, memory_dir: Path) -> None:
        """After-apply hook of the server's memory writer (called in the writer's thread, after
        a dream, sleep or undo applied): the search index of each workspace with that memory
        dir is brought up to date, scheduled on the loop, run in a worker process."""
        loop = self._loop
        if loop is None or loop.is_closed():
            return
        loop.call_soon_threadsafe(self._index_memory_dir, memory_dir)

    def _index_memory_dir(self, memory_dir: Path) -> None:
        for tracker in list(self.trackers.values()):
            if tracker.memory_dir == memory_dir:
                self.update_search_index(tracker)

    def update_search_index(self, tracker: WorkspaceTracker) -> None:
        """Bring the workspace's search index up to date after memory or notes changed: in
        the notes worker process (reading a grown session is parsing), never on the loop;
        requests while one runs coalesce into one more run after it."""
        folder = tracker.folder
        if folder in self._indexing:
            self._indexing[folder] = True
            return
        self._indexing[folder] = False
        self.run_task(self._update_search_index(tracker), "search index")

    async def _update_search_index(self, tracker: WorkspaceTracker) -> None:
        from reverie.services.search import index_after_apply

        folder = tracker.folder
        try:
            while True:
                self._indexing[folder] = False
                await self.notes_job_call(index_after_apply, tracker.settings, folder)
                if not self._indexing.get(folder):
                    break
        finally:
            self._indexing.pop(folder, None)

    def _on_notes_updated(self, event: JobEvent) -> None:
        p = event.payload
        path = p.get("path")
        if not path or not event.session_id:
            return
        self.notify(
            Notifications.SESSION_NOTES_UPDATED,
            SessionNotesUpdated(
                session_id=event.session_id, path=str(path), edited=bool(p.get("edited"))
            ),
        )
        self.refresh_file_diagnostics(Path(path))
        job = self.jobs.jobs.get(event.job_id or "")
        tracker = self.trackers.get(job.workspace) if job and job.workspace else None
        if tracker is None:
            tracker = next((t for t in self.trackers.values()
                            if Path(path).is_relative_to(t.paths.root)), None)
        if tracker is not None:
            self.update_search_index(tracker)

    def _on_start(self, event: JobEvent) -> None:
        if event.job in ("dream", "sleep"):
            self._lock_may_have_changed(event)

    def _on_complete(self, event: JobEvent) -> None:
        self._on_start(event)

    def _on_cancelled(self, event: JobEvent) -> None:
        self._on_start(event)

    def _lock_may_have_changed(self, event: JobEvent) -> None:
        job = self.jobs.jobs.get(event.job_id or "")
        tracker = self.trackers.get(job.workspace) if job and job.workspace else None
        if tracker is not None:
            tracker.lock_changed()

    def _on_lock_changed(self, event: JobEvent) -> None:
        memory_dir = event.payload.get("memory_dir")
        for tracker in self.trackers.values():
            if memory_dir is None or Path(memory_dir) == tracker.memory_dir:
                tracker.lock_changed()

    def _on_error(self, event: JobEvent) -> None:
        if event.job == "watch":
            self.show("warning", f"Reverie: {event.message}")
            return
        self._on_start(event)
        # expected failures of a job (no API key, 401, rate limit): one line to the user
        self.show("error", f"Reverie: {event.message}")

    def _on_skipped(self, event: JobEvent) -> None:
        reason = event.payload.get("reason")
        if reason in ("lock_busy", "missing_llm_client", "missing_llm", "over_budget"):
            text = event.payload.get("reason_text")
            detail = event.payload.get("detail") or event.payload.get("error")
            if reason == "over_budget" and not text:  # a notes update over the cap
                self.show("warning", f"Reverie: {detail}.")
                return
            self.show("warning", f"Reverie: the dream did not run: {text}" if text else
                      f"Reverie: {event.message}" + (f" ({detail})" if detail else ""))

    # --- workspaces ----------------------------------------------------------------------------

    def workspace_folders(self) -> list[Path]:
        folders: list[Path] = []
        for folder in self.workspace.folders.values():
            path = to_fs_path(folder.uri)
            if path:
                folders.append(Path(path))
        if not folders and self.workspace.root_path:
            folders.append(Path(self.workspace.root_path))
        return folders

    async def warm_up(self) -> None:
        """Import the job modules in a worker thread once ``initialize`` is answered, so the
        first appended message or command does not import them on the event loop."""
        import importlib

        for name in _JOB_MODULES:
            try:
                await asyncio.to_thread(importlib.import_module, name)
            except Exception:  # a part that is missing shows up when it is used
                logger.debug("could not pre-import %s", name, exc_info=True)
        self.heap.settle()  # start-up data is long-lived: out of the collector's way
        self.run_task(self.heap.tidy_when_idle(lambda: bool(self.jobs.running())), "heap")
        try:  # loading the CA bundle takes tens of ms: not on the loop at the first job
            from reverie.llm.http import shared_ssl_context

            await asyncio.to_thread(shared_ssl_context)
        except Exception:
            logger.debug("could not prepare the TLS context", exc_info=True)

    async def start_tracking(self) -> None:
        from reverie.lsp.tracking import WorkspaceTracker

        for folder in self.workspace_folders():
            key = folder.resolve()
            if key in self.trackers:
                continue
            tracker = WorkspaceTracker(self, key)
            self.trackers[key] = tracker
            await tracker.start()
        # documents opened while start-up was under way
        for uri in list(self.workspace.text_documents):
            path = to_fs_path(uri)
            if path:
                self.refresh_file_diagnostics(Path(path))

    async def repair_agent_hooks(self) -> None:
        """Agents whose Reverie hooks name an interpreter that is gone (after an extension
        update, the old bundle's) are connected again with this server's (``agents.repair``)."""
        from reverie.agents.repair import repair_hooks

        for tracker in list(self.trackers.values()):
            repaired = await asyncio.to_thread(repair_hooks, tracker.folder, tracker.settings)
            if repaired:
                tracker.connections_cache = None

    async def stop_tracking(self, folder: Path) -> None:
        tracker = self.trackers.pop(folder.resolve(), None)
        if tracker is not None:
            await tracker.stop()

    async def wait_ready(self, timeout: float = 30.0) -> None:
        """Commands that need the trackers wait for start-up (discovery) to finish."""
        try:
            await asyncio.wait_for(self.ready.wait(), timeout)
        except TimeoutError:
            logger.warning("start-up is taking longer than %ss", timeout)

    def tracker_for(self, workspace: str | None) -> WorkspaceTracker:
        """The tracker a command applies to: the named folder, else the most recently active."""
        if not self.trackers:
            raise NoWorkspace("no workspace folder is open")
        if workspace:
            path = (
                Path(to_fs_path(workspace) or workspace) if "://" in workspace else Path(workspace)
            )
            tracker = self.trackers.get(path.expanduser().resolve())
            if tracker is None:
                raise NoWorkspace(f"{workspace} is not an open workspace folder")
            return tracker
        return max(self.trackers.values(), key=lambda t: t.last_activity)

    def tracker_for_path(self, path: Path) -> WorkspaceTracker | None:
        for tracker in self.trackers.values():
            if tracker.owns(path):
                return tracker
        return None

    def status(self) -> StatusResult:
        usage, cost = self.jobs.usage_today()
        current = None
        trackers = list(self.trackers.values())
        if trackers:
            active = max(trackers, key=lambda t: t.last_activity)
            current = active.current_summary()
        s = self.settings
        return StatusResult(
            version=__version__,
            pid=os.getpid(),
            workspace_folders=[str(t.folder) for t in trackers]
            or [str(f) for f in self.workspace_folders()],
            sessions_tracked=sum(t.sessions_tracked() for t in trackers),
            current_session=current,
            running_jobs=[j.info() for j in self.jobs.running()],
            last_results=dict(self.jobs.last_results),
            tokens_today=usage,
            cost_today=cost,
            provider=s.provider,
            model=s.model,
            offline=s.provider == "offline",
            workers=self.worker_pids(),
        )

    # --- diagnostics ---------------------------------------------------------------------------

    def set_diagnostics(self, uri: str, source: str, diagnostics: list[types.Diagnostic]) -> None:
        per_source = self._diagnostics.setdefault(uri, {})
        if not diagnostics and source not in per_source:
            return
        per_source[source] = diagnostics
        merged = [d for ds in per_source.values() for d in ds]
        self.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(uri=uri, diagnostics=merged)
        )

    def refresh_file_diagnostics(self, path: Path) -> None:
        """Recompute the diagnostics of one Reverie file (MEMORY.md, topic file, notes)."""
        tracker = self.tracker_for_path(path)
        logger.debug("diagnostics for %s (tracker %s)", path, tracker and tracker.folder)
        if tracker is not None:
            tracker.refresh_diagnostics(path)

    def document_text(self, path: Path) -> str | None:
        """The open buffer's text for ``path`` (None when the file is not open)."""
        uri = from_fs_path(str(path))
        if uri is None:
            return None
        doc = self.workspace.text_documents.get(uri)
        return doc.source if doc is not None else None

    # --- shutdown ------------------------------------------------------------------------------

    async def shutdown_all(self, timeout: float = SHUTDOWN_DRAIN_SECONDS) -> None:
        """Stop watchers, drain jobs for ``timeout`` seconds, cancel the rest, then our tasks."""
        self.shutting_down = True
        for tracker in list(self.trackers.values()):
            await tracker.stop()
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        if self._session_memory is not None:
            await self._session_memory.drain(timeout)
        await self.jobs.drain(max(deadline - loop.time(), 0.1))
        leftovers = [t for t in self._tasks if not t.done() and t is not asyncio.current_task()]
        for task in leftovers:
            task.cancel()
        if leftovers:
            await asyncio.wait(leftovers, timeout=2.0)
        self.close_workers()
        self.log_handler.disconnect()


def _plain(value: Any) -> Any:
    """Namedtuple ``Object``s (pygls' view of untyped JSON) back into dicts and lists."""
    if hasattr(value, "_asdict"):
        return {k: _plain(v) for k, v in value._asdict().items()}
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def uris(paths: Iterable[Path]) -> list[str]:
    return [u for u in (from_fs_path(str(p)) for p in paths) if u]
