"""A fake LLM provider: a real HTTP server on 127.0.0.1 for tests and benchmarks.

It speaks enough of two wire formats for Reverie's clients to talk to it:

- OpenAI: ``POST /v1/chat/completions``; batches: ``POST /v1/files`` (multipart),
  ``GET /v1/files/{id}`` and ``/content``, ``POST /v1/batches``, ``GET /v1/batches/{id}``,
  ``POST /v1/batches/{id}/cancel``;
- Anthropic: ``POST /v1/messages``; batches: ``POST /v1/messages/batches``,
  ``GET /v1/messages/batches/{id}`` and ``/results`` (JSONL), ``POST .../{id}/cancel``.

Every path is also accepted without the ``/v1`` prefix, so one base URL serves both providers:
point ``REVERIE_BASE_URL`` (or a client's ``base_url``) at ``server.base_url``
(``http://127.0.0.1:PORT/v1``) with ``REVERIE_PROVIDER=openai`` or ``anthropic`` and any
``REVERIE_API_KEY``.

In a test (async or not)::

    async with FakeLLMServer() as server:           # or: with FakeLLMServer() as server:
        server.enqueue(Step.tool("read_file", file_path="a.md"), Step.reply("done"))
        ...                                          # drive a client at server.base_url
        body = server.model_requests()[0].json       # what the client sent
        assert body["messages"][0]["role"] == "system"

``FakeLLMServer(scenario=None | Scenario | [Step, ...], *, fallback=None, slow=None,
batch=None, port=0, record_file=None)``; ``start()`` / ``stop()`` or a ``with`` block.
Properties ``port``, ``url`` (``http://127.0.0.1:PORT``), ``base_url`` (``url + "/v1"``),
``scenario`` (mutable: e.g. ``server.scenario.batch.never_end = True``), ``pending_steps``.
Methods ``enqueue(*steps)``, ``set_fallback(fn)``, ``set_default(step)``, ``reset()``,
``requests``, ``model_requests()``, ``wait_for_requests(count, timeout)``.

Scenario
--------
A queue of ``Step``s is consumed one per model call (one per chat completion / message, and one
per batch item when a batch is created, in item order). Constructors and kinds:

- ``Step.reply(text)`` (kind ``text``);
- ``Step.tool(name, **arguments)`` / ``Step.tool_calls(ToolCallSpec(...), ..., text="")``
  (kind ``tool_calls``);
- ``Step.json_reply(data)`` (kind ``json``): a structured reply. OpenAI: the content is the JSON
  text. Anthropic: when the request forces a tool (``tool_choice: {"type": "tool", ...}``, how
  Reverie asks for structured output) a ``tool_use`` block of that tool with ``data`` as input,
  else a text block with the JSON;
- ``Step.error(status, message="", retry_after=None)``: a provider-shaped error body, plus a
  ``Retry-After`` header when ``retry_after`` is set;
- ``Step.hang(seconds, text="late")``: hold the response (the request is recorded first), then
  reply with ``text``; ``stop()`` releases hanging handlers at once;
- ``Step.malformed()``: 200 with a body that is not JSON;
- ``Step.invalid_tool_args(name, raw)``: a tool call whose arguments are the raw string ``raw``
  (OpenAI ``function.arguments``; Anthropic ``input`` as a string).

Streaming: a model request with ``"stream": true`` gets the reply as the provider's SSE events
(``support.fake_stream``; OpenAI chunks with ``tool_calls`` argument fragments and a
usage chunk when ``stream_options.include_usage`` is set, then ``[DONE]``; Anthropic
``message_start`` ... ``input_json_delta`` ... ``message_stop``), paced by the step's
``chunk_delay``. ``Scenario.streaming`` = ``refuse`` answers such requests 400 "streaming is not
supported", ``ignore`` answers them with plain JSON. Misbehaving streams:
``Step.garbage_stream()`` (events that are not JSON), ``Step.cut_stream(text, keep=0.5)`` (the
first half of the events, then the connection closes), ``Step.endless_stream(chunk_delay)``
(text deltas until the client gives up or the server stops). ``Scenario.no_tools`` answers any
request offering tools with 400 "<model> does not support tools" (a model without tool calling);
a model that writes tool calls as text is just ``Step.reply('{"name": ..., "arguments": ...}')``.

Any step may also carry ``delay`` (seconds before answering), ``usage`` (``StepUsage`` overriding
token counts, incl. cache tokens) and ``stop_reason``. When the queue is empty the server asks
``fallback`` (``FakeRequest -> Step | None``; ``FakeRequest`` offers ``provider``, ``body``,
``system``, ``last_user_text``, ``all_text``, ``tool_names``, ``tool_results``, ``turn`` and, for
batch items, ``custom_id``), then uses ``scenario.default`` (a step replayed forever); with
neither it answers 400 "scenario exhausted" (not retried by clients, so a test that runs out of
script fails loudly). ``slow`` delays every response. ``BatchBehaviour``: ``polls_before_done``
(retrievals that still say in progress, default 1), ``never_end``, ``fail_custom_ids`` (items
that fail with a 500), ``unsupported`` (batch routes answer 404, to test the sync fallback),
``finished_custom_ids`` (items that have finished even while the batch as a whole is still in
progress: they survive a cancel) and ``cancel_polls`` (retrievals after a cancel that still say
``canceling`` / ``cancelling``, default 0: the cancel ends the batch at once).
Batch items take steps like model calls; a ``hang`` or ``malformed`` step there becomes a
text reply.

Cancelling a batch that has not ended follows the real APIs. Anthropic: ``processing_status``
goes ``canceling`` then ``ended``; the results JSONL holds the finished items as they finished
(``succeeded`` / ``errored``) and every other item as ``{"type": "canceled"}``, counted in
``request_counts.canceled``. OpenAI: ``status`` goes ``cancelling`` then ``cancelled``; the
finished successes are in the ``output_file_id`` file, finished failures in the
``error_file_id`` file, and every request that never ran is in the error file too with
``response: null`` and ``error.code == "batch_cancelled"`` (a file id is null when its file
would be empty). So ``never_end`` with ``finished_custom_ids`` is "the batch never ends, some
items did": after the cancel exactly those items have results.

Recording
---------
``server.requests`` lists every request as ``RecordedRequest`` (``method``, ``path`` without
query, ``provider``, ``headers`` lower-cased with ``authorization`` / ``x-api-key`` values
replaced by ``<redacted>``, raw ``body`` text, parsed ``json`` (None if not JSON), ``at`` epoch
time). Token usage in replies follows request size: input tokens = characters of the system,
messages and tools JSON // 4; output tokens = characters of the reply // 4 (at least 1).

From another process
--------------------
``python -m support.fake_llm [--scenario FILE.json] [--port-file F] [--port 0]
[--responder MODULE:FUNC | PATH.py:FUNC] [--record-file requests.jsonl] [--slow S]``
serves until SIGTERM / SIGINT. The scenario file is ``Scenario`` as JSON, e.g.
``{"steps": [{"kind": "text", "text": "hi"}], "default": {"kind": "text", "text": "ok"},
"slow": 0, "batch": {"never_end": false}}``. The port file is written (write-then-rename) once
the server listens. ``--responder`` loads a fallback callable. ``--record-file`` appends each
request as one JSON line. Control endpoints: ``GET /_fake/requests`` (the recording as JSON),
``POST /_fake/enqueue`` (a step or a list of steps), ``POST /_fake/reset`` (queue and recording).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import email.parser
import email.policy
import importlib
import importlib.util
import itertools
import json
import logging
import os
import signal
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, Field

from . import fake_stream

logger = logging.getLogger(__name__)

StepKind = Literal[
    "text", "tool_calls", "json", "error", "hang", "malformed", "invalid_tool_args",
    "garbage_stream", "cut_stream", "endless_stream", "unterminated_stream",
]
StreamMode = Literal["honour", "refuse", "ignore"]
Provider = Literal["openai", "anthropic", "control", "unknown"]
SECRET_HEADERS = {"authorization", "x-api-key", "api-key", "proxy-authorization"}


class ToolCallSpec(BaseModel):
    """A scripted tool call."""

    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    id: str | None = None


class StepUsage(BaseModel):
    input_tokens: int | None = None
    output_tokens: int | None = None
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0


class Step(BaseModel):
    """One scripted response (see the module docstring for the kinds)."""

    kind: StepKind = "text"
    text: str = ""
    calls: list[ToolCallSpec] = Field(default_factory=list)
    data: Any = None
    status: int = 500
    message: str = ""
    retry_after: float | None = None
    seconds: float = 0.0
    raw_arguments: str = "{not json"
    delay: float = 0.0
    usage: StepUsage | None = None
    stop_reason: str | None = None
    chunk_delay: float = 0.0
    keep: float = 0.5

    @classmethod
    def of_text(cls, text: str, **kw: Any) -> Step:
        return cls(kind="text", text=text, **kw)

    @classmethod
    def reply(cls, text: str, **kw: Any) -> Step:
        """A text reply (``text`` itself is a field name, hence ``reply`` / ``of_text``)."""
        return cls(kind="text", text=text, **kw)

    @classmethod
    def tool_calls(cls, *calls: ToolCallSpec, text: str = "", **kw: Any) -> Step:
        return cls(kind="tool_calls", calls=list(calls), text=text, **kw)

    @classmethod
    def tool(cls, name: str, /, **arguments: Any) -> Step:
        """One tool call: ``Step.tool("read_file", file_path="x.md")``."""
        return cls(kind="tool_calls", calls=[ToolCallSpec(name=name, arguments=arguments)])

    @classmethod
    def json_reply(cls, data: Any, **kw: Any) -> Step:
        return cls(kind="json", data=data, **kw)

    @classmethod
    def error(cls, status: int, message: str = "", retry_after: float | None = None) -> Step:
        return cls(kind="error", status=status, message=message, retry_after=retry_after)

    @classmethod
    def hang(cls, seconds: float, text: str = "late") -> Step:
        return cls(kind="hang", seconds=seconds, text=text)

    @classmethod
    def malformed(cls) -> Step:
        return cls(kind="malformed")

    @classmethod
    def invalid_tool_args(cls, name: str = "read_file", raw: str = "{not json") -> Step:
        return cls(kind="invalid_tool_args", calls=[ToolCallSpec(name=name)], raw_arguments=raw)

    @classmethod
    def garbage_stream(cls) -> Step:
        """A streamed reply whose events are not JSON (non-streamed: a malformed body)."""
        return cls(kind="garbage_stream")

    @classmethod
    def cut_stream(cls, text: str = "a reply that stops half way", keep: float = 0.5) -> Step:
        """The first ``keep`` of a streamed reply, then the connection closes."""
        return cls(kind="cut_stream", text=text, keep=keep)

    @classmethod
    def unterminated_stream(cls, text: str = "complete, but never says so",
                            hold: float = 30.0) -> Step:
        """A whole streamed reply without its terminator (``[DONE]`` / ``message_stop``), the
        connection then held open for ``hold`` seconds."""
        return cls(kind="unterminated_stream", text=text, seconds=hold)

    @classmethod
    def endless_stream(cls, chunk_delay: float = 0.01) -> Step:
        """A streamed reply that never ends (non-streamed: a response that never comes)."""
        return cls(kind="endless_stream", chunk_delay=chunk_delay)


class BatchBehaviour(BaseModel):
    polls_before_done: int = 1
    never_end: bool = False
    fail_custom_ids: list[str] = Field(default_factory=list)
    unsupported: bool = False
    finished_custom_ids: list[str] = Field(default_factory=list)
    cancel_polls: int = 0


class Scenario(BaseModel):
    """A whole script, loadable from JSON for the standalone server.

    ``streaming``: ``honour`` (a request with ``"stream": true`` gets SSE), ``refuse`` (such a
    request gets a 400 naming streaming) or ``ignore`` (it gets the plain JSON reply).
    ``no_tools``: a request that offers tools gets a 400 "does not support tools", as Ollama
    answers for a model without a tool template.
    """

    steps: list[Step] = Field(default_factory=list)
    default: Step | None = None
    slow: float = 0.0
    batch: BatchBehaviour = Field(default_factory=BatchBehaviour)
    streaming: StreamMode = "honour"
    no_tools: bool = False


@dataclass(frozen=True)
class RecordedRequest:
    """One request as the server saw it (secret header values redacted)."""

    method: str
    path: str
    provider: Provider
    headers: dict[str, str]
    body: str
    json: Any
    at: float

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclass
class FakeRequest:
    """What a fallback responder sees: the provider and the parsed request body."""

    provider: Literal["openai", "anthropic"]
    path: str
    body: dict[str, Any]
    custom_id: str | None = None

    @property
    def system(self) -> str:
        if self.provider == "anthropic":
            return _flatten(self.body.get("system", ""))
        return "\n".join(
            _flatten(m.get("content"))
            for m in self.body.get("messages", [])
            if m.get("role") == "system"
        )

    @property
    def tool_names(self) -> list[str]:
        names = []
        for tool in self.body.get("tools") or []:
            names.append(tool.get("name") or tool.get("function", {}).get("name", ""))
        return names

    @property
    def last_user_text(self) -> str:
        for message in reversed(self.body.get("messages", [])):
            if message.get("role") == "user":
                return _flatten(message.get("content"))
        return ""

    @property
    def all_text(self) -> str:
        return self.system + "\n" + "\n".join(
            _flatten(m.get("content")) for m in self.body.get("messages", [])
        )

    @property
    def tool_results(self) -> list[str]:
        """Contents of tool results in the request, oldest first (both wire formats)."""
        out: list[str] = []
        for message in self.body.get("messages", []):
            if message.get("role") == "tool":
                out.append(_flatten(message.get("content")))
            content = message.get("content")
            if isinstance(content, list):
                for block in content:
                    if isinstance(block, dict) and block.get("type") == "tool_result":
                        out.append(_flatten(block.get("content")))
        return out

    @property
    def turn(self) -> int:
        """1 + the number of assistant turns already in the conversation."""
        return 1 + sum(1 for m in self.body.get("messages", []) if m.get("role") == "assistant")


Responder = Callable[[FakeRequest], Step | None]


def _flatten(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for block in content:
            if isinstance(block, dict):
                if "text" in block:
                    parts.append(str(block["text"]))
                elif block.get("type") == "tool_result":
                    parts.append(_flatten(block.get("content")))
                elif block.get("type") == "tool_use":
                    parts.append(json.dumps(block.get("input")))
            else:
                parts.append(str(block))
        return "\n".join(parts)
    return str(content)


def estimate_input_tokens(body: dict[str, Any]) -> int:
    """chars/4 of what the model would read: system, messages and tool definitions."""
    size = len(json.dumps(body.get("messages", []), ensure_ascii=False))
    size += len(_flatten(body.get("system", "")))
    if body.get("tools"):
        size += len(json.dumps(body["tools"], ensure_ascii=False))
    return max(1, size // 4)


@dataclass
class _Batch:
    id: str
    provider: Literal["openai", "anthropic"]
    created_at: float
    items: list[dict[str, Any]]  # per item: custom_id, ok, status, body
    polls: int = 0
    cancelled: bool = False
    cancel_polls_left: int = 0
    input_file_id: str | None = None
    output_file_id: str | None = None
    error_file_id: str | None = None
    endpoint: str = "/v1/chat/completions"


@dataclass
class _State:
    scenario: Scenario
    fallback: Responder | None
    queue: deque[Step] = field(default_factory=deque)
    requests: list[RecordedRequest] = field(default_factory=list)
    files: dict[str, tuple[str, bytes]] = field(default_factory=dict)
    batches: dict[str, _Batch] = field(default_factory=dict)
    ids: itertools.count[int] = field(default_factory=lambda: itertools.count(1))
    lock: threading.RLock = field(default_factory=threading.RLock)
    stopping: threading.Event = field(default_factory=threading.Event)
    record_file: Path | None = None

    def next_id(self, prefix: str) -> str:
        with self.lock:
            return f"{prefix}{next(self.ids):06d}"


class _QuietHTTPServer(ThreadingHTTPServer):
    """A client that hangs up mid-reply (a cut stream, a cancelled job) is part of what the
    tests do: not a traceback on stderr. Anything else is still reported."""

    def handle_error(self, request: Any, client_address: Any) -> None:
        error = sys.exc_info()[1]
        if isinstance(error, ConnectionError | TimeoutError):
            return
        super().handle_error(request, client_address)


class FakeLLMServer:
    """The fake provider. Start with ``start()`` or a (sync or async) ``with`` block."""

    def __init__(
        self,
        scenario: Scenario | Iterable[Step] | None = None,
        *,
        fallback: Responder | None = None,
        slow: float | None = None,
        batch: BatchBehaviour | None = None,
        port: int = 0,
        record_file: Path | None = None,
    ) -> None:
        if scenario is None:
            scenario = Scenario()
        elif not isinstance(scenario, Scenario):
            scenario = Scenario(steps=list(scenario))
        if slow is not None:
            scenario.slow = slow
        if batch is not None:
            scenario.batch = batch
        self._state = _State(scenario=scenario, fallback=fallback, record_file=record_file)
        self._state.queue.extend(scenario.steps)
        self._port = port
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # ---- lifecycle -------------------------------------------------------------------------
    def start(self) -> FakeLLMServer:
        state = self._state
        state.stopping.clear()
        handler = type("_BoundHandler", (_Handler,), {"state": state})
        self._httpd = _QuietHTTPServer(("127.0.0.1", self._port), handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05},
            name="fake-llm", daemon=True,
        )
        self._thread.start()
        logger.debug("fake LLM server listening on %s", self.url)
        return self

    def stop(self) -> None:
        self._state.stopping.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> FakeLLMServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    async def __aenter__(self) -> FakeLLMServer:
        return self.start()

    async def __aexit__(self, *exc: object) -> None:
        import asyncio

        await asyncio.to_thread(self.stop)

    # ---- addresses -------------------------------------------------------------------------
    @property
    def port(self) -> int:
        if self._httpd is None:
            raise RuntimeError("fake LLM server is not running")
        return int(self._httpd.server_address[1])

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def base_url(self) -> str:
        """The base URL for either provider's client (``.../v1``)."""
        return f"{self.url}/v1"

    # ---- scripting -------------------------------------------------------------------------
    def enqueue(self, *steps: Step) -> None:
        with self._state.lock:
            self._state.queue.extend(steps)

    def set_fallback(self, fallback: Responder | None) -> None:
        with self._state.lock:
            self._state.fallback = fallback

    def set_default(self, step: Step | None) -> None:
        with self._state.lock:
            self._state.scenario.default = step

    @property
    def scenario(self) -> Scenario:
        return self._state.scenario

    @property
    def pending_steps(self) -> int:
        with self._state.lock:
            return len(self._state.queue)

    def reset(self) -> None:
        with self._state.lock:
            self._state.queue.clear()
            self._state.requests.clear()

    # ---- recording -------------------------------------------------------------------------
    @property
    def requests(self) -> list[RecordedRequest]:
        with self._state.lock:
            return list(self._state.requests)

    def model_requests(self) -> list[RecordedRequest]:
        """Only the chat-completion / message calls (not batch, file or control calls)."""
        return [r for r in self.requests if _is_model_path(r.path)]

    def wait_for_requests(self, count: int, timeout: float = 5.0) -> list[RecordedRequest]:
        """Block (briefly polling) until at least ``count`` requests arrived."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if len(self.requests) >= count:
                break
            time.sleep(0.01)
        return self.requests


def _is_model_path(path: str) -> bool:
    return _strip_v1(path) in ("/chat/completions", "/messages")


def _strip_v1(path: str) -> str:
    while path.startswith("/v1/") or path == "/v1":
        path = path[3:] or "/"
    return path


def _provider_of(path: str) -> Provider:
    p = _strip_v1(path)
    if p.startswith("/_fake"):
        return "control"
    if p.startswith("/messages"):
        return "anthropic"
    if p.startswith(("/chat/completions", "/files", "/batches")):
        return "openai"
    return "unknown"


# ---------------------------------------------------------------------------------------------
# Request handling
# ---------------------------------------------------------------------------------------------


class _Handler(BaseHTTPRequestHandler):
    state: _State
    protocol_version = "HTTP/1.1"
    server_version = "FakeLLM/1.0"
    # one write per response and no Nagle delay: ~40 ms per request otherwise
    wbufsize = 64 * 1024
    disable_nagle_algorithm = True

    def log_message(self, format: str, *args: Any) -> None:
        logger.debug("fake-llm %s", format % args)

    def finish(self) -> None:
        try:
            super().finish()
        except (BrokenPipeError, ConnectionResetError):  # the client gave up mid-stream
            logger.debug("fake-llm client went away")

    # ---- plumbing ---------------------------------------------------------------------------
    def _read_body(self) -> bytes:
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def _record(self, body: bytes) -> tuple[str, Any]:
        path = urlsplit(self.path).path
        text = body.decode("utf-8", "replace")
        parsed: Any = None
        if body and "json" in (self.headers.get("Content-Type") or "json"):
            try:
                parsed = json.loads(text)
            except ValueError:
                parsed = None
        headers = {
            k.lower(): ("<redacted>" if k.lower() in SECRET_HEADERS else v)
            for k, v in self.headers.items()
        }
        provider = _provider_of(path)
        if provider != "control":
            rec = RecordedRequest(
                method=self.command, path=path, provider=provider, headers=headers,
                body=text if len(text) < 2_000_000 else text[:2_000_000], json=parsed,
                at=time.time(),
            )
            with self.state.lock:
                self.state.requests.append(rec)
                if self.state.record_file is not None:
                    with self.state.record_file.open("a", encoding="utf-8") as fh:
                        fh.write(json.dumps(rec.to_dict()) + "\n")
        return path, parsed

    def _send(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        data = payload if isinstance(payload, bytes) else json.dumps(payload).encode("utf-8")
        try:
            self.send_response(status)
            content_type = "application/json"
            if headers and "Content-Type" in headers:
                content_type = headers.pop("Content-Type")
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data)))
            for key, value in (headers or {}).items():
                self.send_header(key, value)
            self.end_headers()
            self.wfile.write(data)
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            logger.debug("fake-llm client went away before the response")

    def _wait(self, seconds: float) -> bool:
        """Sleep unless the server is stopping. True when the full time passed."""
        if seconds > 0 and self.state.stopping.wait(seconds):
            self.close_connection = True  # do not wait on this socket for another request
            return False
        return True

    def do_GET(self) -> None:
        self._dispatch()

    def do_POST(self) -> None:
        self._dispatch()

    def do_DELETE(self) -> None:
        self._dispatch()

    def _dispatch(self) -> None:
        body = self._read_body()
        if self.state.stopping.is_set():
            self.close_connection = True
            self._send(503, _openai_error("fake LLM server is stopping", "server_error"))
            return
        path, parsed = self._record(body)
        route = _strip_v1(path)
        method = self.command
        try:
            if route.startswith("/_fake/"):
                self._control(route, parsed)
            elif route == "/chat/completions" and method == "POST":
                self._model_call("openai", route, parsed)
            elif route == "/messages" and method == "POST":
                self._model_call("anthropic", route, parsed)
            elif route.startswith(("/files", "/batches", "/messages/batches")):
                if self.state.scenario.batch.unsupported:
                    self._send(404, _openai_error("Not found", "not_found"))
                else:
                    self._batch_route(route, method, body, parsed)
            else:
                self._send(404, _openai_error(f"no route for {method} {path}", "not_found"))
        except Exception as exc:  # a bug in the fake must show up as a 500, not a hang
            logger.exception("fake-llm handler failed")
            self._send(500, _openai_error(f"fake server error: {exc}", "server_error"))

    # ---- scenario ---------------------------------------------------------------------------
    def _next_step(self, request: FakeRequest) -> Step | None:
        with self.state.lock:
            if self.state.queue:
                return self.state.queue.popleft()
            fallback = self.state.fallback
            default = self.state.scenario.default
        if fallback is not None:
            step = fallback(request)
            if step is not None:
                return step
        return default

    def _control(self, route: str, parsed: Any) -> None:
        if route == "/_fake/requests":
            with self.state.lock:
                data = [r.to_dict() for r in self.state.requests]
            self._send(200, data)
        elif route == "/_fake/enqueue":
            steps = parsed if isinstance(parsed, list) else [parsed]
            with self.state.lock:
                self.state.queue.extend(Step.model_validate(s) for s in steps)
                pending = len(self.state.queue)
            self._send(200, {"pending": pending})
        elif route == "/_fake/reset":
            with self.state.lock:
                self.state.queue.clear()
                self.state.requests.clear()
            self._send(200, {"ok": True})
        else:
            self._send(404, {"error": "unknown control route"})

    def _model_call(
        self, provider: Literal["openai", "anthropic"], route: str, parsed: Any
    ) -> None:
        if not isinstance(parsed, dict):
            self._send(400, _error_body(provider, 400, "request body must be a JSON object"))
            return
        scenario = self.state.scenario
        wants_stream = parsed.get("stream") is True
        if wants_stream and scenario.streaming == "refuse":
            self._send(400, _error_body(provider, 400, "streaming is not supported"))
            return
        if scenario.no_tools and parsed.get("tools"):
            model = parsed.get("model") or "fake-model"
            self._send(400, _error_body(provider, 400, f"{model} does not support tools"))
            return
        streams = wants_stream and scenario.streaming == "honour"
        step = self._next_step(FakeRequest(provider=provider, path=route, body=parsed))
        delay = scenario.slow + (step.delay if step else 0.0)
        if not self._wait(delay):
            return
        if step is None:
            self._send(400, _error_body(provider, 400, "fake LLM server: scenario exhausted"))
            return
        if step.kind == "hang":
            if not self._wait(step.seconds):
                return
        if step.kind in ("garbage_stream", "cut_stream", "endless_stream",
                         "unterminated_stream"):
            self._misbehave(step, provider, parsed, streams)
            return
        status, payload, headers = render_step(step, provider, parsed, self.state.next_id)
        if streams and status == 200 and isinstance(payload, dict):
            self._send_stream(fake_stream.sse_events(provider, payload, parsed), step.chunk_delay)
            return
        self._send(status, payload, headers)

    def _misbehave(self, step: Step, provider: Literal["openai", "anthropic"],
                   parsed: dict[str, Any], streams: bool) -> None:
        if step.kind == "garbage_stream":
            if streams:
                self._send_stream(fake_stream.garbage_events(), step.chunk_delay)
            else:
                self._send(200, b'{"id": "broken", "choices": [ {"message": ')
        elif step.kind in ("cut_stream", "unterminated_stream"):
            text_step = step.model_copy(update={"kind": "text"})
            status, payload, headers = render_step(text_step, provider, parsed,
                                                   self.state.next_id)
            assert isinstance(payload, dict)
            cut = step.kind == "cut_stream"
            if streams:
                events = fake_stream.sse_events(provider, payload, parsed)
                if cut:
                    self._send_stream(fake_stream.cut_off(events, step.keep), step.chunk_delay)
                else:  # everything but the terminator, then silence on an open connection
                    self._send_stream(events[:-1], step.chunk_delay, hold=step.seconds)
            elif cut:
                body = json.dumps(payload).encode("utf-8")
                self._send_truncated(body[: max(1, int(len(body) * step.keep))], len(body))
            else:
                self._send(status, payload, headers)
        elif streams:
            model = str(parsed.get("model") or "fake-model")
            self._send_stream(fake_stream.endless_events(provider, model),
                              step.chunk_delay or 0.01)
        else:
            self._wait(86_400.0)

    def _send_stream(self, events: Iterable[bytes], delay: float, hold: float = 0.0) -> None:
        """An SSE response, one flushed write per event, ended by closing the connection
        (``hold`` seconds after the last event)."""
        self.close_connection = True
        try:
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Connection", "close")
            self.end_headers()
            for event in events:
                if self.state.stopping.is_set():
                    return
                self.wfile.write(event)
                self.wfile.flush()
                if delay and not self._wait(delay):
                    return
            self._wait(hold)
        except (BrokenPipeError, ConnectionResetError):
            logger.debug("fake-llm client went away mid-stream")

    def _send_truncated(self, body: bytes, announced: int) -> None:
        """A JSON response that announces ``announced`` bytes and sends fewer, then closes."""
        self.close_connection = True
        try:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(announced))
            self.end_headers()
            self.wfile.write(body)
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            logger.debug("fake-llm client went away")

    # ---- batches ------------------------------------------------------------------------------
    def _batch_route(self, route: str, method: str, raw: bytes, parsed: Any) -> None:
        parts = [p for p in route.split("/") if p]
        if parts[0] == "files":
            if method == "POST" and len(parts) == 1:
                self._upload_file(raw)
                return
            if method == "GET" and len(parts) == 3 and parts[2] == "content":
                entry = self.state.files.get(parts[1])
                if entry is None:
                    self._send(404, _openai_error("No such file", "not_found"))
                else:
                    self._send(200, entry[1], {"Content-Type": "application/octet-stream"})
                return
            if method == "GET" and len(parts) == 2 and parts[1] in self.state.files:
                name, data = self.state.files[parts[1]]
                self._send(200, _file_object(parts[1], name, len(data)))
                return
        if parts[0] == "batches":
            if method == "POST" and len(parts) == 1:
                self._create_openai_batch(parsed)
                return
            batch = self.state.batches.get(parts[1]) if len(parts) > 1 else None
            if batch is None or batch.provider != "openai":
                self._send(404, _openai_error("No such batch", "not_found"))
                return
            if method == "GET" and len(parts) == 2:
                self._send(200, self._openai_batch_object(batch, poll=True))
                return
            if method == "POST" and len(parts) == 3 and parts[2] == "cancel":
                self._cancel(batch)
                self._send(200, self._openai_batch_object(batch, poll=False))
                return
        if parts[0] == "messages" and len(parts) >= 2 and parts[1] == "batches":
            if method == "POST" and len(parts) == 2:
                self._create_anthropic_batch(parsed)
                return
            batch = self.state.batches.get(parts[2]) if len(parts) > 2 else None
            if batch is None or batch.provider != "anthropic":
                self._send(404, _error_body("anthropic", 404, "No such batch"))
                return
            if method == "GET" and len(parts) == 3:
                self._send(200, self._anthropic_batch_object(batch, poll=True))
                return
            if method == "GET" and len(parts) == 4 and parts[3] == "results":
                if not self._batch_done(batch):
                    self._send(400, _error_body("anthropic", 400, "batch still processing"))
                    return
                lines = [json.dumps(_anthropic_result_line(item, batch, self._finished(batch)))
                         for item in batch.items]
                self._send(200, ("\n".join(lines) + "\n").encode(),
                           {"Content-Type": "application/binary"})
                return
            if method == "POST" and len(parts) == 4 and parts[3] == "cancel":
                self._cancel(batch)
                self._send(200, self._anthropic_batch_object(batch, poll=False))
                return
        self._send(404, _openai_error(f"no route for {method} {route}", "not_found"))

    def _upload_file(self, raw: bytes) -> None:
        content_type = self.headers.get("Content-Type", "")
        message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
            b"Content-Type: " + content_type.encode() + b"\r\n\r\n" + raw
        )
        filename, data = "upload.jsonl", b""
        if message.is_multipart():
            for part in message.iter_parts():
                if part.get_param("name", header="content-disposition") == "file":
                    filename = part.get_filename() or filename
                    payload = part.get_payload(decode=True)
                    data = payload if isinstance(payload, bytes) else b""
        file_id = self.state.next_id("file-")
        self.state.files[file_id] = (filename, data)
        self._send(200, _file_object(file_id, filename, len(data)))

    def _resolve_item(self, provider: Literal["openai", "anthropic"], custom_id: str,
                      body: dict[str, Any], path: str) -> dict[str, Any]:
        request = FakeRequest(provider=provider, path=path, body=body, custom_id=custom_id)
        step = self._next_step(request)
        if custom_id in self.state.scenario.batch.fail_custom_ids:
            step = Step.error(500, f"scripted failure of {custom_id}")
        if step is None:
            step = Step.error(400, "fake LLM server: scenario exhausted")
        if step.kind in ("hang", "malformed"):
            step = Step.of_text(step.text or "late")
        status, payload, _ = render_step(step, provider, body, self.state.next_id)
        return {"custom_id": custom_id, "status": status, "body": payload}

    def _create_openai_batch(self, parsed: Any) -> None:
        if not isinstance(parsed, dict) or parsed.get("input_file_id") not in self.state.files:
            self._send(400, _openai_error("input_file_id is missing or unknown", "invalid_request"))
            return
        _, data = self.state.files[parsed["input_file_id"]]
        items = []
        for line in data.decode("utf-8").splitlines():
            if not line.strip():
                continue
            entry = json.loads(line)
            items.append(self._resolve_item("openai", entry["custom_id"], entry.get("body", {}),
                                            entry.get("url", "/v1/chat/completions")))
        batch = _Batch(id=self.state.next_id("batch_"), provider="openai", created_at=time.time(),
                       items=items, input_file_id=parsed["input_file_id"],
                       endpoint=parsed.get("endpoint", "/v1/chat/completions"))
        self.state.batches[batch.id] = batch
        self._send(200, self._openai_batch_object(batch, poll=False))

    def _create_anthropic_batch(self, parsed: Any) -> None:
        if not isinstance(parsed, dict) or not isinstance(parsed.get("requests"), list):
            self._send(400, _error_body("anthropic", 400, "requests: field required"))
            return
        items = [
            self._resolve_item("anthropic", r["custom_id"], r.get("params", {}), "/messages")
            for r in parsed["requests"]
        ]
        batch = _Batch(id=self.state.next_id("msgbatch_"), provider="anthropic",
                       created_at=time.time(), items=items)
        self.state.batches[batch.id] = batch
        self._send(200, self._anthropic_batch_object(batch, poll=False))

    def _cancel(self, batch: _Batch) -> None:
        if not batch.cancelled and not self._batch_done(batch):
            batch.cancelled = True
            batch.cancel_polls_left = self.state.scenario.batch.cancel_polls

    def _finished(self, batch: _Batch) -> set[str]:
        """Custom ids with a result: all once the batch completed, else the scripted ones."""
        if self._batch_done(batch) and not batch.cancelled:
            return {i["custom_id"] for i in batch.items}
        return set(self.state.scenario.batch.finished_custom_ids)

    def _after_retrieval(self, batch: _Batch) -> None:
        if batch.cancelled and batch.cancel_polls_left > 0:
            batch.cancel_polls_left -= 1

    def _batch_done(self, batch: _Batch) -> bool:
        behaviour = self.state.scenario.batch
        if batch.cancelled:
            return batch.cancel_polls_left <= 0
        if behaviour.never_end:
            return False
        return batch.polls > behaviour.polls_before_done

    def _openai_batch_object(self, batch: _Batch, *, poll: bool) -> dict[str, Any]:
        if poll:
            batch.polls += 1
        done = self._batch_done(batch)
        if poll:
            self._after_retrieval(batch)
        finished = self._finished(batch)
        ok = [i for i in batch.items if i["status"] == 200 and i["custom_id"] in finished]
        failed = [i for i in batch.items if i["status"] != 200 and i["custom_id"] in finished]
        if done and batch.cancelled and batch.output_file_id is None \
                and batch.error_file_id is None:
            self._write_cancelled_files(batch, ok, failed)
        if done and batch.output_file_id is None and not batch.cancelled:
            lines = [json.dumps(_openai_result_line(i, self.state.next_id)) for i in ok]
            batch.output_file_id = self.state.next_id("file-")
            output = ("\n".join(lines) + "\n").encode()
            self.state.files[batch.output_file_id] = ("output.jsonl", output)
            if failed:
                err_lines = [json.dumps(_openai_result_line(i, self.state.next_id)) for i in failed]
                batch.error_file_id = self.state.next_id("file-")
                self.state.files[batch.error_file_id] = (
                    "errors.jsonl", ("\n".join(err_lines) + "\n").encode())
        if batch.cancelled:
            status = "cancelled" if done else "cancelling"
        elif done:
            status = "completed"
        else:
            status = "in_progress" if batch.polls else "validating"
        return {
            "id": batch.id, "object": "batch", "endpoint": batch.endpoint,
            "input_file_id": batch.input_file_id, "completion_window": "24h",
            "status": status, "output_file_id": batch.output_file_id,
            "error_file_id": batch.error_file_id, "created_at": int(batch.created_at),
            "errors": None,
            "request_counts": {
                "total": len(batch.items),
                "completed": len(ok),
                "failed": len(failed) + (len(batch.items) - len(finished & _ids(batch))
                                         if done and batch.cancelled else 0),
            },
        }

    def _write_cancelled_files(self, batch: _Batch, ok: list[dict[str, Any]],
                               failed: list[dict[str, Any]]) -> None:
        """A cancelled OpenAI batch: finished results kept, never-run requests in the errors."""
        next_id = self.state.next_id
        finished = {i["custom_id"] for i in ok + failed}
        out_lines = [json.dumps(_openai_result_line(i, next_id)) for i in ok]
        err_lines = [json.dumps(_openai_result_line(i, next_id)) for i in failed]
        err_lines += [json.dumps(_openai_cancelled_line(i, next_id))
                      for i in batch.items if i["custom_id"] not in finished]
        if out_lines:
            batch.output_file_id = next_id("file-")
            self.state.files[batch.output_file_id] = (
                "output.jsonl", ("\n".join(out_lines) + "\n").encode())
        if err_lines:
            batch.error_file_id = next_id("file-")
            self.state.files[batch.error_file_id] = (
                "errors.jsonl", ("\n".join(err_lines) + "\n").encode())

    def _anthropic_batch_object(self, batch: _Batch, *, poll: bool) -> dict[str, Any]:
        if poll:
            batch.polls += 1
        done = self._batch_done(batch)
        if poll:
            self._after_retrieval(batch)
        finished = self._finished(batch) & _ids(batch)
        ok = sum(1 for i in batch.items if i["status"] == 200 and i["custom_id"] in finished)
        total = len(batch.items)
        counts = {"processing": total - len(finished), "succeeded": ok,
                  "errored": len(finished) - ok, "canceled": 0, "expired": 0}
        if done and batch.cancelled:
            counts.update(processing=0, canceled=total - len(finished))
        return {
            "id": batch.id, "type": "message_batch",
            "processing_status": (
                "ended" if done else ("canceling" if batch.cancelled else "in_progress")
            ),
            "request_counts": counts,
            "results_url": (f"/v1/messages/batches/{batch.id}/results" if done else None),
            "created_at": _iso(batch.created_at), "ended_at": _iso(time.time()) if done else None,
        }


def _iso(ts: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ts))


def _file_object(file_id: str, name: str, size: int) -> dict[str, Any]:
    return {"id": file_id, "object": "file", "bytes": size, "filename": name,
            "purpose": "batch", "created_at": int(time.time())}


def _openai_result_line(item: dict[str, Any], next_id: Callable[[str], str]) -> dict[str, Any]:
    line: dict[str, Any] = {
        "id": next_id("batch_req_"), "custom_id": item["custom_id"],
        "response": {"status_code": item["status"], "request_id": next_id("req_"),
                     "body": item["body"]},
        "error": None,
    }
    if item["status"] != 200:
        message = item["body"].get("error", {}).get("message", "failed")
        line["error"] = {"code": "server_error", "message": message}
    return line


def _ids(batch: _Batch) -> set[str]:
    return {str(i["custom_id"]) for i in batch.items}


def _openai_cancelled_line(item: dict[str, Any], next_id: Callable[[str], str]) -> dict[str, Any]:
    return {"id": next_id("batch_req_"), "custom_id": item["custom_id"], "response": None,
            "error": {"code": "batch_cancelled",
                      "message": "The batch was cancelled before this request executed."}}


def _anthropic_result_line(item: dict[str, Any], batch: _Batch,
                           finished: set[str]) -> dict[str, Any]:
    if batch.cancelled and item["custom_id"] not in finished:
        return {"custom_id": item["custom_id"], "result": {"type": "canceled"}}
    if item["status"] == 200:
        return {"custom_id": item["custom_id"],
                "result": {"type": "succeeded", "message": item["body"]}}
    return {"custom_id": item["custom_id"], "result": {"type": "errored", "error": item["body"]}}


# ---------------------------------------------------------------------------------------------
# Rendering a step in a provider's wire format
# ---------------------------------------------------------------------------------------------


def _openai_error(message: str, type_: str, code: str | None = None) -> dict[str, Any]:
    return {"error": {"message": message, "type": type_, "param": None, "code": code}}


_ANTHROPIC_ERROR_TYPES = {
    400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
    404: "not_found_error", 413: "request_too_large", 429: "rate_limit_error",
    500: "api_error", 529: "overloaded_error",
}


def _error_body(provider: str, status: int, message: str) -> dict[str, Any]:
    if provider == "anthropic":
        kind = _ANTHROPIC_ERROR_TYPES.get(status, "api_error")
        return {"type": "error", "error": {"type": kind, "message": message}}
    kind = "invalid_request_error"
    if status == 429:
        kind = "rate_limit_exceeded"
    elif status >= 500:
        kind = "server_error"
    return _openai_error(message, kind)


def render_step(
    step: Step, provider: Literal["openai", "anthropic"], request: dict[str, Any],
    next_id: Callable[[str], str],
) -> tuple[int, Any, dict[str, str]]:
    """(status, JSON payload or raw bytes, extra headers) for one step."""
    if step.kind == "error":
        error_text = step.message or HTTPStatus(step.status).phrase
        headers = {}
        if step.retry_after is not None:
            headers["Retry-After"] = f"{step.retry_after:g}"
        return step.status, _error_body(provider, step.status, error_text), headers
    if step.kind == "malformed":
        return 200, b'{"id": "broken", "choices": [ {"message": ', {}
    model = str(request.get("model") or "fake-model")
    input_tokens = estimate_input_tokens(request)
    text = step.text
    calls: list[tuple[str, str, Any]] = []  # (id, name, arguments: dict or raw str)
    if step.kind == "tool_calls":
        calls = [(c.id or next_id("call_"), c.name, c.arguments) for c in step.calls]
    elif step.kind == "invalid_tool_args":
        name = step.calls[0].name if step.calls else "read_file"
        calls = [(next_id("call_"), name, step.raw_arguments)]
    forced_tool = None
    choice = request.get("tool_choice")
    if provider == "anthropic" and isinstance(choice, dict) and choice.get("type") == "tool":
        forced_tool = choice.get("name")
    if step.kind == "json":
        if forced_tool:
            calls = [(next_id("toolu_"), forced_tool, step.data)]
            text = ""
        else:
            text = json.dumps(step.data)
    out_chars = len(text) + sum(
        len(a) if isinstance(a, str) else len(json.dumps(a)) for _, _, a in calls
    )
    usage = step.usage or StepUsage()
    in_tok = usage.input_tokens if usage.input_tokens is not None else input_tokens
    out_tok = usage.output_tokens if usage.output_tokens is not None else max(1, out_chars // 4)
    if provider == "openai":
        message: dict[str, Any] = {"role": "assistant", "content": text or None}
        if calls:
            message["tool_calls"] = [
                {"id": cid, "type": "function",
                 "function": {"name": name,
                              "arguments": args if isinstance(args, str) else json.dumps(args)}}
                for cid, name, args in calls
            ]
        finish = step.stop_reason or ("tool_calls" if calls else "stop")
        return 200, {
            "id": next_id("chatcmpl-"), "object": "chat.completion", "created": int(time.time()),
            "model": model,
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": {
                "prompt_tokens": in_tok + usage.cache_read_tokens,
                "completion_tokens": out_tok,
                "total_tokens": in_tok + usage.cache_read_tokens + out_tok,
                "prompt_tokens_details": {"cached_tokens": usage.cache_read_tokens},
            },
        }, {}
    blocks: list[dict[str, Any]] = []
    if text:
        blocks.append({"type": "text", "text": text})
    for cid, name, args in calls:
        block_id = cid if cid.startswith("toolu_") else f"toolu_{cid}"
        blocks.append({"type": "tool_use", "id": block_id, "name": name, "input": args})
    stop = step.stop_reason or ("tool_use" if calls else "end_turn")
    return 200, {
        "id": next_id("msg_"), "type": "message", "role": "assistant", "model": model,
        "content": blocks, "stop_reason": stop, "stop_sequence": None,
        "usage": {
            "input_tokens": in_tok, "output_tokens": out_tok,
            "cache_read_input_tokens": usage.cache_read_tokens,
            "cache_creation_input_tokens": usage.cache_write_tokens,
        },
    }, {}


# ---------------------------------------------------------------------------------------------
# Standalone entry point
# ---------------------------------------------------------------------------------------------


def load_responder(spec: str) -> Responder:
    """``package.module:function`` or ``/path/to/file.py:function``."""
    target, _, attr = spec.rpartition(":")
    if not target or not attr:
        raise ValueError("responder must look like MODULE:FUNC or FILE.py:FUNC")
    if target.endswith(".py"):
        module_spec = importlib.util.spec_from_file_location(Path(target).stem, target)
        if module_spec is None or module_spec.loader is None:
            raise ValueError(f"cannot load {target}")
        module = importlib.util.module_from_spec(module_spec)
        module_spec.loader.exec_module(module)
    else:
        module = importlib.import_module(target)
    responder = getattr(module, attr)
    if not callable(responder):
        raise ValueError(f"{spec} is not callable")
    return responder  # type: ignore[no-any-return]


def _write_port_file(path: Path, port: int) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(str(port), encoding="utf-8")
    os.replace(tmp, path)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m support.fake_llm",
                                     description="Run the fake LLM server until terminated.")
    parser.add_argument("--scenario", type=Path, help="scenario JSON file")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--port-file", type=Path, help="write the listening port here")
    parser.add_argument("--responder", help="fallback responder MODULE:FUNC or FILE.py:FUNC")
    parser.add_argument("--record-file", type=Path, help="append each request as JSON lines")
    parser.add_argument("--slow", type=float, default=None, help="delay every response (s)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    scenario = Scenario()
    if args.scenario:
        scenario = Scenario.model_validate_json(args.scenario.read_text(encoding="utf-8"))
    fallback = load_responder(args.responder) if args.responder else None
    server = FakeLLMServer(scenario, fallback=fallback, slow=args.slow, port=args.port,
                           record_file=args.record_file)
    server.start()
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    if args.port_file:
        _write_port_file(args.port_file, server.port)
    sys.stderr.write(f"fake LLM server on {server.base_url}\n")
    sys.stderr.flush()
    with contextlib.suppress(KeyboardInterrupt):
        while not stop.wait(0.2):
            pass
    server.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
