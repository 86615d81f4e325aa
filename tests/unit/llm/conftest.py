"""A running fake LLM server and clients of both providers pointed at it."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from reverie.llm.anthropic import AnthropicClient
from reverie.llm.http import HttpModelClient
from reverie.llm.openai import OpenAIClient
from reverie.llm.retry import RetryPolicy
from support.fake_llm import FakeLLMServer

API_KEY = "sk-test-SECRET-7f3a9c1e5b2d4e6f"


class RecordingSleep:
    """An injectable sleep that records the delays and returns at once."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)


@pytest.fixture
async def server() -> AsyncIterator[FakeLLMServer]:
    async with FakeLLMServer() as srv:
        yield srv


@pytest.fixture
def sleeps() -> RecordingSleep:
    return RecordingSleep()


@pytest.fixture(params=["openai", "anthropic"])
def provider(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
async def make_client(
    server: FakeLLMServer, sleeps: RecordingSleep, provider: str
) -> AsyncIterator[Callable[..., HttpModelClient]]:
    made: list[HttpModelClient] = []

    def factory(**kw: Any) -> HttpModelClient:
        kw.setdefault("retry_policy", RetryPolicy(max_retries=kw.pop("max_retries", 3),
                                                  sleep=sleeps))
        cls = OpenAIClient if provider == "openai" else AnthropicClient
        client = cls(model="fake-model", base_url=server.base_url, api_key=API_KEY, **kw)
        made.append(client)
        return client

    yield factory
    for client in made:
        await client.aclose()
