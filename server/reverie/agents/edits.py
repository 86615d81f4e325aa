"""The three kinds of edit Reverie makes to an agent's files, each reversible.

- ``block``: a managed block in a markdown / ignore file (``reverie.agents.blocks``);
- ``json-hooks``: Reverie's hook entries in a JSON settings file (Claude Code
  ``settings*.json``, Codex ``hooks.json``); ours are recognised by their command
  (``… reverie hook <event>``), the user's entries are kept in order;
- ``json-hooks-flat``: the same in VS Code's agent hook files (``~/.copilot/hooks/*.json``,
  ``.github/hooks/*.json``), whose events list the commands themselves, without matcher groups;
- ``json-mcp``: Reverie's MCP server entry in an agent's JSON configuration;
- ``yaml-read``: Reverie's entry in Aider's ``read:`` list (``agents.yamlread``), as a managed
  block when the file has no ``read:`` key yet, else as one list line tagged
  ``# reverie:managed ID``.

JSON files are edited as text splices in the file's own formatting (``agents.jsontext``),
checked against the structural edit of the same data.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from reverie.agents import jsontext
from reverie.agents.blocks import newline_of
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
        groups.append(_group(entry))
    new = _dump(data, text)
    if _same_json(text, new):
        return text
    return _spliced(text, data, lambda t: _add_hooks(
        _strip_ours_text(t), {e.event: [_group(x) for x in entries if x.event == e.event]
                              for e in entries})) or new


def _group(entry: HookEntry) -> dict[str, Any]:
    return {"matcher": entry.matcher,
            "hooks": [{"type": "command", "command": entry.command, "timeout": entry.timeout}]}


def _spliced(text: str, expected: dict[str, Any], edit: Callable[[str], str]) -> str | None:
    """``edit(text)`` when it holds exactly ``expected`` (an edit of the text that keeps the
    user's formatting, ``agents.jsontext``), else None: the caller dumps ``expected``."""
    if not text.strip():
        return None
    try:
        edited = edit(text)
        return edited if json.loads(edited) == expected else None
    except (jsontext.JsonTextError, json.JSONDecodeError, RecursionError):
        return None


def _strip_ours_text(text: str, ours: Callable[[Any], bool] | None = None) -> str:
    """``_strip_ours`` (``_strip_flat`` with ``ours=_flat_is_ours``) on the text: the same
    groups, members and containers taken out."""
    ours = ours or _is_ours
    hooks_at = jsontext.container_at(text, ["hooks"])
    if hooks_at is None:
        return text
    found = False
    events, _ = jsontext.items(text, hooks_at)
    for index in range(len(events) - 1, -1, -1):  # from the end: earlier offsets stay valid
        event = events[index]
        if text[event.value_start:event.value_start + 1] != "[":
            continue
        groups, _ = jsontext.items(text, event.value_start)
        mine = [i for i, g in enumerate(groups)
                if ours(json.loads(text[g.value_start:g.value_end]))]
        if not mine:
            continue
        found = True
        if len(mine) == len(groups):
            text = jsontext.remove_item(text, hooks_at, index)
            continue
        for i in reversed(mine):
            text = jsontext.remove_item(text, event.value_start, i)
    hooks_at = jsontext.container_at(text, ["hooks"])
    if found and hooks_at is not None and not jsontext.items(text, hooks_at)[0]:
        place = jsontext.member(text, jsontext.root(text), "hooks")
        if place is not None:
            text = jsontext.remove_item(text, jsontext.root(text), place[0])
    return text


def _add_hooks(text: str, by_event: dict[str, list[dict[str, Any]]]) -> str:
    """``text`` with each event's items appended to ``hooks.<event>`` (created as needed)."""
    hooks_at = jsontext.container_at(text, ["hooks"])
    if hooks_at is None:
        return jsontext.insert_member(text, jsontext.root(text), "hooks", by_event)
    for event, groups in by_event.items():
        hooks_at = jsontext.container_at(text, ["hooks"])
        assert hooks_at is not None
        place = jsontext.member(text, hooks_at, event)
        if place is None:
            text = jsontext.insert_member(text, hooks_at, event, groups)
            continue
        for group in groups:
            place = jsontext.member(text, hooks_at, event)
            assert place is not None
            text = jsontext.append_element(text, place[1].value_start, group)
    return text


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
    return _spliced(text, data, _strip_ours_text) or _dump(data, text)


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
        listed.append(_flat(entry))
    new = _dump(data, text)
    if _same_json(text, new):
        return text
    return _spliced(text, data, lambda t: _add_hooks(
        _strip_ours_text(t, _flat_is_ours), {e.event: [_flat(x) for x in entries
                                                       if x.event == e.event]
                                             for e in entries})) or new


def _flat(entry: HookEntry) -> dict[str, Any]:
    return {"type": "command", "command": entry.command, "timeout": entry.timeout}


def remove_flat_hooks(text: str, name: str) -> str:
    data = _load_object(text, name)
    if not _strip_flat(data):
        return text
    return _spliced(text, data, lambda t: _strip_ours_text(t, _flat_is_ours)) \
        or _dump(data, text)


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


def mcp_is_ours(value: Any) -> bool:
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
    if existing is not None and not mcp_is_ours(existing):
        raise EditError(f"{name} already has an MCP server named {server_name!r} that is not "
                        "Reverie's; nothing was written")
    if existing == server:
        return text
    servers[server_name] = server
    new = _dump_like(data, text)
    if _same_json(text, new):
        return text
    return _spliced(text, data, lambda t: _set_member(t, path, server_name, server)) or new


def _set_member(text: str, path: list[str], key: str, value: Any) -> str:
    """``text`` with ``key`` set to ``value`` in the object at ``path``, creating the missing
    objects on the way as one new member."""
    depth = 0
    while depth < len(path) and jsontext.container_at(text, path[:depth + 1]) is not None:
        depth += 1
    at = jsontext.container_at(text, path[:depth])
    assert at is not None
    if depth < len(path):
        nested: Any = {key: value}
        for step in reversed(path[depth + 1:]):
            nested = {step: nested}
        return jsontext.insert_member(text, at, path[depth], nested)
    place = jsontext.member(text, at, key)
    if place is None:
        return jsontext.insert_member(text, at, key, value)
    return jsontext.replace_value(text, place[1], value)


def _remove_member(text: str, path: list[str], key: str, created_from: int | None) -> str:
    at = jsontext.container_at(text, path)
    place = jsontext.member(text, at, key) if at is not None else None
    if at is None or place is None:
        raise jsontext.JsonTextError("no such member")
    text = jsontext.remove_item(text, at, place[0])
    if created_from is not None:
        for depth in range(len(path), created_from, -1):
            parent = jsontext.container_at(text, path[:depth - 1])
            child = jsontext.member(text, parent, path[depth - 1]) if parent is not None else None
            if parent is None or child is None or json.loads(
                    text[child[1].value_start:child[1].value_end]) != {}:
                break
            text = jsontext.remove_item(text, parent, child[0])
    return text


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
    if servers is None or not mcp_is_ours(servers.get(server_name)):
        return text
    del servers[server_name]
    if created_from is not None:
        for depth in range(len(path), created_from, -1):
            parent = _container(data, path[: depth - 1], name, create=False)
            if parent is not None and parent.get(path[depth - 1]) == {}:
                del parent[path[depth - 1]]
            else:
                break
    return _spliced(text, data, lambda t: _remove_member(t, path, server_name, created_from)) \
        or _dump_like(data, text)


def has_json_mcp(text: str, path: list[str], server_name: str) -> bool:
    try:
        data = json.loads(text) if text.strip() else {}
        servers = _container(data, path, "", create=False) if isinstance(data, dict) else None
    except (json.JSONDecodeError, EditError):
        return False
    return servers is not None and mcp_is_ours(servers.get(server_name))
