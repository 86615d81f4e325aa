"""Live reading of Kilo Code's database while Kilo writes it: only the sessions whose update time
moved are read again, every message is reported once (a changed one again under its id), a
restarted reader resumes without repeats, and the watcher sees a real writer process's WAL."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from reverie.transcripts.model import Message
from reverie.transcripts.reader import load_transcript
from reverie.transcripts.reading import SessionReader
from reverie.transcripts.watch import SessionAppended, SessionWatcher
from support.kilo import KiloDb

TESTS = Path(__file__).resolve().parents[2]


def kilo_home(home: Path) -> Path:
    return home / ".local" / "share" / "kilo" / "kilo.db"


def fingerprint(message: Message) -> str:
    return message.model_dump_json()


def check(reports: list[Message], final: list[Message]) -> None:
    """No loss (the last version of every final message was reported) and no duplicate (no
    message reported twice with the same content)."""
    prints = [fingerprint(m) for m in reports]
    assert len(prints) == len(set(prints)), "a message was reported twice unchanged"
    last = {m.id: fingerprint(m) for m in reports}
    assert {m.id: fingerprint(m) for m in final} == {m.id: last.get(m.id) for m in final}


def test_a_session_streaming_into_the_database(reverie_env: dict[str, Path],
                                              tmp_path: Path) -> None:
    home, ws = reverie_env["agent_home"], tmp_path / "shop"
    ws.mkdir()
    db = KiloDb(kilo_home(home))
    sid = db.session(str(ws), title="Streaming")
    other = db.session("/elsewhere/x", title="Other")
    db.user(other, "elsewhere")
    u = db.user(sid, "Fix the total")
    reader = SessionReader(ws, home)
    assert reader.scan(report=False) == []  # primed: what is there is not news
    reports: list[Message] = []

    def step() -> list[SessionAppended]:
        events = reader.apply([str(db.path) + "-wal"])
        for event in events:
            assert event.ref.session_id == sid and event.ref.path == db.path
            assert event.ref.cwd == str(ws) and event.ref.agent == "kilo-code"
            reports.extend(event.messages)
        return events

    assert step() == []  # nothing changed
    m = db.assistant(sid, u, str(ws))
    text = db.part(sid, m, {"type": "text", "text": "Look"})
    step()
    db.part(sid, m, {"type": "text", "text": "Looking at cart.py"}, pid=text)  # streamed on
    tool = db.tool(sid, m, "bash", {"command": "pytest -q"}, status="running")
    step()
    db.tool(sid, m, "bash", {"command": "pytest -q"}, "1 failed", pid=tool, exit=1)
    db.user(other, "still elsewhere")  # another project: never read for this workspace
    step()
    db.step(sid, m, {"input": 10, "output": 5, "reasoning": 0, "cache": {"read": 0, "write": 0}})
    step()
    assert step() == []
    final = load_transcript(db.path, sid).messages
    check(reports, final[1:])  # the request was there before the reader started
    assert [m.text for m in reports if m.role == "assistant" and m.text] == [
        "Look", "Looking at cart.py"]  # the same part, reported again as it grew
    untitled = db.session(str(ws))  # Kilo's placeholder title: the request names it
    db.user(untitled, "Rename the checkout button")
    named = [e.session for e in reader.apply([str(db.path)])]
    assert [(s.title, s.title_source) for s in named] == [
        ("Rename the checkout button", "first_prompt")]

    # a restarted reader resumes: what came meanwhile is reported, nothing twice
    saved = reader.states()
    assert list(saved) == [str(db.path)]
    later = db.user(sid, "Now add a test")
    resumed = SessionReader(ws, home, tail_states=saved)
    events = resumed.scan(report=False)
    assert [[m.id for m in e.messages] for e in events] == [[later]]
    assert resumed.apply([str(db.path)]) == []


def test_sessions_that_did_not_move_are_not_read_again(reverie_env: dict[str, Path],
                                                       tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    from reverie.transcripts import kilo_tail

    home, ws = reverie_env["agent_home"], tmp_path / "shop"
    ws.mkdir()
    db = KiloDb(kilo_home(home))
    ids = [db.session(str(ws), title=f"S{i}") for i in range(5)]
    for sid in ids:
        db.user(sid, "hello")
    reader = SessionReader(ws, home)
    reader.scan(report=False)
    loads: list[str | None] = []
    original = kilo_tail.load_units
    monkeypatch.setattr(kilo_tail, "load_units", lambda p, s: (loads.append(s), original(p, s))[1])
    db.user(ids[2], "only this one")
    events = reader.apply([str(db.path) + "-wal"])
    assert loads == [ids[2]] and [e.ref.session_id for e in events] == [ids[2]]


@pytest.mark.slow
async def test_the_watcher_follows_a_writer_process(reverie_env: dict[str, Path],
                                                    tmp_path: Path) -> None:
    """A real process writes as Kilo does (WAL, one transaction per change) while the watcher
    runs; every message reaches the watcher once, the last version of each."""
    home, ws = reverie_env["agent_home"], tmp_path / "shop"
    ws.mkdir()
    path = kilo_home(home)
    db = KiloDb(path)
    sid = db.session(str(ws), title="Watched")
    first = db.user(sid, "start")
    watcher = SessionWatcher(ws, home, debounce_ms=30)
    sink: list[SessionAppended] = []
    task = asyncio.create_task(_collect(watcher, sink))
    await asyncio.sleep(0.5)  # watches up, start-up scan primed
    script = (
        "import sys, time, json\n"
        f"sys.path.insert(0, {str(TESTS)!r})\n"
        "from support.kilo import KiloDb\n"
        f"db = KiloDb(__import__('pathlib').Path({str(path)!r}))\n"
        f"sid, user, ws = {sid!r}, {first!r}, {str(ws)!r}\n"
        "db.clock += 1000; db._next = 1000\n"
        "m = db.assistant(sid, user, ws)\n"
        "for i in range(6):\n"
        "    db.tool(sid, m, 'read', {'filePath': f'{ws}/f{i}.py'}, 'ok'); time.sleep(0.05)\n"
        "db.part(sid, m, {'type': 'text', 'text': 'done'})\n"
        "db.user(sid, 'next')\n"
        "db.close()\n"
    )
    try:
        subprocess.run([sys.executable, "-c", script], check=True, timeout=60)
        final = load_transcript(path, sid).messages
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            got = {m.id for e in sink for m in e.messages}
            if got >= {m.id for m in final[1:]}:
                break
            await asyncio.sleep(0.05)
    finally:
        watcher.stop()
        await asyncio.wait_for(task, 10)
    reports = [m for e in sink for m in e.messages]
    check(reports, final[1:])
    assert all(e.ref.session_id == sid for e in sink)
    assert json.dumps(sorted(watcher.states())) == json.dumps([str(path)])


async def _collect(watcher: SessionWatcher, sink: list[SessionAppended]) -> None:
    async for event in watcher:
        sink.append(event)
