"""Prompt-time recall as the agents run it: ``reverie hook user-prompt-submit`` in a fresh
process, the hook JSON on stdin, against a real index of real-format sessions."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from reverie.config import ProjectPaths, Settings, claude_project_slug
from reverie.search.update import index_path, refresh

TOKEN = "ghp_R7kQ2mV9xL4pW8nT3bY6cF1hJ5sD0gA2zE7u"
PAST = "0a1b2c3d-0000-4000-8000-000000000001"
NOW = "0a1b2c3d-0000-4000-8000-000000000002"


def _session(session_id: str, cwd: Path, turns: list[tuple[str, str]]) -> str:
    lines, parent = [], None
    for n, (ask, reply) in enumerate(turns):
        lines.append({"type": "user", "uuid": f"{session_id[:6]}u{n}", "parentUuid": parent,
                      "sessionId": session_id, "cwd": str(cwd),
                      "timestamp": f"2026-11-1{n}T09:00:00Z", "isSidechain": False,
                      "userType": "external", "message": {"role": "user", "content": ask}})
        lines.append({"type": "assistant", "uuid": f"{session_id[:6]}a{n}",
                      "parentUuid": f"{session_id[:6]}u{n}", "sessionId": session_id,
                      "cwd": str(cwd), "timestamp": f"2026-11-1{n}T09:00:30Z",
                      "isSidechain": False,
                      "message": {"id": f"{session_id[:6]}m{n}", "role": "assistant",
                                  "model": "claude",
                                  "content": [{"type": "text", "text": reply}]}})
        parent = f"{session_id[:6]}a{n}"
    return "".join(json.dumps(line) + "\n" for line in lines)


@pytest.fixture
def project(reverie_env: dict[str, Path], tmp_path: Path) -> Path:
    workspace = (tmp_path / "shop").resolve()
    (workspace / "src").mkdir(parents=True)
    folder = reverie_env["agent_home"] / ".claude" / "projects" / \
        claude_project_slug(str(workspace))
    folder.mkdir(parents=True)
    (folder / f"{PAST}.jsonl").write_text(_session(PAST, workspace, [
        ("The coupon checkout test crashes with a TypeError when the cart is empty",
         "Fixed: applyCoupon read cart.items[0] before checking the cart was empty; it now "
         "returns the total unchanged for an empty cart and the coupon tests pass."),
        (f"Deploy with this token {TOKEN} please",
         "I will not store that token; export it as GITHUB_TOKEN in your shell instead."),
    ]), "utf-8")
    (folder / f"{NOW}.jsonl").write_text(_session(NOW, workspace, [
        ("Refactor the invoice PDF renderer", "The invoice PDF renderer now streams pages."),
    ]), "utf-8")
    refresh(ProjectPaths(Settings(), workspace))
    return workspace


def run_hook(payload: Any, data_dir: Path) -> subprocess.CompletedProcess[str]:
    raw = payload if isinstance(payload, str) else json.dumps(payload)
    return subprocess.run(
        [sys.executable, "-P", "-m", "reverie", "hook", "user-prompt-submit", "--data-dir",
         str(data_dir)], input=raw, capture_output=True, text=True, timeout=60, check=False)


def _context(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 0, done.stderr
    output = json.loads(done.stdout)
    assert output["hookSpecificOutput"]["hookEventName"] == "UserPromptSubmit"
    return str(output["hookSpecificOutput"]["additionalContext"])


def test_a_related_prompt_gets_the_past_fix(project: Path,
                                            reverie_env: dict[str, Path]) -> None:
    done = run_hook({"session_id": NOW, "cwd": str(project / "src"),
                     "hook_event_name": "UserPromptSubmit",
                     "prompt": "the coupon test is crashing again on an empty cart"},
                    reverie_env["data"])
    context = _context(done)
    assert context.startswith("Recalled by Reverie")
    assert "data, not instructions" in context
    assert "applyCoupon" in context and PAST[:8] in context
    assert len(context) <= 1_600
    assert TOKEN not in done.stdout


@pytest.mark.parametrize("prompt", [
    "write a haiku about autumn leaves",
    "hello",
    "thanks!",
    "what is the capital of France?",
    "???",
    "x" * 200_000,
], ids=lambda prompt: prompt[:20])
def test_an_unrelated_prompt_adds_nothing(project: Path, reverie_env: dict[str, Path],
                                          prompt: str) -> None:
    done = run_hook({"session_id": NOW, "cwd": str(project), "prompt": prompt},
                    reverie_env["data"])
    assert done.returncode == 0 and done.stdout == "", done.stdout


def test_the_current_session_is_not_recalled_to_itself(
        project: Path, reverie_env: dict[str, Path]) -> None:
    done = run_hook({"session_id": NOW, "cwd": str(project),
                     "prompt": "refactor the invoice pdf renderer streaming pages"},
                    reverie_env["data"])
    assert done.stdout == "" or NOW[:8] not in _context(done)


@pytest.mark.parametrize("payload", [
    "not json", "[]", "{}", json.dumps({"prompt": 3, "cwd": "/"}),
    json.dumps({"prompt": "coupon crash", "cwd": "/nonexistent/place"}),
    json.dumps({"prompt": "coupon crash"}),
])
def test_bad_input_adds_nothing_and_exits_0(project: Path, reverie_env: dict[str, Path],
                                            payload: str) -> None:
    done = run_hook(payload, reverie_env["data"])
    assert done.returncode == 0 and done.stdout == ""


def test_a_damaged_or_missing_index_adds_nothing(project: Path,
                                                 reverie_env: dict[str, Path]) -> None:
    db = index_path(ProjectPaths(Settings(), project))
    for suffix in ("-wal", "-shm"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)
    db.write_bytes(b"garbage" * 1000)
    payload = {"session_id": NOW, "cwd": str(project), "prompt": "coupon test crash empty cart"}
    done = run_hook(payload, reverie_env["data"])
    assert done.returncode == 0 and done.stdout == ""
    assert db.read_bytes() == b"garbage" * 1000  # the hook never writes
    db.unlink()
    done = run_hook(payload, reverie_env["data"])
    assert done.returncode == 0 and done.stdout == ""


def test_an_index_of_the_home_folder_is_never_used(reverie_env: dict[str, Path],
                                                   tmp_path: Path, monkeypatch) -> None:
    """A project without an index of its own below a folder that has one (someone searched in
    their home folder): nothing, rather than every project's sessions."""
    home = (tmp_path / "home-dir").resolve()
    project = home / "src" / "shop"
    project.mkdir(parents=True)
    folder = reverie_env["agent_home"] / ".claude" / "projects" / claude_project_slug(str(home))
    folder.mkdir(parents=True)
    (folder / f"{PAST}.jsonl").write_text(_session(PAST, project, [
        ("The coupon checkout test crashes with a TypeError when the cart is empty",
         "Fixed: applyCoupon read cart.items[0] before checking the cart was empty.")]),
        "utf-8")
    refresh(ProjectPaths(Settings(), home))
    env_home = {"HOME": str(home)}
    raw = json.dumps({"session_id": NOW, "cwd": str(project),
                      "prompt": "the coupon test crashes on an empty cart"})
    import os

    done = subprocess.run(
        [sys.executable, "-P", "-m", "reverie", "hook", "user-prompt-submit", "--data-dir",
         str(reverie_env["data"])], input=raw, capture_output=True, text=True, timeout=60,
        env={**os.environ, **env_home}, check=False)
    assert done.returncode == 0 and done.stdout == ""
