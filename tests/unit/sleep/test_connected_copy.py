"""A connected agent's managed copy of MEMORY.md follows the sleep cycle's REM apply."""

from __future__ import annotations

from reverie.agents.connection import connect
from reverie.config import ProjectPaths, Settings
from reverie.events import EventRecorder
from reverie.services.wiring import memory_writer
from reverie.sleep.cycle import SleepCycle
from reverie.sleep.tracing import SleepTracer


async def test_codex_copy_is_refreshed_after_rem(workspace) -> None:
    settings = Settings()
    connect("codex", workspace.root, "project", settings)
    agents_md = workspace.root / "AGENTS.md"
    assert "(no memory consolidated yet)" in agents_md.read_text()

    report = await SleepCycle(settings, events=EventRecorder(), writer=memory_writer(),
                              tracer=SleepTracer(use_otel=False)).run(workspace.root)
    assert report.run_id is not None
    memory = ProjectPaths(settings, workspace.root).memory_dir
    copy = agents_md.read_text()
    assert "(no memory consolidated yet)" not in copy
    assert f"]({memory / 'package-manager-and-scripts.md'})" in copy
