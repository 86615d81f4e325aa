"""Bad input for the check (issue 28): a huge monorepo read only in part, a file that cannot
be read, a manifest that is a FIFO or a folder. Each is a status with a reason, never a crash,
never stale for what the check could not establish."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "eval"))

from staleness_set import GitWorkspace

from reverie.anchors import files as tree_module  # where the walk and its bound live
from reverie.anchors.memory import check_memory
from reverie.anchors.model import Anchor, AnchorCheck
from reverie.anchors.tree import WorkTree
from reverie.anchors.validate import Validator

SYMBOL = Anchor(kind="symbol", value="applyDiscount", where="src/a/money.ts")


def one(root: Path, anchor: Anchor) -> AnchorCheck:
    return Validator(WorkTree(root)).check_many([[anchor]])[0][0]


@pytest.fixture
def ws(tmp_path: Path) -> GitWorkspace:
    ws = GitWorkspace(tmp_path / "repo")
    ws.write("package.json", json.dumps({"scripts": {"build": "vite build"}}))
    ws.write("src/a/money.ts", "export function applyDiscount() {}\n")
    for n in range(40):
        ws.write(f"src/z{n:02d}/file.ts", f"export const v{n} = {n}\n")
    ws.commit("init")
    return ws


def test_a_symbol_moved_beyond_what_a_huge_tree_lets_us_read_is_not_stale(
        ws: GitWorkspace, monkeypatch: pytest.MonkeyPatch) -> None:
    """The symbol left its file (history shows when) for a file past the listing bound: the
    check cannot tell moved from removed, so it says so."""
    ws.write("src/a/money.ts", "export const cents = 1\n")
    ws.write("src/z39/file.ts", "export function applyDiscount() {}\n")
    ws.commit("move applyDiscount")
    assert one(ws.root, SYMBOL).status == "valid"  # the whole tree is read: found, valid
    monkeypatch.setattr(tree_module, "MAX_LISTED_FILES", 5)
    result = one(ws.root, SYMBOL)
    assert result.status == "unverifiable", result
    assert "more files than Reverie reads" in result.reason
    # still stale when the bound is not reached and it is really gone
    monkeypatch.setattr(tree_module, "MAX_LISTED_FILES", 60_000)
    ws.write("src/z39/file.ts", "export const v39 = 39\n")
    ws.commit("drop it")
    assert one(ws.root, SYMBOL).status == "stale"


def test_a_file_that_cannot_be_read_is_unverifiable(ws: GitWorkspace,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """Permission denied (simulated: the tests run as root, who reads everything)."""
    denied = str(ws.root / "package.json")
    real_open, real_stat = os.open, os.stat

    def no_open(path: object, *args: object, **kwargs: object) -> int:
        if str(path) == denied:
            raise PermissionError(13, "Permission denied", denied)
        return real_open(path, *args, **kwargs)  # type: ignore[arg-type]

    def no_stat(path: object, *args: object, **kwargs: object) -> os.stat_result:
        if str(path) == denied:
            raise PermissionError(13, "Permission denied", denied)
        return real_stat(path, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "open", no_open)
    monkeypatch.setattr(os, "stat", no_stat)
    script = one(ws.root, Anchor(kind="script", value="build", where="package.json"))
    assert script.status == "unverifiable" and "cannot be read" in script.reason
    path = one(ws.root, Anchor(kind="path", value="package.json"))
    assert path.status == "unverifiable" and "cannot be read" in path.reason


def test_a_manifest_that_is_a_fifo_or_a_folder_never_blocks_or_crashes(
        ws: GitWorkspace) -> None:
    (ws.root / "package.json").unlink()
    os.mkfifo(ws.root / "package.json")  # opening it for reading would block forever
    script = Anchor(kind="script", value="build", where="package.json")
    assert one(ws.root, script).status == "unverifiable"
    (ws.root / "package.json").unlink()
    (ws.root / "package.json").mkdir()
    assert one(ws.root, script).status == "unverifiable"


def test_a_memory_with_binary_and_broken_topics_is_checked_around_them(
        ws: GitWorkspace, tmp_path: Path) -> None:
    memory = tmp_path / "memory"
    memory.mkdir()
    (memory / "good.md").write_text("# Good\n\n- Money in `src/a/money.ts`.\n")
    (memory / "blob.md").write_bytes(b"\x00\xff\xfe binary \x00" * 50)
    (memory / "broken.md").write_text("---\nname: [unclosed\n---\n\n- `src/a/money.ts`\n")
    report = check_memory(memory, ws.root, __import__("datetime").date(2026, 12, 1))
    texts = {f.fact.text: f.status for f in report.facts}
    assert texts.get("Money in `src/a/money.ts`.") == "valid", texts
    assert report.count("stale") == 0
