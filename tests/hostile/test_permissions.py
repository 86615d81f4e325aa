"""Permission audit under umask 022: every directory Reverie creates is 0700 and every file it
writes has no group or other bits: the memory dir and its parents, nested topic dirs, staging,
``history.git`` (objects, refs, HEAD, config), notes and state (issue 17.14)."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

from support.paths import TRANSCRIPTS

CLAUDE = next(TRANSCRIPTS.glob("claude-code/**/*.jsonl"))


def _audit(root: Path) -> list[str]:
    bad = []
    for dirpath, dirnames, filenames in os.walk(root):
        for name in [*dirnames, *filenames]:
            path = Path(dirpath) / name
            info = path.lstat()
            mode = stat.S_IMODE(info.st_mode)
            if stat.S_ISDIR(info.st_mode) and mode != 0o700:
                bad.append(f"{oct(mode)} {path}")
            elif stat.S_ISREG(info.st_mode) and mode & 0o077:
                bad.append(f"{oct(mode)} {path}")
    return bad


def test_everything_reverie_creates_is_private_under_umask_022(tmp_path: Path) -> None:
    base = tmp_path / "base"
    base.mkdir()
    # a custom memory dir three levels below an existing directory: Reverie creates them all
    memory = base / "custom" / "deep" / "memory"
    data = base / "data"
    env = {**os.environ, "REVERIE_MEMORY_DIR": str(memory), "REVERIE_DATA_DIR": str(data),
           "REVERIE_MEMORY_DIR_PRESET": "custom"}
    script = f"""
import asyncio, os
from pathlib import Path
os.umask(0o022)
from reverie.memory.write import MemoryWriter
memory = Path({str(memory)!r})

async def run(text):
    async with MemoryWriter().open(memory, source="manual", repair=False) as staged:
        (staged.path / "topics" / "nested").mkdir(parents=True, exist_ok=True)
        (staged.path / "topics" / "nested" / "deep.md").write_text(text)
        (staged.path / "MEMORY.md").write_text("# Memory\\n")

asyncio.run(run("one\\n"))
asyncio.run(run("two\\n"))
from reverie.memory.transaction import MemoryTransaction
MemoryTransaction(memory).begin()  # a staging copy left in place, as a killed run leaves it
"""
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                          text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    notes = subprocess.run(
        [sys.executable, "-c", "import os, sys; os.umask(0o022); from reverie.cli import main; "
         "sys.exit(main())", "notes", str(CLAUDE), "--workspace", str(tmp_path)],
        env=env, capture_output=True, text=True, timeout=120, check=False)
    assert notes.returncode == 0, notes.stderr
    assert (memory / ".reverie" / "history.git" / "objects").is_dir()
    assert list((memory / ".reverie" / "staging").iterdir())
    assert (memory / "topics" / "nested" / "deep.md").is_file()
    assert list(data.rglob("*.md")), "the notes run wrote nothing to audit"
    assert _audit(base) == []


def test_a_history_made_before_the_fix_is_tightened(tmp_path: Path) -> None:
    from dulwich.repo import Repo

    from reverie.memory.history import MemoryHistory

    memory = tmp_path / "memory"
    (memory / ".reverie").mkdir(parents=True)
    (memory / "MEMORY.md").write_text("# Memory\n")
    old = os.umask(0o022)
    try:
        Repo.init_bare(str(memory / ".reverie" / "history.git"), mkdir=True).close()
        (memory / ".reverie").chmod(0o755)
        history = MemoryHistory(memory)
        history.baseline(memory)
    finally:
        os.umask(old)
    assert _audit(memory / ".reverie" / "history.git") == []
