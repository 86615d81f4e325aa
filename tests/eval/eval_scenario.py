"""A compact way to describe an agent session, and writers that turn it into the agents' real
on-disk formats (Claude Code JSONL, Codex rollout JSONL, Gemini CLI JSON, Aider markdown).

The evaluation set (``eval_projects.py``) describes each session as a list of steps: what the
user typed, what the agent said, which shell commands it ran with their output and exit code,
which files it read, edited or wrote, the tool-protocol slips it made, and the wrappers agents
inject (``/clear`` records, IDE context blocks, task notifications, "Please continue."). Each
writer renders those steps the way its agent records them, record shapes taken from the real
fixtures in ``tests/fixtures/transcripts`` (see ``../shared/notes/transcript-formats.md``).
The output is committed under ``tests/fixtures/eval/`` so it can be read and diffed.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Literal

Agent = Literal["claude-code", "codex", "gemini-cli", "aider"]

#: seconds between two steps of a session (a tool call and its result share a step)
STEP_SECONDS = 23


# --- steps -----------------------------------------------------------------------------------

@dataclass
class User:
    text: str
    ide_file: str | None = None  # Claude: an <ide_opened_file> block sent with the prompt


@dataclass
class Say:
    text: str


@dataclass
class Bash:
    cmd: str
    out: str = ""
    code: int = 0
    background: bool = False  # Claude: run_in_background; the output lands in a /tmp file


@dataclass
class Read:
    path: str
    content: str


@dataclass
class Edit:
    path: str
    old: str
    new: str


@dataclass
class Write:
    path: str
    content: str


@dataclass
class Slip:
    """A tool call the agent got wrong (protocol error, not a project error)."""

    tool: str
    input: dict[str, Any]
    error: str  # what the agent's harness answered
    structured: Any = None  # Claude's toolUseResult for the error (defaults to "Error: ...")


@dataclass
class Clear:
    """Claude Code's ``/clear`` (a command record plus its empty local stdout)."""


@dataclass
class SlashPrompt:
    """Claude Code: a slash command whose expanded prompt is injected as a meta user message."""

    name: str
    args: str
    expanded: str


@dataclass
class Notify:
    """Claude Code's ``<task-notification>`` for a finished background command."""

    task_id: str
    summary: str
    output_file: str


@dataclass
class Continue:
    """Gemini CLI's injected "Please continue." turn."""


Step = User | Say | Bash | Read | Edit | Write | Slip | Clear | SlashPrompt | Notify | Continue


@dataclass
class Session:
    key: str  # short label used by the labels file ("a1")
    agent: Agent
    start: str  # ISO UTC, e.g. "2026-11-03T09:12:00Z"
    steps: list[Step] = field(default_factory=list)
    branch: str = "main"
    model: str = ""
    jsonl: bool = False  # Gemini CLI: the current append-only .jsonl format (else legacy .json)

    @property
    def started(self) -> datetime:
        return datetime.fromisoformat(self.start.replace("Z", "+00:00")).astimezone(UTC)

    @property
    def session_id(self) -> str:
        return str(uuid.uuid5(uuid.NAMESPACE_URL, f"reverie-eval/{self.key}"))

    def ended(self) -> datetime:
        return self.started + timedelta(seconds=STEP_SECONDS * (len(self.steps) + 1))


def _iso(when: datetime) -> str:
    return when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.") + f"{when.microsecond // 1000:03d}Z"


class _Clock:
    def __init__(self, start: datetime) -> None:
        self.now = start

    def tick(self, seconds: float = STEP_SECONDS) -> str:
        self.now += timedelta(seconds=seconds)
        return _iso(self.now)


class _Ids:
    def __init__(self, seed: str) -> None:
        self.seed = seed
        self.n = 0

    def uuid(self) -> str:
        self.n += 1
        return str(uuid.uuid5(uuid.NAMESPACE_URL, f"{self.seed}/{self.n}"))

    def hex(self, size: int) -> str:
        self.n += 1
        return hashlib.sha256(f"{self.seed}/{self.n}".encode()).hexdigest()[:size]


def _abs(workspace: str, path: str) -> str:
    return path if path.startswith("/") else f"{workspace}/{path}"


def _numbered(content: str) -> str:
    return "\n".join(f"{i:>6}→{line}" for i, line in enumerate(content.splitlines(), 1))


# --- Claude Code -----------------------------------------------------------------------------

def claude_lines(s: Session, workspace: str) -> list[dict[str, Any]]:
    clock, ids = _Clock(s.started), _Ids(s.session_id)
    model = s.model or "claude-sonnet-4-5-20250929"
    out: list[dict[str, Any]] = []
    parent: str | None = None
    base = {"isSidechain": False, "userType": "external", "cwd": workspace,
            "sessionId": s.session_id, "version": "2.1.38", "gitBranch": s.branch}

    def emit(record: dict[str, Any]) -> str:
        nonlocal parent
        rid = ids.uuid()
        out.append({"parentUuid": parent, **base, **record, "uuid": rid})
        parent = rid
        return rid

    def user(content: Any, **extra: Any) -> str:
        return emit({"type": "user", "message": {"role": "user", "content": content},
                     "timestamp": clock.tick(), **extra})

    def assistant(blocks: list[dict[str, Any]]) -> str:
        mid, req = f"msg_01{ids.hex(22)}", f"req_011{ids.hex(21)}"
        last = ""
        stamp = clock.tick(5)
        for block in blocks:  # one JSONL line per content block, like the real CLI
            last = emit({"message": {"model": model, "id": mid, "type": "message",
                                     "role": "assistant", "content": [block],
                                     "stop_reason": None, "stop_sequence": None,
                                     "usage": {"input_tokens": 4,
                                               "cache_creation_input_tokens": 812,
                                               "cache_read_input_tokens": 19345,
                                               "output_tokens": 160,
                                               "service_tier": "standard"}},
                         "requestId": req, "type": "assistant", "timestamp": stamp})
        return last

    def tool(name: str, tool_input: dict[str, Any], content: str, result: Any,
             is_error: bool = False) -> None:
        tid = f"toolu_01{ids.hex(22)}"
        source = assistant([{"type": "tool_use", "id": tid, "name": name, "input": tool_input}])
        user([{"tool_use_id": tid, "type": "tool_result", "content": content,
               "is_error": is_error}], toolUseResult=result, sourceToolAssistantUUID=source)

    for step in s.steps:
        if isinstance(step, User):
            if step.ide_file:
                opened = _abs(workspace, step.ide_file)
                note = (f"<ide_opened_file>The user opened the file {opened}"
                        " in the IDE. This may or may not be related to the current task."
                        "</ide_opened_file>")
                user([{"type": "text", "text": note}, {"type": "text", "text": step.text}])
            else:
                user(step.text)
        elif isinstance(step, Say):
            assistant([{"type": "text", "text": step.text}])
        elif isinstance(step, Bash):
            tool_input: dict[str, Any] = {"command": step.cmd, "description": step.cmd[:40]}
            if step.background:
                tool_input["run_in_background"] = True
                task = ids.hex(7)
                text = ("Command running in background with ID: "
                        f"{task}. Output is being written to: /tmp/claude-1000/"
                        f"{workspace.replace('/', '-')}/tasks/{task}.output")
                tool("Bash", tool_input, text, {"stdout": "", "stderr": "", "interrupted": False,
                                                "isImage": False, "noOutputExpected": False,
                                                "backgroundTaskId": task})
            elif step.code == 0:
                tool("Bash", tool_input, step.out, {"stdout": step.out, "stderr": "",
                                                    "interrupted": False, "isImage": False,
                                                    "noOutputExpected": not step.out})
            else:
                text = f"Exit code {step.code}\n{step.out}"
                tool("Bash", tool_input, text, f"Error: {text}", is_error=True)
        elif isinstance(step, Read):
            path = _abs(workspace, step.path)
            lines = step.content.splitlines()
            tool("Read", {"file_path": path}, _numbered(step.content),
                 {"type": "text", "file": {"filePath": path, "content": step.content,
                                           "numLines": len(lines), "startLine": 1,
                                           "totalLines": len(lines)}})
        elif isinstance(step, Edit):
            path = _abs(workspace, step.path)
            tool("Edit", {"file_path": path, "old_string": step.old, "new_string": step.new},
                 f"The file {path} has been updated. Here's the result of running `cat -n` on a "
                 f"snippet of the edited file:\n{_numbered(step.new)}",
                 {"filePath": path, "oldString": step.old, "newString": step.new,
                  "originalFile": step.old, "structuredPatch": [], "userModified": False,
                  "replaceAll": False})
        elif isinstance(step, Write):
            path = _abs(workspace, step.path)
            tool("Write", {"file_path": path, "content": step.content},
                 f"File created successfully at: {path}",
                 {"type": "create", "filePath": path, "content": step.content,
                  "structuredPatch": [], "originalFile": None})
        elif isinstance(step, Slip):
            structured = step.structured if step.structured is not None else (
                f"Error: {step.error}")
            tool(step.tool, step.input, f"<tool_use_error>{step.error}</tool_use_error>",
                 structured, is_error=True)
        elif isinstance(step, Clear):
            user("<command-name>/clear</command-name>\n            <command-message>clear"
                 "</command-message>\n            <command-args></command-args>")
            user("<local-command-stdout></local-command-stdout>")
        elif isinstance(step, SlashPrompt):
            user(f"<command-message>{step.name} is running…</command-message>\n<command-name>/"
                 f"{step.name}</command-name>\n<command-args>{step.args}</command-args>")
            user([{"type": "text", "text": step.expanded}], isMeta=True)
        elif isinstance(step, Notify):
            user(f"<task-notification>\n<task-id>{step.task_id}</task-id>\n<output-file>"
                 f"{step.output_file}</output-file>\n<status>completed</status>\n<summary>"
                 f"{step.summary}</summary>\n</task-notification>\nRead the output file to "
                 "retrieve the result: " + step.output_file)
        elif isinstance(step, Continue):
            user("Please continue.")
    return out


# --- Codex -----------------------------------------------------------------------------------

def codex_lines(s: Session, workspace: str) -> list[dict[str, Any]]:
    clock, ids = _Clock(s.started), _Ids(s.session_id)
    model = s.model or "gpt-5.1-codex"
    out: list[dict[str, Any]] = []
    turn_id = ""

    def rec(type_: str, payload: dict[str, Any], stamp: str | None = None) -> None:
        out.append({"timestamp": stamp or _iso(clock.now), "type": type_, "payload": payload})

    rec("session_meta", {"id": s.session_id, "timestamp": _iso(clock.now), "cwd": workspace,
                         "originator": "codex_cli_rs", "cli_version": "0.125.0", "source": "cli",
                         "model_provider": "openai",
                         "base_instructions": {"text": "You are Codex, a coding agent."},
                         "git": {"branch": s.branch}})
    rec("response_item", {"type": "message", "role": "user", "content": [{
        "type": "input_text",
        "text": f"<environment_context>\n  <cwd>{workspace}</cwd>\n  <approval_policy>on-request"
                "</approval_policy>\n  <sandbox_mode>workspace-write</sandbox_mode>\n  <shell>bash"
                "</shell>\n</environment_context>"}]})

    def end_turn(last: str) -> None:
        if turn_id:
            rec("event_msg", {"type": "task_complete", "turn_id": turn_id,
                              "last_agent_message": last})

    last_said = ""

    def shell(cmd: str, output: str, code: int) -> None:
        call = f"call_{ids.hex(24)}"
        rec("response_item", {"type": "function_call", "name": "exec_command",
                              "arguments": json.dumps({"cmd": cmd, "workdir": workspace,
                                                       "yield_time_ms": 10000}),
                              "call_id": call}, clock.tick(4))
        rec("response_item", {"type": "function_call_output", "call_id": call,
                              "output": f"Chunk ID: {ids.hex(6)}\nWall time: 1.2 seconds\n"
                                        f"Process exited with code {code}\nOriginal token count: "
                                        f"{len(output) // 4}\nOutput:\n{output}"},
            clock.tick(3))
        rec("event_msg", {"type": "exec_command_end", "call_id": call, "turn_id": turn_id,
                          "command": ["/bin/bash", "-lc", cmd], "cwd": workspace,
                          "parsed_cmd": [{"type": "unknown", "cmd": cmd}], "stdout": output,
                          "stderr": "", "aggregated_output": output, "exit_code": code,
                          "duration": {"secs": 1, "nanos": 200000000}})

    def patch(path: str, body: str, kind: str, diff: str) -> None:
        call = f"call_{ids.hex(24)}"
        header = "Add File" if kind == "add" else "Update File"
        rec("response_item", {"type": "custom_tool_call", "status": "completed", "call_id": call,
                              "name": "apply_patch",
                              "input": f"*** Begin Patch\n*** {header}: {path}\n{body}"
                                       "*** End Patch\n"}, clock.tick(4))
        letter = "A" if kind == "add" else "M"
        rec("event_msg", {"type": "patch_apply_end", "call_id": call, "turn_id": turn_id,
                          "stdout": f"Success. Updated the following files:\n{letter} {path}\n",
                          "stderr": "", "success": True,
                          "changes": {_abs(workspace, path): {"type": kind,
                                                              "unified_diff": diff}}},
            clock.tick(2))
        rec("response_item", {"type": "custom_tool_call_output", "call_id": call,
                              "output": json.dumps({"output": "Success. Updated the following "
                                                    f"files:\n{letter} {path}\n", "metadata": {
                                                        "exit_code": 0,
                                                        "duration_seconds": 0.1}})})

    for step in s.steps:
        if isinstance(step, User | Continue):
            text = step.text if isinstance(step, User) else "Please continue."
            end_turn(last_said)
            turn_id = str(uuid.uuid5(uuid.NAMESPACE_URL, f"{s.session_id}/turn/{ids.hex(8)}"))
            stamp = clock.tick()
            rec("event_msg", {"type": "task_started", "turn_id": turn_id,
                              "model_context_window": 258400}, stamp)
            rec("turn_context", {"turn_id": turn_id, "cwd": workspace, "model": model,
                                 "effort": "medium", "approval_policy": "on-request",
                                 "sandbox_policy": {"type": "workspace-write"},
                                 "current_date": stamp[:10], "timezone": "UTC"}, stamp)
            rec("response_item", {"type": "message", "role": "user",
                                  "content": [{"type": "input_text", "text": text}]}, stamp)
            rec("event_msg", {"type": "user_message", "message": text, "images": []}, stamp)
        elif isinstance(step, Say):
            stamp = clock.tick()
            rec("event_msg", {"type": "agent_message", "message": step.text}, stamp)
            rec("response_item", {"type": "message", "role": "assistant",
                                  "content": [{"type": "output_text", "text": step.text}]}, stamp)
            last_said = step.text
        elif isinstance(step, Bash):
            shell(step.cmd, step.out, step.code)
        elif isinstance(step, Read):
            shell(f"sed -n '1,200p' {step.path}", step.content, 0)
        elif isinstance(step, Edit):
            body = "@@\n" + "".join(f"-{line}\n" for line in step.old.splitlines()) + "".join(
                f"+{line}\n" for line in step.new.splitlines())
            patch(step.path, body, "update", body)
        elif isinstance(step, Write):
            body = "".join(f"+{line}\n" for line in step.content.splitlines())
            patch(step.path, body, "add", body)
        elif isinstance(step, Slip):
            call = f"call_{ids.hex(24)}"
            rec("response_item", {"type": "function_call", "name": step.tool,
                                  "arguments": json.dumps(step.input), "call_id": call},
                clock.tick(4))
            rec("response_item", {"type": "function_call_output", "call_id": call,
                                  "output": step.error}, clock.tick(1))
        else:
            raise ValueError(f"Codex has no {type(step).__name__} step")
        clock.tick(2)
    end_turn(last_said)
    return out


# --- Gemini CLI (legacy one-document JSON) ----------------------------------------------------

def gemini_document(s: Session, workspace: str) -> dict[str, Any]:
    clock, ids = _Clock(s.started), _Ids(s.session_id)
    model = s.model or "gemini-2.5-pro"
    messages: list[dict[str, Any]] = []

    def gemini(content: str, calls: list[dict[str, Any]] | None = None) -> None:
        message: dict[str, Any] = {"id": ids.uuid(), "timestamp": clock.tick(), "type": "gemini",
                                   "content": content, "thoughts": [],
                                   "tokens": {"input": 9120, "output": 210, "cached": 0,
                                              "thoughts": 120, "tool": 0, "total": 9450},
                                   "model": model}
        if calls:
            message["toolCalls"] = calls
        messages.append(message)

    def call(name: str, args: dict[str, Any], output: str, status: str = "success",
             display: str = "") -> dict[str, Any]:
        cid = f"{name}-{int(clock.now.timestamp() * 1000)}-{ids.hex(14)}"
        key = "error" if status == "error" else "output"
        return {"id": cid, "name": name, "args": args,
                "result": [{"functionResponse": {"id": cid, "name": name,
                                                 "response": {key: output}}}],
                "status": status, "timestamp": _iso(clock.now), "resultDisplay": output[:200],
                "displayName": display or name, "description": "", "renderOutputAsMarkdown": True}

    for step in s.steps:
        if isinstance(step, User | Continue):
            text = step.text if isinstance(step, User) else "Please continue."
            messages.append({"id": ids.uuid(), "timestamp": clock.tick(), "type": "user",
                             "content": text})
        elif isinstance(step, Say):
            gemini(step.text)
        elif isinstance(step, Bash):
            output = (f"Command: {step.cmd}\nDirectory: (root)\nOutput: {step.out or '(empty)'}\n"
                      f"Error: (none)\nExit Code: {step.code}\nSignal: (none)\n"
                      "Background PIDs: (none)\nProcess Group PGID: 48211")
            gemini("", [call("run_shell_command", {"command": step.cmd,
                                                   "description": step.cmd[:60]}, output,
                             display="Shell")])
        elif isinstance(step, Read):
            gemini("", [call("read_file", {"file_path": step.path}, step.content,
                             display="ReadFile")])
        elif isinstance(step, Edit):
            gemini("", [call("replace", {"file_path": _abs(workspace, step.path),
                                         "old_string": step.old, "new_string": step.new},
                             f"Successfully modified file: {_abs(workspace, step.path)} "
                             "(1 replacements).", display="Edit")])
        elif isinstance(step, Write):
            gemini("", [call("write_file", {"file_path": _abs(workspace, step.path),
                                            "content": step.content},
                             f"Successfully created and wrote to new file: "
                             f"{_abs(workspace, step.path)}.", display="WriteFile")])
        elif isinstance(step, Slip):
            gemini("", [call(step.tool, step.input, step.error, status="error")])
        else:
            raise ValueError(f"Gemini has no {type(step).__name__} step")
    return {"sessionId": s.session_id,
            "projectHash": hashlib.sha256(workspace.encode()).hexdigest(),
            "startTime": _iso(s.started), "lastUpdated": _iso(clock.now), "messages": messages}


def gemini_jsonl(s: Session, workspace: str) -> list[dict[str, Any]]:
    """The current Gemini CLI format: a metadata line, then messages appended as they change
    (a tool-calling message first without its results, then again in full: last write wins by
    id), with ``$set`` patches of ``lastUpdated``."""
    doc = gemini_document(s, workspace)
    out: list[dict[str, Any]] = [{"sessionId": doc["sessionId"], "projectHash": doc["projectHash"],
                                  "startTime": doc["startTime"], "lastUpdated": doc["startTime"],
                                  "kind": "main"}]
    for message in doc["messages"]:
        if message["type"] == "user":
            out.append({**message, "content": [{"text": message["content"]}]})
            out.append({"$set": {"lastUpdated": message["timestamp"]}})
            continue
        if message.get("toolCalls"):
            pending = [{k: v for k, v in call.items() if k not in ("result", "resultDisplay")}
                       | {"status": "executing"} for call in message["toolCalls"]]
            out.append({**message, "toolCalls": pending, "tokens": None})
        out.append(message)
    out.append({"$set": {"lastUpdated": doc["lastUpdated"]}})
    return out


# --- Aider -----------------------------------------------------------------------------------

def aider_run(s: Session) -> str:
    """One run of ``.aider.chat.history.md`` (runs are appended to the repository's file)."""
    ids = _Ids(s.session_id)
    stamp = s.started.strftime("%Y-%m-%d %H:%M:%S")  # local time; the harness runs with TZ=UTC
    model = s.model or "claude-sonnet-4-5"
    out = [f"# aider chat started at {stamp}\n", "",
           f"> /home/dev/.local/bin/aider --model {model}  ",
           "> Aider v0.86.1  ",
           f"> Main model: {model} with diff edit format, infinite output  ",
           "> Git repo: .git with 64 files  ",
           "> Repo-map: using 4096 tokens, auto refresh  ", ""]
    for step in s.steps:
        if isinstance(step, User):
            out += [f"#### {line}  " for line in step.text.splitlines()] + [""]
        elif isinstance(step, Say):
            out += [step.text, "", "> Tokens: 6.1k sent, 412 received. Cost: $0.02 message, "
                    "$0.05 session.  ", ""]
        elif isinstance(step, Bash):
            out += [f"#### /run {step.cmd}  "]
            out += [f"> {line}  " if i == 0 else line
                    for i, line in enumerate((step.out or "(no output)").splitlines())]
            if step.code:
                out += [f"> Command exited with code {step.code}  "]
            out += ["> Add 0.4k tokens of command output to the chat? (Y)es/(N)o [Yes]: y  ",
                    "> Added 12 lines of output to the chat.  ", ""]
        elif isinstance(step, Read):
            out += [f"> Added {step.path} to the chat.  ", ""]
        elif isinstance(step, Edit | Write):
            old = step.old if isinstance(step, Edit) else ""
            new = step.new if isinstance(step, Edit) else step.content
            fence = "python" if step.path.endswith(".py") else ""
            out += [step.path, f"```{fence}", "<<<<<<< SEARCH", *old.splitlines(), "=======",
                    *new.splitlines(), ">>>>>>> REPLACE", "```", "",
                    "> Tokens: 7.4k sent, 520 received. Cost: $0.03 message, $0.08 session.  ",
                    f"> Applied edit to {step.path}  ",
                    f"> Commit {ids.hex(7)} refactor: update {Path(step.path).name}  ", ""]
        else:
            raise ValueError(f"Aider has no {type(step).__name__} step")
    return "\n".join(out) + "\n"


# --- layout ----------------------------------------------------------------------------------

def claude_slug(path: str) -> str:
    import re

    return re.sub(r"[^A-Za-z0-9]", "-", path)


def relative_path(s: Session, workspace: str) -> str:
    """Where the agent keeps this session, relative to the agent home (Aider: the repo)."""
    if s.agent == "claude-code":
        return f".claude/projects/{claude_slug(workspace)}/{s.session_id}.jsonl"
    if s.agent == "codex":
        t = s.started
        return (f".codex/sessions/{t:%Y/%m/%d}/rollout-{t:%Y-%m-%dT%H-%M-%S}-"
                f"{s.session_id}.jsonl")
    if s.agent == "gemini-cli":
        project = hashlib.sha256(workspace.encode()).hexdigest()
        suffix = "jsonl" if s.jsonl else "json"
        return (f".gemini/tmp/{project}/chats/session-{s.started:%Y-%m-%dT%H-%M}-"
                f"{s.session_id[:8]}.{suffix}")
    return "repo/.aider.chat.history.md"


def render(s: Session, workspace: str) -> str:
    """The session's file content (for Aider: this run's part of the history file)."""
    if s.agent == "claude-code":
        return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in claude_lines(s, workspace))
    if s.agent == "codex":
        return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in codex_lines(s, workspace))
    if s.agent == "gemini-cli" and s.jsonl:
        return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in gemini_jsonl(s, workspace))
    if s.agent == "gemini-cli":
        return json.dumps(gemini_document(s, workspace), indent=2, ensure_ascii=False) + "\n"
    return aider_run(s)


def iter_rendered(sessions: list[Session], workspace: str) -> Iterator[tuple[Session, str, str]]:
    """(session, relative path, content) in order; Aider runs are returned one by one."""
    for s in sessions:
        yield s, relative_path(s, workspace), render(s, workspace)
