"""Session-memory input tokens: incremental context vs the spec's full-history context.

Replays sessions message by message through ``SessionMemoryManager.on_messages`` (default
thresholds: 10k to start, then 5k new tokens and 3 tool calls or a natural break) against the
fake LLM server, which counts input tokens from the request size (chars / 4). Each extraction
is one ``edit_file`` call on the notes plus a final reply, like a real model's update.

Run: ``.venv/bin/python tests/bench/tokens.py`` (add ``--turns N`` for a longer synthetic session).
"""

from __future__ import annotations

import argparse
import asyncio
import re
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

if __name__ == "__main__" and not __package__:
    # run by hand (tests/bench/tokens.py): tests/ replaces this folder on sys.path, as
    # under pytest (pythonpath in pyproject.toml), so `support` and `bench` import alike
    sys.path[0] = str(Path(__file__).resolve().parents[1])

from reverie.config import Settings
from reverie.events import EventRecorder
from reverie.session_memory.manager import SessionMemoryManager
from reverie.transcripts.model import Message, Session, ToolCall, ToolKind, ToolResult, Usage
from reverie.transcripts.reader import load_transcript
from reverie.transcripts.tokens import context_tokens
from support.fake_llm import FakeLLMServer, FakeRequest, Step

FIXTURE = (
    Path(__file__).resolve().parents[1] / "fixtures" / "transcripts" / "codex" / "codemie-code"
    / "sessions" / "2026" / "05" / "11"
    / "rollout-2026-05-11T11-26-55-019e1625-789d-76c0-80ab-3724b5ddb799.jsonl"
)
WORKLOG_DESC = "_A terse step-by-step record of what was tried and what was done_"
Mode = Literal["incremental", "full"]


@dataclass(frozen=True)
class BenchResult:
    name: str
    mode: Mode
    session_tokens: int
    extractions: int
    model_calls: int
    tokens_in: int
    seconds: float


def responder(request: FakeRequest) -> Step:
    """Turn 1: append a worklog line naming the newest user request; turn 2: stop."""
    if request.turn > 1:
        return Step.reply("updated")
    found = re.findall(r"### user\n(.{0,60})", request.last_user_text)
    line = f"- {found[-1].strip() if found else 'no new request'}"
    return Step.tool("edit_file", file_path="session_memory.md", old_string=WORKLOG_DESC,
                     new_string=f"{WORKLOG_DESC}\n{line}")


def synthetic_session(turns: int) -> tuple[Session, list[Message]]:
    """A long, realistic-shaped coding session: request, reads, edits, test runs, replies.

    Usage is recorded on assistant replies the way agents log it (the context grows), so the
    thresholds see the same numbers they would on a real transcript.
    """
    session = Session(id="synthetic-long", agent="generic", path=Path("/tmp/synthetic.jsonl"),
                      cwd="/work/app")
    messages: list[Message] = []
    context = 3_000  # system prompt and tool definitions
    n = 0

    def add(message: Message) -> None:
        nonlocal context
        messages.append(message)
        context += max(1, (len(message.text) + sum(len(r.output) for r in message.tool_results)
                           + sum(len(str(c.input)) for c in message.tool_calls)) // 4)

    for turn in range(turns):
        n += 1
        add(Message(id=f"u{n}", role="user",
                    text=f"Turn {turn}: please change the handling of case {turn} in "
                         f"src/module_{turn % 40}.py and keep the tests green. " + "why " * 40))
        for step in range(3):
            n += 1
            call_id = f"c{n}"
            if step == 0:
                call = ToolCall(id=call_id, name="Read", kind=ToolKind.READ,
                                file_paths=[f"/work/app/src/module_{turn % 40}.py"],
                                input={"file_path": f"/work/app/src/module_{turn % 40}.py"})
                output = "\n".join(f"{i:4} def fn_{turn}_{i}(x): return x + {i}"
                                   for i in range(60))
            elif step == 1:
                call = ToolCall(id=call_id, name="Edit", kind=ToolKind.EDIT,
                                file_paths=[f"/work/app/src/module_{turn % 40}.py"],
                                input={"file_path": f"/work/app/src/module_{turn % 40}.py",
                                       "old_string": f"return x + {turn}",
                                       "new_string": f"return handle_{turn}(x)"})
                output = "The file has been updated."
            else:
                call = ToolCall(id=call_id, name="Bash", kind=ToolKind.SHELL,
                                input={"command": "pytest -q"}, command="pytest -q")
                output = ("." * 200 + f"\n{120 + turn} passed in 3.2s\n") * 3
            add(Message(id=f"a{n}", role="assistant", tool_calls=[call],
                        usage=Usage(input_tokens=context, output_tokens=80)))
            add(Message(id=f"r{n}", role="user",
                        tool_results=[ToolResult(call_id=call_id, output=output, exit_code=0)]))
        n += 1
        add(Message(id=f"a{n}", role="assistant",
                    text=f"Done with turn {turn}: module_{turn % 40}.py now calls handle_{turn}. "
                         + "explanation " * 30,
                    usage=Usage(input_tokens=context, output_tokens=200)))
    return session, messages


async def replay(name: str, session: Session, messages: list[Message], mode: Mode,
                 server: FakeLLMServer, base: Path) -> BenchResult:
    data = base / f"{name}-{mode}"
    settings = Settings(
        provider="openai", base_url=server.base_url, api_key="bench", model="fake",
        max_retries=0, data_dir=data, config_dir=base / "config",
        session_memory_context=mode,
    )
    events = EventRecorder()
    manager = SessionMemoryManager(settings, events)
    workspace = Path(session.cwd or "/work")
    before = len(server.model_requests())
    started = time.perf_counter()
    # one check per completed assistant record, as a watcher would after each append
    for index, message in enumerate(messages):
        if message.role != "assistant":
            continue
        await manager.on_messages(session, messages[: index + 1], workspace)
        await manager.drain(60)
    await manager.drain(60)
    completes = events.of_type("complete")
    errors = events.of_type("error")
    if errors:
        raise RuntimeError(f"{name}/{mode}: {errors[0].message}")
    return BenchResult(
        name=name,
        mode=mode,
        session_tokens=context_tokens(messages),
        extractions=len(completes),
        model_calls=len(server.model_requests()) - before,
        tokens_in=sum(int(e.payload["tokens_in"]) for e in completes),
        seconds=time.perf_counter() - started,
    )


async def run_benchmark(turns: int = 240, include_fixture: bool = True) -> list[BenchResult]:
    fixture = load_transcript(FIXTURE) if include_fixture else None
    long_session, long_messages = synthetic_session(turns)
    results: list[BenchResult] = []
    with tempfile.TemporaryDirectory(prefix="reverie-bench-") as tmp, \
            FakeLLMServer(fallback=responder) as server:
        sessions = [("synthetic-long", long_session, long_messages)]
        if include_fixture:
            assert fixture is not None
            sessions.insert(0, ("codex-fixture", fixture.session, fixture.messages))
        for name, session, messages in sessions:
            for mode in ("full", "incremental"):
                results.append(await replay(name, session, messages, mode, server, Path(tmp)))
    return results


def report(results: list[BenchResult]) -> str:
    lines = [f"{'session':16} {'mode':12} {'context':>8} {'runs':>5} {'calls':>6} "
             f"{'input tokens':>13} {'seconds':>8}"]
    for r in results:
        lines.append(f"{r.name:16} {r.mode:12} {r.session_tokens:>8} {r.extractions:>5} "
                     f"{r.model_calls:>6} {r.tokens_in:>13} {r.seconds:>8.1f}")
    by_name: dict[str, dict[str, int]] = {}
    for r in results:
        by_name.setdefault(r.name, {})[r.mode] = r.tokens_in
    for name, modes in by_name.items():
        if modes.get("full"):
            lines.append(f"{name}: incremental / full = {modes['incremental'] / modes['full']:.3f}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--turns", type=int, default=240,
                        help="turns of the synthetic session (240 gives ~220k tokens)")
    args = parser.parse_args(argv)
    results = asyncio.run(run_benchmark(args.turns))
    print(report(results))
    long = {r.mode: r for r in results if r.name == "synthetic-long"}
    if long["full"].session_tokens < 200_000:
        print("warning: the synthetic session is under 200k tokens", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
