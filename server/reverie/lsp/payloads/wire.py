"""The base of every payload: camelCase JSON keys on the wire, snake_case in Python."""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

from reverie.events import EventType

JobKindName = Literal["session_memory", "dream", "sleep"]
JobEventType = EventType  # every runtime event type of the core reaches the client as is
OutcomeType = Literal["complete", "skipped", "cancelled", "error"]



_SNAKE_KEY = re.compile(r"^[a-z][a-z0-9]*(_[a-z0-9]+)+$")


def camel_keys(value: Any) -> Any:
    """Free-form event payloads camelCase like the rest of the wire: only snake_case
    identifiers are renamed, so file and model names used as keys pass unchanged."""
    if isinstance(value, dict):
        return {
            (to_camel(k) if isinstance(k, str) and _SNAKE_KEY.match(k) else k): camel_keys(v)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [camel_keys(v) for v in value]
    return value


class Wire(BaseModel):
    """Base of every payload: camelCase on the wire, snake_case in Python."""

    # schemas are built on first use: keeps ``reverie serve`` quick to answer ``initialize``
    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        defer_build=True,
        # the server always sends every field: the generated TypeScript marks them required
        json_schema_serialization_defaults_required=True,
    )

    def wire(self) -> dict[str, Any]:
        """The JSON object sent to the client."""
        return self.model_dump(mode="json", by_alias=True)


class Args(Wire):
    """Base of command arguments: unknown keys are an error that names them."""

    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, extra="forbid", defer_build=True
    )

    #: workspace folder (URI or path) the command applies to; default: the first folder
    workspace: str | None = None
