"""Bring a project's search index up to date with its memory, notes and sessions.

Each source is indexed at a fingerprint and skipped while it has not changed. A grown session
is read only from where it grew: its transcript tail state is kept in the index, the appended
messages are analysed on their own and their documents added beside the earlier ones. A
session whose bytes were rewritten (or a format that revises itself: Gemini's JSON, Aider's
history) is indexed again whole. Sessions and files that are gone are forgotten.

Many sessions to read whole (a first build) are read in worker processes, one per CPU, while
this process writes what they return in the order it would have made it (``_indexed``).

Only one process updates a project's index at a time (``update.lock``, non-blocking): another
updater finding it taken returns at once and the search reads the index as it is.
"""

from __future__ import annotations

import hashlib
import logging
import os
import time
from collections.abc import Callable, Generator, Iterator
from contextlib import closing, contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, cast

import orjson
import portalocker

from reverie.analysis.analyser import SessionAnalyser
from reverie.analysis.working import Limits
from reverie.config import ProjectPaths
from reverie.memory import nofollow
from reverie.memory.store import visible_files
from reverie.redact import redact, redact_value
from reverie.search.documents import (
    Document,
    ReplyCollector,
    memory_documents,
    notes_documents,
    session_documents,
    short_title,
)
from reverie.search.index import INDEX_FILE, IndexUnavailable, SearchIndex, SourceRow
from reverie.transcripts import kilo_db
from reverie.transcripts.discovery import SessionRef, discover_sessions
from reverie.transcripts.editor_places import EditorPlaces
from reverie.transcripts.model import AgentName, Message, Session
from reverie.transcripts.reader import TranscriptError, TranscriptReader, is_kilo_db
from reverie.transcripts.tail import TailState, TranscriptTail

if TYPE_CHECKING:
    from multiprocessing.context import BaseContext

logger = logging.getLogger(__name__)

#: what the index keeps of each session (more than the notes writer: every request counts)
INDEX_LIMITS = Limits(requests_head=200, requests_tail=200, corrections=100, decisions=100,
                      errors=200, rules=100)
#: formats whose files are rewritten rather than appended to: indexed again whole
_REVISING = ("gemini-cli", "aider")
#: bytes before the resume offset that must be unchanged for an incremental read
_CHECK_BYTES = 64
#: sessions written per transaction
WRITE_BATCH = 32
#: at least this many sessions to read whole before worker processes are worth starting
PARALLEL_MIN = 16
#: sessions a worker is handed at a time
PARALLEL_CHUNK = 4


def index_dir(paths: ProjectPaths) -> Path:
    """Where a project's index lives: beside its notes and journals, never shared."""
    return paths.root / "search"


def index_path(paths: ProjectPaths) -> Path:
    return index_dir(paths) / INDEX_FILE


@dataclass
class UpdateReport:
    """What an update did (counted, never raised)."""

    sessions_indexed: int = 0
    sessions_grown: int = 0
    sessions_removed: int = 0
    notes_indexed: int = 0
    memory_files_indexed: int = 0
    skipped: list[str] = field(default_factory=list)
    busy: bool = False
    rebuilt: bool = False
    seconds: float = 0.0


@contextmanager
def update_lock(directory: Path) -> Iterator[bool]:
    """True when this process may update (nobody else is); never waits."""
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    lock = portalocker.Lock(str(directory / "update.lock"), mode="a", timeout=0,
                            flags=portalocker.LockFlags.EXCLUSIVE
                            | portalocker.LockFlags.NON_BLOCKING)
    try:
        lock.acquire()
    except (portalocker.LockException, OSError):
        yield False
        return
    try:
        yield True
    finally:
        lock.release()


def session_key(ref: SessionRef) -> str:
    return f"session:{ref.agent}:{ref.session_id}"


def _ref_fingerprint(ref: SessionRef) -> str | None:
    """What tells a session changed: its file's size and time, or for a session in Kilo's
    database (whose file changes with every project's sessions) the session's update time."""
    if is_kilo_db(ref.agent, ref.path):
        return f"kilo:{round(ref.updated_at.timestamp() * 1000)}" if ref.path.is_file() else None
    return _fingerprint(ref.path)


def _fingerprint(path: Path) -> str | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return f"{st.st_size}:{st.st_mtime_ns}:{st.st_ino}"


def _content_fingerprint(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=12).hexdigest()


# --- sessions ------------------------------------------------------------------------------


@dataclass
class _Indexed:
    docs: list[Document]
    session: Session
    state: bytes | None


def _analyse(messages: Iterator[Message] | list[Message], session: Session | None,
             workspace: Path, source: str, title: str | None) -> tuple[list[Document], Session]:
    analyser = SessionAnalyser(session, workspace, INDEX_LIMITS)
    replies = ReplyCollector()
    for message in messages:
        analyser.feed(message)
        replies.feed(message)
    final_session = session or Session(id="session", agent="generic", path=Path(source))
    analysis = analyser.result(final_session)
    return session_documents(analysis, replies.finish(), source=source,
                             title=title or final_session.title), final_session


def _stored_state(tail: TranscriptTail) -> bytes:
    """The tail state as kept in the index: redacted (the parsers' memo holds texts: Claude's
    sub-agent prompts, Codex's recent messages), and the raw bytes before the offset only as
    a hash (they are compared on resume, never needed as text)."""
    state = tail.state().model_dump(mode="json")
    check = bytes.fromhex(state.pop("check", "") or "")
    state["check_hash"] = hashlib.blake2b(check, digest_size=16).hexdigest() if check else ""
    if len(_STATE_MEMO) > _STATE_MEMO_SIZE:
        _STATE_MEMO.clear()
    clean, _ = redact_value(state, _STATE_MEMO)
    return orjson.dumps(clean)


#: ``redact``'s answers for the strings of tail states (every state repeats the same keys, and
#: a project's sessions their folder, agent and branch: ~80 % of the strings of a first build)
_STATE_MEMO: dict[str, tuple[str, int]] = {}
_STATE_MEMO_SIZE = 20_000


def _loaded_state(raw: bytes) -> TailState | None:
    """A stored state made whole again (its check bytes read back from the file when they
    hash the same), or None when the file changed before the offset or it is unreadable."""
    try:
        data = orjson.loads(raw)
        if not isinstance(data, dict):
            return None
        wanted = data.pop("check_hash", "")
        state = TailState.model_validate(data)
    except (ValueError, orjson.JSONDecodeError):
        return None
    try:
        st = state.path.stat()
        if (st.st_ino, st.st_dev) != (state.inode, state.device) or st.st_size < state.offset:
            return None
        check = b""
        if state.offset and wanted:
            with state.path.open("rb") as handle:
                start = max(0, state.offset - _CHECK_BYTES)
                handle.seek(start)
                check = handle.read(state.offset - start)
            if hashlib.blake2b(check, digest_size=16).hexdigest() != wanted:
                return None
    except OSError:
        return None
    return state.model_copy(update={"check": check.hex()})


def _whole_session(ref: SessionRef, workspace: Path) -> _Indexed:
    """Read and analyse a whole session; for append-only formats also the tail state."""
    if ref.agent in _REVISING or is_kilo_db(ref.agent, ref.path):
        reader = TranscriptReader(ref.path, ref.agent, session_id=ref.session_id)
        messages = list(reader)
        docs, session = _analyse(messages, reader.session, workspace, str(ref.path), None)
        return _Indexed(docs, session, None)
    tail = TranscriptTail(ref.path, ref.agent)
    messages = tail.read_new()
    session = tail.session
    docs, _ = _analyse(messages, session, workspace, str(ref.path), None)
    return _Indexed(docs, session, _stored_state(tail))


def _grown_session(ref: SessionRef, workspace: Path, raw_state: bytes,
                   title: str | None) -> _Indexed | None:
    """The documents of what was appended since ``raw_state``; None when it cannot resume."""
    state = _loaded_state(raw_state)
    if state is None or state.path != ref.path:
        return None
    tail = TranscriptTail.restore(state)
    messages = tail.read_new()
    session = tail.session
    docs, _ = _analyse(messages, session, workspace, str(ref.path), title)
    return _Indexed(docs, session, _stored_state(tail))


# --- the update ----------------------------------------------------------------------------


@dataclass
class ProjectSources:
    """Where one project's searchable things are."""

    workspace: Path
    agent_home: Path
    memory_dir: Path
    sessions_dir: Path
    #: where the editor's own agents keep their sessions (default: detected)
    editor: EditorPlaces | None = None

    @classmethod
    def of(cls, paths: ProjectPaths, editor: EditorPlaces | None = None) -> ProjectSources:
        return cls(workspace=paths.workspace, agent_home=paths.settings.agent_home,
                   memory_dir=paths.memory_dir, sessions_dir=paths.sessions_dir, editor=editor)


def update_index(
    index: SearchIndex, sources: ProjectSources, *,
    sessions: bool = True, deadline: float | None = None,
    on_session: Callable[[SessionRef], None] | None = None, discover: bool = True,
) -> UpdateReport:
    """Index what changed since the last update. ``deadline`` (``time.monotonic``) stops
    between sessions: the rest is picked up next time. Problems are counted, not raised,
    except ``IndexUnavailable`` (busy or unwritable index)."""
    started = time.monotonic()
    report = UpdateReport(rebuilt=index.rebuilt)
    if sessions:
        _update_sessions(index, sources, report, deadline, on_session, discover)
    _update_memory(index, sources.memory_dir, report)
    _update_notes(index, sources.sessions_dir, report)
    report.seconds = time.monotonic() - started
    return report


@dataclass
class _Work:
    ref: SessionRef
    key: str
    fingerprint: str
    state: bytes | None
    title: str | None


@dataclass
class _Done:
    work: _Work
    indexed: _Indexed | None
    grown: bool
    error: str | None = None


def index_session(work: _Work, workspace: Path) -> _Done:
    """Index one session (from where it grew when its stored state still fits)."""
    ref = work.ref
    try:
        grown = None
        if work.state is not None and ref.agent not in _REVISING \
                and not is_kilo_db(ref.agent, ref.path):
            grown = _grown_session(ref, workspace, work.state, work.title)
        if grown is not None:
            return _Done(work, grown, True)
        return _Done(work, _whole_session(ref, workspace), False)
    except (TranscriptError, OSError, ValueError) as exc:
        return _Done(work, None, False, f"{ref.path.name}: {exc}")


def _update_sessions(
    index: SearchIndex, sources: ProjectSources, report: UpdateReport, deadline: float | None,
    on_session: Callable[[SessionRef], None] | None, discover: bool = True,
) -> None:
    rows = index.sources("session", with_state=False)
    if discover:
        try:
            refs = [r for r in discover_sessions(sources.workspace, sources.agent_home,
                                                 sources.editor)
                    if not r.is_subagent]
        except OSError as exc:
            report.skipped.append(f"sessions: {exc}")
            return
        current = {session_key(r) for r in refs}
        stale = [key for key in rows if key not in current]
    else:
        refs, stale = _known_changes(rows)
    if stale:
        with index.writing():
            for key in stale:
                index.remove_source(key)
        report.sessions_removed += len(stale)
    work: list[_Work] = []
    for ref in sorted(refs, key=lambda r: r.updated_at):
        key = session_key(ref)
        fingerprint = _ref_fingerprint(ref)
        if fingerprint is None:
            continue  # deleted under us: forgotten on the next update
        row = rows.get(key)
        if row is not None and row.fingerprint == fingerprint:
            continue
        full = index.source(key) if row is not None else None
        work.append(_Work(ref, key, fingerprint, full.state if full else None,
                          full.title if full else None))
    batch: list[_Done] = []
    # closed on leaving the loop (the budget, an unwritable index): a pool stops at once
    with closing(_indexed(work, sources.workspace, _workers(work))) as results:
        for done in results:
            if on_session is not None:
                on_session(done.work.ref)
            if done.error is not None:
                report.skipped.append(done.error)
            else:
                batch.append(done)
            if len(batch) >= WRITE_BATCH:
                _write(index, batch, report)
                batch = []
            if deadline is not None and time.monotonic() > deadline:
                report.skipped.append("time budget reached; the rest is indexed next time")
                break
    if batch:
        _write(index, batch, report)


def _workers(work: list[_Work]) -> int:
    """How many worker processes read the sessions: one per CPU when many sessions are read
    whole (a first build, a rebuild) and the CPUs are not all busy already; none (this
    process) otherwise, or in a daemon process (which may not start children).

    Measured on two cores: with a core idle, workers cut a first build's time by ~30 %; with
    both busy (load 4-7) they gain nothing and cost ~30 % more CPU time (switching, caches)."""
    whole = sum(1 for item in work if item.state is None)
    if whole < PARALLEL_MIN:
        return 0
    # here, not at the top: only a large update pays for ``multiprocessing``'s import
    import multiprocessing

    if multiprocessing.current_process().daemon:
        return 0
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cpus = os.cpu_count() or 1
    try:
        busy = os.getloadavg()[0]
    except (AttributeError, OSError):  # not known here (Windows)
        busy = 0.0
    if cpus < 2 or busy >= cpus:
        return 0
    return min(cpus, whole // PARALLEL_CHUNK)


def _indexed(work: list[_Work], workspace: Path, workers: int) -> Generator[_Done]:
    """``index_session`` of every item, in order: in this process, or (``workers`` > 1) in a
    pool of worker processes that parse, analyse and redact while this process writes.
    A pool that breaks (a worker killed) leaves the rest to this process."""
    if workers < 2:
        yield from (index_session(item, workspace) for item in work)
        return
    # here, not at the top: ``concurrent.futures.process`` loads ``multiprocessing``
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool
    from itertools import repeat

    context = _pool_context()
    if context is None:
        yield from (index_session(item, workspace) for item in work)
        return
    redact("warm up")  # the scanner's tables, built once here and inherited by forked workers
    done = 0
    executor = ProcessPoolExecutor(max_workers=workers, mp_context=context)
    try:
        results = executor.map(index_session, work, repeat(workspace), chunksize=PARALLEL_CHUNK)
        for result in results:
            done += 1
            yield result
    except (BrokenProcessPool, OSError) as exc:  # a worker killed; no processes to be had
        logger.warning("search index workers stopped (%s); indexing the rest here", exc)
    finally:
        executor.shutdown(wait=True, cancel_futures=True)
    yield from (index_session(item, workspace) for item in work[done:])


def _pool_context() -> BaseContext | None:
    """``fork`` where it is safe: on Linux, from a process with one thread (the CLI, the
    language server's worker process); it starts at once and inherits the loaded modules.
    Otherwise ``forkserver`` (a process with threads, like the MCP server, must not fork),
    which imports this module once per process; None where there is neither (Windows)."""
    import multiprocessing
    import sys
    import threading

    methods = multiprocessing.get_all_start_methods()
    if sys.platform.startswith("linux") and threading.active_count() == 1 and "fork" in methods:
        return multiprocessing.get_context("fork")
    if "forkserver" in methods:
        context = multiprocessing.get_context("forkserver")
        context.set_forkserver_preload([__name__])
        return context
    return None


def _known_changes(rows: dict[str, SourceRow]) -> tuple[list[SessionRef], list[str]]:
    """Of the sessions the index already holds, the ones whose file changed and the ones whose
    file is gone: one ``stat`` each, no discovery (which reads every transcript's head)."""
    changed: list[SessionRef] = []
    gone: list[str] = []
    kilo: dict[str, dict[str, SourceRow]] = {}
    for key, row in rows.items():
        if not row.path or not row.session_id or not row.agent:
            continue
        if is_kilo_db(cast("AgentName", row.agent), Path(row.path)):
            kilo.setdefault(row.path, {})[key] = row
            continue
        try:
            st = os.stat(row.path)
        except OSError:
            gone.append(key)
            continue
        if f"{st.st_size}:{st.st_mtime_ns}:{st.st_ino}" == row.fingerprint:
            continue
        changed.append(SessionRef(
            agent=cast("AgentName", row.agent), session_id=row.session_id, path=Path(row.path),
            updated_at=datetime.fromtimestamp(st.st_mtime, UTC)))
    for db, held in kilo.items():
        _kilo_changes(Path(db), held, changed, gone)
    return changed, gone


def _kilo_changes(db: Path, rows: dict[str, SourceRow], changed: list[SessionRef],
                  gone: list[str]) -> None:
    """The indexed sessions of one Kilo database whose update time moved, or that are gone
    (one query; a database that cannot be read now is left for the next update)."""
    if not db.is_file():
        gone.extend(rows)
        return
    try:
        stamps = kilo_db.session_stamps(db, [r.session_id for r in rows.values() if r.session_id])
    except kilo_db.KiloDbError:
        return
    for key, row in rows.items():
        stamp = stamps.get(row.session_id or "")
        if stamp is None:
            gone.append(key)
        elif f"kilo:{stamp}" != row.fingerprint:
            changed.append(SessionRef(agent="kilo-code", session_id=row.session_id or "",
                                      path=db, updated_at=datetime.fromtimestamp(stamp / 1000,
                                                                                  UTC)))


def _write(index: SearchIndex, batch: list[_Done], report: UpdateReport) -> None:
    """Store a batch of indexed sessions in one transaction, each only if no other process
    changed its row since it was read."""
    with index.writing():
        for done in batch:
            work, indexed = done.work, done.indexed
            assert indexed is not None
            latest = index.source(work.key)
            if latest is not None and latest.fingerprint == work.fingerprint:
                continue
            if done.grown and (latest is None or latest.state != work.state):
                continue  # changed by another process since we read it: next update
            session = indexed.session
            title = (work.title if done.grown else None) \
                or (short_title(session.title) if session.title else None) \
                or (indexed.docs[0].title if indexed.docs else None)
            index.put_source(
                work.key, "session", work.fingerprint, indexed.docs, state=indexed.state,
                append=done.grown, session_id=work.ref.session_id, agent=work.ref.agent,
                at=session.updated_at or work.ref.updated_at, title=title,
                path=str(work.ref.path))
            if done.grown:
                report.sessions_grown += 1
            else:
                report.sessions_indexed += 1


def _update_memory(index: SearchIndex, memory_dir: Path, report: UpdateReport) -> None:
    rows = index.sources("memory")
    seen: set[str] = set()
    try:
        names = [n for n in visible_files(memory_dir) if n.endswith(".md")] \
            if memory_dir.is_dir() else []
    except OSError as exc:
        report.skipped.append(f"memory: {exc}")
        names = []
    for name in names:
        key = f"memory:{name}"
        seen.add(key)
        try:
            data = nofollow.read_file(memory_dir / name)
        except OSError as exc:
            report.skipped.append(f"{name}: {exc}")
            continue
        fingerprint = _content_fingerprint(data)
        row = rows.get(key)
        if row is not None and row.fingerprint == fingerprint:
            continue
        docs = memory_documents(memory_dir, name, data.decode("utf-8", "replace"))
        with index.writing():
            index.put_source(key, "memory", fingerprint, docs)
        report.memory_files_indexed += 1
    gone = [k for k in rows if k not in seen]
    if gone:
        with index.writing():
            for key in gone:
                index.remove_source(key)


def _update_notes(index: SearchIndex, sessions_dir: Path, report: UpdateReport) -> None:
    rows = index.sources("notes")
    sessions = index.sources("session")
    by_id = {row.session_id: row for row in sessions.values() if row.session_id}
    seen: set[str] = set()
    try:
        dirs = sorted(d for d in sessions_dir.iterdir() if d.is_dir()) \
            if sessions_dir.is_dir() else []
    except OSError as exc:
        report.skipped.append(f"notes: {exc}")
        dirs = []
    for directory in dirs:
        path = directory / "session_memory.md"
        if not path.is_file() or path.is_symlink():
            continue
        session_id = _notes_session_id(directory)
        key = f"notes:{directory.name}"
        seen.add(key)
        try:
            data = path.read_bytes()
            mtime = path.stat().st_mtime
        except OSError as exc:
            report.skipped.append(f"{path}: {exc}")
            continue
        fingerprint = _content_fingerprint(data)
        row = rows.get(key)
        if row is not None and row.fingerprint == fingerprint:
            continue
        session = by_id.get(session_id)
        at = datetime.fromtimestamp(session.at, UTC) if session and session.at else \
            datetime.fromtimestamp(mtime, UTC)
        docs = notes_documents(data.decode("utf-8", "replace"), session_id=session_id,
                               agent=session.agent if session else None, at=at,
                               source=str(path))
        with index.writing():
            index.put_source(key, "notes", fingerprint, docs, session_id=session_id,
                             agent=session.agent if session else None, at=at)
        report.notes_indexed += 1
    gone = [k for k in rows if k not in seen]
    if gone:
        with index.writing():
            for key in gone:
                index.remove_source(key)


def _notes_session_id(directory: Path) -> str:
    """The session id a notes directory belongs to (its state file says; else its name)."""
    state = directory / "session_memory.state.json"
    try:
        data = orjson.loads(state.read_bytes())
        value = data.get("session_id") if isinstance(data, dict) else None
        if isinstance(value, str) and value:
            return value
    except (OSError, orjson.JSONDecodeError):
        pass
    return directory.name


def open_index(paths: ProjectPaths, *, read_only: bool = False) -> SearchIndex:
    """The project's index (created, or built again when damaged)."""
    return SearchIndex(index_path(paths), paths.workspace, read_only=read_only)


def refresh(paths: ProjectPaths, *, sessions: bool = True,
            deadline: float | None = None, discover: bool = True,
            editor: EditorPlaces | None = None) -> UpdateReport:
    """Open, update and close the project's index; busy (another updater) is reported."""
    directory = index_dir(paths)
    with update_lock(directory) as mine:
        if not mine:
            return UpdateReport(busy=True)
        with open_index(paths) as index:
            try:
                return update_index(index, ProjectSources.of(paths, editor),
                                    sessions=sessions, deadline=deadline, discover=discover)
            except IndexUnavailable:
                return UpdateReport(busy=True)


__all__ = ["ProjectSources", "UpdateReport", "index_path", "open_index", "refresh",
           "update_index", "update_lock"]
