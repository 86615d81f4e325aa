"""The sleep cycle's REM checks every fact against the code before its apply, like a dream:
a fact whose file was renamed is retired in the sleep run, with the reason."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "eval"))

from staleness_set import GitWorkspace

from reverie.config import ProjectPaths, Settings
from reverie.memory.history import MemoryHistory
from reverie.sleep.cycle import SleepCycle
from reverie.sleep.tracing import SleepTracer

TOPIC = """---
name: Code
description: where things are
type: project
---

- Money helpers live in src/lib/money.ts.
- Use sentence case for headings.
"""


async def test_rem_retires_a_stale_fact(workspace) -> None:
    ws = GitWorkspace(workspace.root)
    ws.write("src/lib/money.ts", "export const cents = 1\n")
    ws.commit("init")
    ws.move("src/lib/money.ts", "src/lib/currency.ts")
    ws.commit("rename")
    settings = Settings()
    memory = ProjectPaths(settings, workspace.root).memory_dir
    memory.mkdir(parents=True)
    (memory / "code.md").write_text(TOPIC)
    (memory / "MEMORY.md").write_text("# Memory\n\n- [Code](code.md) - where things are\n")
    report = await SleepCycle(settings, tracer=SleepTracer(use_otel=False)).run(workspace.root)
    assert report.rem_error is None and report.run_id
    text = (memory / "code.md").read_text()
    live, retired = text.split("## Retired")
    assert "Use sentence case for headings." in live and "money.ts" not in live
    assert "(retired on " in retired and "renamed to `src/lib/currency.ts` in " in retired
    run = MemoryHistory(memory).runs()[0]
    assert run.source == "sleep" and "retired 1 stale fact" in run.summary
