"""The built-in offline engine: no network, no key, fully deterministic.

Jobs check ``client.is_offline`` and use their own deterministic writers (session notes, dream,
sleep); this client is their home and the fallback for anything that still calls ``complete``.
``complete`` answers *extractively*: it scores the sentences of the user turns by how many of
the conversation's frequent content words they hold and returns the best few, in their original
order. It never calls tools. With an output schema it fills the model from its defaults and the
extract (first string field); a schema it cannot fill raises ``StructuredOutputError``.
Usage is estimated at four characters per token, as everywhere else in Reverie.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ValidationError

from reverie.llm.errors import StructuredOutputError
from reverie.llm.types import ChatMessage, ModelReply, ProgressCallback, ToolSpec
from reverie.types import Usage

_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9_'-]{2,}")
_STOPWORDS = frozenset(
    "the and for that this with you your are was were have has had not but can will would "
    "should could from into about there their they them then than what when where which who "
    "why how all any each our out use used using just also its it's let lets please some such "
    "very more most make made like get got one two new now only over here been being does "
    "did".split()
)


def _estimate(text: str) -> int:
    return (len(text) + 3) // 4


def extract_summary(text: str, max_sentences: int = 3, max_chars: int = 600) -> str:
    """The ``max_sentences`` most representative sentences of ``text``, in original order."""
    sentences = [s.strip() for s in _SENTENCE.split(text) if s and s.strip()]
    if not sentences:
        return ""
    words = [w.lower() for w in _WORD.findall(text)]
    freq = Counter(w for w in words if w not in _STOPWORDS)
    scored = []
    for index, sentence in enumerate(sentences):
        tokens = [w.lower() for w in _WORD.findall(sentence) if w.lower() not in _STOPWORDS]
        score = sum(freq[t] for t in set(tokens)) / (1 + len(tokens) ** 0.5)
        scored.append((-score, index, sentence))
    best = sorted(scored)[:max_sentences]
    picked = [s for _, _, s in sorted(best, key=lambda item: item[1])]
    out = " ".join(picked)
    return out if len(out) <= max_chars else out[: max_chars - 1].rstrip() + "…"


class OfflineClient:
    """``ModelClient`` without a model. ``is_offline`` is True."""

    provider = "offline"

    def __init__(self, model: str = "offline") -> None:
        self.model = model

    def __repr__(self) -> str:
        return "OfflineClient()"

    @property
    def is_offline(self) -> bool:
        return True

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
        source = "\n".join(m.content for m in messages if m.role in ("user", "tool") and m.content)
        summary = extract_summary(source)
        if max_tokens is not None and _estimate(summary) > max_tokens:
            summary = summary[: max_tokens * 4]
        prompt_chars = len(system or "") + sum(len(m.content) for m in messages)
        usage = Usage(input_tokens=(prompt_chars + 3) // 4, output_tokens=_estimate(summary))
        reply = ModelReply(text=summary, usage=usage, stop_reason="end_turn", model=self.model)
        if output_schema is not None:
            reply.parsed = _fill(output_schema, summary)
        return reply

    async def aclose(self) -> None:
        return None


def _fill(model: type[BaseModel], summary: str) -> BaseModel:
    """The schema's defaults, with the first required string field set to the extract."""
    values: dict[str, Any] = {}
    for name, field in model.model_fields.items():
        if field.is_required():
            annotation = field.annotation
            if annotation is str:
                values[name] = summary
            elif annotation is not None and getattr(annotation, "__origin__", None) is list:
                values[name] = []
    try:
        return model.model_validate(values)
    except ValidationError:
        raise StructuredOutputError(
            f"The offline engine cannot produce a {model.__name__}; this job needs its offline "
            "writer or a provider (set REVERIE_PROVIDER).",
            provider="offline",
        ) from None
