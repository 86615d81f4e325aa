"""``HeapKeeper``: long-lived data frozen after each intake; cycles freed by the idle tidy."""

from __future__ import annotations

import asyncio
import gc
import weakref

from reverie.lsp.heap import HeapKeeper


class _Node:
    def __init__(self) -> None:
        self.other: _Node | None = None


def test_settle_freezes_and_tidy_frees_frozen_cycles() -> None:
    keeper = HeapKeeper()
    try:
        a, b = _Node(), _Node()
        a.other, b.other = b, a  # a reference cycle
        probe = weakref.ref(a)
        keeper.settle()
        assert gc.get_freeze_count() > 0
        del a, b
        gc.collect()
        assert probe() is not None  # frozen: an ordinary collection leaves it alone
        keeper.tidy()
        assert probe() is None
        assert gc.get_freeze_count() > 0  # what is left stays out of the collector's way
    finally:
        gc.unfreeze()


async def test_tidy_runs_only_when_quiet_and_not_busy() -> None:
    keeper = HeapKeeper(idle_seconds=0.05)
    busy = True
    try:
        a, b = _Node(), _Node()
        a.other, b.other = b, a  # a reference cycle, frozen by the intake's settle
        probe = weakref.ref(a)
        keeper.settle()
        del a, b
        task = asyncio.create_task(keeper.tidy_when_idle(lambda: busy, check_seconds=0.01))
        await asyncio.sleep(0.15)  # well past idle_seconds
        gc.collect()
        assert probe() is not None  # busy: no tidy, so the frozen cycle is still there
        busy = False
        for _ in range(300):
            if probe() is None:
                break
            await asyncio.sleep(0.01)
        assert probe() is None  # quiet and not busy: the tidy freed it
        task.cancel()
    finally:
        gc.unfreeze()
