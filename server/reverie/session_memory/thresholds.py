"""When an extraction is due.

First extraction once the conversation's context reaches ``init_tokens`` (10,000). After that, an
extraction needs at least ``update_tokens`` (5,000) new tokens since the last one AND either
``tool_calls`` (3) tool calls since the last check that triggered, or a natural break (the last
assistant turn made no tool calls).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from reverie.config import Settings
from reverie.session_memory.cursor import (
    MessageCursor,
    count_tool_calls_since,
    last_turn_has_tool_calls,
)
from reverie.session_memory.state import ExtractionState
from reverie.transcripts.digest import MessageDigest
from reverie.transcripts.model import Message


@dataclass(frozen=True, slots=True)
class ThresholdConfig:
    init_tokens: int = 10_000
    update_tokens: int = 5_000
    tool_calls: int = 3

    @classmethod
    def from_settings(cls, settings: Settings) -> ThresholdConfig:
        return cls(
            init_tokens=settings.session_memory_init_tokens,
            update_tokens=settings.session_memory_update_tokens,
            tool_calls=settings.session_memory_tool_calls,
        )


@dataclass(frozen=True, slots=True)
class ThresholdDecision:
    due: bool
    tokens: int
    new_tokens: int
    tool_calls_since: int
    natural_break: bool
    why: str

    def describe(self) -> dict[str, object]:
        return {
            "tokens": self.tokens,
            "new_tokens": self.new_tokens,
            "tool_calls_since": self.tool_calls_since,
            "natural_break": self.natural_break,
            "why": self.why,
        }


def evaluate(
    messages: Sequence[Message],
    state: ExtractionState,
    config: ThresholdConfig,
    current_tokens: int,
) -> ThresholdDecision:
    """Decide without changing anything (``mark_due`` records a positive decision)."""
    tool_calls = count_tool_calls_since(messages, state.last_memory_cursor)
    natural_break = bool(messages) and not last_turn_has_tool_calls(messages)
    new_tokens = current_tokens - state.tokens_at_last_extraction
    if not state.initialized and current_tokens < config.init_tokens:
        return ThresholdDecision(
            False, current_tokens, new_tokens, tool_calls, natural_break,
            f"context {current_tokens} < {config.init_tokens} tokens to start",
        )
    if new_tokens < config.update_tokens:
        return ThresholdDecision(
            False, current_tokens, new_tokens, tool_calls, natural_break,
            f"{new_tokens} new tokens < {config.update_tokens}",
        )
    if tool_calls >= config.tool_calls:
        why = f"{new_tokens} new tokens and {tool_calls} tool calls"
        return ThresholdDecision(True, current_tokens, new_tokens, tool_calls, natural_break, why)
    if natural_break:
        why = f"{new_tokens} new tokens at a natural break"
        return ThresholdDecision(True, current_tokens, new_tokens, tool_calls, natural_break, why)
    return ThresholdDecision(
        False, current_tokens, new_tokens, tool_calls, natural_break,
        f"{tool_calls} tool calls < {config.tool_calls} and the agent is mid tool loop",
    )


class ThresholdCounter:
    """What ``evaluate`` needs, kept up to date as a conversation grows, for one session.

    It works on message digests (``reverie.transcripts.digest``), which is all the language
    server keeps of a conversation. ``evaluate`` rescans the whole conversation; a session that
    grows by small appends would pay O(conversation) per append (O(n^2) overall). The counter
    folds in only the digests appended since its last call when it is given the same, longer
    list again (the server extends one list per session in place); any other list, or a cursor
    moved behind its back, triggers one full rescan.
    """

    def __init__(self) -> None:
        self._list_id = 0
        self._seen = 0
        self._last: MessageDigest | None = None
        self._cursor: object = None
        self._reset()

    def _reset(self) -> None:
        self._seen = 0
        self._last = None
        self._tool_calls = 0
        self._occurrences: dict[str, int] = {}
        self._last_main: MessageDigest | None = None
        self._main_count = 0
        self._base_tokens = 0
        self._usage_api_id: str | None = None
        self._tail_tokens = 0
        self._any_usage = False
        self._turn_api_id: str | None = None
        self._turn_calls = False
        self._prev_assistant = False

    def evaluate(
        self, digests: Sequence[MessageDigest], state: ExtractionState, config: ThresholdConfig
    ) -> tuple[ThresholdDecision, MessageCursor | None]:
        """The same decision as ``evaluate(main_chain(messages), ...)``, and the cursor of the
        last main-chain message (what ``state.last_memory_cursor`` becomes when it is due)."""
        self._catch_up(digests, state)
        tokens = self._base_tokens + self._tail_tokens if self._any_usage else self._tail_tokens
        natural_break = self._main_count > 0 and not self._turn_calls
        new_tokens = tokens - state.tokens_at_last_extraction
        calls = self._tool_calls
        cursor = None
        if self._last_main is not None:
            fp = self._last_main.fingerprint
            cursor = MessageCursor(fingerprint=fp, occurrence=self._occurrences.get(fp, 1))
        if not state.initialized and tokens < config.init_tokens:
            why = f"context {tokens} < {config.init_tokens} tokens to start"
            return ThresholdDecision(False, tokens, new_tokens, calls, natural_break, why), cursor
        if new_tokens < config.update_tokens:
            why = f"{new_tokens} new tokens < {config.update_tokens}"
            return ThresholdDecision(False, tokens, new_tokens, calls, natural_break, why), cursor
        if calls >= config.tool_calls:
            why = f"{new_tokens} new tokens and {calls} tool calls"
            return ThresholdDecision(True, tokens, new_tokens, calls, natural_break, why), cursor
        if natural_break:
            why = f"{new_tokens} new tokens at a natural break"
            return ThresholdDecision(True, tokens, new_tokens, calls, natural_break, why), cursor
        why = f"{calls} tool calls < {config.tool_calls} and the agent is mid tool loop"
        return ThresholdDecision(False, tokens, new_tokens, calls, natural_break, why), cursor

    def pending(self, digests: Sequence[MessageDigest], state: ExtractionState) -> int:
        """How many digests the next ``evaluate`` of ``digests`` has to fold in."""
        return len(digests) - self._seen if self._same(digests, state) else len(digests)

    def mark_due(self, state: ExtractionState, cursor: MessageCursor | None) -> None:
        """Record a positive decision: tool calls count again from the last message."""
        state.initialized = True
        state.last_memory_cursor = cursor
        self._cursor = cursor
        self._tool_calls = 0

    def _same(self, digests: Sequence[MessageDigest], state: ExtractionState) -> bool:
        """``digests`` is the list seen last time, grown (and the cursor is still ours)."""
        return (
            id(digests) == self._list_id
            and len(digests) >= self._seen
            and (self._seen == 0 or digests[self._seen - 1] is self._last)
            and state.last_memory_cursor is self._cursor
        )

    def _catch_up(self, digests: Sequence[MessageDigest], state: ExtractionState) -> None:
        same = self._same(digests, state)
        if not same:
            self._reset()
            self._list_id = id(digests)
            self._cursor = state.last_memory_cursor
        # a rescan looks for the cursor: tool calls count after it (unknown or gone: all)
        cursor = None if same else state.last_memory_cursor
        self._fold(digests, self._seen, cursor)
        self._seen = len(digests)
        self._last = digests[-1] if digests else None

    def _fold(
        self, digests: Sequence[MessageDigest], start: int, cursor: MessageCursor | None
    ) -> None:
        """Fold ``digests[start:]`` in. One tight loop over locals: it runs on the event loop
        for every append (about 0.25 us a message)."""
        occurrences = self._occurrences
        tool_calls, main_count, last_main = self._tool_calls, self._main_count, self._last_main
        base, usage_api, tail = self._base_tokens, self._usage_api_id, self._tail_tokens
        any_usage, prev_assistant = self._any_usage, self._prev_assistant
        turn_api, turn_calls = self._turn_api_id, self._turn_calls
        for index in range(start, len(digests)):
            item = digests[index]
            _id, role, sidechain, fp, calls, usage, api, tokens = item
            if sidechain:
                continue
            seen = occurrences[fp] = occurrences.get(fp, 0) + 1
            last_main = item
            main_count += 1
            # context size: the last recorded usage plus estimates after it (context_tokens)
            if usage:  # an all-zero record (Claude's ``<synthetic>`` error reply) says nothing
                any_usage, base, usage_api, tail = True, usage, api, 0
            elif not any_usage or usage_api is None or api != usage_api:
                tail += tokens
            # the last assistant turn: trailing assistant records sharing one api_message_id
            assistant = role == "assistant"
            if not assistant:
                prev_assistant = False
            elif api is not None and prev_assistant and api == turn_api:
                turn_calls = turn_calls or calls > 0
            else:
                turn_api, turn_calls, prev_assistant = api, calls > 0, True
            if cursor is not None and fp == cursor.fingerprint and seen == cursor.occurrence:
                tool_calls = 0  # the cursor: count from here
                cursor = None  # found
                continue
            if assistant:
                tool_calls += calls
        if cursor is not None:  # the cursor is gone: count everything
            tool_calls = sum(
                d.tool_calls for d in digests if not d.is_sidechain and d.role == "assistant"
            )
        self._tool_calls, self._main_count, self._last_main = tool_calls, main_count, last_main
        self._base_tokens, self._usage_api_id, self._tail_tokens = base, usage_api, tail
        self._any_usage, self._prev_assistant = any_usage, prev_assistant
        self._turn_api_id, self._turn_calls = turn_api, turn_calls
