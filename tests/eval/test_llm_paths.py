"""The model-backed writers on the evaluation set, against the fake LLM server (issue 12.4).

What the prompts carry and what survives validation (see ``eval_llm.py``), per path, pooled over
the projects. Hard invariants are asserted as such; the rest are floors in one table
(``LLM_FLOORS``) that the "llm" helper raises as the prompts improve, with the goal beside them.
"""

from __future__ import annotations

import pytest

from eval.eval_harness import project_names
from eval.eval_llm import LlmResult, pooled, run_llm_all

# the module's tests share one run of the whole set (its fixture): one xdist worker runs them
pytestmark = pytest.mark.xdist_group("eval-llm-paths")

# path: (min share of runs whose brief carries: facts, evidence, previous memory, newer-wins
#        rule, formerly-form rule, never-keep rule; max long index lines; max noise lines kept)
# Measured on main on 2026-12-01 (before issue 12's prompt work), all 5 projects (23 runs per
# path; counts grow with the set); share of *facts* found.
# 17:00, the lead: the dream brief carries the offline engine's candidate facts with their
# session and date, the current memory files, and the rules (newer wins, "formerly ...",
# never-keep); the REM request names each candidate's session and date and the same rules:
# dream 96% / 83% / 100% / 100% / 100% / 100%, sleep 20% / 87% / 100% / 100% / 100% / 100%.
# Later: the sleep window of the check fixed (``--date D`` reviews D and D+1, it counted D-1:
# sleep facts 24%), then the REM request carries Reverie's own candidate facts of the reviewed
# sessions like the dream brief: sleep facts 100%; dream 100% (fixes by generators, notes).
LLM_FLOORS: dict[str, tuple[float, float, float, float, float, float, int, int]] = {
    "dream": (0.95, 0.8, 1.0, 1.0, 1.0, 1.0, 0, 0),  # model lines of never-keep classes dropped
    "sleep": (0.95, 0.8, 1.0, 1.0, 1.0, 1.0, 0, 0),  # REM lines cut to 150 (fit_entry)
}
#: planted secrets (tests/fixtures/eval/*/labels.toml) found in request bodies, per path (the
#: database URL password reached the model until redaction covered URL credentials, 5a58f6a)
MAX_SECRETS_SENT: dict[str, int] = {"dream": 0, "sleep": 0}

#: notes-writer requests (made on each path's sandbox) that carry raw agent wrappers such as
#: <ide_opened_file>, <task-notification>, the /clear record or an expanded /init prompt: 4 per
#: path until the notes writer rendered user texts through transcripts.wrappers (marked or
#: dropped before the model reads the conversation)
MAX_WRAPPERS_SENT: dict[str, int] = {"dream": 0, "sleep": 0}

LLM_GOAL: tuple[float, float, float, float, float, float, int, int] = (
    0.9, 1.0, 1.0, 1.0, 1.0, 1.0, 0, 0)


@pytest.fixture(scope="module")
def results() -> dict[str, LlmResult]:
    return pooled(run_llm_all(project_names()))


@pytest.mark.parametrize("path", sorted(LLM_FLOORS))
def test_model_path_runs_and_keeps_secrets_out(results: dict[str, LlmResult], path: str) -> None:
    result = results[path]
    assert not result.errors, result.errors
    assert result.requests > 0 and result.runs
    assert result.secrets_kept == 0  # invented by the model: redacted before any write
    assert result.secrets_sent <= MAX_SECRETS_SENT[path]
    assert result.wrappers_sent <= MAX_WRAPPERS_SENT[path]


@pytest.mark.parametrize("path", sorted(LLM_FLOORS))
def test_model_path_does_not_regress(results: dict[str, LlmResult], path: str) -> None:
    summary = results[path].summary()
    floors = LLM_FLOORS[path]
    shares = ("facts_in_prompt", "evidence", "memory", "newer_wins", "formerly", "noise_rule")
    for name, floor in zip(shares, floors[:6], strict=True):
        assert (summary[name] or 0.0) >= floor, (name, summary)
    assert summary["long_index"] <= floors[6], summary
    assert summary["noise_kept"] <= floors[7], summary
