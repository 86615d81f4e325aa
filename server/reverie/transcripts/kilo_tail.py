"""Live reading of Kilo Code's session database: what changed in a workspace's sessions.

One ``KiloDbTail`` per database file. Kilo writes the database (and its WAL) as a session runs;
each time it changes, the tail lists the sessions (one small query), re-reads only those of the
workspace whose ``time_updated`` moved, and reports the messages it did not report before:
new ones, and ones that changed (a streamed text part, a tool call that completed) again under
their old id, exactly as the document formats do. What was reported is kept per session as
message fingerprints (``state()``: a ``TailState`` whose ``memo`` maps session id to its update
time and fingerprints), so a restarted server resumes without reporting anything twice.

A database that cannot be read right now (locked longer than the busy timeout, a table
missing while Kilo migrates it, not a database at all) is a counted skip: the tail keeps what it
had and tries again on the next change.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from reverie.transcripts import kilo_code, kilo_db
from reverie.transcripts.document import Unit
from reverie.transcripts.kilo_db import KiloDbError, SessionRow
from reverie.transcripts.model import Message, ParseStats, Session


def _fingerprint(message: Message) -> str:
    digest = hashlib.blake2b(message.model_dump_json().encode(), digest_size=8).hexdigest()
    return f"{message.id}#{digest}"


@dataclass(slots=True)
class KiloChange:
    """New (or changed) messages of one session."""

    row: SessionRow
    session: Session
    messages: list[Message]


def load_units(path: Path, session_id: str | None
               ) -> tuple[Session | None, list[Unit], ParseStats]:
    """One session's units (``None``: the most recently updated main session). A database that
    cannot be read is a counted skip, never an exception."""
    stats = ParseStats()
    try:
        row, rows, parts, oversized = kilo_db.read_session(path, session_id)
    except KiloDbError as exc:
        stats.skip(str(exc))
        return None, [], stats
    if row is None:
        return None, [], stats
    for _ in range(oversized):
        stats.skip(f"a row over {kilo_db.MAX_DATA_BYTES} bytes not read")
    session = kilo_code.session_of(path, row)
    return session, kilo_code.units_of(session, rows, parts, stats), stats


def load(path: Path, session_id: str | None) -> tuple[Session | None, list[Message], ParseStats]:
    """One session, whole (see ``load_units``)."""
    session, units, stats = load_units(path, session_id)
    if session is None:
        return None, [], stats
    messages = [m for unit in units for m in unit.build()]
    kilo_code.name_by_request(session, messages)
    return session, messages, stats


class KiloDbTail:
    """Incremental reader of one Kilo database, for the sessions ``wanted`` accepts."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        #: session id -> (time_updated when last read, fingerprints of its messages)
        self._known: dict[str, tuple[int, list[str]]] = {}
        #: session id -> message id -> (digest of its rows, fingerprints): this run only
        self._units: dict[str, dict[str, tuple[str, list[str]]]] = {}
        #: session id -> the first request's line, for sessions Kilo has not named
        self._requests: dict[str, str] = {}
        self.stats = ParseStats()

    def read_changed(self, wanted: Callable[[SessionRow], bool],
                     keep: bool = True) -> list[KiloChange]:
        """The sessions ``wanted`` accepts whose update time moved, with the messages not
        reported before (all of them empty when ``keep`` is False: priming)."""
        try:
            rows = kilo_db.list_sessions(self.path)
        except KiloDbError as exc:
            self.stats.skip(str(exc))
            return []
        out: list[KiloChange] = []
        for row in rows:
            known = self._known.get(row.id)
            if known is not None and known[0] == row.time_updated:
                continue
            if not wanted(row):
                continue
            session, units, stats = load_units(self.path, row.id)
            if session is None:
                if stats.skipped:  # unreadable now: leave it for the next change
                    self.stats.skip(stats.errors[0] if stats.errors else "session unreadable")
                continue
            seen = set(known[1]) if known is not None else set()
            before = self._units.get(row.id, {})
            after: dict[str, tuple[str, list[str]]] = {}
            prints: list[str] = []
            fresh: list[Message] = []
            for unit in units:  # only the messages whose rows changed are rebuilt
                cached = before.get(unit.key)
                if cached is None or cached[0] != unit.digest:
                    built = unit.build()
                    cached = (unit.digest, [_fingerprint(m) for m in built])
                    fresh += [m for m, fp in zip(built, cached[1], strict=True) if fp not in seen]
                after[unit.key] = cached
                prints += cached[1]
            self._units[row.id] = after
            self._known[row.id] = (row.time_updated, prints)
            if session.title is None:  # the first request (built once, then remembered)
                if row.id not in self._requests:
                    kilo_code.name_by_request(session, [m for u in units[:2] for m in u.build()])
                    self._requests[row.id] = session.title or ""
                session.title = self._requests[row.id] or None
                session.title_source = "first_prompt" if session.title else None
            self.stats.lines += stats.lines
            self.stats.ignored += stats.ignored
            for reason in stats.errors:
                self.stats.skip(reason)
            if keep and fresh:
                out.append(KiloChange(row=row, session=session, messages=fresh))
        return out

    # -- persistence ---------------------------------------------------------------------------
    def memo(self) -> dict[str, Any]:
        return {"sessions": {sid: {"updated": updated, "seen": prints}
                             for sid, (updated, prints) in sorted(self._known.items())}}

    def restore_memo(self, memo: dict[str, Any]) -> None:
        sessions = memo.get("sessions")
        if not isinstance(sessions, dict):
            return
        for sid, item in sessions.items():
            if not isinstance(sid, str) or not isinstance(item, dict):
                continue
            updated = item.get("updated")
            seen = item.get("seen")
            if isinstance(updated, int) and isinstance(seen, list):
                # a session updated meanwhile is read again and diffed against ``seen``:
                # only what it gained while we were not running is reported
                self._known[sid] = (updated, [s for s in seen if isinstance(s, str)])
