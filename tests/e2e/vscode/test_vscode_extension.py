"""The packaged extension in a real VS Code (code-server), driven only through the UI.

Steps (each leaves a screenshot in tests/artifacts/vscode/): the status bar shows Reverie and
clicking it shows the lock status and gates; "Reverie: Dream Now" from the palette produces the
memory-saved notification (read from the notification centre: at most three toasts show at once)
whose "Show Diff" opens the run; "Reverie: Open Session Notes" opens an editor with the ten
section headers; a broken MEMORY.md shows its problem in the Problems panel; a killed server is
reported once and "Restart" brings it back. The tests share one workbench and run in file order.
"""

from __future__ import annotations

import json
import re
import shutil
import time
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from e2e.vscode import workbench
from reverie.config import ProjectPaths, Settings

# one real editor at a time, on one xdist worker: two code-servers with their Chromiums on a
# 2-core machine would each miss their timeouts
pytestmark = [pytest.mark.vscode, pytest.mark.e2e, pytest.mark.xdist_group("real-editors")]

shot = workbench.shot
run_command = workbench.run_command
notification_centre = workbench.notification_centre
failure_context = workbench.failure_context
memory_dir_of = workbench.memory_dir_of
#: a run id as Reverie makes them: never shown to a person
RUN_ID = re.compile(r"\d{8}T\d{6}-[0-9a-f]{6}")


def test_status_bar_shows_reverie(page: Any, code_server: Any, artifacts: Path) -> None:
    from playwright.sync_api import expect

    item = page.locator(".statusbar-item", has_text=re.compile(r"Reverie")).first
    expect(item).to_be_visible(timeout=60_000)
    # the spinner gives way to the idle item once the bundled server answered reverie.server.status
    try:
        expect(item).not_to_contain_text("stopped", timeout=5_000)
        expect(page.locator(".statusbar-item .codicon-sparkle")).to_be_visible(timeout=60_000)
    finally:
        shot(page, artifacts, "01-status-bar")
    hover = item.get_attribute("aria-label") or item.inner_text()
    assert "Reverie" in hover, failure_context(code_server)

    # Clicking it opens the menu of Reverie's actions (a quick pick, not a modal).
    item.click()
    menu = page.locator(".quick-input-widget")
    expect(menu.locator(".monaco-list-row", has_text="Dream Now").first).to_be_visible(
        timeout=20_000
    )
    for action in ("Dream Now", "Show Memory History", "Connect Agent", "Show Lock Status"):
        expect(menu.locator(".monaco-list-row", has_text=action).first).to_be_visible()
    shot(page, artifacts, "01c-status-menu")
    # "Show Lock Status" from the menu shows the lock status and the dream gates.
    menu.locator(".monaco-list-row", has_text="Show Lock Status").first.click()
    dialog = page.locator(".monaco-dialog-box")
    expect(dialog).to_contain_text("Consolidation lock free", timeout=20_000)
    for gate in ("Hours since", "Sessions since", "Next gate"):
        expect(dialog).to_contain_text(gate)
    shot(page, artifacts, "01b-lock-status")
    page.keyboard.press("Escape")
    expect(dialog).to_be_hidden()


def test_dream_now_shows_memory_saved_notification(
    page: Any, code_server: Any, artifacts: Path
) -> None:
    from playwright.sync_api import expect

    run_command(page, "Notifications: Clear All Notifications")
    run_command(page, "Reverie: Dream Now")
    box = page.locator(".quick-input-widget input")
    expect(page.locator(".quick-input-widget")).to_contain_text("Reverie: Dream Now")
    box.fill("The end-to-end test asked for this dream.")
    shot(page, artifacts, "02-dream-now-input")
    page.keyboard.press("Enter")

    centre = notification_centre(page)
    saved = centre.locator(
        ".notification-list-item", has=page.locator(".monaco-button", has_text="Show Diff")
    )
    failed = centre.locator(
        ".notification-list-item", has_text=re.compile(r"Reverie.*(failed|stopped)")
    )
    try:
        expect(saved.or_(failed).first).to_be_visible(timeout=90_000)
        assert not failed.count(), failed.first.inner_text()
    except AssertionError as exc:
        shot(page, artifacts, "02-dream-notification-missing")
        raise AssertionError(
            f"no memory-saved notification ({exc}):\n{centre.inner_text()}"
            f"{failure_context(code_server)}"
        ) from None
    text = saved.first.inner_text()
    # the folder had no memory: the first dream says it built it, from how many sessions
    assert re.search(r"Reverie built your first memory from \d+ sessions?", text), text
    for action in ("Open", "Show Diff", "Undo"):
        expect(saved.first.locator(".monaco-button", has_text=action).first).to_be_visible()
    shot(page, artifacts, "03-memory-saved-notification")

    # "Show Diff" opens the whole run as one multi-file diff editor.
    saved.first.locator(".monaco-button", has_text="Show Diff").first.click()
    tab = page.locator(".tabs-container .tab", has_text=re.compile(r"Reverie: dream of"))
    expect(tab.first).to_be_visible(timeout=20_000)
    # the diff editor on screen (other tabs keep theirs in the DOM, hidden) shows the new text
    diff = page.locator(".monaco-diff-editor:visible").first
    expect(diff).to_be_visible(timeout=20_000)
    expect(diff.locator(".modified .view-lines")).to_contain_text("# ", timeout=20_000)
    page.wait_for_timeout(500)  # let the diff decorations paint before the screenshot
    shot(page, artifacts, "03b-show-diff")
    run_command(page, "View: Close All Editors")

    memory = memory_dir_of(code_server)
    assert (memory / "MEMORY.md").is_file(), f"the dream wrote no {memory / 'MEMORY.md'}"


def test_open_session_notes_shows_the_ten_sections(
    page: Any, code_server: Any, artifacts: Path, editors: ModuleType
) -> None:
    from playwright.sync_api import expect

    run_command(page, "Notifications: Clear All Notifications")
    run_command(page, "Reverie: Update Session Notes")
    ws = code_server.workspace
    notes = ProjectPaths(
        Settings(data_dir=ws.data_dir, agent_home=ws.agent_home), ws.workspace
    ).notes_path(ws.session_id)
    tab = page.locator(".tabs-container .tab", has_text="(notes)")  # the session's title
    deadline = time.monotonic() + 90
    while True:  # the forced extraction runs in the background; open the notes once they exist
        run_command(page, "Reverie: Open Session Notes")
        try:
            expect(tab).to_be_visible(timeout=3_000)
            break
        except AssertionError:
            failed = page.locator(
                ".notification-list-item", has_text=re.compile(r"Reverie.*failed")
            )
            if failed.count() or time.monotonic() > deadline:
                shot(page, artifacts, "04-session-notes-missing")
                raise AssertionError(
                    f"no session notes editor; {notes} exists: {notes.exists()}; "
                    f"{[f.inner_text() for f in failed.all()]}{failure_context(code_server)}"
                ) from None
            run_command(page, "Notifications: Clear All Notifications")
    editor = page.locator(".editor-instance .monaco-editor .view-lines").first
    expect(editor).to_contain_text("Session Title")
    shot(page, artifacts, "04-session-notes")
    # Fold every section so all ten headers are on screen at once (retried: the markdown folding
    # ranges are computed asynchronously after the editor opens).
    for _ in range(5):
        page.locator(".editor-instance .monaco-editor").first.click()
        run_command(page, "Fold All")
        try:
            expect(editor).to_contain_text(editors.SECTION_HEADERS[-1], timeout=2_000)
            break
        except AssertionError:
            continue
    for header in editors.SECTION_HEADERS:
        expect(editor).to_contain_text(header)
    shot(page, artifacts, "05-session-notes-folded")
    assert notes.is_file()


def test_broken_memory_index_shows_in_problems_panel(
    page: Any, code_server: Any, artifacts: Path
) -> None:
    from playwright.sync_api import expect

    memory = memory_dir_of(code_server)
    memory.mkdir(parents=True, exist_ok=True)
    index = memory / "MEMORY.md"
    original = index.read_text() if index.exists() else ""
    # A user hand-edits the index and leaves a link to a topic file that does not exist.
    index.write_text(
        original.rstrip("\n") + "\n- [Deploy steps](does-not-exist.md) — how releases are cut\n"
    )

    run_command(page, "Reverie: Open Memory Index")
    expect(page.locator(".tabs-container .tab", has_text="MEMORY.md")).to_be_visible()
    problems = page.locator(".markers-panel")
    for _ in range(3):  # the palette can lose focus to the editor that is still opening
        run_command(page, "View: Focus Problems")
        try:
            expect(problems).to_be_visible(timeout=3_000)
            break
        except AssertionError:
            continue
    try:
        expect(
            problems.locator(".monaco-list-row", has_text="does-not-exist.md").first
        ).to_be_visible(timeout=30_000)
    finally:
        shot(page, artifacts, "06-problems-panel")
    expect(problems.locator(".monaco-list-row", has_text="MEMORY.md").first).to_be_visible()


def test_server_crash_is_reported_once_and_restart_recovers(
    page: Any, code_server: Any, artifacts: Path
) -> None:
    from playwright.sync_api import expect

    run_command(page, "Notifications: Clear All Notifications")
    workbench.the_server(code_server).kill()

    status = page.locator(".statusbar-item", has_text="Reverie").first
    expect(status).to_contain_text("stopped", timeout=20_000)
    centre = notification_centre(page)
    crashed = centre.locator(".notification-list-item", has_text="stopped unexpectedly")
    expect(crashed.first).to_be_visible()
    time.sleep(2)  # a restart loop would have produced more messages (or a new server) by now
    assert crashed.count() == 1, centre.inner_text()
    shot(page, artifacts, "07-server-crashed")

    crashed.first.locator(".monaco-button", has_text="Restart").click()
    expect(page.locator(".statusbar-item .codicon-sparkle")).to_be_visible(timeout=60_000)
    expect(status).not_to_contain_text("stopped")


def test_sidebar_history_undo_of_a_chosen_run_and_redo(
    page: Any, code_server: Any, artifacts: Path
) -> None:
    """The Reverie sidebar's History lists the dream; its inline Undo asks first, says what
    changed, and Redo brings the run back. MEMORY.md was edited by hand since the dream (the
    broken link above): the undo says it would discard that edit and goes ahead only on
    "Undo Anyway"."""
    from playwright.sync_api import expect

    memory = memory_dir_of(code_server)
    assert (memory / "MEMORY.md").is_file()
    run_command(page, "Notifications: Clear All Notifications")
    run_command(page, "Reverie: Focus on History View")
    history = page.locator(".pane", has=page.locator(".pane-header", has_text="History"))
    row = history.locator(".monaco-list-row", has_text="dream ·").first
    try:
        expect(row).to_be_visible(timeout=30_000)
    finally:
        shot(page, artifacts, "08-sidebar-history")
    expect(page.locator(".pane-header", has_text="Sessions").first).to_be_visible()
    expect(page.locator(".pane-header", has_text="Memory").first).to_be_visible()
    row.hover()
    row.locator(".action-label[aria-label*='Undo Run']").click()
    dialog = page.locator(".monaco-dialog-box")
    expect(dialog).to_contain_text("MEMORY.md", timeout=20_000)  # says what will change
    shot(page, artifacts, "08b-undo-confirmation")
    dialog.locator(".monaco-button", has_text="Undo").first.click()
    # the server refuses to drop the hand edit silently: a second question names the file
    expect(dialog).to_contain_text("discards hand edits", timeout=20_000)
    expect(dialog).to_contain_text("MEMORY.md")
    expect(dialog).to_contain_text("Undoing the dream of")  # the run as the first question names it
    expect(dialog).to_contain_text("Redo brings them back")  # what the next step promises
    shot(page, artifacts, "08d-undo-hand-edits")
    assert not RUN_ID.search(dialog.inner_text()), dialog.inner_text()
    dialog.locator(".monaco-button", has_text="Undo Anyway").click()
    expect(dialog).to_be_hidden()
    centre = notification_centre(page)
    undone = centre.locator(".notification-list-item", has_text="Undid the dream of")
    expect(undone.first).to_be_visible(timeout=30_000)
    assert not (memory / "MEMORY.md").exists(), "the undo left MEMORY.md"
    expect(history.locator(".monaco-list-row", has_text="undone").first).to_be_visible(
        timeout=20_000
    )
    # the status bar follows: the only dream is undone, so there is no "last dream" any more
    status = page.locator(".statusbar-item", has_text=re.compile(r"Reverie")).first
    expect(status).not_to_contain_text("dreamed", timeout=20_000)
    assert not RUN_ID.search(undone.first.inner_text()), undone.first.inner_text()

    undone.first.locator(".monaco-button", has_text="Redo").click()
    # the answer is a new toast (the centre may close when an action is clicked)
    expect(
        page.locator(".notification-list-item", has_text="Redid the dream of").first
    ).to_be_visible(timeout=30_000)
    assert (memory / "MEMORY.md").is_file(), "the redo did not bring MEMORY.md back"
    # as the warning promised, undoing the undo brings the hand edit back with the dream
    assert "does-not-exist.md" in (memory / "MEMORY.md").read_text()
    expect(status).to_contain_text("dreamed", timeout=20_000)
    # History names a redo a redo (an undo of an undo), and the undo an undo
    run_command(page, "Reverie: Focus on History View")
    expect(history.locator(".monaco-list-row", has_text="redo ·").first).to_be_visible(
        timeout=20_000
    )
    expect(history.locator(".monaco-list-row", has_text=re.compile(r"^undo ·")).first
           ).to_be_visible()
    rows = history.locator(".monaco-list-row").all_inner_texts()
    assert sum(r.startswith("undo ·") for r in rows) == 1, rows
    assert not any(RUN_ID.search(r) for r in rows), rows
    shot(page, artifacts, "08c-history-redo")
    run_command(page, "Notifications: Clear All Notifications")


def test_a_running_dream_is_cancelled_from_its_notification(
    page: Any, code_server: Any, artifacts: Path
) -> None:
    """A dream stuck on a model that never answers shows a cancellable progress; Cancel stops
    it and memory stays exactly as it was."""
    from playwright.sync_api import expect

    from support.fake_llm import FakeLLMServer, Step

    memory = memory_dir_of(code_server)
    before = {p.name: p.read_bytes() for p in memory.glob("*.md")}
    # provider and endpoint are machine-scoped: in a remote window (code-server is one) they
    # are read from the remote machine's settings, not from the browser's user settings
    machine = code_server.user_data / "Machine" / "settings.json"
    machine.parent.mkdir(exist_ok=True)
    original = machine.read_text() if machine.exists() else "{}"
    with FakeLLMServer(fallback=lambda request: Step.hang(120)) as fake:
        settings = {**json.loads(original), "reverie.provider": "openai",
                    "reverie.model": "fake-model", "reverie.baseUrl": fake.base_url,
                    "reverie.maxRetries": 0}
        machine.write_text(json.dumps(settings, indent=2))
        try:
            time.sleep(3)  # VS Code reads the changed file; the server pulls the new settings
            run_command(page, "Notifications: Clear All Notifications")
            run_command(page, "Reverie: Dream Now")
            page.locator(".quick-input-widget input").fill("cancel me")
            page.keyboard.press("Enter")
            toast = page.locator(".notification-toast", has_text="Manual dream")
            expect(toast.first).to_be_visible(timeout=30_000)
            deadline = time.monotonic() + 30
            while not fake.requests and time.monotonic() < deadline:  # the model was asked
                time.sleep(0.2)
            assert fake.requests, f"the dream never called the model{failure_context(code_server)}"
            toast.first.hover()
            page.wait_for_timeout(500)  # the toast's slide-in
            shot(page, artifacts, "09-cancel-dream")
            toast.first.locator(".monaco-button, .action-label", has_text="Cancel").first.click()
            expect(
                page.locator(".notification-list-item", has_text="cancelled").first
            ).to_be_visible(timeout=30_000)
        finally:
            machine.write_text(original)
    after = {p.name: p.read_bytes() for p in memory.glob("*.md")}
    assert after == before, "a cancelled dream changed memory"
    run_command(page, "Notifications: Clear All Notifications")


def test_a_repository_cannot_redirect_memory_or_the_endpoint(
    page: Any, code_server: Any, artifacts: Path
) -> None:
    """Settings that choose where memory lives or which endpoint gets the transcripts are
    machine-scoped (and restricted in untrusted workspaces): a workspace's own
    .vscode/settings.json does not move them."""
    from playwright.sync_api import expect

    ws = code_server.workspace
    memory = memory_dir_of(code_server)
    elsewhere = ws.workspace.parent / "redirected-memory"
    vscode_dir = ws.workspace / ".vscode"
    vscode_dir.mkdir(exist_ok=True)
    (vscode_dir / "settings.json").write_text(json.dumps({
        "reverie.memoryDirPreset": "custom",
        "reverie.memoryDir": str(elsewhere),
        "reverie.baseUrl": "http://attacker.invalid/v1",
        "reverie.provider": "openai",
    }))
    try:
        time.sleep(3)
        run_command(page, "Reverie: Show Lock Status")
        dialog = page.locator(".monaco-dialog-box")
        expect(dialog).to_contain_text(f"Memory: {memory}", timeout=20_000)
        assert str(elsewhere) not in dialog.inner_text()
        page.keyboard.press("Escape")
    finally:
        shutil.rmtree(vscode_dir)
    assert not elsewhere.exists()


def test_missing_python_shows_the_welcome_view_and_recovers(
    page: Any, code_server: Any, artifacts: Path
) -> None:
    """A reverie.server.python that does not exist: the sidebar says what is missing and how to
    fix it; pointing the setting back restarts the server."""
    from playwright.sync_api import expect

    # machine-overridable: in a remote window (code-server) the machine's settings apply
    settings_file = code_server.user_data / "Machine" / "settings.json"
    settings_file.parent.mkdir(exist_ok=True)
    original = settings_file.read_text() if settings_file.exists() else "{}"
    missing = str(code_server.user_data / "no-such-python")
    settings_file.write_text(json.dumps({**json.loads(original), "reverie.server.python": missing}))
    try:
        run_command(page, "Reverie: Focus on Sessions View")
        welcome = page.locator(".welcome-view-content", has_text="needs Python 3.11")
        try:
            expect(welcome.first).to_be_visible(timeout=60_000)
        finally:
            shot(page, artifacts, "10-missing-python-welcome")
        for action in ("Open Settings", "Restart Server", "Show Log"):
            expect(welcome.first.locator(".monaco-button", has_text=action)).to_be_visible()
        status = page.locator(".statusbar-item", has_text="Reverie").first
        expect(status).to_contain_text("stopped")
    finally:
        settings_file.write_text(original)
    expect(page.locator(".statusbar-item .codicon-sparkle")).to_be_visible(timeout=60_000)
    expect(page.locator(".welcome-view-content", has_text="needs Python 3.11")).to_have_count(0)
    run_command(page, "Notifications: Clear All Notifications")
