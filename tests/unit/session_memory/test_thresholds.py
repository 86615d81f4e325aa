"""Cursors and thresholds, with token counts from real transcripts."""

from __future__ import annotations

from reverie.session_memory.cursor import (
    count_tool_calls_since,
    cursor_at,
    find,
    last_turn_has_tool_calls,
)
from reverie.session_memory.source import main_chain
from reverie.session_memory.state import ExtractionState
from reverie.session_memory.thresholds import ThresholdConfig, evaluate
from reverie.transcripts.model import Message
from reverie.transcripts.reader import load_transcript
from reverie.transcripts.tokens import context_tokens

from .conftest import CLAUDE_SPOTTER, Conversation


def test_cursor_is_stable_and_counts_occurrences() -> None:
    a = Message(id="", role="user", text="same")
    b = Message(id="", role="user", text="same")
    c = Message(id="x1", role="assistant", text="other")
    messages = [a, c, b]
    cursor = cursor_at(messages, 2)
    assert cursor.occurrence == 2
    assert find(messages, cursor) == 2
    assert find(messages, cursor_at(messages, 0)) == 0
    # re-reading gives equal messages: the cursor still lands on the same position
    reread = [m.model_copy() for m in messages]
    assert find(reread, cursor) == 2
    assert find(messages[:2], cursor) is None  # gone after a rewrite


def test_tool_calls_since_and_last_turn(conversation: Conversation) -> None:
    conv = conversation.user("do it").shell("ls").shell("pytest")
    cursor = cursor_at(conv.messages, 1)  # after the first tool call
    assert count_tool_calls_since(conv.messages, None) == 2
    assert count_tool_calls_since(conv.messages, cursor) == 1
    assert last_turn_has_tool_calls(conv.messages)
    conv.assistant("all done")
    assert not last_turn_has_tool_calls(conv.messages)


def test_split_api_response_counts_as_one_turn() -> None:
    from reverie.transcripts.model import ToolCall

    text = Message(id="a1", role="assistant", text="I will run it", api_message_id="msg_1")
    call = Message(id="a2", role="assistant", api_message_id="msg_1",
                   tool_calls=[ToolCall(id="t", name="Bash")])
    assert last_turn_has_tool_calls([call, text])  # the text record comes last on disk


def test_thresholds_on_a_real_transcript() -> None:
    messages = main_chain(load_transcript(CLAUDE_SPOTTER).messages)
    config = ThresholdConfig()
    tokens = [context_tokens(messages[: i + 1]) for i in range(len(messages))]
    first_due = next(i for i, t in enumerate(tokens) if t >= config.init_tokens)
    assert tokens[-1] > 20_000  # a real, sizable session
    state = ExtractionState()
    before = evaluate(messages[:first_due], state, config, tokens[first_due - 1])
    assert not before.due and "to start" in before.why
    at = evaluate(messages[: first_due + 1], state, config, tokens[first_due])
    assert at.due == (at.tool_calls_since >= 3 or at.natural_break)
    assert at.tokens == tokens[first_due] >= 10_000

    # after an extraction at that point, the next one needs 5,000 more tokens
    state.initialized = True
    state.tokens_at_last_extraction = tokens[first_due]
    state.last_memory_cursor = cursor_at(messages, first_due)
    soon = next(i for i in range(first_due + 1, len(messages))
                if tokens[i] - tokens[first_due] > 0)
    assert not evaluate(messages[: soon + 1], state, config, tokens[soon]).due
    later = next(i for i in range(first_due + 1, len(messages))
                 if tokens[i] - tokens[first_due] >= 5_000
                 and (count_tool_calls_since(messages[: i + 1], state.last_memory_cursor) >= 3
                      or not last_turn_has_tool_calls(messages[: i + 1])))
    decision = evaluate(messages[: later + 1], state, config, tokens[later])
    assert decision.due and decision.new_tokens >= 5_000


def test_threshold_rules(conversation: Conversation) -> None:
    config = ThresholdConfig(init_tokens=100, update_tokens=50, tool_calls=3)
    state = ExtractionState(initialized=True, tokens_at_last_extraction=1_000)
    conv = conversation.user("go").shell("a").shell("b")
    # enough tokens, two tool calls, mid tool loop: not yet
    assert not evaluate(conv.messages, state, config, 1_060).due
    conv.shell("c")
    assert evaluate(conv.messages, state, config, 1_060).due  # third tool call
    assert not evaluate(conv.messages, state, config, 1_040).due  # too few new tokens
    conv2 = Conversation().user("question").assistant("answer")
    assert evaluate(conv2.messages, state, config, 1_050).due  # natural break


def test_threshold_config_from_env(monkeypatch) -> None:
    from reverie.config import Settings

    monkeypatch.setenv("REVERIE_SESSION_MEMORY_INIT_TOKENS", "2000")
    monkeypatch.setenv("REVERIE_SESSION_MEMORY_UPDATE_TOKENS", "700")
    monkeypatch.setenv("REVERIE_SESSION_MEMORY_TOOL_CALLS", "5")
    assert ThresholdConfig.from_settings(Settings()) == ThresholdConfig(2000, 700, 5)
