"""Reverie's error types."""


class ReverieError(Exception):
    """Base of every error Reverie raises on purpose."""


class UserError(ReverieError):
    """Something the person must fix (a bad argument, an entry that does not exist)."""
