"""The first full build's fast paths are the reference paths' results: worker processes build
the same index as this process alone, and the tail states' memoised redaction is
``redact_value``'s."""

from __future__ import annotations

import multiprocessing
import os
import sqlite3
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reverie.config import ProjectPaths
from reverie.redact import redact_value
from reverie.search import update
from reverie.search.update import _Done, _indexed, _pool_context, _Work, index_path, refresh
from reverie.transcripts.reader import TranscriptError, TranscriptReader, detect_agent
from reverie.transcripts.refs import SessionRef
from reverie.transcripts.tail import TranscriptTail

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "transcripts"
TRANSCRIPTS = sorted(p for p in FIXTURES.rglob("*") if p.is_file() and p.name != "SOURCES.md")
SECRETS = ["ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8", "AKIA" + "Z7Q4MXT2LKJ8PRW5",
           "postgres://admin:" + "s3cr3t-Passw0rd@db.example.com/app",
           "sk-" + "proj-9fJ2kL8mQ4rT6vX1zB3nD5hG7"]


def _work(path: Path) -> _Work | None:
    agent = detect_agent(path)
    if agent is None:
        return None
    ref = SessionRef(agent=agent, session_id=path.stem, path=path,
                     updated_at=datetime.fromtimestamp(path.stat().st_mtime, UTC))
    return _Work(ref, f"session:{agent}:{path.stem}", "fp", None, None)


def _shape(done: _Done) -> tuple[Any, ...]:
    if done.indexed is None:
        return (done.work.key, done.error)
    return (done.work.key, done.grown, done.indexed.docs, done.indexed.state,
            done.indexed.session.model_dump(mode="json"))


def _transcript_work() -> list[_Work]:
    work = [w for w in (_work(p) for p in TRANSCRIPTS) if w is not None]
    assert len(work) >= 20  # every agent's fixtures, not a handful
    return work


def test_worker_processes_index_every_fixture_as_this_process_does(workspace: Path) -> None:
    work = _transcript_work()
    alone = [_shape(d) for d in _indexed(work, workspace, 0)]
    pooled = [_shape(d) for d in _indexed(work, workspace, 2)]
    assert pooled == alone
    assert sum(1 for s in alone if len(s) > 2 and s[2]) >= 10  # documents were made


def test_a_process_with_threads_uses_a_forkserver_and_gets_the_same(workspace: Path) -> None:
    work = _transcript_work()[:6]
    found: dict[str, Any] = {}

    def run() -> None:
        found["context"] = _pool_context()
        found["pooled"] = [_shape(d) for d in _indexed(work, workspace, 2)]

    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    context = found["context"]
    assert context is not None and context.get_start_method() == "forkserver"
    assert found["pooled"] == [_shape(d) for d in _indexed(work, workspace, 0)]


def _die_in_worker(parent: int, victim: str) -> Callable[[_Work, Path], _Done]:
    original = update.index_session

    def index_session(work: _Work, workspace: Path) -> _Done:
        if os.getpid() != parent and work.key == victim:
            os._exit(1)  # a worker killed (out of memory, a signal)
        return original(work, workspace)

    # pickled by name: the (forked) workers resolve the module's attribute, this function
    index_session.__module__ = original.__module__
    index_session.__qualname__ = original.__qualname__
    return index_session


def test_a_broken_pool_leaves_the_rest_to_this_process(
        workspace: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture,
) -> None:
    work = _transcript_work()
    alone = [_shape(d) for d in _indexed(work, workspace, 0)]
    monkeypatch.setattr(update, "index_session",
                        _die_in_worker(os.getpid(), work[len(work) // 2].key))
    assert [_shape(d) for d in _indexed(work, workspace, 2)] == alone
    assert "workers stopped" in caplog.text


def _dump(paths: ProjectPaths) -> dict[str, list[tuple[Any, ...]]]:
    with sqlite3.connect(index_path(paths)) as db:
        return {
            "documents": db.execute("SELECT * FROM documents ORDER BY id").fetchall(),
            "fts": db.execute("SELECT rowid, title, body, terms FROM fts ORDER BY rowid")
            .fetchall(),
            "sources": db.execute("SELECT * FROM sources ORDER BY key").fetchall(),
        }


def _install_sessions(install: Callable[..., Path], paths: ProjectPaths,
                      make_session: Callable[..., str]) -> None:
    for n in range(24):
        session_id = f"{n:08x}-0000-4000-8000-000000000000"
        install(make_session(session_id, paths.workspace, [
            (f"fix the flaky test number {n} in the parser", "Fixed: the parser test now "
             f"passes; it waited on a timer (case {n}) and the token {SECRETS[n % 4]} leaked"),
            ("now run the whole suite please", "All 412 tests pass after the change to the "
             "parser's timer handling."),
        ], start_minute=n), session_id)


def test_a_first_build_in_workers_stores_what_a_build_here_stores(
        install: Callable[..., Path], paths: ProjectPaths, make_session: Callable[..., str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    _install_sessions(install, paths, make_session)
    monkeypatch.setattr(update, "_workers", lambda work: 0)
    assert refresh(paths).sessions_indexed == 24
    alone = _dump(paths)
    index_path(paths).unlink()
    monkeypatch.setattr(update, "_workers", lambda work: 2)
    assert refresh(paths).sessions_indexed == 24
    pooled = _dump(paths)
    assert pooled == alone
    text = repr(pooled) + "".join(row[3].decode() for row in pooled["sources"] if row[3])
    assert not any(secret in text for secret in SECRETS)


def test_a_build_in_workers_stops_at_its_budget_and_the_next_update_finishes(
        install: Callable[..., Path], paths: ProjectPaths, make_session: Callable[..., str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    _install_sessions(install, paths, make_session)
    monkeypatch.setattr(update, "_workers", lambda work: 2)
    first = update.refresh(paths, deadline=time.monotonic())
    assert 1 <= first.sessions_indexed < 24
    assert any("time budget" in s for s in first.skipped)
    assert not multiprocessing.active_children()  # the pool was shut down
    rest = update.refresh(paths)
    assert rest.sessions_indexed == 24 - first.sessions_indexed


def test_many_new_sessions_start_workers_and_a_few_do_not(
        workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    work = _transcript_work()
    many = (work * 4)[:update.PARALLEL_MIN * 2]
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1, 2, 3}, raising=False)
    monkeypatch.setattr(os, "getloadavg", lambda: (0.5, 0.5, 0.5))
    assert update._workers(many) == 4
    assert update._workers(many[:update.PARALLEL_MIN]) == update.PARALLEL_MIN // 4
    monkeypatch.setattr(os, "getloadavg", lambda: (4.2, 3.0, 2.0))
    assert update._workers(many) == 0  # every CPU busy already: workers only add switching
    monkeypatch.setattr(os, "getloadavg", lambda: (0.0, 0.0, 0.0))
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0}, raising=False)
    assert update._workers(many) == 0  # one CPU
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1, 2, 3}, raising=False)
    assert update._workers(many[:update.PARALLEL_MIN - 1]) == 0
    grown = [_Work(w.ref, w.key, w.fingerprint, b"{}", None) for w in many]
    assert update._workers(grown) == 0  # an update of grown sessions stays here


# --- the tail states' memoised redaction ---------------------------------------------------


def _fixture_values() -> list[object]:
    """Every fixture's tail state (as the index stores it, before redaction) and every tool
    call's input: the JSON shapes ``redact_value`` meets."""
    values: list[object] = []
    for path in TRANSCRIPTS:
        agent = detect_agent(path)
        if agent is None:
            continue
        try:
            tail = TranscriptTail(path, agent)
            tail.read_new()
            values.append(tail.state().model_dump(mode="json"))
            values.extend(call.input for message in TranscriptReader(path, agent)
                          for call in message.tool_calls)
        except (TranscriptError, OSError, ValueError):
            continue
    return values


def test_memoised_redaction_equals_redact_value_on_every_fixture() -> None:
    values = _fixture_values()
    assert len(values) > 100
    memo: dict[str, tuple[str, int]] = {}
    for _ in range(2):  # the second round answers from the memo
        for value in values:
            assert redact_value(value, memo) == redact_value(value)
    assert memo


_TEXT = st.one_of(st.text(max_size=40), st.sampled_from(SECRETS),
                  st.sampled_from(["password", "DB_PASSWORD", "token", "api_key", "cwd", "x"]),
                  st.builds(lambda a, s: f"{a}={s}", st.sampled_from(["TOKEN", "pass", "key"]),
                            st.sampled_from([*SECRETS, "hunter2", "Zx9!qR2#vL"])))
_JSON = st.recursive(
    st.one_of(st.none(), st.integers(), st.booleans(), _TEXT),
    lambda inner: st.one_of(st.lists(inner, max_size=4),
                            st.dictionaries(_TEXT, inner, max_size=4)),
    max_leaves=12)


_SHARED: dict[str, tuple[str, int]] = {}


@settings(max_examples=300, deadline=None)
@given(_JSON)
def test_memoised_redaction_equals_redact_value(value: object) -> None:
    assert redact_value(value, _SHARED) == redact_value(value)
