"""The LLM writer against the real-HTTP fake provider: gate, coalescing, waiter, failures."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from reverie.config import Settings
from reverie.events import EventRecorder
from reverie.session_memory.manager import SessionMemoryManager
from reverie.session_memory.template import check_notes
from support.fake_llm import FakeLLMServer, FakeRequest, Step

from .conftest import Conversation

WORKSPACE = Path("/work/project")
WORKLOG_DESC = "_A terse step-by-step record of what was tried and what was done_"


@pytest.fixture
def server() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as fake:
        yield fake


def llm_settings(server: FakeLLMServer, **overrides: object) -> Settings:
    values: dict[str, object] = {
        "provider": "openai", "base_url": server.base_url, "api_key": "test-key",
        "max_retries": 0, "request_timeout_seconds": 5.0, "model": "fake-model",
    }
    values.update(overrides)
    return Settings(**values)  # type: ignore[arg-type]


def edit_step(line: str, file_path: str = "session_memory.md") -> Step:
    return Step.tool("edit_file", file_path=file_path, old_string=WORKLOG_DESC,
                     new_string=f"{WORKLOG_DESC}\n{line}")


def worklog_responder(request: FakeRequest) -> Step:
    """Turn 1: add the newest user message to the Worklog; turn 2: stop."""
    if request.turn > 1:
        return Step.reply("done")
    steps = re.findall(r"### user\n(.*)", request.last_user_text)
    return edit_step(f"- saw: {steps[-1] if steps else 'nothing'}")


def long_conversation(turns: int = 14) -> Conversation:
    conv = Conversation()
    for i in range(turns):
        conv.user(f"request {i} " + "context " * 200)
        conv.shell(f"make step{i}")
        conv.assistant(f"finished {i} " + "details " * 200)
    return conv


def notes_of(manager: SessionMemoryManager, conv: Conversation) -> Path:
    return manager.notes_path(conv.session.id, WORKSPACE)


async def test_edit_through_relative_path_updates_notes(server: FakeLLMServer) -> None:
    server.set_fallback(worklog_responder)
    events = EventRecorder()
    manager = SessionMemoryManager(llm_settings(server), events)
    conv = long_conversation()
    result = await manager.extract(conv.session, conv.messages, WORKSPACE)
    assert result.ran and result.edited and result.error is None and result.writer == "llm"
    assert result.tokens_in > 1_000 and result.tokens_out > 0 and result.turns == 2
    text = notes_of(manager, conv).read_text()
    assert "- saw: request 13" in text and check_notes(text) == []
    first = server.model_requests()[0].json
    assert [t["function"]["name"] for t in first["tools"]] == ["edit_file"]
    prompt = first["messages"][-1]["content"]
    assert str(notes_of(manager, conv)) in prompt  # the model is told the real path
    assert not list(notes_of(manager, conv).parent.glob(".staging-*"))  # staging cleaned up
    assert events.of_type("complete")[-1].payload["edited"] is True


async def test_secrets_are_redacted_before_the_model_sees_them(server: FakeLLMServer) -> None:
    server.set_fallback(worklog_responder)
    key = "ghp_" + "Q7" * 18
    conv = long_conversation()
    conv.user(f"push with GITHUB_TOKEN={key}").assistant("ok")
    manager = SessionMemoryManager(llm_settings(server), EventRecorder())
    result = await manager.extract(conv.session, conv.messages, WORKSPACE, force=True)
    assert result.redactions >= 1
    assert all(key not in r.body for r in server.model_requests())
    assert key not in notes_of(manager, conv).read_text()


@pytest.mark.parametrize(
    ("step", "denied"),
    [(Step.tool("read_file", file_path="session_memory.md"), "read_file"),
     (Step.tool("write_file", file_path="session_memory.md", content="x"), "write_file"),
     ("other-path", "edit_file")],
)
async def test_denied_tool_or_path_leaves_notes_byte_identical(
    server: FakeLLMServer, tmp_path: Path, step: Step | str, denied: str
) -> None:
    victim = tmp_path / "other.md"
    victim.write_text(WORKLOG_DESC + "\n")
    if step == "other-path":
        step = edit_step("- pwned", file_path=str(victim))
    assert isinstance(step, Step)
    server.enqueue(step, Step.reply("done"))
    events = EventRecorder()
    manager = SessionMemoryManager(llm_settings(server), events)
    conv = long_conversation()
    notes = notes_of(manager, conv)
    notes.parent.mkdir(parents=True)
    from reverie.session_memory.template import default_template

    notes.write_text(default_template().text + "\nhand written line\n")
    before = notes.read_bytes()
    result = await manager.extract(conv.session, conv.messages, WORKSPACE, force=True)
    assert result.error and "may not use" in result.error and not result.edited
    assert notes.read_bytes() == before
    assert victim.read_text() == WORKLOG_DESC + "\n"
    denials = events.of_type("denied")
    assert denials and denials[0].payload["tool"] == denied
    assert events.of_type("error")[-1].payload["error"] == result.error
    # the model was told about the refusal
    tool_msgs = [m for m in server.model_requests()[1].json["messages"] if m["role"] == "tool"]
    assert tool_msgs and tool_msgs[0]["content"].startswith("Error")


@pytest.mark.parametrize("kind", ["malformed", "timeout", "breaks_structure", "http_error"])
async def test_failures_leave_notes_unchanged(server: FakeLLMServer, kind: str) -> None:
    overrides: dict[str, object] = {}
    if kind == "malformed":
        server.enqueue(Step.malformed())
    elif kind == "timeout":
        server.enqueue(Step.hang(3.0))
        overrides["request_timeout_seconds"] = 0.3
    elif kind == "http_error":
        server.enqueue(Step.error(500, "boom"))
    else:
        server.enqueue(
            Step.tool("edit_file", file_path="session_memory.md", old_string="# Learnings",
                      new_string="# Lessons"),
            Step.reply("done"),
        )
    events = EventRecorder()
    manager = SessionMemoryManager(llm_settings(server, **overrides), events)
    conv = long_conversation()
    # create the notes first (offline run) so there is something to protect
    offline = SessionMemoryManager(Settings(), EventRecorder())
    await offline.extract(conv.session, conv.messages, WORKSPACE, force=True)
    notes = notes_of(manager, conv)
    before = notes.read_bytes()
    result = await manager.extract(conv.session, conv.messages, WORKSPACE, force=True)
    assert result.error is not None and not result.edited
    assert notes.read_bytes() == before
    error = events.of_type("error")[-1]
    assert error.job == "session_memory"
    if kind == "breaks_structure":
        assert "update rejected" in result.error and "Learnings" in result.error
    assert "test-key" not in json.dumps([e.model_dump(mode="json") for e in events.events])


async def test_three_requests_during_a_run_make_exactly_one_trailing_run(
    server: FakeLLMServer,
) -> None:
    calls: list[str] = []

    def slow_responder(request: FakeRequest) -> Step:
        step = worklog_responder(request)
        calls.append(request.last_user_text)
        step.delay = 0.4 if request.turn == 1 else 0.0
        return step

    server.set_fallback(slow_responder)
    events = EventRecorder()
    manager = SessionMemoryManager(llm_settings(server), events)
    conv = long_conversation()
    assert await manager.on_messages(conv.session, list(conv.messages), WORKSPACE) == "scheduled"
    await asyncio.to_thread(server.wait_for_requests, 1)
    for n in range(3):
        conv.user(f"follow-up {n} " + "more " * 1_300).assistant(f"answer {n}")
        status = await manager.on_messages(conv.session, list(conv.messages), WORKSPACE)
        assert status == "coalesced"
    assert manager.is_running(conv.session.id)
    assert await manager.wait_for_extraction(conv.session.id, timeout=10) is True
    assert await manager.drain(5) == 0
    assert len(events.of_type("coalesced")) == 3
    assert [e.payload["reason"] for e in events.of_type("skipped")] == ["coalesced"] * 3
    assert len(events.of_type("trailing_start")) == 1
    assert len(events.of_type("complete")) == 2
    assert len(server.model_requests()) == 4  # two runs of two turns
    # the trailing run saw the latest context
    assert "follow-up 2" in server.model_requests()[2].json["messages"][-1]["content"]
    text = notes_of(manager, conv).read_text()
    assert "- saw: follow-up 2" in text


async def test_waiter_times_out_and_ignores_stale_runs(server: FakeLLMServer) -> None:
    def slow(request: FakeRequest) -> Step:
        return Step.reply("nothing to add", delay=0.8)

    server.set_fallback(slow)
    manager = SessionMemoryManager(llm_settings(server), EventRecorder())
    conv = long_conversation()
    assert await manager.wait_for_extraction(conv.session.id) is True  # nothing running
    await manager.on_messages(conv.session, conv.messages, WORKSPACE)
    assert await manager.wait_for_extraction(conv.session.id, timeout=0.1) is False
    chain = manager._chains[conv.session.id]
    chain.started_at -= 61  # the run is now older than the 60 s stale limit
    assert await manager.wait_for_extraction(conv.session.id, timeout=5) is False
    chain.started_at += 61
    assert await manager.wait_for_extraction(conv.session.id, timeout=5) is True
    assert not manager.is_running(conv.session.id)


async def test_incremental_mode_sends_only_new_messages(
    server: FakeLLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    server.set_fallback(worklog_responder)
    conv = long_conversation()
    manager = SessionMemoryManager(llm_settings(server), EventRecorder())
    await manager.extract(conv.session, conv.messages, WORKSPACE, force=True)
    conv.user("brand new request " + "fresh " * 50).assistant("ok")
    # a restart in between: the cursor comes from the saved state
    manager = SessionMemoryManager(llm_settings(server), EventRecorder())
    await manager.extract(conv.session, conv.messages, WORKSPACE, force=True)
    second = server.model_requests()[2].json["messages"][-1]["content"]
    assert "brand new request" in second
    assert "request 0 " not in second and "request 13 " in second  # small overlap window
    assert "only the part of the session since the notes were last updated" in second
    monkeypatch.setenv("REVERIE_SESSION_MEMORY_CONTEXT", "full")
    manager = SessionMemoryManager(llm_settings(server), EventRecorder())
    await manager.extract(conv.session, conv.messages, WORKSPACE, force=True)
    full = server.model_requests()[4].json["messages"][-1]["content"]
    assert "request 0 " in full and "brand new request" in full


async def test_prompt_override_is_used(server: FakeLLMServer, reverie_env: dict[str, Path]) -> None:
    override = reverie_env["config"] / "session_memory"
    override.mkdir()
    (override / "prompt.md").write_text("CUSTOM: edit {{notes_path}} now.\n")
    server.enqueue(Step.reply("nothing"))
    manager = SessionMemoryManager(llm_settings(server), EventRecorder())
    conv = long_conversation()
    result = await manager.extract(conv.session, conv.messages, WORKSPACE, force=True)
    assert result.ran and not result.edited
    prompt = server.model_requests()[0].json["messages"][-1]["content"]
    assert f"CUSTOM: edit {notes_of(manager, conv)} now." in prompt


async def test_drain_reports_unfinished_work(server: FakeLLMServer) -> None:
    server.set_fallback(lambda request: Step.reply("nothing to add", delay=0.6))
    manager = SessionMemoryManager(llm_settings(server), EventRecorder())
    conv = long_conversation()
    assert await manager.drain(1) == 0
    await manager.on_messages(conv.session, conv.messages, WORKSPACE)
    assert await manager.drain(0.05) == 1
    assert await manager.drain(5) == 0


async def test_oversized_notes_get_condensing_reminders(server: FakeLLMServer) -> None:
    from reverie.session_memory.template import default_template

    server.enqueue(Step.reply("nothing"))
    manager = SessionMemoryManager(llm_settings(server), EventRecorder())
    conv = long_conversation()
    notes = notes_of(manager, conv)
    notes.parent.mkdir(parents=True)
    notes.write_text(default_template().text + "- old entry " * 1_000 + "\n")
    await manager.extract(conv.session, conv.messages, WORKSPACE, force=True)
    prompt = server.model_requests()[0].json["messages"][-1]["content"]
    assert "These sections are over their limit and must be condensed" in prompt
    assert "'# Worklog': ~" in prompt


async def test_anthropic_wire_format(server: FakeLLMServer) -> None:
    server.set_fallback(worklog_responder)
    settings = llm_settings(server, provider="anthropic")
    manager = SessionMemoryManager(settings, EventRecorder())
    conv = long_conversation()
    result = await manager.extract(conv.session, conv.messages, WORKSPACE, force=True)
    assert result.edited and result.error is None
    assert server.model_requests()[0].provider == "anthropic"
    assert "- saw: request 13" in notes_of(manager, conv).read_text()


async def test_a_denied_call_beside_valid_edits_keeps_the_edits(
    server: FakeLLMServer, tmp_path: Path
) -> None:
    """One refused call does not throw the update away: it is denied (the model is told and a
    ``denied`` event reports it) and the valid edit to the notes stands."""
    victim = tmp_path / "other.md"
    victim.write_text("untouched\n")
    server.enqueue(edit_step("- kept edit"),
                   Step.tool("write_file", file_path=str(victim), content="pwned"),
                   Step.reply("done"))
    events = EventRecorder()
    manager = SessionMemoryManager(llm_settings(server), events)
    conv = long_conversation()
    result = await manager.extract(conv.session, conv.messages, WORKSPACE, force=True)
    assert result.error is None and result.edited
    assert "- kept edit" in notes_of(manager, conv).read_text()
    assert victim.read_text() == "untouched\n"
    denied = events.of_type("denied")
    assert denied and denied[0].payload["tool"] == "write_file"
