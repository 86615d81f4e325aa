"""Reading a whole transcript: format detection, streaming parse, clear errors.

``TranscriptReader`` streams messages without holding the file (append-only formats are read in
1 MiB chunks); ``load_transcript`` collects them into a ``Transcript``. Problems with the path
(missing, a directory, unreadable) raise ``TranscriptError`` with a one-line message; problems
inside the file are counted in ``Transcript.stats`` and never raise.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import orjson

from reverie.errors import UserError
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
from reverie.transcripts.base import RecordParser
from reverie.transcripts.claude import ClaudeParser
from reverie.transcripts.codex import CodexParser
from reverie.transcripts.document import EditorDocument
from reverie.transcripts.generic import GenericParser
from reverie.transcripts.lines import BOM, CHUNK_BYTES, LineSplitter
from reverie.transcripts.model import (
    EDITOR_AGENTS,
    AgentName,
    Message,
    ParseStats,
    Session,
    Transcript,
)

#: how much of a file detection looks at
_DETECT_BYTES = 256 * 1024
_CODEX_TYPES = {"session_meta", "response_item", "event_msg", "turn_context", "compacted"}
_CLAUDE_TYPES = {"user", "assistant", "summary", "system", "progress", "file-history-snapshot",
                 "queue-operation", "custom-title", "attachment", "pr-link"}
_GEMINI_TYPES = {"user", "gemini", "info", "error", "warning"}


class TranscriptError(UserError):
    """A transcript path that cannot be read at all. ``str(error)`` is one line for the user."""


def read_editor_document(agent: AgentName, path: Path, data: bytes) -> EditorDocument:
    """A session document of one of the editor's agents (``EDITOR_AGENTS``)."""
    if agent == "copilot-chat":
        return copilot.read_document(path, data)
    if agent == "continue":
        return continue_dev.read_document(path, data)
    if agent == "cline" and path.name.endswith(cline_sdk.SUFFIX):
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
        agent == "copilot-chat" and copilot_events.is_event_log(path))


def check_readable(path: Path) -> os.stat_result:
    """Stat ``path`` as a transcript file, raising ``TranscriptError`` with a clear message."""
    try:
        st = path.stat()
    except FileNotFoundError:
        raise TranscriptError(f"no such file: {path}") from None
    except OSError as exc:
        raise TranscriptError(f"cannot read {path}: {exc.strerror or exc}") from None
    if path.is_dir():
        raise TranscriptError(f"is a directory, not a transcript file: {path}")
    if not stat.S_ISREG(st.st_mode):  # a FIFO or a device would block or never end
        raise TranscriptError(f"not a regular file (a FIFO, socket or device): {path}")
    if not os.access(path, os.R_OK):
        raise TranscriptError(f"cannot read {path}: permission denied")
    return st


def _classify_record(record: object) -> AgentName | None:
    if not isinstance(record, dict):
        return None
    kind = record.get("type")
    if "payload" in record and kind in _CODEX_TYPES:
        return "codex"
    if copilot_events.looks_like_event(record):
        return "copilot-chat"  # the Copilot extension's own event log
    if record.get("kind") == 0 and isinstance(record.get("v"), dict) and (
            "requests" in record["v"] or "sessionId" in record["v"]):
        return "copilot-chat"  # the first line of a VS Code chat session log
    if "$set" in record or "$rewindTo" in record or "projectHash" in record:
        return "gemini-cli"
    if kind in _CLAUDE_TYPES and (
        "uuid" in record or "sessionId" in record or kind == "summary" or "messageId" in record
    ):
        return "claude-code"
    if kind in _GEMINI_TYPES and "id" in record and "content" in record and "message" not in record:
        return "gemini-cli"
    if "role" in record and ("content" in record or "tool_calls" in record):
        return "generic"
    return None


def _hint_from_path(path: Path) -> AgentName | None:
    parts = set(path.parts)
    if ".claude" in parts:
        return "claude-code"
    if ".codex" in parts:
        return "codex"
    if ".gemini" in parts:
        return "gemini-cli"
    if ".reverie" in parts or path.suffix == ".messages":
        return "generic"
    return None


def detect_agent(path: Path) -> AgentName | None:
    """Which agent wrote ``path``, from its content first and its location second."""
    name = path.name
    if name.endswith(".aider.chat.history.md"):
        return "aider"
    if path.suffix == ".db":
        return "kilo-code" if kilo_db.looks_like_db(path) else None
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return None
    with os.fdopen(fd, "rb") as handle:
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                return None  # a FIFO or device: never read (it could block forever)
            head = handle.read(_DETECT_BYTES).removeprefix(BOM)
        except OSError:
            return None
    if head.lstrip().startswith(b"# aider chat started at"):
        return "aider"
    editor = _editor_agent(path, head)
    if editor is not None:
        return editor
    if path.suffix == ".json":
        if b'"sessionId"' in head and (b'"messages"' in head or b'"projectHash"' in head):
            return "gemini-cli"
        if b'"parts"' in head and b'"role"' in head and (
                b'"history"' in head or head.lstrip().startswith(b"[")):
            return "gemini-cli"  # the API's own contents: a saved chat or checkpoint
        return None
    lines = head.split(b"\n")
    if len(head) == _DETECT_BYTES:
        lines = lines[:-1] or lines  # the cut last line is not valid JSON
    for raw in lines[:50]:
        if not raw.strip():
            continue
        try:
            record = orjson.loads(raw)
        except orjson.JSONDecodeError:
            continue
        found = _classify_record(record)
        if found:
            return found
    if b'"type":"session_meta"' in head or b'"type":"response_item"' in head:
        return "codex"
    if b'"parentUuid"' in head and b'"sessionId"' in head:
        return "claude-code"
    return _hint_from_path(path)


def _editor_agent(path: Path, head: bytes) -> AgentName | None:
    """The editor's agents, from where the file is and what it starts with."""
    start = head.lstrip()[:1]
    if copilot_events.is_event_log(path) and start in (b"{", b""):
        return "copilot-chat"
    if path.name.endswith(cline_sdk.SUFFIX) and start in (b"{", b"") and (
            cline_sdk.is_session_messages(path) or b'"agent"' in head):
        return "cline"  # Cline 4: sessions/<id>/<id>.messages.json
    if path.name == cline.UI_MESSAGES and start in (b"[", b""):
        return cline.task_agent(path)
    if copilot.is_session_location(path) and start in (b"{", b""):
        return "copilot-chat"
    if path.suffix != ".json" or start not in (b"{", b"["):
        return None
    if start == b"{" and b'"requests"' in head and (
            b'"responderUsername"' in head or b'"requesterUsername"' in head
            or b'"creationDate"' in head or b'"initialLocation"' in head):
        return "copilot-chat"
    if start == b"{" and b'"history"' in head and (
            b'"workspaceDirectory"' in head or b'"contextItems"' in head):
        return "continue"
    if start == b"[" and b'"ts"' in head and (b'"say"' in head or b'"ask"' in head):
        return cline.task_agent(path)
    return None


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
