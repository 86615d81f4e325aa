"""Where an extraction gets its conversation from.

Session memory decides from message digests (``reverie.transcripts.digest``) and reads whole
messages only when an extraction runs, and then only what its writer needs: the LLM writer the
recent part of the main chain within its budget, the offline writer everything. A
``Conversation`` hides where the messages live:

- ``InMemoryConversation``: a list of messages the caller already has (the CLI, tests);
- ``TranscriptConversation``: the language server's view of a live session, digests kept as the
  transcript grows and the messages read from the transcript file by a function it is given
  (the server runs it in its parse worker process, so reading, parsing, rendering and redacting
  never take the GIL its event loop needs, and only the bounded text comes back).

The selection and rendering (``select_recent``) is one pure function, whichever side runs it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from reverie.background import Runner, run_in_background
from reverie.redact import redact
from reverie.session_memory.conversation import render_message
from reverie.session_memory.cursor import (
    ExtractedPoint,
    MessageCursor,
    cursor_at,
    last_turn_has_tool_calls,
    start_after,
)
from reverie.session_memory.rule_based_job import (
    OfflineNotesJob,
    OfflineNotesResult,
    notes_from_messages,
    notes_from_transcript,
)
from reverie.transcripts.digest import MessageDigest, digests, pack_digests
from reverie.transcripts.model import Message, Session
from reverie.transcripts.tokens import context_tokens


@dataclass(frozen=True, slots=True)
class RecentContext:
    """What the LLM notes writer is shown of the conversation, ready to send."""

    #: the recent main chain, rendered, redacted and cut from the front to the budget
    text: str
    #: secrets redacted in ``text``
    redactions: int
    #: it starts at the beginning of the conversation (no earlier extraction point applies)
    whole: bool
    point: ExtractedPoint


def main_chain(messages: Sequence[Message]) -> list[Message]:
    """The conversation without inline sub-agent records (thresholds and cursors use this)."""
    return [m for m in messages if not m.is_sidechain]


def extracted_point(messages: Sequence[Message]) -> ExtractedPoint:
    """Context tokens, the last main-chain cursor and the tool-loop flag (O(conversation))."""
    main = main_chain(messages)
    if not main:
        return ExtractedPoint(context_tokens(main), None, False)
    return ExtractedPoint(context_tokens(main), cursor_at(main, -1), last_turn_has_tool_calls(main))


def select_recent(
    messages: Sequence[Message],
    after: MessageCursor | None,
    *,
    full: bool,
    overlap: int,
    budget_chars: int,
) -> RecentContext:
    """The main chain after ``after`` (with ``overlap`` earlier messages for continuity), or all
    of it when ``full`` or the cursor is unknown, rendered and redacted, its most recent
    ``budget_chars`` kept. Cost bounded by the budget, not by the length of the session."""
    main = main_chain(messages)
    start = 0 if full else start_after(main, after)
    whole = start == 0
    scope = main if whole else main[max(0, start - overlap) :]
    text, redactions = render_recent(scope, budget_chars)
    return RecentContext(text, redactions, whole, extracted_point(main))


def render_recent(messages: Sequence[Message], budget_chars: int) -> tuple[str, int]:
    """The most recent ``budget_chars`` of the rendered conversation, redacted, and how many
    secrets were redacted.

    Rendered and redacted message by message from the end, stopping once the budget is full:
    no regex pass runs over more than one (clipped) message, and what is not shown is neither
    rendered nor scanned. A first line says how much was left out.
    """
    parts: list[str] = []
    size = count = earlier = 0
    for index in range(len(messages) - 1, -1, -1):
        part = render_message(messages[index])
        if part is None:
            continue
        part, found = redact(part)
        count += found
        parts.append(part)
        size += len(part) + 2
        if size > budget_chars:
            earlier = index
            break
    parts.reverse()
    rendered = "\n\n".join(parts)
    if len(rendered) > budget_chars or earlier:
        cut = max(0, len(rendered) - budget_chars)
        rendered = (
            f"[... {earlier} earlier messages and {cut} characters not shown ...]\n"
            + rendered[cut:]
        )
    return rendered, count


def load_session_messages(path: Path, session_id: str) -> tuple[Session, list[Message]]:
    """The whole session from its transcript (one file can hold several: Aider)."""
    from reverie.transcripts.reader import load_transcript

    transcript = load_transcript(path, session_id=session_id)
    return transcript.session, transcript.messages


def load_session_digests(
    path: Path, session_id: str | None
) -> tuple[Session, list[MessageDigest]]:
    """The digests of a whole session: what the server keeps when it starts following one.
    Streamed: only one message at a time is held besides the digests."""
    from reverie.transcripts.reader import TranscriptReader

    reader = TranscriptReader(Path(path), session_id=session_id)
    items = digests(reader)
    return reader.session, items


def load_session_head(path: Path, session_id: str | None, messages: int = 64) -> Session:
    """The session record as its transcript's first ``messages`` messages give it (id, cwd,
    parent): what a forced extraction needs before its writer reads the whole file itself."""
    from reverie.transcripts.reader import TranscriptReader

    reader = TranscriptReader(Path(path), session_id=session_id)
    stream = iter(reader)
    try:
        for count, _message in enumerate(stream, 1):
            if count >= messages and reader.session.cwd:
                break
    finally:
        close = getattr(stream, "close", None)
        if close is not None:
            close()
    return reader.session


def load_packed_digests(path: Path, session_id: str | None) -> tuple[Session, list[bytes]]:
    """``load_session_digests`` packed for the trip out of a worker process
    (``digest.pack_digests``: a long list of tuples would unpickle in one long GIL hold)."""
    session, items = load_session_digests(path, session_id)
    return session, pack_digests(items)


def load_recent(
    path: Path,
    session_id: str,
    after: MessageCursor | None,
    full: bool,
    overlap: int,
    budget_chars: int,
) -> RecentContext:
    """``select_recent`` over the transcript as it is now on disk (in the parse worker: only
    the rendered, bounded text comes back)."""
    _session, messages = load_session_messages(path, session_id)
    return select_recent(messages, after, full=full, overlap=overlap, budget_chars=budget_chars)


class Conversation(Protocol):
    """A session's conversation as session memory sees it."""

    def digests(self) -> Sequence[MessageDigest]:
        """One digest per message, oldest first (sub-agent records included)."""
        ...

    def snapshot(self) -> Conversation:
        """This conversation as it is now (a request keeps it until its extraction runs)."""
        ...

    async def messages(self) -> list[Message]:
        """The whole conversation (sub-agent records included)."""
        ...

    async def recent(
        self, after: MessageCursor | None, *, full: bool, overlap: int, budget_chars: int
    ) -> RecentContext:
        """``select_recent`` of the whole conversation."""
        ...

    async def offline_notes(self, job: OfflineNotesJob) -> OfflineNotesResult:
        """The offline writer's whole run over the conversation (``offline_job``)."""
        ...


@dataclass(slots=True)
class InMemoryConversation:
    """Messages the caller holds; the selection runs in a background-priority thread."""

    items: Sequence[Message]
    _digests: list[MessageDigest] | None = field(default=None, repr=False)

    def digests(self) -> Sequence[MessageDigest]:
        if self._digests is None:
            self._digests = digests(self.items)
        return self._digests

    def snapshot(self) -> InMemoryConversation:
        return InMemoryConversation(list(self.items), self._digests)

    async def messages(self) -> list[Message]:
        return list(self.items)

    async def recent(
        self, after: MessageCursor | None, *, full: bool, overlap: int, budget_chars: int
    ) -> RecentContext:
        def select() -> RecentContext:
            return select_recent(
                self.items, after, full=full, overlap=overlap, budget_chars=budget_chars
            )

        return await run_in_background(select)

    async def offline_notes(self, job: OfflineNotesJob) -> OfflineNotesResult:
        return await run_in_background(notes_from_messages, job, list(self.items))


@dataclass(slots=True)
class TranscriptConversation:
    """A live session: digests kept by the caller (one list, extended in place as the
    transcript grows), messages read from ``path`` through ``run`` when needed, and the offline
    writer's whole job run through ``job_run`` (default: ``run``)."""

    path: Path
    session_id: str
    items: list[MessageDigest]
    run: Runner
    #: the language server gives its offline-job worker process: a long offline extraction
    #: must not hold up the reads other sessions wait for
    job_run: Runner | None = None

    def digests(self) -> Sequence[MessageDigest]:
        return self.items

    def snapshot(self) -> TranscriptConversation:
        # the transcript only grows: an extraction reads it as it is when it runs
        return self

    async def messages(self) -> list[Message]:
        _session, messages = await self.run(load_session_messages, self.path, self.session_id)
        return list(messages)

    async def recent(
        self, after: MessageCursor | None, *, full: bool, overlap: int, budget_chars: int
    ) -> RecentContext:
        result: RecentContext = await self.run(
            load_recent, self.path, self.session_id, after, full, overlap, budget_chars
        )
        return result

    async def offline_notes(self, job: OfflineNotesJob) -> OfflineNotesResult:
        run = self.job_run or self.run
        result: OfflineNotesResult = await run(
            notes_from_transcript, job, self.path, self.session_id
        )
        return result
