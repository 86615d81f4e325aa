"""The three kinds of edit Reverie makes to an agent's files, each reversible.

- ``block``: a managed block in a markdown / ignore file (``reverie.agents.blocks``);
- ``json-hooks``: Reverie's hook entries in a JSON settings file (Claude Code
  ``settings*.json``, Codex ``hooks.json``); ours are recognised by their command
  (``… reverie hook <event>``), the user's entries are kept in order;
- ``json-hooks-flat``: the same in VS Code's agent hook files (``~/.copilot/hooks/*.json``,
  ``.github/hooks/*.json``), whose events list the commands themselves, without matcher groups;
- ``json-mcp``: Reverie's MCP server entry in an agent's JSON configuration;
- ``yaml-read``: Reverie's entry in Aider's ``read:`` list, as a managed block when the file
  has no ``read:`` key yet, else as one list line tagged ``# reverie:managed ID``.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from reverie.agents.blocks import BlockError, find_block, newline_of, remove_block, upsert_block
from reverie.errors import UserError

#: how Reverie's hook commands are recognised in a settings file
HOOK_COMMAND = re.compile(r"\breverie\b.*\bhook (pre-compact|session-start|user-prompt-submit)\b")


class EditError(UserError):
    """A file cannot be edited safely (its shape is not one Reverie can change reversibly)."""


@dataclass(frozen=True, slots=True)
class HookEntry:
    """One hook Reverie installs: event, matcher, command and timeout (seconds)."""

    event: str
    matcher: str
    command: str
    timeout: int


# -- JSON settings ------------------------------------------------------------------------------


def _indent_of(text: str) -> int:
    match = re.search(r"^( +)\S", text, re.M)
    return len(match.group(1)) if match else 2


def _load_object(text: str, name: str) -> dict[str, Any]:
    if not text.strip():
        return {}
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise EditError(f"{name} is not valid JSON ({exc.msg} at line {exc.lineno}); "
                        "fix it first, nothing was written") from None
    if not isinstance(data, dict):
        raise EditError(f"{name} does not hold a JSON object; nothing was written")
    return data


def _dump(data: dict[str, Any], like: str) -> str:
    text = json.dumps(data, indent=_indent_of(like), ensure_ascii=False) + "\n"
    return text.replace("\n", newline_of(like)) if like else text


def _is_ours(group: Any) -> bool:
    hooks = group.get("hooks") if isinstance(group, dict) else None
    return isinstance(hooks, list) and bool(hooks) and all(
        isinstance(h, dict) and HOOK_COMMAND.search(str(h.get("command", ""))) for h in hooks
    )


def _strip_ours(data: dict[str, Any]) -> bool:
    """Remove Reverie's hook groups (and containers left empty by that); True if any."""
    hooks = data.get("hooks")
    if not isinstance(hooks, dict):
        return False
    found = False
    for event in list(hooks):
        groups = hooks[event]
        if not isinstance(groups, list):
            continue
        kept = [g for g in groups if not _is_ours(g)]
        if len(kept) != len(groups):
            found = True
            if kept:
                hooks[event] = kept
            else:
                del hooks[event]
    if found and not hooks:
        del data["hooks"]
    return found


def set_json_hooks(text: str, entries: list[HookEntry], name: str) -> str:
    """``text`` (a JSON object, or empty) with Reverie's hooks set to ``entries``."""
    data = _load_object(text, name)
    hooks_value = data.get("hooks")
    if hooks_value is not None and not isinstance(hooks_value, dict):
        raise EditError(f"{name}: \"hooks\" is not an object; nothing was written")
    _strip_ours(data)
    hooks = data.setdefault("hooks", {})
    for entry in entries:
        groups = hooks.setdefault(entry.event, [])
        if not isinstance(groups, list):
            raise EditError(f"{name}: hooks.{entry.event} is not a list; nothing was written")
        groups.append({
            "matcher": entry.matcher,
            "hooks": [{"type": "command", "command": entry.command, "timeout": entry.timeout}],
        })
    new = _dump(data, text)
    return text if _same_json(text, new) else new


def _same_json(old: str, new: str) -> bool:
    try:
        return bool(old.strip()) and json.loads(old) == json.loads(new)
    except json.JSONDecodeError:
        return False


def remove_json_hooks(text: str, name: str) -> str:
    """``text`` without Reverie's hook entries (unchanged when there are none)."""
    data = _load_object(text, name)
    if not _strip_ours(data):
        return text
    return _dump(data, text)


def is_empty_json(text: str) -> bool:
    """True for a file that holds nothing but ``{}`` (what is left of one Reverie created)."""
    try:
        return not text.strip() or json.loads(text) == {}
    except json.JSONDecodeError:
        return False


def our_hook_commands(text: str) -> list[str]:
    """The commands of Reverie's hooks in a settings / hooks JSON text (grouped or flat)."""
    try:
        data = json.loads(text) if text.strip() else {}
    except json.JSONDecodeError:
        return []
    hooks = data.get("hooks") if isinstance(data, dict) else None
    if not isinstance(hooks, dict):
        return []
    grouped = [str(hook.get("command", "")) for groups in hooks.values()
               if isinstance(groups, list)
               for group in groups if _is_ours(group) for hook in group["hooks"]]
    flat = [str(entry["command"]) for entries in hooks.values() if isinstance(entries, list)
            for entry in entries if _flat_is_ours(entry)]
    return grouped + flat


def has_json_hooks(text: str) -> bool:
    try:
        data = json.loads(text) if text.strip() else {}
    except json.JSONDecodeError:
        return False
    hooks = data.get("hooks") if isinstance(data, dict) else None
    return isinstance(hooks, dict) and any(
        isinstance(groups, list) and any(_is_ours(g) for g in groups) for groups in hooks.values()
    )


# -- VS Code's agent hook files: ``{"hooks": {"PreCompact": [{"type": "command", ...}]}}`` -----


def _flat_is_ours(entry: Any) -> bool:
    return isinstance(entry, dict) and HOOK_COMMAND.search(str(entry.get("command", ""))) \
        is not None


def _strip_flat(data: dict[str, Any]) -> bool:
    hooks = data.get("hooks")
    if not isinstance(hooks, dict):
        return False
    found = False
    for event in list(hooks):
        entries = hooks[event]
        if not isinstance(entries, list):
            continue
        kept = [e for e in entries if not _flat_is_ours(e)]
        if len(kept) != len(entries):
            found = True
            if kept:
                hooks[event] = kept
            else:
                del hooks[event]
    if found and not hooks:
        del data["hooks"]
    return found


def set_flat_hooks(text: str, entries: list[HookEntry], name: str) -> str:
    """``text`` with Reverie's hooks set to ``entries``, one command object per event (VS Code
    runs a hook file's commands for every matching event; it has no matcher groups)."""
    data = _load_object(text, name)
    if data.get("hooks") is not None and not isinstance(data.get("hooks"), dict):
        raise EditError(f"{name}: \"hooks\" is not an object; nothing was written")
    _strip_flat(data)
    hooks = data.setdefault("hooks", {})
    for entry in entries:
        listed = hooks.setdefault(entry.event, [])
        if not isinstance(listed, list):
            raise EditError(f"{name}: hooks.{entry.event} is not a list; nothing was written")
        listed.append({"type": "command", "command": entry.command, "timeout": entry.timeout})
    new = _dump(data, text)
    return text if _same_json(text, new) else new


def remove_flat_hooks(text: str, name: str) -> str:
    data = _load_object(text, name)
    if not _strip_flat(data):
        return text
    return _dump(data, text)


def has_flat_hooks(text: str) -> bool:
    try:
        data = json.loads(text) if text.strip() else {}
    except json.JSONDecodeError:
        return False
    hooks = data.get("hooks") if isinstance(data, dict) else None
    return isinstance(hooks, dict) and any(
        isinstance(entries, list) and any(_flat_is_ours(e) for e in entries)
        for entries in hooks.values()
    )


# -- MCP servers in JSON config files -----------------------------------------------------------

#: what an MCP server entry of Reverie's runs (``... -m reverie mcp ...``)
MCP_COMMAND = re.compile(r"\breverie\b.*\bmcp\b")


def _mcp_is_ours(value: Any) -> bool:
    if not isinstance(value, dict):
        return False
    argv = [str(value.get("command", ""))] + [str(a) for a in value.get("args", []) or []]
    return MCP_COMMAND.search(" ".join(argv)) is not None


def _container(data: dict[str, Any], path: list[str], name: str,
               create: bool) -> dict[str, Any] | None:
    """The object at ``path`` (created when ``create``); None when it is not there."""
    node = data
    for key in path:
        child = node.get(key)
        if child is None:
            if not create:
                return None
            child = node[key] = {}
        if not isinstance(child, dict):
            raise EditError(f"{name}: {'.'.join(path)} is not an object; nothing was written")
        node = child
    return node


def _dump_like(data: dict[str, Any], like: str) -> str:
    text = _dump(data, like)
    return text if not like or like.endswith(("\n", "\r")) else text.rstrip("\r\n")


def set_json_mcp(text: str, path: list[str], server_name: str, server: dict[str, Any],
                 name: str) -> str:
    """``text`` with ``server`` as the MCP server ``server_name`` under the object at ``path``
    (an entry of someone else's by that name is refused, never overwritten)."""
    data = _load_object(text, name)
    servers = _container(data, path, name, create=True)
    assert servers is not None
    existing = servers.get(server_name)
    if existing is not None and not _mcp_is_ours(existing):
        raise EditError(f"{name} already has an MCP server named {server_name!r} that is not "
                        "Reverie's; nothing was written")
    if existing == server:
        return text
    servers[server_name] = server
    new = _dump_like(data, text)
    return text if _same_json(text, new) else new


def missing_depth(text: str, path: list[str]) -> int | None:
    """How many leading keys of ``path`` already exist as objects in ``text`` (None: all of
    them): the objects from that depth on are the ones a connect creates."""
    try:
        node: Any = json.loads(text) if text.strip() else {}
    except json.JSONDecodeError:
        return None
    for depth, key in enumerate(path):
        if not isinstance(node, dict) or not isinstance(node.get(key), dict):
            return depth
        node = node[key]
    return None


def remove_json_mcp(text: str, path: list[str], server_name: str, name: str,
                    created_from: int | None = None) -> str:
    """``text`` without Reverie's MCP server entry, and without the objects along ``path``
    that the connect created (from depth ``created_from`` on) when they are left empty;
    unchanged when the entry is not there."""
    data = _load_object(text, name)
    servers = _container(data, path, name, create=False)
    if servers is None or not _mcp_is_ours(servers.get(server_name)):
        return text
    del servers[server_name]
    if created_from is not None:
        for depth in range(len(path), created_from, -1):
            parent = _container(data, path[: depth - 1], name, create=False)
            if parent is not None and parent.get(path[depth - 1]) == {}:
                del parent[path[depth - 1]]
            else:
                break
    return _dump_like(data, text)


def has_json_mcp(text: str, path: list[str], server_name: str) -> bool:
    try:
        data = json.loads(text) if text.strip() else {}
        servers = _container(data, path, "", create=False) if isinstance(data, dict) else None
    except (json.JSONDecodeError, EditError):
        return False
    return servers is not None and _mcp_is_ours(servers.get(server_name))


# -- Aider's read: list -----------------------------------------------------------------------


_READ_KEY = re.compile(r"^read[ \t]*:(.*?)(\r?\n|$)", re.M)


def _tag(block_id: str) -> str:
    return f"# reverie:managed {block_id}"


def _tagged_line(block_id: str) -> re.Pattern[str]:
    return re.compile(r"^[ \t]*-[^\n]*" + re.escape(_tag(block_id)) + r"[ \t]*(\r?\n|$)", re.M)


def set_yaml_read(text: str, block_id: str, path: str, name: str) -> tuple[str, str | None]:
    """``text`` with ``path`` in its top-level ``read:`` list; returns (text, separator).

    The separator is what was added besides the entry: the blank line before a new block, or
    the newline after a final ``read:`` line (None when nothing was).
    """
    item = json.dumps(path)  # a double-quoted YAML scalar: safe for any path
    tagged = _tagged_line(block_id)
    existing = tagged.search(text)
    if existing is not None:
        newline = existing.group(1)
        lead = re.match(r"[ \t]*", existing.group(0))
        line = f"{lead.group(0) if lead else '  '}- {item}  {_tag(block_id)}{newline}"
        return text[: existing.start()] + line + text[existing.end():], None
    key = _READ_KEY.search(text)
    if key is None or "reverie:begin" in text[max(0, key.start() - 200): key.start()]:
        body = f"read:\n  - {item}"
        return upsert_block(text, block_id, body, "hash")
    rest = key.group(1).strip()
    if rest and not rest.startswith("#"):
        raise EditError(
            f"{name} sets read: on one line ({rest[:40]}); write it as a list with one "
            "'- file' per line and connect again (nothing was written)"
        )
    after_key = key.end()
    added: str | None = None
    if not key.group(2):  # "read:" is the last line, without a newline: remember adding one
        added = newline_of(text)
        text += added
        after_key = len(text)
    following = re.match(r"([ \t]*)-", text[after_key:])
    indent = following.group(1) if following else "  "
    line = f"{indent}- {item}  {_tag(block_id)}{newline_of(text)}"
    return text[:after_key] + line + text[after_key:], added


def remove_yaml_read(text: str, block_id: str, separator: str | None) -> str:
    """``text`` without Reverie's entry; ``separator`` is what ``set_yaml_read`` returned."""
    without = _tagged_line(block_id).sub("", text)
    if without != text:  # a list line: the separator is the newline added after "read:"
        if separator and without.endswith(separator):
            without = without[: -len(separator)]
        return without
    return remove_block(text, block_id, "hash", separator)


def has_yaml_read(text: str, block_id: str) -> bool:
    if _tagged_line(block_id).search(text):
        return True
    try:
        return find_block(text, block_id, "hash") is not None
    except BlockError:
        return True
