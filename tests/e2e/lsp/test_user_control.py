"""Over the real server: per-entry curation (``reverie.server.curate``) and review before apply
(a dream staged for review, then ``reviews`` / ``applyReview`` / ``discardReview``)."""

from __future__ import annotations

import time

import pytest
from pygls.exceptions import JsonRpcException

from .agents import TOOL_HEAVY, place

pytestmark = pytest.mark.e2e


async def _dream(s) -> dict:
    job_id = (await s.command("reverie.server.dream", {}))["jobId"]
    return await s.wait_for_event(
        "reverie/jobEvent",
        lambda e: e["jobId"] == job_id and e["type"] in ("complete", "error", "skipped"),
        timeout=60,
    )


async def test_a_reviewed_dream_lands_only_when_accepted(start_server, workspace, reverie_env):
    place(TOOL_HEAVY, reverie_env["agent_home"], workspace)
    s = await start_server(init_options={"dreamEnabled": False, "dreamReview": "always"})
    done = await _dream(s)
    assert done["type"] == "complete", done
    review_id = done["payload"]["reviewId"]
    assert done["payload"]["reviewFiles"] and done["payload"]["filesTouched"] == []
    assert not (s.memory_dir / "MEMORY.md").exists()  # nothing an agent loads changed
    assert not s.events("reverie/memorySaved")
    listed = await s.command("reverie.server.reviews", {"withContents": True})
    (review,) = listed["reviews"]
    assert review["reviewId"] == review_id
    index = next(c for c in review["changes"] if c["path"] == "MEMORY.md")
    assert index["action"] == "add" and index["after"] and index["reason"] and index["sessions"]

    with pytest.raises(JsonRpcException, match="not in the change set"):
        await s.command("reverie.server.applyReview", {"reviewId": review_id, "files": ["x.md"]})
    outcome = await s.command("reverie.server.applyReview", {"reviewId": review_id})
    assert "MEMORY.md" in outcome["accepted"] and outcome["runId"]
    assert (s.memory_dir / "MEMORY.md").read_text() == index["after"]
    history = await s.command("reverie.server.history", {"limit": 1})
    assert history["runs"][0]["runId"] == outcome["runId"]
    assert (await s.command("reverie.server.reviews", {}))["reviews"] == []

    # a second review, discarded: memory stays
    (s.memory_dir / "MEMORY.md").write_text("# Memory\n")
    time.sleep(0.01)
    before = (s.memory_dir / "MEMORY.md").read_bytes()
    done = await _dream(s)
    if done["payload"].get("reviewId"):
        gone = await s.command("reverie.server.discardReview",
                               {"reviewId": done["payload"]["reviewId"]})
        assert gone["discarded"]
    assert (s.memory_dir / "MEMORY.md").read_bytes() == before


async def test_curate_pins_and_forgets_and_refuses_a_moved_line(start_server, workspace):
    s = await start_server(init_options={"dreamEnabled": False})
    s.write_memory("MEMORY.md", "# Memory\n\n- [Build](build.md) - how to build\n")
    s.write_memory("build.md", "---\nname: Build\ndescription: b\ntype: project\n---\n\n"
                               "- make build\n- never make all\n")
    pinned = await s.command("reverie.server.curate", {
        "action": "pin", "entry": "build.md:8", "expect": "- never make all"})
    assert pinned["runId"] and pinned["files"] == ["build.md"]
    assert "- never make all <!-- pinned -->" in (s.memory_dir / "build.md").read_text()
    with pytest.raises(JsonRpcException, match="changed since"):
        await s.command("reverie.server.curate", {
            "action": "forget", "entry": "build.md:8", "expect": "- never make all"})
    forgot = await s.command("reverie.server.curate", {"action": "forget", "entry": "make build"})
    assert forgot["file"] == "build.md" and forgot["line"] == 7
    runs = (await s.command("reverie.server.history", {"limit": 5}))["runs"]
    assert [r["source"] for r in runs[:2]] == ["curate", "curate"]
    undone = await s.command("reverie.server.undo", {"runId": forgot["runId"]})
    assert undone["changed"] and "- make build\n" in (s.memory_dir / "build.md").read_text()
    with pytest.raises(JsonRpcException, match="Extra inputs"):
        await s.command("reverie.server.curate", {"action": "forget", "entry": "x", "bogus": 1})
