"""A project with real sample sessions and a memory dir that already holds something."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from reverie.memory.store import visible_files
from reverie.samples import install_samples

SERVER = Path(__file__).resolve().parents[3] / "server"

BEFORE_INDEX = (
    "# Memory\n\n- [Workflow and commands](workflow-and-commands.md) - how we run things\n"
)
BEFORE_TOPIC = """---
name: Workflow and commands
description: how we run things
type: project
updated: '2026-01-01'
sources:
- hand-written
---

# Workflow and commands

- `make lint` _(session hand-wri, 2026-01-01)_
"""
PRIOR_MTIME = time.time() - 48 * 3600


def snapshot(memory_dir: Path) -> dict[str, bytes]:
    return {name: (memory_dir / name).read_bytes() for name in visible_files(memory_dir)}


def seed_memory(memory_dir: Path) -> None:
    memory_dir.mkdir(parents=True, mode=0o700)
    (memory_dir / "MEMORY.md").write_text(BEFORE_INDEX)
    (memory_dir / "workflow-and-commands.md").write_text(BEFORE_TOPIC)
    lock = memory_dir / ".consolidate-lock"
    lock.write_text("")
    os.utime(lock, (PRIOR_MTIME, PRIOR_MTIME))


@pytest.fixture
def project(reverie_env: dict[str, Path], tmp_path: Path) -> dict[str, Path]:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    install_samples(reverie_env["agent_home"], workspace)
    template = tmp_path / "memory-before"
    seed_memory(template)
    return {"workspace": workspace, "template": template, **reverie_env}


def fresh_copy(template: Path, target: Path) -> Path:
    shutil.copytree(template, target)
    lock = target / ".consolidate-lock"
    os.utime(lock, (PRIOR_MTIME, PRIOR_MTIME))
    return target


def cli_env(memory_dir: Path, **extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env["REVERIE_MEMORY_DIR"] = str(memory_dir)
    env["PYTHONPATH"] = str(SERVER) + os.pathsep + env.get("PYTHONPATH", "")
    env.update(extra)
    return env


@pytest.fixture
def kit() -> SimpleNamespace:
    """The helpers above, for test modules (importlib mode cannot import conftest)."""
    return SimpleNamespace(snapshot=snapshot, fresh_copy=fresh_copy, cli_env=cli_env,
                           prior_mtime=PRIOR_MTIME)
