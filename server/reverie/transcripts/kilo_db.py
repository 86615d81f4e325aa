"""Kilo Code's session database (``kilo.db``), read without ever writing to it.

The Kilo Code extension rebuilt on OpenCode (Kilo-Org/kilocode ``packages/kilo-vscode``) runs its
CLI (``kilo serve``), which keeps every session of every project in one SQLite database:
``<xdg data>/kilo/kilo.db`` (``$XDG_DATA_HOME``, else ``~/.local/share``, on every OS:
``packages/opencode/src/global/index.ts``; ``KILO_DB`` names another file, absolute or relative to
that folder; development channels use ``kilo-<channel>.db``:
``packages/opencode/src/storage/database.ts``). The database is in WAL mode and written while we
read (``PRAGMA journal_mode = WAL``, ``busy_timeout = 5000`` in the same file).

Tables (drizzle, ``packages/opencode/src/session/session.sql.ts``): ``session`` (``id``,
``project_id``, ``parent_id``, ``directory``, ``title``, ``time_created``, ``time_updated``,
``time_archived``...), ``message`` (``id``, ``session_id``, ``time_created``, ``time_updated``,
``data``: the message JSON without its ids) and ``part`` (``id``, ``message_id``, ``session_id``,
``time_created``, ``time_updated``, ``data``: the part JSON). Kilo lists a workspace's sessions by
``session.directory`` (``KiloSession.filters`` and ``listGlobal`` in
``packages/opencode/src/kilocode/session/index.ts``); messages are ordered by
``(time_created, id)`` and parts by ``(message_id, id)`` (``session/message-v2.ts``).

Everything here opens the file read-only (``mode=ro``) with a busy timeout, reads inside one
transaction (a consistent snapshot while Kilo writes), selects only the columns it knows and
that exist, and turns every database problem (locked, not a database, a table or column missing)
into a reason string: never an exception, never a write.
"""

from __future__ import annotations

import contextlib
import re
import sqlite3
import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

#: the first bytes of every SQLite database file
SQLITE_MAGIC = b"SQLite format 3\x00"
#: the file names Kilo gives its database (``kilo.db``, a channel's ``kilo-<channel>.db``)
_NAME = re.compile(r"^kilo(?:-[A-Za-z0-9._-]+)?\.db$")
#: SQLite's companion files: a change to any of them is a change to the database
_COMPANIONS = ("-wal", "-shm", "-journal")
#: how long a read waits for Kilo's writer before giving up (counted as a skip, retried later)
BUSY_TIMEOUT_MS = 2000
#: a ``data`` value bigger than this is not read (a pasted file, an image in a part)
MAX_DATA_BYTES = 8 * 1024 * 1024

_SESSION_COLUMNS = ("id", "directory", "title", "parent_id", "time_created", "time_updated",
                    "time_archived")
_REQUIRED = {"session": {"id", "directory", "time_updated"},
             "message": {"id", "session_id", "data"},
             "part": {"id", "message_id", "session_id", "data"}}


class KiloDbError(Exception):
    """A database that cannot be read now (locked, not a database, missing tables)."""


@dataclass(frozen=True, slots=True)
class SessionRow:
    id: str
    directory: str | None
    title: str | None
    parent_id: str | None
    time_created: int | None
    time_updated: int


@dataclass(frozen=True, slots=True)
class Row:
    """A ``message`` or ``part`` row: its id, owner (message id for a part) and raw JSON."""

    id: str
    owner: str
    time_created: int | None
    data: bytes


def is_db_name(name: str) -> bool:
    return bool(_NAME.match(name))


def db_of(path: Path) -> Path:
    """The database a changed file belongs to (``kilo.db-wal`` -> ``kilo.db``)."""
    for suffix in _COMPANIONS:
        if path.name.endswith(suffix):
            return path.with_name(path.name[: -len(suffix)])
    return path


def looks_like_db(path: Path) -> bool:
    """A Kilo database: SQLite's header in the file, and Kilo's name for it (or, for a file
    ``KILO_DB`` may have named anything, Kilo's three tables in it)."""
    try:
        with path.open("rb") as handle:
            if handle.read(len(SQLITE_MAGIC)) != SQLITE_MAGIC:
                return False
    except OSError:
        return False
    if is_db_name(path.name):
        return True
    if path.suffix != ".db":
        return False
    try:
        with snapshot(path) as conn:
            names = {str(r[0]) for r in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table'")}
    except KiloDbError:
        return False
    return {"session", "message", "part"} <= names


@contextlib.contextmanager
def snapshot(path: Path) -> Iterator[sqlite3.Connection]:
    """A read-only connection inside one read transaction (raises ``KiloDbError``)."""
    uri = "file:" + urllib.parse.quote(str(path)) + "?mode=ro"
    try:
        conn = sqlite3.connect(uri, uri=True, timeout=BUSY_TIMEOUT_MS / 1000,
                               isolation_level=None, check_same_thread=False)
    except sqlite3.Error as exc:
        raise KiloDbError(f"{path.name}: cannot open ({exc})") from None
    try:
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        conn.execute("PRAGMA query_only = 1")
        conn.execute("BEGIN")
        yield conn
    except sqlite3.Error as exc:
        raise KiloDbError(f"{path.name}: {exc}") from None
    finally:
        with contextlib.suppress(sqlite3.Error):
            conn.execute("ROLLBACK")
        conn.close()


def _columns(conn: sqlite3.Connection, table: str) -> set[str]:
    rows = conn.execute(f"PRAGMA table_info({table})").fetchall()  # table: a constant
    return {str(r[1]) for r in rows}


def _checked(conn: sqlite3.Connection, table: str) -> set[str]:
    columns = _columns(conn, table)
    missing = _REQUIRED[table] - columns
    if not columns:
        raise KiloDbError(f"no {table!r} table (not a Kilo database, or one being created)")
    if missing:
        raise KiloDbError(f"table {table!r} lacks {', '.join(sorted(missing))}")
    return columns


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def _session_rows(conn: sqlite3.Connection, where: str = "",
                  args: tuple[object, ...] = ()) -> list[SessionRow]:
    columns = _checked(conn, "session")
    picked = [c if c in columns else "NULL" for c in _SESSION_COLUMNS]
    query = f"SELECT {', '.join(picked)} FROM session {where}"  # columns: constants
    out: list[SessionRow] = []
    for sid, directory, title, parent, created, updated, _archived in conn.execute(query, args):
        if not isinstance(sid, str) or not sid:
            continue
        out.append(SessionRow(id=sid, directory=_text(directory), title=_text(title),
                              parent_id=_text(parent), time_created=_int(created),
                              time_updated=_int(updated) or 0))
    return out


def list_sessions(path: Path) -> list[SessionRow]:
    """Every session in the database that has a message (one opened and never asked anything
    is not a session yet). Raises ``KiloDbError``."""
    with snapshot(path) as conn:
        _checked(conn, "message")
        return _session_rows(
            conn, "WHERE EXISTS (SELECT 1 FROM message WHERE message.session_id = session.id)")


def _data(value: object) -> bytes:
    if isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode("utf-8", "surrogatepass")
    return b""


def read_session(path: Path, session_id: str | None
                 ) -> tuple[SessionRow | None, list[Row], list[Row], int]:
    """``(session, messages, parts, oversized)`` of one session (``None``: the most recently
    updated main session) from one consistent snapshot; rows whose ``data`` is over
    ``MAX_DATA_BYTES`` are counted in ``oversized`` and left out. Raises ``KiloDbError``."""
    with snapshot(path) as conn:
        _checked(conn, "message")
        _checked(conn, "part")
        if session_id is None:
            main = "parent_id IS NULL AND " if "parent_id" in _columns(conn, "session") else ""
            rows = _session_rows(conn, f"WHERE {main}EXISTS (SELECT 1 FROM message WHERE "
                                 "message.session_id = session.id) "
                                 "ORDER BY time_updated DESC LIMIT 1")
        else:
            rows = _session_rows(conn, "WHERE id = ?", (session_id,))
        if not rows:
            return None, [], [], 0
        session = rows[0]
        oversized = 0
        messages: list[Row] = []
        message_time = "time_created" if "time_created" in _columns(conn, "message") else "NULL"
        for mid, created, size, data in conn.execute(
                f"SELECT id, {message_time}, length(data), "
                f"CASE WHEN length(data) <= {MAX_DATA_BYTES} THEN data END "
                "FROM message WHERE session_id = ? ORDER BY 2, id", (session.id,)):
            if data is None:
                oversized += 1 if size else 0
                continue
            messages.append(Row(id=str(mid), owner=session.id, time_created=_int(created),
                                data=_data(data)))
        parts: list[Row] = []
        for pid, owner, size, data in conn.execute(
                "SELECT id, message_id, length(data), "
                f"CASE WHEN length(data) <= {MAX_DATA_BYTES} THEN data END "
                "FROM part WHERE session_id = ? ORDER BY message_id, id", (session.id,)):
            if data is None:
                oversized += 1 if size else 0
                continue
            parts.append(Row(id=str(pid), owner=str(owner), time_created=None, data=_data(data)))
        return session, messages, parts, oversized


def session_stamps(path: Path, ids: list[str]) -> dict[str, int]:
    """``{session id: time_updated}`` of the given sessions that still exist."""
    out: dict[str, int] = {}
    with snapshot(path) as conn:
        _checked(conn, "session")
        for start in range(0, len(ids), 500):
            chunk = ids[start:start + 500]
            marks = ", ".join("?" for _ in chunk)
            for sid, updated in conn.execute(
                    f"SELECT id, time_updated FROM session WHERE id IN ({marks})", chunk):
                out[str(sid)] = _int(updated) or 0
    return out
