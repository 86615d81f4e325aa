"""Batch calls for the sleep cycle: Anthropic Message Batches, OpenAI Batch, or a sync fallback.

``run_batch`` submits every request at once, polls with exponential backoff (``poll_initial``
doubling up to ``poll_max``) until the batch ends or ``timeout`` passes, and returns one
``BatchItemResult`` per request, in request order. Failures are per item: an errored, expired or
cancelled item, a reply that fails its schema (batches get no repair round), or an item still
pending at the timeout. At the timeout the batch is cancelled and polled (same backoff, for at
most ``cancel_grace``) until the cancel has taken effect, because both providers only hand out
results once the batch has ended: Anthropic's results then say ``succeeded`` / ``errored`` for
items that finished and ``canceled`` for the rest; OpenAI's output file holds the finished
successes and its error file the failures plus the never-run requests (``batch_cancelled``).
Finished items are kept as they are; the cancelled ones fail with "batch timed out after Ns".

Providers without a batch API (offline, Ollama and other OpenAI-compatible servers that 404 the
batch routes) take the synchronous path: ``client.complete`` per request, ``concurrency`` at a
time, with the usual retries and structured-output repair.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from reverie.config import CLI_PROVIDERS
from reverie.llm.anthropic import AnthropicClient
from reverie.llm.errors import BatchUnsupportedError, LLMBadRequestError, LLMError
from reverie.llm.http import HttpModelClient
from reverie.llm.openai import OpenAIClient
from reverie.llm.structured import parse_reply
from reverie.llm.types import ChatMessage, ModelClient
from reverie.types import Usage

logger = logging.getLogger(__name__)

Clock = Callable[[], float]
Sleep = Callable[[float], Awaitable[None]]
_SAFE_ID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


class BatchRequest(BaseModel):
    """One request of a batch. ``custom_id`` identifies its result."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    custom_id: str
    messages: list[ChatMessage]
    system: str | None = None
    output_schema: type[BaseModel] | None = None
    max_tokens: int | None = None


class BatchItemResult(BaseModel):
    """The outcome of one request: ``parsed`` (with a schema) or ``text``, else ``error``."""

    custom_id: str
    ok: bool
    parsed: Any = None
    text: str = ""
    error: str | None = None
    usage: Usage = Field(default_factory=Usage)


async def run_batch(
    client: ModelClient,
    requests: Sequence[BatchRequest],
    *,
    poll_initial: float = 5.0,
    poll_max: float = 60.0,
    timeout: float = 7200.0,
    concurrency: int = 4,
    clock: Clock = time.monotonic,
    sleep: Sleep = asyncio.sleep,
    cancel_grace: float = 600.0,
    sync_timeout: float | None = None,
) -> list[BatchItemResult]:
    """Run ``requests`` through the provider's batch API when it has one, else one by one
    (all of them within ``sync_timeout`` seconds, when given)."""
    if not requests:
        return []
    if client.is_offline or not isinstance(client, (OpenAIClient, AnthropicClient)):
        return await run_sync(client, requests, concurrency=concurrency, timeout=sync_timeout)
    runner: _ProviderBatch = (
        _OpenAIBatch(client) if isinstance(client, OpenAIClient) else _AnthropicBatch(client)
    )
    wire_ids = _wire_ids(requests)
    try:
        batch_id = await runner.submit(requests, wire_ids)
    except BatchUnsupportedError as exc:
        logger.info("%s; running %d requests one by one", exc.message, len(requests))
        return await run_sync(client, requests, concurrency=concurrency, timeout=sync_timeout)
    logger.info("%s batch %s submitted with %d requests", client.provider, batch_id, len(requests))
    poller = _Poller(runner, batch_id, poll_initial=poll_initial, poll_max=poll_max,
                     clock=clock, sleep=sleep)
    timed_out = not await poller.until_ended(timeout)
    if timed_out:
        logger.warning("batch %s timed out after %.0fs; cancelling and keeping partial results",
                       batch_id, timeout)
        raw = await _cancel_and_collect(runner, poller, cancel_grace)
    else:
        raw = await runner.results(batch_id)
    by_wire = {wire: request for wire, request in zip(wire_ids, requests, strict=True)}
    results: dict[str, BatchItemResult] = {}
    for wire_id, item in raw.items():
        request = by_wire.get(wire_id)
        if timed_out and item.cancelled:
            continue  # reported below as timed out
        if request is not None:
            results[wire_id] = _finish(item, request, client)
    pending_reason = (f"batch timed out after {timeout:.0f}s" if timed_out
                      else "no result for this request")
    out = [results.get(wire) or BatchItemResult(custom_id=req.custom_id, ok=False,
                                                error=pending_reason)
           for wire, req in zip(wire_ids, requests, strict=True)]
    failed = sum(1 for r in out if not r.ok)
    logger.info("batch %s: %d succeeded, %d failed", batch_id, len(out) - failed, failed)
    return out


class _Poller:
    """Polls one batch with exponential backoff (``poll_initial`` doubling to ``poll_max``)."""

    def __init__(self, runner: _ProviderBatch, batch_id: str, *, poll_initial: float,
                 poll_max: float, clock: Clock, sleep: Sleep) -> None:
        self.runner = runner
        self.batch_id = batch_id
        self.poll_initial = poll_initial
        self.poll_max = poll_max
        self.clock = clock
        self.sleep = sleep

    async def until_ended(self, limit: float) -> bool:
        """True once the batch has ended; False when ``limit`` seconds pass first."""
        started = self.clock()
        interval = self.poll_initial
        while not await self.runner.poll(self.batch_id):
            remaining = limit - (self.clock() - started)
            if remaining <= 0:
                return False
            wait = min(interval, remaining)
            logger.debug("batch %s still running; next poll in %.0fs", self.batch_id, wait)
            await self.sleep(wait)
            interval = min(interval * 2, self.poll_max)
        return True


async def _cancel_and_collect(
    runner: _ProviderBatch, poller: _Poller, grace: float
) -> dict[str, _RawItem]:
    """Cancel, wait (bounded) for the cancel to end the batch, then read what finished."""
    batch_id = poller.batch_id
    try:
        await runner.cancel(batch_id)
    except LLMError as exc:  # e.g. it ended meanwhile: its results are still worth reading
        logger.warning("could not cancel batch %s: %s", batch_id, exc.message)
    try:
        if not await poller.until_ended(grace):
            logger.warning("batch %s still cancelling after %.0fs; no results kept",
                           batch_id, grace)
            return {}
        return await runner.results(batch_id)
    except LLMError as exc:
        logger.warning("could not read the cancelled batch %s: %s", batch_id, exc.message)
        return {}


async def run_sync(
    client: ModelClient, requests: Sequence[BatchRequest], *, concurrency: int = 4,
    timeout: float | None = None,
) -> list[BatchItemResult]:
    """The fallback: ``complete`` per request, ``concurrency`` at a time; errors per item.
    ``timeout`` (seconds for all of them) fails the items not finished by then."""
    # the offline engine and the coding-agent CLIs (one process each, the user's plan) one at a
    # time
    serial = client.is_offline or client.provider in CLI_PROVIDERS
    gate = asyncio.Semaphore(1 if serial else max(1, concurrency))
    loop = asyncio.get_running_loop()
    deadline = None if timeout is None else loop.time() + timeout

    async def one(request: BatchRequest) -> BatchItemResult:
        async with gate:
            try:
                async with asyncio.timeout_at(deadline):
                    reply = await client.complete(
                        request.messages, system=request.system,
                        output_schema=request.output_schema, max_tokens=request.max_tokens,
                    )
            except LLMError as exc:
                return BatchItemResult(custom_id=request.custom_id, ok=False, error=exc.message)
            except TimeoutError:
                return BatchItemResult(custom_id=request.custom_id, ok=False,
                                       error=f"no result within {timeout:.0f} s")
            return BatchItemResult(custom_id=request.custom_id, ok=True, parsed=reply.parsed,
                                   text=reply.text, usage=reply.usage)

    return list(await asyncio.gather(*(one(r) for r in requests)))


def _wire_ids(requests: Sequence[BatchRequest]) -> list[str]:
    """Provider-safe unique ids: the caller's own where they qualify, else ``req-N``."""
    seen: set[str] = set()
    out = []
    for index, request in enumerate(requests):
        wire = request.custom_id
        if not _SAFE_ID.match(wire) or wire in seen:
            wire = f"req-{index}"
        while wire in seen:
            wire = f"{wire}_"
        seen.add(wire)
        out.append(wire)
    return out


class _RawItem(BaseModel):
    body: Any = None  # the provider's message / completion on success
    error: str | None = None
    cancelled: bool = False  # never ran: the batch was cancelled or expired first


def _finish(item: _RawItem, request: BatchRequest, client: HttpModelClient) -> BatchItemResult:
    if item.error is not None:
        return BatchItemResult(custom_id=request.custom_id, ok=False, error=item.error)
    try:
        reply = client.parse_reply(item.body, output_schema=request.output_schema)
    except LLMError as exc:
        return BatchItemResult(custom_id=request.custom_id, ok=False, error=exc.message)
    if request.output_schema is None:
        return BatchItemResult(custom_id=request.custom_id, ok=True, text=reply.text,
                               usage=reply.usage)
    try:
        parsed = parse_reply(client.structured_value(reply, request.output_schema),
                             request.output_schema)
    except ValueError as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        return BatchItemResult(custom_id=request.custom_id, ok=False, text=reply.text,
                               usage=reply.usage,
                               error=f"reply did not match {request.output_schema.__name__}: "
                                     f"{first}")
    return BatchItemResult(custom_id=request.custom_id, ok=True, parsed=parsed, text=reply.text,
                           usage=reply.usage)


def _parse_jsonl(data: bytes) -> list[dict[str, Any]]:
    rows = []
    for line in data.decode("utf-8", "replace").splitlines():
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            logger.warning("skipping a batch result line that is not JSON")
            continue
        if isinstance(row, dict):
            rows.append(row)
    return rows


def _unsupported(client: HttpModelClient, exc: LLMBadRequestError) -> BatchUnsupportedError:
    return BatchUnsupportedError(
        f"The {client.provider} endpoint at {client.base_url} has no batch API "
        f"({exc.status}); falling back to one request at a time.",
        provider=client.provider, status=exc.status,
    )


class _ProviderBatch:
    def __init__(self, client: HttpModelClient) -> None:
        self.client = client

    async def submit(self, requests: Sequence[BatchRequest], wire_ids: list[str]) -> str:
        raise NotImplementedError

    async def poll(self, batch_id: str) -> bool:
        """True once the batch has ended."""
        raise NotImplementedError

    async def results(self, batch_id: str) -> dict[str, _RawItem]:
        raise NotImplementedError

    async def cancel(self, batch_id: str) -> None:
        raise NotImplementedError

    def body(self, request: BatchRequest) -> dict[str, Any]:
        return self.client.build_body(request.messages, system=request.system, tools=(),
                                      output_schema=request.output_schema,
                                      max_tokens=request.max_tokens)


class _OpenAIBatch(_ProviderBatch):
    """Files upload -> batches create -> retrieve until done -> output / error file content."""

    _DONE = ("completed", "failed", "expired", "cancelled")

    def __init__(self, client: HttpModelClient) -> None:
        super().__init__(client)
        self._last: dict[str, Any] = {}

    async def submit(self, requests: Sequence[BatchRequest], wire_ids: list[str]) -> str:
        lines = [
            json.dumps({"custom_id": wire, "method": "POST", "url": "/v1/chat/completions",
                        "body": self.body(request)})
            for wire, request in zip(wire_ids, requests, strict=True)
        ]
        payload = ("\n".join(lines) + "\n").encode("utf-8")
        try:
            uploaded = await self.client.request_raw(
                "POST", "/files", files={"file": ("reverie-batch.jsonl", payload,
                                                  "application/jsonl")},
                data={"purpose": "batch"},
            )
            file_id = uploaded.json()["id"]
            created = await self.client.post_json("/batches", {
                "input_file_id": file_id, "endpoint": "/v1/chat/completions",
                "completion_window": "24h",
            })
        except LLMBadRequestError as exc:
            if exc.status in (404, 405, 501):
                raise _unsupported(self.client, exc) from None
            raise
        except (ValueError, KeyError, TypeError):
            raise self.client.bad_response("file upload without an id") from None
        if not isinstance(created, dict) or "id" not in created:
            raise self.client.bad_response("batch create without an id")
        return str(created["id"])

    async def poll(self, batch_id: str) -> bool:
        self._last = await self.client.get_json(f"/batches/{batch_id}")
        return str(self._last.get("status")) in self._DONE

    async def _file_rows(self, file_id: Any) -> list[dict[str, Any]]:
        if not file_id:
            return []
        response = await self.client.request_raw("GET", f"/files/{file_id}/content")
        return _parse_jsonl(response.content)

    async def results(self, batch_id: str) -> dict[str, _RawItem]:
        rows = await self._file_rows(self._last.get("output_file_id"))
        rows += await self._file_rows(self._last.get("error_file_id"))
        items: dict[str, _RawItem] = {}
        for row in rows:
            wire = str(row.get("custom_id"))
            response = row.get("response") or {}
            status = response.get("status_code") if isinstance(response, dict) else None
            error = row.get("error")
            if status == 200 and not error:
                items[wire] = _RawItem(body=response.get("body"))
                continue
            message = ""
            if isinstance(error, dict):
                code = error.get("code")
                if code in ("batch_cancelled", "batch_expired"):
                    items[wire] = _RawItem(error=str(code), cancelled=True)
                    continue
                message = str(error.get("message") or code or "")
            body = response.get("body") if isinstance(response, dict) else None
            if not message and isinstance(body, dict) and isinstance(body.get("error"), dict):
                message = str(body["error"].get("message") or "")
            items[wire] = _RawItem(error=f"{status or 'error'}: {message or 'request failed'}")
        if str(self._last.get("status")) in ("failed", "expired") and not items:
            errors = self._last.get("errors") or {}
            detail = json.dumps(errors)[:300] if errors else str(self._last.get("status"))
            logger.warning("openai batch %s ended without results: %s", batch_id, detail)
        return items

    async def cancel(self, batch_id: str) -> None:
        await self.client.request_raw("POST", f"/batches/{batch_id}/cancel", retry=False)


class _AnthropicBatch(_ProviderBatch):
    """Message Batches: create -> retrieve until ``ended`` -> results JSONL."""

    async def submit(self, requests: Sequence[BatchRequest], wire_ids: list[str]) -> str:
        body = {"requests": [{"custom_id": wire, "params": self.body(request)}
                             for wire, request in zip(wire_ids, requests, strict=True)]}
        try:
            created = await self.client.post_json("/messages/batches", body)
        except LLMBadRequestError as exc:
            if exc.status in (404, 405, 501):
                raise _unsupported(self.client, exc) from None
            raise
        if not isinstance(created, dict) or "id" not in created:
            raise self.client.bad_response("batch create without an id")
        return str(created["id"])

    async def poll(self, batch_id: str) -> bool:
        status = await self.client.get_json(f"/messages/batches/{batch_id}")
        return isinstance(status, dict) and status.get("processing_status") == "ended"

    async def results(self, batch_id: str) -> dict[str, _RawItem]:
        response = await self.client.request_raw("GET", f"/messages/batches/{batch_id}/results")
        items: dict[str, _RawItem] = {}
        for row in _parse_jsonl(response.content):
            wire = str(row.get("custom_id"))
            result = row.get("result") or {}
            kind = result.get("type") if isinstance(result, dict) else None
            if kind == "succeeded":
                items[wire] = _RawItem(body=result.get("message"))
            elif kind == "errored":
                error = result.get("error") or {}
                inner = error.get("error", error) if isinstance(error, dict) else {}
                message = inner.get("message") if isinstance(inner, dict) else None
                items[wire] = _RawItem(error=f"errored: {message or 'request failed'}")
            else:
                items[wire] = _RawItem(error=str(kind or "no result"),
                                       cancelled=kind in ("canceled", "expired"))
        return items

    async def cancel(self, batch_id: str) -> None:
        await self.client.request_raw("POST", f"/messages/batches/{batch_id}/cancel",
                                      retry=False)
