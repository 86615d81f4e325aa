"""Batches against the fake server: both providers' batch APIs, failures, timeout, fallback."""

from __future__ import annotations

from collections.abc import Callable

from pydantic import BaseModel

from reverie.llm.batch import BatchRequest, run_batch
from reverie.llm.http import HttpModelClient
from reverie.llm.offline import OfflineClient
from reverie.llm.types import ChatMessage
from reverie.testing.fake_llm import BatchBehaviour, FakeLLMServer, FakeRequest, Step

ClientFactory = Callable[..., HttpModelClient]


class Summary(BaseModel):
    summary: str
    candidates: list[str]


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


def _requests(n: int, schema: type[BaseModel] | None = Summary) -> list[BatchRequest]:
    return [
        BatchRequest(custom_id=f"conv-{i}", system="summarise",
                     messages=[ChatMessage(role="user", content=f"conversation {i}")],
                     output_schema=schema, max_tokens=500)
        for i in range(n)
    ]


def _echo(request: FakeRequest) -> Step:
    return Step.json_reply({"summary": request.last_user_text, "candidates": ["a"]})


async def test_batch_all_succeed_in_request_order(
    server: FakeLLMServer, make_client: ClientFactory, provider: str
) -> None:
    server.set_fallback(_echo)
    server.scenario.batch.polls_before_done = 3
    clock = FakeClock()
    results = await run_batch(make_client(), _requests(3), poll_initial=5, poll_max=8,
                              clock=clock, sleep=clock.sleep)
    assert [r.custom_id for r in results] == ["conv-0", "conv-1", "conv-2"]
    assert all(r.ok for r in results)
    assert [r.parsed.summary for r in results] == ["conversation 0", "conversation 1",
                                                  "conversation 2"]
    assert all(r.usage.input_tokens > 0 for r in results)
    assert clock.sleeps == [5, 8, 8]  # exponential, capped at poll_max
    paths = [r.path for r in server.requests]
    if provider == "openai":
        assert paths[:2] == ["/v1/files", "/v1/batches"]
        assert any(p.endswith("/content") for p in paths)
    else:
        assert paths[0] == "/v1/messages/batches"
        assert paths[-1].endswith("/results")
    assert not server.model_requests()  # nothing went through the sync endpoint


async def test_batch_per_item_failures(
    server: FakeLLMServer, make_client: ClientFactory
) -> None:
    server.set_fallback(_echo)
    server.scenario.batch.fail_custom_ids = ["conv-1"]
    clock = FakeClock()
    results = await run_batch(make_client(), _requests(3), clock=clock, sleep=clock.sleep)
    assert [r.ok for r in results] == [True, False, True]
    assert "scripted failure of conv-1" in (results[1].error or "")


async def test_batch_item_failing_schema_is_a_per_item_error(
    server: FakeLLMServer, make_client: ClientFactory
) -> None:
    server.enqueue(Step.json_reply({"summary": "x", "candidates": []}),
                   Step.json_reply({"wrong": True}))
    clock = FakeClock()
    results = await run_batch(make_client(), _requests(2), clock=clock, sleep=clock.sleep)
    assert results[0].ok and results[0].parsed == Summary(summary="x", candidates=[])
    assert not results[1].ok and "Summary" in (results[1].error or "")


async def test_batch_that_never_ends_times_out_and_cancels(
    server: FakeLLMServer, make_client: ClientFactory, provider: str
) -> None:
    server.set_fallback(_echo)
    server.scenario.batch.never_end = True
    clock = FakeClock()
    results = await run_batch(make_client(), _requests(2), poll_initial=5, poll_max=60,
                              timeout=100, clock=clock, sleep=clock.sleep)
    assert sum(clock.sleeps) == 100  # stops exactly at the timeout
    assert clock.sleeps == [5, 10, 20, 40, 25]
    assert all(not r.ok for r in results)
    assert all(r.error and "timed out" in r.error for r in results)
    assert any(r.path.endswith("/cancel") for r in server.requests)


async def test_batch_unsupported_falls_back_to_sync(
    make_client: ClientFactory, server: FakeLLMServer
) -> None:
    server.scenario.batch.unsupported = True
    server.set_fallback(_echo)
    results = await run_batch(make_client(), _requests(3))
    assert all(r.ok for r in results)
    assert len(server.model_requests()) == 3
    assert {r.parsed.summary for r in results} == {"conversation 0", "conversation 1",
                                                   "conversation 2"}


async def test_unsafe_custom_ids_are_mapped_back(
    server: FakeLLMServer, make_client: ClientFactory
) -> None:
    server.set_fallback(lambda req: Step.reply("ok"))
    requests = [BatchRequest(custom_id="a/b c", messages=[ChatMessage(role="user", content="x")]),
                BatchRequest(custom_id="a/b c", messages=[ChatMessage(role="user", content="y")])]
    clock = FakeClock()
    results = await run_batch(make_client(), requests, clock=clock, sleep=clock.sleep)
    assert [r.custom_id for r in results] == ["a/b c", "a/b c"]
    assert all(r.ok and r.text == "ok" for r in results)


async def test_offline_batch_is_synchronous_and_deterministic() -> None:
    client = OfflineClient()
    requests = _requests(2)
    first = await run_batch(client, requests)
    second = await run_batch(client, requests)
    assert first == second
    assert all(r.ok for r in first)
    assert first[0].parsed.summary == "conversation 0"


async def test_fake_server_batch_behaviour_in_constructor() -> None:
    async with FakeLLMServer(batch=BatchBehaviour(unsupported=True)) as srv:
        assert srv.scenario.batch.unsupported
