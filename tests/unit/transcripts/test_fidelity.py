"""Regressions found by running the transcript layer over third-party transcripts (issue 15).

Each test writes records in the agent's documented on-disk shape (see docs/formats.md) and
checks what the normalised model says about them.
"""

from __future__ import annotations

from pathlib import Path

import orjson

from reverie.transcripts.model import ToolKind
from reverie.transcripts.reader import load_transcript
from reverie.transcripts.stats import transcript_stats

CODEX_ID = "0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b"


def _jsonl(path: Path, records: list[dict[str, object]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in records))
    return path


def _codex(tmp_path: Path, items: list[dict[str, object]]) -> Path:
    records: list[dict[str, object]] = [
        {"timestamp": "2026-03-02T10:00:00.000Z", "type": "session_meta",
         "payload": {"id": CODEX_ID, "timestamp": "2026-03-02T10:00:00.000Z", "cwd": "/w/shop",
                     "originator": "codex_cli_rs", "cli_version": "0.46.0"}}]
    for n, item in enumerate(items):
        records.append({"timestamp": f"2026-03-02T10:00:{n + 1:02d}.000Z", **item})
    return _jsonl(tmp_path / f"rollout-2026-03-02T10-00-00-{CODEX_ID}.jsonl", records)


def _call(call_id: str, name: str, arguments: dict[str, object]) -> dict[str, object]:
    return {"type": "response_item",
            "payload": {"type": "function_call", "name": name, "call_id": call_id,
                        "arguments": orjson.dumps(arguments).decode()}}


PATCH = ("apply_patch <<'EOF'\n*** Begin Patch\n*** Update File: src/cart.py\n@@\n-total = 0\n"
         "+total = Decimal(0)\n*** Add File: tests/test_cart.py\n+def test_x(): pass\n"
         "*** End Patch\nEOF\n")


def test_codex_apply_patch_through_the_shell_names_its_files(tmp_path: Path) -> None:
    path = _codex(tmp_path, [
        _call("c1", "shell", {"command": ["bash", "-lc", PATCH], "workdir": "/w/shop"}),
        _call("c2", "exec_command", {"cmd": PATCH}),
        _call("c3", "shell", {"command": ["bash", "-lc", "echo apply_patch is a tool"]}),
        _call("c4", "shell", {"command": ["bash", "-lc", "grep -r '*** Begin Patch' docs"]}),
    ])
    calls = {c.id: c for m in load_transcript(path).messages for c in m.tool_calls}
    for call_id in ("c1", "c2"):
        assert calls[call_id].file_paths == ["/w/shop/src/cart.py", "/w/shop/tests/test_cart.py"]
        assert calls[call_id].kind is ToolKind.EDIT
        assert calls[call_id].command is not None and "Begin Patch" in calls[call_id].command
    for call_id in ("c3", "c4"):  # mentions are not patches
        assert calls[call_id].file_paths == [] and calls[call_id].kind is ToolKind.SHELL


def test_codex_patch_apply_end_changes_are_used(tmp_path: Path) -> None:
    path = _codex(tmp_path, [
        {"type": "response_item", "payload": {"type": "custom_tool_call", "call_id": "p1",
                                              "name": "exec", "input": "await tools.x()"}},
        {"type": "event_msg", "payload": {
            "type": "patch_apply_end", "call_id": "p1", "success": True, "stdout": "Success.",
            "changes": {"/w/shop/a.py": {"type": "update", "unified_diff": "@@\n-a\n+b\n",
                                         "move_path": None},
                        "b.py": {"type": "update", "move_path": "lib/b.py"},
                        "c.py": {"type": "add", "content": "x"}}}},
        {"type": "event_msg", "payload": {"type": "patch_apply_end", "call_id": "p2",
                                          "success": False, "changes": "garbage"}},
    ])
    t = load_transcript(path)
    results = [r for m in t.messages for r in m.tool_results]
    assert results[0].file_paths == ["/w/shop/a.py", "/w/shop/b.py", "/w/shop/lib/b.py",
                                     "/w/shop/c.py"]
    assert results[1].file_paths == [] and results[1].is_error
    assert transcript_stats(t)["files"] == ["/w/shop/a.py", "/w/shop/b.py", "/w/shop/c.py",
                                            "/w/shop/lib/b.py"]
    assert t.stats.skipped == 0


AIDER_RUN = """# aider chat started at 2026-03-02 10:00:00

> C:\\Users\\me\\.venv\\Scripts\\aider.exe
> Aider v0.86.1
> Main model: claude-sonnet-4-5 with diff edit format
> Git repo: .git with 40 files
> Git working dir: {root}

#### fix the connection pool leak in backend/db.py

I will close the pool on shutdown.

> Applied edit to backend\\db.py
> Applied edit to backend/db.py
> Commit 1a2b3c4 fix: close the pool
"""


def test_aider_paths_are_relative_to_the_git_root_and_separators_normalised(
    tmp_path: Path,
) -> None:
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "backend").mkdir()
    # the history written from a sub-folder, names relative to the git root
    history = repo / "backend" / ".aider.chat.history.md"
    history.write_text(AIDER_RUN.format(root=repo), encoding="utf-8")
    t = load_transcript(history)
    assert t.session.cwd == str(repo)
    assert transcript_stats(t)["files"] == [f"{repo}/backend/db.py"]  # one file, not two
    assert t.session.title == "fix the connection pool leak in backend/db.py"
    # without the announcement, the git root enclosing the history is the base
    history.write_text(AIDER_RUN.format(root="").replace("> Git working dir: \n", ""),
                       encoding="utf-8")
    assert transcript_stats(load_transcript(history))["files"] == [f"{repo}/backend/db.py"]


def test_aider_windows_history_keeps_windows_paths(tmp_path: Path) -> None:
    history = tmp_path / ".aider.chat.history.md"
    history.write_text(AIDER_RUN.format(root="C:\\Users\\me\\proj"), encoding="utf-8")
    t = load_transcript(history)
    assert t.session.cwd == "C:\\Users\\me\\proj"
    assert transcript_stats(t)["files"] == ["C:\\Users\\me\\proj\\backend\\db.py"]


def test_aider_history_in_a_sub_folder_is_found_from_the_repo_root(tmp_path: Path) -> None:
    from reverie.transcripts.discovery import aider_history_files, discover_sessions

    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "services" / "api").mkdir(parents=True)
    (repo / "node_modules" / "pkg").mkdir(parents=True)
    sub = repo / "services" / "api" / ".aider.chat.history.md"
    sub.write_text(AIDER_RUN.format(root=repo), encoding="utf-8")
    ignored = repo / "node_modules" / "pkg" / ".aider.chat.history.md"
    ignored.write_text(AIDER_RUN.format(root=repo), encoding="utf-8")
    assert aider_history_files(repo) == [sub]
    refs = discover_sessions(repo, tmp_path / "home")
    assert [r.path for r in refs] == [sub] and refs[0].cwd == str(repo)


GEMINI_HISTORY = {"history": [
    {"role": "user", "parts": [{"text": "list the failing tests"}]},
    {"role": "model", "parts": [{"text": "Running them."},
                                {"functionCall": {"name": "run_shell_command",
                                                  "args": {"command": "npm test"}}}]},
    {"role": "user", "parts": [{"functionResponse": {"name": "run_shell_command",
                                                     "response": {"output": "2 failed"}}}]},
    {"role": "model", "parts": [{"text": "Two tests fail.", "thought": False}]},
]}


def test_gemini_history_document_without_session_id(tmp_path: Path) -> None:
    path = tmp_path / "checkpoint-fix.json"
    path.write_bytes(orjson.dumps(GEMINI_HISTORY, option=orjson.OPT_INDENT_2))
    t = load_transcript(path)
    assert t.session.agent == "gemini-cli"
    assert t.stats.skipped == 0, t.stats.errors
    assert [m.role for m in t.messages] == ["user", "assistant", "tool", "assistant"]
    call = t.messages[1].tool_calls[0]
    assert call.command == "npm test" and call.kind is ToolKind.SHELL
    assert t.messages[2].tool_results[0].call_id == call.id
    assert t.messages[2].tool_results[0].output == "2 failed"
    assert t.session.title == "list the failing tests"
    # the bare-list layout of the same contents
    bare = tmp_path / "checkpoint-bare.json"
    bare.write_bytes(orjson.dumps(GEMINI_HISTORY["history"]))
    assert [m.role for m in load_transcript(bare).messages] == ["user", "assistant", "tool",
                                                                "assistant"]


def test_claude_session_started_in_a_parent_folder_is_found_from_the_sub_folder(
    tmp_path: Path,
) -> None:
    from reverie.transcripts.discovery import discover_sessions

    home = tmp_path / "home"
    sid = "9b1f3c5e-2d4a-4b6c-8e0f-1a2b3c4d5e6f"
    _jsonl(home / ".claude" / "projects" / "-w" / f"{sid}.jsonl", [
        {"type": "user", "uuid": "u1", "sessionId": sid, "cwd": "/w",
         "timestamp": "2026-03-02T10:00:00.000Z", "message": {"role": "user", "content": "hi"}},
        {"type": "user", "uuid": "u2", "sessionId": sid, "cwd": "/w/shop",
         "timestamp": "2026-03-02T10:00:05.000Z", "message": {"role": "user", "content": "go"}},
    ])
    refs = discover_sessions(Path("/w/shop"), home)
    assert [r.session_id for r in refs] == [sid] and refs[0].cwd == "/w/shop"
    assert [r.cwd for r in discover_sessions(Path("/w"), home)] == ["/w"]
    assert discover_sessions(Path("/w/other"), home) == []
