"""Managed blocks: the only text Reverie ever adds to a file the user owns.

A block sits between a begin and an end marker line that name it (``ID``: agent and project),
so several blocks (agents, workspaces) can share one file and each is found again exactly.
Text outside the markers is never changed. Adding a block appends it at the end, after a blank
line; ``remove_block`` takes away the block and exactly the separator that was added, so a file
whose only change was the block comes back byte for byte. The file's line ending (LF or CRLF)
is kept. Unbalanced markers are a ``BlockError``: nothing is written then.

A body is memory text, which came from transcripts: it must not be able to end the block early
or hide what follows it. ``neutralise`` escapes every Reverie marker word and, in Markdown, every
HTML comment opener and closer in it (CommonMark backslash escapes: an agent reading the raw
file sees them escaped, a rendered view shows the text as written).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from reverie.errors import UserError

CommentStyle = Literal["html", "hash"]


class BlockError(UserError):
    """The file's managed block is damaged (unbalanced or repeated markers)."""


@dataclass(frozen=True, slots=True)
class Markers:
    begin: str
    end: str


def markers(block_id: str, style: CommentStyle) -> Markers:
    if style == "html":
        return Markers(f"<!-- reverie:begin {block_id} -->", f"<!-- reverie:end {block_id} -->")
    return Markers(f"# reverie:begin {block_id}", f"# reverie:end {block_id}")


def newline_of(text: str) -> str:
    """The file's line ending: CRLF when its first line ends so, else LF."""
    first = text.find("\n")
    return "\r\n" if first > 0 and text[first - 1] == "\r" else "\n"


def _marker_lines(text: str, marker: str) -> list[tuple[int, int]]:
    """(start, end-with-newline) offsets of each whole line equal to ``marker``."""
    found = []
    for match in re.finditer(r"^[ \t]*" + re.escape(marker) + r"[ \t]*(\r?\n|$)", text, re.M):
        found.append((match.start(), match.end()))
    return found


def find_block(text: str, block_id: str, style: CommentStyle) -> tuple[int, int] | None:
    """Offsets of the block (begin line through end line and its newline), or None."""
    mark = markers(block_id, style)
    begins = _marker_lines(text, mark.begin)
    ends = _marker_lines(text, mark.end)
    if not begins and not ends:
        return None
    if len(begins) != 1 or len(ends) != 1 or ends[0][0] < begins[0][1]:
        raise BlockError(
            f"Reverie's managed block '{block_id}' is damaged ({len(begins)} begin and "
            f"{len(ends)} end marker(s)); fix or delete its marker lines by hand"
        )
    return begins[0][0], ends[0][1]


_MARKER_WORD = re.compile(r"reverie:(begin|end)", re.IGNORECASE)
_COMMENT_OPEN = re.compile(r"<!(?=--)")
#: ``@path`` where Claude Code would import a file into the session (``@~/.aws/credentials``)
_IMPORT = re.compile(r"(?<![\w`@])@(?=[~/.]|[\w.-]+/)[^\s`]+")


def neutralise(body: str, style: CommentStyle) -> str:
    """``body`` with nothing in it that a marker search or an HTML comment could take for
    structure: ``reverie:end`` becomes ``reverie\\:end``; in Markdown ``<!--`` becomes
    ``<\\!--`` and ``-->`` becomes ``--\\>``."""
    body = _MARKER_WORD.sub(lambda m: m.group(0)[:7] + "\\:" + m.group(1), body)
    if style == "html":
        body = _COMMENT_OPEN.sub("<\\\\!", body)
        body = re.sub(r"-->", "--\\\\>", body)
    return body


def neutralise_imports(text: str) -> str:
    """``text`` with each ``@path`` in a code span, where Claude Code does not import it.

    Claude Code reads ``@path`` in CLAUDE.md files as "load this file too", anywhere outside
    code spans and fenced blocks. Memory text copied into such a file must never do that: a
    transcript saying ``@~/.aws/credentials`` would put the credentials in every session."""
    out: list[str] = []
    fenced = False
    for line in text.split("\n"):
        if line.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
        if fenced or "@" not in line:
            out.append(line)
            continue
        pieces = line.split("`")
        for index in range(0, len(pieces), 2):  # outside code spans only
            pieces[index] = _IMPORT.sub(lambda m: f"`{m.group(0)}`", pieces[index])
        out.append("`".join(pieces))
    return "\n".join(out)


def render_block(block_id: str, body: str, style: CommentStyle, newline: str) -> str:
    """The block's full text (markers included), every line ending with ``newline``."""
    mark = markers(block_id, style)
    lines = [mark.begin, *neutralise(body, style).rstrip("\n").splitlines(), mark.end]
    return newline.join(line.rstrip("\r") for line in lines) + newline


def separator_for(text: str, newline: str) -> str:
    """What goes between existing text and an appended block: a blank line."""
    if not text:
        return ""
    return newline if text.endswith("\n") else newline + newline


def upsert_block(text: str, block_id: str, body: str, style: CommentStyle) -> tuple[str, str]:
    """``text`` with the block set to ``body``; returns (new text, separator added or "")."""
    newline = newline_of(text)
    block = render_block(block_id, body, style, newline)
    span = find_block(text, block_id, style)
    if span is not None:
        start, end = span
        old = text[start:end]
        if not old.endswith("\n"):  # the end marker was the last line, without a newline
            block = block[: -len(newline)]
        return text[:start] + block + text[end:], ""
    sep = separator_for(text, newline)
    return text + sep + block, sep


def replace_body(text: str, block_id: str, body: str, style: CommentStyle) -> str | None:
    """``text`` with an existing block's body replaced; None when there is no block."""
    if find_block(text, block_id, style) is None:
        return None
    return upsert_block(text, block_id, body, style)[0]


def remove_block(text: str, block_id: str, style: CommentStyle, separator: str | None) -> str:
    """``text`` without the block and the separator that was added before it.

    ``separator`` is what ``upsert_block`` returned at connect time (None when unknown: then
    one blank line before the block is taken as the separator).
    """
    span = find_block(text, block_id, style)
    if span is None:
        return text
    start, end = span
    before, after = text[:start], text[end:]
    if separator is None:
        newline = newline_of(text)
        separator = newline if before.endswith(newline + newline) or before == newline else ""
    if separator and before.endswith(separator):
        before = before[: -len(separator)]
        if after and before and not before.endswith("\n"):
            # text was added after the block: never join two lines of the user's
            before += newline_of(text)
    return before + after
