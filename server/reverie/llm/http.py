"""What the OpenAI and Anthropic clients share: one ``httpx.AsyncClient``, error mapping, retries.

The key lives only in the default headers of the private ``httpx.AsyncClient``; error texts are
scrubbed of it, and ``repr`` of a client shows provider, model and URL only.
"""

from __future__ import annotations

import email.utils
import functools
import json
import logging
import os
import ssl
import time
from collections.abc import Sequence
from typing import Any

import httpx
import orjson
from pydantic import BaseModel

from reverie.llm.errors import (
    LLMAuthError,
    LLMBadRequestError,
    LLMBadResponseError,
    LLMConfigError,
    LLMConnectionError,
    LLMError,
    LLMRateLimitError,
    LLMServerError,
    LLMTimeoutError,
    scrub,
)
from reverie.llm.retry import RetryPolicy, with_retries
from reverie.llm.structured import complete_structured
from reverie.llm.types import ChatMessage, ModelReply, ToolSpec

logger = logging.getLogger(__name__)


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
    ) -> None:
        self.model = model
        self.base_url = base_url.rstrip("/")
        self.max_output_tokens = max_output_tokens
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
    async def complete(
        self,
        messages: Sequence[ChatMessage],
        *,
        system: str | None = None,
        tools: Sequence[ToolSpec] = (),
        output_schema: type[BaseModel] | None = None,
        max_tokens: int | None = None,
    ) -> ModelReply:
        """One model call (two when a structured reply needs its one repair)."""

        async def once(msgs: Sequence[ChatMessage]) -> ModelReply:
            body = self.build_body(msgs, system=system, tools=tools,
                                   output_schema=output_schema, max_tokens=max_tokens)
            data = await self.post_json(self.completion_path, body)
            return self.parse_reply(data, output_schema=output_schema)

        if output_schema is None:
            return await once(messages)
        return await complete_structured(
            once, messages, output_schema,
            lambda reply: self.structured_value(reply, output_schema), provider=self.provider,
        )

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
        try:
            response = await self._http.request(method, target, **kwargs)
        except (httpx.UnsupportedProtocol, httpx.InvalidURL):
            raise LLMConfigError(
                f"The {self.provider} base URL {self.base_url!r} is not a usable http(s) URL; "
                "fix REVERIE_BASE_URL (e.g. http://localhost:11434/v1).",
                provider=self.provider,
            ) from None
        except httpx.TimeoutException as exc:
            kind = "connecting to" if isinstance(exc, httpx.ConnectTimeout) else "waiting for"
            raise LLMTimeoutError(
                f"Timed out {kind} the {self.provider} endpoint at {self.base_url}; raise "
                "REVERIE_REQUEST_TIMEOUT_SECONDS or check the endpoint is up.",
                provider=self.provider,
            ) from None
        except httpx.TransportError as exc:
            raise LLMConnectionError(
                f"Could not reach the {self.provider} endpoint at {self.base_url} "
                f"({type(exc).__name__}); check REVERIE_BASE_URL and your network.",
                provider=self.provider,
            ) from None
        if response.status_code >= 400:
            await response.aread()
            raise self._status_error(response)
        return response

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
