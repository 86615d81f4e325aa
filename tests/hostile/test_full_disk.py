"""``reverie sleep`` on a full disk (a real, tiny tmpfs): a clear error, no traceback, and the
memory, its history and the sleep state as they were (issue 17.10)."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from reverie.config import claude_project_slug
from support.paths import TRANSCRIPTS

CLAUDE = (TRANSCRIPTS / "claude-code/spotter-v2.1.39-subagents/"
          "-home-USER-projects-spotter-worktrees-spotter-dov/"
          "4d5611e5-241a-462a-8d15-5122611a9569.jsonl")
CLAUDE_CWD = "/home/USER/projects/spotter-worktrees/spotter-dov"


@pytest.fixture
def tiny_fs(tmp_path: Path) -> Iterator[Path]:
    mount = tmp_path / "tiny"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=512k", "tmpfs", str(mount)],
                          capture_output=True, text=True, check=False)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({done.stderr.strip() or 'not permitted'})")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def _digest(root: Path) -> dict[str, str]:
    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file() and not p.name.endswith(".tmp")}


def _fill(mount: Path, leave: int) -> None:
    """Fill the filesystem until only about ``leave`` bytes are free."""
    filler = mount / "filler"
    with filler.open("ab") as handle:
        while True:
            free = os.statvfs(mount).f_bavail * os.statvfs(mount).f_frsize
            if free <= leave:
                return
            try:
                handle.write(b"\0" * min(4096, free - leave))
                handle.flush()
            except OSError:
                return


def test_sleep_on_a_full_disk(tmp_path: Path, tiny_fs: Path) -> None:
    workspace = (tmp_path / "project").resolve()
    workspace.mkdir()
    home = tmp_path / "home"
    target = home / ".claude" / "projects" / claude_project_slug(str(workspace)) / CLAUDE.name
    target.parent.mkdir(parents=True)
    target.write_text(CLAUDE.read_text("utf-8").replace(CLAUDE_CWD, str(workspace)))
    when = time.time() - 3600
    os.utime(target, (when, when))
    env = {**os.environ, "REVERIE_DATA_DIR": str(tiny_fs / "data"),
           "REVERIE_AGENT_HOME": str(home), "REVERIE_CONFIG_DIR": str(tmp_path / "config")}
    env.pop("REVERIE_MEMORY_DIR", None)

    def sleep() -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "reverie", "sleep", "--workspace",
                               str(workspace), "--json"], capture_output=True, text=True,
                              timeout=120, env=env, check=False)

    outcomes = []
    # free space from "nothing" up to "almost enough": ENOSPC lands in a different write each
    for leave in (0, 8192, 32768):
        (tiny_fs / "filler").unlink(missing_ok=True)
        data = tiny_fs / "data"
        before = _digest(data) if data.exists() else {}
        _fill(tiny_fs, leave)
        done = sleep()
        outcomes.append((leave, done.returncode))
        assert "Traceback" not in done.stderr, (leave, done.stderr[-3000:])
        if done.returncode != 0:
            assert "no space left" in done.stderr.lower(), (leave, done.stderr[-2000:])
            after = _digest(data) if data.exists() else {}
            # nothing half-written: every file that was there is unchanged or was replaced
            # whole by a run that completed its apply; no file is a truncated copy
            for name, digest in after.items():
                if name in before and digest != before[name]:
                    path = data / name
                    if name.endswith(".json"):
                        json.loads(path.read_text())  # state files parse
    (tiny_fs / "filler").unlink(missing_ok=True)
    final = sleep()
    assert final.returncode == 0, final.stderr[-3000:]
    assert any(code != 0 for _, code in outcomes), outcomes
    print(f"full-disk outcomes (bytes left, exit code): {outcomes}")
