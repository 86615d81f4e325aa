"""Continue sessions (``~/.continue/sessions/<sessionId>.json``; ``CONTINUE_GLOBAL_DIR`` moves it).

One ``Session`` document per file (continuedev/continue ``core/index.d.ts``: ``{sessionId,
title, workspaceDirectory, history: ChatHistoryItem[], mode?, chatModelTitle?, usage?}``),
rewritten whole with ``writeFileSync`` on every save (``core/util/history.ts``), plus the index
``sessions.json`` (``[{sessionId, title, dateCreated, workspaceDirectory}]``). Continue's VS Code
extension records ``workspaceDirectory`` as the first workspace folder's URI (``file:///...``,
``VsCodeIde.getWorkspaceDirs``); the Continue CLI writes a plain path. Both are read.

Each ``ChatHistoryItem`` is ``{message: ChatMessage, contextItems, toolCallStates?, ...}``: a
``user``, ``assistant`` (``toolCalls``: OpenAI-style ``{id, function: {name, arguments}}``,
``usage``: ``{promptTokens, completionTokens, promptTokensDetails}``), ``thinking``, ``system``
or ``tool`` (``toolCallId``) message. ``toolCallStates`` carry a call's ``status``
(``done``/``errored``/``canceled``...) and ``output`` (context items): they give the result
when no ``tool`` message does. Messages have no time; the session's file time dates them.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

from reverie.transcripts.base import as_dict, as_int, as_str, first_line, make_tool_call
from reverie.transcripts.document import (
    MAX_OUTPUT_CHARS,
    EditorDocument,
    Unit,
    capped,
    digest_of,
    load_json,
)
from reverie.transcripts.editor_places import local_path_of_uri
from reverie.transcripts.model import Message, ParseStats, Session, ToolCall, ToolResult, Usage
from reverie.transcripts.wrappers import request_of

INDEX_NAME = "sessions.json"
_DEFAULT_TITLES = frozenset({"", "New Session"})


def workspace_of(value: Any) -> str | None:
    """``workspaceDirectory`` as a local path (a URI from the IDE, a path from the CLI)."""
    where = as_str(value)
    if not where:
        return None
    if "://" in where[:24]:
        return local_path_of_uri(where)[0]
    return where


def read_document(path: Path, data: bytes) -> EditorDocument:
    stats = ParseStats()
    session = Session(id=path.stem or "session", agent="continue", path=path)
    doc = EditorDocument(session=session, stats=stats)
    stats.lines = 1
    value, why = load_json(data)
    if why is not None or not isinstance(value, dict):
        stats.skip(why or "the session document is not a JSON object")
        doc.complete = False
        return doc
    session.id = as_str(value.get("sessionId")) or session.id
    session.cwd = session.project = workspace_of(value.get("workspaceDirectory"))
    title = as_str(value.get("title"))
    if title and title.strip() not in _DEFAULT_TITLES:
        session.title, session.title_source = first_line(title), "summary"
    history = value.get("history")
    if not isinstance(history, list):
        if "history" in value:
            stats.skip("'history' is not a list")
        return doc
    answered = {as_str(as_dict(as_dict(item).get("message")).get("toolCallId"))
                for item in history
                if as_dict(as_dict(item).get("message")).get("role") == "tool"}
    cwd = session.cwd
    for index, item in enumerate(history):
        if not isinstance(item, dict) or not isinstance(item.get("message"), dict):
            stats.skip(f"history item {index}: no message object")
            continue
        key = f"{session.id}:{index}"
        doc.units.append(Unit(key=key, digest=digest_of(item, cwd, sorted(a or "" for a in
                                                                          answered)),
                              build=_builder(item, key, cwd, answered, stats)))
    if session.title is None:
        for item in history:
            message = as_dict(as_dict(item).get("message"))
            if message.get("role") == "user":
                found = request_of(_text(message.get("content"), None))
                if found:
                    session.title, session.title_source = first_line(found), "first_prompt"
                    break
    return doc


def _builder(item: dict[str, Any], key: str, cwd: str | None, answered: set[str | None],
             stats: ParseStats) -> Any:
    def build() -> list[Message]:
        return list(_messages(item, key, cwd, answered, stats))
    return build


def _text(content: Any, stats: ParseStats | None) -> str:
    if isinstance(content, str):
        return content
    parts: list[str] = []
    if isinstance(content, list):
        for part in content:
            part = as_dict(part)
            if part.get("type") == "text" and isinstance(part.get("text"), str):
                parts.append(part["text"])
            elif part.get("type") == "imageUrl":
                parts.append("[image]")
                if stats is not None:
                    stats.ignored += 1  # a data: URL (base64): never decoded
    return "\n\n".join(parts)


def _messages(item: dict[str, Any], key: str, cwd: str | None, answered: set[str | None],
              stats: ParseStats) -> Iterator[Message]:
    message = item["message"]
    role = message.get("role")
    text = capped(_text(message.get("content"), stats), stats, f"message {key}")
    if role == "user":
        yield Message(id=key, role="user", text=text)
    elif role == "assistant":
        calls = [_tool_call(raw, key, n, cwd) for n, raw in
                 enumerate(message.get("toolCalls") or []) if isinstance(raw, dict)]
        if text.strip() or calls:
            yield Message(id=key, role="assistant", text=text, tool_calls=calls,
                          usage=_usage(message.get("usage")), api_message_id=key)
        elif message.get("usage"):
            yield Message(id=key, role="system", is_meta=True, usage=_usage(message["usage"]),
                          api_message_id=key)
        results = [r for state in item.get("toolCallStates") or []
                   if (r := _state_result(as_dict(state), answered)) is not None]
        if results:
            yield Message(id=f"{key}:results", role="tool", tool_results=results)
    elif role == "tool":
        call_id = as_str(message.get("toolCallId")) or ""
        state = next((as_dict(s) for s in item.get("toolCallStates") or []
                      if as_dict(s).get("toolCallId") == call_id), {})
        failed = state.get("status") in ("errored", "canceled")
        yield Message(id=key, role="tool", tool_results=[ToolResult(
            call_id=call_id, is_error=failed, output=capped(text, None, "", MAX_OUTPUT_CHARS))])
    elif role == "system":
        if text.strip():
            yield Message(id=key, role="system", text=text, is_meta=True)
    elif role == "thinking":
        stats.ignored += 1
    else:
        stats.skip(f"history item {key}: unknown role {role!r}")


def _tool_call(raw: dict[str, Any], key: str, index: int, cwd: str | None) -> ToolCall:
    function = as_dict(raw.get("function"))
    args: Any = function.get("arguments")
    if isinstance(args, str):
        try:
            args = orjson.loads(args) if args.strip() else {}
        except orjson.JSONDecodeError:
            args = {"raw": args}  # arguments still streaming, or not JSON
    call_id = as_str(raw.get("id")) or f"{key}:{index}"
    return make_tool_call("continue", call_id, as_str(function.get("name")) or "unknown",
                          as_dict(args), cwd)


def _state_result(state: dict[str, Any], answered: set[str | None]) -> ToolResult | None:
    call_id = as_str(state.get("toolCallId"))
    status = state.get("status")
    if call_id is None or call_id in answered or status not in ("done", "errored", "canceled"):
        return None
    output = "\n".join(as_str(as_dict(o).get("content")) or ""
                       for o in state.get("output") or [])
    return ToolResult(call_id=call_id, is_error=status != "done",
                      output=capped(output, None, "", MAX_OUTPUT_CHARS))


def _usage(raw: Any) -> Usage | None:
    usage = as_dict(raw)
    if not usage:
        return None
    details = as_dict(usage.get("promptTokensDetails"))
    cached = as_int(details.get("cachedTokens"))
    written = as_int(details.get("cacheWriteTokens"))
    prompt = as_int(usage.get("promptTokens"))
    return Usage(input_tokens=max(prompt - cached - written, 0),
                 output_tokens=as_int(usage.get("completionTokens")),
                 cache_read_tokens=cached, cache_write_tokens=written)


def index_workspaces(sessions_dir: Path) -> dict[str, str]:
    """``sessionId -> workspace`` from Continue's ``sessions.json`` index."""
    try:
        raw = (sessions_dir / INDEX_NAME).read_bytes()
    except OSError:
        return {}
    value, _why = load_json(raw)
    out: dict[str, str] = {}
    for entry in value if isinstance(value, list) else []:
        entry = as_dict(entry)
        session_id = as_str(entry.get("sessionId"))
        where = workspace_of(entry.get("workspaceDirectory"))
        if session_id and where:
            out[session_id] = where
    return out
