"""Token counting: recorded usage first, chars/4 estimates after it."""

from __future__ import annotations

from reverie.transcripts.model import Message, ToolCall, ToolResult, Usage
from reverie.transcripts.tokens import context_tokens, estimate_tokens, message_tokens


def test_estimate_is_about_chars_over_four() -> None:
    assert estimate_tokens("") == 0
    assert estimate_tokens("abcd" * 100) == 100
    assert estimate_tokens("abcdef") == 2  # round(1.5) -> 2 (banker's rounding)


def test_message_tokens_counts_text_tool_inputs_and_outputs() -> None:
    plain = Message(id="1", role="assistant", text="x" * 40)
    assert message_tokens(plain) == 10
    with_tools = Message(
        id="2", role="assistant", text="x" * 40,
        tool_calls=[ToolCall(id="c", name="Read", input={"file_path": "/a" * 20})],
        tool_results=[ToolResult(call_id="c", output="y" * 400)],
    )
    assert message_tokens(with_tools) > message_tokens(plain) + 100


def test_context_tokens_uses_last_usage_plus_later_estimates() -> None:
    msgs = [
        Message(id="u", role="user", text="q" * 400),
        Message(id="a1", role="assistant", text="a" * 40, api_message_id="m1",
                usage=Usage(input_tokens=100, output_tokens=20, cache_read_tokens=1000,
                            cache_write_tokens=5)),
        Message(id="a2", role="assistant", text="b" * 4000, api_message_id="m1"),  # same response
        Message(id="t", role="tool", tool_results=[ToolResult(call_id="c", output="z" * 80)]),
    ]
    assert context_tokens(msgs) == 1125 + 20
    assert context_tokens(msgs[:1]) == 100  # no usage: estimate only
    assert context_tokens([]) == 0
