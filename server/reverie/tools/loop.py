"""The tool loop (the spec's "side query"): model call -> tool calls -> results back, N turns.

Every tool call passes the job's ``PathGate``. Anything the model gets wrong (unknown or
not-offered tool, arguments that are not a JSON object, a denied path, an edit that does not
match) goes back to it as an error tool result; denials also become ``denied`` events. Only
cancellation and ``LLMError`` leave the loop. After each turn a ``progress`` event carries the
turn number, the model's text, the tool uses and the files touched (the dream job forwards them);
while a reply streams in, ``progress`` events (``phase: generating``) carry the tokens generated
so far, at most one every ``STREAM_EVENT_SECONDS``.

The loop also stops early, with its own ``stop_reason``, when the model asks for exactly the same
tool calls ``MAX_REPEATS`` turns in a row (``repeated_call``: a model stuck in a loop) or writes
a tool call out as text instead of calling it (``text_tool_call``: a model without tool calling;
the job then switches to the structured no-tools form).
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from reverie.events import EventSink, JobEvent, JobKind
from reverie.llm.types import ChatMessage, ModelClient, ModelReply, ToolCallRequest
from reverie.redact import redact, redact_value
from reverie.tools.fs import TOOLS, ToolOutcome, execute_tool, tool_specs
from reverie.tools.gate import Denial, PathGate
from reverie.transcripts.model import Usage

logger = logging.getLogger(__name__)

LoopStopReason = Literal["end_turn", "max_turns", "max_tokens", "repeated_call",
                         "text_tool_call"]
MAX_EVENT_TEXT = 2000
#: identical tool-call turns in a row that end the loop
MAX_REPEATS = 3
STREAM_EVENT_SECONDS = 1.0

#: a tool call written out as text: {"name": "edit_file", "arguments": ...} and the like
_TEXT_CALL = re.compile(
    r"(<tool_call>|\"(?:name|tool|function)\"\s*:\s*\"(?P<name>[A-Za-z_]+)\"[^{}]{0,80}"
    r"\"(?:arguments|parameters|input|args)\"\s*:)", re.DOTALL)


def looks_like_text_tool_call(text: str, tool_names: Sequence[str]) -> bool:
    """True when a reply without tool calls writes one out as text (models without a tool
    template often do), naming one of the offered tools or using a ``<tool_call>`` tag."""
    for match in _TEXT_CALL.finditer(text):
        name = match.group("name")
        if name is None or name in tool_names:
            return True
    return False



@dataclass
class LoopResult:
    """What a loop did. File lists hold the paths as the model saw them (real, not staged)."""

    turns: int
    text: str
    usage: Usage
    files_written: list[str] = field(default_factory=list)
    files_read: list[str] = field(default_factory=list)
    denials: list[Denial] = field(default_factory=list)
    stop_reason: LoopStopReason = "end_turn"
    messages: list[ChatMessage] = field(default_factory=list)
    tool_calls: int = 0


def _add_unique(target: list[str], items: Sequence[str]) -> None:
    for item in items:
        if item not in target:
            target.append(item)


async def run_tool_loop(
    client: ModelClient,
    *,
    system: str,
    messages: Sequence[ChatMessage],
    gate: PathGate,
    tools: Sequence[str],
    max_turns: int,
    events: EventSink,
    job: JobKind,
    path_map: Mapping[Path, Path] | None = None,
    job_id: str | None = None,
    session_id: str | None = None,
    max_tokens: int | None = None,
) -> LoopResult:
    """Drive ``client`` with the named ``tools`` for at most ``max_turns`` model calls."""
    unknown = [name for name in tools if name not in TOOLS]
    if unknown:
        raise ValueError(f"unknown tools requested: {unknown}")
    if path_map:
        gate = gate.with_path_map(path_map)
    specs = tool_specs(tuple(tools))
    offered = set(tools)
    conversation = list(messages)
    result = LoopResult(turns=0, text="", usage=Usage(), messages=conversation)

    def emit(type_: Literal["progress", "denied"], message: str, **payload: object) -> None:
        events(JobEvent(job=job, type=type_, job_id=job_id, session_id=session_id,
                        message=message, payload=dict(payload)))

    repeats = 0
    previous: str | None = None
    for turn in range(1, max_turns + 1):
        reply = _redacted(await client.complete(
            conversation, system=system, tools=specs, max_tokens=max_tokens,
            on_progress=_streaming_reporter(emit, turn)))
        result.turns = turn
        result.usage = result.usage + reply.usage
        if reply.text:
            result.text = reply.text
        conversation.append(
            ChatMessage(role="assistant", content=reply.text, tool_calls=reply.tool_calls)
        )
        touched: list[str] = []
        uses: list[dict[str, object]] = []
        for call in reply.tool_calls:
            outcome = await _run_call(gate, call, offered)
            result.tool_calls += 1
            uses.append({"name": call.name, "path": _path_arg(call), "error": outcome.is_error})
            _add_unique(result.files_read, outcome.read)
            _add_unique(result.files_written, outcome.written)
            _add_unique(touched, outcome.written)
            if outcome.denial is not None:
                result.denials.append(outcome.denial)
                emit("denied", f"{call.name} denied: {outcome.denial.reason}",
                     tool=call.name, path=outcome.denial.path, reason=outcome.denial.reason,
                     turn=turn)
            conversation.append(ChatMessage(role="tool", tool_call_id=call.id,
                                            content=outcome.content, is_error=outcome.is_error))
        emit("progress", f"turn {turn}: {len(uses)} tool use(s)", turn=turn, phase="model_turn",
             text=reply.text[:MAX_EVENT_TEXT], tool_uses=uses, files_touched=touched,
             tokens_in=reply.usage.input_tokens, tokens_out=reply.usage.output_tokens)
        if not reply.tool_calls:
            if reply.stop_reason == "max_tokens":
                result.stop_reason = "max_tokens"
            elif looks_like_text_tool_call(reply.text, list(tools)):
                result.stop_reason = "text_tool_call"
            else:
                result.stop_reason = "end_turn"
            return result
        if reply.stop_reason == "max_tokens":
            result.stop_reason = "max_tokens"  # a call cut off by the budget was refused above
            return result
        signature = json.dumps([[c.name, c.arguments, c.raw_arguments] for c in reply.tool_calls],
                               sort_keys=True, default=str)
        repeats = repeats + 1 if signature == previous else 1
        previous = signature
        if repeats >= MAX_REPEATS and turn < max_turns:
            result.stop_reason = "repeated_call"
            logger.info("%s tool loop stopped: the same tool calls %d turns in a row", job,
                        repeats)
            return result
    result.stop_reason = "max_turns"
    logger.info("%s tool loop stopped after %d turns", job, max_turns)
    return result


def _streaming_reporter(
    emit: Callable[..., None], turn: int
) -> Callable[[int], None]:
    """An ``on_progress`` callback that turns token counts into throttled progress events
    (the first after ``STREAM_EVENT_SECONDS``: a quick reply reports only its turn)."""
    last = time.monotonic()

    def report(tokens: int) -> None:
        nonlocal last
        now = time.monotonic()
        if now - last < STREAM_EVENT_SECONDS:
            return
        last = now
        emit("progress", f"turn {turn}: generating, {tokens} tokens so far", turn=turn,
             phase="generating", tokens_generated=tokens, tool_uses=[], files_touched=[])

    return report


def _redacted(reply: ModelReply) -> ModelReply:
    """The reply with secrets replaced in its text and tool arguments: what the model writes
    through a tool and what the next turn sends back to the provider never hold one (a model
    can repeat a secret it was shown elsewhere, or make one up). Small: done on the loop."""
    text, count = redact(reply.text)
    calls: list[ToolCallRequest] = []
    for call in reply.tool_calls:
        arguments, n = redact_value(call.arguments)
        raw = call.raw_arguments
        if raw is not None:
            raw, m = redact(raw)
            n += m
        count += n
        calls.append(call if not n else call.model_copy(
            update={"arguments": arguments, "raw_arguments": raw}))
    if not count:
        return reply
    return reply.model_copy(update={"text": text, "tool_calls": calls})


def _path_arg(call: ToolCallRequest) -> str | None:
    tool = TOOLS.get(call.name)
    if tool is None or tool.path_field is None:
        return None
    value = call.arguments.get(tool.path_field)
    return value if isinstance(value, str) else None


async def _run_call(gate: PathGate, call: ToolCallRequest, offered: set[str]) -> ToolOutcome:
    if call.name not in offered:
        reason = "unknown tool" if call.name not in TOOLS else "tool not available in this job"
        return ToolOutcome(
            f"Error: {reason} {call.name!r}; available tools: {', '.join(sorted(offered))}.",
            is_error=True,
            denial=Denial(tool=call.name, path="", reason=reason),
        )
    if call.raw_arguments is not None:
        return ToolOutcome(
            f"Error: the arguments for {call.name} were not a JSON object "
            f"({call.raw_arguments[:200]!r}); call the tool again with valid JSON arguments.",
            is_error=True,
        )
    try:
        return await asyncio.to_thread(execute_tool, gate, call.name, dict(call.arguments))
    except Exception as exc:  # a tool bug must reach the model as an error, not end the job
        logger.exception("tool %s failed unexpectedly", call.name)
        return ToolOutcome(f"Error: {call.name} failed ({type(exc).__name__}).", is_error=True)
