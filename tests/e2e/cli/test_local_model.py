"""Reverie against a real local model (``tests/bench/local_model.py``): a real llama.cpp server
and a real, unpredictable model. Runs when ``REVERIE_LLAMA_SERVER`` and ``REVERIE_LOCAL_MODEL``
point at a ``llama-server`` binary and a GGUF model (``python tests/bench/local_model.py
--build`` makes both); skipped with that reason otherwise.

Whatever the model writes, every job must end within its budget with a clear outcome, and the
notes and memory must be valid, and untouched whenever nothing was applied."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from bench import local_model as bench

pytestmark = pytest.mark.e2e

BENCH = Path(__file__).resolve().parents[2] / "bench" / "local_model.py"
SERVER = os.environ.get("REVERIE_LLAMA_SERVER")
MODEL = os.environ.get("REVERIE_LOCAL_MODEL")


@pytest.mark.skipif(not (SERVER and MODEL and Path(SERVER).is_file() and Path(MODEL).is_file()),
                    reason="no local model: set REVERIE_LLAMA_SERVER and REVERIE_LOCAL_MODEL "
                           "(python tests/bench/local_model.py --build makes both)")
@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_notes_dream_and_sleep_against_a_real_local_model(provider: str) -> None:
    budget = 90.0
    result = bench.run_bench(Path(SERVER or ""), Path(MODEL or ""), provider=provider,
                             ignore_eos=True, budget=budget, max_output=256)
    print(bench.report(result))
    jobs = {job["job"]: job for job in result["jobs"]}
    assert set(jobs) == {"notes", "dream", "sleep"}
    for job in jobs.values():
        assert job["verified"] == [], job  # valid, and unchanged unless it applied
        assert job["seconds"] < 2 * budget + 60, job  # bounded by the budget
        assert job["outcome"] in ("wrote", "wrote nothing", "skipped",
                                  "rejected by validation"), job
        assert job["requests"] >= 1, job
