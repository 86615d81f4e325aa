"""The cost governor over real HTTP (the fake LLM server): every model call is metered into the
data dir's spend ledger; a dream or notes update that would pass a daily or monthly cap does not
start and says why (``over_budget``); the offline engine is never metered; ``reverie lock
--json`` adds ``spend``."""

from __future__ import annotations

import json
from datetime import date
from pathlib import Path

import pytest

from reverie.cli import main
from reverie.config import Settings
from reverie.dream.runner import DreamRequest, DreamRunner
from reverie.dream.skips import describe_skip
from reverie.events import EventRecorder
from reverie.llm.budget import BudgetExceeded, SpendLedger, check_budget, estimate, spend
from reverie.llm.factory import make_client
from support.fake_llm import FakeLLMServer, Step


@pytest.fixture
def model_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REVERIE_PROVIDER", "openai")
    monkeypatch.setenv("REVERIE_API_KEY", "test-key")
    monkeypatch.setenv("REVERIE_MAX_RETRIES", "0")


async def test_model_calls_are_metered_and_the_cap_stops_the_next_dream(
        workspace: Path, model_env: None, monkeypatch: pytest.MonkeyPatch) -> None:
    async with FakeLLMServer() as server:
        monkeypatch.setenv("REVERIE_BASE_URL", server.base_url)
        server.enqueue(Step.reply("Nothing to change."))
        result = await DreamRunner(Settings(), EventRecorder()).run(
            DreamRequest(workspace=workspace, manual=True))
        assert result.error is None and result.tokens_in > 0
        spent = spend(Settings())
        assert spent.tokens_today == result.tokens_in + result.tokens_out
        assert estimate(Settings(), "dream") == spent.tokens_today  # one dream: its size
        # a cap just above what was spent: the next dream (about as big) would pass it
        monkeypatch.setenv("REVERIE_DAILY_TOKEN_CAP", str(spent.tokens_today + 1))
        before = len(server.model_requests())
        events = EventRecorder()
        again = await DreamRunner(Settings(), events).run(
            DreamRequest(workspace=workspace, manual=True))
        assert again.skipped_reason == "over_budget" and not again.ran
        assert len(server.model_requests()) == before  # the model was not asked
    (skip,) = [e for e in events.events if e.type == "skipped"]
    assert "reverie.dailyTokenCap" in skip.payload["reason_text"]
    assert "API key" not in skip.payload["reason_text"]


def test_caps_by_day_month_and_money(reverie_env: dict[str, Path],
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    settings = Settings(provider="openai", api_key="k", daily_token_cap=100_000,
                        monthly_token_cap=150_000, daily_cost_cap=1.0, monthly_cost_cap=0)
    ledger = SpendLedger(settings.data_dir)
    ledger.record("dream", 60_000, None, new_job=True, today=date(2026, 3, 1))
    ledger.record("dream", 60_000, 0.5, new_job=True, today=date(2026, 3, 2))
    # day 2: 60k spent + 60k expected > 100k
    with pytest.raises(BudgetExceeded, match="tokens spent today"):
        check_budget(settings, "dream", today=date(2026, 3, 2))
    # day 3: nothing today, but 120k this month + 60k > 150k
    with pytest.raises(BudgetExceeded, match="this month"):
        check_budget(settings, "dream", today=date(2026, 3, 3))
    # a new month starts afresh
    check_budget(settings, "dream", today=date(2026, 4, 1))
    ledger.record("session_memory", 1_000, 1.2, new_job=True, today=date(2026, 4, 1))
    with pytest.raises(BudgetExceeded, match=r"\$1.20 of \$1.00 spent today"):
        check_budget(settings, "session_memory", today=date(2026, 4, 1))
    off = settings.model_copy(update={"daily_token_cap": 0, "monthly_token_cap": 0,
                                      "daily_cost_cap": 0})
    check_budget(off, "dream", today=date(2026, 3, 2))  # 0: no cap
    assert "of 100.0k tokens today" in spend(settings, date(2026, 3, 2)).summary()
    assert describe_skip("over_budget", {"detail": "x would pass"}) == "x would pass."


def test_a_damaged_ledger_starts_again(reverie_env: dict[str, Path]) -> None:
    settings = Settings()
    (settings.data_dir / "spend.json").write_text("{not json")
    assert spend(settings).tokens_today == 0
    SpendLedger(settings.data_dir).record("dream", 5, None, new_job=True)
    assert spend(settings).tokens_today == 5


def test_offline_is_not_metered_and_lock_json_adds_spend(
        workspace: Path, capsys: pytest.CaptureFixture[str]) -> None:
    client = make_client(Settings(), "dream")
    assert client.is_offline and type(client).__name__ == "OfflineClient"
    assert main(["lock", "--workspace", str(workspace), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["next_gate"] and out["spend"]["daily_token_cap"] == 2_000_000
    assert out["spend"]["tokens_today"] == 0
    assert out["spend"]["estimates"]["dream"] == 80_000
    assert out["spend"]["estimated_costs"]["dream"] is None


def test_the_pre_run_estimate_in_tokens_and_dollars_stops_a_job_that_would_pass_a_cap(
        reverie_env: dict[str, Path]) -> None:
    settings = Settings(provider="openai", api_key="k", daily_token_cap=0, monthly_token_cap=0,
                        daily_cost_cap=0.3, monthly_cost_cap=0)
    ledger = SpendLedger(settings.data_dir)
    fresh = spend(settings, date(2026, 5, 1))
    assert fresh.estimates == {"session_memory": 20_000, "dream": 80_000, "sleep": 120_000}
    assert fresh.estimated_costs["dream"] is None  # no price known yet
    ledger.record("dream", 60_000, 0.2, new_job=True, today=date(2026, 5, 1))
    ledger.record("dream", 60_000, 0.3, new_job=True, today=date(2026, 5, 2))
    ledger.record("session_memory", 10_000, 0.05, new_job=True, today=date(2026, 5, 3))
    at = spend(settings, date(2026, 5, 3))
    assert at.estimates["dream"] == 60_000 and at.estimates["session_memory"] == 10_000
    # this month's tokens cost 0.55 / 130k: a 60k dream costs about $0.25
    assert at.estimated_costs["dream"] == pytest.approx(60_000 * 0.55 / 130_000, abs=1e-4)
    # $0.05 spent today + about $0.25 > $0.30: the dream does not start, and says so
    with pytest.raises(BudgetExceeded, match=r"costs about \$0.25"):
        check_budget(settings, "dream", today=date(2026, 5, 3))
    check_budget(settings, "session_memory", today=date(2026, 5, 3))  # ~$0.04 fits
