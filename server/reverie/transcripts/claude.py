"""Claude Code session JSONL (``~/.claude/projects/<slug>/<session>.jsonl``).

One record per line. Conversational records (``user``/``assistant``) become messages; one API
response is split over several lines sharing ``message.id``, each line carrying the usage known
when it was written (later lines larger: the last one is the response's final figure, which
``tokens.usage_totals`` counts once). A line that holds only ``thinking`` makes no message, but
its usage is not lost: when no later line of the same response follows, it becomes a meta
message of its own. ``summary`` records give the title; ``system/compact_boundary`` marks a
compaction; progress, snapshots, queue operations and hook records are ignored.

Sub-agents come in three layouts: inline ``isSidechain`` records (1.0.x), sibling
``agent-<id>.jsonl`` files (2.0.x) and ``<session>/subagents/agent-<id>.jsonl`` (2.1.x). In the
two file layouts the records carry the parent's ``sessionId``, which becomes the sub-agent
session's ``parent_session_id``. Inline sidechain messages get ``parent_call_id``: the Task call
whose prompt started them.
"""

from __future__ import annotations

from collections import OrderedDict
from datetime import datetime
from pathlib import Path
from typing import Any

from reverie.transcripts.base import (
    RecordParser,
    as_dict,
    as_int,
    as_str,
    fingerprint_id,
    make_tool_call,
    parse_time,
    text_of,
)
from reverie.transcripts.classify import exit_code_from_text
from reverie.transcripts.claude_stats import UUID_PATTERN, is_agent_file
from reverie.transcripts.lines import Line
from reverie.transcripts.model import Message, ToolCall, ToolKind, ToolResult, Usage

#: record types that carry nothing for notes (kept for documentation; unknown types are ignored too)
NOISE_TYPES = frozenset(
    {"progress", "file-history-snapshot", "queue-operation", "custom-title", "pr-link",
     "attachment"}
)
_MEMO_LIMIT = 512


def _bounded_set(items: OrderedDict[str, Any], key: str, value: Any = True) -> None:
    items[key] = value
    items.move_to_end(key)
    while len(items) > _MEMO_LIMIT:
        items.popitem(last=False)


class ClaudeParser(RecordParser):
    agent = "claude-code"

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self._task_prompts: OrderedDict[str, str] = OrderedDict()  # prompt -> Task call id
        self._chain_call: OrderedDict[str, str] = OrderedDict()  # sidechain uuid -> Task call id
        self._warmup: OrderedDict[str, bool] = OrderedDict()  # uuids of "Warmup" chains
        self._is_agent_file = is_agent_file(path)
        self._summary: str | None = None
        #: summaries waiting for their leaf message (leafUuid -> summary)
        self._summaries: dict[str, str] = {}
        #: the last message ids read: a summary written after its leaf is adopted at once
        self._recent: OrderedDict[str, None] = OrderedDict()
        #: usage of a thinking-only line, kept until we know whether its response goes on
        self._pending_usage: dict[str, Any] | None = None
        #: the last timestamp string parsed, and its value (each record needs it twice)
        self._time_raw: Any = None
        self._time_value: datetime | None = None

    def _time(self, raw: Any) -> datetime | None:
        if raw is not self._time_raw and raw != self._time_raw:
            self._time_raw, self._time_value = raw, parse_time(raw)
        return self._time_value

    # -- state for tails ---------------------------------------------------------------------
    def memo(self) -> dict[str, Any]:
        return {
            "task_prompts": list(self._task_prompts.items()),
            "chain_call": list(self._chain_call.items()),
            "warmup": list(self._warmup),
            "pending_usage": self._pending_usage,
            "summaries": list(self._summaries.items()),
        }

    def restore_memo(self, memo: dict[str, Any]) -> None:
        self._task_prompts = OrderedDict(memo.get("task_prompts", []))
        self._chain_call = OrderedDict(memo.get("chain_call", []))
        self._warmup = OrderedDict((k, True) for k in memo.get("warmup", []))
        pending = memo.get("pending_usage")
        self._pending_usage = pending if isinstance(pending, dict) else None
        self._summaries = {str(k): str(v) for k, v in memo.get("summaries", [])}

    def finish(self) -> list[Message]:
        return self._flush_pending()

    def _flush_pending(self, continuing_api_id: str | None = None) -> list[Message]:
        """The held thinking-only usage as a meta message, unless the record now read continues
        the same response (its own, later figure supersedes the held one)."""
        pending = self._pending_usage
        if pending is None:
            return []
        self._pending_usage = None
        if continuing_api_id is not None and continuing_api_id == pending.get("api_id"):
            return []
        usage = _usage(pending.get("usage"))
        if usage is None:
            return []
        return [Message(id=f"{pending.get('uuid')}:usage", role="system", text="",
                        timestamp=parse_time(pending.get("timestamp")),
                        model=as_str(pending.get("model")),
                        api_message_id=as_str(pending.get("api_id")), usage=usage,
                        is_meta=True, is_sidechain=pending.get("sidechain") is True)]

    # -- records -----------------------------------------------------------------------------
    def feed_record(self, record: dict[str, Any], line: Line) -> list[Message]:
        if self._pending_usage is None:
            return self._record(record, line)
        kind = record.get("type")
        if kind not in ("user", "assistant", "system"):
            return self._record(record, line)
        api_id = as_str(as_dict(record.get("message")).get("id")) if kind == "assistant" else None
        held = self._flush_pending(api_id)
        return held + self._record(record, line)

    def _record(self, record: dict[str, Any], line: Line) -> list[Message]:
        kind = record.get("type")
        if kind == "summary":
            summary = as_str(record.get("summary"))
            leaf = as_str(record.get("leafUuid"))
            if summary and leaf and leaf not in self._recent:
                # it names the conversation that ends at ``leaf``: only when that message is
                # in this file is it this session's title (a resumed session's file starts with
                # the summaries of the one it came from)
                if len(self._summaries) < 64:
                    self._summaries[leaf] = summary
            elif summary:
                self.session.title = summary
                self.session.title_source = "summary"
            return []
        if kind in ("user", "assistant"):
            self._session_fields(record)
            return self._conversational(record, kind, line)
        if kind == "system":
            self._session_fields(record)
            if record.get("subtype") == "compact_boundary":
                return [self._compact_boundary(record, line)]
        self.stats.ignored += 1
        return []

    def _session_fields(self, record: dict[str, Any]) -> None:
        s = self.session
        cwd = record.get("cwd")
        if cwd != s.cwd and isinstance(cwd, str) and cwd:
            s.cwd = cwd
            s.project = s.project or cwd
        branch = record.get("gitBranch")
        if branch != s.git_branch and isinstance(branch, str) and branch:
            s.git_branch = branch
        session_id = as_str(record.get("sessionId"))
        agent_id = as_str(record.get("agentId"))
        if self._is_agent_file and session_id:
            if session_id != s.id and s.parent_session_id != session_id:
                s.parent_session_id = session_id
            if agent_id and s.agent_id != agent_id:
                s.agent_id = agent_id
        elif session_id and not self._is_agent_file and not UUID_PATTERN.match(s.id):
            s.id = session_id  # a file renamed away from its session id (fixtures, copies)
        self.touch(self._time(record.get("timestamp")))

    def _compact_boundary(self, record: dict[str, Any], line: Line) -> Message:
        meta = as_dict(record.get("compactMetadata"))
        trigger = as_str(meta.get("trigger")) or "auto"
        pre = as_int(meta.get("preTokens"))
        text = as_str(record.get("content")) or "Conversation compacted"
        return Message(
            id=as_str(record.get("uuid")) or fingerprint_id("claude", line.offset, line.data),
            role="system",
            text=f"{text} (trigger: {trigger}, {pre} tokens before)",
            timestamp=parse_time(record.get("timestamp")),
            is_compact_boundary=True,
            is_meta=True,
        )

    def _conversational(self, record: dict[str, Any], kind: str, line: Line) -> list[Message]:
        raw = record.get("message")
        if not isinstance(raw, dict):
            self.stats.skip(f"byte {line.offset}: {kind} record without a message object")
            return []
        uuid = as_str(record.get("uuid")) or fingerprint_id("claude", line.offset, line.data)
        parent_uuid = as_str(record.get("parentUuid"))
        self._recent[uuid] = None
        if len(self._recent) > 512:
            self._recent.popitem(last=False)
        if self._summaries:
            titled = self._summaries.pop(uuid, None)
            if titled is not None:
                self.session.title = titled
                self.session.title_source = "summary"
        sidechain = record.get("isSidechain") is True
        timestamp = self._time(record.get("timestamp"))
        content = raw.get("content")
        cwd = self.session.cwd
        if kind == "assistant":
            message = self._assistant(raw, uuid, timestamp, cwd)
            if message is None and isinstance(raw.get("usage"), dict) and as_str(raw.get("id")):
                self._pending_usage = {
                    "api_id": as_str(raw.get("id")), "usage": raw.get("usage"), "uuid": uuid,
                    "timestamp": record.get("timestamp"), "model": as_str(raw.get("model")),
                    "sidechain": sidechain,
                }
        else:
            message = self._user(record, content, uuid, timestamp)
        if message is None:
            self.stats.ignored += 1
            return []
        if sidechain:
            message.is_sidechain = True
        agent_id = record.get("agentId")
        if isinstance(agent_id, str) and agent_id:
            message.agent_id = agent_id
        if record.get("isMeta") is True or record.get("isCompactSummary") is True:
            message.is_meta = True
        if sidechain:
            self._link_sidechain(message, uuid, parent_uuid)
        elif message.role == "user" and not message.is_meta and not message.tool_results:
            self.note_first_prompt(message.text)
        return [message]

    def _link_sidechain(self, message: Message, uuid: str, parent_uuid: str | None) -> None:
        if parent_uuid is None:
            call_id = self._task_prompts.get(message.text.strip())
            if call_id:
                _bounded_set(self._chain_call, uuid, call_id)
            if message.text.strip() == "Warmup":
                _bounded_set(self._warmup, uuid)
        else:
            if parent_uuid in self._chain_call:
                _bounded_set(self._chain_call, uuid, self._chain_call[parent_uuid])
            if parent_uuid in self._warmup:
                _bounded_set(self._warmup, uuid)
        message.parent_call_id = self._chain_call.get(uuid)
        if uuid in self._warmup:
            message.is_meta = True

    def _assistant(
        self, raw: dict[str, Any], uuid: str, timestamp: Any, cwd: str | None
    ) -> Message | None:
        texts: list[str] = []
        calls: list[ToolCall] = []
        content = raw.get("content")
        blocks = content if isinstance(content, list) else [content]
        for block in blocks:
            if isinstance(block, str):
                texts.append(block)
                continue
            if not isinstance(block, dict):
                continue
            btype = block.get("type")
            if btype == "text" and isinstance(block.get("text"), str):
                texts.append(block["text"])
            elif btype in ("tool_use", "server_tool_use"):
                name = as_str(block.get("name")) or "unknown"
                call = make_tool_call(
                    "claude-code",
                    as_str(block.get("id")) or f"{uuid}:{len(calls)}",
                    name,
                    as_dict(block.get("input")),
                    cwd,
                )
                calls.append(call)
                if call.kind is ToolKind.TASK:
                    prompt = call.input.get("prompt")
                    if isinstance(prompt, str) and prompt.strip():
                        _bounded_set(self._task_prompts, prompt.strip(), call.id)
        text = "\n\n".join(t for t in texts if t)
        if not text.strip() and not calls:
            return None  # thinking-only line: its usage is held (see ``_conversational``)
        api_id = as_str(raw.get("id"))
        usage = _usage(raw.get("usage"))
        return Message(
            id=uuid,
            role="assistant",
            text=text,
            timestamp=timestamp,
            model=as_str(raw.get("model")),
            api_message_id=api_id,
            usage=usage,
            tool_calls=calls,
        )

    def _user(
        self, record: dict[str, Any], content: Any, uuid: str, timestamp: Any
    ) -> Message | None:
        results: list[ToolResult] = []
        texts: list[str] = []
        structured = record.get("toolUseResult")
        if isinstance(content, list):
            for block in content:
                if isinstance(block, dict) and block.get("type") == "tool_result":
                    results.append(_tool_result(block, structured))
                else:
                    texts.append(text_of([block]))
        else:
            texts.append(text_of(content))
        text = "\n\n".join(t for t in texts if t)
        if not text and not results:
            return None
        return Message(
            id=uuid,
            role="tool" if results and not text.strip() else "user",
            text=text,
            timestamp=timestamp,
            tool_results=results,
        )


def _tool_result(block: dict[str, Any], structured: Any) -> ToolResult:
    output = text_of(block.get("content"))
    is_error = block.get("is_error") is True
    exit_code: int | None = None
    if isinstance(structured, dict):
        for key in ("exitCode", "exit_code", "returnCode"):
            if isinstance(structured.get(key), int):
                exit_code = structured[key]
                break
    if exit_code is None and is_error:
        # Claude records a failing command's code only as text ("Exit code 1")
        exit_code = exit_code_from_text(output)
        if exit_code is None and isinstance(structured, str):
            exit_code = exit_code_from_text(structured)
    return ToolResult(
        call_id=as_str(block.get("tool_use_id")) or "",
        is_error=is_error,
        output=output,
        exit_code=exit_code,
    )


def _usage(raw: Any) -> Usage | None:
    if not isinstance(raw, dict):
        return None
    return Usage(
        input_tokens=as_int(raw.get("input_tokens")),
        output_tokens=as_int(raw.get("output_tokens")),
        cache_read_tokens=as_int(raw.get("cache_read_input_tokens")),
        cache_write_tokens=as_int(raw.get("cache_creation_input_tokens")),
    )

