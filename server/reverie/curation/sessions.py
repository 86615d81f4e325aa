"""Reading one session for memory: a streaming pass into its analysis (the transcript is not
kept), plus the standing rules its notes file records."""

from __future__ import annotations

import re
from datetime import datetime
from pathlib import Path

from pydantic import BaseModel

from reverie.analysis.analyser import SessionAnalyser
from reverie.analysis.models import SessionAnalysis
from reverie.curation.candidates import statement_facts
from reverie.curation.facts import Fact
from reverie.transcripts.model import Session, Transcript

_HEADER = re.compile(r"^#\s+(.+?)\s*$")
#: notes sections whose bullets may state standing rules
_RULE_SECTIONS = ("Learnings",)


class SessionSource(BaseModel):
    """What a consolidation knows of a session before reading it."""

    session_id: str
    path: Path
    notes_path: Path | None = None
    cwd: str | None = None
    updated_at: datetime
    agent: str | None = None


def analyse_source(source: SessionSource) -> SessionAnalysis:
    """One streaming pass over a session's transcript; raises ``TranscriptError``/``OSError``."""
    from reverie.transcripts.reader import TranscriptReader

    # an Aider history holds many runs: the id picks this one (other formats hold one session)
    reader = TranscriptReader(source.path, session_id=source.session_id)
    analyser = SessionAnalyser()
    for message in reader:
        analyser.feed(message)
    return _result(analyser, reader.session, source.session_id, source.cwd)


def analyse_transcript(transcript: Transcript, session_id: str,
                       cwd: str | None = None) -> SessionAnalysis:
    """The same analysis of a transcript already in memory (no second read of the file)."""
    analyser = SessionAnalyser()
    for message in transcript.messages:
        analyser.feed(message)
    return _result(analyser, transcript.session, session_id, cwd)


def _result(analyser: SessionAnalyser, session: Session, session_id: str,
            cwd: str | None) -> SessionAnalysis:
    update: dict[str, object] = {"id": session_id}
    if cwd and not session.cwd:
        update["cwd"] = cwd
    return analyser.result(session.model_copy(update=update))


def notes_facts(notes: str, session_id: str, anchor: datetime) -> list[Fact]:
    """Standing rules stated in a notes file's "Learnings" (a model may have written them)."""
    facts: list[Fact] = []
    current: str | None = None
    for line in notes.splitlines():
        header = _HEADER.match(line)
        if header:
            current = header.group(1)
            continue
        stripped = line.strip()
        if current in _RULE_SECTIONS and stripped.startswith(("- ", "* ")):
            for fact in statement_facts(stripped[2:], source=session_id, when=anchor,
                                        note=False):
                fact.sources = [session_id]
                facts.append(fact)
    return facts
