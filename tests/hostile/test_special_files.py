"""FIFOs and devices where Reverie expects regular files, and a byte-order mark at the start of
a transcript: a clear error or a counted skip, never a hang (issue 17.8 / 17.17)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from reverie.memory.lock import ConsolidationLock
from reverie.transcripts.lines import BOM
from reverie.transcripts.reader import TranscriptError, load_transcript
from reverie.transcripts.tail import TranscriptTail
from support.paths import TRANSCRIPTS

CLAUDE = next(TRANSCRIPTS.glob("claude-code/**/*.jsonl"))
CODEX = next(TRANSCRIPTS.glob("codex/**/*.jsonl"))
#: a hang would hit this; every case below answers in well under a second
TIMEOUT = 30


def reverie(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "reverie", *args], capture_output=True,
                          text=True, timeout=TIMEOUT, env=env, check=False)


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return {**os.environ, "REVERIE_MEMORY_DIR": str(tmp_path / "memory")}


def test_a_fifo_as_the_lock_does_not_hang(tmp_path: Path, env: dict[str, str]) -> None:
    memory = tmp_path / "memory"
    memory.mkdir()
    (memory / "MEMORY.md").write_text("# Memory\n")
    os.mkfifo(memory / ".consolidate-lock")
    started = time.monotonic()
    lock = ConsolidationLock(memory)
    assert lock.read() == (None, None)
    with pytest.raises(OSError, match="not a regular file"):
        lock.try_acquire(lambda: False)
    for args in (("lock", "--json"), ("history",), ("dream", "--json"), ("undo",)):
        done = reverie(*args, "--workspace", str(tmp_path), env=env)
        assert "Traceback" not in done.stderr, (args, done.stderr)
    dream = reverie("dream", "--workspace", str(tmp_path), "--manual", env=env)
    assert dream.returncode != 0 and "not a regular file" in dream.stderr, dream.stderr
    assert time.monotonic() - started < TIMEOUT
    assert (memory / ".consolidate-lock").is_fifo()  # refused, not replaced behind our back


def test_a_fifo_as_the_lock_guard_does_not_hang(tmp_path: Path) -> None:
    memory = tmp_path / "memory"
    (memory / ".reverie").mkdir(parents=True)
    os.mkfifo(memory / ".reverie" / "lock.guard")
    os.mkfifo(memory / ".reverie" / "lock-prior.json")
    with pytest.raises(OSError, match="not a regular file"):
        ConsolidationLock(memory).try_acquire(lambda: False)


@pytest.mark.parametrize("command", ["transcript", "notes"])
def test_a_fifo_or_device_as_a_transcript_is_refused(tmp_path: Path, env: dict[str, str],
                                                     command: str) -> None:
    fifo = tmp_path / "session.jsonl"
    os.mkfifo(fifo)
    for target in (str(fifo), "/dev/zero"):
        extra = ("--workspace", str(tmp_path)) if command == "notes" else ()
        done = reverie(command, target, *extra, env=env)
        assert done.returncode != 0
        assert "not a regular file" in done.stderr, done.stderr
        assert "Traceback" not in done.stderr
    with pytest.raises(TranscriptError, match="not a regular file"):
        load_transcript(fifo)


@pytest.mark.parametrize("source", [CLAUDE, CODEX], ids=["claude", "codex"])
def test_a_bom_does_not_lose_the_first_record(tmp_path: Path, source: Path) -> None:
    plain = load_transcript(source)
    marked = tmp_path / source.name
    marked.write_bytes(BOM + source.read_bytes())
    with_bom = load_transcript(marked)
    assert with_bom.stats.skipped == plain.stats.skipped
    assert [m.text for m in with_bom.messages] == [m.text for m in plain.messages]
    assert with_bom.session.id == plain.session.id
    tail = TranscriptTail(marked)
    assert len(tail.read_new()) == len(plain.messages)


def test_a_bom_only_at_the_start_is_special(tmp_path: Path) -> None:
    """A BOM in the middle of a file is data (a broken line), not a marker to strip."""
    lines = CLAUDE.read_bytes().splitlines(keepends=True)
    path = tmp_path / "mid.jsonl"
    path.write_bytes(b"".join([lines[0], BOM + lines[1], *lines[2:]]))
    assert load_transcript(path).stats.skipped == load_transcript(CLAUDE).stats.skipped + 1


def test_diagnostics_never_block_on_or_follow_memory_files(tmp_path: Path) -> None:
    """``check_index`` (the server's diagnostics) on a memory dir whose index is a symlink to a
    file outside and whose topic was swapped for a FIFO: reported, not followed, no hang."""
    from reverie.memory.store import check_index, read_topic

    memory = tmp_path / "memory"
    memory.mkdir()
    outside = tmp_path / "secret.md"
    outside.write_text("# Memory\n\n- [S](s.md) - outside content\n")
    (memory / "MEMORY.md").symlink_to(outside)
    os.mkfifo(memory / "pipe.md")
    started = time.monotonic()
    problems = check_index(memory)
    assert [p.code for p in problems] == ["unreadable"]
    assert "symlink" in problems[0].message
    with pytest.raises(OSError, match="not a regular file"):
        read_topic(memory / "pipe.md")
    assert time.monotonic() - started < 5
