"""The editor-session rewrite benchmark on a small size, so the script cannot rot, and its
correctness checks (no duplicate, no loss) hold."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

BENCH = Path(__file__).resolve().parents[2] / "bench" / "editor_rewrite.py"


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("reverie_bench_editor_rewrite", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_the_grown_session_is_read_like_the_fixture() -> None:
    bench = _load()
    session = bench.grow(300_000)
    assert len(session["requests"]) % 3 == 0 and len(session["requests"]) >= 6
    ids = [r["requestId"] for r in session["requests"]]
    assert len(ids) == len(set(ids))


def test_rewrites_report_exactly_what_changed() -> None:
    bench = _load()
    report = bench.run(size_mb=0.3, repeats=2)
    assert report.duplicates == 0 and report.lost == 0
    assert report.reported_per_rewrite >= 5  # the grown response part, the new request's
    assert report.fresh_ms > 0 and report.rewrite_ms > 0 and report.compaction_ms > 0
