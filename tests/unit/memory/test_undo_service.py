"""Undo has one meaning for every front end (``reverie.services.memory.undo``): without a run id
the latest dream or sleep run still in effect, ``redo`` the latest undo still in effect. The CLI
used to undo "the latest run" (so a second ``reverie undo`` redid the first); these fail on that."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from reverie.cli import main
from reverie.config import ProjectPaths, Settings
from reverie.errors import UserError
from reverie.memory.history import MemoryHistory
from reverie.memory.lock import ConsolidationLock
from reverie.memory.write import MemoryWriter
from reverie.services.memory import UndoRefused, undo


async def _dream(memory_dir: Path, name: str, text: str) -> str:
    write = MemoryWriter().open(memory_dir, source="manual", repair=False)
    async with write as staged:
        (staged.path / name).write_text(text)
    assert write.result is not None and write.result.record is not None
    return write.result.record.run_id


def _undo_cli(capsys: pytest.CaptureFixture[str], workspace: Path, *extra: str) -> dict:
    assert main(["undo", "--workspace", str(workspace), "--json", *extra]) == 0
    out: dict = json.loads(capsys.readouterr().out)
    return out


@pytest.fixture
def memory(tmp_path: Path) -> tuple[Path, Path]:
    workspace = tmp_path / "project"
    workspace.mkdir()
    return workspace, ProjectPaths(Settings(), workspace).memory_dir


def test_undo_twice_goes_two_dreams_back_and_redo_brings_one_again(
        memory: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    workspace, memory_dir = memory
    first = asyncio.run(_dream(memory_dir, "a.md", "first\n"))
    second = asyncio.run(_dream(memory_dir, "b.md", "second\n"))

    assert _undo_cli(capsys, workspace)["run"]["undoes"] == second
    assert _undo_cli(capsys, workspace)["run"]["undoes"] == first  # not a redo of the undo
    assert not (memory_dir / "a.md").exists() and not (memory_dir / "b.md").exists()

    redone = _undo_cli(capsys, workspace, "--redo")
    assert (memory_dir / "a.md").read_text() == "first\n"  # the last undo is cancelled
    assert not (memory_dir / "b.md").exists()
    sources = [r.source for r in MemoryHistory(memory_dir).runs()]
    assert sources == ["undo", "undo", "undo", "manual", "manual"]
    assert redone["changed"] is True


async def test_the_editor_and_the_cli_get_the_same_outcome(memory: tuple[Path, Path]) -> None:
    _workspace, memory_dir = memory
    run = await _dream(memory_dir, "a.md", "fact\n")
    outcome = await undo(MemoryWriter(), memory_dir)
    assert outcome.target.run_id == run and outcome.touched == ["a.md"]
    assert outcome.message == f"Undid the manual run {run}: 1 file restored (a.md)."
    redo = await undo(MemoryWriter(), memory_dir, redo=True)
    assert redo.is_redo and redo.message.startswith(f"Redid the run {run}:")


async def test_refusals_are_user_errors_and_change_nothing(memory: tuple[Path, Path]) -> None:
    _workspace, memory_dir = memory
    with pytest.raises(UserError, match="nothing to undo"):
        await undo(MemoryWriter(), memory_dir)
    await _dream(memory_dir, "a.md", "fact\n")
    with pytest.raises(UndoRefused, match="either"):
        await undo(MemoryWriter(), memory_dir, "x", redo=True)
    holder = ConsolidationLock(memory_dir)
    assert holder.try_acquire(lambda: False)
    try:
        with pytest.raises(UndoRefused, match="lock_busy"):
            await undo(MemoryWriter(), memory_dir)
    finally:
        holder.rollback()
    assert (memory_dir / "a.md").read_text() == "fact\n"
