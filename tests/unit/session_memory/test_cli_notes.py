"""``reverie notes`` through a real subprocess."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from reverie.session_memory.template import check_notes

from .conftest import CLAUDE_INLINE

KEYS = ["notes_path", "ran", "skipped_reason", "edited", "tokens_in", "tokens_out", "redactions"]


def run_notes(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "reverie", "notes", *args],
        capture_output=True, text=True, timeout=60, cwd=cwd, env=dict(os.environ),
    )


def test_notes_for_a_transcript_file(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    below = run_notes(str(CLAUDE_INLINE), "--workspace", str(workspace), "--json")
    assert below.returncode == 0, below.stderr
    result = json.loads(below.stdout)
    assert list(result) == KEYS
    # 26k tokens of context: over the 10k init threshold, ends at a natural break -> runs
    assert result["ran"] is True and result["edited"] is True
    notes = Path(result["notes_path"])
    assert notes.name == "session_memory.md" and "sessions/5c0375b4-" in str(notes)
    assert check_notes(notes.read_text()) == []
    assert "`CLAUDE.md` (edited" in notes.read_text()

    again = run_notes(str(CLAUDE_INLINE), "--workspace", str(workspace), "--json")
    assert json.loads(again.stdout)["skipped_reason"] == "threshold"
    forced = run_notes(str(CLAUDE_INLINE), "--workspace", str(workspace), "--force", "--json")
    assert json.loads(forced.stdout) == {**result, "edited": False}  # same conversation

    human = run_notes(str(CLAUDE_INLINE), "--workspace", str(workspace), "--force")
    assert human.returncode == 0 and human.stdout.startswith("Session memory checked: ")


def test_current_session_of_the_workspace(tmp_path: Path, reverie_env: dict[str, Path]) -> None:
    # put the fixture where Claude Code keeps it, for a workspace whose cwd matches
    project = reverie_env["agent_home"] / ".claude" / "projects" / "-path-to-Demo"
    project.mkdir(parents=True)
    shutil.copy(CLAUDE_INLINE, project / CLAUDE_INLINE.name)
    out = run_notes("--workspace", "/path/to/Demo", "--force", "--json")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["ran"] is True
    by_id = run_notes("5c0375b4-57a5-4f26-b12d-d022ee4e51b7", "--workspace", "/path/to/Demo",
                      "--json")
    assert json.loads(by_id.stdout)["skipped_reason"] == "threshold"


def test_bad_target_is_a_clear_error(tmp_path: Path) -> None:
    out = run_notes("no-such-session", "--workspace", str(tmp_path))
    assert out.returncode == 1
    assert out.stdout == ""
    assert out.stderr.startswith("reverie: no-such-session is neither a file nor a session")
