"""Builders for synthetic conversations and paths of the real fixtures used by these tests."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from reverie.transcripts.model import Message, Session, ToolCall, ToolKind, ToolResult, Usage

TRANSCRIPTS = Path(__file__).resolve().parents[2] / "fixtures" / "transcripts"
CLAUDE_INLINE = (
    TRANSCRIPTS / "claude-code" / "claude-code-viewer-v1.0.108-inline-sidechains" / "sample-project"
    / "5c0375b4-57a5-4f26-b12d-d022ee4e51b7.jsonl"
)
CLAUDE_SPOTTER = (
    TRANSCRIPTS / "claude-code" / "spotter-v2.1.39-subagents"
    / "-home-USER-projects-spotter-worktrees-spotter-dov"
    / "4d5611e5-241a-462a-8d15-5122611a9569.jsonl"
)
CODEX_ROLLOUT = (
    TRANSCRIPTS / "codex" / "codemie-code" / "sessions" / "2026" / "05" / "11"
    / "rollout-2026-05-11T11-26-55-019e1625-789d-76c0-80ab-3724b5ddb799.jsonl"
)


class Conversation:
    """Builds a normalised conversation message by message (ids are unique and stable)."""

    def __init__(self, session_id: str = "sess-1") -> None:
        self.session = Session(id=session_id, agent="generic", path=Path("/tmp/none.jsonl"),
                               cwd="/work/project")
        self.messages: list[Message] = []
        self._ids = itertools.count(1)

    def _id(self) -> str:
        return f"m{next(self._ids)}"

    def user(self, text: str) -> Conversation:
        self.messages.append(Message(id=self._id(), role="user", text=text))
        return self

    def assistant(self, text: str = "", *, usage: int | None = None) -> Conversation:
        self.messages.append(Message(
            id=self._id(), role="assistant", text=text,
            usage=Usage(input_tokens=usage) if usage is not None else None,
        ))
        return self

    def shell(self, command: str, output: str = "ok", exit_code: int = 0) -> Conversation:
        call_id = f"c{next(self._ids)}"
        self.messages.append(Message(id=self._id(), role="assistant", tool_calls=[
            ToolCall(id=call_id, name="Bash", kind=ToolKind.SHELL, input={"command": command},
                     command=command)]))
        self.messages.append(Message(id=self._id(), role="user", tool_results=[
            ToolResult(call_id=call_id, output=output, exit_code=exit_code,
                       is_error=exit_code != 0)]))
        return self

    def edit(self, path: str, new: str = "x = 1", failed: bool = False) -> Conversation:
        call_id = f"c{next(self._ids)}"
        self.messages.append(Message(id=self._id(), role="assistant", tool_calls=[
            ToolCall(id=call_id, name="Edit", kind=ToolKind.EDIT, file_paths=[path],
                     input={"file_path": path, "old_string": "a", "new_string": new})]))
        self.messages.append(Message(id=self._id(), role="user", tool_results=[
            ToolResult(call_id=call_id, output="Error: no match" if failed else "edited",
                       is_error=failed)]))
        return self

    def pending_call(self, command: str) -> Conversation:
        """An assistant tool call whose result has not arrived yet."""
        call_id = f"c{next(self._ids)}"
        self.messages.append(Message(id=self._id(), role="assistant", tool_calls=[
            ToolCall(id=call_id, name="Bash", kind=ToolKind.SHELL, input={"command": command},
                     command=command)]))
        return self


@pytest.fixture
def conversation() -> Conversation:
    return Conversation()
