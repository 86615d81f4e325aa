"""Kilo Code sessions (the OpenCode-based extension and CLI) as Reverie messages.

A session's rows come from ``kilo_db``. A ``message`` row's ``data`` is the message without its
ids (Kilo-Org/kilocode ``packages/opencode/src/session/message-v2.ts``): ``{role: "user", time:
{created}, agent, model: {providerID, modelID}}`` or ``{role: "assistant", time: {created,
completed}, parentID, modelID, providerID, path: {cwd, root}, cost, tokens: {input, output,
reasoning, cache: {read, write}}, error?, finish?}``. Its parts (``part`` rows, in id order) hold
the content: ``text`` (``synthetic`` ones are what Kilo added, not what anybody typed),
``reasoning`` (dropped), ``file`` (an attachment: never read), ``tool`` ({``callID``, ``tool``,
``state``: {``status`` pending | running | completed | error, ``input``, ``output``,
``error``, ``metadata`` (``exit`` for ``bash``), ``time``}}), ``step-start`` / ``step-finish``
(a model call; its ``tokens`` are that call's usage), ``snapshot``, ``patch``, ``agent``,
``subtask``, ``retry`` and ``compaction``.

Tools (``packages/opencode/src/tool/registry.ts``): ``read``, ``write``, ``edit`` and
``multiedit`` (``filePath``), ``apply_patch`` (``patchText``), ``bash`` (``command``),
``glob`` / ``grep`` / ``list``, ``webfetch`` / ``websearch`` / ``codesearch``, ``task`` (a
sub-agent: a child session with ``parent_id``), ``todowrite``, ``skill``, ``question``...
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from reverie.transcripts.base import as_dict, as_int, as_str, first_line, make_tool_call, parse_time
from reverie.transcripts.document import MAX_OUTPUT_CHARS, Unit, capped, load_json
from reverie.transcripts.kilo_db import Row, SessionRow
from reverie.transcripts.model import Message, ParseStats, Session, ToolResult, Usage
from reverie.transcripts.wrappers import request_of

#: parts that carry nothing Reverie reads
_IGNORED_PARTS = frozenset({"reasoning", "file", "step-start", "snapshot", "patch", "agent",
                            "retry"})
#: the title Kilo gives a session until it names it (``session/session.ts``)
_DEFAULT_TITLE = re.compile(r"^(New session - |Child session - )\d{4}-\d{2}-\d{2}T")


def session_of(path: Path, row: SessionRow) -> Session:
    session = Session(id=row.id, agent="kilo-code", path=path, cwd=row.directory,
                      project=row.directory, parent_session_id=row.parent_id,
                      started_at=parse_time(row.time_created),
                      updated_at=parse_time(row.time_updated))
    if row.title and not _DEFAULT_TITLE.match(row.title):
        session.title, session.title_source = first_line(row.title), "summary"
    return session


def units_of(session: Session, rows: list[Row], parts: list[Row],
             stats: ParseStats) -> list[Unit]:
    """One unit per message row with its parts, keyed by the message id, digested over their
    raw JSON: a tail rebuilds only the messages whose rows changed (``document.Unit``)."""
    by_message: dict[str, list[Row]] = {}
    for part in parts:
        by_message.setdefault(part.owner, []).append(part)
    units: list[Unit] = []
    for row in rows:
        own = by_message.get(row.id, [])
        hasher = hashlib.blake2b(row.data, digest_size=10)
        for part in own:
            hasher.update(part.id.encode("utf-8", "replace") + b"\0" + part.data)
        units.append(Unit(key=row.id, digest=hasher.hexdigest(),
                          build=_builder(row, own, session, stats)))
    return units


def messages_of(session: Session, rows: list[Row], parts: list[Row],
                stats: ParseStats) -> list[Message]:
    """The messages of a session's rows, in Kilo's order; the title from the first request
    when Kilo has not named the session."""
    out = [m for unit in units_of(session, rows, parts, stats) for m in unit.build()]
    name_by_request(session, out)
    return out


def name_by_request(session: Session, messages: list[Message]) -> None:
    """The title from the first request, when Kilo has not named the session."""
    if session.title is None:
        for message in messages:
            if message.role == "user" and (found := request_of(message.text)):
                session.title, session.title_source = first_line(found), "first_prompt"
                break


def _builder(row: Row, own: list[Row], session: Session, stats: ParseStats
             ) -> Callable[[], list[Message]]:
    def build() -> list[Message]:
        parts: list[tuple[str, dict[str, Any]]] = []
        for part in own:
            stats.lines += 1
            value, why = load_json(part.data)
            if not isinstance(value, dict):
                stats.skip(f"part {part.id}: {why or 'not a JSON object'}")
                continue
            parts.append((part.id, value))
        stats.lines += 1
        info, why = load_json(row.data)
        if not isinstance(info, dict):
            stats.skip(f"message {row.id}: {why or 'not a JSON object'}")
            return []
        try:
            return list(_messages(row.id, info, parts, session, stats))
        except (TypeError, ValueError, KeyError, AttributeError) as exc:
            stats.skip(f"message {row.id}: unexpected shape ({type(exc).__name__})")
            return []
    return build


def _messages(key: str, info: dict[str, Any], parts: list[tuple[str, dict[str, Any]]],
              session: Session, stats: ParseStats) -> Iterator[Message]:
    role = info.get("role")
    times = as_dict(info.get("time"))
    ts = parse_time(times.get("created"))
    if role == "user":
        yield from _user(key, parts, ts, stats)
        return
    if role != "assistant":
        stats.skip(f"message {key}: unknown role {role!r}")
        return
    done = parse_time(times.get("completed")) or ts
    model = as_str(info.get("modelID"))
    cwd = as_str(as_dict(info.get("path")).get("cwd")) or session.cwd
    for pid, part in parts:
        kind = part.get("type")
        if kind == "text":
            text = as_str(part.get("text")) or ""
            if text.strip() and part.get("ignored") is not True:
                yield Message(id=pid, role="assistant", timestamp=done, model=model,
                              text=capped(text, stats, f"part {pid}"), api_message_id=key)
        elif kind == "tool":
            yield from _tool(pid, part, cwd, done, model, key)
        elif kind == "step-finish":
            usage = _usage(part.get("tokens"))
            if usage is not None:
                yield Message(id=pid, role="system", timestamp=done, model=model, is_meta=True,
                              api_message_id=pid, usage=usage)
        elif kind in _IGNORED_PARTS:
            stats.ignored += 1
        else:
            stats.skip(f"part {pid}: unknown part type {kind!r}")
    error = as_dict(info.get("error"))
    if error:
        name = as_str(error.get("name")) or "error"
        text = as_str(as_dict(error.get("data")).get("message")) or name
        if name == "MessageAbortedError":
            yield Message(id=f"{key}:cancelled", role="system", timestamp=done, is_meta=True,
                          text="request cancelled")
        else:
            yield Message(id=f"{key}:error", role="system", timestamp=done,
                          text=capped(f"error: {text}", stats, f"message {key}"))


def _user(key: str, parts: list[tuple[str, dict[str, Any]]], ts: Any,
          stats: ParseStats) -> Iterator[Message]:
    texts: list[str] = []
    for pid, part in parts:
        kind = part.get("type")
        if kind == "text":
            if part.get("synthetic") is True or part.get("ignored") is True:
                stats.ignored += 1  # what Kilo added (a file's text, a reminder)
            else:
                texts.append(as_str(part.get("text")) or "")
        elif kind == "subtask":
            texts.append(as_str(part.get("prompt")) or "")
        elif kind == "compaction":
            yield Message(id=pid, role="system", timestamp=ts, is_meta=True,
                          is_compact_boundary=True, text="conversation compacted")
        elif kind in _IGNORED_PARTS:
            stats.ignored += 1
        else:
            stats.skip(f"part {pid}: unknown part type {kind!r}")
    text = "\n\n".join(t for t in texts if t.strip())
    if text:
        yield Message(id=key, role="user", timestamp=ts, text=capped(text, stats, f"message {key}"))


def _tool(pid: str, part: dict[str, Any], cwd: str | None, ts: Any, model: str | None,
          key: str) -> Iterator[Message]:
    name = as_str(part.get("tool")) or "unknown"
    state = as_dict(part.get("state"))
    call_id = as_str(part.get("callID")) or pid
    call = make_tool_call("kilo-code", call_id, name, as_dict(state.get("input")), cwd)
    yield Message(id=pid, role="assistant", timestamp=ts, model=model, tool_calls=[call],
                  api_message_id=key)
    status = state.get("status")
    if status not in ("completed", "error"):
        return  # pending or running: its result comes with a later read
    meta = as_dict(state.get("metadata"))
    exit_code = meta.get("exit")
    exit_code = exit_code if isinstance(exit_code, int) and not isinstance(exit_code, bool) \
        else None
    output = as_str(state.get("output")) or as_str(state.get("error")) or ""
    is_error = status == "error" or (exit_code is not None and exit_code != 0)
    yield Message(id=f"{pid}:result", role="tool", timestamp=ts, tool_results=[ToolResult(
        call_id=call_id, is_error=is_error, exit_code=exit_code,
        output=capped(output, None, "", MAX_OUTPUT_CHARS))])


def _usage(raw: Any) -> Usage | None:
    tokens = as_dict(raw)
    if not tokens:
        return None
    cache = as_dict(tokens.get("cache"))
    # Kilo's ``input`` leaves the cached part out (``getUsage`` in ``session/session.ts``)
    return Usage(input_tokens=as_int(tokens.get("input")),
                 output_tokens=as_int(tokens.get("output")) + as_int(tokens.get("reasoning")),
                 cache_read_tokens=as_int(cache.get("read")),
                 cache_write_tokens=as_int(cache.get("write")))
