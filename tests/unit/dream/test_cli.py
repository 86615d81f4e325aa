"""``reverie dream / lock / history / undo / demo``: exact JSON contracts and behaviour."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from reverie.cli import main
from support.processes import children_cpu_seconds

DREAM_KEYS = {"ran", "skipped_reason", "sessions_reviewed", "files_touched", "turns",
              "tokens_in", "tokens_out", "duration_ms", "run_id", "memory_dir"}
LOCK_KEYS = {"memory_dir", "lock_path", "holder_pid", "holder_alive", "last_consolidated_at",
             "hours_since", "sessions_since", "next_gate", "spend"}


def _json(capsys: pytest.CaptureFixture[str], *argv: str) -> dict:
    assert main(list(argv)) == 0
    return json.loads(capsys.readouterr().out)


def test_dream_lock_history_undo_round_trip(workspace: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    ws = str(workspace)
    lock = _json(capsys, "lock", "--workspace", ws, "--json")
    assert set(lock) == LOCK_KEYS
    assert lock["last_consolidated_at"] is None and lock["sessions_since"] == 3
    assert lock["next_gate"] == "session_gate" and lock["holder_alive"] is False

    skipped = _json(capsys, "dream", "--workspace", ws, "--json")
    assert set(skipped) == DREAM_KEYS and skipped["skipped_reason"] == "session_gate"

    ran = _json(capsys, "dream", "--workspace", ws, "--manual", "--json")
    assert set(ran) == DREAM_KEYS and ran["ran"] is True and ran["sessions_reviewed"] == 4
    memory = Path(ran["memory_dir"])
    assert ran["files_touched"] and all(Path(p).parent == memory for p in ran["files_touched"])

    lock = _json(capsys, "lock", "--workspace", ws, "--json")
    assert lock["next_gate"] == "time_gate" and lock["holder_pid"] is None
    assert lock["hours_since"] < 0.1

    history = _json(capsys, "history", "--workspace", ws, "--json")
    (run,) = history["runs"]
    assert run["run_id"] == ran["run_id"] and run["source"] == "manual"
    assert set(run) >= {"run_id", "at", "source", "added", "changed", "removed", "tokens_in",
                        "tokens_out"}
    assert "MEMORY.md" in run["added"]

    assert main(["history", "--workspace", ws, "--diff"]) == 0
    assert "+++ b/MEMORY.md" in capsys.readouterr().out

    undo = _json(capsys, "undo", "--workspace", ws, "--json")
    assert undo["run"]["source"] == "undo" and undo["run"]["undoes"] == ran["run_id"]
    assert sorted(undo["run"]["removed"]) == sorted(run["added"])
    assert not (memory / "MEMORY.md").exists()
    assert main(["history", "--workspace", ws]) == 0
    text = capsys.readouterr().out
    assert "undo" in text and "manual" in text

    assert main(["undo", "nope", "--workspace", ws]) == 1
    assert "no run 'nope'" in capsys.readouterr().err


def test_demo_runs_offline_in_seconds(tmp_path: Path) -> None:
    """A fresh environment, no API key, real interpreter: the README's first command."""
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path / "home"),
           "PYTHONPATH": str(Path(__file__).resolve().parents[3] / "server")}
    (tmp_path / "home").mkdir()
    done, seconds = children_cpu_seconds(lambda: subprocess.run(
        [sys.executable, "-m", "reverie", "demo", "--json"], env=env, capture_output=True,
        text=True, timeout=60))
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert seconds < 15, seconds  # "in seconds": the demo's own CPU time, however busy the machine
    assert len(report["transcripts"]) == 8  # 4 real samples + the 4-session demo project
    assert report["dream"]["ran"] is True and report["dream"]["sessions_reviewed"] == 8
    assert "- [Package manager and scripts](package-manager-and-scripts.md)" in (
        report["memory_index"])
    # the demo shows the durable facts it built, not only the index: a standing rule, the
    # commands that work, a reversed decision with what it replaced, an error and its fix
    topics = report["memory_topics"]
    scripts = "\n".join(topics["package-manager-and-scripts.md"])
    assert "**Package manager:** This repo uses pnpm — never npm or yarn" in scripts
    assert "- **Test:** `pnpm test` _(4 sessions," in scripts
    decisions = "\n".join(topics["project-decisions.md"])
    assert "Drop SWR, move to TanStack Query" in decisions  # a plain statement, not chat
    assert "(formerly: For data fetching let's use SWR" in decisions
    assert "fixed by changing `src/cart/discount.ts`" in "\n".join(topics["testing.md"])
    assert "ls -la" not in json.dumps(topics) and "<your-token>" not in json.dumps(topics)
    assert report["history"]["source"] == "manual"
    assert all(Path(n["notes_path"]).is_file() for n in report["notes"])
    assert len(report["notes"]) == 8
    memory = Path(report["memory_dir"])
    assert "`mix phx.server`" in (memory / "package-manager-and-scripts.md").read_text()
    assert str(tmp_path / "home") not in report["memory_dir"]  # nothing in the user's home


def test_demo_human_output(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo", "--keep", str(tmp_path / "demo")]) == 0
    out = capsys.readouterr().out
    assert "Memory dir:" in out and "# Memory" in out and "History entry:" in out
    assert "--- package-manager-and-scripts.md" in out and "- **Test:** `pnpm test`" in out
    assert "manual" in out and "session_memory.md" in out
