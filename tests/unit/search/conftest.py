"""Real transcripts installed where discovery finds them, for a workspace of the test's own."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from reverie.config import ProjectPaths, Settings, claude_project_slug

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "transcripts"
GROWING = FIXTURES / "claude-code" / "codemie-v2.1.7-incremental-subagents"
TOOL_HEAVY = FIXTURES / "claude-code" / "spotter-v2.1.38-tool-heavy" / "tool_heavy.jsonl"
CODEMIE_CWD = "/Users/User/repo/codemie-ai/codemie-code"

Install = Callable[..., Path]


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    path = tmp_path / "project"
    path.mkdir()
    return path.resolve()


@pytest.fixture
def paths(workspace: Path) -> ProjectPaths:
    return ProjectPaths(Settings(), workspace)


def claude_file(agent_home: Path, workspace: Path, session_id: str) -> Path:
    directory = agent_home / ".claude" / "projects" / claude_project_slug(str(workspace))
    directory.mkdir(parents=True, exist_ok=True)
    return directory / f"{session_id}.jsonl"


@pytest.fixture
def install(reverie_env: dict[str, Path], workspace: Path) -> Install:
    """Write a Claude Code transcript for ``workspace`` (its cwd rewritten); returns its path."""

    def _install(text: str, session_id: str, *, old_cwd: str = CODEMIE_CWD,
                 target_workspace: Path | None = None) -> Path:
        ws = target_workspace or workspace
        path = claude_file(reverie_env["agent_home"], ws, session_id)
        path.write_text(text.replace(old_cwd, str(ws)), "utf-8")
        return path

    return _install


@pytest.fixture
def make_session() -> Callable[..., str]:
    return session_lines


def session_lines(session_id: str, cwd: Path, turns: list[tuple[str, str]],
                  start_minute: int = 0) -> str:
    """A small Claude Code transcript: one user request and one assistant reply per turn."""
    import json

    lines = []
    parent = None
    for n, (ask, reply) in enumerate(turns):
        minute = start_minute + n
        user_id = f"u-{session_id[:4]}-{n}"
        assistant_id = f"a-{session_id[:4]}-{n}"
        lines.append(json.dumps({
            "type": "user", "uuid": user_id, "parentUuid": parent, "sessionId": session_id,
            "cwd": str(cwd), "timestamp": f"2026-11-0{1 + n % 8}T10:{minute % 60:02d}:00Z",
            "isSidechain": False, "userType": "external",
            "message": {"role": "user", "content": ask}}))
        lines.append(json.dumps({
            "type": "assistant", "uuid": assistant_id, "parentUuid": user_id,
            "sessionId": session_id, "cwd": str(cwd),
            "timestamp": f"2026-11-0{1 + n % 8}T10:{minute % 60:02d}:30Z", "isSidechain": False,
            "message": {"id": f"msg-{assistant_id}", "role": "assistant", "model": "claude",
                        "content": [{"type": "text", "text": reply}]}}))
        parent = assistant_id
    return "\n".join(lines) + "\n"
