""""Test Model Connection": one small request that shows whether the configured model answers,
how fast, whether streaming and tool calling work, and the model name the server reports.

The request offers one harmless tool (``ping``) and asks the model to call it, streamed when the
client streams: a tool call back means tools work; a refusal naming tools means they do not
(the probe then asks once more without tools, to still measure the connection); a plain text
answer means the model chose not to (reported as unknown). Nothing is written anywhere except
what the client learns about the endpoint (streaming refused, tools refused), which the jobs
would learn on their first run anyway.
"""

from __future__ import annotations

import asyncio
import time

from pydantic import BaseModel

from reverie.config import CLI_PROVIDERS, Settings
from reverie.llm.errors import LLMError, LLMToolsUnsupportedError
from reverie.llm.types import ChatMessage, ModelClient, ModelReply, ToolSpec

PING = ToolSpec(name="ping", description="Answer the connection test.",
                parameters={"type": "object", "properties": {"text": {"type": "string"}},
                            "required": ["text"]})
PROMPT = 'This is a connection test. Call the ping tool once with {"text": "ok"}.'
PLAIN_PROMPT = "This is a connection test. Reply with the single word OK."


class ProbeResult(BaseModel):
    """What the probe found. ``tools`` / ``streaming``: True, False, or None when unknown."""

    ok: bool
    provider: str
    model: str
    base_url: str | None = None
    model_reported: str = ""
    latency_ms: int = 0
    streaming: bool | None = None
    tools: bool | None = None
    tokens_in: int = 0
    tokens_out: int = 0
    message: str = ""
    error: str | None = None


def _describe(result: ProbeResult) -> str:
    def word(value: bool | None) -> str:
        return {True: "yes", False: "no", None: "unknown"}[value]

    return (f"{result.provider} {result.model_reported or result.model or '(default model)'} "
            f"answered in {result.latency_ms} ms; streaming: {word(result.streaming)}; "
            f"tool calls: {word(result.tools)}"
            + ("" if result.tools is not False else
               " (jobs use the structured no-tools form)"))


async def probe_model(settings: Settings, *, timeout: float = 90.0) -> ProbeResult:
    """Probe the model the session-memory job would use."""
    from reverie.llm.factory import make_client

    result = ProbeResult(ok=False, provider=settings.provider,
                         model=settings.model_for("session_memory") or "",
                         base_url=settings.base_url)
    if settings.provider == "offline":
        result.ok = True
        result.message = "The offline engine needs no model: nothing to test."
        return result
    try:
        client = make_client(settings, "session_memory")
    except LLMError as exc:
        result.error = result.message = str(exc)
        return result
    result.model = client.model
    try:
        async with asyncio.timeout(timeout):
            await _probe(client, result)
    except TimeoutError:
        result.error = result.message = f"No answer within {timeout:.0f} s."
    except LLMError as exc:
        result.error = result.message = str(exc)
    finally:
        await client.aclose()
    return result


async def _probe(client: ModelClient, result: ProbeResult) -> None:
    cli = client.provider in CLI_PROVIDERS
    started = time.monotonic()
    reply: ModelReply
    if cli:  # Reverie runs the CLIs without tools of their own, and not streamed
        reply = await client.complete([ChatMessage(role="user", content=PLAIN_PROMPT)],
                                      max_tokens=16)
        result.tools = result.streaming = False
    else:
        try:
            reply = await client.complete([ChatMessage(role="user", content=PROMPT)],
                                          tools=[PING], max_tokens=64)
            result.tools = True if reply.tool_calls else None
        except LLMToolsUnsupportedError:
            result.tools = False
            started = time.monotonic()
            reply = await client.complete([ChatMessage(role="user", content=PLAIN_PROMPT)],
                                          max_tokens=16)
        streams = getattr(client, "streams", None)
        result.streaming = streams if isinstance(streams, bool) else None
    result.latency_ms = int((time.monotonic() - started) * 1000)
    result.model_reported = reply.model
    result.tokens_in = reply.usage.input_tokens + reply.usage.cache_read_tokens
    result.tokens_out = reply.usage.output_tokens
    result.ok = True
    result.message = _describe(result)
