"""Putting real fixture transcripts into a temporary agent home, as the agent would write them."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from reverie.config import claude_project_slug

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "transcripts" / "claude-code"
SPOTTER = (
    FIXTURES
    / "spotter-v2.1.39-subagents"
    / "-home-USER-projects-spotter-worktrees-spotter-dov"
    / "4d5611e5-241a-462a-8d15-5122611a9569.jsonl"
)
SPOTTER_ID = "4d5611e5-241a-462a-8d15-5122611a9569"
TOOL_HEAVY = FIXTURES / "spotter-v2.1.38-tool-heavy" / "tool_heavy.jsonl"
TOOL_HEAVY_ID = "d6e0bada-1959-4eec-a9d2-0bfade768d8f"


def rewrite_cwd(line: str, workspace: Path) -> str:
    """The record with its ``cwd`` pointing at the test workspace (other lines untouched)."""
    try:
        record = json.loads(line)
    except json.JSONDecodeError:
        return line
    if isinstance(record, dict) and "cwd" in record:
        record["cwd"] = str(workspace)
        return json.dumps(record, ensure_ascii=False)
    return line


def claude_session_path(agent_home: Path, workspace: Path, name: str) -> Path:
    """``<agent home>/.claude/projects/<slug>/<name>``: Claude Code's layout."""
    return agent_home / ".claude" / "projects" / claude_project_slug(str(workspace)) / name


def place(fixture: Path, agent_home: Path, workspace: Path) -> Path:
    """Copy a whole transcript (cwd rewritten) into the agent home at once."""
    target = claude_session_path(agent_home, workspace, fixture.name)
    target.parent.mkdir(parents=True, exist_ok=True)
    lines = fixture.read_text(encoding="utf-8").splitlines()
    target.write_text(
        "".join(rewrite_cwd(line, workspace) + "\n" for line in lines), encoding="utf-8"
    )
    return target


async def append_lines(
    fixture: Path,
    agent_home: Path,
    workspace: Path,
    *,
    pause: float = 0.002,
    limit: int | None = None,
) -> Path:
    """Append a transcript line by line, as a running agent does (flush after each line)."""
    target = claude_session_path(agent_home, workspace, fixture.name)
    target.parent.mkdir(parents=True, exist_ok=True)
    lines = fixture.read_text(encoding="utf-8").splitlines()[:limit]
    with target.open("a", encoding="utf-8") as out:
        for line in lines:
            out.write(rewrite_cwd(line, workspace) + "\n")
            out.flush()
            await asyncio.sleep(pause)
    return target
