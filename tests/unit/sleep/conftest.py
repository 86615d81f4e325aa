"""Workspaces with real agent transcripts placed where discovery looks for them."""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from reverie.config import claude_project_slug

CODEX_FIXTURE = (
    "codex/codemie-code/sessions/2026/05/11/"
    "rollout-2026-05-11T11-26-55-019e1625-789d-76c0-80ab-3724b5ddb799.jsonl"
)
CODEX_CWD = "/Users/Sample_User/repos/codemie-ai/codemie-code"
CLAUDE_FIXTURE = (
    "claude-code/spotter-v2.1.39-subagents/-home-USER-projects-spotter-worktrees-spotter-dov/"
    "4d5611e5-241a-462a-8d15-5122611a9569.jsonl"
)
CLAUDE_CWD = "/home/USER/projects/spotter-worktrees/spotter-dov"
CLAUDE_ID = "4d5611e5-241a-462a-8d15-5122611a9569"
CODEX_ID = "019e1625-789d-76c0-80ab-3724b5ddb799"


@dataclass
class Workspace:
    root: Path
    agent_home: Path
    codex: Path
    claude: Path


def _place(source: Path, target: Path, old_cwd: str, new_cwd: Path, age_seconds: float) -> Path:
    text = source.read_text("utf-8").replace(
        json.dumps(old_cwd)[1:-1], json.dumps(str(new_cwd))[1:-1]
    )
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text, "utf-8")
    when = time.time() - age_seconds
    os.utime(target, (when, when))
    return target


@pytest.fixture
def workspace(
    tmp_path: Path, transcripts_dir: Path, reverie_env: dict[str, Path]
) -> Workspace:
    """A workspace with one Codex and one Claude Code session, changed 2 h and 1 h ago."""
    root = (tmp_path / "project").resolve()
    root.mkdir()
    home = reverie_env["agent_home"]
    codex = _place(transcripts_dir / CODEX_FIXTURE,
                   home / ".codex" / "sessions" / "2026" / "05" / "11" / Path(CODEX_FIXTURE).name,
                   CODEX_CWD, root, 2 * 3600)
    claude = _place(transcripts_dir / CLAUDE_FIXTURE,
                    home / ".claude" / "projects" / claude_project_slug(str(root))
                    / f"{CLAUDE_ID}.jsonl", CLAUDE_CWD, root, 3600)
    return Workspace(root=root, agent_home=home, codex=codex, claude=claude)

