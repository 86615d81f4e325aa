"""`reverie transcript` and `reverie sessions` as real subprocesses: the JSON contract."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

pytestmark = pytest.mark.e2e

FIX = Path(__file__).resolve().parents[2] / "fixtures" / "transcripts"
INLINE = FIX / "claude-code/claude-code-viewer-v1.0.108-inline-sidechains/sample-project/5c0375b4-57a5-4f26-b12d-d022ee4e51b7.jsonl"  # noqa: E501
STATS_KEYS = ["agent", "session_id", "messages", "tool_calls", "tool_errors", "files", "tokens",
              "lines", "skipped", "errors"]
ROW_KEYS = {"agent", "session_id", "path", "messages", "tokens", "updated_at", "current"}


def reverie(*args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-m", "reverie", *args], capture_output=True,
                          timeout=60, env=os.environ.copy(), check=False)


def test_transcript_json_and_stats() -> None:
    done = reverie("transcript", str(INLINE), "--json")
    assert done.returncode == 0, done.stderr
    body = orjson.loads(done.stdout)
    assert set(body) == {"session", "messages", "stats"}
    assert body["session"]["id"] == "5c0375b4-57a5-4f26-b12d-d022ee4e51b7"
    assert len(body["messages"]) == body["stats"]["messages"] == 53
    stats = reverie("transcript", str(INLINE), "--stats")
    assert stats.returncode == 0
    summary = orjson.loads(stats.stdout)
    assert list(summary) == STATS_KEYS
    assert summary["files"] == ["/path/to/Demo/CLAUDE.md", "/path/to/Demo/todo-app/package.json"]
    assert summary["tool_errors"] == 3 and summary["skipped"] == 0
    assert summary == body["stats"]


def test_skipped_lines_still_exit_zero(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(INLINE.read_bytes() + b"{broken\n\xff\xfe\n")
    done = reverie("transcript", str(path), "--stats")
    assert done.returncode == 0
    assert orjson.loads(done.stdout)["skipped"] == 2


@pytest.mark.parametrize("kind", ["missing", "directory"])
def test_bad_paths_exit_nonzero_with_one_line(tmp_path: Path, kind: str) -> None:
    target = tmp_path / "nope.jsonl" if kind == "missing" else tmp_path
    done = reverie("transcript", str(target), "--json")
    assert done.returncode != 0
    assert done.stdout == b""
    lines = done.stderr.decode().strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("reverie: ")


def test_sessions_lists_the_workspace(reverie_env: dict[str, Path]) -> None:
    home = reverie_env["agent_home"]
    shutil.copytree(FIX / "claude-code/codemie-v2.0.64-sibling-agent-files/-tmp-private",
                    home / ".claude" / "projects" / "-tmp-private")
    done = reverie("sessions", "--workspace", "/tmp", "--json")
    assert done.returncode == 0, done.stderr
    rows = orjson.loads(done.stdout)
    assert [set(r) for r in rows] == [ROW_KEYS] * 3
    current = [r for r in rows if r["current"]]
    assert [r["session_id"] for r in current] == ["4c2ddfdc-b619-4525-8d03-1950fb1b0257"]
    by_id = {r["session_id"]: r for r in rows}
    assert by_id["4c2ddfdc-b619-4525-8d03-1950fb1b0257"]["messages"] == 19
    assert all(r["tokens"] > 0 for r in rows)
