"""Where an extraction reads its conversation: the recent part within the budget, read from a
live transcript or from messages in hand, is exactly what rendering the whole scope shows."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

import pytest

from reverie.session_memory import llm_writer
from reverie.session_memory.conversation import render_messages
from reverie.session_memory.cursor import cursor_at, start_after
from reverie.session_memory.source import (
    InMemoryConversation,
    TranscriptConversation,
    extracted_point,
    main_chain,
    render_recent,
    select_recent,
)
from reverie.transcripts.digest import digests
from reverie.transcripts.model import Message, Session
from reverie.transcripts.reader import load_transcript

from .conftest import CLAUDE_INLINE, CLAUDE_SPOTTER, CODEX_ROLLOUT

BUDGET = llm_writer.MAX_CONVERSATION_CHARS
OVERLAP = llm_writer.OVERLAP_MESSAGES


def _scope(messages: list[Message], after: object, full: bool) -> list[Message]:
    """The reference: the whole selected scope, before any budget cut."""
    main = main_chain(messages)
    start = 0 if full else start_after(main, after)  # type: ignore[arg-type]
    return main if start == 0 else main[max(0, start - OVERLAP) :]


def _big_conversation(count: int = 800) -> list[Message]:
    messages = []
    for index in range(count):
        role = "user" if index % 2 == 0 else "assistant"
        text = f"message {index}: " + ("lorem ipsum dolor " * 200)[: 1_000 + 37 * (index % 50)]
        if index == 3:
            text += " token sk-proj-" + "a1B2c3D4e5" * 4  # a secret far before the budget
        if index == count - 2:
            text += " key ghp_" + "B" * 36  # one inside it
        messages.append(Message(id=f"m{index}", role=role, text=text,
                                is_sidechain=index % 17 == 5))
    return messages


@pytest.mark.parametrize("full", [False, True])
@pytest.mark.parametrize("cursor_at_index", [None, 10, 700])
def test_recent_selection_renders_like_the_whole_scope(
    full: bool, cursor_at_index: int | None
) -> None:
    messages = _big_conversation()
    main = main_chain(messages)
    after = None if cursor_at_index is None else cursor_at(main, cursor_at_index)
    recent = select_recent(messages, after, full=full, overlap=OVERLAP, budget_chars=BUDGET)
    scope = _scope(messages, after, full)
    assert (recent.text, recent.redactions) == render_recent(scope, BUDGET)
    whole = render_messages(scope)
    over = len(whole) > BUDGET
    assert over == (full or cursor_at_index != 700)
    if over:  # the most recent part, exactly the budget, and what was left out is said
        header, _, body = recent.text.partition("\n")
        assert header.startswith("[... ") and len(body) == BUDGET
        assert whole.endswith(body.replace("[REDACTED:github]", "ghp_" + "B" * 36))
    else:
        assert recent.text.replace("[REDACTED:github]", "ghp_" + "B" * 36) == whole
    # the secret shown is redacted and counted; the one far before the budget is never scanned
    assert "ghp_" not in recent.text and recent.redactions == 1
    assert "sk-proj-" not in recent.text
    assert recent.whole == (full or after is None)
    assert recent.point == extracted_point(messages)
    assert recent.point.cursor == cursor_at(main, -1)


@pytest.mark.parametrize("path", [CLAUDE_INLINE, CLAUDE_SPOTTER, CODEX_ROLLOUT],
                         ids=lambda p: p.parent.name)
async def test_a_live_transcript_reads_the_same_as_messages_in_hand(
    path: Path, tmp_path: Path
) -> None:
    copy = tmp_path / path.name
    shutil.copyfile(path, copy)
    transcript = load_transcript(copy)
    messages = transcript.messages
    main = main_chain(messages)
    after = cursor_at(main, len(main) // 2)
    in_hand = InMemoryConversation(messages)
    live = TranscriptConversation(copy, transcript.session.id, digests(messages), asyncio.to_thread)
    assert list(live.digests()) == list(in_hand.digests())
    assert [m.id for m in await live.messages()] == [m.id for m in messages]
    for full in (False, True):
        want = await in_hand.recent(after, full=full, overlap=OVERLAP, budget_chars=BUDGET)
        got = await live.recent(after, full=full, overlap=OVERLAP, budget_chars=BUDGET)
        assert got == want
        assert got.point.tokens > 0 and got.point.cursor == cursor_at(main, -1)


async def test_a_live_transcript_is_read_as_it_is_when_the_extraction_runs(tmp_path: Path) -> None:
    source = CLAUDE_INLINE.read_bytes().splitlines(keepends=True)
    copy = tmp_path / "live.jsonl"
    copy.write_bytes(b"".join(source[: len(source) // 2]))
    session: Session = load_transcript(copy).session
    live = TranscriptConversation(copy, session.id, [], asyncio.to_thread)
    before = await live.recent(None, full=False, overlap=OVERLAP, budget_chars=BUDGET)
    copy.write_bytes(b"".join(source))  # the agent went on meanwhile
    after = await live.recent(None, full=False, overlap=OVERLAP, budget_chars=BUDGET)
    assert len(after.text) > len(before.text) and after.point != before.point
    assert after.point == extracted_point(load_transcript(copy).messages)


def test_session_head_matches_the_full_read_for_what_a_forced_extraction_needs() -> None:
    from reverie.session_memory.source import load_session_digests, load_session_head

    from .conftest import CLAUDE_SPOTTER, CODEX_ROLLOUT

    for path in (CLAUDE_SPOTTER, CODEX_ROLLOUT):
        head = load_session_head(path, None, messages=5)
        full, _digests = load_session_digests(path, None)
        assert (head.id, head.cwd, head.agent, head.parent_session_id) == (
            full.id, full.cwd, full.agent, full.parent_session_id)
