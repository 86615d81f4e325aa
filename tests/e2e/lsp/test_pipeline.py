"""The whole pipeline with the offline engine: a real transcript appended line by line into a
temporary agent home -> the watcher -> session notes -> an automatic dream -> notifications,
progress and status."""

from __future__ import annotations

import pytest
from lsprotocol import types

from .agents import SPOTTER, SPOTTER_ID, TOOL_HEAVY, TOOL_HEAVY_ID, append_lines, place

pytestmark = pytest.mark.e2e

FAST = {
    "watchDebounceMs": 50,
    "dreamMinSessions": 1,
    "dreamScanIntervalSeconds": 0,
}


def kinds(reports: list) -> list[str]:
    return [r.kind for r in reports]


async def test_transcript_to_notes_to_dream(start_server, workspace, reverie_env):
    # an earlier session of this workspace is already on disk when the editor opens
    place(TOOL_HEAVY, reverie_env["agent_home"], workspace)
    s = await start_server(init_options=FAST)
    status = await s.command("reverie.server.status")
    assert status["sessionsTracked"] == 1
    assert status["currentSession"]["sessionId"] == TOOL_HEAVY_ID

    # the agent writes a new session while the server watches
    await append_lines(SPOTTER, s.agent_home, workspace)

    notes = await s.wait_for_event(
        "reverie/sessionNotesUpdated", lambda e: e["sessionId"] == SPOTTER_ID, timeout=30
    )
    assert notes["edited"] is True
    saved = await s.wait_for_event("reverie/memorySaved", timeout=30)

    # session notes: the file the notification names holds the ten-section template, filled in
    result = await s.command("reverie.server.sessionNotes", {"sessionId": SPOTTER_ID})
    assert result["path"] == notes["path"] and result["exists"] is True
    assert result["content"].startswith("# Session Title")
    assert "# Worklog" in result["content"]
    # the default session is the current one: the new session
    assert (await s.command("reverie.server.sessionNotes"))["sessionId"] == SPOTTER_ID

    # the dream consolidated the earlier session into the memory dir
    assert saved["source"] == "dream"
    assert saved["runId"]
    assert saved["memoryPaths"] and all(
        p.startswith(str(s.memory_dir)) for p in saved["memoryPaths"]
    )
    assert (s.memory_dir / "MEMORY.md").is_file()

    # job events: the dream's start ... complete under one job id, with progress in order
    dream_start = next(
        e for e in s.events("reverie/jobEvent") if e["kind"] == "dream" and e["type"] == "start"
    )
    job_id = dream_start["jobId"]
    types_seen = [e["type"] for e in s.job_events(job_id)]
    assert types_seen[0] == "start"
    assert "complete" in types_seen and "memory_saved" in types_seen
    assert dream_start["payload"]["runId"] == saved["runId"]
    progress = await s.progress_of(job_id)
    assert kinds(progress)[0] == "begin"
    assert kinds(progress)[-1] == "end"
    assert set(kinds(progress)[1:-1]) == {"report"} and len(progress) >= 3
    assert progress[0].cancellable is True

    # the extraction was a job too, with its own progress
    sm_job = next(
        e["jobId"]
        for e in s.events("reverie/jobEvent")
        if e["kind"] == "session_memory" and e["type"] == "complete"
    )
    sm_progress = await s.progress_of(sm_job)
    assert kinds(sm_progress)[0] == "begin"

    status = await s.command("reverie.server.status")
    assert status["sessionsTracked"] >= 2
    assert status["currentSession"]["sessionId"] == SPOTTER_ID
    assert status["lastResults"]["dream"]["type"] == "complete"
    assert status["lastResults"]["session_memory"]["type"] == "complete"

    # history and lock status reflect the run
    history = await s.command("reverie.server.history")
    assert history["runs"][0]["runId"] == saved["runId"]
    lock = await s.command("reverie.server.lockStatus")
    assert lock["holderPid"] is None and lock["lastConsolidatedAt"] is not None
    assert lock["nextGate"] == "time_gate"
    await s.wait_for_event("reverie/lockChanged", lambda e: e["nextGate"] == "time_gate")

    # undo the dream: memory goes back, and history records the undo
    undone = await s.command("reverie.server.undo", {"runId": saved["runId"]})
    assert undone["changed"] is True and undone["run"]["undoes"] == saved["runId"]
    assert not (s.memory_dir / "MEMORY.md").exists()
    assert undone["undoneRunId"] == saved["runId"] and "MEMORY.md" in undone["files"]
    assert undone["message"].startswith(f"Undid the auto run {saved['runId']}:")
    runs = (await s.command("reverie.server.history"))["runs"]
    assert [r["source"] for r in runs[:2]] == ["undo", "auto"] and runs[1]["undone"] is True

    # "Undo Last Dream" never undoes an undo: with the only dream undone there is nothing left
    from pygls.exceptions import JsonRpcException

    with pytest.raises(JsonRpcException, match="nothing to undo"):
        await s.command("reverie.server.undo")
    # a redo (undo of that undo) brings the dream back, and then it can be undone again
    redone = await s.command("reverie.server.undo", {"redo": True})
    assert redone["changed"] is True and redone["message"].startswith("Redid")
    assert (s.memory_dir / "MEMORY.md").is_file()
    again = await s.command("reverie.server.undo")
    assert again["undoneRunId"] == saved["runId"] and again["changed"] is True
    assert not (s.memory_dir / "MEMORY.md").exists()

    listed = await s.command("reverie.server.listSessions")
    ids = [row["sessionId"] for row in listed["sessions"]]
    assert ids[0] == SPOTTER_ID and TOOL_HEAVY_ID in ids
    assert listed["sessions"][0]["current"] is True
    # the editor's Sessions view: the agent's title (or first prompt) and whether notes exist
    assert listed["sessions"][0]["hasNotes"] is True and "title" in listed["sessions"][0]


async def test_forced_update(start_server, workspace, reverie_env):
    place(TOOL_HEAVY, reverie_env["agent_home"], workspace)
    s = await start_server(init_options={**FAST, "dreamEnabled": False})
    started = await s.command("reverie.server.updateNotes")
    job_id = started["jobId"]
    assert job_id.startswith("session_memory-")
    done = await s.wait_for_event(
        "reverie/jobEvent",
        lambda e: e["jobId"] == job_id and e["type"] in ("complete", "error", "skipped"),
    )
    assert done["type"] == "complete", done
    update = await s.wait_for_event("reverie/sessionNotesUpdated")
    assert update["sessionId"] == TOOL_HEAVY_ID
    reports = await s.progress_of(job_id)
    assert isinstance(reports[0], types.WorkDoneProgressBegin)
    assert isinstance(reports[-1], types.WorkDoneProgressEnd)
