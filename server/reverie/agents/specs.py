"""Where each agent looks, and what Reverie writes there (sources in ``docs/agents.md``).

- claude-code: personal ``CLAUDE.local.md`` imports MEMORY.md and the hooks go to
  ``.claude/settings.local.json`` (both git-excluded); project: a copy in ``CLAUDE.md`` and
  ``.claude/settings.json``.
- codex: personal: a copy labelled with the workspace in ``$CODEX_HOME/AGENTS.md``, hooks in
  ``$CODEX_HOME/hooks.json``, the MCP server in ``$CODEX_HOME/config.toml``; project: a copy in
  ``AGENTS.md``, hooks in ``.codex/hooks.json``, the MCP server in ``.codex/config.toml``.
- gemini: personal: a labelled copy in ``~/.gemini/GEMINI.md``, the MCP server in
  ``~/.gemini/settings.json``; project: a copy in ``GEMINI.md`` (or the ``context.fileName``
  the settings name), the MCP server in ``.gemini/settings.json``.
- aider: ``.aider.conf.yml``'s ``read:`` lists MEMORY.md (git-excluded when personal).
- the editor's agents (copilot-chat, cline, roo-code, kilo-code, continue): a labelled copy in
  a rules / instructions file of Reverie's own, the MCP server, Copilot's compaction hook
  (``agents.editor_specs``).

Claude Code's ``@path`` imports may point anywhere, so its personal file imports the live
MEMORY.md (a committed CLAUDE.md gets a copy: the path is this machine's). Gemini's
import processor only accepts files under the importing file's directory and Codex has no
imports, so both get a managed copy, refreshed after every applied memory change. Aider reads
the files in ``read:`` itself.
"""

from __future__ import annotations

import json
import logging
import os
import re
import shlex
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from reverie.agent_roots import AgentRoots
from reverie.agents.blocks import CommentStyle, neutralise_imports
from reverie.agents.edits import HookEntry
from reverie.agents.jsontext import without_comments
from reverie.agents.ledger import EditKind, Mode, Role, Scope
from reverie.config import ProjectPaths, Settings, claude_project_slug, project_key
from reverie.hazards import APPROVED, hazard_of
from reverie.types import ConnectableAgent

logger = logging.getLogger(__name__)

MEMORY_INDEX = "MEMORY.md"
PRE_COMPACT_TIMEOUT = 30
SESSION_START_TIMEOUT = 15
#: prompt-time recall sits on the path of every prompt: it answers in well under a second or
#: the agent goes on without it
USER_PROMPT_TIMEOUT = 5


@dataclass(slots=True)
class PlannedEdit:
    """One file of a connection and what Reverie's part of it should be."""

    path: Path
    role: Role
    kind: EditKind
    block_id: str
    style: CommentStyle = "html"
    body: str = ""
    hooks: list[HookEntry] = field(default_factory=list)
    read_path: str = ""
    #: json-mcp: the object path of the MCP servers' map, the entry's name and value
    json_path: list[str] = field(default_factory=list)
    mcp_name: str = ""
    mcp_server: dict[str, object] = field(default_factory=dict)
    #: personal files inside the workspace: must not be tracked by git, and get excluded
    in_workspace_personal: bool = False
    #: for a file Reverie creates: text before the block (front matter the agent reads first)
    preamble: str = ""


@dataclass(slots=True)
class Plan:
    agent: ConnectableAgent
    scope: Scope
    mode: Mode
    memory_dir: Path
    edits: list[PlannedEdit]
    notes: list[str] = field(default_factory=list)


def block_id(agent: ConnectableAgent, workspace: Path) -> str:
    return f"{agent} {project_key(workspace)}"


def hook_command(settings: Settings, event: str) -> str:
    """The command a hook runs: this interpreter, so no PATH lookup or venv activation.

    ``-P``: the agent runs hooks in the project, and ``-m`` would put that directory first on
    the import path, so a repository's own ``reverie/`` or ``yaml.py`` would run as the hook."""
    argv = [sys.executable, "-P", "-m", "reverie", "hook", event,
            "--data-dir", str(settings.data_dir)]
    if os.name == "nt":
        return subprocess.list2cmdline(argv)
    python_path = os.environ.get("PYTHONPATH")
    if python_path:  # the editor's bundled server: the hook needs the same libraries
        argv = ["env", f"PYTHONPATH={python_path}", *argv]
    return shlex.join(argv)


#: the name Reverie's MCP server is registered under in an agent's configuration
MCP_SERVER_NAME = "reverie"


def mcp_server_entry(workspace: Path | None = None) -> dict[str, object]:
    """The stdio MCP server entry that runs ``reverie mcp`` with this interpreter: for
    ``workspace`` (an entry that belongs to one project), else for the directory the agent
    starts it in (a committed file: the path differs on every machine)."""
    args = ["-P", "-m", "reverie", "mcp"]
    if workspace is not None:
        args += ["--workspace", str(workspace)]
    entry: dict[str, object] = {"type": "stdio", "command": sys.executable, "args": args}
    python_path = os.environ.get("PYTHONPATH")
    entry["env"] = {"PYTHONPATH": python_path} if python_path else {}
    return entry


#: the settings a ``reverie mcp`` started by Codex needs from the agent's environment: Codex
#: passes a server only a few variables of its own (HOME, PATH, ...) plus those named here
CODEX_FORWARDED = ("REVERIE_AGENT_HOME", "REVERIE_CONFIG_DIR", "REVERIE_MEMORY_DIR",
                   "REVERIE_MEMORY_DIR_PRESET")


def codex_mcp_server(settings: Settings, personal: bool) -> dict[str, object]:
    """Codex's ``[mcp_servers.reverie]``: ``reverie mcp`` in the folder Codex runs in (one
    entry for every project: Codex keeps one list), no ``type`` key (Codex has none). The data
    dir is named as the hooks name it (``--data-dir``); in a committed file it is forwarded from
    the environment instead, with the other settings that place the memory."""
    entry = mcp_server_entry()
    python_path = os.environ.get("PYTHONPATH")
    env = {"PYTHONPATH": python_path} if python_path else {}
    forwarded = list(CODEX_FORWARDED)
    if personal:
        env["REVERIE_DATA_DIR"] = str(settings.data_dir)
    else:
        forwarded.insert(0, "REVERIE_DATA_DIR")
    server: dict[str, object] = {"command": entry["command"], "args": entry["args"]}
    if env:
        server["env"] = env
    server["env_vars"] = forwarded
    return server


def gemini_mcp_server() -> dict[str, object]:
    """Gemini CLI's ``mcpServers.reverie``: ``reverie mcp`` in the folder Gemini runs in
    (a ``command`` makes it a stdio server: Gemini's entries have no ``type`` for it)."""
    entry = mcp_server_entry()
    return {key: entry[key] for key in ("command", "args", "env")}


def _has_comments(path: Path) -> bool:
    """True for a settings file that is JSON only once its comments are taken out (valid for
    Gemini CLI, not for Reverie's JSON edits); False for plain JSON, no file or broken text
    (which the edit itself refuses, with the reason)."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return False
    try:
        json.loads(text)
        return False
    except ValueError:
        pass
    try:
        json.loads(without_comments(text))
    except ValueError:
        return False
    return True


def gemini_dir(settings: Settings) -> Path:
    """Gemini CLI's own folder: ``~/.gemini``, under ``GEMINI_CLI_HOME`` when that is set
    (``agent_roots``)."""
    return AgentRoots.for_home(settings.agent_home).gemini_dir


def claude_config_file(settings: Settings) -> Path:
    """Claude Code's own state file, where its user and local MCP servers live:
    ``$CLAUDE_CONFIG_DIR/.claude.json``, else ``~/.claude.json``."""
    env = os.environ.get("CLAUDE_CONFIG_DIR")
    return (Path(env).expanduser() if env else settings.agent_home) / ".claude.json"


def hook_entries(settings: Settings) -> list[HookEntry]:
    return [
        HookEntry("PreCompact", "", hook_command(settings, "pre-compact"), PRE_COMPACT_TIMEOUT),
        HookEntry("SessionStart", "compact|resume", hook_command(settings, "session-start"),
                  SESSION_START_TIMEOUT),
        # the agents ignore matchers for this event (Claude Code and Codex alike)
        HookEntry("UserPromptSubmit", "", hook_command(settings, "user-prompt-submit"),
                  USER_PROMPT_TIMEOUT),
    ]


def codex_home(settings: Settings) -> Path:
    env = os.environ.get("CODEX_HOME")
    return Path(env).expanduser() if env else settings.agent_home / ".codex"


#: a context file name Reverie will write: a plain Markdown base name
_PLAIN_MD = re.compile(r"[A-Za-z0-9][A-Za-z0-9._ -]{0,100}\.md")
_WINDOWS_RESERVED = re.compile(r"(?i)(?:con|prn|aux|nul|com[0-9]|lpt[0-9])(?:\..*)?")


def gemini_context_name(settings: Settings, workspace: Path) -> str:
    """Gemini CLI's context file name: the user's own ``context.fileName``, else GEMINI.md.

    Only the user's settings (``~/.gemini/settings.json``) count: a workspace's
    ``.gemini/settings.json`` comes with a cloned repository and would otherwise choose which
    file in ``~/.gemini`` Reverie writes (``settings.json``, ``oauth_creds.json``, or ``..\\``
    out of it on Windows). The name must be a plain ``*.md`` base name; anything else is refused
    (logged) and GEMINI.md is used."""
    path = gemini_dir(settings) / "settings.json"
    try:  # (Gemini reads it with its comments cut)
        data = json.loads(without_comments(path.read_text(encoding="utf-8")))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return "GEMINI.md"
    context = data.get("context") if isinstance(data, dict) else None
    name = context.get("fileName") if isinstance(context, dict) else None
    if isinstance(name, list):
        name = next((n for n in name if isinstance(n, str) and n), None)
    if not isinstance(name, str) or not name:
        return "GEMINI.md"
    if safe_context_name(name):
        return name
    logger.warning("ignoring Gemini's context.fileName %r: not a plain *.md file name", name)
    return "GEMINI.md"


def safe_context_name(name: str) -> bool:
    """A plain Markdown base name: no folder, no traversal, no reserved device name."""
    return (
        _PLAIN_MD.fullmatch(name) is not None
        and ".." not in name
        and not name.endswith((" ", "."))
        and _WINDOWS_RESERVED.fullmatch(name) is None
    )


def codex_global_file(home: Path) -> Path:
    """The global file Codex reads: AGENTS.override.md when it has text, else AGENTS.md."""
    override = home / "AGENTS.override.md"
    try:
        if override.read_text(encoding="utf-8").strip():
            return override
    except (OSError, UnicodeDecodeError):
        pass
    return home / "AGENTS.md"


def claude_auto_memory_dir(settings: Settings, workspace: Path) -> Path:
    slug = claude_project_slug(str(workspace))
    return settings.agent_home / ".claude" / "projects" / slug / "memory"


# -- what goes into the blocks ------------------------------------------------------------------


def _absolute_links(index: str, memory_dir: Path) -> str:
    def fix(match: re.Match[str]) -> str:
        target = match.group(1)
        if re.match(r"^([a-z][a-z0-9+.-]*:|/|#|~)", target, re.I):
            return match.group(0)
        return f"]({(memory_dir / target).as_posix()})"

    return re.sub(r"\]\(([^)\s]+)\)", fix, index)


def _heading(workspace: Path, labelled: bool) -> list[str]:
    if labelled:
        return [f"## Project memory for {workspace} (kept by Reverie)", "",
                f"Applies only when working in `{workspace}`."]
    return ["## Project memory (kept by Reverie)"]


def copy_body(memory_dir: Path, workspace: Path, labelled: bool,
              index: str | None = None) -> str:
    """A managed copy of MEMORY.md, its links made absolute (the copy lives elsewhere).
    ``index`` replaces the file's text (MEMORY.md as delivered: stale facts left out)."""
    if index is None:
        try:
            index = (memory_dir / MEMORY_INDEX).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            index = ""
    index = index.strip()
    lines = [
        *_heading(workspace, labelled), "",
        f"What past sessions learned about this project, consolidated by Reverie. Topic files "
        f"are in `{memory_dir}`: read one when its entry matters. This block is a copy of "
        f"`{memory_dir / MEMORY_INDEX}`, refreshed after every memory change; edit the memory "
        "there, not here.",
        "",
        neutralise_imports(_absolute_links(_held_back(index), memory_dir)) if index
        else "(no memory consolidated yet)",
    ]
    from reverie.redact import redact  # memory is redacted when written; a hand edit is not

    return redact("\n".join(lines))[0]


def _held_back(index: str) -> str:
    """``index`` without the entries that need a person's approval before an agent acts on
    them (``reverie.hazards``: remote code, deleting outside the project, moving credentials,
    a URL), unless the line carries ``<!-- approved -->``; one line says how many and why."""
    kept: list[str] = []
    reasons: dict[str, int] = {}
    for line in index.split("\n"):
        reason = None if APPROVED in line else hazard_of(line)
        if reason is None:
            kept.append(line)
        else:
            reasons[reason] = reasons.get(reason, 0) + 1
    if reasons:
        why = ", ".join(f"{n} {reason}" for reason, n in sorted(reasons.items()))
        kept += ["", f"({sum(reasons.values())} entries held back for review ({why}): they stay "
                 "in MEMORY.md; an `approved` HTML comment on an entry's line passes it on.)"]
    return "\n".join(kept)


def import_body(memory_dir: Path) -> str:
    return "\n".join([
        "## Project memory (kept by Reverie)", "",
        f"What past sessions learned about this project, consolidated by Reverie. Topic files "
        f"are in `{memory_dir}`: read one when its entry matters.",
        "",
        f"@{(memory_dir / MEMORY_INDEX).as_posix()}",
    ])


def refresh_body(mode: Mode, memory_dir: Path, workspace: Path, labelled: bool,
                 index: str | None = None) -> str:
    return copy_body(memory_dir, workspace, labelled, index) if mode == "copy" \
        else import_body(memory_dir)


# -- plans ------------------------------------------------------------------------------------

_MCP_CWD_NOTE = ("{agent} keeps one list of MCP servers for every project: the reverie server "
                 "serves the project {agent} is started in (outside a project it refuses)")


def plan(agent: ConnectableAgent, workspace: Path, scope: Scope, settings: Settings,
         user_dirs: Sequence[Path] | None = None) -> Plan:
    """What connecting ``agent`` for ``workspace`` at ``scope`` writes (``user_dirs``: the VS
    Code ``User`` folders of the editor that asked, first; default: detected)."""
    memory_dir = ProjectPaths(settings, workspace).memory_dir
    bid = block_id(agent, workspace)
    personal = scope == "personal"
    if agent == "claude-code":
        return _claude(workspace, scope, settings, memory_dir, bid)
    if agent == "codex":
        home = codex_home(settings)
        target = codex_global_file(home) if personal else workspace / "AGENTS.md"
        hooks = (home if personal else workspace / ".codex") / "hooks.json"
        config = (home if personal else workspace / ".codex") / "config.toml"
        return Plan(agent, scope, "copy", memory_dir, [
            PlannedEdit(target, "memory", "block", bid,
                        body=copy_body(memory_dir, workspace, labelled=personal)),
            PlannedEdit(hooks, "hooks", "json-hooks", bid, hooks=hook_entries(settings)),
            PlannedEdit(config, "mcp", "toml-mcp", bid, json_path=["mcp_servers"],
                        mcp_name=MCP_SERVER_NAME,
                        mcp_server=codex_mcp_server(settings, personal)),
        ], notes=[
            "Codex runs hooks only with `[features] codex_hooks = true` in its config.toml "
            "and after you trust them in Codex (see docs/agents.md).",
            _MCP_CWD_NOTE.format(agent="Codex") if personal else
            "project scope: .codex/config.toml names this machine's interpreter for the "
            "reverie MCP server, and Codex reads it only in a project you trust",
        ])
    if agent == "gemini":
        name = gemini_context_name(settings, workspace)
        home = gemini_dir(settings)
        target = (home / name) if personal else workspace / name
        config = (home if personal else workspace / ".gemini") / "settings.json"
        edits = [PlannedEdit(target, "memory", "block", bid,
                             body=copy_body(memory_dir, workspace, labelled=personal))]
        if _has_comments(config):
            # Gemini CLI reads its settings with comments stripped; Reverie edits strict JSON
            # only, and the memory must not wait for that
            return Plan(agent, scope, "copy", memory_dir, edits, notes=[
                f"{config} has comments (Gemini CLI allows them; Reverie edits plain JSON only): "
                "the reverie MCP server was not registered; remove the comments and connect "
                "again, or add it by hand (docs/agents.md)"])
        edits.append(PlannedEdit(config, "mcp", "json-mcp", bid, json_path=["mcpServers"],
                                 mcp_name=MCP_SERVER_NAME, mcp_server=gemini_mcp_server()))
        return Plan(agent, scope, "copy", memory_dir, edits, notes=[
            _MCP_CWD_NOTE.format(agent="Gemini CLI") if personal else
            "project scope: .gemini/settings.json names this machine's interpreter for the "
            "reverie MCP server, and Gemini CLI reads it only in a folder you trust",
        ])
    if agent in ("copilot-chat", "cline", "roo-code", "kilo-code", "continue"):
        return _editor(agent, workspace, scope, settings, memory_dir, bid, user_dirs)
    return Plan(agent, scope, "reference", memory_dir, [
        PlannedEdit(workspace / ".aider.conf.yml", "memory", "yaml-read", bid, style="hash",
                    read_path=str(memory_dir / MEMORY_INDEX), in_workspace_personal=personal),
    ], notes=[] if personal else [
        "the read: entry names MEMORY.md on this machine; others who share the file get a "
        "warning from Aider until they connect their own",
    ])


def _claude(workspace: Path, scope: Scope, settings: Settings, memory_dir: Path,
            bid: str) -> Plan:
    personal = scope == "personal"
    edits: list[PlannedEdit] = []
    notes: list[str] = []
    mode: Mode = "import"
    if memory_dir.expanduser().resolve() == claude_auto_memory_dir(settings, workspace).resolve():
        mode = "none"
        notes.append("Reverie's memory is Claude Code's own auto-memory directory for this "
                     "workspace, which Claude Code loads itself: only the hooks are added.")
    else:
        if not personal:
            # a committed file must not import a path that exists on this machine only
            mode = "copy"
            notes.append("project scope: CLAUDE.md gets a copy of MEMORY.md, refreshed after "
                         "every memory change (an import of a path on this machine would not "
                         "resolve for anyone else)")
        elif re.search(r"\s", str(memory_dir)):
            mode = "copy"  # an @import path cannot contain spaces
        target = workspace / ("CLAUDE.local.md" if personal else "CLAUDE.md")
        edits.append(PlannedEdit(
            target, "memory", "block", bid, body=refresh_body(mode, memory_dir, workspace, False),
            in_workspace_personal=personal,
        ))
        if mode == "import":
            notes.append("Claude Code asks once to approve an import from outside the project.")
    settings_file = workspace / ".claude" / ("settings.local.json" if personal else "settings.json")
    edits.append(PlannedEdit(settings_file, "hooks", "json-hooks", bid,
                             hooks=hook_entries(settings), in_workspace_personal=personal))
    # the MCP server: personal = Claude Code's "local" scope (this project, this user, in its
    # own ~/.claude.json); project = the committed .mcp.json
    if personal:
        edits.append(PlannedEdit(claude_config_file(settings), "mcp", "json-mcp", bid,
                                 json_path=["projects", str(workspace), "mcpServers"],
                                 mcp_name=MCP_SERVER_NAME,
                                 mcp_server=mcp_server_entry(workspace)))
    else:
        edits.append(PlannedEdit(workspace / ".mcp.json", "mcp", "json-mcp", bid,
                                 json_path=["mcpServers"], mcp_name=MCP_SERVER_NAME,
                                 mcp_server=mcp_server_entry()))
        notes.append("project scope: .mcp.json names this machine's interpreter for the "
                     "reverie MCP server; Claude Code asks each person to approve it")
    return Plan("claude-code", scope, mode, memory_dir, edits, notes)


# -- the editor's agents: a rules / instructions file of Reverie's own, the MCP server -------


def _editor(agent: ConnectableAgent, workspace: Path, scope: Scope, settings: Settings,
            memory_dir: Path, bid: str, user_dirs: Sequence[Path] | None) -> Plan:
    """A labelled copy of MEMORY.md in a file of Reverie's own where the agent reads rules
    (nothing of the user's is edited there; disconnect removes the file again), the MCP server
    where it reads MCP servers, and Copilot's compaction hook (``agents.editor_specs``)."""
    from reverie.agents import editor_specs as es

    personal = scope == "personal"
    target, preamble = es.rules_target(agent, workspace, scope, settings, user_dirs)
    edits = [PlannedEdit(target, "memory", "block", bid, preamble=preamble,
                         body=copy_body(memory_dir, workspace, labelled=personal))]
    notes = ["the rules file applies to every workspace: its text says which one it is for"] \
        if personal else []
    mcp = es.mcp_target(agent, workspace, scope, settings, user_dirs)
    if mcp is not None:
        path, name, named = mcp
        edits.append(PlannedEdit(path, "mcp", "json-mcp", bid, json_path=["mcpServers"],
                                 mcp_name=name,
                                 mcp_server=mcp_server_entry(workspace if named else None),
                                 in_workspace_personal=personal and path.is_relative_to(
                                     workspace)))
        if named:
            notes.append(f"Cline keeps one list of MCP servers for every workspace: this one is "
                         f"{name!r} and serves {workspace} only")
    elif agent == "cline":
        notes.append("Cline reads MCP servers from its global settings only: connect with "
                     "the personal scope to register Reverie's")
    else:
        notes.append("the reverie MCP server reaches Copilot through the Reverie extension "
                     "(its MCP server definition provider): nothing to write")
    if agent == "copilot-chat":
        edits.append(PlannedEdit(
            es.copilot_hooks_file(workspace, scope, settings), "hooks", "json-hooks-flat", bid,
            hooks=es.copilot_hook_entries(hook_command(settings, "pre-compact"),
                                          PRE_COMPACT_TIMEOUT)))
        notes.append("VS Code runs agent hooks from version 1.109 on (a preview feature your "
                     "organisation may turn off): before Copilot compacts a conversation, "
                     "Reverie brings its notes up to date")
    return Plan(agent, scope, "copy", memory_dir, edits, notes=notes)
