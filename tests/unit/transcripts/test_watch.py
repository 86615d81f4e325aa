"""SessionWatcher over real inotify events in a temp agent home.

The important tests run twice: reading in a thread of this process (events carry messages and
digests) and reading in a real spawned worker process (events carry digests only, which must
equal the digests of what the in-process reading parses).
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
import watchfiles

from reverie.transcripts.digest import MessageDigest, digests
from reverie.transcripts.reading import SessionReader
from reverie.transcripts.tail import TailState, TranscriptTail
from reverie.transcripts.watch import SessionAppended, SessionWatcher, _AnyEvent
from reverie.transcripts.worker import ParseWorker

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
    return sum(len(e.digests) for e in events)


@pytest.fixture(scope="module")
def parse_worker() -> Iterator[ParseWorker]:
    """One worker process for the module (each spawn costs a few tenths of a second)."""
    worker = ParseWorker()
    yield worker
    worker.close()


class _ListHandler(logging.Handler):
    def __init__(self, records: list[logging.LogRecord]) -> None:
        super().__init__(logging.WARNING)
        self.records = records

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.fixture(params=["thread", "worker"])
def worker(request: pytest.FixtureRequest, parse_worker: ParseWorker) -> ParseWorker | None:
    """``None`` reads in a thread of this process; otherwise in the shared worker process."""
    return parse_worker if request.param == "worker" else None


def _check_payload(events: list[SessionAppended], worker: ParseWorker | None) -> None:
    """In-process events carry messages with matching digests; worker events digests only."""
    for event in events:
        if worker is None:
            assert event.digests == digests(event.messages)
        else:
            assert event.messages == []
        assert event.digests


def _reference(stages: list[bytes], name: str, tmp: Path) -> list[MessageDigest]:
    """Digests of what an in-process tail reads when the file grows through ``stages``."""
    tmp.mkdir(parents=True, exist_ok=True)
    path = tmp / name
    tail = TranscriptTail(path)
    out: list[MessageDigest] = []
    for stage in stages:
        path.write_bytes(stage)
        out.extend(digests(tail.read_new()))
    return out


def _all_digests(events: list[SessionAppended]) -> list[MessageDigest]:
    return [d for e in events for d in e.digests]


async def test_appends_become_events_and_missing_roots_are_picked_up(
    reverie_env: dict[str, Path], worker: ParseWorker | None, tmp_path: Path
) -> None:
    home = reverie_env["agent_home"]
    watcher = SessionWatcher(WORKSPACE, home, debounce_ms=20, worker=worker)
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
    _check_payload(events, worker)
    expected = _reference([turn1, turn2], path.name, tmp_path / "reference")
    assert _all_digests(events) == expected
    assert sum(d.tool_calls for d in expected) > 0 and sum(d.tokens for d in expected) > 0
    assert set(watcher.states()) == {str(path)}  # the other project's file is not tracked


async def test_existing_sessions_are_primed_and_states_resume(
    reverie_env: dict[str, Path], worker: ParseWorker | None, tmp_path: Path
) -> None:
    home = reverie_env["agent_home"]
    sessions = home / ".reverie" / "sessions"
    sessions.mkdir(parents=True)
    workspace = reverie_env["data"]
    path = sessions / "g1.jsonl"
    (sessions / "g1.json").write_bytes(orjson.dumps({"workspace_dir": str(workspace)}))
    path.write_bytes(orjson.dumps({"role": "user", "content": "old"}) + b"\n")

    old = path.read_bytes()
    new = orjson.dumps({"role": "assistant", "content": "new"}) + b"\n"
    away = orjson.dumps({"role": "user", "content": "while away"}) + b"\n"
    reference = _reference([old, old + new, old + new + away], "g1.jsonl", tmp_path / "ref")

    watcher = SessionWatcher(workspace, home, debounce_ms=20, worker=worker)
    events: list[SessionAppended] = []
    task = asyncio.create_task(_collect(watcher, events))
    # primed (its state is known) before the append: a fixed sleep lost that race under load
    await _until(lambda: str(path) in watcher.states())
    with path.open("ab") as handle:
        handle.write(new)
    await _until(lambda: _count(events) >= 1)
    watcher.stop()
    await asyncio.wait_for(task, 5)
    _check_payload(events, worker)
    assert _all_digests(events) == reference[1:2]  # "old" was primed
    if worker is None:
        assert [m.text for e in events for m in e.messages] == ["new"]
    # states survive the end of the iteration (the tracker saves them in its ``finally``)
    saved = {k: v.model_dump(mode="json") for k, v in watcher.states().items()}
    assert list(saved) == [str(path)] and saved[str(path)]["offset"] == len(old + new)

    with path.open("ab") as handle:  # written while no watcher runs
        handle.write(away)
    resumed = SessionWatcher(workspace, home, debounce_ms=20, tail_states=saved, worker=worker)
    again: list[SessionAppended] = []
    task = asyncio.create_task(_collect(resumed, again))
    await _until(lambda: _count(again) >= 1)
    resumed.stop()
    await asyncio.wait_for(task, 5)
    _check_payload(again, worker)
    assert _all_digests(again) == reference[2:]
    if worker is None:
        assert [m.text for e in again for m in e.messages] == ["while away"]
    assert resumed.states()[str(path)].offset == len(old + new + away)


async def test_stop_before_any_change_ends_promptly(
    reverie_env: dict[str, Path], worker: ParseWorker | None
) -> None:
    watcher = SessionWatcher(reverie_env["data"], reverie_env["agent_home"], debounce_ms=50,
                             worker=worker)
    events: list[SessionAppended] = []
    task = asyncio.create_task(_collect(watcher, events))
    await asyncio.sleep(0.2)
    started = time.monotonic()
    watcher.stop()
    await asyncio.wait_for(task, 5)
    assert time.monotonic() - started < 2 and events == []


class _SlowScanWorker(ParseWorker):
    """The real worker process, whose reads wait for ``release``: a start-up scan that takes
    long (the worker starting on a loaded machine, many sessions to read)."""

    def __init__(self) -> None:
        super().__init__()
        self.release = asyncio.Event()
        self.reading = asyncio.Event()

    async def read_step(self, *args: Any, **kwargs: Any) -> Any:
        self.reading.set()
        await self.release.wait()
        return await super().read_step(*args, **kwargs)


async def test_stop_during_a_slow_startup_scan_ends_promptly_and_loses_nothing(
    reverie_env: dict[str, Path]
) -> None:
    """The server's shutdown stops the watcher: it must not wait for the start-up scan (in the
    worker), and what that scan would have read is read by the next watcher."""
    home = reverie_env["agent_home"]
    sessions = home / ".reverie" / "sessions"
    sessions.mkdir(parents=True)
    workspace = reverie_env["data"]
    (sessions / "g1.json").write_bytes(orjson.dumps({"workspace_dir": str(workspace)}))
    path = sessions / "g1.jsonl"
    path.write_bytes(orjson.dumps({"role": "user", "content": "before the stop"}) + b"\n")
    worker = _SlowScanWorker()
    try:
        watcher = SessionWatcher(workspace, home, debounce_ms=20, worker=worker, prime=False)
        events: list[SessionAppended] = []
        task = asyncio.create_task(_collect(watcher, events))
        await asyncio.wait_for(worker.reading.wait(), 10)
        started = time.monotonic()
        watcher.stop()
        await asyncio.wait_for(task, 5)
        assert time.monotonic() - started < 1.0 and events == []
        assert watcher.states() == {}  # the abandoned scan moved no tail state
        worker.release.set()
        resumed = SessionWatcher(workspace, home, debounce_ms=20, worker=worker, prime=False,
                                 tail_states=watcher.states())
        again: list[SessionAppended] = []
        task = asyncio.create_task(_collect(resumed, again))
        await _until(lambda: _count(again) >= 1)
        resumed.stop()
        await asyncio.wait_for(task, 5)
        assert [e.ref.path for e in again] == [path]
    finally:
        worker.close()


class _AgentWritesDuringScan(SessionReader):
    """A reader whose start-up scan races an agent creating a new session file."""

    def __init__(self, *args: Any, new_file: Path, before: bool, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.new_file, self.before, self.created = new_file, before, False

    def _create(self) -> None:
        if not self.created:
            self.created = True
            self.new_file.write_bytes(orjson.dumps({"role": "user", "content": "fresh"}) + b"\n")

    def scan(self, report: bool, watched_since_ns: int | None = None) -> list[SessionAppended]:
        if self.before:  # created after the watches started, before discovery sees the folder
            self._create()
            return super().scan(report, watched_since_ns)
        events = super().scan(report, watched_since_ns)
        self._create()  # created once discovery has listed the folder
        return events


class _RacingWatcher(SessionWatcher):
    def __init__(self, *args: Any, new_file: Path, before: bool, **kwargs: Any) -> None:
        self.new_file, self.before = new_file, before
        super().__init__(*args, **kwargs)

    def _new_reader(self, tail_states: Any) -> SessionReader:
        return _AgentWritesDuringScan(self.workspace, self.agent_home, tail_states=tail_states,
                                      new_file=self.new_file, before=self.before)


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
    watcher = _RacingWatcher(
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


async def test_cancelling_the_consumer_stops_the_watcher(
    reverie_env: dict[str, Path], worker: ParseWorker | None
) -> None:
    home = reverie_env["agent_home"]
    (home / ".claude" / "projects").mkdir(parents=True)
    watcher = SessionWatcher(reverie_env["data"], home, debounce_ms=20, worker=worker)
    task = asyncio.create_task(_collect(watcher, []))

    def watch_tasks() -> set[asyncio.Task[Any]]:
        return {t for t in asyncio.all_tasks() if (t.get_name() or "").startswith("reverie-watch")}

    await _until(lambda: len(watch_tasks()) == 2)
    watches = watch_tasks()
    assert len(watches) == 2
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(task, 5)
    assert all(t.done() for t in watches)


@pytest.mark.parametrize("when", ["idle", "busy"])
async def test_worker_killed_mid_watch_is_recovered_without_loss_or_repeat(
    reverie_env: dict[str, Path], parse_worker: ParseWorker, tmp_path: Path, when: str,
) -> None:
    """SIGKILL the worker process: the watcher re-creates its reader from its last states.

    ``idle``: killed between appends (the reader is simply gone from the new process);
    ``busy``: killed while the watcher's read waits behind another call (that read fails with
    the process and is done again in the new one).
    """
    home = reverie_env["agent_home"]
    project = home / ".claude" / "projects" / "-Users-User-repo-codemie-ai-codemie-code"
    project.mkdir(parents=True)
    path = project / f"{SESSION}.jsonl"
    turn1 = (INCREMENTAL / "turn-1.jsonl").read_bytes()
    turn2 = (INCREMENTAL / "turn-2.jsonl").read_bytes()
    watcher = SessionWatcher(WORKSPACE, home, debounce_ms=20, worker=parse_worker)
    events: list[SessionAppended] = []
    task = asyncio.create_task(_collect(watcher, events))
    await asyncio.sleep(0.3)
    path.write_bytes(turn1)
    await _until(lambda: _count(events) >= 16)
    # a handler on the watcher's own logger: what other tests in this worker process did to the
    # root logger's handlers or to propagation cannot hide the record
    lost: list[logging.LogRecord] = []
    watch_logger = logging.getLogger("reverie.transcripts.watch")
    capture = _ListHandler(lost)
    watch_logger.addHandler(capture)
    watch_logger.disabled = False
    old_pid = parse_worker.pid
    assert old_pid is not None

    blocker: asyncio.Task[None] | None = None
    if when == "idle":
        os.kill(old_pid, signal.SIGKILL)
        await asyncio.sleep(0.2)
    else:
        blocker = asyncio.create_task(parse_worker.call(time.sleep, 5.0))
        await asyncio.sleep(0.2)
    with path.open("ab") as handle:
        handle.write(turn2[len(turn1):])
    if blocker is not None:
        await asyncio.sleep(0.3)  # the watcher's read is queued behind the sleep
        os.kill(old_pid, signal.SIGKILL)
        with pytest.raises(Exception, match="ended during a call"):
            await asyncio.wait_for(blocker, 5)
    await _until(lambda: _count(events) >= 34)
    await asyncio.sleep(0.2)  # and nothing is reported twice
    assert not task.done()
    watcher.stop()
    await asyncio.wait_for(task, 5)
    assert _all_digests(events) == _reference([turn1, turn2], path.name, tmp_path / "reference")
    assert parse_worker.pid not in (None, old_pid)
    assert watcher.states()[str(path)].offset == len(turn2)
    # which of the two ways the reader was lost depends on timing on a loaded machine (the read
    # can reach the dying process, or be queued only after the new one started): either is a
    # loss the watcher logs and recovers from
    assert any(r.getMessage().startswith("transcript reader lost")
               and ("no transcript reader" in r.getMessage()
                    or "ended during a call" in r.getMessage())
               for r in lost), [r.getMessage() for r in lost]
    watch_logger.removeHandler(capture)


async def test_deleted_session_is_forgotten(
    reverie_env: dict[str, Path], worker: ParseWorker | None
) -> None:
    home = reverie_env["agent_home"]
    sessions = home / ".reverie" / "sessions"
    sessions.mkdir(parents=True)
    workspace = reverie_env["data"]
    (sessions / "g2.json").write_bytes(orjson.dumps({"workspace_dir": str(workspace)}))
    path = sessions / "g2.jsonl"
    watcher = SessionWatcher(workspace, home, debounce_ms=20, worker=worker)
    events: list[SessionAppended] = []
    task = asyncio.create_task(_collect(watcher, events))
    await asyncio.sleep(0.3)
    path.write_bytes(orjson.dumps({"role": "user", "content": "hello"}) + b"\n")
    await _until(lambda: _count(events) >= 1)
    assert str(path) in watcher.states()
    path.unlink()
    await _until(lambda: str(path) not in watcher.states())
    watcher.stop()
    await asyncio.wait_for(task, 5)
    assert _count(events) == 1


def test_corrupt_saved_state_fails_at_construction(
    reverie_env: dict[str, Path], worker: ParseWorker | None
) -> None:
    """The tracker starts afresh when the constructor raises: both modes must raise there."""
    path = reverie_env["agent_home"] / "x.jsonl"
    bad: dict[str, Any] = {str(path): {"path": str(path), "agent": "claude-code", "check": "zz"}}
    with pytest.raises(ValueError):
        SessionWatcher(reverie_env["data"], reverie_env["agent_home"], 20, tail_states=bad,
                       worker=worker)
    good = {str(path): TailState(path=path).model_dump(mode="json")}
    assert SessionWatcher(reverie_env["data"], reverie_env["agent_home"], 20, tail_states=good,
                          worker=worker).states().keys() <= {str(path)}


async def test_editor_task_renamed_over_and_a_new_task_are_watched(
    tmp_path: Path, reverie_env: dict[str, Path], worker: ParseWorker | None
) -> None:
    """Roo Code writes ``ui_messages.json`` as a temporary file renamed over the old one, and a
    new task is a new folder: both reach the watcher through the ``tasks`` folder's watch (not
    a watch of the whole user-data dir), digests only of what changed."""
    import json

    from reverie.transcripts.editor_places import EditorPlaces

    home = reverie_env["agent_home"]
    workspace = tmp_path / "shop"
    workspace.mkdir()
    roo = (FIX / "roo-code/source-types/rooveterinaryinc.roo-cline/tasks/"
           "0b9c1f2e-5d4a-4c3b-9e8f-7a6b5c4d3e2f/ui_messages.json")
    rows = json.loads(roo.read_text())
    tasks = home / ".config/Code/User/globalStorage/rooveterinaryinc.roo-cline/tasks"
    (tasks / "t1").mkdir(parents=True)
    item = {"id": "t1", "workspace": str(workspace)}
    (tasks / "t1" / "history_item.json").write_text(json.dumps(item))

    def safe_write(task: str, items: list[dict[str, Any]]) -> None:
        temp = tasks / task / ".ui_messages.json.new.tmp"
        temp.write_text(json.dumps(items))
        os.replace(temp, tasks / task / "ui_messages.json")

    safe_write("t1", rows[:4])
    places = EditorPlaces.detect(home)
    watcher = SessionWatcher(workspace, home, 20, worker=worker, editor=places)
    events: list[SessionAppended] = []
    task = asyncio.create_task(_collect(watcher, events))
    try:
        first = str(tasks / "t1" / "ui_messages.json")
        await _until(lambda: first in watcher.states(), timeout=30)  # being primed
        await asyncio.sleep(0.5)  # the start-up scan is over: what follows is a change
        assert tasks in watcher.agent_roots()
        assert all(not str(r).endswith("/User") for r in watcher.agent_roots())
        safe_write("t1", rows[:9])
        await _until(lambda: _count(events) >= 1)
        (tasks / "t2").mkdir()
        (tasks / "t2" / "history_item.json").write_text(json.dumps({**item, "id": "t2"}))
        safe_write("t2", rows[:3])
        await _until(lambda: any(e.ref.session_id == "t2" for e in events))
    finally:
        watcher.stop()
        await asyncio.wait_for(task, 10)
    t1 = [d.id for e in events if e.ref.session_id == "t1" for d in e.digests]
    assert len(t1) == len(set(t1))  # nothing reported twice
    assert {e.ref.agent for e in events} == {"roo-code"}
    from reverie.transcripts.reader import load_transcript

    def ids(items: list[dict[str, Any]]) -> set[str]:
        scratch = tmp_path / "rooveterinaryinc.roo-cline" / "tasks" / "x" / "ui_messages.json"
        scratch.parent.mkdir(parents=True, exist_ok=True)
        scratch.write_text(json.dumps(items))
        return {m.id for m in load_transcript(scratch).messages}

    assert set(t1) == ids(rows[:9]) - ids(rows[:4])  # the primed messages are not reported
