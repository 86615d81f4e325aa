"""The token benchmark runs, and incremental context beats full history on a long session."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench" / "tokens.py"


def _load():
    spec = importlib.util.spec_from_file_location("bench_tokens", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up here
    spec.loader.exec_module(module)
    return module


async def test_incremental_is_a_fraction_of_full_on_a_long_session() -> None:
    bench = _load()
    results = await bench.run_benchmark(turns=70, include_fixture=False)
    by_mode = {r.mode: r for r in results}
    full, incremental = by_mode["full"], by_mode["incremental"]
    assert full.session_tokens > 60_000
    assert full.extractions == incremental.extractions >= 8  # same thresholds, same runs
    assert incremental.tokens_in <= 0.25 * full.tokens_in
    assert "incremental / full" in bench.report(results)
