"""What a model consolidating memory is told up front: Reverie's own reading of the sessions.

A model that explores transcripts with tools finds the durable facts slowly and unevenly; the
offline engine already extracts them in one cheap pass (``analysis`` + ``candidates``). The
model's brief therefore carries those candidate facts, each with its evidence (session and
date), the rules every memory write follows (supersession, what never to keep), and the
current index. The model still decides what to write; Reverie still validates what it wrote.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator, Sequence

from reverie.analysis.models import SessionAnalysis
from reverie.curation.candidates import session_facts
from reverie.curation.sessions import SessionSource, analyse_source
from reverie.redact import redact
from reverie.transcripts.reader import TranscriptError

logger = logging.getLogger(__name__)

#: candidate lines a brief carries at most (newest kept), and characters of each
MAX_CANDIDATES = 80
MAX_CANDIDATE_CHARS = 400

RULES = """\
- Supersession: a newer statement about the same subject replaces the older one. Rewrite the \
older fact where it stands; it may survive only as "(formerly: X; replaced on YYYY-MM-DD)". \
Never present a reversed decision as current.
- Never keep: exploration commands (ls, cat, find, head, tail, sed -n, grep, pwd, wc), temporary \
paths, one-off task requests ("fix the bug in X and make the tests pass"), the agent's own tool \
mistakes ("File has not been read yet", "String to replace not found", InputValidationError), \
or a failure that a later run fixed, stated as still failing.
- Keep: standing rules and preferences (as plain statements, not "the user said"), the commands \
that build, test, run, lint, deploy or migrate in the form that worked, errors with the change \
that fixed them and the check that proved it, renames and decisions with their date.
- Lines a person wrote in a topic file stay; change them only to mark them superseded."""


def candidate_lines(sources: Sequence[SessionSource], *,
                    limit: int = MAX_CANDIDATES) -> list[str]:
    """The durable facts Reverie reads in ``sources`` (oldest session first), one line each
    with its evidence; unreadable sessions are skipped. Blocking: call from a thread."""
    return analysis_lines(_analyses(sorted(sources, key=lambda s: s.updated_at)), limit=limit)


def _analyses(sources: Iterable[SessionSource]) -> Iterator[SessionAnalysis]:
    for source in sources:  # one at a time: only the lines are kept
        try:
            yield analyse_source(source)
        except (TranscriptError, OSError) as exc:
            logger.info("candidate facts: skipped %s: %s", source.path, exc)


def analysis_lines(analyses: Iterable[SessionAnalysis], *,
                   limit: int = MAX_CANDIDATES) -> list[str]:
    """``candidate_lines`` of analyses already made (oldest first)."""
    lines: list[str] = []
    for analysis in analyses:
        for fact in session_facts(analysis):
            text, _ = redact(" ".join(fact.text.split()))
            if len(text) > MAX_CANDIDATE_CHARS:
                text = text[:MAX_CANDIDATE_CHARS - 1] + "…"
            lines.append(f"- ({fact.kind}) {text} [session {analysis.session_id}, "
                         f"{fact.day.isoformat()}]")
    return lines[-limit:]


def candidates_section(lines: Sequence[str]) -> str:
    body = "\n".join(lines) if lines else "(none found: the sessions may hold nothing durable)"
    return ("## Candidate facts (Reverie's own reading of these sessions, with evidence)\n\n"
            "Check each against the transcript or notes when in doubt; write the ones that are "
            "durable and not already in memory, merged with what is there.\n\n" + body)


def rules_section() -> str:
    return "## Rules for every memory line\n\n" + RULES
