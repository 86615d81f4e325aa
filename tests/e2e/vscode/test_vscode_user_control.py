"""The user in control, in a real VS Code (code-server): the first run's one offer, Connect
Agent's read-only preview with a non-modal confirm, Test Model Connection offline, the first
dream explained and a dream with nothing new reported, an error with the buttons that fix it,
the Memory view's per-entry Pin and Forget (recorded runs in History), the dream-gate hint as a
CodeLens and a quick fix for a broken link. One workbench, the tests run in file order; each
step leaves a screenshot in tests/artifacts/vscode/.
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Any

import pytest

from e2e.vscode import workbench

# one real editor at a time, on one xdist worker (two code-servers on a 2-core machine would
# each miss their timeouts)
pytestmark = [pytest.mark.vscode, pytest.mark.e2e, pytest.mark.xdist_group("real-editors")]

shot = workbench.shot
run_command = workbench.run_command
notification_centre = workbench.notification_centre
failure_context = workbench.failure_context
memory_dir_of = workbench.memory_dir_of

PIN_MARK = "<!-- pinned -->"


def _idle(page: Any) -> None:
    from playwright.sync_api import expect

    expect(page.locator(".statusbar-item .codicon-sparkle")).to_be_visible(timeout=60_000)


def _machine_settings(code_server: Any) -> Path:
    """Provider and endpoint are machine-scoped: in code-server they are read from here."""
    path = code_server.user_data / "Machine" / "settings.json"
    path.parent.mkdir(exist_ok=True)
    return path


def test_first_run_makes_one_offer_that_a_restart_does_not_repeat(
    page: Any, code_server: Any, artifacts: Path
) -> None:
    from playwright.sync_api import expect

    _idle(page)
    centre = notification_centre(page)
    offer = centre.locator(".notification-list-item", has_text="Reverie found Claude Code sessions")
    try:
        expect(offer.first).to_be_visible(timeout=60_000)
    finally:
        shot(page, artifacts, "16-first-run-offer")
    # one message: connecting the agents found, with the tour riding along (not a second toast)
    for action in ("Connect…", "Getting Started", "Not now", "Never"):
        expect(offer.first.locator(".monaco-button", has_text=action)).to_be_visible()
    assert centre.locator(".notification-list-item", has_text="two-minute tour").count() == 0
    assert offer.count() == 1, centre.inner_text()

    run_command(page, "Reverie: Restart Server")
    time.sleep(2)
    _idle(page)
    time.sleep(3)  # the old client asked again after every start
    # the extension logs each offer it makes: one, before and after the restart
    offers = re.findall(r"connect offer for ", code_server.exthost_logs())
    assert len(offers) == 1, code_server.exthost_logs()
    run_command(page, "Notifications: Clear All Notifications")


def test_connect_agent_previews_a_read_only_diff_and_asks_without_a_modal(
    page: Any, code_server: Any, artifacts: Path
) -> None:
    from playwright.sync_api import expect

    run_command(page, "Reverie: Connect Agent…")
    picker = page.locator(".quick-input-widget")
    picker.locator(".monaco-list-row", has_text="Claude Code").first.click(timeout=30_000)
    picker.locator(".monaco-list-row", has_text="Personal").first.click(timeout=30_000)
    tab = page.locator(".tabs-container .tab", has_text="Connect Claude Code")
    expect(tab.first).to_be_visible(timeout=30_000)
    confirm = page.locator(".notification-toast", has_text="Connect Claude Code (personal)?")
    expect(confirm.first).to_be_visible(timeout=30_000)
    page.wait_for_timeout(800)  # the diff decorations and the toast's slide-in
    shot(page, artifacts, "12-connect-preview")
    # read-only virtual documents: nothing dirty, no modal greying the diff out
    assert page.locator(".tabs-container .tab.dirty").count() == 0
    assert page.locator(".monaco-dialog-box").count() == 0
    assert page.locator(".tabs-container .tab", has_text="/dev/null").count() == 0

    confirm.first.locator(".monaco-button", has_text="Connect").first.click()
    done = page.locator(".notification-toast", has_text="Claude Code connected")
    expect(done.first).to_be_visible(timeout=30_000)
    # the status bar's tooltip follows at once
    status = page.locator(".statusbar-item", has_text="Reverie").first
    deadline = time.monotonic() + 20
    while True:
        status.hover()
        hover = page.locator(".monaco-hover, .workbench-hover").filter(has_text="Connected agents")
        try:
            expect(hover.first).to_contain_text("claude-code (personal", timeout=2_000)
            break
        except AssertionError:
            if time.monotonic() > deadline:
                raise
            page.mouse.move(700, 400)
    shot(page, artifacts, "12b-connect-confirm")
    page.mouse.move(700, 400)
    run_command(page, "View: Close All Editors")
    page.wait_for_timeout(500)
    assert page.locator(".monaco-dialog-box").count() == 0, "closing the preview asked to save"
    run_command(page, "Notifications: Clear All Notifications")


def test_model_test_offline_says_there_is_nothing_to_test(
    page: Any, code_server: Any, artifacts: Path
) -> None:
    from playwright.sync_api import expect

    run_command(page, "Reverie: Test Model Connection")
    toast = page.locator(".notification-toast", has_text="offline engine, which needs no model")
    expect(toast.first).to_be_visible(timeout=30_000)
    expect(toast.first.locator(".monaco-button", has_text="Choose Provider")).to_be_visible()
    assert "Latency" not in toast.first.inner_text()
    assert page.locator(".monaco-dialog-box").count() == 0
    toast.first.hover()
    page.wait_for_timeout(1_000)  # the toast's slide-in, the test's progress fading out
    shot(page, artifacts, "14-model-test-offline")
    run_command(page, "Notifications: Clear All Notifications")


def _dream_now(page: Any) -> None:
    run_command(page, "Reverie: Dream Now")
    page.locator(".quick-input-widget input").wait_for(state="visible")
    page.keyboard.press("Enter")


def test_first_dream_is_explained_and_a_dream_with_nothing_new_says_so(
    page: Any, code_server: Any, artifacts: Path
) -> None:
    from playwright.sync_api import expect

    memory = memory_dir_of(code_server)
    assert not (memory / "MEMORY.md").exists()
    _dream_now(page)
    centre = notification_centre(page)
    built = centre.locator(".notification-list-item",
                           has_text=re.compile(r"Reverie built your first memory from 1 session"))
    try:
        expect(built.first).to_be_visible(timeout=90_000)
        building = "Reverie is building your first memory"
        expect(centre.locator(".notification-list-item", has_text=building).first).to_be_visible()
    except AssertionError as exc:
        shot(page, artifacts, "13-first-memory-missing")
        context = f"{centre.inner_text()}{failure_context(code_server)}"
        raise AssertionError(f"{exc}\n{context}") from None
    assert "improved" not in centre.inner_text()
    shot(page, artifacts, "13-first-memory")
    run_command(page, "Notifications: Clear All Notifications")

    before = {p.name: p.read_bytes() for p in memory.glob("*.md")}
    _dream_now(page)
    centre = notification_centre(page)
    nothing = centre.locator(".notification-list-item", has_text="found nothing new to remember")
    try:
        expect(nothing.first).to_be_visible(timeout=90_000)
        # the job's progress closes once it has ended (after its fade)
        expect(page.locator(".notification-list-item", has_text="validating and applying")
               ).to_have_count(0, timeout=10_000)
        page.wait_for_timeout(800)
    finally:
        shot(page, artifacts, "13b-nothing-new")
    assert {p.name: p.read_bytes() for p in memory.glob("*.md")} == before
    run_command(page, "Notifications: Clear All Notifications")


def test_a_dream_that_cannot_run_says_why_with_the_buttons_that_fix_it(
    page: Any, code_server: Any, artifacts: Path
) -> None:
    from playwright.sync_api import expect

    machine = _machine_settings(code_server)
    original = machine.read_text() if machine.exists() else "{}"
    # Anthropic with no key anywhere (the test environment only has a fake OpenAI key)
    machine.write_text(json.dumps({**json.loads(original), "reverie.provider": "anthropic"}))
    try:
        time.sleep(3)  # VS Code reads the file; the server pulls the new settings
        _dream_now(page)
        toast = page.locator(".notification-toast", has_text="did not run")
        try:
            expect(toast.first).to_be_visible(timeout=60_000)
            toast.first.hover()
            page.wait_for_timeout(800)  # the toast's slide-in, for the screenshot
        finally:
            shot(page, artifacts, "14b-dream-error-actions")
        text = toast.first.inner_text()
        assert "missing_llm_client" not in text and "dream skipped" not in text, text
        assert "no model could be used" in text, text
        # the editor's own commands, not the shell's environment variables
        assert "REVERIE_API_KEY" not in text and "ANTHROPIC_API_KEY" not in text, text
        for action in ("Set API Key", "Choose Provider", "Show Log"):
            expect(toast.first.locator(".monaco-button", has_text=action)).to_be_visible()
    finally:
        machine.write_text(original)
    time.sleep(3)
    run_command(page, "Notifications: Clear All Notifications")


def _memory_view(page: Any) -> Any:
    run_command(page, "Reverie: Focus on Memory View")
    return page.locator(".pane", has=page.locator(".pane-header", has_text="Memory"))


def test_memory_view_counts_only_problems_and_pins_and_forgets_an_entry(
    page: Any, code_server: Any, artifacts: Path
) -> None:
    from playwright.sync_api import expect

    memory = memory_dir_of(code_server)
    index = memory / "MEMORY.md"
    view = _memory_view(page)
    row = view.locator(".monaco-list-row[aria-level='1']", has_text="MEMORY.md").first
    expect(row).to_be_visible(timeout=30_000)
    # a clean index has no problem (the dream-gate hint is not one)
    assert "problem" not in row.inner_text(), row.inner_text()
    if row.get_attribute("aria-expanded") != "true":
        row.locator(".monaco-tl-twistie").click()
    lines = index.read_text().splitlines()
    first = next(i for i, line in enumerate(lines) if line.startswith("- ["))
    title = re.match(r"- \[([^\]]+)\]", lines[first]).group(1)  # type: ignore[union-attr]
    entry = view.locator(".monaco-list-row", has_text=title).first
    expect(entry).to_be_visible(timeout=20_000)
    entry.hover()
    entry.locator(".action-label[aria-label*='Pin Entry']").click()
    pinned = page.locator(".notification-toast", has_text=f"Pinned MEMORY.md:{first + 1}")
    expect(pinned.first).to_be_visible(timeout=30_000)
    assert index.read_text().splitlines()[first].endswith(PIN_MARK)
    expect(view.locator(".monaco-list-row", has_text="pinned").first).to_be_visible(timeout=20_000)
    shot(page, artifacts, "15-memory-entries")
    run_command(page, "Notifications: Clear All Notifications")

    # Forget a topic file's entry (inline action, also in the context menu): a run in History
    topic = sorted(p for p in memory.glob("*.md") if p.name != "MEMORY.md")[0]
    topic_row = view.locator(".monaco-list-row[aria-level='1']", has_text=topic.name).first
    if topic_row.get_attribute("aria-expanded") != "true":
        topic_row.locator(".monaco-tl-twistie").click()
    body = topic.read_text().split("\n---\n", 1)[1]  # after the front matter
    fact = next(line for line in body.splitlines()
                if line.startswith("- ") and PIN_MARK not in line)
    shown = fact[2:].strip()[:30]
    fact_row = view.locator(".monaco-list-row", has_text=shown).first
    expect(fact_row).to_be_visible(timeout=20_000)
    fact_row.hover()
    fact_row.locator(".action-label[aria-label*='Forget Entry']").click()
    ask = page.locator(".notification-toast", has_text="You can undo it")
    try:
        expect(ask.first).to_be_visible(timeout=20_000)
    finally:
        shot(page, artifacts, "15e-forget-confirm")
    ask.first.locator(".monaco-button", has_text="Forget").first.click()
    expect(page.locator(".notification-toast", has_text="Forgot").first).to_be_visible(
        timeout=30_000
    )
    assert fact not in topic.read_text()
    run_command(page, "Reverie: Focus on History View")
    history = page.locator(".pane", has=page.locator(".pane-header", has_text="History"))
    expect(history.locator(".monaco-list-row", has_text="forget ·").first).to_be_visible(
        timeout=30_000
    )
    expect(history.locator(".monaco-list-row", has_text="pin ·").first).to_be_visible()
    shot(page, artifacts, "15d-forget-in-history")
    run_command(page, "Notifications: Clear All Notifications")


def test_gate_hint_is_a_codelens_and_a_broken_link_has_a_quick_fix(
    page: Any, code_server: Any, artifacts: Path
) -> None:
    from playwright.sync_api import expect

    memory = memory_dir_of(code_server)
    index = memory / "MEMORY.md"
    (memory / "deploy.md").write_text(
        "---\nname: Deploy\ndescription: how releases are cut\ntype: project\n---\n\n"
        "# Deploy\n\n- tag, then push the tag\n")
    index.write_text(index.read_text().rstrip("\n") + "\n- [Deploy](deploi.md) - releases\n")
    run_command(page, "Reverie: Open Memory Index")
    expect(page.locator(".tabs-container .tab", has_text="MEMORY.md").first).to_be_visible()
    lens = page.locator(".contentWidgets .codelens-decoration, .codelens-decoration")
    try:
        expect(lens.filter(has_text="Next dream").first).to_be_visible(timeout=30_000)
    finally:
        shot(page, artifacts, "15b-gate-codelens")
    # the Problems panel lists the broken link, not the gate hint
    problems = page.locator(".markers-panel")
    for _ in range(3):
        run_command(page, "View: Focus Problems")
        try:
            expect(problems).to_be_visible(timeout=3_000)
            break
        except AssertionError:
            continue
    expect(problems.locator(".monaco-list-row", has_text="deploi.md").first).to_be_visible(
        timeout=30_000
    )
    assert problems.locator(".monaco-list-row", has_text="Next dream").count() == 0

    # the quick fix on the broken link's line
    line = len(index.read_text().splitlines())
    page.locator(".editor-instance .monaco-editor").first.click()
    run_command(page, "Go to Line/Column...")
    page.keyboard.type(f"{line}:20")
    page.keyboard.press("Enter")
    fix = page.locator(".action-widget, .context-view").filter(
        has_text="Change the link to deploy.md"
    )
    try:
        workbench.code_actions(page, fix.first)
    finally:
        shot(page, artifacts, "15c-quick-fix")
    page.keyboard.press("Enter")  # the preferred fix is the one focused
    page.wait_for_timeout(500)
    page.keyboard.press("Control+s")
    deadline = time.monotonic() + 20
    while "(deploy.md)" not in index.read_text() and time.monotonic() < deadline:
        time.sleep(0.3)
    assert "(deploy.md)" in index.read_text(), index.read_text()
    run_command(page, "View: Close All Editors")


def test_a_reviewed_dream_is_a_read_only_diff_and_lands_only_when_accepted(
    page: Any, code_server: Any, artifacts: Path
) -> None:
    import uuid
    from datetime import UTC, datetime

    from playwright.sync_api import expect

    ws = code_server.workspace
    memory = memory_dir_of(code_server)
    # the agent's session goes on: something new to remember
    records = [json.loads(line) for line in ws.transcript.read_text().splitlines() if line]
    last = next(r for r in reversed(records) if r.get("type") == "user")
    note = {**last, "uuid": str(uuid.uuid4()), "parentUuid": records[-1].get("uuid"),
            "timestamp": datetime.now(UTC).isoformat().replace("+00:00", "Z"),
            "message": {"role": "user",
                        "content": "Remember: run `mix format` before every commit."}}
    with ws.transcript.open("a") as out:
        out.write(json.dumps(note) + "\n")
    machine = _machine_settings(code_server)
    original = machine.read_text() if machine.exists() else "{}"
    machine.write_text(json.dumps({**json.loads(original), "reverie.dreamReview": "always"}))
    try:
        time.sleep(3)  # VS Code reads the file; the server pulls the new settings
        before = {p.name: p.read_bytes() for p in memory.glob("*.md")}
        run_command(page, "Notifications: Clear All Notifications")
        _dream_now(page)
        offer = page.locator(".notification-toast", has_text="proposes")
        try:
            expect(offer.first).to_be_visible(timeout=90_000)
            offer.first.hover()
            page.wait_for_timeout(1_500)  # the toast's slide-in, the job's toast closing
        finally:
            shot(page, artifacts, "17-review-offer")
        assert {p.name: p.read_bytes() for p in memory.glob("*.md")} == before  # not yet
        offer.first.locator(".monaco-button", has_text="Review").first.click()
        tab = page.locator(".tabs-container .tab", has_text="review the dream")
        expect(tab.first).to_be_visible(timeout=30_000)
        picker = page.locator(".quick-input-widget")
        expect(picker).to_contain_text("accept which changes", timeout=30_000)
        page.wait_for_timeout(800)
        shot(page, artifacts, "17b-review-diff")
        assert page.locator(".tabs-container .tab.dirty").count() == 0
        # accept some: untick one file the dream only changed (not the index, not a new file)
        rows = picker.locator(".monaco-list-row")
        labels = [(r.locator(".label-name").first.inner_text(), r.inner_text())
                  for r in rows.all()]
        left_out = next((name for name, text in labels if name != "MEMORY.md"
                         and "changed" in text and "mix format" not in text), None)
        total = len(labels)
        if left_out is not None:
            rows.filter(has_text=left_out).first.locator(".monaco-checkbox").first.click()
            page.wait_for_timeout(300)
        page.keyboard.press("Enter")
        accepted = page.locator(".notification-toast", has_text="Accepted")
        expect(accepted.first).to_be_visible(timeout=30_000)
        message = accepted.first.inner_text()
        # nothing waits any more: the Memory view's pending node is gone
        run_command(page, "Reverie: Focus on Memory View")
        expect(page.locator(".pane", has=page.locator(".pane-header", has_text="Memory"))
               .locator(".monaco-list-row", has_text="waits for you")).to_have_count(
                   0, timeout=20_000)
        if accepted.count():
            accepted.first.hover()
        page.wait_for_timeout(800)
        if left_out is not None:
            assert f"Accepted {total - 1} of {total} staged files" in message, message
            assert f"discarded {left_out}" in message, message
            assert (memory / left_out).read_bytes() == before[left_out]
        else:
            assert f"Accepted {total} of {total}" in message, message
        shot(page, artifacts, "17c-review-accepted")
    finally:
        machine.write_text(original)
    after = "".join(p.read_text() for p in memory.glob("*.md"))
    assert "mix format" in after, after
    run_command(page, "View: Close All Editors")
    run_command(page, "Notifications: Clear All Notifications")
