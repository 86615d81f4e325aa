"""The ingest benchmark's generator and measurements on a small size, so the script cannot rot."""

from __future__ import annotations

from pathlib import Path

from bench import ingest
from reverie.transcripts.reader import load_transcript
from reverie.transcripts.stats import transcript_stats
from reverie.transcripts.tokens import usage_totals


def test_generator_makes_a_realistic_claude_transcript(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    lines = ingest.generate(path, 400_000)
    assert path.stat().st_size >= 400_000
    t = load_transcript(path)
    stats = transcript_stats(t)
    assert t.session.agent == "claude-code" and t.stats.lines == lines
    assert t.stats.skipped == 0 and t.stats.ignored > 0  # progress / snapshots are in the mix
    assert stats["tool_calls"] > 20 and stats["tool_errors"] > 0 and stats["files"]
    api_ids = [m.api_message_id for m in t.messages if m.usage is not None and m.api_message_id]
    assert len(api_ids) > len(set(api_ids))  # responses split over lines, each with its usage
    totals = usage_totals(t.messages)  # counted once per response
    assert 0 < totals.output_tokens < sum(m.usage.output_tokens for m in t.messages if m.usage)


def test_measurements_run_end_to_end(tmp_path: Path) -> None:
    report = ingest.run(size_mb=1.0, data_dir=tmp_path, rounds=5, small_mb=0.2, repeats=1)
    assert report.messages > 0 and report.lines > 0
    assert report.parse_ratio > 0 and report.append_big_median_ms > 0
    assert report.peak_rss_mb >= report.idle_rss_mb > 0
    assert report.tool_heavy_parse_ratio > 0 and report.tool_heavy_stats_cli_ratio > 0


def test_tool_heavy_mix_is_tool_heavy(tmp_path: Path) -> None:
    path = tmp_path / "heavy.jsonl"
    ingest.generate(path, 400_000, mix="tool-heavy")
    t = load_transcript(path)
    lines = path.read_bytes().splitlines()
    tool_lines = sum(1 for line in lines if b'"tool_use"' in line or b'"tool_result"' in line)
    assert tool_lines / len(lines) >= 0.3
    outputs = [r.output for m in t.messages for r in m.tool_results]
    assert sum(o.count("\n") >= 10 for o in outputs) >= len(outputs) / 2  # multi-line outputs
    assert t.stats.skipped == 0


def test_streaming_stats_equal_the_whole_transcript_stats(tmp_path: Path) -> None:
    """``--stats`` folds while parsing (a Claude Code transcript without building messages,
    ``claude_stats``); it must say exactly what the materialised view says."""
    from reverie.commands.transcript import stats_of
    from reverie.transcripts.reader import TranscriptReader
    from reverie.transcripts.stats import StatsFold, files_touched
    from reverie.transcripts.tokens import context_tokens

    fixtures = Path(__file__).resolve().parents[2] / "fixtures" / "transcripts"
    heavy = tmp_path / "heavy.jsonl"
    ingest.generate(heavy, 300_000, mix="tool-heavy")
    paths = [heavy, *sorted(p for p in fixtures.rglob("*.jsonl"))]
    for path in paths:
        whole = load_transcript(path)
        reader = TranscriptReader(path)
        streamed = StatsFold().feed_all(reader).result(reader.session, reader.stats)
        assert streamed == transcript_stats(whole), path
        assert streamed["tokens"] == context_tokens(whole.messages), path
        assert streamed["files"] == files_touched(whole)
        assert stats_of(path, None) == streamed, path
