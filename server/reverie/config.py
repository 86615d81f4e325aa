"""Settings: one typed tree, read from ``REVERIE_*`` environment variables and editor settings.

The environment variable names are a contract (see the issues); editor settings use the same
fields in camelCase under ``reverie.``. ``Settings.from_sources`` layers editor values over the
environment.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any, Literal

import platformdirs
from pydantic import BaseModel, Field, SecretStr, field_validator
from pydantic.alias_generators import to_snake
from pydantic_settings import BaseSettings, SettingsConfigDict

from reverie.agent_roots import AgentRoots
from reverie.projects import project_key as project_key  # re-exported
from reverie.projects import session_dir_name

Provider = Literal[
    "offline", "openai", "anthropic", "claude-code-cli", "codex-cli", "gemini-cli"
]
#: the providers that run an installed coding-agent CLI (``reverie.llm.cli_agent``)
CLI_PROVIDERS = ("claude-code-cli", "codex-cli", "gemini-cli")
ToolCalling = Literal["auto", "on", "off"]
MemoryDirPreset = Literal["reverie", "claude-code", "custom"]
NotificationLevel = Literal["off", "onError", "onWarning", "always"]


class ModelPrice(BaseModel):
    """Dollars per million tokens, for optional cost accounting."""

    input: float = 0.0
    output: float = 0.0
    cache_read: float = 0.0
    cache_write: float = 0.0


class Settings(BaseSettings):
    """Everything a user can configure. Defaults work with no API key (offline engine)."""

    model_config = SettingsConfigDict(
        env_prefix="REVERIE_",
        extra="ignore",
    )

    # --- LLM -------------------------------------------------------------------------------
    provider: Provider = "offline"
    model: str | None = None
    base_url: str | None = None
    api_key: SecretStr | None = None
    connect_timeout_seconds: float = 10.0
    request_timeout_seconds: float = 120.0
    max_retries: int = 4
    max_output_tokens: int = 4096
    #: stream replies (SSE); a server that refuses is detected once and asked plainly after
    stream: bool = True
    #: ``auto``: use tools, switch a job to the structured no-tools form when the model cannot
    #: call them (remembered); ``off``: always the no-tools form; ``on``: never switch
    tool_calling: ToolCalling = "auto"
    #: output budgets per call, sized to what each job writes
    session_memory_max_output_tokens: int = 2048
    dream_max_output_tokens: int = 4096
    sleep_max_output_tokens: int = 2048
    #: wall-time budgets per job run (every model call, retry and tool of one run)
    session_memory_budget_seconds: float = 300.0
    dream_budget_seconds: float = 900.0
    sleep_budget_seconds: float = 1800.0
    #: the coding-agent CLI binary for the ``*-cli`` providers (default: found on PATH)
    cli_path: str | None = None
    session_memory_model: str | None = None
    dream_model: str | None = None
    sleep_model: str | None = None
    prices: dict[str, ModelPrice] = Field(default_factory=dict)
    #: the cost governor (llm/budget.py): caps on model-backed jobs; 0 turns one off
    daily_token_cap: int = Field(default=2_000_000, ge=0)
    monthly_token_cap: int = Field(default=20_000_000, ge=0)
    daily_cost_cap: float = Field(default=2.0, ge=0)
    monthly_cost_cap: float = Field(default=20.0, ge=0)

    # --- places ------------------------------------------------------------------------------
    data_dir: Path = Field(default_factory=lambda: Path(platformdirs.user_data_dir("reverie")))
    config_dir: Path = Field(default_factory=lambda: Path(platformdirs.user_config_dir("reverie")))
    agent_home: Path = Field(default_factory=Path.home)

    # --- transcripts ---------------------------------------------------------------------------
    watch_debounce_ms: int = 300

    # --- session memory ------------------------------------------------------------------------
    session_memory_enabled: bool = True
    session_memory_init_tokens: int = 10_000
    session_memory_update_tokens: int = 5_000
    session_memory_tool_calls: int = 3
    session_memory_context: Literal["incremental", "full"] = "incremental"
    session_memory_max_turns: int = 6

    # --- dream ---------------------------------------------------------------------------------
    dream_enabled: bool = True
    dream_min_hours: float = 24.0
    dream_min_sessions: int = 5
    dream_scan_interval_seconds: float = 600.0
    dream_max_turns: int = 30
    #: review before apply: "auto" stages model-backed dreams for a person to accept, "always",
    #: "never" (services/review.py)
    dream_review: Literal["auto", "always", "never"] = "auto"
    auto_memory_enabled: bool = True
    remote_mode: bool = False
    memory_dir_preset: MemoryDirPreset = "reverie"
    memory_dir: Path | None = None
    #: days after which a fact nothing confirmed (no session restated it, no anchor to check)
    #: is marked aging in its topic file; 0 never marks one
    fact_aging_days: int = 90

    # --- sleep ---------------------------------------------------------------------------------
    sleep_enabled: bool = True
    sleep_time: str = "03:00"
    sleep_max_entries: int = 50
    journal_retention_days: int = 30
    notes_retention_days: int = 90
    history_retention_days: int = 180
    delete_agent_transcripts: bool = False
    transcript_retention_days: int = 14

    # --- editor --------------------------------------------------------------------------------
    show_notifications: NotificationLevel = "onError"
    log_level: Literal["debug", "info", "warning", "error"] = "info"

    @field_validator("sleep_time")
    @classmethod
    def _check_sleep_time(cls, value: str) -> str:
        if not re.fullmatch(r"([01]\d|2[0-3]):[0-5]\d", value):
            raise ValueError("sleep time must be HH:MM (24-hour clock)")
        return value

    def resolved_api_key(self) -> str | None:
        """The API key: ``REVERIE_API_KEY``, else the provider's usual variable. Never logged."""
        if self.api_key is not None and self.api_key.get_secret_value():
            return self.api_key.get_secret_value()
        fallback = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}.get(self.provider)
        if fallback:
            return os.environ.get(fallback) or None
        return None

    def model_for(self, job: Literal["session_memory", "dream", "sleep"]) -> str | None:
        """The model a job uses: its own override, else the global one."""
        override = {
            "session_memory": self.session_memory_model,
            "dream": self.dream_model,
            "sleep": self.sleep_model,
        }[job]
        return override or self.model

    @classmethod
    def from_sources(cls, editor: dict[str, Any] | None = None) -> Settings:
        """Environment underneath, editor settings (camelCase) on top. Raises ValidationError.

        Unknown keys are ignored; ``None`` values (unset in the editor) leave the field alone.
        """
        values = {to_snake(k): v for k, v in (editor or {}).items() if v is not None}
        return cls(**values)


#: the working directory Reverie runs coding-agent CLIs in (``reverie.llm.cli_agent``): their
#: own sessions are Reverie's model calls, never sessions to track or consolidate
REVERIE_CLI_WORKDIR = "reverie-cli-workdir"


#: Claude Code keeps at most this many characters of the folded path, then adds a hash
CLAUDE_SLUG_LIMIT = 200


def claude_project_slug(path: str) -> str:
    """Claude Code's directory name for a cwd: every character but ASCII letters and digits
    becomes ``-`` (``C:\\Users\\me\\proj`` -> ``C--Users-me-proj``); past 200 characters
    the first 200 plus ``-`` and a base-36 hash of the path (the Node build's 32-bit string
    hash; builds that hash differently are found by ``claude_project_dir``)."""
    folded = re.sub(r"[^A-Za-z0-9]", "-", path)
    if len(folded) <= CLAUDE_SLUG_LIMIT:
        return folded
    value = 0
    for unit in _utf16_units(path):
        value = (value * 31 + unit) & 0xFFFFFFFF
    if value >= 0x80000000:
        value -= 0x100000000
    return f"{folded[:CLAUDE_SLUG_LIMIT]}-{_base36(abs(value))}"


def claude_project_dir(projects: Path, workspace: str) -> Path:
    """The folder under Claude Code's ``projects`` for ``workspace``: the computed slug, or for
    a long path an existing folder with the same 200-character prefix (the hash suffix has
    changed between Claude Code builds)."""
    slug = claude_project_slug(workspace)
    candidate = projects / slug
    if len(slug) <= CLAUDE_SLUG_LIMIT or candidate.is_dir():
        return candidate
    prefix = slug[: CLAUDE_SLUG_LIMIT + 1]
    try:
        matches = sorted(p for p in projects.iterdir() if p.name.startswith(prefix) and p.is_dir())
    except OSError:
        matches = []
    return matches[0] if len(matches) == 1 else candidate


def _utf16_units(text: str) -> list[int]:
    data = text.encode("utf-16-le", "surrogatepass")
    return [int.from_bytes(data[i:i + 2], "little") for i in range(0, len(data), 2)]


def _base36(value: int) -> str:
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    out = ""
    while True:
        value, rest = divmod(value, 36)
        out = digits[rest] + out
        if value == 0:
            return out


class ProjectPaths:
    """Where Reverie keeps one workspace's data. Nothing here creates directories."""

    def __init__(self, settings: Settings, workspace: Path) -> None:
        self.settings = settings
        self.workspace = workspace.expanduser().resolve()
        self.root = settings.data_dir / "projects" / project_key(self.workspace)

    @property
    def sessions_dir(self) -> Path:
        return self.root / "sessions"

    def session_dir(self, session_id: str) -> Path:
        return self.sessions_dir / session_dir_name(session_id)

    def notes_path(self, session_id: str) -> Path:
        return self.session_dir(session_id) / "session_memory.md"

    def notes_state_path(self, session_id: str) -> Path:
        return self.session_dir(session_id) / "session_memory.state.json"

    @property
    def journals_dir(self) -> Path:
        return self.root / "journals"

    @property
    def check_cache(self) -> Path:
        """What earlier staleness checks established (``reverie.anchors.cache``)."""
        return self.root / "check-cache.json"

    @property
    def logs_dir(self) -> Path:
        """Daily-log mode input: ``logs/YYYY/MM/YYYY-MM-DD.md``."""
        return self.root / "logs"

    @property
    def memory_dir(self) -> Path:
        s = self.settings
        if s.memory_dir is not None and s.memory_dir_preset in ("custom", "reverie"):
            return s.memory_dir.expanduser()
        if s.memory_dir_preset == "claude-code":
            projects = AgentRoots.for_home(s.agent_home).claude_projects
            return claude_project_dir(projects, str(self.workspace)) / "memory"
        return self.root / "memory"

