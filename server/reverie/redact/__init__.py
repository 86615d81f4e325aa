"""Secret redaction: applied to every string before any model call and before any write.

One component, one entry point: ``redact(text) -> (clean text, secrets replaced)``. Every other
module calls it (or ``redact_value`` for JSON-shaped tool inputs); nothing else decides what a
secret is. The rules are data (``rules``: vendor tokens and context patterns; ``structure``:
credentials by the structure around their name; ``entropy``: the second, independent layer
for random values no rule names), run by one engine (``scan``). What they cover and what they
deliberately leave out: ``docs/security.md`` ("Secrets and redaction").
"""

from __future__ import annotations

from reverie.redact.rules import MARKER_PREFIX, kinds, redaction_marker
from reverie.redact.scan import redact, redact_value

__all__ = ["MARKER_PREFIX", "kinds", "redact", "redact_value", "redaction_marker"]
