"""Reading a whole transcript: format detection, streaming parse, clear errors.

``TranscriptReader`` streams messages without holding the file (append-only formats are read in
1 MiB chunks); ``load_transcript`` collects them into a ``Transcript``. Problems with the path
(missing, a directory, unreadable) raise ``TranscriptError`` with a one-line message; problems
inside the file are counted in ``Transcript.stats`` and never raise.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

from reverie.transcripts import (
    aider,
    cline,
    cline_sdk,
    continue_dev,
    copilot,
    copilot_events,
    gemini,
    kilo_db,
    kilo_tail,
)
from reverie.transcripts.access import TranscriptError as TranscriptError
from reverie.transcripts.access import check_readable as check_readable
from reverie.transcripts.base import RecordParser
from reverie.transcripts.claude import ClaudeParser
from reverie.transcripts.codex import CodexParser
from reverie.transcripts.detect import CLINE_SDK_SUFFIX, is_copilot_event_log
from reverie.transcripts.detect import detect_agent as detect_agent
from reverie.transcripts.document import EditorDocument
from reverie.transcripts.generic import GenericParser
from reverie.transcripts.lines import CHUNK_BYTES, LineSplitter
from reverie.transcripts.model import (
    EDITOR_AGENTS,
    AgentName,
    Message,
    ParseStats,
    Session,
    Transcript,
)


def read_editor_document(agent: AgentName, path: Path, data: bytes) -> EditorDocument:
    """A session document of one of the editor's agents (``EDITOR_AGENTS``)."""
    if agent == "copilot-chat":
        return copilot.read_document(path, data)
    if agent == "continue":
        return continue_dev.read_document(path, data)
    if agent == "cline" and path.name.endswith(CLINE_SDK_SUFFIX):
        return cline_sdk.read_document(path, data)
    return cline.read_document(path, data, agent)


def parser_for(agent: AgentName, path: Path) -> RecordParser:
    """The streaming record parser of an append-only JSONL format."""
    if agent == "claude-code":
        return ClaudeParser(path)
    if agent == "codex":
        return CodexParser(path)
    if agent == "gemini-cli":
        return gemini.GeminiJsonlParser(path)
    if agent == "copilot-chat":
        return copilot_events.CopilotEventParser(path)
    return GenericParser(path)


def is_kilo_db(agent: AgentName | None, path: Path) -> bool:
    """Kilo Code's session database: many sessions in one file (``session_id`` picks one)."""
    return agent == "kilo-code" and path.suffix == ".db"


def holds_many_sessions(agent: AgentName | None, path: Path) -> bool:
    """A file whose sessions are told apart by ``session_id`` (an Aider history's runs, Kilo's
    database), not one session per file."""
    return agent == "aider" or is_kilo_db(agent, path)


def is_document(agent: AgentName, path: Path) -> bool:
    """Whether ``path`` is a document its agent rewrites (the editor's agents), not a log:
    all of theirs but the Copilot extension's own event log and Kilo's database."""
    return agent in EDITOR_AGENTS and not is_kilo_db(agent, path) and not (
        agent == "copilot-chat" and is_copilot_event_log(path))


class TranscriptReader:
    """Streams one session's messages; ``session`` and ``stats`` are complete after iteration.

    For an Aider history (many runs in one file) ``session_id`` picks the run; the default is the
    latest run, the one a live agent is appending to.
    """

    def __init__(self, path: Path, agent: AgentName | None = None,
                 session_id: str | None = None) -> None:
        self.path = path
        self._st = check_readable(path)
        self.agent: AgentName = agent or detect_agent(path) or "generic"
        self.session_id = session_id
        self.session = Session(id=path.stem or "session", agent=self.agent, path=path)
        self.stats = ParseStats()

    def __iter__(self) -> Iterator[Message]:
        try:
            if self.agent == "aider":
                yield from self._aider()
            elif is_kilo_db(self.agent, self.path):
                yield from self._kilo_db()
            elif is_document(self.agent, self.path):
                yield from self._editor_document()
            elif self.agent == "gemini-cli" and self.path.suffix == ".json":
                yield from self._gemini_document()
            else:
                yield from self._stream()
        except OSError as exc:
            raise TranscriptError(f"cannot read {self.path}: {exc.strerror or exc}") from None
        if self.session.updated_at is None:
            self.session.updated_at = datetime.fromtimestamp(self._st.st_mtime, UTC)

    def _stream(self) -> Iterator[Message]:
        parser = parser_for(self.agent, self.path)
        self.session, self.stats = parser.session, parser.stats
        splitter = LineSplitter()
        with self.path.open("rb") as handle:
            while chunk := handle.read(CHUNK_BYTES):
                for line in splitter.feed(chunk):
                    yield from parser.feed_line(line)
        last = splitter.flush()
        if last is not None:
            before = parser.stats.skipped
            out = parser.feed_line(last)
            if parser.stats.skipped > before:
                parser.stats.errors[-1] += " (truncated last line)"
            yield from out
        yield from parser.finish()
        if isinstance(parser, gemini.GeminiJsonlParser):
            yield from parser.messages()
        self.session = parser.session

    def _editor_document(self) -> Iterator[Message]:
        doc = read_editor_document(self.agent, self.path, self.path.read_bytes())
        messages = doc.messages()
        self.session, self.stats = doc.session, doc.stats
        yield from messages

    def _gemini_document(self) -> Iterator[Message]:
        state = gemini.parse_document(self.path, self.path.read_bytes())
        messages = state.messages()
        self.session, self.stats = state.session, state.stats
        yield from messages

    def _kilo_db(self) -> Iterator[Message]:
        session, messages, self.stats = kilo_tail.load(self.path, self.session_id)
        if session is None:
            if self.session_id is not None and not self.stats.skipped:
                raise TranscriptError(f"no Kilo session {self.session_id} in {self.path}")
            return
        self.session = session
        yield from messages

    def _aider(self) -> Iterator[Message]:
        runs = aider.parse_history(self.path, self.path.read_bytes(), self.stats)
        if not runs:
            self.session = Session(id=f"aider-{self.path.parent.name}", agent="aider",
                                   path=self.path, cwd=str(self.path.parent))
            return
        chosen = runs[-1]
        if self.session_id is not None:
            match = [r for r in runs if r.session.id == self.session_id]
            if not match:
                raise TranscriptError(f"no Aider run {self.session_id} in {self.path}")
            chosen = match[0]
        if chosen is runs[-1]:
            chosen.session.updated_at = datetime.fromtimestamp(self._st.st_mtime, UTC)
        self.session = chosen.session
        yield from chosen.messages


def load_transcript(path: Path, session_id: str | None = None,
                    agent: AgentName | None = None) -> Transcript:
    """Parse the whole transcript at ``path``; see ``TranscriptReader`` (``agent``: as
    discovery found it; default: detected from the file)."""
    reader = TranscriptReader(Path(path), agent, session_id=session_id)
    messages = list(reader)
    return Transcript(session=reader.session, messages=messages, stats=reader.stats)


def load_sessions(path: Path, agent: AgentName | None = None) -> list[Transcript]:
    """Every session stored in ``path``: all runs of an Aider history, else the one session."""
    path = Path(path)
    st = check_readable(path)
    agent = agent or detect_agent(path)
    if is_kilo_db(agent, path):
        try:
            rows = kilo_db.list_sessions(path)
        except kilo_db.KiloDbError:
            return [load_transcript(path)]  # the skip is counted in its stats
        return [load_transcript(path, row.id) for row in rows]
    if agent != "aider":
        return [load_transcript(path, agent=agent)]
    stats = ParseStats()
    runs = aider.parse_history(path, path.read_bytes(), stats)
    if runs:
        runs[-1].session.updated_at = datetime.fromtimestamp(st.st_mtime, UTC)
    return [Transcript(session=r.session, messages=r.messages, stats=stats) for r in runs]
