"""The deterministic offline consolidation engine (the default, no API key needed).

It curates rather than logs: each session is analysed on its own (one streaming pass, then the
transcript is dropped) into candidate facts — standing rules, decisions and renames, the
commands that build / test / run the project, errors with the change that fixed them — and only
those candidates are kept. They are merged into the memory's topic files, organised by subject
("Package manager and scripts", "Database and migrations"...): a restatement adds evidence to
the fact already there, a newer contradicting statement replaces the older one (kept as
"formerly ..., replaced on DATE"), a line a person wrote is never dropped. ``MEMORY.md`` gets
one line per topic, within the index limits.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from datetime import UTC, date, datetime
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from reverie.analysis.analyser import SessionAnalyser
from reverie.analysis.models import SessionAnalysis
from reverie.anchors.confirm import Confirmations
from reverie.curation.candidates import session_facts, statement_facts
from reverie.curation.facts import FactBook
from reverie.curation.sessions import SessionSource, analyse_source, notes_facts
from reverie.curation.topics import Curated, TopicDoc, curate, read_doc
from reverie.dream.daily_log import LogEntry
from reverie.fsutil import atomic_write_text
from reverie.memory.store import (
    INDEX_NAME,
    IndexEntry,
    parse_index,
    read_topic,
    render_index,
    render_topic,
    topic_names,
)
from reverie.redact import redact
from reverie.transcripts.model import Transcript

logger = logging.getLogger(__name__)

__all__ = ["OfflineResult", "SessionInput", "SessionSource", "consolidate_offline",
           "consolidate_sources"]


class SessionInput(BaseModel):
    """One session already in memory (tests, callers holding a transcript)."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    session_id: str
    anchor: datetime
    transcript: Transcript | None = None
    notes: str | None = None
    cwd: str | None = None


class OfflineResult(BaseModel):
    files_touched: list[str] = Field(default_factory=list)
    facts_added: int = 0
    facts_replaced: int = 0
    sessions_read: int = 0
    sessions_skipped: int = 0
    redactions: int = 0
    summary: str = ""
    #: what the sessions confirm (``anchors.confirm``): commands that succeeded and files
    #: edited, each with its latest day; a dream refreshes the facts that depend on them
    confirmed_commands: dict[str, date] = Field(default_factory=dict)
    confirmed_paths: dict[str, date] = Field(default_factory=dict)


def analyse_input(session: SessionInput) -> SessionAnalysis | None:
    if session.transcript is None:
        return None
    analyser = SessionAnalyser()
    for message in session.transcript.messages:
        analyser.feed(message)
    record = session.transcript.session.model_copy(
        update={"id": session.session_id, "cwd": session.cwd or session.transcript.session.cwd})
    return analyser.result(record)


def read_docs(memory_dir: Path) -> tuple[dict[str, TopicDoc], set[str]]:
    """The memory's top-level topic files as fact lists, and the names of broken ones (a file
    the user broke is theirs to fix: never overwritten)."""
    docs: dict[str, TopicDoc] = {}
    broken: set[str] = set()
    for name in topic_names(memory_dir):
        try:
            topic = read_topic(memory_dir / name)
        except OSError as exc:
            logger.warning("skipping unreadable topic %s: %s", name, exc)
            broken.add(name)
            continue
        if topic.error:
            broken.add(name)
            continue
        docs[name] = read_doc(name, topic.meta, topic.body)
    return docs, broken


class _Gatherer:
    """Candidate facts of the sessions read so far (the transcripts themselves are not kept)."""

    def __init__(self) -> None:
        self.book = FactBook()
        self.read = 0
        self.skipped = 0
        self.redactions = 0
        self.sessions: list[str] = []
        self.confirmations = Confirmations()

    def add(self, analysis: SessionAnalysis | None, anchor: datetime,
            notes: str | None = None) -> None:
        if analysis is None:
            self.skipped += 1
            return
        self.read += 1
        self.redactions += analysis.counts.redactions
        day = anchor.date()
        for command in analysis.commands:
            if command.working and command.last_ok:
                self.confirmations.add_command(command.working, day)
        for activity in analysis.files:
            if activity.edits or activity.created:
                self.confirmations.add_path(activity.path, day)
        for fact in session_facts(analysis, anchor):
            self.book.add(fact)
        if notes:
            for fact in notes_facts(notes, analysis.session_id, anchor):
                self.book.add(fact)


def _anchor(analysis: SessionAnalysis | None, fallback: datetime) -> datetime:
    if analysis is not None and analysis.updated_at is not None:
        stamp = analysis.updated_at
        return stamp if stamp.tzinfo else stamp.replace(tzinfo=UTC)
    return fallback if fallback.tzinfo else fallback.replace(tzinfo=UTC)


def consolidate_sources(
    memory_dir: Path,
    sessions: Sequence[SessionSource],
    extra: str = "",
    log_entries: Sequence[LogEntry] = (),
    today: date | None = None,
) -> OfflineResult:
    """Read ``sessions`` (oldest first) one at a time and curate memory at ``memory_dir``
    (a staging copy). An unreadable transcript is a counted skip."""
    from reverie.transcripts.reader import TranscriptError

    gatherer = _Gatherer()
    for source in sessions:
        try:
            analysis: SessionAnalysis | None = analyse_source(source)
        except (TranscriptError, OSError, ValueError) as exc:
            logger.warning("skipping unreadable transcript %s: %s", source.path, exc)
            analysis = None
        notes = None
        if source.notes_path is not None:
            try:
                notes = source.notes_path.read_text("utf-8", errors="replace")
            except OSError:
                notes = None
        gatherer.add(analysis, _anchor(analysis, source.updated_at), notes)
    return _finish(memory_dir, gatherer, extra, log_entries, today, len(sessions))


def consolidate_offline(
    memory_dir: Path,
    sessions: Iterable[SessionInput],
    *,
    extra: str = "",
    log_entries: Sequence[LogEntry] = (),
    today: date | None = None,
) -> OfflineResult:
    """Curate ``sessions`` (already loaded) into the memory dir at ``memory_dir``."""
    gatherer = _Gatherer()
    count = 0
    for session in sorted(sessions, key=lambda s: s.anchor):
        count += 1
        analysis = analyse_input(session)
        gatherer.add(analysis, _anchor(analysis, session.anchor), session.notes)
    return _finish(memory_dir, gatherer, extra, log_entries, today, count)


def _finish(memory_dir: Path, gatherer: _Gatherer, extra: str,
            log_entries: Sequence[LogEntry], today: date | None, count: int) -> OfflineResult:
    day = today or datetime.now(UTC).date()
    book = gatherer.book
    for entry in log_entries:
        when = datetime.fromisoformat(entry.day).replace(tzinfo=UTC)
        for fact in statement_facts(entry.text, source="log", when=when, note=True):
            book.add(fact)
    if extra.strip():
        clean, count_extra = redact(extra)
        gatherer.redactions += count_extra
        now = datetime.combine(day, datetime.min.time(), tzinfo=UTC)
        for fact in statement_facts(clean, source="user", when=now, note=False):
            book.add(fact)
    result = OfflineResult(sessions_read=gatherer.read, sessions_skipped=gatherer.skipped,
                           redactions=gatherer.redactions,
                           confirmed_commands=gatherer.confirmations.commands,
                           confirmed_paths=gatherer.confirmations.paths)
    if not len(book):
        result.summary = "nothing new to consolidate"
        return result
    docs, broken = read_docs(memory_dir)
    curated = curate(docs, book, day)
    touched = write_topics(memory_dir, curated, broken)
    if _update_index(memory_dir, curated, touched):
        touched.append(INDEX_NAME)
    result.files_touched = touched
    result.facts_added = curated.facts_added
    result.facts_replaced = curated.facts_replaced
    topics = len([t for t in touched if t != INDEX_NAME])
    if touched:
        replaced = f", {curated.facts_replaced} replaced" if curated.facts_replaced else ""
        result.summary = (f"offline consolidation of {count} sessions: "
                          f"{curated.facts_added} new facts{replaced} in {topics} topic files")
    else:
        result.summary = "nothing new to consolidate"
    return result


def write_topics(memory_dir: Path, curated: Curated, broken: set[str]) -> list[str]:
    touched: list[str] = []
    for name in curated.removed:
        if name not in broken:
            (memory_dir / name).unlink(missing_ok=True)
            touched.append(name)
    for name, (meta, body) in curated.topics.items():
        if name in broken:
            logger.warning("not updating %s: its front matter is broken", name)
            continue
        atomic_write_text(memory_dir / name, render_topic(meta, body))
        touched.append(name)
    return touched


def _update_index(memory_dir: Path, curated: Curated, touched: Sequence[str]) -> bool:
    """Index lines for the topics this run wrote: a line already there gets its new hook when
    Reverie owns the topic; a missing one is added after the last entry."""
    from reverie.curation.subjects import area

    path = memory_dir / INDEX_NAME
    text = path.read_text("utf-8", errors="replace") if path.is_file() else ""
    parsed = parse_index(text)
    wanted = {name: curated.entries[name] for name in touched if name in curated.entries}
    removed = {name for name in curated.removed if name in touched}
    if not wanted and not removed:
        return False
    lines = list(parsed.lines)
    listed: set[str] = set()
    gone: set[int] = set()
    for entry in parsed.entries:
        name = entry.target_path
        listed.add(name)
        if name in removed:
            gone.add(entry.line)
            continue
        new = wanted.get(name)
        if new is not None and area(name.removesuffix(".md")) is not None:
            fresh = IndexEntry(title=entry.title, target=entry.target, hook=new.hook)
            if len(fresh.render()) > len(new.render()):
                fresh = new
            lines[entry.line] = fresh.render()
    missing = [entry for name, entry in wanted.items() if name not in listed]
    if gone:
        kept = [line for n, line in enumerate(lines) if n not in gone]
        parsed = parse_index("\n".join(kept))
        lines = parsed.lines
    if not text.strip():
        new_text = render_index(missing)
    else:
        insert_at = (parsed.entries[-1].line + 1) if parsed.entries else len(lines)
        added = [e.render() for e in missing]
        if not parsed.entries and lines and lines[-1].strip():
            added = ["", *added]
        lines = [*lines[:insert_at], *added, *lines[insert_at:]]
        new_text = "\n".join(lines).rstrip("\n") + "\n"
    if new_text == text:
        return False
    atomic_write_text(path, new_text)
    return True
