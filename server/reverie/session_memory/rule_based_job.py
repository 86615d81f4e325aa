"""The offline notes writer as one job that can run in another process.

The offline writer reads the whole conversation. In the language server that took the server's
interpreter for as long as the read and the build lasted (seconds on a long session), and the
whole parsed conversation crossed from the reading process into the server's. Here the job is a
module-level function over picklable inputs: the server runs ``notes_from_transcript`` in a
worker process, which streams the transcript, builds the notes and sends back only the new text,
its generated lines and where the conversation ended (``ExtractedPoint``). The CLI and tests run
the same functions in a thread.

What the notes say is ``session_memory.rule_based.build_notes``; this module only feeds it and
works out the ``ExtractedPoint`` in the same single pass (``PointFold``).
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from reverie.session_memory.cursor import ExtractedPoint, MessageCursor
from reverie.session_memory.rule_based import OfflineNotes, build_notes
from reverie.session_memory.template import NotesTemplate
from reverie.transcripts.digest import MessageDigest, digest
from reverie.transcripts.model import Message, Session


@dataclass(frozen=True, slots=True)
class OfflineNotesJob:
    """Everything the offline writer needs besides the conversation (all picklable)."""

    session: Session
    workspace: Path
    current_notes: str
    template: NotesTemplate
    #: the lines the writer generated last time, per section (``ExtractionState.generated``)
    previous: dict[str, list[str]] | None


@dataclass(frozen=True, slots=True)
class OfflineNotesResult:
    notes: OfflineNotes
    point: ExtractedPoint


class PointFold:
    """``source.extracted_point`` computed one message at a time, in constant memory apart from
    one counter per distinct fingerprint (a cursor counts earlier equal messages)."""

    __slots__ = (
        "_in_run",
        "_last",
        "_last_run_calls",
        "_run_api",
        "_run_calls",
        "_seen",
        "_tail",
        "_total",
        "_usage",
        "_usage_api",
    )

    def __init__(self) -> None:
        self._seen: Counter[str] = Counter()
        self._last: str | None = None
        self._total = 0  # estimated tokens of every main-chain message (used without usage)
        self._usage: int | None = None  # the last recorded usage's context size
        self._usage_api: str | None = None
        self._tail = 0  # estimates of the messages after that usage (other API responses)
        self._run_api: str | None = None  # the assistant response being read
        self._run_calls = False
        self._in_run = False
        self._last_run_calls = False

    def feed(self, item: MessageDigest) -> None:
        if item.is_sidechain:
            return
        self._seen[item.fingerprint] += 1
        self._last = item.fingerprint
        self._total += item.tokens
        if item.usage_tokens:  # an all-zero record (an API error's reply) is no measurement
            self._usage, self._usage_api, self._tail = item.usage_tokens, item.api_message_id, 0
        elif self._usage is not None and (
            self._usage_api is None or item.api_message_id != self._usage_api
        ):
            self._tail += item.tokens
        if item.role == "assistant":
            api = item.api_message_id
            if self._in_run and api is not None and api == self._run_api:
                self._run_calls = self._run_calls or item.tool_calls > 0
            else:  # a new response (an id-less record is a response of its own)
                self._run_api, self._run_calls = api, item.tool_calls > 0
            self._in_run = True
            self._last_run_calls = self._run_calls
        else:
            self._in_run = False

    def point(self) -> ExtractedPoint:
        tokens = self._total if self._usage is None else self._usage + self._tail
        if self._last is None:
            return ExtractedPoint(tokens, None, False)
        cursor = MessageCursor(fingerprint=self._last, occurrence=self._seen[self._last])
        return ExtractedPoint(tokens, cursor, self._last_run_calls)

    def tap(self, messages: Iterable[Message]) -> Iterator[Message]:
        """``messages`` unchanged, each folded in as it passes."""
        for message in messages:
            self.feed(digest(message))
            yield message


def notes_from_messages(job: OfflineNotesJob, messages: Iterable[Message]) -> OfflineNotesResult:
    """Build the notes from ``messages`` (read once) and say where the conversation ended."""
    return _build(job, job.session, messages)


def notes_from_transcript(job: OfflineNotesJob, path: Path, session_id: str) -> OfflineNotesResult:
    """``notes_from_messages`` over the transcript as it is on disk now, streamed (the language
    server runs this in a worker process: only the result comes back).

    The session the notes describe is the reader's own, which it completes while it reads
    (a title recorded late in the file included); ``job.session`` only has to name it.
    """
    from reverie.transcripts.reader import TranscriptReader

    reader = TranscriptReader(path, session_id=session_id)
    stream = iter(reader)
    first = next(stream, None)  # from here on ``reader.session`` is the one being filled in
    messages = stream if first is None else itertools.chain((first,), stream)
    return _build(job, reader.session, messages)


def _build(
    job: OfflineNotesJob, session: Session, messages: Iterable[Message]
) -> OfflineNotesResult:
    fold = PointFold()
    notes = build_notes(
        fold.tap(messages), session=session, workspace=job.workspace,
        current_notes=job.current_notes, template=job.template, previous=job.previous,
    )
    return OfflineNotesResult(notes, fold.point())
