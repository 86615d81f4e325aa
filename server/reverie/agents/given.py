"""What Reverie's hooks last gave an agent, kept so a person can see it.

The session-start hook hands a session's notes back after a compaction or on resume; the prompt
hook adds the memory entries and past-session hits relevant to each prompt. Each writes what it
sent (the text, when, for which session; an empty text: nothing was relevant) to one small file
per session under the project's data dir, ``<project>/given/<kind>/<session>.json``, at most
``KEEP`` per kind. The editor's "what the agent was given" view reads them back.

Imported on the prompt hook's path: only modules that path loads anyway (no ``logging``, no
``dataclasses``: 70 ms of a 200 ms hook). Never raises from ``record_given``: a hook must not
fail, or print, over its own bookkeeping.
"""

from __future__ import annotations

import json
import os
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal, NamedTuple

GivenKind = Literal["session-start", "prompt"]
KEEP = 50
_PLAIN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,199}")


class GivenRecord(NamedTuple):
    kind: GivenKind
    session_id: str | None
    at: datetime
    text: str


def given_dir(project_root: Path, kind: GivenKind) -> Path:
    return project_root / "given" / kind


def record_given(project_root: Path, kind: GivenKind, session_id: str | None,
                 text: str) -> None:
    """Keep what a hook sent (atomically: a reader never sees half a file)."""
    name = session_id if session_id and _PLAIN.fullmatch(session_id) else "unknown-session"
    folder = given_dir(project_root, kind)
    try:
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        payload = json.dumps({"session_id": session_id if name != "unknown-session" else None,
                              "at": datetime.now(UTC).isoformat(), "text": text})
        tmp = folder / f".{name}.{os.getpid()}.tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(payload)
        os.replace(tmp, folder / f"{name}.json")
        _prune(folder)
    except OSError:  # a full disk or a read-only data dir: the view shows the last one kept
        return


def _prune(folder: Path) -> None:
    files = [p for p in folder.glob("*.json")]
    if len(files) <= KEEP:
        return
    files.sort(key=lambda p: p.stat().st_mtime)
    for old in files[: len(files) - KEEP]:
        old.unlink(missing_ok=True)


def last_given(project_root: Path, kind: GivenKind) -> list[GivenRecord]:
    """What the hook of ``kind`` sent, newest first (unreadable records are skipped)."""
    found: list[GivenRecord] = []
    for path in given_dir(project_root, kind).glob("*.json"):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            at = datetime.fromisoformat(data["at"])
            text = data["text"]
            session = data.get("session_id")
        except (OSError, ValueError, KeyError, TypeError):
            continue
        if isinstance(text, str) and (session is None or isinstance(session, str)):
            found.append(GivenRecord(kind, session, at, text))
    return sorted(found, key=lambda r: r.at, reverse=True)
