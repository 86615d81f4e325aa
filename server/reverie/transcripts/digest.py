"""Message digests: the few facts per message that session memory's thresholds need.

The language server parses transcripts in a worker process and gets back digests instead of
whole ``Message`` objects: a digest is a small tuple (cheap to pickle, cheap to keep), so the
server's own process never holds the GIL for a big append and never keeps a long conversation
in memory. The full messages are read again only when an extraction actually runs.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

import orjson

from reverie.transcripts.model import Message, Session
from reverie.transcripts.tokens import message_tokens

if TYPE_CHECKING:
    from reverie.transcripts.discovery import SessionRef


class MessageDigest(NamedTuple):
    """What thresholds and cursors know of one message."""

    id: str
    role: str
    is_sidechain: bool
    #: ``message_fingerprint``: what a memory cursor points at
    fingerprint: str
    #: number of tool calls the message makes
    tool_calls: int
    #: the recorded usage's context size, when the message carries usage
    usage_tokens: int | None
    api_message_id: str | None
    #: estimated tokens of the message (``message_tokens``)
    tokens: int


def message_fingerprint(message: Message) -> str:
    """The message's id when it has one, else a hash of what it says (stable across reads)."""
    if message.id:
        return f"id:{message.id}"
    payload = {
        "role": message.role,
        "text": message.text,
        "calls": [[c.id, c.name] for c in message.tool_calls],
        "results": [r.call_id for r in message.tool_results],
    }
    raw = json.dumps(payload, sort_keys=True, ensure_ascii=False)
    return "sha256:" + hashlib.sha256(raw.encode("utf-8", "surrogatepass")).hexdigest()


def digest(message: Message) -> MessageDigest:
    usage = message.usage
    return MessageDigest(
        id=message.id,
        role=message.role,
        is_sidechain=message.is_sidechain,
        fingerprint=message_fingerprint(message),
        tool_calls=len(message.tool_calls),
        usage_tokens=None if usage is None else usage.context_tokens,
        api_message_id=message.api_message_id,
        tokens=message_tokens(message),
    )


def digests(messages: Iterable[Message]) -> list[MessageDigest]:
    return [digest(m) for m in messages]


#: digests per packed chunk (decoding one takes well under a millisecond)
PACK_CHUNK = 1_000


def pack_digests(items: Sequence[MessageDigest]) -> list[bytes]:
    """Digests as a few JSON byte strings, to cross from a worker process.

    Unpickling a list of 20,000 digest tuples takes 50-150 ms in C, under the receiving
    process's GIL, in one go: in the language server that stalled the event loop. Byte strings
    unpickle at once, and ``unpack_digests`` decodes them chunk by chunk in a thread, where the
    interpreter can switch to the event loop between chunks.
    """
    return [
        orjson.dumps([list(d) for d in items[start : start + PACK_CHUNK]])
        for start in range(0, len(items), PACK_CHUNK)
    ]


def unpack_digests(chunks: Iterable[bytes]) -> list[MessageDigest]:
    out: list[MessageDigest] = []
    for chunk in chunks:
        out.extend(MessageDigest._make(row) for row in orjson.loads(chunk))
    return out


def pushed_session_digests(path: Path) -> tuple[SessionRef, Session, list[MessageDigest]] | None:
    """A pushed chat (a generic transcript) as the watcher would report it: its ref, session
    and digests. Run in the language server's parse worker process."""
    from reverie.transcripts.discovery import generic_ref
    from reverie.transcripts.reader import load_transcript

    ref = generic_ref(path)
    if ref is None:
        return None
    transcript = load_transcript(path)
    return ref, transcript.session, digests(transcript.messages)
