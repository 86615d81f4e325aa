"""The offline dream's engine in a real worker process, as the language server runs it: the same
result as in a thread; a cancelled dream stops the worker and leaves memory as it was."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from bench import scale
from reverie.config import ProjectPaths, Settings, claude_project_slug
from reverie.dream.runner import DreamRequest, DreamRunner
from reverie.events import EventRecorder
from reverie.memory.lock import ConsolidationLock
from reverie.memory.store import visible_files
from reverie.transcripts.worker import ParseWorker


def _history(agent_home: Path, workspace: Path, sessions: int, size: int) -> None:
    folder = agent_home / ".claude" / "projects" / claude_project_slug(str(workspace))
    for n in range(sessions):
        scale.write_session(folder / f"{n:08d}-0000-4000-8000-000000000000.jsonl", size, "mix",
                            70 + n, str(workspace))


def _files(memory: Path) -> dict[str, bytes]:
    if not memory.is_dir():
        return {}
    return {str(p.relative_to(memory)): p.read_bytes() for p in sorted(memory.rglob("*"))
            if p.is_file() and p.name not in (".consolidate-lock", "lock.guard")}


def _visible(memory: Path) -> dict[str, str]:
    """The memory files a person reads (history and lock internals left out)."""
    return {name: (memory / name).read_text() for name in visible_files(memory)}


async def test_engine_in_a_worker_process_writes_what_the_thread_writes(
    workspace: Path, reverie_env: dict[str, Path]
) -> None:
    worker = ParseWorker()
    try:
        in_worker = await DreamRunner(Settings(), run=worker.call).run(
            DreamRequest(workspace=workspace, manual=True))
        assert worker.pid is not None  # it ran there
    finally:
        worker.close()
    assert in_worker.error is None and in_worker.ran and in_worker.files_touched
    written = _files(Path(in_worker.memory_dir))
    # the same dream again, in a thread, from the same starting point
    memory = Path(in_worker.memory_dir)
    other = reverie_env["data"].parent / "data-thread"
    settings = Settings(data_dir=other)
    in_thread = await DreamRunner(settings).run(DreamRequest(workspace=workspace, manual=True))
    assert in_thread.error is None
    assert memory != Path(in_thread.memory_dir)
    assert _visible(Path(in_thread.memory_dir)) == _visible(memory)
    assert written


@pytest.mark.slow
async def test_cancelled_dream_stops_its_worker_and_leaves_memory_as_it_was(
    tmp_path: Path, reverie_env: dict[str, Path]
) -> None:
    workspace = tmp_path / "big"
    workspace.mkdir()
    _history(reverie_env["agent_home"], workspace, 16, 1 << 20)
    memory = ProjectPaths(Settings(), workspace).memory_dir
    memory.mkdir(parents=True)
    (memory / "MEMORY.md").write_text("# Memory\n\n- [Kept](kept.md) — a hand-written topic\n")
    (memory / "kept.md").write_text("---\nname: Kept\ndescription: kept\n---\n\n- kept\n")
    before = _files(memory)
    worker = ParseWorker()
    aborted: list[int | None] = []

    async def abort() -> None:
        aborted.append(worker.pid)
        await asyncio.to_thread(worker.close)

    events = EventRecorder()
    runner = DreamRunner(Settings(), events, run=worker.call, abort=abort)
    task = asyncio.create_task(runner.run(DreamRequest(workspace=workspace, manual=True)))
    try:
        while worker.pid is None:  # the engine's call has started in the worker
            assert not task.done(), task.result()
            await asyncio.sleep(0.01)
        await asyncio.sleep(0.2)
        assert not task.done()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await asyncio.wait_for(task, timeout=30)
    finally:
        worker.close()
    assert aborted and aborted[0] is not None and worker.pid is None
    assert _files(memory) == before
    assert ConsolidationLock(memory).read()[0] is None  # not held
    assert any(e.type == "cancelled" for e in events.events)
