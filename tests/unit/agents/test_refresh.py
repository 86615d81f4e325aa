"""Managed copies of MEMORY.md follow every applied memory change: a real dream, then undo."""

from __future__ import annotations

from pathlib import Path

import pytest

from reverie.agents.connection import connect, disconnect
from reverie.config import ProjectPaths, Settings
from reverie.dream.runner import DreamRequest, DreamRunner
from reverie.events import EventRecorder
from reverie.memory.undo import undo_run
from reverie.samples import install_samples
from reverie.services.wiring import memory_writer


@pytest.fixture
def workspace(reverie_env: dict[str, Path], tmp_path: Path) -> Path:
    ws = tmp_path / "workspace"
    ws.mkdir()
    install_samples(reverie_env["agent_home"], ws)
    return ws


def block_of(text: str, agent: str) -> str:
    start = text.index(f"<!-- reverie:begin {agent}")
    return text[start: text.index(f"<!-- reverie:end {agent}")]


async def test_copies_follow_a_dream_and_its_undo_imports_are_left_alone(
    workspace: Path, reverie_env: dict[str, Path]
) -> None:
    settings = Settings()
    home = reverie_env["agent_home"]
    agents_md = workspace / "AGENTS.md"
    agents_md.write_text("# Team rules\n\nRun make test.\n")
    connect("codex", workspace, "project", settings)
    connect("gemini", workspace, "personal", settings)
    connect("claude-code", workspace, "personal", settings)
    gemini_md = home / ".gemini" / "GEMINI.md"
    claude_local = (workspace / "CLAUDE.local.md").read_bytes()
    assert "(no memory consolidated yet)" in agents_md.read_text()

    result = await DreamRunner(settings, EventRecorder(), writer=memory_writer()).run(
        DreamRequest(workspace=workspace, manual=True))
    assert result.error is None and result.files_touched
    memory = ProjectPaths(settings, workspace).memory_dir
    index = (memory / "MEMORY.md").read_text().strip()
    first_entry = next(line for line in index.splitlines() if line.startswith("- ["))
    name = first_entry.split("](", 1)[1].split(")", 1)[0]

    codex_block = block_of(agents_md.read_text(), "codex")
    assert "(no memory consolidated yet)" not in codex_block
    assert f"]({memory / name})" in codex_block  # links point at the real topic files
    assert agents_md.read_text().startswith("# Team rules\n\nRun make test.\n\n")
    gemini_block = block_of(gemini_md.read_text(), "gemini")
    assert f"]({memory / name})" in gemini_block
    assert f"Applies only when working in `{workspace}`" in gemini_block
    assert (workspace / "CLAUDE.local.md").read_bytes() == claude_local  # an import: no copy

    await undo_run(memory_writer(), memory, result.run_id)
    assert "(no memory consolidated yet)" in block_of(agents_md.read_text(), "codex")
    assert "(no memory consolidated yet)" in block_of(gemini_md.read_text(), "gemini")

    disconnect("codex", workspace, settings)
    assert agents_md.read_text() == "# Team rules\n\nRun make test.\n"


async def test_a_block_the_user_deleted_is_not_brought_back(
    workspace: Path, reverie_env: dict[str, Path]
) -> None:
    settings = Settings()
    connect("gemini", workspace, "project", settings)
    (workspace / "GEMINI.md").write_text("my own text only\n")
    result = await DreamRunner(settings, EventRecorder(), writer=memory_writer()).run(
        DreamRequest(workspace=workspace, manual=True))
    assert result.error is None and result.files_touched
    assert (workspace / "GEMINI.md").read_text() == "my own text only\n"


async def test_claude_code_project_scope_holds_a_refreshed_copy(
    workspace: Path, reverie_env: dict[str, Path]
) -> None:
    settings = Settings()
    result = connect("claude-code", workspace, "project", settings)
    assert result.mode == "copy" and any("CLAUDE.md gets a copy" in n for n in result.notes)
    claude_md = workspace / "CLAUDE.md"
    assert "\n@/" not in claude_md.read_text()  # no import of a path on this machine
    dream = await DreamRunner(settings, EventRecorder(), writer=memory_writer()).run(
        DreamRequest(workspace=workspace, manual=True))
    assert dream.error is None
    memory = ProjectPaths(settings, workspace).memory_dir
    block = block_of(claude_md.read_text(), "claude-code")
    assert f"({memory}/" in block and "(no memory consolidated yet)" not in block
