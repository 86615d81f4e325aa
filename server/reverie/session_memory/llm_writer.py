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

Models without tool calling (and the coding-agent CLI providers) get the structured no-tools
form instead (``reverie.tools.no_tools``): they return the whole new notes as JSON, which is
written to the same staging copy through the same gate with ``write_file``. The switch happens
before the first call when known, or mid-run when the endpoint refuses tools or the model
writes a tool call out as text. The whole run is bounded by the job budget
(``REVERIE_SESSION_MEMORY_BUDGET_SECONDS``) and each reply by
``REVERIE_SESSION_MEMORY_MAX_OUTPUT_TOKENS``: a reply cut off by it keeps the edits already made
(tools) or applies nothing (no-tools).
"""

from __future__ import annotations

import asyncio
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from reverie.events import JobEvent
from reverie.fsutil import atomic_write_text
from reverie.hazards import UNTRUSTED_DATA
from reverie.llm.capabilities import choose_mode, remember_no_tools
from reverie.llm.errors import LLMToolsUnsupportedError, StructuredOutputError
from reverie.llm.structured import complete_json, schema_prompt
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
from reverie.tools.loop import LoopResult, run_tool_loop
from reverie.tools.no_tools import FileChange, apply_changes
from reverie.transcripts.model import Usage

#: Messages before the last extraction point that incremental mode still sends.
OVERLAP_MESSAGES = 6
#: Upper bound of the rendered conversation (the most recent part is kept).
MAX_CONVERSATION_CHARS = 480_000

SYSTEM_PROMPT = (
    "You maintain a markdown notes file for a coding session. You can act only through the "
    "edit_file tool, and only on the notes file named in the instructions."
) + UNTRUSTED_DATA
NO_TOOLS_SYSTEM = (
    "You maintain a markdown notes file for a coding session. You cannot call tools: you "
    "answer with the complete new notes file inside one JSON object, and nothing else."
) + UNTRUSTED_DATA
_NO_TOOLS_TAIL = (
    "\n\nYou cannot call tools in this run: ignore any instruction to use edit_file. Instead "
    "return the COMPLETE new notes file (every section header and italic description line "
    "kept exactly, the content under them updated) as the \"notes\" field. "
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


class NotesRewrite(BaseModel):
    """The notes job's no-tools result: the whole new notes file."""

    model_config = ConfigDict(extra="ignore")

    notes: str = Field(min_length=1, description="the complete new notes file, markdown")



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
        budget = settings.session_memory_budget_seconds
        redactions = redacted_conversation + redacted_notes
        try:
            staged = staging_dir / notes_path.name
            await asyncio.to_thread(atomic_write_text, staged, current)
            gate = PathGate(read_roots=[], write_file=notes_path, base_dir=notes_path.parent)
            gate = gate.with_path_map({notes_path: staged})
            try:
                async with asyncio.timeout(budget):
                    run = await self._run(request, user, gate, current)
            except TimeoutError:
                return WriteOutcome(
                    text=None, redactions=redactions,
                    error=f"the model did not finish within the {budget:.0f} s job budget "
                          "(REVERIE_SESSION_MEMORY_BUDGET_SECONDS); the notes were left as "
                          "they were",
                )
            new_text = await asyncio.to_thread(staged.read_text, encoding="utf-8")
        finally:
            await asyncio.to_thread(shutil.rmtree, staging_dir, ignore_errors=True)

        usage = run.usage
        outcome = WriteOutcome(
            text=None,
            point=recent.point,
            turns=run.turns,
            tokens_in=usage.input_tokens + usage.cache_read_tokens + usage.cache_write_tokens,
            tokens_out=usage.output_tokens,
            denials=run.denials,
            cost_usd=run.cost_usd,
        )
        if run.error is not None:
            outcome.redactions = redactions
            outcome.error = run.error
            return outcome
        new_text, redacted_output = redact(new_text)
        outcome.text = new_text
        outcome.redactions = redactions + redacted_output
        return outcome

    async def _run(self, request: WriteRequest, user: str, gate: PathGate,
                   current: str) -> _Run:
        """The tool loop, or the no-tools form (from the start, or after the model showed it
        cannot call tools)."""
        settings = request.settings
        if choose_mode(self.client, settings) == "tools":
            try:
                loop = await run_tool_loop(
                    self.client,
                    system=SYSTEM_PROMPT,
                    messages=[ChatMessage(role="user", content=user)],
                    gate=gate,
                    tools=["edit_file"],
                    max_turns=settings.session_memory_max_turns,
                    events=request.events,
                    job="session_memory",
                    session_id=request.session.id,
                    max_tokens=settings.session_memory_max_output_tokens,
                )
            except LLMToolsUnsupportedError as exc:
                self._switching(request, str(exc))
                return await self._no_tools(request, user, gate, current)
            if loop.stop_reason == "text_tool_call" and not loop.files_written:
                if settings.tool_calling == "auto":
                    await remember_no_tools(self.client)
                self._switching(request, "the model wrote a tool call as text")
                again = await self._no_tools(request, user, gate, current)
                again.usage = loop.usage + again.usage
                again.turns += loop.turns
                return again
            return _Run.of_loop(loop)
        return await self._no_tools(request, user, gate, current)

    def _switching(self, request: WriteRequest, why: str) -> None:
        request.events(JobEvent(
            job="session_memory", type="progress", session_id=request.session.id,
            message=f"{why}; asking for the whole notes as JSON instead of tool calls",
            payload={"phase": "no_tools", "reason": why},
        ))

    async def _no_tools(self, request: WriteRequest, user: str, gate: PathGate,
                        current: str) -> _Run:
        settings = request.settings
        # the whole file comes back: at least what it holds now plus room to grow
        budget = max(settings.session_memory_max_output_tokens, len(current) // 3 + 1024)
        prompt = user + _NO_TOOLS_TAIL + schema_prompt(NotesRewrite)

        def progress(tokens: int) -> None:
            request.events(JobEvent(
                job="session_memory", type="progress", session_id=request.session.id,
                message=f"generating the notes, {tokens} tokens so far",
                payload={"phase": "generating", "tokens_generated": tokens},
            ))

        try:
            got = await complete_json(self.client, [ChatMessage(role="user", content=prompt)],
                                      NotesRewrite, system=NO_TOOLS_SYSTEM, max_tokens=budget,
                                      on_progress=_throttled(progress))
        except StructuredOutputError as exc:  # prose, invalid JSON, or cut off by the budget
            return _Run(turns=1, error=f"no-tools notes rejected: {exc.message}")
        assert isinstance(got.value, NotesRewrite)
        text = got.value.notes if got.value.notes.endswith("\n") else got.value.notes + "\n"
        applied = await asyncio.to_thread(
            apply_changes, gate, [FileChange(path=str(request.notes_path), content=text)])
        run = _Run(turns=got.calls, usage=got.usage,
                   denials=[f"{d.tool} {d.path}: {d.reason}" for d in applied.denials])
        run.cost_usd = got.cost_usd
        if not applied.ok:
            run.error = "the no-tools notes could not be applied: " + "; ".join(
                run.denials + applied.errors)
        return run


class _Run:
    """What one writer run did, whichever form it took."""

    def __init__(self, *, turns: int = 0, usage: Usage | None = None,
                 denials: list[str] | None = None, error: str | None = None) -> None:
        self.turns = turns
        self.usage = usage or Usage()
        self.denials = denials or []
        self.error = error
        self.cost_usd: float | None = None

    @classmethod
    def of_loop(cls, loop: LoopResult) -> _Run:
        denials = [f"{d.tool} {d.path}: {d.reason}".strip() for d in loop.denials]
        run = cls(turns=loop.turns, usage=loop.usage, denials=denials)
        if denials and not loop.files_written:
            # nothing valid was done: the run failed. With valid edits beside a refused call,
            # the refused call was denied (the model was told) and the edits stand (the spec):
            # the denials are reported (``denied`` events, ``WriteOutcome.denials``).
            run.error = "the model tried a tool or path it may not use: " + "; ".join(denials)
        elif loop.stop_reason == "repeated_call" and not loop.files_written:
            run.error = "the model repeated the same tool call without making progress"
        return run


def _throttled(report: Callable[[int], None], every: float = 1.0) -> Callable[[int], None]:
    """``report`` at most once per ``every`` seconds, the first after ``every`` seconds."""
    last = time.monotonic()

    def call(tokens: int) -> None:
        nonlocal last
        now = time.monotonic()
        if now - last >= every:
            last = now
            report(tokens)

    return call
