"""Types shared by every model client, the tool loop and the jobs that drive them."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, Field

from reverie.types import Usage


class ToolCallRequest(BaseModel):
    """A tool call the model asked for. ``arguments`` is empty and ``raw_arguments`` set when
    the model sent arguments that are not a JSON object (the loop reports that back)."""

    id: str
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    raw_arguments: str | None = None


class ChatMessage(BaseModel):
    """One turn sent to a model. ``tool`` messages answer ``tool_call_id``."""

    role: Literal["user", "assistant", "tool"]
    content: str = ""
    tool_calls: list[ToolCallRequest] = Field(default_factory=list)
    tool_call_id: str | None = None
    is_error: bool = False


class ToolSpec(BaseModel):
    """A tool offered to the model: name, description and a JSON schema for its arguments."""

    name: str
    description: str
    parameters: dict[str, Any]


#: called with the number of tokens generated so far while a reply streams in
ProgressCallback = Callable[[int], None]

StopReason = Literal["end_turn", "tool_use", "max_tokens", "other"]


class ModelReply(BaseModel):
    """What a model answered, in provider-neutral form."""

    text: str = ""
    tool_calls: list[ToolCallRequest] = Field(default_factory=list)
    usage: Usage = Field(default_factory=Usage)
    stop_reason: StopReason = "end_turn"
    model: str = ""
    parsed: Any = None  # the validated output model when an output schema was requested
    #: dollars, when the provider reports what the call cost (the coding-agent CLIs do)
    cost_usd: float | None = None


@runtime_checkable
class ModelClient(Protocol):
    """An async model. Implementations: ``openai``, ``anthropic``, ``offline``."""

    provider: str
    model: str

    @property
    def is_offline(self) -> bool:
        """True for the built-in engine: jobs then use their deterministic offline writers."""
        ...

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
        """One model call. Raises ``LLMError`` subclasses with a human sentence.
        ``on_progress`` (tokens generated so far) is called while a reply streams in."""
        ...

    async def aclose(self) -> None:
        """Release the HTTP client."""
        ...
