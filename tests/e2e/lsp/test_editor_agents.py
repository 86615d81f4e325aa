"""The editor's own agents over the real language server: the extension reports where VS Code
keeps its data (``initializationOptions.editorStorage``), the server watches that workspace's
``chatSessions`` folder, a Copilot Chat session rewritten in place reaches the pipeline (new
messages, no repeats), its session notes are written (offline engine), and the project's search
finds it: the index is updated with the editor's own places, not only the detected ones."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.e2e

FIX = Path(__file__).resolve().parents[2] / "fixtures" / "transcripts"
COPILOT = (FIX / "copilot-chat/source-types/chatSessions/"
           "5a0e6c1d-7b2f-4e39-8d14-3f9c2b7a6e50.json")
SESSION_ID = "5a0e6c1d-7b2f-4e39-8d14-3f9c2b7a6e50"
FAST = {
    "watchDebounceMs": 50,
    "sessionMemoryInitTokens": 1000,
    "sessionMemoryUpdateTokens": 500,
    "sessionMemoryToolCalls": 1,
    "dreamEnabled": False,
}


def rewrite(path: Path, session: dict[str, Any], requests: int) -> None:
    """VS Code's ``writeFile``: the whole document, truncated and written in place."""
    data = json.dumps({**session, "requests": session["requests"][:requests]}).encode()
    with path.open("r+b") as handle:
        handle.truncate(0)
        handle.write(data)


async def test_a_rewritten_copilot_session_reaches_the_pipeline(start_server, workspace,
                                                               tmp_path, reverie_env):
    # a VS Code user-data dir outside the agent home: only the editor's own report finds it
    user = tmp_path / "Code - Insiders" / "User"
    storage = user / "workspaceStorage" / "9f86d081884c7d659a2feaa0c55ad015"
    (storage / "chatSessions").mkdir(parents=True)
    (storage / "workspace.json").write_text(json.dumps({"folder": workspace.as_uri()}))
    session = json.loads(COPILOT.read_text())
    path = storage / "chatSessions" / COPILOT.name
    path.write_text(json.dumps({**session, "requests": []}))
    s = await start_server(init_options={
        "reverie": FAST,
        "editorStorage": {
            "storageUri": (storage / "reverie.reverie").as_uri(),
            "globalStorageUri": (user / "globalStorage" / "reverie.reverie").as_uri(),
        },
    })
    # a chat opened but not used yet is not a session
    assert (await s.command("reverie.server.status"))["currentSession"] is None

    async def watching() -> bool:  # the watcher's start-up scan runs in the parse worker,
        status = await s.command("reverie.server.status")  # once its watches are set up
        return "parse" in status["workers"]

    for _ in range(300):
        if await watching():
            break
        await asyncio.sleep(0.1)
    assert await watching()
    await asyncio.sleep(0.3)

    async def row() -> dict[str, Any]:
        rows = (await s.command("reverie.server.listSessions"))["sessions"]
        return next(r for r in rows if r["sessionId"] == SESSION_ID)

    rewrite(path, session, 1)  # the first request, with its agent-mode tool calls
    notes = await s.wait_for_event("reverie/sessionNotesUpdated",
                                   lambda e: e["sessionId"] == SESSION_ID, timeout=60)
    assert notes["edited"] is True
    status = await s.command("reverie.server.status")
    assert status["currentSession"]["sessionId"] == SESSION_ID
    assert status["currentSession"]["agent"] == "copilot-chat"
    content = (await s.command("reverie.server.sessionNotes", {"sessionId": SESSION_ID}))
    assert content["exists"] and content["content"].startswith("# Session Title")
    assert "cart" in content["content"].lower()
    rewrite(path, session, 3)  # two more requests: an Edits-mode change, a failed request
    await s.wait_for(lambda: len([e for e in s.events("reverie/sessionNotesUpdated")
                                  if e["sessionId"] == SESSION_ID]) >= 2,
                     timeout=60, what="notes updated after the rewrite")
    content = (await s.command("reverie.server.sessionNotes", {"sessionId": SESSION_ID}))
    assert "empty cart" in content["content"].lower()
    current = await row()
    assert current["agent"] == "copilot-chat" and current["messages"] == 18
    assert (await s.command("reverie.server.status"))["sessionsTracked"] == 1

    # search: the notes update re-indexes the project in the worker, with the editor's places
    from reverie.config import Settings
    from reverie.services.search import search_project

    settings = Settings(data_dir=reverie_env["data"], agent_home=reverie_env["agent_home"])
    found: list[str] = []
    for _ in range(100):
        hits = search_project(settings, workspace, "empty cart", update=False).results
        found = [h.session_id for h in hits if h.kind == "session"]
        if SESSION_ID in found:
            break
        await asyncio.sleep(0.3)
    assert SESSION_ID in found, found
