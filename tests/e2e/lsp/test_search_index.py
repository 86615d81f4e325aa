"""The language server keeps the project's search index current: after a notes update (and a
dream) the index holds the session and its notes, updated in a worker process."""

from __future__ import annotations

import asyncio
import time

import pytest

from reverie.config import ProjectPaths, Settings
from reverie.search.index import IndexUnavailable, SearchIndex
from reverie.search.query import query_terms
from reverie.search.update import index_path

from .agents import TOOL_HEAVY, TOOL_HEAVY_ID, place

pytestmark = pytest.mark.e2e


async def _wait_for_index(path, workspace, predicate, timeout=30.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.is_file():
            try:  # the server's worker may be creating it right now
                index = SearchIndex(path, workspace, read_only=True)
            except IndexUnavailable:
                await asyncio.sleep(0.2)
                continue
            try:
                if predicate(index):
                    return index.stats()
            finally:
                index.close()
        await asyncio.sleep(0.2)
    raise AssertionError("the search index was not updated")


async def test_notes_update_updates_the_search_index(start_server, workspace, reverie_env):
    place(TOOL_HEAVY, reverie_env["agent_home"], workspace)
    s = await start_server(init_options={"watchDebounceMs": 50, "dreamEnabled": False})
    started = await s.command("reverie.server.updateNotes")
    done = await s.wait_for_event(
        "reverie/jobEvent",
        lambda e: e["jobId"] == started["jobId"] and e["type"] in ("complete", "error"))
    assert done["type"] == "complete", done
    paths = ProjectPaths(Settings(), workspace)
    db = index_path(paths)

    def has_notes(index: SearchIndex) -> bool:
        return any(r.kind == "notes" and r.session_id == TOOL_HEAVY_ID
                   for r in index.sources().values())

    stats = await _wait_for_index(db, paths.workspace, has_notes)
    assert stats.sessions == 1
    index = SearchIndex(db, paths.workspace, read_only=True)
    try:
        hits = index.search(query_terms("spotter web search"), limit=10)
        assert any(h.session_id == TOOL_HEAVY_ID for h in hits)
    finally:
        index.close()
    # the server answered all along: the update ran in a worker process
    status = await s.command("reverie.server.status")
    assert status["sessionsTracked"] == 1


async def test_a_dream_updates_the_search_index_after_apply(start_server, workspace,
                                                            reverie_env):
    """The server's memory writer runs the index update as an after-apply hook: the memory
    the dream wrote is searchable without any search having run."""
    place(TOOL_HEAVY, reverie_env["agent_home"], workspace)
    s = await start_server(init_options={"watchDebounceMs": 50, "dreamMinSessions": 1,
                                         "dreamScanIntervalSeconds": 0})
    await s.command("reverie.server.dream")
    saved = await s.wait_for_event("reverie/memorySaved", timeout=60)
    assert saved["memoryPaths"]
    paths = ProjectPaths(Settings(), workspace)

    def has_memory(index: SearchIndex) -> bool:
        return any(r.kind == "memory" for r in index.sources().values())

    await _wait_for_index(index_path(paths), paths.workspace, has_memory)
