"""Gemini CLI chats (``~/.gemini/tmp/<project>/chats/session-*.json`` and ``.jsonl``).

Legacy builds rewrite one JSON document ``{sessionId, projectHash, startTime, lastUpdated,
messages, summary?}`` on every change. Current builds append JSONL: a header record, message
records, ``{"$set": {...}}`` metadata patches (which may carry a whole ``messages`` array) and
``{"$rewindTo": id}`` (drop that message and everything after it). A message is re-appended in
full whenever it changes, so messages are last-write-wins by id, keeping their first position.

Both shapes feed the same ``GeminiState``; adapters turn its messages into the model. A Gemini
message with tool calls becomes an assistant message plus a ``tool`` message with the results.

A third, older shape has no ``sessionId``: the API's own conversation, ``{"history": [{role,
parts}]}`` or a bare ``[{role, parts}]`` list (saved chats and checkpoints). Its ``parts`` are
text, ``functionCall`` and ``functionResponse``; it is read as one document too.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import orjson

from reverie.transcripts.base import (
    RecordParser,
    as_dict,
    as_int,
    as_str,
    first_line,
    make_tool_call,
    parse_time,
    text_of,
)
from reverie.transcripts.classify import exit_code_from_text
from reverie.transcripts.lines import Line
from reverie.transcripts.model import (
    Message,
    ParseStats,
    Session,
    ToolCall,
    ToolResult,
    Usage,
)
from reverie.transcripts.wrappers import request_of

_SESSION_NAME = re.compile(r"^session-\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-(.+)$")


class GeminiState:
    """Messages by id in first-seen order, plus the session metadata."""

    def __init__(self, path: Path) -> None:
        self.session = Session(id=_default_id(path), agent="gemini-cli", path=path)
        self.raw: dict[str, dict[str, Any]] = {}
        #: messages of a ``history`` (API contents) document, already converted
        self.contents: list[Message] = []
        self.stats = ParseStats()
        if path.parent.name != "chats" and path.parent.parent.name == "chats":
            # chats/<parentSessionId>/<sessionId>.jsonl: a sub-agent
            self.session.parent_session_id = path.parent.name

    def apply_meta(self, meta: dict[str, Any]) -> None:
        s = self.session
        s.id = as_str(meta.get("sessionId")) or s.id
        s.project = as_str(meta.get("projectHash")) or s.project
        started = parse_time(meta.get("startTime"))
        updated = parse_time(meta.get("lastUpdated"))
        s.started_at = started or s.started_at
        s.updated_at = updated or s.updated_at
        summary = as_str(meta.get("summary"))
        if summary:
            s.title = summary
            s.title_source = "summary"
        directories = meta.get("directories")
        if isinstance(directories, list) and directories and isinstance(directories[0], str):
            s.cwd = s.cwd or directories[0]
        if isinstance(meta.get("messages"), list):
            self.raw = {}
            for item in meta["messages"]:
                self.put(item)

    def put(self, item: Any) -> bool:
        if not isinstance(item, dict) or not isinstance(item.get("id"), str):
            return False
        self.raw[item["id"]] = item  # re-appended: replaces in place, keeps first position
        return True

    def rewind(self, message_id: str) -> None:
        if message_id not in self.raw:
            return
        keep: dict[str, dict[str, Any]] = {}
        for key, value in self.raw.items():
            if key == message_id:
                break
            keep[key] = value
        self.raw = keep

    def messages(self) -> list[Message]:
        out: list[Message] = []
        title_from_prompt = self.session.title_source != "summary"
        out.extend(self.contents)
        for item in self.raw.values():
            out.extend(_convert(item, self.session.cwd))
        if title_from_prompt:
            first = next((r for m in out if m.role == "user"
                          and (r := request_of(m.text, m.display_text))), None)
            if first is not None:
                self.session.title = first_line(first)
                self.session.title_source = "first_prompt"
        times = [m.timestamp for m in out if m.timestamp is not None]
        if times:
            self.session.started_at = self.session.started_at or min(times)
            latest = max(times)
            if self.session.updated_at is None or latest > self.session.updated_at:
                self.session.updated_at = latest
        return out


def parse_document(path: Path, data: bytes) -> GeminiState:
    """A legacy whole-file session. A half-written or broken file is one counted skip."""
    state = GeminiState(path)
    try:
        doc = orjson.loads(data)
    except orjson.JSONDecodeError:
        try:
            doc = orjson.loads(data.decode("utf-8", "replace"))
        except orjson.JSONDecodeError as exc:
            state.stats.lines = 1
            state.stats.skip(f"not a valid JSON document ({exc.msg})")
            return state
    state.stats.lines = 1
    history = doc.get("history") if isinstance(doc, dict) else doc
    if isinstance(history, list) and (not isinstance(doc, dict) or "sessionId" not in doc):
        state.contents = _from_contents(history, state.stats)
        return state
    if not isinstance(doc, dict):
        state.stats.skip("the JSON document is not an object")
        return state
    messages = doc.get("messages")
    state.apply_meta({k: v for k, v in doc.items() if k != "messages"})
    if isinstance(messages, list):
        for item in messages:
            if not state.put(item):
                state.stats.skip("a message without an id")
    return state


class GeminiJsonlParser(RecordParser):
    """Append-only JSONL: records update ``state``; messages come from ``state.messages()``."""

    agent = "gemini-cli"

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.state = GeminiState(path)
        self.session = self.state.session

    def feed_record(self, record: dict[str, Any], line: Line) -> list[Message]:
        if "$set" in record:
            self.state.apply_meta(as_dict(record.get("$set")))
        elif "$rewindTo" in record:
            target = as_str(record.get("$rewindTo"))
            if target:
                self.state.rewind(target)
        elif isinstance(record.get("id"), str) and "type" in record:
            self.state.put(record)
        elif "sessionId" in record:
            self.state.apply_meta(record)
        else:
            self.stats.ignored += 1
        return []

    def messages(self) -> list[Message]:
        return self.state.messages()


def _default_id(path: Path) -> str:
    match = _SESSION_NAME.match(path.stem)
    return match.group(1) if match else path.stem


def _usage(tokens: Any) -> Usage | None:
    if not isinstance(tokens, dict):
        return None
    cached = as_int(tokens.get("cached"))
    return Usage(
        input_tokens=max(as_int(tokens.get("input")) - cached, 0),
        output_tokens=as_int(tokens.get("output")) + as_int(tokens.get("thoughts")),
        cache_read_tokens=cached,
    )


def _from_contents(history: list[Any], stats: ParseStats) -> list[Message]:
    """API ``Content`` items (``{role: user|model, parts}``) as messages: text, function calls
    (the assistant's tool calls) and function responses (their results, matched by id, else by
    name in call order)."""
    out: list[Message] = []
    waiting: dict[str, list[str]] = {}  # tool name -> call ids not answered yet
    for index, item in enumerate(history):
        if not isinstance(item, dict) or not isinstance(item.get("parts"), list):
            stats.skip(f"history item {index}: not a {{role, parts}} object")
            continue
        role = item.get("role")
        mid = f"history-{index}"
        texts: list[str] = []
        calls: list[ToolCall] = []
        results: list[ToolResult] = []
        for part in item["parts"]:
            if not isinstance(part, dict):
                continue
            if isinstance(part.get("text"), str) and part.get("thought") is not True:
                texts.append(part["text"])
            call = as_dict(part.get("functionCall"))
            if call:
                name = as_str(call.get("name")) or "unknown"
                call_id = as_str(call.get("id")) or f"{mid}:{len(calls)}"
                calls.append(make_tool_call("gemini-cli", call_id, name,
                                            as_dict(call.get("args")), None))
                waiting.setdefault(name, []).append(call_id)
            response = as_dict(part.get("functionResponse"))
            if response:
                name = as_str(response.get("name")) or "unknown"
                queue = waiting.get(name) or []
                call_id = as_str(response.get("id")) or (queue.pop(0) if queue else f"{mid}:r")
                if call_id in queue:
                    queue.remove(call_id)
                body = as_dict(response.get("response"))
                error = body.get("error")
                output = body.get("output", error if error is not None else body)
                text = output if isinstance(output, str) else orjson.dumps(output).decode()
                results.append(ToolResult(call_id=call_id, is_error=error is not None,
                                          output=text))
        text = "\n".join(t for t in texts if t)
        if role == "model":
            if text.strip() or calls:
                out.append(Message(id=mid, role="assistant", text=text, tool_calls=calls))
        elif results:
            out.append(Message(id=mid, role="tool", text=text, tool_results=results))
        elif text.strip():
            out.append(Message(id=mid, role="user", text=text))
    return out


def _result_text(call: dict[str, Any]) -> str:
    parts: list[str] = []
    for item in call.get("result") or []:
        response = as_dict(as_dict(as_dict(item).get("functionResponse")).get("response"))
        for key in ("output", "error"):
            value = response.get(key)
            if isinstance(value, str):
                parts.append(value)
    if not parts and isinstance(call.get("resultDisplay"), str):
        parts.append(call["resultDisplay"])
    return "\n".join(parts)


#: ``run_shell_command``'s report: the command's own output sits between ``Output:`` and the
#: trailing fields (``Error:`` is its stderr, ``(empty)`` / ``(none)`` when there is none); the
#: last ``Error:`` line before ``Exit Code:`` is the field (the output may print its own)
_SHELL_REPORT = re.compile(r"^Command: .*?^Output: ?(?P<out>.*)\n^Error: ?(?P<err>.*?)\n"
                           r"^Exit Code: ", re.DOTALL | re.MULTILINE)


def shell_output(report: str) -> str:
    """What a command printed, out of Gemini CLI's ``Command: … Output: … Error: … Exit Code:``
    report (the report itself when it is not one): ``Error: (none)`` is not an error line and
    ``Output: (empty)`` is no output."""
    match = _SHELL_REPORT.match(report[:200_000])
    if match is None:
        return report
    out, err = match.group("out").strip(), match.group("err").strip()
    parts = [text for text, empty in ((out, "(empty)"), (err, "(none)")) if text and text != empty]
    return "\n".join(parts)


def _convert(item: dict[str, Any], cwd: str | None) -> list[Message]:
    mid = item["id"]
    kind = item.get("type")
    ts = parse_time(item.get("timestamp"))
    text = text_of(item.get("content"))
    if kind == "user":
        # ``displayContent``: what the person typed when the CLI expanded it (``/init``)
        shown = text_of(item["displayContent"]) if "displayContent" in item else None
        display = shown if shown is not None and shown.strip() != text.strip() else None
        return [Message(id=mid, role="user", text=text, timestamp=ts, display_text=display)]
    if kind != "gemini":
        if not text.strip():
            return []
        return [Message(id=mid, role="system", text=text, timestamp=ts, is_meta=kind == "info")]
    calls: list[ToolCall] = []
    results: list[ToolResult] = []
    for raw in item.get("toolCalls") or []:
        if not isinstance(raw, dict):
            continue
        call_id = as_str(raw.get("id")) or f"{mid}:{len(calls)}"
        call = make_tool_call("gemini-cli", call_id, as_str(raw.get("name")) or "unknown",
                              as_dict(raw.get("args")), cwd)
        calls.append(call)
        status = raw.get("status")
        if raw.get("result") is not None or status in ("success", "error", "cancelled"):
            output = _result_text(raw)
            exit_code = exit_code_from_text(output) if call.kind == "shell" else None
            if call.kind == "shell":
                output = shell_output(output)
            results.append(ToolResult(
                call_id=call_id,
                is_error=status in ("error", "cancelled"),
                output=output,
                exit_code=exit_code,
            ))
    out = [Message(id=mid, role="assistant", text=text, timestamp=ts,
                   model=as_str(item.get("model")), usage=_usage(item.get("tokens")),
                   tool_calls=calls)]
    if results:
        out.append(Message(id=f"{mid}#results", role="tool", timestamp=ts, tool_results=results))
    return out
