"""Live tailing: appended bytes only, partial lines, truncation, replacement, save/restore."""

from __future__ import annotations

import os
import random
from pathlib import Path

import orjson

from reverie.transcripts.model import Message
from reverie.transcripts.reader import load_transcript
from reverie.transcripts.tail import TranscriptTail
from reverie.transcripts.tokens import usage_totals

FIX = Path(__file__).resolve().parents[2] / "fixtures" / "transcripts"
INCREMENTAL = FIX / "claude-code" / "codemie-v2.1.7-incremental-subagents"
SESSION = "e9fb405b-169f-40eb-9396-7e75076f045d.jsonl"


def _dump(messages: list[Message]) -> list[dict[str, object]]:
    return [m.model_dump() for m in messages]


def test_append_tailing_in_chunks_that_split_lines(tmp_path: Path) -> None:
    turn1 = (INCREMENTAL / "turn-1.jsonl").read_bytes()
    turn2 = (INCREMENTAL / "turn-2.jsonl").read_bytes()
    assert turn2.startswith(turn1)
    path = tmp_path / SESSION
    path.write_bytes(turn1)
    tail = TranscriptTail(path)
    first = tail.read_new()
    expected_first = load_transcript(INCREMENTAL / "turn-1.jsonl").messages
    assert _dump(first) == _dump(expected_first)
    assert tail.read_new() == []  # nothing appended, nothing returned

    rest = turn2[len(turn1):]
    rng = random.Random(7)
    appended: list[Message] = []
    cut_mid_line = 0
    with path.open("ab") as handle:
        pos = 0
        while pos < len(rest):
            size = rng.randint(1, 9000)
            chunk = rest[pos:pos + size]
            pos += size
            handle.write(chunk)
            handle.flush()
            cut_mid_line += not chunk.endswith(b"\n")
            appended.extend(tail.read_new())
    assert cut_mid_line > 3  # the chunks really split lines
    full = load_transcript(INCREMENTAL / "turn-2.jsonl").messages
    assert _dump(appended) == _dump(full[len(first):])
    assert len(appended) == 18
    # the summary's leaf is outside the file (a resumed session): not this session's title
    assert tail.session.title != "Metrics Calculations Verification and Discrepancy Analysis"
    assert tail.stats.lines == 50 and tail.stats.skipped == 0


def test_partial_last_line_waits_for_its_newline(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    line = orjson.dumps({"role": "user", "content": "hello"})
    path.write_bytes(line[:10])
    tail = TranscriptTail(path, agent="generic")
    assert tail.read_new() == []
    with path.open("ab") as handle:
        handle.write(line[10:])
    assert tail.read_new() == []  # still no newline
    with path.open("ab") as handle:
        handle.write(b"\n")
    [message] = tail.read_new()
    assert message.text == "hello" and tail.stats.skipped == 0


def test_truncation_and_new_inode_trigger_a_clean_reread(tmp_path: Path) -> None:
    path = tmp_path / SESSION
    turn1 = (INCREMENTAL / "turn-1.jsonl").read_bytes()
    path.write_bytes(turn1)
    tail = TranscriptTail(path)
    assert len(tail.read_new()) == 16
    lines = turn1.splitlines(keepends=True)
    path.write_bytes(b"".join(lines[:5]))  # truncated (same inode, smaller)
    again = tail.read_new()
    assert [m.id for m in again] == [m.id for m in load_transcript(path).messages]
    replacement = tmp_path / "new.jsonl"
    replacement.write_bytes(turn1)
    os.replace(replacement, path)  # new inode, larger
    assert len(tail.read_new()) == 16


def test_rewrite_in_place_is_detected(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(orjson.dumps({"role": "user", "content": "one"}) + b"\n")
    tail = TranscriptTail(path, agent="generic")
    assert [m.text for m in tail.read_new()] == ["one"]
    with path.open("r+b") as handle:  # same inode, same prefix length, new bytes
        handle.write(orjson.dumps({"role": "user", "content": "ONE"}) + b"\n"
                     + orjson.dumps({"role": "user", "content": "two"}) + b"\n")
    assert [m.text for m in tail.read_new()] == ["ONE", "two"]


def test_state_restore_resumes_without_rereading(tmp_path: Path) -> None:
    turn1 = (INCREMENTAL / "turn-1.jsonl").read_bytes()
    turn2 = (INCREMENTAL / "turn-2.jsonl").read_bytes()
    path = tmp_path / SESSION
    path.write_bytes(turn1 + turn2[len(turn1):len(turn1) + 500])  # ends mid-line
    tail = TranscriptTail(path)
    first = tail.read_new()
    saved = orjson.loads(orjson.dumps(tail.state().model_dump(mode="json")))
    assert saved["offset"] == len(turn1)  # the partial line is not part of the saved offset
    path.write_bytes(turn2)
    resumed = TranscriptTail.restore(saved)
    rest = resumed.read_new()
    full = load_transcript(INCREMENTAL / "turn-2.jsonl").messages
    assert _dump(first + rest) == _dump(full)
    # usage totals (each response once, at its final figure) survive the restart
    assert usage_totals(first + rest) == usage_totals(full)


def test_gemini_json_is_reparsed_and_diffed(tmp_path: Path) -> None:
    source = FIX / "gemini-cli/codemie-code/chats/session-2026-01-16T11-01-file-ops-37b7abef.json"
    doc = orjson.loads(source.read_bytes())
    path = tmp_path / "session-2026-01-16T11-01-37b7abef.json"
    partial = dict(doc, messages=doc["messages"][:6])
    path.write_bytes(orjson.dumps(partial))
    tail = TranscriptTail(path)
    first = tail.read_new()
    path.write_bytes(orjson.dumps(doc)[:1000])  # caught mid-rewrite: nothing, no crash
    assert tail.read_new() == []
    path.write_bytes(orjson.dumps(doc))
    rest = tail.read_new()
    full = load_transcript(source).messages
    assert [m.id for m in first + rest] == [m.id for m in full]
    restored = TranscriptTail.restore(tail.state().model_dump(mode="json"))
    assert restored.read_new() == []


def test_gemini_jsonl_updates_come_back_under_the_same_id(tmp_path: Path) -> None:
    path = tmp_path / "session-2026-04-29T21-39-abcdef12.jsonl"
    header = {"sessionId": "abc", "projectHash": "h"}
    user = {"id": "u1", "type": "user", "content": "go"}
    reply = {"id": "g1", "type": "gemini", "content": "working"}
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in (header, user, reply)))
    tail = TranscriptTail(path)
    assert [m.id for m in tail.read_new()] == ["u1", "g1"]
    with path.open("ab") as handle:
        handle.write(orjson.dumps(dict(reply, content="done")) + b"\n")
    [updated] = tail.read_new()
    assert updated.id == "g1" and updated.text == "done"
    with path.open("ab") as handle:
        handle.write(orjson.dumps({"$rewindTo": "g1"}) + b"\n"
                     + orjson.dumps({"id": "g2", "type": "gemini", "content": "redo"}) + b"\n")
    assert [m.id for m in tail.read_new()] == ["g2"]


def test_aider_history_appends(tmp_path: Path) -> None:
    source = (FIX / "aider/aider-repo/.aider.chat.history.md").read_bytes()
    path = tmp_path / ".aider.chat.history.md"
    cut = source.index(b"# aider chat started at", 5000)
    path.write_bytes(source[:cut])
    tail = TranscriptTail(path)
    first = tail.read_new()
    before = tail.session.id
    assert first and all(m.id.startswith("aider-") for m in first)
    assert tail.read_new() == []
    with path.open("ab") as handle:
        handle.write(source[cut:cut + 3000])  # a new run, cut mid-line
    new = tail.read_new()
    def run_offset(message_id: str) -> int:
        return int(message_id.split(":")[0].rsplit("-", 1)[1])

    assert tail.session.id != before and run_offset(tail.session.id) >= cut
    assert new and all(run_offset(m.id) >= cut for m in new)  # only the new runs' messages
    with path.open("ab") as handle:
        handle.write(source[cut + 3000:cut + 6000])
    more = tail.read_new()
    assert {m.id for m in more}.isdisjoint({m.id for m in first})
