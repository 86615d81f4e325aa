"""Sessions stored as one document the agent rewrites: the shape every editor reader returns.

VS Code's chat sessions, Cline's ``ui_messages.json`` and Continue's session files are rewritten
whole (or, for VS Code's newer log, appended and compacted) whenever anything changes, even a
streamed token. A reader parses the file into ``Unit``s, one per record of the agent's own (a
chat request, a UI message, a history item), each with a digest of its raw JSON. A tail keeps
the digests it has seen (``tail.TranscriptTail``) and rebuilds only the units whose digest
changed, so re-reading a rewritten file costs one JSON parse plus hashing, and only new or
changed messages are reported: a message that changed is reported again under its old id.
"""

from __future__ import annotations

import gc
import hashlib
import json
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import orjson

from reverie.transcripts.model import Message, ParseStats, Session

#: a message text longer than this is cut (a pasted log, a whole file): counted as a skip
MAX_TEXT_CHARS = 256 * 1024
#: a tool output longer than this is cut (no skip: outputs are routinely long)
MAX_OUTPUT_CHARS = 16 * 1024


@dataclass(slots=True)
class Unit:
    """One record of the document: its stable key, the digest of its raw JSON, and how to
    turn it into messages (called only when the digest is new)."""

    key: str
    digest: str
    build: Callable[[], list[Message]]


@dataclass(slots=True)
class EditorDocument:
    """A parsed session document. ``complete`` is False when the file was caught half-written
    (the caller keeps what it had and reads again on the next change)."""

    session: Session
    stats: ParseStats
    units: list[Unit] = field(default_factory=list)
    complete: bool = True

    def messages(self) -> list[Message]:
        out: list[Message] = []
        for unit in self.units:
            out.extend(unit.build())
        return out


def digest_of(value: Any, *context: Any) -> str:
    """A short stable hash of a JSON value (plus what else its conversion depends on)."""
    try:
        raw = orjson.dumps([value, *context])
    except TypeError:  # lone surrogates from a lenient parse: fall back to escaped JSON
        raw = json.dumps([value, *context], ensure_ascii=True, default=str).encode()
    return hashlib.blake2b(raw, digest_size=10).hexdigest()


#: documents at least this big are parsed with the cyclic garbage collector paused
_NO_GC_BYTES = 1024 * 1024


@contextmanager
def _collector_paused(size: int) -> Iterator[None]:
    """Parsing a big document allocates a million containers, all alive and acyclic; letting
    the collector run meanwhile makes it walk every object of the process again and again
    (a 5 MB session: 260 ms parsing instead of 70 ms). Pausing it for the parse is safe."""
    paused = size >= _NO_GC_BYTES and gc.isenabled()
    if paused:
        gc.disable()
    try:
        yield
    finally:
        if paused:
            gc.enable()


def load_json(data: bytes) -> tuple[Any, str | None]:
    """``(value, None)``, or ``(None, reason)`` for a document that is not valid JSON (most
    often one caught while the agent rewrites it). Stray non-UTF-8 bytes are replaced."""
    try:
        with _collector_paused(len(data)):
            return orjson.loads(data), None
    except orjson.JSONDecodeError:
        pass
    text = data.decode("utf-8", "replace")
    try:
        return orjson.loads(text), None
    except orjson.JSONDecodeError:
        pass
    try:  # lone surrogate escapes (``"\\ud800"``), which orjson refuses: replaced
        value = json.loads(text)
        clean = json.dumps(value, ensure_ascii=False).encode("utf-8", "replace")
        return orjson.loads(clean), None
    except (json.JSONDecodeError, orjson.JSONDecodeError, RecursionError, ValueError) as exc:
        reason = exc.msg if isinstance(exc, json.JSONDecodeError) else "nested too deeply"
        return None, f"not a valid JSON document ({reason})"


#: comments and trailing commas of VS Code's JSON with comments (settings, workspaces)
_JSONC_NOISE = re.compile(r'("(?:[^"\\]|\\.)*")|//[^\n]*|/\*.*?\*/', re.DOTALL)
_TRAILING_COMMA = re.compile(r",(\s*[}\]])")


def load_jsonc(data: bytes) -> tuple[Any, str | None]:
    """``load_json`` for VS Code's JSON with comments (``settings.json``, ``.code-workspace``):
    strict JSON first, then with comments and trailing commas taken out."""
    value, why = load_json(data)
    if why is None:
        return value, None
    text = data.decode("utf-8", "replace")
    stripped = _JSONC_NOISE.sub(lambda m: m.group(1) or "", text)
    return load_json(_TRAILING_COMMA.sub(r"\1", stripped).encode())


def capped(text: str, stats: ParseStats | None, what: str, limit: int = MAX_TEXT_CHARS) -> str:
    """``text`` cut to ``limit`` characters; with ``stats``, a cut counts as a skip."""
    if len(text) <= limit:
        return text
    if stats is not None:
        stats.skip(f"{what}: {len(text)} characters cut to {limit}")
    return text[:limit] + f"\n[… {len(text) - limit} more characters not read]"
