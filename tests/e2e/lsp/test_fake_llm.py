"""The server against a real HTTP fake provider (``support.fake_llm``): model-written
notes and memory, progress with turns, cancellation (command and progress), expected errors,
and shutdown rolling a running dream's lock back."""

from __future__ import annotations

import re

import pytest
from lsprotocol import types

from support.fake_llm import FakeLLMServer, FakeRequest, Step, ToolCallSpec

from .agents import SPOTTER, SPOTTER_ID, TOOL_HEAVY, append_lines, place

pytestmark = pytest.mark.e2e

STATE_DESCRIPTION = "_What is in progress right now: unfinished tasks and the very next steps_\n"
TOPIC = (
    "---\nname: Spotter search\ndescription: how spotter finds results\ntype: project\n---\n\n"
    "Spotter indexes sessions before searching.\n"
)


def provider(fake: FakeLLMServer, **extra):
    return {
        "provider": "openai",
        "model": "fake-model",
        "baseUrl": fake.base_url,
        "apiKey": "sk-test-not-a-real-key",
        "maxRetries": 0,
        "watchDebounceMs": 50,
        **extra,
    }


def scripted_model(memory_dir):
    """Notes: one edit of the notes file, then done. Dream: write the index and a topic file."""

    def respond(request: FakeRequest) -> Step:
        done = bool(request.tool_results)
        if "write_file" in request.tool_names:  # the dream
            if done:
                return Step.reply("Consolidated the spotter session into one topic.")
            return Step.tool_calls(
                ToolCallSpec(
                    name="write_file",
                    arguments={"file_path": str(memory_dir / "spotter.md"), "content": TOPIC},
                ),
                ToolCallSpec(
                    name="write_file",
                    arguments={
                        "file_path": str(memory_dir / "MEMORY.md"),
                        "content": "# Memory\n\n- [Spotter search](spotter.md) - indexing\n",
                    },
                ),
            )
        if request.tool_names == ["edit_file"]:  # session notes
            if done:
                return Step.reply("Notes updated.")
            path = re.search(r"(/\S+session_memory\.md)", request.all_text).group(1)
            return Step.tool(
                "edit_file",
                file_path=path,
                old_string=STATE_DESCRIPTION,
                new_string=STATE_DESCRIPTION + "Reviewing how spotter indexes sessions.\n",
            )
        return Step.reply("ok")

    return respond


async def test_model_writes_notes_and_memory(start_server, workspace, reverie_env, memory_dir):
    place(TOOL_HEAVY, reverie_env["agent_home"], workspace)
    async with FakeLLMServer(fallback=scripted_model(memory_dir)) as fake:
        s = await start_server(
            init_options=provider(fake, dreamMinSessions=1, dreamScanIntervalSeconds=0)
        )
        assert s.memory_dir == memory_dir
        await append_lines(SPOTTER, s.agent_home, workspace)

        update = await s.wait_for_event(
            "reverie/sessionNotesUpdated", lambda e: e["sessionId"] == SPOTTER_ID, timeout=30
        )
        assert update["edited"] is True
        notes = await s.command("reverie.server.sessionNotes", {"sessionId": SPOTTER_ID})
        assert "Reviewing how spotter indexes sessions." in notes["content"]

        saved = await s.wait_for_event("reverie/memorySaved", timeout=30)
        assert sorted(saved["memoryPaths"]) == sorted(
            [str(s.memory_dir / "MEMORY.md"), str(s.memory_dir / "spotter.md")]
        )
        topic = (s.memory_dir / "spotter.md").read_text()
        assert "name: Spotter search" in topic
        assert topic.endswith("Spotter indexes sessions before searching.\n")

        # the dream's tool-loop turns reached the client as progress reports
        start = await s.wait_for_event(
            "reverie/jobEvent", lambda e: e["kind"] == "dream" and e["type"] == "start"
        )
        reports = await s.progress_of(start["jobId"])
        messages = [r.message for r in reports if r.kind == "report"]
        assert any("turn 1" in (m or "") for m in messages)
        assert any("2 files touched" in (m or "") for m in messages)

        status = await s.command("reverie.server.status")
        assert status["provider"] == "openai" and status["model"] == "fake-model"
        assert status["tokensToday"]["inputTokens"] > 0
        assert status["tokensToday"]["outputTokens"] > 0
        # the key never reaches the client
        assert all("sk-test" not in m.message for m in s.client.log_messages)
        await s.close()  # before the fake provider goes away


async def test_cancel_dream_by_command_and_by_progress(start_server, workspace):
    async with FakeLLMServer(fallback=lambda request: Step.hang(30)) as fake:
        s = await start_server(init_options=provider(fake, dreamEnabled=False))
        lock = s.memory_dir / ".consolidate-lock"

        for how in ("command", "progress"):
            job_id = (await s.command("reverie.server.dream", {"extraContext": "focus"}))["jobId"]
            await s.wait_for_event(
                "reverie/jobEvent", lambda e, j=job_id: e["jobId"] == j and e["type"] == "start"
            )
            assert lock.read_text() == str(await _server_pid(s))  # the dream holds the lock
            busy = await s.command("reverie.server.status")
            assert [j["jobId"] for j in busy["runningJobs"]] == [job_id]
            if how == "command":
                result = await s.command("reverie.server.cancelJob", {"jobId": job_id})
                assert result["cancelled"] is True
            else:
                s.client.window_work_done_progress_cancel(
                    types.WorkDoneProgressCancelParams(token=f"reverie/{job_id}")
                )
            await s.wait_for_event(
                "reverie/jobEvent",
                lambda e, j=job_id: e["jobId"] == j and e["type"] == "cancelled",
            )
            # rolled back: there was no lock before, so there is none now, and no memory files
            await s.wait_for(lambda: not lock.exists(), what="lock rolled back")
            assert not (s.memory_dir / "MEMORY.md").exists()
            await s.progress_of(job_id)
            status = await s.command("reverie.server.status")
            assert status["runningJobs"] == []
            assert status["lastResults"]["dream"]["type"] == "cancelled"
        await s.close()


async def test_expected_errors_are_one_line(start_server, workspace, reverie_env):
    place(TOOL_HEAVY, reverie_env["agent_home"], workspace)
    async with FakeLLMServer(fallback=lambda request: Step.error(401, "invalid api key")) as fake:
        s = await start_server(init_options=provider(fake, dreamEnabled=False))
        job_id = (await s.command("reverie.server.updateNotes"))["jobId"]
        failed = await s.wait_for_event(
            "reverie/jobEvent", lambda e: e["jobId"] == job_id and e["type"] == "error"
        )
        assert "401" in failed["payload"]["message"] or "key" in failed["payload"]["message"]
        popup = await s.wait_for(
            lambda: [m for m in s.client.messages if m.type == types.MessageType.Error],
            what="error popup",
        )
        assert len(popup) == 1 and "\n" not in popup[0].message
        assert "sk-test" not in popup[0].message
        # the server keeps serving
        assert (await s.command("reverie.server.status"))["runningJobs"] == []
        await s.close()


async def test_shutdown_cancels_a_running_dream(start_server, workspace):
    async with FakeLLMServer(fallback=lambda request: Step.hang(60)) as fake:
        s = await start_server(init_options=provider(fake, dreamEnabled=False))
        lock = s.memory_dir / ".consolidate-lock"
        job_id = (await s.command("reverie.server.dream"))["jobId"]
        await s.wait_for_event(
            "reverie/jobEvent", lambda e: e["jobId"] == job_id and e["type"] == "start"
        )
        assert lock.exists()
        await s.close()  # drains for a bounded time, then cancels
        assert not lock.exists()
        assert [e["type"] for e in s.job_events(job_id)][-1] == "cancelled"


async def _server_pid(s) -> int:
    return (await s.command("reverie.server.status"))["pid"]
