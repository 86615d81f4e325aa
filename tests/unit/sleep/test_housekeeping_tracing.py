"""Housekeeping retention rules and the per-phase tracing (log lines and, if present, OTel)."""

from __future__ import annotations

import json
import logging
import os
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from pydantic import BaseModel

from reverie.config import ProjectPaths, Settings
from reverie.sleep.housekeeping import run_housekeeping
from reverie.sleep.tracing import SleepTracer

NOW = datetime(2026, 11, 10, 3, 0).astimezone()


def _aged(path: Path, days: float, text: str = "data") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    when = (NOW - timedelta(days=days)).timestamp()
    os.utime(path, (when, when))
    return path


class Ref(BaseModel):
    path: Path
    agent: str


def test_journals_and_notes_past_retention_go_and_bytes_are_counted(tmp_path: Path) -> None:
    settings = Settings(journal_retention_days=30, notes_retention_days=10)
    paths = ProjectPaths(settings, tmp_path / "ws")
    jdir = paths.journals_dir
    old_journal = _aged(jdir / "2026-10-01.md", 0, "x" * 100)
    kept_journal = _aged(jdir / "2026-10-20.md", 0, "kept")
    stray = _aged(jdir / "notes-2020-01-01.md", 400, "not ours")
    old_notes = _aged(paths.notes_path("s-old"), 11, "y" * 50)
    _aged(paths.notes_state_path("s-old"), 12, "z" * 7)
    fresh_notes = _aged(paths.notes_path("s-new"), 1)

    report = run_housekeeping(paths, settings, NOW)

    assert not old_journal.exists() and kept_journal.exists() and stray.exists()
    assert not old_notes.parent.exists() and fresh_notes.exists()
    assert report.journals_deleted == 1 and report.notes_deleted == 1
    assert report.bytes_reclaimed == 100 + 50 + 7
    assert report.transcripts_deleted == 0 and report.errors == []


def test_agent_transcripts_are_kept_unless_the_user_opts_in(tmp_path: Path) -> None:
    old = _aged(tmp_path / "agent" / "old.jsonl", 20, "a" * 30)
    sub = _aged(tmp_path / "agent" / "old" / "subagents" / "agent-1.jsonl", 20, "b" * 5)
    young = _aged(tmp_path / "agent" / "young.jsonl", 2)
    aider = _aged(tmp_path / "repo" / ".aider.chat.history.md", 90)
    refs = [
        Ref(path=old, agent="claude-code"),
        Ref(path=young, agent="claude-code"),
        Ref(path=aider, agent="aider"),
    ]
    paths = ProjectPaths(Settings(), tmp_path / "ws")

    report = run_housekeeping(paths, Settings(), NOW, transcripts=refs)
    assert old.exists() and report.transcripts_deleted == 0

    opted = Settings(delete_agent_transcripts=True, transcript_retention_days=14)
    report = run_housekeeping(paths, opted, NOW, transcripts=refs)
    assert not old.exists() and not sub.exists()
    assert young.exists() and aider.exists()
    assert report.transcripts_deleted == 1 and report.bytes_reclaimed == 35


def test_history_pruner_gets_the_cutoff_and_its_failure_is_reported(tmp_path: Path) -> None:
    settings = Settings(history_retention_days=180)
    paths = ProjectPaths(settings, tmp_path)
    seen: list[datetime] = []

    def prune(cutoff: datetime) -> tuple[int, int]:
        seen.append(cutoff)
        return 3, 1000

    report = run_housekeeping(paths, settings, NOW, prune_history=prune)
    assert seen == [NOW - timedelta(days=180)]
    assert report.history_runs_pruned == 3 and report.bytes_reclaimed == 1000

    def broken(cutoff: datetime) -> tuple[int, int]:
        raise RuntimeError("repo locked")

    report = run_housekeeping(paths, settings, NOW, prune_history=broken)
    assert report.errors == ["history: repo locked"]


def test_log_line_tracing_reports_counts_and_errors(caplog: pytest.LogCaptureFixture) -> None:
    tracer = SleepTracer(use_otel=False)
    assert not tracer.uses_otel
    caplog.set_level(logging.INFO, logger="reverie.sleep.tracing")
    with tracer.phase("light", date="2026-11-10") as span:
        span.set("sessions_found", 4)
    with pytest.raises(ValueError), tracer.phase("rem") as span:
        span.set("entries_before", 2)
        raise ValueError("boom")
    records = [json.loads(r.getMessage().split(" ", 1)[1]) for r in caplog.records]
    assert records[0]["phase"] == "light" and records[0]["sessions_found"] == 4
    assert records[0]["date"] == "2026-11-10" and "duration_ms" in records[0]
    assert records[1] == {**records[1], "phase": "rem", "entries_before": 2, "error": "ValueError"}


def test_otel_spans_carry_the_counts() -> None:
    pytest.importorskip("opentelemetry.sdk.trace")
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = SleepTracer(use_otel=True, tracer_provider=provider)
    assert tracer.uses_otel
    with tracer.phase("deep") as span:
        span.set("summaries_ok", 2)
        span.set("summaries_failed", 1)
    (finished,) = exporter.get_finished_spans()
    assert finished.name == "reverie.sleep.deep"
    assert finished.attributes["reverie.sleep.summaries_ok"] == 2
    assert finished.attributes["reverie.sleep.summaries_failed"] == 1
