"""The narrow contexts the language server's features work against (esbonio style).

A feature module (``reverie.lsp.features``: notes, dream, diagnostics, connections...) needs a
few things from the server (the job registry, the workers, a way to publish) and from one
workspace folder (its places, its sessions, its lock). It types them as these Protocols, so it
never imports ``server.py`` or ``tracking.py``: the server owns the features, the features do
not know the server, and there is no import circle between them. The concrete classes
(``ReverieLanguageServer``, ``WorkspaceTracker``) satisfy them structurally.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol

if TYPE_CHECKING:
    from lsprotocol import types

    from reverie.config import ProjectPaths, Settings
    from reverie.dream.gates import ScanThrottle
    from reverie.events import JobEvent
    from reverie.lsp.digests import ConversationDigests
    from reverie.lsp.jobs import JobRegistry
    from reverie.lsp.workers import ServerWorkers
    from reverie.memory.lock import LockStatus
    from reverie.memory.write import MemoryWriter
    from reverie.session_memory.manager import SessionMemoryManager
    from reverie.transcripts.discovery import SessionRef


class SearchIndex(Protocol):
    """The server's search-index updates (``features.search_index.SearchIndexUpdates``)."""

    def update(self, tracker: WorkspaceContext) -> None: ...


class ServerContext(Protocol):
    """What features use of the server: jobs, workers, settings, publishing."""

    jobs: JobRegistry
    workers: ServerWorkers
    conversations: ConversationDigests
    dream_throttle: ScanThrottle
    memory_writer: MemoryWriter
    shutting_down: bool

    @property
    def search_index(self) -> SearchIndex: ...

    @property
    def trackers(self) -> Mapping[Path, WorkspaceContext]: ...

    @property
    def settings(self) -> Settings: ...

    def session_memory(self) -> SessionMemoryManager: ...

    def run_task(self, coro: Coroutine[Any, Any, Any], name: str) -> asyncio.Task[Any]: ...

    def on_job_event(self, event: JobEvent) -> None: ...

    def show(self, severity: Literal["error", "warning", "info"], message: str, *,
             force: bool = False) -> None: ...

    def refresh_file_diagnostics(self, path: Path) -> None: ...

    def notify(self, method: str, payload: Any) -> None: ...

    def tracker_for_path(self, path: Path) -> WorkspaceContext | None: ...

    def set_diagnostics(self, uri: str, source: str,
                        diagnostics: list[types.Diagnostic]) -> None: ...

    def document_text(self, path: Path) -> str | None: ...


class WorkspaceContext(Protocol):
    """What features use of one workspace folder."""

    server: ServerContext
    folder: Path
    sessions: dict[str, SessionRef]
    current: SessionRef | None
    #: uris of memory files that currently carry diagnostics
    memory_uris: set[str]
    connections_cache: tuple[float, Any] | None
    lock_recovery: str | None
    lock_recovery_pid: int | None

    @property
    def settings(self) -> Settings: ...

    @property
    def paths(self) -> ProjectPaths: ...

    @property
    def memory_dir(self) -> Path: ...

    def dream_key(self) -> str: ...

    async def lock_status(self) -> LockStatus: ...

    def lock_changed(self) -> None: ...

    def memory_written(self, paths: list[Path]) -> None: ...

    def refresh_memory_diagnostics(self) -> None: ...
