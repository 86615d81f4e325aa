"""Generic JSONL: OpenAI-style chat messages, one per line, the format any tool can write.

``{"role": "user"|"assistant"|"system"|"tool", "content": str | parts, "tool_calls": [...],
"tool_call_id": ..., "id"?, "timestamp"?, "model"?, "usage"?}``. An optional sidecar
``<stem>.json`` next to the file carries session metadata (``project_path`` / ``workspace_dir`` /
``worktree_path`` / ``cwd``, ``title``, ``session_id``, ``parent_session_id``, ``git_branch``).
See docs/formats.md.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

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
from reverie.transcripts.lines import Line
from reverie.transcripts.model import Message, ToolCall, ToolResult, Usage

PROJECT_KEYS = ("project_path", "workspace_dir", "worktree_path", "cwd")
_ROLES = {"user": "user", "assistant": "assistant", "system": "system", "developer": "system",
          "tool": "tool", "function": "tool"}


def sidecar_path(path: Path) -> Path:
    return path.with_suffix(".json")


def read_sidecar(path: Path, max_bytes: int = 1024 * 1024) -> dict[str, Any]:
    """The sidecar metadata of a generic transcript, or ``{}`` when absent or unreadable."""
    side = sidecar_path(path)
    try:
        if side == path or side.stat().st_size > max_bytes:
            return {}
        data = orjson.loads(side.read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return {}
    return data if isinstance(data, dict) else {}


def sidecar_project(meta: dict[str, Any]) -> str | None:
    for key in PROJECT_KEYS:
        value = as_str(meta.get(key))
        if value and value.strip():
            return value
    return None


class GenericParser(RecordParser):
    agent = "generic"

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        meta = read_sidecar(path)
        s = self.session
        s.id = as_str(meta.get("session_id")) or as_str(meta.get("id")) or s.id
        s.cwd = sidecar_project(meta)
        s.project = s.cwd
        s.git_branch = as_str(meta.get("git_branch"))
        s.parent_session_id = as_str(meta.get("parent_session_id"))
        title = as_str(meta.get("title"))
        if title:
            s.title = title
            s.title_source = "summary"
        s.started_at = parse_time(meta.get("created_at"))

    def feed_record(self, record: dict[str, Any], line: Line) -> list[Message]:
        role = _ROLES.get(str(record.get("role")))
        if role is None:
            self.stats.skip(f"byte {line.offset}: no known 'role'")
            return []
        if not self.session.cwd and as_str(record.get("cwd")):
            self.session.cwd = self.session.project = record["cwd"]
        ts = parse_time(record.get("timestamp") or record.get("created_at"))
        self.touch(ts)
        text = text_of(record.get("content"))
        mid = as_str(record.get("id")) or fingerprint_id("generic", line.offset, line.data)
        calls: list[ToolCall] = []
        for raw in record.get("tool_calls") or []:
            if not isinstance(raw, dict):
                continue
            fn = as_dict(raw.get("function"))
            name = as_str(fn.get("name")) or as_str(raw.get("name")) or "unknown"
            args = fn.get("arguments", raw.get("arguments", raw.get("input")))
            if isinstance(args, str):
                try:
                    args = orjson.loads(args)
                except orjson.JSONDecodeError:
                    args = {"raw": args}
            call_id = as_str(raw.get("id")) or f"{mid}:{len(calls)}"
            calls.append(make_tool_call("generic", call_id, name, as_dict(args), self.session.cwd))
        results: list[ToolResult] = []
        if role == "tool":
            code = record.get("exit_code")
            results.append(ToolResult(
                call_id=as_str(record.get("tool_call_id")) or "",
                is_error=record.get("is_error") is True or (isinstance(code, int) and code != 0),
                output=text,
                exit_code=code if isinstance(code, int) and not isinstance(code, bool) else None,
            ))
            text = ""
        if role == "user" and text.strip():
            self.note_first_prompt(text)
        return [Message(
            id=mid,
            role=role,  # type: ignore[arg-type]
            text=text,
            timestamp=ts,
            model=as_str(record.get("model")),
            usage=_usage(record.get("usage")),
            tool_calls=calls,
            tool_results=results,
        )]


def _usage(raw: Any) -> Usage | None:
    """OpenAI (``prompt_tokens``...), Anthropic (``input_tokens``...) or Reverie usage names."""
    if not isinstance(raw, dict):
        return None
    cached = (
        as_int(raw.get("cached_tokens"))
        or as_int(as_dict(raw.get("prompt_tokens_details")).get("cached_tokens"))
        or as_int(raw.get("cache_read_input_tokens"))
        or as_int(raw.get("cache_read_tokens"))  # Reverie's own Usage names
    )
    prompt = as_int(raw.get("prompt_tokens"))
    return Usage(
        input_tokens=max(prompt - cached, 0) if prompt else as_int(raw.get("input_tokens")),
        output_tokens=as_int(raw.get("completion_tokens")) or as_int(raw.get("output_tokens")),
        cache_read_tokens=cached,
        cache_write_tokens=as_int(raw.get("cache_creation_input_tokens"))
        or as_int(raw.get("cache_write_tokens")),
    )
