"""SessionWatcher over real inotify events in a temp agent home."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import orjson
import pytest
import watchfiles

from reverie.transcripts.watch import SessionAppended, SessionWatcher, _AnyEvent

FIX = Path(__file__).resolve().parents[2] / "fixtures" / "transcripts"
INCREMENTAL = FIX / "claude-code" / "codemie-v2.1.7-incremental-subagents"
WORKSPACE = Path("/Users/User/repo/codemie-ai/codemie-code")
SESSION = "e9fb405b-169f-40eb-9396-7e75076f045d"


async def _collect(watcher: SessionWatcher, sink: list[SessionAppended]) -> None:
    async for event in watcher:
        sink.append(event)


async def _until(predicate: object, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():  # type: ignore[operator]
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting for watcher events")
        await asyncio.sleep(0.02)


def _count(events: list[SessionAppended]) -> int:
    return sum(len(e.messages) for e in events)


async def test_appends_become_events_and_missing_roots_are_picked_up(reverie_env: dict[str, Path]) -> None:  # noqa: E501
    home = reverie_env["agent_home"]
    watcher = SessionWatcher(WORKSPACE, home, debounce_ms=20)
    events: list[SessionAppended] = []
    task = asyncio.create_task(_collect(watcher, events))
    await asyncio.sleep(0.3)
    # .claude/projects does not exist yet when the watcher starts
    project = home / ".claude" / "projects" / "-Users-User-repo-codemie-ai-codemie-code"
    project.mkdir(parents=True)
    await asyncio.sleep(0.3)
    turn1 = (INCREMENTAL / "turn-1.jsonl").read_bytes()
    turn2 = (INCREMENTAL / "turn-2.jsonl").read_bytes()
    path = project / f"{SESSION}.jsonl"
    path.write_bytes(turn1)
    await _until(lambda: _count(events) >= 16)
    with path.open("ab") as handle:
        handle.write(turn2[len(turn1):])
    await _until(lambda: _count(events) >= 34)
    # another project's session is not reported
    other = home / ".claude" / "projects" / "-elsewhere"
    other.mkdir()
    (other / "x.jsonl").write_bytes(turn1.replace(str(WORKSPACE).encode(), b"/elsewhere"))
    await asyncio.sleep(0.4)
    watcher.stop()
    await asyncio.wait_for(task, 5)
    assert _count(events) == 34
    assert {e.ref.session_id for e in events} == {SESSION}
    assert events[0].session.cwd == str(WORKSPACE)
    assert events[0].ref.path == path


async def test_existing_sessions_are_primed_and_states_resume(reverie_env: dict[str, Path]) -> None:
    home = reverie_env["agent_home"]
    sessions = home / ".reverie" / "sessions"
    sessions.mkdir(parents=True)
    workspace = reverie_env["data"]
    path = sessions / "g1.jsonl"
    (sessions / "g1.json").write_bytes(orjson.dumps({"workspace_dir": str(workspace)}))
    path.write_bytes(orjson.dumps({"role": "user", "content": "old"}) + b"\n")

    watcher = SessionWatcher(workspace, home, debounce_ms=20)
    events: list[SessionAppended] = []
    task = asyncio.create_task(_collect(watcher, events))
    await asyncio.sleep(0.3)
    with path.open("ab") as handle:
        handle.write(orjson.dumps({"role": "assistant", "content": "new"}) + b"\n")
    await _until(lambda: _count(events) >= 1)
    watcher.stop()
    await asyncio.wait_for(task, 5)
    assert [m.text for e in events for m in e.messages] == ["new"]  # "old" was primed
    saved = {k: v.model_dump(mode="json") for k, v in watcher.states().items()}

    with path.open("ab") as handle:  # written while no watcher runs
        handle.write(orjson.dumps({"role": "user", "content": "while away"}) + b"\n")
    resumed = SessionWatcher(workspace, home, debounce_ms=20, tail_states=saved)
    again: list[SessionAppended] = []
    task = asyncio.create_task(_collect(resumed, again))
    await _until(lambda: _count(again) >= 1)
    resumed.stop()
    await asyncio.wait_for(task, 5)
    assert [m.text for e in again for m in e.messages] == ["while away"]


async def test_stop_before_any_change_ends_promptly(reverie_env: dict[str, Path]) -> None:
    watcher = SessionWatcher(reverie_env["data"], reverie_env["agent_home"], debounce_ms=50)
    events: list[SessionAppended] = []
    task = asyncio.create_task(_collect(watcher, events))
    await asyncio.sleep(0.2)
    started = time.monotonic()
    watcher.stop()
    await asyncio.wait_for(task, 5)
    assert time.monotonic() - started < 2 and events == []


class _AgentWritesDuringScan(SessionWatcher):
    """A watcher whose start-up scan races an agent creating a new session file."""

    def __init__(self, *args: object, new_file: Path, before: bool, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.new_file, self.before, self.created = new_file, before, False

    def _create(self) -> None:
        if not self.created:
            self.created = True
            self.new_file.write_bytes(orjson.dumps({"role": "user", "content": "fresh"}) + b"\n")

    def _scan(self, *args: object) -> list[SessionAppended]:
        if self.before:  # created after the watches started, before discovery sees the folder
            self._create()
            return super()._scan(*args)  # type: ignore[arg-type]
        events = super()._scan(*args)  # type: ignore[arg-type]
        self._create()  # created once discovery has listed the folder
        return events


@pytest.mark.parametrize("before", [True, False], ids=["before-discovery", "after-discovery"])
async def test_session_created_during_startup_scan_is_reported(
    reverie_env: dict[str, Path], before: bool
) -> None:
    home = reverie_env["agent_home"]
    workspace = reverie_env["data"]
    sessions = home / ".reverie" / "sessions"
    sessions.mkdir(parents=True)
    (sessions / "old.json").write_bytes(orjson.dumps({"workspace_dir": str(workspace)}))
    (sessions / "old.jsonl").write_bytes(orjson.dumps({"role": "user", "content": "old"}) + b"\n")
    (sessions / "new.json").write_bytes(orjson.dumps({"workspace_dir": str(workspace)}))
    time.sleep(0.01)  # the existing files are older than the watches
    watcher = _AgentWritesDuringScan(
        workspace, home, debounce_ms=20, new_file=sessions / "new.jsonl", before=before
    )
    events: list[SessionAppended] = []
    task = asyncio.create_task(_collect(watcher, events))
    await _until(lambda: _count(events) >= 1, timeout=5)
    await asyncio.sleep(0.2)  # nothing else (the primed "old", a second "fresh") arrives
    watcher.stop()
    await asyncio.wait_for(task, 5)
    assert [(e.ref.session_id, m.text) for e in events for m in e.messages] == [("new", "fresh")]


async def test_cancelling_a_running_watch_ends_cleanly(reverie_env: dict[str, Path]) -> None:
    """Cancelling a task inside ``awatch`` stops its watching thread, with no error raised."""
    folder = reverie_env["data"]
    stop = _AnyEvent(asyncio.Event())

    async def watch() -> None:
        async for _ in watchfiles.awatch(folder, stop_event=stop, step=20, debounce=20):
            pass

    task = asyncio.create_task(watch())
    await asyncio.sleep(0.2)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(task, 5)
    assert stop.is_set()  # what tells the watching thread to end


async def test_cancelling_the_consumer_stops_the_watcher(reverie_env: dict[str, Path]) -> None:
    home = reverie_env["agent_home"]
    (home / ".claude" / "projects").mkdir(parents=True)
    watcher = SessionWatcher(reverie_env["data"], home, debounce_ms=20)
    task = asyncio.create_task(_collect(watcher, []))
    await asyncio.sleep(0.3)
    before = set(asyncio.all_tasks())
    watches = {t for t in before if (t.get_name() or "").startswith("reverie-watch")}
    assert len(watches) == 2
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(task, 5)
    assert all(t.done() for t in watches)
