"""A span per sleep phase with its counts.

Uses the OpenTelemetry API when it is importable (the application configures any SDK/exporter);
otherwise, or when told not to, each phase ends with one structured log line
``sleep.phase {"phase": ..., "duration_ms": ..., counts...}`` on this module's logger.
OpenTelemetry is optional: Reverie never depends on it.
"""

from __future__ import annotations

import importlib
import json
import logging
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

logger = logging.getLogger(__name__)

AttrValue = str | int | float | bool

TRACER_NAME = "reverie.sleep"


def _otel_tracer(provider: Any | None) -> Any | None:
    try:
        trace = importlib.import_module("opentelemetry.trace")
    except ImportError:
        return None
    return trace.get_tracer(TRACER_NAME, tracer_provider=provider)


class PhaseSpan:
    """Counts for one phase; mirrored onto the OpenTelemetry span when there is one."""

    def __init__(self, name: str, otel_span: Any | None) -> None:
        self.name = name
        self.attributes: dict[str, AttrValue] = {}
        self._otel = otel_span

    def set(self, key: str, value: AttrValue) -> None:
        self.attributes[key] = value
        if self._otel is not None:
            self._otel.set_attribute(f"reverie.sleep.{key}", value)


class SleepTracer:
    """Opens phase spans. ``use_otel=False`` forces log lines (tests, or no exporter wanted);
    ``tracer_provider`` overrides the globally configured OpenTelemetry provider."""

    def __init__(self, *, use_otel: bool = True, tracer_provider: Any | None = None) -> None:
        self._tracer = _otel_tracer(tracer_provider) if use_otel else None

    @property
    def uses_otel(self) -> bool:
        return self._tracer is not None

    @contextmanager
    def phase(self, name: str, **attributes: AttrValue) -> Iterator[PhaseSpan]:
        started = time.monotonic()
        if self._tracer is not None:
            with self._tracer.start_as_current_span(f"reverie.sleep.{name}") as otel_span:
                span = PhaseSpan(name, otel_span)
                for key, value in attributes.items():
                    span.set(key, value)
                yield span
            return
        span = PhaseSpan(name, None)
        span.attributes.update(attributes)
        error: str | None = None
        try:
            yield span
        except BaseException as exc:
            error = type(exc).__name__
            raise
        finally:
            record: dict[str, Any] = {
                "phase": name,
                "duration_ms": round((time.monotonic() - started) * 1000, 1),
                **span.attributes,
            }
            if error is not None:
                record["error"] = error
            logger.info("sleep.phase %s", json.dumps(record, sort_keys=True, default=str))
