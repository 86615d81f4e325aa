"""Agent connections for one workspace folder: the server side of Connect / Disconnect Agent.

Thin: the core (``reverie.agents.connection``) does the work in a thread (it reads and writes
files); this module only adds what the server already knows (the folder's sessions, so
``detected`` costs no scan) and shapes the ``status`` summary.
"""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING, Any

from reverie.lsp.protocol import ConnectedAgent, WorkspaceConnections

if TYPE_CHECKING:
    from reverie.lsp.context import WorkspaceContext


def _detected(tracker: WorkspaceContext) -> list[str]:
    from reverie.agents.connection import agents_of

    return list(agents_of(ref.agent for ref in list(tracker.sessions.values())))


async def connect_agent(tracker: WorkspaceContext, agent: str, scope: str,
                        dry_run: bool) -> dict[str, Any]:
    """``reverie connect --json`` for this folder (``dry_run``: the diff, nothing written)."""
    from reverie.agents.connection import connect

    # the editor's own VS Code first: its agents are connected where this editor keeps them
    user_dirs = tracker.server.editor_places().user_dirs
    result = await asyncio.to_thread(connect, agent, tracker.folder, scope, tracker.settings,
                                     dry_run, user_dirs)
    tracker.connections_cache = None
    return result.as_json()


async def disconnect_agent(tracker: WorkspaceContext, agent: str,
                           dry_run: bool) -> dict[str, Any]:
    """``reverie disconnect --json`` for this folder."""
    from reverie.agents.connection import disconnect

    result = await asyncio.to_thread(disconnect, agent, tracker.folder, tracker.settings,
                                     dry_run, tracker.server.editor_places().user_dirs)
    tracker.connections_cache = None
    return result.as_json()


async def connections(tracker: WorkspaceContext) -> dict[str, Any]:
    """``reverie connections --json`` for this folder (``detected`` from tracked sessions)."""
    from reverie.agents.connection import connections as list_connections

    result = await asyncio.to_thread(list_connections, tracker.folder, tracker.settings, False)
    tracker.connections_cache = (time.monotonic(), result)
    data = result.as_json()
    data["detected"] = _detected(tracker)
    return data


#: how long ``status`` trusts the connections it last read (connect / disconnect through the
#: server refresh them at once; an edit by hand or by the CLI shows within this time)
SUMMARY_MAX_AGE_SECONDS = 30.0


async def summary(tracker: WorkspaceContext) -> WorkspaceConnections:
    """The ``status`` entry of one folder: answered from the last read, which is at most
    ``SUMMARY_MAX_AGE_SECONDS`` old, so a status call costs no thread hop or file read (status
    is polled, and its latency while jobs run is a measured target)."""
    from reverie.agents.connection import connections as list_connections

    cached = tracker.connections_cache
    if cached is not None and time.monotonic() - cached[0] < SUMMARY_MAX_AGE_SECONDS:
        result = cached[1]
    else:
        result = await asyncio.to_thread(list_connections, tracker.folder, tracker.settings,
                                         False)
        tracker.connections_cache = (time.monotonic(), result)
    return WorkspaceConnections(
        workspace=str(tracker.folder),
        connected=[
            ConnectedAgent(agent=c.agent, scope=c.scope, mode=c.mode,
                           intact=all(f.state == "ok" for f in c.files))
            for c in result.connections
        ],
        detected=_detected(tracker),
    )
