"""``reverie.server.testModel`` over stdio against the fake provider: latency, streaming, tool
calling and the reported model name; a model without tools and an unreachable endpoint."""

from __future__ import annotations

import pytest

from reverie.testing.fake_llm import FakeLLMServer, FakeRequest, Step

pytestmark = pytest.mark.e2e


def settings(fake: FakeLLMServer, **extra: object) -> dict[str, object]:
    return {"provider": "openai", "model": "fake-model", "baseUrl": fake.base_url,
            "apiKey": "sk-test-not-a-real-key", "maxRetries": 0, "sessionMemoryEnabled": False,
            "dreamEnabled": False, "sleepEnabled": False, **extra}


def ping(request: FakeRequest) -> Step:
    return Step.tool("ping", text="ok") if request.tool_names else Step.reply("OK")


async def test_model_that_streams_and_calls_tools(start_server) -> None:
    async with FakeLLMServer(fallback=ping) as fake:
        s = await start_server(init_options=settings(fake))
        result = await s.command("reverie.server.testModel")
        assert result["ok"] is True and result["error"] is None
        assert result["streaming"] is True and result["tools"] is True
        assert result["modelReported"] == "fake-model" and result["latencyMs"] >= 0
        assert "streaming: yes; tool calls: yes" in result["message"]
        [request] = fake.model_requests()
        assert request.json["stream"] is True and request.json["tools"]
        await s.close()


async def test_model_without_tools_and_without_streaming(start_server) -> None:
    async with FakeLLMServer(fallback=ping) as fake:
        fake.scenario.no_tools = True
        fake.scenario.streaming = "refuse"
        s = await start_server(init_options=settings(fake))
        result = await s.command("reverie.server.testModel")
        assert result["ok"] is True
        assert result["tools"] is False and result["streaming"] is False
        assert "no-tools form" in result["message"]
        await s.close()


async def test_unreachable_endpoint_is_reported_not_raised(start_server) -> None:
    s = await start_server(init_options={"provider": "openai", "baseUrl": "http://127.0.0.1:9/v1",
                                         "maxRetries": 0, "sessionMemoryEnabled": False,
                                         "dreamEnabled": False, "sleepEnabled": False})
    result = await s.command("reverie.server.testModel")
    assert result["ok"] is False and "Could not reach" in result["error"]
    await s.close()
