"""The user in control of one memory, in a real VS Code (code-server): counts that match the
Problems panel, a code action that edits one entry, the Memory view's Move, an agent's proposal
over MCP that lands only when the person accepts it, what each agent loads with token sizes,
the cost governor (pre-run estimate, a skip with its reason and buttons, spend in the status bar)
and the guided provider setup ending in a model test. One workbench over a memory seeded before
the editor opens; the tests run in file order; screenshots go to tests/artifacts/vscode/.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from e2e.vscode import workbench
from e2e.vscode.conftest import Tools, launched_code_server
from reverie.config import ProjectPaths, Settings
from reverie.memory.history import MemoryHistory
from support.fake_llm import FakeLLMServer, Step

pytestmark = [pytest.mark.vscode, pytest.mark.e2e, pytest.mark.xdist_group("real-editors")]

shot = workbench.shot
run_command = workbench.run_command
memory_dir_of = workbench.memory_dir_of
#: a run id as Reverie makes them: never shown to a person
RUN_ID = re.compile(r"\d{8}T\d{6}-[0-9a-f]{6}")

LONG = ("- [Release](release.md) - how a release is cut, tagged, built, signed, uploaded to the "
        "registry, announced on the mailing list and then verified on a fresh machine by hand")
INDEX = ("# Memory\n\n"
         "- [Build and test](build-and-test.md) - how to build and run the tests\n"
         "- [Conventions](conventions.md) - code style the team agreed on\n"
         f"{LONG}\n"
         "- [Deploy](deploi.md) - how staging is deployed\n"
         "- [Conventions](conventions.md) - code style the team agreed on\n")
BUILD = ("---\nname: Build and test\ndescription: how to build and run the tests\n"
         "type: project\n---\n\n# Build and test\n\n"
         "- Run the tests with `mix test --trace`.\n"
         "- Run `mix format` before every commit.\n"
         "- The CI image is elixir:1.16.\n")
CONVENTIONS = ("---\nname: Conventions\ndescription: code style the team agreed on\n"
               "type: project\n---\n\n# Conventions\n\n- Modules are named after their folder.\n")
RELEASE = ("---\nname: Release\ndescription: how a release is cut\ntype: project\n---\n\n"
           "# Release\n\n- Tag, then push the tag.\n")
DEPLOY = ("---\nname: Deploy\ndescription: how staging is deployed\ntype: project\n---\n\n"
          "# Deploy\n\n- scripts/deploy.sh staging\n")


@pytest.fixture(scope="module")
def code_server(
    tools: Tools, editors: ModuleType, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Any]:
    """code-server over a folder whose memory exists already (with three problems in its
    index), so each test starts from what a person curates."""
    ws = editors.make_agent_workspace(tmp_path_factory.mktemp("vscode-curation"))
    memory = ProjectPaths(
        Settings(data_dir=ws.data_dir, agent_home=ws.agent_home), ws.workspace
    ).memory_dir
    memory.mkdir(parents=True)
    for name, text in (("MEMORY.md", INDEX), ("build-and-test.md", BUILD),
                       ("conventions.md", CONVENTIONS), ("release.md", RELEASE),
                       ("deploy.md", DEPLOY)):
        (memory / name).write_text(text)
    with launched_code_server(tools, editors, ws) as server:
        yield server


def reverie(code_server: Any, *args: str,
            stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    """The CLI as the person (or an agent's hook) runs it, on the editor's data dir."""
    env = {**os.environ, **code_server.workspace.env()}
    return subprocess.run([sys.executable, "-m", "reverie", *args], input=stdin, env=env,
                          capture_output=True, text=True, timeout=120, check=False)


def _idle(page: Any) -> None:
    from playwright.sync_api import expect

    expect(page.locator(".statusbar-item .codicon-sparkle")).to_be_visible(timeout=90_000)


def _machine_settings(code_server: Any) -> Path:
    path = code_server.user_data / "Machine" / "settings.json"
    path.parent.mkdir(exist_ok=True)
    return path


def _update_json(path: Path, **values: Any) -> str:
    original = path.read_text() if path.exists() else "{}"
    path.write_text(json.dumps({**json.loads(original), **values}, indent=2))
    return original


def _memory_view(page: Any) -> Any:
    run_command(page, "Reverie: Focus on Memory View")
    return page.locator(".pane", has=page.locator(".pane-header", has_text="Memory"))


def _expand(row: Any) -> None:
    if row.get_attribute("aria-expanded") != "true":
        row.locator(".monaco-tl-twistie").click()


def _toasts(page: Any) -> str:
    return " ".join(t.inner_text() for t in page.locator(".notification-toast").all())


def _history_row(page: Any, label: str) -> Any:
    run_command(page, "Reverie: Focus on History View")
    history = page.locator(".pane", has=page.locator(".pane-header", has_text="History"))
    return history.locator(".monaco-list-row", has_text=label).first


def test_the_memory_view_counts_what_the_problems_panel_lists(
    page: Any, code_server: Any, artifacts: Path
) -> None:
    from playwright.sync_api import expect

    _idle(page)
    run_command(page, "Notifications: Clear All Notifications")
    view = _memory_view(page)
    index = view.locator(".monaco-list-row[aria-level='1']", has_text="MEMORY.md").first
    expect(index).to_be_visible(timeout=30_000)
    # an over-long entry, a broken link and a duplicate: three, not four (the dream-gate hint
    # is a CodeLens, not a problem)
    expect(index).to_contain_text("3 problems", timeout=30_000)
    run_command(page, "Reverie: Open Memory Index")
    problems = page.locator(".markers-panel")
    for _ in range(3):
        run_command(page, "View: Focus Problems")
        try:
            expect(problems).to_be_visible(timeout=3_000)
            break
        except AssertionError:
            continue
    file_row = problems.locator(".monaco-list-row", has_text="MEMORY.md").first
    expect(file_row).to_be_visible(timeout=30_000)
    expect(file_row.locator(".monaco-count-badge")).to_have_text("3", timeout=30_000)
    shot(page, artifacts, "06b-counts-match")
    for line in ("entry is", "deploi.md", "duplicate"):
        expect(problems.locator(".monaco-list-row", has_text=re.compile(line, re.I)).first
               ).to_be_visible()
    for name in ("build-and-test.md", "conventions.md"):
        row = view.locator(".monaco-list-row[aria-level='1']", has_text=name).first
        assert "problem" not in row.inner_text(), row.inner_text()

    # the over-long entry's quick fix: shortened, its full text kept in its topic file
    memory = memory_dir_of(code_server)
    assert page.locator(".tabs-container .tab.dirty").count() == 0
    # the line as the file reads now (the editor shows the file as it is on disk)
    line = (memory / "MEMORY.md").read_text().splitlines().index(LONG) + 1
    page.locator(".editor-instance .monaco-editor").first.click()
    run_command(page, "Go to Line/Column...")
    page.keyboard.type(f"{line}:3")
    page.keyboard.press("Enter")
    menu = page.locator(".action-widget, .context-view")
    shorten = menu.locator(".monaco-list-row, .action-item",
                           has_text="Shorten the entry to 150 characters").first
    try:
        workbench.code_actions(page, shorten)
        expect(menu.locator(".monaco-list-row, .action-item",
                            has_text="Open the topic release.md").first).to_be_visible()
    finally:
        shot(page, artifacts, "15h-quick-fix-shorten")
    _choose_focused(page, menu, "Shorten the entry")
    page.wait_for_timeout(500)
    run_command(page, "File: Save All Files")
    deadline = time.monotonic() + 20
    while len((memory / "MEMORY.md").read_text().splitlines()[line - 1]) > 150:
        assert time.monotonic() < deadline, (memory / "MEMORY.md").read_text()
        time.sleep(0.3)
    assert "> From the index: [Release](release.md)" in (memory / "release.md").read_text()
    expect(index).to_contain_text("2 problems", timeout=30_000)
    expect(file_row.locator(".monaco-count-badge")).to_have_text("2", timeout=30_000)
    run_command(page, "View: Close All Editors")


def _choose_focused(page: Any, menu: Any, title: str) -> None:
    """Runs the action widget's row ``title`` by keyboard (the widget's pointer block takes
    mouse clicks while it animates in)."""
    for _ in range(12):
        focused = menu.locator(".monaco-list-row.focused")
        if focused.count() and title in focused.first.inner_text():
            page.keyboard.press("Enter")
            return
        page.keyboard.press("ArrowDown")
        page.wait_for_timeout(150)
    raise AssertionError(f"{title!r} never got the focus: {menu.inner_text()}")


def test_a_code_action_on_the_line_edits_one_entry_as_a_recorded_run(
    page: Any, code_server: Any, artifacts: Path
) -> None:
    from playwright.sync_api import expect

    memory = memory_dir_of(code_server)
    view = _memory_view(page)
    topic = view.locator(".monaco-list-row[aria-level='1']", has_text="build-and-test.md").first
    topic.click()  # opens the file
    expect(page.locator(".tabs-container .tab", has_text="build-and-test.md").first
           ).to_be_visible(timeout=20_000)
    lines = BUILD.splitlines()
    line = lines.index("- Run the tests with `mix test --trace`.") + 1
    page.locator(".editor-instance .monaco-editor").first.click()
    run_command(page, "Go to Line/Column...")
    page.keyboard.type(f"{line}:5")
    page.keyboard.press("Enter")
    menu = page.locator(".action-widget, .context-view")
    edit = menu.locator(".monaco-list-row, .action-item", has_text="Reverie: Edit this entry").first
    try:
        workbench.code_actions(page, edit)
        for other in ("Forget this entry", "Pin this entry", "Move this entry"):
            expect(menu.locator(".monaco-list-row, .action-item", has_text=other).first
                   ).to_be_visible()
    finally:
        shot(page, artifacts, "15f-code-action-curation")
    _choose_focused(page, menu, "Reverie: Edit this entry")
    box = page.locator(".quick-input-widget input")
    expect(box).to_be_visible(timeout=20_000)
    # the person's words, kept byte for byte (two spaces, a trailing note, no reformatting)
    new = "- Run the tests with `mix test --trace --seed 0`  (seed pinned: flaky order)"
    box.fill(new)
    page.keyboard.press("Enter")
    done = page.locator(".notification-toast", has_text="Edited build-and-test.md")
    expect(done.first).to_be_visible(timeout=30_000)
    assert not RUN_ID.search(_toasts(page)), _toasts(page)
    assert (memory / "build-and-test.md").read_text().splitlines()[line - 1] == new
    expect(_history_row(page, "edit ·")).to_be_visible(timeout=30_000)
    # a person's edit is not a dream: the status bar does not say "dreamed"
    status = page.locator(".statusbar-item", has_text=re.compile(r"Reverie")).first
    page.wait_for_timeout(1_000)
    assert "dreamed" not in status.inner_text(), status.inner_text()
    run = MemoryHistory(memory).runs()[0]
    assert run.source == "curate" and run.summary.startswith("edit build-and-test.md:")
    run_command(page, "View: Close All Editors")
    run_command(page, "Notifications: Clear All Notifications")


def test_the_memory_view_moves_an_entry_to_another_topic(
    page: Any, code_server: Any, artifacts: Path
) -> None:
    from playwright.sync_api import expect

    memory = memory_dir_of(code_server)
    view = _memory_view(page)
    topic = view.locator(".monaco-list-row[aria-level='1']", has_text="build-and-test.md").first
    _expand(topic)
    entry = view.locator(".monaco-list-row", has_text="mix format").first
    expect(entry).to_be_visible(timeout=20_000)
    entry.click(button="right")
    menu = page.locator(".context-view .monaco-menu")
    expect(menu).to_be_visible(timeout=10_000)
    for action in ("Edit Entry", "Move Entry to Topic", "Pin Entry", "Forget Entry"):
        expect(menu.locator(".action-label", has_text=action).first).to_be_visible()
    shot(page, artifacts, "15g-entry-context-menu")
    menu.locator(".action-label", has_text="Move Entry to Topic").first.click()
    picker = page.locator(".quick-input-widget")
    picker.locator(".monaco-list-row", has_text="conventions.md").first.click(timeout=20_000)
    done = page.locator(".notification-toast", has_text="to conventions.md")
    expect(done.first).to_be_visible(timeout=30_000)
    assert "mix format" not in (memory / "build-and-test.md").read_text()
    assert (memory / "conventions.md").read_text().endswith("- Run `mix format` before every "
                                                            "commit.\n")
    expect(_history_row(page, "move ·")).to_be_visible(timeout=30_000)
    run_command(page, "Notifications: Clear All Notifications")


async def _propose(code_server: Any, memory_line: str) -> dict[str, Any]:
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client
    from mcp.types import Implementation

    ws = code_server.workspace
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "reverie", "mcp", "--workspace", str(ws.workspace)],
        env={**os.environ, **ws.env()})
    async with stdio_client(params) as (read, write), ClientSession(
        read, write, client_info=Implementation(name="claude-code", version="2.1")
    ) as session:
        await session.initialize()
        result = await session.call_tool("propose_memory_change", {
            "action": "forget", "entry": memory_line,
            "reason": "the user said CI moved to elixir:1.18 last week"})
        assert not result.is_error, result.content
        return dict(json.loads(result.content[0].text))  # type: ignore[union-attr]


def test_an_agents_proposal_waits_for_the_person_and_lands_when_accepted(
    page: Any, code_server: Any, artifacts: Path
) -> None:
    from playwright.sync_api import expect

    memory = memory_dir_of(code_server)
    before = (memory / "build-and-test.md").read_bytes()
    # its own thread: Playwright's sync API runs an event loop in this one
    with ThreadPoolExecutor(1) as pool:
        proposal = pool.submit(asyncio.run, _propose(code_server, "elixir:1.16")).result(120)
    assert (memory / "build-and-test.md").read_bytes() == before  # nothing yet
    offer = page.locator(".notification-toast", has_text="Claude Code proposes a change")
    try:
        expect(offer.first).to_be_visible(timeout=60_000)
        expect(offer.first).to_contain_text("CI moved to elixir:1.18")
        for action in ("Review…", "Accept", "Discard"):
            expect(offer.first.locator(".monaco-button", has_text=action)).to_be_visible()
    finally:
        shot(page, artifacts, "22-agent-proposal")
    view = _memory_view(page)
    waiting = view.locator(".monaco-list-row", has_text="1 change waits for you").first
    expect(waiting).to_be_visible(timeout=30_000)
    expect(view.locator(".monaco-list-row", has_text="Claude Code: forget").first).to_be_visible()
    shot(page, artifacts, "22b-proposal-in-memory-view")
    offer = page.locator(".notification-toast", has_text="Claude Code proposes a change")
    if not offer.count():  # the toast may have timed out into the centre
        workbench.notification_centre(page)
        offer = page.locator(".notification-list-item", has_text="Claude Code proposes a change")
    offer.first.locator(".monaco-button", has_text="Review…").click()
    tab = page.locator(".tabs-container .tab", has_text="Claude Code proposes")
    expect(tab.first).to_be_visible(timeout=30_000)
    decide = page.locator(".notification-toast", has_text="Claude Code proposes: forget")
    expect(decide.first).to_be_visible(timeout=30_000)
    page.wait_for_timeout(800)
    shot(page, artifacts, "22c-proposal-diff")
    assert page.locator(".tabs-container .tab.dirty").count() == 0
    assert not RUN_ID.search(tab.first.inner_text())
    decide.first.locator(".monaco-button", has_text="Accept").click()
    accepted = page.locator(".notification-toast", has_text="Accepted the proposal")
    expect(accepted.first).to_be_visible(timeout=30_000)
    assert "elixir:1.16" not in (memory / "build-and-test.md").read_text()
    expect(_history_row(page, "accepted proposal ·")).to_be_visible(timeout=30_000)
    shot(page, artifacts, "22d-proposal-accepted")
    assert MemoryHistory(memory).runs()[0].source == "curate"
    listed = reverie(code_server, "review", "--workspace", str(code_server.workspace.workspace),
                     "--json")
    assert json.loads(listed.stdout)["reviews"] == [], proposal
    run_command(page, "View: Close All Editors")
    run_command(page, "Notifications: Clear All Notifications")


def _frame_text(page: Any, needle: str, timeout: float = 30) -> str:
    """The text of the (webview) frame that shows ``needle``: the Markdown preview."""
    deadline = time.monotonic() + timeout
    while True:
        for frame in page.frames:
            try:
                text = frame.inner_text("body", timeout=1_000)
            except Exception:
                continue
            if needle in text:
                return str(text)
        if time.monotonic() > deadline:
            raise AssertionError(f"no frame shows {needle!r}")
        time.sleep(0.5)


def test_what_each_agent_loads_with_token_sizes(
    page: Any, code_server: Any, artifacts: Path
) -> None:
    from playwright.sync_api import expect

    ws = code_server.workspace
    connected = reverie(code_server, "connect", "claude-code", "--scope", "personal",
                        "--workspace", str(ws.workspace))
    assert connected.returncode == 0, connected.stderr
    indexed = reverie(code_server, "search", "mix test", "--workspace", str(ws.workspace))
    assert indexed.returncode == 0, indexed.stderr
    prompt = reverie(code_server, "hook", "user-prompt-submit", stdin=json.dumps({
        "session_id": "0a1b2c3d-0000-4000-8000-00000000ffff", "cwd": str(ws.workspace),
        "prompt": "how do I run the mix test suite with trace and a fixed seed"}))
    assert prompt.returncode == 0, prompt.stderr
    sent = json.loads(prompt.stdout)["hookSpecificOutput"]["additionalContext"] \
        if prompt.stdout.strip() else ""
    run_command(page, "Reverie: Show What Agents Load")
    tab = page.locator(".tabs-container .tab", has_text="What agents load")
    expect(tab.first).to_be_visible(timeout=30_000)
    text = _frame_text(page, "What your agents load")
    page.wait_for_timeout(800)
    shot(page, artifacts, "23-agent-context")
    assert "Claude Code (personal)" in text and "tokens at every session start" in text
    assert "CLAUDE.local.md (Reverie's managed block)" in text
    assert "MEMORY.md (brought in by the block's @import)" in text
    assert "UserPromptSubmit hook" in text
    if sent:
        assert "last sent" in text and sent.splitlines()[0] in text
    run_command(page, "View: Close All Editors")


def test_the_cost_governor_estimates_skips_over_the_cap_and_shows_the_spend(
    page: Any, code_server: Any, artifacts: Path
) -> None:
    from playwright.sync_api import expect

    from reverie.llm.budget import SpendLedger

    ws = code_server.workspace
    # earlier notes updates spent 900 tokens ($0.012) today; no dream ran yet, so a dream is
    # estimated at the conservative default, priced at what those tokens cost
    SpendLedger(ws.data_dir).record("session_memory", 900, 0.012, new_job=True)
    with FakeLLMServer() as fake:
        # code-server reads settings of the remote machine from here (as the user's own)
        machine = _update_json(_machine_settings(code_server), **{
            "reverie.provider": "openai", "reverie.baseUrl": fake.base_url,
            "reverie.dailyTokenCap": 1000})
        try:
            box = page.locator(".quick-input-widget")
            deadline = time.monotonic() + 60
            while True:  # until VS Code read the files and the server has the new settings
                run_command(page, "Reverie: Dream Now")
                try:
                    expect(box).to_contain_text("900 of 1.0k tokens today", timeout=5_000)
                    break
                except AssertionError:
                    if time.monotonic() > deadline:
                        raise AssertionError(workbench.failure_context(code_server)) from None
                    page.keyboard.press("Escape")
                    time.sleep(2)
            expect(box).to_contain_text("Estimated: about 80,000 tokens (about $1.07)")
            shot(page, artifacts, "20-dream-estimate")
            page.keyboard.press("Enter")
            toast = page.locator(".notification-toast", has_text="would pass the model budget")
            try:
                expect(toast.first).to_be_visible(timeout=60_000)
            finally:
                shot(page, artifacts, "20b-over-budget")
            text = toast.first.inner_text()
            assert "over_budget" not in text and "900 of 1,000 tokens" in text, text
            for action in ("Open Setting", "Show Log"):
                expect(toast.first.locator(".monaco-button", has_text=action)).to_be_visible()
            assert fake.model_requests() == []  # the model was never asked
            status = page.locator(".statusbar-item", has_text="Reverie").first
            deadline = time.monotonic() + 60
            while True:
                page.mouse.move(700, 400)
                page.wait_for_timeout(300)
                status.hover()
                hover = page.locator(".monaco-hover, .workbench-hover").filter(
                    has_text="Model spend")
                try:
                    expect(hover.first).to_contain_text("900 of 1.0k tokens today",
                                                        timeout=3_000)
                    break
                except AssertionError:
                    if time.monotonic() > deadline:
                        raise
            page.wait_for_timeout(800)  # the hover's fade-in
            shot(page, artifacts, "20c-spend-tooltip")
            page.mouse.move(700, 400)
        finally:
            _machine_settings(code_server).write_text(machine)
    time.sleep(3)
    run_command(page, "Notifications: Clear All Notifications")


def test_choose_model_provider_walks_provider_model_key_and_test(
    page: Any, code_server: Any, artifacts: Path
) -> None:
    from playwright.sync_api import expect

    with FakeLLMServer() as fake:
        fake.set_default(Step.reply("OK"))
        machine = _update_json(_machine_settings(code_server), **{
            "reverie.baseUrl": fake.base_url})
        try:
            time.sleep(2)
            run_command(page, "Reverie: Choose Model Provider")
            picker = page.locator(".quick-input-widget")
            expect(picker).to_contain_text("model provider (1/4)", timeout=30_000)
            expect(picker.locator(".monaco-list-row", has_text="Offline engine").first
                   ).to_be_visible()
            listing = picker.inner_text()
            assert "CLI CLI" not in listing, listing
            shot(page, artifacts, "21-provider-step-1")
            picker.locator(".monaco-list-row", has_text="OpenAI-compatible").first.click()
            expect(picker).to_contain_text("(2/4)", timeout=20_000)
            page.locator(".quick-input-widget input").fill("fake-model-1")
            page.keyboard.press("Enter")
            expect(picker).to_contain_text("(3/4)", timeout=20_000)
            shot(page, artifacts, "21b-provider-step-key")
            page.locator(".quick-input-widget input").fill("sk-test-not-a-real-key-2")
            page.keyboard.press("Enter")
            ready = page.locator(".notification-toast", has_text="Reverie is ready")
            try:
                expect(ready.first).to_be_visible(timeout=90_000)
                ready.first.hover()
                page.wait_for_timeout(1_000)  # the toast's slide-in
            finally:
                shot(page, artifacts, "21c-provider-ready")
            # the test reached the model just chosen, not the one configured before
            assert "fake-model-1" in ready.first.inner_text(), ready.first.inner_text()
            assert [r.json["model"] for r in fake.model_requests()][-1:] == ["fake-model-1"]
        finally:
            _machine_settings(code_server).write_text(machine)
    # back to the offline engine, through the same picker (one step: nothing to ask)
    run_command(page, "Notifications: Clear All Notifications")
    run_command(page, "Reverie: Choose Model Provider")
    picker = page.locator(".quick-input-widget")
    picker.locator(".monaco-list-row", has_text="Offline engine").first.click(timeout=30_000)
    expect(page.locator(".notification-toast", has_text="now uses the offline engine").first
           ).to_be_visible(timeout=60_000)
    run_command(page, "Notifications: Clear All Notifications")
