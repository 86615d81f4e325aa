"""Reverie's error base classes (minimal until the house lane's ``errors.py`` lands)."""

from __future__ import annotations


class ReverieError(Exception):
    """Base of every error Reverie raises on purpose."""


class UserError(ReverieError):
    """Something a person must fix; the message says what, in one line."""
