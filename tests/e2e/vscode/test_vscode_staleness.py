"""A stale memory fact in a real VS Code (code-server + chromium), issue 28: the workspace is a
git repository whose helper file was renamed after the memory was written. The fact shows as a
warning on its line of the topic file (and on its MEMORY.md entry) in the Problems panel, the
Memory view counts it, and its quick fix "Retire this fact now" moves it, as a recorded run,
under the topic's ``## Retired`` heading with the reason the check established.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from e2e.vscode import workbench
from e2e.vscode.conftest import CodeServer, Tools, launched_code_server

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "eval"))

from staleness_set import GitWorkspace

pytestmark = [pytest.mark.vscode, pytest.mark.e2e, pytest.mark.xdist_group("real-editors")]

STALE = "Discount maths live in `src/lib/money.ts` (`applyDiscount`)."
VALID = "Build with `npm run build` (vite build)."
TOPIC = f"""---
name: Pricing
description: where the money code lives
type: project
---

# Pricing

- {VALID} _(session 5e55104a, 2026-11-02)_
- {STALE} _(session 5e55104a, 2026-11-02)_
- Use sentence case in discount banners. _(session 5e55104a, 2026-11-02)_
"""
INDEX = ("# Memory\n\n- [Pricing](pricing.md) - discount maths live in `src/lib/money.ts`; "
         "build with `npm run build`\n")


@pytest.fixture(scope="module")
def code_server(tools: Tools, editors: ModuleType,
                tmp_path_factory: pytest.TempPathFactory) -> Iterator[CodeServer]:
    """The agent workspace made a git repository: the memory names ``src/lib/money.ts``, which
    a later commit renamed to ``src/lib/currency.ts``."""
    from reverie.config import ProjectPaths, Settings

    ws = editors.make_agent_workspace(tmp_path_factory.mktemp("vscode-stale"))
    repo = GitWorkspace(ws.workspace)
    repo.write("README.md", (ws.workspace / "README.md").read_text())
    repo.write("package.json", json.dumps({"scripts": {"build": "vite build"}}, indent=2))
    repo.write("src/lib/money.ts", "export function applyDiscount(c: number) { return c }\n")
    repo.commit("init")
    repo.move("src/lib/money.ts", "src/lib/currency.ts")
    repo.commit("money.ts is currency.ts now")
    settings = Settings(data_dir=ws.data_dir, agent_home=ws.agent_home)
    memory = ProjectPaths(settings, ws.workspace).memory_dir
    memory.mkdir(parents=True)
    (memory / "pricing.md").write_text(TOPIC)
    (memory / "MEMORY.md").write_text(INDEX)
    with launched_code_server(tools, editors, ws) as server:
        yield server


def _problems(page: Any) -> Any:
    from playwright.sync_api import expect

    problems = page.locator(".markers-panel")
    for _ in range(3):
        workbench.run_command(page, "View: Focus Problems")
        try:
            expect(problems).to_be_visible(timeout=3_000)
            break
        except AssertionError:
            continue
    return problems


def test_a_stale_fact_is_a_warning_with_a_quick_fix_that_retires_it(
        page: Any, code_server: CodeServer, artifacts: Path) -> None:
    from playwright.sync_api import expect

    memory = workbench.memory_dir_of(code_server)
    topic = memory / "pricing.md"
    problems = _problems(page)
    row = problems.locator(".monaco-list-row", has_text="Stale memory:")
    try:
        expect(row.first).to_be_visible(timeout=90_000)
    except AssertionError:
        workbench.shot(page, artifacts, "18-stale-fact-missing")
        raise AssertionError(
            "no stale-fact diagnostic" + workbench.failure_context(code_server)) from None
    text = row.first.inner_text()
    assert "renamed to `src/lib/currency.ts`" in text, text
    # the index entry of the topic carries one too
    expect(problems.locator(".monaco-list-row", has_text="1 stale fact in pricing.md").first
           ).to_be_visible(timeout=30_000)

    # the Memory view counts it on the topic file
    workbench.run_command(page, "Reverie: Focus on Memory View")
    view = page.locator(".pane", has=page.locator(".pane-header", has_text="Memory"))
    expect(view.locator(".monaco-list-row", has_text="pricing.md").filter(
        has_text="1 stale").first).to_be_visible(timeout=30_000)
    workbench.shot(page, artifacts, "18b-stale-memory-view")

    # open the fact from the Problems panel, then the quick fix on its line
    problems = _problems(page)
    problems.locator(".monaco-list-row", has_text="Stale memory:").first.click()
    expect(page.locator(".tabs-container .tab.active", has_text="pricing.md").first
           ).to_be_visible(timeout=30_000)
    line = TOPIC.splitlines().index(f"- {STALE} _(session 5e55104a, 2026-11-02)_") + 1
    page.locator(".editor-instance .monaco-editor").first.click()
    workbench.run_command(page, "Go to Line/Column...")
    page.keyboard.type(f"{line}:5")
    page.keyboard.press("Enter")
    page.wait_for_timeout(500)
    menu = page.locator(".action-widget, .context-view")
    retire = menu.filter(has_text="Retire this fact now")
    try:
        workbench.code_actions(page, retire.first)
        for title in ("Keep this fact and re-verify it", "Open src/lib/money.ts"):
            expect(menu.filter(has_text=title).first).to_be_visible()
    finally:
        workbench.shot(page, artifacts, "18-stale-fact-quick-fix")
    # the preferred fix is focused: Enter applies it, as a person would
    expect(page.locator(".action-widget .monaco-list-row.focused",
                        has_text="Retire this fact now").first).to_be_visible()
    page.keyboard.press("Enter")

    deadline = time.monotonic() + 60
    while "(retired on" not in topic.read_text() and time.monotonic() < deadline:
        time.sleep(0.5)
    after = topic.read_text()
    live, _, retired = after.partition("## Retired")
    assert STALE not in live and VALID in live, after
    assert STALE in retired, after
    assert "renamed to `src/lib/currency.ts`" in retired, after
    # the index no longer carries it, and the warnings go
    assert "money.ts" not in (memory / "MEMORY.md").read_text()
    problems = _problems(page)
    expect(problems.locator(".monaco-list-row", has_text="Stale memory:")).to_have_count(
        0, timeout=30_000)
    # a recorded run, and History lists it at once as a "retire" (not as a dream)
    from reverie.memory.history import MemoryHistory

    runs = MemoryHistory(memory).runs()
    assert runs and runs[0].source == "curate", runs
    assert runs[0].summary == "retire a stale fact of pricing.md", runs
    history = page.locator(".pane", has=page.locator(".pane-header", has_text="History"))
    expect(history.locator(".monaco-list-row", has_text="retire ·").first).to_be_visible(
        timeout=30_000)
    page.locator(".tabs-container .tab.active", has_text="pricing.md").first.click()
    page.wait_for_timeout(800)
    workbench.shot(page, artifacts, "18c-stale-fact-retired")
