"""What a tool result says: failed or not, the agent's own slip or a real error, the error line,
and the essence of an edit. Each is computed once per call, on bounded slices of the text.
"""

from __future__ import annotations

import re
from typing import Any

from reverie.transcripts.model import ToolCall, ToolResult

#: how much of an output the checks look at (error lines sit at the start or the end)
HEAD_CHARS = 3_000
TAIL_CHARS = 1_500

_EXIT_CODE = re.compile(r"(?:Process exited with code|exit code:?|exited with)\s*(-?\d+)", re.I)
_ERROR_LINE = re.compile(
    r"(error|failed|failure|exception|traceback|not found|no such|denied|cannot|can't|fatal)",
    re.IGNORECASE | re.MULTILINE,
)
_WRAPPER_TAGS = re.compile(r"</?(?:tool_use_error|error)>")
#: the agent misusing its own tools: never a project error (lower-case substrings: a substring
#: test over a short head is far cheaper than a long alternation regex)
_SLIP_NEEDLES = (
    "file has not been read yet", "inputvalidationerror", "string to replace not found",
    "has been modified since read", "has been changed since read",
    "matches of the string to replace", "the required parameter", "invalid tool parameters",
    "no such tool available", "unknown tool", "are exactly the same", "old_string and new_string",
    "file does not exist", "apply_patch verification failed", "failed to find expected lines",
    "could not find the string to replace", "0 occurrences found", "no changes to make",
    "must read the file", "must view the file", "exceeds maximum allowed tokens", "eisdir",
    "is a directory", "cancelled: parallel tool call", "tool_use_error", "invalid_request_error",
    "missing required",
)
_REJECTED_NEEDLES = (
    "doesn't want to proceed with this tool use", "doesnt want to proceed with this tool use",
    "user rejected", "user denied", "user declined", "was rejected by the user",
    "denied by the user",
)
_DEFINITION = re.compile(
    r"^\s*(?:export\s+)?(?:default\s+)?(?:pub(?:\([\w:]+\))?\s+)?(?:async\s+)?"
    r"(?:def|class|function|func|fn|defp?|defmodule|interface|struct|enum|trait|impl|type|"
    r"const|let|var)\s+([A-Za-z_][\w.!?]*)",
    re.MULTILINE,
)
_EDIT_TEXT_KEYS = ("new_string", "content", "new_str", "file_text", "patch", "input")
_INPUT_CHARS = 6_000


def _sample(text: str) -> str:
    if len(text) <= HEAD_CHARS + TAIL_CHARS:
        return text
    return text[:HEAD_CHARS] + "\n" + text[-TAIL_CHARS:]


def result_failed(result: ToolResult) -> bool:
    """The call failed: an error flag, a non-zero exit code, or one printed in its output."""
    if result.is_error:
        return True
    if result.exit_code is not None:
        return result.exit_code != 0
    head = result.output[:400]
    if "xit" not in head and "XIT" not in head:
        return False  # no "exit code" / "exited with" at all: skip the regex
    match = _EXIT_CODE.search(head)
    return bool(match and match.group(1) != "0")


_SLIP = re.compile("|".join(re.escape(n) for n in _SLIP_NEEDLES))
_REJECTED = re.compile("|".join(re.escape(n) for n in _REJECTED_NEEDLES))


def still_running(result: ToolResult) -> bool:
    """A first, partial result of a command that goes on running (Codex's PTY sessions)."""
    return (result.exit_code is None and not result.is_error
            and "Process running with session ID" in result.output[:400])


def is_slip(output: str) -> bool:
    """The failure is the agent's tool-protocol mistake (edit before read, bad parameters…)."""
    return _SLIP.search(output[:800].lower()) is not None


def is_rejection(output: str) -> bool:
    """The person declined the call."""
    return _REJECTED.search(output[:400].lower()) is not None


def shorten(text: str, limit: int) -> str:
    """One line, at most ``limit`` characters."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: max(limit - 1, 0)].rstrip() + "…"


def first_line(text: str, limit: int) -> str:
    """The first non-empty line, shortened."""
    for line in text.splitlines():
        if line.strip():
            return shorten(line, limit)
    return ""


def error_summary(output: str, limit: int = 200) -> str:
    """The most telling line of a failure's output (looked for in its head and tail only): an
    assertion or exception line first, else the first line that mentions an error; never a
    separator such as ``==== FAILURES ====``."""
    lines = [ln.strip() for ln in _WRAPPER_TAGS.sub("", _sample(output)).splitlines()
             if ln.strip() and not _SEPARATOR.match(ln) and not _METADATA.match(ln)]
    if not lines:
        return "(no output)"
    text = "\n".join(lines)  # one scan per tier over the whole text, not one call per line
    index = 0
    for pattern in (_EXCEPTION_LINE, _STRONG_ERROR, _ERROR_LINE):
        if pattern is _EXCEPTION_LINE and "Error: " not in text and "Exception: " not in text:
            continue  # the literal every match contains is absent: skip the scan
        match = pattern.search(text)
        if match is not None:
            index = text.count("\n", 0, match.start())
            break
    chosen = lines[index]
    if _BUILD_FAILED.match(chosen):
        # ``FAIL pkg [build failed]`` only says that the compiler's lines above it matter
        diagnostic = _DIAGNOSTIC.search(text)
        if diagnostic is not None:
            chosen = lines[text.count("\n", 0, diagnostic.start())]
    if chosen.endswith(":") and index + 1 < len(lines):
        chosen = f"{chosen} {lines[index + 1]}"  # "failed due to the following issue:" + why
    return shorten(chosen, limit)


_SEPARATOR = re.compile(r"^\s*[=_\-*~#⎯─━]{3,}[^\w]*(?:\w[\w ]{0,40})?[^\w]*[=_\-*~#⎯─━]{3,}\s*$"
                        r"|^\s*[=_\-*~#⎯─━]{3,}\s*$")
#: what an agent prints around a command's output (Codex's exec header, Claude's exit line)
_METADATA = re.compile(r"^\s*(?:Chunk ID:|Wall time:|Process exited with code|Process running with|"
                       r"Original token count:|Output:\s*$|Exit code:? -?\d+\s*$|"
                       r"Total output lines:)")
#: "ModuleNotFoundError: No module named 'x'": the most specific line there is
_EXCEPTION_LINE = re.compile(r"\b[A-Z]\w*(?:Error|Exception)\b: \S", re.MULTILINE)
_STRONG_ERROR = re.compile(
    r"^E\s+\S|^FAILED\s|^FAIL\s|\b[A-Z]\w*(?:Error|Exception)\b\s*:|^error(?:\[\w+\])?:|"
    r"^fatal:|npm ERR!|\berror TS\d+|^\s*(?:×|✗|✕)\s|Traceback|panicked at|^\s*●\s|"
    r"^--- FAIL:|^panic:|^not ok\b",
    re.MULTILINE,
)
#: Go's summary of a package that did not compile, and a compiler's ``file:line:col: message``
_BUILD_FAILED = re.compile(r"^FAIL\s+\S+\s+\[(?:build|setup) failed\]")
_DIAGNOSTIC = re.compile(r"^[\w./-]+\.\w+:\d+(?::\d+)?: \S", re.MULTILINE)
#: a source file's extension right after a name character; the name is then read leftwards
#: (a pattern that starts with ``[\w./-]*`` retries from every character of a long line)
_PATH_END = re.compile(r"(?<=[\w-])\.(?:py|ts|tsx|js|jsx|mjs|rs|go|rb|ex|exs|java|kt|cs|"
                       r"php|swift|c|cc|cpp|h|hpp|vue|svelte|toml|json|ya?ml|sql)\b")
_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_./-")


def mentioned_files(output: str, limit: int = 20) -> frozenset[str]:
    """Base names of the source files a failure's output names (head and tail only)."""
    names: list[str] = []
    text = _sample(output)
    for match in _PATH_END.finditer(text):
        start = match.start()
        while start > 0 and start > match.start() - 300 and (
                text[start - 1] in _NAME_CHARS or text[start - 1].isalnum()):
            start -= 1
        names.append(text[start:match.end()].rsplit("/", 1)[-1])
        if len(names) >= limit:
            break
    return frozenset(names)


def _texts(call: ToolCall) -> tuple[list[str], list[str]]:
    """Old and new texts of an edit call (clipped)."""
    old: list[str] = []
    new: list[str] = []

    def take(mapping: dict[str, Any]) -> None:
        for key in ("old_string", "old_str"):
            value = mapping.get(key)
            if isinstance(value, str):
                old.append(value[:_INPUT_CHARS])
        for key in _EDIT_TEXT_KEYS:
            value = mapping.get(key)
            if isinstance(value, str):
                new.append(value[:_INPUT_CHARS])

    take(call.input)
    edits = call.input.get("edits")
    if isinstance(edits, list):
        for edit in edits[:20]:
            if isinstance(edit, dict):
                take(edit)
    return old, new


def _patch_lines(patch: str) -> tuple[list[str], list[str]]:
    removed: list[str] = []
    added: list[str] = []
    for line in patch.splitlines():
        if line.startswith(("---", "+++", "***")):
            continue
        if line.startswith("-") and line[1:].strip():
            removed.append(line[1:].strip())
        elif line.startswith("+") and line[1:].strip():
            added.append(line[1:].strip())
    return removed, added


def edited_symbols(call: ToolCall) -> list[str]:
    """Names the edit defines or changes (functions, classes…)."""
    _old, new = _texts(call)
    names: list[str] = []
    for text in new:
        for match in _DEFINITION.finditer(text):
            if match.group(1) not in names:
                names.append(match.group(1))
    return names[:8]


def edit_essence(call: ToolCall, symbols: list[str]) -> str | None:
    """What an edit changed, in a few words: its symbols, or the first replaced line → new."""
    old, new = _texts(call)
    patch = call.input.get("input") or call.input.get("patch")
    if isinstance(patch, str) and not old:
        removed, added = _patch_lines(patch[:_INPUT_CHARS])
        old, new = ["\n".join(removed)], ["\n".join(added)]
    if symbols:
        return "changes " + ", ".join(f"`{s}`" for s in symbols[:3])
    for before, after in zip(old, new, strict=False):
        before_lines = [ln.strip() for ln in before.splitlines() if ln.strip()]
        after_lines = [ln.strip() for ln in after.splitlines() if ln.strip()]
        removed = [ln for ln in before_lines if ln not in after_lines]
        added = [ln for ln in after_lines if ln not in before_lines]
        if removed or added:
            was = shorten(removed[0], 60) if removed else ""
            now = shorten(added[0], 60) if added else "(removed)"
            return f"`{was}` → `{now}`" if was else f"added `{now}`"
    if new and not old:
        line = first_line(new[0], 60)
        return f"wrote `{line}`" if line else None
    return None


_FENCED = re.compile(r"^(```|~~~).*?^\1[^\n]*$", re.MULTILINE | re.DOTALL)
_EDIT_BLOCK = re.compile(r"^<{5,9} SEARCH.*?^>{5,9} REPLACE[^\n]*$", re.MULTILINE | re.DOTALL)
_THINKING = re.compile(r"<(thinking[\w-]*)[^>]*>.*?</\1>", re.DOTALL)
_UNCLOSED = re.compile(r"^(```|~~~).*\Z|<thinking[\w-]*[^>]*>.*\Z", re.MULTILINE | re.DOTALL)


_EDIT_FENCE = re.compile(r"^(```|~~~)[^\n]*\n(?:(?!^\1).)*?^<{5,9} SEARCH.*?^\1[^\n]*$",
                         re.MULTILINE | re.DOTALL)


def without_edits(text: str) -> str:
    """A reply without its edit blocks (Aider's SEARCH/REPLACE, fenced or not) and
    ``<thinking…>`` sections: what is left is what the agent answered."""
    if "<<<<" not in text and "<thinking" not in text:
        return text
    out = _EDIT_BLOCK.sub("", _EDIT_FENCE.sub("", text[:20_000]))
    return _THINKING.sub("", out).strip()


def prose(text: str) -> str:
    """A reply without its code: fenced blocks, SEARCH/REPLACE edit blocks and
    ``<thinking…>`` sections removed (what "Last reply" quotes is what the agent said)."""
    if "```" not in text and "~~~" not in text and "<<<<" not in text and "<thinking" not in text:
        return text
    out = _THINKING.sub("", _EDIT_BLOCK.sub("", _FENCED.sub("", text[:20_000])))
    return _UNCLOSED.sub("", out).strip()


_TEST_FAILED = re.compile(r"\b\d+ (?:failed|errors?)\b|^FAILED\b|^FAIL\b|\bTests?:\s+\d+ failed"
                          r"|\.{3,}\s*Failed\b|^--- FAIL", re.MULTILINE)
_TEST_PASSED = re.compile(r"\b\d+ passed\b|^ok\s|^PASS\b|\bTests?:\s+\d+ passed"
                          r"|\.{3,}\s*Passed\b|\bAll checks passed\b|\bno issues found\b"
                          r"|^Found 0 errors\b", re.MULTILINE)


def output_verdict(output: str) -> bool | None:
    """Whether a run passed, read from its output when no exit code was logged: a test or
    hook summary that reports failures (False) or only passes (True); else ``None``."""
    sample = _sample(output)
    if _TEST_FAILED.search(sample):
        return False
    if _TEST_PASSED.search(sample):
        return True
    return None
