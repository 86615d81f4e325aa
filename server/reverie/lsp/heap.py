"""Keeping the cyclic garbage collector's pauses short in a long-running server.

The server holds many long-lived objects: the parsed conversations of the active sessions (a
100 MB transcript is millions of pydantic models, lists and dicts) and the tails' parser state.
CPython's full (generation 2) collection traverses every tracked object while holding the GIL,
and it runs whenever the old generation has grown by a quarter: while a large transcript is being
appended that means a pause of 100-400 ms every second or so, which stalls the event loop and
every command with it (measured with ``gc.callbacks`` in ``tests/bench/lsp.py``).

``HeapKeeper.settle()`` is called once appended messages have been taken in: it freezes every
object tracked so far (``gc.freeze``, constant time), so the collector no longer traverses the
data the server keeps. It no longer collects the young generations first: on the event loop that
took 2-5 ms per append under load, and parsing leaves no cyclic garbage to find (a 20 MB
transcript appended in 40 pieces: ``gc.collect(1)`` found 0 objects after each). Reference
counting still frees frozen objects as soon as they are dropped; only reference cycles among
them wait. ``tidy_when_idle`` unfreezes and runs one full collection after the server has been
quiet for a while, which frees those cycles at a moment when nobody is waiting for an answer.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import time
from collections.abc import Callable

logger = logging.getLogger(__name__)

#: quiet time (no appended messages, no running job) before a full collection
IDLE_SECONDS = 120.0
#: how often the idle check runs
CHECK_SECONDS = 30.0


class HeapKeeper:
    """Freezes long-lived data after each intake; a full collection only when idle."""

    def __init__(self, idle_seconds: float = IDLE_SECONDS) -> None:
        self.idle_seconds = idle_seconds
        self._last_intake = time.monotonic()
        self._frozen_since_tidy = False

    def settle(self) -> None:
        """After new data was taken in: freeze it (any cycle among it waits for ``tidy``)."""
        self._last_intake = time.monotonic()
        gc.freeze()
        self._frozen_since_tidy = True

    def tidy(self) -> float:
        """Unfreeze and run a full collection (then freeze again); return the seconds it took."""
        began = time.perf_counter()
        gc.unfreeze()
        collected = gc.collect()
        gc.freeze()
        self._frozen_since_tidy = False
        took = time.perf_counter() - began
        logger.debug("full garbage collection: %d objects freed in %.3f s", collected, took)
        return took

    async def tidy_when_idle(
        self, busy: Callable[[], bool], check_seconds: float = CHECK_SECONDS
    ) -> None:
        """Run forever: a full collection once the server has been quiet for ``idle_seconds``."""
        while True:
            await asyncio.sleep(check_seconds)
            quiet = time.monotonic() - self._last_intake >= self.idle_seconds
            if self._frozen_since_tidy and quiet and not busy():
                self.tidy()
