"""Edits to a JSON file's text that leave every other byte of it alone.

Loading a settings file and dumping it again reformats it: a user's tabs, one-line objects,
key spacing and trailing newline all change, and what disconnect gives back is no longer the
user's file (the review found a structural restore reformatting ``settings.json``, and a shared
``~/.codex/hooks.json`` could never come back byte for byte). Here an edit is a splice: the
spans of members and elements are found with the standard library's own scanner
(``json.decoder.scanstring`` and ``JSONDecoder.raw_decode``, in C), and a member or element is
inserted after the last one, in the indentation and separators the file already uses, or
removed with exactly the comma and whitespace that came with it. So inserting, then removing
the same thing gives back the original text.

The callers (``agents.edits``) check every result against the structural edit of the same
data and fall back to a plain dump when they differ, so an odd file is never written wrong.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

__all__ = ["Item", "JsonTextError", "append_element", "container_at", "insert_member",
           "items", "member", "remove_item", "replace_value", "root", "without_comments"]

_DECODER = json.JSONDecoder()
_WS = re.compile(r"[ \t\n\r]*")


class JsonTextError(ValueError):
    """The text is not the JSON shape the edit expected (the caller falls back)."""


@dataclass(frozen=True, slots=True)
class Item:
    """A member of an object (``key`` set) or an element of an array, by offsets."""

    start: int  # the key's opening quote, or the element's first character
    value_start: int
    value_end: int
    key: str | None = None


def _skip(text: str, at: int) -> int:
    found = _WS.match(text, at)
    return found.end() if found else at


def _value_end(text: str, at: int) -> int:
    try:
        return _DECODER.raw_decode(text, at)[1]
    except json.JSONDecodeError as exc:
        raise JsonTextError(exc.msg) from None


def items(text: str, start: int) -> tuple[list[Item], int]:
    """The members (``{``) or elements (``[``) of the container at ``start``, and the offset
    of its closing bracket."""
    opening = text[start:start + 1]
    if opening not in ("{", "["):
        raise JsonTextError("not a container")
    closing = "}" if opening == "{" else "]"
    found: list[Item] = []
    at = _skip(text, start + 1)
    if text[at:at + 1] == closing:
        return found, at
    while True:
        key = None
        item_start = at
        if opening == "{":
            if text[at:at + 1] != '"':
                raise JsonTextError("expected a key")
            key, at = json.decoder.scanstring(text, at + 1)  # type: ignore[attr-defined]
            at = _skip(text, at)
            if text[at:at + 1] != ":":
                raise JsonTextError("expected ':'")
            at = _skip(text, at + 1)
        value_start = at
        at = _value_end(text, at)
        found.append(Item(item_start, value_start, at, key))
        at = _skip(text, at)
        if text[at:at + 1] == ",":
            at = _skip(text, at + 1)
            continue
        if text[at:at + 1] == closing:
            return found, at
        raise JsonTextError("expected ',' or a closing bracket")


def root(text: str) -> int:
    """The offset of the top-level value."""
    return _skip(text, 0)


def container_at(text: str, path: list[str]) -> int | None:
    """The offset of the object at ``path`` (keys from the root), or None when a key is
    missing; ``JsonTextError`` when something on the way is not an object."""
    at = root(text)
    for key in path:
        if text[at:at + 1] != "{":
            raise JsonTextError("not an object")
        members, _ = items(text, at)
        match = [m for m in members if m.key == key]
        if not match:
            return None
        at = match[-1].value_start  # JSON's last duplicate wins, as in json.loads
    if text[at:at + 1] != "{":
        raise JsonTextError("not an object")
    return at


def member(text: str, start: int, key: str) -> tuple[int, Item] | None:
    """The index and span of member ``key`` of the object at ``start`` (the last one)."""
    found = [(i, m) for i, m in enumerate(items(text, start)[0]) if m.key == key]
    return found[-1] if found else None


def _newline(text: str) -> str:
    first = text.find("\n")
    return "\r\n" if first > 0 and text[first - 1] == "\r" else "\n"


def _line_indent(text: str, at: int) -> str:
    line_start = max(text.rfind("\n", 0, at), -1) + 1
    lead = _WS.match(text, line_start)
    indent = text[line_start:lead.end() if lead else line_start]
    return indent.replace("\r", "").replace("\n", "")


def _unit(text: str) -> str:
    """One level of the file's indentation: a tab, or its smallest run of spaces."""
    tabs = re.search(r"^\t+\S", text, re.M)
    spaces = [len(m.group(1)) for m in re.finditer(r"^( +)\S", text, re.M)]
    if tabs and not spaces:
        return "\t"
    return " " * (min(spaces) if spaces else 2)


def _render(value: Any, indent: str, unit: str, newline: str, inline: bool) -> str:
    if inline:
        return json.dumps(value, ensure_ascii=False)
    text = json.dumps(value, indent=unit, ensure_ascii=False)
    return text.replace("\n", newline + indent)


def _separator_after_key(text: str, item: Item) -> str:
    key_end = text.find(":", item.start + len(json.dumps(item.key)) - 1)
    return text[key_end:item.value_start] if key_end >= 0 else ": "


def _insert(text: str, start: int, entry: tuple[str | None, Any]) -> str:
    key, value = entry
    found, closing = items(text, start)
    newline, unit = _newline(text), _unit(text)
    if found:
        last = found[-1]
        gap = text[found[-2].value_end if len(found) > 1 else start + 1:last.start]
        inline = "\n" not in gap
        indent = _line_indent(text, last.start)
        lead = "," + (" " if inline else newline + indent)
        sep = _separator_after_key(text, last) if key is not None else ""
        head = json.dumps(key, ensure_ascii=False) + sep if key is not None else ""
        body = _render(value, indent, unit, newline, inline)
        return text[:last.value_end] + lead + head + body + text[last.value_end:]
    outer = _line_indent(text, start)
    inner = outer + unit
    head = json.dumps(key, ensure_ascii=False) + ": " if key is not None else ""
    body = _render(value, inner, unit, newline, False)
    return (text[:start + 1] + newline + inner + head + body + newline + outer
            + text[closing:])


def insert_member(text: str, start: int, key: str, value: Any) -> str:
    """``text`` with ``"key": value`` added as the last member of the object at ``start``."""
    if text[start:start + 1] != "{":
        raise JsonTextError("not an object")
    return _insert(text, start, (key, value))


def append_element(text: str, start: int, value: Any) -> str:
    """``text`` with ``value`` added as the last element of the array at ``start``."""
    if text[start:start + 1] != "[":
        raise JsonTextError("not an array")
    return _insert(text, start, (None, value))


def remove_item(text: str, start: int, index: int) -> str:
    """``text`` without item ``index`` of the container at ``start``, and without the comma and
    whitespace that came with it (what ``_insert`` added, for the last one)."""
    found, closing = items(text, start)
    if index == 0 and len(found) == 1:
        return text[:start + 1] + text[closing:]
    if index > 0:
        return text[:found[index - 1].value_end] + text[found[index].value_end:]
    return text[:found[0].start] + text[found[1].start:]


def replace_value(text: str, item: Item, value: Any) -> str:
    """``text`` with the value of ``item`` replaced, indented like its line."""
    newline, unit = _newline(text), _unit(text)
    inline = "\n" not in text[item.value_start:item.value_end]
    inline = inline and item.value_end - item.value_start < 80
    body = _render(value, _line_indent(text, item.start), unit, newline, inline)
    return text[:item.value_start] + body + text[item.value_end:]


_COMMENT_OR_STRING = re.compile(r'"(?:[^"\\]|\\.)*"|//[^\n]*|/\*.*?\*/', re.S)


def without_comments(text: str) -> str:
    """``text`` with its ``//`` and ``/* */`` comments blanked (strings left alone): what a
    JSON-with-comments reader (Gemini CLI's ``strip-json-comments``) parses. Offsets and line
    numbers stay as they were."""
    def blank(match: re.Match[str]) -> str:
        found = match.group(0)
        return found if found.startswith('"') else re.sub(r"[^\n]", " ", found)

    return _COMMENT_OR_STRING.sub(blank, text)
