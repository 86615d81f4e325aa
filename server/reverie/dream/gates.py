"""The dream's gates, cheapest first, and the per-memory-dir session-scan throttle.

Order and skip-reason strings are a contract (they reach the editor and the CLI JSON):
``disabled``, ``subagent``, ``remote_mode``, ``auto_memory_disabled``, ``time_gate``,
``scan_throttle``, ``session_gate``; the runner adds ``lock_busy``, ``no_daily_log_entries``,
``missing_llm_client`` and ``over_budget`` (the cost governor's cap, ``llm/budget.py``). A
manual dream passes only the sub-agent gate: it bypasses the scheduling gates (enabled, remote,
auto-memory, time, throttle, sessions) and shares everything else.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Literal

from reverie.config import Settings

SkipReason = Literal[
    "disabled",
    "subagent",
    "remote_mode",
    "auto_memory_disabled",
    "time_gate",
    "scan_throttle",
    "session_gate",
    "lock_busy",
    "no_daily_log_entries",
    "missing_llm_client",
    "over_budget",
]


def cheap_gate(settings: Settings, *, manual: bool, is_subagent: bool) -> SkipReason | None:
    """Settings-only gates; no file system access."""
    if not manual and not settings.dream_enabled:
        return "disabled"
    if is_subagent:
        return "subagent"
    if manual:
        return None
    if settings.remote_mode:
        return "remote_mode"
    if not settings.auto_memory_enabled:
        return "auto_memory_disabled"
    return None


def time_gate(hours_since: float | None, settings: Settings) -> bool:
    """True when enough time passed since the last consolidation (or there was none)."""
    return hours_since is None or hours_since >= settings.dream_min_hours


class ScanThrottle:
    """No more than one session scan per memory dir per interval (state per owner, not global).

    The spec throttles scans only when the time gate passed but the session gate did not:
    each scan is recorded, and the next automatic attempt within the interval is skipped.
    """

    def __init__(self) -> None:
        self._last_scan: dict[str, float] = {}

    @staticmethod
    def _key(memory_dir: Path) -> str:
        return str(memory_dir.expanduser().resolve())

    def blocked(self, memory_dir: Path, interval_seconds: float, now: float | None = None) -> bool:
        last = self._last_scan.get(self._key(memory_dir))
        current = time.monotonic() if now is None else now
        return last is not None and current - last < interval_seconds

    def mark(self, memory_dir: Path, now: float | None = None) -> None:
        self._last_scan[self._key(memory_dir)] = time.monotonic() if now is None else now

    def seconds_since(self, memory_dir: Path, now: float | None = None) -> float | None:
        last = self._last_scan.get(self._key(memory_dir))
        if last is None:
            return None
        return (time.monotonic() if now is None else now) - last
