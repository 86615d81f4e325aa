"""Agents get only facts that are valid or unverifiable: the managed copy of the index leaves
out what the code no longer supports (between dreams too), and keeps everything else."""

from __future__ import annotations

import json
import sys
from datetime import date
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "eval"))

from staleness_set import GitWorkspace

from reverie.agents.connection import connect
from reverie.agents.refresh import refresh_copies
from reverie.anchors.delivery import delivered_index
from reverie.config import ProjectPaths, Settings
from reverie.services.check import refresh_agent_copies

TOPIC = """---
name: Scripts
description: build and money
type: project
---

- **Build:** `pnpm build` (vite build). _(session abcdef12, 2026-11-02)_
- Money helpers live in src/lib/money.ts. _(session abcdef12, 2026-11-02)_
- Use sentence case for headings. _(session abcdef12, 2026-11-02)_
"""
INDEX = ("# Memory\n\n- [Scripts](scripts.md) - build: `pnpm build`; Money helpers live in "
         "src/lib/money.ts; Use sentence case for headings\n")


def test_copies_carry_only_live_facts(tmp_path: Path) -> None:
    settings = Settings()
    ws = GitWorkspace(tmp_path / "repo")
    ws.write("package.json", json.dumps({"scripts": {"build": "vite build"}}))
    ws.write("src/lib/money.ts", "export const cents = 1\n")
    ws.commit("init")
    memory = ProjectPaths(settings, ws.root).memory_dir
    memory.mkdir(parents=True)
    (memory / "scripts.md").write_text(TOPIC)
    (memory / "MEMORY.md").write_text(INDEX)
    connect("codex", ws.root, "project", settings)
    agents_md = ws.root / "AGENTS.md"
    assert "Money helpers live in src/lib/money.ts" in agents_md.read_text()
    assert delivered_index(memory, ws.root, date(2026, 12, 1)) == INDEX  # nothing stale yet

    ws.move("src/lib/money.ts", "src/lib/currency.ts")
    ws.commit("rename")
    refresh_copies(memory)  # the plain refresh copies the file as it is
    assert "Money helpers" in agents_md.read_text()
    assert refresh_agent_copies(memory) == [agents_md]
    copy = agents_md.read_text()
    assert "Money helpers" not in copy
    assert "build: `pnpm build`" in copy and "Use sentence case for headings" in copy
    assert (memory / "MEMORY.md").read_text() == INDEX  # delivery never edits the memory


def test_retired_facts_are_never_indexed_for_recall(tmp_path: Path) -> None:
    from reverie.search.documents import memory_documents

    text = (TOPIC + "\n## Retired\n\n- Money helpers live in src/lib/old.ts.\n"
            "  (retired on 2026-12-01: `src/lib/old.ts` no longer exists; deleted in abc1234)\n")
    bodies = [d.body for d in memory_documents(tmp_path, "scripts.md", text)]
    assert any("pnpm build" in b for b in bodies)
    assert not any("old.ts" in b for b in bodies)
