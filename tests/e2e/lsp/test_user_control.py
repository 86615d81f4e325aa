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


async def test_an_agents_proposal_is_listed_and_applied_whole(start_server, workspace):
    from reverie.services.proposals import propose_change

    s = await start_server(init_options={"dreamEnabled": False})
    s.write_memory("MEMORY.md", "# Memory\n\n- [Build](build.md) - how to build\n")
    s.write_memory("build.md", "---\nname: Build\ndescription: b\ntype: project\n---\n\n"
                               "- make build\n- make all is slow\n")
    before = (s.memory_dir / "build.md").read_bytes()
    # what the MCP server does for an agent, in the agent's process
    staged = await propose_change(s.memory_dir, "forget", "make all", agent="codex",
                                  reason="the user said make all is fast since the cache")
    (review,) = (await s.command("reverie.server.reviews", {"withContents": True}))["reviews"]
    assert review["reviewId"] == staged.review_id and review["source"] == "agent"
    assert review["proposedBy"] == "codex"
    change = review["changes"][0]
    assert change["reason"] == "codex: the user said make all is fast since the cache"
    assert "- make all is slow" in change["before"] and "make all" not in change["after"]
    assert (s.memory_dir / "build.md").read_bytes() == before  # not before the person says so
    # forgetting an index line takes its topic file along: two files, accepted whole or not
    both = await propose_change(s.memory_dir, "forget", "MEMORY.md:3", agent="codex",
                                reason="the build is documented in README now")
    assert sorted(c.path for c in both.changes) == ["MEMORY.md", "build.md"]
    with pytest.raises(JsonRpcException, match="accept it whole"):
        await s.command("reverie.server.applyReview",
                        {"reviewId": both.review_id, "files": ["MEMORY.md"]})
    gone = await s.command("reverie.server.discardReview", {"reviewId": both.review_id})
    assert sorted(gone["discarded"]) == ["MEMORY.md", "build.md"]
    outcome = await s.command("reverie.server.applyReview", {"reviewId": staged.review_id})
    assert outcome["accepted"] == ["build.md"] and outcome["message"].startswith(
        "Accepted the proposal: forget build.md:8")
    assert (s.memory_dir / "build.md").read_text().endswith("- make build\n")
    (run,) = (await s.command("reverie.server.history", {"limit": 1}))["runs"]
    assert run["source"] == "curate" and run["runId"] == outcome["runId"]


async def test_agent_context_lists_nothing_until_an_agent_is_connected(start_server, workspace):
    s = await start_server(init_options={"dreamEnabled": False})
    empty = await s.command("reverie.server.agentContext", {})
    assert empty["agents"] == [] and empty["memoryDir"] == str(s.memory_dir)
    s.write_memory("MEMORY.md", "# Memory\n\n- [Build](build.md) - how to build\n")
    await s.command("reverie.server.connectAgent", {"agent": "codex", "scope": "project"})
    given = await s.command("reverie.server.agentContext", {})
    (codex,) = given["agents"]
    assert codex["agent"] == "codex" and codex["mode"] == "copy" and codex["label"] == "Codex"
    block = codex["parts"][0]
    assert block["kind"] == "block" and block["path"].endswith("AGENTS.md")
    assert "[Build]" in block["text"] and block["tokens"] == round(len(block["text"]) / 4)
    assert codex["startTokens"] == block["tokens"]
    assert {p["kind"] for p in codex["parts"]} >= {"block", "session-start", "prompt"}
