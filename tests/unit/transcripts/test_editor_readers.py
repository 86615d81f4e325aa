"""The editor's agents' readers against the fixtures: counts match an independent count of the
raw files, a drift test pins what is read, and bad input is a counted skip, never a crash."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from reverie.transcripts.model import ToolKind
from reverie.transcripts.reader import detect_agent, load_transcript
from reverie.transcripts.stats import transcript_stats

FIX = Path(__file__).resolve().parents[2] / "fixtures" / "transcripts"
#: built from source types (tests/fixtures/transcripts/SOURCES.md): a session document (agent
#: mode: string replacements with their edit groups, a text search), the same session as a
#: compacted one-line log, a log that grows (a request in the initial state, input edits, a
#: second request pushed), and a chat opened empty and then asked something
COPILOT_JSON = (FIX / "copilot-chat/source-types/chatSessions/"
                "3f8e2b7c-9a41-4d6e-b0c5-7e1d2a9f4b68.json")
COPILOT_LOG = (FIX / "copilot-chat/source-types/chatSessions/"
               "8c2d4e6f-1a3b-4c5d-9e7f-0a1b2c3d4e5f.jsonl")
COPILOT_ONE_LINE = (FIX / "copilot-chat/source-types-log/chatSessions/"
                    "3f8e2b7c-9a41-4d6e-b0c5-7e1d2a9f4b68.jsonl")
COPILOT_EMPTY_THEN_ASKED = (FIX / "copilot-chat/source-types/chatSessions/"
                            "c5e1f2a3-7b9d-4e0f-a2c4-6e8a0c2e4f60.jsonl")
COPILOT_BUILT = (FIX / "copilot-chat/source-types/chatSessions/"
                 "5a0e6c1d-7b2f-4e39-8d14-3f9c2b7a6e50.json")
COPILOT_BUILT_LOG = (FIX / "copilot-chat/source-types/chatSessions/"
                     "9d4c2b1a-3e5f-4a6b-8c7d-1e2f3a4b5c6d.jsonl")
COPILOT_EVENTS = sorted((FIX / "copilot-chat/source-types-events").rglob("*.jsonl"))
COPILOT_LOOKUP = sorted((FIX / "copilot-chat/source-types-lookup/chatSessions").iterdir())
COPILOT_RAJBOS = sorted((FIX / "copilot-chat/rajbos-synthetic/chatSessions").iterdir())
#: real sessions exported from VS Code ("Chat: Export Chat...", the session document without
#: its id) and a real session document (splitrail), from three public repositories
COPILOT_EXPORTS = sorted((FIX / "copilot-chat/dealenx-exports").rglob("*.json"))
COPILOT_DIGITARALD = sorted((FIX / "copilot-chat/digitarald-exports").rglob("*.json"))
COPILOT_SPLITRAIL = FIX / "copilot-chat/splitrail/copilot.json"
CLINE = FIX / "cline/source-types/saoudrizwan.claude-dev/tasks/1769100000000/ui_messages.json"
ROO = (FIX / "roo-code/source-types/rooveterinaryinc.roo-cline/tasks/"
       "0b9c1f2e-5d4a-4c3b-9e8f-7a6b5c4d3e2f/ui_messages.json")
KILO = (FIX / "kilo-code/source-types/kilocode.kilo-code/tasks/"
        "6f1e2d3c-4b5a-4968-8776-a5b4c3d2e1f0/ui_messages.json")
CLINE4 = (FIX / "cline/cline-sdk-4/sessions/1784094124598_rruoq/"
          "1784094124598_rruoq.messages.json")
CONTINUE_CLI = FIX / "continue/source-types-cli/sessions/4b6d8f0a-2c4e-4f6a-8c0e-2a4c6e8f0a2c.json"
CONTINUE_IDE = FIX / "continue/source-types/sessions/3c1d9a44-2f7e-4b8a-9c61-0d5e4f3a2b1c.json"


# -- independent counts of the raw files ----------------------------------------------------

def _walk(value: Any) -> Any:
    if isinstance(value, dict):
        yield value
        for item in value.values():
            yield from _walk(item)
    elif isinstance(value, list):
        for item in value:
            yield from _walk(item)


def _copilot_state(path: Path) -> dict[str, Any]:
    """The session of a fixture: the document, or a log whose entries only push requests."""
    if path.suffix == ".json":
        return json.loads(path.read_text())
    lines = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    state = lines[0]["v"]
    for entry in lines[1:]:
        if entry["kind"] == 2 and entry["k"] == ["requests"]:
            state["requests"].extend(entry["v"])
    return state


#: the model-facing argument keys that name one file
_FILE_ARGS = ("filePath", "filename", "file_path")


def _is_edit_tool(tool_id: str) -> bool:
    return any(word in tool_id.lower() for word in ("edit", "replace", "patch", "create"))


def _copilot_counts(state: dict[str, Any]) -> tuple[int, set[str]]:
    """Tool calls: serialized invocations that are not VS Code's internal edit step, plus one
    per edited file (``textEditGroup``) that neither an edit call's arguments nor the edit call
    just before the group name (that call made the edit). Files: edited files, the calls' file
    arguments and the files their messages link."""
    calls = 0
    files: set[str] = set()
    for request in state["requests"]:
        parts = [p for p in _walk(request.get("response", [])) if isinstance(p, dict)]
        invocations = [p for p in parts if p.get("kind") == "toolInvocationSerialized"
                       and not p.get("toolId", "").startswith("vscode_")]
        calls += len(invocations)
        edited = {p["uri"]["path"] for p in parts if p.get("kind") == "textEditGroup"}
        covered: set[str] = set()
        after_edit = False
        for part in parts:
            if part in invocations:
                after_edit = _is_edit_tool(part.get("toolId", ""))
            elif part.get("kind") == "textEditGroup" and after_edit:
                covered.add(part["uri"]["path"])
        named: set[str] = set()
        for round_ in request.get("result", {}).get("metadata", {}).get("toolCallRounds", []):
            for call in round_["toolCalls"]:
                args = json.loads(call["arguments"])
                named.update(args[key] for key in _FILE_ARGS if key in args)
                for line in args.get("input", "").splitlines():
                    if line.startswith("*** Update File: "):
                        named.add(line.removeprefix("*** Update File: "))
                if _is_edit_tool(call["name"]):
                    covered.update(args[key] for key in _FILE_ARGS if key in args)
        for part in invocations:
            for key in ("pastTenseMessage", "invocationMessage"):
                uris = part.get(key, {}).get("uris", {}) if isinstance(part.get(key), dict) else {}
                named.update(v["path"] for v in uris.values())
        calls += len(edited - covered)
        files |= edited | named
    return calls, files


@pytest.mark.parametrize("path", [COPILOT_JSON, COPILOT_LOG, COPILOT_ONE_LINE, COPILOT_BUILT,
                                  COPILOT_EMPTY_THEN_ASKED, *COPILOT_LOOKUP, *COPILOT_RAJBOS,
                                  *COPILOT_EXPORTS, *COPILOT_DIGITARALD, COPILOT_SPLITRAIL],
                         ids=lambda p: f"{p.parent.name[:16]}/{p.name[:24]}")
def test_copilot_counts_match_an_independent_count(path: Path) -> None:
    state = _copilot_state(path)
    calls, files = _copilot_counts(state)
    t = load_transcript(path)
    stats = transcript_stats(t)
    assert t.session.agent == "copilot-chat"
    assert stats["tool_calls"] == calls
    assert set(stats["files"]) == files
    assert [m.text for m in t.messages if m.role == "user"] == [
        r.get("message", {}).get("text", "") for r in state["requests"]]
    assert t.session.id == state.get("sessionId", path.stem)
    assert stats["skipped"] == 0


@pytest.mark.parametrize("path", COPILOT_EVENTS, ids=lambda p: p.name[:12])
def test_copilot_event_logs_match_an_independent_count(path: Path) -> None:
    """The Copilot extension's own event log: each call once (the model's request, else its
    execution), files from the calls' file arguments and the patches they apply."""
    events = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    requested = {r["toolCallId"] for e in events if e["type"] == "assistant.message"
                 for r in e["data"].get("toolRequests", [])}
    started = {e["data"]["toolCallId"] for e in events if e["type"] == "tool.execution_start"}
    files: set[str] = set()
    for e in events:
        for args in ([json.loads(r["arguments"]) for r in e["data"].get("toolRequests", [])]
                     if e["type"] == "assistant.message" else
                     [e["data"]["arguments"]] if e["type"] == "tool.execution_start" else []):
            args = args if isinstance(args, dict) else {}
            if "filePath" in args:
                files.add(args["filePath"])
            files.update(line.removeprefix("*** Update File: ")
                         for line in args.get("input", "").splitlines()
                         if line.startswith("*** Update File: "))
    t = load_transcript(path)
    stats = transcript_stats(t)
    assert detect_agent(path) == "copilot-chat" and t.session.agent == "copilot-chat"
    assert t.session.id == events[0]["data"]["sessionId"]
    assert t.session.cwd == "/home/dev/cart-ts"  # from the storage folder's workspace.json
    assert stats["tool_calls"] == len(requested | started)
    assert set(stats["files"]) == files
    assert [m.text for m in t.messages if m.role == "user"] == [
        e["data"]["content"] for e in events if e["type"] == "user.message"]
    assert stats["tool_errors"] == sum(1 for e in events if e["type"] == "tool.execution_complete"
                                       and not e["data"]["success"])
    assert stats["skipped"] == 0


def test_copilot_agent_mode_tool_calls_and_edits() -> None:
    t = load_transcript(COPILOT_BUILT)
    calls = [c for m in t.messages for c in m.tool_calls]
    assert [(c.name, c.kind) for c in calls] == [
        ("copilot_readFile", ToolKind.READ), ("copilot_applyPatch", ToolKind.EDIT),
        ("run_in_terminal", ToolKind.SHELL), ("run_in_terminal", ToolKind.SHELL),
        ("apply_edit", ToolKind.EDIT)]
    assert calls[1].file_paths == ["/home/dev/shop/cart.py"]  # from the patch the model sent
    assert calls[2].command == "pytest -q"
    results = {r.call_id: r for m in t.messages for r in m.tool_results}
    assert results["c3"].exit_code == 1 and results["c3"].is_error
    assert results["c4"].exit_code == 0 and not results["c4"].is_error
    assert "1 failed" in results["c3"].output
    assert calls[4].file_paths == ["/home/dev/shop/tests/test_cart.py"]  # Edits mode
    assert t.session.title == "Fix the cart total rounding" and t.session.title_source == "summary"
    usage = [m.usage for m in t.messages if m.usage is not None]
    assert [(u.input_tokens, u.output_tokens) for u in usage] == [(18500, 620), (19800, 140)]
    assert any(m.role == "system" and "request failed" in m.text for m in t.messages)
    assert t.stats.ignored >= 2  # the thinking part and the attached image, never read


def test_real_exports_cancelled_failed_and_mcp_errors() -> None:
    """Real sessions: a request the user stopped is a cancellation, not an error; a failed one
    says why; an MCP tool that failed is a tool error; an edit group belongs to the edit call
    before it (one call, not an extra ``apply_edit``)."""
    by_name = {f"{p.parent.name}/{p.name}": p for p in COPILOT_EXPORTS}
    cancelled = load_transcript(by_name["parse-export-canceled-chat/chat.json"])
    assert [(m.role, m.text, m.is_meta) for m in cancelled.messages if m.role == "system"] == [
        ("system", "request cancelled", True)]
    failed = load_transcript(by_name["parse-export-chat-with-error/chat.json"])
    assert [m.text.splitlines()[0] for m in failed.messages if m.role == "system"] == [
        "error: Sorry, your request failed. Please try again."]
    mcp = load_transcript(by_name["parse-export-mcp-chat-json/chat_error_mcp.json"])
    results = [r for m in mcp.messages for r in m.tool_results]
    assert [(r.is_error, r.output.split(":")[0]) for r in results] == [
        (True, "Error calling tool 'update_entry_fields'")]
    assert load_transcript(by_name["parse-export-pending-chat-json/chat.json"]).messages == []
    small = load_transcript(COPILOT_DIGITARALD[2])
    edits = [c for m in small.messages for c in m.tool_calls if c.kind is ToolKind.EDIT]
    root = "/Users/digitarald/Developer/vscode-chat-logs/src/"
    assert [(c.name, c.file_paths) for c in edits] == [
        ("copilot_multiReplaceString", [root + "app/layout.tsx", root + "app/page.tsx"]),
        ("copilot_multiReplaceString", [root + "app/globals.css", root + "app/page.tsx"])]


def test_copilot_log_replays_sets_pushes_cuts_and_deletes() -> None:
    t = load_transcript(COPILOT_BUILT_LOG)
    assert t.session.title == "TODOs in src"  # set by a later kind 1 entry
    assert [m.text for m in t.messages if m.role == "user"] == [
        "List the TODOs in src", "Remove the one in db.py"]
    texts = [m.text for m in t.messages if m.role == "assistant" and m.text]
    # the streamed response was cut at index 1 and pushed again: one search call, not two
    assert texts == ["Searching for TODO markers.", "Two TODOs: one in `src/app.py`, one in "
                     "`src/db.py`.", "Removed it."]
    calls = [c for m in t.messages for c in m.tool_calls]
    assert [c.name for c in calls] == ["copilot_findTextInFiles", "copilot_replaceString"]
    assert calls[0].input["query"] == "TODO"  # matched to the model's own call by name
    assert calls[1].file_paths == ["/home/dev/shop/src/db.py"]
    assert t.stats.skipped == 0 and t.stats.lines == 12


def _cline_counts(path: Path) -> tuple[int, set[str], int]:
    rows = json.loads(path.read_text())
    calls, files, tokens = 0, set(), 0
    for row in rows:
        kind = row.get("say") or row.get("ask")
        if kind in ("tool", "command", "use_mcp_server", "browser_action_launch"):
            calls += 1
        if kind == "tool":
            info = json.loads(row["text"])
            if info["tool"] in ("readFile", "editedExistingFile", "newFileCreated",
                                "appliedDiff", "fileDeleted"):
                files.update(f["path"] for f in info.get("batchFiles", []))
                if "path" in info:
                    files.add(info["path"])
        if kind == "api_req_started":
            info = json.loads(row["text"])
            tokens += sum(info.get(k, 0) for k in ("tokensIn", "tokensOut", "cacheWrites",
                                                   "cacheReads"))
    return calls, files, tokens


@pytest.mark.parametrize(("path", "agent"), [(CLINE, "cline"), (ROO, "roo-code"),
                                             (KILO, "kilo-code")])
def test_cline_family_counts_match_an_independent_count(path: Path, agent: str) -> None:
    calls, files, tokens = _cline_counts(path)
    t = load_transcript(path)
    stats = transcript_stats(t)
    assert detect_agent(path) == agent and t.session.agent == agent
    assert t.session.id == path.parent.name
    assert t.session.cwd == "/home/dev/shop"
    assert stats["tool_calls"] == calls
    assert {str(Path(f).relative_to("/home/dev/shop")) for f in stats["files"]} == files
    assert sum(m.usage.context_tokens for m in t.messages if m.usage) == tokens
    assert stats["skipped"] == 0


def test_cline_4_sessions_match_an_independent_count() -> None:
    """Cline 4's SDK session (a real one): calls are ``tool_use`` blocks, results
    ``tool_result`` blocks, files the paths the tools name, tokens the messages' metrics."""
    raw = json.loads(CLINE4.read_text())
    blocks = [(m, b) for m in raw["messages"] for b in m["content"] if isinstance(b, dict)]
    uses = [b for _, b in blocks if b["type"] == "tool_use"]
    files: set[str] = set()
    for use in uses:
        args = use["input"] if isinstance(use["input"], dict) else json.loads(use["input"])
        if "path" in args:
            files.add(args["path"])
        for item in args.get("files", []):
            files.add(item if isinstance(item, str) else item["path"])
    t = load_transcript(CLINE4)
    stats = transcript_stats(t)
    assert detect_agent(CLINE4) == "cline" and t.session.id == raw["sessionId"]
    assert t.session.cwd == "/Users/example/dev/cline"  # from the manifest beside it
    assert stats["tool_calls"] == len(uses) == 11
    assert set(stats["files"]) == files
    assert stats["tool_errors"] == sum(1 for _, b in blocks if b["type"] == "tool_result"
                                       and b.get("is_error"))
    metrics = [m["metrics"] for m in raw["messages"] if "metrics" in m]
    assert sum(m.usage.output_tokens for m in t.messages if m.usage) == sum(
        x["outputTokens"] for x in metrics)
    # inputTokens is the whole prompt, the cached part included: context = prompt + output
    assert sum(m.usage.context_tokens for m in t.messages if m.usage) == sum(
        x["inputTokens"] + x["cacheWriteTokens"] + x["outputTokens"] for x in metrics)
    assert sum(m.usage.cache_read_tokens for m in t.messages if m.usage) == sum(
        x["cacheReadTokens"] for x in metrics)
    users = [b["text"] for m, b in blocks if m["role"] == "user" and b["type"] == "text"]
    assert [m.text for m in t.messages if m.role == "user"] == users
    assert t.stats.ignored == 1  # the attached file's text (the tool reads it)
    assert stats["skipped"] == 0


def test_cline_commands_and_results() -> None:
    t = load_transcript(ROO)
    calls = {c.id: c for m in t.messages for c in m.tool_calls}
    results = [r for m in t.messages for r in m.tool_results]
    assert [calls[r.call_id].command for r in results] == ["npm test -- date"] * 2
    assert [(r.exit_code, r.is_error) for r in results] == [(1, True), (0, False)]
    assert t.session.title == "Fix the failing date test in utils"
    first = load_transcript(CLINE)
    users = [m.text for m in first.messages if m.role == "user"]
    assert users == ["Add a --verbose flag to the CLI and make the tests pass",
                     "Also print the version when --verbose is given"]
    assert first.stats.ignored >= 4  # reasoning, checkpoint, progress, the pasted image


def test_continue_counts_and_results() -> None:
    for path in (CONTINUE_CLI, CONTINUE_IDE):
        raw = json.loads(path.read_text())
        calls = sum(len(i["message"].get("toolCalls") or []) for i in raw["history"])
        errored = {s["toolCallId"] for i in raw["history"] for s in i.get("toolCallStates", [])
                   if s["status"] in ("errored", "canceled")}
        t = load_transcript(path)
        stats = transcript_stats(t)
        assert t.session.agent == "continue" and t.session.id == raw["sessionId"]
        assert stats["tool_calls"] == calls and stats["tool_errors"] == len(errored)
        assert stats["skipped"] == 0
    ide = load_transcript(CONTINUE_IDE)
    assert ide.session.cwd == "/home/dev/shop"  # a file:// URI in the IDE's own record
    assert [c.file_paths for m in ide.messages for c in m.tool_calls][:2] == [
        ["/home/dev/shop/shop/catalog.py"]] * 2
    results = [r for m in ide.messages for r in m.tool_results]
    assert len(results) == 3  # the tool message answers call_read_1: not counted twice
    cli = load_transcript(CONTINUE_CLI)
    assert cli.session.cwd == "/home/dev/cart-ts"  # the CLI's plain path (process.cwd())


# -- drift: what each fixture reads as, pinned ------------------------------------------------

PINNED = {
    COPILOT_JSON: (15, 3, 0, 2, 7),
    COPILOT_LOG: (15, 3, 0, 2, 8),
    COPILOT_ONE_LINE: (15, 3, 0, 2, 7),
    COPILOT_EMPTY_THEN_ASKED: (2, 0, 0, 0, 0),
    COPILOT_BUILT: (18, 5, 1, 2, 3),
    COPILOT_BUILT_LOG: (11, 2, 0, 1, 0),
    CLINE: (13, 5, 0, 2, 4),
    ROO: (13, 4, 1, 2, 1),
    KILO: (7, 4, 0, 2, 1),
    CONTINUE_CLI: (8, 3, 1, 1, 0),
    CLINE4: (32, 11, 0, 2, 1),
    CONTINUE_IDE: (8, 3, 1, 1, 2),
    # the Copilot extension's event logs: calls from the model's requests (one from its
    # execution only), turn markers ignored; a cancelled terminal command is the tool error
    COPILOT_EVENTS[0]: (8, 3, 1, 1, 11),
    COPILOT_EVENTS[1]: (3, 1, 0, 1, 1),
    # lookup fragments: one request each, no message text, no response
    **{path: (1, 0, 0, 0, 0) for path in COPILOT_LOOKUP},
    # rajbos' hand-written sessions: markdown answers only
    **dict(zip(COPILOT_RAJBOS, [(10, 0, 0, 0, 0), (6, 0, 0, 0, 0), (6, 0, 0, 0, 1),
                                (6, 0, 0, 0, 0)], strict=True)),
    # real exports: a cancelled and a failed request, MCP calls (one failed), web fetches, an
    # empty session; a VS Code PM's agent sessions (multi-replace edits, Playwright MCP, thinking)
    **dict(zip(COPILOT_EXPORTS, [(4, 0, 0, 0, 4), (4, 0, 0, 0, 0), (2, 0, 0, 0, 1),
                                 (5, 1, 1, 0, 1), (11, 3, 0, 0, 3), (0, 0, 0, 0, 0),
                                 (5, 1, 0, 0, 2), (5, 1, 0, 0, 2)], strict=True)),
    **dict(zip(COPILOT_DIGITARALD, [(87, 30, 0, 7, 33), (66, 29, 0, 5, 51), (27, 9, 0, 5, 20),
                                    (246, 115, 0, 13, 91), (20, 8, 0, 2, 17)], strict=True)),
    COPILOT_SPLITRAIL: (40, 13, 0, 6, 4),
}


@pytest.mark.parametrize("path", list(PINNED), ids=lambda p: p.parent.name[:20] + "/" + p.name[:12])
def test_drift_pins_what_is_read(path: Path) -> None:
    """(messages, tool calls, tool errors, files, ignored) per fixture; 0 skipped. A change here
    means the format moved or the reader did: look at the fixture before updating the pin."""
    t = load_transcript(path)
    stats = transcript_stats(t)
    got = (stats["messages"], stats["tool_calls"], stats["tool_errors"], len(stats["files"]),
           t.stats.ignored)
    assert got == PINNED[path]
    assert t.stats.skipped == 0, t.stats.errors


def test_unknown_kinds_and_fields_are_counted_and_skipped(tmp_path: Path) -> None:
    session = json.loads(COPILOT_BUILT.read_text())
    session["brandNewField"] = {"x": 1}
    session["requests"][0]["response"].insert(1, {"kind": "holographicDiagram", "v": 1})
    session["requests"][0]["alsoNew"] = True
    path = tmp_path / "chatSessions" / "drift.json"
    path.parent.mkdir()
    path.write_text(json.dumps(session))
    t = load_transcript(path)
    assert t.stats.skipped == 1 and "holographicDiagram" in t.stats.errors[0]
    assert transcript_stats(t)["tool_calls"] == 5  # everything known is still read

    rows = json.loads(ROO.read_text())
    rows.insert(3, {"ts": 1772000001500, "type": "say", "say": "teleport", "text": "?"})
    rows.insert(4, {"ts": 1772000001600, "type": "shout", "text": "?"})
    task = tmp_path / "rooveterinaryinc.roo-cline" / "tasks" / "t1" / "ui_messages.json"
    task.parent.mkdir(parents=True)
    task.write_text(json.dumps(rows))
    t = load_transcript(task)
    assert t.stats.skipped == 2 and transcript_stats(t)["tool_calls"] == 4

    events = tmp_path / "GitHub.copilot-chat" / "transcripts" / "e.jsonl"
    events.parent.mkdir(parents=True)
    events.write_text(COPILOT_EVENTS[0].read_text()
                      + '{"type":"assistant.hologram","data":{},"id":"x1"}\n'
                      + '{"type":"tool.execution_start","data":{"toolCallId":"t9",'
                        '"toolName":"run_in_terminal","arguments":{"command":"ls"},'
                        '"futureField":1},"id":"x2","brandNew":true}\n')
    t = load_transcript(events)
    assert t.stats.skipped == 1 and "assistant.hologram" in t.stats.errors[0]
    assert transcript_stats(t)["tool_calls"] == 4  # the new call is read, the new kind skipped

    log = tmp_path / "chatSessions" / "drift.jsonl"
    log.write_text(COPILOT_LOG.read_text() + '{"kind":9,"k":["x"],"v":1}\n'
                   + '{"kind":1,"k":["requests",99,"result"],"v":{}}\n')
    t = load_transcript(log)
    assert t.stats.skipped == 2 and transcript_stats(t)["tool_calls"] == 3

    doc = json.loads(CONTINUE_IDE.read_text())
    doc["history"].append({"message": {"role": "oracle", "content": "?"}, "contextItems": []})
    (tmp_path / "c.json").write_text(json.dumps(doc))
    t = load_transcript(tmp_path / "c.json")
    assert t.stats.skipped == 1 and transcript_stats(t)["tool_calls"] == 3


# -- bad input --------------------------------------------------------------------------------

@pytest.mark.parametrize("source", [COPILOT_JSON, CLINE, CONTINUE_IDE])
def test_a_document_caught_mid_write_is_one_counted_skip(source: Path, tmp_path: Path) -> None:
    data = source.read_bytes()
    target = tmp_path / source.parent.name / source.name
    target.parent.mkdir(parents=True)
    for cut in range(1, 10):
        target.write_bytes(data[: len(data) * cut // 10])
        t = load_transcript(target)
        assert t.stats.skipped == 1 and t.messages == []
        assert "not a valid JSON document" in t.stats.errors[0]


def test_a_log_line_being_appended_waits(tmp_path: Path) -> None:
    data = COPILOT_LOG.read_bytes()
    lines = data.split(b"\n")
    target = tmp_path / "chatSessions" / COPILOT_LOG.name
    target.parent.mkdir()
    whole = load_transcript(COPILOT_LOG)
    before = b"\n".join(lines[:3]) + b"\n"
    target.write_bytes(before + lines[3][:500])  # the request push, half written
    t = load_transcript(target)
    assert t.stats.skipped == 0
    assert [m.id for m in t.messages] == [m.id for m in whole.messages[:9]]  # first request


def test_huge_paste_and_base64_images_are_not_read(tmp_path: Path) -> None:
    session = json.loads(COPILOT_BUILT.read_text())
    image = "iVBORw0KGgo" + "A" * (5 * 1024 * 1024)
    session["requests"][0]["variableData"]["variables"].append(
        {"kind": "image", "id": "big.png", "name": "big.png", "value": image})
    session["requests"][1]["message"]["text"] = "please look at this log:\n" + "x" * 2_000_000
    path = tmp_path / "chatSessions" / "big.json"
    path.parent.mkdir()
    path.write_text(json.dumps(session))
    began = time.perf_counter()
    t = load_transcript(path)
    assert time.perf_counter() - began < 10
    assert t.stats.skipped == 1 and "characters cut" in t.stats.errors[0]
    assert max(len(m.text) for m in t.messages) < 300_000
    assert not any("AAAAAAAA" in m.text for m in t.messages)
    assert transcript_stats(t)["tool_calls"] == 5


def test_non_utf8_bytes_and_lone_surrogates(tmp_path: Path) -> None:
    rows = json.loads(CLINE.read_text())
    raw = json.dumps(rows).replace("cli.py", "cl\\ud800i.py", 1).encode()
    raw = raw.replace(b"Add a --verbose", b"Add a \xff\xfe --verbose", 1)
    task = tmp_path / "saoudrizwan.claude-dev" / "tasks" / "1" / "ui_messages.json"
    task.parent.mkdir(parents=True)
    task.write_bytes(raw)
    t = load_transcript(task)
    assert t.stats.skipped == 0 and "\ufffd" in t.messages[0].text
    assert transcript_stats(t)["tool_calls"] == 5
    for message in t.messages:
        message.model_dump_json()  # nothing unserialisable reaches the model


def test_hostile_shapes_never_crash(tmp_path: Path) -> None:
    cases = {
        "chatSessions/a.json": b'{"requests": {"not": "a list"}}',
        "chatSessions/b.json": b'{"requests": [1, "two", null, {"response": "x"}]}',
        "chatSessions/c.json": b"[" * 200_000,
        "chatSessions/d.jsonl": b'{"kind":1,"k":["a"],"v":1}\n{"kind":0,"v":[]}\n',
        "chatSessions/e.jsonl": b'{"kind":0,"v":{"requests":[]}}\n{"kind":2,"k":["requests"],'
                                b'"v":[{"response":[{"kind":"toolInvocationSerialized"}]}]}\n',
        "x.claude-dev/tasks/1/ui_messages.json": b'[{"ts":"x","type":"say","say":"tool",'
                                                 b'"text":"{not json"}, 5, {"type":"ask"}]',
        "continue/s.json": b'{"history":[{"message":{"role":"assistant","toolCalls":[1,{}]}}],'
                           b'"workspaceDirectory":"vscode-remote://ssh/x"}',
    }
    for name, data in cases.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        t = load_transcript(path)
        for message in t.messages:
            message.model_dump_json()


def test_the_oldest_request_form_and_markdown_content_parts(tmp_path: Path) -> None:
    """Version-1 sessions kept the request as a plain string; ``markdownContent`` parts hold
    their text under ``content.value``."""
    path = tmp_path / "chatSessions" / "old.json"
    path.parent.mkdir()
    path.write_text(json.dumps({"version": 1, "requesterUsername": "me", "requests": [
        {"requestId": "r1", "message": "How do I read a file?", "response": [
            {"kind": "markdownContent", "content": {"value": "Use `open()`."}}]}]}))
    t = load_transcript(path)
    assert [(m.role, m.text) for m in t.messages] == [
        ("user", "How do I read a file?"), ("assistant", "Use `open()`.")]
    assert t.session.title == "How do I read a file?" and t.stats.skipped == 0
