"""Stale memory in the editor, over the real server: diagnostics on the fact's line and on the
index entry, code actions, ``reverie.server.checkMemory`` (the CLI's JSON), retire now."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from dulwich import porcelain
from lsprotocol import types

pytestmark = pytest.mark.e2e

AUTHOR = b"Maya <maya@example.com>"
TOPIC = """---
name: Code
description: where things are
type: project
---

- **Build:** `pnpm build` (vite build). _(session abcdef12, 2026-11-02)_
- Money helpers live in src/lib/money.ts.
"""
INDEX = "# Memory\n\n- [Code](code.md) - build; money helpers\n"


def git_workspace(root: Path) -> None:
    repo = porcelain.init(str(root))
    (root / "package.json").write_text(json.dumps({"scripts": {"build": "vite build"}}))
    (root / "src/lib").mkdir(parents=True)
    (root / "src/lib/money.ts").write_text("export const cents = 1\n")
    porcelain.add(repo, paths=[str(root / "package.json"), str(root / "src/lib/money.ts")])
    porcelain.commit(repo, message=b"init", author=AUTHOR, committer=AUTHOR)
    porcelain.mv(repo, str(root / "src/lib/money.ts"), str(root / "src/lib/currency.ts"))
    porcelain.commit(repo, message=b"rename", author=AUTHOR, committer=AUTHOR)
    repo.close()


def command_of(action) -> dict:
    """The command a code action runs. pytest-lsp's client structures the reply's
    ``(Command | CodeAction)[]`` as a ``Command`` whose ``command`` is the CodeAction's command
    object printed as a string; a real editor reads it as a CodeAction."""
    if isinstance(action, types.CodeAction):
        return {"command": action.command.command, "arguments": action.command.arguments}
    return ast.literal_eval(action.command)


def open_doc(client, path: Path) -> None:
    client.text_document_did_open(types.DidOpenTextDocumentParams(
        text_document=types.TextDocumentItem(uri=path.as_uri(), language_id="markdown",
                                             version=1, text=path.read_text())))


async def test_stale_fact_diagnostics_actions_and_check_command(start_server, workspace):
    git_workspace(workspace)
    s = await start_server(init_options={"watchDebounceMs": 50})
    topic = s.write_memory("code.md", TOPIC)
    index = s.write_memory("MEMORY.md", INDEX)
    open_doc(s.client, topic)

    def stale_on(path: Path):
        found = [d for d in s.client.diagnostics.get(path.as_uri(), [])
                 if d.source == "reverie.staleness"]
        return found or None

    found = await s.wait_for(lambda: stale_on(topic), what="stale-fact diagnostics")
    assert len(found) == 1 and found[0].range.start.line == 7
    assert found[0].code == "stale-fact" and found[0].severity == types.DiagnosticSeverity.Warning
    assert "renamed to `src/lib/currency.ts` in " in found[0].message
    on_index = await s.wait_for(lambda: stale_on(index), what="index diagnostics")
    assert on_index[0].range.start.line == 2 and "1 stale fact in code.md" in on_index[0].message

    actions = await s.client.text_document_code_action_async(types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=topic.as_uri()),
        range=found[0].range, context=types.CodeActionContext(diagnostics=found)))
    titles = [a.title for a in actions]
    assert titles[0].startswith("Retire this fact now") and titles[1].startswith("Keep this")
    assert "Open src/lib/money.ts" in titles

    report = await s.command("reverie.server.checkMemory")
    cli = subprocess.run([sys.executable, "-m", "reverie", "check", "--workspace",
                          str(workspace), "--json"], capture_output=True, text=True,
                         env={**os.environ, **s.env}, timeout=60)
    assert report == json.loads(cli.stdout)
    assert (report["stale"], report["valid"], report["unverifiable"]) == (1, 1, 0)

    retire = command_of(actions[0])
    assert retire["command"] == "reverie.server.retireFact"
    done = await s.command(retire["command"], *retire["arguments"])
    assert done["runId"] and str(topic) in done["filesTouched"]
    text = topic.read_text()
    assert text.index("## Retired") < text.index("Money helpers live in src/lib/money.ts.")
    await s.wait_for(lambda: not stale_on(topic), what="diagnostics cleared")
    after = await s.command("reverie.server.checkMemory")
    assert after["stale"] == 0
