"""Anchor extraction is precise: only what the tree (or its history) confirms is an anchor."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "eval"))

from staleness_set import GitWorkspace

from reverie.anchors.extract import Extractor
from reverie.anchors.model import Anchor
from reverie.anchors.tree import WorkTree


@pytest.fixture
def ws(tmp_path: Path) -> GitWorkspace:
    ws = GitWorkspace(tmp_path / "repo")
    ws.write("package.json", json.dumps({
        "scripts": {"build": "vite build", "test": "vitest run"},
        "dependencies": {"@tanstack/react-query": "5", "react": "18"},
        "devDependencies": {"vite": "5"}}))
    ws.write("pnpm-lock.yaml", "lockfileVersion: '9.0'\n")
    ws.write("Makefile", "test:\n\tgo test ./...\n")
    ws.write("src/lib/money.ts", "export function applyDiscount(c: number) { return c }\n")
    ws.write("src/main.tsx", "import { QueryClientProvider } from '@tanstack/react-query'\n"
                             "// TanStack is nice\n")
    ws.write("vite.config.ts", "export default { server: { port: 5173 } }\n")
    ws.write("docs/install.md", "# Install\n")
    ws.commit("init")
    return ws


def anchors(ws: GitWorkspace, text: str) -> set[tuple[str, str]]:
    return {(a.kind, a.value) for a in Extractor(WorkTree(ws.root)).extract(text)}


def test_paths_symbols_scripts_deps_and_config_are_found(ws: GitWorkspace) -> None:
    assert anchors(ws, "Money helpers live in src/lib/money.ts.") == {
        ("path", "src/lib/money.ts")}
    assert anchors(ws, "`applyDiscount()` rounds to whole cents.") == {
        ("symbol", "applyDiscount")}
    assert ("script", "build") in anchors(ws, "**Build:** `pnpm build`")
    assert ("target", "test") in anchors(ws, "`make test` runs the suite")
    assert ("dep", "@tanstack/react-query") in anchors(ws, "Data uses @tanstack/react-query.")
    assert ("config", "server.port=5173") in anchors(
        ws, "vite.config.ts sets `server.port: 5173`.")
    assert ("path", "docs/install.md") in anchors(ws, "The page is install.md.")


def test_a_word_that_merely_looks_like_a_path_is_not_an_anchor(ws: GitWorkspace) -> None:
    for text in ("Logging uses log/slog from the standard library.",
                 "Deploys go to Fly.io; see https://example.com/a/b.html and e.g. Node.js.",
                 "Rounds with Math.round and 3.12 and 1/2 of the work.",
                 "Read and/or write the docs.",
                 "Use sentence case for headings."):
        assert anchors(ws, text) == set(), text


def test_what_the_fact_says_is_no_longer_used_is_not_an_anchor(ws: GitWorkspace) -> None:
    ws.write("package-lock.json", "{}\n")
    ws.write("src/lib/old.ts", "export const useCartStore = 1\n")
    ws.commit("more")
    found = anchors(ws, "Use pnpm, never npm or yarn; npm creates an unwanted package-lock.json.")
    assert found == {("path", "pnpm-lock.yaml")}
    assert anchors(ws, "`useCartStore` was renamed to `applyDiscount`.") == {
        ("symbol", "applyDiscount")}
    assert anchors(ws, 'TS2307 "Cannot find module src/lib/money.ts" in the build') == set()
    assert anchors(ws, "Use X (formerly: code in src/lib/old.ts; replaced on 2026-01-01)") == set()


def test_bare_pascal_case_counts_only_where_defined_or_imported(ws: GitWorkspace) -> None:
    assert anchors(ws, "Wrap the app in QueryClientProvider.") == {
        ("symbol", "QueryClientProvider")}
    assert anchors(ws, "We like TanStack a lot.") == set()  # only in a comment


def test_a_fact_written_after_the_change_still_gets_its_anchor(ws: GitWorkspace) -> None:
    ws.move("src/lib/money.ts", "src/lib/currency.ts")
    ws.edit_json("package.json", lambda d: d["scripts"].pop("build"))
    ws.commit("rename and drop build")
    assert anchors(ws, "Money helpers live in src/lib/money.ts.") == {
        ("path", "src/lib/money.ts")}
    assert ("script", "build") in anchors(ws, "**Build:** `pnpm build`")
    # never in this branch's history: not an anchor (nothing to establish)
    assert anchors(ws, "Money helpers live in src/lib/cash.ts.") == set()


def test_front_matter_form_round_trips() -> None:
    anchor = Anchor(kind="script", value="build", where="package.json")
    assert Anchor.from_yaml(anchor.to_yaml()) == anchor
    for junk in ("x", {"bogus": 1}, {"path": ["a"]}, None, {"path": "a", "script": "b"}):
        assert Anchor.from_yaml(junk) is None


def test_no_workspace_means_no_anchors(tmp_path: Path) -> None:
    tree = WorkTree(tmp_path / "gone")
    assert Extractor(tree).extract("Money helpers live in src/lib/money.ts.") == []


def test_a_hostile_fact_is_read_in_bounded_time(ws: GitWorkspace) -> None:
    import time

    text = " ".join(f"src/x{n}/file{n}.ts `sym{n}Name()`" for n in range(20_000))
    started = time.process_time()
    found = Extractor(WorkTree(ws.root)).extract(text)
    assert time.process_time() - started < 5
    assert found == []
