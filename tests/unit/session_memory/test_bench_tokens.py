"""The token benchmark runs, and incremental context beats full history on a long session."""

from __future__ import annotations

from bench import tokens as bench


async def test_incremental_is_a_fraction_of_full_on_a_long_session() -> None:
    results = await bench.run_benchmark(turns=70, include_fixture=False)
    by_mode = {r.mode: r for r in results}
    full, incremental = by_mode["full"], by_mode["incremental"]
    assert full.session_tokens > 60_000
    assert full.extractions == incremental.extractions >= 8  # same thresholds, same runs
    assert incremental.tokens_in <= 0.25 * full.tokens_in
    assert "incremental / full" in bench.report(results)
