"""REM writes through the one memory writer: its output is repaired and validated like a
dream's, and the after-apply hooks run. The old REM drove the transaction itself and applied an
index agents would cut short; these tests fail on that path."""

from __future__ import annotations

from pathlib import Path

from reverie.config import ProjectPaths
from reverie.memory.history import MemoryHistory
from reverie.memory.store import MAX_INDEX_LINES, blocking_problems, check_index
from reverie.memory.write import MemoryWriter
from support.fake_llm import FakeLLMServer, FakeRequest, Step

from .test_cycle_model import REM_REPLY, cycle, is_rem, seed_memory, settings_for, summary_for


def _seed_a_full_index(memory: Path) -> None:
    """``MEMORY.md`` at exactly the line limit: REM's one new entry takes it over."""
    seed_memory(memory)
    archive = memory / "archive"
    archive.mkdir()
    index = (memory / "MEMORY.md").read_text().splitlines()
    room = MAX_INDEX_LINES - len(index)
    for n in range(room):
        (archive / f"a{n}.md").write_text(f"---\nname: A{n}\ndescription: old\ntype: project\n"
                                          f"---\n\nArchived fact {n}.\n")
        index.append(f"- [A{n}](archive/a{n}.md) - old")
    (memory / "MEMORY.md").write_text("\n".join(index) + "\n")
    assert len(index) == MAX_INDEX_LINES and blocking_problems(check_index(memory)) == []


async def test_a_rem_that_would_overflow_the_index_is_repaired(workspace) -> None:
    def respond(request: FakeRequest) -> Step:
        return Step.json_reply(REM_REPLY) if is_rem(request) else summary_for(request)

    with FakeLLMServer(fallback=respond) as server:
        settings = settings_for("openai", server)
        memory = ProjectPaths(settings, workspace.root).memory_dir
        _seed_a_full_index(memory)
        report = await cycle(settings).run(workspace.root)

    assert report.rem_error is None and report.run_id is not None
    assert blocking_problems(check_index(memory)) == [], "REM left an index agents cut short"
    (run,) = MemoryHistory(memory).runs()
    assert run.source == "sleep" and "npm-build.md" in run.added


async def test_rem_runs_the_writers_after_apply_hooks(workspace) -> None:
    applied: list[Path] = []

    def respond(request: FakeRequest) -> Step:
        return Step.json_reply(REM_REPLY) if is_rem(request) else summary_for(request)

    with FakeLLMServer(fallback=respond) as server:
        settings = settings_for("openai", server)
        memory = ProjectPaths(settings, workspace.root).memory_dir
        seed_memory(memory)
        writer = MemoryWriter(after_apply=[applied.append])
        report = await cycle(settings, writer=writer).run(workspace.root)

    assert report.run_id is not None and applied == [memory]
