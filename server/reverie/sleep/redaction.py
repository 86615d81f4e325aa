"""One place where sleep passes text through ``reverie.redact`` before a model call or a write."""

from __future__ import annotations

from reverie.redact import redact


def redact_text(text: str) -> str:
    """``text`` with secrets replaced (the count is not needed here)."""
    cleaned, _count = redact(text)
    return cleaned
