"""``reverie check`` over a real process: the JSON contract, plain output, exit 0."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "eval"))

from staleness_set import GitWorkspace

from reverie.config import ProjectPaths, Settings

TOPIC = """---
name: Scripts
description: build and money
type: project
---

- **Build:** `pnpm build` (vite build). _(session abcdef12, 2026-11-02)_
- Money helpers live in `src/lib/money.ts`.
- Use sentence case for headings.
"""


def reverie(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "reverie", *args], capture_output=True,
                          text=True, env=dict(os.environ), timeout=60)


def test_check_reports_each_fact_with_status_reason_anchors_and_date(tmp_path: Path) -> None:
    ws = GitWorkspace(tmp_path / "repo")
    ws.write("package.json", json.dumps({"scripts": {"build": "vite build"}}))
    ws.write("src/lib/money.ts", "export const cents = 1\n")
    ws.commit("init")
    ws.move("src/lib/money.ts", "src/lib/currency.ts")
    ws.commit("rename")
    memory = ProjectPaths(Settings(), ws.root).memory_dir
    memory.mkdir(parents=True)
    (memory / "scripts.md").write_text(TOPIC)
    (memory / "MEMORY.md").write_text("# Memory\n\n- [Scripts](scripts.md) - build\n")
    done = reverie("check", "--workspace", str(ws.root), "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert set(report) == {"facts", "stale", "valid", "unverifiable"}
    assert (report["stale"], report["valid"], report["unverifiable"]) == (1, 1, 1)
    for fact in report["facts"]:
        assert set(fact) == {"topic", "text", "status", "reason", "anchors", "verified"}
        assert fact["topic"] == "scripts.md"
    by_status = {f["status"]: f for f in report["facts"]}
    stale = by_status["stale"]
    assert stale["text"] == "Money helpers live in `src/lib/money.ts`."
    assert stale["reason"].startswith("`src/lib/money.ts` no longer exists; renamed to "
                                      "`src/lib/currency.ts` in ")
    assert stale["anchors"][0]["kind"] == "path" and stale["verified"] is None
    valid = by_status["valid"]
    assert valid["verified"] and valid["anchors"][0] == {
        "kind": "script", "value": "build", "where": "package.json", "status": "valid",
        "reason": ""}
    assert by_status["unverifiable"]["anchors"] == []
    plain = reverie("check", "--workspace", str(ws.root))
    assert plain.returncode == 0
    assert "1 valid, 1 stale, 1 unverifiable" in plain.stdout
    assert "STALE" in plain.stdout and "renamed to `src/lib/currency.ts`" in plain.stdout


def test_check_with_no_memory_is_an_empty_report(tmp_path: Path) -> None:
    done = reverie("check", "--workspace", str(tmp_path), "--json")
    assert done.returncode == 0
    assert json.loads(done.stdout) == {"facts": [], "stale": 0, "valid": 0, "unverifiable": 0}
