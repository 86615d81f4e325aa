"""Batches against the fake server: both providers' batch APIs, failures, timeout, fallback."""

from __future__ import annotations

import json
from collections.abc import Callable

from pydantic import BaseModel

from reverie.llm.batch import BatchRequest, run_batch
from reverie.llm.extractive import OfflineClient
from reverie.llm.http import HttpModelClient
from reverie.llm.types import ChatMessage
from support.clock import FakeClock
from support.fake_llm import BatchBehaviour, FakeLLMServer, FakeRequest, Step

ClientFactory = Callable[..., HttpModelClient]


class Summary(BaseModel):
    summary: str
    candidates: list[str]




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


async def test_never_ending_batch_keeps_the_items_that_finished(
    server: FakeLLMServer, make_client: ClientFactory, provider: str
) -> None:
    server.set_fallback(_echo)
    server.scenario.batch = BatchBehaviour(never_end=True, finished_custom_ids=["conv-0", "conv-2"],
                                           cancel_polls=2)
    clock = FakeClock()
    results = await run_batch(make_client(), _requests(3), clock=clock, sleep=clock.sleep)

    # The full 2 h timeout elapsed on the fake clock, then two polls while the cancel settled.
    assert sum(clock.sleeps[:-2]) == 7200
    assert clock.sleeps[-2:] == [5, 10]
    assert [r.ok for r in results] == [True, False, True]
    assert [r.parsed.summary for r in (results[0], results[2])] == ["conversation 0",
                                                                    "conversation 2"]
    assert results[1].error == "batch timed out after 7200s"
    assert results[1].parsed is None and results[1].usage.input_tokens == 0
    assert all(r.usage.input_tokens > 0 and r.usage.output_tokens > 0
               for r in (results[0], results[2]))

    paths = [r.path for r in server.requests]
    cancels = [i for i, p in enumerate(paths) if p.endswith("/cancel")]
    assert len(cancels) == 1 and server.requests[cancels[0]].method == "POST"
    reads = [p for p in paths[cancels[0]:] if p.endswith(("/results", "/content"))]
    assert reads  # results were read only after the cancel
    assert not any(p.endswith(("/results", "/content")) for p in paths[:cancels[0]])
    if provider == "openai":
        assert len(reads) == 2  # the output file and the error file


async def test_cancel_that_never_settles_fails_every_item_after_the_grace(
    server: FakeLLMServer, make_client: ClientFactory
) -> None:
    server.set_fallback(_echo)
    server.scenario.batch = BatchBehaviour(never_end=True, finished_custom_ids=["conv-0"],
                                           cancel_polls=1000)
    clock = FakeClock()
    results = await run_batch(make_client(), _requests(2), timeout=100, cancel_grace=30,
                              clock=clock, sleep=clock.sleep)
    assert sum(clock.sleeps) == 130
    assert [r.error for r in results] == ["batch timed out after 100s"] * 2
    assert not any(r.path.endswith(("/results", "/content")) for r in server.requests)


async def test_fake_cancelled_batch_wire_shape(server: FakeLLMServer, provider: str) -> None:
    """What a client reading the cancelled batch by hand sees, per provider."""
    import httpx

    server.set_fallback(_echo)
    server.scenario.batch = BatchBehaviour(never_end=True, finished_custom_ids=["a", "b"],
                                           fail_custom_ids=["b"])
    lines = [{"custom_id": c, "params": {"model": "m", "max_tokens": 5,
                                         "messages": [{"role": "user", "content": c}]}}
             for c in ("a", "b", "c")]
    async with httpx.AsyncClient(base_url=server.base_url) as http:
        if provider == "anthropic":
            created = (await http.post("/messages/batches", json={"requests": lines})).json()
            status = (await http.get(f"/messages/batches/{created['id']}")).json()
            assert status["processing_status"] == "in_progress"
            assert status["request_counts"]["succeeded"] == 1
            assert status["request_counts"]["errored"] == 1
            cancel = (await http.post(f"/messages/batches/{created['id']}/cancel")).json()
            assert cancel["processing_status"] == "ended"
            assert cancel["request_counts"]["canceled"] == 1
            body = (await http.get(f"/messages/batches/{created['id']}/results")).text
            kinds = {row["custom_id"]: row["result"]["type"]
                     for row in map(json.loads, body.splitlines())}
            assert kinds == {"a": "succeeded", "b": "errored", "c": "canceled"}
            return
        payload = "\n".join(json.dumps({"custom_id": line["custom_id"], "method": "POST",
                                        "url": "/v1/chat/completions", "body": line["params"]})
                            for line in lines)
        file_id = (await http.post("/files", data={"purpose": "batch"},
                                   files={"file": ("in.jsonl", payload.encode())})).json()["id"]
        created = (await http.post("/batches", json={
            "input_file_id": file_id, "endpoint": "/v1/chat/completions",
            "completion_window": "24h"})).json()
        cancel = (await http.post(f"/batches/{created['id']}/cancel")).json()
        assert cancel["status"] == "cancelled"
        output = (await http.get(f"/files/{cancel['output_file_id']}/content")).text
        errors = (await http.get(f"/files/{cancel['error_file_id']}/content")).text
    assert [json.loads(row)["custom_id"] for row in output.splitlines()] == ["a"]
    error_rows = [json.loads(row) for row in errors.splitlines()]
    assert [(r["custom_id"], r["error"]["code"]) for r in error_rows] == [
        ("b", "server_error"), ("c", "batch_cancelled")]
    assert error_rows[0]["response"]["status_code"] == 500 and error_rows[1]["response"] is None


async def test_sync_fallback_items_past_the_timeout_fail_and_the_rest_are_kept(
    server: FakeLLMServer, make_client: Callable[..., HttpModelClient]
) -> None:
    """A local server without a batch API: one request answers, one never does; the cycle's
    budget ends the second as a per-item failure instead of waiting for ever."""
    server.scenario.batch.unsupported = True

    def respond(request: FakeRequest) -> Step:
        if "slow" in request.last_user_text:
            return Step.endless_stream(chunk_delay=0.05)
        return Step.reply("quick answer")

    server.set_fallback(respond)
    requests = [BatchRequest(custom_id=name, messages=[ChatMessage(role="user", content=name)],
                             max_tokens=1_000_000)
                for name in ("quick", "slow")]
    results = await run_batch(make_client(), requests, sync_timeout=1.5)
    by_id = {r.custom_id: r for r in results}
    assert by_id["quick"].ok and by_id["quick"].text == "quick answer"
    assert not by_id["slow"].ok and by_id["slow"].error == "no result within 2 s"
