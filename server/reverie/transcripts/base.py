"""What every adapter shares: the streaming parser interface and small record helpers."""

from __future__ import annotations

import hashlib
from abc import ABC, abstractmethod
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson

from reverie.transcripts.lines import Line
from reverie.transcripts.model import AgentName, Message, ParseStats, Session
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
        data = line.data
        if line.oversized:
            self.stats.lines += 1
            self.stats.skip(f"byte {line.offset}: line longer than the line limit")
            return []
        if not data.strip():
            return []
        self.stats.lines += 1
        record = loads_line(data)
        if not isinstance(record, dict):
            what = "not a JSON object" if record is not None else "not valid JSON"
            self.stats.skip(f"byte {line.offset}: {what}")
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


def loads_line(data: bytes) -> Any:
    """orjson first; a line with stray non-UTF-8 bytes is retried with replacement characters."""
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        pass
    try:
        return orjson.loads(data.decode("utf-8", "replace"))
    except orjson.JSONDecodeError:
        return None


def default_session_id(path: Path) -> str:
    return path.stem or path.name or "session"


def parse_time(value: Any) -> datetime | None:
    """ISO-8601 strings (with ``Z``), epoch seconds or milliseconds -> aware UTC datetime."""
    try:
        if isinstance(value, str) and value:
            parsed = datetime.fromisoformat(value.replace("Z", "+00:00", 1))
            return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)
        if isinstance(value, int | float) and not isinstance(value, bool) and value > 0:
            seconds = value / 1000 if value > 1e11 else value
            return datetime.fromtimestamp(seconds, UTC)
    except (ValueError, OverflowError, OSError):
        return None
    return None


def fingerprint_id(prefix: str, offset: int, data: bytes) -> str:
    """A stable id for records without one: position plus a short content hash."""
    digest = hashlib.blake2b(data, digest_size=6).hexdigest()
    return f"{prefix}:{offset}:{digest}"


def text_of(content: Any) -> str:
    """Plain text of a string or a list of content parts (``text``/``input_text``/...)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts: list[str] = []
        for part in content:
            if isinstance(part, str):
                parts.append(part)
            elif isinstance(part, dict):
                kind = part.get("type")
                if isinstance(part.get("text"), str) and kind not in ("thinking", "reasoning"):
                    parts.append(part["text"])
                elif kind in ("image", "input_image", "image_url"):
                    parts.append("[image]")
        return "\n\n".join(p for p in parts if p)
    if isinstance(content, dict) and isinstance(content.get("text"), str):
        return str(content["text"])
    return ""


def first_line(text: str, limit: int = 80) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= limit else line[: limit - 1].rstrip() + "…"


def as_int(value: Any) -> int:
    if isinstance(value, bool):
        return 0
    if isinstance(value, int):
        return max(value, 0)
    if isinstance(value, float) and value == value:
        return max(int(value), 0)
    return 0


def as_str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def as_dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}
