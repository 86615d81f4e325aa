"""The ``reverie transcript --stats`` summary of a transcript (a CLI contract: keep the keys)."""

from __future__ import annotations

from typing import Any

from reverie.transcripts.model import Transcript
from reverie.transcripts.tokens import context_tokens


def files_touched(transcript: Transcript) -> list[str]:
    """Sorted, unique file paths named by the transcript's tool calls, and by results that
    report the files they changed (Codex patches)."""
    named = {p for m in transcript.messages for c in m.tool_calls for p in c.file_paths}
    named.update(p for m in transcript.messages for r in m.tool_results for p in r.file_paths)
    return sorted(named)


def tool_error_ids(transcript: Transcript) -> set[str]:
    """Call ids with at least one error result (an agent may log several results per call)."""
    return {r.call_id for m in transcript.messages for r in m.tool_results if r.is_error}


def transcript_stats(transcript: Transcript) -> dict[str, Any]:
    messages = transcript.messages
    return {
        "agent": transcript.session.agent,
        "session_id": transcript.session.id,
        "messages": len(messages),
        "tool_calls": sum(len(m.tool_calls) for m in messages),
        "tool_errors": len(tool_error_ids(transcript)),
        "files": files_touched(transcript),
        "tokens": context_tokens(messages),
        "lines": transcript.stats.lines,
        "skipped": transcript.stats.skipped,
        "errors": list(transcript.stats.errors),
    }
