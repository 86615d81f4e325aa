"""A deep-sleep batch that never ends, but where some items did finish: the cycle keeps those
summaries, counts the rest as failed, and REM consolidates the partial candidates. Both wire
formats, against the fake LLM server, with a fake clock so the 2 h timeout costs no time."""

from __future__ import annotations

import json
import os
import time
from datetime import date, timedelta
from pathlib import Path
from typing import Any

import pytest

from reverie.config import ProjectPaths, Settings
from reverie.sleep.cycle import SleepCycle
from reverie.sleep.entries import load_entries
from reverie.sleep.tracing import SleepTracer
from support.clock import FakeClock
from support.fake_llm import BatchBehaviour, FakeLLMServer, FakeRequest, Step

NAYA_FIXTURE = ("codex/codemie-code/sessions/2026/05/11/"
                "rollout-2026-05-11T13-28-45-019e1695-0522-7c83-8b39-0dd379793f80.jsonl")
NAYA_CWD = "/Users/Sample_User/naya"




def add_third_session(workspace: Any, transcripts_dir: Path) -> None:
    """A second Codex session in the same project, changed 90 min ago (between the other two)."""
    text = (transcripts_dir / NAYA_FIXTURE).read_text("utf-8").replace(
        json.dumps(NAYA_CWD)[1:-1], json.dumps(str(workspace.root))[1:-1])
    target = workspace.agent_home / ".codex" / "sessions" / "2026" / "05" / "11" / Path(
        NAYA_FIXTURE).name
    target.write_text(text, "utf-8")
    when = time.time() - 5400
    os.utime(target, (when, when))


def is_rem(request: FakeRequest) -> bool:
    return "memory keeper" in request.system


def respond(request: FakeRequest) -> Step:
    if is_rem(request):
        return Step.json_reply({"entries": [
            {"key": f"fact-{cid}", "title": f"Fact {cid}", "description": f"From {cid}",
             "type": "project", "content": f"Learned in {cid}.", "recorded": "2001-01-01"}
            for cid in ("session-0", "session-2")
        ]})
    cid = request.custom_id
    return Step.json_reply({
        "summary": f"Summary written for {cid}.",
        "memory_candidates": [{"key": f"fact-{cid}", "value": f"Learned in {cid}."}],
    })


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
async def test_never_ending_batch_keeps_finished_summaries_and_rem_runs(
    provider: str, workspace: Any, transcripts_dir: Path
) -> None:
    add_third_session(workspace, transcripts_dir)
    behaviour = BatchBehaviour(never_end=True, finished_custom_ids=["session-0", "session-2"],
                               cancel_polls=1)
    with FakeLLMServer(fallback=respond, batch=behaviour) as server:
        settings = Settings(provider=provider, base_url=server.base_url, api_key="test-key",
                            max_retries=0)
        memory = ProjectPaths(settings, workspace.root).memory_dir
        fake_time = FakeClock()
        report = await SleepCycle(settings, tracer=SleepTracer(use_otel=False),
                                  sleep=fake_time.sleep, monotonic=fake_time.monotonic,
                                  lock_wait_seconds=0).run(workspace.root)
        paths = [r.path for r in server.requests]
        rem_calls = [r for r in server.model_requests() if "memory keeper" in r.body]

    assert report.sessions_found == 3
    assert (report.summaries_ok, report.summaries_failed, report.candidates) == (2, 1, 2)
    # 2 h of polling on the fake clock, then one 5 s poll while the cancel settled.
    assert sum(fake_time.sleeps[:-1]) == pytest.approx(7200.0)
    assert fake_time.sleeps[-1] == 5.0
    assert sum(1 for p in paths if p.endswith("/cancel")) == 1

    assert report.journal_path is not None
    journal = report.journal_path.read_text()
    assert "2 summarised, 1 failed" in journal
    assert "Summary written for session-0." in journal
    assert "Summary written for session-2." in journal
    assert "Summary written for session-1." not in journal
    assert "batch timed out after 7200s" in journal

    # REM ran on the partial candidates only, and its result was applied.
    assert len(rem_calls) == 1
    assert "fact-session-0" in rem_calls[0].body and "fact-session-2" in rem_calls[0].body
    assert "fact-session-1" not in rem_calls[0].body
    assert "Summary written for session-1." not in rem_calls[0].body
    assert report.rem_error is None and report.run_id is not None
    entries = {e.key: e for e in load_entries(memory)}
    assert set(entries) == {"fact-session-0", "fact-session-2"}
    assert all(e.recorded == date.today() - timedelta(days=1) for e in entries.values())
