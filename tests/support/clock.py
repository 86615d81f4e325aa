"""A fake monotonic clock whose ``sleep`` advances it, so a 2 h batch timeout costs no time."""

from __future__ import annotations


class FakeClock:
    """Pass ``clock`` (or ``clock.monotonic``) and ``clock.sleep`` where code takes a clock."""

    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.now

    def monotonic(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds
