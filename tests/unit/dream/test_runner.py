"""DreamRunner over real sample sessions: gates in order, lock, events, offline engine."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path
from typing import Any

import pytest

from reverie.config import ProjectPaths, Settings
from reverie.dream.gates import ScanThrottle, cheap_gate
from reverie.dream.runner import DreamRequest, DreamRunner
from reverie.events import EventRecorder
from reverie.memory.history import MemoryHistory
from reverie.memory.lock import ConsolidationLock
from reverie.memory.store import check_index, read_topic
from reverie.memory.write import MemoryWriter


def _runner() -> tuple[DreamRunner, EventRecorder]:
    recorder = EventRecorder()
    return DreamRunner(Settings(), recorder), recorder


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for key in ("REVERIE_DREAM_ENABLED", "REVERIE_DREAM_MIN_SESSIONS", "REVERIE_DREAM_MIN_HOURS",
                "REVERIE_DREAM_SCAN_INTERVAL_SECONDS", "REVERIE_REMOTE_MODE",
                "REVERIE_AUTO_MEMORY_ENABLED", "REVERIE_PROVIDER"):
        monkeypatch.delenv(key, raising=False)


async def test_manual_dream_consolidates_real_sessions(workspace: Path) -> None:
    runner, events = _runner()
    result = await runner.run(DreamRequest(workspace=workspace, manual=True))
    assert result.error is None and result.ran and result.sessions_reviewed == 4
    memory = Path(result.memory_dir)
    assert memory == ProjectPaths(Settings(), workspace).memory_dir
    scripts = (memory / "package-manager-and-scripts.md").read_text()
    # Claude Code 2.1.38 sample: started Phoenix; dated from the session itself
    assert "- **Run:** `mix phx.server` _(session d6e0bada, 2026-02-10)_" in scripts
    # a log is not memory: no one-off `rm`, no `ls`, no files touched, no tool slips
    assert sorted(p.name for p in memory.glob("*.md")) == [
        "MEMORY.md", "package-manager-and-scripts.md"]
    assert "rm hello.js" not in scripts and "`ls`" not in scripts
    meta = read_topic(memory / "package-manager-and-scripts.md").meta
    assert "d6e0bada-1959-4eec-a9d2-0bfade768d8f" in meta.sources
    assert check_index(memory) == []
    assert [e.type for e in events.events] == [
        "start", "progress", "progress", "progress", "progress", "complete", "memory_saved"]
    saved = events.of_type("memory_saved")[0].payload["memory_paths"]
    assert sorted(saved) == sorted(result.files_touched)
    assert str(memory / "MEMORY.md") in saved
    runs = MemoryHistory(memory).runs()
    assert runs[0].run_id == result.run_id and runs[0].source == "manual"
    assert "019b7f94-51b4-7593-922e-ba12b5b73b52" in runs[0].sessions  # the Codex rollout
    assert set(result.as_json()) == {
        "ran", "skipped_reason", "sessions_reviewed", "files_touched", "turns", "tokens_in",
        "tokens_out", "duration_ms", "run_id", "memory_dir"}


async def test_session_notes_are_merged_with_absolute_dates(workspace: Path) -> None:
    settings = Settings()
    notes = ProjectPaths(settings, workspace).notes_path("d6e0bada-1959-4eec-a9d2-0bfade768d8f")
    notes.parent.mkdir(parents=True)
    notes.write_text(
        "# Session Title\n_t_\nPhoenix terminal\n\n# Workflow\n_w_\n"
        "- `mix test --only xterm` runs the terminal tests\n\n"
        "# Learnings\n_l_\n- Never start Phoenix in the foreground from the agent\n"
        "- Since yesterday we always run `mix format` before committing\n")
    runner, _ = _runner()
    result = await runner.run(DreamRequest(workspace=workspace, manual=True))
    memory = Path(result.memory_dir)
    text = "\n".join(p.read_text() for p in memory.glob("*.md"))
    # standing rules the notes state, as plain statements with their session
    assert "Never start Phoenix in the foreground from the agent. _(session d6e0bada, " \
        "2026-02-10)_" in text
    # the session's last record is on 2026-02-10, so "yesterday" is 2026-02-09
    assert "Since 2026-02-09 we always run `mix format` before committing." in text
    assert check_index(memory) == []


async def test_auto_gates_in_order(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    runner, events = _runner()
    # 4 sample sessions, the newest is "current": 3 < 5
    result = await runner.run(DreamRequest(workspace=workspace))
    assert result.skipped_reason == "session_gate" and result.sessions_reviewed == 3
    # scan throttle: the same runner does not rescan within 10 minutes
    again = await runner.run(DreamRequest(workspace=workspace))
    assert again.skipped_reason == "scan_throttle"
    # throttle state belongs to the runner, not the process
    monkeypatch.setenv("REVERIE_DREAM_MIN_SESSIONS", "3")
    fresh, _ = _runner()
    result = await fresh.run(DreamRequest(workspace=workspace))
    assert result.ran and result.sessions_reviewed == 3 and result.error is None
    # the current session was excluded
    sources = MemoryHistory(Path(result.memory_dir)).runs()[0].sessions
    assert "019b7f94-51b4-7593-922e-ba12b5b73b52" not in sources  # the newest one
    # time gate: just consolidated
    third, _ = _runner()
    assert (await third.run(DreamRequest(workspace=workspace))).skipped_reason == "time_gate"
    reasons = [e.payload["reason"] for e in events.of_type("skipped")]
    assert reasons == ["session_gate", "scan_throttle"]


@pytest.mark.parametrize(
    ("env", "request_kw", "reason"),
    [
        ({"REVERIE_DREAM_ENABLED": "0"}, {}, "disabled"),
        ({}, {"is_subagent": True}, "subagent"),
        ({}, {"is_subagent": True, "manual": True}, "subagent"),
        ({"REVERIE_REMOTE_MODE": "1"}, {}, "remote_mode"),
        ({"REVERIE_AUTO_MEMORY_ENABLED": "0"}, {}, "auto_memory_disabled"),
        ({"REVERIE_PROVIDER": "openai", "REVERIE_DREAM_MIN_SESSIONS": "1"}, {},
         "missing_llm_client"),
        ({}, {"manual": True, "logs": True}, "no_daily_log_entries"),
    ],
)
async def test_skip_reasons(workspace: Path, monkeypatch: pytest.MonkeyPatch, env: dict[str, str],
                            request_kw: dict[str, bool], reason: str) -> None:
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    runner, events = _runner()
    result = await runner.run(DreamRequest(workspace=workspace, **request_kw))
    assert result.skipped_reason == reason and not result.ran
    assert events.of_type("skipped")[0].payload["reason"] == reason
    assert not Path(result.memory_dir, "MEMORY.md").exists()


async def test_manual_bypasses_disabled_and_time_gate(workspace: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REVERIE_DREAM_ENABLED", "0")
    runner, _ = _runner()
    memory = ProjectPaths(Settings(), workspace).memory_dir
    memory.mkdir(parents=True)
    lock = memory / ".consolidate-lock"
    lock.write_text("")  # consolidated just now, after every sample session
    os.utime(lock, (time.time() + 1, time.time() + 1))
    result = await runner.run(DreamRequest(workspace=workspace, manual=True))
    assert result.ran and result.error is None
    assert result.sessions_reviewed == 0  # nothing touched since the lock's time
    assert result.files_touched == []


async def test_lock_busy(workspace: Path) -> None:
    runner, _events = _runner()
    memory = ProjectPaths(Settings(), workspace).memory_dir
    holder = ConsolidationLock(memory)
    memory.mkdir(parents=True)
    assert holder.try_acquire(lambda: False)
    result = await runner.run(DreamRequest(workspace=workspace, manual=True))
    assert result.skipped_reason == "lock_busy" and not result.ran
    holder.rollback()
    assert not (memory / "MEMORY.md").exists()


async def test_extra_context_is_recorded(workspace: Path) -> None:
    runner, _ = _runner()
    result = await runner.run(DreamRequest(workspace=workspace, manual=True,
                                           extra="We always deploy on Fridays."))
    text = (Path(result.memory_dir) / "deployment-and-environments.md").read_text()
    assert "- **Deployment:** Always deploy on Fridays. _(user, " in text  # plain, not chat


async def test_daily_log_mode_consolidates_and_marks(workspace: Path) -> None:
    paths = ProjectPaths(Settings(), workspace)
    log = paths.logs_dir / "2026" / "03" / "2026-03-02.md"
    log.parent.mkdir(parents=True)
    log.write_text("# 2026-03-02\n\n- Switched the queue to Redis streams yesterday\n"
                   "  because Kafka was overkill\n- Old entry <!-- consolidated: dropped -->\n")
    runner, events = _runner()
    result = await runner.run(DreamRequest(workspace=workspace, manual=True, logs=True))
    assert result.ran and result.error is None
    topic = (Path(result.memory_dir) / "database-and-migrations.md").read_text()
    assert "Switched the queue to Redis streams on 2026-03-01 because Kafka was overkill. " \
        "_(daily log, 2026-03-02)_" in topic
    marked = log.read_text().splitlines()
    assert marked[2].endswith("-->") and "database-and-migrations.md" in marked[2]
    assert marked[4] == "- Old entry <!-- consolidated: dropped -->"
    complete = events.of_type("complete")[0].payload
    assert complete["log_entry_ids"] == ["2026-03-02#3"] and complete["source"] == "daily_log"
    again = await runner.run(DreamRequest(workspace=workspace, manual=True, logs=True))
    assert again.skipped_reason == "no_daily_log_entries"


async def test_unusable_memory_dir_is_a_clean_error(workspace: Path, tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    real = tmp_path / "real-memory"
    real.mkdir()
    (tmp_path / "link").symlink_to(real)
    monkeypatch.setenv("REVERIE_MEMORY_DIR", str(tmp_path / "link"))
    runner, events = _runner()
    result = await runner.run(DreamRequest(workspace=workspace, manual=True))
    assert result.error and "symlink" in result.error and not result.ran
    assert events.of_type("error") and list(real.iterdir()) == []


@pytest.mark.skipif(os.geteuid() == 0, reason="root ignores directory permissions")
async def test_read_only_memory_dir_fails_without_loss(workspace: Path, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    memory = tmp_path / "ro"
    memory.mkdir()
    (memory / "MEMORY.md").write_text("# Memory\n")
    memory.chmod(0o500)
    monkeypatch.setenv("REVERIE_MEMORY_DIR", str(memory))
    try:
        runner, _ = _runner()
        result = await runner.run(DreamRequest(workspace=workspace, manual=True))
        assert result.error and not result.files_touched
        assert (memory / "MEMORY.md").read_text() == "# Memory\n"
    finally:
        memory.chmod(0o700)


async def test_submit_is_one_per_memory_dir_and_drain_waits(workspace: Path) -> None:
    runner, _ = _runner()
    first = runner.submit(DreamRequest(workspace=workspace, manual=True))
    second = runner.submit(DreamRequest(workspace=workspace, manual=True))
    assert first is second
    assert await runner.drain(30) == 0
    assert first.result().ran


async def test_cancelled_run_emits_cancelled_and_changes_nothing(
        workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Cancelled once the engine has written the staging copy, while its worker is still busy
    (the ``run=`` / ``abort=`` seams the language server fills with a worker process)."""
    monkeypatch.setenv("REVERIE_TEST_SLOW_APPLY_SECONDS", "0")
    engine_done = asyncio.Event()
    aborted = asyncio.Event()

    async def run_then_stay_busy(func: Any, *args: Any) -> Any:
        result = await asyncio.to_thread(func, *args)
        engine_done.set()
        await aborted.wait()  # a worker that only stops when told to
        return result

    async def abort() -> None:
        aborted.set()

    events = EventRecorder()
    runner = DreamRunner(Settings(), events, run=run_then_stay_busy, abort=abort)
    task = asyncio.create_task(runner.run(DreamRequest(workspace=workspace, manual=True)))
    await asyncio.wait_for(engine_done.wait(), 60)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert aborted.is_set()  # the busy worker was stopped, not waited for
    memory = ProjectPaths(Settings(), workspace).memory_dir
    assert not (memory / "MEMORY.md").exists()
    assert not (memory / ".consolidate-lock").exists()
    assert events.of_type("cancelled")
    assert not events.of_type("complete")


def test_scan_throttle_is_per_dir_and_expires(tmp_path: Path) -> None:
    throttle = ScanThrottle()
    throttle.mark(tmp_path / "a", now=100.0)
    assert throttle.blocked(tmp_path / "a", 600, now=200.0)
    assert not throttle.blocked(tmp_path / "b", 600, now=200.0)
    assert not throttle.blocked(tmp_path / "a", 600, now=701.0)


def test_cheap_gate_order() -> None:
    s = Settings(dream_enabled=False, remote_mode=True, auto_memory_enabled=False)
    assert cheap_gate(s, manual=False, is_subagent=True) == "disabled"
    assert cheap_gate(s, manual=True, is_subagent=False) is None
    s = Settings(remote_mode=True, auto_memory_enabled=False)
    assert cheap_gate(s, manual=False, is_subagent=True) == "subagent"
    assert cheap_gate(s, manual=False, is_subagent=False) == "remote_mode"


async def test_env_overrides_min_hours_and_interval(workspace: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REVERIE_DREAM_MIN_HOURS", "1")
    monkeypatch.setenv("REVERIE_DREAM_MIN_SESSIONS", "10")
    monkeypatch.setenv("REVERIE_DREAM_SCAN_INTERVAL_SECONDS", "0.01")
    memory = ProjectPaths(Settings(), workspace).memory_dir
    memory.mkdir(parents=True)
    lock = memory / ".consolidate-lock"
    lock.write_text("")
    two_hours_ago = time.time() - 2 * 3600
    os.utime(lock, (two_hours_ago, two_hours_ago))
    runner, _ = _runner()
    first = await runner.run(DreamRequest(workspace=workspace))
    assert first.skipped_reason == "session_gate"  # 2 h >= 1 h: the time gate passed
    await asyncio.sleep(0.02)
    second = await runner.run(DreamRequest(workspace=workspace))
    assert second.skipped_reason == "session_gate"  # throttle interval already over


async def test_claude_code_preset_writes_where_claude_loads_memory(
        workspace: Path, reverie_env: dict[str, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REVERIE_MEMORY_DIR_PRESET", "claude-code")
    runner, _ = _runner()
    result = await runner.run(DreamRequest(workspace=workspace, manual=True))
    slug = "".join(c if c.isalnum() else "-" for c in str(workspace.resolve()))
    expected = reverie_env["agent_home"] / ".claude" / "projects" / slug / "memory"
    assert Path(result.memory_dir) == expected
    assert (expected / "MEMORY.md").is_file()
    # the memory dir inside Claude's project folder is not mistaken for a session
    again = await DreamRunner(Settings()).run(DreamRequest(workspace=workspace, manual=True))
    assert again.error is None


async def test_broken_inputs_are_repaired_and_undoable(workspace: Path) -> None:
    memory = ProjectPaths(Settings(), workspace).memory_dir
    memory.mkdir(parents=True)
    broken_index = ("# Memory\n\n- [Gone](gone.md) - deleted by hand\n"
                    + "".join(f"pasted log line {i}\n" for i in range(230)))
    (memory / "MEMORY.md").write_text(broken_index)
    (memory / "notes.md").write_text("---\nname: [unclosed\n---\nkeep me\n")
    (memory / ".consolidate-lock").write_text("not a pid\x00\xff")
    old = time.time() - 3 * 24 * 3600
    os.utime(memory / ".consolidate-lock", (old, old))
    runner, events = _runner()
    result = await runner.run(DreamRequest(workspace=workspace, manual=True))
    assert result.ran and result.error is None
    problems = check_index(memory)
    assert {p.code for p in problems if p.severity == "error"} == {"bad-front-matter"}
    assert (memory / "notes.md").read_text() == "---\nname: [unclosed\n---\nkeep me\n"
    index = (memory / "MEMORY.md").read_text()
    assert "gone.md" not in index and len(index.splitlines()) <= 200
    assert "pasted log line 229" in (memory / "index-notes.md").read_text()  # moved, not lost
    assert events.of_type("complete")[0].payload["repairs"]
    from reverie.memory.undo import undo_run

    await undo_run(MemoryWriter(), memory)
    assert (memory / "MEMORY.md").read_text() == broken_index


async def test_memory_dir_under_a_file_is_a_clean_error(workspace: Path, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "plain-file").write_text("x")
    monkeypatch.setenv("REVERIE_MEMORY_DIR", str(tmp_path / "plain-file" / "memory"))
    runner, events = _runner()
    result = await runner.run(DreamRequest(workspace=workspace, manual=True))
    assert result.error and not result.ran and events.of_type("error")
    assert (tmp_path / "plain-file").read_text() == "x"


async def test_daily_log_marks_only_the_batch_the_dream_consolidated(workspace: Path) -> None:
    """A dream shows the model at most DAILY_LOG_BATCH entries: only those are marked, the
    rest wait for the next dream (none is marked consolidated without being read)."""
    from reverie.dream.daily_log import DAILY_LOG_BATCH, scan_unconsolidated

    paths = ProjectPaths(Settings(), workspace)
    log = paths.logs_dir / "2026" / "03" / "2026-03-02.md"
    log.parent.mkdir(parents=True)
    total = DAILY_LOG_BATCH + 30
    log.write_text("".join(f"- Note {n}: the staging deploy uses blue-green slot {n}\n"
                           for n in range(total)))
    runner, events = _runner()
    first = await runner.run(DreamRequest(workspace=workspace, manual=True, logs=True))
    assert first.ran and first.error is None
    complete = events.of_type("complete")[0].payload
    assert len(complete["log_entry_ids"]) == DAILY_LOG_BATCH
    assert complete["duration_ms"] >= 0 and isinstance(complete["duration_ms"], int)
    left = scan_unconsolidated(paths.logs_dir).entries
    assert [e.text for e in left] == [f"Note {n}: the staging deploy uses blue-green slot {n}"
                                      for n in range(DAILY_LOG_BATCH, total)]
    second = await runner.run(DreamRequest(workspace=workspace, manual=True, logs=True))
    assert second.ran
    assert len(events.of_type("complete")[1].payload["log_entry_ids"]) == 30
    third = await runner.run(DreamRequest(workspace=workspace, manual=True, logs=True))
    assert third.skipped_reason == "no_daily_log_entries"
    assert "duration_ms" in events.of_type("skipped")[-1].payload
