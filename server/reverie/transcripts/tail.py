"""Live reading: only what was appended since the last read.

Append-only JSONL formats (Claude Code, Codex, generic) keep a byte offset; only new bytes are read
and parsed, a partial last line waits in memory until its newline arrives, and a file that shrank,
got a new inode, or whose bytes just before the offset changed is re-read from the start.

Formats that rewrite or revise (Gemini legacy JSON, Gemini JSONL with last-write-wins messages,
Aider markdown) are re-parsed (Aider: from its last run header on) and diffed against what was
already returned: ``read_new`` returns the messages that are new or changed since, a changed one
under its old id.

``state()`` / ``TranscriptTail.restore()`` persist a tail so a restarted server resumes where it
stopped instead of re-reading (and re-reporting) everything.
"""

from __future__ import annotations

import hashlib
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from reverie.transcripts import aider, gemini
from reverie.transcripts.base import RecordParser
from reverie.transcripts.lines import CHUNK_BYTES, LineSplitter
from reverie.transcripts.model import AgentName, Message, ParseStats, Session
from reverie.transcripts.reader import (
    detect_agent,
    is_document,
    parser_for,
    read_editor_document,
)

Mode = Literal["stream", "gemini-jsonl", "gemini-json", "aider", "document"]
#: bytes just before the offset that must still be there for an incremental read
_CHECK_BYTES = 64


class TailState(BaseModel):
    """Everything a tail needs to resume; JSON-serialisable (``model_dump(mode="json")``)."""

    path: Path
    agent: AgentName | None = None
    offset: int = 0
    inode: int = 0
    device: int = 0
    check: str = ""
    session: Session | None = None
    stats: ParseStats = Field(default_factory=ParseStats)
    memo: dict[str, Any] = Field(default_factory=dict)
    seen: list[str] = Field(default_factory=list)
    size: int = 0
    mtime_ns: int = 0


def _mode(agent: AgentName, path: Path) -> Mode:
    if agent == "aider":
        return "aider"
    if is_document(agent, path):
        return "document"
    if agent == "gemini-cli":
        return "gemini-json" if path.suffix == ".json" else "gemini-jsonl"
    return "stream"


def _fingerprint(message: Message) -> str:
    digest = hashlib.blake2b(message.model_dump_json().encode(), digest_size=8).hexdigest()
    return f"{message.id}#{digest}"


class TranscriptTail:
    """Incremental reader of one transcript file. Not thread-safe: one reader at a time."""

    _inode: int
    _device: int
    _offset: int
    _size: int
    _mtime_ns: int
    _window: bytes
    _splitter: LineSplitter

    def __init__(self, path: Path, agent: AgentName | None = None) -> None:
        self.path = Path(path)
        self.agent: AgentName | None = agent
        self._parser: RecordParser | None = None
        self._session: Session | None = None
        self._stats = ParseStats()
        self._reset()

    # -- public --------------------------------------------------------------------------------
    @property
    def session(self) -> Session:
        if self._parser is not None:
            return self._parser.session
        if self._session is not None:
            return self._session
        return Session(id=self.path.stem or "session", agent=self.agent or "generic",
                       path=self.path)

    @property
    def stats(self) -> ParseStats:
        return self._parser.stats if self._parser is not None else self._stats

    def read_new(self) -> list[Message]:
        """Messages appended (or, for revising formats, changed) since the last call."""
        return self._read_new(keep=True)

    def skip_to_end(self) -> None:
        """Advance past everything in the file now, as ``read_new`` would, keeping nothing.

        Priming a large transcript this way costs memory for one chunk's messages at a time
        instead of the whole file's.
        """
        self._read_new(keep=False)

    def _read_new(self, *, keep: bool) -> list[Message]:
        try:
            st = self.path.stat()
        except OSError:
            return []
        if not self.path.is_file():
            return []
        if self.agent is None:
            if st.st_size == 0:
                return []
            self.agent = detect_agent(self.path)
            if self.agent is None:
                self.agent = "generic"
        replaced = self._inode != 0 and (st.st_ino, st.st_dev) != (self._inode, self._device)
        if replaced and _mode(self.agent, self.path) != "document":
            # a document renamed over (Roo's safe write) is diffed by content, like a rewrite
            self._reset()
        self._inode, self._device = st.st_ino, st.st_dev
        mode = _mode(self.agent, self.path)
        if mode == "stream":
            return self._read_stream(st.st_size, keep=keep)
        if (st.st_size, st.st_mtime_ns) == (self._size, self._mtime_ns):
            return []
        if mode == "document":
            out = self._read_document()
        elif mode == "gemini-json":
            out = self._read_gemini_json()
        elif mode == "gemini-jsonl":
            out = self._read_gemini_jsonl(st.st_size)
        else:
            out = self._read_aider(st)
        self._size, self._mtime_ns = st.st_size, st.st_mtime_ns
        return out

    def state(self) -> TailState:
        """A snapshot to persist; ``restore`` resumes from it."""
        offset = self._splitter.consumed if self._parser is not None else self._offset
        check = b""
        if offset > 0 and _mode(self.agent or "generic", self.path) == "stream":
            try:
                with self.path.open("rb") as handle:
                    start = max(0, offset - _CHECK_BYTES)
                    handle.seek(start)
                    check = handle.read(offset - start)
            except OSError:
                check = b""
        return TailState(
            path=self.path,
            agent=self.agent,
            offset=offset,
            inode=self._inode,
            device=self._device,
            check=check.hex(),
            session=self.session,
            stats=self.stats.model_copy(deep=True),
            memo=self._parser.memo() if self._parser is not None else {},
            seen=sorted(self._seen),
            size=self._size,
            mtime_ns=self._mtime_ns,
        )

    @classmethod
    def restore(cls, state: TailState | dict[str, Any]) -> TranscriptTail:
        """A tail that continues where ``state`` stopped (a changed file is re-read cleanly)."""
        if not isinstance(state, TailState):
            state = TailState.model_validate(state)
        tail = cls(state.path, state.agent)
        tail._inode, tail._device = state.inode, state.device
        tail._seen = set(state.seen)
        tail._offset = state.offset
        tail._size, tail._mtime_ns = state.size, state.mtime_ns
        if state.agent is not None and _mode(state.agent, state.path) == "stream":
            parser = parser_for(state.agent, state.path)
            if state.session is not None:
                parser.session = state.session.model_copy(deep=True)
            parser.stats = state.stats.model_copy(deep=True)
            parser.restore_memo(state.memo)
            tail._parser = parser
            tail._splitter = LineSplitter(state.offset)
            tail._window = bytes.fromhex(state.check)
        else:
            tail._session = state.session
            tail._stats = state.stats.model_copy(deep=True)
            # revising formats re-parse on the next read and diff against ``seen``
            tail._size = tail._mtime_ns = -1
        return tail

    # -- internals -----------------------------------------------------------------------------
    def _reset(self) -> None:
        self._parser = None
        self._splitter = LineSplitter()
        self._window = b""
        self._inode = self._device = 0
        self._offset = 0  # revising formats: where re-parsing starts (Aider: last run header)
        self._seen: set[str] = set()
        self._size = self._mtime_ns = -1
        self._gemini: gemini.GeminiJsonlParser | None = None
        #: document formats: unit key -> (digest, fingerprints of its messages), this run only
        self._units: dict[str, tuple[str, list[str]]] = {}
        self._session = None
        self._stats = ParseStats()

    def _read_stream(self, size: int, *, keep: bool = True) -> list[Message]:
        assert self.agent is not None
        read_pos = self._splitter.consumed + self._splitter.pending_bytes
        if size < read_pos:
            self._reset_keep_identity()
            read_pos = 0
        if size == read_pos and self._parser is not None:
            return []
        out: list[Message] = []
        with self.path.open("rb") as handle:
            start = read_pos - len(self._window)
            handle.seek(start)
            if self._window:
                before = handle.read(len(self._window))
                if before != self._window:
                    # same inode, but the bytes we already read changed: a rewrite
                    self._reset_keep_identity()
                    handle.seek(0)
            if self._parser is None:
                self._parser = parser_for(self.agent, self.path)
            while chunk := handle.read(CHUNK_BYTES):
                for line in self._splitter.feed(chunk):
                    parsed = self._parser.feed_line(line)
                    if keep:
                        out.extend(parsed)
                self._window = (self._window + chunk)[-_CHECK_BYTES:]
        return out

    def _reset_keep_identity(self) -> None:
        inode, device, agent = self._inode, self._device, self.agent
        self._reset()
        self._inode, self._device, self.agent = inode, device, agent

    def _diff(self, messages: list[Message], keep_only: bool = False) -> list[Message]:
        fresh: list[Message] = []
        current: set[str] = set()
        for message in messages:
            fp = _fingerprint(message)
            current.add(fp)
            if fp not in self._seen:
                fresh.append(message)
        self._seen = current if keep_only else self._seen | current
        return fresh

    def _read_gemini_json(self) -> list[Message]:
        try:
            data = self.path.read_bytes()
        except OSError:
            return []
        state = gemini.parse_document(self.path, data)
        if state.stats.skipped:
            # most likely caught mid-rewrite: keep what we have, retry on the next change
            self._size = self._mtime_ns = -1
            return []
        messages = state.messages()
        self._session, self._stats = state.session, state.stats
        return self._diff(messages, keep_only=True)

    def _read_gemini_jsonl(self, size: int) -> list[Message]:
        if self._gemini is None or size < self._splitter.consumed + self._splitter.pending_bytes:
            self._gemini = gemini.GeminiJsonlParser(self.path)
            self._splitter = LineSplitter()
        with self.path.open("rb") as handle:
            handle.seek(self._splitter.consumed + self._splitter.pending_bytes)
            while chunk := handle.read(CHUNK_BYTES):
                for line in self._splitter.feed(chunk):
                    self._gemini.feed_line(line)
        self._session, self._stats = self._gemini.session, self._gemini.stats
        return self._diff(self._gemini.messages(), keep_only=True)

    def _read_document(self) -> list[Message]:
        """A rewritten session document: rebuild only the units whose raw JSON changed and
        report the messages not reported before (``seen``: the checkpoint a restored tail
        diffs against). A document caught half-written is read again on the next change."""
        assert self.agent is not None
        try:
            data = self.path.read_bytes()
        except OSError:
            return []
        doc = read_editor_document(self.agent, self.path, data)
        if not doc.complete:
            self._size = self._mtime_ns = -1  # keep what we had; retry on the next change
            self._stats = doc.stats
            return []
        fresh: list[Message] = []
        units: dict[str, tuple[str, list[str]]] = {}
        current: set[str] = set()
        for unit in doc.units:
            known = self._units.get(unit.key)
            if known is not None and known[0] == unit.digest:
                units[unit.key] = known
                current.update(known[1])
                continue
            prints: list[str] = []
            for message in unit.build():
                fp = _fingerprint(message)
                prints.append(fp)
                if fp not in self._seen and fp not in current:
                    fresh.append(message)
                current.add(fp)
            units[unit.key] = (unit.digest, prints)
        self._units = units
        self._seen = current
        self._session, self._stats = doc.session, doc.stats
        return fresh

    def _read_aider(self, st: os.stat_result) -> list[Message]:
        if st.st_size < self._offset:
            self._offset = 0
            self._seen = set()
        try:
            with self.path.open("rb") as handle:
                handle.seek(self._offset)
                data = handle.read()
        except OSError:
            return []
        complete = data[: data.rfind(b"\n") + 1]  # a half-written line waits for its newline
        stats = ParseStats()
        runs = aider.parse_history(self.path, complete, stats, self._offset)
        if not runs:
            return []
        runs[-1].session.updated_at = datetime.fromtimestamp(st.st_mtime, UTC)
        fresh = self._diff([m for run in runs for m in run.messages])
        last = runs[-1]
        self._offset = last.offset
        self._seen = {_fingerprint(m) for m in last.messages}
        self._session, self._stats = last.session, stats
        return fresh
