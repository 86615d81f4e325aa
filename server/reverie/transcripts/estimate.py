"""Token estimates from plain values: about four characters per token.

Without model objects, so that ``tokens.message_tokens`` and the Claude Code ``--stats`` fold
(``claude_stats``, which builds no ``Message``) estimate with the same arithmetic.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import orjson


def estimate_tokens(text: str) -> int:
    """About four characters per token, rounded, as the spec counts."""
    return round(len(text) / 4)


def content_tokens(text: str, calls: Iterable[tuple[str, dict[str, Any]]],
                   outputs: Iterable[str]) -> int:
    """Estimated tokens of one message: its ``text``, its tool ``calls`` (name, input) and
    its tool results' ``outputs``."""
    chars = len(text)
    for name, tool_input in calls:
        chars += len(name)
        if tool_input:
            chars += len(orjson.dumps(tool_input, default=str))
    for output in outputs:
        chars += len(output)
    return round(chars / 4)
