"""Tailing files the editor's agents rewrite in place (or rename over, or compact): every
message is reported, a changed one again under its id, an unchanged one never twice."""

from __future__ import annotations

import copy
import json
import os
from pathlib import Path
from typing import Any

from reverie.transcripts.model import Message
from reverie.transcripts.reader import load_transcript
from reverie.transcripts.tail import TailState, TranscriptTail

FIX = Path(__file__).resolve().parents[2] / "fixtures" / "transcripts"
COPILOT_JSON = (FIX / "copilot-chat/source-types/chatSessions/"
                "3f8e2b7c-9a41-4d6e-b0c5-7e1d2a9f4b68.json")
ROO = (FIX / "roo-code/source-types/rooveterinaryinc.roo-cline/tasks/"
       "0b9c1f2e-5d4a-4c3b-9e8f-7a6b5c4d3e2f/ui_messages.json")


def snapshots(session: dict[str, Any]) -> list[dict[str, Any]]:
    """The session as VS Code rewrites it while a conversation happens: each request appears
    with an empty response, its response grows part by part, then its result arrives."""
    out = []
    requests = session["requests"]
    for index, request in enumerate(requests):
        done = copy.deepcopy(requests[:index])
        for parts in range(len(request["response"]) + 1):
            growing = {k: v for k, v in request.items() if k != "result"}
            growing["response"] = request["response"][:parts]
            out.append({**session, "requests": [*done, growing]})
        out.append({**session, "requests": [*done, request]})
    return out


def fingerprint(message: Message) -> str:
    return message.model_dump_json()


def check_reports(reports: list[Message], final: list[Message]) -> None:
    """No loss: the last version of every final message was reported; no duplicate: no
    message was reported twice with the same content."""
    seen = [fingerprint(m) for m in reports]
    assert len(seen) == len(set(seen)), "a message was reported twice unchanged"
    last = {m.id: fingerprint(m) for m in reports}
    assert {m.id: fingerprint(m) for m in final} == {i: last[i] for i in (m.id for m in final)}


def test_a_document_rewritten_in_place_as_a_chat_streams(tmp_path: Path) -> None:
    session = json.loads(COPILOT_JSON.read_text())
    path = tmp_path / "chatSessions" / COPILOT_JSON.name
    path.parent.mkdir()
    path.write_bytes(b"")
    tail = TranscriptTail(path)
    reports: list[Message] = []
    inode = None
    for snapshot in snapshots(session):
        with path.open("r+b") as handle:  # VS Code's writeFile: truncate and write, same inode
            handle.truncate(0)
            handle.write(json.dumps(snapshot, indent=2).encode())
        inode = inode or path.stat().st_ino
        assert path.stat().st_ino == inode
        reports += tail.read_new()
    assert tail.read_new() == []
    check_reports(reports, load_transcript(path).messages)
    assert tail.session.title == session["customTitle"]


def test_a_caught_half_written_document_is_read_on_the_next_change(tmp_path: Path) -> None:
    data = COPILOT_JSON.read_bytes()
    path = tmp_path / "chatSessions" / "s.json"
    path.parent.mkdir()
    path.write_bytes(data[: len(data) // 2])
    tail = TranscriptTail(path)
    assert tail.read_new() == [] and tail.stats.skipped == 1
    path.write_bytes(data)
    got = tail.read_new()
    assert [m.id for m in got] == [m.id for m in load_transcript(COPILOT_JSON).messages]


def _log_lines(session: dict[str, Any]) -> list[bytes]:
    """The session as VS Code's append log: an empty session, then one push per request."""
    empty = {**session, "requests": []}
    lines = [json.dumps({"kind": 0, "v": empty}).encode()]
    for request in session["requests"]:
        lines.append(json.dumps({"kind": 2, "k": ["requests"], "v": [request]}).encode())
    return lines


def test_an_append_log_then_its_compaction(tmp_path: Path) -> None:
    session = json.loads(COPILOT_JSON.read_text())
    lines = _log_lines(session)
    path = tmp_path / "chatSessions" / (session["sessionId"] + ".jsonl")
    path.parent.mkdir()
    path.write_bytes(b"")
    tail = TranscriptTail(path)
    reports: list[Message] = []
    for line in lines:
        third = len(line) // 3
        for piece in (line[:third], line[third:], b"\n"):  # caught half appended, then whole
            with path.open("ab") as handle:
                handle.write(piece)
            reports += tail.read_new()
    check_reports(reports, load_transcript(path).messages)
    # VS Code compacts the log: the whole state as one initial line, the file replaced
    path.write_bytes(json.dumps({"kind": 0, "v": session}).encode() + b"\n")
    assert tail.read_new() == []


def test_a_task_renamed_over_and_a_restarted_tail(tmp_path: Path) -> None:
    rows = json.loads(ROO.read_text())
    task = tmp_path / "rooveterinaryinc.roo-cline" / "tasks" / "t" / "ui_messages.json"
    task.parent.mkdir(parents=True)

    def safe_write(items: list[dict[str, Any]]) -> None:  # Roo's safeWriteJson: temp + rename
        temp = task.with_name(".ui_messages.json.new.tmp")
        temp.write_text(json.dumps(items))
        os.replace(temp, task)

    safe_write(rows[:5])
    tail = TranscriptTail(task)
    first = tail.read_new()
    assert [m.id for m in first] == [m.id for m in load_transcript(task).messages]
    safe_write(rows[:9])
    second = tail.read_new()
    assert {m.id for m in second}.isdisjoint({m.id for m in first})
    state = TailState.model_validate_json(tail.state().model_dump_json())
    restored = TranscriptTail.restore(state)
    assert restored.read_new() == []  # nothing new since the state was saved
    safe_write(rows)
    third = restored.read_new()
    check_reports(first + second + third, load_transcript(task).messages)
    assert third and {m.id for m in third}.isdisjoint({m.id for m in first + second})


def test_a_cline_4_session_rewritten_as_it_runs(tmp_path: Path) -> None:
    """Cline 4 rewrites ``<id>.messages.json`` whole after each message; its manifest beside it
    gives the workspace."""
    source = next((FIX / "cline" / "cline-sdk-4").rglob("*.messages.json"))
    folder = tmp_path / "sessions" / source.parent.name
    folder.mkdir(parents=True)
    for other in source.parent.iterdir():
        if other != source:
            (folder / other.name).write_bytes(other.read_bytes())
    session = json.loads(source.read_text())
    path = folder / source.name
    path.write_bytes(b"")
    tail = TranscriptTail(path, agent="cline")
    reports: list[Message] = []
    for count in range(1, len(session["messages"]) + 1):
        snapshot = {**session, "messages": session["messages"][:count]}
        with path.open("r+b") as handle:
            handle.truncate(0)
            handle.write(json.dumps(snapshot, indent="\t").encode())
        reports += tail.read_new()
    assert tail.read_new() == []
    final = load_transcript(path).messages
    check_reports(reports, final)
    assert tail.session.cwd == "/Users/example/dev/cline" and len(final) == 32
