"""What the index cuts from memory files and notes."""

from __future__ import annotations

from pathlib import Path

from reverie.search.documents import memory_documents, notes_documents

TOPIC = """---
name: Build
type: project
updated: 2026-11-20
---

# Build

- **Build:** `pnpm build` (tsc -b && vite build). _(session abcdef12, 2026-11-01)_
- The `@/` alias lives in tsconfig paths
  and in vite's resolve.alias.

## Retired

- Use `npm run build`. _(session 12345678, 2026-10-01)_
"""


def test_topic_entries_with_provenance_and_no_retired_facts(tmp_path: Path) -> None:
    docs = memory_documents(tmp_path, "build.md", TOPIC)
    assert [d.body.split("\n")[0][:20] for d in docs] == [
        "**Build:** `pnpm bui", "The `@/` alias lives"]
    assert docs[0].session_id == "abcdef12" and docs[0].day == "2026-11-20"
    assert "resolve.alias" in docs[1].body  # continuation lines belong to their bullet
    assert all("npm run build" not in d.body for d in docs)
    assert {d.kind for d in docs} == {"memory"} and {d.source for d in docs} == {"build.md"}


def test_index_lines_and_secrets(tmp_path: Path) -> None:
    docs = memory_documents(tmp_path, "MEMORY.md", "# Memory\n\n- [Build](build.md) - pnpm; "
                            "token ghp_R7kQ2mV9xL4pW8nT3bY6cF1hJ5sD0gA2zE7u\n")
    assert len(docs) == 1 and docs[0].title == "Build"
    assert "ghp_" not in docs[0].body


def test_notes_sections_skip_the_template_lines() -> None:
    notes = ("# Session Title\n_A short title_\nFix the coupon crash\n\n"
             "# Current State\n_What is being worked on_\n\n"
             "# Errors & Corrections\n_Errors and how they were fixed_\n"
             "- applyCoupon crashed on an empty cart\n\n```\n# not a header\n```\n")
    docs = notes_documents(notes, session_id="s1", agent="codex", at=None, source="n.md")
    assert [d.label for d in docs] == ["Errors & Corrections"]
    assert docs[0].title == "Fix the coupon crash"
    assert "# not a header" in docs[0].body and "_Errors and how" not in docs[0].body
