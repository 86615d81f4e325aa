"""Background-priority work: CPU-heavy jobs nobody is waiting on interactively.

Parsing a large append, rescanning a long conversation or rendering it for the notes writer can
keep a core busy for hundreds of milliseconds. In the language server that work shares the
machine (and the GIL) with the event loop answering the editor; such work runs in threads of
background priority (``reverie.priority``: niced on Linux, utility QoS on macOS, background mode
on Windows): the event loop thread wins the CPU whenever it has something to do, and the work still
runs at full speed on an otherwise idle machine.
"""

from __future__ import annotations

import _thread
import asyncio
import logging
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, TypeVar

from reverie.priority import BACKGROUND_NICE, lower_thread_priority

__all__ = ["BACKGROUND_NICE", "Runner", "lower_thread_priority", "run_in_background"]

logger = logging.getLogger(__name__)

T = TypeVar("T")

#: ``run(func, *args)``: where a job runs a picklable module-level function (a worker process's
#: ``call`` in the language server, ``run_in_background`` in the CLI)
Runner = Callable[..., Awaitable[Any]]


async def run_in_background(func: Callable[..., T], /, *args: Any) -> T:
    """``asyncio.to_thread`` for CPU-heavy work, in a fresh background-priority thread.

    A thread of its own because a thread's priority cannot be raised back without privileges:
    the shared default executor must keep normal priority for the work commands wait on.
    """
    loop = asyncio.get_running_loop()
    future: asyncio.Future[T] = loop.create_future()

    def settle(result: T | None, error: BaseException | None) -> None:
        if future.done():  # the awaiting task was cancelled meanwhile
            return
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(result)  # type: ignore[arg-type]

    def work() -> None:
        lower_thread_priority()
        try:
            result = func(*args)
        except BaseException as exc:
            loop.call_soon_threadsafe(settle, None, exc)
        else:
            loop.call_soon_threadsafe(settle, result, None)

    # ``_thread`` rather than ``threading.Thread.start()``: the latter blocks the calling thread
    # (the event loop) until the new thread has been scheduled and has taken the GIL, which on
    # a busy machine takes milliseconds. This thread is a daemon, as a ``Thread`` would be.
    _thread.start_new_thread(work, ())
    return await future


async def finish_then_cancel(work: Coroutine[Any, Any, T]) -> T:
    """Await ``work`` (a worker-thread call); on cancellation let it finish first, then honour
    the cancel: a thread cannot be stopped, and what it writes must not be rolled back under
    it (the dream's staged copy)."""
    future = asyncio.ensure_future(work)
    try:
        return await asyncio.shield(future)
    except asyncio.CancelledError:
        await asyncio.wait([future])
        raise
