"""A workspace's stable project key and a session's folder name: imported by ``config`` and by
the prompt and session-start hooks, which must start fast and so cannot import ``config``
(pydantic-settings) themselves."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path


def project_key(workspace: Path) -> str:
    """A stable, readable directory name for a workspace: its name plus a short path hash."""
    resolved = str(workspace.expanduser().resolve())
    name = re.sub(r"[^A-Za-z0-9._-]+", "-", Path(resolved).name).strip("-") or "root"
    digest = hashlib.sha256(resolved.encode("utf-8", "surrogatepass")).hexdigest()[:10]
    return f"{name[:40]}-{digest}"


def session_dir_name(session_id: str) -> str:
    """The folder name of a session's data: never ``.`` or ``..`` (a hook's session id is
    input), a name of its own inside the sessions folder."""
    return re.sub(r"[^A-Za-z0-9._-]", "_", session_id)[:120].lstrip(".") or "session"
