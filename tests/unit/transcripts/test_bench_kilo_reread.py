"""The Kilo re-read benchmark on a small size, so the script cannot rot, and its correctness
check (each change reports exactly the new message) holds."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench" / "kilo_reread.py"


def test_a_change_reports_exactly_the_new_message() -> None:
    spec = importlib.util.spec_from_file_location("reverie_bench_kilo_reread", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    report = module.run(turns=20, repeats=3)
    assert report.wrong_reports == 0
    assert report.messages == 20 * 17 and report.fresh_ms > 0 and report.change_ms > 0
