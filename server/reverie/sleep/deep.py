"""Deep sleep: one summary (+ memory candidates) per chosen session.

Offline: ``reverie.sleep.rule_based`` derives them from the transcript and notes. With a model: one
structured request per session, all sent as one provider batch (``reverie.llm.batch``), polled
with exponential backoff; items that fail, come back malformed or are still pending at the
timeout are counted as failures and the rest are kept.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from reverie.curation.facts import Fact
from reverie.llm.batch import BatchRequest, run_batch
from reverie.llm.structured import parse_reply
from reverie.llm.types import ChatMessage, ModelClient
from reverie.sleep.models import ConversationSummary, MemoryCandidate, MemoryEntry, SessionDigest
from reverie.sleep.prompts import SUMMARY_SYSTEM, summary_request_text
from reverie.sleep.redaction import redact_text
from reverie.sleep.render import render_session
from reverie.sleep.rule_based import summarise_analysis
from reverie.transcripts.discovery import SessionRef
from reverie.transcripts.model import Transcript
from reverie.transcripts.reader import TranscriptError, holds_many_sessions, load_transcript

logger = logging.getLogger(__name__)

SUMMARY_MAX_TOKENS = 4096


@dataclass
class SessionInput:
    ref: SessionRef
    notes_path: Path


@dataclass
class DeepResult:
    digests: list[SessionDigest] = field(default_factory=list)
    candidates: list[MemoryCandidate] = field(default_factory=list)
    #: the offline engine's candidate facts, with their evidence (what its REM merges)
    facts: list[Fact] = field(default_factory=list)
    #: with a model: the same facts as brief lines (``curation.brief``) for the REM request,
    #: so the model sees what the analysis found beside what the summaries proposed
    fact_lines: list[str] = field(default_factory=list)

    @property
    def ok(self) -> int:
        return sum(1 for d in self.digests if d.error is None)

    @property
    def failed(self) -> int:
        return sum(1 for d in self.digests if d.error is not None)

    def add(self, digest: SessionDigest) -> None:
        self.digests.append(digest)
        self.candidates.extend(digest.candidates)

    def candidate_sessions(self) -> list[str]:
        """The session each of ``candidates`` came from, in the same order (its evidence)."""
        return [d.session_id for d in self.digests for _ in d.candidates]


def read_notes(path: Path) -> str | None:
    try:
        return path.read_text("utf-8", errors="replace")
    except OSError:
        return None


def _load(item: SessionInput) -> tuple[Transcript | None, str | None, str | None]:
    """(transcript, notes, error). A transcript that cannot be read is a counted failure."""
    ref = item.ref
    try:
        # an Aider history holds many runs, Kilo's database many sessions: pick this one
        many = holds_many_sessions(ref.agent, ref.path)
        transcript = load_transcript(ref.path, ref.session_id if many else None, ref.agent)
    except TranscriptError as exc:
        return None, None, str(exc)
    return transcript, read_notes(item.notes_path), None


def _failed_digest(item: SessionInput, error: str) -> SessionDigest:
    return SessionDigest(session_id=item.ref.session_id, agent=str(item.ref.agent),
                         title=f"Session {item.ref.session_id[:8]}", summary="", error=error)


def _redacted(summary: ConversationSummary) -> ConversationSummary:
    return ConversationSummary(
        summary=redact_text(summary.summary),
        memory_candidates=[
            MemoryCandidate(key=c.key, value=redact_text(c.value))
            for c in summary.memory_candidates
        ],
    )


def _fact_lines(loaded: Sequence[tuple[SessionInput, Transcript | None, str | None,
                                        str | None]]) -> list[str]:
    """Reverie's own candidate facts of the reviewed sessions, one brief line each, from the
    transcripts already loaded for the summaries (blocking)."""
    from reverie.curation.brief import analysis_lines
    from reverie.curation.sessions import analyse_transcript

    readable = sorted(((item, t) for item, t, _notes, _error in loaded if t is not None),
                      key=lambda pair: pair[0].ref.updated_at)
    return analysis_lines(analyse_transcript(transcript, item.ref.session_id, item.ref.cwd)
                          for item, transcript in readable)


def deep_sleep_offline(inputs: Sequence[SessionInput]) -> DeepResult:
    """Summaries and candidate facts without a model, one session at a time: each transcript
    is streamed through the analysis and dropped (blocking: call via a thread)."""
    from reverie.curation.sessions import SessionSource, analyse_source

    result = DeepResult()
    for item in inputs:
        ref = item.ref
        source = SessionSource(session_id=ref.session_id, path=ref.path, cwd=ref.cwd,
                               updated_at=ref.updated_at, agent=ref.agent)
        try:
            analysis = analyse_source(source)
        except (TranscriptError, OSError, ValueError) as exc:
            result.add(_failed_digest(item, str(exc) or "unreadable transcript"))
            continue
        anchor = analysis.updated_at or ref.updated_at
        title, summary, facts = summarise_analysis(analysis, read_notes(item.notes_path),
                                                   anchor)
        summary = _redacted(summary)
        result.add(SessionDigest(
            session_id=ref.session_id, agent=analysis.agent,
            title=redact_text(title), summary=summary.summary,
            candidates=summary.memory_candidates,
        ))
        result.facts.extend(facts)
    return result


async def deep_sleep_with_model(
    client: ModelClient,
    inputs: Sequence[SessionInput],
    memory: Sequence[MemoryEntry],
    *,
    poll_initial: float,
    poll_max: float,
    timeout: float,
    sleep: Callable[[float], Awaitable[None]],
    clock: Callable[[], float],
    max_tokens: int = SUMMARY_MAX_TOKENS,
    sync_timeout: float | None = None,
    instructions: str | None = None,
) -> DeepResult:
    """One batch of structured summary requests; partial results kept, failures counted."""
    import asyncio

    loaded = await asyncio.to_thread(lambda: [(item, *_load(item)) for item in inputs])
    fact_lines = await asyncio.to_thread(_fact_lines, loaded)
    requests: list[BatchRequest] = []
    by_id: dict[str, tuple[SessionInput, Transcript]] = {}
    failures: dict[str, str] = {}
    for index, (item, transcript, notes, error) in enumerate(loaded):
        if transcript is None:
            failures[item.ref.session_id] = error or "unreadable transcript"
            continue
        custom_id = f"session-{index}"
        by_id[custom_id] = (item, transcript)
        text = summary_request_text(memory, render_session(transcript, notes), instructions)
        requests.append(BatchRequest(
            custom_id=custom_id,
            messages=[ChatMessage(role="user", content=redact_text(text))],
            system=SUMMARY_SYSTEM,
            output_schema=ConversationSummary,
            max_tokens=max_tokens,
        ))
    results = {}
    if requests:
        outcome = await run_batch(
            client, requests, poll_initial=poll_initial, poll_max=poll_max, timeout=timeout,
            sleep=sleep, clock=clock, sync_timeout=sync_timeout,
        )
        results = {r.custom_id: r for r in outcome}
    deep = DeepResult(fact_lines=fact_lines)
    for item, transcript, _notes, _error in loaded:
        if transcript is None:
            deep.add(_failed_digest(item, failures[item.ref.session_id]))
    for custom_id, (item, transcript) in by_id.items():
        title = transcript.session.title or f"Session {item.ref.session_id[:8]}"
        got = results.get(custom_id)
        if got is None:
            deep.add(_failed_digest(item, "no result before the batch timed out"))
            continue
        if not got.ok:
            deep.add(_failed_digest(item, got.error or "the request failed"))
            continue
        try:
            parsed = got.parsed if isinstance(got.parsed, ConversationSummary) else parse_reply(
                got.text, ConversationSummary)
        except ValueError as exc:
            deep.add(_failed_digest(item, f"malformed summary: {str(exc).splitlines()[0]}"))
            continue
        assert isinstance(parsed, ConversationSummary)
        summary = _redacted(parsed)
        deep.add(SessionDigest(
            session_id=item.ref.session_id, agent=transcript.session.agent,
            title=redact_text(title)[:80], summary=summary.summary,
            candidates=summary.memory_candidates,
        ))
    return deep
