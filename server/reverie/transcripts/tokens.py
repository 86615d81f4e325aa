"""Token counting used the same way everywhere: recorded usage where present, else ~chars/4.

``context_tokens`` is what session memory's thresholds compare against: the context size the
agent last reported, plus an estimate for everything said since.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from reverie.transcripts.estimate import content_tokens
from reverie.transcripts.estimate import estimate_tokens as estimate_tokens
from reverie.transcripts.model import Message, Usage


def message_tokens(msg: Message) -> int:
    """Estimated tokens of one message: its text, tool inputs and tool outputs."""
    return content_tokens(msg.text, ((c.name, c.input) for c in msg.tool_calls),
                          (r.output for r in msg.tool_results))


def context_tokens(messages: Sequence[Message]) -> int:
    """The last recorded usage's context size plus estimates for the messages after it.

    Lines of the same API response as that usage are not estimated again. Without any
    recorded usage, the estimate of every message.
    """
    for index in range(len(messages) - 1, -1, -1):
        usage = messages[index].usage
        if usage is None or usage.context_tokens == 0:
            continue  # an empty or all-zero record (an API error's ``<synthetic>`` reply)
        api_id = messages[index].api_message_id
        tail = sum(
            message_tokens(m)
            for m in messages[index + 1:]
            if api_id is None or m.api_message_id != api_id
        )
        return usage.context_tokens + tail
    return sum(message_tokens(m) for m in messages)


def usage_totals(messages: Iterable[Message]) -> Usage:
    """The session's token usage: each API response counted once, at its final (last recorded)
    figure; a usage without a response id counts on its own."""
    by_response: dict[str, Usage] = {}
    total = Usage()
    for message in messages:
        usage = message.usage
        if usage is None:
            continue
        if message.api_message_id is None:
            total = total + usage
        else:
            by_response[message.api_message_id] = usage
    for usage in by_response.values():
        total = total + usage
    return total
