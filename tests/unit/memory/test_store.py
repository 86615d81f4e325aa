"""MEMORY.md / topic-file parsing and ``check_index`` diagnostics."""

from __future__ import annotations

from pathlib import Path

from reverie.memory.store import (
    check_index,
    parse_index,
    parse_topic,
    read_topic,
    render_topic,
    visible_files,
)

TOPIC = "---\nname: Build\ndescription: how to build\ntype: project\n---\n\n# Build\n"


def _codes(problems: list) -> list[tuple[str, str, int]]:
    return sorted((p.file.name, p.code, p.line) for p in problems)


def test_parse_index_recognises_entries_and_hooks() -> None:
    parsed = parse_index("# Memory\n\n- [Build](build.md) - how to build\n* [X](x.md)\ntext\n")
    assert [(e.title, e.target, e.hook, e.line) for e in parsed.entries] == [
        ("Build", "build.md", "how to build", 2), ("X", "x.md", "", 3)]


def test_valid_memory_has_no_problems(tmp_path: Path) -> None:
    (tmp_path / "MEMORY.md").write_text("# Memory\n\n- [Build](build.md) - how to build\n")
    (tmp_path / "build.md").write_text(TOPIC)
    assert check_index(tmp_path) == []


def test_every_kind_of_problem_is_positioned(tmp_path: Path) -> None:
    long_hook = "x" * 160
    (tmp_path / "MEMORY.md").write_text(
        "# Memory\n"
        f"- [Build](build.md) - {long_hook}\n"
        "- [Gone](gone.md) - missing file\n"
        "- [Build again](build.md) - duplicate\n"
        "- [Up](../secret.md) - outside\n"
    )
    (tmp_path / "build.md").write_text(TOPIC)
    (tmp_path / "orphan.md").write_text(TOPIC)
    (tmp_path / "broken.md").write_text("---\nname: [unclosed\n---\nbody\n")
    (tmp_path / "bare.md").write_text("no front matter\n")
    problems = check_index(tmp_path)
    codes = _codes(problems)
    assert ("MEMORY.md", "entry-too-long", 1) in codes
    assert ("MEMORY.md", "broken-link", 2) in codes
    assert ("MEMORY.md", "duplicate-entry", 3) in codes
    assert ("MEMORY.md", "link-outside", 4) in codes
    assert ("orphan.md", "unindexed-topic", 0) in codes
    assert any(c[:2] == ("broken.md", "bad-front-matter") for c in codes)
    assert ("bare.md", "missing-front-matter", 0) in codes
    long = next(p for p in problems if p.code == "entry-too-long")
    assert long.start_col == 150 and long.end_col == len(f"- [Build](build.md) - {long_hook}")
    broken = next(p for p in problems if p.code == "broken-link")
    line = "- [Gone](gone.md) - missing file"
    assert line[broken.start_col:broken.end_col] == "gone.md"
    assert broken.severity == "error"


def test_size_limits(tmp_path: Path) -> None:
    (tmp_path / "MEMORY.md").write_text("# Memory\n" + "filler\n" * 205)
    codes = _codes(check_index(tmp_path))
    assert ("MEMORY.md", "index-too-long", 200) in codes
    (tmp_path / "MEMORY.md").write_text("# Memory\n" + ("y" * 99 + "\n") * 260)
    assert any(c[1] == "index-too-large" for c in _codes(check_index(tmp_path)))


def test_topics_reachable_through_other_topics_count_as_indexed(tmp_path: Path) -> None:
    (tmp_path / "MEMORY.md").write_text("- [More](more.md) - more\n")
    (tmp_path / "more.md").write_text(TOPIC + "\n- [Deep](deep.md)\n")
    (tmp_path / "deep.md").write_text(TOPIC)
    assert not [p for p in check_index(tmp_path) if p.code == "unindexed-topic"]


def test_missing_index_with_topics_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text(TOPIC)
    assert ("MEMORY.md", "missing-index", 0) in _codes(check_index(tmp_path))


def test_front_matter_round_trip_and_types(tmp_path: Path) -> None:
    topic = parse_topic(tmp_path / "t.md",
                        "---\nname: T\nupdated: 2026-05-01\nsources: abc\n---\nBody\n")
    assert topic.error is None
    assert topic.meta.updated == "2026-05-01" and topic.meta.sources == ["abc"]
    text = render_topic(topic.meta, topic.body)
    (tmp_path / "t.md").write_text(text)
    again = read_topic(tmp_path / "t.md")
    assert again.meta == topic.meta and again.body.strip() == "Body"


def test_invalid_utf8_and_non_mapping_front_matter_are_reported(tmp_path: Path) -> None:
    (tmp_path / "bin.md").write_bytes(b"---\nname: x\n---\n\xff\xfe")
    assert read_topic(tmp_path / "bin.md").error == "file is not valid UTF-8"
    assert parse_topic(tmp_path / "l.md", "---\n- a\n- b\n---\nx").error


def test_visible_files_skip_dot_entries_and_symlinks(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("a")
    (tmp_path / ".reverie").mkdir()
    (tmp_path / ".reverie" / "x").write_text("x")
    (tmp_path / ".consolidate-lock").write_text("1")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "b.md").write_text("b")
    (tmp_path / "link.md").symlink_to(tmp_path / "a.md")
    assert visible_files(tmp_path) == ["a.md", "sub/b.md"]
