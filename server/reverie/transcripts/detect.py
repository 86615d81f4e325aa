"""Which agent wrote a transcript file, from what it starts with and where it is.

Apart from the agents' parsers, and without their models: ``reverie transcript --stats``
detects a file before it knows whether it needs pydantic at all (a Claude Code transcript
does not, see ``claude_stats``). The location and first-record tests of the editor's agents
live here for that reason, and their modules import them from here.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from reverie.transcripts.lines import BOM
from reverie.transcripts.records import as_dict

if TYPE_CHECKING:  # a name for annotations only: ``reverie.types`` builds pydantic models
    from reverie.types import AgentName

#: how much of a file detection looks at
_DETECT_BYTES = 256 * 1024
_CODEX_TYPES = {"session_meta", "response_item", "event_msg", "turn_context", "compacted"}
_CLAUDE_TYPES = {"user", "assistant", "summary", "system", "progress", "file-history-snapshot",
                 "queue-operation", "custom-title", "attachment", "pr-link"}
_GEMINI_TYPES = {"user", "gemini", "info", "error", "warning"}

#: Cline 4 (its SDK): ``sessions/<id>/<id>.messages.json``
CLINE_SDK_SUFFIX = ".messages.json"
#: the Cline family's (Cline, Roo Code, Kilo Code) task file: ``tasks/<id>/ui_messages.json``
CLINE_UI_MESSAGES = "ui_messages.json"
#: the folders of a VS Code workspace storage that hold chat session documents
#: the Cline family's extension ids (lower case, as the global storage folder is named) -> agent
TASK_EXTENSIONS: dict[str, str] = {
    "saoudrizwan.claude-dev": "cline",
    "rooveterinaryinc.roo-cline": "roo-code",
    "kilocode.kilo-code": "kilo-code",
}
COPILOT_SESSION_DIRS = ("chatSessions", "emptyWindowChatSessions", "transferredChatSessions",
                        "savedChatSessions")


def is_cline_sdk_session(path: Path) -> bool:
    """``sessions/<id>/<id>.messages.json``: a root session's conversation (not a sub-agent's)."""
    suffix = CLINE_SDK_SUFFIX
    return path.name.endswith(suffix) and path.name[: -len(suffix)] == path.parent.name


def is_copilot_session_location(path: Path) -> bool:
    return path.parent.name in COPILOT_SESSION_DIRS and path.suffix in (".json", ".jsonl")


def is_copilot_event_log(path: Path) -> bool:
    """``.../GitHub.copilot-chat/transcripts/<id>.jsonl``: the extension's transcript folder."""
    return (path.suffix == ".jsonl" and path.parent.name.lower() == "transcripts"
            and path.parent.parent.name.lower() == "github.copilot-chat")


def looks_like_copilot_event(record: object) -> bool:
    """A record of that log: ``session.start`` with the Copilot agent as its producer."""
    data = as_dict(as_dict(record).get("data"))
    return as_dict(record).get("type") == "session.start" and "sessionId" in data and (
        data.get("producer") == "copilot-agent" or "copilotVersion" in data)


def cline_task_agent(path: Path) -> AgentName:
    """Which extension wrote the task folder of ``path``, from where it is: the global storage
    folder name (``<publisher.name>/tasks/<id>/``), Cline's own ``~/.cline/data``, else Cline.
    A tasks folder a custom storage setting moved says nothing: its readers are given the
    agent (``EditorPlaces.moved_task_agent``, ``SessionRef.agent``)."""
    for parent in path.parents:
        agent = TASK_EXTENSIONS.get(parent.name.lower())
        if agent is not None:
            return agent  # type: ignore[return-value]
        if parent.name == "data" and parent.parent.name == ".cline":
            return "cline"
    return "cline"


def _classify_record(record: Any) -> AgentName | None:
    if not isinstance(record, dict):
        return None
    kind = record.get("type")
    if "payload" in record and kind in _CODEX_TYPES:
        return "codex"
    if looks_like_copilot_event(record):
        return "copilot-chat"  # the Copilot extension's own event log
    if record.get("kind") == 0 and isinstance(record.get("v"), dict) and (
            "requests" in record["v"] or "sessionId" in record["v"]):
        return "copilot-chat"  # the first line of a VS Code chat session log
    if "$set" in record or "$rewindTo" in record or "projectHash" in record:
        return "gemini-cli"
    if kind in _CLAUDE_TYPES and (
        "uuid" in record or "sessionId" in record or kind == "summary" or "messageId" in record
    ):
        return "claude-code"
    if kind in _GEMINI_TYPES and "id" in record and "content" in record and "message" not in record:
        return "gemini-cli"
    if "role" in record and ("content" in record or "tool_calls" in record):
        return "generic"
    return None


def _hint_from_path(path: Path) -> AgentName | None:
    parts = set(path.parts)
    if ".claude" in parts:
        return "claude-code"
    if ".codex" in parts:
        return "codex"
    if ".gemini" in parts:
        return "gemini-cli"
    if ".reverie" in parts or path.suffix == ".messages":
        return "generic"
    return None


def detect_agent(path: Path) -> AgentName | None:
    """Which agent wrote ``path``, from its content first and its location second."""
    name = path.name
    if name.endswith(".aider.chat.history.md"):
        return "aider"
    if path.suffix == ".db":
        # imported here, for ``.db`` files only: it buys start-up time for every other file
        from reverie.transcripts.kilo_db import looks_like_db

        return "kilo-code" if looks_like_db(path) else None
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return None
    with os.fdopen(fd, "rb") as handle:
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                return None  # a FIFO or device: never read (it could block forever)
            head = handle.read(_DETECT_BYTES).removeprefix(BOM)
        except OSError:
            return None
    if head.lstrip().startswith(b"# aider chat started at"):
        return "aider"
    editor = _editor_agent(path, head)
    if editor is not None:
        return editor
    if path.suffix == ".json":
        if b'"sessionId"' in head and (b'"messages"' in head or b'"projectHash"' in head):
            return "gemini-cli"
        if b'"parts"' in head and b'"role"' in head and (
                b'"history"' in head or head.lstrip().startswith(b"[")):
            return "gemini-cli"  # the API's own contents: a saved chat or checkpoint
        return None
    lines = head.split(b"\n")
    if len(head) == _DETECT_BYTES:
        lines = lines[:-1] or lines  # the cut last line is not valid JSON
    for raw in lines[:50]:
        if not raw.strip():
            continue
        try:
            record = orjson.loads(raw)
        except orjson.JSONDecodeError:
            continue
        found = _classify_record(record)
        if found:
            return found
    if b'"type":"session_meta"' in head or b'"type":"response_item"' in head:
        return "codex"
    if b'"parentUuid"' in head and b'"sessionId"' in head:
        return "claude-code"
    return _hint_from_path(path)


def _editor_agent(path: Path, head: bytes) -> AgentName | None:
    """The editor's agents, from where the file is and what it starts with."""
    start = head.lstrip()[:1]
    if is_copilot_event_log(path) and start in (b"{", b""):
        return "copilot-chat"
    if path.name.endswith(CLINE_SDK_SUFFIX) and start in (b"{", b"") and (
            is_cline_sdk_session(path) or b'"agent"' in head):
        return "cline"  # Cline 4: sessions/<id>/<id>.messages.json
    if path.name == CLINE_UI_MESSAGES and start in (b"[", b""):
        return cline_task_agent(path)
    if is_copilot_session_location(path) and start in (b"{", b""):
        return "copilot-chat"
    if path.suffix != ".json" or start not in (b"{", b"["):
        return None
    if start == b"{" and b'"requests"' in head and (
            b'"responderUsername"' in head or b'"requesterUsername"' in head
            or b'"creationDate"' in head or b'"initialLocation"' in head):
        return "copilot-chat"
    if start == b"{" and b'"history"' in head and (
            b'"workspaceDirectory"' in head or b'"contextItems"' in head):
        return "continue"
    if start == b"[" and b'"ts"' in head and (b'"say"' in head or b'"ask"' in head):
        return cline_task_agent(path)
    return None
