"""Start-up work that runs once ``initialize`` is answered: importing the job modules in a
thread (so the first appended message does not import them on the event loop) and repairing
agent hooks that point at an interpreter that is gone."""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from reverie.lsp.server import ReverieLanguageServer

logger = logging.getLogger(__name__)

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


async def warm_up(server: ReverieLanguageServer) -> None:
    """Import the job modules in a worker thread once ``initialize`` is answered, so the
    first appended message or command does not import them on the event loop."""
    import importlib

    for name in _JOB_MODULES:
        try:
            await asyncio.to_thread(importlib.import_module, name)
        except Exception:  # a part that is missing shows up when it is used
            logger.debug("could not pre-import %s", name, exc_info=True)
    try:  # loading the CA bundle takes tens of ms: not on the loop at the first job
        from reverie.llm.http import shared_ssl_context

        await asyncio.to_thread(shared_ssl_context)
    except Exception:
        logger.debug("could not prepare the TLS context", exc_info=True)


async def repair_agent_hooks(server: ReverieLanguageServer) -> None:
    """Agents whose Reverie hooks name an interpreter that is gone (after an extension
    update, the old bundle's) are connected again with this server's (``agents.repair``)."""
    from reverie.agents.repair import repair_hooks

    for tracker in list(server.trackers.values()):
        repaired = await asyncio.to_thread(repair_hooks, tracker.folder, tracker.settings)
        if repaired:
            tracker.connections_cache = None
