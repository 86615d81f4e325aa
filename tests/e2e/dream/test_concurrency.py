"""Two processes dream on the same project at once (two editor windows): exactly one
consolidates, the other reports ``lock_busy``; the memory ends as one clean run."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from reverie.memory.history import MemoryHistory
from reverie.memory.lock import ConsolidationLock
from reverie.memory.store import check_index

pytestmark = pytest.mark.e2e


def _start(workspace: Path, env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "reverie", "dream", "--manual", "--json",
         "--workspace", str(workspace)],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )


def test_two_processes_exactly_one_consolidates(project: dict[str, Path], tmp_path: Path,
                                                kit: SimpleNamespace) -> None:
    memory_dir = kit.fresh_copy(project["template"], tmp_path / "memory")
    # a slow apply keeps the winner inside the lock while the other one starts up
    env = kit.cli_env(memory_dir, REVERIE_TEST_SLOW_APPLY_SECONDS="0.4")
    procs = [_start(project["workspace"], env) for _ in range(2)]
    results = []
    for proc in procs:
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == 0, err
        results.append(json.loads(out))
    ran = [r for r in results if r["ran"]]
    busy = [r for r in results if r["skipped_reason"] == "lock_busy"]
    assert len(ran) == 1 and len(busy) == 1, results
    assert busy[0]["files_touched"] == [] and busy[0]["run_id"] is None
    runs = MemoryHistory(memory_dir).runs()
    assert [r.run_id for r in runs] == [ran[0]["run_id"]]
    assert not [p for p in check_index(memory_dir) if p.severity == "error"]
    pid, mtime = ConsolidationLock(memory_dir).read()
    assert pid is None and mtime is not None  # released by the winner, time kept
