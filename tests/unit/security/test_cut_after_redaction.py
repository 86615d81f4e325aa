"""Text is redacted before it is cut: a cut through a secret must not leave part of it."""

from __future__ import annotations

from pathlib import Path

from reverie.session_memory.conversation import render_message
from reverie.sleep.render import render_session
from reverie.transcripts.model import Message, Session, ToolCall, ToolResult, Transcript
from reverie.transcripts.redacted import redact_message, redact_session

TOKEN = "github" + "_pat_" + "vWvndrgHQSabhE7x2Lq9ZrT4mN8pK3sD6fG1hJ0kL5"


def _padded(width: int) -> str:
    """A line where the token starts 20 characters before ``width`` (where a clip cuts)."""
    return "x" * (width - 31) + f" export GH={TOKEN} && make deploy " + "y" * 8000


def test_clipped_pieces_of_a_rendered_message_keep_no_part_of_a_secret() -> None:
    message = Message(
        id="m", role="assistant", text=_padded(4000),
        tool_calls=[ToolCall(id="c", name="Bash", command=_padded(400)),
                    ToolCall(id="d", name="Other", input={"args": [_padded(133)]})],
        tool_results=[ToolResult(call_id="c", output=_padded(1000))])
    rendered = render_message(message)
    assert rendered is not None and "[... " in rendered  # it was cut
    assert TOKEN[:12] not in rendered and TOKEN[-12:] not in rendered


def test_sleep_rendering_cuts_after_redacting() -> None:
    message = Message(id="m", role="user", text="go",
                      tool_results=[ToolResult(call_id="c", output=_padded(400))])
    transcript = Transcript(
        session=Session(id="s", agent="claude-code", path=Path("/t.jsonl"),
                        title="x" * 70 + " " + TOKEN),
        messages=[message])
    text = render_session(transcript, notes=_padded(100), budget=2000)
    assert TOKEN[:12] not in text


def test_redact_message_and_session() -> None:
    message = Message(id="m", role="assistant", text=f"use {TOKEN}", tool_calls=[
        ToolCall(id="c", name="MultiEdit", input={"edits": [{"new_string": f"T={TOKEN}"}],
                                                  "env": {"API_TOKEN": "Zq8-LmN4-pR7"}})])
    clean, count = redact_message(message)
    assert count == 3 and TOKEN not in clean.model_dump_json()
    assert "Zq8-LmN4-pR7" not in clean.model_dump_json()
    session = Session(id="s", agent="codex", path=Path("/t"), title=f"deploy {TOKEN}")
    assert TOKEN not in (redact_session(session).title or "")
