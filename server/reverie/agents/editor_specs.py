"""What connecting one of the editor's own agents writes (sources in ``docs/agents.md``).

Each gets a labelled copy of MEMORY.md in a file of Reverie's own where it reads rules or
instructions, and Reverie's MCP server where it reads MCP servers:

- copilot-chat: ``User/prompts/reverie-<key>.instructions.md`` (``applyTo: "**"``); project:
  ``.github/copilot-instructions.md``. Its MCP server comes from the extension's MCP server
  definition provider (nothing to write). VS Code's agent hooks (1.109+): a ``PreCompact``
  hook in ``~/.copilot/hooks/reverie.json`` (project: ``.github/hooks/reverie.json``) brings
  the session's notes up to date before a compaction.
- cline: ``<Documents>/Cline/Rules/reverie-<key>.md``; MCP: ``reverie-<key>`` in
  ``globalStorage/saoudrizwan.claude-dev/settings/cline_mcp_settings.json`` with the workspace
  named, since Cline keeps one list for every workspace and starts servers outside them.
- roo-code: ``~/.roo/rules/reverie-<key>.md``; MCP: ``reverie`` in the extension's
  ``settings/mcp_settings.json`` (Roo starts it in the workspace folder); project:
  ``.roo/rules/``, ``.roo/mcp.json``.
- kilo-code: ``~/.kilocode/rules/reverie-<key>.md``; MCP: ``reverie`` in the extension's
  ``settings/mcp_settings.json``; project: ``.kilocode/rules/``, ``.kilocode/mcp.json``.
- continue: ``~/.continue/rules/reverie-<key>.md`` (``alwaysApply: true``); MCP:
  ``~/.continue/mcpServers/reverie.json`` (Continue starts it in the workspace root);
  project: ``.continue/rules/``, ``.continue/mcpServers/reverie.json``.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Sequence
from pathlib import Path

from reverie.agents.edits import HookEntry
from reverie.agents.ledger import Scope
from reverie.config import Settings, project_key
from reverie.types import ConnectableAgent

#: the editor agents whose connection is planned here
EDITOR_CONNECTABLE: tuple[ConnectableAgent, ...] = (
    "copilot-chat", "cline", "roo-code", "kilo-code", "continue",
)
#: each extension's global storage folder (VS Code names it by the extension id, lower case)
EXTENSION_STORAGE = {
    "cline": "saoudrizwan.claude-dev",
    "roo-code": "rooveterinaryinc.roo-cline",
    "kilo-code": "kilocode.kilo-code",
}
_MCP_SETTINGS = {"cline": "cline_mcp_settings.json", "roo-code": "mcp_settings.json",
                 "kilo-code": "mcp_settings.json"}


def vscode_user_dir(settings: Settings, user_dirs: Sequence[Path] | None = None,
                    extension: str | None = None) -> Path:
    """The VS Code ``User`` folder to write to. ``user_dirs``: the running editor's first (what
    it reported), else the detected ones. With ``extension``, the first that has that
    extension's global storage (where it is installed and has run); else the first that
    exists; else the first."""
    from reverie.transcripts.editor_places import EditorPlaces

    dirs = list(user_dirs or ()) or list(EditorPlaces.detect(settings.agent_home).user_dirs)
    if extension is not None:
        found = next((d for d in dirs if (d / "globalStorage" / extension).is_dir()), None)
        if found is not None:
            return found
    return next((d for d in dirs if d.is_dir()), dirs[0])


def documents_dir(home: Path) -> Path:
    """The user's Documents folder as Cline finds it: on Linux ``xdg-user-dir DOCUMENTS``
    (``XDG_DOCUMENTS_DIR`` in ``~/.config/user-dirs.dirs``), else ``~/Documents``."""
    if sys.platform.startswith("linux"):
        try:
            text = (home / ".config" / "user-dirs.dirs").read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            text = ""
        match = re.search(r'^XDG_DOCUMENTS_DIR="([^"]+)"', text, re.M)
        if match:
            where = match.group(1).replace("$HOME", str(home))
            if Path(where).is_absolute() and Path(where) != home:
                return Path(where)
    return home / "Documents"


def continue_dir(settings: Settings) -> Path:
    from reverie.transcripts.editor_places import EditorPlaces

    return EditorPlaces.detect(settings.agent_home).continue_dir or (
        settings.agent_home / ".continue")


def rules_target(agent: ConnectableAgent, workspace: Path, scope: Scope, settings: Settings,
                 user_dirs: Sequence[Path] | None) -> tuple[Path, str]:
    """``(file, preamble)`` of the rules / instructions copy: a file of Reverie's own."""
    personal = scope == "personal"
    own = f"reverie-{project_key(workspace)}"
    home = settings.agent_home
    if agent == "copilot-chat":
        if not personal:
            return workspace / ".github" / "copilot-instructions.md", ""
        # VS Code applies an instructions file by itself only with ``applyTo``
        return (vscode_user_dir(settings, user_dirs) / "prompts" / f"{own}.instructions.md",
                "---\napplyTo: \"**\"\n"
                f"description: \"Project memory for {workspace.name}, kept by Reverie\"\n---\n")
    if agent == "cline":
        rules = workspace / ".clinerules"
        return (documents_dir(home) / "Cline" / "Rules" / f"{own}.md" if personal
                else rules if rules.is_file() else rules / "reverie-memory.md"), ""
    if agent == "roo-code":
        return (home / ".roo" / "rules" / f"{own}.md" if personal
                else workspace / ".roo" / "rules" / "reverie-memory.md"), ""
    if agent == "kilo-code":
        return (home / ".kilocode" / "rules" / f"{own}.md" if personal
                else workspace / ".kilocode" / "rules" / "reverie-memory.md"), ""
    # continue: a rule without ``alwaysApply`` is only included when globs match or asked for
    return (continue_dir(settings) / "rules" / f"{own}.md" if personal
            else workspace / ".continue" / "rules" / "reverie-memory.md"), (
        f"---\nname: Project memory for {workspace.name} (Reverie)\nalwaysApply: true\n---\n")


def mcp_target(agent: ConnectableAgent, workspace: Path, scope: Scope, settings: Settings,
               user_dirs: Sequence[Path] | None) -> tuple[Path, str, bool] | None:
    """``(file, entry name, names the workspace)`` of the MCP server entry, or None when the
    agent reads MCP servers from nowhere Reverie writes (Copilot: the extension provides it;
    Cline: no project file)."""
    personal = scope == "personal"
    if agent == "copilot-chat":
        return None
    if agent in EXTENSION_STORAGE:
        if not personal:
            folder = {"roo-code": ".roo", "kilo-code": ".kilocode"}.get(agent)
            return (workspace / folder / "mcp.json", "reverie", False) if folder else None
        extension = EXTENSION_STORAGE[agent]
        settings_dir = (vscode_user_dir(settings, user_dirs, extension) / "globalStorage"
                        / extension / "settings")
        if agent == "cline":  # started without a working directory: name the workspace
            return (settings_dir / _MCP_SETTINGS[agent],
                    f"reverie-{project_key(workspace)}", True)
        return settings_dir / _MCP_SETTINGS[agent], "reverie", False
    base = continue_dir(settings) if personal else workspace / ".continue"
    return base / "mcpServers" / "reverie.json", "reverie", False


def copilot_hooks_file(workspace: Path, scope: Scope, settings: Settings) -> Path:
    """VS Code's agent hook file of Reverie's own: the user's ``~/.copilot/hooks`` folder, or
    the workspace's ``.github/hooks``."""
    if scope == "personal":
        return settings.agent_home / ".copilot" / "hooks" / "reverie.json"
    return workspace / ".github" / "hooks" / "reverie.json"


def copilot_hook_entries(command: str, timeout: int) -> list[HookEntry]:
    """Only ``PreCompact``: VS Code's ``SessionStart`` fires for new sessions only (no
    ``compact`` source) and its ``UserPromptSubmit`` output cannot add context."""
    return [HookEntry("PreCompact", "", command, timeout)]
