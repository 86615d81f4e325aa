"""Rendering a slice of a normalised conversation as compact text for the LLM notes writer.

(Which user texts are real requests lives in ``transcripts.wrappers``; failures, corrections and
the rest of the per-call facts in ``reverie.analysis``.)
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from reverie.analysis.outcomes import first_line, result_failed, shorten
from reverie.redact import redact
from reverie.transcripts.model import Message, ToolCall
from reverie.transcripts.wrappers import UserTextKind, classify_user_text

__all__ = ["first_line", "render_message", "render_messages", "result_failed", "shorten"]

# --- rendering for a model -------------------------------------------------------------------

TOOL_OUTPUT_CHARS = 1_500
TEXT_CHARS = 6_000


#: text each end of a clip is redacted with beyond the cut, so a secret across it is seen whole
_CLIP_MARGIN = 1024


def _clip(text: str, limit: int) -> str:
    """The start and the end of a long ``text``. Each end is redacted before it is cut (a cut
    through a secret would leave part of it that no rule recognises); the rendered message is
    redacted again as a whole."""
    if len(text) <= limit:
        return text
    head = limit * 2 // 3
    tail = limit - head
    start = redact(text[: head + _CLIP_MARGIN])[0][:head]
    end = redact(text[-(tail + _CLIP_MARGIN):])[0][-tail:]
    return f"{start}\n[... {len(text) - limit} characters cut ...]\n{end}"


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


def _person_text(message: Message) -> str | None:
    """A user text as the model should read it: what the person typed, without what the
    editor or the agent wrapped around it. A request as typed (IDE context blocks in front of it
    dropped); a slash command or a shell line the person ran, marked; a background task's report,
    marked with its gist; command output, injected reminders, caveats and continuations left
    out (the model would take them for instructions or for the person's words)."""
    if message.is_meta:
        return None  # written by the agent on the person's behalf (a command's expanded prompt)
    found = classify_user_text(message.text, message.display_text)
    kind = found.kind
    if kind is UserTextKind.REQUEST and found.request:
        return found.request
    if kind is UserTextKind.COMMAND:
        if found.shell:
            return f"[the user ran: {found.command} {_clip(found.shell, 600)}]"
        return f"[the user ran the agent command {found.command}]" if found.command else None
    if kind is UserTextKind.NOTIFICATION:
        return f"[a background task reported: {shorten(_untagged(message.text), 300)}]"
    if kind is UserTextKind.ACKNOWLEDGEMENT:
        return message.text.strip()
    return None


def _untagged(text: str) -> str:
    """``text`` without its markup (a notification's ``<summary>…</summary>`` stays as words)."""
    return " ".join(_TAG.sub(" ", text).split())


_TAG = re.compile(r"</?[A-Za-z][\w-]*[^>]*>")


def render_message(message: Message) -> str | None:
    """One message of ``render_messages`` (``None`` for sub-agent records and empty ones)."""
    if message.is_sidechain:
        return None
    lines: list[str] = []
    text = message.text.strip()
    if text and message.role == "user" and not message.tool_results:
        text = (_person_text(message) or "").strip()
    if text:
        lines.append(_clip(text, TEXT_CHARS))
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
