"""Cursors into a conversation: a stable message fingerprint plus its occurrence number.

A cursor survives re-reading the transcript (message ids are stable across reads) and tells two
equal messages apart by counting. When a transcript is rewritten and the cursor's message is gone,
``find`` returns ``None`` and callers start again from the beginning.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict

from reverie.transcripts.digest import message_fingerprint
from reverie.transcripts.model import Message


class MessageCursor(BaseModel):
    """Points at one message: its fingerprint and which occurrence of that fingerprint it is."""

    model_config = ConfigDict(frozen=True)

    fingerprint: str
    occurrence: int


@dataclass(frozen=True, slots=True)
class ExtractedPoint:
    """Where an extraction got to: what the session-memory state records after it."""

    tokens: int
    #: the cursor of the last main-chain message the writer saw
    cursor: MessageCursor | None
    #: the agent was in the middle of a tool loop there
    mid_tool_loop: bool


def fingerprint(message: Message) -> str:
    """The message's id when it has one, else a hash of what it says."""
    return message_fingerprint(message)


def cursor_at(messages: Sequence[Message], index: int) -> MessageCursor:
    """The cursor of ``messages[index]`` (negative indexes count from the end)."""
    if index < 0:
        index += len(messages)
    target = fingerprint(messages[index])
    occurrence = sum(1 for m in messages[: index + 1] if fingerprint(m) == target)
    return MessageCursor(fingerprint=target, occurrence=occurrence)


def find(messages: Sequence[Message], cursor: MessageCursor | None) -> int | None:
    """The index ``cursor`` points at, or ``None`` when there is no cursor or it is gone."""
    if cursor is None:
        return None
    seen = 0
    for index, message in enumerate(messages):
        if fingerprint(message) == cursor.fingerprint:
            seen += 1
            if seen == cursor.occurrence:
                return index
    return None


def start_after(messages: Sequence[Message], cursor: MessageCursor | None) -> int:
    """The index of the first message after ``cursor`` (0 when the cursor is unknown)."""
    index = find(messages, cursor)
    return 0 if index is None else index + 1


def count_tool_calls_since(messages: Sequence[Message], cursor: MessageCursor | None) -> int:
    """Tool calls the assistant made after ``cursor`` (all of them without a cursor)."""
    return sum(
        len(m.tool_calls)
        for m in messages[start_after(messages, cursor) :]
        if m.role == "assistant"
    )


def last_assistant_turn(messages: Sequence[Message]) -> list[Message]:
    """The last assistant response: the trailing records that share its ``api_message_id``.

    Agents that log one API response as several records (Claude Code writes one per content
    block) would otherwise hide a tool call in a sibling record.
    """
    last = next((i for i in range(len(messages) - 1, -1, -1) if messages[i].role == "assistant"),
                None)
    if last is None:
        return []
    anchor = messages[last]
    if anchor.api_message_id is None:
        return [anchor]
    turn = [anchor]
    for index in range(last - 1, -1, -1):
        candidate = messages[index]
        if candidate.role != "assistant" or candidate.api_message_id != anchor.api_message_id:
            break
        turn.append(candidate)
    turn.reverse()
    return turn


def last_turn_has_tool_calls(messages: Sequence[Message]) -> bool:
    """True while the agent is in the middle of a tool loop (its last response called tools)."""
    return any(m.tool_calls for m in last_assistant_turn(messages))
