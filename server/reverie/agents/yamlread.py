"""Reverie's entry in Aider's ``read:`` list (``.aider.conf.yml``), every other byte kept.

The file is parsed with a round-trip YAML library (ruamel.yaml: it keeps each key's and item's
line and column) to find the top-level ``read`` key however it is written (``read:``,
``"read":``, ``'read':``) and what its value is; the entry is then added as one list line
tagged ``# reverie:managed ID`` at the first item's indentation, so comments, order, quoting
and layout stay exactly as the user wrote them. The result is parsed again and must hold the
same data plus the entry. A shape Reverie cannot extend line by line (a flow list
``[a, b]``, a single file name, a duplicated key, a file that is not a mapping) is refused with
what to change; nothing is written then. Without a ``read`` key the entry goes in a managed
block of its own at the end.

The review found the regular-expression version writing invalid YAML after a flow list that
starts on the next line, and adding a second ``read:`` after a quoted ``"read":`` (the user's
list was then dropped).
"""

from __future__ import annotations

import json
import re
from typing import Any

from reverie.agents.blocks import BlockError, find_block, newline_of, remove_block, upsert_block
from reverie.agents.edits import EditError

__all__ = ["has_yaml_read", "remove_yaml_read", "set_yaml_read"]


class YamlReadError(EditError):
    """The file's ``read:`` cannot be extended safely (the message says what to change)."""


def _tag(block_id: str) -> str:
    return f"# reverie:managed {block_id}"


def _tagged_line(block_id: str) -> re.Pattern[str]:
    return re.compile(r"^[ \t]*-[^\n]*" + re.escape(_tag(block_id)) + r"[ \t]*(\r?\n|$)", re.M)


def _load(text: str, name: str) -> Any:
    from ruamel.yaml import YAML
    from ruamel.yaml.error import YAMLError

    try:
        return YAML(typ="rt").load(text)
    except YAMLError as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise YamlReadError(f"{name} is not YAML Reverie can edit ({first}); fix it first, "
                            "nothing was written") from None


def _where(data: Any) -> Any:
    """ruamel's line and column record of a mapping (``.key(k)``, ``.value(k)``)."""
    return data.lc


def _plain(data: Any) -> Any:
    """Round-trip data as plain Python values (for comparing before and after)."""
    return json.loads(json.dumps(data, default=str))


def _line_offsets(text: str) -> list[int]:
    offsets = [0]
    for match in re.finditer("\n", text):
        offsets.append(match.end())
    return offsets


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
    data = _load(text, name) if text.strip() else None
    if data is not None and not isinstance(data, dict):
        raise YamlReadError(f"{name} does not hold a YAML mapping; nothing was written")
    ours = find_block(text, block_id, "hash") is not None  # our own block holds read:
    if data is None or "read" not in data or ours:
        result = upsert_block(text, block_id, f"read:\n  - {item}", "hash")
        _check(result[0], data, path, name)
        return result
    value = data["read"]
    flow = getattr(value, "fa", None)
    if isinstance(value, list) and flow is not None and flow.flow_style():
        raise YamlReadError(f"{name} writes read: as a flow list ([...]); write it as a list "
                            "with one '- file' per line and connect again (nothing was written)")
    if value is not None and not isinstance(value, list):
        raise YamlReadError(f"{name} sets read: to a single value; write it as a list with one "
                            "'- file' per line and connect again (nothing was written)")
    offsets = _line_offsets(text)
    newline = newline_of(text)
    added: str | None = None
    if value:  # a block list: the entry goes first, at its first item's indentation
        line_no, col = _where(data).value("read")
        start = offsets[line_no]
        indent = text[start:start + col]
        if indent.strip():
            raise YamlReadError(f"{name}: read:'s first item does not start its line; write "
                                "one '- file' per line and connect again (nothing was written)")
        new = text[:start] + f"{indent}- {item}  {_tag(block_id)}{newline}" + text[start:]
    else:  # ``read:`` with nothing after it: the entry is its first item
        key_line = _where(data).key("read")[0]
        if key_line + 1 < len(offsets):
            after = offsets[key_line + 1]
        else:
            added = newline
            text += added
            after = len(text)
        new = text[:after] + f"  - {item}  {_tag(block_id)}{newline}" + text[after:]
    _check(new, data, path, name)
    return new, added


def _check(new: str, before: Any, path: str, name: str) -> None:
    """``new`` must hold what ``before`` held, with ``path`` added to ``read``."""
    after = _load(new, name)
    expected = _plain(before) if before is not None else {}
    reads = expected.get("read") or []
    expected["read"] = [path, *reads] if path not in reads else reads
    got = _plain(after) if after is not None else {}
    if isinstance(got, dict) and sorted(got.get("read") or [], key=str) == sorted(
            expected["read"], key=str):
        got["read"] = expected["read"]
    if got != expected:
        raise YamlReadError(f"{name}: Reverie could not add its read: entry without changing "
                            "the rest of the file; add it by hand or simplify read:")


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
