"""GitHub Copilot Chat sessions, as VS Code stores them (``chatSessions/<sessionId>.json[l]``).

The store is VS Code's own (microsoft/vscode ``src/vs/workbench/contrib/chat/common/model/
chatSessionStore.ts``), under ``User/workspaceStorage/<hash>/chatSessions/`` (empty windows:
``User/globalStorage/emptyWindowChatSessions/``). Two forms:

- ``<id>.json``: one ``ISerializableChatData`` document (``version: 3``), rewritten whole;
- ``<id>.jsonl`` (VS Code >= 1.109, ``chat.useLogSessionStorage``, the default): an
  ``ObjectMutationLog`` (``objectMutationLog.ts``). The first line is ``{"kind": 0, "v": {...}}``
  (the whole session); then ``kind: 1`` sets the value at path ``k``, ``kind: 2`` pushes ``v``
  onto the array at ``k`` after cutting it to ``i`` when given, ``kind: 3`` deletes at ``k``.
  After 1024 entries VS Code rewrites the file as a single ``kind: 0`` line.

Each request (``ISerializableChatRequestData``) becomes: the user's message (``message.text``),
then the response in order: text segments between tool invocations (``toolInvocationSerialized``
parts: agent mode), one assistant message per tool call and a ``tool`` message with its result
once it completed, edits VS Code applied without a tool call of their own (``textEditGroup``),
the response's error, and its usage (``result.usage``: ``promptTokens``/``completionTokens``).
The tool calls' arguments come from the Copilot extension's own record of the model's calls
(``result.metadata.toolCallRounds``), matched to the invocations by order and name; a running
request has none yet, and its calls carry what VS Code shows (files, the terminal command).

Attachments (``variableData``: files, images as base64) are never read: an image counts as
ignored. A truncated document or log line (VS Code writes while we read) is a counted skip.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

from reverie.transcripts.base import as_dict, as_int, as_str, first_line, make_tool_call, parse_time
from reverie.transcripts.document import (
    MAX_OUTPUT_CHARS,
    EditorDocument,
    Unit,
    capped,
    digest_of,
    load_json,
)
from reverie.transcripts.editor_places import local_path_of_uri
from reverie.transcripts.model import (
    Message,
    ParseStats,
    Session,
    ToolCall,
    ToolKind,
    ToolResult,
    Usage,
)
from reverie.transcripts.wrappers import request_of

#: response part kinds that carry nothing for the model (VS Code's ``IChatProgress`` kinds)
IGNORED_PARTS = frozenset({
    "thinking", "undoStop", "codeblockUri", "prepareToolInvocation", "mcpServersStarting",
    "progressMessage", "progressTask", "progressTaskSerialized", "progressTaskResult",
    "confirmation", "elicitation", "elicitationSerialized", "command", "extensions",
    "pullRequest", "treeData", "multiDiffData", "notebookEditGroup", "notebookEdit",
    "workspaceEdit", "hook", "questionCarousel", "clearToPreviousToolInvocation", "move",
    "references", "reference", "usedContext", "codeCitation", "textEdit", "disabledClaudeHooks",
    "undoStopSerialized", "todoList",
})
#: tool invocations VS Code records for its own implementation of an edit tool (the model's
#: call is the one before it)
_INTERNAL_TOOL = re.compile(r"^vscode_.*_internal$")
#: VS Code's model-facing tool name for a recorded ``copilot_*`` id (toolNames.ts)
_CONTRIBUTED = {
    "copilot_applyPatch": "apply_patch", "copilot_searchCodebase": "semantic_search",
    "copilot_searchWorkspaceSymbols": "search_workspace_symbols",
    "copilot_listCodeUsages": "list_code_usages", "copilot_findFiles": "file_search",
    "copilot_findTextInFiles": "grep_search", "copilot_readFile": "read_file",
    "copilot_listDirectory": "list_dir", "copilot_getErrors": "get_errors",
    "copilot_getChangedFiles": "get_changed_files",
    "copilot_readProjectStructure": "read_project_structure",
    "copilot_insertEdit": "insert_edit_into_file", "copilot_createFile": "create_file",
    "copilot_replaceString": "replace_string_in_file",
    "copilot_multiReplaceString": "multi_replace_string_in_file",
    "copilot_editNotebook": "edit_notebook_file", "copilot_runNotebookCell": "run_notebook_cell",
    "copilot_readNotebookCellOutput": "read_notebook_cell_output",
    "copilot_fetchWebPage": "fetch_webpage", "copilot_findTestFiles": "test_search",
    "copilot_getSearchResults": "get_search_view_results", "copilot_githubRepo": "github_repo",
    "copilot_createAndRunTask": "create_and_run_task",
    "copilot_openSimpleBrowser": "open_simple_browser",
    "copilot_createDirectory": "create_directory", "copilot_runVscodeCommand": "run_vscode_command",
    "copilot_editFiles": "edit_files", "copilot_memory": "memory",
    "copilot_installExtension": "install_extension", "copilot_getDocInfo": "get_doc_info",
}
#: an opening code fence closed at once: what a code block whose content went into an edit leaves
_EMPTY_FENCE = re.compile(r"(`{3,})[^\n`]*\n\s*\1[ \t]*\n?")
#: ``ResponseModelState`` (chatService.ts): Pending, Complete, Cancelled, Failed, NeedsInput
_CANCELLED = 2


def model_tool_name(tool_id: str) -> str:
    return _CONTRIBUTED.get(tool_id, tool_id)


def workspace_cwd(path: Path) -> str | None:
    """The folder of the VS Code workspace a ``chatSessions`` file belongs to: the ``folder``
    of ``../workspace.json`` when it is a local ``file:`` URI (a remote or virtual folder is
    not on this machine: no cwd)."""
    if path.parent.name != "chatSessions":
        return None
    return storage_cwd(path.parent.parent)


def storage_cwd(hash_dir: Path) -> str | None:
    """The local folder ``workspaceStorage/<hash>/workspace.json`` names, if any."""
    try:
        raw = (hash_dir / "workspace.json").read_bytes()[:64 * 1024]
        meta = orjson.loads(raw)
    except (OSError, orjson.JSONDecodeError):
        return None
    folder = as_str(meta.get("folder")) if isinstance(meta, dict) else None
    if folder is None:
        return None
    local, _why = local_path_of_uri(folder)
    return local


# -- the append log ------------------------------------------------------------------------

def replay_log(data: bytes, stats: ParseStats) -> tuple[dict[str, Any] | None, bool]:
    """The session state an ``ObjectMutationLog`` builds, and whether its last line was cut
    (VS Code appends while we read: that line waits for the next read, no skip)."""
    state: dict[str, Any] | None = None
    lines = data.split(b"\n")
    cut = bool(lines) and lines[-1].strip() != b""
    if cut:
        lines = lines[:-1]
    offset = 0
    for raw in lines:
        where = offset
        offset += len(raw) + 1
        if not raw.strip():
            continue
        stats.lines += 1
        entry, _why = load_json(raw)
        if not isinstance(entry, dict) or not isinstance(entry.get("kind"), int):
            stats.skip(f"byte {where}: not a mutation log entry")
            continue
        kind = entry["kind"]
        if kind == 0:
            value = entry.get("v")
            if isinstance(value, dict):
                state = value
            else:
                stats.skip(f"byte {where}: initial entry without a session object")
            continue
        if kind not in (1, 2, 3):
            stats.skip(f"byte {where}: unknown log entry kind {kind}")
            continue
        if state is None:
            stats.skip(f"byte {where}: log entry before the initial one")
            continue
        key = entry.get("k")
        if not isinstance(key, list) or not key:
            stats.ignored += 1  # an empty path replaces nothing (as VS Code's reader)
            continue
        try:
            _apply(state, kind, key, entry)
        except (KeyError, IndexError, TypeError, ValueError):
            stats.skip(f"byte {where}: log entry path {key[:6]!r} does not exist")
    return state, cut


def _apply(state: dict[str, Any], kind: int, key: list[Any], entry: dict[str, Any]) -> None:
    parent: Any = state
    for step in key[:-1]:
        parent = _child(parent, step)
    last = key[-1]
    if kind == 2:
        current = _child(parent, last, default=None)
        array = current if isinstance(current, list) else []
        cut = entry.get("i")
        if isinstance(cut, int) and not isinstance(cut, bool) and cut >= 0:
            del array[cut:]
        values = entry.get("v")
        if isinstance(values, list):
            array.extend(values)
        _assign(parent, last, array)
    elif kind == 1:
        _assign(parent, last, entry.get("v"))
    elif isinstance(parent, dict):  # kind 3: delete
        parent.pop(str(last), None)
    elif isinstance(parent, list) and isinstance(last, int) and 0 <= last < len(parent):
        parent[last] = None


def _child(container: Any, step: Any, default: Any = ...) -> Any:
    if isinstance(container, dict) and isinstance(step, str):
        if default is ... and step not in container:
            raise KeyError(step)
        return container.get(step, default)
    if isinstance(container, list) and isinstance(step, int) and not isinstance(step, bool):
        if 0 <= step < len(container):
            return container[step]
        if default is not ...:
            return default
        raise IndexError(step)
    raise TypeError(f"cannot step into {type(container).__name__} with {step!r}")


def _assign(container: Any, step: Any, value: Any) -> None:
    if isinstance(container, dict) and isinstance(step, str):
        container[step] = value
    elif isinstance(container, list) and isinstance(step, int) and not isinstance(step, bool):
        if 0 <= step < len(container):
            container[step] = value
        elif step == len(container):  # JavaScript arrays grow on assignment at the end
            container.append(value)
        else:
            raise IndexError(step)
    else:
        raise TypeError(f"cannot assign into {type(container).__name__} with {step!r}")


# -- the document --------------------------------------------------------------------------

def read_document(path: Path, data: bytes) -> EditorDocument:
    """A Copilot Chat session file (``.json`` document or ``.jsonl`` log) as units."""
    stats = ParseStats()
    session = Session(id=path.stem or "session", agent="copilot-chat", path=path)
    doc = EditorDocument(session=session, stats=stats)
    if path.suffix == ".jsonl" or data.lstrip()[:8].startswith(b'{"kind"'):
        state, _cut = replay_log(data, stats)
        if state is None:
            if data.strip():
                stats.skip("no initial entry in the session log")
                doc.complete = False
            return doc
    else:
        stats.lines = 1
        value, why = load_json(data)
        if why is not None or not isinstance(value, dict):
            stats.skip(why or "the session document is not a JSON object")
            doc.complete = False
            return doc
        state = value
    _session_fields(session, state, path)
    requests = state.get("requests")
    if not isinstance(requests, list):
        if "requests" in state:
            stats.skip("'requests' is not a list")
        return doc
    cwd = session.cwd
    keys: set[str] = set()
    for index, request in enumerate(requests):
        if not isinstance(request, dict):
            stats.skip(f"request {index}: not an object")
            continue
        key = as_str(request.get("requestId")) or f"request-{index}"
        if key in keys:
            key = f"{key}#{index}"
        keys.add(key)
        doc.units.append(Unit(key=key, digest=digest_of(request, cwd),
                              build=_builder(request, key, cwd, stats)))
    if session.title is None:
        for request in requests:
            said = as_dict(request).get("message")
            text = said if isinstance(said, str) else as_str(as_dict(said).get("text"))
            found = request_of(text) if text else None
            if found:
                session.title = first_line(found)
                session.title_source = "first_prompt"
                break
    return doc


def _session_fields(session: Session, state: dict[str, Any], path: Path) -> None:
    session.id = as_str(state.get("sessionId")) or session.id
    session.started_at = parse_time(state.get("creationDate"))
    session.updated_at = parse_time(state.get("lastMessageDate"))
    title = as_str(state.get("customTitle"))
    if title:
        session.title = first_line(title)
        session.title_source = "summary"
    session.cwd = session.project = workspace_cwd(path)
    requests = state.get("requests")
    if isinstance(requests, list):
        stamps = [t for r in requests if isinstance(r, dict)
                  if (t := parse_time(r.get("timestamp"))) is not None]
        if stamps:
            session.started_at = session.started_at or min(stamps)
            if session.updated_at is None or max(stamps) > session.updated_at:
                session.updated_at = max(stamps)


def _builder(request: dict[str, Any], key: str, cwd: str | None, stats: ParseStats) -> Any:
    def build() -> list[Message]:
        return list(_request_messages(request, key, cwd, stats))
    return build


def _markdown(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and isinstance(value.get("value"), str):
        return str(value["value"])
    return ""


def _uri_path(value: Any) -> str | None:
    """A local path from a serialised ``URI`` (``{fsPath, path, scheme}``) or a URI string."""
    if isinstance(value, str):
        return local_path_of_uri(value)[0]
    if not isinstance(value, dict):
        return None
    if isinstance(value.get("uri"), dict | str) and "scheme" not in value:
        return _uri_path(value["uri"])  # a Location: {uri, range}
    scheme = as_str(value.get("scheme"))
    if scheme not in (None, "file"):
        return None
    fs_path = as_str(value.get("fsPath"))
    if fs_path:
        return fs_path
    external = as_str(value.get("external"))
    if external:
        return local_path_of_uri(external)[0]
    raw = as_str(value.get("path"))
    if raw and len(raw) >= 3 and raw[0] == "/" and raw[2] == ":":
        return local_path_of_uri("file://" + raw)[0]
    return raw


def _reference_name(part: dict[str, Any]) -> str:
    name = as_str(part.get("name"))
    if name:
        return f"`{name}`"
    ref = part.get("inlineReference")
    path = _uri_path(ref) or _uri_path(as_dict(ref).get("location"))
    if path:
        return f"`{Path(path).name or path}`"
    return as_str(as_dict(ref).get("name")) or ""


def _round_calls(request: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """The model's calls of the request, in order, from the Copilot extension's metadata."""
    meta = as_dict(as_dict(request.get("result")).get("metadata"))
    out: list[tuple[str, dict[str, Any]]] = []
    rounds = meta.get("toolCallRounds")
    if not isinstance(rounds, list):
        return out
    for one in rounds:
        for call in as_dict(one).get("toolCalls") or []:
            if not isinstance(call, dict):
                continue
            args = call.get("arguments")
            parsed: Any = args
            if isinstance(args, str):
                try:
                    parsed = orjson.loads(args)
                except orjson.JSONDecodeError:
                    parsed = {"raw": args}
            out.append((as_str(call.get("name")) or "", as_dict(parsed)))
    return out


def _request_messages(request: dict[str, Any], key: str, cwd: str | None,
                      stats: ParseStats) -> Iterator[Message]:
    ts = parse_time(request.get("timestamp"))
    raw_message = request.get("message")
    message = as_dict(raw_message)
    # the oldest sessions (version 1) stored the request as a plain string
    text = raw_message if isinstance(raw_message, str) else as_str(message.get("text"))
    if text is None:
        parts = message.get("parts")
        text = "".join(as_str(as_dict(p).get("text")) or "" for p in parts) \
            if isinstance(parts, list) else ""
    for variable in as_dict(request.get("variableData")).get("variables") or []:
        kind = as_str(as_dict(variable).get("kind"))
        if kind == "image" or as_dict(variable).get("isImage") is True:
            stats.ignored += 1  # an attached image (base64): never decoded
    yield Message(id=key, role="user", text=capped(text, stats, f"request {key}"), timestamp=ts)
    model = as_str(request.get("modelId"))
    state = as_dict(request.get("modelState"))
    done_at = parse_time(state.get("completedAt")) or ts
    planned = _round_calls(request)
    used = 0
    segment: list[str] = []
    segments = 0
    calls: list[ToolCall] = []
    edited: list[str] = []
    last_edit_call: ToolCall | None = None
    for part in request.get("response") or []:
        if isinstance(part, str):
            segment.append(part)
            continue
        if not isinstance(part, dict):
            continue
        kind = part.get("kind")
        if kind is None or kind == "markdownContent" or kind == "markdownVuln":
            segment.append(_markdown(part.get("content", part)))
            continue
        if kind == "inlineReference":
            segment.append(_reference_name(part))
            continue
        if kind == "textEditGroup":
            path = _uri_path(part.get("uri"))
            if path:
                edited.append(path)
                if last_edit_call is not None and path not in last_edit_call.file_paths:
                    last_edit_call.file_paths.append(path)
            continue
        if kind == "toolInvocationSerialized":
            tool_id = as_str(part.get("toolId")) or "unknown"
            if _INTERNAL_TOOL.match(tool_id):
                stats.ignored += 1
                continue
            said = _said(segment)
            if said:
                yield Message(id=f"{key}:text:{segments}", role="assistant",
                              text=capped(said, stats, f"response {key}"),
                              timestamp=done_at, model=model)
            segment = []
            segments += 1
            args, used = _match_args(planned, used, tool_id)
            call = _tool_call(part, tool_id, args, key, len(calls), cwd)
            calls.append(call)
            last_edit_call = call if call.kind in (ToolKind.EDIT, ToolKind.WRITE) else None
            yield Message(id=f"{key}:call:{call.id}", role="assistant", timestamp=done_at,
                          model=model, tool_calls=[call])
            result = _tool_result(part, call)
            if result is not None:
                yield Message(id=f"{key}:call:{call.id}:result", role="tool",
                              timestamp=done_at, tool_results=[result])
            continue
        if kind in IGNORED_PARTS:
            stats.ignored += 1
            continue
        stats.skip(f"request {key}: unknown response part kind {kind!r}")
    said = _said(segment)
    if said:
        yield Message(id=f"{key}:text:{segments}", role="assistant",
                      text=capped(said, stats, f"response {key}"), timestamp=done_at, model=model)
    covered = {p for c in calls if c.kind in (ToolKind.EDIT, ToolKind.WRITE)
               for p in c.file_paths}
    for n, path in enumerate(dict.fromkeys(p for p in edited if p not in covered)):
        # an edit VS Code applied without a tool call of its own (Edits mode, "Apply")
        call = make_tool_call("copilot-chat", f"{key}:edit:{n}", "apply_edit",
                              {"filePath": path}, cwd)
        yield Message(id=f"{key}:edit:{n}", role="assistant", timestamp=done_at, model=model,
                      tool_calls=[call])
    outcome = as_dict(request.get("result"))
    error = as_dict(outcome.get("errorDetails"))
    # a request the user stopped carries ``errorDetails`` with code "canceled" (VS Code 1.10x)
    cancelled = as_str(error.get("code")) == "canceled"
    if as_str(error.get("message")) and not cancelled:
        yield Message(id=f"{key}:error", role="system", timestamp=done_at,
                      text=f"error: {error['message']}")
    elif cancelled or as_int(state.get("value")) == _CANCELLED or (
            request.get("isCanceled") is True):
        yield Message(id=f"{key}:cancelled", role="system", timestamp=done_at, is_meta=True,
                      text="request cancelled")
    usage = _usage(request, outcome)
    if usage is not None:
        yield Message(id=f"{key}:usage", role="system", timestamp=done_at, model=model,
                      api_message_id=key, usage=usage, is_meta=True)


def _said(segment: list[str]) -> str:
    """A text segment without the empty code fences an edit's code block leaves behind."""
    text = _EMPTY_FENCE.sub("", "".join(segment))
    return text if text.strip() else ""


def _match_args(planned: list[tuple[str, dict[str, Any]]], used: int,
                tool_id: str) -> tuple[dict[str, Any] | None, int]:
    """The arguments of the next planned call with this tool's model name (by order)."""
    want = model_tool_name(tool_id)
    for index in range(used, min(len(planned), used + 8)):
        name, args = planned[index]
        if name == want or name == tool_id:
            return args, index + 1
    return None, used


def _message_uris(part: dict[str, Any]) -> list[str]:
    out: list[str] = []
    for key in ("pastTenseMessage", "invocationMessage"):
        uris = as_dict(part.get(key)).get("uris")
        if isinstance(uris, dict):
            for uri, value in uris.items():
                path = _uri_path(value) or _uri_path(uri)
                if path:
                    out.append(path)
        if out:
            break
    return out


def _tool_call(part: dict[str, Any], tool_id: str, args: dict[str, Any] | None, key: str,
               index: int, cwd: str | None) -> ToolCall:
    call_id = as_str(part.get("toolCallId")) or f"{key}:tool:{index}"
    data = as_dict(part.get("toolSpecificData"))
    tool_input: dict[str, Any] = dict(args or {})
    kind = data.get("kind")
    if kind == "terminal" and "command" not in tool_input:
        line = as_dict(data.get("commandLine"))
        command = (as_str(line.get("userEdited")) or as_str(line.get("toolEdited"))
                   or as_str(line.get("original")) or as_str(data.get("command")))
        if command:
            tool_input["command"] = command
    elif kind == "input" and not tool_input:
        tool_input = as_dict(data.get("rawInput"))
    elif kind == "subagent" and not tool_input:
        tool_input = {k: data[k] for k in ("prompt", "description", "agentName") if k in data}
    call = make_tool_call("copilot-chat", call_id, tool_id, tool_input, cwd)
    if not call.file_paths and call.kind in (ToolKind.READ, ToolKind.EDIT, ToolKind.WRITE):
        call.file_paths = list(dict.fromkeys(_message_uris(part)))
    return call


def _tool_result(part: dict[str, Any], call: ToolCall) -> ToolResult | None:
    data = as_dict(part.get("toolSpecificData"))
    state = as_dict(data.get("terminalCommandState"))
    exit_code = state.get("exitCode") if isinstance(state.get("exitCode"), int) else None
    if part.get("isComplete") is not True and exit_code is None:
        return None
    details = part.get("resultDetails")
    output = as_str(as_dict(data.get("terminalCommandOutput")).get("text")) or ""
    is_error = False
    if isinstance(details, dict):
        is_error = details.get("isError") is True
        if not output:
            texts = []
            for item in details.get("output") or []:
                item = as_dict(item)
                if item.get("isText") is True or item.get("type") == "text":
                    texts.append(as_str(item.get("value")) or "")
            output = "\n".join(t for t in texts if t)
    if not output:
        output = _markdown(part.get("pastTenseMessage"))
    confirmed = part.get("isConfirmed")
    denied = confirmed is False or (isinstance(confirmed, dict) and confirmed.get("type") == 0)
    return ToolResult(call_id=call.id, is_error=is_error or denied or exit_code not in (None, 0),
                      output=capped(output, None, "", MAX_OUTPUT_CHARS), exit_code=exit_code)


def _usage(request: dict[str, Any], result: dict[str, Any]) -> Usage | None:
    usage = as_dict(result.get("usage"))
    prompt = as_int(usage.get("promptTokens")) or as_int(request.get("promptTokens"))
    completion = as_int(usage.get("completionTokens")) or as_int(request.get("completionTokens"))
    if not prompt and not completion:
        return None
    return Usage(input_tokens=prompt, output_tokens=completion)
