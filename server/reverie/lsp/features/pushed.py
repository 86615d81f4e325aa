"""``reverie/appendMessages``: messages of an agent that writes no transcript become one.

They are appended, in the generic JSONL format, to ``<agent home>/.reverie/sessions/<id>.jsonl``
with a ``<id>.json`` sidecar naming the workspace. Discovery and the watcher then treat the chat
like any other session, so it feeds exactly the same pipeline (thresholds, extraction, dream
gates) and survives a restart.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import orjson

from reverie.fsutil import atomic_write_bytes, ensure_private_dir
from reverie.lsp.protocol import AppendMessagesParams, PushedMessage
from reverie.redact import redact, redact_value


def transcript_path(agent_home: Path, session_id: str) -> Path:
    from reverie.transcripts.discovery import generic_sessions_dir

    safe = re.sub(r"[^A-Za-z0-9._-]", "_", session_id)[:120] or "session"
    return generic_sessions_dir(agent_home) / f"{safe}.jsonl"


def _record(message: PushedMessage) -> dict[str, object]:
    text = message.text or message.content or ""
    record: dict[str, object] = {"role": message.role, "content": redact(text)[0]}
    if message.id:
        record["id"] = message.id
    if message.timestamp:
        record["timestamp"] = message.timestamp.isoformat()
    if message.model:
        record["model"] = message.model
    if message.tool_calls:
        record["tool_calls"] = [
            {
                "id": call.id,
                "type": "function",
                "function": {
                    "name": call.name,
                    # redacted as values, then encoded: the arguments stay valid JSON
                    "arguments": orjson.dumps(
                        redact_value({
                            **call.input,
                            **({"file_paths": call.file_paths} if call.file_paths else {}),
                        })[0]
                    ).decode(),
                },
            }
            for call in message.tool_calls
        ]
    if message.usage:
        record["usage"] = message.usage.model_dump()
    return record


def append_pushed(agent_home: Path, pushed: AppendMessagesParams) -> Path:
    """Append the messages (secrets redacted) and write the sidecar; returns the transcript."""
    path = transcript_path(agent_home, pushed.session_id)
    ensure_private_dir(path.parent)
    sidecar = path.with_suffix(".json")
    meta = {"session_id": pushed.session_id, "cwd": pushed.cwd}
    if pushed.title:
        meta["title"] = redact(pushed.title)[0]
    try:
        current = orjson.loads(sidecar.read_bytes())
    except (OSError, orjson.JSONDecodeError):
        current = None
    if current != meta:
        atomic_write_bytes(sidecar, orjson.dumps(meta))
    data = b"".join(orjson.dumps(_record(m)) + b"\n" for m in pushed.messages)
    if data:
        # one write with O_APPEND: readers see whole lines (a crash can only cut the last one,
        # which the parser counts as a skipped line)
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
    return path
