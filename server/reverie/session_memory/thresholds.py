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
from reverie.session_memory.cursor import count_tool_calls_since, last_turn_has_tool_calls
from reverie.session_memory.state import ExtractionState
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
