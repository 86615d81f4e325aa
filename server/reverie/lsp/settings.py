"""Editor settings -> ``reverie.config.Settings``, with invalid values falling back.

Layers, lowest first: defaults, ``REVERIE_*`` environment, ``initializationOptions``, the
``workspace/configuration`` pull. A value that fails validation is dropped (the layer below
applies) and reported once, naming the setting, so a typo never stops the server.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError
from pydantic.alias_generators import to_camel, to_snake

from reverie.config import Settings
from reverie.lsp.protocol import SETTINGS_SECTION

#: secrets are never echoed back in messages
_SECRET_FIELDS = frozenset({"api_key"})


@dataclass(frozen=True)
class SettingProblem:
    """One invalid editor setting and what the server used instead."""

    name: str  # reverie.camelCase
    value: Any
    reason: str
    fallback: Any

    def describe(self) -> str:
        return (
            f"invalid setting {self.name} ({_show(self.value)}): {self.reason}; "
            f"using {_show(self.fallback)}"
        )


@dataclass
class ResolvedSettings:
    settings: Settings
    problems: list[SettingProblem] = field(default_factory=list)

    def message(self) -> str | None:
        """One line for ``window/showMessage`` naming every invalid setting, or None."""
        if not self.problems:
            return None
        return "Reverie: " + "; ".join(p.describe() for p in self.problems) + "."


def section_of(options: Any) -> dict[str, Any]:
    """The ``reverie`` settings object inside whatever a client sent.

    Accepts the object itself, ``{"reverie": {...}}`` or ``{"settings": {...}}`` (the shape the
    Microsoft extension template uses), and dotted keys (``{"reverie.provider": ...}``).
    """
    if not isinstance(options, Mapping):
        return {}
    for wrapper in (SETTINGS_SECTION, "settings"):
        inner = options.get(wrapper)
        if isinstance(inner, Mapping):
            return section_of(inner) if SETTINGS_SECTION in inner else dict(inner)
    out: dict[str, Any] = {}
    prefix = SETTINGS_SECTION + "."
    for key, value in options.items():
        if not isinstance(key, str):
            continue
        out[key[len(prefix) :] if key.startswith(prefix) else key] = value
    return out


def resolve(*layers: Mapping[str, Any] | None) -> ResolvedSettings:
    """Merge editor layers (later wins) over the environment and validate, dropping bad keys.

    A bad editor value is dropped so the environment (or the default) applies; a bad environment
    value is replaced by the field's default. Either way the problem is reported by name.
    """
    merged: dict[str, Any] = {}
    for layer in layers:
        if layer:
            # "" is how the Settings UI leaves an optional string unset: the layer below applies
            merged.update({k: v for k, v in layer.items() if v is not None and v != ""})
    fields = Settings.model_fields
    # unknown keys are ignored, as documented
    editor = {to_snake(k): v for k, v in merged.items() if to_snake(k) in fields}
    if isinstance(editor.get("prices"), Mapping):  # {model: {cacheRead: ...}}: model names stay
        editor["prices"] = {
            model: {to_snake(k): v for k, v in price.items()}
            if isinstance(price, Mapping)
            else price
            for model, price in editor["prices"].items()
        }
    overrides: dict[str, Any] = {}
    found: list[tuple[str, str, Any, str]] = []  # (name, field, value, reason)
    settings: Settings | None = None
    for _ in range(2 * len(fields) + 1):
        try:
            settings = Settings(**{**editor, **overrides})
            break
        except ValidationError as exc:
            progressed = False
            for error in exc.errors():
                loc = error.get("loc") or ()
                snake = str(loc[0]) if loc else ""
                if snake not in fields or snake in overrides:
                    continue
                reason = str(error.get("msg", "invalid value")).removeprefix("Value error, ")
                if snake in editor:  # drop it: the environment (or the default) applies
                    name = f"{SETTINGS_SECTION}.{to_camel(snake)}"
                    value = editor.pop(snake)
                else:  # the environment itself is bad: use the default
                    name = f"REVERIE_{snake.upper()}"
                    value = error.get("input")
                    overrides[snake] = fields[snake].get_default(call_default_factory=True)
                found.append((name, snake, value, reason))
                progressed = True
            if not progressed:
                raise
    if settings is None:  # pragma: no cover - every pass fixes at least one field
        settings = Settings.model_construct()
    problems = [
        SettingProblem(
            name, _masked(snake, value), reason, _masked(snake, getattr(settings, snake))
        )
        for name, snake, value, reason in found
    ]
    return ResolvedSettings(settings, problems)


def _masked(snake: str, value: Any) -> Any:
    if snake in _SECRET_FIELDS:
        return "***" if value else None
    return _plain(value)


def _plain(value: Any) -> Any:
    try:
        json.dumps(value)
    except TypeError:
        return str(value)
    return value


def _show(value: Any) -> str:
    try:
        return json.dumps(value)
    except TypeError:
        return repr(value)
