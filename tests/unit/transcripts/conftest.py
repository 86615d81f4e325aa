"""An agent home populated with copies of the real fixtures, laid out where each agent writes."""

from __future__ import annotations

import hashlib
import os
import shutil
from datetime import UTC, datetime
from pathlib import Path

import pytest

FIX = Path(__file__).resolve().parents[2] / "fixtures" / "transcripts"

SPOTTER_WS = "/home/USER/projects/spotter-worktrees/spotter-dov"
SPOTTER_ID = "4d5611e5-241a-462a-8d15-5122611a9569"
CODEX_WS = "/Users/Sample_User/repos/codemie-ai/codemie-code"
PRIVATE_WS = "/tmp/private"


def set_mtime(path: Path, when: datetime) -> None:
    stamp = when.timestamp()
    os.utime(path, (stamp, stamp))


@pytest.fixture
def agent_home(reverie_env: dict[str, Path]) -> Path:
    home = reverie_env["agent_home"]
    projects = home / ".claude" / "projects"
    shutil.copytree(FIX / "claude-code/spotter-v2.1.39-subagents", projects)
    shutil.copytree(FIX / "claude-code/codemie-v2.0.64-sibling-agent-files/-tmp-private",
                    projects / "-tmp-private")
    # a decoy: the slug collides with the spotter one but the records say otherwise
    inline = FIX / "claude-code/claude-code-viewer-v1.0.108-inline-sidechains/sample-project"
    shutil.copytree(inline, projects / "-home-USER-projects-spotter-worktrees-spotter")
    (projects / "-tmp-private" / "memory").mkdir()
    (projects / "-tmp-private" / "memory" / "notes.jsonl").write_text('{"cwd": "/tmp/private"}\n')
    shutil.copytree(FIX / "codex/codemie-code/sessions", home / ".codex" / "sessions")
    return home


@pytest.fixture
def gemini_workspace(agent_home: Path, tmp_path: Path) -> Path:
    workspace = tmp_path / "gemini-project"
    workspace.mkdir()
    digest = hashlib.sha256(str(workspace).encode()).hexdigest()
    chats = agent_home / ".gemini" / "tmp" / digest / "chats"
    shutil.copytree(FIX / "gemini-cli/codemie-code/chats", chats)
    (chats / "session-2026-04-29T21-39-gemini_s.jsonl").write_bytes(
        (FIX / "gemini-cli/agent-sessions-synthetic/session-jsonl-v040.jsonl").read_bytes())
    other = agent_home / ".gemini" / "tmp" / ("0" * 64) / "chats"
    shutil.copytree(FIX / "gemini-cli/codemie-code/chats", other)
    return workspace


def at(year: int, month: int, day: int, hour: int = 12) -> datetime:
    return datetime(year, month, day, hour, tzinfo=UTC)
