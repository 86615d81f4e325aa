"""The LLM notes writer: a tool loop whose only permitted action is ``edit_file`` on one file.

The model is shown the real notes path; the gate maps it to a staging copy beside the notes, so
the real file is only replaced after the manager's validity guard accepted the result. Any other
tool, or ``edit_file`` on any other path, is denied, reported (``denied`` events) and fails the
run. Relative paths resolve against the notes file's directory.

Context modes (``REVERIE_SESSION_MEMORY_CONTEXT``):

- ``incremental`` (default): the current notes plus only the messages after the last extraction
  (and a few before it for continuity). The notes already summarise everything earlier, so the
  cost of an update stays flat as the session grows.
- ``full``: the whole conversation every time, as the reference implementation does (its cost
  grows with the square of the session length); kept for comparison.
"""

from __future__ import annotations

import asyncio
import shutil
import tempfile
from pathlib import Path

from reverie.fsutil import atomic_write_text
from reverie.llm.types import ChatMessage, ModelClient
from reverie.redact import redact
from reverie.session_memory.source import RecentContext
from reverie.session_memory.template import (
    MAX_SECTION_TOKENS,
    MAX_TOTAL_TOKENS,
    condensing_reminders,
    load_update_prompt,
    substitute,
)
from reverie.session_memory.writers import WriteOutcome, WriteRequest
from reverie.tools.gate import PathGate
from reverie.tools.loop import run_tool_loop

#: Messages before the last extraction point that incremental mode still sends.
OVERLAP_MESSAGES = 6
#: Upper bound of the rendered conversation (the most recent part is kept).
MAX_CONVERSATION_CHARS = 480_000

SYSTEM_PROMPT = (
    "You maintain a markdown notes file for a coding session. You can act only through the "
    "edit_file tool, and only on the notes file named in the instructions."
)

_SCOPE_FULL = (
    "The <conversation> block above holds the whole session so far, oldest first (long tool "
    "output is clipped)."
)
_SCOPE_INCREMENTAL = (
    "The <conversation> block above holds only the part of the session since the notes were "
    "last updated, plus a few earlier messages for continuity (long tool output is clipped). "
    "The current notes already cover everything before it: keep that content and fold the new "
    "information in."
)


async def _prepare(request: WriteRequest) -> RecentContext:
    """What the model is shown of the conversation: the recent part of the main chain within
    the budget, rendered and redacted where the conversation lives (never on the loop)."""
    return await request.conversation.recent(
        request.state.last_extracted_cursor,
        full=request.settings.session_memory_context == "full",
        overlap=OVERLAP_MESSAGES,
        budget_chars=MAX_CONVERSATION_CHARS,
    )


class LLMWriter:
    """Updates the notes through ``run_tool_loop`` with a one-file gate."""

    name = "llm"

    def __init__(self, client: ModelClient) -> None:
        self.client = client

    async def write(self, request: WriteRequest) -> WriteOutcome:
        settings = request.settings
        recent = await _prepare(request)
        conversation, redacted_conversation, whole = recent.text, recent.redactions, recent.whole
        current, redacted_notes = redact(request.current_notes)

        notes_path = request.notes_path
        prompt = substitute(
            load_update_prompt(settings.config_dir),
            {
                "notes_path": str(notes_path),
                "current_notes": current,
                "conversation_scope": _SCOPE_FULL if whole else _SCOPE_INCREMENTAL,
                "section_budget": f"{MAX_SECTION_TOKENS:,}",
                "total_budget": f"{MAX_TOTAL_TOKENS:,}",
            },
        ) + condensing_reminders(current)
        user = f"<conversation>\n{conversation}\n</conversation>\n\n{prompt}"

        # file work (an fsync takes milliseconds) stays off the event loop
        staging_dir = Path(
            await asyncio.to_thread(tempfile.mkdtemp, prefix=".staging-", dir=notes_path.parent)
        )
        try:
            staged = staging_dir / notes_path.name
            await asyncio.to_thread(atomic_write_text, staged, current)
            gate = PathGate(read_roots=[], write_file=notes_path, base_dir=notes_path.parent)
            timeout = settings.request_timeout_seconds * max(1, settings.session_memory_max_turns)
            try:
                result = await asyncio.wait_for(
                    run_tool_loop(
                        self.client,
                        system=SYSTEM_PROMPT,
                        messages=[ChatMessage(role="user", content=user)],
                        gate=gate,
                        tools=["edit_file"],
                        max_turns=settings.session_memory_max_turns,
                        events=request.events,
                        job="session_memory",
                        path_map={notes_path: staged},
                        session_id=request.session.id,
                        max_tokens=settings.max_output_tokens,
                    ),
                    timeout=timeout,
                )
            except TimeoutError:
                return WriteOutcome(
                    text=None,
                    redactions=redacted_conversation + redacted_notes,
                    error=f"the model did not finish within {timeout:.0f} s",
                )
            new_text = await asyncio.to_thread(staged.read_text, encoding="utf-8")
        finally:
            await asyncio.to_thread(shutil.rmtree, staging_dir, ignore_errors=True)

        usage = result.usage
        outcome = WriteOutcome(
            text=None,
            point=recent.point,
            turns=result.turns,
            tokens_in=usage.input_tokens + usage.cache_read_tokens + usage.cache_write_tokens,
            tokens_out=usage.output_tokens,
            denials=[f"{d.tool} {d.path}: {d.reason}".strip() for d in result.denials],
        )
        if result.denials:
            outcome.redactions = redacted_conversation + redacted_notes
            outcome.error = "the model tried a tool or path it may not use: " + "; ".join(
                outcome.denials
            )
            return outcome
        new_text, redacted_output = redact(new_text)
        outcome.text = new_text
        outcome.redactions = redacted_conversation + redacted_notes + redacted_output
        return outcome
