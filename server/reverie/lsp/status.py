"""``reverie.server.status``: what the server is doing, answered from memory (it is polled)."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from reverie import __version__
from reverie.lsp.protocol import StatusResult

if TYPE_CHECKING:
    from reverie.lsp.server import ReverieLanguageServer


def status(server: ReverieLanguageServer) -> StatusResult:
    usage, cost = server.jobs.usage_today()
    current = None
    trackers = list(server.trackers.values())
    if trackers:
        active = max(trackers, key=lambda t: t.last_activity)
        current = active.current_summary()
    s = server.settings
    return StatusResult(
        version=__version__,
        pid=os.getpid(),
        workspace_folders=[str(t.folder) for t in trackers]
        or [str(f) for f in server.workspace_folders()],
        sessions_tracked=sum(t.sessions_tracked() for t in trackers),
        current_session=current,
        running_jobs=[j.info() for j in server.jobs.running()],
        last_results=dict(server.jobs.last_results),
        tokens_today=usage,
        cost_today=cost,
        provider=s.provider,
        model=s.model,
        offline=s.provider == "offline",
        workers=server.workers.pids(),
    )
