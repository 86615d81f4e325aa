"""The whole cycle with the offline engine, on real transcripts placed where agents keep them."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from datetime import date, datetime, timedelta
from pathlib import Path

from reverie.config import ProjectPaths, Settings
from reverie.events import EventRecorder
from reverie.memory.history import MemoryHistory
from reverie.memory.paths import LOCK_NAME
from reverie.memory.store import blocking_problems, check_index
from reverie.sleep.cycle import SleepCycle
from reverie.sleep.entries import load_entries
from reverie.sleep.schedule import load_state
from reverie.sleep.tracing import SleepTracer


def digest(directory: Path) -> dict[str, str]:
    """The memory's files and its lock (not Reverie's ``.reverie`` bookkeeping) -> sha256."""
    if not directory.exists():
        return {}
    return {p.relative_to(directory).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(directory.rglob("*"))
            if p.is_file() and ".reverie" not in p.relative_to(directory).parts}


def log_tracer() -> SleepTracer:
    return SleepTracer(use_otel=False)


async def test_offline_cycle_writes_journal_memory_and_history(workspace) -> None:
    settings = Settings()
    events = EventRecorder()
    report = await SleepCycle(settings, events=events, tracer=log_tracer()).run(workspace.root)
    paths = ProjectPaths(settings, workspace.root)

    assert report.skipped_reason is None
    assert report.sessions_found == 2
    assert (report.summaries_ok, report.summaries_failed) == (2, 0)
    reviewed = (date.today() - timedelta(days=1)).isoformat()  # a run reviews the day before
    assert report.journal_path == paths.journals_dir / f"{reviewed}.md"
    journal = report.journal_path.read_text()
    # concrete facts from the Codex rollout and the Claude Code session
    assert "**Build:** `npm run build`" in journal
    assert "`lib/spotter_web/live/session_live.ex`" in journal
    assert "Asked: Work on bead spotter-dov" in journal
    assert "4 project command(s) of which 1 failed" in journal

    entries = load_entries(paths.memory_dir)
    assert report.entries_before == 0 and report.entries_after == len(entries) > 0
    assert report.candidates >= len(entries)
    # topic files by subject, not one file per candidate and not a log of files touched
    # the issue tracker's workflow (`bd show`, `bd ready`) is a durable fact of its own
    assert {e.key for e in entries} == {"package-manager-and-scripts", "testing", "project-notes"}
    notes_entry = next(e for e in entries if e.key == "project-notes").content
    assert "`bd`" in notes_entry
    scripts = next(e for e in entries if e.key == "package-manager-and-scripts").content
    assert "- **Build:** `npm run build` _(session 019e1625, 2026-05-11)_" in scripts
    assert "session_live.ex" not in "".join(e.content for e in entries)
    assert blocking_problems(check_index(paths.memory_dir)) == []
    index = (paths.memory_dir / "MEMORY.md").read_text()
    assert "- [Package manager and scripts](package-manager-and-scripts.md) - build: `npm run " \
        "build`" in index
    assert all(len(line) <= 150 for line in index.splitlines())

    (run,) = MemoryHistory(paths.memory_dir).runs()
    assert run.run_id == report.run_id and run.source == "sleep"
    assert "package-manager-and-scripts.md" in run.added
    assert load_state(paths).last_run_date == date.today()
    types = [e.type for e in events.events]
    assert types[0] == "start" and "complete" in types and "memory_saved" in types

    # a second night with nothing new changes nothing and keeps the recorded dates
    before = digest(paths.memory_dir)
    again = await SleepCycle(settings, tracer=log_tracer()).run(workspace.root)
    assert again.run_id is None and again.entries_after == again.entries_before == len(entries)
    assert {k: v for k, v in digest(paths.memory_dir).items() if not k.startswith(".")} == {
        k: v for k, v in before.items() if not k.startswith(".")}


async def test_cap_limits_the_entries(workspace) -> None:
    settings = Settings(sleep_max_entries=2)
    report = await SleepCycle(settings, tracer=log_tracer()).run(workspace.root)
    assert report.entries_after == 2
    assert len(load_entries(ProjectPaths(settings, workspace.root).memory_dir)) == 2


async def test_no_recent_session_skips_but_still_keeps_house(workspace) -> None:
    old = (datetime.now() - timedelta(days=3)).timestamp()
    for path in (workspace.codex, workspace.claude):
        os.utime(path, (old, old))
    settings = Settings()
    paths = ProjectPaths(settings, workspace.root)
    stale_journal = paths.journals_dir / "2020-01-01.md"
    stale_journal.parent.mkdir(parents=True)
    stale_journal.write_text("old")
    report = await SleepCycle(settings, tracer=log_tracer()).run(workspace.root)
    assert report.sessions_found == 0
    assert report.skipped_reason and "no sessions" in report.skipped_reason
    assert report.journal_path is None and report.run_id is None
    assert not stale_journal.exists() and report.housekeeping.bytes_reclaimed == 3
    assert not paths.memory_dir.exists()


async def test_busy_lock_leaves_memory_alone(workspace) -> None:
    settings = Settings()
    memory = ProjectPaths(settings, workspace.root).memory_dir
    memory.mkdir(parents=True)
    (memory / LOCK_NAME).write_text(str(os.getpid()))  # a live holder: "a dream is running"
    before = digest(memory)
    report = await SleepCycle(settings, tracer=log_tracer(), lock_wait_seconds=0).run(
        workspace.root)
    assert report.summaries_ok == 2 and report.journal_path is not None
    assert report.rem_error and "dream" in report.rem_error
    assert report.run_id is None
    assert digest(memory) == before


def test_cli_json_and_human_report(workspace, reverie_env) -> None:
    env = {**os.environ, "REVERIE_DATA_DIR": str(reverie_env["data"]),
           "REVERIE_AGENT_HOME": str(reverie_env["agent_home"]),
           "REVERIE_CONFIG_DIR": str(reverie_env["config"])}
    cmd = [sys.executable, "-m", "reverie", "sleep", "--workspace", str(workspace.root)]
    out = subprocess.run([*cmd, "--json"], capture_output=True, text=True, env=env, timeout=60)
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert list(data) == ["date", "sessions_found", "summaries_ok", "summaries_failed",
                          "candidates", "entries_before", "entries_after", "journal_path",
                          "run_id", "skipped_reason", "housekeeping"]
    assert set(data["housekeeping"]) == {"journals_deleted", "notes_deleted",
                                         "history_runs_pruned", "transcripts_deleted",
                                         "bytes_reclaimed"}
    assert data["sessions_found"] == 2 and data["summaries_ok"] == 2
    # a run without --date reviews yesterday, and its journal is named after that day
    yesterday = (date.today() - timedelta(days=1)).isoformat()
    assert data["date"] == yesterday and data["skipped_reason"] is None
    assert Path(data["journal_path"]).name == f"{yesterday}.md"
    assert Path(data["journal_path"]).is_file() and data["run_id"]

    human = subprocess.run([*cmd, "--date", "2020-02-02"], capture_output=True, text=True,
                           env=env, timeout=60)
    assert human.returncode == 0, human.stderr
    assert "Sleep cycle for 2020-02-02" in human.stdout
    assert "skipped: no sessions" in human.stdout and "housekeeping" in human.stdout

    bad = subprocess.run([*cmd, "--date", "yesterday"], capture_output=True, text=True,
                         env=env, timeout=60)
    assert bad.returncode == 1 and "YYYY-MM-DD" in bad.stderr and bad.stdout == ""

    no_key = subprocess.run(cmd, capture_output=True, text=True, timeout=60,
                            env={**env, "REVERIE_PROVIDER": "anthropic"})
    assert no_key.returncode == 1 and no_key.stdout == ""
    assert no_key.stderr.startswith("reverie: No API key for the anthropic provider")


async def test_only_the_recent_aider_run_of_a_long_history_is_reviewed(
    workspace, transcripts_dir: Path
) -> None:
    history = workspace.root / ".aider.chat.history.md"
    history.write_bytes((transcripts_dir / "aider/aider-repo/.aider.chat.history.md").read_bytes())
    recent = (datetime.now() - timedelta(minutes=30)).timestamp()
    os.utime(history, (recent, recent))
    report = await SleepCycle(Settings(), tracer=log_tracer()).run(workspace.root)
    assert report.sessions_found == 3  # Codex, Claude Code and the last of 147 Aider runs
    journal = report.journal_path.read_text()
    assert journal.count("(aider)") == 1
    assert "`aider-20240808T141120-410784` (aider)" in journal


async def test_a_failed_cycle_still_counts_as_tonights_attempt(workspace) -> None:
    import pytest

    from reverie.llm.errors import LLMConfigError

    settings = Settings(provider="anthropic")  # no key anywhere: the client cannot be built
    events = EventRecorder()
    with pytest.raises(LLMConfigError):
        await SleepCycle(settings, events=events, tracer=log_tracer()).run(workspace.root)
    state = load_state(ProjectPaths(settings, workspace.root))
    assert state.last_run_date == date.today()
    assert state.last_error and "ANTHROPIC_API_KEY" in state.last_error
    assert [e.type for e in events.events] == ["start", "error"]


async def test_the_editor_s_own_sessions_are_reviewed_too(workspace, transcripts_dir: Path,
                                                          tmp_path: Path) -> None:
    """A Copilot Chat session in the storage folder the running editor reported (a VS Code
    the platform defaults do not name: code-server here) is one of the day's sessions."""
    from reverie.transcripts.editor_places import EditorPlaces

    user = tmp_path / "code-server" / "User"
    storage = user / "workspaceStorage" / "0f3c"
    (storage / "chatSessions").mkdir(parents=True)
    (storage / "workspace.json").write_text(json.dumps({"folder": workspace.root.as_uri()}))
    source = (transcripts_dir / "copilot-chat" / "source-types" / "chatSessions"
              / "3f8e2b7c-9a41-4d6e-b0c5-7e1d2a9f4b68.json")
    chat = storage / "chatSessions" / source.name
    chat.write_bytes(source.read_bytes())
    when = datetime.now().timestamp() - 1800
    os.utime(chat, (when, when))
    editor = EditorPlaces.detect(workspace.agent_home).with_editor_storage(
        (storage / "reverie.reverie").as_uri(), None)
    settings = Settings()
    without = await SleepCycle(settings, tracer=log_tracer()).run(workspace.root)
    assert without.sessions_found == 2
    report = await SleepCycle(settings, tracer=log_tracer(), editor=editor).run(
        workspace.root, date.today())
    assert report.sessions_found == without.sessions_found + 1
    assert report.summaries_ok == report.sessions_found
    assert report.journal_path is not None
    assert "Asked: " + json.loads(source.read_text())["requests"][0]["message"]["text"][:30] \
        in report.journal_path.read_text()
