"""The offline engine: deep sleep and REM without a model, deterministic and still useful.

Deep sleep analyses a session in one streaming pass (``reverie.analysis``) and derives:

- a summary for the journal: what was asked, the notes' current state, the activity, files
  changed, errors fixed (and how) or still failing, and the session's final answer;
- candidate facts (``reverie.curation``): standing rules, decisions and renames, the commands
  that build / test / run the project, errors with the change that fixed them.

REM merges the candidates into the memory the way the offline dream does: topic files by
subject, a restatement adds evidence, a newer contradicting statement replaces the older one, a
person's lines are never dropped; unchanged entries keep their recorded date and the oldest
entries beyond the cap are dropped.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from datetime import date as Date

from reverie.analysis.models import SessionAnalysis
from reverie.curation.candidates import session_facts
from reverie.curation.facts import Fact, FactBook
from reverie.curation.sessions import notes_facts
from reverie.curation.topics import curate, provenance, read_doc, render_fact
from reverie.memory.store import TopicMeta
from reverie.sleep.models import (
    ConversationSummary,
    EntryType,
    MemoryCandidate,
    MemoryEntry,
    normalise_key,
)

_NOTES_HEADER = re.compile(r"^#\s+(.+?)\s*$")
_ITALIC_LINE = re.compile(r"^\s*[_*].*[_*]\s*$")
MAX_FIXES = 5
MAX_FILES = 12
#: a topic body REM may store (``MemoryEntry.content`` allows 8,000 characters)
MAX_CONTENT = 7_800


def notes_sections(notes: str) -> dict[str, str]:
    """The session notes' sections (header -> body), without the italic description lines."""
    sections: dict[str, list[str]] = {}
    current: list[str] | None = None
    just_opened = False
    for line in notes.splitlines():
        match = _NOTES_HEADER.match(line)
        if match:
            current = sections.setdefault(match.group(1).strip(), [])
            just_opened = True
            continue
        if current is None:
            continue
        if just_opened and _ITALIC_LINE.match(line):
            just_opened = False
            continue
        if line.strip():
            just_opened = False
        current.append(line)
    return {name: "\n".join(lines).strip() for name, lines in sections.items()}


def _one_line(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def session_title(analysis: SessionAnalysis, sections: dict[str, str]) -> str:
    noted = sections.get("Session Title", "").strip()
    if noted:
        return _one_line(noted.splitlines()[0].lstrip("#-* "), 80)
    if analysis.title:
        return _one_line(analysis.title, 80)
    return f"Session {analysis.session_id[:8]}"


def candidate(fact: Fact) -> MemoryCandidate:
    """A fact as the journal lists it (and as a model would have proposed it)."""
    body = render_fact(fact)[0].removeprefix("- ")
    body = body.removesuffix(provenance(fact)).rstrip()
    key = normalise_key(fact.slot.replace(":", "-")) or "fact"
    return MemoryCandidate(key=key, value=body)


def summarise_analysis(analysis: SessionAnalysis, notes: str | None,
                       anchor: datetime | None = None
                       ) -> tuple[str, ConversationSummary, list[Fact]]:
    """(title, journal summary + candidates, candidate facts) for one analysed session."""
    sections = notes_sections(notes) if notes else {}
    title = session_title(analysis, sections)
    counts = analysis.counts
    lines: list[str] = []
    if analysis.title:
        lines.append(f"Asked: {_one_line(analysis.title, 240)}")
    state = sections.get("Current State", "")
    if state:
        lines.append(f"State (from the session notes): {_one_line(state, 400)}")
    runs = sum(c.runs for c in analysis.commands)
    failed = sum(c.failures for c in analysis.commands)
    lines.append(
        f"Activity: {counts.requests} request(s), {counts.tool_calls} tool call(s), "
        f"{runs} project command(s) of which {failed} failed."
    )
    changed = [f.path for f in analysis.files if f.edits or f.created]
    if changed:
        shown = ", ".join(f"`{p}`" for p in changed[:MAX_FILES])
        more = f" and {len(changed) - MAX_FILES} more" if len(changed) > MAX_FILES else ""
        lines.append(f"Files changed ({len(changed)}): {shown}{more}.")
    fixed = [e for e in analysis.errors if e.status == "fixed" and e.fix is not None]
    for error in fixed[:MAX_FIXES]:
        assert error.fix is not None
        what = f"`{_one_line(error.check, 100)}` failed ({_one_line(error.error, 120)})"
        how = f"by running `{_one_line(error.fix.command, 120)}`" if error.fix.command \
            else f"in `{error.fix.path}`"
        lines.append(f"Fixed: {what}; fixed {how}.")
    for error in analysis.still_failing[:MAX_FIXES]:
        lines.append(f"Still failing: `{_one_line(error.check, 100)}` "
                     f"({_one_line(error.error, 120)}).")
    answer = analysis.end.final_answer or analysis.end.last_reply
    if answer:
        lines.append(f"Last reply: {_one_line(answer, 300)}")
    when = anchor or analysis.updated_at or datetime.now(UTC)
    facts = session_facts(analysis, when)
    if notes:
        facts.extend(notes_facts(notes, analysis.session_id, when))
    summary = ConversationSummary(
        summary="\n".join(f"- {line}" for line in lines) or "No activity recorded.",
        memory_candidates=[candidate(f) for f in facts],
    )
    return title, summary, facts


def summarise_offline(transcript: object, notes: str | None) -> tuple[str, ConversationSummary]:
    """(title, summary + candidates) for one loaded transcript (tests and callers holding one)."""
    from reverie.analysis.analyser import SessionAnalyser
    from reverie.transcripts.model import Transcript

    assert isinstance(transcript, Transcript)
    analyser = SessionAnalyser()
    for message in transcript.messages:
        analyser.feed(message)
    title, summary, _facts = summarise_analysis(analyser.result(transcript.session), notes)
    return title, summary


def _entry_type(raw: str | None) -> EntryType:
    return raw if raw in ("user", "feedback", "project", "reference") else "project"  # type: ignore[return-value]


def consolidate_facts(
    existing: Sequence[MemoryEntry],
    facts: Iterable[Fact],
    today: Date,
    max_entries: int,
) -> list[MemoryEntry]:
    """REM without a model: merge candidate facts into the entries (one per topic file)."""
    docs = {}
    for entry in existing:
        meta = TopicMeta(name=entry.title, description=entry.description, type=entry.type,
                         updated=entry.recorded.isoformat())
        docs[f"{entry.key}.md"] = read_doc(f"{entry.key}.md", meta, entry.content)
    book = FactBook()
    for fact in facts:
        book.add(fact)
    curated = curate(docs, book, today)
    entries: dict[str, MemoryEntry] = {e.key: e for e in existing}
    for name, (meta, body) in curated.topics.items():
        key = normalise_key(name.removesuffix(".md"))
        if not key:
            continue
        hook = curated.entries[name].hook
        entries[key] = MemoryEntry(
            key=key, title=(meta.name or key)[:120], description=(hook or meta.description
                                                                   or "")[:200],
            type=_entry_type(meta.type), content=_fit(body) or (meta.name or key),
            recorded=today,
        )
    for name in curated.removed:
        entries.pop(normalise_key(name.removesuffix(".md")), None)
    merged = list(entries.values())
    if len(merged) > max_entries:
        order = sorted(range(len(merged)), key=lambda i: (merged[i].recorded, i), reverse=True)
        kept = sorted(order[:max_entries])
        merged = [merged[i] for i in kept]
    return merged


def _fit(body: str) -> str:
    """A topic body within what an entry holds: whole lines, the last (lowest-ranked) go."""
    if len(body) <= MAX_CONTENT:
        return body
    out: list[str] = []
    used = 0
    for line in body.splitlines():
        if used + len(line) + 1 > MAX_CONTENT:
            break
        out.append(line)
        used += len(line) + 1
    return "\n".join(out)
