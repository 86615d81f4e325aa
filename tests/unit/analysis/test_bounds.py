"""Bad input keeps the same bounds, and what is dropped is counted; secrets never reach a fact;
the analysis streams (any iterator, consumed once) and crosses process boundaries (pickle)."""

from __future__ import annotations

import pickle
import time
from collections.abc import Iterator
from pathlib import Path

from reverie.analysis import SessionAnalyser, analyse_session
from reverie.session_memory.rule_based import build_notes
from reverie.session_memory.template import check_notes, default_template
from reverie.transcripts.model import Message, ToolCall, ToolKind, ToolResult

from .conftest import CWD, ClaudeLog


def _failing_commands(count: int) -> Iterator[Message]:
    yield Message(id="u", role="user", text="make every script pass")
    for n in range(count):
        call = ToolCall(id=f"c{n}", name="Bash", kind=ToolKind.SHELL,
                        command=f"./scripts/check_{n}.sh --strict", input={})
        yield Message(id=f"a{n}", role="assistant", tool_calls=[call])
        yield Message(id=f"r{n}", role="user", tool_results=[ToolResult(
            call_id=f"c{n}", is_error=True, exit_code=1, output=f"error: check {n} failed")])


def test_tens_of_thousands_of_failed_commands_stay_bounded() -> None:
    analyser = SessionAnalyser()
    analyser.feed_all(_failing_commands(30_000))
    analysis = analyser.result()
    assert analysis.counts.failures == 30_000
    assert len(analysis.errors) <= analyser.limits.errors
    assert analysis.counts.errors_dropped >= 30_000 - analyser.limits.open_total
    assert len(analysis.commands) <= analyser.limits.commands
    assert analysis.counts.commands_dropped == 30_000 - analyser.limits.commands
    assert len(pickle.dumps(analysis)) < 300_000


def test_notes_say_what_was_summarised() -> None:
    template = default_template()
    notes = build_notes(_failing_commands(5_000), session=None, workspace=Path(CWD),  # type: ignore[arg-type]
                        current_notes=template.text, template=template, previous=None)
    assert check_notes(notes.text) == []
    assert "more failures not listed" in notes.text
    assert "more project commands not listed" in notes.text
    assert len(notes.text) < 60_000


def test_one_enormous_tool_output_is_cheap() -> None:
    huge = ("x" * 199 + "\n") * 250_000  # 50 MB of output on one failing call
    messages = [
        Message(id="u", role="user", text="run the build"),
        Message(id="a", role="assistant", tool_calls=[ToolCall(
            id="c", name="Bash", kind=ToolKind.SHELL, command="make", input={})]),
        Message(id="r", role="user", tool_results=[ToolResult(
            call_id="c", is_error=True, exit_code=2, output=huge + "make: *** [all] Error 2")]),
    ]
    started = time.process_time()  # CPU time: the bound holds on a busy machine too
    analysis = analyse_session(messages)
    assert time.process_time() - started < 1.0
    [error] = analysis.errors
    assert error.error == "make: *** [all] Error 2"  # found in the tail, not the 50 MB


def test_thousands_of_sub_agent_records_are_counted_not_requests() -> None:
    def records() -> Iterator[Message]:
        yield Message(id="u", role="user", text="explore the codebase with sub-agents")
        for n in range(5_000):
            yield Message(id=f"s{n}", role="user", text=f"look at module {n}", is_sidechain=True)
            yield Message(id=f"t{n}", role="assistant", text="done", is_sidechain=True)

    analysis = analyse_session(records())
    assert analysis.counts.sidechain_messages == 10_000
    assert [r.text for r in analysis.requests] == ["explore the codebase with sub-agents"]


def test_secrets_are_redacted_in_every_fact(log: ClaudeLog) -> None:
    key = "sk-" + "proj-" + "Zx9" * 12
    (log.user(f"Always pass OPENAI_API_KEY={key} to the deploy script.")
     .bash(f"OPENAI_API_KEY={key} ./scripts/deploy.sh", "error: 401 Unauthorized", fail=True)
     .bash(f"OPENAI_API_KEY={key} ./scripts/deploy.sh --retry", "deployed"))
    analysis = log.analyse()
    dumped = analysis.model_dump_json()
    assert key not in dumped
    assert "[REDACTED" in dumped
    assert analysis.counts.redactions >= 3


def test_streaming_equals_list_and_pickles(log: ClaudeLog) -> None:
    (log.user("fix the rounding bug")
     .bash("pytest -k total", "FAILED tests/test_cart.py::test_total", fail=True)
     .edit("shop/cart.py", "round(total)", "round(total, 2)")
     .bash("pytest", "12 passed")
     .reply("Fixed the rounding in the cart total. " * 10))
    session, messages = log.messages()
    from_list = analyse_session(messages, session, Path(CWD))
    consumed: list[str] = []

    def once() -> Iterator[Message]:
        for message in messages:
            consumed.append(message.id)
            yield message

    streamed = analyse_session(once(), session, Path(CWD))
    assert streamed == from_list
    assert len(consumed) == len(messages)
    assert pickle.loads(pickle.dumps(streamed)) == streamed


def test_end_state_in_the_middle_of_a_tool_loop(log: ClaudeLog) -> None:
    (log.user("first add the model")
     .edit("shop/models.py", "a", "class Order:\n    pass")
     .reply("Added the model. " * 20)
     .user("now run the migrations")
     .pending("alembic upgrade head"))
    end = log.analyse().end
    assert end.last_request == "now run the migrations"
    assert end.in_progress == ["`alembic upgrade head`"]
    assert end.final_answer is None  # the last request has no answer yet
