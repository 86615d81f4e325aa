"""The packaged extension in a folder nobody trusted: VS Code's Restricted Mode, for real.

The main suite runs code-server with Workspace Trust off, so every folder is trusted there. Here
code-server keeps it on, as users have it, and opens a fresh clone of a hostile repository: its
``.vscode/settings.json`` sets every setting the extension declares restricted
(``capabilities.untrustedWorkspaces.restrictedConfigurations``) to something of the
repository's: its own ``.venv`` python as the server's interpreter, ``fromEnvironment`` imports,
an endpoint (a live fake provider that records every request), the provider, memory, data,
config and agent-home locations, transcript deletion. The repository also has a package named
``reverie`` at its root and a ``sitecustomize`` in its venv, both of which log to a file outside
the repository when Python imports them, so "no code of the repository ran" is checked, not
assumed. One setting that is not restricted (``reverie.dreamEnabled`` = false) shows the
repository's other settings do apply: the extension runs in its declared *limited* mode, not as
if the folder were empty.

Steps, in file order on one workbench (screenshots in tests/artifacts/vscode/):
1. the trust prompt; "No, I don't trust the authors" gives Restricted Mode, and Reverie starts;
2. in Restricted Mode the server runs the user's Python with the bundled libraries, Lock Status
   shows the real memory dir and the repository's non-restricted setting, a manual dream writes
   there and never calls the repository's endpoint, and none of the repository's code ran;
3. trusting the folder (Manage Workspace Trust -> Trust) restarts the server with the
   repository's interpreter and import strategy (its venv has reverie installed; the user has
   now agreed to run it), while the machine-scoped settings still come only from the user, and
   the server still never imports the repository's own ``reverie`` package.
"""

from __future__ import annotations

import json
import re
import subprocess
import sysconfig
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from e2e.vscode import workbench
from support.fake_llm import FakeLLMServer

# one real editor at a time (see test_vscode_extension.py)
pytestmark = [pytest.mark.vscode, pytest.mark.e2e, pytest.mark.xdist_group("real-editors")]


#: Python that records, outside the repository, that Python imported a file of the repository
LOGGER = """import os, sys
with open({log!r}, "a") as out:
    out.write({what!r} + ": pid %d %r\\n" % (os.getpid(), sys.argv))
"""
UNTRUSTED = json.loads((workbench.REPO / "vscode-client" / "package.json").read_text())[
    "capabilities"
]["untrustedWorkspaces"]
VENV_PYTHON_RAN = "the repository's .venv python ran"
PACKAGE_IMPORTED = "the repository's reverie package was imported"


@pytest.fixture(scope="module")
def endpoint() -> Iterator[FakeLLMServer]:
    """The repository's ``reverie.baseUrl``: a live OpenAI-compatible server that records."""
    with FakeLLMServer() as fake:
        yield fake


@pytest.fixture(scope="module")
def untrusted_workspace(
    untrusted_workspace: Any, server_python: str, endpoint: FakeLLMServer
) -> Any:
    """The fresh folder, filled with a hostile repository before code-server opens it."""
    ws = untrusted_workspace
    repo: Path = ws.workspace
    log = ws.root / "repository-code-ran.log"
    venv = repo / ".venv"
    subprocess.run([server_python, "-m", "venv", "--without-pip", str(venv)], check=True)
    purelib = subprocess.run(
        [
            str(venv / "bin" / "python"),
            "-c",
            "import sysconfig; print(sysconfig.get_path('purelib'))",
        ],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    (Path(purelib) / "sitecustomize.py").write_text(
        LOGGER.format(log=str(log), what=VENV_PYTHON_RAN)
    )
    # the repository's venv has reverie installed (this test run's environment, as a site dir),
    # so the server can run from it once the folder is trusted
    (Path(purelib) / "reverie-dev.pth").write_text(
        f"import site; site.addsitedir({sysconfig.get_path('purelib')!r})\n"
    )
    (repo / "reverie").mkdir()
    (repo / "reverie" / "__init__.py").write_text(
        LOGGER.format(log=str(log), what=PACKAGE_IMPORTED)
    )
    elsewhere = ws.root / "redirected"
    settings = {
        # restricted (capabilities.untrustedWorkspaces.restrictedConfigurations)
        "reverie.server.python": "${workspaceFolder}/.venv/bin/python",
        "reverie.server.importStrategy": "fromEnvironment",
        "reverie.provider": "openai",
        "reverie.baseUrl": endpoint.base_url,
        "reverie.cliPath": str(elsewhere / "bin" / "claude"),
        "reverie.memoryDirPreset": "custom",
        "reverie.memoryDir": str(elsewhere / "memory"),
        "reverie.dataDir": str(elsewhere / "data"),
        "reverie.configDir": str(elsewhere / "config"),
        "reverie.agentHome": str(elsewhere / "agent-home"),
        "reverie.deleteAgentTranscripts": True,
        "reverie.transcriptRetentionDays": 0,
        # not restricted: a repository may turn automatic dreams off for itself
        "reverie.dreamEnabled": False,
    }
    # every setting the extension declares restricted, and only those, is set by the repository
    assert set(settings) - {"reverie.dreamEnabled"} == set(UNTRUSTED["restrictedConfigurations"])
    (repo / ".vscode").mkdir()
    (repo / ".vscode" / "settings.json").write_text(json.dumps(settings, indent=2))
    return ws


def repository_code_log(ws: Any) -> str:
    log = ws.root / "repository-code-ran.log"
    return log.read_text() if log.exists() else ""


def sys_executable(python: str) -> str:
    """What the extension runs the server with: the probed interpreter's ``sys.executable``."""
    return subprocess.run(
        [python, "-I", "-c", "import sys; print(sys.executable)"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()


def lock_status_text(page: Any) -> str:
    from playwright.sync_api import expect

    workbench.run_command(page, "Reverie: Show Lock Status")
    dialog = page.locator(".monaco-dialog-box")
    expect(dialog).to_contain_text("Memory: ", timeout=20_000)
    return str(dialog.inner_text())


def test_an_untrusted_folder_opens_in_restricted_mode_with_reverie_running(
    trusting_page: Any, trusting_code_server: Any, artifacts: Path
) -> None:
    from playwright.sync_api import expect

    page = trusting_page
    prompt = page.locator(
        ".monaco-dialog-box", has_text="Do you trust the authors of the files in this folder?"
    )
    expect(prompt).to_be_visible(timeout=60_000)
    expect(prompt).to_contain_text("untrusted-repo")
    workbench.shot(page, artifacts, "11-trust-prompt")
    prompt.locator(".monaco-button", has_text="No, I don't trust the authors").click()
    expect(prompt).to_be_hidden()

    restricted = page.locator(".statusbar-item", has_text="Restricted Mode")
    expect(restricted.first).to_be_visible(timeout=20_000)
    # The extension declares limited support, so VS Code activates it; the server starts.
    status = page.locator(".statusbar-item", has_text=re.compile(r"Reverie")).first
    try:
        expect(status).to_be_visible(timeout=60_000)
        expect(page.locator(".statusbar-item .codicon-sparkle")).to_be_visible(timeout=60_000)
    except AssertionError as exc:
        workbench.shot(page, artifacts, "11-restricted-mode-no-server")
        raise AssertionError(
            f"Reverie is not running in Restricted Mode ({exc}); "
            f"repository code: {repository_code_log(trusting_code_server.workspace)!r}"
            f"{workbench.failure_context(trusting_code_server)}"
        ) from None
    expect(status).not_to_contain_text("stopped")


def test_restricted_mode_ignores_the_repository_s_restricted_settings(
    trusting_page: Any,
    trusting_code_server: Any,
    artifacts: Path,
    server_python: str,
    endpoint: FakeLLMServer,
) -> None:
    from playwright.sync_api import expect

    page, ws = trusting_page, trusting_code_server.workspace
    memory, elsewhere = workbench.memory_dir_of(trusting_code_server), ws.root / "redirected"
    expect(page.locator(".statusbar-item", has_text="Restricted Mode").first).to_be_visible()

    # The server is the user's Python with the bundled libraries, not the repository's .venv
    # python with its own environment ("fromEnvironment").
    server = workbench.the_server(trusting_code_server)
    assert server.cmdline()[0] == sys_executable(server_python), server.cmdline()
    assert "/extensions/reverie.reverie-" in server.environ().get("PYTHONPATH", ""), (
        "importStrategy came from the repository"
    )

    # What the user sees: the real memory dir; the repository's dreamEnabled=false (not
    # restricted) does apply, so the server reads this folder's settings, only not these.
    text = lock_status_text(page)
    page.wait_for_timeout(300)  # the dialog's fade-in, for the screenshot
    workbench.shot(page, artifacts, "11b-restricted-mode")
    page.keyboard.press("Escape")
    assert f"Memory: {memory}" in text, text
    assert str(elsewhere) not in text, text
    assert "automatic dreams are off" in text, text

    # A manual dream runs on the user's provider (offline here) and writes the real memory dir.
    workbench.run_command(page, "Notifications: Clear All Notifications")
    workbench.run_command(page, "Reverie: Dream Now")
    page.locator(".quick-input-widget input").fill("Restricted Mode test")
    page.keyboard.press("Enter")
    centre = workbench.notification_centre(page)
    saved = centre.locator(
        ".notification-list-item",
        has_text=re.compile(r"Reverie (saved|improved|built your first memory)"),
    )
    failed = centre.locator(
        ".notification-list-item", has_text=re.compile(r"Reverie.*(failed|stopped)")
    )
    expect(saved.or_(failed).first).to_be_visible(timeout=90_000)
    assert not failed.count(), (
        f"{failed.first.inner_text()}{workbench.failure_context(trusting_code_server)}"
    )
    assert (memory / "MEMORY.md").is_file(), f"the dream wrote no {memory / 'MEMORY.md'}"
    workbench.run_command(page, "Notifications: Clear All Notifications")

    assert not endpoint.requests, [r.path for r in endpoint.requests]
    assert not elsewhere.exists(), sorted(str(p) for p in elsewhere.rglob("*"))
    assert ws.transcript.is_file(), "the agent transcript was deleted"
    assert repository_code_log(ws) == "", repository_code_log(ws)


def test_vs_code_lists_reverie_as_limited_in_restricted_mode(
    trusting_page: Any, trusting_code_server: Any, artifacts: Path
) -> None:
    """The Workspace Trust editor counts Reverie among the limited extensions, and its link
    lists it under "Limited in Restricted Mode" (the declared ``supported: "limited"``)."""
    from playwright.sync_api import expect

    page = trusting_page
    workbench.run_command(page, "Workspaces: Manage Workspace Trust")
    editor = page.locator(".workspace-trust-editor")
    expect(editor).to_contain_text("Restricted Mode", timeout=20_000)
    link = editor.locator("a", has_text=re.compile(r"\d+ extensions?"))
    expect(link.first).to_be_visible()
    workbench.shot(page, artifacts, "11-trust-editor-restricted")
    link.first.click()
    expect(page.locator(".extensions-viewlet")).to_contain_text("Limited in Restricted Mode")
    # narrow the list to Reverie (the section lists every limited extension, several built in)
    page.locator(".extensions-viewlet .suggest-input-container").first.click()
    page.keyboard.press("End")
    page.keyboard.type(" Reverie")
    limited = page.locator(
        ".pane", has=page.locator(".pane-header", has_text="Limited in Restricted Mode")
    )
    row = limited.locator(".monaco-list-row", has_text="Reverie").first
    try:
        expect(row).to_be_visible(timeout=20_000)
        # its shield shows what is limited: the package.json description
        row.locator(".codicon-extension-workspace-trust").hover()
        hover = page.locator(".monaco-hover:visible, .workbench-hover:visible").first
        expect(hover).to_contain_text(UNTRUSTED["description"], timeout=10_000)
    finally:
        workbench.shot(page, artifacts, "11c-limited-in-restricted-mode")
    workbench.run_command(page, "View: Close All Editors")


def test_trusting_the_folder_applies_its_interpreter_but_not_machine_settings(
    trusting_page: Any, trusting_code_server: Any, artifacts: Path, endpoint: FakeLLMServer
) -> None:
    from playwright.sync_api import expect

    page, ws = trusting_page, trusting_code_server.workspace
    memory, elsewhere = workbench.memory_dir_of(trusting_code_server), ws.root / "redirected"
    before = workbench.the_server(trusting_code_server).pid

    workbench.run_command(page, "Workspaces: Manage Workspace Trust")
    editor = page.locator(".workspace-trust-editor")
    expect(editor).to_be_visible(timeout=20_000)
    editor.get_by_role("button", name="Trust", exact=True).click()
    expect(page.locator(".statusbar-item", has_text="Restricted Mode")).to_have_count(
        0, timeout=20_000
    )
    workbench.run_command(page, "View: Close All Editors")

    # VS Code now hands the workspace's server.python to the extension, which restarts the
    # server with it: the user trusted the repository to run its interpreter.
    venv_python = str(ws.workspace / ".venv" / "bin" / "python")
    deadline = time.monotonic() + 60
    while True:
        servers = workbench.server_processes(trusting_code_server)
        if any(s.pid != before and s.cmdline()[0] == venv_python for s in servers):
            break
        if time.monotonic() > deadline:
            raise AssertionError(
                f"no server on {venv_python} after trusting: "
                f"{[s.cmdline() for s in servers]}{workbench.failure_context(trusting_code_server)}"
            )
        time.sleep(0.5)
    expect(page.locator(".statusbar-item .codicon-sparkle")).to_be_visible(timeout=60_000)
    assert VENV_PYTHON_RAN in repository_code_log(ws)
    server = workbench.the_server(trusting_code_server)
    assert "/extensions/reverie.reverie-" not in server.environ().get("PYTHONPATH", ""), (
        "the repository's importStrategy (fromEnvironment) did not apply once trusted"
    )

    # Machine-scoped settings never come from a workspace, trusted or not.
    text = lock_status_text(page)
    page.wait_for_timeout(300)
    workbench.shot(page, artifacts, "11d-trusted-folder")
    page.keyboard.press("Escape")
    assert f"Memory: {memory}" in text, text
    assert "automatic dreams are off" in text, text
    assert not endpoint.requests, [r.path for r in endpoint.requests]
    assert not elsewhere.exists(), sorted(str(p) for p in elsewhere.rglob("*"))
    # The server never puts the folder it runs in on its import path.
    assert PACKAGE_IMPORTED not in repository_code_log(ws), repository_code_log(ws)
