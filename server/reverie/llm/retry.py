"""Retries with exponential backoff and full jitter, honouring ``Retry-After``.

Small and typed rather than a dependency: the policy needs exactly three things (which errors
retry, how long to wait, how to sleep in tests), and cancellation must pass straight through,
which plain ``await`` gives for free.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TypeVar

from reverie.llm.errors import LLMError

logger = logging.getLogger(__name__)

T = TypeVar("T")
Sleep = Callable[[float], Awaitable[None]]


@dataclass(frozen=True)
class RetryPolicy:
    """``max_retries`` extra attempts after the first; delays in seconds."""

    max_retries: int = 4
    base_delay: float = 0.5
    max_delay: float = 30.0
    max_retry_after: float = 120.0
    sleep: Sleep = asyncio.sleep
    rng: random.Random = field(default_factory=random.Random)

    def delay_for(self, attempt: int, error: LLMError) -> float:
        """Wait before retry number ``attempt`` (1-based).

        A server's ``Retry-After`` wins (capped at ``max_retry_after``); otherwise exponential
        backoff with jitter: a random point in the upper half of ``base * 2**(attempt-1)``.
        """
        if error.retry_after is not None and error.retry_after >= 0:
            return min(float(error.retry_after), self.max_retry_after)
        ceiling = min(self.max_delay, self.base_delay * 2.0 ** (attempt - 1))
        jitter: float = self.rng.random()
        return ceiling / 2 + jitter * ceiling / 2


async def with_retries(call: Callable[[], Awaitable[T]], policy: RetryPolicy) -> T:
    """Run ``call``; retry retryable ``LLMError``s up to ``policy.max_retries`` times."""
    attempt = 0
    while True:
        try:
            return await call()
        except LLMError as error:
            if not error.retryable or attempt >= policy.max_retries:
                raise
            attempt += 1
            delay = policy.delay_for(attempt, error)
            logger.info(
                "%s (retry %d of %d in %.1fs)", error.message, attempt, policy.max_retries, delay
            )
            await policy.sleep(delay)
