"""Cline, Roo Code and Kilo Code tasks (``globalStorage/<extension>/tasks/<taskId>/``).

The three extensions share Cline's task folder: ``ui_messages.json`` (the chat as the user saw
it: ``ClineMessage[]``, each ``{ts, type: "say"|"ask", say|ask, text, images?, partial?,
modelInfo?, ...}``), ``api_conversation_history.json`` (the model's messages) and
``task_metadata.json``. Types: cline/cline ``apps/vscode/src/shared/ExtensionMessage.ts``
(``ClineMessage``, ``ClineSay``, ``ClineAsk``, ``ClineSayTool``, ``ClineApiReqInfo``),
RooCodeInc/Roo-Code ``packages/types/src/message.ts``. Both files are rewritten whole after
every change (Cline ``fs.writeFile``, Roo ``safeWriteJson``: a temp file renamed over it).

Reverie reads ``ui_messages.json``: it has a time on every message, each tool use as structured
JSON (``say``/``ask`` ``"tool"``: ``{tool, path, diff, content, ...}``), commands (``ask``
``"command"``) with their output (``command_output``), and each API request's tokens
(``say: "api_req_started"``, whose ``text`` is ``{request, tokensIn, tokensOut, cacheWrites,
cacheReads, cost}``). The first message is the task. ``ts`` is a message's identity (a
streamed message is rewritten under the same ``ts``).

A task's workspace is what the extension recorded when it started: Cline's ``HistoryItem
.cwdOnTaskInitialization`` (``<globalStorage>/state/taskHistory.json``, older builds: VS Code's
global state), Roo's and Kilo's ``HistoryItem.workspace`` (``tasks/<id>/history_item.json``,
``tasks/_index.json``, older builds: global state). A task none of them names falls back on the
``# Current Working Directory (...)`` line of its first request's environment details, which
all three write.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import orjson

from reverie.transcripts.base import as_dict, as_int, as_str, first_line, make_tool_call, parse_time
from reverie.transcripts.classify import absolute, exit_code_from_text
from reverie.transcripts.detect import CLINE_UI_MESSAGES, cline_task_agent
from reverie.transcripts.document import (
    MAX_OUTPUT_CHARS,
    EditorDocument,
    Unit,
    capped,
    digest_of,
    load_json,
)
from reverie.transcripts.model import (
    AgentName,
    Message,
    ParseStats,
    Session,
    ToolKind,
    ToolResult,
    Usage,
)
from reverie.transcripts.wrappers import request_of

#: say / ask types that carry nothing for the model
IGNORED = frozenset({
    "reasoning", "checkpoint_created", "checkpoint_saved", "task_progress", "api_req_finished",
    "api_req_retried", "api_req_retry_delayed", "api_req_rate_limit_wait", "api_req_deleted",
    "deleted_api_reqs", "shell_integration_warning", "shell_integration_warning_with_suggestion",
    "info", "hook_status", "hook_output_stream", "hook", "hook_output", "subagent_usage",
    "conditional_rules_applied", "compaction", "condense_context", "condense_context_error",
    "sliding_window_truncation", "load_mcp_documentation", "mcp_notification",
    "resume_task", "resume_completed_task", "auto_approval_max_req_reached", "image",
    "codebase_search_result", "user_edit_todos", "too_many_tools_warning", "generate_explanation",
    "user_feedback_diff", "browser_action_result", "mcp_server_request_started",
    "subagent", "error_retry", "api_req_failed_retry", "new_task_with_context", "condense",
    "report_bug", "summarize_task",
})
_ERRORS = frozenset({"error", "diff_error", "clineignore_error", "rooignore_error",
                     "api_req_failed", "mistake_limit_reached", "command_permission_denied"})
_CWD_LINE = re.compile(r"# Current (?:Working|Workspace) Directory \((.+?)\) Files")
#: Cline appends this to a command that needs approval (``COMMAND_REQ_APP_STRING``)
_REQ_APP = "REQ_APP"


# -- which workspace a task belongs to -------------------------------------------------------

def history_cwds(tasks_root: Path, user_dir: Path | None, extension: str | None) -> dict[str, str]:
    """``task id -> workspace`` from the extension's own history records (see module doc)."""
    found: dict[str, str] = {}
    for path in (tasks_root.parent / "state" / "taskHistory.json",  # Cline
                 tasks_root / "_index.json"):  # Roo, Kilo
        items = _read_json(path)
        if isinstance(items, dict):
            items = items.get("entries") or items.get("taskHistory")
        _collect(items, found)
    if user_dir is not None and extension is not None:
        _collect(as_dict(_global_state(user_dir, extension)).get("taskHistory"), found)
    return found


def _collect(items: Any, found: dict[str, str]) -> None:
    if not isinstance(items, list):
        return
    for item in items:
        item = as_dict(item)
        task_id = as_str(item.get("id"))
        where = as_str(item.get("cwdOnTaskInitialization")) or as_str(item.get("workspace"))
        if task_id and where and task_id not in found:
            found[task_id] = where


def _read_json(path: Path, limit: int = 64 * 1024 * 1024) -> Any:
    try:
        if path.stat().st_size > limit:
            return None
        return orjson.loads(path.read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return None


def _global_state(user_dir: Path, extension: str) -> Any:
    """An extension's global state as VS Code keeps it (``User/globalStorage/state.vscdb``,
    table ``ItemTable``, key = the extension id), read only; None when unreadable."""
    db = user_dir / "globalStorage" / "state.vscdb"
    if not db.is_file():
        return None
    try:
        with closing(sqlite3.connect(f"{db.as_uri()}?mode=ro", uri=True, timeout=0.5)) as conn:
            row = conn.execute("SELECT value FROM ItemTable WHERE lower(key) = ? LIMIT 1",
                               (extension.lower(),)).fetchone()
    except sqlite3.Error:
        return None
    if not row or not isinstance(row[0], str | bytes):
        return None
    value, _why = load_json(row[0].encode() if isinstance(row[0], str) else row[0])
    return value


def own_history_cwd(task_dir: Path) -> str | None:
    """The workspace a task's own ``history_item.json`` records (Roo, Kilo)."""
    item = as_dict(_read_json(task_dir / "history_item.json", 4 * 1024 * 1024))
    return as_str(item.get("workspace")) or as_str(item.get("cwdOnTaskInitialization"))


def environment_cwd(text: str) -> str | None:
    match = _CWD_LINE.search(text)
    return match.group(1).strip() if match else None


def head_cwd(path: Path, limit: int = 512 * 1024) -> str | None:
    """The environment-details working directory in the first part of ``ui_messages.json``
    (JSON-escaped there; a path with a quote or backslash is decoded)."""
    try:
        with path.open("rb") as handle:
            head = handle.read(limit).decode("utf-8", "replace")
    except OSError:
        return None
    found = environment_cwd(head)
    if found is None:
        return None
    try:
        decoded = orjson.loads(f'"{found}"')  # the text is inside a JSON string (twice)
        decoded = orjson.loads(f'"{decoded}"') if "\\" in decoded else decoded
    except orjson.JSONDecodeError:
        return found
    return decoded if isinstance(decoded, str) else found


def task_cwd(path: Path) -> str | None:
    """The workspace of the task whose ``ui_messages.json`` is ``path`` (one file read)."""
    task_dir = path.parent
    own = own_history_cwd(task_dir)
    if own:
        return own
    found = history_cwds(task_dir.parent, None, None).get(task_dir.name)
    return found


# -- the document ----------------------------------------------------------------------------

def read_document(path: Path, data: bytes, agent: AgentName | None = None,
                  cwd: str | None = None) -> EditorDocument:
    """A task's ``ui_messages.json`` as units, one per UI message."""
    agent = agent or cline_task_agent(path)
    stats = ParseStats()
    task_id = path.parent.name if path.name == CLINE_UI_MESSAGES else path.stem
    session = Session(id=task_id or "task", agent=agent, path=path)
    doc = EditorDocument(session=session, stats=stats)
    stats.lines = 1
    value, why = load_json(data)
    if why is not None or not isinstance(value, list):
        stats.skip(why or "ui_messages.json is not a list")
        doc.complete = False
        return doc
    messages = [m for m in value if isinstance(m, dict)]
    if len(messages) != len(value):
        for _ in range(len(value) - len(messages)):
            stats.skip("a UI message that is not an object")
    cwd = cwd or task_cwd(path) or _first_environment_cwd(messages)
    session.cwd = session.project = cwd
    stamps = [t for m in messages if (t := parse_time(m.get("ts"))) is not None]
    if stamps:
        session.started_at, session.updated_at = min(stamps), max(stamps)
    keys: set[str] = set()
    last_command: str | None = None
    for index, raw in enumerate(messages):
        key = str(as_int(raw.get("ts")) or f"m{index}")
        while key in keys:
            key += "+"
        keys.add(key)
        kind = raw.get("say") if raw.get("type") == "say" else raw.get("ask")
        if kind == "command":
            last_command = key
        call_for = last_command if kind == "command_output" else None
        doc.units.append(Unit(key=key, digest=digest_of(raw, index == 0, call_for, cwd),
                              build=_builder(raw, key, index == 0, call_for, agent, cwd, stats)))
    if messages:
        first = as_str(messages[0].get("text"))
        found = request_of(first) if first else None
        if found:
            session.title = first_line(found)
            session.title_source = "first_prompt"
    return doc


def _first_environment_cwd(messages: list[dict[str, Any]]) -> str | None:
    for raw in messages[:40]:
        if raw.get("say") == "api_req_started":
            info = _json_text(raw.get("text"))
            found = environment_cwd(as_str(info.get("request")) or "")
            if found:
                return found
    return None


def _json_text(text: Any) -> dict[str, Any]:
    if not isinstance(text, str) or not text.startswith("{"):
        return {}
    value, _why = load_json(text.encode("utf-8", "surrogatepass"))
    return value if isinstance(value, dict) else {}


def _builder(raw: dict[str, Any], key: str, first: bool, call_for: str | None,
             agent: AgentName, cwd: str | None, stats: ParseStats) -> Any:
    def build() -> list[Message]:
        return list(_messages(raw, key, first, call_for, agent, cwd, stats))
    return build


def _messages(raw: dict[str, Any], key: str, first: bool, call_for: str | None,
              agent: AgentName, cwd: str | None, stats: ParseStats) -> Iterator[Message]:
    ts = parse_time(raw.get("ts"))
    text = as_str(raw.get("text")) or ""
    model = as_str(as_dict(raw.get("modelInfo")).get("modelId"))
    images = raw.get("images")
    if isinstance(images, list) and images:
        stats.ignored += len(images)  # attached images (data URIs): never decoded
    if raw.get("type") not in ("say", "ask"):
        stats.skip(f"message {key}: unknown type {raw.get('type')!r}")
        return
    kind = as_str(raw.get("say")) if raw.get("type") == "say" else as_str(raw.get("ask"))
    if first and kind in ("task", "text", None):
        yield Message(id=key, role="user", text=capped(text, stats, f"task {key}"), timestamp=ts)
        return
    if kind in ("task", "user_feedback"):
        yield Message(id=key, role="user", text=capped(text, stats, f"message {key}"),
                      timestamp=ts)
    elif kind in ("text", "completion_result", "followup", "plan_completion_result",
                  "plan_mode_respond"):
        shown = text
        if kind == "followup":
            question = _json_text(text)
            shown = as_str(question.get("question")) or text
        if shown.strip():
            yield Message(id=key, role="assistant", text=capped(shown, stats, f"message {key}"),
                          timestamp=ts, model=model)
    elif kind == "api_req_started":
        info = _json_text(text)
        usage = Usage(input_tokens=as_int(info.get("tokensIn")),
                      output_tokens=as_int(info.get("tokensOut")),
                      cache_read_tokens=as_int(info.get("cacheReads")),
                      cache_write_tokens=as_int(info.get("cacheWrites")))
        if usage.context_tokens:
            yield Message(id=f"{key}:usage", role="system", timestamp=ts, model=model,
                          api_message_id=key, usage=usage, is_meta=True)
        else:
            stats.ignored += 1
    elif kind == "tool":
        yield _tool_message(raw, key, text, agent, cwd, ts, model)
    elif kind == "command":
        command = text.removesuffix(_REQ_APP).rstrip()
        call = make_tool_call(agent, key, "execute_command", {"command": command}, cwd)
        yield Message(id=key, role="assistant", timestamp=ts, model=model, tool_calls=[call])
    elif kind == "command_output":
        code = exit_code_from_text(text)
        result = ToolResult(call_id=call_for or key, exit_code=code, is_error=code not in (None, 0),
                            output=capped(text, None, "", MAX_OUTPUT_CHARS))
        yield Message(id=key, role="tool", timestamp=ts, tool_results=[result])
    elif kind in ("use_mcp_server", "mcp_server_response"):
        if kind == "use_mcp_server":
            info = _json_text(text)
            name = f"mcp:{as_str(info.get('serverName')) or '?'}/" \
                   f"{as_str(info.get('toolName')) or as_str(info.get('uri')) or '?'}"
            call = make_tool_call(agent, key, name, info, cwd)
            yield Message(id=key, role="assistant", timestamp=ts, model=model, tool_calls=[call])
        else:
            stats.ignored += 1
    elif kind in ("browser_action_launch", "browser_action"):
        call = make_tool_call(agent, key, "browser_action", {"url": text} if kind.endswith(
            "launch") else _json_text(text), cwd)
        yield Message(id=key, role="assistant", timestamp=ts, model=model, tool_calls=[call])
    elif kind in ("subtask_result", "use_subagents"):
        if text.strip():
            yield Message(id=key, role="system", timestamp=ts, text=capped(text, stats, key))
    elif kind in _ERRORS:
        if text.strip():
            yield Message(id=key, role="system", timestamp=ts,
                          text=capped(f"{kind}: {text}", stats, key))
    elif kind in IGNORED:
        stats.ignored += 1
    else:
        stats.skip(f"message {key}: unknown {raw.get('type')} kind {kind!r}")


#: tool names whose ``path`` is a folder listed, not a file touched
_FOLDER_TOOLS = frozenset({"listFilesTopLevel", "listFilesRecursive", "listCodeDefinitionNames",
                           "list_files", "list_code_definition_names"})
_BULKY = frozenset({"content", "diff", "originalContent", "batchFiles", "batchDiffs"})


def _tool_message(raw: dict[str, Any], key: str, text: str, agent: AgentName, cwd: str | None,
                  ts: Any, model: str | None) -> Message:
    """A ``say``/``ask`` "tool" message (``ClineSayTool``) as one tool call."""
    info = _json_text(text)
    name = as_str(info.get("tool")) or "tool"
    tool_input = {k: v for k, v in info.items()
                  if k not in _BULKY and isinstance(v, str | int | float | bool)}
    call = make_tool_call(agent, key, name, tool_input, cwd)
    if name in _FOLDER_TOOLS or call.kind not in (ToolKind.READ, ToolKind.EDIT, ToolKind.WRITE):
        call.file_paths = []
    else:
        paths = list(call.file_paths)
        relative = as_str(info.get("path"))
        shown = as_str(info.get("content"))
        if (relative and paths and not Path(paths[0]).is_absolute() and shown
                and "\n" not in shown and Path(shown).is_absolute()):
            paths = [shown]  # Cline's readFile: ``path`` relative, ``content`` the absolute one
        for many in ("batchFiles", "batchDiffs"):
            for item in info.get(many) or []:
                where = as_str(as_dict(item).get("path"))
                if where:
                    paths.append(absolute(where, cwd))
        call.file_paths = list(dict.fromkeys(paths))
    return Message(id=key, role="assistant", timestamp=ts, model=model, tool_calls=[call])
