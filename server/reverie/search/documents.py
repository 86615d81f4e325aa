"""What the search index holds: small documents cut from memory, notes and transcripts.

A document is one thing a person or an agent would look for: a memory entry, a notes section,
one request of a session with the reply that closed it, an error with the change that fixed it,
a decision or correction, the files a session touched, the commands that worked. Session
documents are made from ``reverie.analysis`` (one forward pass, already redacted) plus the
final reply of each turn (``ReplyCollector``); every text is redacted again here, before it
reaches the index, so nothing from any source is stored unredacted.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Literal

from reverie.analysis.models import SessionAnalysis
from reverie.anchors.bullets import RETIRED_HEADING
from reverie.memory.store import INDEX_NAME, parse_index, parse_topic, visible_files
from reverie.redact import redact
from reverie.transcripts.model import Message

Kind = Literal["memory", "notes", "session"]
KINDS: tuple[Kind, ...] = ("memory", "notes", "session")

#: longest text kept per document (a reply or a notes section is cut here)
MAX_BODY_CHARS = 4_000
#: replies shorter than this say nothing worth finding ("Done.")
MIN_REPLY_CHARS = 40


@dataclass(frozen=True, slots=True)
class Document:
    """One searchable unit. ``source`` is the file or topic it came from; ``anchor`` where in
    it (a notes section title, a topic file's line)."""

    kind: Kind
    title: str
    body: str
    source: str
    session_id: str | None = None
    agent: str | None = None
    #: when it happened (UTC); None when unknown
    at: datetime | None = None
    label: str = ""
    anchor: str = ""

    @property
    def day(self) -> str | None:
        return self.at.astimezone(UTC).date().isoformat() if self.at is not None else None


def clean(text: str, limit: int = MAX_BODY_CHARS) -> str:
    """Redacted, whitespace-folded per line and cut to ``limit`` characters."""
    redacted, _ = redact(text)
    lines = [" ".join(line.split()) for line in redacted.splitlines()]
    folded = "\n".join(line for line in lines if line)
    return folded if len(folded) <= limit else folded[: limit - 1].rstrip() + "…"


def short_title(text: str) -> str:
    return _short(text)


def _short(text: str, limit: int = 120) -> str:
    """One redacted line of at most ``limit`` characters (titles)."""
    one = " ".join(redact(text)[0].split())
    return one if len(one) <= limit else one[: limit - 1].rstrip() + "…"


# --- sessions ------------------------------------------------------------------------------


class ReplyCollector:
    """The last assistant text of each turn, keyed by the user message that opened the turn.

    ``reverie.analysis`` keeps only the session's final answer; a search also wants the reply
    that closed each request ("how did we fix ..." is answered there). Fed the same messages as
    the analyser, in the same pass; keeps one text per turn (bounded)."""

    def __init__(self, max_turns: int = 400) -> None:
        self.max_turns = max_turns
        self.replies: dict[str, tuple[str, datetime | None]] = {}
        self._turn: str | None = None
        self._pending: tuple[str, datetime | None] | None = None

    def feed(self, message: Message) -> None:
        if message.is_sidechain or message.is_meta:
            return
        if message.role == "user" and message.text and not message.tool_results:
            self._flush()
            self._turn = message.id
        elif message.role == "assistant" and message.text.strip():
            self._pending = (message.text, message.timestamp)

    def finish(self) -> dict[str, tuple[str, datetime | None]]:
        self._flush()
        return self.replies

    def _flush(self) -> None:
        if self._turn is not None and self._pending is not None \
                and len(self._pending[0].strip()) >= MIN_REPLY_CHARS \
                and len(self.replies) < self.max_turns:
            self.replies[self._turn] = self._pending
        self._pending = None


def session_documents(
    analysis: SessionAnalysis,
    replies: dict[str, tuple[str, datetime | None]],
    *,
    source: str,
    title: str | None = None,
) -> list[Document]:
    """The documents of one session (or of the part of it appended since the last update)."""
    session_title = _short(title or analysis.title or next(
        (r.text for r in analysis.requests), "") or f"{analysis.agent} session")
    common = {"session_id": analysis.session_id, "agent": analysis.agent, "source": source}
    fallback_at = analysis.updated_at or analysis.started_at
    docs: list[Document] = []

    def add(label: str, body: str, at: datetime | None, anchor: str = "") -> None:
        text = clean(body)
        if text:
            docs.append(Document(kind="session", title=session_title, body=text, label=label,
                                 at=at or fallback_at, anchor=anchor, **common))

    used_replies: set[str] = set()
    for request in analysis.requests:
        reply = replies.get(request.evidence.message_id)
        body = f"Asked: {request.text}"
        if reply is not None:
            used_replies.add(request.evidence.message_id)
            body += f"\nReply: {reply[0]}"
        add("request", body, request.evidence.timestamp, request.evidence.message_id)
    for correction in analysis.corrections:
        add("correction", f"Correction: {correction.text}", correction.evidence.timestamp)
    for rule in analysis.current_rules:
        add(rule.kind, f"{rule.kind.capitalize()}: {rule.text}", rule.evidence.timestamp)
    for decision in analysis.decisions:
        if decision.superseded_by is None:
            add("decision", f"Decision: {decision.text}"
                + (f" (replaces {decision.replaces})" if decision.replaces else ""),
                decision.evidence.timestamp)
    for error in analysis.errors:
        lines = [f"Error in `{error.check}` ({error.status.replace('_', ' ')}): {error.error}"]
        if error.fix is not None:
            change = error.fix.command or error.fix.path
            lines.append(f"Fixed by a change to {change}"
                         + (f": {error.fix.essence}" if error.fix.essence else ""))
        if error.proved_by:
            lines.append(f"Proved by `{error.proved_by}`")
        add("error", "\n".join(lines), error.failed_at.timestamp)
    working = [c for c in analysis.commands if c.working]
    if working:
        add("commands", "Commands that worked:\n" + "\n".join(
            f"- {c.category}: `{c.working}`" for c in working[:60]), None)
    files = [f for f in analysis.files if f.edits or f.created]
    if files:
        add("files", "Files changed:\n" + "\n".join(
            f"- {f.path}" + (f" ({', '.join(f.symbols[:6])})" if f.symbols else "")
            for f in files[:80]), None)
    for message_id, (text, at) in replies.items():
        if message_id not in used_replies:
            add("reply", f"Reply: {text}", at, message_id)
    final = analysis.end.final_answer
    if final and not any(final.strip() == text.strip() for text, _ in replies.values()):
        add("reply", f"Final reply: {final}", analysis.end.last_request_at.timestamp
            if analysis.end.last_request_at else None)
    return docs


# --- memory --------------------------------------------------------------------------------

_BULLET = re.compile(r"^\s*[-*+]\s+")
_SESSION_MARK = re.compile(r"\bsessions?\s+([0-9a-f]{8})", re.IGNORECASE)


def _day_of(value: object) -> datetime | None:
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    if isinstance(value, date):
        return datetime(value.year, value.month, value.day, tzinfo=UTC)
    if isinstance(value, str):
        try:
            return _day_of(date.fromisoformat(value[:10]))
        except ValueError:
            return None
    return None


#: a topic's retired facts (``reverie.anchors.retire``) follow this heading: history, not memory
_RETIRED = re.compile(r"^#{2,6}\s+Retired\b", re.IGNORECASE)


def _entries(body: str) -> Iterable[tuple[int, str]]:
    """Bullets with their indented continuation lines, and paragraphs, with 0-based lines;
    nothing under a ``## Retired`` heading (a retired fact is never recalled)."""
    lines = body.splitlines()
    index = 0
    while index < len(lines):
        line = lines[index]
        if _RETIRED.match(line):
            return
        if not line.strip() or line.lstrip().startswith("#"):
            index += 1
            continue
        start = index
        chunk = [line]
        index += 1
        bullet = _BULLET.match(line) is not None
        while index < len(lines) and lines[index].strip() and not _BULLET.match(lines[index]) \
                and not lines[index].lstrip().startswith("#") \
                and (not bullet or lines[index].startswith((" ", "\t"))):
            chunk.append(lines[index])
            index += 1
        yield start, "\n".join(chunk)


def memory_documents(memory_dir: Path, name: str, text: str) -> list[Document]:
    """The entries of one memory file (``MEMORY.md`` lines, or a topic file's bullets)."""
    path = memory_dir / name
    if name == INDEX_NAME:
        docs = []
        for entry in parse_index(text).entries:
            body = clean(f"{entry.title}: {entry.hook}" if entry.hook else entry.title)
            docs.append(Document(kind="memory", title=_short(entry.title), body=body, source=name,
                                 label="index", anchor=str(entry.line)))
        return docs
    topic = parse_topic(path, text)
    title = _short(topic.meta.name or Path(name).stem.replace("-", " "))
    at = _day_of(topic.meta.updated)
    sources = list(topic.meta.sources or [])
    body_offset = text.count("\n", 0, text.find(topic.body)) if topic.body in text else 0
    lines = topic.body.splitlines()
    cut = next((n for n, text in enumerate(lines) if RETIRED_HEADING.match(text)), None)
    # facts moved under "## Retired" are history, not memory
    live = "\n".join(lines if cut is None else lines[:cut])
    docs = []
    for line, chunk in _entries(live):
        body = clean(_BULLET.sub("", chunk, count=1))
        if not body:
            continue
        mark = _SESSION_MARK.search(chunk)
        session = mark.group(1) if mark else (sources[0] if len(sources) == 1 else None)
        docs.append(Document(kind="memory", title=title, body=body, source=name,
                             session_id=session, at=at, label=topic.meta.type or "topic",
                             anchor=str(body_offset + line)))
    return docs


# --- notes ---------------------------------------------------------------------------------

_FENCE = re.compile(r"^\s*(```|~~~)")
_HEADER = re.compile(r"^#\s+(?P<title>.+?)\s*$")
_ITALIC = re.compile(r"^\s*_[^_].*_\s*$")
#: sections whose text is bookkeeping rather than something to find
_SKIPPED_SECTIONS = frozenset({"Session Title"})


def notes_sections(text: str) -> list[tuple[str, int, str]]:
    """``(title, 0-based header line, body)`` of each ``# `` section outside code fences,
    without the template's italic description line."""
    lines = text.splitlines()
    sections: list[tuple[str, int, list[str]]] = []
    in_fence = False
    for number, line in enumerate(lines):
        if _FENCE.match(line):
            in_fence = not in_fence
        header = None if in_fence else _HEADER.match(line)
        if header is not None:
            sections.append((header.group("title"), number, []))
        elif sections:
            body = sections[-1][2]
            if not body and _ITALIC.match(line):
                continue
            body.append(line)
    return [(title, line, "\n".join(body).strip()) for title, line, body in sections]


def notes_title(text: str) -> str | None:
    for title, _, body in notes_sections(text):
        if title == "Session Title" and body:
            return _short(body.splitlines()[0])
    return None


def notes_documents(
    text: str, *, session_id: str, agent: str | None, at: datetime | None, source: str,
) -> list[Document]:
    """One document per non-empty notes section."""
    title = notes_title(text) or f"session {session_id[:8]}"
    docs = []
    for section, line, body in notes_sections(text):
        if section in _SKIPPED_SECTIONS or not body:
            continue
        cleaned = clean(body)
        if cleaned:
            docs.append(Document(kind="notes", title=title, body=cleaned, source=source,
                                 session_id=session_id, agent=agent, at=at, label=section,
                                 anchor=str(line)))
    return docs


__all__ = [
    "KINDS", "Document", "Kind", "ReplyCollector", "clean", "memory_documents",
    "notes_documents", "notes_sections", "notes_title", "session_documents", "visible_files",
]
