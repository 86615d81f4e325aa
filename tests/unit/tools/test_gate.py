"""The path gate: hypothesis-generated escape attempts never read or write outside the job's
allowed places (checked on the real filesystem), plus the specific cases one by one."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reverie.tools.fs import ALL_TOOLS, execute_tool
from reverie.tools.gate import PathDenied, PathGate

CANARY = "CANARY-7c1f-do-not-leak"


def _build(root: Path) -> dict[str, Path]:
    allowed = root / "allowed"
    writable = root / "writable"
    outside = root / "outside"
    for d in (allowed / "sub", writable, outside / "deep"):
        d.mkdir(parents=True)
    (allowed / "a.md").write_text("alpha\n")
    (allowed / "sub" / "b.md").write_text("beta\n")
    (outside / "canary.txt").write_text(CANARY)
    (outside / "deep" / "canary.md").write_text(CANARY)
    (allowed / "link_out").symlink_to(outside / "canary.txt")
    (allowed / "dirlink").symlink_to(outside)
    (writable / "evil").symlink_to(outside / "canary.txt")
    (writable / "evil_dir").symlink_to(outside)
    (writable / "notes.md").write_text("notes\n")
    return {"root": root, "allowed": allowed, "writable": writable, "outside": outside}


def _snapshot(root: Path, skip: Path) -> dict[str, tuple[bytes | str, int]]:
    """Every entry under ``root`` except inside ``skip``: content (or link target) and mtime."""
    out: dict[str, tuple[bytes | str, int]] = {}
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        for name in dirnames + filenames:
            path = Path(dirpath) / name
            if path == skip or skip in path.parents:
                continue
            info = path.lstat()
            if path.is_symlink():
                out[str(path)] = (os.readlink(path), info.st_mtime_ns)
            elif path.is_file():
                out[str(path)] = (path.read_bytes(), info.st_mtime_ns)
            else:
                out[str(path)] = ("dir", 0)
    return out


@pytest.fixture(scope="module")
def tree() -> Iterator[dict[str, Path]]:
    with tempfile.TemporaryDirectory() as tmp:
        yield _build(Path(tmp).resolve())


SEGMENTS = st.sampled_from([
    "..", ".", "a.md", "sub", "b.md", "link_out", "dirlink", "outside", "canary.txt", "deep",
    "canary.md", "writable", "allowed", "evil", "evil_dir", "notes.md", "new.md",
    "／", "‥", "．．", "..\u2215", "\u2024\u2024", "a\x00b", "x" * 300, "~", "é", "e\u0301",
    "CON", "\\..\\", " ", "...", ".git",
])


@st.composite
def escape_paths(draw: st.DrawFn) -> str:
    prefix = draw(st.sampled_from(["", "/", "{root}/", "{outside}/", "{allowed}/",
                                   "{writable}/", "//", "/proc/self/root{root}/"]))
    parts = draw(st.lists(SEGMENTS, min_size=0, max_size=6))
    sep = draw(st.sampled_from(["/", "//", "/./"]))
    return prefix + sep.join(parts)


def _fill(template: str, tree: dict[str, Path]) -> str:
    for key, value in tree.items():
        template = template.replace("{" + key + "}", str(value))
    return template


@settings(max_examples=250, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(template=escape_paths(), tool=st.sampled_from(ALL_TOOLS))
def test_generated_paths_never_escape(tree: dict[str, Path], template: str, tool: str) -> None:
    raw = _fill(template, tree)
    gate = PathGate([tree["allowed"]], write_dir=tree["writable"], base_dir=tree["allowed"],
                    max_bytes=10_000)
    before = _snapshot(tree["root"], skip=tree["writable"])
    args = {
        "read_file": {"file_path": raw},
        "list_dir": {"path": raw},
        "glob": {"pattern": "**/*", "path": raw},
        "grep": {"pattern": "CANARY|alpha", "path": raw},
        "edit_file": {"file_path": raw, "old_string": "", "new_string": CANARY[::-1]},
        "write_file": {"file_path": raw, "content": "written"},
    }[tool]
    outcome = execute_tool(gate, tool, args)
    assert CANARY not in outcome.content
    assert _snapshot(tree["root"], skip=tree["writable"]) == before
    for written in outcome.written:
        resolved = Path(written).resolve()
        assert tree["writable"] in resolved.parents
    # the symlinks in the writable dir still point where they did, and the canary is intact
    assert os.readlink(tree["writable"] / "evil") == str(tree["outside"] / "canary.txt")
    assert (tree["outside"] / "canary.txt").read_text() == CANARY


@settings(max_examples=150, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(pattern=st.text(alphabet=st.sampled_from(list("*?/.[]!-abc~\x00")), max_size=12))
def test_generated_glob_patterns_stay_inside(tree: dict[str, Path], pattern: str) -> None:
    gate = PathGate([tree["allowed"]], base_dir=tree["allowed"])
    outcome = execute_tool(gate, "glob", {"pattern": pattern})
    grep = execute_tool(gate, "grep", {"pattern": "C", "glob": pattern})
    for text in (outcome.content, grep.content):
        assert CANARY not in text
        assert str(tree["outside"]) not in text


@pytest.fixture
def t(tmp_path: Path) -> dict[str, Path]:
    return _build(tmp_path.resolve())


def test_relative_paths_resolve_against_base_dir(t: dict[str, Path]) -> None:
    gate = PathGate([t["allowed"]], base_dir=t["allowed"])
    assert gate.check_read("sub/b.md") == t["allowed"] / "sub" / "b.md"
    assert gate.check_read("sub/../a.md") == t["allowed"] / "a.md"
    with pytest.raises(PathDenied, match="outside"):
        gate.check_read("../outside/canary.txt")


def test_symlink_inside_pointing_out_is_denied(t: dict[str, Path]) -> None:
    gate = PathGate([t["allowed"]], write_dir=t["writable"], base_dir=t["allowed"])
    for raw in ("link_out", "dirlink/canary.txt", str(t["allowed"] / "dirlink/deep/canary.md")):
        with pytest.raises(PathDenied):
            gate.check_read(raw)
    for raw in (str(t["writable"] / "evil"), str(t["writable"] / "evil_dir" / "x.md")):
        with pytest.raises(PathDenied):
            gate.check_write(raw)
    assert (t["outside"] / "canary.txt").read_text() == CANARY


def test_nul_bytes_and_long_names_are_denied(t: dict[str, Path]) -> None:
    gate = PathGate([t["allowed"]], base_dir=t["allowed"])
    with pytest.raises(PathDenied, match="NUL"):
        gate.check_read("a.md\x00.txt")
    with pytest.raises(PathDenied, match="too long"):
        gate.check_read("x" * 300)
    with pytest.raises(PathDenied, match="too long"):
        gate.check_read("a/" * 3000)


def test_unicode_lookalikes_are_plain_names(t: dict[str, Path]) -> None:
    gate = PathGate([t["allowed"]], write_dir=t["writable"], base_dir=t["writable"])
    target = gate.check_write("．．／outside／canary.txt")
    assert target.parent == t["writable"]
    outcome = execute_tool(gate, "write_file", {"file_path": "‥/canary.txt", "content": "x"})
    assert not outcome.is_error
    assert (t["writable"] / "‥" / "canary.txt").read_text() == "x"
    assert (t["outside"] / "canary.txt").read_text() == CANARY


def test_device_fifo_and_size_cap(t: dict[str, Path]) -> None:
    fifo = t["allowed"] / "pipe"
    os.mkfifo(fifo)
    big = t["allowed"] / "big.md"
    big.write_text("y" * 2000)
    gate = PathGate([t["allowed"], Path("/dev")], base_dir=t["allowed"], max_bytes=1000)
    with pytest.raises(PathDenied, match="regular"):
        gate.check_read("pipe")
    with pytest.raises(PathDenied, match="regular"):
        gate.check_read("/dev/zero")
    with pytest.raises(PathDenied, match="larger"):
        gate.check_read("big.md")
    writer = PathGate([], write_dir=t["allowed"], max_bytes=1000)
    with pytest.raises(PathDenied, match="regular"):
        writer.check_write(str(fifo))
    out = execute_tool(writer, "write_file", {"file_path": str(t["allowed"] / "n.md"),
                                              "content": "z" * 1001})
    assert out.is_error and out.denial is not None
    assert not (t["allowed"] / "n.md").exists()


def test_write_file_target_allows_only_that_file(t: dict[str, Path]) -> None:
    notes = t["writable"] / "notes.md"
    gate = PathGate([], write_file=notes)
    assert gate.check_write(str(notes)) == notes
    assert gate.check_read(str(notes)) == notes  # the job may read what it may write
    for raw in (str(t["writable"] / "other.md"), str(t["writable"]), str(t["allowed"] / "a.md")):
        with pytest.raises(PathDenied):
            gate.check_write(raw)
    with pytest.raises(PathDenied):
        gate.check_read(str(t["allowed"] / "a.md"))
    with pytest.raises(ValueError):
        PathGate([], write_file=notes, write_dir=t["writable"])


def test_path_map_shows_real_paths_and_touches_staging(tmp_path: Path) -> None:
    real = tmp_path / "memory"
    staged = tmp_path / "staging" / "memory"
    real.mkdir()
    staged.mkdir(parents=True)
    (real / "MEMORY.md").write_text("real index\n")
    (staged / "MEMORY.md").write_text("staged index\n")
    (staged / "topic.md").write_text("staged topic\n")
    gate = PathGate([real, tmp_path / "transcripts"], write_dir=real, path_map={real: staged})

    read = execute_tool(gate, "read_file", {"file_path": str(real / "MEMORY.md")})
    assert "staged index" in read.content and read.read == [str(real / "MEMORY.md")]
    listing = execute_tool(gate, "list_dir", {"path": str(real)})
    assert str(real) in listing.content and "topic.md" in listing.content
    found = execute_tool(gate, "glob", {"pattern": "*.md", "path": str(real)})
    assert str(real / "topic.md") in found.content and str(staged) not in found.content

    wrote = execute_tool(gate, "write_file", {"file_path": str(real / "new.md"), "content": "n"})
    assert wrote.written == [str(real / "new.md")]
    assert (staged / "new.md").read_text() == "n"
    assert not (real / "new.md").exists()
    edit = execute_tool(gate, "edit_file", {"file_path": str(real / "MEMORY.md"),
                                            "old_string": "staged", "new_string": "edited"})
    assert not edit.is_error, edit.content
    assert (staged / "MEMORY.md").read_text() == "edited index\n"
    assert (real / "MEMORY.md").read_text() == "real index\n"
    # the staged copy is not reachable under its own name: only through the real path
    with pytest.raises(PathDenied):
        gate.check_write(str(tmp_path / "staging" / "other" / "x.md"))


def test_path_map_with_staging_inside_the_real_dir(tmp_path: Path) -> None:
    """The dream's layout: the staging copy lives in ``memory/.reverie/staging/<txid>``."""
    real = tmp_path.resolve() / "memory"
    staged = real / ".reverie" / "staging" / "tx1"
    staged.mkdir(parents=True)
    (real / "MEMORY.md").write_text("live\n")
    (staged / "MEMORY.md").write_text("staged copy\n")
    gate = PathGate([real], write_dir=real, base_dir=real, path_map={real: staged})
    grep = execute_tool(gate, "grep", {"pattern": "copy", "path": str(real)})
    assert grep.content == f"{real / 'MEMORY.md'}:1: staged copy"
    found = execute_tool(gate, "glob", {"pattern": "**/*.md"})
    assert found.content.splitlines() == [str(real / "MEMORY.md")]
    edit = execute_tool(gate, "edit_file", {"file_path": "MEMORY.md", "old_string": "copy",
                                            "new_string": "edit"})
    assert edit.written == [str(real / "MEMORY.md")]
    assert (staged / "MEMORY.md").read_text() == "staged edit\n"
    assert (real / "MEMORY.md").read_text() == "live\n"
    new = execute_tool(gate, "write_file", {"file_path": "topic/a.md", "content": "t"})
    assert new.written == [str(real / "topic" / "a.md")]
    assert (staged / "topic" / "a.md").read_text() == "t"
    assert not (real / "topic").exists()
