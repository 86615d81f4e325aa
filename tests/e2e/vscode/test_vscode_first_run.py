"""A first run as it happens on its own, in a real VS Code (code-server): with the dream gates
open, the automatic first dream explains itself as it starts and reports that it *built* the
first memory (never "improved" memories that did not exist); a folder with no agent session
gets the walkthrough offered once, and neither a server restart nor a reload offers it again.
"""

from __future__ import annotations

import json
import os
import re
import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from e2e.vscode import workbench
from e2e.vscode.conftest import Tools, launched_code_server, opened_workbench

pytestmark = [pytest.mark.vscode, pytest.mark.e2e, pytest.mark.xdist_group("real-editors")]

shot = workbench.shot
run_command = workbench.run_command


@pytest.fixture
def code_server(
    tools: Tools, editors: ModuleType, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Any]:
    """A folder with an earlier agent session besides the current one, and the gates set so
    that one finished session is enough for a dream."""
    ws = editors.make_agent_workspace(tmp_path_factory.mktemp("vscode-first-run"))
    earlier_id = "0e0e0e0e-0000-4000-8000-000000000001"
    earlier = ws.transcript.with_name(f"{earlier_id}.jsonl")
    earlier.write_text(ws.transcript.read_text().replace(ws.session_id, earlier_id))
    day_ago = time.time() - 86_400
    os.utime(earlier, (day_ago, day_ago))
    with launched_code_server(tools, editors, ws) as server:
        settings = server.user_data / "User" / "settings.json"
        settings.write_text(json.dumps({
            **json.loads(settings.read_text()),
            "reverie.dreamMinSessions": 1, "reverie.dreamMinHours": 0,
            "reverie.dreamScanIntervalSeconds": 5,
        }, indent=2))
        yield server


def test_the_automatic_first_dream_explains_itself_and_says_it_built_the_memory(
    code_server: Any, tools: Tools, tmp_path_factory: pytest.TempPathFactory, artifacts: Path
) -> None:
    # a workbench of its own (one Playwright at a time: the next test opens another editor)
    profile = tmp_path_factory.mktemp("chromium-profile-first-run")
    with opened_workbench(code_server, tools, profile) as page:
        _first_dream(page, code_server, artifacts)


def _first_dream(page: Any, code_server: Any, artifacts: Path) -> None:
    from playwright.sync_api import expect

    memory = workbench.memory_dir_of(code_server)
    expect(page.locator(".statusbar-item .codicon-sparkle")).to_be_visible(timeout=90_000)
    # the agent's current session goes on (the gates are checked as its transcript grows)
    ws = code_server.workspace
    records = [json.loads(line) for line in ws.transcript.read_text().splitlines() if line]
    last = next(r for r in reversed(records) if r.get("type") == "user")
    note = {**last, "uuid": str(uuid.uuid4()), "parentUuid": records[-1].get("uuid"),
            "timestamp": datetime.now(UTC).isoformat().replace("+00:00", "Z"),
            "message": {"role": "user", "content": "Now add a test for the parser."}}
    with ws.transcript.open("a") as out:
        out.write(json.dumps(note) + "\n")
    centre_text = ""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:  # nobody asked: the gates start it
        centre = workbench.notification_centre(page)
        centre_text = centre.inner_text()
        if "built your first memory" in centre_text:
            break
        time.sleep(3)
    try:
        assert re.search(r"built your first memory from [12] session", centre_text), (
            f"{centre_text}{workbench.failure_context(code_server)}")
        assert re.search(r"building your first memory from [12] session", centre_text)
        assert "an automatic dream" in centre_text
        building = page.locator(".notification-list-item", has_text="building your first memory")
        expect(building.first.locator(".monaco-button", has_text="Turn Off Automatic Dreams")
               ).to_be_visible()
        assert "improved" not in centre_text, centre_text
    finally:
        shot(page, artifacts, "13c-automatic-first-dream")
    assert (memory / "MEMORY.md").is_file()
    # one offer besides: connecting the agent found, not a second toast for the tour
    assert centre_text.count("Reverie found Claude Code sessions") == 1, centre_text
    assert "two-minute tour" not in centre_text
    run_command(page, "Notifications: Clear All Notifications")


@pytest.fixture
def empty_code_server(
    tools: Tools, editors: ModuleType, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Any]:
    """A folder no agent has worked in yet."""
    ws = editors.make_agent_workspace(tmp_path_factory.mktemp("vscode-no-sessions"),
                                      name="fresh")
    ws.transcript.unlink()
    with launched_code_server(tools, editors, ws) as server:
        yield server


def test_a_folder_without_sessions_offers_the_walkthrough_once(
    empty_code_server: Any, tools: Tools, tmp_path_factory: pytest.TempPathFactory,
    artifacts: Path
) -> None:
    from playwright.sync_api import expect

    profile = tmp_path_factory.mktemp("chromium-profile-fresh")
    with opened_workbench(empty_code_server, tools, profile) as page:
        expect(page.locator(".statusbar-item .codicon-sparkle")).to_be_visible(timeout=90_000)
        offer = page.locator(".notification-toast", has_text="Take the two-minute tour?")
        try:
            expect(offer.first).to_be_visible(timeout=60_000)
            for action in ("Show Me", "No Thanks"):
                expect(offer.first.locator(".monaco-button", has_text=action)).to_be_visible()
        finally:
            shot(page, artifacts, "16b-walkthrough-offer")
        assert page.locator(".notification-toast", has_text="Reverie found").count() == 0
        offer.first.locator(".monaco-button", has_text="Show Me").click()
        walkthrough = page.locator(".gettingStartedContainer, .getting-started")
        expect(walkthrough.filter(has_text="Get started with Reverie").first).to_be_visible(
            timeout=30_000)
        shot(page, artifacts, "16c-walkthrough")
        run_command(page, "View: Close All Editors")
        # the extension decides on its offers when the (new) server answers its status, which
        # is also when the status bar turns idle: from then on an offer would be on screen
        # within moments, so a few seconds after it, none means none
        old = workbench.the_server(empty_code_server).pid
        run_command(page, "Reverie: Restart Server")
        workbench.restarted_server(empty_code_server, old)
        expect(page.locator(".statusbar-item .codicon-sparkle")).to_be_visible(timeout=90_000)
        page.wait_for_timeout(4_000)
        centre = workbench.notification_centre(page)
        assert "two-minute tour" not in centre.inner_text(), centre.inner_text()
        # a new window (the page loads again, with a new extension host and server)
        old = workbench.the_server(empty_code_server).pid
        with page.expect_event("load", timeout=60_000):
            run_command(page, "Developer: Reload Window")
        page.wait_for_selector(".monaco-workbench", timeout=60_000)
        workbench.restarted_server(empty_code_server, old, timeout=90)
        expect(page.locator(".statusbar-item .codicon-sparkle")).to_be_visible(timeout=90_000)
        page.wait_for_timeout(4_000)
        centre = workbench.notification_centre(page)
        assert not re.search(r"two-minute tour", centre.inner_text()), centre.inner_text()
