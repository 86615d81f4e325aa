"""What the agent was given: ``reverie connect`` a real Claude Code setup, run its hooks as the
agent does (fresh processes, hook JSON on stdin), then ``reverie connections --given`` shows
exactly what each hook sent and what every session start loads, with token sizes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from reverie.config import ProjectPaths, Settings, claude_project_slug
from reverie.search.update import refresh

pytestmark = pytest.mark.e2e

SESSION = "0a1b2c3d-0000-4000-8000-0000000000aa"
INDEX = "# Memory\n\n- [Checkout](checkout.md) - coupon rules; the empty-cart guard\n"
TOPIC = ("---\nname: Checkout\ndescription: coupon rules\ntype: project\n---\n\n# Checkout\n\n"
         "- applyCoupon returns the total unchanged for an empty cart.\n")


PAST = "0a1b2c3d-0000-4000-8000-0000000000bb"


def _transcript(session_id: str, cwd: Path, turns: list[tuple[str, str]]) -> str:
    lines, parent = [], None
    for n, (ask, reply) in enumerate(turns):
        lines.append({"type": "user", "uuid": f"{session_id[-2:]}u{n}", "parentUuid": parent,
                      "sessionId": session_id, "cwd": str(cwd),
                      "timestamp": f"2026-11-1{n}T09:00:00Z", "isSidechain": False,
                      "userType": "external", "message": {"role": "user", "content": ask}})
        lines.append({"type": "assistant", "uuid": f"{session_id[-2:]}a{n}",
                      "parentUuid": f"{session_id[-2:]}u{n}", "sessionId": session_id,
                      "cwd": str(cwd), "timestamp": f"2026-11-1{n}T09:00:30Z",
                      "isSidechain": False,
                      "message": {"id": f"{session_id[-2:]}m{n}", "role": "assistant",
                                  "model": "claude",
                                  "content": [{"type": "text", "text": reply}]}})
        parent = f"{session_id[-2:]}a{n}"
    return "".join(json.dumps(line) + "\n" for line in lines)


def reverie(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-P", "-m", "reverie", *args], input=stdin,
                          capture_output=True, text=True, timeout=60, check=False)


@pytest.fixture
def project(reverie_env: dict[str, Path], tmp_path: Path) -> Path:
    workspace = (tmp_path / "shop").resolve()
    workspace.mkdir()
    folder = reverie_env["agent_home"] / ".claude" / "projects" / \
        claude_project_slug(str(workspace))
    folder.mkdir(parents=True)
    (folder / f"{PAST}.jsonl").write_text(_transcript(PAST, workspace, [
        ("The coupon checkout test crashes with a TypeError when the cart is empty",
         "Fixed: applyCoupon read cart.items[0] before checking the cart was empty; it now "
         "returns the total unchanged for an empty cart and the coupon tests pass."),
        ("Deploy the staging build", "Staging runs scripts/deploy-blue-green.sh now."),
    ]), "utf-8")
    (folder / f"{SESSION}.jsonl").write_text(_transcript(SESSION, workspace, [
        ("Refactor the invoice PDF renderer", "The invoice PDF renderer now streams pages."),
    ]), "utf-8")
    paths = ProjectPaths(Settings(), workspace)
    paths.memory_dir.mkdir(parents=True)
    (paths.memory_dir / "MEMORY.md").write_text(INDEX, "utf-8")
    (paths.memory_dir / "checkout.md").write_text(TOPIC, "utf-8")
    notes = paths.notes_path(SESSION)
    notes.parent.mkdir(parents=True)
    notes.write_text("# Session Title\n_A short title_\nCoupon crash on an empty cart\n\n"
                     "# Current State\n_Where things stand_\nGuard added; tests pass.\n",
                     "utf-8")
    refresh(paths)
    return workspace


def _given(workspace: Path) -> dict[str, Any]:
    done = reverie("connections", "--given", "--workspace", str(workspace), "--json")
    assert done.returncode == 0, done.stderr
    return dict(json.loads(done.stdout))


def test_connections_given_shows_blocks_memory_and_what_the_hooks_last_sent(
    project: Path, reverie_env: dict[str, Path]
) -> None:
    connected = reverie("connect", "claude-code", "--scope", "personal", "--workspace",
                        str(project))
    assert connected.returncode == 0, connected.stderr
    before = _given(project)
    [claude] = before["agents"]
    assert claude["agent"] == "claude-code" and claude["mode"] == "import"
    kinds = [p["kind"] for p in claude["parts"]]
    assert kinds[:2] == ["block", "memory"] and "session-start" in kinds and "prompt" in kinds
    block, memory = claude["parts"][:2]
    assert block["path"] == str(project / "CLAUDE.local.md")
    assert block["text"] in (project / "CLAUDE.local.md").read_text("utf-8")
    assert "@" in block["text"] and memory["text"] == INDEX
    for part in claude["parts"]:
        assert part["tokens"] == round(len(part["text"]) / 4)
    assert claude["start_tokens"] == block["tokens"] + memory["tokens"]
    hooks = {p["kind"]: p for p in claude["parts"] if p["kind"] in ("session-start", "prompt")}
    assert all(p["when"] == "not sent yet" and not p["text"] for p in hooks.values())

    start = reverie("hook", "session-start", stdin=json.dumps({
        "session_id": SESSION, "cwd": str(project), "hook_event_name": "SessionStart",
        "source": "compact"}))
    assert start.returncode == 0, start.stderr
    sent_start = json.loads(start.stdout)["hookSpecificOutput"]["additionalContext"]
    prompt = reverie("hook", "user-prompt-submit", stdin=json.dumps({
        "session_id": SESSION, "cwd": str(project), "hook_event_name": "UserPromptSubmit",
        "prompt": "the coupon test is crashing again on an empty cart"}))
    assert prompt.returncode == 0, prompt.stderr
    sent_prompt = json.loads(prompt.stdout)["hookSpecificOutput"]["additionalContext"]

    after = {p["kind"]: p for p in _given(project)["agents"][0]["parts"]}
    assert after["session-start"]["text"] == sent_start
    assert after["session-start"]["session_id"] == SESSION
    assert after["prompt"]["text"] == sent_prompt and "applyCoupon" in sent_prompt
    assert after["prompt"]["when"].startswith("last sent ")
    assert after["prompt"]["tokens"] == round(len(sent_prompt) / 4) > 0

    # a prompt with nothing relevant: the view says nothing was added
    quiet = reverie("hook", "user-prompt-submit", stdin=json.dumps({
        "session_id": SESSION, "cwd": str(project), "prompt": "zzzz qqqq xyzzy"}))
    assert quiet.returncode == 0 and quiet.stdout == ""
    latest = {p["kind"]: p for p in _given(project)["agents"][0]["parts"]}
    assert latest["prompt"]["text"] == "" and "nothing was relevant" in latest["prompt"]["when"]

    text = reverie("connections", "--given", "--workspace", str(project))
    assert text.returncode == 0, text.stderr
    assert f"~{claude['start_tokens']:,} tokens at every session start" in text.stdout
    assert "CLAUDE.local.md (Reverie's managed block)" in text.stdout


def test_nothing_connected_says_so(project: Path) -> None:
    done = reverie("connections", "--given", "--workspace", str(project))
    assert done.returncode == 0 and "no agent connected" in done.stdout
    missing = reverie("connections", "--given", "--workspace", str(project / "nope"))
    assert missing.returncode == 1 and "not a directory" in missing.stderr
