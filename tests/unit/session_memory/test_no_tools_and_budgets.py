"""Notes with a model that cannot call tools, and the notes job's output and time budgets,
against the real fake server: whatever goes wrong, the notes file is byte-identical after."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from reverie.events import EventRecorder
from reverie.session_memory.manager import SessionMemoryManager
from reverie.session_memory.template import check_notes
from support.fake_llm import FakeLLMServer, FakeRequest, Step, ToolCallSpec

from .conftest import Conversation
from .test_llm_writer import (
    WORKLOG_DESC,
    WORKSPACE,
    edit_step,
    llm_settings,
    long_conversation,
    notes_of,
)


@pytest.fixture
def server() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as fake:
        yield fake


def current_notes(request: FakeRequest) -> str:
    """The notes file the prompt names, as it is on disk (the responder plays the model)."""
    match = re.search(r"(/\S+/session_memory\.md)", request.last_user_text)
    assert match, "the prompt names the notes file"
    return Path(match.group(1)).read_text()


def rewritten(request: FakeRequest, line: str) -> str:
    return current_notes(request).replace(WORKLOG_DESC, f"{WORKLOG_DESC}\n{line}", 1)


def no_tools_responder(request: FakeRequest) -> Step:
    assert not request.tool_names, "a no-tools request offers no tools"
    assert "JSON schema" in request.last_user_text
    return Step.json_reply({"notes": rewritten(request, "- written without tools")})


def conversation(session_id: str) -> Conversation:
    conv = Conversation(session_id)
    for i in range(14):
        conv.user(f"request {i} " + "context " * 200)
        conv.assistant(f"finished {i} " + "details " * 200)
    return conv


async def _run(server: FakeLLMServer, session_id: str = "sess-1", **settings: object) -> tuple[
        SessionMemoryManager, EventRecorder, Path, str, object]:
    events = EventRecorder()
    manager = SessionMemoryManager(llm_settings(server, **settings), events)
    conv = long_conversation() if session_id == "sess-1" else conversation(session_id)
    path = notes_of(manager, conv)
    result = await manager.extract(conv.session, conv.messages, WORKSPACE)
    return manager, events, path, path.read_text() if path.exists() else "", result


async def test_refused_tools_switch_to_whole_notes_json_and_are_remembered(
    server: FakeLLMServer, provider: str
) -> None:
    server.scenario.no_tools = True
    server.set_fallback(no_tools_responder)
    settings = {"provider": provider}
    _m, events, _path, text, result = await _run(server, **settings)
    assert result.error is None and result.edited  # type: ignore[attr-defined]
    assert "- written without tools" in text and check_notes(text) == []
    bodies = [r.json for r in server.model_requests()]
    assert [bool(b.get("tools")) for b in bodies] == [True, False]
    assert any(e.payload.get("phase") == "no_tools" for e in events.of_type("progress"))
    # the next run (a new client) goes straight to the no-tools form
    _m, _e, _p, text, result = await _run(server, "sess-2", **settings)
    assert result.error is None and "- written without tools" in text  # type: ignore[attr-defined]
    assert [bool(r.json.get("tools")) for r in server.model_requests()] == [True, False, False]


@pytest.fixture(params=["openai", "anthropic"])
def provider(request: pytest.FixtureRequest) -> str:
    return str(request.param)


async def test_text_tool_call_switches_to_no_tools(server: FakeLLMServer) -> None:
    def responder(request: FakeRequest) -> Step:
        if request.tool_names:  # writes the call out instead of making it
            return Step.reply('{"name": "edit_file", "arguments": {"file_path": "x"}}')
        return Step.json_reply({"notes": rewritten(request, "- after a text tool call")})

    server.set_fallback(responder)
    _m, _e, _p, text, result = await _run(server)
    assert result.error is None  # type: ignore[attr-defined]
    assert "- after a text tool call" in text


async def test_configured_off_with_prose_and_ansi_around_the_json(
    server: FakeLLMServer,
) -> None:
    def responder(request: FakeRequest) -> Step:
        payload = json.dumps({"notes": rewritten(request, "- from prose")})
        return Step.reply(f"\x1b[1mSure!\x1b[0m Here it is:\n```json\n{payload}\n```\nBye.")

    server.set_fallback(responder)
    _m, _e, _p, text, result = await _run(server, tool_calling="off")
    assert result.error is None and "- from prose" in text  # type: ignore[attr-defined]
    assert not server.model_requests()[0].json.get("tools")


@pytest.mark.parametrize("reply", [
    Step.reply("I updated the notes for you, they look great."),          # prose, twice
    Step.json_reply({"notes": "# just a title\n"}),                         # breaks the template
    Step.json_reply({"notes": "x", "extra": 1, "path": "/etc/passwd"}),     # invalid notes
])
async def test_bad_no_tools_replies_leave_notes_untouched(
    server: FakeLLMServer, reply: Step
) -> None:
    server.set_default(reply)
    events = EventRecorder()
    manager = SessionMemoryManager(llm_settings(server, tool_calling="off"), events)
    conv = long_conversation()
    path = notes_of(manager, conv)
    first = await manager.extract(conv.session, conv.messages, WORKSPACE)  # creates the file
    assert first.error is not None and not first.edited
    before = path.read_bytes()
    again = await manager.extract(conv.session, conv.messages, WORKSPACE)
    assert again.error is not None and path.read_bytes() == before
    assert events.of_type("error")


async def test_no_tools_reply_cut_by_the_budget_is_not_repaired(server: FakeLLMServer) -> None:
    server.set_default(Step.reply('{"notes": "# Session Title\\n_ti', stop_reason="length"))
    _m, events, _p, _t, result = await _run(server, tool_calling="off")
    assert "cut off by the" in (result.error or "")  # type: ignore[attr-defined]
    assert len(server.model_requests()) == 1
    assert "cut off" in events.of_type("error")[-1].message


async def test_tool_edits_made_before_a_cut_off_stand(server: FakeLLMServer) -> None:
    server.enqueue(edit_step("- first edit"),
                   Step(kind="invalid_tool_args", calls=[ToolCallSpec(name="edit_file")],
                        raw_arguments='{"file_path": "session_memory.md", "ol',
                        stop_reason="length"))
    _m, _e, _p, text, result = await _run(server)
    assert result.error is None and "- first edit" in text  # type: ignore[attr-defined]
    assert check_notes(text) == []
    assert server.model_requests()[0].json["max_tokens"] == 2048  # the notes output budget


async def test_never_ending_reply_ends_within_the_job_budget(server: FakeLLMServer) -> None:
    server.set_default(Step.endless_stream(chunk_delay=0.02))
    _m, events, _path, _t, result = await _run(
        server, session_memory_budget_seconds=1.5, session_memory_max_output_tokens=100_000)
    assert "1.5" in (result.error or "") or "2 s job budget" in (result.error or "")  # type: ignore[attr-defined]
    assert "REVERIE_SESSION_MEMORY_BUDGET_SECONDS" in events.of_type("error")[-1].message


async def test_looping_on_the_same_tool_call_stops(server: FakeLLMServer) -> None:
    server.set_default(Step.tool("edit_file", file_path="session_memory.md",
                                 old_string="no such text", new_string="x"))
    _m, _e, _p, _t, result = await _run(server, session_memory_max_turns=10)
    assert "repeated the same tool call" in (result.error or "")  # type: ignore[attr-defined]
    assert len(server.model_requests()) == 3
