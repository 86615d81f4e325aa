"""The synchronous half of watching: which files are sessions of the workspace, and their tails.

``SessionReader`` owns one ``TranscriptTail`` per session file of a workspace, remembers which
files belong to the workspace, and turns "these paths changed" into ``SessionAppended`` events.
It does blocking file I/O and CPU-heavy parsing, so it never runs on the event loop:
``SessionWatcher`` drives it from a background thread, or keeps it inside the parse worker
process (``reverie.transcripts.worker``) and gets back only message digests.

Nothing here imports the watcher, asyncio or the language server: the worker process imports
this module and should start fast.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from reverie.transcripts import kilo_db
from reverie.transcripts.base import parse_time
from reverie.transcripts.digest import MessageDigest, digests
from reverie.transcripts.discovery import SessionRef, discover_sessions, session_ref
from reverie.transcripts.editor_places import EditorPlaces
from reverie.transcripts.kilo_db import SessionRow
from reverie.transcripts.kilo_tail import KiloChange, KiloDbTail
from reverie.transcripts.model import Message, Session
from reverie.transcripts.reader import is_kilo_db
from reverie.transcripts.refs import belongs
from reverie.transcripts.tail import TailState, TranscriptTail

logger = logging.getLogger(__name__)

#: a file whose head was read without finding its project is checked again while it is this small
_RECHECK_BELOW = 1024 * 1024


def _reporting(every: bool, since_ms: int | None) -> Callable[[SessionRow], bool]:
    """Which changed Kilo sessions a scan reports: all, or those updated since the watches
    started (the rest are primed)."""
    def report(row: SessionRow) -> bool:
        return every or (since_ms is not None and row.time_updated > since_ms)
    return report


def _kilo_state(tail: KiloDbTail) -> TailState:
    return TailState(path=tail.path, agent="kilo-code", memo=tail.memo(),
                     stats=tail.stats.model_copy(deep=True))


@dataclass(slots=True)
class SessionAppended:
    """New messages of one session, in file order.

    ``digests`` is always filled, one per message and in the same order; ``messages`` only when
    the reading happened in this process (a reader in the worker process sends digests alone).
    A slots dataclass rather than a model: it crosses the process boundary once per append.
    """

    ref: SessionRef
    session: Session
    messages: list[Message]
    digests: list[MessageDigest]


@dataclass(slots=True)
class ReadResult:
    """What one reader step produced, plus what a caller must know to resume it elsewhere.

    The states travel as ``TailState`` JSON: a parser's memo can make a state a hundred
    kilobytes of small objects, which as bytes cost the receiving process nothing to unpickle
    (they are decoded only when saved or used to resume a reader).
    """

    events: list[SessionAppended]
    #: ``TailState`` JSON of the files this step read, skipped or started (keyed by path)
    states: dict[str, bytes] = field(default_factory=dict)
    #: files this step stopped tracking (deleted or moved away)
    dropped: list[str] = field(default_factory=list)


def _session_files(paths: set[Path]) -> set[Path]:
    """The changed paths, a new task folder (Cline, Roo, Kilo; Cline 4: a session folder)
    standing for its session file."""
    out: set[Path] = set()
    for path in paths:
        if path.parent.name in ("tasks", "sessions") and path.is_dir():
            for candidate in (path / "ui_messages.json", path / f"{path.name}.messages.json"):
                if candidate.is_file():
                    out.add(candidate)
        elif path.suffix or not path.is_dir():
            out.add(path)
    return out


class SessionReader:
    """Tails of one workspace's session files. Not thread-safe: one caller at a time.

    ``keep_messages=False`` reports digests only (``SessionAppended.messages`` stays empty):
    what the worker process does, so that no ``Message`` has to be pickled.
    """

    def __init__(
        self,
        workspace: Path,
        agent_home: Path,
        *,
        tail_states: Mapping[str, TailState | dict[str, Any]] | None = None,
        keep_messages: bool = True,
        editor: EditorPlaces | None = None,
    ) -> None:
        self.workspace = Path(workspace)
        self.agent_home = Path(agent_home)
        #: where the editor's agents keep their sessions (detected once, not per change)
        self.editor = editor if editor is not None else EditorPlaces.detect(self.agent_home)
        self.keep_messages = keep_messages
        self._tails: dict[Path, TranscriptTail] = {}
        #: Kilo Code's databases: many sessions per file, read by ``KiloDbTail``
        self._kilo: dict[Path, KiloDbTail] = {}
        self._membership: dict[Path, tuple[bool, int]] = {}
        self._resumed: set[Path] = set()
        self._touched: set[Path] = set()
        self._dropped: set[Path] = set()
        for key, state in (tail_states or {}).items():
            path = Path(key)
            checked = state if isinstance(state, TailState) else TailState.model_validate(state)
            if is_kilo_db(checked.agent, path):
                self._kilo[path] = KiloDbTail(path)
                self._kilo[path].restore_memo(checked.memo)
            else:
                self._tails[path] = TranscriptTail.restore(checked)
            self._membership[path] = (True, 0)
            self._resumed.add(path)

    # -- public --------------------------------------------------------------------------------
    def states(self) -> dict[str, TailState]:
        """Tail states to pass back as ``tail_states`` after a restart."""
        return {**{str(path): tail.state() for path, tail in self._tails.items()},
                **{str(path): _kilo_state(tail) for path, tail in self._kilo.items()}}

    def scan(self, report: bool, watched_since_ns: int | None = None) -> list[SessionAppended]:
        """Read every discovered session; report what it produced only when ``report``.

        Otherwise a session is primed (its tail advanced, its messages not kept) unless it was
        resumed from a saved state (what was appended while we were not running is reported) or
        modified after ``watched_since_ns`` (created or grown once the watches were running).
        """
        events: list[SessionAppended] = []
        refs = discover_sessions(self.workspace, self.agent_home, self.editor)
        since_ms = None if watched_since_ns is None else watched_since_ns // 1_000_000
        for db in self._kilo_dbs(refs):
            every = report or db in self._resumed
            self._resumed.discard(db)
            events.extend(self.read_kilo(db, _reporting(every, since_ms)))
        for path in dict.fromkeys(ref.path for ref in refs if not is_kilo_db(ref.agent, ref.path)):
            self._membership[path] = (True, 0)
            resumed = path in self._resumed
            self._resumed.discard(path)
            if report or resumed or self._modified_since(path, watched_since_ns):
                event = self.read(path)
                if event is not None:
                    events.append(event)
            else:
                self.skip(path)
        return events

    def apply(self, paths: Iterable[str | Path]) -> list[SessionAppended]:
        """Read the given changed paths (in path order); forget the ones that are gone."""
        events: list[SessionAppended] = []
        changed = {Path(p) for p in paths if p}
        databases = {kilo_db.db_of(p) for p in changed if self._is_kilo_change(p)}
        changed = {p for p in changed if kilo_db.db_of(p) not in databases}
        for db in sorted(databases):
            if not db.is_file():
                if self._kilo.pop(db, None) is not None:
                    self._dropped.add(db)
                    self._touched.discard(db)
                continue
            events.extend(self.read_kilo(db, lambda row: True))
        for path in sorted(_session_files(changed)):
            if not path.is_file():
                if self._tails.pop(path, None) is not None:
                    self._dropped.add(path)
                    self._touched.discard(path)
                self._membership.pop(path, None)
                continue
            if not self._belongs(path):
                continue
            event = self.read(path)
            if event is not None:
                events.append(event)
        return events

    def skip(self, path: Path) -> None:
        """Advance the tail to the end of ``path`` without keeping what it says."""
        tail = self._tail(path)
        try:
            tail.skip_to_end()
        except OSError as exc:
            logger.warning("cannot read transcript %s: %s", path, exc.strerror or exc)

    def read(self, path: Path) -> SessionAppended | None:
        """What ``path`` appended since the last read, or None when nothing (or unreadable)."""
        tail = self._tail(path)
        try:
            messages = tail.read_new()
        except OSError as exc:
            logger.warning("cannot read transcript %s: %s", path, exc.strerror or exc)
            return None
        if not messages:
            return None
        session = tail.session.model_copy(deep=True)
        try:
            updated = datetime.fromtimestamp(path.stat().st_mtime, UTC)
        except OSError:
            updated = datetime.now(UTC)
        ref = SessionRef(agent=session.agent, session_id=session.id, path=path,
                         updated_at=updated, parent_session_id=session.parent_session_id,
                         cwd=session.cwd)
        return SessionAppended(ref=ref, session=session,
                               messages=messages if self.keep_messages else [],
                               digests=digests(messages))

    def read_kilo(self, db: Path, report: Callable[[SessionRow], bool]) -> list[SessionAppended]:
        """The workspace's sessions in Kilo's database ``db`` that changed since the last read;
        those ``report`` refuses are read but not reported (priming)."""
        tail = self._kilo.get(db)
        if tail is None:
            tail = self._kilo[db] = KiloDbTail(db)
            self._dropped.discard(db)
        self._touched.add(db)
        changes = tail.read_changed(lambda row: belongs(row.directory, self.workspace),
                                    keep=True)
        return [self._kilo_event(db, c) for c in changes if report(c.row)]

    def take_changes(self) -> tuple[dict[str, TailState], list[str]]:
        """States of the tails touched since the last call, and the paths dropped meanwhile."""
        states = {str(p): self._tails[p].state() for p in sorted(self._touched) if p in self._tails}
        states.update({str(p): _kilo_state(self._kilo[p]) for p in sorted(self._touched)
                       if p in self._kilo})
        dropped = sorted(str(p) for p in self._dropped)
        self._touched.clear()
        self._dropped.clear()
        return states, dropped

    def step(self, events: list[SessionAppended]) -> ReadResult:
        """``events`` with the tail changes that produced them (see ``take_changes``)."""
        states, dropped = self.take_changes()
        encoded = {path: state.model_dump_json().encode() for path, state in states.items()}
        return ReadResult(events=events, states=encoded, dropped=dropped)

    # -- internals -----------------------------------------------------------------------------
    def _kilo_dbs(self, refs: list[SessionRef]) -> list[Path]:
        """Kilo's databases to read: those holding a session of the workspace, and the ones
        a tail already follows (a session may have moved in since)."""
        found = [r.path for r in refs if is_kilo_db(r.agent, r.path)]
        return list(dict.fromkeys([*found, *(p for p in self._kilo if p.is_file())]))

    def _is_kilo_change(self, path: Path) -> bool:
        db = kilo_db.db_of(path)
        if db in self._kilo:
            return True
        watched = self.editor.kilo_watch_dirs()
        return db.parent in watched and (kilo_db.is_db_name(db.name) or db == self.editor.kilo_db)

    def _kilo_event(self, db: Path, change: KiloChange) -> SessionAppended:
        row = change.row
        ref = SessionRef(agent="kilo-code", session_id=row.id, path=db,
                         updated_at=parse_time(row.time_updated) or datetime.now(UTC),
                         parent_session_id=row.parent_id, cwd=row.directory)
        return SessionAppended(ref=ref, session=change.session,
                               messages=change.messages if self.keep_messages else [],
                               digests=digests(change.messages))

    def _tail(self, path: Path) -> TranscriptTail:
        tail = self._tails.get(path)
        if tail is None:
            # a moved Roo / Kilo tasks folder does not say whose it is: the settings do
            tail = self._tails[path] = TranscriptTail(path, self.editor.moved_task_agent(path))
            self._dropped.discard(path)
        self._touched.add(path)
        return tail

    @staticmethod
    def _modified_since(path: Path, since_ns: int | None) -> bool:
        if since_ns is None:
            return False
        try:
            return path.stat().st_mtime_ns > since_ns
        except OSError:
            return False

    def _belongs(self, path: Path) -> bool:
        try:
            size = path.stat().st_size
        except OSError:
            return False
        known = self._membership.get(path)
        if known is not None and (known[0] or known[1] == size or size >= _RECHECK_BELOW):
            return known[0]
        ok = session_ref(path, self.workspace, self.agent_home, self.editor) is not None
        self._membership[path] = (ok, size)
        return ok
