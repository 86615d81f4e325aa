"""The offline notes cost grows linearly with the session: 4x the calls must take about 4x the
CPU time, however busy the machine (a quadratic failure → fix search, as before, took 16x and
more)."""

from __future__ import annotations

import random
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from reverie.session_memory.rule_based import build_notes
from reverie.session_memory.template import default_template
from reverie.transcripts.model import Message, ToolCall, ToolKind, ToolResult

WORDS = "cart order total cents parser cache session fixture money refund invoice tax".split()


def _session(calls: int, seed: int = 7) -> Iterator[Message]:
    """A long agent session: requests, reads, edits and test runs, one in twelve failing."""
    rng = random.Random(seed)
    for n in range(calls):
        if n % 10 == 0:
            yield Message(id=f"u{n}", role="user",
                          text=f"fix the {rng.choice(WORDS)} handling in module {n // 10}")
        kind = rng.random()
        word = rng.choice(WORDS)
        if kind < 0.35:
            call = ToolCall(id=f"c{n}", name="Read", kind=ToolKind.READ,
                            file_paths=[f"/w/src/{word}/{n % 97}.py"], input={})
            output, failed = "1\tcontent", False
        elif kind < 0.6:
            call = ToolCall(id=f"c{n}", name="Edit", kind=ToolKind.EDIT,
                            file_paths=[f"/w/src/{word}/{n % 97}.py"],
                            input={"old_string": f"x = {n}", "new_string": f"x = {n + 1}"})
            output, failed = "updated", False
        else:
            failed = rng.random() < 0.08 * 3
            command = f"pytest tests/test_{word}.py -k case{n % 50}" if failed else (
                "pytest" if rng.random() < 0.2 else f"pytest tests/test_{word}.py")
            call = ToolCall(id=f"c{n}", name="Bash", kind=ToolKind.SHELL, command=command,
                            input={"command": command})
            output = f"FAILED tests/test_{word}.py::test_case - AssertionError" if failed \
                else "5 passed"
        yield Message(id=f"a{n}", role="assistant", tool_calls=[call])
        yield Message(id=f"r{n}", role="user", tool_results=[ToolResult(
            call_id=f"c{n}", is_error=failed, exit_code=1 if failed else 0, output=output)])
    yield Message(id="end", role="assistant", text="All done. " * 40)


def _seconds(calls: int) -> float:
    template = default_template()
    best = float("inf")
    for _ in range(3):  # the best of three CPU times (cache and allocator noise)
        messages = list(_session(calls))
        started = time.process_time()
        build_notes(iter(messages), session=None, workspace=Path("/w"),  # type: ignore[arg-type]
                    current_notes=template.text, template=template, previous=None)
        best = min(best, time.process_time() - started)
    return best


@pytest.mark.bench  # seconds of CPU on a 6,000-call session: run apart (-m bench -n 0)
def test_notes_time_grows_linearly() -> None:
    small = _seconds(1_500)
    large = _seconds(6_000)
    # linear is 4x; allow noise, but a quadratic pass (16x) fails
    assert large / small < 8.0, (small, large)
