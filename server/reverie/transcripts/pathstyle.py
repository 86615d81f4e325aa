"""Comparing the paths agents record (``cwd``) with the editor's workspace, on every OS.

Agents write the working directory in their own OS's syntax: ``C:\\Users\\me\\proj`` from
Claude Code, Codex or Gemini CLI on Windows, ``/Users/me/proj`` on macOS. Deciding whether a
recorded ``cwd`` is (inside) the open workspace needs the rules of the OS Reverie runs on:

- Windows: ``\\`` and ``/`` are both separators, drive letters and names compare without regard
  to case (``c:\\users\\ME`` is ``C:\\Users\\me``), and the long-path prefix ``\\\\?\\`` names the
  same place;
- macOS: the default APFS volume is case-insensitive, so a ``cwd`` that differs from the
  workspace only in case is the same folder;
- Linux: exact, case-sensitive comparison.

A path written in another OS's syntax (a Windows ``cwd`` read on Linux from a shared folder or
WSL, a POSIX ``cwd`` read on Windows) is never taken for the workspace: there is no reliable
mapping between the two, and a false match would file another machine's session as the user's.
The style is a value, so the rules of each OS are tested on any OS.
"""

from __future__ import annotations

import ntpath
import os
import posixpath
import re
import sys
from dataclasses import dataclass
from pathlib import PurePath, PurePosixPath, PureWindowsPath

#: ``C:\``, ``c:/`` (a drive root) or ``\\server\share`` (UNC): clearly a Windows path
_WINDOWS_ABSOLUTE = re.compile(r"^(?:[A-Za-z]:[\\/]|\\\\[^\\/?.]|//[^/])")
_LONG_PATH_PREFIX = re.compile(r"^\\\\\?\\(?:UNC\\)?")


@dataclass(frozen=True)
class PathStyle:
    """How one OS spells and compares paths."""

    windows: bool
    case_insensitive: bool

    @classmethod
    def host(cls) -> PathStyle:
        """The style of the OS this process runs on (macOS: its default case-insensitive
        volume)."""
        windows = os.name == "nt"
        return cls(windows=windows, case_insensitive=windows or sys.platform == "darwin")

    @classmethod
    def linux(cls) -> PathStyle:
        return cls(windows=False, case_insensitive=False)

    @classmethod
    def macos(cls) -> PathStyle:
        return cls(windows=False, case_insensitive=True)

    @classmethod
    def win(cls) -> PathStyle:
        return cls(windows=True, case_insensitive=True)

    def parse(self, text: str | None) -> PurePath | None:
        """``text`` as an absolute path of this style, normalised; ``None`` when it is empty,
        relative, or written in the other OS family's syntax."""
        if not text or "\x00" in text:
            return None
        if self.windows:
            text = _LONG_PATH_PREFIX.sub(lambda m: "\\\\" if "UNC" in m.group(0) else "", text)
            if not _WINDOWS_ABSOLUTE.match(text):
                return None  # a POSIX path, or relative: not a place on this machine
            normalised = ntpath.normpath(text)
            if normalised[1:2] == ":":
                normalised = normalised[0].upper() + normalised[1:]
            return PureWindowsPath(normalised)
        if not text.startswith("/") or _WINDOWS_ABSOLUTE.match(text):
            return None
        normalised = posixpath.normpath(text)
        if self.case_insensitive:
            normalised = normalised.casefold()
        return PurePosixPath(normalised)

    def is_inside(self, child: str | None, root: str | os.PathLike[str]) -> bool:
        """True when ``child`` names ``root`` or a path inside it."""
        candidate = self.parse(child)
        base = self.parse(os.fspath(root))
        if candidate is None or base is None:
            return False
        # PureWindowsPath compares case-insensitively; POSIX paths were case-folded above
        return candidate == base or base in candidate.parents

    def same(self, a: str | None, b: str | None) -> bool:
        pa, pb = self.parse(a), self.parse(b)
        return pa is not None and pa == pb

    def spellings(self, path: str) -> list[str]:
        """The ways agents on this OS may spell ``path`` when they hash or record it: on Windows
        both drive-letter cases (VS Code reports ``c:\\…``, a shell ``C:\\…``)."""
        out = [path]
        if self.windows and len(path) > 1 and path[1] == ":":
            for drive in (path[0].upper(), path[0].lower()):
                variant = drive + path[1:]
                if variant not in out:
                    out.append(variant)
        return out


def looks_like_windows_path(text: str) -> bool:
    """A drive-letter or UNC path (whatever OS reads it)."""
    return bool(_WINDOWS_ABSOLUTE.match(text)) or text.startswith("\\\\?\\")

