"""What a dream is asked to do (``DreamRequest``) and what it reports (``DreamResult``: the
``reverie dream --json`` shape and the language server's job result)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr


class DreamRequest(BaseModel):
    """What to dream about. ``manual`` bypasses the scheduling gates."""

    workspace: Path
    manual: bool = False
    extra: str = ""
    logs: bool = False
    current_session_id: str | None = None
    is_subagent: bool = False


class DreamResult(BaseModel):
    """The outcome of one dream. ``as_json`` is the ``reverie dream --json`` contract."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    ran: bool = False
    skipped_reason: str | None = None
    sessions_reviewed: int = 0
    files_touched: list[str] = Field(default_factory=list)
    turns: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    duration_ms: int = 0
    run_id: str | None = None
    memory_dir: str = ""
    error: str | None = None
    cancelled: bool = False
    #: when the run began (monotonic clock): terminal events report the time taken so far
    _started: float = PrivateAttr(default_factory=time.monotonic)

    def elapsed_ms(self) -> int:
        return int((time.monotonic() - self._started) * 1000)
    summary: str = ""

    def as_json(self) -> dict[str, Any]:
        return {
            "ran": self.ran,
            "skipped_reason": self.skipped_reason,
            "sessions_reviewed": self.sessions_reviewed,
            "files_touched": self.files_touched,
            "turns": self.turns,
            "tokens_in": self.tokens_in,
            "tokens_out": self.tokens_out,
            "duration_ms": self.duration_ms,
            "run_id": self.run_id,
            "memory_dir": self.memory_dir,
        }
