"""Bad input is a counted skip or a clear TranscriptError, never a crash."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from reverie.transcripts.lines import LineSplitter
from reverie.transcripts.reader import TranscriptError, detect_agent, load_transcript
from reverie.transcripts.tail import TranscriptTail

FIX = Path(__file__).resolve().parents[2] / "fixtures" / "transcripts"
TOOL_HEAVY = FIX / "claude-code/spotter-v2.1.38-tool-heavy/tool_heavy.jsonl"


def test_missing_path_and_directory_raise_one_line_errors(tmp_path: Path) -> None:
    with pytest.raises(TranscriptError) as missing:
        load_transcript(tmp_path / "nope.jsonl")
    assert "no such file" in str(missing.value) and "\n" not in str(missing.value)
    with pytest.raises(TranscriptError) as directory:
        load_transcript(tmp_path)
    assert "is a directory" in str(directory.value)


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0, reason="root reads anything")
def test_unreadable_file(tmp_path: Path) -> None:
    path = tmp_path / "secret.jsonl"
    path.write_text("{}\n")
    path.chmod(0)
    with pytest.raises(TranscriptError, match="cannot read"):
        load_transcript(path)


def test_corrupt_lines_binary_and_non_utf8_are_counted(tmp_path: Path) -> None:
    good = TOOL_HEAVY.read_bytes().splitlines()
    bad = [b"{not json", b"\x00\x01\x02\xff\xfe garbage", b"[1, 2, 3]", b'"just a string"']
    mixed = good[:10] + bad + good[10:]
    # a stray invalid byte inside a string is salvaged, not dropped
    mixed[3] = mixed[3].replace(b"start phoenix", b"start ph\xffoenix")
    path = tmp_path / "mixed.jsonl"
    path.write_bytes(b"\n".join(mixed) + b"\n")
    t = load_transcript(path)
    clean = load_transcript(TOOL_HEAVY)
    assert t.stats.skipped == 4 and t.stats.lines == clean.stats.lines + 4
    assert len(t.messages) == len(clean.messages)
    assert t.messages[0].text == "start ph\ufffdoenix in background"
    assert all(e.startswith("byte ") for e in t.stats.errors)


def test_truncated_last_line(tmp_path: Path) -> None:
    data = TOOL_HEAVY.read_bytes()
    path = tmp_path / "cut.jsonl"
    path.write_bytes(data[: len(data) - 40])
    t = load_transcript(path)
    assert t.stats.skipped == 1 and "truncated last line" in t.stats.errors[-1]


def test_empty_file(tmp_path: Path) -> None:
    path = tmp_path / "empty.jsonl"
    path.write_bytes(b"")
    t = load_transcript(path)
    assert t.messages == [] and t.stats.lines == 0 and t.stats.skipped == 0
    assert detect_agent(path) is None
    assert TranscriptTail(path).read_new() == []


def test_a_single_50_mb_line_is_skipped_without_buffering_it(tmp_path: Path) -> None:
    path = tmp_path / "huge.jsonl"
    good = TOOL_HEAVY.read_bytes().splitlines()
    with path.open("wb") as handle:
        handle.write(good[0] + b"\n")
        handle.write(b'{"type": "user", "message": {"content": "')
        block = b"x" * (1024 * 1024)
        for _ in range(50):
            handle.write(block)
        handle.write(b'"}}\n')
        handle.write(b"\n".join(good[1:]) + b"\n")
    t = load_transcript(path)
    assert t.stats.skipped == 1 and "line limit" in t.stats.errors[0]
    assert len(t.messages) == len(load_transcript(TOOL_HEAVY).messages)


def test_line_splitter_drops_oversized_lines_across_chunks() -> None:
    splitter = LineSplitter(max_line_bytes=10)
    lines = list(splitter.feed(b"short\n" + b"y" * 8))
    lines += list(splitter.feed(b"y" * 30))
    assert splitter.pending_bytes == 0  # nothing buffered past the limit
    lines += list(splitter.feed(b"yy\nok\n"))
    assert [(ln.data, ln.oversized) for ln in lines] == [
        (b"short", False), (b"", True), (b"ok", False),
    ]


def test_unknown_json_file_is_skipped_not_fatal(tmp_path: Path) -> None:
    path = tmp_path / "logs.json"
    path.write_bytes((FIX / "gemini-cli/codemie-code/logs.json").read_bytes())
    t = load_transcript(path)
    assert t.messages == [] and t.stats.skipped == t.stats.lines > 0
