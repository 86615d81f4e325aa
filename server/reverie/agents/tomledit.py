"""Reverie's MCP server entry in a TOML configuration (Codex's ``config.toml``), reversibly.

The entry is one table, ``[mcp_servers.reverie]``, appended at the end of the file as text and
taken out again as exactly that text (the blank line that came with it included), so every
other byte of the user's file (comments, key order, spacing, quoting) stays as it was, and
connect then disconnect gives back the same bytes. Where a splice cannot hold the entry
(``mcp_servers`` written as an inline table, say) the edit is made on tomlkit's round-trip
document, which keeps comments and layout too. Either result is checked by parsing it again
with the standard library (``tomllib``, strict like Codex's own parser) against the structural
edit of the same data: a file is never written wrong, and one that is not valid TOML is
refused untouched.
"""

from __future__ import annotations

import copy
import json
import re
import tomllib
from collections.abc import Callable
from typing import Any

from reverie.agents.blocks import newline_of
from reverie.agents.edits import EditError, mcp_is_ours

__all__ = ["has_toml_mcp", "is_empty_toml", "load_toml", "remove_toml_mcp", "set_toml_mcp",
           "toml_missing_depth"]


def load_toml(text: str, name: str = "") -> dict[str, Any]:
    """The data of ``text`` (empty text: no data); ``EditError`` when it is not valid TOML."""
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise EditError(f"{name or 'the file'} is not valid TOML ({exc}); fix it first, "
                        "nothing was written") from None


def _container(data: dict[str, Any], path: list[str], name: str) -> dict[str, Any] | None:
    node = data
    for key in path:
        child = node.get(key)
        if child is None:
            return None
        if not isinstance(child, dict):
            raise EditError(f"{name}: {'.'.join(path)} is not a table; nothing was written")
        node = child
    return node


def _expected(data: dict[str, Any], path: list[str], key: str, value: Any | None,
              created_from: int | None = None) -> dict[str, Any]:
    """A copy of ``data`` with ``key`` set to ``value`` (removed when None) in the table at
    ``path``; on removal, the tables from depth ``created_from`` on that are left empty go."""
    out = copy.deepcopy(data)
    node = out
    chain = [out]
    for step in path:
        node = node.setdefault(step, {})
        chain.append(node)
    if value is None:
        node.pop(key, None)
        if created_from is not None:
            for depth in range(len(path), created_from, -1):
                if chain[depth] == {}:
                    del chain[depth - 1][path[depth - 1]]
                else:
                    break
    else:
        node[key] = value
    return out


def _quoted(key: str) -> str:
    return key if re.fullmatch(r"[A-Za-z0-9_-]+", key) else _string(key)


def _string(value: str) -> str:
    """A TOML basic string (JSON's escapes are TOML's, bar the ``\\/`` JSON never writes)."""
    return json.dumps(value, ensure_ascii=False)


def _value(value: Any) -> str:
    if isinstance(value, str):
        return _string(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, list):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_quoted(k)} = {_value(v)}" for k, v in value.items()) + "}"
    raise TypeError(f"cannot write {type(value).__name__} as TOML")


def _table_text(path: list[str], key: str, value: dict[str, Any], nl: str) -> str:
    header = ".".join(_quoted(step) for step in [*path, key])
    lines = [f"[{header}]"] + [f"{_quoted(k)} = {_value(v)}" for k, v in value.items()]
    return nl.join(lines) + nl


def _header_re(path: list[str], key: str) -> re.Pattern[str]:
    """A table header of the entry or of a table inside it (``[mcp_servers.reverie.env]``)."""
    parts = [rf"(?:{re.escape(s)}|\"{re.escape(s)}\"|'{re.escape(s)}')" for s in [*path, key]]
    return re.compile(r"^[ \t]*\[[ \t]*" + r"[ \t]*\.[ \t]*".join(parts) + r"[ \t]*[.\]]", re.M)


#: any table or array-of-tables header line
_ANY_HEADER = re.compile(r"^[ \t]*\[\[?[ \t]*[A-Za-z0-9_\"'-][^\n]*\][ \t]*(?:#[^\n]*)?\r?$",
                         re.M)


def _splice_out(text: str, path: list[str], key: str) -> str:
    """``text`` without the entry's table (and the tables inside it), and without the blank
    line a connect put before it when it is the last thing in the file."""
    ours = _header_re(path, key)
    start_match = ours.search(text)
    if start_match is None:
        return text
    start = start_match.start()
    end = len(text)
    for header in _ANY_HEADER.finditer(text, start_match.end()):
        if ours.match(text, header.start()) is None:
            end = header.start()
            break
    if end < len(text):
        return text[:start] + text[end:]
    head = text[:start]
    nl = newline_of(text)
    if head.endswith(nl + nl):
        head = head[: -len(nl)]
    return head


def _checked(candidate: Callable[[], str], *expected: dict[str, Any]) -> str | None:
    try:
        text = candidate()
        return text if tomllib.loads(text) in expected else None
    except (tomllib.TOMLDecodeError, ValueError, TypeError, KeyError):
        return None


def _tomlkit_edit(text: str, path: list[str], key: str, value: dict[str, Any] | None,
                  created_from: int | None = None) -> str:
    """The same edit on tomlkit's round-trip document (comments and layout kept)."""
    import tomlkit

    doc = tomlkit.parse(text)
    node: Any = doc
    chain: list[Any] = [doc]
    for step in path:
        if step not in node:
            node[step] = tomlkit.table(is_super_table=True)
        node = node[step]
        chain.append(node)
    if value is None:
        if key in node:
            del node[key]
        if created_from is not None:
            for depth in range(len(path), created_from, -1):
                if len(chain[depth]) == 0:
                    del chain[depth - 1][path[depth - 1]]
                else:
                    break
    else:
        node[key] = value
    return tomlkit.dumps(doc)


def set_toml_mcp(text: str, path: list[str], server_name: str, server: dict[str, Any],
                 name: str) -> str:
    """``text`` with ``server`` as the MCP server ``server_name`` in the table at ``path``
    (an entry of someone else's by that name is refused, never overwritten)."""
    data = load_toml(text, name)
    servers = _container(data, path, name)
    existing = servers.get(server_name) if servers is not None else None
    if existing is not None and not mcp_is_ours(existing):
        raise EditError(f"{name} already has an MCP server named {server_name!r} that is not "
                        "Reverie's; nothing was written")
    if existing == server:
        return text
    expected = _expected(data, path, server_name, server)
    nl = newline_of(text) if text else "\n"

    def splice() -> str:
        base = _splice_out(text, path, server_name) if existing is not None else text
        if base and not base.endswith(nl):
            base += nl
        return (base + nl if base.strip() else base) + _table_text(path, server_name, server, nl)

    done = _checked(splice, expected) or _checked(
        lambda: _tomlkit_edit(text, path, server_name, server), expected)
    if done is None:
        raise EditError(f"{name}: cannot add the {server_name!r} MCP server without changing "
                        "the rest of the file; nothing was written")
    return done


def remove_toml_mcp(text: str, path: list[str], server_name: str, name: str,
                    created_from: int | None = None) -> str:
    """``text`` without Reverie's MCP server entry (and without the tables along ``path`` the
    connect created, from depth ``created_from`` on, when they are left empty); unchanged when
    the entry is not there."""
    data = load_toml(text, name)
    servers = _container(data, path, name)
    if servers is None or not mcp_is_ours(servers.get(server_name)):
        return text
    expected = _expected(data, path, server_name, None, created_from)
    # a table that only our entry's header made (``[mcp_servers.reverie]`` alone) goes with it:
    # TOML cannot hold it empty without a header of its own
    pruned = _expected(data, path, server_name, None, 0)
    done = _checked(lambda: _splice_out(text, path, server_name), expected, pruned) or _checked(
        lambda: _tomlkit_edit(text, path, server_name, None, created_from), expected, pruned)
    if done is None:
        raise EditError(f"{name}: cannot take the {server_name!r} MCP server out without "
                        "changing the rest of the file; nothing was written")
    return done


def has_toml_mcp(text: str, path: list[str], server_name: str) -> bool:
    try:
        servers = _container(tomllib.loads(text), path, "")
    except (tomllib.TOMLDecodeError, EditError):
        return False
    return servers is not None and mcp_is_ours(servers.get(server_name))


def toml_missing_depth(text: str, path: list[str]) -> int | None:
    """How many leading keys of ``path`` already exist as tables in ``text`` (None: all)."""
    try:
        node: Any = tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return None
    for depth, key in enumerate(path):
        if not isinstance(node, dict) or not isinstance(node.get(key), dict):
            return depth
        node = node[key]
    return None


def is_empty_toml(text: str) -> bool:
    """True for a file with no data and nothing but blank lines (what is left of one Reverie
    created): a comment someone added keeps the file."""
    return not text.strip()
