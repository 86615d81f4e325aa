"""The file formats an MCP server entry of Reverie's is written in, behind one interface.

``json-mcp``: an agent's JSON settings (Claude Code's ``~/.claude.json`` and ``.mcp.json``,
Gemini CLI's ``settings.json``, the editor's agents' MCP files; ``agents.edits``);
``toml-mcp``: Codex's ``config.toml`` (``agents.tomledit``). ``agents.connection`` edits,
checks and restores both the same way through ``MCP_FORMATS``.
"""

from __future__ import annotations

import json
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from reverie.agents import edits, tomledit

__all__ = ["MCP_FORMATS", "McpFormat", "load_json"]


def load_json(text: str) -> Any:
    """The data of a JSON text; an empty text is an empty object."""
    return json.loads(text) if text.strip() else {}


@dataclass(frozen=True, slots=True)
class McpFormat:
    #: ``(text, path, server name, server, file name) -> text`` with the entry set
    put: Callable[[str, list[str], str, dict[str, Any], str], str]
    #: ``(text, path, server name, file name, created from) -> text`` without it
    remove: Callable[[str, list[str], str, str, int | None], str]
    has: Callable[[str, list[str], str], bool]
    missing_depth: Callable[[str, list[str]], int | None]
    #: the file holds nothing of anyone's (what is left of one Reverie created)
    is_empty: Callable[[str], bool]
    #: the data of a text (``ValueError`` when it does not parse): two texts that hold the
    #: same data are the same file to a shared file's restore
    load: Callable[[str], Any]


MCP_FORMATS: dict[str, McpFormat] = {
    "json-mcp": McpFormat(edits.set_json_mcp, edits.remove_json_mcp, edits.has_json_mcp,
                          edits.missing_depth, edits.is_empty_json, load_json),
    "toml-mcp": McpFormat(tomledit.set_toml_mcp, tomledit.remove_toml_mcp,
                          tomledit.has_toml_mcp, tomledit.toml_missing_depth,
                          tomledit.is_empty_toml, tomllib.loads),
}
