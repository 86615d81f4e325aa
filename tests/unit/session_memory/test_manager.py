"""SessionMemoryManager with the offline engine: thresholds, files, state, events, gating."""

from __future__ import annotations

import stat
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

from reverie.config import ProjectPaths, Settings
from reverie.events import EventRecorder
from reverie.session_memory.cursor import MessageCursor
from reverie.session_memory.manager import SessionMemoryManager
from reverie.session_memory.rule_based_job import OfflineNotesJob, OfflineNotesResult
from reverie.session_memory.source import InMemoryConversation, RecentContext
from reverie.session_memory.state import load_state
from reverie.session_memory.template import check_notes, default_template
from reverie.transcripts.digest import MessageDigest
from reverie.transcripts.model import Message
from reverie.transcripts.reader import load_transcript

from .conftest import CLAUDE_INLINE, Conversation

WORKSPACE = Path("/work/project")


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def _long_conversation(turns: int, conv: Conversation | None = None) -> Conversation:
    conv = conv or Conversation()
    for i in range(turns):
        conv.user(f"step {i}: refactor module_{i}.py " + "context " * 200)
        conv.edit(f"/work/project/module_{i}.py", f"def handler_{i}():")
        conv.assistant(f"Refactored module_{i}.py. " + "details " * 200)
    return conv


async def test_threshold_then_extraction_writes_private_notes_and_state() -> None:
    events = EventRecorder()
    manager = SessionMemoryManager(Settings(), events)
    small = Conversation().user("hello").assistant("hi")
    assert await manager.on_messages(small.session, small.messages, WORKSPACE) == "threshold"
    skipped = events.of_type("skipped")[-1]
    assert skipped.payload["reason"] == "threshold" and skipped.job == "session_memory"
    assert not manager.notes_path(small.session.id, WORKSPACE).exists()

    conv = _long_conversation(12)  # ~10.8k estimated tokens, ends at a natural break
    assert await manager.on_messages(conv.session, conv.messages, WORKSPACE) == "scheduled"
    assert await manager.drain(10) == 0
    notes = manager.notes_path(conv.session.id, WORKSPACE)
    assert _mode(notes) == 0o600
    for directory in (notes.parent, notes.parent.parent, notes.parent.parent.parent):
        assert _mode(directory) == 0o700
    text = notes.read_text()
    assert check_notes(text) == []
    assert "`module_11.py` (edited, 1 edit; defines/changes `handler_11`)" in text
    complete = events.of_type("complete")[-1]
    assert complete.payload["edited"] is True and complete.payload["notes_path"] == str(notes)
    assert {"turns", "tokens_in", "tokens_out", "duration_ms", "redactions"} <= set(
        complete.payload)
    updated = events.of_type("notes_updated")[-1]
    assert updated.payload == {"session_id": conv.session.id, "path": str(notes), "edited": True}
    state_path = ProjectPaths(Settings(), WORKSPACE).notes_state_path(conv.session.id)
    assert _mode(state_path) == 0o600
    state = load_state(state_path, conv.session.id)
    assert state.initialized and state.extractions == 1
    assert state.tokens_at_last_extraction >= 10_000
    assert state.last_summarized_cursor is not None
    assert state.last_summarized_cursor.fingerprint == f"id:{conv.messages[-1].id}"


async def test_restart_continues_from_the_saved_cursor() -> None:
    conv = _long_conversation(12)
    first = SessionMemoryManager(Settings(), EventRecorder())
    result = await first.extract(conv.session, conv.messages, WORKSPACE)
    assert result.ran and result.edited
    # a new process: the saved state says the init threshold passed and where we stopped
    events = EventRecorder()
    second = SessionMemoryManager(Settings(), events)
    conv.user("one more small question").assistant("short answer")
    again = await second.extract(conv.session, conv.messages, WORKSPACE)
    assert again.skipped_reason == "threshold"
    assert "new tokens" in events.of_type("skipped")[-1].payload["why"]
    _long_conversation(6, conv)  # +5k tokens
    third = await second.extract(conv.session, conv.messages, WORKSPACE)
    assert third.ran
    state = second.state_for(conv.session.id, WORKSPACE)
    assert state.extractions == 2


async def test_pending_tool_call_holds_back_the_summarised_cursor() -> None:
    conv = _long_conversation(12)
    conv.pending_call("pytest -q")
    manager = SessionMemoryManager(Settings(), EventRecorder())
    result = await manager.extract(conv.session, conv.messages, WORKSPACE, force=True)
    assert result.ran
    state = manager.state_for(conv.session.id, WORKSPACE)
    assert state.last_summarized_cursor is None  # mid tool loop: not a safe point
    assert state.last_extracted_cursor is not None
    assert state.last_extracted_cursor.fingerprint == f"id:{conv.messages[-1].id}"
    assert "- In progress: `pytest -q`" in Path(result.notes_path or "").read_text()


async def test_real_transcript_with_force_and_json_shape() -> None:
    transcript = load_transcript(CLAUDE_INLINE)
    manager = SessionMemoryManager(Settings(), EventRecorder())
    result = await manager.extract(transcript.session, transcript.messages,
                                   Path(transcript.session.cwd or "/"), force=True)
    assert list(result.as_json()) == ["notes_path", "ran", "skipped_reason", "edited",
                                      "tokens_in", "tokens_out", "redactions"]
    assert result.ran and result.edited and result.writer == "offline"
    assert "`CLAUDE.md` (edited" in Path(result.notes_path or "").read_text()


@pytest.mark.parametrize(
    ("env", "subagent", "reason"),
    [({"REVERIE_SESSION_MEMORY_ENABLED": "false"}, False, "disabled"),
     ({"REVERIE_REMOTE_MODE": "true"}, False, "disabled"),
     ({}, True, "subagent")],
)
async def test_disabled_cases(monkeypatch: pytest.MonkeyPatch, env: dict[str, str],
                              subagent: bool, reason: str) -> None:
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    events = EventRecorder()
    manager = SessionMemoryManager(Settings(), events)
    conv = _long_conversation(12)
    if subagent:
        conv.session.parent_session_id = "parent"
    assert await manager.on_messages(conv.session, conv.messages, WORKSPACE) == reason
    forced = await manager.extract(conv.session, conv.messages, WORKSPACE, force=True)
    assert forced.skipped_reason == reason and not forced.ran
    assert [e.payload["reason"] for e in events.of_type("skipped")] == [reason, reason]
    assert not manager.notes_path(conv.session.id, WORKSPACE).exists()


async def test_missing_llm_is_a_counted_skip(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REVERIE_PROVIDER", "anthropic")  # no key anywhere
    events = EventRecorder()
    manager = SessionMemoryManager(Settings(), events)
    conv = _long_conversation(12)
    result = await manager.extract(conv.session, conv.messages, WORKSPACE, force=True)
    assert result.skipped_reason == "missing_llm" and not result.ran
    assert events.of_type("skipped")[-1].payload["reason"] == "missing_llm"
    assert "API key" in events.of_type("skipped")[-1].payload["error"]


async def test_unreadable_notes_file_is_not_replaced() -> None:
    conv = _long_conversation(12)
    events = EventRecorder()
    manager = SessionMemoryManager(Settings(), events)
    notes = manager.notes_path(conv.session.id, WORKSPACE)
    notes.parent.mkdir(parents=True)
    notes.write_bytes(b"\xff\xfe not utf-8 \x80")
    before = notes.read_bytes()
    result = await manager.extract(conv.session, conv.messages, WORKSPACE, force=True)
    assert result.error and "cannot read" in result.error
    assert notes.read_bytes() == before
    assert events.of_type("error")


async def test_missing_notes_file_is_recreated_from_template() -> None:
    conv = Conversation().user("tiny")
    manager = SessionMemoryManager(Settings(), EventRecorder())
    result = await manager.extract(conv.session, conv.messages, WORKSPACE, force=True)
    notes = Path(result.notes_path or "")
    assert check_notes(notes.read_text()) == []
    assert notes.read_text().startswith(default_template().text.split("\n")[0])
    notes.unlink()
    await manager.extract(conv.session, conv.messages, WORKSPACE, force=True)
    assert notes.exists()


async def test_template_override_is_used(reverie_env: dict[str, Path]) -> None:
    override = reverie_env["config"] / "session_memory"
    override.mkdir()
    (override / "template.md").write_text(
        "# Session Title\n_Name it_\n\n# Worklog\n_Steps_\n\n# Extra\n_Mine_\n")
    conv = _long_conversation(2)
    manager = SessionMemoryManager(Settings(), EventRecorder())
    result = await manager.extract(conv.session, conv.messages, WORKSPACE, force=True)
    text = Path(result.notes_path or "").read_text()
    assert text.startswith("# Session Title\n_Name it_\nstep 0: refactor module_0.py")
    assert "# Worklog\n_Steps_\n- step 0" in text
    assert "# Extra\n_Mine_" in text and "# Files and Functions" not in text


@dataclass
class _SavedByHandWhileWriting:
    """A conversation (``extract_conversation``'s seam) during whose offline run the user saves
    the notes by hand."""

    inner: InMemoryConversation
    notes: Path

    def digests(self) -> Sequence[MessageDigest]:
        return self.inner.digests()

    def snapshot(self) -> _SavedByHandWhileWriting:
        return self

    async def messages(self) -> list[Message]:
        return await self.inner.messages()

    async def recent(self, after: MessageCursor | None, *, full: bool, overlap: int,
                     budget_chars: int) -> RecentContext:
        return await self.inner.recent(after, full=full, overlap=overlap,
                                       budget_chars=budget_chars)

    async def offline_notes(self, job: OfflineNotesJob) -> OfflineNotesResult:
        self.notes.parent.mkdir(parents=True, exist_ok=True)
        self.notes.write_text(job.current_notes + "\nhand typed\n")
        return await self.inner.offline_notes(job)


async def test_hand_edit_during_extraction_is_kept() -> None:
    """If the user saves the notes while a writer runs, the writer's result is dropped."""
    conv = _long_conversation(3)
    manager = SessionMemoryManager(Settings(), EventRecorder())
    notes = manager.notes_path(conv.session.id, WORKSPACE)
    typing = _SavedByHandWhileWriting(InMemoryConversation(conv.messages), notes)
    result = await manager.extract_conversation(conv.session, typing, WORKSPACE, force=True)
    assert result.error and "hand edit is kept" in result.error
    assert notes.read_text().endswith("\nhand typed\n")
