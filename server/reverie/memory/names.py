"""Which file names a run may create in a memory dir: the apply's rules, checked per write.

The apply (``memory.transaction``) takes only plain relative paths, so a name it refuses (a
backslash, say) used to pass the tool gate and then fail the whole run at the end. Memory is
also copied to other machines, read on Windows and shown in editors, so names that are
devices there (``CON.md``), that end in a dot or a space, that hold control, invisible or
direction-changing characters (``evil\\u202egpj.md`` shows as ``evilgpj.md`` reversed), that
nest deeper than a few folders, or that differ from an existing name only in case
(``memory.md`` beside ``MEMORY.md``) are refused too. ``name_problem`` says why, or None.
"""

from __future__ import annotations

import re
import unicodedata

from reverie.memory import nofollow

__all__ = ["MAX_DEPTH", "name_problem"]

#: folders a memory file may sit in below the memory dir (``a/b/topic.md`` is the deepest)
MAX_DEPTH = 3
_WINDOWS_DEVICE = re.compile(r"(?i)(?:con|prn|aux|nul|com[0-9¹²³]|lpt[0-9¹²³]|conin\$|conout\$)"
                             r"(?:\..*)?")
_WINDOWS_INVALID = frozenset('<>:"|?*')
#: Unicode categories never in a name a person typed: control, format (bidi overrides,
#: zero-width), line and paragraph separators, surrogates, private use, unassigned
_HIDDEN_CATEGORIES = frozenset({"Cc", "Cf", "Zl", "Zp", "Cs", "Co", "Cn"})


def name_problem(name: str) -> str | None:
    """Why ``name`` (relative to the memory dir, ``/``-separated) may not be created, or None."""
    try:
        parts = nofollow.split_name(name)
    except nofollow.UnsafePath:
        return "not a plain relative path (no backslash, '.', '..' or empty part)"
    if len(parts) > MAX_DEPTH + 1:
        return f"nested deeper than {MAX_DEPTH} folders"
    for part in parts:
        if part.startswith("."):
            return "a hidden name (Reverie keeps its own state there)"
        if _WINDOWS_DEVICE.fullmatch(part):
            return f"{part!r} is a device name on Windows"
        if part.endswith((".", " ")) or part != part.strip():
            return "a name that starts or ends with a space or ends with a dot"
        if any(c in _WINDOWS_INVALID for c in part):
            return "a character Windows does not allow in names (<>:\"|?*)"
        if any(unicodedata.category(c) in _HIDDEN_CATEGORIES for c in part):
            return "an invisible, control or direction-changing character"
    return None
