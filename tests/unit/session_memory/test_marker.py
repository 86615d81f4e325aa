"""The extraction marker: written while a manager extracts, honoured across processes."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from reverie.config import Settings
from reverie.events import EventRecorder
from reverie.session_memory.manager import SessionMemoryManager
from reverie.session_memory.marker import marker_path, running_since, write_marker
from reverie.transcripts.reader import load_transcript

FIXTURE = (Path(__file__).resolve().parents[2] / "fixtures" / "transcripts" / "claude-code"
           / "spotter-v2.1.38-tool-heavy" / "tool_heavy.jsonl")


def test_own_stale_and_dead_markers_do_not_count(tmp_path: Path) -> None:
    marker = tmp_path / "extraction.running"
    write_marker(marker)
    assert running_since(marker) is None  # this process's own
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    marker.write_text(json.dumps({"pid": int(dead.stdout), "started_at": time.time()}))
    assert running_since(marker) is None
    marker.write_text("not json")
    assert running_since(marker) is None


async def test_manager_waits_for_another_process_then_extracts(tmp_path: Path) -> None:
    transcript = load_transcript(FIXTURE)
    manager = SessionMemoryManager(Settings(), EventRecorder())
    workspace = tmp_path / "ws"
    workspace.mkdir()
    marker = marker_path(manager.notes_path(transcript.session.id, workspace).parent)
    marker.parent.mkdir(parents=True)
    # a stand-in for another process's extraction: holds the marker for a second, then ends
    holder = subprocess.Popen([sys.executable, "-c", (
        "import json, os, sys, time; m = sys.argv[1]; "
        "open(m, 'w').write(json.dumps({'pid': os.getpid(), 'started_at': time.time()})); "
        "time.sleep(1.0); os.unlink(m)"), str(marker)])
    try:
        while running_since(marker) is None:
            assert holder.poll() is None
            time.sleep(0.01)
        started = time.monotonic()
        result = await manager.extract(transcript.session, transcript.messages, workspace,
                                       force=True)
        waited = time.monotonic() - started
    finally:
        holder.kill()
        holder.wait()
    assert result.ran and result.error is None
    assert waited >= 0.8  # it started only once the other process was gone
    assert not marker.exists()  # its own marker is cleared when it ends
