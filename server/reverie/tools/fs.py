"""The file tools a model may call: ``read_file``, ``list_dir``, ``glob``, ``grep``, ``edit_file``,
``write_file``. Names and argument names are a contract (prompts and tests rely on them).

Each tool takes the job's ``PathGate`` and its validated arguments and returns a ``ToolOutcome``.
Paths the model passes are checked by the gate; paths the model sees are ``gate.display`` paths
(real paths, even when writes land in a staging copy). There is deliberately no shell tool.
Everything here is blocking file I/O: the loop runs it with ``asyncio.to_thread``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from reverie.errors import ReverieError
from reverie.fsutil import atomic_write_text
from reverie.llm.types import ToolSpec
from reverie.redact import redact
from reverie.tools.gate import Denial, PathDenied, PathGate

DEFAULT_READ_LIMIT = 2000
MAX_LINE_CHARS = 2000
MAX_LIST_ENTRIES = 500
MAX_GLOB_RESULTS = 200
MAX_GREP_MATCHES = 200
MAX_GREP_LINE = 300


@dataclass
class ToolOutcome:
    """A tool's answer to the model, plus what it touched (display paths)."""

    content: str
    is_error: bool = False
    read: list[str] = field(default_factory=list)
    written: list[str] = field(default_factory=list)
    denial: Denial | None = None


class ToolInputError(ReverieError, ValueError):
    """Arguments that are valid JSON but wrong for the tool; the message goes to the model."""


class _Args(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ReadFileArgs(_Args):
    file_path: str = Field(description="Path of the file (absolute, or relative to the project).")
    offset: int | None = Field(default=None, ge=1, description="First line to read (1-based).")
    limit: int | None = Field(default=None, ge=1, description="Maximum number of lines.")


class ListDirArgs(_Args):
    path: str = Field(description="Directory to list.")


class GlobArgs(_Args):
    pattern: str = Field(description="Glob such as **/*.md (relative to path).")
    path: str | None = Field(default=None, description="Directory to search (default: project).")


class GrepArgs(_Args):
    pattern: str = Field(description="Regular expression (Python syntax).")
    path: str | None = Field(default=None, description="File or directory to search.")
    glob: str | None = Field(default=None, description="Only files matching this glob.")


class EditFileArgs(_Args):
    file_path: str = Field(description="File to edit.")
    old_string: str = Field(description="Exact text to replace; empty to create a new file.")
    new_string: str = Field(description="Replacement text.")
    replace_all: bool = Field(default=False, description="Replace every occurrence.")


class WriteFileArgs(_Args):
    file_path: str = Field(description="File to create or overwrite.")
    content: str = Field(description="The whole new content.")


# ---- helpers -------------------------------------------------------------------------------


def glob_regex(pattern: str) -> re.Pattern[str]:
    """A regex for a ``/``-separated glob: ``**`` spans directories, ``*`` and ``?`` do not."""
    out: list[str] = []
    i = 0
    while i < len(pattern):
        ch = pattern[i]
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif ch == "*":
            out.append("[^/]*")
            i += 1
        elif ch == "?":
            out.append("[^/]")
            i += 1
        elif ch == "[":
            end = pattern.find("]", i + 2)
            if end == -1:
                out.append(re.escape(ch))
                i += 1
            else:
                body = pattern[i + 1 : end]
                negate = body.startswith("!")
                body = "".join("\\" + c if c in "\\[]&~|^" else c
                               for c in (body[1:] if negate else body))
                out.append(f"[{'^' if negate else ''}{body}]")
                i = end + 1
        else:
            out.append(re.escape(ch))
            i += 1
    try:
        return re.compile("".join(out) + r"\Z", re.DOTALL)
    except re.error as exc:
        raise ToolInputError(f"invalid glob pattern {pattern!r}: {exc}") from None


def _check_pattern(pattern: str, access_path: str) -> None:
    if "\x00" in pattern:
        raise PathDenied(access_path, "list", "NUL byte in pattern")
    if pattern.startswith(("/", "~")) or ".." in pattern.split("/"):
        raise PathDenied(pattern, "list", "patterns must stay inside the search directory")


def _walk(root: Path) -> list[Path]:
    """Every file under ``root`` without following directory symlinks, sorted."""
    found: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        dirnames.sort()
        for name in sorted(filenames):
            found.append(Path(dirpath) / name)
    return found


def _is_binary(data: bytes) -> bool:
    return b"\x00" in data[:8192]


def _load_text(path: Path) -> str:
    data = path.read_bytes()
    if _is_binary(data):
        raise ToolInputError("binary file; only text files can be read")
    return data.decode("utf-8", errors="replace")


# ---- the tools -----------------------------------------------------------------------------


def read_file(gate: PathGate, args: ReadFileArgs) -> ToolOutcome:
    path = gate.check_read(args.file_path)
    # redacted whole, before lines are cut (a cut must not leave half a secret unrecognised)
    text, _ = redact(_load_text(path))
    shown = gate.display(path)
    if text == "":
        return ToolOutcome(f"{shown} is empty.", read=[shown])
    lines = text.splitlines()
    start = (args.offset or 1) - 1
    limit = args.limit or DEFAULT_READ_LIMIT
    if start >= len(lines):
        raise ToolInputError(f"offset {args.offset} is past the end ({len(lines)} lines)")
    chunk = lines[start : start + limit]
    body = "\n".join(
        f"{start + n + 1:6}\t{line if len(line) <= MAX_LINE_CHARS else line[:MAX_LINE_CHARS] + '…'}"
        for n, line in enumerate(chunk)
    )
    rest = len(lines) - (start + len(chunk))
    if rest > 0:
        body += f"\n… {rest} more lines (read again with offset={start + len(chunk) + 1})"
    return ToolOutcome(body, read=[shown])


def list_dir(gate: PathGate, args: ListDirArgs) -> ToolOutcome:
    path = gate.check_list(args.path)
    entries = []
    with os.scandir(path) as scan:
        for entry in scan:
            is_dir = entry.is_dir(follow_symlinks=False)
            entries.append(entry.name + ("/" if is_dir else ""))
    entries.sort()
    shown = gate.display(path)
    if not entries:
        return ToolOutcome(f"{shown} is empty.")
    extra = len(entries) - MAX_LIST_ENTRIES
    listing = "\n".join(entries[:MAX_LIST_ENTRIES])
    if extra > 0:
        listing += f"\n… and {extra} more"
    return ToolOutcome(f"{shown}:\n{listing}")


def glob(gate: PathGate, args: GlobArgs) -> ToolOutcome:
    root = gate.check_list(args.path or str(gate.base_dir))
    _check_pattern(args.pattern, args.path or ".")
    regex = glob_regex(args.pattern)
    hits = []
    for file in _walk(root):
        rel = file.relative_to(root).as_posix()
        if regex.match(rel) and gate.allows_read(file):
            hits.append(gate.display(file))
    if not hits:
        return ToolOutcome(f"No files match {args.pattern!r} in {gate.display(root)}.")
    extra = len(hits) - MAX_GLOB_RESULTS
    out = "\n".join(hits[:MAX_GLOB_RESULTS])
    if extra > 0:
        out += f"\n… and {extra} more (narrow the pattern)"
    return ToolOutcome(out)


def grep(gate: PathGate, args: GrepArgs) -> ToolOutcome:
    try:
        regex = re.compile(args.pattern)
    except re.error as exc:
        raise ToolInputError(f"invalid regular expression: {exc}") from None
    target = args.path or str(gate.base_dir)
    try:
        files = [gate.check_read(target)]
        root = files[0].parent
    except PathDenied as read_denial:
        try:
            root = gate.check_list(target)
        except PathDenied:
            raise read_denial from None
        files = _walk(root)
    name_filter = None
    if args.glob:
        _check_pattern(args.glob, target)
        name_filter = glob_regex(args.glob)
    matches: list[str] = []
    searched: list[str] = []
    for file in files:
        rel = file.relative_to(root).as_posix()
        if name_filter and not (name_filter.match(rel) or name_filter.match(file.name)):
            continue
        try:
            physical = gate.verify_read(file)
            # searched redacted: a pattern cannot probe a secret the model may not read
            text, _ = redact(_load_text(physical))
        except (PathDenied, ToolInputError, OSError):
            continue
        shown = gate.display(physical)
        searched.append(shown)
        for number, line in enumerate(text.splitlines(), start=1):
            if regex.search(line):
                clipped = line if len(line) <= MAX_GREP_LINE else line[:MAX_GREP_LINE] + "…"
                matches.append(f"{shown}:{number}: {clipped}")
                if len(matches) >= MAX_GREP_MATCHES:
                    break
        if len(matches) >= MAX_GREP_MATCHES:
            matches.append(f"… stopped at {MAX_GREP_MATCHES} matches (narrow the pattern)")
            break
    if not matches:
        return ToolOutcome(f"No matches for {args.pattern!r} ({len(searched)} files searched).",
                           read=searched)
    return ToolOutcome("\n".join(matches), read=searched)


def edit_file(gate: PathGate, args: EditFileArgs) -> ToolOutcome:
    path = gate.check_write(args.file_path)
    shown = gate.display(path)
    exists = path.exists()
    current = ""
    mode = 0o600
    if exists:
        info = path.stat()
        if info.st_size > gate.max_bytes:
            raise PathDenied(args.file_path, "write", f"file larger than {gate.max_bytes} bytes")
        mode = info.st_mode & 0o777
        try:
            current = path.read_bytes().decode("utf-8")
        except UnicodeDecodeError:
            raise ToolInputError("the file is not UTF-8 text; refusing to edit it") from None
    if args.old_string == "":
        if current != "":
            raise ToolInputError(
                "old_string is empty but the file has content; give the exact text to replace "
                "(or use write_file to replace everything)")
        updated = args.new_string
        verb = "Created" if not exists else "Wrote"
    else:
        if not exists:
            raise ToolInputError(f"{shown} does not exist (use an empty old_string to create it)")
        if args.old_string == args.new_string:
            raise ToolInputError("old_string and new_string are identical; nothing to change")
        count = current.count(args.old_string)
        if count == 0:
            raise ToolInputError("old_string was not found; it must match the file exactly "
                                 "(whitespace included); read the file again")
        if count > 1 and not args.replace_all:
            raise ToolInputError(f"old_string matches {count} times; include more context to "
                                 "make it unique, or set replace_all")
        updated = current.replace(args.old_string, args.new_string)
        verb = f"Edited ({count} replacement{'s' if count > 1 else ''})"
    if len(updated.encode("utf-8")) > gate.max_bytes:
        raise PathDenied(args.file_path, "write", f"result larger than {gate.max_bytes} bytes")
    atomic_write_text(path, updated, mode=mode)
    return ToolOutcome(f"{verb} {shown}.", read=[shown] if exists else [], written=[shown])


def write_file(gate: PathGate, args: WriteFileArgs) -> ToolOutcome:
    path = gate.check_write(args.file_path)
    if len(args.content.encode("utf-8")) > gate.max_bytes:
        raise PathDenied(args.file_path, "write", f"content larger than {gate.max_bytes} bytes")
    mode = path.stat().st_mode & 0o777 if path.exists() else 0o600
    atomic_write_text(path, args.content, mode=mode)
    shown = gate.display(path)
    return ToolOutcome(f"Wrote {len(args.content)} characters to {shown}.", written=[shown])


@dataclass(frozen=True)
class Tool:
    spec: ToolSpec
    args: type[_Args]
    run: Callable[[PathGate, Any], ToolOutcome]
    path_field: str | None


def _tool(name: str, description: str, args: type[_Args],
          run: Callable[[PathGate, Any], ToolOutcome], path_field: str | None) -> Tool:
    schema = args.model_json_schema()
    schema.pop("title", None)
    for prop in schema.get("properties", {}).values():
        prop.pop("title", None)
    return Tool(ToolSpec(name=name, description=description, parameters=schema), args, run,
                path_field)


TOOLS: dict[str, Tool] = {
    tool.spec.name: tool
    for tool in (
        _tool("read_file", "Read a text file. Lines come numbered; use offset/limit for long "
              "files.", ReadFileArgs, read_file, "file_path"),
        _tool("list_dir", "List a directory (sub-directories end with /).", ListDirArgs,
              list_dir, "path"),
        _tool("glob", "Find files by glob pattern, e.g. **/*.md.", GlobArgs, glob, "path"),
        _tool("grep", "Search file contents with a regular expression; prints path:line: text.",
              GrepArgs, grep, "path"),
        _tool("edit_file", "Replace old_string with new_string in a file. old_string must match "
              "exactly once unless replace_all is true; an empty old_string creates a new file.",
              EditFileArgs, edit_file, "file_path"),
        _tool("write_file", "Create or overwrite a file with content.", WriteFileArgs,
              write_file, "file_path"),
    )
}
READ_ONLY_TOOLS = ("read_file", "list_dir", "glob", "grep")
ALL_TOOLS = (*READ_ONLY_TOOLS, "edit_file", "write_file")


def tool_specs(names: list[str] | tuple[str, ...]) -> list[ToolSpec]:
    """The specs for ``names``; an unknown name is a programming error (``KeyError``)."""
    return [TOOLS[name].spec for name in names]


def execute_tool(gate: PathGate, name: str, arguments: dict[str, Any]) -> ToolOutcome:
    """Run one tool call. Never raises for bad input: errors and denials become outcomes."""
    tool = TOOLS.get(name)
    if tool is None:
        return ToolOutcome(f"Error: unknown tool {name!r}.", is_error=True)
    try:
        parsed = tool.args.model_validate(arguments)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'arguments'}: {e['msg']}"
            for e in exc.errors()[:5]
        )
        return ToolOutcome(f"Error: invalid arguments for {name}: {problems}", is_error=True)
    try:
        return tool.run(gate, parsed)
    except PathDenied as denied:
        return ToolOutcome(f"Error: {denied}", is_error=True,
                           denial=Denial(tool=name, path=denied.path, reason=denied.reason))
    except ToolInputError as exc:
        return ToolOutcome(f"Error: {exc}", is_error=True)
    except OSError as exc:
        return ToolOutcome(f"Error: {name} failed ({exc.strerror or type(exc).__name__}).",
                           is_error=True)
