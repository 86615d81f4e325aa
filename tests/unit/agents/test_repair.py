"""Hooks whose interpreter is gone (an extension update moved the bundled server) are written
again with a working one; hooks that still run are left alone."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from reverie.agents.connection import connect, disconnect
from reverie.agents.ledger import load_ledger
from reverie.agents.repair import broken_hook, repair_hooks
from reverie.config import ProjectPaths, Settings


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    workspace = tmp_path / "project"
    (workspace / ".git" / "info").mkdir(parents=True)
    return workspace.resolve()


def _commands(ws: Path) -> list[str]:
    hooks = json.loads((ws / ".claude" / "settings.local.json").read_text())["hooks"]
    return [group["hooks"][0]["command"] for groups in hooks.values() for group in groups]


def test_broken_hook_reads_the_interpreter_and_pythonpath(tmp_path: Path) -> None:
    python = shlex.quote(sys.executable)
    assert not broken_hook(f"{python} -P -m reverie hook pre-compact --data-dir /x")
    assert broken_hook("/no/such/python3 -P -m reverie hook pre-compact")
    here, gone = str(tmp_path), str(tmp_path / "old-version" / "bundled" / "libs")
    assert not broken_hook(f"env PYTHONPATH={here} {python} -P -m reverie hook session-start")
    assert broken_hook(f"env PYTHONPATH={here}{os.pathsep}{gone} {python} -P -m reverie hook "
                       "session-start")
    assert not broken_hook("echo 'unclosed")  # not a command Reverie wrote


def test_hooks_that_run_are_left_alone(ws: Path) -> None:
    settings = Settings()
    connect("claude-code", ws, "personal", settings)
    before = (ws / ".claude" / "settings.local.json").read_bytes()
    assert repair_hooks(ws, settings) == []
    assert (ws / ".claude" / "settings.local.json").read_bytes() == before


def test_hooks_of_a_removed_interpreter_are_rewritten_and_still_disconnect_exactly(
    ws: Path, tmp_path: Path
) -> None:
    settings = Settings()
    local = ws / ".claude" / "settings.local.json"
    local.parent.mkdir()
    original = '{\n  "permissions": {"allow": ["Bash(ls)"]}\n}\n'
    local.write_text(original)
    connect("claude-code", ws, "personal", settings)
    # what an extension update leaves behind: the hooks name the previous version's bundle
    old_bundle = tmp_path / "ext-0.1.0" / "bundled" / "libs" / "py"
    stale = local.read_text().replace(
        json.dumps(_commands(ws)[0])[1:-1].split(" -P ")[0],
        f"env PYTHONPATH={old_bundle} {sys.executable}")
    local.write_text(stale)
    assert any(broken_hook(c) for c in _commands(ws))

    assert repair_hooks(ws, settings) == ["claude-code"]
    assert not any(broken_hook(c) for c in _commands(ws))
    assert all(" -P -m reverie hook " in c for c in _commands(ws))
    for command in _commands(ws):  # the hook runs again
        done = subprocess.run(command, shell=True, cwd=ws, capture_output=True, timeout=120,
                              input=b'{"session_id": "s"}')
        assert done.returncode == 0, done.stderr.decode()[-2000:]
    memory_dir = ProjectPaths(settings, ws).memory_dir
    [connection] = load_ledger(memory_dir).for_workspace(ws)
    assert connection.agent == "claude-code"
    assert repair_hooks(ws, settings) == []  # repaired once, then left alone
    disconnect("claude-code", ws, settings)
    assert local.read_text() == original  # the ledger followed the rewrite
