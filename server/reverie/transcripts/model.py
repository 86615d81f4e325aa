"""The one normalised model every transcript adapter produces.

Session memory, dream and the sleep cycle only ever see these types, never an agent's raw records.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from reverie.transcripts.kinds import ToolKind as ToolKind  # where readers have always found it
from reverie.types import EDITOR_AGENTS as EDITOR_AGENTS
from reverie.types import AgentName as AgentName  # where readers have always found it
from reverie.types import Usage as Usage

Role = Literal["user", "assistant", "system", "tool"]


class ToolCall(BaseModel):
    """A tool invocation requested by the assistant."""

    id: str
    name: str
    kind: ToolKind = ToolKind.OTHER
    input: dict[str, Any] = Field(default_factory=dict)
    file_paths: list[str] = Field(default_factory=list)
    command: str | None = None


class ToolResult(BaseModel):
    """The outcome of a tool call, as the agent recorded it."""

    call_id: str
    is_error: bool = False
    output: str = ""
    exit_code: int | None = None
    #: files the agent reports the tool changed (Codex ``patch_apply_end`` changes), absolute
    file_paths: list[str] = Field(default_factory=list)


class Message(BaseModel):
    """One conversational record: text plus any tool calls it makes or results it carries.

    ``id`` is stable across re-reads of the same file (the record's own id where it has one,
    else a fingerprint of its content and position). ``api_message_id`` groups records that the
    agent split out of one API response; ``usage`` is the figure recorded on this record: the
    records of one response may each carry one, growing, and the last is the response's final
    figure (``tokens.usage_totals`` counts each response once).
    """

    id: str
    role: Role
    text: str = ""
    timestamp: datetime | None = None
    model: str | None = None
    api_message_id: str | None = None
    usage: Usage | None = None
    tool_calls: list[ToolCall] = Field(default_factory=list)
    tool_results: list[ToolResult] = Field(default_factory=list)
    is_sidechain: bool = False
    is_meta: bool = False
    is_compact_boundary: bool = False
    #: the sub-agent that wrote this record (Claude ``agentId``), when the agent says so.
    agent_id: str | None = None
    #: for sub-agent (sidechain) records: the Task tool call that spawned them, when known.
    parent_call_id: str | None = None
    #: what the person typed when the agent expanded it into ``text`` (Gemini's
    #: ``displayContent`` of a slash command); ``None`` when ``text`` is what was typed.
    display_text: str | None = None


class Session(BaseModel):
    """One agent conversation (one file, or one run inside an Aider history)."""

    id: str
    agent: AgentName
    path: Path
    cwd: str | None = None
    project: str | None = None
    git_branch: str | None = None
    parent_session_id: str | None = None
    started_at: datetime | None = None
    updated_at: datetime | None = None
    title: str | None = None
    #: where ``title`` came from: the agent's own ``summary`` record, or the first user prompt.
    title_source: Literal["summary", "first_prompt"] | None = None
    #: the sub-agent's own id (Claude ``agentId``, Codex thread id) for sub-agent sessions.
    agent_id: str | None = None

    @property
    def is_subagent(self) -> bool:
        return self.parent_session_id is not None


class ParseStats(BaseModel):
    """Counts kept while reading a transcript: skips are counted, never fatal."""

    lines: int = 0
    skipped: int = 0
    errors: list[str] = Field(default_factory=list)
    #: well-formed records that carry nothing for the model (progress, snapshots, hooks...).
    ignored: int = 0

    def skip(self, reason: str, keep: int = 20) -> None:
        """Count one skipped line; keep the first few reasons for the user."""
        self.skipped += 1
        if len(self.errors) < keep:
            self.errors.append(reason)


class Transcript(BaseModel):
    """A whole parsed session: what ``reverie transcript`` prints."""

    session: Session
    messages: list[Message] = Field(default_factory=list)
    stats: ParseStats = Field(default_factory=ParseStats)
