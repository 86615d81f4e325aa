"""Keeping each workspace's search index current from the language server.

The server's memory writer calls ``memory_applied`` after every apply (a dream, sleep or undo;
in the writer's thread); notes updates call ``update`` from the job events. The index update
runs in the notes worker process (reading a grown session is parsing), never on the loop, and
requests while one runs coalesce into one more run after it.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from reverie.lsp.context import ServerContext, WorkspaceContext


class SearchIndexUpdates:
    """The index updates of one server."""

    def __init__(self, server: ServerContext) -> None:
        self.server = server
        #: workspaces whose index is being updated -> whether it must run once more after
        self._indexing: dict[Path, bool] = {}
        self._loop: asyncio.AbstractEventLoop | None = None

    def remember_loop(self) -> None:
        """Note the running loop (``memory_applied`` schedules on it from the writer's thread)."""
        self._loop = asyncio.get_running_loop()

    def memory_applied(self, memory_dir: Path) -> None:
        """After-apply hook of the server's memory writer: the index of each workspace with
        that memory dir is brought up to date, scheduled on the loop."""
        loop = self._loop
        if loop is None or loop.is_closed():
            return
        loop.call_soon_threadsafe(self._index_memory_dir, memory_dir)

    def _index_memory_dir(self, memory_dir: Path) -> None:
        for tracker in list(self.server.trackers.values()):
            if tracker.memory_dir == memory_dir:
                self.update(tracker)

    def update(self, tracker: WorkspaceContext) -> None:
        """Bring the workspace's index up to date after its memory or notes changed."""
        folder = tracker.folder
        if folder in self._indexing:
            self._indexing[folder] = True
            return
        self._indexing[folder] = False
        self.server.run_task(self._update(tracker), "search index")

    async def _update(self, tracker: WorkspaceContext) -> None:
        from reverie.services.search import index_after_apply

        folder = tracker.folder
        try:
            while True:
                self._indexing[folder] = False
                await self.server.workers.notes_call(index_after_apply, tracker.settings,
                                                     folder, self.server.editor_places())
                if not self._indexing.get(folder):
                    break
        finally:
            self._indexing.pop(folder, None)
