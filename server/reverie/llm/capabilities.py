"""What an endpoint turned out to support, remembered so it is detected only once.

Two facts are learned at run time and kept in ``<data dir>/llm-capabilities.json``:

- ``streaming`` per base URL: a server that refused a streamed request (or answered it with a
  plain JSON body) is asked without streaming from then on;
- ``tools`` per base URL and model: a model that cannot call tools (a 400 naming tools, or tool
  calls written out as text) gets the structured no-tools form from then on.

The file is tiny and written atomically; a missing or unreadable file just means "not known
yet". Each CLI run and each job builds its own client, which is why this is not client state.
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
from pathlib import Path
from typing import Any, Literal

from reverie.config import CLI_PROVIDERS, Settings
from reverie.fsutil import atomic_write_text
from reverie.llm.types import ModelClient

logger = logging.getLogger(__name__)

FILE_NAME = "llm-capabilities.json"


class CapabilityStore:
    """Learned facts keyed by endpoint. ``path=None`` keeps them in memory only (tests)."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._data: dict[str, dict[str, Any]] = {"streaming": {}, "tools": {}}
        if path is not None:
            self._load(path)

    def _load(self, path: Path) -> None:
        try:
            raw = json.loads(path.read_text("utf-8"))
        except FileNotFoundError:
            return
        except (OSError, ValueError) as exc:
            logger.info("ignoring unreadable %s: %s", path, exc)
            return
        if isinstance(raw, dict):
            for key in ("streaming", "tools"):
                value = raw.get(key)
                if isinstance(value, dict):
                    self._data[key] = {str(k): bool(v) for k, v in value.items()}

    @staticmethod
    def _tools_key(base_url: str, model: str) -> str:
        return f"{base_url} {model}"

    def streaming(self, base_url: str) -> bool | None:
        """False when the endpoint refused streaming before; None when not known."""
        value = self._data["streaming"].get(base_url)
        return value if isinstance(value, bool) else None

    def tools(self, base_url: str, model: str) -> bool | None:
        value = self._data["tools"].get(self._tools_key(base_url, model))
        return value if isinstance(value, bool) else None

    def set_streaming(self, base_url: str, supported: bool) -> None:
        self._set("streaming", base_url, supported)

    def set_tools(self, base_url: str, model: str, supported: bool) -> None:
        self._set("tools", self._tools_key(base_url, model), supported)

    def _set(self, kind: str, key: str, value: bool) -> None:
        with self._lock:
            if self._data[kind].get(key) == value:
                return
            self._data[kind][key] = value
            snapshot = json.dumps(self._data, indent=1, sort_keys=True) + "\n"
        logger.info("learned: %s %s = %s", kind, key, value)
        if self.path is None:
            return
        try:
            self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            atomic_write_text(self.path, snapshot)
        except OSError as exc:  # a read-only data dir only costs a re-detection next time
            logger.info("could not save %s: %s", self.path, exc)


def store_for(data_dir: Path) -> CapabilityStore:
    """The store in ``data_dir`` (read now; writes go there as facts are learned)."""
    return CapabilityStore(data_dir / FILE_NAME)


#: how a job talks to its model: tool calls, or the structured no-tools form
Mode = Literal["tools", "no_tools"]


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
