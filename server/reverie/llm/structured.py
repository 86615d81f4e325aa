"""Structured output: a pydantic model becomes a JSON schema; replies are validated, repaired once.

Providers get the schema through their native mechanism (OpenAI ``response_format`` json_schema,
Anthropic a forced tool, see ``docs/llm.md``). Whatever comes back is validated here; on failure
the model sees its own reply and the validation error once, and a second failure raises
``StructuredOutputError`` (no partial result ever reaches a job).

The JSON mode (``complete_json``) is the same for a model with no schema mechanism at all (many
local models, the coding-agent CLIs): the schema goes into the prompt and the JSON object is
found in the reply text (``extract_json_object``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from reverie.llm.errors import StructuredOutputError
from reverie.llm.types import ChatMessage, ModelClient, ModelReply, ProgressCallback
from reverie.types import Usage

M = TypeVar("M", bound=BaseModel)
SingleCall = Callable[[Sequence[ChatMessage]], Awaitable[ModelReply]]
#: a fenced block of a reply (```json ... ```)
_FENCE = re.compile(r"```(?:json)?\s*\n(.*?)\n```", re.DOTALL)
#: terminal escape sequences (the coding-agent CLIs colour banners around their JSON)
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07")


def schema_for(model: type[BaseModel]) -> dict[str, Any]:
    """The JSON schema the provider is given for ``model``."""
    return model.model_json_schema()


def schema_name(model: type[BaseModel]) -> str:
    """A provider-safe name (``^[a-zA-Z0-9_-]{1,64}$``) for the schema / output tool."""
    return re.sub(r"[^A-Za-z0-9_-]", "_", model.__name__)[:64] or "result"


def parse_reply(raw: Any, model: type[BaseModel]) -> BaseModel:
    """Validate ``raw`` (a dict from a tool input, or reply text holding JSON) as ``model``.

    Raises ``ValueError`` (``ValidationError`` is one) with a message meant for the model.
    """
    if isinstance(raw, str):
        text = raw.strip()
        fenced = _FENCE.fullmatch(text)
        if fenced:
            text = fenced.group(1)
        if not text:
            raise ValueError("the reply was empty; a JSON object was expected")
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ValueError(f"the reply is not valid JSON ({exc.msg} at char {exc.pos})") from exc
    else:
        data = raw
    return model.model_validate(data)


def _describe(error: ValueError) -> str:
    if isinstance(error, ValidationError):
        lines = []
        for item in error.errors()[:10]:
            where = ".".join(str(p) for p in item["loc"]) or "(root)"
            lines.append(f"- {where}: {item['msg']}")
        return "\n".join(lines)
    return str(error)


async def complete_structured(
    call: SingleCall,
    messages: Sequence[ChatMessage],
    model: type[BaseModel],
    extract: Callable[[ModelReply], Any],
    *,
    provider: str,
) -> ModelReply:
    """Call, validate, repair once. ``extract`` pulls the raw structured value out of a reply."""
    reply = await call(messages)
    try:
        reply.parsed = parse_reply(extract(reply), model)
        return reply
    except ValueError as error:
        first_error = error
    repair = [
        *messages,
        ChatMessage(role="assistant",
                    content=reply.text or json.dumps(extract(reply), default=str)),
        ChatMessage(
            role="user",
            content=(
                "Your previous reply did not match the required JSON schema:\n"
                f"{_describe(first_error)}\n"
                "Reply again with only a JSON object that matches the schema."
            ),
        ),
    ]
    second = await call(repair)
    total = reply.usage + second.usage
    try:
        second.parsed = parse_reply(extract(second), model)
    except ValueError as error:
        raise StructuredOutputError(
            f"The {provider} model's reply did not match the {model.__name__} schema after one "
            f"repair attempt ({_describe(error).splitlines()[0] if _describe(error) else error}); "
            "try a more capable model (REVERIE_MODEL or the job's model setting).",
            provider=provider,
        ) from None
    return second.model_copy(update={"usage": total})


class BudgetCutOff(StructuredOutputError):
    """The reply hit its output budget before the JSON was complete: nothing is applied."""


def strip_terminal(text: str) -> str:
    """Text without ANSI escape sequences (CLIs colour banners around their JSON)."""
    return _ANSI.sub("", text)


def extract_json_object(text: str) -> Any:
    """The JSON object in a reply: the whole text, a fenced block, or the first object that
    parses inside surrounding prose or banners. Raises ``ValueError`` when there is none."""
    clean = strip_terminal(text).strip()
    if not clean:
        raise ValueError("the reply was empty; a JSON object was expected")
    candidates = [clean, *(m.group(1) for m in _FENCE.finditer(clean))]
    for candidate in candidates:
        try:
            value = json.loads(candidate)
        except json.JSONDecodeError:
            continue
        if isinstance(value, dict):
            return value
    decoder = json.JSONDecoder()
    for start in (i for i, ch in enumerate(clean) if ch == "{"):
        try:
            value, _end = decoder.raw_decode(clean, start)
        except json.JSONDecodeError:
            continue
        if isinstance(value, dict):
            return value
    raise ValueError("the reply holds no JSON object (it answered in prose?)")


def _problem(error: ValueError) -> str:
    if isinstance(error, ValidationError):
        return "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or '(root)'}: {e['msg']}"
            for e in error.errors()[:5]
        )
    return str(error)


def schema_prompt(model: type[BaseModel]) -> str:
    """The instruction that asks for ``model`` as the reply (no tools, no prose)."""
    schema = json.dumps(model.model_json_schema(), separators=(",", ":"))
    return (
        "Reply with exactly one JSON object and nothing else (no prose, no code fence, no "
        f"tool calls), matching this JSON schema:\n{schema}"
    )


@dataclass
class JsonReply:
    """A validated no-tools reply and what it cost."""

    value: BaseModel
    usage: Usage
    calls: int
    reply: ModelReply
    cost_usd: float | None = None


async def complete_json(
    client: ModelClient,
    messages: Sequence[ChatMessage],
    model: type[M],
    *,
    system: str | None,
    max_tokens: int,
    on_progress: ProgressCallback | None = None,
) -> JsonReply:
    """Ask for ``model`` as plain JSON text (no provider schema mechanism: a model without
    tools may not have those either), validate, repair once. A reply cut off by its budget is
    not repaired: ``BudgetCutOff``. A second invalid reply: ``StructuredOutputError``."""
    conversation = list(messages)
    usage = Usage()
    cost: float | None = None
    for attempt in (1, 2):
        reply = await client.complete(conversation, system=system, max_tokens=max_tokens,
                                      on_progress=on_progress)
        usage = usage + reply.usage
        if reply.cost_usd is not None:
            cost = (cost or 0.0) + reply.cost_usd
        try:
            value = model.model_validate(extract_json_object(reply.text))
            return JsonReply(value=value, usage=usage, calls=attempt, reply=reply,
                             cost_usd=cost)
        except ValueError as error:
            problem = _problem(error)
        if reply.stop_reason == "max_tokens":
            raise BudgetCutOff(
                f"the reply was cut off by the {max_tokens}-token output budget before its JSON "
                "was complete; nothing was applied (raise the job's max output tokens)",
                provider=client.provider,
            )
        if attempt == 2:
            break
        conversation += [
            ChatMessage(role="assistant", content=reply.text or "(empty)"),
            ChatMessage(role="user", content=(
                f"That reply was not the required JSON object ({problem}). "
                + schema_prompt(model))),
        ]
    raise StructuredOutputError(
        f"the model's reply was not the required {model.__name__} JSON after one repair "
        f"attempt ({problem}); nothing was applied",
        provider=client.provider,
    )
