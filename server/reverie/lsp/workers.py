"""The language server's worker processes, one per kind of heavy work, each made on first use.

Reading and parsing transcripts, whole-conversation reads, offline notes extractions and the
offline dream / sleep consolidation each run in a process of their own
(``reverie.transcripts.worker.ParseWorker``), so none of them takes the GIL the event loop
needs and a long job of one kind never queues the others. The ones that are not the parse
worker stop after a minute without work (they can hold tens of MB).
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from reverie.transcripts.worker import ParseWorker

#: the load, notes and dream workers stop after this long without a call
IDLE_SECONDS = 60.0
#: the workers, by role (as ``status`` names them)
ROLES = ("parse", "load", "notes", "dream")


def _worker(idle_seconds: float | None = None) -> ParseWorker:
    # here, not at the top: ``multiprocessing`` loads only after ``initialize`` was answered
    from reverie.transcripts.worker import ParseWorker

    return ParseWorker() if idle_seconds is None else ParseWorker(idle_seconds=idle_seconds)


class ServerWorkers:
    """The four worker processes of one server."""

    @functools.cached_property
    def parse(self) -> ParseWorker:
        """Where appended transcript lines are parsed (``transcripts.watch``)."""
        return _worker()

    @functools.cached_property
    def load(self) -> ParseWorker:
        """Whole-conversation reads (an extraction's context, a session's digests): reading a
        long transcript takes seconds, and appends must not queue behind it."""
        return _worker(IDLE_SECONDS)

    @functools.cached_property
    def notes(self) -> ParseWorker:
        """Offline notes extractions, run whole (``session_memory.rule_based_job``): only the new
        text comes back."""
        return _worker(IDLE_SECONDS)

    @functools.cached_property
    def dream(self) -> ParseWorker:
        """The offline dream's consolidation and the sleep cycle's offline deep phase (they
        read every session since the last run)."""
        return _worker(IDLE_SECONDS)

    async def load_call(self, func: Callable[..., Any], /, *args: Any) -> Any:
        return await self.load.call(func, *args)

    async def notes_call(self, func: Callable[..., Any], /, *args: Any) -> Any:
        return await self.notes.call(func, *args)

    async def dream_call(self, func: Callable[..., Any], /, *args: Any) -> Any:
        return await self.dream.call(func, *args)

    async def abort_dream(self) -> None:
        """Stop the dream worker (a cancelled dream): the call in flight ends at once."""
        worker = self._started("dream")
        if worker is not None:
            await asyncio.to_thread(worker.close)

    def pids(self) -> dict[str, int]:
        """The worker processes running now, by role (none is started to answer this)."""
        pids = {}
        for role in ROLES:
            worker = self._started(role)
            pid = worker.pid if worker is not None else None
            if pid is not None:
                pids[role] = pid
        return pids

    def close(self) -> None:
        for role in ROLES:
            worker = self._started(role)
            if worker is not None:
                worker.close()

    def _started(self, role: str) -> ParseWorker | None:
        """The worker of ``role`` if it was made (``cached_property`` keeps it in the dict)."""
        worker: ParseWorker | None = self.__dict__.get(role)
        return worker
