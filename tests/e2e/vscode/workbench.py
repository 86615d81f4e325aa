"""What the real-VS-Code tests do in the workbench: palette commands, the notification centre,
screenshots (artefacts, and docs/images on request), failure context, and finding the language
server the extension started (``from e2e.vscode import workbench``)."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[3]
DOC_IMAGES = REPO / "docs" / "images"
ARTIFACTS = REPO / "tests" / "artifacts" / "vscode"
#: the screenshots the docs show (docs/user-guide.md, docs/security.md)
DOC_SHOTS = {
    "01-status-bar",
    "01b-lock-status",
    "01c-status-menu",
    "12-connect-preview",
    "12b-connect-confirm",
    "13-first-memory",
    "13b-nothing-new",
    "14-model-test-offline",
    "14b-dream-error-actions",
    "15-memory-entries",
    "15b-gate-codelens",
    "15c-quick-fix",
    "15d-forget-in-history",
    "15e-forget-confirm",
    "16-first-run-offer",
    "17-review-offer",
    "17b-review-diff",
    "17c-review-accepted",
    "13c-automatic-first-dream",
    "16b-walkthrough-offer",
    "06b-counts-match",
    "15f-code-action-curation",
    "15g-entry-context-menu",
    "15h-quick-fix-shorten",
    "22-agent-proposal",
    "22b-proposal-in-memory-view",
    "22c-proposal-diff",
    "22d-proposal-accepted",
    "23-agent-context",
    "20-dream-estimate",
    "20b-over-budget",
    "20c-spend-tooltip",
    "21-provider-step-1",
    "21b-provider-step-key",
    "21c-provider-ready",
    "08c-history-redo",
    "08d-undo-hand-edits",
    "18-stale-fact-quick-fix",
    "18b-stale-memory-view",
    "18c-stale-fact-retired",
    "19-copilot-session",
    "02-dream-now-input",
    "03-memory-saved-notification",
    "03b-show-diff",
    "05-session-notes-folded",
    "06-problems-panel",
    "08-sidebar-history",
    "08b-undo-confirmation",
    "09-cancel-dream",
    "10-missing-python-welcome",
    "11-trust-prompt",
    "11b-restricted-mode",
    "11c-limited-in-restricted-mode",
}


def shot(page: Any, artifacts: Path, name: str) -> Path:
    """Screenshot for the artefacts; also refreshes docs/images when REVERIE_UPDATE_DOC_IMAGES=1."""
    path = artifacts / f"{name}.png"
    page.screenshot(path=str(path))
    if os.environ.get("REVERIE_UPDATE_DOC_IMAGES") and name in DOC_SHOTS:
        DOC_IMAGES.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, DOC_IMAGES / path.name)
    return path


def run_command(page: Any, title: str, attempts: int = 3) -> None:
    """Runs a command from the palette (F1): Enter once the row with that title is focused.

    Retried, because a workbench that is still opening an editor can close the palette.
    """
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    for attempt in range(1, attempts + 1):
        try:
            page.keyboard.press("Escape")
            page.keyboard.press("F1")
            box = page.locator(".quick-input-widget input")
            box.wait_for(state="visible", timeout=10_000)
            box.fill(">" + title)
            rows = page.locator(".quick-input-list .monaco-list-row").filter(has_text=title)
            try:
                rows.and_(page.locator(".focused")).first.wait_for(timeout=5_000)
                page.keyboard.press("Enter")
            except PlaywrightTimeout:  # another command ranks first: pick ours
                rows.first.click(timeout=5_000)
            return
        except PlaywrightTimeout:
            if attempt == attempts:
                page.screenshot(path=str(ARTIFACTS / "palette-failure.png"))
                raise


def notification_centre(page: Any) -> Any:
    run_command(page, "Notifications: Show Notifications")
    centre = page.locator(".notifications-center")
    centre.wait_for(state="visible")
    return centre


def failure_context(code_server: Any) -> str:
    log = code_server.log.read_text(errors="replace")[-2000:]
    return f"\n--- code-server.log\n{log}\n{code_server.exthost_logs()}"


def memory_dir_of(code_server: Any) -> Path:
    """Where the user's own settings put the opened folder's memory (REVERIE_DATA_DIR, the
    default preset)."""
    from reverie.config import ProjectPaths, Settings

    ws = code_server.workspace
    settings = Settings(data_dir=ws.data_dir, agent_home=ws.agent_home)
    return ProjectPaths(settings, ws.workspace).memory_dir


def server_processes(code_server: Any) -> list[Any]:
    """The Reverie language servers running under this code-server (``psutil.Process``es): its
    process group, started as ``<python> -m reverie --log-level debug serve`` (or with ``-P``)."""
    import psutil

    def is_ours(proc: Any) -> bool:
        try:
            cmdline = proc.cmdline()
            return os.getpgid(proc.pid) == code_server.pgid and cmdline[-4:] == [
                "reverie",
                "--log-level",
                "debug",
                "serve",
            ]
        except (psutil.Error, ProcessLookupError):
            return False

    return [p for p in psutil.process_iter() if is_ours(p)]


def the_server(code_server: Any, timeout: float = 60) -> Any:
    """The one running Reverie server of this code-server (waits for a start or restart)."""
    deadline = time.monotonic() + timeout
    while True:
        servers = server_processes(code_server)
        if len(servers) == 1 or time.monotonic() > deadline:
            assert len(servers) == 1, f"{servers}{failure_context(code_server)}"
            return servers[0]
        time.sleep(0.5)


def restarted_server(code_server: Any, old_pid: int, timeout: float = 60) -> Any:
    """The Reverie server of this code-server that is not ``old_pid``, once there is one (after
    a restart, or a reload that started a new extension host; the old one may still be going
    away)."""
    deadline = time.monotonic() + timeout
    while True:
        servers = server_processes(code_server)
        new = [s for s in servers if s.pid != old_pid]
        if len(new) == 1 or time.monotonic() > deadline:
            assert len(new) == 1, f"no new server (was {old_pid}): {servers}" + failure_context(
                code_server)
            return new[0]
        time.sleep(0.5)


def code_actions(page: Any, wanted: Any, attempts: int = 4) -> None:
    """Ctrl+. until ``wanted`` (a locator in the action widget) shows: the first request right
    after the editor moved can come back empty ("No code actions available")."""
    from playwright.sync_api import expect

    for attempt in range(1, attempts + 1):
        page.keyboard.press("Control+.")
        try:
            expect(wanted).to_be_visible(timeout=5_000 if attempt < attempts else 20_000)
            return
        except AssertionError:
            if attempt == attempts:
                raise
            page.keyboard.press("Escape")
            page.wait_for_timeout(1_000)


def hover_text(page: Any, target: Any, has_text: str, wanted: Any, attempts: int = 4) -> Any:
    """Points at ``target`` until its hover (the one that has ``has_text``) contains ``wanted``
    (a string or a pattern); returns that hover.

    Pointed at again (after moving off) when the hover does not come or goes: a view refreshed
    under the pointer (new session notes, a job's end) draws its rows again and drops their
    hover, and a pointer that stays put brings no new one. The failure names every hover seen.
    """
    from playwright.sync_api import expect

    hovers = page.locator(".monaco-hover, .workbench-hover")
    hover = hovers.filter(has_text=has_text)
    seen: list[str] = []
    for attempt in range(1, attempts + 1):
        page.mouse.move(0, 0)  # off the target: the next hover() is a new mouse-over
        target.hover()
        try:
            expect(hover.first).to_contain_text(
                wanted, timeout=5_000 if attempt < attempts else 15_000)
            return hover.first
        except AssertionError:
            seen.append(" | ".join(hovers.all_inner_texts()) or "(no hover)")
    raise AssertionError(f"no hover with {has_text!r} said {wanted!r}; hovers seen: {seen}")
