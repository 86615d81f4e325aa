"""What the OpenAI and Anthropic clients share: one ``httpx.AsyncClient``, error mapping, retries.

The key lives only in the default headers of the private ``httpx.AsyncClient``; error texts are
scrubbed of it, and ``repr`` of a client shows provider, model and URL only.
"""

from __future__ import annotations

import asyncio
import contextlib
import email.utils
import functools
import json
import logging
import os
import re
import ssl
import time
from collections.abc import AsyncIterator, Iterator, Sequence
from typing import Any

import httpx
import orjson
from pydantic import BaseModel

from reverie.llm.capabilities import CapabilityStore
from reverie.llm.errors import (
    LLMAuthError,
    LLMBadRequestError,
    LLMBadResponseError,
    LLMConfigError,
    LLMConnectionError,
    LLMError,
    LLMRateLimitError,
    LLMServerError,
    LLMStreamInterruptedError,
    LLMTimeoutError,
    LLMToolsUnsupportedError,
    scrub,
)
from reverie.llm.retry import RetryPolicy, with_retries
from reverie.llm.stream import SseEvent, StreamAssembler, StreamErrorEvent, iter_sse
from reverie.llm.structured import complete_structured
from reverie.llm.types import ChatMessage, ModelReply, ProgressCallback, ToolSpec

logger = logging.getLogger(__name__)

#: a refusal of ``"stream": true`` names streaming; a refusal of tools names them
_NAMES_STREAMING = re.compile(r"stream", re.IGNORECASE)
_NAMES_TOOLS = re.compile(r"\btools?\b|tool[_ ]choice|tool[_ ]call|function[_ ]call|--jinja",
                          re.IGNORECASE)
#: progress callbacks fire at most this often (tokens) while a reply streams in
PROGRESS_EVERY_TOKENS = 32
#: the largest whole (non-streamed) reply read: far above any model's output
MAX_REPLY_BYTES = 64 * 2**20


class _StreamingRefused(Exception):
    """The endpoint refused a streamed request: ask again without streaming."""


async def _until_quiet_after_finish(events: AsyncIterator[SseEvent],
                                    assembler: StreamAssembler) -> AsyncIterator[SseEvent]:
    """The events; a read timeout after the reply's ``finish_reason`` ends the stream instead
    of failing it (a server that never sends ``[DONE]`` and keeps the connection open)."""
    try:
        async for event in events:
            yield event
    except httpx.ReadTimeout:
        if not assembler.finished:
            raise


def parse_retry_after(value: str | None) -> float | None:
    """Seconds from a ``Retry-After`` header (delta-seconds or an HTTP date)."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def _encode_json(body: dict[str, Any]) -> bytes:
    """Compact UTF-8 JSON, as httpx's ``json=`` sends it, but with orjson: a request carries
    the whole conversation (up to megabytes) and ``json.dumps`` holds the GIL for about 1 ms
    per 400 KB, orjson for about 0.07 ms, so it is done right on the event loop."""
    return orjson.dumps(body)


@functools.cache
def _ssl_context(cert_file: str | None, cert_dir: str | None) -> ssl.SSLContext:
    return httpx.create_ssl_context()


def shared_ssl_context() -> ssl.SSLContext:
    """One verifying TLS context for every client (per CA setting), as httpx would build it.

    Building one loads the whole CA bundle (tens of milliseconds of CPU holding the GIL); a
    client is created per job run, often on the event loop, so the context is built once and
    shared (``SSLContext`` is safe to share between connections and threads).
    """
    return _ssl_context(os.environ.get("SSL_CERT_FILE"), os.environ.get("SSL_CERT_DIR"))


class HttpModelClient:
    """Base for HTTP providers. Subclasses build bodies and parse replies; this class sends them."""

    provider: str = "http"
    key_env_hint: str = "REVERIE_API_KEY"

    def __init__(
        self,
        *,
        model: str,
        base_url: str,
        api_key: str | None,
        connect_timeout: float = 10.0,
        request_timeout: float = 120.0,
        max_retries: int = 4,
        max_output_tokens: int = 4096,
        retry_policy: RetryPolicy | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
        stream: bool = True,
        capabilities: CapabilityStore | None = None,
    ) -> None:
        self.model = model
        self.base_url = base_url.rstrip("/")
        self.max_output_tokens = max_output_tokens
        self.request_timeout = request_timeout
        self.stream = stream
        self.capabilities = capabilities or CapabilityStore()
        self._api_key = api_key or None
        self.retry_policy = retry_policy or RetryPolicy(max_retries=max_retries)
        self._http = httpx.AsyncClient(
            headers=self._auth_headers(self._api_key),
            timeout=httpx.Timeout(request_timeout, connect=connect_timeout),
            transport=transport,
            verify=shared_ssl_context() if transport is None else True,
        )

    def __repr__(self) -> str:
        return f"{type(self).__name__}(model={self.model!r}, base_url={self.base_url!r})"

    @property
    def is_offline(self) -> bool:
        return False

    def _auth_headers(self, api_key: str | None) -> dict[str, str]:
        raise NotImplementedError

    async def aclose(self) -> None:
        await self._http.aclose()

    # ---- the ModelClient call ----------------------------------------------------------------
    @property
    def streams(self) -> bool:
        """Whether the next request streams: on unless configured off or refused before."""
        return self.stream and self.capabilities.streaming(self.base_url) is not False

    @property
    def supports_tools(self) -> bool | None:
        """False once the endpoint refused tools for this model; None while not known."""
        return self.capabilities.tools(self.base_url, self.model)

    async def complete(
        self,
        messages: Sequence[ChatMessage],
        *,
        system: str | None = None,
        tools: Sequence[ToolSpec] = (),
        output_schema: type[BaseModel] | None = None,
        max_tokens: int | None = None,
        on_progress: ProgressCallback | None = None,
    ) -> ModelReply:
        """One model call (two when a structured reply needs its one repair)."""

        async def once(msgs: Sequence[ChatMessage]) -> ModelReply:
            body = self.build_body(msgs, system=system, tools=tools,
                                   output_schema=output_schema, max_tokens=max_tokens)
            limit = max_tokens or self.max_output_tokens
            return await self._call(body, output_schema, on_progress, limit)

        if output_schema is None:
            return await once(messages)
        return await complete_structured(
            once, messages, output_schema,
            lambda reply: self.structured_value(reply, output_schema), provider=self.provider,
        )

    async def _call(self, body: dict[str, Any], output_schema: type[BaseModel] | None,
                    on_progress: ProgressCallback | None, limit: int) -> ModelReply:
        """Streamed when possible; a refusal of streaming is remembered and the call repeated
        without it. A refusal naming tools becomes ``LLMToolsUnsupportedError`` (remembered)."""
        try:
            if self.streams:
                try:
                    return await with_retries(
                        lambda: self._stream_attempt(body, output_schema, on_progress, limit),
                        self.retry_policy)
                except _StreamingRefused:
                    logger.info("%s at %s refused streaming; asking without it from now on",
                                self.provider, self.base_url)
                    await asyncio.to_thread(self.capabilities.set_streaming, self.base_url,
                                            False)
            data = await with_retries(lambda: self._plain_attempt(body), self.retry_policy)
            return self.parse_reply(data, output_schema=output_schema)
        except LLMToolsUnsupportedError:
            await asyncio.to_thread(self.capabilities.set_tools, self.base_url, self.model, False)
            raise

    def _tools_refused(self, body: dict[str, Any], error: LLMError) -> LLMError:
        """``error`` as ``LLMToolsUnsupportedError`` when the request offered tools and the
        refusal names them (Ollama "does not support tools", llama.cpp "--jinja", vLLM
        "tool choice requires ..."); else ``error`` itself."""
        if (body.get("tools") and error.status in (400, 422, 500, 501)
                and _NAMES_TOOLS.search(error.message)):
            return LLMToolsUnsupportedError(
                f"The model {self.model} at {self.base_url} cannot call tools ({error.message}); "
                "Reverie switches this job to its structured no-tools form.",
                provider=self.provider, status=error.status,
            )
        return error

    async def _plain_attempt(self, body: dict[str, Any]) -> Any:
        try:
            return await self._request_json("POST", self.completion_path, json_body=body)
        except (LLMBadRequestError, LLMServerError) as exc:
            raise self._tools_refused(body, exc) from None

    def stream_body(self, body: dict[str, Any]) -> dict[str, Any]:
        """``body`` asking for a streamed reply (providers add their options)."""
        return {**body, "stream": True}

    def new_assembler(self) -> StreamAssembler:
        raise NotImplementedError

    def reply_from_stream(self, assembler: StreamAssembler,
                          output_schema: type[BaseModel] | None) -> ModelReply:
        return assembler.reply()

    async def _stream_attempt(self, body: dict[str, Any], output_schema: type[BaseModel] | None,
                              on_progress: ProgressCallback | None, limit: int) -> ModelReply:
        """One streamed request. The read timeout is an inactivity timeout here: it trips
        only when no bytes arrived for ``request_timeout`` seconds, however long the reply."""
        content = _encode_json(self.stream_body(body))
        headers = {"Content-Type": "application/json", "Accept": "text/event-stream"}
        with self._transport_errors():
            async with self._http.stream("POST", self.url(self.completion_path), content=content,
                                         headers=headers) as response:
                if response.status_code >= 400:
                    await response.aread()
                    error = self._status_error(response)
                    if (response.status_code in (400, 404, 405, 415, 422, 501)
                            and _NAMES_STREAMING.search(error.message)
                            and not _NAMES_TOOLS.search(error.message)):
                        raise _StreamingRefused
                    raise self._tools_refused(body, error)
                if "text/event-stream" not in response.headers.get("content-type", ""):
                    # the server ignored "stream": a whole reply; ask plainly from now on
                    await response.aread()
                    data = self._decode(response, "POST", self.completion_path)
                    await asyncio.to_thread(self.capabilities.set_streaming, self.base_url,
                                            False)
                    return self.parse_reply(data, output_schema=output_schema)
                assembler = self.new_assembler()
                await self._consume(response, assembler, on_progress, limit)
        return self.reply_from_stream(assembler, output_schema)

    async def _consume(self, response: httpx.Response, assembler: StreamAssembler,
                       on_progress: ProgressCallback | None, limit: int) -> None:
        """Feed the stream to ``assembler`` until it is complete; garbage, a server error
        event, a model that runs far past its token limit or an early end each raise."""
        reported = 0
        runaway = 2 * limit + 256
        try:
            async for event in _until_quiet_after_finish(iter_sse(response.aiter_lines()),
                                                         assembler):
                assembler.feed(event)
                tokens = assembler.tokens_so_far
                if on_progress is not None and tokens - reported >= PROGRESS_EVERY_TOKENS:
                    reported = tokens
                    on_progress(tokens)
                if tokens > runaway:
                    raise LLMBadResponseError(
                        f"The {self.provider} endpoint at {self.base_url} kept generating past "
                        f"the {limit}-token output limit (about {tokens} tokens); the reply was "
                        "abandoned.", provider=self.provider)
                if assembler.done:
                    break
        except ValueError as exc:
            raise self.bad_response(f"garbage in the stream: {exc}") from None
        except StreamErrorEvent as exc:
            raise LLMServerError(
                f"The {self.provider} endpoint at {self.base_url} reported an error mid-stream "
                f"({scrub(str(exc), self._api_key)[:200]}); Reverie retries.",
                provider=self.provider) from None
        if not assembler.done and not assembler.finished:
            raise LLMStreamInterruptedError(
                f"The {self.provider} endpoint at {self.base_url} ended the stream before the "
                f"reply was complete (after {assembler.events} events); Reverie retries.",
                provider=self.provider)
        assembler.done = True
        if on_progress is not None and assembler.tokens_so_far != reported:
            on_progress(assembler.tokens_so_far)

    completion_path: str = ""

    def build_body(
        self,
        messages: Sequence[ChatMessage],
        *,
        system: str | None,
        tools: Sequence[ToolSpec],
        output_schema: type[BaseModel] | None,
        max_tokens: int | None,
    ) -> dict[str, Any]:
        raise NotImplementedError

    def parse_reply(self, data: Any, *, output_schema: type[BaseModel] | None) -> ModelReply:
        raise NotImplementedError

    def structured_value(self, reply: ModelReply, output_schema: type[BaseModel]) -> Any:
        return reply.text

    # ---- transport ---------------------------------------------------------------------------
    def url(self, path: str) -> str:
        return self.base_url + path

    async def post_json(self, path: str, body: dict[str, Any]) -> Any:
        return await with_retries(lambda: self._request_json("POST", path, json_body=body),
                                  self.retry_policy)

    async def get_json(self, path: str) -> Any:
        return await with_retries(lambda: self._request_json("GET", path), self.retry_policy)

    async def request_raw(
        self, method: str, path: str, *, retry: bool = True, **kwargs: Any
    ) -> httpx.Response:
        """A request with the provider's error mapping (and retries unless ``retry`` is False)."""

        async def go() -> httpx.Response:
            return await self._send(method, path, **kwargs)

        if not retry:
            return await go()
        return await with_retries(go, self.retry_policy)

    async def _request_json(
        self, method: str, path: str, *, json_body: dict[str, Any] | None = None
    ) -> Any:
        if json_body is None:
            response = await self._send(method, path)
        else:
            content = _encode_json(json_body)
            response = await self._send(
                method, path, content=content, headers={"Content-Type": "application/json"}
            )
        return self._decode(response, method, path)

    def _decode(self, response: httpx.Response, method: str, path: str) -> Any:
        try:
            return response.json()
        except (json.JSONDecodeError, UnicodeDecodeError):
            raise LLMBadResponseError(
                f"The {self.provider} endpoint at {self.base_url} answered {method} {path} with "
                "a body that is not JSON; check REVERIE_BASE_URL points at an "
                f"{self.provider}-compatible API.",
                provider=self.provider, status=response.status_code,
            ) from None

    async def _send(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        target = self.url(path)
        with self._transport_errors():
            request = self._http.build_request(method, target, **kwargs)
            streamed = await self._http.send(request, stream=True)
            try:
                body = await self._read_capped(streamed, method, path)
            finally:
                await streamed.aclose()
        response = httpx.Response(streamed.status_code, headers=streamed.headers, content=body,
                                  request=request)
        if response.status_code >= 400:
            raise self._status_error(response)
        return response

    async def _read_capped(self, response: httpx.Response, method: str, path: str) -> bytes:
        """A whole (not streamed) reply, refused past ``MAX_REPLY_BYTES``: a broken or hostile
        endpoint must not make Reverie hold gigabytes (a 300 MB reply cost 1.3 GB of RSS)."""
        chunks: list[bytes] = []
        size = 0
        async for chunk in response.aiter_bytes():
            size += len(chunk)
            if size > MAX_REPLY_BYTES:
                raise LLMBadResponseError(
                    f"The {self.provider} endpoint at {self.base_url} answered {method} {path} "
                    f"with more than {MAX_REPLY_BYTES // 2**20} MiB; the reply was dropped.",
                    provider=self.provider, status=response.status_code,
                )
            chunks.append(chunk)
        return b"".join(chunks)

    @contextlib.contextmanager
    def _transport_errors(self) -> Iterator[None]:
        """httpx's transport exceptions as ``LLMError``s naming the endpoint and the fix."""
        try:
            yield
        except (httpx.UnsupportedProtocol, httpx.InvalidURL):
            raise LLMConfigError(
                f"The {self.provider} base URL {self.base_url!r} is not a usable http(s) URL; "
                "fix REVERIE_BASE_URL (e.g. http://localhost:11434/v1).",
                provider=self.provider,
            ) from None
        except httpx.TimeoutException as exc:
            if isinstance(exc, httpx.ConnectTimeout):
                what = "connecting to"
            else:
                what = f"waiting {self.request_timeout:g} s for data from"
            raise LLMTimeoutError(
                f"Timed out {what} the {self.provider} endpoint at {self.base_url}; raise "
                "REVERIE_REQUEST_TIMEOUT_SECONDS or check the endpoint is up.",
                provider=self.provider,
            ) from None
        except httpx.RemoteProtocolError:
            raise LLMStreamInterruptedError(
                f"The {self.provider} endpoint at {self.base_url} closed the connection before "
                "the reply was complete; Reverie retries.",
                provider=self.provider,
            ) from None
        except httpx.TransportError as exc:
            raise LLMConnectionError(
                f"Could not reach the {self.provider} endpoint at {self.base_url} "
                f"({type(exc).__name__}); check REVERIE_BASE_URL and your network.",
                provider=self.provider,
            ) from None

    def _status_error(self, response: httpx.Response) -> LLMError:
        status = response.status_code
        detail = scrub(self._error_detail(response), self._api_key)
        phrase = response.reason_phrase or ""
        head = f"{status} {phrase}".strip() + f" from the {self.provider} endpoint"
        suffix = f" ({detail})" if detail else ""
        kw: dict[str, Any] = {"provider": self.provider, "status": status}
        if status in (401, 403):
            return LLMAuthError(f"{head}{suffix}: check {self.key_env_hint}.", **kw)
        if status == 429:
            return LLMRateLimitError(
                f"{head}{suffix}: rate limited; Reverie retries with backoff, lower the request "
                "rate or raise your quota if this persists.",
                retry_after=parse_retry_after(response.headers.get("retry-after")), **kw,
            )
        if status >= 500:
            return LLMServerError(
                f"{head}{suffix}: the provider had a problem; Reverie retries, try again later "
                "if it persists.",
                retry_after=parse_retry_after(response.headers.get("retry-after")), **kw,
            )
        if status == 404:
            return LLMBadRequestError(
                f"{head}{suffix}: check REVERIE_BASE_URL and REVERIE_MODEL ({self.model}).", **kw
            )
        return LLMBadRequestError(
            f"{head}{suffix}: the request was refused; check REVERIE_MODEL ({self.model}) and "
            "REVERIE_MAX_OUTPUT_TOKENS.",
            **kw,
        )

    @staticmethod
    def _error_detail(response: httpx.Response) -> str:
        try:
            data = response.json()
        except (json.JSONDecodeError, UnicodeDecodeError):
            return response.text[:200].strip()
        error = data.get("error") if isinstance(data, dict) else None
        if isinstance(error, dict):
            return str(error.get("message") or "")[:300]
        if isinstance(error, str):
            return error[:300]
        return ""

    def bad_response(self, what: str) -> LLMBadResponseError:
        return LLMBadResponseError(
            f"The {self.provider} endpoint at {self.base_url} sent an unexpected reply ({what}); "
            f"check REVERIE_BASE_URL points at an {self.provider}-compatible API.",
            provider=self.provider,
        )
