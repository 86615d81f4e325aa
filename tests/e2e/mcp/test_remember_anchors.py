"""``remember`` over MCP records what the fact depends on in the same run (issue 28): the
anchors land in the topic's front matter, the text the agent reads stays the person's words,
and once the code moves on ``reverie check`` reports the fact stale with the commit."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import frontmatter
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "eval"))

from staleness_set import GitWorkspace

from reverie.config import ProjectPaths, Settings
from reverie.memory.history import MemoryHistory


def _workspace(tmp_path: Path) -> GitWorkspace:
    ws = GitWorkspace((tmp_path / "shop").resolve())
    ws.write("package.json", json.dumps({"scripts": {"build": "vite build"},
                                         "dependencies": {"zustand": "4"}}))
    ws.write("src/lib/money.ts", "export function applyDiscount(c: number) { return c }\n")
    ws.commit("init")
    return ws


async def _remember(workspace: Path, text: str) -> dict[str, object]:
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "reverie", "mcp", "--workspace", str(workspace)],
        env=dict(os.environ))
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        result = await session.call_tool("remember", {"text": text, "topic": "Pricing"})
        assert not result.is_error, result.content
        return dict(json.loads(result.content[0].text))  # type: ignore[union-attr]


async def test_remember_records_anchors_and_check_finds_the_fact_stale(tmp_path: Path) -> None:
    ws = _workspace(tmp_path)
    written = await _remember(ws.root, "Money helpers (`applyDiscount`) live in "
                                       "`src/lib/money.ts`; ship with `pnpm build`.")
    memory = ProjectPaths(Settings(), ws.root).memory_dir
    post = frontmatter.loads((memory / "pricing.md").read_text("utf-8"))
    entries = post.metadata["anchors"]
    assert len(entries) == 1, entries
    uses = next(iter(entries.values()))["uses"]
    assert {"path": "src/lib/money.ts"} in uses
    assert {"script": "build", "in": "package.json"} in uses
    assert {"symbol": "applyDiscount", "in": "src/lib/money.ts"} in uses
    # the anchors are metadata: the fact line is what the person said, nothing more
    assert "anchors" not in post.content and "package.json" not in post.content
    # one recorded run: the fact and its anchors together (undo takes both)
    runs = MemoryHistory(memory).runs()
    assert [r.run_id for r in runs] == [written["run_id"]]

    ws.move("src/lib/money.ts", "src/lib/currency.ts")
    ws.commit("rename money to currency")
    done = subprocess.run([sys.executable, "-m", "reverie", "check", "--workspace",
                           str(ws.root), "--json"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    [fact] = report["facts"]
    assert fact["text"] == ("Money helpers (`applyDiscount`) live in `src/lib/money.ts`; ship "
                            "with `pnpm build`.")
    assert fact["status"] == "stale"
    assert "`src/lib/money.ts` no longer exists; renamed to `src/lib/currency.ts` in " \
        in fact["reason"]
    kinds = {(a["kind"], a["value"]): a["status"] for a in fact["anchors"]}
    assert kinds[("script", "build")] == "valid"
    assert kinds[("path", "src/lib/money.ts")] == "stale"


async def test_remember_without_a_workspace_tree_records_nothing(tmp_path: Path) -> None:
    """Not a git repository and nothing the fact names exists: the fact is kept, with no
    anchor recorded, and the check says it cannot be verified (never stale)."""
    workspace = (tmp_path / "plain").resolve()
    workspace.mkdir()
    await _remember(workspace, "Use sentence case for headings in `docs/`.")
    memory = ProjectPaths(Settings(), workspace).memory_dir
    post = frontmatter.loads((memory / "pricing.md").read_text("utf-8"))
    assert list(post.metadata["anchors"].values()) == [{"uses": []}]
    done = subprocess.run([sys.executable, "-m", "reverie", "check", "--workspace",
                           str(workspace), "--json"], capture_output=True, text=True, timeout=60)
    report = json.loads(done.stdout)
    assert (report["stale"], report["unverifiable"]) == (0, 1), report
