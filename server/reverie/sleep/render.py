"""A session as text for the deep-sleep request: notes first, then the conversation, redacted
and cut to a budget (the start for the goal, most of the budget for the end, where it landed)."""

from __future__ import annotations

from reverie.sleep.redaction import redact_text
from reverie.transcripts.model import Message, Transcript

#: about 20k tokens per session: enough for a day's session, cheap in a batch.
DEFAULT_BUDGET_CHARS = 80_000
_TOOL_OUTPUT_CHARS = 400


def _message_lines(message: Message) -> list[str]:
    """Each piece redacted before it is cut: a cut can leave part of a secret no rule knows."""
    lines: list[str] = []
    text = redact_text(message.text.strip())
    if text:
        lines.append(f"{message.role}: {text}")
    for call in message.tool_calls:
        target = redact_text(call.command or ", ".join(call.file_paths) or "")
        lines.append(f"[{call.name} {call.kind.value}] {target}".rstrip())
    for result in message.tool_results:
        status = "error" if result.is_error or (result.exit_code or 0) != 0 else "ok"
        # redacted with text to spare after the cut, so a secret across it is seen whole
        output = " ".join(result.output.split())[: _TOOL_OUTPUT_CHARS + 1024]
        output = redact_text(output)[:_TOOL_OUTPUT_CHARS]
        lines.append(f"[result {status}] {output}".rstrip())
    return lines


def render_session(
    transcript: Transcript, notes: str | None, budget: int = DEFAULT_BUDGET_CHARS
) -> str:
    """Redacted text of one session within ``budget`` characters."""
    session = transcript.session
    header = [f"agent: {session.agent}", f"session: {session.id}"]
    if session.title:
        header.append(f"title: {session.title}")
    if session.cwd:
        header.append(f"cwd: {session.cwd}")
    parts = ["\n".join(header)]
    if notes and notes.strip():
        parts.append("### Session notes\n" + redact_text(notes.strip())[: budget // 4])
    body: list[str] = []
    for message in transcript.messages:
        if message.is_meta or message.is_sidechain:
            continue
        body.extend(_message_lines(message))
    conversation = "\n".join(body)
    room = max(budget - sum(len(p) for p in parts) - 100, 1000)
    if len(conversation) > room:
        head = conversation[: room // 5]
        tail = conversation[-(room - len(head)) :]
        conversation = f"{head}\n[... {len(conversation) - room} characters left out ...]\n{tail}"
    parts.append("### Conversation\n" + conversation)
    return redact_text("\n\n".join(parts))
