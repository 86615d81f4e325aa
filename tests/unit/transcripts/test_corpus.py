"""tests/bench/corpus.py: the transcript layer over a whole folder, 0 crashes (CI runs it too)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import orjson

from bench import corpus

ROOT = Path(__file__).resolve().parents[3]
FIX = ROOT / "tests" / "fixtures" / "transcripts"


def test_the_fixtures_parse_with_no_crash_and_live_reading_agrees(tmp_path: Path) -> None:
    report = corpus.run(FIX, scratch_dir=tmp_path)
    assert report.crashes == 0, report.problems
    assert set(report.agents) == {"aider", "claude-code", "codex", "gemini-cli",
                                  "copilot-chat", "cline", "roo-code", "kilo-code", "continue"}
    assert all(row.tail_mismatches == 0 for row in report.agents.values()), report.problems
    assert report.agents["aider"].sessions == 147
    assert all(row.messages > 0 and row.skipped == 0 for row in report.agents.values())


def test_hostile_files_are_counted_not_crashed_on(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "garbage.jsonl").write_bytes(b"\x00\xff{not json\n" * 50)
    (corpus / "claude.jsonl").write_bytes(
        orjson.dumps({"type": "user", "uuid": "u", "sessionId": "s", "message": {"content": 5}})
        + b"\n" + b'{"type": "assistant", "uuid": "v", "sessionId": "s", "message": ' + b"\n")
    (corpus / "session-x.json").write_bytes(b'{"sessionId": "s", "messages": [1, {"id": 2}]')
    (corpus / ".aider.chat.history.md").write_bytes(b"# aider chat started at 2026-13-45 99:99:99\n"
                                                    b"#### \xff\xfe\n> Applied edit to \n")
    (corpus / "empty.messages").write_bytes(b"")
    done = subprocess.run([sys.executable, str(ROOT / "tests" / "bench" / "corpus.py"),
                           str(corpus), "--json"], capture_output=True, timeout=120)
    assert done.returncode == 0, done.stderr.decode()
    report = orjson.loads(done.stdout)
    assert report["crashes"] == 0, report["problems"]
    assert report["agents"]["claude-code"]["skipped"] >= 1  # the truncated last line
    assert report["agents"]["aider"]["files"] == 1


def test_not_a_folder_is_a_clear_error(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, str(ROOT / "tests" / "bench" / "corpus.py"),
                           str(tmp_path / "missing")], capture_output=True, timeout=60)
    assert done.returncode == 2 and b"is not a folder" in done.stderr
