"""The cost governor for model-backed jobs: a daily and a monthly cap on tokens, and on dollars
where the model's price is known (``reverie.prices``, or the cost a coding-agent CLI reports).

Every model call a job makes is metered (``metered`` hooks the client ``make_client``
returns) into one ledger per data dir (``<data dir>/spend.json``: tokens, dollars and calls per
UTC day, kept 62 days), shared by the editor's server and the CLI. Before a job gets its client,
``check_budget`` compares what today and this month have spent, plus the job's estimate (its
kind's recent average, else a conservative default), with the caps: over a cap the job does not
start and says why in a sentence (``BudgetExceeded``, a ``LLMConfigError`` the jobs already
skip on). The offline engine costs nothing and is never metered.

Defaults keep a heavy user far from a surprise bill: 2 M tokens a day and 20 M a month, and,
when prices are known, $2 a day and $20 a month. ``0`` turns a cap off.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Iterable, Sequence
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import portalocker
from pydantic import BaseModel, Field

from reverie.config import ModelPrice, Settings
from reverie.llm.errors import LLMConfigError
from reverie.llm.types import ChatMessage, ModelClient, ModelReply, ProgressCallback, ToolSpec
from reverie.llm.usage import cost_of

logger = logging.getLogger(__name__)

LEDGER_NAME = "spend.json"
KEEP_DAYS = 62
#: tokens a job of each kind is assumed to need before it has a history of its own
DEFAULT_ESTIMATES = {"session_memory": 20_000, "dream": 80_000, "sleep": 120_000}


class BudgetExceeded(LLMConfigError):
    """A cap would be passed: the job does not start (the message says which and how to lift it)."""


class DaySpend(BaseModel):
    tokens: int = 0
    cost: float = 0.0
    calls: int = 0
    #: tokens per job kind, and how many jobs of that kind ran (for the estimates)
    by_job: dict[str, int] = Field(default_factory=dict)
    jobs: dict[str, int] = Field(default_factory=dict)


class Spend(BaseModel):
    """What was spent today and this month (UTC), against the caps (0: no cap)."""

    day: str
    tokens_today: int
    tokens_month: int
    cost_today: float
    cost_month: float
    daily_token_cap: int
    monthly_token_cap: int
    daily_cost_cap: float
    monthly_cost_cap: float
    #: the pre-run estimate of each job kind: tokens (its recent average, else a default) and
    #: dollars at what this month's tokens cost (None while no price is known)
    estimates: dict[str, int] = Field(default_factory=dict)
    estimated_costs: dict[str, float | None] = Field(default_factory=dict)

    def as_json(self) -> dict[str, Any]:
        return self.model_dump()

    def summary(self) -> str:
        """"12.3k of 2M tokens today, 0.4M of 20M this month ($0.31 of $2.00 today)"."""
        def tok(n: int) -> str:
            return f"{n / 1e6:.1f}M" if n >= 1e6 else f"{n / 1e3:.1f}k" if n >= 1e3 else str(n)

        def cap(n: int) -> str:
            return f" of {tok(n)}" if n else ""

        text = (f"{tok(self.tokens_today)}{cap(self.daily_token_cap)} tokens today, "
                f"{tok(self.tokens_month)}{cap(self.monthly_token_cap)} this month")
        if self.cost_today or self.cost_month:
            text += (f" (${self.cost_today:.2f}"
                     + (f" of ${self.daily_cost_cap:.2f}" if self.daily_cost_cap else "")
                     + " today)")
        return text


class SpendLedger:
    """The ledger file of one data dir; every change under an inter-process lock."""

    def __init__(self, data_dir: Path) -> None:
        self.path = data_dir / LEDGER_NAME
        self._lock_path = data_dir / (LEDGER_NAME + ".lock")

    def _read(self) -> dict[str, DaySpend]:
        try:
            raw = json.loads(self.path.read_text(encoding="utf-8"))
            return {d: DaySpend.model_validate(v) for d, v in raw.get("days", {}).items()}
        except FileNotFoundError:
            return {}
        except (OSError, ValueError, AttributeError) as exc:  # a damaged ledger starts again
            logger.warning("spend ledger %s unreadable (%s); starting a new one", self.path, exc)
            return {}

    def days(self) -> dict[str, DaySpend]:
        return self._read()

    def record(self, job: str, tokens: int, cost: float | None, *, new_job: bool,
               today: date | None = None) -> None:
        from reverie.fsutil import atomic_write_text

        day = (today or datetime.now(UTC).date()).isoformat()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with portalocker.Lock(str(self._lock_path), timeout=10):
            days = self._read()
            spent = days.setdefault(day, DaySpend())
            spent.tokens += tokens
            spent.cost = round(spent.cost + (cost or 0.0), 6)
            spent.calls += 1
            spent.by_job[job] = spent.by_job.get(job, 0) + tokens
            if new_job:
                spent.jobs[job] = spent.jobs.get(job, 0) + 1
            keep = sorted(days)[-KEEP_DAYS:]
            data = {"days": {d: days[d].model_dump() for d in keep}}
            atomic_write_text(self.path, json.dumps(data, indent=1))


def spend(settings: Settings, today: date | None = None) -> Spend:
    day = today or datetime.now(UTC).date()
    days = SpendLedger(settings.data_dir).days()
    this = days.get(day.isoformat(), DaySpend())
    month = [v for d, v in days.items() if d.startswith(day.isoformat()[:7])]
    tokens_month, cost_month = sum(v.tokens for v in month), sum(v.cost for v in month)
    estimates = {job: _estimate(days.values(), job) for job in DEFAULT_ESTIMATES}
    return Spend(
        day=day.isoformat(), tokens_today=this.tokens, tokens_month=tokens_month,
        cost_today=round(this.cost, 4), cost_month=round(cost_month, 4),
        daily_token_cap=settings.daily_token_cap, monthly_token_cap=settings.monthly_token_cap,
        daily_cost_cap=settings.daily_cost_cap, monthly_cost_cap=settings.monthly_cost_cap,
        estimates=estimates,
        estimated_costs={job: _cost_of(n, tokens_month, cost_month)
                         for job, n in estimates.items()},
    )


def _cost_of(tokens: int, tokens_month: int, cost_month: float) -> float | None:
    """Dollars for ``tokens`` at what this month's tokens cost (None: no price known)."""
    if not tokens_month or cost_month <= 0:
        return None
    return round(tokens * cost_month / tokens_month, 4)


def _estimate(days: Iterable[DaySpend], job: str) -> int:
    spent = list(days)
    tokens = sum(d.by_job.get(job, 0) for d in spent)
    runs = sum(d.jobs.get(job, 0) for d in spent)
    return int(tokens / runs) if runs and tokens else DEFAULT_ESTIMATES.get(job, 50_000)


def estimate(settings: Settings, job: str) -> int:
    """Tokens the next ``job`` is expected to take: its average over the ledger's days."""
    return _estimate(SpendLedger(settings.data_dir).days().values(), job)


def _tokens(n: int) -> str:
    return f"{n:,}"


def check_budget(settings: Settings, job: str, today: date | None = None) -> None:
    """Raise ``BudgetExceeded`` when ``job`` would pass a cap (or one is passed already)."""
    s = spend(settings, today)
    need = s.estimates.get(job) or estimate(settings, job)
    need_cost = s.estimated_costs.get(job) or 0.0
    words = {"session_memory": "notes update", "dream": "dream", "sleep": "sleep cycle"}
    what = words.get(job, job)
    for spent, cap, period, setting in (
        (s.tokens_today, s.daily_token_cap, "today", "reverie.dailyTokenCap"),
        (s.tokens_month, s.monthly_token_cap, "this month", "reverie.monthlyTokenCap"),
    ):
        if cap and spent + need > cap:
            raise BudgetExceeded(
                f"the {what} would pass the model budget: {_tokens(spent)} of {_tokens(cap)} "
                f"tokens spent {period}, and it needs about {_tokens(need)} ({setting}; the "
                "offline engine has no cap)", provider=settings.provider)
    for spent_cost, cost_cap, period, setting in (
        (s.cost_today, s.daily_cost_cap, "today", "reverie.dailyCostCap"),
        (s.cost_month, s.monthly_cost_cap, "this month", "reverie.monthlyCostCap"),
    ):
        if cost_cap and spent_cost >= cost_cap:
            raise BudgetExceeded(
                f"the model budget is used up: ${spent_cost:.2f} of ${cost_cap:.2f} spent "
                f"{period} ({setting}; the offline engine has no cap)", provider=settings.provider)
        if cost_cap and spent_cost + need_cost > cost_cap:
            raise BudgetExceeded(
                f"the {what} would pass the model budget: ${spent_cost:.2f} of "
                f"${cost_cap:.2f} spent {period}, and it costs about ${need_cost:.2f} "
                f"({setting}; the offline engine has no cap)", provider=settings.provider)


class _Meter:
    """Puts one client's replies into the spend ledger."""

    def __init__(self, client: ModelClient, settings: Settings, job: str) -> None:
        self._ledger = SpendLedger(settings.data_dir)
        self._prices: dict[str, ModelPrice] = dict(settings.prices)
        self._model = client.model
        self._job = job
        self._first = True

    def __call__(self, reply: ModelReply) -> None:
        u = reply.usage
        tokens = u.input_tokens + u.output_tokens + u.cache_read_tokens + u.cache_write_tokens
        cost = reply.cost_usd
        if cost is None:
            price = self._prices.get(reply.model) or self._prices.get(self._model)
            cost = cost_of(u, price) if price is not None else None
        try:
            self._ledger.record(self._job, tokens, cost, new_job=self._first)
            self._first = False
        except (OSError, portalocker.exceptions.LockException) as exc:
            logger.warning("could not record model spend: %s", exc)


def metered(client: ModelClient, settings: Settings, job: str) -> ModelClient:
    """``client`` with every ``complete`` call's usage recorded in the ledger. The client
    keeps its type (the batch API and capability checks look at it); the offline engine is
    returned as it is."""
    if client.is_offline:
        return client
    meter = _Meter(client, settings, job)
    call = client.complete

    async def complete(messages: Sequence[ChatMessage], *, system: str | None = None,
                       tools: Sequence[ToolSpec] = (),
                       output_schema: type[BaseModel] | None = None,
                       max_tokens: int | None = None,
                       on_progress: ProgressCallback | None = None) -> ModelReply:
        reply = await call(messages, system=system, tools=tools, output_schema=output_schema,
                           max_tokens=max_tokens, on_progress=on_progress)
        await asyncio.to_thread(meter, reply)  # a file lock and a write: off the loop
        return reply

    setattr(client, "complete", complete)  # noqa: B010 (an instance's own method)
    return client
