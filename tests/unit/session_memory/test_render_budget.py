"""The conversation shown to the notes writer: the most recent part, bounded, redacted."""

from __future__ import annotations

from reverie.session_memory import llm_writer
from reverie.session_memory.conversation import render_messages
from reverie.session_memory.source import render_recent
from reverie.transcripts.model import Message

TOKEN = "ghp_" + "a1B2c3D4e5" * 4  # a GitHub token shape


def _conversation(count: int) -> list[Message]:
    return [
        Message(id=f"m{i}", role="user" if i % 2 else "assistant", text=f"turn {i} " + "x" * 900)
        for i in range(count)
    ]


def test_short_conversation_is_rendered_whole_and_redacted() -> None:
    messages = _conversation(5)
    messages.append(Message(id="s", role="user", text=f"use {TOKEN} please"))
    rendered, found = render_recent(messages, llm_writer.MAX_CONVERSATION_CHARS)
    expected = render_messages(messages).replace(TOKEN, "[REDACTED:github]")
    assert (rendered, found) == (expected, 1)


def test_long_conversation_keeps_the_most_recent_part_within_budget() -> None:
    budget = 20_000
    messages = _conversation(400)  # ~370 KB rendered
    messages[-3] = Message(id="s", role="user", text=f"token {TOKEN}")
    messages[10] = Message(id="old", role="user", text=f"old {TOKEN}")
    rendered, found = render_recent(messages, budget)
    header, _, body = rendered.partition("\n")
    assert header.startswith("[... ") and "earlier messages" in header
    assert len(body) == budget
    assert body.endswith(render_messages(messages[-1:]))
    assert "turn 399" in body and "turn 11 " not in body
    assert TOKEN not in rendered and "[REDACTED:github]" in body
    assert found == 1  # only what is shown was scanned


def test_the_writer_reads_what_the_person_typed_not_the_wrappers() -> None:
    """Editor context blocks, the /clear record and its output, an expanded /init prompt and a
    background task's notification never reach the model as if the person wrote them."""
    messages = [
        Message(id="a", role="user", text="<ide_opened_file>The user opened the file "
                "/repo/y.py in the IDE.</ide_opened_file>fix the bug in y.py"),
        Message(id="b", role="user", text="<command-name>/clear</command-name>\n"
                "<command-message>clear</command-message>\n<command-args></command-args>"),
        Message(id="c", role="user", text="<local-command-stdout></local-command-stdout>"),
        Message(id="d", role="user", text="Please analyze this codebase and create a CLAUDE.md "
                "file", is_meta=True),
        Message(id="e", role="user", text="<task-notification><task-id>b1</task-id><status>"
                "completed</status><summary>npm test completed (exit code 0)</summary>"
                "</task-notification>"),
        Message(id="f", role="user", text="<bash-input>make lint</bash-input>"),
    ]
    rendered = render_messages(messages)
    assert rendered.split("\n\n") == [
        "### user\nfix the bug in y.py",
        "### user\n[the user ran the agent command /clear]",
        "### user\n[a background task reported: b1 completed npm test completed (exit code 0)]",
        "### user\n[the user ran: ! make lint]",
    ]
