"""The Reverie language server: its state and lifecycle, nothing else.

Handlers (``reverie.lsp.handlers``) parse the wire payload and call the use cases
(``reverie.services``) or the features (``reverie.lsp.features``), which see this object only as
the narrow ``ServerContext`` (``reverie.lsp.context``). The JSON-RPC overrides are in
``reverie.lsp.jsonrpc``, the worker processes in ``reverie.lsp.workers``, and one
``WorkspaceTracker`` (``reverie.lsp.tracking``) follows each workspace folder.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import sys
import threading
from collections.abc import Coroutine
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

from lsprotocol import types
from pygls.exceptions import JsonRpcInternalError, JsonRpcInvalidParams
from pygls.lsp.server import LanguageServer
from pygls.uris import from_fs_path, to_fs_path

from reverie import __version__
from reverie.config import ModelPrice, Settings
from reverie.dream.gates import ScanThrottle
from reverie.errors import UserError
from reverie.events import JobEvent
from reverie.lsp import settings as settings_mod
from reverie.lsp.digests import ConversationDigests
from reverie.lsp.features import job_events
from reverie.lsp.features.notes import session_memory_sink
from reverie.lsp.features.search_index import SearchIndexUpdates
from reverie.lsp.framing import FrameReader, serve_frames
from reverie.lsp.jobs import Job, JobRegistry
from reverie.lsp.jsonrpc import ReverieProtocol
from reverie.lsp.log import ClientLogHandler, level_number
from reverie.lsp.popups import LOG_LEVELS, MESSAGE_TYPES, Popups, Severity
from reverie.lsp.progress import JobProgress
from reverie.lsp.protocol import EDITOR_STORAGE_OPTION, EditorStorage, Wire
from reverie.lsp.stdio import (
    BatchingWriter,
    LoopPipeReader,
    ThreadReader,
    can_read_on_loop,
    quiet_after_exit,
)
from reverie.lsp.workers import ServerWorkers
from reverie.services.wiring import memory_writer
from reverie.transcripts.editor_places import EditorPlaces

if TYPE_CHECKING:
    from reverie.lsp.tracking import WorkspaceTracker
    from reverie.session_memory.manager import SessionMemoryManager

logger = logging.getLogger(__name__)

SHUTDOWN_DRAIN_SECONDS = 5.0


class NoWorkspace(UserError):
    """A command names no open workspace folder (or none is open)."""


class ReverieLanguageServer(LanguageServer):
    """Owns settings, the task set, the job registry, per-folder trackers and diagnostics."""

    def __init__(self) -> None:
        super().__init__("reverie", __version__, protocol_cls=ReverieProtocol, max_workers=4)
        self.resolved = settings_mod.resolve()
        self.init_options: dict[str, Any] = {}
        self.pulled_settings: dict[str, Any] = {}
        #: where the editor keeps the extension's data (``initializationOptions``), if it said
        self.editor_storage: EditorStorage | None = None
        self._last_settings_message: str | None = None
        self.popups = Popups()
        self._tasks: set[asyncio.Task[Any]] = set()
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
        #: the worker processes (each started on first use)
        self.workers = ServerWorkers()
        self.conversations = ConversationDigests(self.workers.load_call,
                                                 self.workers.notes_call)
        #: the dream's session-scan throttle, per memory dir, for the server's lifetime
        self.dream_throttle = ScanThrottle()
        #: how every job of this server writes memory (with the after-apply hooks; this
        #: server's own keeps the workspaces' search indexes current)
        self.search_index = SearchIndexUpdates(self)
        self.memory_writer = memory_writer(self.search_index.memory_applied)
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
            loop.set_exception_handler(functools.partial(quiet_after_exit, stop))
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
            self.workers.close()
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

    def editor_places(self) -> EditorPlaces:
        """Where the editor's agents keep their sessions: detected under the agent home, plus
        the exact folders the editor reported (``EditorStorage``)."""
        places = EditorPlaces.detect(self.settings.agent_home)
        storage = self.editor_storage
        if storage is None:
            return places
        places = places.with_editor_storage(storage.storage_uri, storage.global_storage_uri)
        for note in places.notes:
            logger.info("%s", note)
        return places

    def set_initialization_options(self, options: Any) -> None:
        if isinstance(options, dict) and EDITOR_STORAGE_OPTION in options:
            options = dict(options)
            try:
                self.editor_storage = EditorStorage.model_validate(
                    options.pop(EDITOR_STORAGE_OPTION) or {})
            except ValueError:
                logger.warning("ignoring an invalid %s", EDITOR_STORAGE_OPTION)
        self.init_options = settings_mod.section_of(options)
        self.apply_settings(settings_mod.resolve(self.init_options, self.pulled_settings))

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

    # --- tasks, messages, notifications --------------------------------------------------------

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
        """One line to the user: always logged, shown as a popup when ``reverie.lsp.popups``
        admits it (``reverie.showNotifications``; ``force``: a configuration problem)."""
        logger.log(LOG_LEVELS[severity], "%s", message)
        if self.popups.admit(severity, message, self.settings.show_notifications, force=force):
            self.window_show_message(
                types.ShowMessageParams(type=MESSAGE_TYPES[severity], message=message))

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
        job_events.dispatch(self, event)

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
        self.workers.close()
        self.log_handler.disconnect()
