"""Reading one JSONL record and its loosely typed fields, without model objects.

Every record parser goes through ``decode_line`` (``base.RecordParser`` and the Claude Code
``--stats`` fold, ``claude_stats``), so both count blank, oversized and broken lines the same
way. Nothing here imports pydantic: ``reverie transcript --stats`` starts without it.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

import orjson

from reverie.transcripts.lines import Line


class LineCounter(Protocol):
    """What ``decode_line`` counts into (``model.ParseStats``, ``claude_stats.LineStats``)."""

    lines: int

    def skip(self, reason: str, keep: int = 20) -> None: ...


def decode_line(line: Line, stats: LineCounter) -> dict[str, Any] | None:
    """The JSON object on ``line``, or None: a blank line (not counted), or an oversized line,
    invalid JSON or a JSON value that is not an object (counted as a skipped line)."""
    if line.oversized:
        stats.lines += 1
        stats.skip(f"byte {line.offset}: line longer than the line limit")
        return None
    data = line.data
    if not data.strip():
        return None
    stats.lines += 1
    record = loads_line(data)
    if not isinstance(record, dict):
        what = "not a JSON object" if record is not None else "not valid JSON"
        stats.skip(f"byte {line.offset}: {what}")
        return None
    return record


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


#: the largest number ``as_int`` takes (2**53, the last integer a JSON number holds exactly):
#: a larger one is no count a transcript really wrote (``1.2e29`` input tokens), and would not
#: fit the 64-bit integers the JSON output can print
MAX_INT = 2**53


def as_int(value: Any) -> int:
    """A count or an id: a non-negative number up to ``MAX_INT``; anything else is 0."""
    if isinstance(value, bool):
        return 0
    if isinstance(value, int):
        return max(value, 0) if value <= MAX_INT else 0
    if isinstance(value, float) and value == value:  # not NaN
        return max(int(value), 0) if value <= MAX_INT else 0
    return 0


def as_str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def as_dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}
