"""A person's decision on one stale fact (the editor's code actions): retire it now, or keep it
and re-verify; each is a recorded run that undo reverts."""

from __future__ import annotations

import json
import sys
from datetime import date
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "eval"))

from staleness_set import GitWorkspace

from reverie.anchors.memory import check_memory
from reverie.config import ProjectPaths, Settings
from reverie.memory.history import MemoryHistory
from reverie.memory.undo import undo_run
from reverie.memory.write import MemoryWriter
from reverie.services.check import NoSuchFact, decide_fact

TOPIC = """---
name: Code
description: where things are
type: project
---

- **Build:** `pnpm build` (vite build). _(session abcdef12, 2026-11-02)_
- Money helpers live in src/lib/money.ts and `pnpm build` bundles them.
"""


@pytest.fixture
def setup(tmp_path: Path) -> tuple[Settings, GitWorkspace, Path]:
    settings = Settings()
    ws = GitWorkspace(tmp_path / "repo")
    ws.write("package.json", json.dumps({"scripts": {"build": "vite build"}}))
    ws.write("src/lib/money.ts", "export const cents = 1\n")
    ws.commit("init")
    ws.move("src/lib/money.ts", "src/lib/currency.ts")
    ws.commit("rename")
    memory = ProjectPaths(settings, ws.root).memory_dir
    memory.mkdir(parents=True)
    (memory / "code.md").write_text(TOPIC)
    (memory / "MEMORY.md").write_text("# Memory\n\n- [Code](code.md) - where things are\n")
    return settings, ws, memory


def stale(memory: Path, ws: GitWorkspace) -> list[str]:
    return [f.fact.text for f in check_memory(memory, ws.root, date.today()).facts
            if f.status == "stale"]


async def test_retire_now_and_undo(setup: tuple[Settings, GitWorkspace, Path]) -> None:
    settings, ws, memory = setup
    writer = MemoryWriter()
    result = await decide_fact(writer, settings, ws.root, "code.md", 7, "retire")
    assert result.record is not None and result.record.source == "curate"
    text = (memory / "code.md").read_text()
    assert text.index("## Retired") < text.index("Money helpers")
    assert "renamed to `src/lib/currency.ts`" in text
    assert stale(memory, ws) == []
    assert MemoryHistory(memory).runs()[0].summary == "retire a stale fact of code.md"
    await undo_run(writer, memory, result.run_id)
    assert (memory / "code.md").read_text() == TOPIC


async def test_keep_records_only_the_anchors_that_hold(
        setup: tuple[Settings, GitWorkspace, Path]) -> None:
    settings, ws, memory = setup
    assert stale(memory, ws) == [
        "Money helpers live in src/lib/money.ts and `pnpm build` bundles them."]
    await decide_fact(MemoryWriter(), settings, ws.root, "code.md", 7, "keep")
    assert stale(memory, ws) == []
    facts = {f.fact.text: f for f in check_memory(memory, ws.root, date.today()).facts}
    kept = facts["Money helpers live in src/lib/money.ts and `pnpm build` bundles them."]
    assert kept.status == "valid" and [c.anchor.kind for c in kept.checks] == ["script"]
    assert "Money helpers" in (memory / "code.md").read_text().split("---", 2)[2]


async def test_no_fact_on_that_line(setup: tuple[Settings, GitWorkspace, Path]) -> None:
    settings, ws, memory = setup
    with pytest.raises(NoSuchFact):
        await decide_fact(MemoryWriter(), settings, ws.root, "code.md", 0, "retire")
    assert (memory / "code.md").read_text() == TOPIC
