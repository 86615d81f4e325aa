"""Cline 4 sessions (the Cline SDK): ``<Cline data>/sessions/<id>/<id>.messages.json``.

Since its SDK migration (Cline 4, mid 2026) Cline keeps every session, in VS Code and in its CLI,
under its own data folder (``CLINE_SESSION_DATA_DIR``, else ``CLINE_DATA_DIR/sessions``, else
``$CLINE_DIR/data/sessions``, default ``~/.cline/data/sessions``: cline/cline
``sdk/packages/shared/src/storage/paths.ts``). A session folder holds a manifest ``<id>.json``
(``session_id``, ``cwd``, ``workspace_root``, ``started_at``, ``status``, ``metadata.title``,
``messages_path``) and the conversation ``<id>.messages.json`` (``{version, updated_at, agent,
sessionId, messages}``), rewritten whole as the session runs; sub-agents write their own
``<agentId>.messages.json`` beside it. Messages (``MessageWithMetadata``,
``sdk/packages/shared/src/llms/messages.ts``) are Anthropic-style: ``role``, ``content`` (a
string or blocks: ``text``, ``file``, ``image``, ``media``, ``tool_use`` {id, name, input},
``tool_result`` {tool_use_id, content, is_error}, ``thinking``, ``redacted_thinking``), ``id``,
``ts``, ``modelInfo.id`` and ``metrics`` (``inputTokens``, ``outputTokens``,
``cacheReadTokens``, ``cacheWriteTokens``).

Tools (``sdk/packages/core/src/extensions/tools/schemas.ts``): ``read_files`` ({files: [{path}]}
and looser forms), ``editor`` ({path, old_text, new_text}), ``apply_patch``, ``run_commands``
({commands: [...]}), ``search_codebase``, ``fetch_web_content``, ``spawn_agent``, ``skills``,
``ask_question``, ``submit_and_exit``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from reverie.transcripts.base import as_dict, as_int, as_str, first_line, make_tool_call, parse_time
from reverie.transcripts.classify import absolute
from reverie.transcripts.detect import CLINE_SDK_SUFFIX
from reverie.transcripts.document import (
    MAX_OUTPUT_CHARS,
    EditorDocument,
    Unit,
    capped,
    digest_of,
    load_json,
)
from reverie.transcripts.model import Message, ParseStats, Session, ToolCall, ToolResult, Usage
from reverie.transcripts.wrappers import request_of

#: content blocks that carry nothing to read (a file's text is the tool's, an image is base64)
_IGNORED_BLOCKS = frozenset({"image", "media", "thinking", "redacted_thinking", "file"})


def manifest(path: Path) -> dict[str, Any]:
    """The session's manifest ``<id>.json`` beside ``path`` (empty when unreadable)."""
    session_id = path.parent.name
    try:
        raw = (path.parent / f"{session_id}.json").read_bytes()[:1024 * 1024]
    except OSError:
        return {}
    value, _why = load_json(raw)
    return as_dict(value)


def manifest_cwd(path: Path) -> str | None:
    meta = manifest(path)
    return as_str(meta.get("workspace_root")) or as_str(meta.get("cwd"))


def read_document(path: Path, data: bytes) -> EditorDocument:
    stats = ParseStats()
    session_id = (path.name[: -len(CLINE_SDK_SUFFIX)] if path.name.endswith(CLINE_SDK_SUFFIX)
                  else path.stem)
    session = Session(id=session_id or "session", agent="cline", path=path)
    doc = EditorDocument(session=session, stats=stats)
    stats.lines = 1
    value, why = load_json(data)
    if why is not None or not isinstance(value, dict):
        stats.skip(why or "the session file is not a JSON object")
        doc.complete = False
        return doc
    session.id = as_str(value.get("sessionId")) or session.id
    meta = manifest(path)
    session.cwd = session.project = (as_str(meta.get("workspace_root"))
                                     or as_str(meta.get("cwd")))
    session.started_at = parse_time(meta.get("started_at"))
    session.updated_at = parse_time(value.get("updated_at"))
    title = as_str(as_dict(meta.get("metadata")).get("title"))
    if title:
        session.title, session.title_source = first_line(title), "summary"
    messages = value.get("messages")
    if not isinstance(messages, list):
        if "messages" in value:
            stats.skip("'messages' is not a list")
        return doc
    keys: set[str] = set()
    cwd = session.cwd
    for index, raw in enumerate(messages):
        if not isinstance(raw, dict):
            stats.skip(f"message {index}: not an object")
            continue
        key = as_str(raw.get("id")) or f"m{index}"
        while key in keys:
            key += "+"
        keys.add(key)
        doc.units.append(Unit(key=key, digest=digest_of(raw, cwd),
                              build=_builder(raw, key, cwd, stats)))
    stamps = [t for m in messages if (t := parse_time(as_dict(m).get("ts"))) is not None]
    if stamps:
        session.started_at = session.started_at or min(stamps)
        session.updated_at = max(stamps + ([session.updated_at] if session.updated_at else []))
    if session.title is None:
        for raw in messages:
            if as_dict(raw).get("role") == "user":
                found = request_of(_text(as_dict(raw).get("content")))
                if found:
                    session.title, session.title_source = first_line(found), "first_prompt"
                    break
    return doc


def _builder(raw: dict[str, Any], key: str, cwd: str | None, stats: ParseStats) -> Any:
    def build() -> list[Message]:
        return list(_messages(raw, key, cwd, stats))
    return build


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "\n\n".join(as_str(as_dict(b).get("text")) or "" for b in content or []
                       if as_dict(b).get("type") == "text")


def _messages(raw: dict[str, Any], key: str, cwd: str | None,
              stats: ParseStats) -> Iterator[Message]:
    role = raw.get("role")
    ts = parse_time(raw.get("ts"))
    content = raw.get("content")
    blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
    if role not in ("user", "assistant") or not isinstance(blocks, list):
        stats.skip(f"message {key}: unknown role {role!r} or content")
        return
    texts: list[str] = []
    calls: list[ToolCall] = []
    results: list[ToolResult] = []
    for block in blocks:
        block = as_dict(block)
        kind = block.get("type")
        if kind == "text":
            texts.append(as_str(block.get("text")) or "")
        elif kind == "tool_use":
            calls.append(_tool_call(block, key, len(calls), cwd))
        elif kind == "tool_result":
            results.append(_tool_result(block))
        elif kind in _IGNORED_BLOCKS:
            stats.ignored += 1
        else:
            stats.skip(f"message {key}: unknown content block {kind!r}")
    text = capped("\n\n".join(t for t in texts if t), stats, f"message {key}")
    model = as_str(as_dict(raw.get("modelInfo")).get("id"))
    if role == "user":
        if results:
            yield Message(id=f"{key}:results" if text.strip() else key, role="tool",
                          timestamp=ts, tool_results=results)
        if text.strip():
            yield Message(id=key, role="user", timestamp=ts, text=text)
        return
    if text.strip() or calls or raw.get("metrics"):
        yield Message(id=key, role="assistant", timestamp=ts, text=text, tool_calls=calls,
                      model=model, usage=_usage(raw.get("metrics")), api_message_id=key)


def _input(value: Any) -> dict[str, Any]:
    if isinstance(value, str):
        parsed, _why = load_json(value.encode("utf-8", "surrogatepass"))
        return as_dict(parsed) or {"raw": value}
    return as_dict(value)


def _tool_call(block: dict[str, Any], key: str, index: int, cwd: str | None) -> ToolCall:
    name = as_str(block.get("name")) or "unknown"
    tool_input = _input(block.get("input"))
    call = make_tool_call("cline", as_str(block.get("id")) or f"{key}:{index}", name,
                          tool_input, cwd)
    if name == "read_files":
        paths: list[str] = []
        for field in ("files", "file_paths", "paths"):
            value = tool_input.get(field)
            for item in value if isinstance(value, list) else [value]:
                where = item if isinstance(item, str) else as_str(as_dict(item).get("path"))
                if where:
                    paths.append(absolute(where, cwd))
        call.file_paths = list(dict.fromkeys(paths))
    elif name == "run_commands":
        commands = tool_input.get("commands", tool_input.get("command", tool_input.get("cmd")))
        lines: list[str] = []
        for item in commands if isinstance(commands, list) else [commands]:
            if isinstance(item, str):
                lines.append(item)
            elif isinstance(item, dict) and as_str(item.get("command")):
                args = [a for a in item.get("args") or [] if isinstance(a, str)]
                lines.append(" ".join([item["command"], *args]))
        call.command = "\n".join(lines) or None
    return call


def _tool_result(block: dict[str, Any]) -> ToolResult:
    content = block.get("content")
    output = content if isinstance(content, str) else "\n".join(
        as_str(as_dict(part).get("text")) or "" for part in content or []
        if as_dict(part).get("type") == "text")
    return ToolResult(call_id=as_str(block.get("tool_use_id")) or "",
                      is_error=block.get("is_error") is True,
                      output=capped(output, None, "", MAX_OUTPUT_CHARS))


def _usage(raw: Any) -> Usage | None:
    metrics = as_dict(raw)
    if not metrics:
        return None
    # ``inputTokens`` is the whole prompt, cached part included (34,332 of 35,912 read from
    # the cache in the real fixture): the uncached rest is what Reverie calls input
    read = as_int(metrics.get("cacheReadTokens"))
    written = as_int(metrics.get("cacheWriteTokens"))
    return Usage(input_tokens=max(as_int(metrics.get("inputTokens")) - read - written, 0),
                 output_tokens=as_int(metrics.get("outputTokens")),
                 cache_read_tokens=read, cache_write_tokens=written)
