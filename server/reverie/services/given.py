"""What each connected agent is given: the managed blocks it loads, the memory they bring in,
and what the hooks last sent (session start after a compaction, prompt-time recall), with sizes.

Read from the connections ledger (which files hold Reverie's blocks, how the memory reaches the
agent) and the hooks' records (``reverie.agents.given``). Sizes are estimated tokens (four
characters a token, as everywhere in Reverie). Nothing here writes.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from reverie.agents.given import GivenKind
from reverie.config import ProjectPaths, Settings

PartKind = Literal["block", "memory", "session-start", "prompt", "mcp"]
#: Claude Code's own auto-memory loads this many lines of MEMORY.md at session start
AUTO_MEMORY_LINES = 200

AGENT_LABELS = {
    "claude-code": "Claude Code", "codex": "Codex", "gemini": "Gemini CLI", "aider": "Aider",
    "copilot-chat": "GitHub Copilot Chat", "cline": "Cline", "roo-code": "Roo Code",
    "continue": "Continue",
}
#: the transcript agent names a connectable agent's sessions carry
_SESSION_AGENTS = {"gemini": "gemini-cli"}


class GivenPart(BaseModel):
    kind: PartKind
    title: str
    #: when the agent gets it, in words ("every session start", "sent at ...")
    when: str
    text: str
    tokens: int
    path: str | None = None
    sent_at: datetime | None = None
    session_id: str | None = None


class AgentGiven(BaseModel):
    agent: str
    label: str
    scope: str
    mode: str
    parts: list[GivenPart] = Field(default_factory=list)
    #: what every session starts with (blocks and the memory they load)
    start_tokens: int = 0


class GivenReport(BaseModel):
    """``reverie connections --given --json`` and ``reverie.server.agentContext``."""

    workspace: str
    memory_dir: str
    agents: list[AgentGiven] = Field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        return self.model_dump(mode="json")


def _tokens(text: str) -> int:
    from reverie.transcripts.tokens import estimate_tokens

    return estimate_tokens(text)


def _read(path: Path) -> str | None:
    try:
        return path.read_bytes().decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def _block_text(path: Path, block_id: str, style: str) -> str | None:
    from reverie.agents.blocks import BlockError, find_block

    text = _read(path)
    if text is None:
        return None
    try:
        span = find_block(text, block_id, "hash" if style == "hash" else "html")
    except BlockError:
        return None
    return None if span is None else text[span[0]:span[1]]


def _part(kind: PartKind, title: str, when: str, text: str, **extra: Any) -> GivenPart:
    return GivenPart(kind=kind, title=title, when=when, text=text, tokens=_tokens(text), **extra)


def _memory_parts(mode: str, memory_dir: Path) -> list[GivenPart]:
    index = memory_dir / "MEMORY.md"
    text = _read(index)
    if text is None:
        return []
    if mode == "import":
        return [_part("memory", "MEMORY.md (brought in by the block's @import)",
                      "every session start", text, path=str(index))]
    if mode == "none":
        head = "\n".join(text.splitlines()[:AUTO_MEMORY_LINES])
        return [_part("memory", f"MEMORY.md (Claude Code's auto-memory: the first "
                      f"{AUTO_MEMORY_LINES} lines)", "every session start", head,
                      path=str(index))]
    if mode == "reference":
        return [_part("memory", "MEMORY.md (the read: entry of .aider.conf.yml)",
                      "every session start", text, path=str(index))]
    return []  # a copy: the block is what it loads


_HOOKS: tuple[tuple[GivenKind, str], ...] = (
    ("session-start", "Session notes given back after a compaction or on resume "
                      "(SessionStart hook)"),
    ("prompt", "Memory and past sessions recalled for the latest prompt (UserPromptSubmit "
               "hook)"),
)


def _hook_parts(project_root: Path, sessions: set[str] | None) -> list[GivenPart]:
    """The hooks' latest records for this agent's sessions (``None``: any session)."""
    from reverie.agents.given import last_given

    parts: list[GivenPart] = []
    for kind, title in _HOOKS:
        records = [r for r in last_given(project_root, kind)
                   if sessions is None or (r.session_id or "") in sessions]
        if not records:
            parts.append(_part(kind, title, "not sent yet", ""))
            continue
        last = records[0]
        when = f"last sent {last.at.astimezone():%Y-%m-%d %H:%M}" + (
            "" if last.text else " (nothing was relevant enough: nothing added)")
        parts.append(_part(kind, title, when, last.text, sent_at=last.at,
                           session_id=last.session_id))
    return parts


def agent_context(settings: Settings, workspace: Path) -> GivenReport:
    """Every agent connected for ``workspace`` and what it loads."""
    from reverie.agents.connection import check_workspace
    from reverie.agents.ledger import load_ledger
    from reverie.transcripts.discovery import discover_sessions

    workspace = check_workspace(workspace)
    paths = ProjectPaths(settings, workspace)
    memory_dir = paths.memory_dir
    connections = load_ledger(memory_dir).for_workspace(workspace)
    by_agent: dict[str, set[str]] = {}
    if connections:
        for ref in discover_sessions(workspace, settings.agent_home):
            by_agent.setdefault(ref.agent, set()).add(ref.session_id)
    hooked = [c for c in connections if any(r.role == "hooks" for r in c.files)]
    report = GivenReport(workspace=str(workspace), memory_dir=str(memory_dir))
    for connection in connections:
        given = AgentGiven(agent=connection.agent,
                           label=AGENT_LABELS.get(connection.agent, connection.agent),
                           scope=connection.scope, mode=connection.mode)
        for record in connection.files:
            if record.role != "memory":
                continue
            if record.kind == "block":
                text = _block_text(Path(record.path), record.block_id, "html")
                state = "Reverie's managed block" if text is not None else \
                    "Reverie's block is missing: connect the agent again"
                given.parts.append(_part("block", f"{Path(record.path).name} ({state})",
                                         "every session start", text or "", path=record.path))
        given.parts.extend(_memory_parts(connection.mode, memory_dir))
        given.start_tokens = sum(p.tokens for p in given.parts)
        if connection in hooked:
            # a session is this agent's when its transcript says so; with one hooked agent
            # every record is its own
            own = by_agent.get(_SESSION_AGENTS.get(connection.agent, connection.agent), set())
            given.parts.extend(_hook_parts(paths.root, None if len(hooked) == 1 else own))
        if any(r.role == "mcp" for r in connection.files):
            given.parts.append(_part(
                "mcp", "Reverie's MCP tools (search, get_session, read_memory, remember, "
                "propose_memory_change)", "only when the agent calls one; each answer stays "
                "under ~2,000 tokens", ""))
        report.agents.append(given)
    return report
