"""Kilo Code's session database (``kilo.db``): read by Kilo's own schema, matched on the
session's directory as Kilo lists them, counted against an independent count of the rows, and
every database problem a counted skip (never a crash, never a write)."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from reverie.transcripts import kilo_db
from reverie.transcripts.discovery import discover_sessions
from reverie.transcripts.editor_places import EditorPlaces
from reverie.transcripts.listing import session_rows
from reverie.transcripts.model import ToolKind
from reverie.transcripts.reader import detect_agent, load_sessions, load_transcript
from reverie.transcripts.stats import transcript_stats
from reverie.transcripts.tail import TranscriptTail
from support.kilo import KiloDb

TOKENS = {"input": 1200, "output": 80, "reasoning": 20, "cache": {"read": 3000, "write": 500}}
PATCH = ("*** Begin Patch\n*** Add File: tests/test_round.py\n+def test_round():\n"
         "+    assert True\n*** End Patch")


def build(home: Path, ws: Path) -> tuple[KiloDb, dict[str, str]]:
    """A workspace's sessions, a sub-agent, another project's session and an unused one."""
    db = KiloDb(home / ".local" / "share" / "kilo" / "kilo.db")
    cwd = str(ws)
    a = db.session(cwd, title="Fix the cart total rounding")
    u1 = db.user(a, "Fix the failing total test in cart.py")
    m1 = db.assistant(a, u1, cwd)
    db.part(a, m1, {"type": "reasoning", "text": "look first", "time": {"start": 1}})
    db.part(a, m1, {"type": "text", "text": "Looking at the tests."})
    db.tool(a, m1, "read", {"filePath": f"{cwd}/cart.py"}, "def total(): ...")
    db.tool(a, m1, "bash", {"command": "pytest -q", "description": "run"}, "1 failed", exit=1)
    db.tool(a, m1, "edit", {"filePath": f"{cwd}/cart.py", "oldString": "a", "newString": "b"},
            "Edit applied")
    db.tool(a, m1, "bash", {"command": "pytest -q", "description": "run"}, "3 passed", exit=0)
    db.step(a, m1, TOKENS)
    db.part(a, m1, {"type": "text", "text": "Fixed: the total now rounds half up."})
    db.update_message(m1, a, time={"created": db.clock - 9000, "completed": db.clock})
    u2 = db.user(a, "Also add a test for it",
                 {"type": "text", "text": "Called the Read tool: ...", "synthetic": True},
                 {"type": "file", "mime": "image/png", "url": "data:image/png;base64,iVBOR",
                  "filename": "shot.png"})
    m2 = db.assistant(a, u2, cwd)
    db.tool(a, m2, "apply_patch", {"patchText": PATCH}, "Success")
    db.tool(a, m2, "grep", {"pattern": "round(", "path": cwd}, "ripgrep failed",
            status="error")
    db.tool(a, m2, "task", {"description": "review", "prompt": "Review the change",
                            "subagent_type": "general"}, "looks good")
    db.update_message(m2, a, error={"name": "APIError",
                                    "data": {"message": "Overloaded", "isRetryable": True}})
    b = db.session(cwd, parent=a, title="Child session - 2026-05-29T10:05:00.000Z")
    ub = db.user(b, "Review the change")
    mb = db.assistant(b, ub, cwd)
    db.tool(b, mb, "read", {"filePath": f"{cwd}/cart.py"}, "...")
    other = db.session("/elsewhere/other-project", title="Other project")
    db.user(other, "not this workspace")
    unused = db.session(cwd)  # opened, nothing asked: not a session yet
    return db, {"a": a, "b": b, "other": other, "unused": unused}


@pytest.fixture
def kilo(reverie_env: dict[str, Path], tmp_path: Path) -> tuple[Path, Path, KiloDb, dict]:
    home = reverie_env["agent_home"]
    ws = tmp_path / "shop"
    ws.mkdir()
    db, ids = build(home, ws)
    return home, ws, db, ids


def independent(path: Path, sid: str, cwd: str) -> dict[str, object]:
    """Counted straight from the rows: tool parts, their file arguments and patch headers,
    failed ones (an error status or a non-zero ``exit``), the typed user text, the usage."""
    conn = sqlite3.connect(path)
    parts = [json.loads(d) for (d,) in conn.execute(
        "SELECT data FROM part WHERE session_id = ? ORDER BY message_id, id", (sid,))]
    roles = {m: json.loads(d)["role"] for m, d in conn.execute(
        "SELECT id, data FROM message WHERE session_id = ?", (sid,))}
    users = [json.loads(d)["text"] for m, d in conn.execute(
        "SELECT message_id, data FROM part WHERE session_id = ? ORDER BY message_id, id",
        (sid,)) if roles[m] == "user" and json.loads(d)["type"] == "text"
        and not json.loads(d).get("synthetic")]
    conn.close()
    tools = [p for p in parts if p["type"] == "tool"]
    files: set[str] = set()
    for tool in tools:
        args = tool["state"]["input"]
        if "filePath" in args:
            files.add(args["filePath"])
        for line in args.get("patchText", "").splitlines():
            if line.startswith(("*** Add File: ", "*** Update File: ")):
                files.add(f"{cwd}/{line.split(': ', 1)[1]}")
    errors = sum(1 for t in tools if t["state"]["status"] == "error"
                 or t["state"].get("metadata", {}).get("exit") not in (None, 0))
    steps = [p["tokens"] for p in parts if p["type"] == "step-finish"]
    return {"calls": len(tools), "files": files, "errors": errors, "users": users,
            "context": sum(t["input"] + t["output"] + t["reasoning"] + t["cache"]["read"]
                           + t["cache"]["write"] for t in steps)}


def test_counts_match_an_independent_count(kilo: tuple) -> None:
    _home, ws, db, ids = kilo
    t = load_transcript(db.path, ids["a"])
    stats = transcript_stats(t)
    want = independent(db.path, ids["a"], str(ws))
    assert detect_agent(db.path) == "kilo-code" and t.session.agent == "kilo-code"
    assert t.session.id == ids["a"] and t.session.cwd == str(ws)
    assert stats["tool_calls"] == want["calls"] == 7
    assert set(stats["files"]) == want["files"]
    assert stats["tool_errors"] == want["errors"] == 2
    assert [m.text for m in t.messages if m.role == "user"] == want["users"]
    assert sum(m.usage.context_tokens for m in t.messages if m.usage) == want["context"]
    assert t.session.title == "Fix the cart total rounding" and t.session.title_source == "summary"
    assert t.stats.skipped == 0 and t.stats.ignored == 4  # reasoning, step-start, synthetic, file


def test_tools_results_errors_and_sub_agents(kilo: tuple) -> None:
    _home, ws, db, ids = kilo
    t = load_transcript(db.path, ids["a"])
    calls = [c for m in t.messages for c in m.tool_calls]
    assert [(c.name, c.kind) for c in calls] == [
        ("read", ToolKind.READ), ("bash", ToolKind.SHELL), ("edit", ToolKind.EDIT),
        ("bash", ToolKind.SHELL), ("apply_patch", ToolKind.EDIT), ("grep", ToolKind.SEARCH),
        ("task", ToolKind.TASK)]
    assert calls[1].command == "pytest -q"
    assert calls[4].file_paths == [f"{ws}/tests/test_round.py"]  # relative to the session
    results = [r for m in t.messages for r in m.tool_results]
    assert [(r.exit_code, r.is_error) for r in results[:4]] == [
        (None, False), (1, True), (None, False), (0, False)]
    assert results[5].is_error and results[5].output == "ripgrep failed"
    assert [m.text for m in t.messages if m.role == "system" and not m.is_meta] == [
        "error: Overloaded"]
    child = load_transcript(db.path, ids["b"])
    assert child.session.parent_session_id == ids["a"]
    assert child.session.title == "Review the change"  # Kilo's default title is not a title
    assert child.session.title_source == "first_prompt"


def test_discovery_by_the_sessions_directory(kilo: tuple) -> None:
    home, ws, db, ids = kilo
    refs = [r for r in discover_sessions(ws, home) if r.agent == "kilo-code"]
    assert {r.session_id for r in refs} == {ids["a"], ids["b"]}  # not other, not unused
    assert all(r.path == db.path and r.cwd == str(ws) for r in refs)
    assert {r.session_id: r.parent_session_id for r in refs} == {ids["a"]: None,
                                                                 ids["b"]: ids["a"]}
    inside = ws / "src"
    inside.mkdir()
    db.user(db.session(str(inside), title="In a subfolder"), "hello")
    assert len([r for r in discover_sessions(ws, home) if r.agent == "kilo-code"]) == 3
    assert [r.session_id for r in discover_sessions(Path("/elsewhere/other-project"), home)
            if r.agent == "kilo-code"] == [ids["other"]]
    rows = session_rows(ws, home, with_title=True)
    kilo_rows = {r["session_id"]: r for r in rows if r["agent"] == "kilo-code"}
    assert kilo_rows[ids["a"]]["messages"] == len(load_transcript(db.path, ids["a"]).messages)
    assert kilo_rows[ids["a"]]["title"] == "Fix the cart total rounding"
    assert kilo_rows[ids["b"]]["current"] is False  # a sub-agent is never the current one


def test_data_folder_and_kilo_db_follow_the_environment(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """``$XDG_DATA_HOME/kilo`` and ``KILO_DB`` count only for the real home (an explicit agent
    home means "look exactly here"), as for the other agents."""
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("KILO_DB", "custom.db")
    real = EditorPlaces.detect(tmp_path)
    assert real.kilo_data_dirs == (tmp_path / "xdg" / "kilo",)
    assert real.kilo_db == tmp_path / "xdg" / "kilo" / "custom.db"
    other = EditorPlaces.detect(tmp_path / "elsewhere")
    assert other.kilo_data_dirs == (tmp_path / "elsewhere" / ".local" / "share" / "kilo",)
    assert other.kilo_db is None
    db = KiloDb(tmp_path / "xdg" / "kilo" / "custom.db")
    db.user(db.session("/w"), "hi")
    channel = KiloDb(tmp_path / "xdg" / "kilo" / "kilo-beta.db")
    channel.close()
    (tmp_path / "xdg" / "kilo" / "notes.db").write_bytes(b"")
    assert real.kilo_db_files() == [db.path, channel.path]
    assert detect_agent(db.path) == "kilo-code"  # a custom name: Kilo's tables tell


def test_reading_never_writes(kilo: tuple) -> None:
    home, ws, db, ids = kilo
    db.close()  # the last connection checkpoints and removes the WAL
    folder = db.path.parent
    before = {p.name: (p.stat().st_mtime_ns, p.read_bytes()) for p in folder.iterdir()}
    for _ in range(2):
        assert load_transcript(db.path, ids["a"]).messages
        assert discover_sessions(ws, home)
    after = {p.name: (p.stat().st_mtime_ns, p.read_bytes()) for p in folder.iterdir()}
    assert after["kilo.db"] == before["kilo.db"]  # the database: not a byte, not its time
    # SQLite's own companions of a WAL database may appear (a reader maps the shared
    # memory index): the log stays empty, nothing was written through it
    assert set(after) - set(before) <= {"kilo.db-wal", "kilo.db-shm"}
    assert after.get("kilo.db-wal", (0, b""))[1] == b""


def test_a_database_locked_by_another_process_is_a_counted_skip(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A rollback-journal database held under an exclusive lock by a real process: the read
    waits the busy timeout, then skips (and a later read, once it is free, works)."""
    db = KiloDb(tmp_path / "kilo.db")
    sid = db.session("/w", title="Locked")
    db.user(sid, "hello")
    db.conn.execute("PRAGMA journal_mode = DELETE")
    db.close()
    monkeypatch.setattr(kilo_db, "BUSY_TIMEOUT_MS", 200)
    holder = subprocess.Popen(
        [sys.executable, "-c",
         "import sqlite3, sys, time\n"
         f"c = sqlite3.connect({str(db.path)!r}, isolation_level=None)\n"
         "c.execute('BEGIN EXCLUSIVE'); print('locked', flush=True); sys.stdin.read()"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        started = time.monotonic()
        t = load_transcript(db.path, sid)
        assert t.messages == [] and t.stats.skipped == 1
        assert "locked" in t.stats.errors[0]
        assert time.monotonic() - started < 5
        assert discover_sessions(Path("/w"), tmp_path) == []
    finally:
        assert holder.stdin is not None
        holder.stdin.close()
        holder.wait(timeout=10)
    assert [m.text for m in load_transcript(db.path, sid).messages] == ["hello"]


def test_not_a_database_missing_tables_and_columns(tmp_path: Path) -> None:
    garbage = tmp_path / "a" / "kilo.db"
    garbage.parent.mkdir()
    garbage.write_bytes(b"SQLite format 3\x00" + os.urandom(4000))
    empty = tmp_path / "b" / "kilo.db"
    empty.parent.mkdir()
    sqlite3.connect(empty).execute("CREATE TABLE other (x)").connection.close()
    old = tmp_path / "c" / "kilo.db"
    old.parent.mkdir()
    conn = sqlite3.connect(old)
    conn.executescript("CREATE TABLE session (id text, directory text, time_updated int);"
                       "CREATE TABLE message (id text, session_id text);"  # no data column
                       "CREATE TABLE part (id text, message_id text, session_id text, data text);"
                       "INSERT INTO session VALUES ('s1', '/w', 5);")
    conn.close()
    for path, reason in ((garbage, "file is not a database"), (empty, "not a Kilo database"),
                         (old, "lacks data")):
        t = load_transcript(path)
        assert t.messages == [] and t.stats.skipped == 1, path
        assert reason in t.stats.errors[0]
        assert load_sessions(path)[0].messages == []
        notes: list[str] = []
        places = EditorPlaces(kilo_data_dirs=(path.parent,))
        assert discover_sessions(Path("/w"), tmp_path, places, notes) == []
        assert notes and "Kilo Code database skipped" in notes[0]


def test_drift_unknown_parts_roles_bad_json_and_huge_rows(tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    db = KiloDb(tmp_path / "kilo.db")
    sid = db.session("/w", title="Drift")
    u = db.user(sid, "go")
    m = db.assistant(sid, u, "/w", brandNewField={"x": 1})
    db.part(sid, m, {"type": "hologram", "v": 1})
    db.part(sid, m, {"type": "text", "text": "still read", "futureField": True})
    db.tool(sid, m, "read", {"filePath": "/w/a.py"}, "ok")
    bad = db.part(sid, m, {"type": "text", "text": "x"})
    db.conn.execute("UPDATE part SET data = '{not json' WHERE id = ?", (bad,))
    db.conn.execute("INSERT INTO message VALUES ('msg_zzz', ?, ?, ?, ?)",
                    (sid, db.tick(), db.clock, json.dumps({"role": "oracle"})))
    db.part(sid, m, {"type": "text", "text": "y" * 5000})
    monkeypatch.setattr(kilo_db, "MAX_DATA_BYTES", 4000)
    t = load_transcript(db.path, sid)
    reasons = " | ".join(t.stats.errors)
    assert t.stats.skipped == 4, reasons
    assert "hologram" in reasons and "oracle" in reasons and "not a valid JSON" in reasons
    assert "over 4000 bytes" in reasons
    assert [m.text for m in t.messages if m.role == "assistant" and m.text] == ["still read"]
    assert transcript_stats(t)["tool_calls"] == 1


def test_a_tail_of_the_database_reads_its_latest_session(tmp_path: Path) -> None:
    db = KiloDb(tmp_path / "kilo.db")
    sid = db.session("/w", title="Latest")
    db.user(sid, "first")
    tail = TranscriptTail(db.path)
    assert [m.text for m in tail.read_new()] == ["first"] and tail.session.id == sid
    assert tail.read_new() == []
    again = db.user(sid, "second")
    assert [m.id for m in tail.read_new()] == [again]
