"""A dream with a model that cannot call tools: the memory changes come back as JSON and go
through the same gate, staging, redaction, repair and history as tool writes; anything wrong
(a path outside memory, prose, a reply cut off, a never-ending stream) changes nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from reverie.config import ProjectPaths, Settings
from reverie.dream.runner import DreamRequest, DreamRunner
from reverie.events import EventRecorder
from reverie.memory.history import MemoryHistory
from reverie.memory.lock import ConsolidationLock
from reverie.memory.store import check_index
from support.fake_llm import FakeLLMServer, FakeRequest, Step

TOPIC = ("---\nname: Testing\ndescription: how tests run\ntype: project\n---\n\n"
         "Run `pytest -q`; key sk-proj-abcdefghijklmnopqrstuvwxyz0123456789 fixed yesterday\n")
INDEX = "# Memory\n\n- [Testing](testing.md) - how tests run\n"


@pytest.fixture
def model_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REVERIE_PROVIDER", "openai")
    monkeypatch.setenv("REVERIE_API_KEY", "test-key")
    monkeypatch.setenv("REVERIE_MAX_RETRIES", "0")


def _snapshot(memory: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in memory.iterdir() if p.is_file()} \
        if memory.is_dir() else {}


def assert_lock_free(memory: Path) -> None:
    lock = ConsolidationLock(memory)
    assert lock.try_acquire(lambda: False), "the lock was released"
    lock.rollback()


def changes(*files: tuple[str, str], summary: str = "Added a testing topic.") -> Step:
    return Step.json_reply({"summary": summary, "changes": [
        {"path": path, "content": content} for path, content in files]})


async def test_refused_tools_then_json_changes_applied(
    workspace: Path, model_env: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    memory = ProjectPaths(Settings(), workspace).memory_dir
    async with FakeLLMServer() as server:
        server.scenario.no_tools = True
        monkeypatch.setenv("REVERIE_BASE_URL", server.base_url)

        def responder(request: FakeRequest) -> Step:
            assert not request.tool_names
            assert "## Current memory" in request.last_user_text
            assert "## Session " in request.last_user_text  # the sessions are in the brief
            return changes(("testing.md", TOPIC), ("MEMORY.md", INDEX))

        server.set_fallback(responder)
        events = EventRecorder()
        result = await DreamRunner(Settings(), events).run(
            DreamRequest(workspace=workspace, manual=True))
        sent = str([r.json for r in server.model_requests()])
    assert result.error is None and result.ran, result.error
    assert sorted(Path(p).name for p in result.files_touched) == ["MEMORY.md", "testing.md"]
    text = (memory / "testing.md").read_text()
    assert "sk-proj-abcdefghij" not in text and "yesterday" not in text
    assert check_index(memory) == []
    assert ".reverie" not in sent  # the staging dir stays invisible
    assert MemoryHistory(memory).runs()[0].summary.startswith("Added a testing topic")
    assert result.summary.startswith("Added a testing topic")


@pytest.mark.parametrize("reply", [
    changes(("../../escape.md", "x"), ("MEMORY.md", INDEX)),   # a path outside memory
    changes(("/etc/passwd", "x")),                              # absolute, outside
    Step.reply("I consolidated everything, all good!"),         # prose instead of JSON
    Step.reply('{"summary": "x", "changes": [{"path": "a.md", "con', stop_reason="length"),
])
async def test_rejected_no_tools_replies_change_nothing(
    workspace: Path, model_env: None, monkeypatch: pytest.MonkeyPatch, reply: Step,
    tmp_path: Path,
) -> None:
    memory = ProjectPaths(Settings(), workspace).memory_dir
    memory.mkdir(parents=True)
    (memory / "MEMORY.md").write_text("# Memory\n")
    before = _snapshot(memory)
    async with FakeLLMServer() as server:
        monkeypatch.setenv("REVERIE_BASE_URL", server.base_url)
        monkeypatch.setenv("REVERIE_TOOL_CALLING", "off")
        server.set_default(reply)
        events = EventRecorder()
        result = await DreamRunner(Settings(), events).run(
            DreamRequest(workspace=workspace, manual=True))
    assert result.error, "the run must fail visibly"
    assert events.of_type("error")
    assert _snapshot(memory) == before
    assert not (workspace.parent / "escape.md").exists()
    assert_lock_free(memory)
    assert MemoryHistory(memory).runs() == []


async def test_never_ending_stream_ends_within_the_dream_budget(
    workspace: Path, model_env: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    memory = ProjectPaths(Settings(), workspace).memory_dir
    async with FakeLLMServer() as server:
        monkeypatch.setenv("REVERIE_BASE_URL", server.base_url)
        monkeypatch.setenv("REVERIE_DREAM_BUDGET_SECONDS", "1.5")
        monkeypatch.setenv("REVERIE_DREAM_MAX_OUTPUT_TOKENS", "1000000")
        server.set_default(Step.endless_stream(chunk_delay=0.02))
        events = EventRecorder()
        result = await DreamRunner(Settings(), events).run(
            DreamRequest(workspace=workspace, manual=True))
    assert "REVERIE_DREAM_BUDGET_SECONDS" in (result.error or "")
    assert result.duration_ms < 10_000
    assert not [p for p in _snapshot(memory) if p.endswith(".md") and p != "MEMORY.md"]
    assert not memory.is_dir() or MemoryHistory(memory).runs() == []
    assert_lock_free(memory)
