"""Connect / Disconnect Agent over the real server: dry-run diff, write, status, errors."""

from __future__ import annotations

import pytest
from pygls.exceptions import JsonRpcException

from .agents import TOOL_HEAVY, place

pytestmark = pytest.mark.e2e


async def test_connect_preview_write_status_and_disconnect(start_server, workspace,
                                                            reverie_env):
    place(TOOL_HEAVY, reverie_env["agent_home"], workspace)
    (workspace / "CLAUDE.local.md").write_text("my own notes\n")
    s = await start_server(init_options={"dreamEnabled": False, "watchDebounceMs": 50})

    status = await s.command("reverie.server.status")
    entry = status["connections"][0]
    assert entry["workspace"] == str(workspace)
    assert entry["connected"] == [] and entry["detected"] == ["claude-code"]

    preview = await s.command("reverie.server.connectAgent",
                              {"agent": "claude-code", "dryRun": True})
    assert preview["dryRun"] and preview["changed"]
    assert f"+++ {workspace / '.claude' / 'settings.local.json'}" in preview["diff"]
    assert (workspace / "CLAUDE.local.md").read_text() == "my own notes\n"
    assert not (workspace / ".claude").exists()

    done = await s.command("reverie.server.connectAgent", {"agent": "claude-code"})
    assert done["changed"] and done["scope"] == "personal" and done["mode"] == "import"
    assert "reverie:begin claude-code" in (workspace / "CLAUDE.local.md").read_text()
    listing = await s.command("reverie.server.connections")
    assert listing["connections"][0]["agent"] == "claude-code"
    assert {f["state"] for f in listing["connections"][0]["files"]} == {"ok"}
    status = await s.command("reverie.server.status")
    assert status["connections"][0]["connected"] == [
        {"agent": "claude-code", "scope": "personal", "mode": "import", "intact": True}]

    gone = await s.command("reverie.server.disconnectAgent", {"agent": "claude-code"})
    assert gone["changed"]
    assert (workspace / "CLAUDE.local.md").read_text() == "my own notes\n"
    assert not (workspace / ".claude").exists()


async def test_connect_errors_are_failed_requests(start_server, workspace):
    s = await start_server(init_options={"dreamEnabled": False})
    with pytest.raises(JsonRpcException) as info:
        await s.command("reverie.server.connectAgent", {"agent": "cursor"})
    assert "unknown agent 'cursor'" in str(info.value)
    with pytest.raises(JsonRpcException) as info:
        await s.command("reverie.server.connectAgent", {"agent": "codex", "scope": "team"})
    assert "scope" in str(info.value)
    with pytest.raises(JsonRpcException) as info:
        await s.command("reverie.server.disconnectAgent", {"agent": "gemini"})
    assert "not connected" in str(info.value)
    with pytest.raises(JsonRpcException) as info:
        await s.command("reverie.server.connectAgent", {"agent": "aider", "bogus": 1})
    assert "bogus" in str(info.value)


async def test_the_server_rewrites_hooks_left_by_a_previous_version(start_server, workspace,
                                                                   reverie_env):
    """After an extension update the hooks name the old bundle's folder: the new server
    connects the agent again at start-up, with its own interpreter."""
    import asyncio
    import json
    import sys

    from reverie.agents.connection import connect
    from reverie.config import Settings

    settings = Settings(data_dir=reverie_env["data"], agent_home=reverie_env["agent_home"])
    connect("claude-code", workspace.resolve(), "personal", settings)
    local = workspace / ".claude" / "settings.local.json"
    gone = workspace.parent / "reverie-0.0.9" / "bundled" / "libs"
    text = local.read_text()
    stale = text.replace(json.dumps(sys.executable)[1:-1],
                         f"env PYTHONPATH={gone} {sys.executable}")
    assert stale != text
    local.write_text(stale)

    await start_server(init_options={"dreamEnabled": False})
    for _ in range(150):
        if str(gone) not in local.read_text():
            break
        await asyncio.sleep(0.1)
    hooks = json.loads(local.read_text())["hooks"]
    commands = [g["hooks"][0]["command"] for groups in hooks.values() for g in groups]
    assert len(commands) == 3 and not any(str(gone) in c for c in commands), commands
    assert all(" -P -m reverie hook " in c for c in commands)
