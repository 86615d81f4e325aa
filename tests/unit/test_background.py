"""``run_in_background``: results and errors come back; the work runs at lower priority."""

from __future__ import annotations

import os
import sys
import threading

import pytest

from reverie.background import BACKGROUND_NICE, run_in_background


def _where() -> tuple[int, int]:
    tid = threading.get_native_id()
    return tid, os.getpriority(os.PRIO_PROCESS, tid)


async def test_result_error_and_priority() -> None:
    own = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
    tid, nice = await run_in_background(_where)
    assert tid != threading.get_native_id()
    if sys.platform == "linux":
        assert nice == max(own, BACKGROUND_NICE)
    assert os.getpriority(os.PRIO_PROCESS, threading.get_native_id()) == own  # loop untouched
    with pytest.raises(ZeroDivisionError):
        await run_in_background(lambda: 1 / 0)
