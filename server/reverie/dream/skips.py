"""Why a dream did not run, in a sentence for the person (the reason codes stay for machines).

The runner puts both in the skip event: ``reason`` (the contract code of ``dream.gates``) and
``reason_text`` (this sentence), so the editor never has to show ``missing_llm_client``.
"""

from __future__ import annotations

from typing import Any


def _hours(hours: float) -> str:
    if hours < 1:
        return f"{max(1, round(hours * 60))} min"
    return f"{hours:.0f} h" if hours >= 10 else f"{hours:.1f} h"


def describe_skip(reason: str, payload: dict[str, Any]) -> str:
    """One sentence for ``reason`` with what ``payload`` knows (sessions, hours, detail)."""
    if reason == "disabled":
        return "automatic dreams are off (reverie.dreamEnabled)."
    if reason == "subagent":
        return "a sub-agent's session does not start a dream of its own."
    if reason == "remote_mode":
        return "automatic dreams are off in remote mode (reverie.remoteMode)."
    if reason == "auto_memory_disabled":
        return "memory writing is off (reverie.autoMemoryEnabled)."
    if reason == "time_gate":
        hours = payload.get("hours_since")
        since = f" ({_hours(float(hours))} ago)" if isinstance(hours, int | float) else ""
        return f"the last dream was recent{since}; reverie.dreamMinHours sets the wait."
    if reason == "scan_throttle":
        return "sessions were counted a moment ago; they are counted again shortly."
    if reason == "session_gate":
        n, need = payload.get("sessions"), payload.get("needed")
        if isinstance(n, int) and isinstance(need, int):
            return (f"not enough new sessions yet: {n} of {need} since the last dream "
                    "(reverie.dreamMinSessions).")
        return "not enough new sessions yet (reverie.dreamMinSessions)."
    if reason == "lock_busy":
        return ("another Reverie process is consolidating this memory right now; the dream "
                "runs when it is done.")
    if reason == "no_daily_log_entries":
        return "the daily log has nothing new since the last dream."
    if reason == "missing_llm_client":
        detail = str(payload.get("detail") or "").strip().rstrip(".")
        return ("no model could be used for the dream" + (f": {detail}" if detail else "")
                + ". Set an API key, or choose another provider (the offline engine needs none).")
    if reason == "over_budget":
        detail = str(payload.get("detail") or "").strip().rstrip(".")
        return (detail or "the model budget is used up (reverie.dailyTokenCap)") + "."
    return f"the dream did not run ({reason.replace('_', ' ')})."
