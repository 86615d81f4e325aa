"""The file tools' behaviour (through ``execute_tool``, as the loop calls them)."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from reverie.tools.fs import ALL_TOOLS, TOOLS, execute_tool, tool_specs
from reverie.tools.gate import PathGate


@pytest.fixture
def proj(tmp_path: Path) -> Path:
    root = tmp_path.resolve() / "proj"
    (root / "docs" / "deep").mkdir(parents=True)
    (root / "README.md").write_text("# Title\nhello world\nsecond hello\n")
    (root / "docs" / "guide.md").write_text("guide line\nHELLO upper\n")
    (root / "docs" / "deep" / "x.txt").write_text("hello from deep\n")
    (root / "bin.dat").write_bytes(b"\x00\x01hello")
    return root


@pytest.fixture
def gate(proj: Path) -> PathGate:
    return PathGate([proj], write_dir=proj / "docs", base_dir=proj)


def test_tool_contract_names_and_arguments() -> None:
    expected = {
        "read_file": ({"file_path"}, {"offset", "limit"}),
        "list_dir": ({"path"}, set()),
        "glob": ({"pattern"}, {"path"}),
        "grep": ({"pattern"}, {"path", "glob"}),
        "edit_file": ({"file_path", "old_string", "new_string"}, {"replace_all"}),
        "write_file": ({"file_path", "content"}, set()),
    }
    assert set(TOOLS) == set(expected) == set(ALL_TOOLS)
    for spec in tool_specs(ALL_TOOLS):
        required, optional = expected[spec.name]
        params = spec.parameters
        assert params["type"] == "object"
        assert set(params["required"]) == required
        assert set(params["properties"]) == required | optional
    assert "shell" not in TOOLS and "bash" not in TOOLS


def test_read_file_numbers_lines_and_pages(gate: PathGate) -> None:
    out = execute_tool(gate, "read_file", {"file_path": "README.md"})
    assert out.content.splitlines()[1] == "     2\thello world"
    page = execute_tool(gate, "read_file", {"file_path": "README.md", "offset": 2, "limit": 1})
    assert "hello world" in page.content and "Title" not in page.content
    assert "offset=3" in page.content
    past = execute_tool(gate, "read_file", {"file_path": "README.md", "offset": 99})
    assert past.is_error and "past the end" in past.content
    binary = execute_tool(gate, "read_file", {"file_path": "bin.dat"})
    assert binary.is_error and "binary" in binary.content
    missing = execute_tool(gate, "read_file", {"file_path": "nope.md"})
    assert missing.is_error and missing.denial is not None


def test_bad_arguments_are_error_results(gate: PathGate) -> None:
    out = execute_tool(gate, "read_file", {"path": "README.md"})
    assert out.is_error and "file_path" in out.content
    out = execute_tool(gate, "read_file", {"file_path": "README.md", "offset": 0})
    assert out.is_error
    out = execute_tool(gate, "rm_rf", {})
    assert out.is_error and "unknown tool" in out.content


def test_list_dir_glob_grep(gate: PathGate, proj: Path) -> None:
    listing = execute_tool(gate, "list_dir", {"path": "."})
    assert listing.content.splitlines()[1:] == ["README.md", "bin.dat", "docs/"]
    found = execute_tool(gate, "glob", {"pattern": "**/*.md"})
    assert found.content.splitlines() == [str(proj / "README.md"), str(proj / "docs/guide.md")]
    top = execute_tool(gate, "glob", {"pattern": "*.md"})
    assert top.content.splitlines() == [str(proj / "README.md")]
    hits = execute_tool(gate, "grep", {"pattern": "hello"})
    lines = hits.content.splitlines()
    assert f"{proj / 'README.md'}:2: hello world" in lines
    assert f"{proj / 'docs/deep/x.txt'}:1: hello from deep" in lines
    assert not any("bin.dat" in line for line in lines)
    scoped = execute_tool(gate, "grep", {"pattern": "(?i)hello", "path": "docs", "glob": "*.md"})
    assert scoped.content == f"{proj / 'docs/guide.md'}:2: HELLO upper"
    one_file = execute_tool(gate, "grep", {"pattern": "second", "path": "README.md"})
    assert one_file.content.endswith(":3: second hello")
    bad = execute_tool(gate, "grep", {"pattern": "("})
    assert bad.is_error and "regular expression" in bad.content
    none = execute_tool(gate, "grep", {"pattern": "zzz"})
    assert not none.is_error and "No matches" in none.content


def test_edit_file_exactly_once_unless_replace_all(gate: PathGate, proj: Path) -> None:
    guide = proj / "docs" / "guide.md"
    guide.write_text("a x a\n")
    twice = execute_tool(gate, "edit_file", {"file_path": "docs/guide.md", "old_string": "a",
                                             "new_string": "b"})
    assert twice.is_error and "2 times" in twice.content
    assert guide.read_text() == "a x a\n"
    missing = execute_tool(gate, "edit_file", {"file_path": "docs/guide.md", "old_string": "q",
                                               "new_string": "b"})
    assert missing.is_error and "not found" in missing.content
    ok = execute_tool(gate, "edit_file", {"file_path": "docs/guide.md", "old_string": "x",
                                          "new_string": "y"})
    assert not ok.is_error and guide.read_text() == "a y a\n"
    assert ok.written == [str(guide)]
    every = execute_tool(gate, "edit_file", {"file_path": "docs/guide.md", "old_string": "a",
                                             "new_string": "c", "replace_all": True})
    assert not every.is_error and guide.read_text() == "c y c\n"


def test_edit_file_creates_with_empty_old_string(gate: PathGate, proj: Path) -> None:
    created = execute_tool(gate, "edit_file", {"file_path": "docs/new/n.md", "old_string": "",
                                               "new_string": "fresh\n"})
    assert not created.is_error, created.content
    target = proj / "docs" / "new" / "n.md"
    assert target.read_text() == "fresh\n"
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    again = execute_tool(gate, "edit_file", {"file_path": "docs/new/n.md", "old_string": "",
                                             "new_string": "other"})
    assert again.is_error and target.read_text() == "fresh\n"
    (proj / "docs" / "empty.md").write_text("")
    filled = execute_tool(gate, "edit_file", {"file_path": "docs/empty.md", "old_string": "",
                                              "new_string": "now"})
    assert not filled.is_error and (proj / "docs" / "empty.md").read_text() == "now"


def test_write_file_is_atomic_and_keeps_mode(gate: PathGate, proj: Path) -> None:
    guide = proj / "docs" / "guide.md"
    guide.chmod(0o644)
    out = execute_tool(gate, "write_file", {"file_path": str(guide), "content": "replaced"})
    assert not out.is_error
    assert guide.read_text() == "replaced"
    assert stat.S_IMODE(guide.stat().st_mode) == 0o644
    assert [p.name for p in guide.parent.iterdir() if p.name.endswith(".tmp")] == []
    denied = execute_tool(gate, "write_file", {"file_path": "README.md", "content": "x"})
    assert denied.is_error and denied.denial is not None
    assert (proj / "README.md").read_text().startswith("# Title")
