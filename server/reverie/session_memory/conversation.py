"""Reading a normalised conversation the way the notes writers need it.

Which user messages are real requests (not injected caveats, slash-command wrappers or tool
results), which are corrections, whether a tool result failed, and how to render a slice of the
conversation as compact, redacted text for a model.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from reverie.redact import redact
from reverie.transcripts.model import Message, ToolCall, ToolResult

_TAG_ONLY = re.compile(r"^\s*<([a-zA-Z][\w-]*)[^>]*>.*</\1>\s*$", re.DOTALL)
_COMMAND_NAME = re.compile(r"<command-name>\s*(.*?)\s*</command-name>", re.DOTALL)
_COMMAND_ARGS = re.compile(r"<command-args>\s*(.*?)\s*</command-args>", re.DOTALL)
_INJECTED_PREFIXES = (
    "<local-command",
    "<environment_context",
    "<user_instructions",
    "<system-reminder",
    "# AGENTS.md",
    "Caveat:",
    "[Request interrupted",
    "<user-prompt-submit-hook",
)
_CORRECTION = re.compile(
    r"^\s*(?:no\b|nope\b|stop\b|wait\b|don'?t\b|do not\b|not that\b|wrong\b|actually\b|instead\b"
    r"|that'?s (?:not|wrong)\b|that is (?:not|wrong)\b|you (?:broke|forgot|missed)\b"
    r"|undo\b|revert\b"
    r"|please don'?t\b|never\b)"
    r"|\b(?:that'?s not what i|i said\b|i asked (?:for|you to)\b|still (?:does not|doesn'?t) work"
    r"|is still (?:broken|failing)|didn'?t work|does not work)",
    re.IGNORECASE,
)
_ERROR_LINE = re.compile(
    r"(error|failed|failure|exception|traceback|not found|no such|denied|cannot|can't|fatal)",
    re.IGNORECASE,
)
_EXIT_CODE = re.compile(r"(?:Process exited with code|exit code:?|exited with)\s*(-?\d+)", re.I)
_WRAPPER_TAGS = re.compile(r"</?(?:tool_use_error|error)>")


def user_request_text(message: Message) -> str | None:
    """The request a person typed, or ``None`` for anything injected or tool-generated."""
    if message.role != "user" or message.is_meta or message.is_sidechain:
        return None
    text = message.text.strip()
    if not text:
        return None
    if "<command-name>" in text:
        name = _COMMAND_NAME.search(text)
        args = _COMMAND_ARGS.search(text)
        arg_text = args.group(1).strip() if args else ""
        if not arg_text:
            return None
        return f"{name.group(1) if name else ''} {arg_text}".strip()
    if text.startswith(_INJECTED_PREFIXES) or _TAG_ONLY.match(text):
        return None
    return text


def is_correction(request: str) -> bool:
    return bool(_CORRECTION.search(request[:400]))


def result_failed(result: ToolResult) -> bool:
    if result.is_error:
        return True
    if result.exit_code is not None:
        return result.exit_code != 0
    match = _EXIT_CODE.search(result.output[:400])
    return bool(match and match.group(1) != "0")


def error_summary(output: str, limit: int = 200) -> str:
    """The most telling line of a failure's output."""
    lines = [ln.strip() for ln in _WRAPPER_TAGS.sub("", output).splitlines() if ln.strip()]
    if not lines:
        return "(no output)"
    index = next((i for i, ln in enumerate(lines) if _ERROR_LINE.search(ln)), 0)
    chosen = lines[index]
    if chosen.endswith(":") and index + 1 < len(lines):
        chosen = f"{chosen} {lines[index + 1]}"  # "failed due to the following issue:" + why
    return shorten(chosen, limit)


def shorten(text: str, limit: int) -> str:
    """One line, at most ``limit`` characters."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: max(limit - 1, 0)].rstrip() + "…"


def first_line(text: str, limit: int) -> str:
    for line in text.splitlines():
        if line.strip():
            return shorten(line, limit)
    return ""


@dataclass(frozen=True, slots=True)
class CallOutcome:
    """A tool call with its result (``None`` while it has not come back)."""

    index: int  # index of the assistant message that made the call
    call: ToolCall
    result: ToolResult | None
    sidechain: bool

    @property
    def failed(self) -> bool:
        return self.result is not None and result_failed(self.result)


def pair_calls(messages: Sequence[Message]) -> list[CallOutcome]:
    """Every tool call in order, matched with its result by call id."""
    results: dict[str, ToolResult] = {}
    for message in messages:
        for result in message.tool_results:
            results[result.call_id] = result
    outcomes: list[CallOutcome] = []
    for index, message in enumerate(messages):
        if message.role != "assistant":
            continue
        for call in message.tool_calls:
            outcomes.append(CallOutcome(index, call, results.get(call.id), message.is_sidechain))
    return outcomes


def redact_messages(messages: Sequence[Message]) -> tuple[list[Message], int]:
    """Copies of ``messages`` with secrets removed from text, commands, inputs and outputs."""
    cleaned: list[Message] = []
    total = 0
    for message in messages:
        text, n = redact(message.text)
        total += n
        calls: list[ToolCall] = []
        for call in message.tool_calls:
            command = call.command
            if command:
                command, n = redact(command)
                total += n
            inputs: dict[str, object] = {}
            for key, value in call.input.items():
                if isinstance(value, str) and value:
                    value, n = redact(value)
                    total += n
                inputs[key] = value
            calls.append(call.model_copy(update={"command": command, "input": inputs}))
        results: list[ToolResult] = []
        for result in message.tool_results:
            output, n = redact(result.output)
            total += n
            results.append(result.model_copy(update={"output": output}))
        cleaned.append(
            message.model_copy(update={"text": text, "tool_calls": calls, "tool_results": results})
        )
    return cleaned, total


# --- rendering for a model -------------------------------------------------------------------

TOOL_OUTPUT_CHARS = 1_500
TEXT_CHARS = 6_000


def _clip(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    head = limit * 2 // 3
    tail = limit - head
    return f"{text[:head]}\n[... {len(text) - limit} characters cut ...]\n{text[-tail:]}"


def _render_call(call: ToolCall) -> str:
    if call.command:
        return f"[tool call {call.name}] $ {_clip(call.command, 600)}"
    if call.file_paths:
        target = ", ".join(call.file_paths[:5])
        extra = ""
        for key in ("old_string", "new_string", "content", "pattern", "query"):
            value = call.input.get(key)
            if isinstance(value, str) and value:
                extra += f"\n  {key}: {_clip(value, 400)}"
        return f"[tool call {call.name}] {target}{extra}"
    args = ", ".join(
        f"{k}={_clip(str(v), 200)}" for k, v in list(call.input.items())[:6]
    )
    return f"[tool call {call.name}] {args}"


def render_message(message: Message) -> str | None:
    """One message of ``render_messages`` (``None`` for sub-agent records and empty ones)."""
    if message.is_sidechain:
        return None
    lines: list[str] = []
    if message.text.strip():
        lines.append(_clip(message.text.strip(), TEXT_CHARS))
    lines.extend(_render_call(call) for call in message.tool_calls)
    for result in message.tool_results:
        status = "failed" if result_failed(result) else "ok"
        output = _clip(result.output.strip(), TOOL_OUTPUT_CHARS)
        lines.append(f"[tool result {status}] {output}")
    if not lines:
        return None
    role = "user" if message.role == "user" and not message.tool_results else message.role
    if message.tool_results and not message.text.strip():
        role = "tool"
    return f"### {role}\n" + "\n".join(lines)


def render_messages(messages: Sequence[Message]) -> str:
    """A compact text rendering: roles, text, tool calls and clipped tool results."""
    parts = (render_message(message) for message in messages)
    return "\n\n".join(part for part in parts if part is not None)
