"""Client-pushed chats (``reverie/appendMessages``), the sleep command and multi-folder routing."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from .agents import TOOL_HEAVY, TOOL_HEAVY_ID, place

pytestmark = pytest.mark.e2e

SECRET = "sk-proj-" + "AbCdEf0123456789" * 2 + "AbCd"


def push(s, session_id, messages, cwd=None, title=None):
    s.client.protocol.notify(
        "reverie/appendMessages",
        {
            "sessionId": session_id,
            "cwd": str(cwd or s.workspace),
            "messages": messages,
            **({"title": title} if title else {}),
        },
    )


CHAT = [
    {"role": "user", "text": f"Please add a retry to the uploader (token {SECRET})."},
    {
        "role": "assistant",
        "content": "I will edit uploader.py.",
        "toolCalls": [
            {"name": "edit", "input": {"path": "uploader.py"}, "filePaths": ["uploader.py"]}
        ],
        "usage": {"inputTokens": 12000, "outputTokens": 300},
    },
    {"role": "assistant", "text": "Done: retries with backoff."},
]


async def pushed_chat(start_server, session_id="chat-42"):
    """A server that was pushed CHAT and has written its first notes: the extraction is due at
    once (12,000 context tokens) and runs on its own."""
    s = await start_server(init_options={"watchDebounceMs": 50, "dreamEnabled": False})
    push(s, session_id, CHAT, title="uploader retries")
    update = await s.wait_for_event(
        "reverie/sessionNotesUpdated", lambda e: e["sessionId"] == session_id, timeout=30
    )
    return s, update


async def test_a_pushed_chat_gets_notes_is_listed_and_kept_private(
        start_server, workspace, reverie_env):
    """One pushed chat (one server, one notes extraction) checked three ways."""
    s, update = await pushed_chat(start_server)
    # it gets session notes
    notes = await s.command("reverie.server.sessionNotes", {"sessionId": "chat-42"})
    assert notes["path"] == update["path"] and notes["exists"]
    assert Path(notes["path"]).is_file()
    # it is the current session, and listed
    status = await s.command("reverie.server.status")
    assert status["currentSession"]["sessionId"] == "chat-42"
    assert status["currentSession"]["agent"] == "generic"
    listed = await s.command("reverie.server.listSessions")
    assert [r["sessionId"] for r in listed["sessions"]] == ["chat-42"]
    # it is kept private, with its secret redacted
    transcript = reverie_env["agent_home"] / ".reverie" / "sessions" / "chat-42.jsonl"
    assert transcript.stat().st_mode & 0o777 == 0o600
    text = transcript.read_text()
    assert SECRET not in text and "[REDACTED:" in text
    assert "retries with backoff" in text  # the chat itself is kept


async def test_an_invalid_push_is_ignored_and_the_server_keeps_serving(start_server, workspace):
    s = await start_server(init_options={"watchDebounceMs": 50, "dreamEnabled": False})
    s.client.protocol.notify("reverie/appendMessages", {"sessionId": "", "messages": "nope"})
    push(s, "elsewhere", [{"role": "user", "text": "hi"}], cwd="/not/a/workspace")
    assert (await s.command("reverie.server.status"))["sessionsTracked"] == 0
    push(s, "chat-42", CHAT)  # a valid push after them still lands
    await s.wait_for_event(
        "reverie/sessionNotesUpdated", lambda e: e["sessionId"] == "chat-42", timeout=30
    )
    assert (await s.command("reverie.server.status"))["sessionsTracked"] == 1


async def test_sleep_cycle_command(start_server, workspace, reverie_env):
    transcript = place(TOOL_HEAVY, reverie_env["agent_home"], workspace)
    idle = time.time() - 15 * 60  # light sleep takes sessions idle for at least 5 minutes
    os.utime(transcript, (idle, idle))
    s = await start_server(init_options={"dreamEnabled": False})
    job_id = (await s.command("reverie.server.sleep", {}))["jobId"]
    assert job_id.startswith("sleep-")
    done = await s.wait_for_event(
        "reverie/jobEvent",
        lambda e: e["jobId"] == job_id and e["type"] in ("complete", "error", "skipped"),
        timeout=30,
    )
    assert done["type"] == "complete", done
    assert done["payload"]["sessionsFound"] == 1
    saved = await s.wait_for_event("reverie/memorySaved", lambda e: e["source"] == "sleep")
    assert saved["memoryPaths"] and saved["runId"]
    history = await s.command("reverie.server.history", {"limit": 1})
    assert history["runs"][0]["source"] == "sleep"
    assert history["runs"][0]["sessions"] == [TOOL_HEAVY_ID] or history["runs"][0]["runId"]
    # the editor's "Show Diff": one run with each file's text before and after
    run_id = history["runs"][0]["runId"]
    one = await s.command(
        "reverie.server.history", {"runId": run_id[:12], "withContents": True}
    )
    (run,) = one["runs"]
    assert run["runId"] == run_id
    by_path = {c["path"]: c for c in run["changes"]}
    assert set(by_path) == set(run["added"] + run["changed"] + run["removed"])
    index = by_path["MEMORY.md"]
    assert index["before"] is None  # the first run created the index
    memory_dir = (await s.command("reverie.server.lockStatus"))["memoryDir"]
    assert index["after"] == (Path(memory_dir) / "MEMORY.md").read_text(encoding="utf-8")
    reports = await s.progress_of(job_id)
    assert reports[0].kind == "begin" and reports[-1].kind == "end"


async def test_commands_route_to_the_named_folder(start_server, workspace, tmp_path):
    other = tmp_path / "other"
    other.mkdir()
    s = await start_server(folders=[workspace, other])
    status = await s.command("reverie.server.status")
    assert sorted(status["workspaceFolders"]) == sorted([str(workspace), str(other)])
    lock = await s.command("reverie.server.lockStatus", {"workspace": other.as_uri()})
    assert "other" in lock["memoryDir"]
    lock = await s.command("reverie.server.lockStatus", {"workspace": str(workspace)})
    assert "project" in lock["memoryDir"]
    from pygls.exceptions import JsonRpcException

    with pytest.raises(JsonRpcException) as info:
        await s.command("reverie.server.lockStatus", {"workspace": "/nowhere"})
    assert "not an open workspace folder" in str(info.value)
    with pytest.raises(JsonRpcException) as info:
        await s.command("reverie.server.sessionNotes")
    assert "no session found" in str(info.value)
    with pytest.raises(JsonRpcException) as info:
        await s.command("reverie.server.undo")
    assert "undo" in str(info.value).lower() or "run" in str(info.value).lower()


async def test_workspace_folders_can_come_and_go(start_server, workspace, tmp_path):
    from lsprotocol import types

    other = tmp_path / "second"
    other.mkdir()
    s = await start_server()
    s.client.workspace_did_change_workspace_folders(
        types.DidChangeWorkspaceFoldersParams(
            event=types.WorkspaceFoldersChangeEvent(
                added=[types.WorkspaceFolder(uri=other.as_uri(), name="second")], removed=[]
            )
        )
    )

    async def folders() -> list[str]:
        return sorted((await s.command("reverie.server.status"))["workspaceFolders"])

    for _ in range(100):
        if len(await folders()) == 2:
            break
    assert await folders() == sorted([str(workspace), str(other)])
    lock = await s.command("reverie.server.lockStatus", {"workspace": str(other)})
    assert "second" in lock["memoryDir"]

    s.client.workspace_did_change_workspace_folders(
        types.DidChangeWorkspaceFoldersParams(
            event=types.WorkspaceFoldersChangeEvent(
                added=[], removed=[types.WorkspaceFolder(uri=workspace.as_uri(), name="project")]
            )
        )
    )
    for _ in range(100):
        if len(await folders()) == 1:
            break
    assert await folders() == [str(other)]


async def test_manual_dream_reviews_the_live_session_too(start_server, workspace, reverie_env):
    """The session gate leaves the current session out; "Dream Now" must not."""
    place(TOOL_HEAVY, reverie_env["agent_home"], workspace)
    s = await start_server(init_options={"dreamEnabled": False})
    status = await s.command("reverie.server.status")
    assert status["currentSession"]["sessionId"] == TOOL_HEAVY_ID
    job_id = (await s.command("reverie.server.dream", {}))["jobId"]
    done = await s.wait_for_event(
        "reverie/jobEvent",
        lambda e: e["jobId"] == job_id and e["type"] in ("complete", "error", "skipped"),
        timeout=30,
    )
    assert done["type"] == "complete", done
    assert done["payload"]["sessionsReviewed"] == 1
    history = await s.command("reverie.server.history", {"limit": 1})
    assert history["runs"][0]["sessions"] == [TOOL_HEAVY_ID]
