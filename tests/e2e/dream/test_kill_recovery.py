"""SIGKILL a dreaming process at random moments: the memory dir is always exactly before or
exactly after (once the next start has recovered), never a mix, never a partial file, and the
lock is consistent with which one it is."""

from __future__ import annotations

import asyncio
import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from reverie.config import Settings
from reverie.dream.runner import DreamRequest, DreamRunner
from reverie.memory.history import MemoryHistory
from reverie.memory.lock import ConsolidationLock
from reverie.memory.write import MemoryWriter

pytestmark = pytest.mark.e2e

SLOW_APPLY = "0.004"  # seconds per file op: widens the apply window a little


def _dream_in_child(workspace: Path, memory_dir: Path) -> int:
    """Fork a real process that runs a manual offline dream; returns its pid."""
    pid = os.fork()
    if pid == 0:  # child
        code = 1
        try:
            os.environ["REVERIE_MEMORY_DIR"] = str(memory_dir)
            runner = DreamRunner(Settings())
            result = asyncio.run(runner.run(DreamRequest(workspace=workspace, manual=True)))
            code = 0 if result.ran and not result.error else 3
        finally:
            os._exit(code)
    return pid


def _wait(pid: int, timeout: float = 30.0) -> int:
    """waitpid with a bound: a child that hangs is killed and the test fails loudly."""
    limit = time.monotonic() + timeout
    while time.monotonic() < limit:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        time.sleep(0.005)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    raise AssertionError(f"dream child {pid} did not finish in {timeout} s")


def _check_consistent(kit: SimpleNamespace, memory_dir: Path, before: dict[str, bytes],
                      after: dict[str, bytes], started: float) -> str:
    MemoryWriter().recover(memory_dir)
    state = kit.snapshot(memory_dir)
    leftovers = [p.name for p in memory_dir.iterdir() if p.name.endswith(".tmp")]
    assert not leftovers, f"temp files left: {leftovers}"
    assert not (memory_dir / ".reverie" / "journal.json").exists()
    assert not any((memory_dir / ".reverie" / "staging").glob("*"))
    lock = ConsolidationLock(memory_dir)
    _pid, mtime = lock.read()
    assert not lock.prior_path.exists()
    if state == before:
        assert mtime is not None and abs(mtime - kit.prior_mtime) < 1.0, "lock time not restored"
        runs = MemoryHistory(memory_dir).runs()
        assert all(r.source != "manual" for r in runs)
        return "before"
    assert state == after, "memory dir is a mix of before and after"
    assert mtime is not None and mtime >= started - 1
    runs = MemoryHistory(memory_dir).runs()
    assert runs and runs[0].source == "manual"
    return "after"


def test_sigkill_at_random_moments_leaves_before_or_after(
    project: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    kit: SimpleNamespace,
) -> None:
    monkeypatch.setenv("REVERIE_TEST_SLOW_APPLY_SECONDS", SLOW_APPLY)
    workspace, template = project["workspace"], project["template"]
    before = kit.snapshot(template)
    # the "after" state: one uninterrupted run from the same starting point
    reference = kit.fresh_copy(template, tmp_path / "reference")
    t0 = time.monotonic()
    pid = _dream_in_child(workspace, reference)
    assert _wait(pid) == 0
    full_run = time.monotonic() - t0
    after = kit.snapshot(reference)
    assert after != before and set(before) <= set(after)
    assert b"make lint" in after["workflow-and-commands.md"]  # old facts kept, new ones merged

    rng = random.Random(20261129)
    outcomes: dict[str, int] = {"before": 0, "after": 0}
    iterations = 60
    deadline = time.monotonic() + 45
    for i in range(iterations):
        memory_dir = kit.fresh_copy(template, tmp_path / f"run-{i}")
        started = time.time()
        pid = _dream_in_child(workspace, memory_dir)
        time.sleep(rng.uniform(0, full_run * 1.1))
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        outcomes[_check_consistent(kit, memory_dir, before, after, started)] += 1
        assert time.monotonic() < deadline, f"too slow after {i + 1} iterations"
    assert sum(outcomes.values()) == iterations
    assert outcomes["before"] > 0  # the kills really interrupted runs


def test_sigkill_inside_the_apply_is_completed_on_next_start(
    project: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    kit: SimpleNamespace,
) -> None:
    """Kill right after the commit point (journal written, files half applied): the next start
    finishes the apply, keeps the fresh lock time and publishes the history run."""
    monkeypatch.setenv("REVERIE_TEST_SLOW_APPLY_SECONDS", "0.03")
    workspace, template = project["workspace"], project["template"]
    reference = kit.fresh_copy(template, tmp_path / "reference")
    pid = _dream_in_child(workspace, reference)
    assert _wait(pid) == 0
    after = kit.snapshot(reference)
    completed = 0
    for i in range(5):
        memory_dir = kit.fresh_copy(template, tmp_path / f"apply-{i}")
        started = time.time()
        journal = memory_dir / ".reverie" / "journal.json"
        pid = _dream_in_child(workspace, memory_dir)
        limit = time.monotonic() + 20
        while not journal.exists() and time.monotonic() < limit:
            time.sleep(0.001)
        time.sleep(0.03 * i)  # 0..4 file ops into the apply
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        completed += journal.exists()
        assert _check_consistent(kit, memory_dir, kit.snapshot(template), after,
                                 started) == "after"
    assert completed >= 3  # most kills really landed inside the apply


def test_sigkill_of_the_real_cli_then_next_start_recovers(
    project: dict[str, Path], tmp_path: Path, kit: SimpleNamespace,
) -> None:
    """The same through ``python -m reverie dream`` (real interpreter start-up) a few times.
    ``reverie lock`` right after the kill only reports (the holder is dead, nothing changes);
    the recovery the next start runs then leaves exactly before or after."""
    workspace, template = project["workspace"], project["template"]
    before = kit.snapshot(template)
    reference = kit.fresh_copy(template, tmp_path / "reference")
    done = subprocess.run(
        [sys.executable, "-m", "reverie", "dream", "--manual", "--json",
         "--workspace", str(workspace)],
        env=kit.cli_env(reference), capture_output=True, text=True, timeout=60, check=True,
    )
    assert json.loads(done.stdout)["ran"] is True
    after = kit.snapshot(reference)
    rng = random.Random(7)
    for i in range(4):
        memory_dir = kit.fresh_copy(template, tmp_path / f"cli-{i}")
        started = time.time()
        proc = subprocess.Popen(
            [sys.executable, "-m", "reverie", "dream", "--manual", "--json",
             "--workspace", str(workspace)],
            env=kit.cli_env(memory_dir, REVERIE_TEST_SLOW_APPLY_SECONDS="0.05"),
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        # wait until the run holds the lock, then kill somewhere inside it
        limit = time.monotonic() + 20
        while time.monotonic() < limit and proc.poll() is None:
            pid, _ = ConsolidationLock(memory_dir).read()
            if pid == proc.pid:
                break
            time.sleep(0.005)
        time.sleep(rng.uniform(0, 0.25))
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
        killed = kit.snapshot(memory_dir)
        killed_lock = ConsolidationLock(memory_dir).read()
        status = subprocess.run(
            [sys.executable, "-m", "reverie", "lock", "--json", "--workspace", str(workspace)],
            env=kit.cli_env(memory_dir), capture_output=True, text=True, timeout=60, check=True,
        )
        assert json.loads(status.stdout)["holder_alive"] is False
        # `reverie lock` reads only: the killed run's state is as it was
        assert kit.snapshot(memory_dir) == killed
        assert ConsolidationLock(memory_dir).read() == killed_lock
        MemoryWriter().recover(memory_dir)
        status = subprocess.run(
            [sys.executable, "-m", "reverie", "lock", "--json", "--workspace", str(workspace)],
            env=kit.cli_env(memory_dir), capture_output=True, text=True, timeout=60, check=True,
        )
        lock = json.loads(status.stdout)
        assert lock["holder_alive"] is False
        state = kit.snapshot(memory_dir)
        assert state in (before, after)
        if state == before:
            assert abs(ConsolidationLock(memory_dir).read()[1] - kit.prior_mtime) < 1.0
            assert lock["hours_since"] > 47
        else:
            assert (ConsolidationLock(memory_dir).read()[1] or 0) >= started - 1
