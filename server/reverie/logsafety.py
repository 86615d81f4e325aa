"""Log lines pass ``redact`` too: a message, an argument or a traceback that quotes a secret
(a validation error echoing its input, a failing command line) is logged with it replaced."""

from __future__ import annotations

import logging


class RedactingFormatter(logging.Formatter):
    """Formats as usual, then redacts. The CLI's stderr handler and the language server's
    editor log handler use it. ``reverie.redact`` is imported on the first record, so a
    command that logs nothing does not pay for compiling the rules."""

    def format(self, record: logging.LogRecord) -> str:
        from reverie.redact import redact

        return redact(super().format(record))[0]
