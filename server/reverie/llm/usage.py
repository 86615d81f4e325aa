"""Token and cost accounting per job: every call's usage adds up in one ``UsageMeter``."""

from __future__ import annotations

from typing import Any

from reverie.config import ModelPrice
from reverie.types import Usage


def cost_of(usage: Usage, price: ModelPrice) -> float:
    """Dollars for ``usage`` at ``price`` (dollars per million tokens)."""
    return (
        usage.input_tokens * price.input
        + usage.output_tokens * price.output
        + usage.cache_read_tokens * price.cache_read
        + usage.cache_write_tokens * price.cache_write
    ) / 1_000_000


class UsageMeter:
    """Sums usage over a job's calls; cost is known only when every model used has a price."""

    def __init__(self, prices: dict[str, ModelPrice] | None = None) -> None:
        self._prices = dict(prices or {})
        self.total = Usage()
        self.calls = 0
        self._cost = 0.0
        self._unpriced: set[str] = set()

    def add(self, usage: Usage, model: str = "") -> None:
        self.total = self.total + usage
        self.calls += 1
        price = self._prices.get(model)
        if price is None:
            if usage != Usage():
                self._unpriced.add(model or "?")
            return
        self._cost += cost_of(usage, price)

    @property
    def cost(self) -> float | None:
        """Dollars, or None when some tokens came from a model without a price."""
        return None if self._unpriced else round(self._cost, 6)

    def to_payload(self) -> dict[str, Any]:
        """What job results and events carry (``tokens_in`` / ``tokens_out`` / cache / cost)."""
        return {
            "calls": self.calls,
            "tokens_in": self.total.input_tokens,
            "tokens_out": self.total.output_tokens,
            "cache_read_tokens": self.total.cache_read_tokens,
            "cache_write_tokens": self.total.cache_write_tokens,
            "cost_usd": self.cost,
        }
