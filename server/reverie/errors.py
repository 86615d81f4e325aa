"""The root of Reverie's exceptions, and the line between "you must fix this" and "a bug".

Every exception Reverie raises on purpose derives from ``ReverieError``. Those a person can act
on (a busy lock, an unknown run id, a memory dir that is a symlink, a bad argument, a missing
API key) derive from ``UserError``: the front ends show ``str(error)`` as one line (the CLI on
stderr with exit code 1, the language server as a ``RequestFailed`` refusal logged at info).
Anything else that escapes a use case is a defect: it is logged with its traceback and reported
as an internal error, never dressed up as a refusal.
"""

from __future__ import annotations


class ReverieError(Exception):
    """An error Reverie raised on purpose. ``str(error)`` is one sentence."""


class UserError(ReverieError):
    """Something a person must fix or wait for; ``str(error)`` says what, in one line."""


__all__ = ["ReverieError", "UserError"]
