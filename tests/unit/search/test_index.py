"""The search index over real transcripts: build, incremental growth, rewrites, deletions,
damage, busy, other projects, hostile queries, secrets."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from reverie.config import ProjectPaths, Settings
from reverie.search.index import SearchIndex
from reverie.search.query import MAX_TERMS, match_expression, query_terms
from reverie.search.update import index_path, open_index, refresh
from reverie.services.search import search_project

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "transcripts"
GROWING = FIXTURES / "claude-code" / "codemie-v2.1.7-incremental-subagents"
TOOL_HEAVY = FIXTURES / "claude-code" / "spotter-v2.1.38-tool-heavy" / "tool_heavy.jsonl"
Install = Callable[..., Path]
SESSION = "e9fb405b-169f-40eb-9396-7e75076f045d"


def _docs(paths: ProjectPaths) -> list[tuple[str, str]]:
    with sqlite3.connect(index_path(paths)) as db:
        return db.execute("SELECT d.label, f.body FROM documents d JOIN fts f "
                          "ON f.rowid = d.id ORDER BY d.id").fetchall()


def test_a_grown_session_is_read_only_from_where_it_grew(
        install: Install, paths: ProjectPaths, make_session: Callable[..., str]) -> None:
    turn1 = (GROWING / "turn-1.jsonl").read_text("utf-8")
    turn2 = (GROWING / "turn-2.jsonl").read_text("utf-8")
    assert turn2.startswith(turn1)
    path = install(turn1, SESSION)
    first = refresh(paths)
    assert first.sessions_indexed == 1 and not first.skipped
    before = _docs(paths)
    assert before
    with path.open("a", encoding="utf-8") as handle:  # the agent appends
        handle.write(turn2[len(turn1):].replace("/Users/User/repo/codemie-ai/codemie-code",
                                                str(paths.workspace)))
    grown = refresh(paths, discover=False)  # the fast path: only sessions already indexed
    assert grown.sessions_grown == 1 and grown.sessions_indexed == 0
    after = _docs(paths)
    assert after[: len(before)] == before  # the earlier documents were not touched
    assert len(after) > len(before)
    assert len(set(after)) == len(after)  # nothing indexed twice
    # unchanged: nothing read at all
    again = refresh(paths)
    assert (again.sessions_grown, again.sessions_indexed) == (0, 0)
    # every request the whole session holds is found in the incremental index too
    whole_paths = ProjectPaths(Settings(), paths.workspace)
    index_path(whole_paths).unlink()
    refresh(whole_paths)

    def asked(docs: list[tuple[str, str]]) -> set[str]:
        return {b.splitlines()[0] for label, b in docs if label == "request"}

    assert asked(_docs(whole_paths)) == asked(after) != set()


def test_a_rewritten_session_is_indexed_again_whole(
        install: Install, paths: ProjectPaths, make_session: Callable[..., str]) -> None:
    text = TOOL_HEAVY.read_text("utf-8")
    session_id = "d6e0bada-1959-4eec-a9d2-0bfade768d8f"
    cwd = _cwd_of(text)
    path = install(text, session_id, old_cwd=cwd)
    refresh(paths)
    count = len(_docs(paths))
    assert count > 0
    # same inode, the bytes just before where the index stopped changed: not an append
    data = path.read_bytes()
    with path.open("r+b") as handle:
        handle.seek(len(data) - 20)
        handle.write(b" " * 19)
        handle.write(b"\n" + data[-200:])
    report = refresh(paths)
    assert report.sessions_indexed == 1 and report.sessions_grown == 0
    assert 0 < len(_docs(paths)) <= count + 1
    # cut shorter than what was read: indexed again whole
    path.write_bytes(data[: len(data) // 2])
    report = refresh(paths)
    assert report.sessions_indexed == 1 and report.sessions_grown == 0


def _cwd_of(text: str) -> str:
    import json

    for line in text.splitlines():
        record = json.loads(line)
        if isinstance(record, dict) and record.get("cwd"):
            return str(record["cwd"])
    raise AssertionError("no cwd")


def test_deleted_session_is_forgotten(
        install: Install, paths: ProjectPaths, make_session: Callable[..., str]) -> None:
    path = install(make_session("aaaa1111-0000-0000-0000-000000000000", paths.workspace,
                                 [("Why does the coupon checkout test crash on Safari?",
                                   "The coupon test crashed because the date parser needs ISO "
                                   "strings; I switched it to Date.parse with a fallback.")]),
                   "aaaa1111-0000-0000-0000-000000000000")
    refresh(paths)
    assert search_project(Settings(), paths.workspace, "coupon crash").results
    path.unlink()
    report = refresh(paths, discover=False)
    assert report.sessions_removed == 1
    response = search_project(Settings(), paths.workspace, "coupon crash")
    assert response.results == [] and response.index.sessions == 0


def test_corrupt_index_is_rebuilt(
        install: Install, paths: ProjectPaths, make_session: Callable[..., str]) -> None:
    install(make_session("bbbb2222-0000-0000-0000-000000000000", paths.workspace,
                          [("Set up the flaky websocket reconnect test", "The websocket "
                            "reconnect test now waits for the server's close frame.")]),
            "bbbb2222-0000-0000-0000-000000000000")
    refresh(paths)
    db = index_path(paths)
    for suffix in ("-wal", "-shm"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)
    db.write_bytes(b"this is not a database" * 100)
    response = search_project(Settings(), paths.workspace, "websocket reconnect")
    assert response.results and response.results[0].session_id.startswith("bbbb2222")
    # truncated to half: still answers
    data = db.read_bytes()
    db.write_bytes(data[: len(data) // 2])
    assert search_project(Settings(), paths.workspace, "websocket").index.sessions == 1


def test_an_index_of_another_workspace_at_the_path_is_not_used(
        paths: ProjectPaths, tmp_path: Path) -> None:
    db = index_path(paths)
    other = SearchIndex(db, tmp_path / "elsewhere")
    with other.writing():
        from reverie.search.documents import Document
        other.put_source("memory:x.md", "memory", "f", [Document(
            kind="memory", title="Other", body="the other project's secret plan",
            source="x.md")])
    other.close()
    with open_index(paths) as index:
        assert index.rebuilt
        assert index.search(query_terms("secret plan")) == []


def test_sessions_of_another_project_never_show(
        install: Install, paths: ProjectPaths, make_session: Callable[..., str],
        tmp_path: Path) -> None:
    other_ws = (tmp_path / "other").resolve()
    other_ws.mkdir()
    install(make_session("cccc3333-0000-0000-0000-000000000000", other_ws,
                          [("Migrate the billing ledger to postgres", "The ledger migration "
                            "to postgres is done; run alembic upgrade head.")]),
            "cccc3333-0000-0000-0000-000000000000", target_workspace=other_ws)
    install(make_session("dddd4444-0000-0000-0000-000000000000", paths.workspace,
                          [("Add dark mode to the settings page", "Dark mode toggles a "
                            "class on the body element now.")]),
            "dddd4444-0000-0000-0000-000000000000")
    mine = search_project(Settings(), paths.workspace, "ledger postgres migration")
    assert mine.results == [] and mine.index.sessions == 1
    theirs = search_project(Settings(), other_ws, "ledger postgres migration")
    assert theirs.results and theirs.results[0].session_id.startswith("cccc3333")


def test_secrets_never_reach_the_index(
        install: Install, paths: ProjectPaths, make_session: Callable[..., str]) -> None:
    token = "ghp_R7kQ2mV9xL4pW8nT3bY6cF1hJ5sD0gA2zE7u"
    install(make_session("eeee5555-0000-0000-0000-000000000000", paths.workspace,
                          [(f"Use this token for the deploy script: {token}",
                            f"I exported GITHUB_TOKEN={token} for the deploy script run.")]),
            "eeee5555-0000-0000-0000-000000000000")
    refresh(paths)
    raw = b"".join(p.read_bytes() for p in index_path(paths).parent.iterdir() if p.is_file())
    assert token.encode() not in raw
    hits = search_project(Settings(), paths.workspace, "deploy script token").results
    assert hits and all(token not in h.text for h in hits)


@pytest.mark.parametrize("query", [
    '"', '""', '"unterminated', "*", "deploy*", "NEAR(a b)", "a NEAR b", "col:deploy",
    "title:x OR", "AND OR NOT", "(", ")", "^", "-", "+", "!!!", "...", "",
    "   ", "\x00", "a" * 1_000_000, "x " * 500_000, "é ü 漢字 🙂",
], ids=lambda query: repr(query[:16]))
def test_hostile_queries_are_safe(
        install: Install, paths: ProjectPaths, make_session: Callable[..., str],
        query: str) -> None:
    install(make_session("ffff6666-0000-0000-0000-000000000000", paths.workspace,
                          [("Deploy script fails on NEAR region", "The deploy script "
                            "needed the region flag.")]),
            "ffff6666-0000-0000-0000-000000000000")
    started = time.monotonic()
    response = search_project(Settings(), paths.workspace, query)
    assert time.monotonic() - started < 5
    assert isinstance(response.results, list)


def test_query_terms_are_always_quoted() -> None:
    terms = query_terms('how did we fix "coupon*" NEAR: crash (again)?')
    assert terms == ["fix", "coupon", "near", "crash"]
    assert match_expression(terms) == '"fix" OR "coupon" OR "near" OR "crash"'
    assert match_expression(query_terms("!!! ??? ...")) is None
    assert len(query_terms(" ".join(f"w{i}" for i in range(1000)))) == MAX_TERMS
    assert "discount" in query_terms("applyDiscount")


def test_a_write_locked_index_still_answers(
        install: Install, paths: ProjectPaths, make_session: Callable[..., str]) -> None:
    """Another process holding the write lock (a long update, a stuck tool): searches read
    the index as it is within the busy timeout, and the update happens next time."""
    install(make_session("abab7777-0000-0000-0000-000000000000", paths.workspace,
                         [("Fix the cron schedule for backups", "Backups now run at 02:00 "
                           "UTC from the cron entry.")]),
            "abab7777-0000-0000-0000-000000000000")
    refresh(paths)
    install(make_session("baba7777-0000-0000-0000-000000000000", paths.workspace,
                         [("The nightly cron backup job email is noisy", "The backup cron "
                           "now mails only on failure.")], start_minute=20),
            "baba7777-0000-0000-0000-000000000000")
    db = index_path(paths)
    holder = subprocess.Popen(
        [sys.executable, "-c",
         "import sqlite3, sys, time\n"
         f"db = sqlite3.connect({str(db)!r}, isolation_level=None)\n"
         "db.execute('BEGIN EXCLUSIVE')\nprint('locked', flush=True)\ntime.sleep(30)\n"],
        stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        started = time.monotonic()
        report = refresh(paths)
        assert report.busy
        response = search_project(Settings(), paths.workspace, "cron backups")
        assert time.monotonic() - started < 15
        assert {h.session_id[:8] for h in response.results} == {"abab7777"}
    finally:
        holder.kill()
        holder.wait()
    response = search_project(Settings(), paths.workspace, "cron backups")
    assert {h.session_id[:8] for h in response.results} == {"abab7777", "baba7777"}


def test_only_one_updater_at_a_time(paths: ProjectPaths) -> None:
    from reverie.search.update import index_dir, update_lock

    with update_lock(index_dir(paths)) as mine:
        assert mine
        assert refresh(paths).busy


def test_one_session_does_not_fill_the_page(
        install: Install, paths: ProjectPaths, make_session: Callable[..., str]) -> None:
    turns = [(f"Tune the cache eviction policy, step {n}",
              f"Cache eviction step {n}: adjusted the LRU size and eviction threshold.")
             for n in range(12)]
    install(make_session("acac8888-0000-0000-0000-000000000000", paths.workspace, turns),
            "acac8888-0000-0000-0000-000000000000")
    install(make_session("bdbd9999-0000-0000-0000-000000000000", paths.workspace,
                          [("Why is cache eviction so slow?", "Eviction scanned every key; "
                            "it now keeps a heap ordered by last use.")], start_minute=30),
            "bdbd9999-0000-0000-0000-000000000000")
    hits = search_project(Settings(), paths.workspace, "cache eviction", limit=5).results
    sessions = [h.session_id for h in hits if h.kind == "session"]
    assert len(sessions) == len(set(sessions)) == 2
