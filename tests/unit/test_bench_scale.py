"""The scale benchmark at small sizes: offline notes, dream and sleep must grow linearly.

``tests/bench/scale.py`` runs the real CLI in subprocesses on generated Claude Code sessions of
the "failures" kind (dense shell work, more than half of the commands failing: what made the
offline notes quadratic) and reports, per job, the growth exponent of its time (log-log slope
against the input size) and how much peak RSS each MB of input adds. Quadratic code gives an
exponent near 2 here already (1 -> 4 MB: 0.9 -> 8.2 s before the one-pass notes builder); the
bound is 1.3. The RSS bounds follow issue 20's targets (300 MB for a 150 MB session, 300 MB for
1 GB of history) with slack for an interpreter's noise at a few MB.

A job's series is measured again once when it misses (a neighbour on the shared machine can
slow one run down), the best time of each size kept.
"""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import pytest

from bench import scale as bench_scale

# wall-clock growth exponents of whole CLI processes: measured on their own (pytest -m bench
# -n 0), not beside another worker
pytestmark = pytest.mark.bench

MAX_EXPONENT = 1.3
#: MB of peak RSS per MB of input
MAX_RSS_SLOPE = {"notes": 2.0, "dream": 0.5, "sleep": 0.5}


@pytest.fixture(scope="module")
def corpus_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One directory for the module: dream and sleep read the same generated histories."""
    return tmp_path_factory.mktemp("scale")


def _series(scale: ModuleType, root: Path, job: str) -> tuple[float, float, str]:
    if job == "notes":
        report = scale.measure(root, [1.0, 2.0, 4.0], [], 0.1, ["failures"], ["notes"],
                               timeout=60, references=False)
    else:
        report = scale.measure(root, [], [16, 48, 144], 0.08, ["failures"], [job], timeout=60,
                               references=False)
    key = f"{job}/failures"
    for point in report.points:
        assert not point.run.returncode and not point.run.timed_out, (
            f"{job} at {point.size_mb} MB: {point.run.figure()} {point.run.error}")
    exponent, slope = report.exponents[key], report.rss_slopes[key]
    assert exponent is not None and slope is not None
    return exponent, slope, scale.render(report)


#: jobs whose linear rewrite has not landed yet (issue 20.2 dream): measured, and
#: reported as expected failures until then; remove the mark when it lands
PENDING: dict[str, str] = {}


@pytest.mark.parametrize("job", [
    pytest.param(job, marks=pytest.mark.xfail(reason=PENDING[job], strict=False))
    if job in PENDING else job
    for job in ("notes", "dream", "sleep")
])
def test_job_grows_linearly_in_time_and_memory(job: str, corpus_root: Path) -> None:
    scale = bench_scale
    exponent, slope, table = _series(scale, corpus_root, job)
    if exponent > MAX_EXPONENT or slope > MAX_RSS_SLOPE[job]:
        again, slope2, table2 = _series(scale, corpus_root, job)  # the files are reused
        exponent, slope, table = min(exponent, again), min(slope, slope2), table + "\n" + table2
    assert exponent <= MAX_EXPONENT, f"time grows as size^{exponent:.2f}\n{table}"
    assert slope <= MAX_RSS_SLOPE[job], f"RSS grows {slope:.2f} MB per input MB\n{table}"


def test_generated_variants_are_what_they_claim(tmp_path: Path) -> None:
    from reverie.transcripts.reader import load_transcript
    from reverie.transcripts.stats import transcript_stats

    scale = bench_scale
    dense = tmp_path / "dense.jsonl"
    scale.write_session(dense, 1 << 20, "failures", 1, "/work/p")
    stats = transcript_stats(load_transcript(dense))
    assert stats["tool_calls"] > 400 and stats["tool_errors"] > stats["tool_calls"] / 3
    huge = tmp_path / "huge.jsonl"
    scale.write_session(huge, 3 << 20, "huge-output", 1, "/work/p")
    longest = max(len(line) for line in huge.read_bytes().splitlines())
    assert longest > 1 << 20 and load_transcript(huge).stats.skipped == 0
    sub = tmp_path / "12345678-0000-4000-8000-000000000000.jsonl"
    scale.write_session(sub, 50_000, "mix", 1, "/work/p", subagents=3)
    agents = sorted((tmp_path / sub.stem / "subagents").glob("agent-*.jsonl"))
    assert len(agents) == 3
    assert all(m.is_sidechain for m in load_transcript(agents[0]).messages)
