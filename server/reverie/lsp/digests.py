"""The message digests of recently active sessions: all the server keeps of a conversation."""

from __future__ import annotations

import logging
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from reverie.background import Runner
    from reverie.session_memory.source import TranscriptConversation
    from reverie.transcripts.digest import MessageDigest
    from reverie.transcripts.discovery import SessionRef
    from reverie.transcripts.model import Session

logger = logging.getLogger(__name__)

#: sessions whose digests are kept (a digest is a few hundred bytes per message)
MAX_TRACKED_SESSIONS = 16


@dataclass
class _Tracked:
    session: Session
    digests: list[MessageDigest]
    ids: set[str] = field(default_factory=set)


class ConversationDigests:
    """Message digests of recently active sessions: all the server keeps of a conversation.

    Filled from the transcript (read and parsed in the parse worker process) on a session's first
    append, then extended by appended digests (cost proportional to the append); least recently
    used sessions are dropped and read again if they become active again. The messages
    themselves are read from the transcript only when an extraction runs
    (``session_memory.source.TranscriptConversation``).
    """

    def __init__(
        self, run: Runner, job_run: Runner | None = None, size: int = MAX_TRACKED_SESSIONS
    ) -> None:
        self._run = run
        self._job_run = job_run
        self._size = size
        self._sessions: OrderedDict[str, _Tracked] = OrderedDict()

    async def extend(
        self, ref: SessionRef, session: Session, appended: list[MessageDigest]
    ) -> tuple[TranscriptConversation, bool]:
        """The whole conversation, and whether ``appended`` brought anything not seen before
        (the same messages can be reported twice, e.g. a pushed chat and then its transcript)."""
        key = _key(ref)
        tracked = self._sessions.get(key)
        fresh = tracked is None
        if tracked is None:
            try:
                _session, digests, ids = await self._read(ref)
            except Exception as exc:  # unreadable now: start from what was appended
                logger.warning("cannot read %s: %s", ref.path, exc)
                digests, ids = [], set()
            tracked = _Tracked(session, digests, ids)
            self._put(key, tracked)
        tracked.session = session
        new = [d for d in appended if d.id not in tracked.ids]
        tracked.digests.extend(new)
        tracked.ids.update(d.id for d in new)
        self._sessions.move_to_end(key)
        return self._conversation(ref, tracked), fresh or bool(new)

    async def get(self, ref: SessionRef) -> tuple[Session, TranscriptConversation]:
        key = _key(ref)
        tracked = self._sessions.get(key)
        if tracked is None:
            session, digests, ids = await self._read(ref)
            tracked = _Tracked(session, digests, ids)
            self._put(key, tracked)
        self._sessions.move_to_end(key)
        return tracked.session, self._conversation(ref, tracked)

    def _conversation(self, ref: SessionRef, tracked: _Tracked) -> TranscriptConversation:
        from reverie.session_memory.source import TranscriptConversation

        return TranscriptConversation(
            ref.path, ref.session_id, tracked.digests, self._run, self._job_run
        )

    async def _read(self, ref: SessionRef) -> tuple[Session, list[MessageDigest], set[str]]:
        """The session's digests, read in the worker process, unpacked in a background thread
        (``digest.pack_digests``: nothing long-running on the event loop)."""
        from reverie.background import run_in_background
        from reverie.session_memory.source import load_packed_digests

        session, packed = await self._run(load_packed_digests, ref.path, ref.session_id)
        digests, ids = await run_in_background(_unpack, packed)
        return session, digests, ids

    def _put(self, key: str, tracked: _Tracked) -> None:
        self._sessions[key] = tracked
        while len(self._sessions) > self._size:
            self._sessions.popitem(last=False)


def _unpack(packed: list[bytes]) -> tuple[list[MessageDigest], set[str]]:
    from reverie.transcripts.digest import unpack_digests

    digests = unpack_digests(packed)
    return digests, {d.id for d in digests}


def _key(ref: SessionRef) -> str:
    return f"{ref.path}::{ref.session_id}"
