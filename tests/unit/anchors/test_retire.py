"""Retiring stale facts: moved (never deleted) with reason and date, out of the index; pinned
and valid facts stay; a dream does it in its own run, so undo brings a fact back."""

from __future__ import annotations

import json
import sys
from datetime import date
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "eval"))

from staleness_set import GitWorkspace

from reverie.anchors.memory import check_memory, recorded_anchors
from reverie.anchors.retire import maintain_memory
from reverie.config import ProjectPaths, Settings
from reverie.curation.facts import FactBook
from reverie.curation.topics import curate, parse_fact, read_doc
from reverie.dream.runner import DreamRequest, DreamRunner
from reverie.memory.store import check_index, read_topic
from reverie.memory.undo import undo_run
from reverie.memory.write import MemoryWriter
from reverie.samples import install_samples

TODAY = date(2026, 12, 1)
TOPIC = """---
name: Scripts and code
description: pnpm build; money helpers
type: project
---

# Scripts and code

- **Build:** `pnpm build` (vite build). _(session abcdef12, 2026-11-02)_
- Money helpers live in src/lib/money.ts.
- The price formatter is in src/lib/format.ts. <!-- pinned -->
- Use sentence case for headings. _(session abcdef12, 2026-01-02)_
- Tests sit by src/lib/money.ts. _(session abcdef12, 2026-11-20)_
"""
INDEX = "# Memory\n\n- [Scripts and code](scripts.md) - `pnpm build`; money in src/lib/money.ts\n"


@pytest.fixture
def ws(tmp_path: Path) -> GitWorkspace:
    ws = GitWorkspace(tmp_path / "repo")
    ws.write("package.json", json.dumps({"scripts": {"build": "vite build"}}))
    ws.write("pnpm-lock.yaml", "x\n")
    ws.write("src/lib/money.ts", "export const cents = 1\n")
    ws.write("src/lib/format.ts", "export const fmt = 1\n")
    ws.commit("init")
    return ws


def memory_at(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "scripts.md").write_text(TOPIC)
    (root / "MEMORY.md").write_text(INDEX)
    return root


def test_stale_facts_move_to_a_retired_section_with_reason_and_date(
        ws: GitWorkspace, tmp_path: Path) -> None:
    memory = memory_at(tmp_path / "memory")
    ws.move("src/lib/money.ts", "src/lib/currency.ts")
    ws.delete("src/lib/format.ts")
    ws.commit("rename money, drop format")
    result = maintain_memory(memory, ws.root, TODAY, aging_days=90)
    text = (memory / "scripts.md").read_text()
    body = text.split("\n---\n", 1)[1]
    live, retired = body.split("## Retired")
    # the person's line moves byte for byte, with the reason and the date under it
    assert "- Money helpers live in src/lib/money.ts.\n  (retired on 2026-12-01: " \
           "`src/lib/money.ts` no longer exists; renamed to `src/lib/currency.ts` in " in retired
    assert "- Tests sit by src/lib/money.ts." in retired and "Money helpers" not in live
    # pinned: never retired, even though its file is gone
    assert "src/lib/format.ts. <!-- pinned -->" in live
    assert "`pnpm build`" in live
    assert "- Use sentence case for headings. _(session abcdef12, 2026-01-02)_\n" \
           "  (aging: not confirmed since 2026-01-02)" in live
    assert {r.text for r in result.retired} == {
        "Money helpers live in src/lib/money.ts.",
        "Tests sit by src/lib/money.ts."}
    index = (memory / "MEMORY.md").read_text()
    assert "money.ts" not in index and "`pnpm build`" in index
    assert check_index(memory) == []
    # the anchors are in the front matter, not in the text the agent reads
    meta = read_topic(memory / "scripts.md").meta
    assert any(a.kind == "script" for rec in recorded_anchors(meta).values() for a in rec.anchors)
    assert "uses:" not in body
    after = check_memory(memory, ws.root, TODAY)
    stale = [(f.fact.text, f.fact.pinned) for f in after.facts if f.status == "stale"]
    assert stale == [("The price formatter is in src/lib/format.ts. <!-- pinned -->", True)]
    # a second pass finds nothing new to do
    assert maintain_memory(memory, ws.root, TODAY, aging_days=90).files == []


def test_curation_never_reads_a_retired_fact_back(ws: GitWorkspace, tmp_path: Path) -> None:
    memory = memory_at(tmp_path / "memory")
    ws.move("src/lib/money.ts", "src/lib/currency.ts")
    ws.commit("rename")
    maintain_memory(memory, ws.root, TODAY)
    topic = read_topic(memory / "scripts.md")
    doc = read_doc("scripts.md", topic.meta, topic.body)
    assert not any("money.ts" in item.fact.text for item in doc.items)
    book = FactBook()
    book.add(parse_fact("**Lint:** `pnpm lint` _(session 99aa88bb, 2026-11-30)_", ""))
    curated = curate({"scripts.md": doc}, book, TODAY)
    if "scripts.md" in curated.topics:
        new_body = curated.topics["scripts.md"][1]
        assert new_body.index("`pnpm lint`") < new_body.index("## Retired")
        assert "(retired on 2026-12-01:" in new_body


def test_nothing_is_retired_for_what_the_check_cannot_establish(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()  # not a git repository, the file is missing: unverifiable, kept
    memory = memory_at(tmp_path / "memory")
    before = (memory / "scripts.md").read_text()
    result = maintain_memory(memory, plain, TODAY)
    assert result.retired == []
    assert "Money helpers live in src/lib/money.ts." in (memory / "scripts.md").read_text()
    reasons = {f.fact.text: f.reason for f in check_memory(memory, plain, TODAY).facts}
    assert "not a git repository" in reasons["Money helpers live in src/lib/money.ts."]
    assert before.split("---")[-1] == (memory / "scripts.md").read_text().split("---")[-1]


async def test_a_dream_retires_stale_facts_in_its_run_and_undo_restores_them(
        reverie_env: dict[str, Path], ws: GitWorkspace) -> None:
    install_samples(reverie_env["agent_home"], ws.root)
    memory = memory_at(ProjectPaths(Settings(), ws.root).memory_dir)
    ws.move("src/lib/money.ts", "src/lib/currency.ts")
    ws.commit("rename")
    result = await DreamRunner(Settings()).run(DreamRequest(workspace=ws.root, manual=True))
    assert result.error is None and result.ran
    assert "retired 2 stale facts" in result.summary
    text = (memory / "scripts.md").read_text()
    assert "## Retired" in text and "(retired on " in text
    report = check_memory(memory, ws.root, TODAY)
    assert report.count("stale") == 0 and report.count("valid") >= 2
    assert result.run_id is not None
    await undo_run(MemoryWriter(), memory, result.run_id)
    assert (memory / "scripts.md").read_text() == TOPIC
    assert (memory / "MEMORY.md").read_text() == INDEX
