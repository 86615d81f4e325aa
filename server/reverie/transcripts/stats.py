"""The ``reverie transcript --stats`` summary of a transcript (a CLI contract: keep the keys).

``StatsFold`` computes it in one pass over messages as they are parsed, keeping only counts,
the file set and the messages after the last recorded usage, so ``--stats`` on a transcript of
hundreds of MB neither holds every message nor makes the garbage collector walk them.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from reverie.transcripts.model import Message, ParseStats, Session, Transcript
from reverie.transcripts.tokens import message_tokens


def files_touched(transcript: Transcript) -> list[str]:
    """Sorted, unique file paths named by the transcript's tool calls, and by results that
    report the files they changed (Codex patches)."""
    fold = StatsFold()
    fold.feed_all(transcript.messages)
    return sorted(fold.files)


def tool_error_ids(transcript: Transcript) -> set[str]:
    """Call ids with at least one error result (an agent may log several results per call)."""
    return {r.call_id for m in transcript.messages for r in m.tool_results if r.is_error}


class StatsFold:
    """The stats of a message stream, folded one message at a time."""

    def __init__(self) -> None:
        self.messages = 0
        self.tool_calls = 0
        self.files: set[str] = set()
        self.error_ids: set[str] = set()
        #: context size of the last recorded usage, its response id, and what came after it
        self._usage_tokens: int | None = None
        self._usage_api: str | None = None
        self._after_usage: list[Message] = []

    def feed(self, message: Message) -> None:
        self.messages += 1
        self.tool_calls += len(message.tool_calls)
        for call in message.tool_calls:
            self.files.update(call.file_paths)
        for result in message.tool_results:
            self.files.update(result.file_paths)
            if result.is_error:
                self.error_ids.add(result.call_id)
        if message.usage is not None and message.usage.context_tokens:
            # an all-zero record (an API error's reply) measures nothing (tokens.context_tokens)
            self._usage_tokens = message.usage.context_tokens
            self._usage_api = message.api_message_id
            self._after_usage.clear()
        elif (self._usage_tokens is None or self._usage_api is None
              or message.api_message_id != self._usage_api):
            self._after_usage.append(message)

    def feed_all(self, messages: Iterable[Message]) -> StatsFold:
        for message in messages:
            self.feed(message)
        return self

    def tokens(self) -> int:
        """As ``tokens.context_tokens``: the last usage plus estimates of what followed it."""
        tail = sum(message_tokens(m) for m in self._after_usage)
        return tail if self._usage_tokens is None else self._usage_tokens + tail

    def result(self, session: Session, stats: ParseStats) -> dict[str, Any]:
        return {
            "agent": session.agent,
            "session_id": session.id,
            "messages": self.messages,
            "tool_calls": self.tool_calls,
            "tool_errors": len(self.error_ids),
            "files": sorted(self.files),
            "tokens": self.tokens(),
            "lines": stats.lines,
            "skipped": stats.skipped,
            "errors": list(stats.errors),
        }


def transcript_stats(transcript: Transcript) -> dict[str, Any]:
    return StatsFold().feed_all(transcript.messages).result(transcript.session, transcript.stats)
