"""Validation: stale only when the tree and its history establish it; bad input is a status with
a reason, never a crash and never stale."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "eval"))

from staleness_set import GitWorkspace

from reverie.anchors.model import Anchor, AnchorCheck
from reverie.anchors.tree import WorkTree
from reverie.anchors.validate import Validator


def check(root: Path, *anchors: Anchor) -> list[AnchorCheck]:
    return Validator(WorkTree(root)).check_many([list(anchors)])[0]


def one(root: Path, anchor: Anchor) -> AnchorCheck:
    return check(root, anchor)[0]


PATH = Anchor(kind="path", value="src/lib/money.ts")


@pytest.fixture
def ws(tmp_path: Path) -> GitWorkspace:
    ws = GitWorkspace(tmp_path / "repo")
    ws.write("package.json", json.dumps({"scripts": {"build": "vite build"},
                                         "dependencies": {"react": "18"}}))
    ws.write("src/lib/money.ts", "export function applyDiscount() {}\n")
    ws.commit("init")
    return ws


def test_a_rename_is_found_through_history(ws: GitWorkspace) -> None:
    ws.move("src/lib/money.ts", "src/lib/currency.ts")
    ws.commit("rename")
    result = one(ws.root, PATH)
    assert result.status == "stale"
    assert result.reason.startswith(
        "`src/lib/money.ts` no longer exists; renamed to `src/lib/currency.ts` in ")
    sha = result.reason.rsplit(" ", 1)[1]
    assert len(sha) == 7 and ws.repo.head().decode().startswith(sha)


def test_deleted_and_not_yet_committed(ws: GitWorkspace) -> None:
    (ws.root / "src/lib/money.ts").unlink()
    assert one(ws.root, PATH).reason == "`src/lib/money.ts` no longer exists; deleted " \
                                        "(not committed yet)"


def test_script_and_dependency_removals_name_the_commit(ws: GitWorkspace) -> None:
    ws.edit_json("package.json", lambda d: (d["scripts"].pop("build"),
                                            d["dependencies"].pop("react")))
    ws.commit("drop")
    results = check(ws.root, Anchor(kind="script", value="build", where="package.json"),
                    Anchor(kind="dep", value="react", where="package.json"))
    assert [r.status for r in results] == ["stale", "stale"]
    assert "script `build` is no longer defined in package.json (removed in " in results[0].reason
    assert "`react` is no longer a dependency in package.json" in results[1].reason


def test_a_symbol_that_moved_is_valid_and_one_renamed_away_is_stale(ws: GitWorkspace) -> None:
    symbol = Anchor(kind="symbol", value="applyDiscount", where="src/lib/money.ts")
    ws.move("src/lib/money.ts", "src/pricing.ts")
    ws.commit("move")
    assert one(ws.root, symbol).status == "valid"
    ws.write("src/pricing.ts", "export function applyCoupon() {}\n")
    ws.commit("rename")
    result = one(ws.root, symbol)
    assert result.status == "stale"
    assert "`applyDiscount` no longer occurs in the workspace" in result.reason


def test_a_symbol_moved_to_a_file_not_added_yet_is_still_valid(ws: GitWorkspace) -> None:
    symbol = Anchor(kind="symbol", value="applyDiscount", where="src/lib/money.ts")
    ws.write("src/lib/money.ts", "export const other = 1\n")
    (ws.root / "src/new.ts").write_text("export function applyDiscount() {}\n")
    assert one(ws.root, symbol).status == "valid"


def test_not_a_git_repository_is_unverifiable(tmp_path: Path) -> None:
    (tmp_path / "package.json").write_text(json.dumps({"scripts": {}}))
    results = check(tmp_path, PATH, Anchor(kind="script", value="build", where="package.json"))
    assert [r.status for r in results] == ["unverifiable", "unverifiable"]
    assert all("not a git repository" in r.reason for r in results)


def test_a_path_this_branch_never_had_is_unverifiable(ws: GitWorkspace) -> None:
    result = one(ws.root, Anchor(kind="path", value="src/feature/only-on-a-branch.ts"))
    assert result.status == "unverifiable"
    assert "not in this branch's history" in result.reason


def test_shallow_clone_cannot_establish_an_old_deletion(ws: GitWorkspace) -> None:
    ws.delete("src/lib/money.ts")
    ws.commit("delete")
    ws.write("README.md", "x\n")
    ws.commit("later")
    # a shallow clone of depth 1: the commit that deleted the file is not here
    (ws.root / ".git" / "shallow").write_text(ws.repo.head().decode() + "\n")
    result = one(ws.root, PATH)
    assert result.status == "unverifiable"
    assert "shallow clone" in result.reason


def test_detached_head_and_empty_repository(ws: GitWorkspace, tmp_path: Path) -> None:
    ws.move("src/lib/money.ts", "src/lib/currency.ts")
    ws.commit("rename")
    (ws.root / ".git" / "HEAD").write_text(ws.repo.head().decode() + "\n")  # detached
    assert one(ws.root, PATH).status == "stale"
    empty = GitWorkspace(tmp_path / "empty")
    result = one(empty.root, PATH)
    assert result.status == "unverifiable" and "no commits" in result.reason


def test_symlink_loop_ignored_folder_binary_and_unparsable_manifest(ws: GitWorkspace) -> None:
    os.symlink("loop", ws.root / "loop")
    assert one(ws.root, Anchor(kind="path", value="loop")).reason == "`loop` is a symlink loop"
    ignored = one(ws.root, Anchor(kind="path", value="node_modules/x/index.js"))
    assert ignored.status == "unverifiable" and "ignored or generated" in ignored.reason
    (ws.root / "blob.bin").write_bytes(b"\0\x01applyDiscount\xff" * 100)
    assert one(ws.root, Anchor(kind="symbol", value="applyDiscount",
                               where="src/lib/money.ts")).status == "valid"
    (ws.root / "package.json").write_text("{ not json")
    broken = one(ws.root, Anchor(kind="script", value="build", where="package.json"))
    assert broken.status == "unverifiable" and "does not parse" in broken.reason


def test_a_missing_workspace_is_unverifiable(tmp_path: Path) -> None:
    result = one(tmp_path / "nowhere", PATH)
    assert result.status == "unverifiable" and "does not exist" in result.reason


def test_a_tool_not_installed_is_unverifiable_never_stale(ws: GitWorkspace) -> None:
    result = one(ws.root, Anchor(kind="bin", value="surely-not-a-real-binary-xyz"))
    assert result.status == "unverifiable"
    assert one(ws.root, Anchor(kind="bin", value="sh")).status == "valid"
