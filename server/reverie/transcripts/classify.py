"""Agent tool names -> ``ToolKind``, file paths and shell commands.

Each agent names its tools differently; session memory and dream only ask "did it read, edit,
run...". Paths are made absolute against the session's cwd where the agent gives relative ones.
"""

from __future__ import annotations

import ntpath
import posixpath
import re
import shlex
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from reverie.transcripts.kinds import ToolKind

if TYPE_CHECKING:  # a name for annotations only: ``reverie.types`` builds pydantic models
    from reverie.types import AgentName

K = ToolKind

CLAUDE_TOOLS: dict[str, ToolKind] = {
    "Read": K.READ,
    "NotebookRead": K.READ,
    "LS": K.READ,
    "Write": K.WRITE,
    "Edit": K.EDIT,
    "MultiEdit": K.EDIT,
    "NotebookEdit": K.EDIT,
    "Bash": K.SHELL,
    "BashOutput": K.SHELL,
    "KillBash": K.SHELL,
    "KillShell": K.SHELL,
    "Grep": K.SEARCH,
    "Glob": K.SEARCH,
    "WebFetch": K.WEB,
    "WebSearch": K.WEB,
    "Task": K.TASK,
    "Agent": K.TASK,
}

CODEX_TOOLS: dict[str, ToolKind] = {
    "exec_command": K.SHELL,
    "shell": K.SHELL,
    "local_shell": K.SHELL,
    "container.exec": K.SHELL,
    "write_stdin": K.SHELL,
    "apply_patch": K.EDIT,
    "web_search": K.WEB,
    "view_image": K.READ,
    "spawn_agent": K.TASK,
}

GEMINI_TOOLS: dict[str, ToolKind] = {
    "read_file": K.READ,
    "read_many_files": K.READ,
    "list_directory": K.READ,
    "write_file": K.WRITE,
    "replace": K.EDIT,
    "edit": K.EDIT,
    "run_shell_command": K.SHELL,
    "glob": K.SEARCH,
    "search_file_content": K.SEARCH,
    "grep": K.SEARCH,
    "google_web_search": K.WEB,
    "web_fetch": K.WEB,
    "delegate_to_agent": K.TASK,
}

AIDER_TOOLS: dict[str, ToolKind] = {
    "apply_edit": K.EDIT,
    "git_commit": K.OTHER,
}

#: GitHub Copilot Chat in VS Code: the model-facing names (``ToolName``) and the names VS Code
#: records (``ContributedToolName``, ``copilot_*``) of microsoft/vscode-copilot-chat
#: ``src/extension/tools/common/toolNames.ts``; core tools (``run_in_terminal``...) are VS Code's.
COPILOT_TOOLS: dict[str, ToolKind] = {
    "read_file": K.READ, "copilot_readFile": K.READ,
    "list_dir": K.READ, "copilot_listDirectory": K.READ,
    "read_project_structure": K.READ, "copilot_readProjectStructure": K.READ,
    "get_changed_files": K.READ, "copilot_getChangedFiles": K.READ,
    "get_errors": K.READ, "copilot_getErrors": K.READ,
    "read_notebook_cell_output": K.READ, "copilot_readNotebookCellOutput": K.READ,
    "copilot_getNotebookSummary": K.READ,
    "apply_patch": K.EDIT, "copilot_applyPatch": K.EDIT,
    "insert_edit_into_file": K.EDIT, "copilot_insertEdit": K.EDIT,
    "replace_string_in_file": K.EDIT, "copilot_replaceString": K.EDIT,
    "multi_replace_string_in_file": K.EDIT, "copilot_multiReplaceString": K.EDIT,
    "edit_notebook_file": K.EDIT, "copilot_editNotebook": K.EDIT,
    "edit_files": K.EDIT, "copilot_editFiles": K.EDIT,
    # a ``textEditGroup`` VS Code applied without a tool call of its own (Edits mode)
    "apply_edit": K.EDIT,
    "create_file": K.WRITE, "copilot_createFile": K.WRITE,
    "create_directory": K.WRITE, "copilot_createDirectory": K.WRITE,
    "create_new_jupyter_notebook": K.WRITE, "copilot_createNewJupyterNotebook": K.WRITE,
    "run_in_terminal": K.SHELL, "get_terminal_output": K.SHELL,
    "run_task": K.SHELL, "create_and_run_task": K.SHELL, "copilot_createAndRunTask": K.SHELL,
    "get_task_output": K.SHELL, "terminal_last_command": K.SHELL,
    "semantic_search": K.SEARCH, "copilot_searchCodebase": K.SEARCH,
    "file_search": K.SEARCH, "copilot_findFiles": K.SEARCH,
    "grep_search": K.SEARCH, "copilot_findTextInFiles": K.SEARCH,
    "search_workspace_symbols": K.SEARCH, "copilot_searchWorkspaceSymbols": K.SEARCH,
    "list_code_usages": K.SEARCH, "copilot_listCodeUsages": K.SEARCH,
    "test_search": K.SEARCH, "copilot_findTestFiles": K.SEARCH,
    "get_search_view_results": K.SEARCH, "copilot_getSearchResults": K.SEARCH,
    "fetch_webpage": K.WEB, "copilot_fetchWebPage": K.WEB,
    "open_simple_browser": K.WEB, "copilot_openSimpleBrowser": K.WEB,
    "github_repo": K.WEB, "copilot_githubRepo": K.WEB,
    "runSubagent": K.TASK,
}

#: Cline, Roo Code and Kilo Code: the model's tool names (cline/cline
#: ``src/core/prompts``, RooCodeInc/Roo-Code ``src/shared/tools.ts``) and the ``tool`` of a
#: ``say``/``ask`` "tool" UI message (``ClineSayTool`` in cline/cline
#: ``apps/vscode/src/shared/ExtensionMessage.ts``, Roo-Code ``packages/types``).
CLINE_TOOLS: dict[str, ToolKind] = {
    "read_file": K.READ, "readFile": K.READ,
    "list_files": K.READ, "listFilesTopLevel": K.READ, "listFilesRecursive": K.READ,
    "list_code_definition_names": K.READ, "listCodeDefinitionNames": K.READ,
    "readCommandOutput": K.READ, "read_command_output": K.READ,
    "replace_in_file": K.EDIT, "apply_diff": K.EDIT, "appliedDiff": K.EDIT,
    "editedExistingFile": K.EDIT, "insert_content": K.EDIT, "search_and_replace": K.EDIT,
    "search_replace": K.EDIT, "edit_file": K.EDIT, "apply_patch": K.EDIT,
    "fileDeleted": K.EDIT,
    "write_to_file": K.WRITE, "newFileCreated": K.WRITE,
    "execute_command": K.SHELL,
    "search_files": K.SEARCH, "searchFiles": K.SEARCH, "codebase_search": K.SEARCH,
    "codebaseSearch": K.SEARCH,
    "web_fetch": K.WEB, "webFetch": K.WEB, "webSearch": K.WEB, "browser_action": K.WEB,
    "new_task": K.TASK, "newTask": K.TASK, "use_subagents": K.TASK,
    # Cline 4 (its SDK): sdk/packages/core/src/extensions/tools/definitions.ts
    "read_files": K.READ, "editor": K.EDIT, "run_commands": K.SHELL,
    "search_codebase": K.SEARCH, "fetch_web_content": K.WEB, "spawn_agent": K.TASK,
}

#: Kilo Code rebuilt on OpenCode (its CLI's tools: Kilo-Org/kilocode
#: ``packages/opencode/src/tool/registry.ts``); the Roo-fork names above stay for older tasks.
KILO_TOOLS: dict[str, ToolKind] = CLINE_TOOLS | {
    "read": K.READ, "list": K.READ, "ls": K.READ, "lsp": K.READ,
    "edit": K.EDIT, "multiedit": K.EDIT, "apply_patch": K.EDIT,
    "write": K.WRITE,
    "bash": K.SHELL, "shell": K.SHELL,
    "glob": K.SEARCH, "grep": K.SEARCH, "codesearch": K.SEARCH, "codebase_search": K.SEARCH,
    "warpgrep": K.SEARCH,
    "webfetch": K.WEB, "websearch": K.WEB,
    "task": K.TASK,
}

#: Continue: ``BuiltInToolNames`` (continuedev/continue ``core/tools/builtIn.ts``) and the
#: Continue CLI's tools (``Read``, ``Edit``, ``MultiEdit``, ``Write``, ``Bash``...).
CONTINUE_TOOLS: dict[str, ToolKind] = {
    "read_file": K.READ, "read_file_range": K.READ, "read_currently_open_file": K.READ,
    "ls": K.READ, "view_subdirectory": K.READ, "view_repo_map": K.READ, "view_diff": K.READ,
    "edit_existing_file": K.EDIT, "single_find_and_replace": K.EDIT, "multi_edit": K.EDIT,
    "create_new_file": K.WRITE,
    "run_terminal_command": K.SHELL,
    "grep_search": K.SEARCH, "file_glob_search": K.SEARCH, "codebase": K.SEARCH,
    "exact_search": K.SEARCH,
    "search_web": K.WEB, "fetch_url_content": K.WEB,
    "Read": K.READ, "List": K.READ, "Edit": K.EDIT, "MultiEdit": K.EDIT, "Write": K.WRITE,
    "Bash": K.SHELL, "Search": K.SEARCH, "Fetch": K.WEB,
}

#: Generic transcripts may use any agent's names; lower-case lookup over all of them.
GENERIC_TOOLS: dict[str, ToolKind] = {
    name.lower(): kind
    for table in (CLAUDE_TOOLS, CODEX_TOOLS, GEMINI_TOOLS, AIDER_TOOLS)
    for name, kind in table.items()
} | {"bash": K.SHELL, "read": K.READ, "write": K.WRITE, "edit_file": K.EDIT, "glob": K.SEARCH}

_TABLES: dict[str, dict[str, ToolKind]] = {
    "claude-code": CLAUDE_TOOLS,
    "codex": CODEX_TOOLS,
    "gemini-cli": GEMINI_TOOLS,
    "aider": AIDER_TOOLS,
    "generic": GENERIC_TOOLS,
    "copilot-chat": COPILOT_TOOLS,
    "cline": CLINE_TOOLS,
    "roo-code": CLINE_TOOLS,
    "kilo-code": KILO_TOOLS,
    "continue": CONTINUE_TOOLS,
}

#: Input keys that name one file the tool reads or changes.
_FILE_KEYS = ("file_path", "notebook_path", "absolute_path", "filePath", "filename", "filepath")
#: ``path`` means a file only for file tools (for search tools it is the directory searched).
_FILE_KINDS = {K.READ, K.EDIT, K.WRITE}

_PATCH_HEADER = re.compile(
    r"^\*\*\* (?:Add File|Update File|Delete File|Move to): (.+?)\s*$", re.MULTILINE
)
_DRIVE = re.compile(r"^[A-Za-z]:[\\/]")
_UNIFIED_HEADER = re.compile(r"^\+\+\+ (?:b/)?(.+?)\s*$", re.MULTILINE)
#: a shell command that runs Codex's ``apply_patch`` (``apply_patch <<'EOF' … *** Begin Patch``)
_APPLY_PATCH_RUN = re.compile(r"(?:^|[\s;&|(`'\"])apply_patch\b")


def tool_kind(agent: AgentName, name: str) -> ToolKind:
    table = _TABLES[agent]
    kind = table.get(name) if agent != "generic" else table.get(name.lower())
    if kind is not None:
        return kind
    if name.startswith("mcp__"):
        return K.OTHER
    return K.OTHER


def absolute(path: str, cwd: str | None) -> str:
    """``path`` made absolute against ``cwd`` (Windows or POSIX style, whichever ``cwd`` is)."""
    if not path:
        return path
    if path.startswith(("/", "\\\\")) or _DRIVE.match(path):
        return path
    if not cwd:
        return path
    if _DRIVE.match(cwd):
        return ntpath.normpath(ntpath.join(cwd, path))
    return posixpath.normpath(posixpath.join(cwd, path))


def patch_file_paths(patch: str, cwd: str | None) -> list[str]:
    """Files named by an ``apply_patch`` envelope (``*** Update File: ...``) or a unified diff."""
    names = _PATCH_HEADER.findall(patch) or [
        n for n in _UNIFIED_HEADER.findall(patch) if n != "/dev/null"
    ]
    return _unique(absolute(n.strip(), cwd) for n in names)


def shell_command(value: Any) -> str | None:
    """A shell command as one string: lists like ``["bash", "-lc", "ls"]`` become ``ls``."""
    if isinstance(value, str):
        return value
    if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
        if len(value) == 3 and value[1] in ("-lc", "-c") and value[0].rsplit("/", 1)[-1] in (
            "bash", "sh", "zsh", "fish", "dash",
        ):
            return str(value[2])
        return shlex.join(value)
    return None


def tool_facts(
    agent: AgentName, name: str, tool_input: dict[str, Any], cwd: str | None
) -> tuple[ToolKind, list[str], str | None]:
    """A tool call's kind, the absolute file paths it names and its shell command: what
    ``base.make_tool_call`` puts in a ``ToolCall``, and all ``--stats`` needs of one."""
    kind = tool_kind(agent, name)
    paths: list[str] = []
    command: str | None = None
    lowered = name.lower()
    if lowered == "apply_patch":
        patch = (tool_input.get("input") or tool_input.get("patch")
                 or tool_input.get("patchText") or "")  # Kilo (OpenCode): ``patchText``
        if isinstance(patch, str):
            paths = patch_file_paths(patch, cwd)
        elif isinstance(tool_input.get("command"), list):
            cmd = tool_input["command"]
            paths = patch_file_paths(str(cmd[-1]) if cmd else "", cwd)
    else:
        for key in _FILE_KEYS:
            value = tool_input.get(key)
            if isinstance(value, str) and value:
                paths.append(absolute(value, cwd))
        if kind in _FILE_KINDS:
            value = tool_input.get("path")
            if isinstance(value, str) and value and lowered not in ("ls", "list_directory"):
                paths.append(absolute(value, cwd))
            many = tool_input.get("paths")
            if isinstance(many, list):
                paths.extend(absolute(p, cwd) for p in many if isinstance(p, str) and p)
        listed = tool_input.get("file_paths")  # generic writers may list the files themselves
        if isinstance(listed, list):
            paths.extend(absolute(p, cwd) for p in listed if isinstance(p, str) and p)
        for many_key in ("edits", "replacements"):  # MultiEdit; Copilot multi_replace
            edits = tool_input.get(many_key)
            if isinstance(edits, list):
                for edit in edits:
                    if not isinstance(edit, dict):
                        continue
                    for key in ("file_path", "filePath"):
                        if isinstance(edit.get(key), str) and edit[key]:
                            paths.append(absolute(edit[key], cwd))
    if kind is K.SHELL:
        command = shell_command(tool_input.get("command", tool_input.get("cmd")))
        if command and "*** Begin Patch" in command and _APPLY_PATCH_RUN.search(command):
            # Codex edits files through the shell too: the patch names them, and it is an edit
            paths = patch_file_paths(command, cwd)
            kind = K.EDIT
    return kind, _unique(paths), command


def _unique(items: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(i for i in items if i))


_EXIT_PATTERNS = (
    re.compile(r"Process exited with code (-?\d+)"),
    re.compile(r"^(?:Error: )?Exit code:? (-?\d+)", re.MULTILINE),
    re.compile(r"^Exit Code: (-?\d+)", re.MULTILINE),
)


def exit_code_from_text(text: str) -> int | None:
    """The exit code an agent printed into a tool's output ("Process exited with code 2")."""
    head = text[:4096]
    for pattern in _EXIT_PATTERNS:
        match = pattern.search(head)
        if match:
            return int(match.group(1))
    return None
