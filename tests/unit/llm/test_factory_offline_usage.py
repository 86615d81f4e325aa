"""Settings -> client, the offline engine, usage and cost accounting, retry timing helpers."""

from __future__ import annotations

import email.utils
import random
import time

import pytest
from pydantic import BaseModel

from reverie.config import ModelPrice, Settings
from reverie.llm.anthropic import AnthropicClient
from reverie.llm.errors import LLMConfigError, LLMServerError, StructuredOutputError
from reverie.llm.extractive import OfflineClient, extract_summary
from reverie.llm.factory import make_client
from reverie.llm.http import parse_retry_after
from reverie.llm.openai import OpenAIClient
from reverie.llm.retry import RetryPolicy
from reverie.llm.types import ChatMessage, ModelClient
from reverie.llm.usage import UsageMeter, cost_of
from reverie.transcripts.model import Usage

KEY = "sk-factory-SECRET-abcdef123456"


async def test_default_is_offline() -> None:
    client = make_client(Settings(), "session_memory")
    assert isinstance(client, OfflineClient) and client.is_offline
    assert isinstance(client, ModelClient)


async def test_env_contract_and_per_job_models(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REVERIE_PROVIDER", "openai")
    monkeypatch.setenv("REVERIE_MODEL", "gpt-x")
    monkeypatch.setenv("REVERIE_DREAM_MODEL", "gpt-dream")
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("REVERIE_BASE_URL", "http://127.0.0.1:9/v1")
    settings = Settings()
    memory = make_client(settings, "session_memory")
    dream = make_client(settings, "dream")
    assert isinstance(memory, OpenAIClient) and not memory.is_offline
    assert isinstance(memory, ModelClient)
    assert memory.model == "gpt-x" and dream.model == "gpt-dream"
    assert memory.base_url == "http://127.0.0.1:9/v1"
    assert KEY not in repr(memory) and KEY not in str(vars(memory).get("_http"))
    await memory.aclose()
    await dream.aclose()


async def test_anthropic_key_fallback_and_missing_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REVERIE_PROVIDER", "anthropic")
    with pytest.raises(LLMConfigError) as info:
        make_client(Settings(), "sleep")
    assert "ANTHROPIC_API_KEY" in str(info.value)
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    client = make_client(Settings(), "sleep")
    assert isinstance(client, AnthropicClient)
    assert client.base_url == "https://api.anthropic.com/v1"
    assert KEY not in repr(client)
    await client.aclose()


def test_openai_without_key_needs_a_base_url(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REVERIE_PROVIDER", "openai")
    with pytest.raises(LLMConfigError, match="OPENAI_API_KEY"):
        make_client(Settings(), "dream")
    monkeypatch.setenv("REVERIE_BASE_URL", "http://localhost:11434/v1")  # Ollama needs no key
    assert isinstance(make_client(Settings(), "dream"), OpenAIClient)


class Note(BaseModel):
    summary: str
    tags: list[str]


class Impossible(BaseModel):
    count: int


async def test_offline_complete_is_extractive_and_deterministic() -> None:
    client = OfflineClient()
    text = ("The parser was slow on large files. We profiled the parser and found a quadratic "
            "loop in the tokenizer. Lunch was good. The fix made the parser linear.")
    messages = [ChatMessage(role="user", content=text)]
    first = await client.complete(messages, system="summarise")
    second = await client.complete(messages, system="summarise")
    assert first == second
    assert first.tool_calls == [] and first.stop_reason == "end_turn"
    assert "parser" in first.text and "Lunch" not in first.text
    assert first.usage.input_tokens == (len(text) + len("summarise") + 3) // 4
    structured = await client.complete(messages, output_schema=Note)
    assert isinstance(structured.parsed, Note) and structured.parsed.tags == []
    assert "parser" in structured.parsed.summary
    with pytest.raises(StructuredOutputError):
        await client.complete(messages, output_schema=Impossible)


def test_extract_summary_keeps_order_and_limits() -> None:
    text = "Alpha beta gamma. Delta alpha beta. Unrelated words here. Gamma alpha again."
    out = extract_summary(text, max_sentences=2)
    assert out.count(".") == 2
    sentences = text.split(". ")
    positions = [text.index(s.rstrip(".")) for s in out.split(". ")]
    assert positions == sorted(positions) and len(sentences) == 4
    assert extract_summary("") == ""


def test_usage_meter_sums_and_prices() -> None:
    prices = {"m": ModelPrice(input=3.0, output=15.0, cache_read=0.3)}
    meter = UsageMeter(prices)
    meter.add(Usage(input_tokens=1_000_000, output_tokens=100_000), "m")
    meter.add(Usage(input_tokens=10, cache_read_tokens=1_000_000), "m")
    assert meter.calls == 2
    assert meter.total == Usage(input_tokens=1_000_010, output_tokens=100_000,
                                cache_read_tokens=1_000_000)
    assert meter.cost == pytest.approx(3.0 + 1.5 + 0.3 + 0.00003)
    payload = meter.to_payload()
    assert payload["tokens_in"] == 1_000_010 and payload["tokens_out"] == 100_000
    meter.add(Usage(input_tokens=5), "unpriced-model")
    assert meter.cost is None and meter.to_payload()["cost_usd"] is None
    assert cost_of(Usage(output_tokens=2_000_000), prices["m"]) == pytest.approx(30.0)


def test_retry_after_parsing() -> None:
    assert parse_retry_after("2.5") == 2.5
    assert parse_retry_after(None) is None and parse_retry_after("soon") is None
    future = email.utils.formatdate(time.time() + 30, usegmt=True)
    assert 27 <= (parse_retry_after(future) or 0) <= 31


def test_backoff_is_exponential_with_jitter_and_capped() -> None:
    policy = RetryPolicy(base_delay=1.0, max_delay=8.0, rng=random.Random(7))
    error = LLMServerError("x")
    delays = [policy.delay_for(n, error) for n in range(1, 7)]
    for n, delay in enumerate(delays, start=1):
        ceiling = min(8.0, 2.0 ** (n - 1))
        assert ceiling / 2 <= delay <= ceiling
    assert len(set(delays)) == len(delays)  # jittered
    assert policy.delay_for(1, LLMServerError("x", retry_after=500)) == 120.0


async def test_base_url_without_scheme_is_a_config_error() -> None:
    client = OpenAIClient(model="m", base_url="localhost:11434/v1", api_key=None,
                          retry_policy=RetryPolicy(max_retries=3))
    try:
        with pytest.raises(LLMConfigError, match="REVERIE_BASE_URL"):
            await client.complete([ChatMessage(role="user", content="hi")])
    finally:
        await client.aclose()
