"""GitHub Copilot Chat in a real VS Code (code-server): a chat session file appears in the
window's own workspace storage, is rewritten in place as VS Code does while a chat runs, and
its notes show up in Reverie's Sessions view, under Copilot's icon.

The server finds the storage folder only because the extension reports its ``storageUri`` (the
user-data dir is code-server's scratch one, which no platform default names). The session file
is a real Copilot Chat document (tests/fixtures/transcripts/copilot-chat, see SOURCES.md).
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any
from urllib.parse import unquote, urlsplit

import pytest

from e2e.vscode import workbench
from e2e.vscode.conftest import CodeServer, Tools, launched_code_server, opened_workbench
from reverie.config import ProjectPaths, Settings

pytestmark = [pytest.mark.vscode, pytest.mark.e2e, pytest.mark.xdist_group("real-editors")]

FIXTURE = (Path(__file__).resolve().parents[2] / "fixtures" / "transcripts" / "copilot-chat"
           / "source-types" / "chatSessions" / "3f8e2b7c-9a41-4d6e-b0c5-7e1d2a9f4b68.json")
#: notes as soon as the chat has some substance (the offline engine writes them)
FAST = {
    "reverie.watchDebounceMs": 100,
    "reverie.sessionMemoryInitTokens": 500,
    "reverie.sessionMemoryUpdateTokens": 500,
    "reverie.sessionMemoryToolCalls": 1,
    "reverie.dreamEnabled": False,
}


@pytest.fixture(scope="module")
def copilot_server(tools: Tools, editors: ModuleType,
                   tmp_path_factory: pytest.TempPathFactory) -> Iterator[CodeServer]:
    ws = editors.make_agent_workspace(tmp_path_factory.mktemp("vscode-copilot"), name="cart")
    (ws.workspace / ".vscode").mkdir()
    (ws.workspace / ".vscode" / "settings.json").write_text(json.dumps(FAST, indent=2))
    with launched_code_server(tools, editors, ws) as server:
        yield server


@pytest.fixture(scope="module")
def copilot_page(copilot_server: CodeServer, tools: Tools,
                 tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    profile = tmp_path_factory.mktemp("chromium-profile-copilot")
    with opened_workbench(copilot_server, tools, profile) as page:
        yield page


def storage_folder(server: CodeServer, timeout: float = 60) -> Path:
    """The ``workspaceStorage/<id>`` folder VS Code made for the opened folder: desktop VS Code
    names the folder in its ``workspace.json``; code-server (a web workbench and a remote
    extension host) writes ``meta.json`` with the folder's name, and no ``workspace.json``
    (the server knows the folder only from the extension's ``storageUri``)."""
    root = server.user_data / "User" / "workspaceStorage"
    folder = server.workspace.workspace.resolve()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for meta in [*root.glob("*/workspace.json"), *root.glob("*/meta.json")]:
            try:
                data = json.loads(meta.read_text())
            except (OSError, ValueError):
                continue
            uri = data.get("folder", "")
            if (uri and Path(unquote(urlsplit(uri).path)).resolve() == folder) or (
                    meta.name == "meta.json" and data.get("name") == folder.name):
                return meta.parent
        time.sleep(0.5)
    raise AssertionError(f"no workspace storage for {folder} under {root}"
                         f"{workbench.failure_context(server)}")


def write_in_place(path: Path, session: dict[str, Any]) -> None:
    """VS Code's ``writeFile``: the document truncated and written again, same file."""
    data = json.dumps(session, indent=2).encode()
    with path.open("r+b" if path.exists() else "wb") as handle:
        handle.truncate(0)
        handle.write(data)


def test_a_copilot_session_in_the_workspace_storage_gets_notes_in_the_sessions_view(
    copilot_page: Any, copilot_server: CodeServer, artifacts: Path
) -> None:
    from playwright.sync_api import expect

    page = copilot_page
    expect(page.locator(".statusbar-item .codicon-sparkle")).to_be_visible(timeout=90_000)
    session = json.loads(FIXTURE.read_text())
    session_id = session["sessionId"]
    chats = storage_folder(copilot_server) / "chatSessions"
    chats.mkdir(exist_ok=True)
    path = chats / FIXTURE.name
    # a chat view opened, nothing asked yet; then the conversation, rewritten as it grows
    write_in_place(path, {**session, "requests": []})
    time.sleep(2)
    for count in range(1, len(session["requests"]) + 1):
        write_in_place(path, {**session, "requests": session["requests"][:count]})
        time.sleep(1)

    ws = copilot_server.workspace
    notes = ProjectPaths(Settings(data_dir=ws.data_dir, agent_home=ws.agent_home),
                         ws.workspace).notes_path(session_id)
    deadline = time.monotonic() + 120
    while not notes.is_file():
        context = workbench.failure_context(copilot_server)
        assert time.monotonic() < deadline, f"no notes for the Copilot session at {notes}{context}"
        time.sleep(1)
    assert "# Session Title" in notes.read_text()

    workbench.run_command(page, "Reverie: Focus on Sessions View")
    sessions = page.locator(".pane", has=page.locator(".pane-header", has_text="Sessions"))
    row = sessions.locator(".monaco-list-row", has_text=session["customTitle"]).first
    try:
        expect(row).to_be_visible(timeout=30_000)
        expect(row).to_contain_text(re.compile(r"copilot-chat · .* · notes"), timeout=30_000)
        expect(row.locator(".codicon-copilot")).to_be_visible()
        # the tooltip says what the row's cut description holds
        hover = workbench.hover_text(page, row, "copilot-chat", "notes written")
        expect(hover).to_contain_text(session_id)
        page.wait_for_timeout(800)  # the hover fades in: let it settle for the screenshot
    finally:
        workbench.shot(page, artifacts, "19-copilot-session")
    row.click()  # opens the session's notes
    editor = page.locator(".editor-instance .monaco-editor .view-lines").first
    expect(editor).to_contain_text("Session Title", timeout=30_000)
    workbench.shot(page, artifacts, "19b-copilot-session-notes")
