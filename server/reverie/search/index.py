"""The search index of one project: a SQLite database with an FTS5 table (stdlib ``sqlite3``).

Tables: ``meta`` (schema version, the workspace it belongs to), ``sources`` (one row per
indexed thing: a session, a notes file, a memory file, with the fingerprint it was indexed at
and, for a session, the transcript tail state to resume from), ``documents`` (what each hit
needs besides its text) and ``fts`` (title, body and identifier parts; rowid = document id).

The index is derived data: a corrupt file, another schema or another workspace's index at the
same path is deleted and built again, never an exception for the caller. Writes are WAL
transactions, so a search reads a consistent index while an update runs in another process.
"""

from __future__ import annotations

import math
import os
import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from reverie.errors import ReverieError
from reverie.search.query import identifier_parts, match_expression

if TYPE_CHECKING:  # documents imports the analysis and memory stacks: not for the prompt hook
    from reverie.search.documents import Document, Kind

# (no module-level logger: ``logging`` is imported when there is something to log, so the
# prompt hook, which imports this module before every prompt, does not pay for it)

SCHEMA_VERSION = "3"
INDEX_FILE = "index.sqlite3"
#: how long a statement waits for another process's write before giving up (seconds)
BUSY_TIMEOUT = 2.0
#: BM25 weights of the fts columns: title, body, identifier parts
COLUMN_WEIGHTS = (2.0, 1.0, 0.5)
#: memory > notes > raw session text
KIND_WEIGHTS: dict[str, float] = {"memory": 1.6, "notes": 1.25, "session": 1.0}
#: lists (files, commands) match many words by being long lists: a little below the prose
LABEL_WEIGHTS: dict[str, float] = {"files": 0.7, "commands": 0.85}
#: a hit this many days older than the newest document keeps about 80% of its score
RECENCY_DAYS = 60.0

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS sources(
    key TEXT PRIMARY KEY,
    kind TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    state BLOB,
    segments INTEGER NOT NULL DEFAULT 1,
    session_id TEXT,
    agent TEXT,
    at REAL,
    title TEXT,
    path TEXT
);
CREATE TABLE IF NOT EXISTS documents(
    id INTEGER PRIMARY KEY,
    source_key TEXT NOT NULL,
    kind TEXT NOT NULL,
    session_id TEXT,
    agent TEXT,
    at REAL,
    label TEXT NOT NULL,
    anchor TEXT NOT NULL,
    source TEXT NOT NULL,
    title TEXT NOT NULL,
    chars INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS documents_by_source ON documents(source_key);
CREATE INDEX IF NOT EXISTS documents_by_session ON documents(session_id);
CREATE VIRTUAL TABLE IF NOT EXISTS fts USING fts5(
    title, body, terms, tokenize = 'porter unicode61 remove_diacritics 2'
);
"""


class IndexUnavailable(ReverieError):
    """The index cannot be opened or written now (locked by another process, disk full,
    permissions); the message says which, in one line."""


class SourceRow(NamedTuple):
    key: str
    kind: str
    fingerprint: str
    state: bytes | None
    segments: int
    session_id: str | None
    agent: str | None
    at: float | None
    title: str | None
    path: str | None


class Hit(NamedTuple):
    """One ranked document."""

    doc_id: int
    kind: Kind
    session_id: str | None
    agent: str | None
    at: datetime | None
    title: str
    label: str
    anchor: str
    source: str
    snippet: str
    chars: int
    bm25: float
    score: float

    @property
    def day(self) -> str | None:
        return self.at.date().isoformat() if self.at is not None else None


class IndexStats(NamedTuple):
    sessions: int
    documents: int


def _timestamp(at: datetime | None) -> float | None:
    if at is None:
        return None
    return (at if at.tzinfo else at.replace(tzinfo=UTC)).timestamp()


def _remove_files(path: Path) -> None:
    for suffix in ("", "-wal", "-shm", "-journal"):
        try:
            os.unlink(f"{path}{suffix}")
        except FileNotFoundError:
            pass


class SearchIndex:
    """One project's index. Not thread-safe: one instance per thread."""

    def __init__(self, path: Path, workspace: Path, *, read_only: bool = False) -> None:
        self.path = path
        self.workspace = str(workspace)
        self.read_only = read_only
        self.rebuilt = False
        self._db = self._open()

    # --- opening -------------------------------------------------------------------------
    def _open(self) -> sqlite3.Connection:
        try:
            return self._connect()
        except sqlite3.OperationalError as exc:
            if "locked" in str(exc) or "busy" in str(exc):
                raise IndexUnavailable(f"the search index is busy: {exc}") from None
            if self.read_only:
                raise IndexUnavailable(f"the search index cannot be read: {exc}") from None
            return self._rebuild(str(exc))
        except sqlite3.DatabaseError as exc:  # not a database, malformed
            if self.read_only:
                raise IndexUnavailable(f"the search index is damaged: {exc}") from None
            return self._rebuild(str(exc))

    def _rebuild(self, reason: str) -> sqlite3.Connection:
        import logging

        logging.getLogger(__name__).warning(
            "search index %s is unusable (%s): building it again", self.path, reason)
        _remove_files(self.path)
        self.rebuilt = True
        try:
            return self._connect()
        except sqlite3.Error as exc:
            raise IndexUnavailable(f"the search index cannot be created: {exc}") from None

    def _connect(self) -> sqlite3.Connection:
        if self.read_only:
            if not self.path.is_file():
                raise IndexUnavailable("no search index yet")
            db = sqlite3.connect(f"{self.path.absolute().as_uri()}?mode=ro", uri=True,
                                 timeout=BUSY_TIMEOUT,
                                 isolation_level=None, check_same_thread=False)
            try:
                self._check(db)
            except BaseException:
                db.close()
                raise
            return db
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fresh = not self.path.exists()
        db = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT, isolation_level=None,
                             check_same_thread=False)
        try:
            if fresh:
                os.chmod(self.path, 0o600)
            db.execute("PRAGMA synchronous=NORMAL")
            version = {} if fresh else self._meta(db)
            if not version:
                db.execute("PRAGMA journal_mode=WAL")
                db.executescript(_SCHEMA)
                version = dict(db.execute("SELECT key, value FROM meta").fetchall())
            if not version:
                with _transaction(db):
                    db.executemany("INSERT OR REPLACE INTO meta VALUES (?, ?)",
                                   [("schema", SCHEMA_VERSION), ("workspace", self.workspace)])
            elif version.get("schema") != SCHEMA_VERSION or \
                    version.get("workspace") != self.workspace:
                raise sqlite3.DatabaseError(
                    f"index of schema {version.get('schema')} for "
                    f"{version.get('workspace')!r}")
            db.execute("SELECT count(*) FROM fts WHERE fts MATCH 'x'").fetchone()
        except BaseException:
            db.close()
            raise
        return db

    @staticmethod
    def _meta(db: sqlite3.Connection) -> dict[str, str]:
        try:
            return dict(db.execute("SELECT key, value FROM meta").fetchall())
        except sqlite3.OperationalError as exc:
            if "no such table" in str(exc):
                return {}
            raise

    def _check(self, db: sqlite3.Connection) -> None:
        version = dict(db.execute("SELECT key, value FROM meta").fetchall())
        if version.get("schema") != SCHEMA_VERSION or version.get("workspace") != self.workspace:
            raise IndexUnavailable("the search index is from another version or project")

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> SearchIndex:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- writing -------------------------------------------------------------------------
    @contextmanager
    def writing(self) -> Iterator[None]:
        """One write transaction (``BEGIN IMMEDIATE``); a busy index is ``IndexUnavailable``."""
        try:
            with _transaction(self._db):
                yield
        except sqlite3.OperationalError as exc:
            raise IndexUnavailable(f"the search index could not be written: {exc}") from None

    def sources(self, kind: str | None = None, *, with_state: bool = True
                ) -> dict[str, SourceRow]:
        """Every source (of ``kind``); without their tail states unless ``with_state``."""
        state = "state" if with_state else "NULL"
        sql = (f"SELECT key, kind, fingerprint, {state}, segments, session_id, agent, at, "
               "title, path FROM sources")
        rows = self._db.execute(sql + (" WHERE kind = ?" if kind else ""),
                                (kind,) if kind else ()).fetchall()
        return {row[0]: SourceRow(*row) for row in rows}

    def source(self, key: str) -> SourceRow | None:
        row = self._db.execute(
            "SELECT key, kind, fingerprint, state, segments, session_id, agent, at, title, "
            "path FROM sources WHERE key = ?", (key,)).fetchone()
        return SourceRow(*row) if row else None

    def put_source(
        self, key: str, kind: str, fingerprint: str, docs: Sequence[Document], *,
        state: bytes | None = None, append: bool = False, session_id: str | None = None,
        agent: str | None = None, at: datetime | None = None, title: str | None = None,
        path: str | None = None,
    ) -> None:
        """Replace a source's documents (or, ``append``, add to them) and record where it was
        indexed to. Call inside ``writing()``."""
        db = self._db
        segments = 1
        if append:
            row = db.execute("SELECT segments FROM sources WHERE key = ?", (key,)).fetchone()
            segments = (row[0] if row else 0) + 1
        else:
            self._delete_documents(key)
        for doc in docs:
            cursor = db.execute(
                "INSERT INTO documents(source_key, kind, session_id, agent, at, label, anchor, "
                "source, title, chars) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (key, doc.kind, doc.session_id, doc.agent, _timestamp(doc.at), doc.label,
                 doc.anchor, doc.source, doc.title, len(doc.title) + len(doc.body)))
            # a session's title is the same in all its documents: searchable once (the
            # first request holds it), not in every one, or it would outweigh the bodies
            searchable_title = doc.title if doc.kind != "session" else ""
            db.execute("INSERT INTO fts(rowid, title, body, terms) VALUES (?, ?, ?, ?)",
                       (cursor.lastrowid, searchable_title, doc.body,
                        identifier_parts(searchable_title + " " + doc.body)))
        db.execute(
            "INSERT OR REPLACE INTO sources(key, kind, fingerprint, state, segments, session_id, "
            "agent, at, title, path) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (key, kind, fingerprint, state, segments, session_id, agent, _timestamp(at), title,
             path))

    def remove_source(self, key: str) -> None:
        """Forget a source and its documents. Call inside ``writing()``."""
        self._delete_documents(key)
        self._db.execute("DELETE FROM sources WHERE key = ?", (key,))

    def _delete_documents(self, key: str) -> None:
        ids = [r[0] for r in self._db.execute(
            "SELECT id FROM documents WHERE source_key = ?", (key,))]
        if ids:
            self._db.executemany("DELETE FROM fts WHERE rowid = ?", [(i,) for i in ids])
            self._db.execute("DELETE FROM documents WHERE source_key = ?", (key,))

    # --- reading -------------------------------------------------------------------------
    def stats(self) -> IndexStats:
        try:
            sessions = self._db.execute(
                "SELECT count(*) FROM sources WHERE kind = 'session'").fetchone()[0]
            documents = self._db.execute("SELECT count(*) FROM documents").fetchone()[0]
        except sqlite3.DatabaseError as exc:
            raise IndexUnavailable(f"the search index could not be read: {exc}") from None
        return IndexStats(sessions=int(sessions), documents=int(documents))

    def search(
        self, terms: list[str], *, limit: int = 10, agent: str | None = None,
        since: datetime | None = None, kinds: Iterable[str] | None = None,
        per_group: int = 1, pool: int | None = None,
    ) -> list[Hit]:
        """Ranked hits: BM25 (title weighed above body) times the kind's weight times a mild
        recency factor, at most ``per_group`` hits per session (per topic file for memory)."""
        expression = match_expression(terms)
        if expression is None or limit <= 0:
            return []
        where = ["fts MATCH ?"]
        params: list[object] = [expression]
        if agent:
            where.append("d.agent = ?")
            params.append(agent)
        if since is not None:
            where.append("d.at >= ?")
            params.append(_timestamp(since))
        kind_list = list(kinds or [])
        if kind_list:
            where.append(f"d.kind IN ({', '.join('?' * len(kind_list))})")
            params.extend(kind_list)
        weights = ", ".join(str(w) for w in COLUMN_WEIGHTS)
        joined = len(where) > 1
        # ranked ids first; the snippets only for the hits kept (SQLite computes every
        # result column of every row it sorts, and a snippet is the costly one)
        sql = (f"SELECT fts.rowid, bm25(fts, {weights}) AS r FROM fts "
               + ("JOIN documents d ON d.id = fts.rowid " if joined else "")
               + f"WHERE {' AND '.join(where)} ORDER BY r LIMIT ?")
        params.append(pool or max(limit * 8, 64))
        try:
            ranked = self._db.execute(sql, params).fetchall()
            ids = [row[0] for row in ranked]
            meta = {row[0]: row for row in self._db.execute(
                "SELECT id, kind, session_id, agent, at, title, label, anchor, source, chars "
                f"FROM documents WHERE id IN ({', '.join('?' * len(ids))})", ids)} if ids else {}
        except sqlite3.DatabaseError as exc:
            raise IndexUnavailable(f"the search index could not be read: {exc}") from None
        newest = max((m[4] for m in meta.values() if m[4] is not None), default=None)
        scored: list[tuple[float, float, tuple[Any, ...]]] = []
        for doc_id, bm25 in ranked:
            row = meta.get(doc_id)
            if row is None:
                continue
            kind, at, label = row[1], row[4], row[6]
            recency = 1.0
            if newest is not None and at is not None:
                age_days = max(0.0, (newest - at) / 86_400)
                recency = 0.7 + 0.3 * math.exp(-age_days / (RECENCY_DAYS * 1.5))
            score = -float(bm25) * KIND_WEIGHTS.get(kind, 1.0) \
                * LABEL_WEIGHTS.get(label, 1.0) * recency
            scored.append((score, float(bm25), row))
        scored.sort(key=lambda item: -item[0])
        taken: dict[tuple[str, str], int] = {}
        out: list[Hit] = []
        for score, bm25, row in scored:
            (doc_id, kind, session_id, agent_name, at, title, label, anchor, source,
             chars) = row
            group = (str(kind), str(source) if kind == "memory" else str(session_id or ""))
            if taken.get(group, 0) >= per_group:
                continue
            taken[group] = taken.get(group, 0) + 1
            out.append(Hit(
                doc_id=doc_id, kind=kind, session_id=session_id, agent=agent_name,
                at=datetime.fromtimestamp(at, UTC) if at is not None else None,
                title=title, label=label, anchor=anchor, source=source,
                snippet=self._snippet(expression, doc_id), chars=chars,
                bm25=bm25, score=round(score, 4)))
            if len(out) >= limit:
                break
        return out

    def _snippet(self, expression: str, doc_id: int) -> str:
        try:
            row = self._db.execute(
                "SELECT snippet(fts, 1, '', '', '…', 40) FROM fts WHERE fts MATCH ? "
                "AND rowid = ?", (expression, doc_id)).fetchone()
        except sqlite3.DatabaseError:
            return ""
        return str(row[0]) if row else ""

    def document_text(self, doc_id: int) -> tuple[str, str] | None:
        row = self._db.execute(
            "SELECT d.title, f.body FROM documents d JOIN fts f ON f.rowid = d.id "
            "WHERE d.id = ?", (doc_id,)).fetchone()
        return (row[0], row[1]) if row else None

    def session_documents(self, session_id: str) -> list[tuple[str, str, str]]:
        """``(label, title, body)`` of one session's documents, oldest first."""
        rows = self._db.execute(
            "SELECT d.label, d.title, f.body FROM documents d JOIN fts f ON f.rowid = d.id "
            "WHERE d.session_id = ? AND d.kind = 'session' ORDER BY d.at, d.id",
            (session_id,)).fetchall()
        return [(r[0], r[1], r[2]) for r in rows]

    def term_frequencies(self, terms: Sequence[str]) -> tuple[int, dict[str, int]]:
        """How many documents there are, and how many hold each term (for relevance)."""
        total = int(self._db.execute("SELECT count(*) FROM documents").fetchone()[0])
        counts: dict[str, int] = {}
        for term in terms:
            expression = match_expression([term])
            if expression is None:
                continue
            counts[term] = int(self._db.execute(
                "SELECT count(*) FROM fts WHERE fts MATCH ?", (expression,)).fetchone()[0])
        return total, counts


@contextmanager
def _transaction(db: sqlite3.Connection) -> Iterator[None]:
    db.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")
