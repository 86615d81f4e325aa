"""Undo warns before it discards hand edits made after the run (issue 27: it discarded them
without a word) and says how to get them back; asked again, it goes ahead and the edits stay
in the history, so undoing the undo brings them back."""

from __future__ import annotations

from pathlib import Path

import pytest

from reverie.memory.history import MemoryHistory
from reverie.memory.write import MemoryWriter
from reverie.services.memory import HandEditsAtRisk, undo

TOPIC = "---\nname: {n}\ndescription: about {n}\ntype: project\n---\n\n{body}\n"
INDEX = "# Memory\n\n- [Build](build.md) - about build\n"


async def _dream(memory: Path, body: str) -> None:
    async with MemoryWriter().open(memory, source="manual", sessions=["s-1"]) as staged:
        (staged.path / "build.md").write_text(TOPIC.format(n="Build", body=body))


@pytest.fixture
async def memory(tmp_path: Path) -> Path:
    directory = tmp_path / "memory"
    directory.mkdir()
    (directory / "MEMORY.md").write_text(INDEX)
    (directory / "build.md").write_text(TOPIC.format(n="Build", body="Run make."))
    await _dream(directory, "Run make; then make test.")
    return directory


@pytest.mark.parametrize("recorded", [False, True])
async def test_an_undo_that_would_discard_hand_edits_is_refused_with_the_way_back(
    recorded: bool, memory: Path
) -> None:
    topic = memory / "build.md"
    topic.write_text(topic.read_text() + "My own note: use -j4.\n")
    if recorded:  # a later run recorded the hand edit as an ``edit`` run first
        MemoryHistory(memory).baseline(memory)
    with pytest.raises(HandEditsAtRisk) as refused:
        await undo(MemoryWriter(), memory)
    assert refused.value.files == ["build.md"]
    assert "--discard-edits" in str(refused.value) and "history" in str(refused.value)
    assert "My own note" in topic.read_text()  # nothing changed

    done = await undo(MemoryWriter(), memory, discard_edits=True)
    assert done.touched == ["build.md"] and "My own note" not in topic.read_text()
    await undo(MemoryWriter(), memory, redo=True)  # the way back the message names
    assert "My own note" in topic.read_text()


async def test_a_file_added_by_hand_since_counts_too(memory: Path) -> None:
    """The state before the run has no such file: the undo would delete it."""
    (memory / "other.md").write_text(TOPIC.format(n="Other", body="mine"))
    with pytest.raises(HandEditsAtRisk) as refused:
        await undo(MemoryWriter(), memory)
    assert refused.value.files == ["other.md"]


async def test_an_undo_without_later_hand_edits_goes_ahead(memory: Path) -> None:
    done = await undo(MemoryWriter(), memory)
    assert done.touched == ["build.md"]
    assert "then make test" not in (memory / "build.md").read_text()
