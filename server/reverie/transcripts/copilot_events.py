"""The Copilot Chat extension's own transcript: an append-only event log per chat session.

Since Copilot Chat 0.37 (VS Code 1.109) the extension appends every event of an agent session to
``User/workspaceStorage/<hash>/GitHub.copilot-chat/transcripts/<sessionId>.jsonl`` (this is the
``transcript_path`` VS Code gives agent hooks). One JSON object a line, ``{type, data, id,
timestamp, parentId}``, the session event schema of GitHub's Copilot agent runtime:
``session.start`` (``sessionId``, ``copilotVersion``, ``vscodeVersion``, ``startTime``),
``user.message`` (``content``), ``assistant.message`` (``content``, ``toolRequests``: the model's
calls, ``arguments`` a JSON string), ``tool.execution_start`` (``toolCallId``, ``toolName``,
``arguments``) and ``tool.execution_complete`` (``success``, ``result``), plus turn and progress
events that carry nothing to read.

The same conversation is VS Code's ``chatSessions/<sessionId>.json[l]`` beside it, which has more
(edits, usage, the title): discovery lists that one, and this log is read when it is named
(``reverie transcript FILE``, a hook whose chat session file is gone).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

from reverie.transcripts.base import RecordParser, as_dict, as_str, make_tool_call, parse_time
from reverie.transcripts.copilot import storage_cwd
from reverie.transcripts.detect import is_copilot_event_log
from reverie.transcripts.document import MAX_OUTPUT_CHARS, capped
from reverie.transcripts.lines import Line
from reverie.transcripts.model import Message, ToolCall, ToolResult

#: events that carry nothing for the model or the notes
IGNORED_EVENTS = frozenset({
    "assistant.turn_start", "assistant.turn_end", "assistant.message_delta",
    "assistant.reasoning", "assistant.reasoning_delta", "assistant.intent", "assistant.usage",
    "tool.execution_progress", "tool.execution_partial_result", "tool.user_requested",
    "session.idle", "session.info", "session.usage_info", "session.model_change",
    "session.truncation", "session.compaction_start", "session.compaction_complete",
    "session.resume", "session.handoff", "session.shutdown", "session.context_changed",
    "hook.start", "hook.end", "subagent.started", "subagent.completed", "subagent.failed",
    "subagent.selected", "system.message", "pending_messages.modified", "abort",
})


def _arguments(value: Any) -> dict[str, Any]:
    if isinstance(value, str):
        try:
            value = orjson.loads(value) if value.strip() else {}
        except orjson.JSONDecodeError:
            return {"raw": value}
    return as_dict(value)


class CopilotEventParser(RecordParser):
    """Event by event; a tool call is reported once, from the model's request when there is
    one (``toolRequests``), else from its execution."""

    agent = "copilot-chat"

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self._requested: set[str] = set()
        if is_copilot_event_log(path):  # <hash>/GitHub.copilot-chat/transcripts/<id>.jsonl
            self.session.cwd = self.session.project = storage_cwd(path.parent.parent.parent)

    def memo(self) -> dict[str, Any]:
        return {"requested": sorted(self._requested)}

    def restore_memo(self, memo: dict[str, Any]) -> None:
        self._requested = {str(c) for c in memo.get("requested") or []}

    def feed_record(self, record: dict[str, Any], line: Line) -> list[Message]:
        kind = as_str(record.get("type")) or ""
        data = as_dict(record.get("data"))
        ts = parse_time(record.get("timestamp"))
        self.touch(ts)
        key = as_str(record.get("id")) or f"event-{line.offset}"
        cwd = self.session.cwd
        if kind == "session.start":
            self.session.id = as_str(data.get("sessionId")) or self.session.id
            self.touch(parse_time(data.get("startTime")))
            return []
        if kind == "user.message":
            text = as_str(data.get("content")) or ""
            self.note_first_prompt(text)
            return [Message(id=key, role="user", timestamp=ts,
                            text=capped(text, self.stats, f"event {key}"))]
        if kind == "assistant.message":
            calls: list[ToolCall] = []
            for n, raw in enumerate(data.get("toolRequests") or []):
                request = as_dict(raw)
                call_id = as_str(request.get("toolCallId")) or f"{key}:{n}"
                self._requested.add(call_id)
                calls.append(make_tool_call("copilot-chat", call_id,
                                            as_str(request.get("name")) or "unknown",
                                            _arguments(request.get("arguments")), cwd))
            text = as_str(data.get("content")) or ""
            if not text.strip() and not calls:
                self.stats.ignored += 1
                return []
            return [Message(id=as_str(data.get("messageId")) or key, role="assistant",
                            timestamp=ts, tool_calls=calls,
                            text=capped(text, self.stats, f"event {key}"))]
        if kind == "tool.execution_start":
            call_id = as_str(data.get("toolCallId")) or key
            if call_id in self._requested:
                self.stats.ignored += 1  # already reported with the model's request
                return []
            self._requested.add(call_id)
            call = make_tool_call("copilot-chat", call_id,
                                  as_str(data.get("toolName")) or "unknown",
                                  _arguments(data.get("arguments")), cwd)
            return [Message(id=key, role="assistant", timestamp=ts, tool_calls=[call])]
        if kind == "tool.execution_complete":
            result = data.get("result")
            output = as_str(as_dict(result).get("content")) or as_str(result) or ""
            error = as_dict(data.get("error"))
            failed = data.get("success") is False or bool(error)
            if not output and error:
                output = as_str(error.get("message")) or ""
            return [Message(id=key, role="tool", timestamp=ts, tool_results=[ToolResult(
                call_id=as_str(data.get("toolCallId")) or key, is_error=failed,
                output=capped(output, None, "", MAX_OUTPUT_CHARS))])]
        if kind in ("session.error", "error"):
            message = as_str(data.get("message")) or as_str(data.get("errorType")) or "error"
            return [Message(id=key, role="system", timestamp=ts, text=f"error: {message}")]
        if kind in IGNORED_EVENTS:
            self.stats.ignored += 1
            return []
        self.stats.skip(f"byte {line.offset}: unknown event type {kind!r}")
        return []
