"""Structured output: a pydantic model becomes a JSON schema; replies are validated, repaired once.

Providers get the schema through their native mechanism (OpenAI ``response_format`` json_schema,
Anthropic a forced tool, see ``docs/llm.md``). Whatever comes back is validated here; on failure
the model sees its own reply and the validation error once, and a second failure raises
``StructuredOutputError`` (no partial result ever reaches a job).
"""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from pydantic import BaseModel, ValidationError

from reverie.llm.errors import StructuredOutputError
from reverie.llm.types import ChatMessage, ModelReply

SingleCall = Callable[[Sequence[ChatMessage]], Awaitable[ModelReply]]
_FENCE = re.compile(r"^```(?:json)?\s*\n(.*)\n```\s*$", re.DOTALL)


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
        fenced = _FENCE.match(text)
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
