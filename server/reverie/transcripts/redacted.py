"""Messages and sessions with secrets replaced, field by field.

For code that cuts, shortens or picks pieces of a conversation (offline notes, sleep
summaries): redacting each piece after it was cut can leave part of a secret that no rule
recognises, so these redact the whole fields first.
"""

from __future__ import annotations

from reverie.redact import redact, redact_value
from reverie.transcripts.model import Message, Session


def redact_message(message: Message) -> tuple[Message, int]:
    """A copy of ``message`` with its text, tool inputs (nested, each value with its key),
    commands and outputs redacted, and how many secrets were replaced."""
    total = 0

    def clean(text: str) -> str:
        nonlocal total
        cleaned, found = redact(text)
        total += found
        return cleaned

    calls = []
    for call in message.tool_calls:
        inputs, found = redact_value(call.input)
        total += found
        command = clean(call.command) if call.command else call.command
        calls.append(call.model_copy(update={"input": inputs, "command": command}))
    results = [r.model_copy(update={"output": clean(r.output)}) for r in message.tool_results]
    update: dict[str, object] = {"text": clean(message.text), "tool_calls": calls,
                                 "tool_results": results}
    if message.display_text:
        update["display_text"] = clean(message.display_text)
    return (message.model_copy(update=update) if total else message), total


def redact_session(session: Session) -> Session:
    """A copy with the title redacted (an agent's ``summary`` record, a first prompt)."""
    if not session.title:
        return session
    title, found = redact(session.title)
    return session.model_copy(update={"title": title}) if found else session

