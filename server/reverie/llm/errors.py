"""Typed model-call errors. Each carries one human sentence naming the provider and the fix.

The text never contains the API key: every message built from a server response passes
``scrub`` with the key first, and no error keeps a reference to request headers.
"""

from __future__ import annotations

from reverie.errors import ReverieError, UserError


class LLMError(ReverieError):
    """A model call failed. ``str(err)`` is a sentence fit for a notification."""

    retryable: bool = False

    def __init__(
        self,
        message: str,
        *,
        provider: str = "",
        status: int | None = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.provider = provider
        self.status = status
        self.retry_after = retry_after

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.message!r}, status={self.status!r})"


class LLMConfigError(LLMError, UserError):
    """The provider is not usable as configured (no key, unknown provider, bad URL)."""


class LLMAuthError(LLMError, UserError):
    """401 / 403: the key is missing, wrong or lacks access."""


class LLMBadRequestError(LLMError):
    """4xx other than auth and rate limits: the request itself was refused."""


class LLMToolsUnsupportedError(LLMBadRequestError):
    """The endpoint refused a request because it offered tools: the job switches to the
    structured no-tools form (and the fact is remembered)."""


class LLMRateLimitError(LLMError):
    """429: retried with backoff, honouring ``Retry-After``."""

    retryable = True


class LLMServerError(LLMError):
    """5xx (including 529 overloaded): retried with backoff."""

    retryable = True


class LLMTimeoutError(LLMError):
    """Connect / read timeout: retried with backoff."""

    retryable = True


class LLMConnectionError(LLMError):
    """The endpoint could not be reached at all: retried with backoff."""

    retryable = True


class LLMStreamInterruptedError(LLMConnectionError):
    """A streamed reply ended (connection closed) before it was complete: retried."""


class LLMBadResponseError(LLMError):
    """The endpoint answered 2xx with something that is not the provider's format."""


class StructuredOutputError(LLMBadResponseError):
    """The reply did not match the requested schema, even after one repair attempt."""


class BatchUnsupportedError(LLMError):
    """The endpoint has no batch API (404/405 on the batch routes): use the synchronous path."""


def scrub(text: str, secret: str | None) -> str:
    """``text`` with every occurrence of ``secret`` (and of its tail, when long) masked."""
    if not secret:
        return text
    text = text.replace(secret, "***")
    if len(secret) >= 12:
        text = text.replace(secret[-8:], "***")
    return text
