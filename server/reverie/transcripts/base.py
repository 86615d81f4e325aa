"""What every adapter shares: the streaming parser interface, ``make_tool_call`` and the small
record helpers (defined without models in ``records``, re-exported here where adapters have
always found them)."""

from __future__ import annotations

import hashlib
from abc import ABC, abstractmethod
from datetime import datetime
from pathlib import Path
from typing import Any

from reverie.transcripts.classify import tool_facts
from reverie.transcripts.lines import Line
from reverie.transcripts.model import AgentName, Message, ParseStats, Session, ToolCall
from reverie.transcripts.records import as_dict as as_dict
from reverie.transcripts.records import as_int as as_int
from reverie.transcripts.records import as_str as as_str
from reverie.transcripts.records import decode_line
from reverie.transcripts.records import default_session_id as default_session_id
from reverie.transcripts.records import first_line as first_line
from reverie.transcripts.records import loads_line as loads_line
from reverie.transcripts.records import parse_time as parse_time
from reverie.transcripts.records import text_of as text_of
from reverie.transcripts.wrappers import request_of


class RecordParser(ABC):
    """Parses one JSONL transcript record by record, keeping only what later records need.

    ``feed_line`` returns the messages a line completes; ``memo``/``restore_memo`` carry the
    small cross-line state (seen API message ids, tool names by call id...) so a tail can be
    saved and resumed without re-reading the file.
    """

    agent: AgentName

    def __init__(self, path: Path) -> None:
        self.path = path
        self.session = Session(id=default_session_id(path), agent=self.agent, path=path)
        self.stats = ParseStats()

    def feed_line(self, line: Line) -> list[Message]:
        record = decode_line(line, self.stats)
        if record is None:
            return []
        try:
            return self.feed_record(record, line)
        except (TypeError, ValueError, KeyError, AttributeError) as exc:
            # an unexpected shape inside a record: skip the record, never the file
            self.stats.skip(f"byte {line.offset}: unexpected record shape ({type(exc).__name__})")
            return []

    @abstractmethod
    def feed_record(self, record: dict[str, Any], line: Line) -> list[Message]: ...

    def finish(self) -> list[Message]:
        """Messages held back until the file's end is known (a whole-file read calls this;
        a tail never does, the next record flushes them instead)."""
        return []

    def memo(self) -> dict[str, Any]:
        return {}

    def restore_memo(self, memo: dict[str, Any]) -> None:
        return None

    def touch(self, when: datetime | None) -> None:
        """Widen the session's started/updated window with a record's timestamp."""
        if when is None:
            return
        s = self.session
        if s.started_at is None or when < s.started_at:
            s.started_at = when
        if s.updated_at is None or when > s.updated_at:
            object.__setattr__(s, "updated_at", when)  # hot path: skip pydantic's setattr

    def note_first_prompt(self, text: str) -> None:
        """Fallback title: the first real user request (wrappers skipped, ``wrappers``), when
        the agent wrote no summary."""
        if self.session.title is None and text.strip():
            request = request_of(text)
            if request:
                self.session.title = first_line(request)
                self.session.title_source = "first_prompt"


def make_tool_call(
    agent: AgentName, call_id: str, name: str, tool_input: dict[str, Any], cwd: str | None
) -> ToolCall:
    """A normalised ``ToolCall`` with kind, absolute file paths and the shell command
    (``classify.tool_facts``)."""
    kind, paths, command = tool_facts(agent, name, tool_input, cwd)
    return ToolCall(id=call_id, name=name, kind=kind, input=tool_input, file_paths=paths,
                    command=command)


def fingerprint_id(prefix: str, offset: int, data: bytes) -> str:
    """A stable id for records without one: position plus a short content hash."""
    digest = hashlib.blake2b(data, digest_size=6).hexdigest()
    return f"{prefix}:{offset}:{digest}"
