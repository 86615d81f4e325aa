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
