"""The structured no-tools form: the job's whole result as one JSON object, applied by Reverie.

Many local models (or servers started without tool templates) cannot call tools, and the
coding-agent CLIs run with their own tools switched off. Such a model is asked for the result
itself: the whole new notes (``NotesRewrite``) or the memory changes (``MemoryChanges``). The
reply is validated with pydantic (one repair round, none when the reply was cut off by the
output budget) and applied through the job's own ``PathGate`` with the ``write_file`` tool, so
the staging copy, redaction, validity guard and transaction are exactly those of tool writes.
Applying is all-or-nothing at the gate: every path is checked before the first write, and one
path outside the allowed file or directory rejects the whole reply.

The switch happens per job when the endpoint refuses tools (``LLMToolsUnsupportedError``), when
a reply writes a tool call out as text (``looks_like_text_tool_call``), or when configured
(``REVERIE_TOOL_CALLING=off``; the CLI providers always).
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from reverie.config import CLI_PROVIDERS, Settings
from reverie.llm.capabilities import CapabilityStore
from reverie.llm.errors import StructuredOutputError
from reverie.llm.types import ChatMessage, ModelClient, ModelReply, ProgressCallback
from reverie.tools.fs import execute_tool
from reverie.tools.gate import Denial, PathDenied, PathGate
from reverie.transcripts.model import Usage

M = TypeVar("M", bound=BaseModel)
Mode = Literal["tools", "no_tools"]

_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07")
_FENCE = re.compile(r"```(?:json)?\s*\n(.*?)\n```", re.DOTALL)
#: a tool call written out as text: {"name": "edit_file", "arguments": ...} and the like
_TEXT_CALL = re.compile(
    r"(<tool_call>|\"(?:name|tool|function)\"\s*:\s*\"(?P<name>[A-Za-z_]+)\"[^{}]{0,80}"
    r"\"(?:arguments|parameters|input|args)\"\s*:)", re.DOTALL)


class NotesRewrite(BaseModel):
    """The notes job's no-tools result: the whole new notes file."""

    model_config = ConfigDict(extra="ignore")

    notes: str = Field(min_length=1, description="the complete new notes file, markdown")


class FileChange(BaseModel):
    """One memory file: its new full content, or ``delete``."""

    model_config = ConfigDict(extra="ignore")

    path: str = Field(min_length=1, description="file path inside the memory directory")
    content: str | None = Field(default=None, description="the complete new file content")
    delete: bool = False

    @model_validator(mode="after")
    def _content_or_delete(self) -> FileChange:
        if self.content is None and not self.delete:
            raise ValueError("a change needs content (or delete: true)")
        return self


class MemoryChanges(BaseModel):
    """The dream's no-tools result: files to write or delete, and a one-line summary."""

    model_config = ConfigDict(extra="ignore")

    summary: str = ""
    changes: list[FileChange] = Field(default_factory=list, max_length=40)


class BudgetCutOff(StructuredOutputError):
    """The reply hit its output budget before the JSON was complete: nothing is applied."""


def choose_mode(client: ModelClient, settings: Settings) -> Mode:
    """Tools unless configured off, the client is a coding-agent CLI, or the endpoint has been
    seen refusing tools for this model."""
    if settings.tool_calling == "off" or client.provider in CLI_PROVIDERS:
        return "no_tools"
    if settings.tool_calling == "on":
        return "tools"
    return "no_tools" if getattr(client, "supports_tools", None) is False else "tools"


async def remember_no_tools(client: ModelClient) -> None:
    """Record that ``client``'s model cannot call tools (HTTP clients keep a capability store;
    wrappers expose the client they wrap as ``inner``)."""
    inner = getattr(client, "inner", client)
    store = getattr(inner, "capabilities", None)
    base_url = getattr(inner, "base_url", None)
    if isinstance(store, CapabilityStore) and isinstance(base_url, str):
        await asyncio.to_thread(store.set_tools, base_url, inner.model, False)


def looks_like_text_tool_call(text: str, tool_names: Sequence[str]) -> bool:
    """True when a reply without tool calls writes one out as text (models without a tool
    template often do), naming one of the offered tools or using a ``<tool_call>`` tag."""
    for match in _TEXT_CALL.finditer(text):
        name = match.group("name")
        if name is None or name in tool_names:
            return True
    return False


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


@dataclass
class Applied:
    """What applying a no-tools reply did (display paths), or why nothing was applied."""

    written: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    denials: list[Denial] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.denials and not self.errors


def apply_changes(gate: PathGate, changes: Sequence[FileChange]) -> Applied:
    """Write the changes through ``gate`` (blocking: call via a thread). Every path is checked
    first; a denied path or a duplicate applies nothing. A write that fails half way leaves the
    earlier ones in the staging copy: callers abort their transaction when ``ok`` is False."""
    result = Applied()
    seen: set[str] = set()
    for change in changes:
        try:
            physical = str(gate.check_write(change.path))
        except PathDenied as denied:
            result.denials.append(Denial(tool="write_file", path=change.path,
                                         reason=denied.reason))
            continue
        if physical in seen:
            result.errors.append(f"{change.path} appears twice")
        seen.add(physical)
    if not result.ok:
        return result
    for change in changes:
        if change.delete:
            path = gate.check_write(change.path)
            try:
                path.unlink(missing_ok=True)
            except OSError as exc:
                result.errors.append(f"cannot delete {change.path}: {exc.strerror}")
                return result
            result.deleted.append(gate.display(path))
            continue
        outcome = execute_tool(gate, "write_file",
                               {"file_path": change.path, "content": change.content or ""})
        if outcome.denial is not None:
            result.denials.append(outcome.denial)
            return result
        if outcome.is_error:
            result.errors.append(outcome.content)
            return result
        result.written.extend(outcome.written)
    return result
