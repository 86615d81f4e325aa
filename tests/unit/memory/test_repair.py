"""Post-run repair: long lines, excess entries, broken links, duplicates, unindexed topics."""

from __future__ import annotations

from datetime import date
from pathlib import Path

from reverie.memory.repair import OVERFLOW_NAME, new_blocking_problems, repair_memory
from reverie.memory.store import (
    MAX_ENTRY_CHARS,
    MAX_INDEX_LINES,
    check_index,
    parse_index,
    read_topic,
)

TOPIC = "---\nname: {n}\ndescription: about {n}\ntype: project\n---\n\n# {n}\n"


def test_long_line_is_shortened_and_detail_moves_to_topic(tmp_path: Path) -> None:
    hook = "the build needs " + "really important detail " * 8
    (tmp_path / "MEMORY.md").write_text(f"# Memory\n\n- [Build](build.md) - {hook}\n")
    (tmp_path / "build.md").write_text(TOPIC.format(n="Build"))
    report = repair_memory(tmp_path)
    line = (tmp_path / "MEMORY.md").read_text().splitlines()[2]
    assert len(line) <= MAX_ENTRY_CHARS and line.endswith("…")
    assert hook.strip() in (tmp_path / "build.md").read_text()
    assert "build.md" in report.files
    assert check_index(tmp_path) == []


def test_excess_entries_are_demoted_not_lost(tmp_path: Path) -> None:
    lines = ["# Memory", ""]
    for i in range(260):
        (tmp_path / f"t{i}.md").write_text(TOPIC.format(n=f"T{i}"))
        lines.append(f"- [T{i}](t{i}.md) - topic {i}")
    (tmp_path / "MEMORY.md").write_text("\n".join(lines) + "\n")
    repair_memory(tmp_path)
    index = (tmp_path / "MEMORY.md").read_text()
    assert len(index.splitlines()) <= MAX_INDEX_LINES
    overflow = (tmp_path / OVERFLOW_NAME).read_text()
    listed = {e.target for e in parse_index(index).entries} | {
        e.target for e in parse_index(overflow).entries}
    assert {f"t{i}.md" for i in range(260)} <= listed
    assert not [p for p in check_index(tmp_path) if p.severity != "info"]


def test_broken_duplicate_and_unindexed_are_fixed(tmp_path: Path) -> None:
    (tmp_path / "MEMORY.md").write_text(
        "# Memory\n\n- [A](a.md) - a\n- [Gone](gone.md) - x\n- [A2](a.md) - again\n")
    (tmp_path / "a.md").write_text(TOPIC.format(n="A"))
    (tmp_path / "b.md").write_text(TOPIC.format(n="B"))
    repair_memory(tmp_path)
    entries = parse_index((tmp_path / "MEMORY.md").read_text()).entries
    assert [(e.target, e.hook) for e in entries] == [("a.md", "a"), ("b.md", "about B")]
    assert check_index(tmp_path) == []


def test_missing_index_is_created_and_front_matter_filled(tmp_path: Path) -> None:
    (tmp_path / "notes.md").write_text("# Deploy steps\n\nUse the blue button.\n")
    repair_memory(tmp_path, touched=["notes.md"], sources=["abc"], today=date(2026, 3, 4))
    topic = read_topic(tmp_path / "notes.md")
    assert topic.meta.updated == "2026-03-04" and topic.meta.sources == ["abc"]
    assert topic.meta.description == "Deploy steps" and topic.meta.type == "project"
    assert "notes.md" in (tmp_path / "MEMORY.md").read_text()
    assert check_index(tmp_path) == []


def test_model_given_sources_and_dates_are_kept(tmp_path: Path) -> None:
    (tmp_path / "x.md").write_text(
        "---\nname: X\ndescription: d\ntype: user\nupdated: 2025-01-01\nsources: [s9]\n---\nx\n")
    repair_memory(tmp_path, touched=["x.md"], sources=["abc"], today=date(2026, 3, 4))
    topic = read_topic(tmp_path / "x.md")
    assert topic.meta.updated == "2025-01-01" and topic.meta.sources == ["s9"]


def test_new_blocking_problems_ignore_old_ones(tmp_path: Path) -> None:
    (tmp_path / "MEMORY.md").write_text("- [B](broken.md) - b\n")
    (tmp_path / "broken.md").write_text("---\nname: [x\n---\n")
    before = check_index(tmp_path)
    assert new_blocking_problems(tmp_path, before) == []
    (tmp_path / "MEMORY.md").write_text("- [B](broken.md) - b\n- [G](gone.md) - g\n")
    assert [p.code for p in new_blocking_problems(tmp_path, before)] == ["broken-link"]
