"""The check cache (``reverie.anchors.cache``): an anchor found valid before costs a ``stat``
while its file is unchanged, a history answer is reused at the same HEAD, and no change is ever
hidden — not even an edit in place that keeps the size and the mtime. A corrupt cache is
rebuilt silently; the cache lives in the project's data dir, never in the workspace."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "eval"))

from staleness_set import GitWorkspace

from reverie.anchors import cache as cache_module
from reverie.anchors.cache import CheckCache
from reverie.anchors.model import Anchor, AnchorCheck
from reverie.anchors.tree import WorkTree
from reverie.anchors.validate import Validator
from reverie.config import ProjectPaths, Settings

SYMBOL = Anchor(kind="symbol", value="applyDiscount", where="src/lib/money.ts")
SCRIPT = Anchor(kind="script", value="build", where="package.json")
DEP = Anchor(kind="dep", value="react", where="package.json")


@pytest.fixture
def ws(tmp_path: Path) -> GitWorkspace:
    ws = GitWorkspace(tmp_path / "repo")
    ws.write("package.json", json.dumps({"scripts": {"build": "vite build"},
                                         "dependencies": {"react": "18"}}))
    ws.write("src/lib/money.ts", "export function applyDiscount() {}\n")
    ws.commit("init")
    return ws


def check(root: Path, cache: Path | None, *anchors: Anchor) -> list[AnchorCheck]:
    with WorkTree(root) as tree:
        store = CheckCache(cache, root)
        try:
            return Validator(tree, cache=store).check_many([list(anchors)])[0]
        finally:
            store.save()


def same_length_edit(path: Path, old: str, new: str) -> None:
    """Rewrite ``path`` in place (same inode, same size) and put its mtime back."""
    assert len(old) == len(new)
    before = path.stat()
    with open(path, "r+b") as handle:
        data = handle.read().replace(old.encode(), new.encode())
        handle.seek(0)
        handle.write(data)
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = path.stat()
    assert (after.st_ino, after.st_size, after.st_mtime_ns) == (
        before.st_ino, before.st_size, before.st_mtime_ns)


def test_an_unchanged_anchor_costs_a_stat(ws: GitWorkspace, tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    cache = tmp_path / "data" / "check-cache.json"
    monkeypatch.setattr(cache_module, "RACY_NS", 0)  # the files count as old: no hash kept
    first = check(ws.root, cache, SYMBOL, SCRIPT, DEP)
    assert [c.status for c in first] == ["valid"] * 3
    assert cache.is_file()  # the parent folder was created
    reads: list[str] = []
    hashed: list[bytes] = []
    real_read, real_digest = WorkTree.read_text, cache_module.digest
    monkeypatch.setattr(WorkTree, "read_text",
                        lambda self, rel: reads.append(rel) or real_read(self, rel))
    monkeypatch.setattr(cache_module, "digest",
                        lambda data: hashed.append(data) or real_digest(data))
    again = check(ws.root, cache, SYMBOL, SCRIPT, DEP)
    assert again == first
    assert reads == [] and hashed == []
    # and without the cache the same anchors are read
    assert check(ws.root, None, SYMBOL, SCRIPT, DEP) == first
    assert "package.json" in reads and "src/lib/money.ts" in reads


class CoarseClock:
    """``os`` as on a file system with whole-second timestamps (HFS+, ext3): ``stat`` and
    ``fstat`` give mtime and ctime rounded down to the second."""

    def __getattr__(self, name: str) -> object:
        return getattr(os, name)

    @staticmethod
    def _coarse(info: os.stat_result) -> SimpleNamespace:
        second = 1_000_000_000
        return SimpleNamespace(
            st_mode=info.st_mode, st_dev=info.st_dev, st_ino=info.st_ino,
            st_size=info.st_size, st_atime_ns=info.st_atime_ns,
            st_mtime_ns=info.st_mtime_ns // second * second,
            st_ctime_ns=info.st_ctime_ns // second * second)

    def stat(self, *args: Any, **kwargs: Any) -> SimpleNamespace:
        return self._coarse(os.stat(*args, **kwargs))

    def fstat(self, fd: int) -> SimpleNamespace:
        return self._coarse(os.fstat(fd))


def test_an_edit_in_place_with_the_same_size_and_mtime_is_seen(
        ws: GitWorkspace, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """On whole-second timestamps an edit in the same second as the check keeps every field
    of the signature (inode, size, mtime, ctime): the content hash kept for a file changed
    that recently decides."""
    import reverie.anchors.files as files_module

    cache = tmp_path / "check-cache.json"
    monkeypatch.setattr(files_module, "os", CoarseClock())
    monkeypatch.setattr(cache_module, "os", CoarseClock())
    path = ws.root / "src/lib/money.ts"
    time.sleep(1 - time.time() % 1 + 0.01)  # check and edit within one second
    path.write_text("export function applyDiscount() {}\n")
    started = time.time()
    assert check(ws.root, cache, SYMBOL)[0].status == "valid"
    before = CoarseClock().stat(path)
    same_length_edit(path, "applyDiscount", "applyDiscouny")
    after = CoarseClock().stat(path)
    if int(time.time()) == int(started):  # (a loaded machine may cross the second)
        assert (after.st_ino, after.st_size, after.st_mtime_ns, after.st_ctime_ns) == (
            before.st_ino, before.st_size, before.st_mtime_ns, before.st_ctime_ns)
    cached = check(ws.root, cache, SYMBOL)[0]
    assert cached.status == "stale"
    assert cached == check(ws.root, None, SYMBOL)[0]
    assert "(not committed yet)" in cached.reason


def test_an_old_file_edited_in_place_is_seen_through_its_ctime(
        ws: GitWorkspace, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A file recorded on its signature alone (not racy): the ctime moves on any edit, and no
    program can set it back, even when the size, the inode and the mtime stay."""
    cache = tmp_path / "check-cache.json"
    monkeypatch.setattr(cache_module, "RACY_NS", 0)
    assert [c.status for c in check(ws.root, cache, SCRIPT, DEP)] == ["valid", "valid"]
    time.sleep(0.05)  # past the clock tick of the first write
    same_length_edit(ws.root / "package.json", '"build"', '"bundl"')
    cached = check(ws.root, cache, SCRIPT, DEP)
    assert [c.status for c in cached] == ["stale", "valid"]
    assert cached == check(ws.root, None, SCRIPT, DEP)


def test_history_is_reused_at_the_same_head_and_searched_again_after_a_commit(
        ws: GitWorkspace, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cache = tmp_path / "check-cache.json"
    ws.edit_json("package.json", lambda d: d["scripts"].pop("build"))
    ws.commit("drop build")
    first_sha = ws.repo.head().decode()[:7]
    first = check(ws.root, cache, SCRIPT)[0]
    assert first.reason == f"script `build` is no longer defined in package.json " \
                           f"(removed in {first_sha})"
    searched: list[str] = []
    real = WorkTree.content_removal
    monkeypatch.setattr(WorkTree, "content_removal",
                        lambda self, rel, present: searched.append(rel) or real(
                            self, rel, present))
    assert check(ws.root, cache, SCRIPT)[0] == first
    assert searched == []  # the same HEAD: the answer was kept
    ws.edit_json("package.json", lambda d: d["scripts"].update(build="vite build"))
    ws.commit("build again")
    assert check(ws.root, cache, SCRIPT)[0].status == "valid"
    ws.edit_json("package.json", lambda d: d["scripts"].pop("build"))
    ws.commit("drop build again")
    later = check(ws.root, cache, SCRIPT)[0]
    assert later.reason.endswith(f"(removed in {ws.repo.head().decode()[:7]})")
    assert later.reason != first.reason and searched == ["package.json"]


def test_a_renamed_path_keeps_its_reason_from_the_cache(ws: GitWorkspace,
                                                        tmp_path: Path) -> None:
    cache = tmp_path / "check-cache.json"
    path = Anchor(kind="path", value="src/lib/money.ts")
    ws.move("src/lib/money.ts", "src/lib/currency.ts")
    ws.commit("rename")
    cold = check(ws.root, cache, path, SYMBOL)
    assert cold[0].reason.startswith("`src/lib/money.ts` no longer exists; renamed to "
                                     "`src/lib/currency.ts` in ")
    assert check(ws.root, cache, path, SYMBOL) == cold
    (ws.root / "src/lib/currency.ts").unlink()  # the tree moved on: read again, not cached
    assert check(ws.root, cache, path)[0].reason.endswith("(since moved or deleted too)")


@pytest.mark.parametrize("content", [b"\x00\xffnot json", b"[1, 2]", b'{"version": 1}',
                                     b'{"version": 1, "root": "/elsewhere", "valid": {}}',
                                     b'{"version": 1, "root": "ROOT", "valid": {"x": {"a": [1]},'
                                     b' "y": []}, "head": 3, "history": {"k": [1, 2]}}'])
def test_a_corrupt_or_foreign_cache_is_rebuilt_silently(ws: GitWorkspace, tmp_path: Path,
                                                        content: bytes) -> None:
    cache = tmp_path / "check-cache.json"
    cache.write_bytes(content.replace(b"ROOT", str(ws.root).encode()))
    assert check(ws.root, cache, SYMBOL, SCRIPT) == check(ws.root, None, SYMBOL, SCRIPT)
    data = json.loads(cache.read_bytes())
    assert data["version"] == 1 and data["root"] == str(ws.root)
    assert len(data["valid"]) == 2


def test_a_moved_symbol_is_found_next_door_without_listing_the_tree(
        ws: GitWorkspace, monkeypatch: pytest.MonkeyPatch) -> None:
    ws.move("src/lib/money.ts", "src/lib/currency.ts")
    ws.commit("rename")
    for n in range(30):
        ws.write(f"src/other/file{n}.ts", f"export const n{n} = {n}\n")
    listed: list[int] = []
    real = WorkTree.files
    monkeypatch.setattr(WorkTree, "files", lambda self: listed.append(1) or real(self))
    assert check(ws.root, None, SYMBOL)[0].status == "valid"
    assert listed == []
    gone = Anchor(kind="symbol", value="n7", where="src/lib/money.ts")  # elsewhere: the walk
    assert check(ws.root, None, gone)[0].status == "valid"
    assert listed


def test_reverie_check_keeps_its_cache_in_the_data_dir(ws: GitWorkspace) -> None:
    memory = ProjectPaths(Settings(), ws.root).memory_dir
    memory.mkdir(parents=True)
    (memory / "money.md").write_text(
        "---\nname: Money\ndescription: money\ntype: project\n---\n\n"
        "- `applyDiscount()` lives in `src/lib/money.ts`.\n- **Build:** `pnpm build`\n")
    (memory / "MEMORY.md").write_text("# Memory\n\n- [Money](money.md) - money\n")
    before = sorted(p for p in ws.root.rglob("*") if ".git" not in p.parts)
    runs = [subprocess.run([sys.executable, "-m", "reverie", "check", "--workspace",
                            str(ws.root), "--json"], capture_output=True, text=True,
                           env=dict(os.environ), timeout=60) for _ in range(2)]
    assert [r.returncode for r in runs] == [0, 0], runs[0].stderr
    assert json.loads(runs[0].stdout) == json.loads(runs[1].stdout)
    assert json.loads(runs[1].stdout)["valid"] == 2
    assert ProjectPaths(Settings(), ws.root).check_cache.is_file()
    assert sorted(p for p in ws.root.rglob("*") if ".git" not in p.parts) == before


def write_topic(memory: Path, extra: str, anchor: str) -> None:
    memory.mkdir(parents=True, exist_ok=True)
    (memory / "money.md").write_text(
        f"---\nname: Money\ndescription: money\ntype: project\n{extra}anchors:\n"
        f"  k1:\n    uses:\n    - {anchor}\n---\n\n- Discounts go through the money helpers.\n")


@pytest.mark.parametrize("extra", ["", "reviewed: 2026-11-02\n"])  # a YAML date: not JSON
def test_a_topic_file_edited_is_parsed_again(ws: GitWorkspace, tmp_path: Path,
                                             extra: str) -> None:
    """Front matter is kept parsed by the file's content hash; an edit is a new hash."""
    from datetime import date

    from reverie.anchors.bullets import read_bullets
    from reverie.anchors.memory import check_memory

    memory, cache = tmp_path / "memory", tmp_path / "data" / "check-cache.json"
    write_topic(memory, extra, "symbol: applyDiscount\n      in: src/lib/money.ts")
    key = read_bullets(["- Discounts go through the money helpers."])[0].key
    text = (memory / "money.md").read_text().replace("k1", key)
    (memory / "money.md").write_text(text)
    today = date(2026, 12, 1)
    first = check_memory(memory, ws.root, today, cache=cache)
    assert [f.status for f in first.facts] == ["valid"]
    assert check_memory(memory, ws.root, today, cache=cache).as_json() == first.as_json()
    kept = json.loads(cache.read_bytes())["topics"]
    assert len(kept) == (0 if extra else 1)  # a date would not come back the same from JSON
    (memory / "money.md").write_text(text.replace("applyDiscount", "applyRebate__"))
    edited = check_memory(memory, ws.root, today, cache=cache)
    assert [f.status for f in edited.facts] == ["unverifiable"]
    assert edited.as_json() == check_memory(memory, ws.root, today).as_json()


def test_prompt_time_recall_goes_through_the_cache_and_keeps_other_topics(
        ws: GitWorkspace, tmp_path: Path) -> None:
    """``stale_lines`` (prompt-time recall) reads one topic: it uses and updates the cache
    without dropping what a whole-memory check kept for the other topics."""
    from datetime import date

    from reverie.anchors.delivery import stale_lines
    from reverie.anchors.memory import check_memory

    memory, cache = tmp_path / "memory", tmp_path / "check-cache.json"
    memory.mkdir()
    for name, fact in (("money.md", "`applyDiscount()` lives in `src/lib/money.ts`."),
                       ("build.md", "**Build:** `pnpm build`")):
        (memory / name).write_text(f"---\nname: {name}\ndescription: x\ntype: project\n---\n\n"
                                   f"- {fact}\n")
    today = date(2026, 12, 1)
    assert [f.status for f in check_memory(memory, ws.root, today, cache=cache).facts] == \
        ["valid", "valid"]
    assert len(json.loads(cache.read_bytes())["topics"]) == 2
    assert stale_lines(memory, ws.root, today, {"money.md": {6}}, cache) == set()
    ws.edit("src/lib/money.ts", "applyDiscount", "applyRebate")
    ws.commit("rebate")  # (a fact with no recorded anchors: history shows the symbol left)
    assert stale_lines(memory, ws.root, today, {"money.md": {6}}, cache) == {("money.md", 6)}
    assert len(json.loads(cache.read_bytes())["topics"]) == 2


def test_an_entry_naming_a_file_outside_the_workspace_is_dropped(ws: GitWorkspace,
                                                                 tmp_path: Path) -> None:
    """Only the workspace's own files can stand for an anchor (a cache edited by hand)."""
    outside = tmp_path / "elsewhere.ts"
    outside.write_text("export function applyRebate() {}\n")
    info = outside.stat()
    sig = [info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns, ""]
    gone = Anchor(kind="symbol", value="applyRebate", where="src/lib/money.ts")
    cache = tmp_path / "check-cache.json"
    cache.write_text(json.dumps({"version": 1, "root": str(ws.root), "valid": {
        cache_module.anchor_key(gone): {"../elsewhere.ts": sig}}, "head": "", "history": {}}))
    assert check(ws.root, cache, gone)[0].status != "valid"
    assert check(ws.root, None, gone)[0].status != "valid"
