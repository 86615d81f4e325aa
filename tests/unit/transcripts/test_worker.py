"""ParseWorker: a real spawned process (round trips, errors, SIGKILL, stdout, priority)."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest

from reverie.background import BACKGROUND_NICE
from reverie.transcripts.digest import digests
from reverie.transcripts.reading import SessionReader
from reverie.transcripts.tail import TailState
from reverie.transcripts.worker import ParseWorker, UnknownReader, WorkerDied


@pytest.fixture(scope="module")
def worker() -> Iterator[ParseWorker]:
    """One worker for the module: each spawn costs a few tenths of a second."""
    parse_worker = ParseWorker()
    yield parse_worker
    parse_worker.close()


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


async def test_round_trip_runs_in_another_process(worker: ParseWorker) -> None:
    pid = await worker.call(os.getpid)
    assert pid != os.getpid()
    assert worker.pid == pid
    assert await worker.call(divmod, 17, 5) == (3, 2)


def test_lazy_start() -> None:
    assert ParseWorker().pid is None  # nothing spawned until the first call


async def test_exceptions_propagate(worker: ParseWorker) -> None:
    with pytest.raises(ValueError, match="invalid literal"):
        await worker.call(int, "not a number")
    assert await worker.call(int, "12") == 12  # the process survived


async def test_worker_runs_at_background_priority_with_lean_imports(worker: ParseWorker) -> None:
    if hasattr(os, "nice"):
        assert await worker.call(os.nice, 0) >= BACKGROUND_NICE
    loaded = await worker.call(eval, "sorted(__import__('sys').modules)")
    assert "reverie.transcripts.worker" in loaded
    assert not [m for m in loaded if m.startswith(("pygls", "lsprotocol", "reverie.lsp"))]


async def test_killed_worker_fails_the_call_in_flight_and_the_next_call_restarts(
    worker: ParseWorker,
) -> None:
    old = await worker.call(os.getpid)
    in_flight = asyncio.create_task(worker.call(time.sleep, 30))
    await asyncio.sleep(0.2)
    started = time.monotonic()
    os.kill(old, signal.SIGKILL)
    with pytest.raises(WorkerDied, match="ended during a call"):
        await asyncio.wait_for(in_flight, 10)
    assert time.monotonic() - started < 5
    new = await worker.call(os.getpid)
    assert new != old and worker.pid == new
    # killed while idle: the next call does not fail, it just gets a new process
    os.kill(new, signal.SIGKILL)
    deadline = time.monotonic() + 5
    while not _gone(new) and time.monotonic() < deadline:
        await asyncio.sleep(0.02)
    assert await worker.call(os.getpid) not in (old, new)


async def test_close_is_idempotent_and_ends_the_process() -> None:
    worker = ParseWorker()
    pid = await worker.call(os.getpid)
    busy = asyncio.create_task(worker.call(time.sleep, 30))
    await asyncio.sleep(0.1)
    started = time.monotonic()
    worker.close()
    worker.close()
    assert time.monotonic() - started < 3  # a busy process does not make close() wait
    assert worker.pid is None
    with pytest.raises(WorkerDied):
        await asyncio.wait_for(busy, 10)
    deadline = time.monotonic() + 5
    while not _gone(pid) and time.monotonic() < deadline:
        await asyncio.sleep(0.02)
    assert _gone(pid)
    try:
        assert await worker.call(os.getpid) != pid  # usable again after close
    finally:
        worker.close()


async def test_readers_live_in_the_worker(
    worker: ParseWorker, reverie_env: dict[str, Path]
) -> None:
    home = reverie_env["agent_home"]
    workspace = reverie_env["data"]
    sessions = home / ".reverie" / "sessions"
    sessions.mkdir(parents=True)
    (sessions / "w.json").write_bytes(orjson.dumps({"workspace_dir": str(workspace)}))
    path = sessions / "w.jsonl"
    path.write_bytes(b"".join(orjson.dumps({"role": r, "content": f"{r} says hi"}) + b"\n"
                              for r in ("user", "assistant")))

    await worker.open_reader("t1", workspace, home)
    first = await worker.read_step("t1", None, report=True)
    local = SessionReader(workspace, home)
    expected = local.scan(True)
    assert [e.digests for e in first.events] == [e.digests for e in expected]
    assert [e.digests for e in first.events] == [digests(e.messages) for e in expected]
    assert first.events[0].messages == [] and first.events[0].ref.session_id == "w"
    assert list(first.states) == [str(path)]
    state = TailState.model_validate_json(first.states[str(path)])  # JSON: cheap to unpickle
    assert state.offset == path.stat().st_size and state.session is not None

    with path.open("ab") as handle:
        handle.write(orjson.dumps({"role": "user", "content": "more"}) + b"\n")
    second = await worker.read_step("t1", [str(path)])
    assert [d for e in second.events for d in e.digests] == local.apply([str(path)])[0].digests
    unchanged = await worker.read_step("t1", [str(sessions / "unrelated.jsonl")])
    assert unchanged.events == [] and unchanged.states == {}

    path.unlink()
    gone = await worker.read_step("t1", [str(path)])
    assert gone.events == [] and gone.dropped == [str(path)]

    worker.drop_reader("t1")
    with pytest.raises(UnknownReader):
        await worker.read_step("t1", None)


def test_nothing_printed_in_the_worker_reaches_stdout(tmp_path: Path) -> None:
    """stdout is the LSP channel: prints and raw fd 1 writes in the worker go to stderr."""
    script = textwrap.dedent("""
        import asyncio, os
        from reverie.transcripts.worker import ParseWorker

        async def main():
            worker = ParseWorker()
            try:
                await worker.call(print, "printed in the worker")
                await worker.call(os.write, 1, b"written to fd 1 in the worker\\n")
            finally:
                worker.close()
            print("only this", flush=True)

        asyncio.run(main())
    """)
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, timeout=60,
                         cwd=tmp_path, check=False)
    assert run.returncode == 0, run.stderr.decode()
    assert run.stdout == b"only this\n"
    assert b"printed in the worker" in run.stderr
    assert b"written to fd 1 in the worker" in run.stderr


def test_spawned_child_does_not_rerun_the_cli(tmp_path: Path) -> None:
    """Under ``python -m reverie`` the child must not run ``reverie.__main__`` again.

    Run as ``-m``, a module that uses the worker and counts its own executions in a file.
    """
    package = tmp_path / "probe"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "__main__.py").write_text(textwrap.dedent(f"""
        import asyncio, os
        with open({str(tmp_path / "runs")!r}, "a") as log:
            log.write(f"{{os.getpid()}} {{__name__}}\\n")
        from reverie.transcripts.worker import ParseWorker

        async def main():
            worker = ParseWorker()
            try:
                print(await worker.call(os.getpid) != os.getpid())
            finally:
                worker.close()

        if __name__ == "__main__":
            asyncio.run(main())
    """))
    run = subprocess.run([sys.executable, "-m", "probe"], capture_output=True, timeout=60,
                         cwd=tmp_path, check=False)
    assert run.returncode == 0, run.stderr.decode()
    assert run.stdout == b"True\n"
    runs = (tmp_path / "runs").read_text().splitlines()
    assert len(runs) == 1 and runs[0].endswith(" __main__")


def test_the_worker_ends_when_the_server_is_killed(tmp_path: Path) -> None:
    """A SIGKILLed server cannot stop its pool: the worker notices and ends by itself."""
    script = textwrap.dedent("""
        import asyncio, os, time
        from reverie.transcripts.worker import ParseWorker

        async def main():
            worker = ParseWorker()
            print(await worker.call(os.getpid), flush=True)
            time.sleep(60)

        asyncio.run(main())
    """)
    server = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL, cwd=tmp_path)
    try:
        assert server.stdout is not None
        worker_pid = int(server.stdout.readline())
        assert not _gone(worker_pid) and not _exited(worker_pid)
    finally:
        server.kill()
        server.wait()
    deadline = time.monotonic() + 10
    while not (_gone(worker_pid) or _exited(worker_pid)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _gone(worker_pid) or _exited(worker_pid)


def _exited(pid: int) -> bool:
    """Ended but not reaped (its parent is gone; a container's init may not reap it)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return True
    return fields[0] in ("Z", "X")


async def test_an_idle_worker_stops_and_the_next_call_starts_another() -> None:
    """``idle_seconds``: a worker nobody used for that long gives its memory back."""
    worker = ParseWorker(idle_seconds=0.3)
    try:
        first = await worker.call(os.getpid)
        await asyncio.sleep(0.1)
        assert await worker.call(os.getpid) == first  # used again in time: still the same
        deadline = time.monotonic() + 10
        while not (_gone(first) or _exited(first)) and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        assert _gone(first) or _exited(first)
        assert worker.pid is None
        second = await worker.call(os.getpid)
        assert second != first and not _gone(second)
    finally:
        worker.close()
